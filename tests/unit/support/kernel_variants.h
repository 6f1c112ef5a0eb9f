/* The kernel functions a CPU runs for one kernel id: the portable reference, then the x86
 * variants (kernels/x86/variants.def) this processor supports, so that a test can run every
 * variant against the reference. */
#ifndef KANN_TEST_KERNEL_VARIANTS_H
#define KANN_TEST_KERNEL_VARIANTS_H

#include "kann_kernels.h"
#ifdef KANN_HAVE_X86
#include "kann_x86.h"
#endif

typedef struct kernel_variant {
    const char *isa;
    kann_kernel_fn fn;
} kernel_variant;

#define KANN_MAX_KERNEL_VARIANTS 3

/* Fills out (KANN_MAX_KERNEL_VARIANTS entries) and returns how many; out[0] is the reference. */
static inline int kernel_variants(int id, kernel_variant *out) {
    int n = 0;
    out[n++] = (kernel_variant){"generic", kann_kernels[id].ref};
#ifdef KANN_HAVE_X86
#define KANN_X86_VARIANT(ENUM, avx2, avx512)                                                       \
    if (id == KANN_KERNEL_##ENUM) {                                                                \
        if (kann_x86_supports(KANN_X86_AVX2)) out[n++] = (kernel_variant){"avx2", avx2};           \
        if (kann_x86_supports(KANN_X86_AVX512)) out[n++] = (kernel_variant){"avx512", avx512};     \
    }
#include "variants.def"
#undef KANN_X86_VARIANT
#endif
    return n;
}

#endif
