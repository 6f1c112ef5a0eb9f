/* The OpenCL f32_conv_transpose, f32_conv_nd, f32_pool_nd, f32_pool2d, f32_resize,
 * f32_conv2d_maxpool and f32_dwblock kernels against the reference kernels on random 1-3 D
 * shapes, groups, strides, dilations, paddings, tiles and activations (PoCL in CI). Skipped
 * without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "ref/conv2d_maxpool.h"
#include "ref/dwblock.h"
#include "test_opencl_kernels_harness.h"

#define CASES 24

static kann_act random_act(kt *k) {
    kann_act a = {kt_range(k, 0, KANN_ACT_COUNT - 1), kt_float(k, 0.2f, 1.2f), 0.0f, 0};
    a.beta = a.alpha + kt_float(k, 0.5f, 2.0f);
    return a;
}

/* A conv_transpose / conv_nd problem over 1 to 3 spatial dims (the others of size 1). */
static void conv_shape(kt *k, kann_conv_transpose_args *a) {
    memset(a, 0, sizeof *a);
    a->n = kt_range(k, 1, 2);
    a->group = kt_range(k, 1, 2);
    a->c_in = a->group * kt_range(k, 1, 3);
    a->c_out = a->group * kt_range(k, 1, 3);
    uint32_t spatial = kt_range(k, 1, 3);
    for (uint32_t d = 0; d < 3; d++) {
        int used = d >= 3 - spatial;
        a->in[d] = used ? kt_range(k, 1, 5) : 1;
        a->out[d] = used ? kt_range(k, 1, 7) : 1;
        a->k[d] = used ? kt_range(k, 1, 3) : 1;
        a->stride[d] = used ? kt_range(k, 1, 3) : 1;
        a->dil[d] = used ? kt_range(k, 1, 2) : 1;
        a->pad[d] = used ? kt_range(k, 0, 2) : 0;
    }
    a->act = random_act(k);
}

static size_t volume(const uint32_t *d) {
    return (size_t)d[0] * d[1] * d[2];
}

static void test_conv_transpose(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 2000 + seed);
        kann_conv_transpose_args a;
        conv_shape(&k, &a);
        a.x = kt_input_f32(&k, (size_t)a.n * a.c_in * volume(a.in), -1.0f, 1.0f);
        a.w = kt_input_f32(&k, (size_t)a.c_in * (a.c_out / a.group) * volume(a.k), -1.0f, 1.0f);
        if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
        a.y = kt_output(&k, (size_t)a.n * a.c_out * volume(a.out) * 4, 4);
        a.tile = kt_tile(&k, a.n * a.c_out);
        kt_run(&k, KANN_KERNEL_F32_CONV_TRANSPOSE, &a, sizeof a, 0);
        kt_free(&k);
    }
}

static void test_conv_nd(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 2100 + seed);
        kann_conv_nd_args a;
        conv_shape(&k, &a);
        a.x = kt_input_f32(&k, (size_t)a.n * a.c_in * volume(a.in), -1.0f, 1.0f);
        a.w = kt_input_f32(&k, (size_t)a.c_out * (a.c_in / a.group) * volume(a.k), -1.0f, 1.0f);
        if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
        a.y = kt_output(&k, (size_t)a.n * a.c_out * volume(a.out) * 4, 4);
        a.tile = kt_tile(&k, a.n * a.c_out);
        kt_run(&k, KANN_KERNEL_F32_CONV_ND, &a, sizeof a, 0);
        kt_free(&k);
    }
}

