/* Reference kernels and validators: every kernel family against a textbook loop nest on random
 * and edge-case shapes, run as several records with complementary tiles, by the reference and
 * by each x86 variant this CPU runs (kernels/x86/variants.def); every validator on good and
 * hostile arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_rng.h"

#include "kann_kernels.h"
#include "kann_msg.h"
#include "kernel_variants.h"
#include "ref/act.h"
#include "ref/dwblock.h"

/* ---- fixed-seed random numbers ----------------------------------------------------------- */

static void rng_seed(uint64_t seed) {
    rng_state = seed;
}

static uint32_t rng_pick(const uint32_t *values, size_t n) {
    return values[rng_next() % n];
}

#define PICK(...) rng_pick((const uint32_t[]){__VA_ARGS__}, sizeof((uint32_t[]){__VA_ARGS__}) / 4)

/* ---- memory: an arena and a constants space that kernels address by offset ---------------- */

enum { MEM_CAP = 1 << 21, MEM_GAP = 16 };
static const float SENTINEL = 1234.5f; /* never a result of these tests */

static float *mem[KANN_SPACE_COUNT];
static size_t mem_used[KANN_SPACE_COUNT];
static kann_exec exec_ctx;
static kann_bounds bounds;

static int mem_setup(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        mem[s] = malloc(MEM_CAP * sizeof(float));
        if (!mem[s]) return -1;
    }
    exec_ctx.arena = (uint8_t *)mem[KANN_SPACE_ARENA];
    exec_ctx.consts = (const uint8_t *)mem[KANN_SPACE_CONST];
    return 0;
}

static int mem_teardown(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++)
        free(mem[s]);
    return 0;
}

static int mem_dirty = 1; /* everything may hold data: fill it all */

/* Forgets every tensor; the memory they used (and the gap after) gets the sentinel again. */
static void mem_reset(void) {
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        size_t end = mem_dirty ? MEM_CAP : mem_used[s] + MEM_GAP;
        for (size_t i = 0; i < end && i < MEM_CAP; i++)
            mem[s][i] = SENTINEL;
        mem_used[s] = 0;
    }
    mem_dirty = 0;
}

/* Places n floats in a space, with a gap before them, and updates the bounds so they are tight:
 * the last tensor placed ends exactly at the end of its space. */
static kann_ref mem_put(uint32_t space, size_t n, float **data) {
    size_t off = (mem_used[space] + MEM_GAP + 15) & ~(size_t)15;
    assert_true(off + n <= MEM_CAP);
    mem_used[space] = off + n;
    bounds.arena_size = mem_used[KANN_SPACE_ARENA] * sizeof(float);
    bounds.const_size = mem_used[KANN_SPACE_CONST] * sizeof(float);
    *data = mem[space] + off;
    return (kann_ref){space, 0, off * sizeof(float)};
}

static kann_ref mem_put_random(uint32_t space, size_t n, float lo, float hi, float **data) {
    kann_ref r = mem_put(space, n, data);
    for (size_t i = 0; i < n; i++)
        (*data)[i] = rng_float(lo, hi);
    return r;
}

static uint32_t random_input_space(void) {
    return PICK(KANN_SPACE_ARENA, KANN_SPACE_CONST);
}

/* ---- running a kernel as several records ---------------------------------------------------*/

static float *arena_snapshot;

static void snapshot_arena(void) {
    size_t n = mem_used[KANN_SPACE_ARENA];
    arena_snapshot = realloc(arena_snapshot, (n ? n : 1) * sizeof(float));
    assert_non_null(arena_snapshot);
    memcpy(arena_snapshot, mem[KANN_SPACE_ARENA], n * sizeof(float));
}

/* The kernel may write y[0..n) and nothing else in the arena. */
static void check_only_y_written(const float *y, size_t n) {
    const float *arena = mem[KANN_SPACE_ARENA];
    size_t y_begin = (size_t)(y - arena), y_end = y_begin + n;
    size_t total = mem_used[KANN_SPACE_ARENA];
    for (size_t i = 0; i < total; i++) {
        if (i >= y_begin && i < y_end) continue;
        if (memcmp(&arena[i], &arena_snapshot[i], sizeof(float)) != 0)
            fail_msg("arena float %zu outside the output was written", i);
    }
    for (size_t i = total; i < total + MEM_GAP && i < MEM_CAP; i++)
        if (arena[i] != SENTINEL) fail_msg("arena float %zu past the bounds was written", i);
}

/* Where run_tiled may cut a tile axis: multiples of this (a kernel whose tiles begin on
 * blocks sets it for its test). */
static uint32_t tile_granule = 1;
/* The same for tile axis 1 where it differs (0: tile_granule). */
static uint32_t tile_granule_axis1 = 0;

/* Runs fn (a variant of kernel id) on args over [0, extent) of a tile axis, as 1 to 5
 * complementary tiles (some possibly empty, cut at multiples of tile_granule) in random order;
 * each record is validated first, as the loader would. */
static void run_tiled(kann_kernel_id id, kann_kernel_fn fn, const void *args, uint32_t axis,
                      uint32_t extent) {
    const kann_kernel_info *info = &kann_kernels[id];
    uint64_t buf[64];
    assert_true(info->args_size <= sizeof buf);
    assert_true(axis < info->n_tile_axes);
    uint32_t cuts[6];
    uint32_t n_tiles = rng_range(1, 5);
    cuts[0] = 0;
    cuts[n_tiles] = extent;
    uint32_t granule = axis == 1 && tile_granule_axis1 ? tile_granule_axis1 : tile_granule;
    for (uint32_t i = 1; i < n_tiles; i++)
        cuts[i] = rng_range(0, extent) / granule * granule;
    for (uint32_t i = 1; i < n_tiles; i++) /* insertion sort of the inner cuts */
        for (uint32_t j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
            uint32_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    uint32_t first = rng_range(0, n_tiles - 1);
    for (uint32_t i = 0; i < n_tiles; i++) {
        uint32_t tile = (first + i) % n_tiles;
        memcpy(buf, args, info->args_size);
        kann_tile *t = (kann_tile *)buf;
        t->axis = axis;
        t->begin = cuts[tile];
        t->end = cuts[tile + 1];
        kann_error err = {0};
        kann_status s = info->validate(buf, &bounds, &err);
        if (s != KANN_OK) fail_msg("%s: valid arguments rejected: %s", info->name, err.message);
        fn(buf, &exec_ctx);
    }
}

/* y[0..n) against the expected values (NaN where a NaN is expected). */
static void check_y(const float *y, const double *expected, size_t n, const char *what,
                    int case_index, const char *isa, uint32_t axis) {
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)y[i] - expected[i]);
        double tol = 1e-5 * (1.0 + fabs(expected[i]));
        if (!(diff <= tol) && !(isnan(expected[i]) && isnan(y[i])))
            fail_msg("%s case %d, %s, tile axis %u: y[%zu] = %.9g, expected %.9g", what, case_index,
                     isa, axis, i, (double)y[i], expected[i]);
    }
}

/* Runs every variant of id this CPU has (the reference, then the x86 ones) over every tile axis
 * in turn, checking y against the expected values each time. */
static void run_and_check(kann_kernel_id id, const void *args, const uint32_t *extents, float *y,
                          const double *expected, size_t n, const char *what, int case_index) {
    const kann_kernel_info *info = &kann_kernels[id];
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(id, vs);
    for (int v = 0; v < nv; v++)
        for (uint32_t axis = 0; axis < info->n_tile_axes; axis++) {
            for (size_t i = 0; i < n; i++)
                y[i] = SENTINEL;
            snapshot_arena();
            run_tiled(id, vs[v].fn, args, axis, extents[axis]);
            check_only_y_written(y, n);
            check_y(y, expected, n, what, case_index, vs[v].isa, axis);
        }
}

/* ---- textbook activations ----------------------------------------------------------------- */

static double ref_act(const kann_act *a, double x) {
    switch (a->kind) {
    case KANN_ACT_NONE:
        return x;
    case KANN_ACT_RELU:
        return x > 0 ? x : 0;
    case KANN_ACT_CLIP:
        return fmin(fmax(x, a->alpha), a->beta);
    case KANN_ACT_LEAKY_RELU:
        return x < 0 ? a->alpha * x : x;
    case KANN_ACT_SIGMOID:
        return 1.0 / (1.0 + exp(-x));
    case KANN_ACT_HARD_SIGMOID:
        return fmax(0.0, fmin(1.0, a->alpha * x + a->beta));
    case KANN_ACT_HARD_SWISH:
        return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case KANN_ACT_TANH:
        return tanh(x);
    case KANN_ACT_ELU:
        return x < 0 ? a->alpha * (exp(x) - 1) : x;
    case KANN_ACT_SELU:
        return a->beta * (x <= 0 ? a->alpha * (exp(x) - 1) : x);
    case KANN_ACT_CELU:
        return fmax(0.0, x) + fmin(0.0, a->alpha * (exp(x / a->alpha) - 1));
    case KANN_ACT_SOFTPLUS:
        return log(1 + exp(x));
    case KANN_ACT_SOFTSIGN:
        return x / (1 + fabs(x));
    case KANN_ACT_THRESHOLDED_RELU:
        return x > a->alpha ? x : 0;
    case KANN_ACT_GELU:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case KANN_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case KANN_ACT_MISH:
        return x * tanh(log(1 + exp(x)));
    case KANN_ACT_SILU:
        return x / (1 + exp(-x));
    }
    fail_msg("unknown activation %u", a->kind);
    return 0;
}

static kann_act random_act(void) {
    kann_act a = {rng_range(0, KANN_ACT_COUNT - 1), 0.0f, 0.0f, 0};
    switch (a.kind) {
    case KANN_ACT_CLIP:
        a.alpha = rng_float(-1.0f, 0.0f);
        a.beta = rng_float(0.0f, 1.0f);
        break;
    case KANN_ACT_LEAKY_RELU:
        a.alpha = rng_float(0.0f, 0.3f);
        break;
    case KANN_ACT_HARD_SIGMOID:
        a.alpha = rng_float(0.1f, 0.5f);
        a.beta = rng_float(0.2f, 0.8f);
        break;
    case KANN_ACT_ELU:
    case KANN_ACT_CELU:
    case KANN_ACT_THRESHOLDED_RELU:
        a.alpha = rng_float(0.5f, 2.0f);
        break;
    case KANN_ACT_SELU:
        a.alpha = rng_float(1.0f, 2.0f);
        a.beta = rng_float(0.5f, 1.5f);
        break;
    }
    return a;
}

/* What an activation gives for v: a NaN stays NaN in every kind but thresholded relu (NaN >
 * alpha is false: 0), as in the kernels (ref/act.h). */
static double act_expected(const kann_act *a, double v) {
    if (isnan(v)) return a->kind == KANN_ACT_THRESHOLDED_RELU ? 0.0 : NAN;
    return ref_act(a, v);
}

/* Puts a NaN at about one in eight of x[0..n), at least one. */
static void sprinkle_nans(float *x, size_t n) {
    x[rng_next() % n] = NAN;
    for (size_t i = 0; i < n; i++)
        if (rng_next() % 8 == 0) x[i] = NAN;
}

static void test_act_apply(void **state) {
    (void)state;
    static const float xs[] = {-7.5f, -3.0f, -1.0f, -0.25f, 0.0f, 0.3f, 1.0f, 2.9f, 3.0f, 8.0f};
    for (uint32_t kind = 0; kind < KANN_ACT_COUNT; kind++) {
        kann_act a = {kind, -0.5f, 0.75f, 0};
        if (kind == KANN_ACT_HARD_SIGMOID) a = (kann_act){kind, 0.2f, 0.5f, 0};
        for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
            double expected = ref_act(&a, xs[i]);
            float got = kann_act_apply(&a, xs[i]);
            assert_true(fabs(got - expected) <= 1e-6 * (1 + fabs(expected)));
        }
    }
}

