/* The CPU kernel variants (generic, AVX2, AVX-512: each one this machine runs) against the
 * reference conv2d, pool2d and matmul on random shapes with ragged panels and strips, odd
 * channel counts, padding, strides, dilation, every epilogue, split into complementary tiles;
 * conv2d_packed's wide path behind pad2d as the compiler lowers it; the conv2d_packed, pad2d
 * and dwconv2d validators on good and bad arguments; the ISA selection API. */
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
#include "ref/conv2d_maxpool.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"
#include "ref/dwblock.h"
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
    kann_exec e = {(uint8_t *)arena.data, (const uint8_t *)arena.data, NULL, NULL, NULL};
    return e;
}

static kann_bounds bounds_all(void) {
    kann_bounds b = {arena.cap * sizeof(float), arena.cap * sizeof(float)};
    return b;
}

/* Every activation kind with a vector form in the x86 epilogues (kernels/x86/simd_act.h), and
 * tanh, which has none (the scalar pass after the store). */
static kann_act random_act(void) {
    kann_act a = {0, 0, 0, 0};
    switch (rng_range(0, 10)) {
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
    case 4:
        a.kind = KANN_ACT_HARD_SIGMOID;
        a.alpha = 0.2f;
        a.beta = 0.5f;
        break;
    case 5:
        a.kind = KANN_ACT_HARD_SWISH;
        break;
    case 6:
        a.kind = KANN_ACT_SILU;
        break;
    case 7:
        a.kind = KANN_ACT_ELU;
        a.alpha = 1.3f;
        break;
    case 8:
        a.kind = KANN_ACT_GELU;
        break;
    case 9:
        a.kind = KANN_ACT_TANH;
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
    int via_pad; /* as the compiler lowers a stride-1 conv: pad2d, then the wide path */
} conv_case;

/* x padded by pad2d (run as two complementary row tiles) to the rows and columns the windows of
 * a stride-1 conv reach; a becomes the conv without padding on that input. Returns 0 (a kept)
 * when the wide path would not take the padded conv. */
static int pad_for_wide(kann_conv2d_packed_args *a, const kann_exec *ex, const kann_bounds *bd) {
    kann_conv2d_packed_args wide = *a;
    wide.h_in = a->h_out + a->dil_h * (a->k_h - 1);
    wide.w_in = a->w_out + a->dil_w * (a->k_w - 1);
    wide.pad_top = wide.pad_left = 0;
    if (!kann_conv2d_packed_wide(&wide)) return 0;
    kann_pad2d_args p = {0};
    p.c = a->c_in;
    p.h_in = a->h_in;
    p.w_in = a->w_in;
    p.h_out = wide.h_in;
    p.w_out = wide.w_in;
    p.pad_top = a->pad_top;
    p.pad_left = a->pad_left;
    p.x = a->x;
    p.y = alloc_ref((size_t)p.c * p.h_out * p.w_out, 0);
    uint32_t rows = p.c * p.h_out, cut = rng_range(0, rows);
    kann_pad2d_args t0 = p, t1 = p;
    t0.tile = (kann_tile){0, 0, cut, 0};
    t1.tile = (kann_tile){0, cut, rows, 0};
    kann_error err;
    assert_int_equal(kann_pad2d_validate(&t0, bd, &err), KANN_OK);
    assert_int_equal(kann_pad2d_validate(&t1, bd, &err), KANN_OK);
    kann_f32_pad2d_ref(&t0, ex);
    kann_f32_pad2d_ref(&t1, ex);
    wide.x = p.y;
    *a = wide;
    return 1;
}

/* The path a conv2d_packed tile over all of a's pixels takes. */
static const char *path_name(const kann_conv2d_packed_args *a) {
    kann_conv_phases ph;
    if (kann_conv2d_packed_direct(a)) return "direct (AVX-512; wide, phase or gather elsewhere)";
    if (kann_conv2d_packed_rows(a)) return "rows (AVX-512; wide, lanes or phase elsewhere)";
    if (kann_conv2d_packed_wide(a) && a->scratch.space != KANN_SPACE_NONE &&
        kann_conv2d_packed_lanes(a, 0, (size_t)a->h_out * a->w_out))
        return "lanes, stride 1 (AVX-512; wide elsewhere)";
    if (kann_conv2d_packed_wide(a)) return "wide";
    if (kann_conv2d_packed_pointwise(a)) return "pointwise";
    if (kann_conv2d_packed_lanes(a, 0, (size_t)a->h_out * a->w_out))
        return "lanes (AVX-512; phase elsewhere)";
    if (kann_conv2d_packed_phase_plan(a, 0, (size_t)a->h_out * a->w_out, &ph)) return "phase";
    return "gather";
}

/* The conv2d reference over case cc with an output of h_out x w_out, run: random input and
 * weights ([c_out][K]), a random activation, a bias one time in two and, where residual is
 * set, a residual one time in two. */
static kann_conv2d_args run_ref_conv(const conv_case *cc, uint32_t h_out, uint32_t w_out,
                                     int residual) {
    size_t K = (size_t)cc->c_in * cc->k_h * cc->k_w, hw = (size_t)h_out * w_out;
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
    r.residual = residual && rng_range(0, 1) ? alloc_ref(cc->c_out * hw, 1) : none;
    r.y = alloc_ref(cc->c_out * hw, 0);
    r.tile = (kann_tile){0, 0, cc->c_out, 0};
    kann_exec ex = exec_ctx();
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_conv2d_validate(&r, &bd, &err), KANN_OK);
    kann_f32_conv2d_ref(&r, &ex);
    return r;
}

/* Weights w ([c_out][K]) packed into 12-channel panels ([c_out / 12][K][12], the last panel's
 * rows past c_out zero), as kann-c packs them. */
static kann_ref pack_panels(kann_ref w, size_t c_out, size_t K) {
    size_t panels = (c_out + 11) / 12;
    kann_ref p = alloc_ref(panels * 12 * K, 0);
    float *wp = at(p);
    const float *wm = at(w);
    memset(wp, 0, panels * 12 * K * sizeof(float));
    for (size_t m = 0; m < c_out; m++)
        for (size_t k = 0; k < K; k++)
            wp[(m / 12) * K * 12 + k * 12 + m % 12] = wm[m * K + k];
    return p;
}

/* Runs one conv case on every variant (two complementary tiles on a random axis) and checks it
 * against the conv2d reference on the unpacked weights. */
static void run_conv_case(const conv_case *cc) {
    uint32_t h_out = (cc->h_in + 2 * cc->pad - cc->dil * (cc->k_h - 1) - 1) / cc->stride + 1;
    uint32_t w_out = (cc->w_in + 2 * cc->pad - cc->dil * (cc->k_w - 1) - 1) / cc->stride + 1;
    size_t K = (size_t)cc->c_in * cc->k_h * cc->k_w, hw = (size_t)h_out * w_out;
    size_t panels = (cc->c_out + 11) / 12, hw32 = (hw + 31) / 32 * 32;
    size_t padded =
        (size_t)cc->c_in * (h_out + cc->dil * (cc->k_h - 1)) * (w_out + cc->dil * (cc->k_w - 1));
    arena_reset(cc->c_in * cc->h_in * cc->w_in + cc->c_out * K + panels * 12 * K + cc->c_out +
                3 * cc->c_out * hw + K * hw32 + padded + 1024);
    kann_conv2d_args r = run_ref_conv(cc, h_out, w_out, 1);
    kann_exec ex = exec_ctx();
    kann_bounds bd = bounds_all();
    kann_error err;
    kann_ref none = {0, 0, 0};

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
    a.w = pack_panels(r.w, cc->c_out, K);
    a.y = alloc_ref(cc->c_out * hw, 0);
    if (cc->via_pad && cc->stride == 1) pad_for_wide(&a, &ex, &bd);
    /* the scratch as kann-c binds it: none where the conv reads x in place, unless the lanes
     * path may take a stride-1 window */
    int in_place = kann_conv2d_packed_pointwise(&a) ||
                   (kann_conv2d_packed_wide(&a) && !kann_conv2d_packed_lanes_stride1(&a));
    a.scratch = in_place ? none : alloc_ref(K * hw32, 0);

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
        snprintf(what, sizeof what,
                 "conv c_in %u c_out %u %ux%u k %ux%u s %u d %u p %u act %u %s tile %u@%u",
                 cc->c_in, cc->c_out, cc->h_in, cc->w_in, cc->k_h, cc->k_w, cc->stride, cc->dil,
                 cc->pad, a.act.kind, path_name(&a), axis, cut);
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
        cc.via_pad = i % 2;
        run_conv_case(&cc);
    }
}

/* Pointwise convs with long reductions over maps of several 256-pixel blocks (the last one
 * ragged): blocks of reduction steps whose partial sums go through y, every weight panel meeting
 * every strip of a block; and a 1-D conv at stride 2 over rows too wide for the AVX-512 lanes
 * path's band to hold more than a channel or two. */
static void test_conv2d_packed_long_reductions(void **state) {
    (void)state;
    rng_state = 77;
    static const uint32_t shapes[][4] = {
        {385, 13, 17, 31}, {700, 40, 1, 700}, {1500, 25, 23, 29}, {1100, 12, 9, 57}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        conv_case cc = {0};
        cc.c_in = shapes[i][0];
        cc.c_out = shapes[i][1];
        cc.h_in = shapes[i][2];
        cc.w_in = shapes[i][3];
        cc.k_h = cc.k_w = cc.stride = cc.dil = 1;
        run_conv_case(&cc);
    }
    conv_case wide = {0};
    wide.c_in = 40;
    wide.c_out = 48;
    wide.h_in = 1;
    wide.w_in = 2101;
    wide.k_h = 1;
    wide.k_w = 3;
    wide.stride = 2;
    wide.dil = 1;
    run_conv_case(&wide);
}