static void test_pool_nd(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 2 * CASES; seed++) {
        kt k;
        kt_init(&k, 2200 + seed);
        kann_pool_nd_args a;
        memset(&a, 0, sizeof a);
        a.kind = (uint32_t)(seed % 2);
        a.count_include_pad = kt_range(&k, 0, 1);
        a.planes = kt_range(&k, 1, 4);
        uint32_t spatial = kt_range(&k, 1, 3);
        for (uint32_t d = 0; d < 3; d++) {
            int used = d >= 3 - spatial;
            a.in[d] = used ? kt_range(&k, 1, 6) : 1;
            a.out[d] = used ? kt_range(&k, 1, 4) : 1;
            a.k[d] = used ? kt_range(&k, 1, 3) : 1;
            a.stride[d] = used ? kt_range(&k, 1, 2) : 1;
            a.dil[d] = used ? kt_range(&k, 1, 2) : 1;
            a.pad_begin[d] = used ? kt_range(&k, 0, 2) : 0;
            a.pad_end[d] = used ? kt_range(&k, 0, 2) : 0;
        }
        a.act = random_act(&k);
        size_t out = (size_t)a.planes * volume(a.out);
        a.x = kt_input_f32(&k, (size_t)a.planes * volume(a.in), -2.0f, 2.0f);
        a.y = kt_output(&k, out * 4, 4);
        if (a.kind == KANN_POOL_MAX && kt_range(&k, 0, 1)) {
            a.indices = kt_output(&k, out * 8, 8);
            a.storage_order = kt_range(&k, 0, 1);
        }
        a.tile = kt_tile(&k, a.planes);
        kt_run(&k, KANN_KERNEL_F32_POOL_ND, &a, sizeof a, 0);
        kt_free(&k);
    }
}

/* An output extent along one axis for pool2d: the floor or ceil mode one when the window
 * fits, else anything small (windows over padding only, or none at all). */
static uint32_t pool_extent(kt *k, uint32_t n_in, uint32_t kk, uint32_t stride, uint32_t dil,
                            uint32_t pads) {
    uint32_t span = (kk - 1) * dil + 1;
    if (n_in + pads < span || kt_range(k, 0, 7) == 0) return kt_range(k, 1, 5);
    return (n_in + pads - span) / stride + 1 + kt_range(k, 0, 1);
}

/* f32_pool2d (max and average) in the kernel style of kt_style: rows long enough for the CPU
 * style's 16-output vectors (strides 1 and 2) with ragged ends, other strides, dilations,
 * paddings, count_include_pad, NaN inputs, tiles and activations. */
static void pool2d_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < 4 * CASES; seed++) {
        kt k;
        kt_init(&k, 2600 + seed);
        kann_pool2d_args a;
        memset(&a, 0, sizeof a);
        a.kind = (uint32_t)(seed % 2);
        a.count_include_pad = kt_range(&k, 0, 1);
        a.planes = kt_range(&k, 1, 3);
        /* now and then enough outputs for several bands of rows (CPU style) */
        a.h_in = kt_range(&k, 1, seed % 8 == 7 ? 70 : 9);
        a.w_in = kt_range(&k, 1, seed % 4 == 3 ? 120 : 40);
        a.k_h = kt_range(&k, 1, 3);
        a.k_w = kt_range(&k, 1, 3);
        a.stride_h = kt_range(&k, 1, 3);
        a.stride_w = seed % 3 == 0 ? 3 : kt_range(&k, 1, 2);
        a.dil_h = kt_range(&k, 1, 2);
        a.dil_w = kt_range(&k, 1, 2);
        a.pad_top = kt_range(&k, 0, 2);
        a.pad_bottom = kt_range(&k, 0, 2);
        a.pad_left = kt_range(&k, 0, 2);
        a.pad_right = kt_range(&k, 0, 2);
        if (seed % 8 == 4) { /* max, 3 columns, stride 2 (the CPU style's shared loads) */
            a.k_w = 3;
            a.stride_w = 2;
            a.dil_w = 1;
            a.w_in = kt_range(&k, 30, 120);
        }
        a.h_out = pool_extent(&k, a.h_in, a.k_h, a.stride_h, a.dil_h, a.pad_top + a.pad_bottom);
        a.w_out = pool_extent(&k, a.w_in, a.k_w, a.stride_w, a.dil_w, a.pad_left + a.pad_right);
        a.act = random_act(&k);
        size_t n_in = (size_t)a.planes * a.h_in * a.w_in;
        a.x = kt_input_f32(&k, n_in, -2.0f, 2.0f);
        float *x = (float *)(void *)kt_ptr(&k, a.x);
        for (uint32_t i = kt_range(&k, 0, 3); i > 0; i--)
            x[kt_rand(&k) % n_in] = NAN;
        a.y = kt_output(&k, (size_t)a.planes * a.h_out * a.w_out * 4, 4);
        a.tile = kt_tile(&k, a.planes);
        kt_run(&k, KANN_KERNEL_F32_POOL2D, &a, sizeof a, 0);
        kt_free(&k);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

static void test_pool2d_cpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    pool2d_cases(CL_DEVICE_TYPE_CPU);
}