/* ---- conv2d ------------------------------------------------------------------------------- */

typedef struct conv_case {
    uint32_t n, c_in, c_out, group, h_in, w_in, k_h, k_w;
    uint32_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
    int bias, residual;
} conv_case;

static const conv_case conv_table[] = {
    /* n  cin cout g  h   w   kh kw sh sw dh dw pt pl pb pr bias res */
    {1, 3, 8, 1, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},     /* same 3x3 */
    {1, 16, 24, 1, 7, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},   /* pointwise */
    {2, 17, 7, 1, 11, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1},  /* pointwise, batch 2 */
    {1, 8, 8, 8, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},   /* depthwise */
    {1, 6, 6, 6, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1},   /* depthwise, stride 2 */
    {1, 3, 4, 1, 23, 23, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, 0},   /* resnet stem */
    {1, 4, 6, 2, 9, 11, 3, 5, 1, 2, 2, 1, 2, 0, 1, 3, 1, 1},    /* groups, asymmetric */
    {1, 3, 2, 1, 150, 140, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* rows longer than a chunk */
    {1, 2, 3, 1, 5, 200, 1, 5, 1, 3, 1, 2, 0, 4, 0, 4, 0, 0},   /* long strided rows */
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0},     /* one pixel */
    {1, 2, 2, 1, 3, 3, 5, 5, 1, 1, 1, 1, 4, 4, 4, 4, 1, 0},     /* padding wider than x */
    {1, 2, 3, 1, 6, 6, 2, 2, 3, 3, 2, 2, 0, 0, 0, 0, 0, 0},     /* stride 3, dilation 2 */
    {2, 4, 8, 4, 8, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1},     /* 4 groups, dilated */
    {1, 5, 19, 1, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1},  /* stride 2, 19 channels */
};

static conv_case random_conv_case(void) {
    conv_case c;
    c.n = rng_range(1, 2);
    uint32_t kind = rng_range(0, 2); /* 0: dense, 1: two groups, 2: depthwise */
    if (kind == 2) {
        c.group = c.c_in = c.c_out = PICK(1, 3, 7, 17);
    } else {
        c.group = kind == 1 ? 2 : 1;
        c.c_in = c.group * PICK(1, 3, 7, 17);
        c.c_out = c.group * PICK(1, 2, 5, 9, 17); /* partial and full channel blocks */
    }
    c.k_h = PICK(1, 3, 5, 7);
    c.k_w = rng_next() % 4 ? c.k_h : PICK(1, 3, 5, 7);
    c.stride_h = PICK(1, 2, 3);
    c.stride_w = rng_next() % 4 ? c.stride_h : PICK(1, 2, 3);
    c.dil_h = PICK(1, 2);
    c.dil_w = PICK(1, 2);
    c.pad_top = rng_range(0, c.k_h - 1);
    c.pad_bottom = rng_range(0, c.k_h - 1);
    c.pad_left = rng_range(0, c.k_w - 1);
    c.pad_right = rng_range(0, c.k_w - 1);
    c.h_in = rng_range(1, 19);
    c.w_in = rng_range(1, 23);
    c.bias = rng_range(0, 1);
    c.residual = rng_range(0, 1);
    return c;
}

static uint32_t conv_out_len(uint32_t in, uint32_t pad_a, uint32_t pad_b, uint32_t k, uint32_t d,
                             uint32_t s) {
    int64_t span = (int64_t)in + pad_a + pad_b - ((int64_t)(k - 1) * d + 1);
    return span < 0 ? 0 : (uint32_t)(span / s + 1);
}

/* Returns 0 when the case has no output (a random case that does not fit). */
static int run_conv_case(const conv_case *c, int case_index) {
    uint32_t h_out =
        conv_out_len(c->h_in, c->pad_top, c->pad_bottom, c->k_h, c->dil_h, c->stride_h);
    uint32_t w_out =
        conv_out_len(c->w_in, c->pad_left, c->pad_right, c->k_w, c->dil_w, c->stride_w);
    if (h_out == 0 || w_out == 0) return 0;
    mem_reset();
    uint32_t c_per_group = c->c_in / c->group, m_per_group = c->c_out / c->group;
    size_t x_n = (size_t)c->n * c->c_in * c->h_in * c->w_in;
    size_t w_n = (size_t)c->c_out * c_per_group * c->k_h * c->k_w;
    size_t y_n = (size_t)c->n * c->c_out * h_out * w_out;
    float *x, *w, *bias = NULL, *res = NULL, *y;
    kann_conv2d_args a = {0};
    a.x = mem_put_random(random_input_space(), x_n, -1, 1, &x);
    a.w = mem_put_random(random_input_space(), w_n, -1, 1, &w);
    if (c->bias) a.bias = mem_put_random(random_input_space(), c->c_out, -1, 1, &bias);
    if (c->residual) a.residual = mem_put_random(KANN_SPACE_ARENA, y_n, -1, 1, &res);
    a.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
    a.n = c->n, a.c_in = c->c_in, a.h_in = c->h_in, a.w_in = c->w_in;
    a.c_out = c->c_out, a.h_out = h_out, a.w_out = w_out, a.group = c->group;
    a.k_h = c->k_h, a.k_w = c->k_w, a.stride_h = c->stride_h, a.stride_w = c->stride_w;
    a.dil_h = c->dil_h, a.dil_w = c->dil_w, a.pad_top = c->pad_top, a.pad_left = c->pad_left;
    a.act = random_act();

    double *expected = malloc(y_n * sizeof(double));
    assert_non_null(expected);
    for (uint32_t n = 0; n < c->n; n++)
        for (uint32_t m = 0; m < c->c_out; m++)
            for (uint32_t oh = 0; oh < h_out; oh++)
                for (uint32_t ow = 0; ow < w_out; ow++) {
                    uint32_t g = m / m_per_group;
                    double acc = 0;
                    for (uint32_t ci = 0; ci < c_per_group; ci++)
                        for (uint32_t kh = 0; kh < c->k_h; kh++)
                            for (uint32_t kw = 0; kw < c->k_w; kw++) {
                                int64_t ih =
                                    (int64_t)oh * c->stride_h - c->pad_top + (int64_t)kh * c->dil_h;
                                int64_t iw = (int64_t)ow * c->stride_w - c->pad_left +
                                             (int64_t)kw * c->dil_w;
                                if (ih < 0 || ih >= c->h_in || iw < 0 || iw >= c->w_in) continue;
                                size_t xi =
                                    (((size_t)n * c->c_in + g * c_per_group + ci) * c->h_in + ih) *
                                        c->w_in +
                                    iw;
                                size_t wi =
                                    (((size_t)m * c_per_group + ci) * c->k_h + kh) * c->k_w + kw;
                                acc += (double)x[xi] * w[wi];
                            }
                    size_t yi = (((size_t)n * c->c_out + m) * h_out + oh) * w_out + ow;
                    acc += (bias ? bias[m] : 0) + (res ? res[yi] : 0);
                    expected[yi] = ref_act(&a.act, acc);
                }
    uint32_t extents[2] = {c->c_out, h_out};
    run_and_check(KANN_KERNEL_F32_CONV2D, &a, extents, y, expected, y_n, "conv2d", case_index);
    free(expected);
    return 1;
}

static void test_conv2d_table(void **state) {
    (void)state;
    rng_seed(1);
    for (size_t i = 0; i < sizeof conv_table / sizeof conv_table[0]; i++)
        assert_true(run_conv_case(&conv_table[i], (int)i));
}

static void test_conv2d_random(void **state) {
    (void)state;
    rng_seed(2);
    int ran = 0;
    for (int i = 0; ran < 300; i++) {
        conv_case c = random_conv_case();
        ran += run_conv_case(&c, i);
    }
}

/* ---- matmul ------------------------------------------------------------------------------- */

typedef struct matmul_case {
    uint32_t batch, m, n, k;
    int trans_a, trans_b;         /* operand stored transposed (k-major for a, n-major for b) */
    int a_broadcast, b_broadcast; /* batch stride 0 */
    uint32_t pad;                 /* extra elements per stored row: non-dense strides */
    int bias; /* 0 none, 1 full [m][n], 2 row vector, 3 column vector, 4 scalar */
    int residual;
    int panels; /* b in panels of KANN_MATMUL_PANEL columns, as the compiler packs weights */
} matmul_case;

static const matmul_case matmul_table[] = {
    /* batch m  n    k   ta tb ab bb pad bias res panels */
    {1, 1, 1000, 512, 0, 1, 0, 0, 0, 2, 0, 0}, /* fully connected, weights [n][k] */
    {1, 1, 10, 512, 0, 0, 0, 0, 0, 2, 0, 0},   /* fully connected, weights [k][n] */
    {1, 7, 130, 9, 0, 0, 0, 0, 0, 1, 1, 0},    /* columns span three chunks */
    {3, 5, 6, 7, 1, 1, 0, 0, 2, 0, 1, 0},      /* both transposed, padded rows */
    {4, 3, 5, 2, 0, 0, 1, 0, 0, 3, 0, 0},      /* a shared across the batch */
    {2, 4, 4, 4, 0, 1, 0, 1, 1, 4, 1, 0},      /* b shared, scalar bias */
    {1, 3, 5, 0, 0, 0, 0, 0, 0, 1, 1, 0},      /* empty reduction */
    {1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0},
    {1, 7, 130, 9, 0, 0, 0, 0, 0, 1, 1, 1},  /* three panels, the last ragged */
    {2, 3, 100, 5, 0, 1, 0, 1, 2, 2, 0, 1},  /* panels of columns of k, padded */
    {1, 1, 200, 33, 0, 0, 0, 0, 3, 2, 0, 1}, /* one row over four panels */
};

static matmul_case random_matmul_case(void) {
    matmul_case c;
    c.batch = rng_range(1, 3);
    c.m = rng_range(1, 20);
    c.n = PICK(1, 3, 17, 64, 65, 100);
    c.k = PICK(1, 2, 7, 9, 33);
    c.trans_a = rng_range(0, 1);
    c.trans_b = rng_range(0, 1);
    c.a_broadcast = rng_next() % 4 == 0;
    c.b_broadcast = rng_next() % 4 == 0;
    c.pad = PICK(0, 0, 1, 3);
    c.bias = rng_range(0, 4);
    c.residual = rng_range(0, 1);
    c.panels = rng_range(0, 2) == 0;
    return c;
}

/* Lays out a [batch][rows][cols] operand, optionally stored transposed and with padded
 * rows; returns its strides (batch, row, col) for the logical [rows][cols] view. */
static kann_ref put_matrix(uint32_t batch, uint32_t rows, uint32_t cols, int transposed,
                           int broadcast, uint32_t pad, float **data, uint32_t strides[3]) {
    uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
    uint32_t ld = stored_cols + pad;
    uint32_t stored_batch = broadcast ? 1 : batch;
    size_t n = (size_t)stored_batch * stored_rows * ld;
    kann_ref r = mem_put_random(random_input_space(), n ? n : 1, -1, 1, data);
    strides[0] = broadcast ? 0 : stored_rows * ld;
    strides[1] = transposed ? 1 : ld;
    strides[2] = transposed ? ld : 1;
    return r;
}

/* Lays out b [batch][k][n] in panels of KANN_MATMUL_PANEL columns: panel after panel, each its
 * k rows (transposed: its columns) padded; returns its strides (batch, row, col, panel). */
static kann_ref put_panels(uint32_t batch, uint32_t k, uint32_t n, int transposed, int broadcast,
                           uint32_t pad, float **data, uint32_t strides[4]) {
    uint32_t panels = (n + KANN_MATMUL_PANEL - 1) / KANN_MATMUL_PANEL;
    uint32_t ld = (transposed ? k : KANN_MATMUL_PANEL) + pad;
    strides[1] = transposed ? 1 : ld;
    strides[2] = transposed ? ld : 1;
    strides[3] = (transposed ? KANN_MATMUL_PANEL : k) * ld;
    strides[0] = broadcast ? 0 : panels * strides[3];
    size_t size = (size_t)(broadcast ? 1 : batch) * panels * strides[3];
    return mem_put_random(random_input_space(), size ? size : 1, -1, 1, data);
}

