/* The CPU kernel variants (generic, AVX2, AVX-512: each one this machine runs) against the
 * reference conv2d and matmul on random shapes with ragged panels and strips, odd channel
 * counts, padding, strides, dilation, every epilogue, split into complementary tiles; the
 * conv2d_packed and dwconv2d validators on good and bad arguments; the ISA selection API. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_kernels.h"
#ifdef KANN_HAVE_X86
#include "kann_x86.h"
#endif

static uint64_t rng_state = 1;

static uint64_t rng_next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint32_t rng_range(uint32_t lo, uint32_t hi) {
    return lo + (uint32_t)(rng_next() % ((uint64_t)hi - lo + 1));
}

static float rng_float(void) {
    return (float)((rng_next() >> 40) * (1.0 / (1u << 24))) * 2.0f - 1.0f;
}

/* ---- the variants of one kernel id, by ISA -------------------------------------------------- */

typedef struct variant {
    const char *isa;
    kann_kernel_fn fn;
} variant;

/* The variants of kernel id this machine runs: the reference, then the x86 ones. */
static int variants_of(int id, variant *out) {
    int n = 0;
    out[n++] = (variant){"generic", kann_kernels[id].ref};
#ifdef KANN_HAVE_X86
#define KANN_X86_VARIANT(ENUM, avx2, avx512)                                                       \
    if (id == KANN_KERNEL_##ENUM) {                                                                \
        if (kann_x86_supports(KANN_X86_AVX2)) out[n++] = (variant){"avx2", avx2};                  \
        if (kann_x86_supports(KANN_X86_AVX512)) out[n++] = (variant){"avx512", avx512};            \
    }
#include "variants.def"
#undef KANN_X86_VARIANT
#endif
    return n;
}

/* ---- one arena holding every tensor; constants alias it ------------------------------------ */

typedef struct space {
    float *data;
    size_t used, cap; /* floats */
} space;

static space arena;

static void arena_reset(size_t cap) {
    free(arena.data);
    arena.data = aligned_alloc(64, (cap * sizeof(float) + 63) / 64 * 64);
    assert_non_null(arena.data);
    arena.used = 0;
    arena.cap = cap;
}

/* n floats of random values (or 0xff bytes when garbage is wanted); returns a ref. */
static kann_ref alloc_ref(size_t n, int random) {
    size_t at = (arena.used + 15) / 16 * 16;
    assert_true(at + n <= arena.cap);
    arena.used = at + n;
    for (size_t i = 0; i < n; i++)
        arena.data[at + i] = random ? rng_float() : NAN;
    kann_ref r = {KANN_SPACE_ARENA, 0, at * sizeof(float)};
    return r;
}

static float *at(kann_ref r) {
    return arena.data + r.offset / sizeof(float);
}

static kann_exec exec_ctx(void) {
    kann_exec e = {(uint8_t *)arena.data, (const uint8_t *)arena.data};
    return e;
}

static kann_bounds bounds_all(void) {
    kann_bounds b = {arena.cap * sizeof(float), arena.cap * sizeof(float)};
    return b;
}

static kann_act random_act(void) {
    kann_act a = {0, 0, 0, 0};
    switch (rng_range(0, 4)) {
    case 0:
        break;
    case 1:
        a.kind = KANN_ACT_RELU;
        break;
    case 2:
        a.kind = KANN_ACT_CLIP;
        a.alpha = -0.3f;
        a.beta = 0.6f;
        break;
    case 3:
        a.kind = KANN_ACT_SIGMOID;
        break;
    default:
        a.kind = KANN_ACT_LEAKY_RELU;
        a.alpha = 0.1f;
    }
    return a;
}

static void expect_close(const float *want, const float *got, size_t n, const char *what,
                         const char *isa) {
    for (size_t i = 0; i < n; i++) {
        float tol = 1e-4f * (1.0f + fabsf(want[i]));
        if (!(fabsf(want[i] - got[i]) <= tol)) {
            fail_msg("%s (%s): element %zu is %g, the reference says %g", what, isa, i,
                     (double)got[i], (double)want[i]);
        }
    }
}