static void test_pool2d_gpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    pool2d_cases(CL_DEVICE_TYPE_GPU);
}

/* f32_conv2d_maxpool: 1 to 5 input channels, windows up to 5x5 with strides, dilation and
 * padding, pool windows 1 to 3 at strides 1 to 3 with padding below the window (the last
 * window cut by the map's end now and then), tiles along channels (panel bounds) or pooled
 * rows. The reference writes its ring into the scratch; the OpenCL kernel does not use it, so
 * the reference runs once beforehand and the scratch already holds what it writes. */
static void test_conv2d_maxpool(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 2 * CASES; seed++) {
        kt k;
        kt_init(&k, 5200 + seed);
        kann_conv2d_maxpool_args a;
        memset(&a, 0, sizeof a);
        a.c_in = kt_range(&k, 1, 5);
        a.c_out = kt_range(&k, 1, 30);
        a.k_h = kt_range(&k, 1, 5);
        a.k_w = kt_range(&k, 1, 5);
        a.stride_h = a.stride_w = kt_range(&k, 1, 3);
        a.dil_h = a.dil_w = kt_range(&k, 1, 2);
        a.pad_top = a.pad_left = kt_range(&k, 0, 2);
        a.h_in = kt_range(&k, (a.k_h - 1) * a.dil_h + 1, 20);
        a.w_in = kt_range(&k, (a.k_w - 1) * a.dil_w + 1, 40);
        a.h_conv = (a.h_in + 2 * a.pad_top - (a.k_h - 1) * a.dil_h - 1) / a.stride_h + 1;
        a.w_conv = (a.w_in + 2 * a.pad_left - (a.k_w - 1) * a.dil_w - 1) / a.stride_w + 1;
        a.pool_k_h = kt_range(&k, 1, a.h_conv < 3 ? a.h_conv : 3);
        a.pool_k_w = kt_range(&k, 1, a.w_conv < 3 ? a.w_conv : 3);
        a.pool_stride_h = kt_range(&k, 1, 3);
        a.pool_stride_w = kt_range(&k, 1, 3);
        a.pool_pad_top = kt_range(&k, 0, a.pool_k_h - 1);
        a.pool_pad_left = kt_range(&k, 0, a.pool_k_w - 1);
        uint32_t ceil_h = kt_range(&k, 0, 1) ? a.pool_stride_h - 1 : 0;
        a.h_out = (a.h_conv + 2 * a.pool_pad_top - a.pool_k_h + ceil_h) / a.pool_stride_h + 1;
        a.w_out = (a.w_conv + 2 * a.pool_pad_left - a.pool_k_w) / a.pool_stride_w + 1;
        if ((a.h_out - 1) * a.pool_stride_h >= a.h_conv + a.pool_pad_top) a.h_out--;
        a.act = random_act(&k);
        size_t K = (size_t)a.c_in * a.k_h * a.k_w, panels = (a.c_out + 11) / 12;
        a.x = kt_input_f32(&k, (size_t)a.c_in * a.h_in * a.w_in, -1.0f, 1.0f);
        a.w = kt_input_f32(&k, panels * 12 * K, -1.0f, 1.0f);
        if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
        a.y = kt_output(&k, (size_t)a.c_out * a.h_out * a.w_out * 4, 4);
        uint64_t band, gather;
        a.scratch = kt_output(&k, kann_conv2d_maxpool_scratch(&a, &band, &gather) * 4, 4);
        if (kt_range(&k, 0, 1)) {
            a.tile = kt_aligned_tile(&k, 0, a.c_out, KANN_CONV_PANEL);
        } else {
            a.tile = kt_tile(&k, a.h_out);
            a.tile.axis = 1;
        }
        kt_preset_scratch(&k, KANN_KERNEL_F32_CONV2D_MAXPOOL, &a, a.y,
                          (size_t)a.c_out * a.h_out * a.w_out);
        kt_run(&k, KANN_KERNEL_F32_CONV2D_MAXPOOL, &a, sizeof a, 0);
        kt_free(&k);
    }
}

