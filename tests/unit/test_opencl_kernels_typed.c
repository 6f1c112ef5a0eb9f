/* The OpenCL unary, binary_typed, ternary and cast kernels against the reference kernels for
 * every dtype and op they take, on random shapes with broadcasting, tiles, and values that
 * include NaN, infinities, halves, out-of-range floats and extreme integers (PoCL in CI).
 * Skipped without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 24

static const uint32_t dtypes[] = {KANN_DTYPE_F32, KANN_DTYPE_U8,  KANN_DTYPE_I8,
                                  KANN_DTYPE_I32, KANN_DTYPE_I64, KANN_DTYPE_BOOL};

static uint32_t size_of(uint32_t dtype) {
    return dtype == KANN_DTYPE_F32 || dtype == KANN_DTYPE_I32 ? 4 : dtype == KANN_DTYPE_I64 ? 8 : 1;
}

/* Floats with the awkward cases mixed in: NaN, infinities, signed zeros, halves, values past
 * every integer range; the rest uniform in [-range, range]. */
static void fill_special_f32(kt *k, kann_ref r, size_t n, float range) {
    static const float special[] = {0.0f,   -0.0f,  0.5f, -0.5f, 1.5f,  -2.5f,  2.5f,
                                    255.7f, -129.f, 3e9f, -3e9f, 1e19f, -1e19f, 127.5f};
    float *p = (float *)(void *)kt_ptr(k, r);
    for (size_t i = 0; i < n; i++) {
        uint32_t pick = kt_range(k, 0, 9);
        if (pick == 0)
            p[i] = special[kt_range(k, 0, sizeof special / sizeof special[0] - 1)];
        else if (pick == 1)
            p[i] = kt_range(k, 0, 2) == 0 ? NAN : kt_range(k, 0, 1) ? INFINITY : -INFINITY;
        else
            p[i] = kt_float(k, -range, range);
    }
}

/* Integers: random bits (the arena's garbage) with the extreme values mixed in; bools 0 or 1. */
static void fill_int(kt *k, kann_ref r, size_t n, uint32_t dtype) {
    uint8_t *p = kt_ptr(k, r);
    for (size_t i = 0; i < n; i++) {
        if (dtype == KANN_DTYPE_BOOL) {
            p[i] = (uint8_t)kt_range(k, 0, 1);
        } else if (dtype == KANN_DTYPE_I64) {
            int64_t v = kt_range(k, 0, 7) == 0 ? INT64_MIN
                        : kt_range(k, 0, 3) == 0
                            ? (int64_t)kt_range(k, 0, 12) - 6
                            : (int64_t)(((uint64_t)kt_rand(k) << 32) ^ kt_rand(k));
            memcpy(p + i * 8, &v, 8);
        } else if (dtype == KANN_DTYPE_I32) {
            int32_t v = kt_range(k, 0, 7) == 0   ? INT32_MIN
                        : kt_range(k, 0, 3) == 0 ? (int32_t)kt_range(k, 0, 12) - 6
                                                 : (int32_t)kt_rand(k);
            memcpy(p + i * 4, &v, 4);
        } else {
            p[i] = kt_range(k, 0, 3) == 0 ? (uint8_t)kt_range(k, 0, 9) : (uint8_t)kt_rand(k);
        }
    }
}

static kann_ref typed_input(kt *k, size_t n, uint32_t dtype, float range) {
    kann_ref r = kt_alloc(k, (int)kt_range(k, 0, 1), n * size_of(dtype), size_of(dtype));
    if (dtype == KANN_DTYPE_F32)
        fill_special_f32(k, r, n, range);
    else
        fill_int(k, r, n, dtype);
    return r;
}

/* unary in one kernel style: float ops of float results run in bands 16 lanes at a time on
 * CPU devices (unary_f32_band), one work-item per element otherwise. */