static void run_matmul_case(const matmul_case *c, int case_index) {
    mem_reset();
    kann_matmul_args a = {0};
    float *am, *bm, *bias = NULL, *res = NULL, *y;
    uint32_t as[3], bs[4] = {0};
    a.a = put_matrix(c->batch, c->m, c->k, c->trans_a, c->a_broadcast, c->pad, &am, as);
    if (c->panels)
        a.b = put_panels(c->batch, c->k, c->n, c->trans_b, c->b_broadcast, c->pad, &bm, bs);
    else
        a.b = put_matrix(c->batch, c->k, c->n, c->trans_b, c->b_broadcast, c->pad, &bm, bs);
    a.a_batch_stride = as[0], a.a_row_stride = as[1], a.a_col_stride = as[2];
    a.b_batch_stride = bs[0], a.b_row_stride = bs[1], a.b_col_stride = bs[2];
    a.b_panel_stride = bs[3];
    if (c->bias) {
        static const uint32_t shapes[5][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 0}};
        uint32_t rows = shapes[c->bias][0] ? c->m : 1, cols = shapes[c->bias][1] ? c->n : 1;
        uint32_t strides[3];
        a.bias = put_matrix(1, rows, cols, 0, 0, c->pad, &bias, strides);
        a.bias_row_stride = rows == 1 ? 0 : strides[1];
        a.bias_col_stride = cols == 1 ? 0 : strides[2];
    }
    size_t y_n = (size_t)c->batch * c->m * c->n;
    if (c->residual) a.residual = mem_put_random(KANN_SPACE_ARENA, y_n, -1, 1, &res);
    a.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
    a.batch = c->batch, a.m = c->m, a.n = c->n, a.k = c->k;
    a.alpha = rng_float(-2, 2);
    a.beta = rng_float(-2, 2);
    a.act = random_act();

    double *expected = malloc(y_n * sizeof(double));
    assert_non_null(expected);
    for (size_t b = 0; b < c->batch; b++)
        for (size_t i = 0; i < c->m; i++)
            for (size_t j = 0; j < c->n; j++) {
                double acc = 0;
                size_t col = c->panels ? j / 64 * bs[3] + j % 64 * bs[2] : j * bs[2];
                for (size_t k = 0; k < c->k; k++)
                    acc += (double)am[b * as[0] + i * as[1] + k * as[2]] *
                           bm[b * bs[0] + k * bs[1] + col];
                acc *= a.alpha;
                if (bias)
                    acc += (double)a.beta * bias[i * a.bias_row_stride + j * a.bias_col_stride];
                size_t yi = (b * c->m + i) * c->n + j;
                if (res) acc += res[yi];
                expected[yi] = ref_act(&a.act, acc);
            }
    uint32_t extents[2] = {c->m, c->n};
    run_and_check(KANN_KERNEL_F32_MATMUL, &a, extents, y, expected, y_n, "matmul", case_index);
    free(expected);
}

static void test_matmul_table(void **state) {
    (void)state;
    rng_seed(3);
    for (size_t i = 0; i < sizeof matmul_table / sizeof matmul_table[0]; i++)
        run_matmul_case(&matmul_table[i], (int)i);
}

static void test_matmul_random(void **state) {
    (void)state;
    rng_seed(4);
    for (int i = 0; i < 300; i++) {
        matmul_case c = random_matmul_case();
        run_matmul_case(&c, i);
    }
}

/* ---- binary and transpose: strided views over a dense output ------------------------------ */

/* Dense strides of dims, with the strides of broadcast dims (mask bit set) forced to 0. */
static void dense_strides(uint32_t rank, const uint32_t *dims, uint32_t broadcast_mask,
                          uint32_t *strides, size_t *n_elems) {
    size_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        if (broadcast_mask & (1u << d)) {
            strides[d] = 0;
        } else {
            strides[d] = (uint32_t)s;
            s *= dims[d];
        }
    }
    *n_elems = s;
}

static size_t strided_index(uint32_t rank, const uint32_t *dims, const uint32_t *strides,
                            size_t flat) {
    size_t off = 0;
    for (uint32_t d = rank; d-- > 0;) {
        off += (flat % dims[d]) * strides[d];
        flat /= dims[d];
    }
    return off;
}

/* One binary case, with NaNs among both operands' values when nans is set. */
static void run_binary_case(int case_index, uint32_t rank, const uint32_t *dims, uint32_t op,
                            uint32_t a_mask, uint32_t b_mask, int nans) {
    mem_reset();
    kann_binary_args p = {0};
    p.op = op;
    p.rank = rank;
    memcpy(p.dims, dims, rank * sizeof dims[0]);
    size_t a_n, b_n, y_n = 1;
    for (uint32_t d = 0; d < rank; d++)
        y_n *= dims[d];
    dense_strides(rank, dims, a_mask, p.a_strides, &a_n);
    dense_strides(rank, dims, b_mask, p.b_strides, &b_n);
    float *a, *b, *y;
    p.a = mem_put_random(random_input_space(), a_n, -2, 2, &a);
    p.b = mem_put_random(random_input_space(), b_n, 0.5f, 2, &b);
    for (size_t i = 0; i < b_n; i++) /* away from zero, for DIV */
        if (rng_next() & 1) b[i] = -b[i];
    if (op == KANN_BINARY_POW) /* real powers of positive bases */
        for (size_t i = 0; i < a_n; i++)
            a[i] = fabsf(a[i]) + 0.25f;
    if (op == KANN_BINARY_POW && b_n == 1 && case_index % 3 < 2) /* the squares and cubes path */
        b[0] = case_index % 3 ? 3.0f : 2.0f;
    else if (op == KANN_BINARY_POW && case_index % 3 == 2) /* exponents differing by row */
        for (size_t i = 0; i < b_n; i++)
            b[i] = (float)PICK(2, 3, 4) * 0.5f + 1.0f;
    if (nans) {
        sprinkle_nans(a, a_n);
        if (op != KANN_BINARY_POW) sprinkle_nans(b, b_n);
    }
    p.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
    p.act = random_act();
    double *expected = malloc(y_n * sizeof(double));
    assert_non_null(expected);
    for (size_t i = 0; i < y_n; i++) {
        double av = a[strided_index(rank, dims, p.a_strides, i)];
        double bv = b[strided_index(rank, dims, p.b_strides, i)];
        double v = op == KANN_BINARY_ADD    ? av + bv
                   : op == KANN_BINARY_SUB  ? av - bv
                   : op == KANN_BINARY_MUL  ? av * bv
                   : op == KANN_BINARY_DIV  ? av / bv
                   : op == KANN_BINARY_POW  ? pow(av, bv)
                   : op == KANN_BINARY_MAX  ? (isnan(av) || isnan(bv) ? NAN : fmax(av, bv))
                   : op == KANN_BINARY_MIN  ? (isnan(av) || isnan(bv) ? NAN : fmin(av, bv))
                   : op == KANN_BINARY_FMOD ? fmod(av, bv)
                                            : (av < 0 ? av * bv : av); /* PRELU */
        expected[i] = act_expected(&p.act, v);
    }
    uint32_t extents[1] = {(uint32_t)y_n};
    run_and_check(KANN_KERNEL_F32_BINARY, &p, extents, y, expected, y_n, "binary", case_index);
    free(expected);
}

static void test_binary(void **state) {
    (void)state;
    rng_seed(5);
    /* resnet's residual add, a per-channel bias add, a scalar */
    run_binary_case(0, 4, (const uint32_t[]){1, 8, 7, 7}, KANN_BINARY_ADD, 0, 0, 0);
    run_binary_case(1, 4, (const uint32_t[]){1, 8, 7, 7}, KANN_BINARY_ADD, 0, 0x9 | 0x4 | 0x8, 0);
    run_binary_case(2, 2, (const uint32_t[]){3, 5}, KANN_BINARY_DIV, 0x1, 0x3, 0);
    run_binary_case(3, 1, (const uint32_t[]){1}, KANN_BINARY_MUL, 0, 0, 0);
    for (int i = 4; i < 300; i++) {
        uint32_t rank = rng_range(1, KANN_MAX_RANK), dims[KANN_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++)
            dims[d] = PICK(1, 2, 3, 5, 7);
        uint32_t full = (1u << rank) - 1;
        uint32_t a_mask = rng_next() % 3 ? 0 : (uint32_t)rng_next() & full;
        uint32_t b_mask = (uint32_t)rng_next() & full;
        uint32_t op = PICK(KANN_BINARY_ADD, KANN_BINARY_SUB, KANN_BINARY_MUL, KANN_BINARY_DIV,
                           KANN_BINARY_POW, KANN_BINARY_MAX, KANN_BINARY_MIN, KANN_BINARY_FMOD,
                           KANN_BINARY_PRELU);
        run_binary_case(i, rank, dims, op, a_mask, b_mask, 0);
    }
    /* x^2, x^3 (multiplied out) and x^b by powf, the exponent a broadcast scalar */
    for (int i = 300; i < 303; i++)
        run_binary_case(i, 3, (const uint32_t[]){2, 3, 17}, KANN_BINARY_POW, 0, 0x7, 0);
    /* long rows (ragged vector tails) in each stride pattern of the SIMD variants' vector rows:
     * both contiguous, b or a broadcast along the row, both (the reference's row); every op,
     * a third of the cases with NaNs */
    static const kann_binary_op ops[] = {KANN_BINARY_ADD, KANN_BINARY_SUB,  KANN_BINARY_MUL,
                                         KANN_BINARY_DIV, KANN_BINARY_POW,  KANN_BINARY_MAX,
                                         KANN_BINARY_MIN, KANN_BINARY_FMOD, KANN_BINARY_PRELU};
    for (int i = 303; i < 663; i++) {
        uint32_t rank = rng_range(1, 3), dims[KANN_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++)
            dims[d] = PICK(1, 2, 3);
        dims[rank - 1] = PICK(1, 8, 15, 16, 17, 31, 33, 100, 257);
        uint32_t last = 1u << (rank - 1), outer = last - 1;
        uint32_t a_mask = (uint32_t)rng_next() & outer, b_mask = (uint32_t)rng_next() & outer;
        int pattern = i % 4;
        if (pattern & 1) b_mask |= last;
        if (pattern & 2) a_mask |= last;
        kann_binary_op op = ops[(i / 4) % (sizeof ops / sizeof ops[0])];
        run_binary_case(i, rank, dims, op, a_mask, b_mask, i % 3 == 0);
    }
}