/* ---- conv2d_packed ------------------------------------------------------------------------ */

typedef struct conv_case {
    uint32_t c_in, c_out, h_in, w_in, k_h, k_w, stride, dil, pad;
} conv_case;

static int pointwise(const kann_conv2d_packed_args *a) {
    return a->k_h == 1 && a->k_w == 1 && a->stride_h == 1 && a->stride_w == 1 && a->pad_top == 0 &&
           a->pad_left == 0 && a->h_in == a->h_out && a->w_in == a->w_out;
}

/* Runs one conv case on every variant (two complementary tiles on a random axis) and checks it
 * against the conv2d reference on the unpacked weights. */
static void run_conv_case(const conv_case *cc) {
    uint32_t h_out = (cc->h_in + 2 * cc->pad - cc->dil * (cc->k_h - 1) - 1) / cc->stride + 1;
    uint32_t w_out = (cc->w_in + 2 * cc->pad - cc->dil * (cc->k_w - 1) - 1) / cc->stride + 1;
    size_t K = (size_t)cc->c_in * cc->k_h * cc->k_w, hw = (size_t)h_out * w_out;
    size_t panels = (cc->c_out + 11) / 12, hw32 = (hw + 31) / 32 * 32;
    arena_reset(cc->c_in * cc->h_in * cc->w_in + cc->c_out * K + panels * 12 * K + cc->c_out +
                3 * cc->c_out * hw + K * hw32 + 1024);
    kann_conv2d_args r = {0};
    r.n = 1;
    r.c_in = cc->c_in;
    r.h_in = cc->h_in;
    r.w_in = cc->w_in;
    r.c_out = cc->c_out;
    r.h_out = h_out;
    r.w_out = w_out;
    r.group = 1;
    r.k_h = cc->k_h;
    r.k_w = cc->k_w;
    r.stride_h = r.stride_w = cc->stride;
    r.dil_h = r.dil_w = cc->dil;
    r.pad_top = r.pad_left = cc->pad;
    r.act = random_act();
    r.x = alloc_ref(cc->c_in * cc->h_in * cc->w_in, 1);
    r.w = alloc_ref(cc->c_out * K, 1);
    kann_ref none = {0, 0, 0};
    r.bias = rng_range(0, 1) ? alloc_ref(cc->c_out, 1) : none;
    r.residual = rng_range(0, 1) ? alloc_ref(cc->c_out * hw, 1) : none;
    r.y = alloc_ref(cc->c_out * hw, 0);
    r.tile = (kann_tile){0, 0, cc->c_out, 0};
    kann_exec ex = exec_ctx();
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_conv2d_validate(&r, &bd, &err), KANN_OK);
    kann_f32_conv2d_ref(&r, &ex);

    kann_conv2d_packed_args a = {0};
    a.c_in = r.c_in;
    a.h_in = r.h_in;
    a.w_in = r.w_in;
    a.c_out = r.c_out;
    a.h_out = h_out;
    a.w_out = w_out;
    a.k_h = r.k_h;
    a.k_w = r.k_w;
    a.stride_h = a.stride_w = cc->stride;
    a.dil_h = a.dil_w = cc->dil;
    a.pad_top = a.pad_left = cc->pad;
    a.act = r.act;
    a.x = r.x;
    a.bias = r.bias;
    a.residual = r.residual;
    a.w = alloc_ref(panels * 12 * K, 0);
    float *wp = at(a.w), *w = at(r.w);
    memset(wp, 0, panels * 12 * K * sizeof(float));
    for (size_t m = 0; m < cc->c_out; m++)
        for (size_t k = 0; k < K; k++)
            wp[(m / 12) * K * 12 + k * 12 + m % 12] = w[m * K + k];
    a.y = alloc_ref(cc->c_out * hw, 0);
    a.scratch = pointwise(&a) ? none : alloc_ref(K * hw32, 0);

    variant vs[4];
    int nv = variants_of(KANN_KERNEL_F32_CONV2D_PACKED, vs);
    for (int v = 0; v < nv; v++) {
        for (size_t i = 0; i < cc->c_out * hw; i++)
            at(a.y)[i] = NAN;
        /* two tiles: split at a panel or a strip boundary (one may be empty) */
        uint32_t axis = rng_range(0, 1), extent = axis ? (uint32_t)hw : cc->c_out;
        uint32_t unit = axis ? 32 : 12, units = (extent + unit - 1) / unit;
        uint32_t cut = rng_range(0, units) * unit;
        if (cut > extent) cut = extent;
        kann_conv2d_packed_args t0 = a, t1 = a;
        t0.tile = (kann_tile){axis, 0, cut, 0};
        t1.tile = (kann_tile){axis, cut, extent, 0};
        if (kann_conv2d_packed_validate(&t0, &bd, &err) != KANN_OK ||
            kann_conv2d_packed_validate(&t1, &bd, &err) != KANN_OK)
            fail_msg("conv2d_packed arguments refused: %s", err.message);
        vs[v].fn(&t0, &ex);
        vs[v].fn(&t1, &ex);
        char what[160];
        snprintf(what, sizeof what, "conv c_in %u c_out %u %ux%u k %ux%u s %u d %u p %u act %u",
                 cc->c_in, cc->c_out, cc->h_in, cc->w_in, cc->k_h, cc->k_w, cc->stride, cc->dil,
                 cc->pad, a.act.kind);
        expect_close(at(r.y), at(a.y), cc->c_out * hw, what, vs[v].isa);
    }
}