/* A random conv: 1 to c_in_max input and 1 to c_out_max output channels, windows up to
 * k_max x k_max, strides 1 to s_max, dilation 2 one time in four, padding up to pad_max, inputs
 * up to h_max x w_max that every window fits. */
static conv_case random_conv_case(uint32_t c_in_max, uint32_t c_out_max, uint32_t k_max,
                                  uint32_t s_max, uint32_t pad_max, uint32_t h_max,
                                  uint32_t w_max) {
    conv_case cc = {0};
    cc.c_in = rng_range(1, c_in_max);
    cc.c_out = rng_range(1, c_out_max);
    cc.k_h = rng_range(1, k_max);
    cc.k_w = rng_range(1, k_max);
    cc.dil = rng_range(1, 4) == 1 ? 2 : 1;
    cc.stride = rng_range(1, s_max);
    cc.pad = rng_range(0, pad_max);
    cc.h_in = rng_range(cc.dil * (cc.k_h - 1) + 1, h_max);
    cc.w_in = rng_range(cc.dil * (cc.k_w - 1) + 1, w_max);
    return cc;
}

/* The shape arguments of conv case cc (for the path tests). */
static kann_conv2d_packed_args conv_case_shape(const conv_case *cc) {
    kann_conv2d_packed_args a = {0};
    a.c_in = cc->c_in;
    a.c_out = cc->c_out;
    a.k_h = cc->k_h;
    a.k_w = cc->k_w;
    a.stride_h = a.stride_w = cc->stride;
    a.dil_h = a.dil_w = cc->dil;
    a.pad_top = a.pad_left = cc->pad;
    a.h_in = cc->h_in;
    a.w_in = cc->w_in;
    a.h_out = (cc->h_in + 2 * cc->pad - cc->dil * (cc->k_h - 1) - 1) / cc->stride + 1;
    a.w_out = (cc->w_in + 2 * cc->pad - cc->dil * (cc->k_w - 1) - 1) / cc->stride + 1;
    return a;
}

/* Stride-1 windows of 5 taps or more but 3x3 on the AVX-512 lanes path (the scratch bound, the
 * input padded for the wide path or read with its padding): 5x5, 1x7 and 7x1 over maps of 256
 * pixels or more, output channels past one pass of 64 and ragged, narrow ones, odd reductions. */
static void test_conv2d_packed_lanes_stride1(void **state) {
    (void)state;
    rng_state = 99;
    static const uint32_t shapes[][7] = {
        /* c_in, c_out, h_in, w_in, k_h, k_w, pad */
        {24, 70, 20, 19, 5, 5, 2}, {33, 13, 17, 17, 1, 7, 0}, {40, 97, 17, 18, 7, 1, 3},
        {9, 16, 23, 16, 3, 5, 1},  {48, 64, 16, 21, 1, 5, 0},
    };
    int lanes = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int via_pad = 0; via_pad < 2; via_pad++) {
            conv_case cc = {0};
            cc.c_in = shapes[i][0];
            cc.c_out = shapes[i][1];
            cc.h_in = shapes[i][2];
            cc.w_in = shapes[i][3];
            cc.k_h = shapes[i][4];
            cc.k_w = shapes[i][5];
            cc.pad = shapes[i][6];
            cc.stride = cc.dil = 1;
            cc.via_pad = via_pad;
            run_conv_case(&cc);
            kann_conv2d_packed_args a = conv_case_shape(&cc);
            a.scratch.space = KANN_SPACE_ARENA;
            lanes += kann_conv2d_packed_lanes(&a, 0, (size_t)a.h_out * a.w_out);
        }
    assert_int_equal(lanes, 10); /* every case is the lanes path's */
}

/* The wide path: stride-1 convs padded by pad2d (or without padding, read in place), windows
 * up to 5x5, strips that span several rows and rows that span several strips, odd channel
 * counts, ragged last panels and strips. */
static void test_conv2d_packed_wide_random(void **state) {
    (void)state;
    rng_state = 1234;
    int wide = 0;
    for (int i = 0; i < 120; i++) {
        conv_case cc = random_conv_case(37, 50, 5, 1, 2, 17, 70);
        if (i % 4 == 0) cc.pad = 0;
        cc.via_pad = 1;
        run_conv_case(&cc);
        kann_conv2d_packed_args a = {0};
        a.stride_h = a.stride_w = 1;
        a.dil_h = a.dil_w = cc.dil;
        a.k_h = cc.k_h;
        a.k_w = cc.k_w;
        a.h_out = cc.h_in + 2 * cc.pad - cc.dil * (cc.k_h - 1);
        a.w_out = cc.w_in + 2 * cc.pad - cc.dil * (cc.k_w - 1);
        a.h_in = a.h_out + cc.dil * (cc.k_h - 1);
        a.w_in = a.w_out + cc.dil * (cc.k_w - 1);
        wide += kann_conv2d_packed_wide(&a);
    }
    assert_true(wide > 60); /* most cases took the wide path */
}

/* A strided conv (strides 2 and 3) of 2 to 25 taps, dilation 2 one time in three, padding up
 * to 3, a reduction of at least KANN_CONV_PHASE_MIN_K steps plus up to c_in_extra input
 * channels, 1 to c_out_max output channels; the input size is the caller's. */
static conv_case strided_conv_case(uint32_t c_in_extra, uint32_t c_out_max) {
    conv_case cc = {0};
    cc.k_h = rng_range(1, 5);
    cc.k_w = rng_range(cc.k_h == 1 ? 2 : 1, 5);
    cc.c_in = (uint32_t)(KANN_CONV_PHASE_MIN_K / (cc.k_h * cc.k_w)) + rng_range(1, c_in_extra);
    cc.c_out = rng_range(1, c_out_max);
    cc.dil = rng_range(1, 3) == 1 ? 2 : 1;
    cc.stride = rng_range(2, 3);
    cc.pad = rng_range(0, 3);
    return cc;
}

/* The phase path: strided convs (strides 2 and 3, windows of 2 to 25 taps, dilation, padding
 * up to 3) with reductions long enough for it; tiles that start and end inside rows. */
static void test_conv2d_packed_phase_random(void **state) {
    (void)state;
    rng_state = 2024;
    int phase = 0;
    for (int i = 0; i < 80; i++) {
        conv_case cc = strided_conv_case(24, 40);
        cc.h_in = rng_range(cc.dil * (cc.k_h - 1) + 1, 24);
        /* mostly outputs at least KANN_CONV_PHASE_MIN_W wide, some narrower (gathered) */
        cc.w_in = rng_range(i % 8 ? KANN_CONV_PHASE_MIN_W * cc.stride + cc.dil * (cc.k_w - 1)
                                  : cc.dil * (cc.k_w - 1) + 1,
                            48);
        cc.via_pad = 0;
        run_conv_case(&cc);
        kann_conv2d_packed_args a = conv_case_shape(&cc);
        phase += strcmp(path_name(&a), "phase") == 0;
    }
    assert_true(phase > 40); /* most cases took the phase path */
}

/* The AVX-512 lanes path: strided convs (strides 2 and 3, windows of 2 to 25 taps, dilation,
 * padding up to 3) over at least KANN_CONV_LANES_MIN_PIXELS output pixels; 1 to 150 output
 * channels (passes of 64, ragged last vectors, tiles along channels that start inside a pass),
 * input channels in several blocks, groups of pixels across rows, tiles along pixels that start
 * and end inside rows (some under the pixel minimum: the phase path beside it). */
static void test_conv2d_packed_lanes_random(void **state) {
    (void)state;
    rng_state = 4242;
    int lanes = 0;
    for (int i = 0; i < 60; i++) {
        conv_case cc = strided_conv_case(40, 150);
        /* outputs of 8 to 30 columns and enough rows for the pixel minimum */
        uint32_t w_out = rng_range(8, 30), h_out = (KANN_CONV_LANES_MIN_PIXELS + w_out - 1) / w_out;
        h_out += rng_range(0, 8);
        cc.w_in = (w_out - 1) * cc.stride + cc.dil * (cc.k_w - 1) + 1 - rng_range(0, cc.pad);
        cc.h_in = (h_out - 1) * cc.stride + cc.dil * (cc.k_h - 1) + 1 - rng_range(0, cc.pad);
        run_conv_case(&cc);
        kann_conv2d_packed_args a = conv_case_shape(&cc);
        lanes += strncmp(path_name(&a), "lanes", 5) == 0;
    }
    assert_true(lanes > 50); /* most cases took the lanes path */
}

/* The lanes path for narrow convs (at most 16 output channels, one vector: a grouped conv's
 * group), whatever their pixel count and reduction length: strides 2 and 3, 1 to 12 input
 * channels, outputs from a single pixel to a few rows, tiles inside rows. */
static void test_conv2d_packed_lanes_narrow(void **state) {
    (void)state;
    rng_state = 4343;
    int lanes = 0;
    for (int i = 0; i < 80; i++) {
        conv_case cc = strided_conv_case(1, 16);
        cc.c_in = rng_range(1, 12);
        cc.h_in = rng_range(cc.dil * (cc.k_h - 1) + 1, 30);
        cc.w_in = rng_range(cc.dil * (cc.k_w - 1) + 1, 30);
        run_conv_case(&cc);
        kann_conv2d_packed_args a = conv_case_shape(&cc);
        lanes += strncmp(path_name(&a), "lanes", 5) == 0;
    }
    assert_true(lanes > 60);
}

