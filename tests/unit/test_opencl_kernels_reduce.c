/* The OpenCL f32_reduce, f32_norm, f32_hardmax, f32_lrn, f32_nll_loss and f32_pointwise_gap
 * kernels against the reference kernels on random shapes, tiles, parameters and activations (PoCL in CI). Skipped
 * without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 24

/* A random activation the validator accepts (CLIP: alpha < beta; CELU: alpha != 0). */
static kann_act random_act(kt *k) {
    kann_act a = {kt_range(k, 0, KANN_ACT_COUNT - 1), kt_float(k, 0.2f, 1.2f), 0.0f, 0};
    a.beta = a.alpha + kt_float(k, 0.5f, 2.0f);
    return a;
}

/* Values on a grid of halves half of the time, so that ties occur. */
static void fill_ties(kt *k, kann_ref r, size_t n, float lo, float hi) {
    kt_fill_f32(k, r, n, lo, hi);
    if (kt_range(k, 0, 1)) {
        float *p = (float *)(void *)kt_ptr(k, r);
        for (size_t i = 0; i < n; i++)
            p[i] = floorf(p[i] * 2.0f) * 0.5f;
    }
}

static void test_reduce(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 4 * CASES; seed++) {
        kt k;
        kt_init(&k, seed);
        kann_reduce_args a;
        memset(&a, 0, sizeof a);
        a.op = (uint32_t)(seed % KANN_REDUCE_COUNT);
        int arg = a.op == KANN_REDUCE_ARGMAX || a.op == KANN_REDUCE_ARGMIN;
        uint32_t rank = kt_range(&k, 1, 4), dims[4], strides[4];
        size_t n = 1;
        for (int d = (int)rank - 1; d >= 0; d--) {
            dims[d] = kt_range(&k, 1, d == (int)rank - 1 ? 12 : 5);
            strides[d] = (uint32_t)n;
            n *= dims[d];
        }
        /* which axes reduce: exactly one for the arg ops, a random non-empty set otherwise */
        uint32_t mask = arg ? 1u << kt_range(&k, 0, rank - 1) : kt_range(&k, 1, (1u << rank) - 1);
        for (uint32_t d = 0; d < rank; d++) {
            if (mask & (1u << d)) {
                a.red_dims[a.red_rank] = dims[d];
                a.red_strides[a.red_rank++] = strides[d];
            } else {
                a.out_dims[a.out_rank] = dims[d];
                a.out_strides[a.out_rank++] = strides[d];
            }
        }
        if (a.out_rank == 0) {
            a.out_dims[0] = 1;
            a.out_rank = 1;
        }
        size_t count = 1;
        for (uint32_t d = 0; d < a.out_rank; d++)
            count *= a.out_dims[d];
        float lo = a.op == KANN_REDUCE_PROD ? 0.7f : a.op == KANN_REDUCE_LOG_SUM ? 0.1f : -2.0f;
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), n * 4, 4);
        fill_ties(&k, a.x, n, lo, 1.3f);
        a.select_last = arg ? kt_range(&k, 0, 1) : 0;
        a.y = arg ? kt_output(&k, count * 8, 8) : kt_output(&k, count * 4, 4);
        a.tile = kt_tile(&k, (uint32_t)count);
        kt_run(&k, KANN_KERNEL_F32_REDUCE, &a, sizeof a, arg);
        kt_free(&k);
    }
}

static void test_norm(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 100 + seed);
        kann_norm_args a;
        memset(&a, 0, sizeof a);
        a.groups = kt_range(&k, 1, 6);
        a.len = kt_range(&k, 1, 40);
        a.param_groups = kt_range(&k, 1, a.groups);
        a.param_inner = kt_range(&k, 1, a.len);
        a.param_group_stride = kt_range(&k, 0, 2) * ((a.len - 1) / a.param_inner + 1);
        uint32_t n_params =
            (a.param_groups - 1) * a.param_group_stride + (a.len - 1) / a.param_inner + 1;
        a.x = kt_input_f32(&k, (size_t)a.groups * a.len, -3.0f, 3.0f);
        a.y = seed % 3 == 0 && a.x.space == KANN_SPACE_ARENA
                  ? a.x
                  : kt_output(&k, (size_t)a.groups * a.len * 4, 4);
        if (kt_range(&k, 0, 1)) a.scale = kt_input_f32(&k, n_params, 0.5f, 2.0f);
        if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, n_params, -1.0f, 1.0f);
        a.stats_given = kt_range(&k, 0, 1);
        if (a.stats_given) {
            a.mean = kt_input_f32(&k, n_params, -1.0f, 1.0f);
            a.var = kt_input_f32(&k, n_params, 0.1f, 2.0f);
        } else {
            if (kt_range(&k, 0, 1)) a.mean_out = kt_output(&k, a.groups * 4, 4);
            if (kt_range(&k, 0, 1)) a.inv_std_out = kt_output(&k, a.groups * 4, 4);
        }
        a.epsilon = 1e-5f;
        a.act = random_act(&k);
        a.tile = kt_tile(&k, a.groups);
        kt_run(&k, KANN_KERNEL_F32_NORM, &a, sizeof a, 0);
        kt_free(&k);
    }
}

