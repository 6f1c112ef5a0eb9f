/* The AMX kernels of the 1x1 convs (kernels/x86/kann_amx.h: conv2d_packed's pointwise path,
 * pointwise_lanes, pointwise_gap as bf16x3 tile products) against the references on random
 * shapes with ragged channel and pixel counts, every epilogue: each output within a bound on
 * bf16x3's error, parts along either axis the whole record's bits, the AVX-512 variant's bits
 * where the weights are not prepared or the record is not the tiles'; the split of the
 * weights into bf16 pairs; and the model API that switches a model to AMX (prepared sizes,
 * short and misaligned buffers, the kernels reading the prepared pairs). Skipped where the CPU
 * or the OS has no AMX. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_host.h"
#include "kann_kernels.h"
#include "ref/conv2d_packed.h"
#include "runtime_models.h"
#include "test_rng.h"
#ifdef KANN_HAVE_AMX
#include "kann_amx.h"
#include "kann_x86.h"
#endif

#ifdef KANN_HAVE_AMX

static int amx_runs(void) {
    if (!kann_x86_supports(KANN_X86_AMX) || !kann_host_amx_permit()) {
        print_message("no AMX on this CPU or OS: skipped\n");
        return 0;
    }
    return 1;
}

/* ---- one buffer for the arena and the constants ----------------------------------------- */

static float *mem;
static size_t mem_used, mem_cap; /* floats */

static void mem_reset(size_t cap) {
    free(mem);
    mem = aligned_alloc(64, (cap * sizeof(float) + 63) / 64 * 64);
    assert_non_null(mem);
    mem_used = 0;
    mem_cap = cap;
}

static kann_ref mem_ref(uint32_t space, size_t n) {
    size_t at = (mem_used + 15) / 16 * 16;
    assert_true(at + n <= mem_cap);
    mem_used = at + n;
    for (size_t i = 0; i < n; i++)
        mem[at + i] = rng_float(-1.0f, 1.0f);
    return (kann_ref){space, 0, at * sizeof(float)};
}

static float *at(kann_ref r) {
    return mem + r.offset / sizeof(float);
}

static const kann_ref none = {KANN_SPACE_NONE, 0, 0};

/* ---- one case: a 1x1 conv of m output and k input channels over hw pixels ----------------- */

typedef struct pw_case {
    uint32_t kernel, m, k, hw;
    int bias, residual;
    kann_act act;
} pw_case;

typedef union pw_args {
    kann_tile tile;
    kann_conv2d_packed_args packed;
    kann_pointwise_lanes_args lanes;
    kann_pointwise_gap_args gap;
} pw_args;

static kann_act random_act(void) {
    static const uint32_t kinds[] = {KANN_ACT_NONE,       KANN_ACT_RELU,    KANN_ACT_CLIP,
                                     KANN_ACT_LEAKY_RELU, KANN_ACT_SIGMOID, KANN_ACT_HARD_SWISH,
                                     KANN_ACT_SILU,       KANN_ACT_GELU,    KANN_ACT_SOFTPLUS};
    kann_act a = {kinds[rng_range(0, sizeof kinds / sizeof kinds[0] - 1)], 0, 0, 0};
    if (a.kind == KANN_ACT_CLIP) a.alpha = -0.4f, a.beta = 0.7f;
    if (a.kind == KANN_ACT_LEAKY_RELU) a.alpha = 0.1f;
    return a;
}

/* The case's weights W [m][k] packed as its kernel reads them, in the constants. */
static kann_ref pack_weights(const pw_case *c, const float *W) {
    uint32_t panel = c->kernel == KANN_KERNEL_F32_CONV2D_PACKED ? KANN_CONV_PANEL : KANN_GAP_BLOCK;
    size_t panels = (c->m + panel - 1) / panel;
    kann_ref w = mem_ref(KANN_SPACE_CONST, panels * panel * c->k);
    float *p = at(w);
    memset(p, 0, panels * panel * c->k * sizeof(float));
    for (size_t m = 0; m < c->m; m++)
        for (size_t k = 0; k < c->k; k++)
            p[(m / panel) * c->k * panel + k * panel + m % panel] = W[m * c->k + k];
    return w;
}

