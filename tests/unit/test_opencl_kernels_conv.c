/* The OpenCL f32_conv2d, f32_dwconv2d and f32_conv2d_packed kernels, in both kernel styles,
 * against the reference kernels on random shapes: pointwise convs, stride-1 convs over a padded
 * input (the CPU style's WIDE path, outputs in the input's row pitch), and any other window,
 * stride, dilation and padding (depthwise: the blocks of 4 output rows; conv2d_packed over 128
 * or more reduction steps: the CPU style's channels in the lanes); rows and planes of
 * ragged lengths, tiles of channels and of pixels, bias, residual and every activation (PoCL in
 * CI). f32_pointwise_lanes against a double-precision reference computed here (ragged blocks of
 * 32 output channels, 7x7 and 14x14 maps and others). Skipped without an OpenCL device. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"
#include "ref/conv2d_packed.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 16

/* The kinds of window a case draws: each path of the CPU style's kernel. */
enum { CASE_POINTWISE, CASE_WIDE, CASE_ANY, CASE_KINDS };

typedef struct conv_window {
    uint32_t c_in, h_in, w_in, h_out, w_out;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
} conv_window;

/* The window fields of a conv argument struct (conv2d or conv2d_packed) from c. */
#define SET_WINDOW(a, c)                                                                           \
    do {                                                                                           \
        (a).h_in = (c).h_in;                                                                       \
        (a).w_in = (c).w_in;                                                                       \
        (a).h_out = (c).h_out;                                                                     \
        (a).w_out = (c).w_out;                                                                     \
        (a).k_h = (c).k_h;                                                                         \
        (a).k_w = (c).k_w;                                                                         \
        (a).stride_h = (c).stride_h;                                                               \
        (a).stride_w = (c).stride_w;                                                               \
        (a).dil_h = (c).dil_h;                                                                     \
        (a).dil_w = (c).dil_w;                                                                     \
        (a).pad_top = (c).pad_top;                                                                 \
        (a).pad_left = (c).pad_left;                                                               \
    } while (0)

static kann_act random_act(kt *k) {
    kann_act a = {kt_range(k, 0, KANN_ACT_COUNT - 1), kt_float(k, 0.2f, 1.2f), 0.0f, 0};
    a.beta = a.alpha + kt_float(k, 0.5f, 2.0f);
    return a;
}

/* A window of the given kind; max_w bounds the output row length. */
static conv_window random_window(kt *k, int kind, uint32_t max_c, uint32_t max_w) {
    conv_window c = {0};
    c.c_in = kt_range(k, 1, max_c);
    c.h_out = kt_range(k, 1, 9);
    c.w_out = kt_range(k, 1, max_w);
    c.k_h = c.k_w = c.stride_h = c.stride_w = c.dil_h = c.dil_w = 1;
    if (kind == CASE_POINTWISE) {
        c.h_in = c.h_out;
        c.w_in = c.w_out;
        return c;
    }
    c.k_h = kt_range(k, 1, 3);
    c.k_w = kt_range(k, 1, 3);
    c.dil_h = kt_range(k, 1, 2);
    c.dil_w = kt_range(k, 1, 2);
    if (kind == CASE_ANY) {
        c.stride_h = kt_range(k, 1, 2);
        c.stride_w = kt_range(k, 1, 2);
        c.pad_top = kt_range(k, 0, 2);
        c.pad_left = kt_range(k, 0, 2);
    }
    /* every window inside the input, or (CASE_ANY) past its far edges now and then */
    uint32_t h_need = (c.h_out - 1) * c.stride_h + (c.k_h - 1) * c.dil_h + 1;
    uint32_t w_need = (c.w_out - 1) * c.stride_w + (c.k_w - 1) * c.dil_w + 1;
    uint32_t short_h = kind == CASE_ANY ? kt_range(k, 0, 2) : 0;
    uint32_t short_w = kind == CASE_ANY ? kt_range(k, 0, 2) : 0;
    c.h_in = h_need > short_h ? h_need - short_h : 1;
    c.w_in = w_need > short_w ? w_need - short_w : 1;
    c.h_in += kt_range(k, 0, 1); /* rows and columns no window reads */
    c.w_in += kt_range(k, 0, 2);
    return c;
}