/* An output extent of dwblock along one axis: the map's padded on both sides (pad < span, so
 * its last window starts inside the map), or now and then anything from 1 to the most whose
 * last window still starts inside it. */
static uint32_t dwblock_extent(kt *k, uint32_t n_in, uint32_t kk, uint32_t stride, uint32_t dil,
                               uint32_t pad) {
    uint32_t span = (kk - 1) * dil + 1;
    if (n_in + 2 * pad < span || kt_range(k, 0, 3) == 0)
        return kt_range(k, 1, (n_in - 1 + pad) / stride + 1);
    return (n_in + 2 * pad - span) / stride + 1;
}

/* Weights of a reduction over fan_in terms, scaled so that the sums stay near 1 and the
 * activations see both sides of their bends. */
static kann_ref dwblock_weights(kt *k, size_t n, size_t fan_in) {
    float r = 1.5f / sqrtf((float)fan_in);
    return kt_input_f32(k, n, -r, r);
}

/* f32_dwblock with and without the expansion, in the kernel style of kt_style: 1 to 20 input
 * channels, 1 to 40 mid channels and 1 to 30 output channels (partial weight panels), maps
 * from 1 x 1 to 20 x 23 and now and then rows of up to 70 columns (several of the CPU style's
 * blocks of 16, the last one ragged), windows up to 5 x 5 (not square), strides 1 to 3,
 * dilation 1 or 2, paddings up to the window's reach (some windows read a single row or
 * column of x, or none through their dilated taps), every activation at each stage, each bias
 * and the residual present or not, tiles of output rows and bands of 1 to 4 rows. As for
 * conv2d_maxpool, the reference runs once beforehand, so that the scratch, which the OpenCL
 * kernels do not use, already holds what it writes. */
static void dwblock_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < 4 * CASES; seed++) {
        kt k;
        kt_init(&k, 5300 + seed);
        kann_dwblock_args a;
        memset(&a, 0, sizeof a);
        a.expand = seed % 4 != 3;
        a.c_in = kt_range(&k, 1, 20);
        a.c_mid = a.expand ? kt_range(&k, 1, 40) : a.c_in;
        a.c_out = kt_range(&k, 1, 30);
        a.h_in = kt_range(&k, 1, seed % 8 == 0 ? 2 : 20);
        a.w_in = kt_range(&k, 1, seed % 8 == 0 ? 2 : seed % 4 == 1 ? 70 : 23);
        a.k_h = kt_range(&k, 1, 5);
        a.k_w = kt_range(&k, 1, 5);
        a.stride_h = kt_range(&k, 1, 3);
        a.stride_w = kt_range(&k, 1, 3);
        a.dil_h = kt_range(&k, 1, 2);
        a.dil_w = kt_range(&k, 1, 2);
        a.pad_top = kt_range(&k, 0, (a.k_h - 1) * a.dil_h);
        a.pad_left = kt_range(&k, 0, (a.k_w - 1) * a.dil_w);
        a.h_out = dwblock_extent(&k, a.h_in, a.k_h, a.stride_h, a.dil_h, a.pad_top);
        a.w_out = dwblock_extent(&k, a.w_in, a.k_w, a.stride_w, a.dil_w, a.pad_left);
        a.band_rows = kt_range(&k, 1, 4);
        a.act_exp = random_act(&k);
        a.act_dw = random_act(&k);
        a.act_proj = random_act(&k);
        size_t out = (size_t)a.c_out * a.h_out * a.w_out, taps = (size_t)a.k_h * a.k_w;
        a.x = kt_input_f32(&k, (size_t)a.c_in * a.h_in * a.w_in, -1.0f, 1.0f);
        if (a.expand) {
            a.w_exp = dwblock_weights(&k, (a.c_mid + 11) / 12 * 12 * (size_t)a.c_in, a.c_in);
            if (kt_range(&k, 0, 1)) a.b_exp = kt_input_f32(&k, a.c_mid, -0.5f, 0.5f);
        }
        a.w_dw = dwblock_weights(&k, a.c_mid * taps, taps);
        if (kt_range(&k, 0, 1)) a.b_dw = kt_input_f32(&k, a.c_mid, -0.5f, 0.5f);
        a.w_proj = dwblock_weights(&k, (a.c_out + 11) / 12 * 12 * (size_t)a.c_mid, a.c_mid);
        if (kt_range(&k, 0, 1)) a.b_proj = kt_input_f32(&k, a.c_out, -0.5f, 0.5f);
        if (kt_range(&k, 0, 1)) a.residual = kt_input_f32(&k, out, -1.0f, 1.0f);
        a.y = kt_output(&k, out * 4, 4);
        a.scratch = kt_output(&k, kann_dwblock_scratch(&a) * 4, 4);
        a.tile = kt_tile(&k, a.h_out);
        kann_bounds bd = {(k.arena.used + 63) / 64 * 64, (k.consts.used + 63) / 64 * 64};
        kann_error err;
        if (kann_dwblock_validate(&a, &bd, &err) != KANN_OK)
            fail_msg("dwblock arguments refused: %s", err.message);
        kt_preset_scratch(&k, KANN_KERNEL_F32_DWBLOCK, &a, a.y, out);
        kt_run(&k, KANN_KERNEL_F32_DWBLOCK, &a, sizeof a, 0);
        kt_free(&k);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

static void test_dwblock_cpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    dwblock_cases(CL_DEVICE_TYPE_CPU);
}