/* The AVX-512 rows path: narrow convs (13 to 16 output channels, a grouped conv's groups) of
 * stride 1 on their input padded by pad2d, and of stride 2 read in place or through its band
 * buffer (padding, odd input sizes); rows 7, 14, 28 and 56 wide and 1 to 12 of them (the last
 * group of rows cut short), windows up to 5x5, dilation, reductions up to the path's limit,
 * tiles along channels (inside the vector) and along pixels inside rows. */
static void test_conv2d_packed_rows_narrow(void **state) {
    (void)state;
    static const uint32_t widths[] = {7, 14, 28, 56};
    int rows = 0, band = 0, strided = 0;
    for (int i = 0; i < 120; i++) {
        /* each case from its own seed: the draws inside run_conv_case depend on how many
         * variants this CPU (or valgrind's) runs, the counts below must not */
        rng_state = 5151u + 7919u * (uint32_t)i;
        conv_case cc = {0};
        cc.k_h = rng_range(1, 5);
        cc.k_w = rng_range(cc.k_h == 1 ? 2 : 1, 5);
        cc.dil = rng_range(1, 4) == 1 ? 2 : 1;
        cc.stride = i % 3 == 2 ? 2 : 1;
        cc.c_out = rng_range(KANN_CONV_PANEL + 1, KANN_CONV_LANES_NARROW);
        cc.c_in = rng_range(1, KANN_CONV_ROWS_MAX_K / (cc.k_h * cc.k_w));
        uint32_t w_out = widths[rng_range(0, 3)], h_out = rng_range(1, 12);
        uint32_t reach_h = (h_out - 1) * cc.stride + cc.dil * (cc.k_h - 1) + 1;
        uint32_t reach_w = (w_out - 1) * cc.stride + cc.dil * (cc.k_w - 1) + 1;
        cc.pad = rng_range(0, 2);
        if (reach_h <= 2 * cc.pad + 1 || reach_w <= 2 * cc.pad + 1) cc.pad = 0;
        /* at stride 2 one more row and column than the windows reach, one time in two */
        uint32_t extra = cc.stride == 2 ? rng_range(0, 1) : 0;
        cc.h_in = reach_h - 2 * cc.pad + extra;
        cc.w_in = reach_w - 2 * cc.pad + extra;
        cc.via_pad = 1;
        run_conv_case(&cc);
        kann_conv2d_packed_args a = conv_case_shape(&cc);
        if (cc.stride == 1) {
            a.h_in = a.h_out + cc.dil * (cc.k_h - 1);
            a.w_in = a.w_out + cc.dil * (cc.k_w - 1);
            a.pad_top = a.pad_left = 0;
        }
        int taken = !kann_conv2d_packed_direct(&a) && kann_conv2d_packed_rows(&a);
        rows += taken;
        band += taken && !kann_conv2d_rows_in_place(&a);
        strided += taken && cc.stride == 2;
    }
    assert_true(rows > 90);    /* most cases took the rows path (111) */
    assert_true(strided > 25); /* of stride 2 (32) */
    assert_true(band > 12);    /* through the band buffer (18) */
}

/* The AVX-512 direct path: 1 to 4 input channels, windows up to 9x9 (and a few over its
 * reduction limit), strides 1 to 4 (the copy's phases split 2, 3 or 4 ways), dilation, padding
 * up to 3 (or pad2d before a stride-1 conv), rows of 1 to 70 columns (ragged blocks of 16
 * pixels, tails of 8 or fewer in half-width registers), 1 to 80 output channels (passes of 64,
 * ragged groups of 16), tiles along channels at panel bounds and along pixels inside rows. */
static void test_conv2d_packed_direct_random(void **state) {
    (void)state;
    rng_state = 77;
    int direct = 0;
    for (int i = 0; i < 150; i++) {
        conv_case cc = random_conv_case(4, 80, 9, 4, 3, 24, 70);
        cc.via_pad = cc.stride == 1 && i % 2;
        run_conv_case(&cc);
        kann_conv2d_packed_args a = conv_case_shape(&cc);
        direct += kann_conv2d_packed_direct(&a);
    }
    assert_true(direct > 100); /* most cases took the direct path */
}

/* Shapes of the real models: long reductions, 7x7 and 13x13 planes, 3 input channels. */
static void test_conv2d_packed_model_shapes(void **state) {
    (void)state;
    rng_state = 7;
    const conv_case cases[] = {
        {64, 64, 14, 14, 3, 3, 1, 1, 1, 0},
        {3, 64, 32, 32, 7, 7, 2, 1, 3, 0},
        {96, 17, 13, 13, 1, 1, 1, 1, 0, 0},
        {256, 30, 7, 7, 3, 3, 1, 1, 1, 0},
        {64, 128, 14, 14, 1, 1, 2, 1, 0, 0},
        {3, 32, 24, 24, 3, 3, 2, 1, 1, 0},
        {3, 16, 40, 224, 3, 3, 2, 1, 1, 0}, /* full-width stem rows (direct path) */
        /* alexnet's 11x11 stride-4 stem (K = 363, rows of 55 = 3 * 16 + 7) and convnext's
         * 4x4 stride-4 patches (rows of 18 = 16 + 2): direct, 4 column phases */
        {3, 64, 23, 227, 11, 11, 4, 1, 2, 0},
        {3, 96, 12, 72, 4, 4, 4, 1, 0, 0},
        {40, 13, 300, 1, 1, 1, 1, 1, 0, 0},
        {300, 20, 5, 7, 1, 1, 1, 1, 0, 0},
        {64, 64, 28, 28, 3, 3, 1, 1, 1, 0},
        {16, 64, 13, 13, 3, 3, 1, 1, 1, 0},
        {40, 24, 9, 30, 1, 7, 1, 1, 3, 0},
        {40, 24, 30, 9, 7, 1, 1, 1, 3, 0},
        {512, 24, 7, 7, 3, 3, 1, 1, 1, 0},
        /* strip tails past a whole vector: 49 = 32 + 16 + 1 and 196 = 6 * 32 + 4 pixels (the
         * AVX-512 column tail; maps of up to 7 strips run K > 256 as one block), 169 = 5 * 32 +
         * 9 (one vector); 8 strips (16x16) and K = 300: blocks of 256 and 44 steps, the partial
         * sums through y, a column tail of 4 on 260 pixels and of 16 + 4 (one strip, the tile
         * and the tail together) on 276 */
        {320, 30, 7, 7, 1, 1, 1, 1, 0, 0},
        {600, 13, 14, 14, 1, 1, 1, 1, 0, 0},
        {512, 40, 13, 13, 1, 1, 1, 1, 0, 0},
        {70, 25, 3, 2, 1, 1, 1, 1, 0, 0},
        {300, 26, 16, 16, 1, 1, 1, 1, 0, 0},
        {300, 26, 13, 20, 1, 1, 1, 1, 0, 0},
        {300, 26, 12, 23, 1, 1, 1, 1, 0, 0},
        /* strided: resnet18's layer3 3x3 (phase planes) and downsample 1x1 (gathered) */
        {128, 40, 28, 28, 3, 3, 2, 1, 1, 0},
        {256, 30, 14, 14, 1, 1, 2, 1, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_conv_case(&cases[i]);
        conv_case padded = cases[i];
        padded.via_pad = 1;
        run_conv_case(&padded);
    }
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
    /* the wide path: the same conv on its input padded to 10x10, read in place */
    kann_conv2d_packed_args wide = a;
    wide.pad_top = wide.pad_left = 0;
    wide.h_in = wide.w_in = 10;
    wide.x = alloc_ref(4 * 100, 1);
    assert_true(kann_conv2d_packed_wide(&wide));
    wide.scratch.space = KANN_SPACE_NONE; /* no gather, no scratch */
    assert_int_equal(kann_conv2d_packed_validate(&wide, &bd, &err), KANN_OK);
    bad = wide; /* a scratch some older file names is checked, then unused */
    bad.scratch = a.scratch;
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_OK);
    bad.scratch.offset = bd.arena_size - 36 * 63 * 4;
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = wide;
    bad.x.offset = bd.arena_size - 4 * 99 * 4; /* the last window reads one float past it */
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = wide;
    bad.h_in = 9; /* windows leave x: the gather path, which needs its scratch */
    assert_false(kann_conv2d_packed_wide(&bad));
    assert_int_equal(kann_conv2d_packed_validate(&bad, &bd, &err), KANN_E_CORRUPT);
}

static void test_pad2d_validate(void **state) {
    (void)state;
    arena_reset(1 << 12);
    kann_pad2d_args a = {0};
    a.c = 3;
    a.h_in = 4;
    a.w_in = 5;
    a.h_out = 6;
    a.w_out = 7;
    a.pad_top = a.pad_left = 1;
    a.x = alloc_ref(3 * 4 * 5, 1);
    a.y = alloc_ref(3 * 6 * 7, 0);
    a.tile = (kann_tile){0, 0, 18, 0};
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_pad2d_validate(&a, &bd, &err), KANN_OK);
    kann_pad2d_args bad = a;
    bad.tile.end = 19; /* past the c * h_out rows */
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.reserved = 1;
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.y.offset = bd.arena_size - 3 * 6 * 7 * 4 + 4; /* one float short */
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.y = bad.x; /* rows are copied with memcpy */
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.y.space = KANN_SPACE_CONST;
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.c = 0x10000;
    bad.h_out = 0x10000; /* rows overflow 32 bits */
    assert_int_equal(kann_pad2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    /* cropping: an output smaller than the input keeps the rows and columns it covers */
    a.h_out = 2;
    a.w_out = 3;
    a.pad_top = a.pad_left = 0;
    a.tile.end = 6;
    assert_int_equal(kann_pad2d_validate(&a, &bd, &err), KANN_OK);
    kann_exec ex = exec_ctx();
    kann_f32_pad2d_ref(&a, &ex);
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < 2; i++)
            for (size_t j = 0; j < 3; j++)
                assert_true(at(a.y)[(c * 2 + i) * 3 + j] == at(a.x)[(c * 4 + i) * 5 + j]);
}

