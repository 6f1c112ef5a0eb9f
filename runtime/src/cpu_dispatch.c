/* The CPU backend's kernel tables: the portable reference kernels, and on x86 the same table
 * with the AVX2 or AVX-512 variants (kernels/x86/variants.def) in place of the references, and
 * AVX-512's with the AMX kernels of the 1x1, gathering and strided convs (kernels/x86/kann_amx.h).
 * kann_model_open takes the best level the CPU runs but AMX; kann_model_set_isa and
 * kann_model_set_isa_prepared (which writes what AMX's kernels read: the table of its prepared
 * weights, then their bf16 pairs) switch to another. */
#include "cpu_dispatch.h"
#include "kann_kernels.h"
#include "kann_private.h"
#ifdef KANN_HAVE_X86
#include "kann_x86.h"
#endif
#ifdef KANN_HAVE_AMX
#include "kann_amx.h"
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
#ifdef KANN_HAVE_AMX
/* AVX-512's table with the 1x1, gathering and strided convs on the tiles (x86/kann_amx.h) */
static const kann_kernel_fn amx_kernels[KANN_KERNEL_COUNT] = {
#define KANN_KERNEL(ENUM, name, id, family) [id] = kann_##name##_ref,
#include "kernels.def"
#undef KANN_KERNEL
#define KANN_X86_VARIANT(ENUM, avx2, avx512) [KANN_KERNEL_##ENUM] = avx512,
#include "variants.def"
#undef KANN_X86_VARIANT
    [KANN_KERNEL_F32_CONV2D_PACKED] = kann_f32_conv2d_packed_amx,
    [KANN_KERNEL_F32_POINTWISE_LANES] = kann_f32_pointwise_lanes_amx,
    [KANN_KERNEL_F32_POINTWISE_GAP] = kann_f32_pointwise_gap_amx,
};
#endif
#pragma GCC diagnostic pop
#endif

static const char *const isa_names[KANN_ISA_COUNT] = {"generic", "avx2", "avx512", "amx"};

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
#ifdef KANN_HAVE_AMX
    case KANN_ISA_AMX:
        return amx_kernels;
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
#ifdef KANN_HAVE_AMX
    case KANN_ISA_AMX:
        return kann_x86_supports(KANN_X86_AMX);
#endif
    default:
        return 0;
    }
}

kann_isa kann_isa_best(void) {
    for (int i = KANN_ISA_AVX512; i > 0; i--)
        if (kann_isa_supported((kann_isa)i)) return (kann_isa)i;
    return KANN_ISA_GENERIC;
}

/* Record r's weights as isa prepares them (*g), if it does and r is their first user. */
#ifdef KANN_HAVE_AMX
static int first_prepared(const kann_model *m, uint32_t r, kann_amx_gemm *g) {
    uint32_t kernel, size;
    const void *args;
    kann_model_record(m, r, &kernel, &args, &size);
    if (kernel == KANN_KERNEL_BARRIER || !kann_amx_gemm_of(kernel, args, g)) return 0;
    kann_amx_gemm other;
    for (uint32_t i = 0; i < r; i++) {
        kann_model_record(m, i, &kernel, &args, &size);
        if (kernel != KANN_KERNEL_BARRIER && kann_amx_gemm_of(kernel, args, &other) &&
            other.w_offset == g->w_offset)
            return 0;
    }
    return 1;
}

static uint64_t round64(uint64_t n) {
    return (n + 63) / 64 * 64;
}
#endif

/* The bytes of isa's prepared weights (the table and every tensor's pairs; 0 when none) and how
 * many tensors the table lists (*count). */
static uint64_t prepared_bytes(const kann_model *m, kann_isa isa, uint64_t *count) {
    *count = 0;
    /* the AMX kernels' code runs only where the CPU has it */
    if (m == 0 || m->bytes == 0 || isa != KANN_ISA_AMX || !kann_isa_supported(isa)) return 0;
    uint64_t bytes = 0;
#ifdef KANN_HAVE_AMX
    kann_amx_gemm g;
    for (uint32_t r = 0; r < m->n_records; r++)
        if (first_prepared(m, r, &g)) {
            (*count)++;
            bytes += kann_amx_gemm_bytes(&g);
        }
    if (*count) bytes += round64(sizeof(kann_amx_table) + *count * sizeof(kann_amx_entry));
#endif
    return bytes;
}

uint64_t kann_model_prepared_size(const kann_model *m, kann_isa isa) {
    uint64_t count;
    return prepared_bytes(m, isa, &count);
}

#ifdef KANN_HAVE_AMX
/* Writes AMX's prepared weights into buf: the table of its count tensors (prepared_bytes), then
 * their pairs in the records' order. */
static void prepare_amx(const kann_model *m, void *buf, uint64_t count) {
    kann_amx_table *t = buf;
    for (size_t i = 0; i < sizeof *t; i++)
        ((uint8_t *)buf)[i] = 0;
    uint64_t at = round64(sizeof *t + count * sizeof(kann_amx_entry));
    kann_amx_gemm g;
    for (uint32_t r = 0; r < m->n_records; r++) {
        if (!first_prepared(m, r, &g)) continue;
        uint64_t i = t->count++; /* in order of w_offset */
        for (; i > 0 && t->e[i - 1].w_offset > g.w_offset; i--)
            t->e[i] = t->e[i - 1];
        t->e[i] = (kann_amx_entry){g.w_offset, at, g.m, g.k, g.panel, 0};
        kann_amx_pack(&g, m->consts, (uint8_t *)buf + at);
        at += kann_amx_gemm_bytes(&g);
    }
}
#endif

kann_status kann_model_set_isa_prepared(kann_model *m, kann_isa isa, void *buf, size_t size,
                                        kann_error *err) {
    if (m == 0 || m->bytes == 0)
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_model_set_isa: model not open");
    if ((unsigned)isa >= KANN_ISA_COUNT || !kann_isa_supported(isa) || !kann_cpu_kernels(isa))
        return kann_rt_fail(err, KANN_E_UNSUPPORTED,
                            "kernels for %s are not in this build or not run by this CPU",
                            kann_isa_name(isa));
    uint64_t count, need = prepared_bytes(m, isa, &count);
    if (need && (buf == 0 || size < need || (uintptr_t)buf % 64 != 0))
        return kann_rt_fail(err, KANN_E_ARGUMENT,
                            "%s kernels need %llu bytes of prepared weights, 64-byte aligned",
                            kann_isa_name(isa), (unsigned long long)need);
#ifdef KANN_HAVE_AMX
    if (need) prepare_amx(m, buf, count); /* AMX is the only level that prepares */
#endif
    m->kernels = kann_cpu_kernels(isa);
    m->prepared = need ? buf : 0;
    return kann_rt_ok(err);
}

int kann_cpu_parts_pay(const kann_model *m, uint32_t kernel, const void *args) {
#ifdef KANN_HAVE_AMX
    kann_amx_gemm g;
    if (m->prepared && ((const kann_tile *)args)->axis == 0 && kann_amx_gemm_of(kernel, args, &g))
        return 0;
#else
    (void)m, (void)kernel, (void)args;
#endif
    return 1;
}

kann_status kann_model_set_isa(kann_model *m, kann_isa isa, kann_error *err) {
    return kann_model_set_isa_prepared(m, isa, 0, 0, err);
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