/* Optional bias and residual, the output. */
static void conv_outputs(kt *k, uint32_t c_out, size_t hw, kann_ref *bias, kann_ref *res,
                         kann_ref *y) {
    if (kt_range(k, 0, 1)) *bias = kt_input_f32(k, c_out, -1.0f, 1.0f);
    if (kt_range(k, 0, 1)) *res = kt_input_f32(k, c_out * hw, -1.0f, 1.0f);
    *y = kt_output(k, c_out * hw * 4, 4);
}

/* A window for conv2d_lanes.cl (CPU style): a reduction of at least 128 steps over at least 16
 * channels, a stride or padding inside the kernel, rows up to 70 pixels (blocks of up to 16:
 * up to 5 a row, so middle blocks too), padding up to 3 columns, and now and then windows
 * past the input's far edges. */
static conv_window lanes_window(kt *k) {
    conv_window c = {0};
    c.k_h = kt_range(k, 1, 3);
    c.k_w = kt_range(k, 1, 3);
    uint32_t taps = c.k_h * c.k_w, min_c = (128 + taps - 1) / taps;
    c.c_in = kt_range(k, min_c < 16 ? 16 : min_c, (min_c < 16 ? 16 : min_c) + 24);
    c.h_out = kt_range(k, 1, 6);
    c.w_out = kt_range(k, 1, 70);
    c.stride_h = kt_range(k, 1, 3);
    c.stride_w = kt_range(k, 1, 3);
    c.dil_h = kt_range(k, 1, 2);
    c.dil_w = kt_range(k, 1, 2);
    c.pad_top = kt_range(k, 0, 3);
    c.pad_left = kt_range(k, 0, 3);
    if (c.stride_w == 1 && c.pad_left == 0) c.pad_left = 1;
    uint32_t h_need = (c.h_out - 1) * c.stride_h + (c.k_h - 1) * c.dil_h + 1;
    uint32_t w_need = (c.w_out - 1) * c.stride_w + (c.k_w - 1) * c.dil_w + 1;
    uint32_t short_h = kt_range(k, 0, 3), short_w = kt_range(k, 0, 3);
    c.h_in = h_need > short_h ? h_need - short_h : 1;
    c.w_in = w_need > short_w ? w_need - short_w : 1;
    c.w_in += kt_range(k, 0, 2);
    return c;
}

/* A conv2d_packed case over window c against the reference; returns whether the launch took
 * the channels-in-lanes kernel. */