/* ---- dwconv2d ------------------------------------------------------------------------------ */

typedef struct dw_case {
    uint32_t n, c, h_in, w_in, k_h, k_w, s_h, s_w, d_h, d_w, p_top, p_left;
} dw_case;

/* One depthwise conv (output size as for equal padding on both sides) against the reference:
 * every variant, run as two complementary tiles along channels or rows, cut at random. */
static void check_dwconv(const dw_case *k) {
    uint32_t n = k->n, c = k->c;
    uint32_t h_out = (k->h_in + 2 * k->p_top - k->d_h * (k->k_h - 1) - 1) / k->s_h + 1;
    uint32_t w_out = (k->w_in + 2 * k->p_left - k->d_w * (k->k_w - 1) - 1) / k->s_w + 1;
    size_t out = (size_t)n * c * h_out * w_out, taps = (size_t)k->k_h * k->k_w;
    arena_reset((size_t)n * c * k->h_in * k->w_in + c * taps + c + 4 * out + 256);
    kann_dwconv2d_args a = {0};
    a.n = n;
    a.c_in = a.c_out = a.group = c;
    a.h_in = k->h_in;
    a.w_in = k->w_in;
    a.h_out = h_out;
    a.w_out = w_out;
    a.k_h = k->k_h;
    a.k_w = k->k_w;
    a.stride_h = k->s_h;
    a.stride_w = k->s_w;
    a.dil_h = k->d_h;
    a.dil_w = k->d_w;
    a.pad_top = k->p_top;
    a.pad_left = k->p_left;
    a.act = random_act();
    a.x = alloc_ref((size_t)n * c * k->h_in * k->w_in, 1);
    a.w = alloc_ref(c * taps, 1);
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
        char what[160];
        snprintf(what, sizeof what, "dwconv n %u c %u %ux%u k %ux%u s %ux%u d %ux%u p %u,%u", n, c,
                 k->h_in, k->w_in, k->k_h, k->k_w, k->s_h, k->s_w, k->d_h, k->d_w, k->p_top,
                 k->p_left);
        expect_close(at(want), at(a.y), out, what, vs[v].isa);
    }
    kann_dwconv2d_args bad = a;
    bad.group = 1;
    if (c > 1) assert_int_equal(kann_dwconv2d_validate(&bad, &bd, &err), KANN_E_CORRUPT);
}

/* A random depthwise conv: c_lo..c_hi channels, windows up to k_max square, strides 1-3
 * (different along rows and columns), dilation 2 one time in dil_odds along each axis, padding
 * up to p_max, maps up to h_max x w_max (at least one window). */
static dw_case random_dw_case(uint32_t c_lo, uint32_t c_hi, uint32_t k_max, uint32_t dil_odds,
                              uint32_t p_max, uint32_t h_max, uint32_t w_max) {
    dw_case k;
    k.n = rng_range(1, 2);
    k.c = rng_range(c_lo, c_hi);
    k.k_h = rng_range(1, k_max);
    k.k_w = rng_range(1, k_max);
    k.s_h = rng_range(1, 3);
    k.s_w = rng_range(0, 1) ? k.s_h : rng_range(1, 3);
    k.d_h = rng_range(1, dil_odds) == 1 ? 2 : 1;
    k.d_w = rng_range(1, dil_odds) == 1 ? 2 : 1;
    k.p_top = rng_range(0, p_max);
    k.p_left = rng_range(0, p_max);
    k.h_in = rng_range(k.d_h * (k.k_h - 1) + 1, h_max);
    k.w_in = rng_range(k.d_w * (k.k_w - 1) + 1, w_max);
    return k;
}

/* Small random shapes: every window up to 5x5, strides 1-3 (different along rows and
 * columns), dilation, padding up to 2, rows narrower and wider than a vector. */
static void test_dwconv2d_random(void **state) {
    (void)state;
    rng_state = 99;
    for (int i = 0; i < 200; i++) {
        dw_case k = random_dw_case(1, 9, 5, 2, 2, 20, 45);
        check_dwconv(&k);
    }
}

/* Enough channels for AVX-512's channels-in-lanes path (groups of 16, a ragged last group of
 * 12-15 or a few left to the band path): small maps (each pixel's place in the ring from a
 * table), maps whose rows do not all fit the ring (it wraps, its first rows mirrored), rows
 * wider than 16 pixels, every window up to 7x7 with stride, dilation and padding; the
 * model-like shapes below hold MobileNet's. */
static void test_dwconv2d_lanes(void **state) {
    (void)state;
    rng_state = 103;
    for (int i = 0; i < 300; i++) {
        int big = rng_range(0, 2) == 0;
        dw_case k = random_dw_case(12, 40, 7, 4, 3, big ? 70 : 16, big ? 90 : 20);
        check_dwconv(&k);
    }
}

/* Model-like shapes: maps of several bands (the SIMD variants copy a band of rows at a time),
 * odd sizes, 3x3 stride 1 and 2 as in MobileNet (the row path; on AVX-512 from 10 output
 * columns the straight path, which reads x where it lies, 5x5 too) and next to them the shapes
 * that leave it (dilation, 7x7, 3x1, rows of 8 or fewer, rows too wide for a band of 8). */