static void test_dwblock_gpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    dwblock_cases(CL_DEVICE_TYPE_GPU);
}

/* A tap table of rows x taps (index, weight) pairs; indices outside [0, n) now and then. */
static kann_ref tap_table(kt *k, uint32_t rows, uint32_t taps, uint32_t n, int outside) {
    kann_ref r = kt_alloc(k, (int)kt_range(k, 0, 1), (size_t)rows * taps * 8, 4);
    kann_resize_tap *t = (kann_resize_tap *)(void *)kt_ptr(k, r);
    for (size_t i = 0; i < (size_t)rows * taps; i++) {
        t[i].index = outside && kt_range(k, 0, 9) == 0
                         ? (int32_t)kt_range(k, 0, 1) * (int32_t)(n + 1) - 1
                         : (int32_t)kt_range(k, 0, n - 1);
        t[i].weight = kt_float(k, -0.5f, 1.0f);
    }
    return r;
}

static void test_resize(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 2300 + seed);
        kann_resize_args a;
        memset(&a, 0, sizeof a);
        a.planes = kt_range(&k, 1, 3);
        a.h_in = kt_range(&k, 1, 5);
        a.w_in = kt_range(&k, 1, 5);
        a.h_out = kt_range(&k, 1, 7);
        a.w_out = kt_range(&k, 1, 7);
        a.taps_h = kt_range(&k, 1, 4);
        a.taps_w = kt_range(&k, 1, 4);
        a.extrapolation = kt_float(&k, -1.0f, 1.0f);
        int outside = seed % 3 == 0;
        a.table_h = tap_table(&k, a.h_out, a.taps_h, a.h_in, outside);
        a.table_w = tap_table(&k, a.w_out, a.taps_w, a.w_in, outside);
        a.x = kt_input_f32(&k, (size_t)a.planes * a.h_in * a.w_in, -2.0f, 2.0f);
        a.y = kt_output(&k, (size_t)a.planes * a.h_out * a.w_out * 4, 4);
        a.tile = kt_tile(&k, a.planes);
        kt_run(&k, KANN_KERNEL_F32_RESIZE, &a, sizeof a, 0);
        kt_free(&k);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_transpose), cmocka_unit_test(test_conv_nd),
        cmocka_unit_test(test_pool_nd),        cmocka_unit_test(test_pool2d_cpu),
        cmocka_unit_test(test_pool2d_gpu),     cmocka_unit_test(test_resize),
        cmocka_unit_test(test_conv2d_maxpool), cmocka_unit_test(test_dwblock_cpu),
        cmocka_unit_test(test_dwblock_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