static int packed_run(kt *k, conv_window c) {
    kann_conv2d_packed_args a;
    memset(&a, 0, sizeof a);
    a.c_in = c.c_in;
    a.c_out = kt_range(k, 1, 30);
    SET_WINDOW(a, c);
    a.act = random_act(k);
    size_t hw = (size_t)a.h_out * a.w_out, K = (size_t)a.c_in * a.k_h * a.k_w;
    size_t panels = (a.c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t g = KANN_CONV_PIXEL_GRANULE;
    a.x = kt_input_f32(k, (size_t)a.c_in * a.h_in * a.w_in, -2.0f, 2.0f);
    a.w = kt_input_f32(k, panels * KANN_CONV_PANEL * K, -1.0f, 1.0f);
    conv_outputs(k, a.c_out, hw, &a.bias, &a.residual, &a.y);
    if (!kann_conv2d_packed_pointwise(&a))
        a.scratch = kt_output(k, (hw + g - 1) / g * g * K * 4, 4);
    a.tile = kt_range(k, 0, 1) ? kt_aligned_tile(k, 0, a.c_out, KANN_CONV_PANEL)
                               : kt_aligned_tile(k, 1, (uint32_t)hw, (uint32_t)g);
    /* The reference gathers its input into the scratch, which the OpenCL kernels never
     * touch: run it once beforehand so that the scratch already holds what it writes, then
     * put garbage back into y. */
    if (a.scratch.space != KANN_SPACE_NONE)
        kt_preset_scratch(k, KANN_KERNEL_F32_CONV2D_PACKED, &a, a.y, a.c_out * hw);
    kann_ocl_launch l;
    kann_error e;
    int lanes =
        kann_ocl_plan_launch(KANN_KERNEL_F32_CONV2D_PACKED, &a, kt_style, &l, &e) == KANN_OK &&
        l.entry && !strcmp(l.entry, "f32_conv_lanes");
    kt_run(k, KANN_KERNEL_F32_CONV2D_PACKED, &a, sizeof a, 0);
    return lanes;
}

static void packed_case(uint64_t seed, int kind, uint32_t max_c, uint32_t max_w) {
    kt k;
    kt_init(&k, seed);
    packed_run(&k, random_window(&k, kind, max_c, max_w));
    kt_free(&k);
}

static int lanes_case(uint64_t seed) {
    kt k;
    kt_init(&k, seed);
    int lanes = packed_run(&k, lanes_window(&k));
    kt_free(&k);
    return lanes;
}

/* f32_conv2d (any group), or f32_dwconv2d (group = c_in = c_out) with up to 24 output rows:
 * the CPU style's blocks of 4 rows, ragged, in bands of several blocks. */
static void conv2d_case(uint64_t seed, int kind, int depthwise) {
    kt k;
    kt_init(&k, seed);
    conv_window c = random_window(&k, kind, depthwise ? 1 : 6, 40);
    if (depthwise) { /* taller maps: a window's rows reach past its block of output rows */
        uint32_t more = kt_range(&k, 0, 15);
        c.h_out += more;
        c.h_in += more * c.stride_h;
    }
    kann_conv2d_args a;
    memset(&a, 0, sizeof a);
    a.n = kt_range(&k, 1, 2);
    a.group = depthwise ? kt_range(&k, 1, 24) : kt_range(&k, 0, 1) ? 1 : kt_range(&k, 1, 3);
    a.c_in = a.group * c.c_in;
    a.c_out = a.group * (depthwise ? 1 : kt_range(&k, 1, 10));
    SET_WINDOW(a, c);
    a.act = random_act(&k);
    size_t hw = (size_t)a.h_out * a.w_out;
    a.x = kt_input_f32(&k, (size_t)a.n * a.c_in * a.h_in * a.w_in, -2.0f, 2.0f);
    a.w = kt_input_f32(&k, (size_t)a.c_out * c.c_in * a.k_h * a.k_w, -1.0f, 1.0f);
    conv_outputs(&k, a.c_out, a.n * hw, &a.bias, &a.residual, &a.y);
    a.tile = kt_range(&k, 0, 1) ? kt_tile(&k, a.c_out) : kt_aligned_tile(&k, 1, a.h_out, 1);
    kt_run(&k, depthwise ? KANN_KERNEL_F32_DWCONV2D : KANN_KERNEL_F32_CONV2D, &a, sizeof a, 0);
    kt_free(&k);
}

/* ---- f32_pointwise_lanes against a double-precision reference ------------------------------ */

/* act in double (kann_act_kind, kernels/kann_kernels.h) */
static double act_double(const kann_act *a, double x) {
    double alpha = a->alpha, beta = a->beta;
    switch (a->kind) {
    case KANN_ACT_RELU:
        return x < 0.0 ? 0.0 : x;
    case KANN_ACT_CLIP:
        return x < alpha ? alpha : x > beta ? beta : x;
    case KANN_ACT_LEAKY_RELU:
        return x < 0.0 ? alpha * x : x;
    case KANN_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case KANN_ACT_HARD_SIGMOID:
        return fmax(0.0, fmin(1.0, alpha * x + beta));
    case KANN_ACT_HARD_SWISH:
        return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case KANN_ACT_TANH:
        return tanh(x);
    case KANN_ACT_ELU:
        return x < 0.0 ? alpha * expm1(x) : x;
    case KANN_ACT_SELU:
        return beta * (x <= 0.0 ? alpha * expm1(x) : x);
    case KANN_ACT_CELU:
        return fmax(0.0, x) + fmin(0.0, alpha * expm1(x / alpha));
    case KANN_ACT_SOFTPLUS:
        return x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x));
    case KANN_ACT_SOFTSIGN:
        return x / (1.0 + fabs(x));
    case KANN_ACT_THRESHOLDED_RELU:
        return x > alpha ? x : 0.0;
    case KANN_ACT_GELU:
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case KANN_ACT_GELU_TANH:
        return 0.5 * x *
               (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
    case KANN_ACT_MISH:
        return x * tanh(x > 0.0 ? x + log1p(exp(-x)) : log1p(exp(x)));
    case KANN_ACT_SILU:
        return x / (1.0 + exp(-x));
    default:
        return x;
    }
}

