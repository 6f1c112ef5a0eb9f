/* The OpenCL f32_binary, f32_transpose, f32_channel_affine and f32_copy kernels, in both kernel
 * styles, against the reference kernels on random shapes: ranks 1-5, rows (the innermost
 * dimension) of ragged lengths around the CPU style's 16-lane chunks, operands broadcast along
 * any dimensions (the innermost too: a stride of 0), every float op and activation,
 * permutations that keep or move the innermost dimension, tiles that start and end inside a
 * row, planes and copied rows shorter and longer than a vector (PoCL in CI). Skipped without
 * an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 40

/* A random shape of rank 1..5 of at most about 6000 elements, its innermost dimension up to
 * max_row; returns the element count. */
static size_t random_shape(kt *k, uint32_t *rank, uint32_t *dims, uint32_t max_row) {
    size_t count = 1;
    *rank = kt_range(k, 1, 5);
    for (uint32_t d = 0; d < *rank; d++) {
        uint32_t hi = d + 1 == *rank ? max_row : 6;
        dims[d] = kt_range(k, 1, count * hi > 6000 ? 1 : hi);
        count *= dims[d];
    }
    return count;
}

/* Dense strides of an operand broadcast along the dimensions it drops (stride 0); its element
 * count. */
static size_t broadcast_strides(kt *k, uint32_t rank, const uint32_t *dims, uint32_t *strides) {
    size_t size = 1;
    for (int d = (int)rank - 1; d >= 0; d--) {
        if (dims[d] > 1 && kt_range(k, 0, 3) == 0) {
            strides[d] = 0;
            continue;
        }
        strides[d] = (uint32_t)size;
        size *= dims[d];
    }
    return size;
}

static const uint32_t float_ops[] = {KANN_BINARY_ADD, KANN_BINARY_SUB,  KANN_BINARY_MUL,
                                     KANN_BINARY_DIV, KANN_BINARY_POW,  KANN_BINARY_MAX,
                                     KANN_BINARY_MIN, KANN_BINARY_FMOD, KANN_BINARY_PRELU};

static void binary_case(uint64_t seed, uint32_t max_row) {
    kt k;
    kt_init(&k, seed);
    kann_binary_args a;
    memset(&a, 0, sizeof a);
    size_t count = random_shape(&k, &a.rank, a.dims, max_row);
    a.op = float_ops[kt_range(&k, 0, sizeof float_ops / sizeof float_ops[0] - 1)];
    size_t a_size = broadcast_strides(&k, a.rank, a.dims, a.a_strides);
    size_t b_size = broadcast_strides(&k, a.rank, a.dims, a.b_strides);
    a.a = kt_input_f32(&k, a_size, -2.0f, 2.0f);
    a.b = kt_input_f32(&k, b_size, 0.25f, 2.0f); /* divisors and exponents away from 0 */
    a.y = kt_output(&k, count * 4, 4);
    a.act.kind = kt_range(&k, 0, KANN_ACT_COUNT - 1);
    a.act.alpha = kt_float(&k, 0.2f, 1.2f);
    a.act.beta = a.act.alpha + kt_float(&k, 0.5f, 2.0f);
    a.tile = kt_tile(&k, (uint32_t)count);
    kt_run(&k, KANN_KERNEL_F32_BINARY, &a, sizeof a, 0);
    kt_free(&k);
}

static void transpose_case(uint64_t seed, uint32_t max_row) {
    kt k;
    kt_init(&k, seed);
    kann_transpose_args a;
    memset(&a, 0, sizeof a);
    uint32_t x_dims[KANN_MAX_RANK], perm[KANN_MAX_RANK], x_strides[KANN_MAX_RANK];
    size_t count = random_shape(&k, &a.rank, x_dims, max_row), size = 1;
    for (int d = (int)a.rank - 1; d >= 0; d--) {
        x_strides[d] = (uint32_t)size;
        size *= x_dims[d];
    }
    for (uint32_t d = 0; d < a.rank; d++)
        perm[d] = d;
    if (kt_range(&k, 0, 2)) /* else the innermost dimension stays: vector loads */
        for (uint32_t d = a.rank - 1; d > 0; d--) {
            uint32_t j = kt_range(&k, 0, d), t = perm[d];
            perm[d] = perm[j];
            perm[j] = t;
        }
    for (uint32_t d = 0; d < a.rank; d++) {
        a.dims[d] = x_dims[perm[d]];
        a.x_strides[d] = x_strides[perm[d]];
    }
    a.x = kt_input_f32(&k, count, -2.0f, 2.0f);
    a.y = kt_output(&k, count * 4, 4);
    a.tile = kt_tile(&k, (uint32_t)count);
    kt_run(&k, KANN_KERNEL_F32_TRANSPOSE, &a, sizeof a, 1);
    kt_free(&k);
}

/* planes of `inner` elements (shorter and longer than a vector), scale and shift per channel;
 * in place a third of the time */
static void channel_affine_case(uint64_t seed) {
    kt k;
    kt_init(&k, seed);
    kann_channel_affine_args a;
    memset(&a, 0, sizeof a);
    a.channels = kt_range(&k, 1, 7);
    a.planes = a.channels * kt_range(&k, 1, 3);
    a.inner = kt_range(&k, 1, 60);
    size_t count = (size_t)a.planes * a.inner;
    a.x = kt_input_f32(&k, count, -2.0f, 2.0f);
    a.scale = kt_input_f32(&k, a.channels, -2.0f, 2.0f);
    a.shift = kt_input_f32(&k, a.channels, -1.0f, 1.0f);
    a.y = a.x.space == KANN_SPACE_ARENA && kt_range(&k, 0, 2) == 0 ? a.x
                                                                   : kt_output(&k, count * 4, 4);
    a.act.kind = kt_range(&k, 0, KANN_ACT_COUNT - 1);
    a.act.alpha = kt_float(&k, 0.2f, 1.2f);
    a.act.beta = a.act.alpha + kt_float(&k, 0.5f, 2.0f);
    a.tile = kt_tile(&k, a.planes);
    kt_run(&k, KANN_KERNEL_F32_CHANNEL_AFFINE, &a, sizeof a, 0);
    kt_free(&k);
}

/* rows of a block into a wider matrix (a concatenation), rows shorter and longer than a
 * vector */
static void copy_case(uint64_t seed) {
    kt k;
    kt_init(&k, seed);
    kann_copy_args a;
    memset(&a, 0, sizeof a);
    a.rows = kt_range(&k, 1, 40);
    a.row_len = kt_range(&k, 1, 70);
    a.x_stride = a.row_len + kt_range(&k, 0, 5);
    a.y_stride = a.row_len + kt_range(&k, 0, 20);
    a.x = kt_input_f32(&k, (size_t)a.rows * a.x_stride, -2.0f, 2.0f);
    a.y = kt_output(&k, (size_t)a.rows * a.y_stride * 4, 4);
    a.tile = kt_tile(&k, a.rows);
    kt_run(&k, KANN_KERNEL_F32_COPY, &a, sizeof a, 1);
    kt_free(&k);
}

static void run_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < CASES; seed++) {
        binary_case(8100 + seed, 40);
        binary_case(8500 + seed, 3); /* rows shorter than a vector */
        transpose_case(8900 + seed, 40);
        channel_affine_case(9300 + seed);
        copy_case(9700 + seed);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

/* The CPU kernel style: bands of rows, 16 elements at a time.
 * The GPU style: one work-item per element. */
KT_BOTH_STYLES_MAIN(eltwise, run_cases)
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