static void test_dwconv2d_model_shapes(void **state) {
    (void)state;
    rng_state = 101;
    static const dw_case cases[] = {
        {1, 3, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 2, 113, 113, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 5, 57, 57, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 4, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 7, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 7, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 9, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 3, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 3, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 2, 64, 70, 3, 3, 1, 1, 2, 2, 2, 2},
        {1, 2, 61, 67, 5, 5, 2, 2, 1, 1, 2, 2},
        {1, 2, 40, 90, 3, 1, 1, 1, 1, 1, 1, 0},
        {1, 2, 40, 90, 1, 3, 1, 2, 1, 1, 0, 1},
        {1, 2, 30, 1500, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 2, 9, 3000, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 1, 6, 9000, 3, 3, 1, 1, 1, 1, 1, 1},
        {2, 3, 33, 35, 3, 3, 2, 1, 1, 1, 1, 1},
        {1, 3, 35, 33, 3, 3, 1, 2, 1, 1, 0, 1},
        {1, 2, 50, 50, 7, 7, 3, 3, 1, 1, 3, 3},
        {1, 2, 20, 20, 3, 3, 1, 1, 1, 1, 4, 4},
        /* channels in the lanes (AVX-512, 12 channels or more) */
        {1, 32, 112, 112, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 48, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 40, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 36, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 24, 56, 56, 7, 7, 1, 1, 1, 1, 3, 3},
        {1, 30, 28, 28, 5, 5, 2, 2, 1, 1, 2, 2},
        {1, 16, 8, 300, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 16, 3, 2000, 3, 3, 1, 1, 1, 1, 1, 1},
        /* AVX-512's straight 3x3 path: padding 0 and 2, 10 output columns (its narrowest), 9
         * (the lanes path), stride 2 from even and odd widths, channels split in tiles */
        {1, 3, 40, 40, 3, 3, 1, 1, 1, 1, 0, 0},
        {1, 3, 40, 41, 3, 3, 2, 2, 1, 1, 2, 2},
        {1, 20, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 20, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 17, 19, 19, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 17, 20, 20, 3, 3, 2, 2, 1, 1, 1, 1},
        /* stride 2, a row's last vector of 15 or 14 columns (tap 2 from taps 0 and 1's loads),
         * its last tap inside the row and past it */
        {1, 5, 29, 30, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 3, 20, 32, 3, 3, 2, 2, 1, 1, 0, 0},
        {1, 3, 20, 29, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 3, 21, 63, 3, 3, 2, 2, 1, 1, 0, 0},
        {1, 3, 20, 58, 3, 3, 2, 2, 1, 1, 1, 1},
        {2, 35, 33, 47, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 3, 12, 100, 3, 3, 2, 2, 1, 1, 0, 0},
        /* the straight 5x5 path (AVX-512 at stride 1 and 2 from 10 output columns, AVX2 at
         * stride 1): MnasNet's and EfficientNet's maps (28x28, 14x14 and stride 2 from 56x56),
         * padding 0 to 3, an odd width at stride 2, 10 output columns and 9 (AVX-512's lanes
         * path), channels split in tiles */
        {1, 3, 28, 28, 5, 5, 1, 1, 1, 1, 2, 2},
        {1, 20, 14, 14, 5, 5, 1, 1, 1, 1, 2, 2},
        {1, 5, 56, 57, 5, 5, 2, 2, 1, 1, 2, 2},
        {1, 3, 30, 40, 5, 5, 1, 1, 1, 1, 0, 0},
        {1, 3, 31, 45, 5, 5, 2, 2, 1, 1, 1, 1},
        {1, 2, 14, 14, 5, 5, 1, 1, 1, 1, 3, 3},
        {1, 17, 12, 12, 5, 5, 1, 1, 1, 1, 1, 1},
        {1, 17, 13, 13, 5, 5, 1, 1, 1, 1, 0, 0},
        {2, 3, 23, 41, 5, 5, 2, 2, 1, 1, 2, 2},
        /* AVX2's straight path from 2 output columns (1 column: the band path) */
        {1, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 5, 6, 1, 3, 3, 1, 1, 1, 1, 1, 1},
        /* whole planes of 65-256 outputs: a group's outputs staged, then written in one pass */
        {1, 40, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 28, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1},
        {1, 20, 17, 17, 3, 3, 2, 2, 1, 1, 1, 1},
        {1, 13, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_dwconv(&cases[i]);
}

/* Large windows (more than 64 taps, up to 32x32: RepLKNet's 31x31, 13x13, 9x9) and windows
 * wide next to their map, where the band goes row by row instead of on the wide grid: random
 * windows up to 31x31 with strides 1-2, dilation, padding up to half the window, maps of 1 to 70
 * rows and up to 90 columns, channel counts on both sides of AVX-512's channels-in-lanes path
 * (which leaves windows of more than 64 taps to the band path); fixed model shapes, and one
 * past 32x32 (the reference's). */
static void test_dwconv2d_large_windows(void **state) {
    (void)state;
    rng_state = 109;
    static const dw_case cases[] = {
        {1, 5, 32, 32, 31, 31, 1, 1, 1, 1, 15, 15}, {1, 13, 16, 16, 13, 13, 1, 1, 1, 1, 6, 6},
        {1, 3, 56, 56, 9, 9, 1, 1, 1, 1, 4, 4},     {1, 3, 28, 28, 13, 13, 2, 2, 1, 1, 6, 6},
        {1, 2, 14, 14, 7, 7, 1, 1, 1, 1, 3, 3},     {1, 2, 7, 7, 7, 7, 1, 1, 1, 1, 3, 3},
        {1, 2, 20, 40, 1, 31, 1, 1, 1, 1, 0, 15},   {1, 2, 40, 20, 31, 1, 1, 1, 1, 1, 15, 0},
        {1, 2, 40, 40, 33, 33, 1, 1, 1, 1, 16, 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_dwconv(&cases[i]);
    for (int i = 0; i < 60; i++) {
        dw_case k = random_dw_case(1, 20, 31, 4, 0, 70, 90);
        if (k.s_h > 2) k.s_h = 2;
        if (k.s_w > 2) k.s_w = 2;
        k.p_top = rng_range(0, k.k_h / 2);
        k.p_left = rng_range(0, k.k_w / 2);
        check_dwconv(&k);
    }
}

/* AVX-512's path for small maps (whole planes in at most 4 vectors): 3x3 and 5x5 windows at
 * stride 1 whose output is as large as the input (5x5 on rows of at most 7, wider ones leave the
 * path), on maps of 1 to 12 rows and columns (planes of 1 to 64 outputs in one to four vectors,
 * larger ones outside it, rows narrower and wider than the window; each tap a permute) and on
 * rows of 16 to 64 (loads); 3x3 and 5x5 at stride 2 with padding 0 to k - 1 on inputs 3 to 16
 * wide (two output rows a vector, up to 8 rows; output rows of up to 8, taps past a row's load
 * reading padding), odd and even sizes; odd channel counts (pairs and a single one), two images;
 * next to them the shapes just outside (129 outputs, 8-wide rows at stride 2 from 17 columns,
 * padding other than 1). Tiles along rows leave the path. */
static void test_dwconv2d_planes(void **state) {
    (void)state;
    rng_state = 107;
    for (int i = 0; i < 160; i++) {
        dw_case k = {0};
        k.n = rng_range(1, 2);
        k.c = rng_range(1, 21);
        k.d_h = k.d_w = 1;
        if (i % 2 == 0) { /* stride 1, same size */
            k.k_h = k.k_w = i % 4 == 0 ? 3 : 5;
            k.s_h = k.s_w = 1;
            k.p_top = k.p_left = k.k_h / 2;
            k.h_in = rng_range(1, 12);
            k.w_in = rng_range(1, 12);
            if (i % 16 == 2) { /* 129 outputs: past the path */
                k.h_in = 43;
                k.w_in = 3;
            }
            if (i % 16 == 6) k.p_left = 0; /* not same-size along the rows */
            if (i % 16 == 10) {            /* rows of 16 to 64: loads, not permutes */
                k.h_in = rng_range(1, 4);
                k.w_in = rng_range(16, 64 / k.h_in);
            }
        } else { /* 3x3 (and 5x5 one case in four), stride 2 */
            k.k_h = k.k_w = i % 8 == 7 ? 5 : 3;
            k.s_h = k.s_w = 2;
            k.p_top = rng_range(0, k.k_h - 1);
            k.p_left = rng_range(0, k.k_h - 1);
            k.h_in = rng_range(3, 20);
            k.w_in = rng_range(3, 16);
            if (i % 16 == 3) k.w_in = 17; /* 8 outputs a row with padding 1 */
        }
        if (k.h_in + 2 * k.p_top < k.k_h || k.w_in + 2 * k.p_left < k.k_w) continue;
        check_dwconv(&k);
    }
}

/* ---- pool2d --------------------------------------------------------------------------------- */

/* Max and average pooling, strides 1-3, dilation, padding wider than the window (windows that
 * cover nothing give 0), ragged rows (an average's up to 100 columns half the time: groups of
 * four output vectors and what is left), NaN inputs (skipped by max), complementary plane tiles;
 * one case in 4 a 3-column window at stride 2 over rows up to 120 wide (half of them 3x3, with
 * several NaN inputs). */
static void test_pool2d_random(void **state) {
    (void)state;
    rng_state = 77;
    for (int i = 0; i < 200; i++) {
        kann_pool2d_args a = {0};
        a.kind = rng_range(0, 3) == 0 ? KANN_POOL_AVG : KANN_POOL_MAX;
        a.count_include_pad = rng_range(0, 1);
        a.planes = rng_range(1, 6);
        a.k_h = rng_range(1, 4);
        a.k_w = rng_range(1, 4);
        a.stride_h = rng_range(1, 3);
        a.stride_w = rng_range(1, 3);
        a.dil_h = rng_range(1, 4) == 1 ? 2 : 1;
        a.dil_w = rng_range(1, 4) == 1 ? 2 : 1;
        a.pad_top = rng_range(0, 3);
        a.pad_left = rng_range(0, 3);
        a.pad_bottom = rng_range(0, 3);
        a.pad_right = rng_range(0, 3);
        a.h_in = rng_range(1, 12);
        a.w_in = rng_range(1, a.kind == KANN_POOL_AVG && i % 2 ? 100 : 50);
        int shared3 = i % 8 == 3 || i % 8 == 7;
        if (shared3) { /* 3 columns at stride 2: the loads shared by the taps */
            a.k_w = 3;
            a.stride_w = 2;
            a.dil_w = 1;
            a.w_in = rng_range(30, 120);
            if (i % 8 == 7) { /* and 3 rows: whole vectors over interior rows load plainly */
                a.k_h = 3;
                a.dil_h = 1;
                a.h_in = rng_range(3, 12);
            }
        }
        int64_t span_h = (int64_t)a.h_in + a.pad_top + a.pad_bottom - a.dil_h * (a.k_h - 1);
        int64_t span_w = (int64_t)a.w_in + a.pad_left + a.pad_right - a.dil_w * (a.k_w - 1);
        if (span_h < 1 || span_w < 1) continue;
        a.h_out = (uint32_t)((span_h - 1) / a.stride_h + 1);
        a.w_out = (uint32_t)((span_w - 1) / a.stride_w + 1);
        a.act = random_act();
        size_t in = (size_t)a.planes * a.h_in * a.w_in, out = (size_t)a.planes * a.h_out * a.w_out;
        arena_reset(in + 3 * out + 256);
        a.x = alloc_ref(in, 1);
        if (i % 5 == 0 || shared3)
            for (int k = 0; k < (shared3 ? 6 : 1); k++)
                at(a.x)[rng_range(0, (uint32_t)in - 1)] = NAN;
        kann_ref want = alloc_ref(out, 0);
        a.y = want;
        a.tile = (kann_tile){0, 0, a.planes, 0};
        kann_exec ex = exec_ctx();
        kann_bounds bd = bounds_all();
        kann_error err;
        assert_int_equal(kann_pool2d_validate(&a, &bd, &err), KANN_OK);
        kann_f32_pool2d_ref(&a, &ex);
        a.y = alloc_ref(out, 0);
        variant vs[4];
        int nv = variants_of(KANN_KERNEL_F32_POOL2D, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t j = 0; j < out; j++)
                at(a.y)[j] = -1.0f;
            uint32_t cut = rng_range(0, a.planes);
            kann_pool2d_args t0 = a, t1 = a;
            t0.tile = (kann_tile){0, 0, cut, 0};
            t1.tile = (kann_tile){0, cut, a.planes, 0};
            vs[v].fn(&t0, &ex);
            vs[v].fn(&t1, &ex);
            char what[160];
            snprintf(what, sizeof what,
                     "pool %s %ux%u k %ux%u s %ux%u d %ux%u p %u %u %u %u act %u",
                     a.kind == KANN_POOL_MAX ? "max" : "avg", a.h_in, a.w_in, a.k_h, a.k_w,
                     a.stride_h, a.stride_w, a.dil_h, a.dil_w, a.pad_top, a.pad_left, a.pad_bottom,
                     a.pad_right, a.act.kind);
            const float *w = at(want), *g = at(a.y);
            for (size_t j = 0; j < out; j++)
                if (isnan(w[j]) != isnan(g[j]) || (!isnan(w[j]) && fabsf(w[j] - g[j]) > 1e-6f))
                    fail_msg("%s (%s): element %zu is %g, the reference says %g", what, vs[v].isa,
                             j, (double)g[j], (double)w[j]);
        }
    }
}

/* ---- conv2d_maxpool -------------------------------------------------------------------------- */

/* The fused conv and max pool against the conv2d reference into a whole map, max-pooled by the
 * pool2d reference: 1 to 4 input channels (the AVX-512 direct path; one case in 4 up to 20, the
 * 12 x 32 tile), windows up to 9x9, strides 1 to 4, dilation, padding, 1 to 80 output channels
 * (passes of 64, ragged groups of 16), pool windows 1 to 4 at strides 1 to 3 with padding below
 * the window and last windows cut by the map's end (ceil mode), rows from 1 to 70 columns and one
 * case in 8 224 wide (a stem's rows); two complementary tiles on a random axis. */
static void test_conv2d_maxpool_random(void **state) {
    (void)state;
    rng_state = 91;
    int cases = 0;
    for (int i = 0; i < 160; i++) {
        uint32_t c_in = i % 4 == 3 ? rng_range(5, 20) : rng_range(1, 4);
        uint32_t c_out = rng_range(1, 80), k_h = rng_range(1, 9), k_w = rng_range(1, 9);
        uint32_t stride = rng_range(1, 4), dil = rng_range(1, 4) == 1 ? 2 : 1;
        uint32_t pad = rng_range(0, 3);
        uint32_t h_in = rng_range(1, 24), w_in = i % 8 == 5 ? 224 : rng_range(1, 70);
        if (i % 8 == 5) h_in = rng_range(1, 12);
        int64_t span_h = (int64_t)h_in + 2 * pad - (int64_t)dil * (k_h - 1);
        int64_t span_w = (int64_t)w_in + 2 * pad - (int64_t)dil * (k_w - 1);
        if (span_h < 1 || span_w < 1) continue;
        uint32_t h_conv = (uint32_t)((span_h - 1) / stride + 1);
        uint32_t w_conv = (uint32_t)((span_w - 1) / stride + 1);
        uint32_t pk_h = rng_range(1, 4), pk_w = rng_range(1, 4);
        uint32_t ps_h = rng_range(1, 3), ps_w = rng_range(1, 3);
        uint32_t pp_h = rng_range(0, pk_h - 1), pp_w = rng_range(0, pk_w - 1);
        int ceil_mode = rng_range(0, 1);
        int64_t ph = (int64_t)h_conv + 2 * pp_h - pk_h, pw = (int64_t)w_conv + 2 * pp_w - pk_w;
        if (ph < 0 || pw < 0) continue;
        uint32_t h_out = (uint32_t)((ph + (ceil_mode ? ps_h - 1 : 0)) / ps_h + 1);
        uint32_t w_out = (uint32_t)((pw + (ceil_mode ? ps_w - 1 : 0)) / ps_w + 1);
        /* the last window starts inside the map (ceil mode drops one that would not) */
        if ((uint64_t)(h_out - 1) * ps_h >= (uint64_t)h_conv + pp_h) h_out--;
        if ((uint64_t)(w_out - 1) * ps_w >= (uint64_t)w_conv + pp_w) w_out--;
        size_t K = (size_t)c_in * k_h * k_w, hw = (size_t)h_conv * w_conv;
        size_t panels = (c_out + 11) / 12, out = (size_t)c_out * h_out * w_out;

        kann_conv2d_maxpool_args a = {0};
        a.c_in = c_in;
        a.h_in = h_in;
        a.w_in = w_in;
        a.c_out = c_out;
        a.h_conv = h_conv;
        a.w_conv = w_conv;
        a.k_h = k_h;
        a.k_w = k_w;
        a.stride_h = a.stride_w = stride;
        a.dil_h = a.dil_w = dil;
        a.pad_top = a.pad_left = pad;
        a.pool_k_h = pk_h;
        a.pool_k_w = pk_w;
        a.pool_stride_h = ps_h;
        a.pool_stride_w = ps_w;
        a.pool_pad_top = pp_h;
        a.pool_pad_left = pp_w;
        a.h_out = h_out;
        a.w_out = w_out;
        uint64_t band, gather, floats = kann_conv2d_maxpool_scratch(&a, &band, &gather);
        arena_reset(c_in * h_in * w_in + c_out * K + panels * 12 * K + c_out + c_out * hw +
                    3 * out + floats + 1024);

        /* the reference: the whole conv, then its max pool */
        conv_case cc = {c_in, c_out, h_in, w_in, k_h, k_w, stride, dil, pad, 0};
        kann_conv2d_args r = run_ref_conv(&cc, h_conv, w_conv, 0);
        kann_exec ex = exec_ctx();
        kann_bounds bd = bounds_all();
        kann_error err;
        kann_pool2d_args p = {0};
        p.kind = KANN_POOL_MAX;
        p.planes = c_out;
        p.h_in = h_conv;
        p.w_in = w_conv;
        p.h_out = h_out;
        p.w_out = w_out;
        p.k_h = pk_h;
        p.k_w = pk_w;
        p.stride_h = ps_h;
        p.stride_w = ps_w;
        p.dil_h = p.dil_w = 1;
        p.pad_top = pp_h;
        p.pad_left = pp_w;
        int64_t pb = (int64_t)(h_out - 1) * ps_h + pk_h - pp_h - h_conv;
        int64_t pr = (int64_t)(w_out - 1) * ps_w + pk_w - pp_w - w_conv;
        p.pad_bottom = pb > 0 ? (uint32_t)pb : 0;
        p.pad_right = pr > 0 ? (uint32_t)pr : 0;
        p.x = r.y;
        p.y = alloc_ref(out, 0);
        p.tile = (kann_tile){0, 0, c_out, 0};
        assert_int_equal(kann_pool2d_validate(&p, &bd, &err), KANN_OK);
        kann_f32_pool2d_ref(&p, &ex);

        a.act = r.act;
        a.x = r.x;
        a.bias = r.bias;
        a.w = pack_panels(r.w, c_out, K);
        a.y = alloc_ref(out, 0);
        a.scratch = alloc_ref(floats, 0);
        kann_conv2d_packed_args cv = conv_case_shape(&cc);

        variant vs[4];
        int nv = variants_of(KANN_KERNEL_F32_CONV2D_MAXPOOL, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t j = 0; j < out; j++)
                at(a.y)[j] = NAN;
            uint32_t axis = rng_range(0, 1), extent = axis ? h_out : c_out;
            uint32_t cut = axis ? rng_range(0, extent) : rng_range(0, (c_out + 11) / 12) * 12;
            if (cut > extent) cut = extent;
            kann_conv2d_maxpool_args t0 = a, t1 = a;
            t0.tile = (kann_tile){axis, 0, cut, 0};
            t1.tile = (kann_tile){axis, cut, extent, 0};
            if (kann_conv2d_maxpool_validate(&t0, &bd, &err) != KANN_OK ||
                kann_conv2d_maxpool_validate(&t1, &bd, &err) != KANN_OK)
                fail_msg("conv2d_maxpool arguments refused: %s", err.message);
            vs[v].fn(&t0, &ex);
            vs[v].fn(&t1, &ex);
            char what[200];
            snprintf(what, sizeof what,
                     "conv2d_maxpool c_in %u c_out %u %ux%u k %ux%u s %u d %u p %u act %u%s pool "
                     "%ux%u s %ux%u p %ux%u out %ux%u tile %u@%u",
                     c_in, c_out, h_in, w_in, k_h, k_w, stride, dil, pad, a.act.kind,
                     kann_conv2d_packed_direct(&cv) ? " direct" : "", pk_h, pk_w, ps_h, ps_w, pp_h,
                     pp_w, h_out, w_out, axis, cut);
            expect_close(at(p.y), at(a.y), out, what, vs[v].isa);
        }
        cases++;
    }
    assert_true(cases > 100);
}

/* conv2d_maxpool's validator: windows that start outside the map, pads as wide as the window, a
 * channel tile off a panel, a scratch too small. */
static void test_conv2d_maxpool_validate(void **state) {
    (void)state;
    kann_conv2d_maxpool_args a = {0};
    a.c_in = 3;
    a.h_in = a.w_in = 20;
    a.c_out = 16;
    a.h_conv = a.w_conv = 9;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = 2;
    a.dil_h = a.dil_w = 1;
    a.pool_k_h = a.pool_k_w = 3;
    a.pool_stride_h = a.pool_stride_w = 2;
    a.h_out = a.w_out = 4;
    a.tile = (kann_tile){0, 0, 16, 0};
    uint64_t band, gather, floats = kann_conv2d_maxpool_scratch(&a, &band, &gather);
    arena_reset(3 * 400 + 2 * 12 * 27 + 16 * 16 + floats + 64);
    a.x = alloc_ref(3 * 400, 1);
    a.w = alloc_ref(2 * 12 * 27, 1);
    a.y = alloc_ref(16 * 16, 0);
    a.scratch = alloc_ref(floats, 0);
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_conv2d_maxpool_validate(&a, &bd, &err), KANN_OK);
    kann_conv2d_maxpool_args b = a;
    b.h_out = 5; /* its last window would start at row 8 + 1 past the map's 9 rows... */
    b.pool_pad_top = 0;
    b.pool_stride_h = 3;
    assert_int_not_equal(kann_conv2d_maxpool_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.pool_pad_left = 3;
    assert_int_not_equal(kann_conv2d_maxpool_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.tile = (kann_tile){0, 6, 16, 0};
    assert_int_not_equal(kann_conv2d_maxpool_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.scratch.offset += 4 * 64; /* past the arena's end */
    assert_int_not_equal(kann_conv2d_maxpool_validate(&b, &bd, &err), KANN_OK);
}

/* ---- dwblock -------------------------------------------------------------------------------- */

/* The block's three stages computed whole, plainly, from the unpacked weights. */
static void dwblock_expected(const kann_dwblock_args *a, const float *x, const float *we,
                             const float *be, const float *wd, const float *bd, const float *wp,
                             const float *bp, const float *res, float *y) {
    size_t in_plane = (size_t)a->h_in * a->w_in, out_plane = (size_t)a->h_out * a->w_out;
    float *e = malloc(sizeof(float) * a->c_mid * in_plane);
    float *d = malloc(sizeof(float) * a->c_mid * out_plane);
    assert_non_null(e);
    assert_non_null(d);
    for (size_t c = 0; c < a->c_mid; c++)
        for (size_t p = 0; p < in_plane; p++) {
            if (!a->expand) {
                e[c * in_plane + p] = x[c * in_plane + p];
                continue;
            }
            float s = be ? be[c] : 0.0f;
            for (size_t k = 0; k < a->c_in; k++)
                s += we[c * a->c_in + k] * x[k * in_plane + p];
            e[c * in_plane + p] = kann_act_apply(&a->act_exp, s);
        }
    for (size_t c = 0; c < a->c_mid; c++)
        for (size_t oh = 0; oh < a->h_out; oh++)
            for (size_t ow = 0; ow < a->w_out; ow++) {
                float s = bd ? bd[c] : 0.0f;
                for (size_t kh = 0; kh < a->k_h; kh++)
                    for (size_t kw = 0; kw < a->k_w; kw++) {
                        int64_t ih = (int64_t)(oh * a->stride_h + kh * a->dil_h) - a->pad_top;
                        int64_t iw = (int64_t)(ow * a->stride_w + kw * a->dil_w) - a->pad_left;
                        if (ih < 0 || iw < 0 || ih >= a->h_in || iw >= a->w_in) continue;
                        s += wd[(c * a->k_h + kh) * a->k_w + kw] *
                             e[c * in_plane + (size_t)ih * a->w_in + (size_t)iw];
                    }
                d[c * out_plane + oh * a->w_out + ow] = kann_act_apply(&a->act_dw, s);
            }
    for (size_t m = 0; m < a->c_out; m++)
        for (size_t p = 0; p < out_plane; p++) {
            float s = bp ? bp[m] : 0.0f;
            for (size_t c = 0; c < a->c_mid; c++)
                s += wp[m * a->c_mid + c] * d[c * out_plane + p];
            if (res) s += res[m * out_plane + p];
            y[m * out_plane + p] = kann_act_apply(&a->act_proj, s);
        }
    free(e);
    free(d);
}

/* The block, band by band, against its stages computed whole: with and without the expansion,
 * 1 to 90 inner channels (ragged panels and lanes blocks, one to two groups of four blocks on
 * the AVX-512 lanes path), 1 to 70 input channels (past the lanes path's 64), windows up to 5x5
 * with strides 1 to 3, dilation and padding up to the window's reach, rows from 1 to 40 columns and
 * one case in 6 112 wide, bands of 1 to 6 rows or all of them, every epilogue on each stage, biases
 * and the residual present or not; two complementary row tiles. Every band's depthwise conv passes
 * dwconv2d's validator. */
static void test_dwblock_random(void **state) {
    (void)state;
    rng_state = 131;
    int cases = 0;
    for (int i = 0; i < 150; i++) {
        kann_dwblock_args a = {0};
        a.expand = i % 4 != 3;
        a.c_in = i % 7 == 3 ? rng_range(21, 70) : rng_range(1, 20);
        a.c_mid = !a.expand ? a.c_in : i % 5 == 2 ? rng_range(41, 90) : rng_range(1, 40);
        a.c_out = rng_range(1, 30);
        a.k_h = i % 3 ? 3 : rng_range(1, 5);
        a.k_w = i % 3 ? 3 : rng_range(1, 5);
        a.stride_h = rng_range(1, 3);
        a.stride_w = i % 2 ? a.stride_h : rng_range(1, 3);
        a.dil_h = a.dil_w = rng_range(1, 4) == 1 ? 2 : 1;
        a.pad_top = rng_range(0, (a.k_h - 1) * a.dil_h);
        a.pad_left = rng_range(0, (a.k_w - 1) * a.dil_w);
        a.h_in = rng_range(1, 24);
        a.w_in = i % 6 == 5 ? 112 : rng_range(1, 40);
        int64_t span_h = (int64_t)a.h_in + 2 * a.pad_top - (int64_t)a.dil_h * (a.k_h - 1);
        int64_t span_w = (int64_t)a.w_in + 2 * a.pad_left - (int64_t)a.dil_w * (a.k_w - 1);
        if (span_h < 1 || span_w < 1) continue;
        a.h_out = (uint32_t)((span_h - 1) / a.stride_h + 1);
        a.w_out = (uint32_t)((span_w - 1) / a.stride_w + 1);
        a.band_rows = i % 5 == 4 ? a.h_out + rng_range(0, 3) : rng_range(1, 6);
        a.act_exp = random_act();
        a.act_dw = random_act();
        a.act_proj = random_act();
        size_t in_n = (size_t)a.c_in * a.h_in * a.w_in, out_n = (size_t)a.c_out * a.h_out * a.w_out;
        size_t we_n = (size_t)a.c_mid * a.c_in, wp_n = (size_t)a.c_out * a.c_mid;
        size_t panels = (a.c_mid + 11) / 12 + (a.c_out + 11) / 12;
        uint64_t floats = kann_dwblock_scratch(&a);
        arena_reset(in_n + 2 * we_n + 2 * wp_n + panels * 12 * (a.c_in + a.c_mid) +
                    (size_t)a.c_mid * (a.k_h * a.k_w + 2) + 2 * a.c_out + 3 * out_n + floats +
                    1024);
        kann_ref x = alloc_ref(in_n, 1), we = alloc_ref(we_n, 1), wp = alloc_ref(wp_n, 1);
        kann_ref wd = alloc_ref((size_t)a.c_mid * a.k_h * a.k_w, 1);
        kann_ref be = alloc_ref(a.c_mid, 1), bd = alloc_ref(a.c_mid, 1), bp = alloc_ref(a.c_out, 1);
        kann_ref res = alloc_ref(out_n, 1), want = alloc_ref(out_n, 0);
        int with_be = a.expand && rng_range(0, 3), with_bd = rng_range(0, 3) != 0;
        int with_bp = rng_range(0, 3) != 0, with_res = rng_range(0, 2) == 0;
        a.x = x;
        a.w_dw = wd;
        a.w_proj = pack_panels(wp, a.c_out, a.c_mid);
        a.w_exp.space = a.b_exp.space = a.b_dw.space = a.b_proj.space = KANN_SPACE_NONE;
        a.residual.space = KANN_SPACE_NONE;
        if (a.expand) a.w_exp = pack_panels(we, a.c_mid, a.c_in);
        if (with_be) a.b_exp = be;
        if (with_bd) a.b_dw = bd;
        if (with_bp) a.b_proj = bp;
        if (with_res) a.residual = res;
        a.y = alloc_ref(out_n, 0);
        a.scratch = alloc_ref(floats, 0);
        dwblock_expected(&a, at(x), at(we), with_be ? at(be) : NULL, at(wd),
                         with_bd ? at(bd) : NULL, at(wp), with_bp ? at(bp) : NULL,
                         with_res ? at(res) : NULL, at(want));
        kann_exec ex = exec_ctx();
        kann_bounds bnd = bounds_all();
        kann_error err;
        for (size_t o0 = 0; o0 < a.h_out; o0 += a.band_rows) {
            size_t o1 = a.h_out - o0 < a.band_rows ? a.h_out : o0 + a.band_rows, r0, r1;
            kann_dwblock_rows(&a, o0, o1, &r0, &r1);
            kann_ref e = a.scratch, d = a.scratch;
            d.offset += sizeof(float) * kann_dwblock_e_floats(&a);
            kann_dwconv2d_args da = kann_dwblock_dw_args(&a, e, d, o0, o1, r0);
            if (kann_dwconv2d_validate(&da, &bnd, &err) != KANN_OK)
                fail_msg("dwblock band %zu..%zu: depthwise arguments refused: %s", o0, o1,
                         err.message);
        }
        variant vs[4];
        int nv = variants_of(KANN_KERNEL_F32_DWBLOCK, vs);
        for (int v = 0; v < nv; v++) {
            for (size_t j = 0; j < out_n; j++)
                at(a.y)[j] = NAN;
            uint32_t cut = rng_range(0, a.h_out);
            kann_dwblock_args t0 = a, t1 = a;
            t0.tile = (kann_tile){0, 0, cut, 0};
            t1.tile = (kann_tile){0, cut, a.h_out, 0};
            if (kann_dwblock_validate(&t0, &bnd, &err) != KANN_OK ||
                kann_dwblock_validate(&t1, &bnd, &err) != KANN_OK)
                fail_msg("dwblock arguments refused: %s", err.message);
            vs[v].fn(&t0, &ex);
            vs[v].fn(&t1, &ex);
            char what[200];
            snprintf(what, sizeof what,
                     "dwblock expand %u %u->%u->%u %ux%u k %ux%u s %ux%u d %u p %u,%u band %u "
                     "acts %u %u %u res %d tile %u",
                     a.expand, a.c_in, a.c_mid, a.c_out, a.h_in, a.w_in, a.k_h, a.k_w, a.stride_h,
                     a.stride_w, a.dil_h, a.pad_top, a.pad_left, a.band_rows, a.act_exp.kind,
                     a.act_dw.kind, a.act_proj.kind, with_res, cut);
            expect_close(at(want), at(a.y), out_n, what, vs[v].isa);
        }
        cases++;
    }
    assert_true(cases > 120);
}

/* dwblock's validator: a window reaching past the input, a pad past the window, inner channels
 * that differ from the input's without an expansion, expansion weights without one, a tile
 * past the rows, a scratch too small, zero band rows. */
static void test_dwblock_validate(void **state) {
    (void)state;
    kann_dwblock_args a = {0};
    a.expand = 1;
    a.c_in = 8;
    a.c_mid = 24;
    a.c_out = 8;
    a.h_in = a.w_in = 10;
    a.h_out = a.w_out = 5;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = 2;
    a.dil_h = a.dil_w = 1;
    a.pad_top = a.pad_left = 1;
    a.band_rows = 2;
    a.tile = (kann_tile){0, 0, 5, 0};
    uint64_t floats = kann_dwblock_scratch(&a);
    arena_reset(800 + 2 * 12 * 8 + 24 * 9 + 12 * 24 + 200 + floats + 256);
    a.x = alloc_ref(800, 1);
    a.w_exp = alloc_ref(2 * 12 * 8, 1);
    a.w_dw = alloc_ref(24 * 9, 1);
    a.w_proj = alloc_ref(12 * 24, 1);
    a.y = alloc_ref(200, 0);
    a.scratch = alloc_ref(floats, 0);
    kann_bounds bd = bounds_all();
    kann_error err;
    assert_int_equal(kann_dwblock_validate(&a, &bd, &err), KANN_OK);
    kann_dwblock_args b = a;
    b.h_out = 7; /* its last window would start at row 6 * 2 - 1 = 11, past the 10 rows */
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.pad_left = 3;
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.expand = 0;
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b.c_mid = 8;
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK); /* w_exp given */
    b.w_exp.space = KANN_SPACE_NONE;
    assert_int_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.tile = (kann_tile){0, 2, 6, 0};
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.band_rows = 5; /* a taller band needs more scratch than there is (past the arena's end) */
    assert_true(kann_dwblock_scratch(&b) > floats + 256);
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
    b = a;
    b.band_rows = 0;
    assert_int_not_equal(kann_dwblock_validate(&b, &bd, &err), KANN_OK);
}

/* ---- matmul (fully-connected layers at batch 1, transformer layers) ------------------------ */

/* a (its inputs in the arena, out outputs) run by the reference, then by every variant as two
 * tiles cut anywhere along axis (-1: a random one): the same outputs, within tolerance. */
static void expect_matmul_variants(kann_matmul_args a, size_t out, int axis) {
    kann_ref want = alloc_ref(out, 0);
    a.y = want;
    a.tile = (kann_tile){0, 0, a.m, 0};
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
        uint32_t ax = axis < 0 ? rng_range(0, 1) : (uint32_t)axis, extent = ax ? a.n : a.m;
        uint32_t cut = rng_range(0, extent);
        kann_matmul_args t0 = a, t1 = a;
        t0.tile = (kann_tile){ax, 0, cut, 0};
        t1.tile = (kann_tile){ax, cut, extent, 0};
        vs[v].fn(&t0, &ex);
        vs[v].fn(&t1, &ex);
        expect_close(at(want), at(a.y), out, "matmul", vs[v].isa);
    }
}

/* B of a in panels of KANN_MATMUL_PANEL columns, rows row_stride floats apart in a panel and
 * panels panel_pad floats past their rows, as the compiler lays out wide constant weights;
 * returns B's size in floats. */
static size_t matmul_panels(kann_matmul_args *a, uint32_t row_stride, uint32_t panel_pad) {
    uint32_t panels = (a->n + KANN_MATMUL_PANEL - 1) / KANN_MATMUL_PANEL;
    a->b_row_stride = row_stride;
    a->b_col_stride = 1;
    a->b_panel_stride = a->k * row_stride + panel_pad;
    a->b_batch_stride = panels * a->b_panel_stride;
    return (size_t)a->batch * a->b_batch_stride;
}

/* Shapes from the GEMV path (a few rows; a tile of one row streams B) to several row blocks,
 * with column counts that leave narrow chunks (at most half a chunk: blocks of twice the rows)
 * and ragged ones, and for a few rows more columns than one pass of the single-row path; B in
 * rows or (a third of the shapes) in panels, the tiles cut anywhere, inside panels too. */
static void test_matmul_random(void **state) {
    (void)state;
    rng_state = 5;
    for (int i = 0; i < 160; i++) {
        uint32_t batch = rng_range(1, 2), m = rng_range(0, 1) ? rng_range(1, 5) : rng_range(6, 40),
                 n = m <= 2 && rng_range(0, 3) == 0 ? rng_range(1000, 9000) : rng_range(1, 150),
                 k = rng_range(0, 70);
        int trans_b = rng_range(0, 3) == 0, panels = !trans_b && rng_range(0, 2) == 0;
        size_t out = (size_t)batch * m * n;
        size_t b_size = (size_t)batch * k * n;
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
        if (panels) b_size = matmul_panels(&a, 64 + 16 * rng_range(0, 1), 16 * rng_range(0, 1));
        arena_reset((size_t)batch * m * k + b_size + m * n + 4 * out + 256);
        a.alpha = rng_range(0, 1) ? 1.0f : 0.5f;
        a.beta = 1.0f;
        a.act = random_act();
        a.a = alloc_ref((size_t)batch * m * k, 1);
        a.b = alloc_ref(b_size, 1);
        kann_ref none = {0, 0, 0};
        uint32_t bias_kind = rng_range(0, 2); /* none, per column (Gemm C [n]), full [m][n] */
        a.bias = bias_kind ? alloc_ref((size_t)m * n, 1) : none;
        a.bias_row_stride = bias_kind == 2 ? n : 0;
        a.bias_col_stride = 1;
        a.residual = rng_range(0, 1) ? alloc_ref(out, 1) : none;
        expect_matmul_variants(a, out, -1);
    }
}

/* Weights past what stays in L2 (2.5 MB), in rows padded past their columns or in panels, as
 * the compiler lays constant weights out: the blocks prefetch the next chunk's rows on the way
 * (each chunk's share ending where the rows do), 13 rows (two blocks and a block of one),
 * ragged last chunks, cut along rows or columns anywhere. */
static void test_matmul_large_weights(void **state) {
    (void)state;
    rng_state = 9;
    for (int i = 0; i < 8; i++) {
        uint32_t m = 13, k = 600 + (uint32_t)i, n = 1000 - 7 * (uint32_t)i, ld = 1040;
        size_t out = (size_t)m * n;
        kann_matmul_args a = {0};
        a.batch = 1;
        a.m = m;
        a.n = n;
        a.k = k;
        a.a_row_stride = k;
        a.a_col_stride = 1;
        a.b_row_stride = ld;
        a.b_col_stride = 1;
        size_t b_size = i < 4 ? (size_t)k * ld : matmul_panels(&a, 64, 0);
        arena_reset((size_t)m * k + b_size + 2 * out + 256);
        a.alpha = 1.0f;
        a.beta = 1.0f;
        a.act = random_act();
        a.a = alloc_ref((size_t)m * k, 1);
        a.b = alloc_ref(b_size, 1);
        expect_matmul_variants(a, out, i % 2);
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
        cmocka_unit_test(test_conv2d_packed_long_reductions),
        cmocka_unit_test(test_conv2d_packed_lanes_stride1),
        cmocka_unit_test(test_conv2d_packed_wide_random),
        cmocka_unit_test(test_conv2d_packed_phase_random),
        cmocka_unit_test(test_conv2d_packed_lanes_random),
        cmocka_unit_test(test_conv2d_packed_lanes_narrow),
        cmocka_unit_test(test_conv2d_packed_rows_narrow),
        cmocka_unit_test(test_conv2d_packed_direct_random),
        cmocka_unit_test(test_conv2d_packed_model_shapes),
        cmocka_unit_test(test_conv2d_packed_validate),
        cmocka_unit_test(test_pad2d_validate),
        cmocka_unit_test(test_dwconv2d_random),
        cmocka_unit_test(test_dwconv2d_model_shapes),
        cmocka_unit_test(test_dwconv2d_lanes),
        cmocka_unit_test(test_dwconv2d_planes),
        cmocka_unit_test(test_dwconv2d_large_windows),
        cmocka_unit_test(test_pool2d_random),
        cmocka_unit_test(test_conv2d_maxpool_random),
        cmocka_unit_test(test_conv2d_maxpool_validate),
        cmocka_unit_test(test_dwblock_random),
        cmocka_unit_test(test_dwblock_validate),
        cmocka_unit_test(test_matmul_random),
        cmocka_unit_test(test_matmul_large_weights),
        cmocka_unit_test(test_isa_names),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