static void test_transpose(void **state) {
    (void)state;
    rng_seed(6);
    for (int i = 0; i < 300; i++) {
        mem_reset();
        kann_transpose_args t = {0};
        uint32_t rank = rng_range(1, KANN_MAX_RANK), x_dims[KANN_MAX_RANK], perm[KANN_MAX_RANK];
        /* A third of the cases are layout changes of wider maps, whose innermost dims the
         * kernel swaps in blocks: NCHW -> NHWC (the last two dims swapped) and NHWC -> NCHW
         * (the last dim moved to the front), inner extents up to 40 (ragged blocks); and the
         * last two dims swapped into rows of 2 to 4 columns, up to 300 of them (the narrow
         * rows of DepthToSpace: the SIMD variants interleave pairs, blocks take more rows). */
        int layout = i % 3 == 0 && rank >= 2 ? 1 + (i / 3) % 3 : 0;
        for (uint32_t d = 0; d < rank; d++) {
            x_dims[d] = layout && d + 2 >= rank ? rng_range(1, 40) : PICK(1, 2, 3, 4, 5, 7);
            perm[d] = d;
        }
        if (layout == 3) {
            x_dims[rank - 2] = PICK(2, 2, 3, 4);
            x_dims[rank - 1] = rng_range(1, 300);
        }
        if (layout == 1 || layout == 3) {
            perm[rank - 2] = rank - 1;
            perm[rank - 1] = rank - 2;
        } else if (layout == 2) {
            for (uint32_t d = 0; d < rank; d++)
                perm[d] = d == 0 ? rank - 1 : d - 1;
        } else {
            for (uint32_t d = rank; d-- > 1;) { /* Fisher-Yates */
                uint32_t j = rng_range(0, d), s = perm[d];
                perm[d] = perm[j];
                perm[j] = s;
            }
        }
        /* x may be a slice of a bigger tensor: pad its innermost row */
        uint32_t pad = PICK(0, 0, 2), x_strides[KANN_MAX_RANK];
        size_t x_n = 1;
        for (uint32_t d = rank; d-- > 0;) {
            x_strides[d] = (uint32_t)x_n;
            x_n *= x_dims[d] + (d == rank - 1 ? pad : 0);
        }
        t.rank = rank;
        size_t y_n = 1;
        for (uint32_t d = 0; d < rank; d++) {
            t.dims[d] = x_dims[perm[d]];
            t.x_strides[d] = x_strides[perm[d]];
            y_n *= t.dims[d];
        }
        float *x, *y;
        t.x = mem_put_random(random_input_space(), x_n, -1, 1, &x);
        t.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
        double *expected = malloc(y_n * sizeof(double));
        assert_non_null(expected);
        for (size_t j = 0; j < y_n; j++)
            expected[j] = x[strided_index(rank, t.dims, t.x_strides, j)];
        uint32_t extents[1] = {(uint32_t)y_n};
        run_and_check(KANN_KERNEL_F32_TRANSPOSE, &t, extents, y, expected, y_n, "transpose", i);
        free(expected);
    }
}

/* ---- act, channel_affine ------------------------------------------------------------------ */

/* Every activation kind on counts with ragged vector tails, in place or not; a quarter of the
 * cases over [-100, 100] (saturated sigmoids, exp underflow), a fifth with NaNs. Not the GELUs
 * over the wide range: x / 2 (1 + erf or tanh) with the vector forms' absolute error of a few
 * 1e-7 in erf and tanh near -1 is about -1e-5 instead of 0 at x = -100. */
static void test_act(void **state) {
    (void)state;
    rng_seed(7);
    for (int i = 0; i < 400; i++) {
        mem_reset();
        kann_act_args a = {0};
        a.count = PICK(1, 2, 7, 15, 16, 17, 64, 100, 1001);
        a.act = random_act();
        int gelu = a.act.kind == KANN_ACT_GELU || a.act.kind == KANN_ACT_GELU_TANH;
        float range = i % 4 == 3 && !gelu ? 100.0f : 8.0f, *x, *y;
        a.x = mem_put_random(random_input_space(), a.count, -range, range, &x);
        if (i % 5 == 4) sprinkle_nans(x, a.count);
        int in_place = a.x.space == KANN_SPACE_ARENA && rng_range(0, 1);
        double *expected = malloc(a.count * sizeof(double));
        assert_non_null(expected);
        for (size_t j = 0; j < a.count; j++)
            expected[j] = act_expected(&a.act, x[j]);
        if (in_place) {
            /* run_and_check resets y each pass: run each variant by hand on a fresh x instead */
            a.y = a.x;
            y = x;
            float *x0 = malloc(a.count * sizeof(float));
            assert_non_null(x0);
            memcpy(x0, x, a.count * sizeof(float));
            kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
            int nv = kernel_variants(KANN_KERNEL_F32_ACT, vs);
            for (int v = 0; v < nv; v++) {
                memcpy(x, x0, a.count * sizeof(float));
                snapshot_arena();
                run_tiled(KANN_KERNEL_F32_ACT, vs[v].fn, &a, 0, a.count);
                check_only_y_written(y, a.count);
                check_y(y, expected, a.count, "act in place", i, vs[v].isa, 0);
            }
            free(x0);
        } else {
            a.y = mem_put(KANN_SPACE_ARENA, a.count, &y);
            run_and_check(KANN_KERNEL_F32_ACT, &a, &a.count, y, expected, a.count, "act", i);
        }
        free(expected);
    }
}

/* Sigmoid and SiLU in every variant across the range where sigmoid is a normal float, at a
 * relative 1e-6 of the double formulas (the vector forms' exponential is a short polynomial),
 * and at the ends: 0 below -88 (where e^-x nears float's overflow), 1 above 87 (within an ulp),
 * NaN kept. */
static void test_act_sigmoid_accuracy(void **state) {
    (void)state;
    static const float ends[] = {-1e30f, -100.0f, -88.5f, 87.5f, 100.0f, 1e30f};
    const size_t sweep = 35001; /* -87 to 88 in steps of 1/200 */
    const size_t n = sweep + sizeof ends / sizeof ends[0] + 1;
    const uint32_t kinds[] = {KANN_ACT_SIGMOID, KANN_ACT_SILU};
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(KANN_KERNEL_F32_ACT, vs);
    for (size_t k = 0; k < 2; k++)
        for (int v = 0; v < nv; v++) {
            mem_reset();
            kann_act_args a = {0};
            a.count = (uint32_t)n;
            a.act.kind = kinds[k];
            float *x, *y;
            a.x = mem_put(KANN_SPACE_ARENA, n, &x);
            a.y = mem_put(KANN_SPACE_ARENA, n, &y);
            for (size_t i = 0; i < sweep; i++)
                x[i] = -87.0f + (float)i / 200.0f;
            memcpy(x + sweep, ends, sizeof ends);
            x[n - 1] = NAN;
            run_tiled(KANN_KERNEL_F32_ACT, vs[v].fn, &a, 0, a.count);
            for (size_t i = 0; i < n; i++) {
                double want = act_expected(&a.act, x[i]), tol = 1e-6 * fabs(want);
                if (i >= sweep && !isnan(x[i])) { /* the ends, exactly */
                    double sig = x[i] < 0 ? 0.0 : 1.0;
                    want = kinds[k] == KANN_ACT_SIGMOID ? sig : x[i] * sig;
                    tol = 1e-6 * fabs(want) + 1e-30; /* the reference: subnormals to -88.7 */
                }
                if (!(fabs(y[i] - want) <= tol) && !(isnan(want) && isnan(y[i])))
                    fail_msg("%s, kind %u: f(%.9g) = %.9g, want %.9g", vs[v].isa, a.act.kind,
                             (double)x[i], (double)y[i], want);
            }
        }
}

static void test_channel_affine(void **state) {
    (void)state;
    rng_seed(8);
    for (int i = 0; i < 200; i++) {
        mem_reset();
        kann_channel_affine_args a = {0};
        uint32_t batch = rng_range(1, 3);
        a.channels = PICK(1, 3, 7, 17);
        a.planes = batch * a.channels;
        a.inner = PICK(1, 5, 49, 70);
        a.act = random_act();
        size_t n = (size_t)a.planes * a.inner;
        float *x, *scale, *shift, *y;
        a.x = mem_put_random(random_input_space(), n, -2, 2, &x);
        a.scale = mem_put_random(random_input_space(), a.channels, -2, 2, &scale);
        a.shift = mem_put_random(random_input_space(), a.channels, -2, 2, &shift);
        a.y = mem_put(KANN_SPACE_ARENA, n, &y);
        double *expected = malloc(n * sizeof(double));
        assert_non_null(expected);
        for (size_t p = 0; p < a.planes; p++)
            for (size_t j = 0; j < a.inner; j++)
                expected[p * a.inner + j] =
                    ref_act(&a.act, (double)x[p * a.inner + j] * scale[p % a.channels] +
                                        shift[p % a.channels]);
        run_and_check(KANN_KERNEL_F32_CHANNEL_AFFINE, &a, &a.planes, y, expected, n,
                      "channel_affine", i);
        free(expected);
    }
}

/* ---- pool2d, global_avgpool --------------------------------------------------------------- */

static void run_pool_case(int case_index, uint32_t kind, uint32_t count_include_pad,
                          uint32_t planes, uint32_t h_in, uint32_t w_in, uint32_t k_h, uint32_t k_w,
                          uint32_t s_h, uint32_t s_w, uint32_t d_h, uint32_t d_w, uint32_t pt,
                          uint32_t pl, uint32_t pb, uint32_t pr, uint32_t extra) {
    kann_pool2d_args a = {0};
    a.kind = kind, a.count_include_pad = count_include_pad, a.planes = planes;
    a.h_in = h_in, a.w_in = w_in, a.k_h = k_h, a.k_w = k_w;
    a.stride_h = s_h, a.stride_w = s_w, a.dil_h = d_h, a.dil_w = d_w;
    a.pad_top = pt, a.pad_left = pl, a.pad_bottom = pb, a.pad_right = pr;
    /* extra: one more output than floor mode gives (ceil mode), windows past the padding */
    a.h_out = conv_out_len(h_in, pt, pb, k_h, d_h, s_h) + extra;
    a.w_out = conv_out_len(w_in, pl, pr, k_w, d_w, s_w) + extra;
    if (a.h_out == extra || a.w_out == extra) return;
    a.act = random_act();
    mem_reset();
    size_t x_n = (size_t)planes * h_in * w_in, y_n = (size_t)planes * a.h_out * a.w_out;
    float *x, *y;
    a.x = mem_put_random(random_input_space(), x_n, -4, 4, &x);
    a.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
    double *expected = malloc(y_n * sizeof(double));
    assert_non_null(expected);
    for (size_t p = 0; p < planes; p++)
        for (int64_t oh = 0; oh < a.h_out; oh++)
            for (int64_t ow = 0; ow < a.w_out; ow++) {
                double acc = kind == KANN_POOL_MAX ? -INFINITY : 0;
                int64_t valid = 0, padded = 0;
                for (int64_t kh = 0; kh < k_h; kh++)
                    for (int64_t kw = 0; kw < k_w; kw++) {
                        int64_t ih = oh * s_h - pt + kh * d_h, iw = ow * s_w - pl + kw * d_w;
                        if (ih >= -(int64_t)pt && ih < (int64_t)(h_in + pb) && iw >= -(int64_t)pl &&
                            iw < (int64_t)(w_in + pr))
                            padded++;
                        if (ih < 0 || ih >= h_in || iw < 0 || iw >= w_in) continue;
                        valid++;
                        double v = x[(p * h_in + ih) * w_in + iw];
                        acc = kind == KANN_POOL_MAX ? fmax(acc, v) : acc + v;
                    }
                int64_t divisor = count_include_pad ? padded : valid;
                if (kind == KANN_POOL_MAX)
                    acc = valid ? acc : 0; /* the kernels' convention for empty windows */
                else
                    acc = divisor ? acc / divisor : 0;
                expected[(p * a.h_out + oh) * a.w_out + ow] = ref_act(&a.act, acc);
            }
    run_and_check(KANN_KERNEL_F32_POOL2D, &a, &a.planes, y, expected, y_n, "pool2d", case_index);
    free(expected);
}

/* A 3x3 stride-2 max pool whose top padding comes near 2^32 (the validator's bound is on the
 * coordinates, not the padding): the rows that one loop walks (all three window rows inside x)
 * are found in 64 bits, none here, and every output's window misses x (0). */