static void test_conv2d_packed_random(void **state) {
    (void)state;
    rng_state = 42;
    for (int i = 0; i < 150; i++) {
        conv_case cc;
        cc.c_in = rng_range(1, 20);
        cc.c_out = rng_range(1, 40);
        cc.k_h = rng_range(1, 3);
        cc.k_w = rng_range(1, 3);
        cc.dil = rng_range(1, 2);
        cc.stride = rng_range(1, 3);
        cc.pad = rng_range(0, 2);
        cc.h_in = rng_range(cc.dil * (cc.k_h - 1) + 1, 20);
        cc.w_in = rng_range(cc.dil * (cc.k_w - 1) + 1, 40);
        if (i % 3 == 0) { /* pointwise: x is B itself */
            cc.k_h = cc.k_w = cc.stride = cc.dil = 1;
            cc.pad = 0;
        }
        run_conv_case(&cc);
    }
}

/* Shapes of the real models: long reductions, 7x7 and 13x13 planes, 3 input channels. */
static void test_conv2d_packed_model_shapes(void **state) {
    (void)state;
    rng_state = 7;
    const conv_case cases[] = {
        {64, 64, 14, 14, 3, 3, 1, 1, 1},  {3, 64, 32, 32, 7, 7, 2, 1, 3},
        {96, 17, 13, 13, 1, 1, 1, 1, 0},  {256, 30, 7, 7, 3, 3, 1, 1, 1},
        {64, 128, 14, 14, 1, 1, 2, 1, 0}, {3, 32, 24, 24, 3, 3, 2, 1, 1},
        {40, 13, 300, 1, 1, 1, 1, 1, 0},  {300, 20, 5, 7, 1, 1, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_conv_case(&cases[i]);
}

static void test_conv2d_packed_validate(void **state) {
    (void)state;
    arena_reset(1 << 16);
    kann_conv2d_packed_args a = {0};
    a.c_in = 4;
    a.h_in = a.w_in = a.h_out = a.w_out = 8;
    a.c_out = 13;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = a.dil_h = a.dil_w = 1;
    a.pad_top = a.pad_left = 1;
    a.x = alloc_ref(4 * 64, 1);
    a.w = alloc_ref(2 * 12 * 36, 1);
    a.y = alloc_ref(13 * 64, 0);
    a.scratch = alloc_ref(36 * 64, 0);
    a.tile = (kann_tile){1, 32, 64, 0};
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_conv2d_packed_validate(&a, &bd, &err), KANN_OK);
    kann_conv2d_packed_args bad = a;
    bad.tile.begin = 16; /* not on a strip boundary */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.tile = (kann_tile){0, 6, 13, 0}; /* not on a panel boundary */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.scratch.space = KANN_SPACE_NONE; /* a 3x3 conv needs its gather buffer */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.scratch.offset = bd.arena_size - 36 * 63 * 4; /* one pixel short */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.w.offset = bd.arena_size - 13 * 36 * 4; /* panels not rounded up to 24 channels */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.c_in = 0x40000000u; /* K overflows */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.reserved[1] = 1;
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.k_h = bad.k_w = 1;
    bad.pad_top = bad.pad_left = 0; /* pointwise: no scratch allowed */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad.scratch.space = KANN_SPACE_NONE;
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_OK);
}