/* A bound on |act'| for a's parameters (alpha in [0.2, 1.2], beta up to 3.2: random_act). */
static double act_slope(const kann_act *a) {
    double alpha = fabs(a->alpha), beta = fabs(a->beta);
    switch (a->kind) {
    case KANN_ACT_HARD_SIGMOID:
    case KANN_ACT_LEAKY_RELU:
    case KANN_ACT_ELU:
        return alpha > 1.0 ? alpha : 1.0;
    case KANN_ACT_SELU:
        return beta * (alpha > 1.0 ? alpha : 1.0);
    default:
        return 1.5; /* hard swish's 1.5; the others at most 1.13 */
    }
}

/* One f32_pointwise_lanes record in kt_style on the device, against y in double: the tile's
 * outputs within the float sum's error bound (the input channels' terms, bias and residual:
 * (c_in + 3) eps times the sum of their magnitudes, through act's slope), every other byte of
 * the arena (y outside the tile too) unchanged. */
static void pointwise_lanes_check(kt *k, const kann_pointwise_lanes_args *a) {
    const uint32_t kernel = KANN_KERNEL_F32_POINTWISE_LANES;
    kann_bounds b = kt_bounds(k, kernel, a);
    size_t arena_size = (size_t)b.arena_size;
    uint8_t *got = malloc(arena_size);
    assert_non_null(got);
    kt_device_run(k, kernel, a, sizeof *a, b, got);
    const float *x = (const float *)(void *)kt_ptr(k, a->x);
    const float *w = (const float *)(void *)kt_ptr(k, a->w);
    const float *bias = a->bias.space ? (const float *)(void *)kt_ptr(k, a->bias) : NULL;
    const float *res = a->residual.space ? (const float *)(void *)kt_ptr(k, a->residual) : NULL;
    size_t y_at = (size_t)a->y.offset, y_len = (size_t)a->c_out * a->hw * 4;
    size_t m_b, m_e, p_b, p_e;
    kann_pointwise_lanes_tile(a, &m_b, &m_e, &p_b, &p_e);
    for (size_t i = 0; i < arena_size; i++) /* the arena outside y: untouched */
        if ((i < y_at || i >= y_at + y_len) && got[i] != k->arena.data[i])
            fail_msg("pointwise_lanes wrote arena byte %zu outside y", i);
    double slope = act_slope(&a->act);
    for (uint32_t m = 0; m < a->c_out; m++)
        for (uint32_t p = 0; p < a->hw; p++) {
            size_t o = (size_t)m * a->hw + p;
            float v;
            memcpy(&v, got + y_at + o * 4, 4);
            if (m < m_b || m >= m_e || p < p_b || p >= p_e) { /* outside the tile: untouched */
                if (memcmp(&v, k->arena.data + y_at + o * 4, 4))
                    fail_msg("pointwise_lanes wrote y[%u][%u] outside the tile", m, p);
                continue;
            }
            double z = 0.0, mag = 0.0;
            for (uint32_t c = 0; c < a->c_in; c++) {
                double t = (double)w[((size_t)(m / KANN_GAP_BLOCK) * a->c_in + c) * KANN_GAP_BLOCK +
                                     m % KANN_GAP_BLOCK] *
                           (double)x[(size_t)c * a->hw + p];
                z += t;
                mag += fabs(t);
            }
            if (bias) {
                z += bias[m];
                mag += fabs(bias[m]);
            }
            if (res) {
                z += res[o];
                mag += fabs(res[o]);
            }
            double err_z = (a->c_in + 3) * (double)FLT_EPSILON * mag;
            double want = act_double(&a->act, z);
            double tol = slope * err_z + 2e-6 * (1.0 + fabs(want));
            /* a threshold within the sum's error of z: either side is right */
            if (a->act.kind == KANN_ACT_THRESHOLDED_RELU && fabs(z - a->act.alpha) <= err_z &&
                (v == 0.0f || fabs(v - z) <= tol))
                continue;
            if (!(fabs((double)v - want) <= tol))
                fail_msg("pointwise_lanes c_in %u c_out %u hw %u tile (%u, %u, %u) act %u bias %d "
                         "residual %d: y[%u][%u] %.9g, want %.9g (tolerance %.3g)",
                         a->c_in, a->c_out, a->hw, a->tile.axis, a->tile.begin, a->tile.end,
                         a->act.kind, bias != NULL, res != NULL, m, p, (double)v, want, tol);
        }
    free(got);
}