static pw_args make_args(const pw_case *c, kann_ref x, kann_ref w, kann_ref bias, kann_ref res,
                         kann_ref y, uint32_t axis) {
    pw_args a;
    memset(&a, 0, sizeof a);
    uint32_t extent = axis == 0 ? c->m : c->hw;
    a.tile.axis = axis;
    a.tile.end = extent;
    if (c->kernel == KANN_KERNEL_F32_CONV2D_PACKED) {
        kann_conv2d_packed_args *p = &a.packed;
        p->x = x, p->w = w, p->bias = bias, p->residual = res, p->y = y, p->scratch = none;
        p->c_in = c->k, p->c_out = c->m;
        p->h_in = p->h_out = 1, p->w_in = p->w_out = c->hw;
        p->k_h = p->k_w = p->stride_h = p->stride_w = p->dil_h = p->dil_w = 1;
        p->act = c->act;
    } else if (c->kernel == KANN_KERNEL_F32_POINTWISE_LANES) {
        kann_pointwise_lanes_args *p = &a.lanes;
        p->x = x, p->w = w, p->bias = bias, p->residual = res, p->y = y;
        p->c_in = c->k, p->c_out = c->m, p->hw = c->hw, p->act = c->act;
    } else {
        kann_pointwise_gap_args *p = &a.gap;
        p->x = x, p->w = w, p->bias = bias, p->y = y;
        p->c_in = c->k, p->c_out = c->m, p->hw = c->hw, p->act = c->act;
    }
    return a;
}

static kann_kernel_fn amx_kernel(uint32_t kernel) {
    return kernel == KANN_KERNEL_F32_CONV2D_PACKED     ? kann_f32_conv2d_packed_amx
           : kernel == KANN_KERNEL_F32_POINTWISE_LANES ? kann_f32_pointwise_lanes_amx
                                                       : kann_f32_pointwise_gap_amx;
}

static kann_kernel_fn avx512_kernel(uint32_t kernel) {
    return kernel == KANN_KERNEL_F32_CONV2D_PACKED     ? kann_f32_conv2d_packed_12x32_avx512
           : kernel == KANN_KERNEL_F32_POINTWISE_LANES ? kann_f32_pointwise_lanes_avx512
                                                       : kann_f32_pointwise_gap_avx512;
}

/* A prepared table of one tensor, g's, with its pairs (free() it). */
static void *prepare_one(const kann_amx_gemm *g) {
    size_t head = (sizeof(kann_amx_table) + sizeof(kann_amx_entry) + 63) / 64 * 64;
    size_t bytes = head + (size_t)kann_amx_gemm_bytes(g);
    kann_amx_table *t = aligned_alloc(64, bytes);
    assert_non_null(t);
    memset(t, 0, head);
    t->count = 1;
    t->e[0] = (kann_amx_entry){g->w_offset, head, g->m, g->k, g->panel, 0};
    kann_amx_pack(g, (const uint8_t *)mem, (uint8_t *)t + head);
    return t;
}