static void unary_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < 12 * CASES; seed++) {
        kt k;
        kt_init(&k, 3000 + seed);
        kann_unary_args a;
        memset(&a, 0, sizeof a);
        a.dtype = dtypes[seed % 6];
        if (a.dtype == KANN_DTYPE_F32)
            a.op = (uint32_t)(seed / 6 % (KANN_UNARY_NOT)); /* every float op in turn */
        else
            a.op = a.dtype == KANN_DTYPE_BOOL ? KANN_UNARY_NOT : kt_range(&k, 0, 2);
        if (a.op == KANN_UNARY_IS_INF) a.flags = kt_range(&k, 0, 3);
        int to_bool = a.op == KANN_UNARY_IS_NAN || a.op == KANN_UNARY_IS_INF;
        a.count = kt_range(&k, 1, 200);
        a.x = typed_input(&k, a.count, a.dtype, 4.0f);
        uint32_t ys = to_bool ? 1 : size_of(a.dtype);
        a.y = !to_bool && kt_range(&k, 0, 3) == 0 && a.x.space == KANN_SPACE_ARENA
                  ? a.x
                  : kt_output(&k, (size_t)a.count * ys, ys);
        a.tile = kt_tile(&k, a.count);
        kt_run(&k, KANN_KERNEL_UNARY, &a, sizeof a, a.dtype != KANN_DTYPE_F32 || to_bool);
        kt_free(&k);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

static void test_unary(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    unary_cases(CL_DEVICE_TYPE_CPU);
    unary_cases(CL_DEVICE_TYPE_GPU);
}

/* A broadcast view of dims: dense strides with some dims zeroed; returns its extent. */
static size_t broadcast_strides(kt *k, uint32_t rank, const uint32_t *dims, uint32_t *strides) {
    size_t s = 1, extent = 1;
    for (uint32_t d = rank; d-- > 0;) {
        strides[d] = kt_range(k, 0, 3) == 0 ? 0 : (uint32_t)s;
        if (strides[d]) s *= dims[d];
        extent += (size_t)(dims[d] - 1) * strides[d];
    }
    return extent;
}

static uint32_t random_shape(kt *k, uint32_t *rank, uint32_t *dims) {
    *rank = kt_range(k, 1, 4);
    uint32_t n = 1;
    for (uint32_t d = 0; d < *rank; d++)
        n *= dims[d] = kt_range(k, 1, 5);
    return n;
}

/* The ops binary_typed takes on dtype. */
static uint32_t binary_op_for(kt *k, uint32_t dtype) {
    static const uint32_t bool_ops[] = {KANN_BINARY_AND, KANN_BINARY_OR, KANN_BINARY_XOR,
                                        KANN_BINARY_EQUAL};
    if (dtype == KANN_DTYPE_F32)
        return kt_range(k, KANN_BINARY_EQUAL, KANN_BINARY_GREATER_OR_EQUAL);
    if (dtype == KANN_DTYPE_BOOL) return bool_ops[kt_range(k, 0, 3)];
    uint32_t op = kt_range(k, 0, KANN_BINARY_GREATER_OR_EQUAL);
    if (op == KANN_BINARY_PRELU) op = KANN_BINARY_EQUAL;
    if (dtype == KANN_DTYPE_U8 && kt_range(k, 0, 4) == 0)
        op = kt_range(k, KANN_BINARY_SHIFT_LEFT, KANN_BINARY_SHIFT_RIGHT);
    return op;
}

static void test_binary_typed(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 8 * CASES; seed++) {
        kt k;
        kt_init(&k, 3100 + seed);
        kann_binary_typed_args a;
        memset(&a, 0, sizeof a);
        a.dtype = dtypes[seed % 6];
        a.op = binary_op_for(&k, a.dtype);
        uint32_t n = random_shape(&k, &a.rank, a.dims);
        size_t a_ext = broadcast_strides(&k, a.rank, a.dims, a.a_strides);
        size_t b_ext = broadcast_strides(&k, a.rank, a.dims, a.b_strides);
        a.a = typed_input(&k, a_ext, a.dtype, 2.0f);
        a.b = typed_input(&k, b_ext, a.dtype, 2.0f);
        if (a.dtype == KANN_DTYPE_F32 && kt_range(&k, 0, 1)) { /* ties */
            float *p = (float *)(void *)kt_ptr(&k, a.a), *q = (float *)(void *)kt_ptr(&k, a.b);
            for (size_t i = 0; i < a_ext; i++)
                p[i] = floorf(p[i]);
            for (size_t i = 0; i < b_ext; i++)
                q[i] = floorf(q[i]);
        }
        int to_bool = (a.op >= KANN_BINARY_EQUAL && a.op <= KANN_BINARY_GREATER_OR_EQUAL) ||
                      a.dtype == KANN_DTYPE_BOOL;
        uint32_t ys = to_bool ? 1 : size_of(a.dtype);
        a.y = kt_output(&k, (size_t)n * ys, ys);
        a.tile = kt_tile(&k, n);
        kt_run(&k, KANN_KERNEL_BINARY_TYPED, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_ternary(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 4 * CASES; seed++) {
        kt k;
        kt_init(&k, 3200 + seed);
        kann_ternary_args a;
        memset(&a, 0, sizeof a);
        a.dtype = dtypes[seed % 6];
        a.op = a.dtype == KANN_DTYPE_BOOL ? KANN_TERNARY_WHERE : (uint32_t)(seed / 6 % 2);
        uint32_t n = random_shape(&k, &a.rank, a.dims);
        size_t a_ext = broadcast_strides(&k, a.rank, a.dims, a.a_strides);
        size_t b_ext = broadcast_strides(&k, a.rank, a.dims, a.b_strides);
        size_t c_ext = broadcast_strides(&k, a.rank, a.dims, a.c_strides);
        a.a = typed_input(&k, a_ext, a.op == KANN_TERNARY_WHERE ? KANN_DTYPE_BOOL : a.dtype, 3.0f);
        a.b = typed_input(&k, b_ext, a.dtype, 2.0f);
        a.c = typed_input(&k, c_ext, a.dtype, 2.0f);
        a.y = kt_output(&k, (size_t)n * size_of(a.dtype), size_of(a.dtype));
        a.tile = kt_tile(&k, n);
        kt_run(&k, KANN_KERNEL_TERNARY, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_cast(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 36 * 3; seed++) { /* every (from, to) pair, three times */
        kt k;
        kt_init(&k, 3300 + seed);
        kann_cast_args a;
        memset(&a, 0, sizeof a);
        a.from = dtypes[seed % 6];
        a.to = dtypes[seed / 6 % 6];
        a.count = kt_range(&k, 1, 300);
        a.x = typed_input(&k, a.count, a.from, 300.0f);
        a.y = kt_output(&k, (size_t)a.count * size_of(a.to), size_of(a.to));
        a.tile = kt_tile(&k, a.count);
        kt_run(&k, KANN_KERNEL_CAST, &a, sizeof a, 1);
        kt_free(&k);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary_typed),
        cmocka_unit_test(test_ternary),
        cmocka_unit_test(test_cast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