/* Shapes with ragged edges: c_out around and between blocks of 32, the maps pointwise_lanes is
 * for (7x7, 14x14) and others, 1-64 input channels; every activation with each of the four
 * bias/residual combinations; tiles of channels (begin on a block) or of pixels, whole, partial
 * or empty. */
static void pointwise_lanes_case(uint64_t seed) {
    static const uint32_t c_outs[] = {1, 5, 31, 32, 33, 64, 70};
    static const uint32_t hws[] = {1, 7, 49, 196};
    kt k;
    kt_init(&k, seed);
    kann_pointwise_lanes_args a;
    memset(&a, 0, sizeof a);
    a.c_out = kt_range(&k, 0, 3) ? c_outs[kt_range(&k, 0, 6)] : kt_range(&k, 1, 100);
    a.hw = kt_range(&k, 0, 3) ? hws[kt_range(&k, 0, 3)] : kt_range(&k, 1, 200);
    uint32_t pick = kt_range(&k, 0, 5);
    a.c_in = pick == 0 ? 1 : pick == 1 ? 64 : kt_range(&k, 1, 64);
    a.act = random_act(&k);
    a.act.kind = (uint32_t)(seed % KANN_ACT_COUNT);
    uint32_t blocks = (a.c_out + KANN_GAP_BLOCK - 1) / KANN_GAP_BLOCK;
    a.x = kt_input_f32(&k, (size_t)a.c_in * a.hw, -1.0f, 1.0f);
    a.w = kt_input_f32(&k, (size_t)blocks * a.c_in * KANN_GAP_BLOCK, -0.5f, 0.5f);
    uint32_t extras = (uint32_t)(seed / KANN_ACT_COUNT) % 4;
    if (extras & 1) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
    if (extras & 2) a.residual = kt_input_f32(&k, (size_t)a.c_out * a.hw, -1.0f, 1.0f);
    a.y = kt_output(&k, (size_t)a.c_out * a.hw * 4, 4);
    a.tile = kt_range(&k, 0, 1) ? kt_aligned_tile(&k, 0, a.c_out, KANN_GAP_BLOCK)
                                : kt_aligned_tile(&k, 1, a.hw, 1);
    pointwise_lanes_check(&k, &a);
    kt_free(&k);
}

static void run_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < CASES; seed++) {
        int kind = (int)(seed % CASE_KINDS);
        packed_case(4100 + seed, kind, 20, 12); /* short rows: several per vector */
        packed_case(4700 + seed, kind, 16, 70); /* long rows */
        conv2d_case(5300 + seed, kind, 0);
        conv2d_case(5900 + seed, kind, 1);
    }
    for (uint64_t seed = 0; seed < 8 * KANN_ACT_COUNT; seed++)
        pointwise_lanes_case(7100 + seed);
    if (style == CL_DEVICE_TYPE_CPU) {
        int lanes = 0;
        for (uint64_t seed = 0; seed < CASES; seed++)
            lanes += lanes_case(6500 + seed);
        assert_true(lanes >= CASES / 2); /* the others: middle blocks that read padding */
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

/* The CPU kernel style: work-items of local size 1 with 12 (packed) or 8 channels x 16-32 pixels
 * each. The GPU style: the implicit GEMM in local memory (group 1), one thread per output
 * otherwise. */
KT_BOTH_STYLES_MAIN(conv, run_cases)
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