/* Runs c: the reference, the AMX kernel whole and in parts along `axis`, the fallbacks. */
static void run_case(const pw_case *c, uint32_t axis) {
    int gap = c->kernel == KANN_KERNEL_F32_POINTWISE_GAP;
    size_t out = gap ? c->m : (size_t)c->m * c->hw;
    mem_reset((size_t)c->m * c->k * 3 + (size_t)c->k * c->hw + 6 * out + 64 * 16);
    float *W = malloc((size_t)c->m * c->k * sizeof(float));
    assert_non_null(W);
    for (size_t i = 0; i < (size_t)c->m * c->k; i++)
        W[i] = rng_float(-1.0f, 1.0f) * 0.5f;
    kann_ref w = pack_weights(c, W);
    kann_ref x = mem_ref(KANN_SPACE_ARENA, (size_t)c->k * c->hw);
    kann_ref bias = c->bias ? mem_ref(KANN_SPACE_CONST, c->m) : none;
    kann_ref res = c->residual && !gap ? mem_ref(KANN_SPACE_ARENA, out) : none;
    kann_ref y_ref = mem_ref(KANN_SPACE_ARENA, out), y_amx = mem_ref(KANN_SPACE_ARENA, out);
    kann_ref y_part = mem_ref(KANN_SPACE_ARENA, out), y_avx = mem_ref(KANN_SPACE_ARENA, out);
    kann_exec ex = {(uint8_t *)mem, (const uint8_t *)mem, NULL, NULL, NULL};

    pw_args a = make_args(c, x, w, bias, res, y_ref, axis);
    kann_kernels[c->kernel].ref(&a, &ex);
    kann_amx_gemm g;
    int tiles = kann_amx_gemm_of(c->kernel, &a, &g);
    assert_int_equal(tiles, c->m >= 64 && c->k >= 32 && c->k <= KANN_AMX_MAX_K);
    void *prepared = tiles ? prepare_one(&g) : NULL;
    ex.prepared = prepared;
    a = make_args(c, x, w, bias, res, y_amx, axis);
    amx_kernel(c->kernel)(&a, &ex);
    a = make_args(c, x, w, bias, res, y_avx, axis);
    ex.prepared = NULL;
    avx512_kernel(c->kernel)(&a, &ex);
    ex.prepared = prepared;

    /* bf16x3 drops lo * lo and what lo leaves of each factor, 3 * 2^-18 of each product at
     * most, and sums in float: the bound is on the sum of the products' sizes */
    const float *X = at(x), *B = c->bias ? at(bias) : NULL,
                *R = c->residual && !gap ? at(res) : NULL;
    for (size_t m = 0; m < c->m; m++) {
        double gap_bound = 0.0;
        for (size_t p = 0; p < c->hw; p++) {
            double s = 0.0;
            for (size_t k = 0; k < c->k; k++)
                s += fabs((double)W[m * c->k + k] * X[k * c->hw + p]);
            s += (B ? fabs(B[m]) : 0.0) + (R ? fabs(R[m * c->hw + p]) : 0.0);
            double bound = 4e-5 * s + 1e-6;
            if (gap) {
                gap_bound += bound / c->hw;
                continue;
            }
            double e = fabs((double)at(y_amx)[m * c->hw + p] - at(y_ref)[m * c->hw + p]);
            if (!(e <= bound))
                fail_msg("%s m %u k %u hw %u act %u: y[%zu][%zu] %g, reference %g (bound %g)",
                         kann_kernels[c->kernel].name, c->m, c->k, c->hw, c->act.kind, m, p,
                         at(y_amx)[m * c->hw + p], at(y_ref)[m * c->hw + p], bound);
        }
        if (gap && !(fabs((double)at(y_amx)[m] - at(y_ref)[m]) <= gap_bound))
            fail_msg("pointwise_gap m %u k %u hw %u: y[%zu] %g, reference %g", c->m, c->k, c->hw, m,
                     at(y_amx)[m], at(y_ref)[m]);
    }
    if (!tiles) /* the AVX-512 variant ran */
        assert_memory_equal(at(y_amx), at(y_avx), out * sizeof(float));

    /* parts: up to three, cut at the axis' granule */
    uint32_t extent = axis == 0 ? c->m : c->hw;
    uint32_t granule =
        axis == 0 ? (c->kernel == KANN_KERNEL_F32_CONV2D_PACKED ? KANN_CONV_PANEL : KANN_GAP_BLOCK)
                  : (c->kernel == KANN_KERNEL_F32_CONV2D_PACKED ? KANN_CONV_PIXEL_GRANULE
                                                                : KANN_LANES_PIXEL_GRANULE);
    uint32_t cuts[4] = {0, 0, 0, extent};
    uint32_t n_grains = (extent + granule - 1) / granule;
    cuts[1] = granule * rng_range(0, n_grains);
    cuts[2] = granule * rng_range(0, n_grains);
    if (cuts[1] > cuts[2]) cuts[1] ^= cuts[2], cuts[2] ^= cuts[1], cuts[1] ^= cuts[2];
    for (int i = 1; i < 3; i++)
        if (cuts[i] > extent) cuts[i] = extent;
    memset(at(y_part), 0, out * sizeof(float));
    for (int i = 0; i < 3; i++) {
        a = make_args(c, x, w, bias, res, y_part, axis);
        a.tile.begin = cuts[i];
        a.tile.end = cuts[i + 1];
        amx_kernel(c->kernel)(&a, &ex);
    }
    assert_memory_equal(at(y_part), at(y_amx), out * sizeof(float));
    /* the middle part alone writes its own outputs and nothing else */
    for (size_t i = 0; i < out; i++)
        at(y_part)[i] = NAN;
    a = make_args(c, x, w, bias, res, y_part, axis);
    a.tile.begin = cuts[1];
    a.tile.end = cuts[2];
    amx_kernel(c->kernel)(&a, &ex);
    for (size_t i = 0; i < out; i++) {
        size_t along = gap ? i : axis == 0 ? i / c->hw : i % c->hw;
        if (along >= cuts[1] && along < cuts[2])
            assert_memory_equal(&at(y_part)[i], &at(y_amx)[i], sizeof(float));
        else if (!isnan(at(y_part)[i]))
            fail_msg("%s: part [%u, %u) along axis %u wrote output %zu",
                     kann_kernels[c->kernel].name, cuts[1], cuts[2], axis, i);
    }

    /* a table without these weights: the AVX-512 variant */
    if (tiles) {
        kann_amx_table *t = prepared;
        t->e[0].w_offset += 64;
        a = make_args(c, x, w, bias, res, y_part, axis);
        amx_kernel(c->kernel)(&a, &ex);
        assert_memory_equal(at(y_part), at(y_avx), out * sizeof(float));
    }
    free(prepared);
    free(W);
}