static void test_pool2d_huge_padding(void **state) {
    (void)state;
    rng_seed(42);
    static const uint32_t pads[] = {0xfffffff0u, 0xffffffffu, 0x80000001u};
    for (int i = 0; i < 3; i++) {
        mem_reset();
        kann_pool2d_args a = {0};
        a.kind = KANN_POOL_MAX, a.planes = 2, a.h_in = 9, a.w_in = 9, a.k_h = 3, a.k_w = 3;
        a.stride_h = 2, a.stride_w = 2, a.dil_h = 1, a.dil_w = 1;
        a.pad_top = pads[i], a.h_out = 3, a.w_out = 4;
        float *x, *y;
        a.x = mem_put_random(KANN_SPACE_ARENA, 2 * 9 * 9, -4, 4, &x);
        a.y = mem_put(KANN_SPACE_ARENA, 2 * 3 * 4, &y);
        double expected[24] = {0};
        run_and_check(KANN_KERNEL_F32_POOL2D, &a, &a.planes, y, expected, 24, "pool2d huge pad",
                      i);
    }
}

static void test_pool2d(void **state) {
    (void)state;
    rng_seed(9);
    /* resnet's max pool, global-sized average, a long row */
    run_pool_case(0, KANN_POOL_MAX, 0, 4, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0);
    run_pool_case(1, KANN_POOL_AVG, 0, 3, 7, 7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 0);
    run_pool_case(2, KANN_POOL_AVG, 1, 2, 3, 150, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0);
    run_pool_case(3, KANN_POOL_MAX, 0, 1, 4, 4, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1);
    for (int i = 4; i < 400; i++) {
        uint32_t k_h = PICK(1, 2, 3, 5), k_w = PICK(1, 2, 3, 5);
        run_pool_case(i, rng_range(0, 1), rng_range(0, 1), rng_range(1, 5), rng_range(1, 17),
                      rng_range(1, 17), k_h, k_w, PICK(1, 2, 3), PICK(1, 2, 3), PICK(1, 2),
                      PICK(1, 2), rng_range(0, k_h - 1), rng_range(0, k_w - 1),
                      rng_range(0, k_h - 1), rng_range(0, k_w - 1), PICK(0, 0, 0, 1));
    }
}

static void test_global_avgpool(void **state) {
    (void)state;
    rng_seed(10);
    for (int i = 0; i < 100; i++) {
        mem_reset();
        kann_global_avgpool_args a = {0};
        a.planes = PICK(1, 3, 64, 513);
        a.spatial = PICK(1, 7, 9, 49, 3136);
        a.act = random_act();
        float *x, *y;
        a.x = mem_put_random(random_input_space(), (size_t)a.planes * a.spatial, -1, 1, &x);
        a.y = mem_put(KANN_SPACE_ARENA, a.planes, &y);
        double *expected = malloc(a.planes * sizeof(double));
        assert_non_null(expected);
        for (size_t p = 0; p < a.planes; p++) {
            double sum = 0;
            for (size_t j = 0; j < a.spatial; j++)
                sum += x[p * a.spatial + j];
            expected[p] = ref_act(&a.act, sum / a.spatial);
        }
        run_and_check(KANN_KERNEL_F32_GLOBAL_AVGPOOL, &a, &a.planes, y, expected, a.planes,
                      "global_avgpool", i);
        free(expected);
    }
}

/* Case i's shape for the kernels over pointwise_gap's loop: the first 48 every group size of
 * both kinds of block (1 to 24 pixels, 16 or 48 channels), then ragged blocks of channels and
 * pixel counts past the group sizes. */
static void pointwise_shape(int i, uint32_t *c_in, uint32_t *c_out, uint32_t *hw) {
    *c_in = PICK(1, 3, 17, 64);
    *c_out = PICK(1, 5, 16, 17, 31, 32, 33, 48, 70);
    *hw = PICK(1, 2, 7, 12, 13, 24, 25, 37, 48, 49, 169);
    if (i < 48) {
        *c_out = i % 2 ? 48 : 16;
        *hw = 1 + (uint32_t)i / 2;
    }
}

/* pointwise_gap against the conv, its activation and the mean over the pixels in double, on
 * ragged blocks of channels (c_out past a multiple of 32; a last block of at most 16, which runs
 * half the vectors) and pixel groups (hw past a multiple of 12, 24 and 3, cut into groups of
 * two sizes), every activation (those without a vector form go lane by lane), with and
 * without a bias, cut into tiles on whole blocks. */
static void test_pointwise_gap(void **state) {
    (void)state;
    rng_seed(41);
    tile_granule = KANN_GAP_BLOCK;
    for (int i = 0; i < 200; i++) {
        mem_reset();
        kann_pointwise_gap_args a = {0};
        pointwise_shape(i, &a.c_in, &a.c_out, &a.hw);
        a.act = random_act();
        uint32_t blocks = (a.c_out + KANN_GAP_BLOCK - 1) / KANN_GAP_BLOCK;
        float *x, *w, *bias = NULL, *y;
        a.x = mem_put_random(random_input_space(), (size_t)a.c_in * a.hw, -1, 1, &x);
        a.w = mem_put_random(random_input_space(), (size_t)blocks * a.c_in * KANN_GAP_BLOCK, -1,
                             1, &w);
        if (rng_range(0, 2)) a.bias = mem_put_random(random_input_space(), a.c_out, -1, 1, &bias);
        a.y = mem_put(KANN_SPACE_ARENA, a.c_out, &y);
        double *expected = malloc(a.c_out * sizeof(double));
        assert_non_null(expected);
        for (size_t m = 0; m < a.c_out; m++) {
            const float *wm = w + (m / KANN_GAP_BLOCK) * a.c_in * KANN_GAP_BLOCK + m % 32;
            double total = 0;
            for (size_t p = 0; p < a.hw; p++) {
                double acc = bias ? bias[m] : 0.0;
                for (size_t k = 0; k < a.c_in; k++)
                    acc += (double)wm[k * KANN_GAP_BLOCK] * x[k * a.hw + p];
                total += ref_act(&a.act, acc);
            }
            expected[m] = total / a.hw;
        }
        run_and_check(KANN_KERNEL_F32_POINTWISE_GAP, &a, &a.c_out, y, expected, a.c_out,
                      "pointwise_gap", i);
        free(expected);
    }
    tile_granule = 1;
}

/* pointwise_lanes against the conv, its bias, residual and activation in double: every group
 * size of both kinds of block (a block of 32 channels, 1 to 12 pixels a group on AVX-512; a
 * last block of at most 16, 1 to 24), ragged blocks (c_out past a multiple of 32), maps past
 * 16 pixels (the AVX-512 store's transposes), every activation, with and without a bias and a
 * residual, cut into tiles on whole blocks of channels or anywhere along the pixels. */
static void test_pointwise_lanes(void **state) {
    (void)state;
    rng_seed(43);
    tile_granule = KANN_GAP_BLOCK;
    tile_granule_axis1 = 1;
    for (int i = 0; i < 200; i++) {
        mem_reset();
        kann_pointwise_lanes_args a = {0};
        pointwise_shape(i, &a.c_in, &a.c_out, &a.hw);
        a.act = random_act();
        uint32_t blocks = (a.c_out + KANN_GAP_BLOCK - 1) / KANN_GAP_BLOCK;
        size_t n = (size_t)a.c_out * a.hw;
        float *x, *w, *bias = NULL, *res = NULL, *y;
        a.x = mem_put_random(random_input_space(), (size_t)a.c_in * a.hw, -1, 1, &x);
        a.w = mem_put_random(random_input_space(), (size_t)blocks * a.c_in * KANN_GAP_BLOCK, -1,
                             1, &w);
        if (rng_range(0, 2)) a.bias = mem_put_random(random_input_space(), a.c_out, -1, 1, &bias);
        if (rng_range(0, 2)) a.residual = mem_put_random(KANN_SPACE_ARENA, n, -1, 1, &res);
        a.y = mem_put(KANN_SPACE_ARENA, n, &y);
        double *expected = malloc(n * sizeof(double));
        assert_non_null(expected);
        for (size_t m = 0; m < a.c_out; m++) {
            const float *wm = w + (m / KANN_GAP_BLOCK) * a.c_in * KANN_GAP_BLOCK + m % 32;
            for (size_t p = 0; p < a.hw; p++) {
                double acc = bias ? bias[m] : 0.0;
                for (size_t k = 0; k < a.c_in; k++)
                    acc += (double)wm[k * KANN_GAP_BLOCK] * x[k * a.hw + p];
                if (res) acc += res[m * a.hw + p];
                expected[m * a.hw + p] = ref_act(&a.act, acc);
            }
        }
        uint32_t extents[2] = {a.c_out, a.hw};
        run_and_check(KANN_KERNEL_F32_POINTWISE_LANES, &a, extents, y, expected, n,
                      "pointwise_lanes", i);
        free(expected);
    }
    tile_granule = 1;
    tile_granule_axis1 = 0;
}

/* ---- softmax, copy ------------------------------------------------------------------------ */

static void test_softmax(void **state) {
    (void)state;
    rng_seed(11);
    for (int i = 0; i < 200; i++) {
        mem_reset();
        kann_softmax_args a = {0};
        a.outer = PICK(1, 2, 5);
        a.axis_len = PICK(1, 2, 10, 1000);
        a.inner = PICK(1, 1, 3, 70);
        a.log = rng_range(0, 1);
        size_t n = (size_t)a.outer * a.axis_len * a.inner;
        float *x, *y;
        /* large values: without subtracting the max, exp would overflow */
        a.x = mem_put_random(random_input_space(), n, -100, 100, &x);
        a.y = mem_put(KANN_SPACE_ARENA, n, &y);
        double *expected = malloc(n * sizeof(double));
        assert_non_null(expected);
        for (size_t o = 0; o < a.outer; o++)
            for (size_t j = 0; j < a.inner; j++) {
                size_t base = o * a.axis_len * a.inner + j;
                double max = -INFINITY, sum = 0;
                for (size_t k = 0; k < a.axis_len; k++)
                    max = fmax(max, x[base + k * a.inner]);
                for (size_t k = 0; k < a.axis_len; k++)
                    sum += exp(x[base + k * a.inner] - max);
                for (size_t k = 0; k < a.axis_len; k++) {
                    double v = x[base + k * a.inner] - max;
                    expected[base + k * a.inner] = a.log ? v - log(sum) : exp(v) / sum;
                }
            }
        run_and_check(KANN_KERNEL_F32_SOFTMAX, &a, &a.outer, y, expected, n, "softmax", i);
        free(expected);
    }
}

static void test_copy(void **state) {
    (void)state;
    rng_seed(12);
    for (int i = 0; i < 100; i++) {
        mem_reset();
        kann_copy_args a = {0};
        a.rows = PICK(1, 3, 16);
        a.row_len = PICK(1, 5, 100);
        a.x_stride = a.row_len + PICK(0, 3);
        a.y_stride = a.row_len + PICK(0, 0, 7);
        size_t y_n = (size_t)(a.rows - 1) * a.y_stride + a.row_len;
        float *x, *y;
        a.x = mem_put_random(random_input_space(), (size_t)(a.rows - 1) * a.x_stride + a.row_len,
                             -1, 1, &x);
        a.y = mem_put(KANN_SPACE_ARENA, y_n, &y);
        /* the gaps between output rows (another concat input's slice) must stay untouched */
        double *expected = malloc(y_n * sizeof(double));
        assert_non_null(expected);
        for (size_t j = 0; j < y_n; j++)
            expected[j] = SENTINEL;
        for (size_t r = 0; r < a.rows; r++)
            for (size_t j = 0; j < a.row_len; j++)
                expected[r * a.y_stride + j] = x[r * a.x_stride + j];
        run_and_check(KANN_KERNEL_F32_COPY, &a, &a.rows, y, expected, y_n, "copy", i);
        free(expected);
    }
}

/* Zero borders around planes, and crops (y smaller than x plus its padding, or a pad past the
 * whole row), rows from 1 float to several vectors wide. */
