/* The CPU backend's kernel tables: the portable reference kernels, and on x86 the same table
 * with the AVX2 or AVX-512 variants (kernels/x86/variants.def) in place of the references.
 * kann_model_open takes the best level the CPU runs; kann_model_set_isa forces another. */
#include "cpu_dispatch.h"
#include "kann_kernels.h"
#include "kann_private.h"
#ifdef KANN_HAVE_X86
#include "kann_x86.h"
#endif

static const kann_kernel_fn generic_kernels[KANN_KERNEL_COUNT] = {
#define KANN_KERNEL(ENUM, name, id, family) [id] = kann_##name##_ref,
#include "kernels.def"
#undef KANN_KERNEL
};

#ifdef KANN_HAVE_X86
/* Every row first gets its reference, then the variant rows replace theirs: a later
 * designated initializer for the same index is the intended override here. */
#pragma GCC diagnostic push
#ifdef __clang__
#pragma GCC diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
static const kann_kernel_fn avx2_kernels[KANN_KERNEL_COUNT] = {
#define KANN_KERNEL(ENUM, name, id, family) [id] = kann_##name##_ref,
#include "kernels.def"
#undef KANN_KERNEL
#define KANN_X86_VARIANT(ENUM, avx2, avx512) [KANN_KERNEL_##ENUM] = avx2,
#include "variants.def"
#undef KANN_X86_VARIANT
};
static const kann_kernel_fn avx512_kernels[KANN_KERNEL_COUNT] = {
#define KANN_KERNEL(ENUM, name, id, family) [id] = kann_##name##_ref,
#include "kernels.def"
#undef KANN_KERNEL
#define KANN_X86_VARIANT(ENUM, avx2, avx512) [KANN_KERNEL_##ENUM] = avx512,
#include "variants.def"
#undef KANN_X86_VARIANT
};
#pragma GCC diagnostic pop
#endif

static const char *const isa_names[KANN_ISA_COUNT] = {"generic", "avx2", "avx512"};

const char *kann_isa_name(kann_isa isa) {
    return (unsigned)isa < KANN_ISA_COUNT ? isa_names[isa] : "unknown";
}

int kann_isa_from_name(const char *name) {
    for (int i = 0; name && i < KANN_ISA_COUNT; i++)
        if (kann_rt_streq(name, isa_names[i])) return i;
    return -1;
}

const kann_kernel_fn *kann_cpu_kernels(kann_isa isa) {
    switch (isa) {
    case KANN_ISA_GENERIC:
        return generic_kernels;
#ifdef KANN_HAVE_X86
    case KANN_ISA_AVX2:
        return avx2_kernels;
    case KANN_ISA_AVX512:
        return avx512_kernels;
#endif
    default:
        return 0;
    }
}

int kann_isa_supported(kann_isa isa) {
    switch (isa) {
    case KANN_ISA_GENERIC:
        return 1;
#ifdef KANN_HAVE_X86
    case KANN_ISA_AVX2:
        return kann_x86_supports(KANN_X86_AVX2);
    case KANN_ISA_AVX512:
        return kann_x86_supports(KANN_X86_AVX512);
#endif
    default:
        return 0;
    }
}

kann_isa kann_isa_best(void) {
    for (int i = KANN_ISA_COUNT - 1; i > 0; i--)
        if (kann_isa_supported((kann_isa)i)) return (kann_isa)i;
    return KANN_ISA_GENERIC;
}

kann_status kann_model_set_isa(kann_model *m, kann_isa isa, kann_error *err) {
    if (m == 0 || m->bytes == 0)
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_model_set_isa: model not open");
    if ((unsigned)isa >= KANN_ISA_COUNT || !kann_isa_supported(isa) || !kann_cpu_kernels(isa))
        return kann_rt_fail(err, KANN_E_UNSUPPORTED,
                            "kernels for %s are not in this build or not run by this CPU",
                            kann_isa_name(isa));
    m->kernels = kann_cpu_kernels(isa);
    return kann_rt_ok(err);
}

kann_isa kann_model_isa(const kann_model *m) {
    for (int i = 0; m && i < KANN_ISA_COUNT; i++)
        if (m->kernels == kann_cpu_kernels((kann_isa)i)) return (kann_isa)i;
    return KANN_ISA_GENERIC;
}

kann_kernel_fn kann_model_kernel(const kann_model *m, uint32_t kernel) {
    if (m == 0 || m->bytes == 0 || m->kernels == 0 || kernel == 0 || kernel >= KANN_KERNEL_COUNT)
        return 0;
    return m->kernels[kernel];
}