static pw_case random_case(uint32_t kernel, uint32_t m_max, uint32_t k_max, uint32_t hw_max) {
    pw_case c;
    c.kernel = kernel;
    c.m = rng_range(kernel == KANN_KERNEL_F32_POINTWISE_GAP ? 1 : 8, m_max);
    c.k = rng_range(1, k_max);
    c.hw = rng_range(1, hw_max);
    c.bias = (int)rng_range(0, 1);
    c.residual = (int)rng_range(0, 1);
    c.act = random_act();
    return c;
}

static void test_amx_random(void **state) {
    (void)state;
    if (!amx_runs()) return;
    rng_state = 7;
    static const uint32_t kernels[] = {KANN_KERNEL_F32_CONV2D_PACKED,
                                       KANN_KERNEL_F32_POINTWISE_LANES,
                                       KANN_KERNEL_F32_POINTWISE_GAP};
    for (int i = 0; i < 60; i++) {
        uint32_t kernel = kernels[i % 3];
        pw_case c = random_case(kernel, 200, 300, 260);
        run_case(&c, kernel == KANN_KERNEL_F32_POINTWISE_GAP ? 0 : (uint32_t)rng_range(0, 1));
    }
}

/* Shapes of the shared models and past the stack buffer's strip: 1000 x 512 over 13x13
 * (squeezenet1_1's head), 1280 x 320 over 7x7, 64 x 1024 (32-pixel strips), 192 x 1152 and
 * 80 x 2048 (16-pixel strips; 2048 the widest input the tiles take), 96 x 2049 (too wide: the
 * AVX-512 variant), 72 x 40 over 3136. */