/* ---- dwconv2d ------------------------------------------------------------------------------ */

static void test_dwconv2d_random(void **state) {
    (void)state;
    rng_state = 99;
    for (int i = 0; i < 150; i++) {
        uint32_t n = rng_range(1, 2), c = rng_range(1, 9), k_h = rng_range(1, 5),
                 k_w = rng_range(1, 5), s = rng_range(1, 3), d = rng_range(1, 2),
                 p = rng_range(0, 2);
        uint32_t h_in = rng_range(d * (k_h - 1) + 1, 12), w_in = rng_range(d * (k_w - 1) + 1, 45);
        uint32_t h_out = (h_in + 2 * p - d * (k_h - 1) - 1) / s + 1;
        uint32_t w_out = (w_in + 2 * p - d * (k_w - 1) - 1) / s + 1;
        size_t out = (size_t)n * c * h_out * w_out;
        arena_reset((size_t)n * c * h_in * w_in + c * k_h * k_w + c + 4 * out + 256);
        kann_dwconv2d_args a = {0};
        a.n = n;
        a.c_in = a.c_out = a.group = c;
        a.h_in = h_in;
        a.w_in = w_in;
        a.h_out = h_out;
        a.w_out = w_out;
        a.k_h = k_h;
        a.k_w = k_w;
        a.stride_h = a.stride_w = s;
        a.dil_h = a.dil_w = d;
        a.pad_top = a.pad_left = p;
        a.act = random_act();
        a.x = alloc_ref((size_t)n * c * h_in * w_in, 1);
        a.w = alloc_ref(c * k_h * k_w, 1);
        kann_ref none = {0, 0, 0};
        a.bias = rng_range(0, 1) ? alloc_ref(c, 1) : none;
        a.residual = rng_range(0, 1) ? alloc_ref(out, 1) : none;
        kann_ref want = alloc_ref(out, 0);
        a.y = want;
        a.tile = (kann_tile){0, 0, c, 0};
        kann_exec ex = exec_ctx();
        kann_bounds bd = bounds_all();
        kann_error err;
        assert_int_equal(kann_dwconv2d_validate(&a, &bd, &err), KANN_OK);
        kann_f32_conv2d_ref(&a, &ex);
        a.y = alloc_ref(out, 0);
        variant vs[4];
        int nv = variants_of(KANN_KERNEL_F32_DWCONV2D, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t j = 0; j < out; j++)
                at(a.y)[j] = NAN;
            uint32_t axis = rng_range(0, 1), extent = axis ? h_out : c;
            uint32_t cut = rng_range(0, extent);
            kann_dwconv2d_args t0 = a, t1 = a;
            t0.tile = (kann_tile){axis, 0, cut, 0};
            t1.tile = (kann_tile){axis, cut, extent, 0};
            vs[v].fn(&t0, &ex);
            vs[v].fn(&t1, &ex);
            char what[128];
            snprintf(what, sizeof what, "dwconv n %u c %u %ux%u k %ux%u s %u d %u p %u", n, c, h_in,
                     w_in, k_h, k_w, s, d, p);
            expect_close(at(want), at(a.y), out, what, vs[v].isa);
        }
        kann_dwconv2d_args bad = a;
        bad.group = 1;
        if (c > 1) assert_int_equal(kann_dwconv2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    }
}

/* ---- matmul (the GEMV path of fully-connected layers) -------------------------------------- */