static void test_hardmax(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 200 + seed);
        kann_softmax_args a;
        memset(&a, 0, sizeof a);
        a.outer = kt_range(&k, 1, 4);
        a.axis_len = kt_range(&k, 1, 9);
        a.inner = kt_range(&k, 1, 7);
        size_t n = (size_t)a.outer * a.axis_len * a.inner;
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), n * 4, 4);
        fill_ties(&k, a.x, n, -2.0f, 2.0f);
        a.y = seed % 2 && a.x.space == KANN_SPACE_ARENA ? a.x : kt_output(&k, n * 4, 4);
        a.tile = kt_tile(&k, a.outer);
        kt_run(&k, KANN_KERNEL_F32_HARDMAX, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_lrn(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 300 + seed);
        kann_lrn_args a;
        memset(&a, 0, sizeof a);
        a.n = kt_range(&k, 1, 2);
        a.c = kt_range(&k, 1, 9);
        a.inner = kt_range(&k, 1, 12);
        a.size = kt_range(&k, 1, 6);
        a.alpha = kt_float(&k, 1e-4f, 0.5f);
        a.beta = kt_float(&k, 0.5f, 1.0f);
        a.bias = kt_float(&k, 1.0f, 2.0f);
        size_t n = (size_t)a.n * a.c * a.inner;
        a.x = kt_input_f32(&k, n, -2.0f, 2.0f);
        a.y = kt_output(&k, n * 4, 4);
        a.tile = kt_tile(&k, a.n * a.c);
        kt_run(&k, KANN_KERNEL_F32_LRN, &a, sizeof a, 0);
        kt_free(&k);
    }
}

static void test_nll_loss(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 400 + seed);
        kann_nll_loss_args a;
        memset(&a, 0, sizeof a);
        a.n = kt_range(&k, 1, 3);
        a.c = kt_range(&k, 1, 6);
        a.inner = kt_range(&k, 1, 5);
        a.reduction = (uint32_t)(seed % KANN_LOSS_REDUCTION_COUNT);
        a.has_ignore = kt_range(&k, 0, 1);
        a.ignore_index = (int64_t)kt_range(&k, 0, a.c) - 1;
        size_t count = (size_t)a.n * a.inner;
        a.x = kt_input_f32(&k, count * a.c, -4.0f, 0.0f);
        a.target = kt_alloc(&k, (int)kt_range(&k, 0, 1), count * 8, 8);
        int64_t *t = (int64_t *)(void *)kt_ptr(&k, a.target);
        for (size_t i = 0; i < count; i++) /* mostly valid classes, sometimes out of range */
            t[i] = kt_range(&k, 0, 7) ? (int64_t)kt_range(&k, 0, a.c - 1)
                                      : (int64_t)kt_range(&k, 0, 2 * a.c + 2) - (int64_t)a.c - 1;
        if (kt_range(&k, 0, 1)) a.weight = kt_input_f32(&k, a.c, 0.1f, 2.0f);
        int none = a.reduction == KANN_LOSS_NONE;
        a.y = kt_output(&k, none ? count * 4 : 4, 4);
        a.tile = kt_tile(&k, none ? (uint32_t)count : 1);
        kt_run(&k, KANN_KERNEL_F32_NLL_LOSS, &a, sizeof a, 0);
        kt_free(&k);
    }
}

/* A 1x1 conv's activated outputs averaged over the pixels, in both kernel styles: ragged blocks
 * of 32 channels, with and without a bias, maps of more pixels than a GPU work-group has items,
 * tiles on whole blocks. */
static void test_pointwise_gap(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 2 * CASES; seed++) {
        kt_style = seed % 2 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_CPU;
        kt k;
        kt_init(&k, 500 + seed);
        kann_pointwise_gap_args a;
        memset(&a, 0, sizeof a);
        a.c_in = kt_range(&k, 1, 40);
        a.c_out = kt_range(&k, 1, 80);
        a.hw = kt_range(&k, 1, 150);
        a.act = random_act(&k);
        uint32_t blocks = (a.c_out + KANN_GAP_BLOCK - 1) / KANN_GAP_BLOCK;
        a.x = kt_input_f32(&k, (size_t)a.c_in * a.hw, -1.0f, 1.0f);
        a.w = kt_input_f32(&k, (size_t)blocks * a.c_in * KANN_GAP_BLOCK, -0.5f, 0.5f);
        if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
        a.y = kt_output(&k, (size_t)a.c_out * 4, 4);
        a.tile = kt_aligned_tile(&k, 0, a.c_out, KANN_GAP_BLOCK);
        kt_run(&k, KANN_KERNEL_F32_POINTWISE_GAP, &a, sizeof a, 0);
        kt_free(&k);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce),   cmocka_unit_test(test_norm),
        cmocka_unit_test(test_hardmax),  cmocka_unit_test(test_lrn),
        cmocka_unit_test(test_nll_loss), cmocka_unit_test(test_pointwise_gap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