static void test_pad2d(void **state) {
    (void)state;
    rng_seed(13);
    for (int i = 0; i < 200; i++) {
        mem_reset();
        kann_pad2d_args a = {0};
        a.c = PICK(1, 3, 16);
        a.h_in = PICK(1, 2, 7, 14);
        a.w_in = PICK(1, 5, 7, 16, 17, 40);
        a.pad_top = PICK(0, 1, 2, 3);
        a.pad_left = PICK(0, 1, 2, 3, 50);
        a.h_out = a.h_in + a.pad_top + PICK(0, 1, 2) - PICK(0, 0, 1);
        a.w_out = a.w_in + PICK(0, 1, 2, 3, 9) - PICK(0, 0, 0, 1);
        if (a.h_out == 0) a.h_out = 1;
        if (a.w_out == 0) a.w_out = 1;
        float *x, *y;
        a.x = mem_put_random(random_input_space(), (size_t)a.c * a.h_in * a.w_in, -1, 1, &x);
        size_t n = (size_t)a.c * a.h_out * a.w_out;
        a.y = mem_put(KANN_SPACE_ARENA, n, &y);
        double *expected = malloc(n * sizeof(double));
        assert_non_null(expected);
        for (size_t c = 0; c < a.c; c++)
            for (size_t r = 0; r < a.h_out; r++)
                for (size_t j = 0; j < a.w_out; j++) {
                    int64_t ih = (int64_t)r - a.pad_top, iw = (int64_t)j - a.pad_left;
                    int inside = ih >= 0 && ih < (int64_t)a.h_in && iw >= 0 && iw < (int64_t)a.w_in;
                    expected[(c * a.h_out + r) * a.w_out + j] =
                        inside ? x[(c * a.h_in + (size_t)ih) * a.w_in + (size_t)iw] : 0.0;
                }
        uint32_t rows = a.c * a.h_out;
        run_and_check(KANN_KERNEL_F32_PAD2D, &a, &rows, y, expected, n, "pad2d", i);
        free(expected);
    }
}

/* ---- validators --------------------------------------------------------------------------- */

/* A small valid problem per family, placed in fresh memory (the last tensor placed is an
 * output, so the bounds end right after it). */
static void build_conv2d(void *args) {
    kann_conv2d_args *a = args;
    float *p;
    *a = (kann_conv2d_args){0};
    a->n = 1, a->c_in = 4, a->h_in = 6, a->w_in = 5, a->c_out = 6, a->h_out = 3, a->w_out = 3;
    a->group = 2, a->k_h = 3, a->k_w = 3, a->stride_h = 2, a->stride_w = 2, a->dil_h = 1;
    a->dil_w = 1, a->pad_top = 1, a->pad_left = 1;
    a->act = (kann_act){KANN_ACT_RELU, 0, 0, 0};
    a->x = mem_put_random(KANN_SPACE_ARENA, 4 * 6 * 5, -1, 1, &p);
    a->w = mem_put_random(KANN_SPACE_CONST, 6 * 2 * 3 * 3, -1, 1, &p);
    a->bias = mem_put_random(KANN_SPACE_CONST, 6, -1, 1, &p);
    a->residual = mem_put_random(KANN_SPACE_ARENA, 6 * 3 * 3, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 6 * 3 * 3, &p);
    a->tile = (kann_tile){1, 0, 3, 0};
}

static void build_matmul(void *args) {
    kann_matmul_args *a = args;
    float *p;
    *a = (kann_matmul_args){0};
    a->batch = 2, a->m = 3, a->n = 70, a->k = 5;
    a->a_batch_stride = 15, a->a_row_stride = 5, a->a_col_stride = 1;
    /* B^T in two panels of 64 columns [2][64][5], the second ragged */
    a->b_batch_stride = 0, a->b_row_stride = 1, a->b_col_stride = 5, a->b_panel_stride = 320;
    a->bias_row_stride = 0, a->bias_col_stride = 1, a->alpha = 1, a->beta = 1;
    a->a = mem_put_random(KANN_SPACE_ARENA, 30, -1, 1, &p);
    a->b = mem_put_random(KANN_SPACE_CONST, 640, -1, 1, &p);
    a->bias = mem_put_random(KANN_SPACE_CONST, 70, -1, 1, &p);
    a->residual = mem_put_random(KANN_SPACE_ARENA, 420, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 420, &p);
    a->tile = (kann_tile){0, 0, 3, 0};
}

static void build_binary(void *args) {
    kann_binary_args *a = args;
    float *p;
    *a = (kann_binary_args){0};
    a->op = KANN_BINARY_MUL, a->rank = 3;
    a->dims[0] = 2, a->dims[1] = 3, a->dims[2] = 4;
    a->a_strides[0] = 12, a->a_strides[1] = 4, a->a_strides[2] = 1;
    a->b_strides[0] = 0, a->b_strides[1] = 1, a->b_strides[2] = 0;
    a->a = mem_put_random(KANN_SPACE_ARENA, 24, -1, 1, &p);
    a->b = mem_put_random(KANN_SPACE_CONST, 3, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 24, &p);
    a->tile = (kann_tile){0, 5, 24, 0};
}

static void build_act(void *args) {
    kann_act_args *a = args;
    float *p;
    *a = (kann_act_args){0};
    a->count = 10;
    a->act = (kann_act){KANN_ACT_CLIP, 0, 6, 0};
    a->x = mem_put_random(KANN_SPACE_ARENA, 10, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 10, &p);
    a->tile = (kann_tile){0, 0, 10, 0};
}

static void build_channel_affine(void *args) {
    kann_channel_affine_args *a = args;
    float *p;
    *a = (kann_channel_affine_args){0};
    a->planes = 6, a->channels = 3, a->inner = 4;
    a->x = mem_put_random(KANN_SPACE_ARENA, 24, -1, 1, &p);
    a->scale = mem_put_random(KANN_SPACE_CONST, 3, -1, 1, &p);
    a->shift = mem_put_random(KANN_SPACE_CONST, 3, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 24, &p);
    a->tile = (kann_tile){0, 2, 6, 0};
}

static void build_pool2d(void *args) {
    kann_pool2d_args *a = args;
    float *p;
    *a = (kann_pool2d_args){0};
    a->kind = KANN_POOL_AVG, a->count_include_pad = 1, a->planes = 2, a->h_in = 5, a->w_in = 5;
    a->h_out = 3, a->w_out = 3, a->k_h = 3, a->k_w = 3, a->stride_h = 2, a->stride_w = 2;
    a->dil_h = 1, a->dil_w = 1, a->pad_top = 1, a->pad_left = 1, a->pad_bottom = 1;
    a->pad_right = 1;
    a->x = mem_put_random(KANN_SPACE_ARENA, 50, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 18, &p);
    a->tile = (kann_tile){0, 0, 2, 0};
}

static void build_global_avgpool(void *args) {
    kann_global_avgpool_args *a = args;
    float *p;
    *a = (kann_global_avgpool_args){0};
    a->planes = 4, a->spatial = 9;
    a->x = mem_put_random(KANN_SPACE_ARENA, 36, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 4, &p);
    a->tile = (kann_tile){0, 1, 4, 0};
}

static void build_pointwise_lanes(void *args) {
    kann_pointwise_lanes_args *a = args;
    float *p;
    *a = (kann_pointwise_lanes_args){0};
    a->c_in = 3, a->c_out = 40, a->hw = 5;
    a->x = mem_put_random(KANN_SPACE_ARENA, 15, -1, 1, &p);
    a->w = mem_put_random(KANN_SPACE_CONST, 2 * 3 * KANN_GAP_BLOCK, -1, 1, &p);
    a->bias = mem_put_random(KANN_SPACE_CONST, 40, -1, 1, &p);
    a->residual = mem_put_random(KANN_SPACE_ARENA, 200, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 200, &p);
    a->tile = (kann_tile){1, 1, 4, 0};
}

static void build_pointwise_gap(void *args) {
    kann_pointwise_gap_args *a = args;
    float *p;
    *a = (kann_pointwise_gap_args){0};
    a->c_in = 3, a->c_out = 40, a->hw = 5;
    a->x = mem_put_random(KANN_SPACE_ARENA, 15, -1, 1, &p);
    a->w = mem_put_random(KANN_SPACE_CONST, 2 * 3 * KANN_GAP_BLOCK, -1, 1, &p);
    a->bias = mem_put_random(KANN_SPACE_CONST, 40, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 40, &p);
    a->tile = (kann_tile){0, 32, 40, 0};
}

static void build_softmax(void *args) {
    kann_softmax_args *a = args;
    float *p;
    *a = (kann_softmax_args){0};
    a->outer = 2, a->axis_len = 5, a->inner = 3;
    a->x = mem_put_random(KANN_SPACE_ARENA, 30, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 30, &p);
    a->tile = (kann_tile){0, 0, 2, 0};
}

static void build_transpose(void *args) {
    kann_transpose_args *a = args;
    float *p;
    *a = (kann_transpose_args){0};
    a->rank = 3;
    a->dims[0] = 4, a->dims[1] = 2, a->dims[2] = 3;
    a->x_strides[0] = 1, a->x_strides[1] = 12, a->x_strides[2] = 4;
    a->x = mem_put_random(KANN_SPACE_CONST, 24, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 24, &p);
    a->tile = (kann_tile){0, 0, 24, 0};
}

static void build_copy(void *args) {
    kann_copy_args *a = args;
    float *p;
    *a = (kann_copy_args){0};
    a->rows = 3, a->row_len = 4, a->x_stride = 4, a->y_stride = 10;
    a->x = mem_put_random(KANN_SPACE_CONST, 12, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 24, &p);
    a->tile = (kann_tile){0, 0, 3, 0};
}

/* An inverted residual block: 3 -> 14 (a panel and a part) -> 5 channels, 3x3 stride 2 on 7x6,
 * bands of 2 rows; the scratch last, sized exactly. */
static void build_dwblock(void *args) {
    kann_dwblock_args *a = args;
    float *p;
    *a = (kann_dwblock_args){0};
    a->expand = 1, a->c_in = 3, a->c_mid = 14, a->c_out = 5, a->h_in = 7, a->w_in = 6;
    a->h_out = 4, a->w_out = 3, a->k_h = 3, a->k_w = 3, a->stride_h = 2, a->stride_w = 2;
    a->dil_h = 1, a->dil_w = 1, a->pad_top = 1, a->pad_left = 1, a->band_rows = 2;
    a->act_exp = (kann_act){KANN_ACT_CLIP, 0, 6, 0};
    a->act_dw = (kann_act){KANN_ACT_RELU, 0, 0, 0};
    a->x = mem_put_random(KANN_SPACE_ARENA, 3 * 7 * 6, -1, 1, &p);
    a->w_exp = mem_put_random(KANN_SPACE_CONST, 2 * 3 * 12, -1, 1, &p);
    a->b_exp = mem_put_random(KANN_SPACE_CONST, 14, -1, 1, &p);
    a->w_dw = mem_put_random(KANN_SPACE_CONST, 14 * 9, -1, 1, &p);
    a->b_dw = mem_put_random(KANN_SPACE_CONST, 14, -1, 1, &p);
    a->w_proj = mem_put_random(KANN_SPACE_CONST, 1 * 14 * 12, -1, 1, &p);
    a->b_proj = mem_put_random(KANN_SPACE_CONST, 5, -1, 1, &p);
    a->residual = mem_put_random(KANN_SPACE_ARENA, 5 * 4 * 3, -1, 1, &p);
    a->y = mem_put(KANN_SPACE_ARENA, 5 * 4 * 3, &p);
    a->scratch = mem_put(KANN_SPACE_ARENA, (size_t)kann_dwblock_scratch(a), &p);
    a->tile = (kann_tile){0, 0, 4, 0};
}

#define NO_FIELD SIZE_MAX
#define MAX_REFS 10
#define MAX_PATCHES 4

/* Bad arguments as up to MAX_PATCHES uint32 fields set to values (NO_FIELD ends a list). */
typedef struct patch {
    size_t offset;
    uint32_t value;
} patch;
typedef struct bad_case {
    const char *what;
    patch patches[MAX_PATCHES];
} bad_case;