static void test_matmul_random(void **state) {
    (void)state;
    rng_state = 5;
    for (int i = 0; i < 120; i++) {
        uint32_t batch = rng_range(1, 2), m = rng_range(1, 5), n = rng_range(1, 150),
                 k = rng_range(0, 70);
        int trans_b = rng_range(0, 3) == 0;
        size_t out = (size_t)batch * m * n;
        arena_reset((size_t)batch * (m * k + k * n) + m * n + 4 * out + 256);
        kann_matmul_args a = {0};
        a.batch = batch;
        a.m = m;
        a.n = n;
        a.k = k;
        a.a_batch_stride = m * k;
        a.a_row_stride = k;
        a.a_col_stride = 1;
        a.b_batch_stride = k * n;
        a.b_row_stride = trans_b ? 1 : n;
        a.b_col_stride = trans_b ? k : 1;
        a.alpha = rng_range(0, 1) ? 1.0f : 0.5f;
        a.beta = 1.0f;
        a.act = random_act();
        a.a = alloc_ref((size_t)batch * m * k, 1);
        a.b = alloc_ref((size_t)batch * k * n, 1);
        kann_ref none = {0, 0, 0};
        uint32_t bias_kind = rng_range(0, 2); /* none, per column (Gemm C [n]), full [m][n] */
        a.bias = bias_kind ? alloc_ref((size_t)m * n, 1) : none;
        a.bias_row_stride = bias_kind == 2 ? n : 0;
        a.bias_col_stride = 1;
        a.residual = rng_range(0, 1) ? alloc_ref(out, 1) : none;
        kann_ref want = alloc_ref(out, 0);
        a.y = want;
        a.tile = (kann_tile){0, 0, m, 0};
        kann_exec ex = exec_ctx();
        kann_bounds bd = bounds_all();
        kann_error err;
        assert_int_equal(kann_matmul_validate(&a, &bd, &err), KANN_OK);
        kann_f32_matmul_ref(&a, &ex);
        a.y = alloc_ref(out, 0);
        variant vs[4];
        int nv = variants_of(KANN_KERNEL_F32_MATMUL, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t j = 0; j < out; j++)
                at(a.y)[j] = NAN;
            uint32_t axis = rng_range(0, 1), extent = axis ? n : m;
            uint32_t cut = rng_range(0, extent);
            kann_matmul_args t0 = a, t1 = a;
            t0.tile = (kann_tile){axis, 0, cut, 0};
            t1.tile = (kann_tile){axis, cut, extent, 0};
            vs[v].fn(&t0, &ex);
            vs[v].fn(&t1, &ex);
            expect_close(at(want), at(a.y), out, "matmul", vs[v].isa);
        }
    }
}

/* ---- ISA selection -------------------------------------------------------------------------- */

static void test_isa_names(void **state) {
    (void)state;
    for (int i = 0; i < KANN_ISA_COUNT; i++)
        assert_int_equal(kann_isa_from_name(kann_isa_name((kann_isa)i)), i);
    assert_int_equal(kann_isa_from_name("sse9"), -1);
    assert_true(kann_isa_supported(KANN_ISA_GENERIC));
    assert_true(kann_isa_supported(kann_isa_best()));
#ifdef KANN_HAVE_X86
    assert_int_equal(kann_isa_supported(KANN_ISA_AVX2), kann_x86_supports(KANN_X86_AVX2));
    assert_int_equal(kann_isa_supported(KANN_ISA_AVX512), kann_x86_supports(KANN_X86_AVX512));
#else
    assert_false(kann_isa_supported(KANN_ISA_AVX512));
#endif
    kann_model closed = {0};
    kann_error err;
    assert_int_equal(kann_model_set_isa(&closed, KANN_ISA_GENERIC, &err), KANN_E_ARGUMENT);
}

static int teardown(void **state) {
    (void)state;
    free(arena.data);
    arena.data = NULL;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d_packed_random),
        cmocka_unit_test(test_conv2d_packed_model_shapes),
        cmocka_unit_test(test_conv2d_packed_validate),
        cmocka_unit_test(test_dwconv2d_random),
        cmocka_unit_test(test_matmul_random),
        cmocka_unit_test(test_isa_names),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