static void test_amx_model_shapes(void **state) {
    (void)state;
    if (!amx_runs()) return;
    rng_state = 11;
    static const pw_case cases[] = {
        {KANN_KERNEL_F32_POINTWISE_GAP, 1000, 512, 169, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {KANN_KERNEL_F32_POINTWISE_GAP, 1280, 320, 49, 1, 0, {KANN_ACT_CLIP, 0, 6, 0}},
        {KANN_KERNEL_F32_POINTWISE_LANES, 64, 1024, 75, 1, 1, {KANN_ACT_NONE, 0, 0, 0}},
        {KANN_KERNEL_F32_CONV2D_PACKED, 96, 2049, 40, 0, 1, {KANN_ACT_RELU, 0, 0, 0}},
        {KANN_KERNEL_F32_POINTWISE_LANES, 192, 1152, 49, 1, 1, {KANN_ACT_NONE, 0, 0, 0}},
        {KANN_KERNEL_F32_CONV2D_PACKED, 80, 2048, 37, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {KANN_KERNEL_F32_POINTWISE_GAP, 100, 1500, 50, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {KANN_KERNEL_F32_CONV2D_PACKED, 72, 40, 3136, 1, 1, {KANN_ACT_CLIP, 0, 6, 0}},
        {KANN_KERNEL_F32_POINTWISE_LANES, 160, 960, 49, 1, 0, {KANN_ACT_NONE, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i],
                 cases[i].kernel == KANN_KERNEL_F32_POINTWISE_GAP ? 0 : (uint32_t)(i % 2));
}

/* ---- gathering convs (conv2d_packed with a scratch) --------------------------------------- */

typedef struct gather_case {
    uint32_t c_in, c_out, h_in, w_in, k, stride, pad, dil;
    int bias, residual;
    kann_act act;
} gather_case;

static kann_conv2d_packed_args gather_args(const gather_case *c, kann_ref x, kann_ref w,
                                           kann_ref bias, kann_ref res, kann_ref y,
                                           kann_ref scratch, uint32_t axis) {
    kann_conv2d_packed_args a;
    memset(&a, 0, sizeof a);
    a.x = x, a.w = w, a.bias = bias, a.residual = res, a.y = y, a.scratch = scratch;
    a.c_in = c->c_in, a.h_in = c->h_in, a.w_in = c->w_in, a.c_out = c->c_out;
    a.k_h = a.k_w = c->k, a.stride_h = a.stride_w = c->stride, a.dil_h = a.dil_w = c->dil;
    a.pad_top = a.pad_left = c->pad;
    a.h_out = (c->h_in + 2 * c->pad - c->dil * (c->k - 1) - 1) / c->stride + 1;
    a.w_out = (c->w_in + 2 * c->pad - c->dil * (c->k - 1) - 1) / c->stride + 1;
    a.act = c->act;
    a.tile.axis = axis;
    a.tile.end = axis == 0 ? c->c_out : a.h_out * a.w_out;
    return a;
}

/* The gathered path against the reference: each output within the bound on the sum of its
 * products' sizes (the reference run on |W|, |x|, |bias|, |residual|), parts along the pixels
 * the whole record's bits, the AVX-512 variant's bits where the weights are not prepared. */
static void run_gather_case(const gather_case *c, uint32_t axis) {
    kann_conv2d_packed_args a = gather_args(c, none, none, none, none, none, none, 0);
    size_t K = (size_t)c->c_in * c->k * c->k, hw = (size_t)a.h_out * a.w_out;
    size_t out = (size_t)c->c_out * hw, x_n = (size_t)c->c_in * c->h_in * c->w_in;
    size_t panels = (c->c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t scratch_n = (hw + 31) / 32 * 32 * K;
    mem_reset(2 * panels * KANN_CONV_PANEL * K + 2 * x_n + 2 * c->c_out + 7 * out + scratch_n +
              64 * 24);
    kann_ref w = mem_ref(KANN_SPACE_CONST, panels * KANN_CONV_PANEL * K);
    kann_ref w_abs = mem_ref(KANN_SPACE_CONST, panels * KANN_CONV_PANEL * K);
    for (size_t i = 0; i < panels * KANN_CONV_PANEL * K; i++) {
        size_t m = i / (K * KANN_CONV_PANEL) * KANN_CONV_PANEL + i % KANN_CONV_PANEL;
        at(w)[i] = m < c->c_out ? at(w)[i] * 0.5f : 0.0f;
        at(w_abs)[i] = fabsf(at(w)[i]);
    }
    kann_ref x = mem_ref(KANN_SPACE_ARENA, x_n), x_abs = mem_ref(KANN_SPACE_ARENA, x_n);
    for (size_t i = 0; i < x_n; i++)
        at(x_abs)[i] = fabsf(at(x)[i]);
    kann_ref bias = c->bias ? mem_ref(KANN_SPACE_CONST, c->c_out) : none;
    kann_ref bias_abs = c->bias ? mem_ref(KANN_SPACE_CONST, c->c_out) : none;
    for (size_t i = 0; c->bias && i < c->c_out; i++)
        at(bias_abs)[i] = fabsf(at(bias)[i]);
    kann_ref res = c->residual ? mem_ref(KANN_SPACE_ARENA, out) : none;
    kann_ref res_abs = c->residual ? mem_ref(KANN_SPACE_ARENA, out) : none;
    for (size_t i = 0; c->residual && i < out; i++)
        at(res_abs)[i] = fabsf(at(res)[i]);
    kann_ref y_ref = mem_ref(KANN_SPACE_ARENA, out), y_amx = mem_ref(KANN_SPACE_ARENA, out);
    kann_ref y_part = mem_ref(KANN_SPACE_ARENA, out), y_avx = mem_ref(KANN_SPACE_ARENA, out);
    kann_ref y_abs = mem_ref(KANN_SPACE_ARENA, out), scratch = mem_ref(KANN_SPACE_ARENA, scratch_n);
    kann_exec ex = {(uint8_t *)mem, (const uint8_t *)mem, NULL, NULL, NULL};
    kann_bounds bd = {mem_cap * sizeof(float), mem_cap * sizeof(float)};
    kann_error err;

    a = gather_args(c, x, w, bias, res, y_ref, scratch, axis);
    assert_int_equal(kann_kernels[KANN_KERNEL_F32_CONV2D_PACKED].validate(&a, &bd, &err), KANN_OK);
    kann_kernels[KANN_KERNEL_F32_CONV2D_PACKED].ref(&a, &ex);
    kann_conv2d_packed_args s = gather_args(c, x_abs, w_abs, bias_abs, res_abs, y_abs, scratch, 0);
    s.act.kind = KANN_ACT_NONE;
    kann_kernels[KANN_KERNEL_F32_CONV2D_PACKED].ref(&s, &ex);
    kann_amx_gemm g;
    int tiles = kann_amx_gemm_of(KANN_KERNEL_F32_CONV2D_PACKED, &a, &g);
    /* split straight from x: windows of several taps at column stride 2, 32 to 1024 steps, not
     * an image stem; else gathered into the scratch, K a multiple of 32 */
    int window =
        c->stride == 2 && c->k > 1 && K >= 32 && K <= 1024 && !kann_conv2d_packed_direct(&a);
    assert_int_equal(tiles, c->c_out >= 64 && (K % 32 == 0 || window));
    void *prepared = tiles ? prepare_one(&g) : NULL;
    ex.prepared = prepared;
    a.y = y_amx;
    kann_f32_conv2d_packed_amx(&a, &ex);
    ex.prepared = NULL;
    a.y = y_avx;
    kann_f32_conv2d_packed_12x32_avx512(&a, &ex);
    ex.prepared = prepared;
    for (size_t i = 0; i < out; i++) {
        double bound = 4e-5 * at(y_abs)[i] + 1e-6;
        double e = fabs((double)at(y_amx)[i] - at(y_ref)[i]);
        if (!(e <= bound))
            fail_msg("gathered conv %u -> %u k %u stride %u: y[%zu] %g, reference %g (bound %g)",
                     c->c_in, c->c_out, c->k, c->stride, i, at(y_amx)[i], at(y_ref)[i], bound);
    }
    if (!tiles) assert_memory_equal(at(y_amx), at(y_avx), out * sizeof(float));
    /* parts along the pixels, cut at multiples of 32 */
    if (axis == 1) {
        uint32_t cut = 32 * rng_range(0, (uint32_t)(hw / 32));
        memset(at(y_part), 0, out * sizeof(float));
        a.y = y_part;
        a.tile.end = cut;
        kann_f32_conv2d_packed_amx(&a, &ex);
        a.tile.begin = cut;
        a.tile.end = (uint32_t)hw;
        kann_f32_conv2d_packed_amx(&a, &ex);
        assert_memory_equal(at(y_part), at(y_amx), out * sizeof(float));
    }
    free(prepared);
}

/* resnet18's stride-2 convs and downsamples in small, ragged and padded shapes; stride-2 convs
 * whose K is not a multiple of 32 (sample_cnn's 48 -> 64, a 5x5 over rows of two strips, a
 * dilated one, a short reduction); fewer than 64 output channels, an image stem, K past 1024
 * and a stride-1 conv whose K is not a multiple of 32 take the AVX-512 variant. */
static void test_amx_gathered(void **state) {
    (void)state;
    if (!amx_runs()) return;
    rng_state = 13;
    static const gather_case cases[] = {
        {64, 128, 28, 28, 3, 2, 1, 1, 0, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {64, 128, 28, 28, 1, 2, 0, 1, 1, 0, {KANN_ACT_NONE, 0, 0, 0}},
        {32, 70, 13, 11, 3, 1, 1, 1, 1, 1, {KANN_ACT_CLIP, 0, 6, 0}},
        {32, 96, 9, 17, 3, 2, 0, 2, 1, 0, {KANN_ACT_SILU, 0, 0, 0}},
        {96, 100, 7, 7, 3, 2, 1, 1, 1, 1, {KANN_ACT_SOFTPLUS, 0, 0, 0}},
        {24, 80, 10, 10, 3, 2, 1, 1, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {64, 48, 12, 12, 3, 2, 1, 1, 0, 0, {KANN_ACT_NONE, 0, 0, 0}},
        {48, 64, 56, 56, 3, 2, 1, 1, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {20, 64, 23, 70, 5, 2, 2, 1, 1, 1, {KANN_ACT_CLIP, 0, 6, 0}},
        {40, 72, 15, 15, 3, 2, 0, 2, 0, 0, {KANN_ACT_SILU, 0, 0, 0}},
        {12, 64, 9, 9, 3, 2, 1, 1, 1, 1, {KANN_ACT_NONE, 0, 0, 0}},
        {3, 64, 31, 31, 3, 2, 1, 1, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {120, 64, 9, 9, 3, 2, 1, 1, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
        {24, 64, 12, 12, 3, 1, 1, 1, 1, 0, {KANN_ACT_RELU, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (uint32_t axis = 0; axis < 2; axis++)
            run_gather_case(&cases[i], axis);
}

/* hi + lo holds a weight to 2^-16 of it; infinities and NaNs are hi alone; a finite weight that
 * rounds past the largest bf16 keeps its truncation. */
static void test_amx_split(void **state) {
    (void)state;
    if (!amx_runs()) return; /* kann_amx_pack is compiled for the AMX CPUs */
    enum { M = 64, K = 40 };
    mem_reset(M * K + 64);
    kann_ref w = mem_ref(KANN_SPACE_CONST, M * K);
    float *W = at(w);
    W[0] = 3.4028235e38f;
    W[1] = -INFINITY;
    W[2] = NAN;
    W[3] = 1e-40f;
    W[4] = -0.0f;
    W[5] = 1.0f + 0x1p-8f + 0x1p-20f;
    kann_amx_gemm g = {w.offset, M, K, KANN_GAP_BLOCK};
    uint16_t *pairs = aligned_alloc(64, (size_t)kann_amx_gemm_bytes(&g));
    assert_non_null(pairs);
    kann_amx_pack(&g, (const uint8_t *)mem, pairs);
    size_t kp = 64, lo_at = (size_t)(M + 32) * kp;
    for (size_t m = 0; m < M + 32; m++)
        for (size_t k = 0; k < kp; k++) {
            uint32_t hb = (uint32_t)pairs[m * kp + k] << 16,
                     lb = (uint32_t)pairs[lo_at + m * kp + k] << 16;
            float hi, lo;
            memcpy(&hi, &hb, 4);
            memcpy(&lo, &lb, 4);
            if (m >= M || k >= K) {
                assert_true(hb == 0 && lb == 0);
                continue;
            }
            float v = W[(m / 32) * K * 32 + k * 32 + m % 32];
            if (isnan(v)) {
                assert_true(isnan(hi));
            } else if (isinf(v)) {
                assert_true(hi == v && lo == 0.0f);
            } else {
                assert_true(isfinite(hi) && isfinite(lo));
                /* below the normal range only as close as the bf16 denormals' spacing */
                if (!(fabs((double)hi + lo - v) <= fabs(v) * 0x1p-16 + 0x1p-133))
                    fail_msg("weight %g split into %g + %g", v, hi, lo);
            }
        }
    free(pairs);
}

/* ---- the model API ------------------------------------------------------------------------ */

static void run_model(kann_model *m, const float *x, float *y) {
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(m));
    kann_session s;
    kann_error e;
    assert_int_equal(kann_session_init(&s, m, arena, (size_t)kann_model_arena_size(m), &e),
                     KANN_OK);
    kann_tensor in, out;
    assert_int_equal(kann_session_input(&s, 0, &in), KANN_OK);
    memcpy(in.data, x, in.size);
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    assert_int_equal(kann_session_output(&s, 0, &out), KANN_OK);
    memcpy(y, out.data, out.size);
    kann_host_arena_free(arena);
}

static void test_amx_model_api(void **state) {
    (void)state;
    size_t size;
    void *bin = rt_model_pointwise(&size);
    assert_non_null(bin);
    kann_model m;
    kann_error e;
    assert_int_equal(kann_model_open(&m, bin, size, &e), KANN_OK);
    assert_true(kann_isa_best() != KANN_ISA_AMX);
    assert_int_equal(kann_model_prepared_size(&m, KANN_ISA_AVX512), 0);
    uint64_t need = kann_model_prepared_size(&m, KANN_ISA_AMX);
    if (!kann_isa_supported(KANN_ISA_AMX)) { /* nothing to prepare, no switching to it */
        assert_int_equal(need, 0);
        assert_int_equal(kann_model_set_isa(&m, KANN_ISA_AMX, &e), KANN_E_UNSUPPORTED);
        free(bin);
        return;
    }
    /* one tensor of 96 x 80: hi and lo, (96 + 32) rows of 96 */
    assert_int_equal(need, 64 + 64 + 2 * 128 * 96 * 2);
    if (!amx_runs()) {
        free(bin);
        return;
    }
    enum { N_IN = RT_PW_C_IN * RT_PW_HW, N_OUT = RT_PW_C_OUT * RT_PW_HW };
    static float x[N_IN], want[N_OUT], got[N_OUT];
    rng_state = 3;
    for (size_t i = 0; i < N_IN; i++)
        x[i] = rng_float(-1.0f, 1.0f);
    assert_int_equal(kann_model_set_isa(&m, KANN_ISA_AVX512, &e), KANN_OK);
    run_model(&m, x, want);
    /* stream 0's record, output channels [0, 64): cut into parts of 32 on AVX-512 */
    assert_int_equal(kann_model_record_parts(&m, 0, NULL, NULL, NULL), KANN_GAP_BLOCK);

    uint8_t *buf = aligned_alloc(64, (size_t)need + 64);
    assert_non_null(buf);
    assert_int_equal(kann_model_set_isa(&m, KANN_ISA_AMX, &e), KANN_E_ARGUMENT);
    assert_int_equal(kann_model_set_isa_prepared(&m, KANN_ISA_AMX, buf, (size_t)need - 1, &e),
                     KANN_E_ARGUMENT);
    assert_int_equal(kann_model_set_isa_prepared(&m, KANN_ISA_AMX, buf + 8, (size_t)need, &e),
                     KANN_E_ARGUMENT);
    assert_int_equal(kann_model_isa(&m), KANN_ISA_AVX512); /* unchanged */
    assert_int_equal(kann_model_set_isa_prepared(&m, KANN_ISA_AMX, buf, (size_t)need, &e), KANN_OK);
    assert_int_equal(kann_model_isa(&m), KANN_ISA_AMX);
    /* not on AMX: each part would split the whole input again */
    assert_int_equal(kann_model_record_parts(&m, 0, NULL, NULL, NULL), 0);
    run_model(&m, x, got);
    float top = 0.0f, err = 0.0f;
    for (size_t i = 0; i < N_OUT; i++) {
        top = fmaxf(top, fabsf(want[i]));
        err = fmaxf(err, fabsf(got[i] - want[i]));
    }
    assert_true(top > 0.0f && err <= 1e-5f * top);
    /* the kernels read the pairs: without them the sums are the bias alone */
    memset(buf + 128, 0, (size_t)need - 128);
    run_model(&m, x, got);
    for (size_t i = 0; i < N_OUT; i++) {
        float b = 0.125f * (float)((i / RT_PW_HW) % 9) - 0.5f;
        assert_true(got[i] == (b > 0.0f ? b : 0.0f));
    }
    /* the host's choice: AMX, with a buffer of its own */
    void *prepared = NULL;
    assert_int_equal(kann_host_model_set_isa(&m, NULL, &prepared, &e), KANN_OK);
    assert_int_equal(kann_model_isa(&m), KANN_ISA_AMX);
    assert_non_null(prepared);
    run_model(&m, x, got);
    for (size_t i = 0; i < N_OUT; i++)
        assert_true(fabsf(got[i] - want[i]) <= 1e-5f * top);
    kann_host_arena_free(prepared);
    assert_int_equal(kann_host_model_set_isa(&m, "avx512", &prepared, &e), KANN_OK);
    assert_null(prepared);
    assert_int_equal(kann_host_model_set_isa(&m, "sse9", &prepared, &e), KANN_E_ARGUMENT);
    free(buf);
    free(bin);
}

static int teardown(void **state) {
    (void)state;
    free(mem);
    mem = NULL;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_amx_random),    cmocka_unit_test(test_amx_model_shapes),
        cmocka_unit_test(test_amx_gathered),  cmocka_unit_test(test_amx_split),
        cmocka_unit_test(test_amx_model_api),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}

#else

/* Without the AMX kernels in the build, the level is never supported and needs nothing. */
static void test_amx_absent(void **state) {
    (void)state;
    assert_false(kann_isa_supported(KANN_ISA_AMX));
    size_t size;
    void *bin = rt_model_pointwise(&size);
    kann_model m;
    kann_error e;
    assert_int_equal(kann_model_open(&m, bin, size, &e), KANN_OK);
    assert_int_equal(kann_model_prepared_size(&m, KANN_ISA_AMX), 0);
    assert_int_equal(kann_model_set_isa(&m, KANN_ISA_AMX, &e), KANN_E_UNSUPPORTED);
    free(bin);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_amx_absent)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#endif