typedef struct family_case {
    kann_kernel_id id;
    void (*build)(void *args);
    size_t refs[MAX_REFS]; /* offsets of its kann_refs; NO_FIELD ends the list */
    size_t output;         /* offset of the output ref */
    size_t act;            /* offset of its kann_act, or NO_FIELD */
    bad_case bad[9];
} family_case;

#define P(type, field, v)                                                                          \
    { offsetof(type, field), (uint32_t)(v) }
#define END                                                                                        \
    { NO_FIELD, 0 }
#define U32MAX 0xffffffffu

static const family_case families[] = {
    {KANN_KERNEL_F32_CONV2D,
     build_conv2d,
     {offsetof(kann_conv2d_args, x), offsetof(kann_conv2d_args, w),
      offsetof(kann_conv2d_args, bias), offsetof(kann_conv2d_args, residual),
      offsetof(kann_conv2d_args, y), NO_FIELD},
     offsetof(kann_conv2d_args, y),
     offsetof(kann_conv2d_args, act),
     {{"group 0", {P(kann_conv2d_args, group, 0), END}},
      {"group not dividing c_out", {P(kann_conv2d_args, group, 4), END}},
      {"stride 0", {P(kann_conv2d_args, stride_w, 0), END}},
      {"dilation 0", {P(kann_conv2d_args, dil_h, 0), END}},
      {"x dims overflow",
       {P(kann_conv2d_args, n, U32MAX), P(kann_conv2d_args, c_in, 0xfffffffe),
        P(kann_conv2d_args, h_in, U32MAX), P(kann_conv2d_args, w_in, U32MAX)}},
      {"output larger than y", {P(kann_conv2d_args, w_out, 4), END}},
      {"coordinates too large",
       {P(kann_conv2d_args, stride_h, U32MAX), P(kann_conv2d_args, dil_h, U32MAX),
        P(kann_conv2d_args, k_h, U32MAX), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_MATMUL,
     build_matmul,
     {offsetof(kann_matmul_args, a), offsetof(kann_matmul_args, b),
      offsetof(kann_matmul_args, bias), offsetof(kann_matmul_args, residual),
      offsetof(kann_matmul_args, y), NO_FIELD},
     offsetof(kann_matmul_args, y),
     offsetof(kann_matmul_args, act),
     {{"a stride past the arena", {P(kann_matmul_args, a_row_stride, 0x100000), END}},
      {"b stride overflow",
       {P(kann_matmul_args, b_batch_stride, U32MAX), P(kann_matmul_args, batch, U32MAX),
        P(kann_matmul_args, b_col_stride, U32MAX), END}},
      {"k past the arena", {P(kann_matmul_args, k, 0x100000), END}},
      {"b panels past the constants", {P(kann_matmul_args, b_panel_stride, 0x100000), END}},
      {"bias past the constants", {P(kann_matmul_args, bias_row_stride, 0x100000), END}},
      {"y dims overflow",
       {P(kann_matmul_args, m, U32MAX), P(kann_matmul_args, n, U32MAX),
        P(kann_matmul_args, a_row_stride, 0), P(kann_matmul_args, b_col_stride, 0)}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_BINARY,
     build_binary,
     {offsetof(kann_binary_args, a), offsetof(kann_binary_args, b), offsetof(kann_binary_args, y),
      NO_FIELD},
     offsetof(kann_binary_args, y),
     offsetof(kann_binary_args, act),
     {{"unknown op", {P(kann_binary_args, op, KANN_BINARY_COUNT), END}},
      {"rank 0", {P(kann_binary_args, rank, 0), END}},
      {"rank 7", {P(kann_binary_args, rank, KANN_MAX_RANK + 1), END}},
      {"b stride past the constants", {P(kann_binary_args, b_strides[2], 0x100000), END}},
      {"count over 2^32",
       {P(kann_binary_args, dims[0], 0x10000), P(kann_binary_args, dims[1], 0x10000), END}},
      {"stride overflow",
       {P(kann_binary_args, dims[0], U32MAX), P(kann_binary_args, dims[1], 1),
        P(kann_binary_args, dims[2], 1), P(kann_binary_args, a_strides[0], U32MAX)}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_ACT,
     build_act,
     {offsetof(kann_act_args, x), offsetof(kann_act_args, y), NO_FIELD},
     offsetof(kann_act_args, y),
     offsetof(kann_act_args, act),
     {{"count past y", {P(kann_act_args, count, 11), END}}, {NULL, {END}}}},
    {KANN_KERNEL_F32_CHANNEL_AFFINE,
     build_channel_affine,
     {offsetof(kann_channel_affine_args, x), offsetof(kann_channel_affine_args, scale),
      offsetof(kann_channel_affine_args, shift), offsetof(kann_channel_affine_args, y), NO_FIELD},
     offsetof(kann_channel_affine_args, y),
     offsetof(kann_channel_affine_args, act),
     {{"channels 0", {P(kann_channel_affine_args, channels, 0), END}},
      {"channels past the constants", {P(kann_channel_affine_args, channels, 0x100000), END}},
      {"size overflow",
       {P(kann_channel_affine_args, inner, U32MAX), P(kann_channel_affine_args, planes, U32MAX),
        END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_POOL2D,
     build_pool2d,
     {offsetof(kann_pool2d_args, x), offsetof(kann_pool2d_args, y), NO_FIELD},
     offsetof(kann_pool2d_args, y),
     offsetof(kann_pool2d_args, act),
     {{"unknown kind", {P(kann_pool2d_args, kind, KANN_POOL_COUNT), END}},
      {"stride 0", {P(kann_pool2d_args, stride_h, 0), END}},
      {"dilation 0", {P(kann_pool2d_args, dil_w, 0), END}},
      {"output larger than y", {P(kann_pool2d_args, h_out, 4), END}},
      {"coordinates too large",
       {P(kann_pool2d_args, pad_bottom, U32MAX), P(kann_pool2d_args, k_h, U32MAX),
        P(kann_pool2d_args, dil_h, U32MAX), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_GLOBAL_AVGPOOL,
     build_global_avgpool,
     {offsetof(kann_global_avgpool_args, x), offsetof(kann_global_avgpool_args, y), NO_FIELD},
     offsetof(kann_global_avgpool_args, y),
     offsetof(kann_global_avgpool_args, act),
     {{"spatial 0", {P(kann_global_avgpool_args, spatial, 0), END}},
      {"spatial past the arena", {P(kann_global_avgpool_args, spatial, 0x100000), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_SOFTMAX,
     build_softmax,
     {offsetof(kann_softmax_args, x), offsetof(kann_softmax_args, y), NO_FIELD},
     offsetof(kann_softmax_args, y),
     NO_FIELD,
     {{"size overflow",
       {P(kann_softmax_args, axis_len, U32MAX), P(kann_softmax_args, inner, U32MAX), END}},
      {"axis past the arena", {P(kann_softmax_args, axis_len, 0x100000), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_TRANSPOSE,
     build_transpose,
     {offsetof(kann_transpose_args, x), offsetof(kann_transpose_args, y), NO_FIELD},
     offsetof(kann_transpose_args, y),
     NO_FIELD,
     {{"rank 0", {P(kann_transpose_args, rank, 0), END}},
      {"rank 7", {P(kann_transpose_args, rank, KANN_MAX_RANK + 1), END}},
      {"stride past x", {P(kann_transpose_args, x_strides[0], 2), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_COPY,
     build_copy,
     {offsetof(kann_copy_args, x), offsetof(kann_copy_args, y), NO_FIELD},
     offsetof(kann_copy_args, y),
     NO_FIELD,
     {{"x stride past x", {P(kann_copy_args, x_stride, 5), END}},
      {"y stride overflow",
       {P(kann_copy_args, y_stride, U32MAX), P(kann_copy_args, rows, U32MAX), END}},
      {"row past y", {P(kann_copy_args, row_len, 11), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_DWBLOCK,
     build_dwblock,
     {offsetof(kann_dwblock_args, x), offsetof(kann_dwblock_args, w_exp),
      offsetof(kann_dwblock_args, b_exp), offsetof(kann_dwblock_args, w_dw),
      offsetof(kann_dwblock_args, b_dw), offsetof(kann_dwblock_args, w_proj),
      offsetof(kann_dwblock_args, b_proj), offsetof(kann_dwblock_args, residual),
      offsetof(kann_dwblock_args, y), offsetof(kann_dwblock_args, scratch)},
     offsetof(kann_dwblock_args, y),
     offsetof(kann_dwblock_args, act_proj),
     {{"scratch copies past the arena", {P(kann_dwblock_args, slots, 2), END}},
      {"scratch copies overflow", {P(kann_dwblock_args, slots, U32MAX), END}},
      {"expand 2", {P(kann_dwblock_args, expand, 2), END}},
      {"no expansion, c_mid != c_in", {P(kann_dwblock_args, expand, 0), END}},
      {"band rows 0", {P(kann_dwblock_args, band_rows, 0), END}},
      {"pad past the window", {P(kann_dwblock_args, pad_top, 3), END}},
      {"scratch too small for taller bands", {P(kann_dwblock_args, band_rows, 3), END}},
      {"stride 0", {P(kann_dwblock_args, stride_w, 0), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_POINTWISE_GAP,
     build_pointwise_gap,
     {offsetof(kann_pointwise_gap_args, x), offsetof(kann_pointwise_gap_args, w),
      offsetof(kann_pointwise_gap_args, bias), offsetof(kann_pointwise_gap_args, y), NO_FIELD},
     offsetof(kann_pointwise_gap_args, y),
     offsetof(kann_pointwise_gap_args, act),
     {{"reserved field", {P(kann_pointwise_gap_args, reserved, 1), END}},
      {"no input channels", {P(kann_pointwise_gap_args, c_in, 0), END}},
      {"no pixels", {P(kann_pointwise_gap_args, hw, 0), END}},
      {"tile begin inside a block", {P(kann_pointwise_gap_args, tile.begin, 31), END}},
      {"channels past the weights' blocks", {P(kann_pointwise_gap_args, c_out, 70), END}},
      {"pixels past the arena", {P(kann_pointwise_gap_args, hw, 0x100000), END}},
      {NULL, {END}}}},
    {KANN_KERNEL_F32_POINTWISE_LANES,
     build_pointwise_lanes,
     {offsetof(kann_pointwise_lanes_args, x), offsetof(kann_pointwise_lanes_args, w),
      offsetof(kann_pointwise_lanes_args, bias), offsetof(kann_pointwise_lanes_args, residual),
      offsetof(kann_pointwise_lanes_args, y), NO_FIELD},
     offsetof(kann_pointwise_lanes_args, y),
     offsetof(kann_pointwise_lanes_args, act),
     {{"reserved field", {P(kann_pointwise_lanes_args, reserved, 1), END}},
      {"no input channels", {P(kann_pointwise_lanes_args, c_in, 0), END}},
      {"no pixels", {P(kann_pointwise_lanes_args, hw, 0), END}},
      {"pixel tile past hw", {P(kann_pointwise_lanes_args, tile.end, 6), END}},
      {"channel tile begin inside a block",
       {P(kann_pointwise_lanes_args, tile.axis, 0), P(kann_pointwise_lanes_args, tile.begin, 31),
        P(kann_pointwise_lanes_args, tile.end, 40), END}},
      {"channels past the weights' blocks", {P(kann_pointwise_lanes_args, c_out, 70), END}},
      {"pixels past the arena", {P(kann_pointwise_lanes_args, hw, 0x100000), END}},
      {NULL, {END}}}},
};

static void set_u32(void *args, size_t offset, uint32_t v) {
    memcpy((uint8_t *)args + offset, &v, sizeof v);
}

static kann_ref get_ref(const void *args, size_t offset) {
    kann_ref r;
    memcpy(&r, (const uint8_t *)args + offset, sizeof r);
    return r;
}

static void set_ref(void *args, size_t offset, kann_ref r) {
    memcpy((uint8_t *)args + offset, &r, sizeof r);
}

/* Expects validation to fail with a status and a message, and not to crash without err. */
static void expect_rejected(const family_case *f, const void *args, const char *what) {
    const kann_kernel_info *info = &kann_kernels[f->id];
    kann_error err;
    memset(&err, 0x55, sizeof err);
    kann_status s = info->validate(args, &bounds, &err);
    if (s == KANN_OK) fail_msg("%s: accepted bad arguments (%s)", info->name, what);
    assert_int_equal(err.status, s);
    assert_non_null(memchr(err.message, '\0', sizeof err.message));
    assert_true(err.message[0] != '\0');
    assert_int_not_equal(info->validate(args, &bounds, NULL), KANN_OK);
}

static void test_validators(void **state) {
    (void)state;
    rng_seed(13);
    for (size_t fi = 0; fi < sizeof families / sizeof families[0]; fi++) {
        const family_case *f = &families[fi];
        const kann_kernel_info *info = &kann_kernels[f->id];
        uint64_t good[64], bad[64];
        assert_true(info->args_size <= sizeof good);
        mem_reset();
        f->build(good);
        kann_error err = {0};
        if (info->validate(good, &bounds, &err) != KANN_OK)
            fail_msg("%s: good arguments rejected: %s", info->name, err.message);
        assert_int_equal(info->validate(good, &bounds, NULL), KANN_OK);

        /* tiles */
        kann_tile *t = (kann_tile *)bad;
        memcpy(bad, good, info->args_size);
        t->axis = info->n_tile_axes;
        expect_rejected(f, bad, "tile axis");
        memcpy(bad, good, info->args_size);
        t->begin = t->end + 1;
        expect_rejected(f, bad, "tile begin > end");
        memcpy(bad, good, info->args_size);
        t->end = U32MAX;
        expect_rejected(f, bad, "tile end past the extent");

        /* activation */
        if (f->act != NO_FIELD) {
            memcpy(bad, good, info->args_size);
            set_u32(bad, f->act + offsetof(kann_act, kind), KANN_ACT_COUNT);
            expect_rejected(f, bad, "activation kind");
            memcpy(bad, good, info->args_size);
            kann_act nan_act = {KANN_ACT_CLIP, NAN, -INFINITY, 7};
            memcpy((uint8_t *)bad + f->act, &nan_act, sizeof nan_act);
            assert_int_equal(info->validate(bad, &bounds, NULL), KANN_OK);
        }

        /* every memory reference */
        for (size_t ri = 0; ri < MAX_REFS && f->refs[ri] != NO_FIELD; ri++) {
            kann_ref r = get_ref(good, f->refs[ri]);
            uint64_t size = r.space == KANN_SPACE_ARENA ? bounds.arena_size : bounds.const_size;
            static const uint64_t bad_offsets[] = {0, 4, UINT64_MAX - 3, UINT64_MAX & ~3ull};
            for (size_t oi = 0; oi < sizeof bad_offsets / sizeof bad_offsets[0]; oi++) {
                memcpy(bad, good, info->args_size);
                kann_ref moved = r;
                moved.offset = oi < 2 ? size - bad_offsets[oi] : bad_offsets[oi];
                set_ref(bad, f->refs[ri], moved);
                expect_rejected(f, bad, "offset past the end");
            }
            memcpy(bad, good, info->args_size);
            set_ref(bad, f->refs[ri], (kann_ref){r.space, 0, r.offset + 2});
            expect_rejected(f, bad, "misaligned offset");
            memcpy(bad, good, info->args_size);
            set_ref(bad, f->refs[ri], (kann_ref){KANN_SPACE_COUNT, 0, r.offset});
            expect_rejected(f, bad, "unknown space");
            memcpy(bad, good, info->args_size);
            set_ref(bad, f->refs[ri], (kann_ref){r.space, 0xdeadbeef, r.offset});
            assert_int_equal(info->validate(bad, &bounds, NULL), KANN_OK); /* reserved ignored */
        }
        memcpy(bad, good, info->args_size);
        kann_ref y = get_ref(good, f->output);
        set_ref(bad, f->output, (kann_ref){KANN_SPACE_CONST, 0, 0});
        expect_rejected(f, bad, "output in the constants");
        set_ref(bad, f->output, (kann_ref){KANN_SPACE_NONE, 0, y.offset});
        expect_rejected(f, bad, "output absent");

        /* the family's own rules */
        for (size_t bi = 0; bi < 8 && f->bad[bi].what; bi++) {
            memcpy(bad, good, info->args_size);
            for (size_t pi = 0; pi < MAX_PATCHES && f->bad[bi].patches[pi].offset != NO_FIELD; pi++)
                set_u32(bad, f->bad[bi].patches[pi].offset, f->bad[bi].patches[pi].value);
            expect_rejected(f, bad, f->bad[bi].what);
        }
    }
}

/* Optional inputs may be absent; required inputs may not. */
static void test_validators_optional_refs(void **state) {
    (void)state;
    kann_conv2d_args c;
    mem_reset();
    build_conv2d(&c);
    c.bias = c.residual = (kann_ref){KANN_SPACE_NONE, 0, 0};
    assert_int_equal(kann_conv2d_validate(&c, &bounds, NULL), KANN_OK);
    c.w.space = KANN_SPACE_NONE;
    assert_int_not_equal(kann_conv2d_validate(&c, &bounds, NULL), KANN_OK);
    kann_matmul_args m;
    mem_reset();
    build_matmul(&m);
    m.bias = m.residual = (kann_ref){KANN_SPACE_NONE, 0, 0};
    assert_int_equal(kann_matmul_validate(&m, &bounds, NULL), KANN_OK);
    m.a.space = KANN_SPACE_NONE;
    assert_int_not_equal(kann_matmul_validate(&m, &bounds, NULL), KANN_OK);
}

static void test_strided_bytes(void **state) {
    (void)state;
    int overflow = -1;
    assert_int_equal(
        kann_strided_bytes(2, (const uint32_t[]){3, 4}, (const uint32_t[]){4, 1}, &overflow), 48);
    assert_int_equal(overflow, 0);
    assert_int_equal(
        kann_strided_bytes(2, (const uint32_t[]){3, 4}, (const uint32_t[]){10, 1}, &overflow),
        (2 * 10 + 3 + 1) * 4);
    assert_int_equal(
        kann_strided_bytes(2, (const uint32_t[]){3, 4}, (const uint32_t[]){0, 0}, &overflow), 4);
    assert_int_equal(
        kann_strided_bytes(2, (const uint32_t[]){0, 4}, (const uint32_t[]){1, 1}, &overflow), 0);
    assert_int_equal(overflow, 0);
    uint32_t big[6] = {U32MAX, U32MAX, U32MAX, U32MAX, U32MAX, U32MAX};
    assert_int_equal(kann_strided_bytes(6, big, big, &overflow), 0);
    assert_int_equal(overflow, 1);
    assert_int_equal(kann_strided_bytes(1, big, big, NULL), 0); /* *4 overflows */
}

static void test_messages(void **state) {
    (void)state;
    kann_error err;
    assert_int_equal(kann_msg_set(&err, KANN_E_CORRUPT, "x: "), KANN_E_CORRUPT);
    kann_msg_append_u64(&err, 0);
    kann_msg_append(&err, " ");
    kann_msg_append_u64(&err, UINT64_MAX);
    assert_string_equal(err.message, "x: 0 18446744073709551615");
    assert_int_equal(err.status, KANN_E_CORRUPT);
    for (int i = 0; i < 100; i++)
        kann_msg_append(&err, "overflowing ");
    assert_int_equal(strlen(err.message), sizeof err.message - 1);
    assert_int_equal(kann_msg_set(NULL, KANN_E_CORRUPT, "ignored"), KANN_E_CORRUPT);
    kann_msg_append(NULL, "ignored");
    kann_msg_append_u64(NULL, 1);
}

/* The registry lists every kernel with its family's size, tile axes and functions. */
static void test_registry(void **state) {
    (void)state;
    assert_null(kann_kernels[KANN_KERNEL_BARRIER].ref);
    /* Every registered id is complete: name, reference, validator, tile axes, an argument
     * struct. (Families added later are tested in their own test_kernels_*.c files.) */
    for (int id = 1; id < KANN_KERNEL_COUNT; id++) {
        const kann_kernel_info *info = &kann_kernels[id];
        if (!info->name) continue;
        assert_non_null(info->ref);
        assert_non_null(info->validate);
        assert_true(info->n_tile_axes >= 1 && info->n_tile_axes <= 2);
        assert_true(info->args_size >= sizeof(kann_tile) && info->args_size % 8 == 0);
    }
    for (size_t fi = 0; fi < sizeof families / sizeof families[0]; fi++)
        assert_non_null(kann_kernels[families[fi].id].name);
}

/* Validated arguments never make a kernel leave its bounds: mutate one field of good arguments
 * (one to three at a time) and run whatever validates, on copies of the spaces allocated at their
 * exact size (so a sanitizer build catches any stray access). */
static void test_validated_mutations_run_safely(void **state) {
    (void)state;
    rng_seed(14);
    static const uint32_t values[] = {0,  1,  2,  3,          4,          5,          7,     8,
                                      16, 31, 64, 0x7fffffff, 0x80000000, 0xfffffffe, U32MAX};
    int accepted = 0;
    for (size_t fi = 0; fi < sizeof families / sizeof families[0]; fi++) {
        const family_case *f = &families[fi];
        const kann_kernel_info *info = &kann_kernels[f->id];
        uint64_t good[64], args[64];
        mem_reset();
        f->build(good);
        uint8_t *arena = malloc(bounds.arena_size), *consts = malloc(bounds.const_size);
        assert_true(arena && consts);
        memcpy(arena, mem[KANN_SPACE_ARENA], bounds.arena_size);
        memcpy(consts, mem[KANN_SPACE_CONST], bounds.const_size);
        kann_exec exact = {arena, consts, NULL, NULL, NULL};
        for (int i = 0; i < 3000; i++) {
            memcpy(args, good, info->args_size);
            for (uint32_t n_fields = rng_range(1, 3); n_fields > 0; n_fields--) {
                size_t word = rng_next() % (info->args_size / 4);
                uint32_t v = rng_next() % 4 == 0 ? (uint32_t)rng_next()
                                                 : values[rng_next() % (sizeof values / 4)];
                set_u32(args, word * 4, v);
            }
            if (info->validate(args, &bounds, NULL) == KANN_OK) {
                info->ref(args, &exact);
                accepted++;
            }
        }
        free(arena);
        free(consts);
    }
    print_message("%d mutated argument structs validated and ran\n", accepted);
    assert_true(accepted > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_act_apply),
        cmocka_unit_test(test_conv2d_table),
        cmocka_unit_test(test_conv2d_random),
        cmocka_unit_test(test_matmul_table),
        cmocka_unit_test(test_matmul_random),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_act),
        cmocka_unit_test(test_act_sigmoid_accuracy),
        cmocka_unit_test(test_channel_affine),
        cmocka_unit_test(test_pool2d),
        cmocka_unit_test(test_pool2d_huge_padding),
        cmocka_unit_test(test_global_avgpool),
        cmocka_unit_test(test_pointwise_gap),
        cmocka_unit_test(test_pointwise_lanes),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_pad2d),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_strided_bytes),
        cmocka_unit_test(test_validators),
        cmocka_unit_test(test_validators_optional_refs),
        cmocka_unit_test(test_validated_mutations_run_safely),
    };
    int failed = cmocka_run_group_tests(tests, mem_setup, mem_teardown);
    free(arena_snapshot);
    return failed;
}
