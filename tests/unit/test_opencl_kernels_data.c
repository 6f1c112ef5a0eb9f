/* The OpenCL data-movement kernels (strided_copy, gather, gather_elements, gather_nd,
 * scatter_elements, scatter_nd, trilu, pad, f32_pad2d) against the reference kernels on random
 * shapes, element sizes, index sizes, indices (negative and out of range), tiles and reductions
 * (PoCL in CI). Skipped without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 32

static uint32_t random_elem_size(kt *k) {
    return 1u << kt_range(k, 0, 3);
}

/* n indices of idx_size bytes at r, uniform in [lo, hi]. */
static void fill_index(kt *k, kann_ref r, size_t n, uint32_t idx_size, int64_t lo, int64_t hi) {
    uint8_t *p = kt_ptr(k, r);
    for (size_t i = 0; i < n; i++) {
        int64_t v = lo + (int64_t)(kt_rand(k) % (uint64_t)(hi - lo + 1));
        if (idx_size == 4) {
            int32_t v32 = (int32_t)v;
            memcpy(p + i * 4, &v32, 4);
        } else {
            memcpy(p + i * 8, &v, 8);
        }
    }
}

static kann_ref index_input(kt *k, size_t n, uint32_t idx_size, int64_t lo, int64_t hi) {
    kann_ref r = kt_alloc(k, (int)kt_range(k, 0, 1), n * idx_size, idx_size);
    fill_index(k, r, n, idx_size, lo, hi);
    return r;
}

/* Dense row-major strides of dims visited in a random order. */
static void permuted_strides(kt *k, uint32_t rank, const uint32_t *dims, int64_t *strides) {
    uint32_t order[KANN_MAX_RANK];
    for (uint32_t d = 0; d < rank; d++)
        order[d] = d;
    for (uint32_t d = rank; d-- > 1;) {
        uint32_t j = kt_range(k, 0, d), t = order[d];
        order[d] = order[j];
        order[j] = t;
    }
    int64_t s = 1;
    for (uint32_t i = rank; i-- > 0;) {
        strides[order[i]] = s;
        s *= dims[order[i]];
    }
}

/* Random signs on the strides; the base moves so that every element stays at or above it. */
static int64_t flip_strides(kt *k, uint32_t rank, const uint32_t *dims, int64_t *strides) {
    int64_t base = 0;
    for (uint32_t d = 0; d < rank; d++)
        if (kt_range(k, 0, 2) == 0) {
            base += (int64_t)(dims[d] - 1) * strides[d];
            strides[d] = -strides[d];
        }
    return base;
}

static void test_strided_copy(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1000 + seed);
        kann_strided_copy_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.rank = kt_range(&k, 1, 4);
        size_t n = 1;
        for (uint32_t d = 0; d < a.rank; d++)
            n *= a.dims[d] = kt_range(&k, 1, 5);
        permuted_strides(&k, a.rank, a.dims, a.x_strides);
        a.x_base = flip_strides(&k, a.rank, a.dims, a.x_strides);
        for (uint32_t d = 0; d < a.rank; d++) /* broadcast reads */
            if (kt_range(&k, 0, 4) == 0) a.x_strides[d] = 0;
        permuted_strides(&k, a.rank, a.dims, a.y_strides);
        a.y_base = flip_strides(&k, a.rank, a.dims, a.y_strides);
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), n * a.elem_size, a.elem_size);
        a.y = kt_output(&k, n * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, (uint32_t)n);
        kt_run(&k, KANN_KERNEL_STRIDED_COPY, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_gather(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1100 + seed);
        kann_gather_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.idx_size = kt_range(&k, 0, 1) ? 8 : 4;
        a.outer = kt_range(&k, 1, 3);
        a.axis_len = kt_range(&k, 1, 5);
        a.n_indices = kt_range(&k, 1, 5);
        a.inner = kt_range(&k, 1, 4);
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1),
                       (size_t)a.outer * a.axis_len * a.inner * a.elem_size, a.elem_size);
        a.idx = index_input(&k, a.n_indices, a.idx_size, -(int64_t)a.axis_len - 1, a.axis_len);
        a.y = kt_output(&k, (size_t)a.outer * a.n_indices * a.inner * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, a.outer * a.n_indices);
        kt_run(&k, KANN_KERNEL_GATHER, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_gather_elements(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1200 + seed);
        kann_gather_elements_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.idx_size = kt_range(&k, 0, 1) ? 8 : 4;
        a.rank = kt_range(&k, 1, 3);
        a.axis = kt_range(&k, 0, a.rank - 1);
        a.axis_len = kt_range(&k, 1, 5);
        uint32_t x_dims[KANN_MAX_RANK];
        size_t n = 1, x_n = 1;
        for (uint32_t d = 0; d < a.rank; d++) {
            n *= a.dims[d] = kt_range(&k, 1, 4);
            x_n *= x_dims[d] = d == a.axis ? a.axis_len : a.dims[d];
        }
        for (uint32_t d = a.rank, s = 1; d-- > 0; s *= x_dims[d])
            a.x_strides[d] = s;
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), x_n * a.elem_size, a.elem_size);
        a.idx = index_input(&k, n, a.idx_size, -(int64_t)a.axis_len - 1, a.axis_len);
        a.y = kt_output(&k, n * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, (uint32_t)n);
        kt_run(&k, KANN_KERNEL_GATHER_ELEMENTS, &a, sizeof a, 1);
        kt_free(&k);
    }
}

/* An nd_index problem: k index dims of data followed by a slice; dense strides, or (overlap)
 * small arbitrary strides whose slices overlap. Returns the data size in elements. */
static size_t nd_shape(kt *k, kann_nd_index_args *a, int overlap) {
    a->k = kt_range(k, 1, 3);
    a->slice_len = kt_range(k, 1, 5);
    size_t s = a->slice_len;
    for (uint32_t j = a->k; j-- > 0;) {
        a->dims[j] = kt_range(k, 1, 4);
        a->strides[j] = overlap ? kt_range(k, 1, 3) : (uint32_t)s;
        s *= a->dims[j];
    }
    size_t reach = a->slice_len;
    for (uint32_t j = 0; j < a->k; j++)
        reach += (size_t)(a->dims[j] - 1) * a->strides[j];
    return reach;
}

static void test_gather_nd(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1300 + seed);
        kann_gather_nd_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.idx_size = kt_range(&k, 0, 1) ? 8 : 4;
        size_t block = nd_shape(&k, &a, 0);
        a.batches = kt_range(&k, 1, 2);
        a.batch_stride = (uint32_t)block;
        a.n_tuples = a.batches * kt_range(&k, 1, 4);
        a.src = kt_alloc(&k, (int)kt_range(&k, 0, 1), a.batches * block * a.elem_size, a.elem_size);
        a.idx = index_input(&k, (size_t)a.n_tuples * a.k, a.idx_size, -5, 4);
        a.dst = kt_output(&k, (size_t)a.n_tuples * a.slice_len * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, a.n_tuples);
        kt_run(&k, KANN_KERNEL_GATHER_ND, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_scatter_nd(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1400 + seed);
        kann_scatter_nd_args a;
        memset(&a, 0, sizeof a);
        a.reduction = (uint32_t)(seed % KANN_SCATTER_COUNT);
        a.elem_size = a.reduction ? 4 : random_elem_size(&k);
        a.idx_size = kt_range(&k, 0, 1) ? 8 : 4;
        size_t data = nd_shape(&k, &a, seed % 3 == 2); /* every third: overlapping slices */
        a.batches = 1;
        a.n_tuples = kt_range(&k, 1, 6); /* with few index values: duplicates */
        a.dst = kt_output(&k, data * a.elem_size, a.elem_size);
        a.src = kt_alloc(&k, (int)kt_range(&k, 0, 1),
                         (size_t)a.n_tuples * a.slice_len * a.elem_size, a.elem_size);
        if (a.reduction) {
            kt_fill_f32(&k, a.dst, data, -2.0f, 2.0f);
            kt_fill_f32(&k, a.src, (size_t)a.n_tuples * a.slice_len, -2.0f, 2.0f);
        }
        a.idx = index_input(&k, (size_t)a.n_tuples * a.k, a.idx_size, -3, 3);
        a.tile = kt_tile(&k, 1);
        kt_run(&k, KANN_KERNEL_SCATTER_ND, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_scatter_elements(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1500 + seed);
        kann_scatter_elements_args a;
        memset(&a, 0, sizeof a);
        a.reduction = (uint32_t)(seed % KANN_SCATTER_COUNT);
        a.elem_size = a.reduction ? 4 : random_elem_size(&k);
        a.idx_size = kt_range(&k, 0, 1) ? 8 : 4;
        a.rank = kt_range(&k, 1, 3);
        a.axis = kt_range(&k, 0, a.rank - 1);
        a.axis_len = kt_range(&k, 1, 5);
        uint32_t y_dims[KANN_MAX_RANK];
        size_t n = 1, y_n = 1;
        for (uint32_t d = 0; d < a.rank; d++) {
            n *= a.dims[d] = kt_range(&k, 1, 4);
            y_n *= y_dims[d] = d == a.axis ? a.axis_len : a.dims[d];
        }
        for (uint32_t d = a.rank, s = 1; d-- > 0; s *= y_dims[d])
            a.y_strides[d] = s;
        a.y = kt_output(&k, y_n * a.elem_size, a.elem_size);
        a.updates = kt_alloc(&k, (int)kt_range(&k, 0, 1), n * a.elem_size, a.elem_size);
        if (a.reduction) {
            kt_fill_f32(&k, a.y, y_n, -2.0f, 2.0f);
            kt_fill_f32(&k, a.updates, n, -2.0f, 2.0f);
        }
        a.idx = index_input(&k, n, a.idx_size, -(int64_t)a.axis_len - 1, a.axis_len);
        a.tile = kt_tile(&k, 1);
        kt_run(&k, KANN_KERNEL_SCATTER_ELEMENTS, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_trilu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < CASES; seed++) {
        kt k;
        kt_init(&k, 1600 + seed);
        kann_trilu_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.upper = kt_range(&k, 0, 1);
        a.batch = kt_range(&k, 1, 3);
        a.rows = kt_range(&k, 1, 5);
        a.cols = kt_range(&k, 1, 6);
        a.k = (int64_t)kt_range(&k, 0, 16) - 8;
        if (kt_range(&k, 0, 2) == 0) {
            a.k_ref = index_input(&k, 1, 8, -9, 9);
        } else if (kt_range(&k, 0, 5) == 0) {
            a.k = kt_range(&k, 0, 1) ? INT64_MAX : INT64_MIN; /* clamped, not overflowed */
        }
        size_t n = (size_t)a.batch * a.rows * a.cols;
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), n * a.elem_size, a.elem_size);
        a.y = kt_output(&k, n * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, a.batch * a.rows);
        kt_run(&k, KANN_KERNEL_TRILU, &a, sizeof a, 1);
        kt_free(&k);
    }
}

static void test_pad(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    for (uint64_t seed = 0; seed < 2 * CASES; seed++) {
        kt k;
        kt_init(&k, 1700 + seed);
        kann_pad_args a;
        memset(&a, 0, sizeof a);
        a.elem_size = random_elem_size(&k);
        a.rank = kt_range(&k, 1, 3);
        a.mode = (uint32_t)(seed % KANN_PAD_COUNT);
        size_t n = 1, x_n = 1, rows = 1;
        for (uint32_t d = 0; d < a.rank; d++) {
            a.x_dims[d] = kt_range(&k, a.mode == KANN_PAD_CONSTANT ? 0 : 1, 4);
            a.pad_begin[d] = (int64_t)kt_range(&k, 0, 9) - 2;
            int64_t end = (int64_t)kt_range(&k, 0, 9) - 2;
            int64_t dim = (int64_t)a.x_dims[d] + a.pad_begin[d] + end;
            a.dims[d] = dim < 0 ? 0 : (uint32_t)dim;
            n *= a.dims[d];
            x_n *= a.x_dims[d];
            if (d + 1 < a.rank) rows *= a.dims[d];
        }
        a.value = ((uint64_t)kt_rand(&k) << 32) | kt_rand(&k);
        a.x = kt_alloc(&k, (int)kt_range(&k, 0, 1), x_n * a.elem_size, a.elem_size);
        a.y = kt_output(&k, n * a.elem_size, a.elem_size);
        a.tile = kt_tile(&k, (uint32_t)rows);
        kt_run(&k, KANN_KERNEL_PAD, &a, sizeof a, 1);
        kt_free(&k);
    }
}

/* f32_pad2d in the kernel style of kt_style: padded or cropped planes, rows shorter and
 * longer than the CPU style's 16-float runs, tiles of rows. */
static void pad2d_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < 2 * CASES; seed++) {
        kt k;
        kt_init(&k, 1800 + seed);
        uint32_t wide = seed % 2 ? 60 : 6; /* the runs of a row go 16 floats at a time */
        kann_pad2d_args a;
        memset(&a, 0, sizeof a);
        a.c = kt_range(&k, 1, 3);
        a.h_in = kt_range(&k, 0, seed % 8 == 7 ? 100 : 5);
        a.w_in = kt_range(&k, 0, wide);
        /* padded, or cropped; now and then enough rows for several bands (CPU style) */
        a.h_out = kt_range(&k, 1, seed % 8 == 7 ? 120 : 8);
        a.w_out = kt_range(&k, 1, wide + 3);
        a.pad_top = kt_range(&k, 0, 3);
        a.pad_left = kt_range(&k, 0, seed % 3 ? 3 : 20);
        a.x = kt_input_f32(&k, (size_t)a.c * a.h_in * a.w_in, -2.0f, 2.0f);
        a.y = kt_output(&k, (size_t)a.c * a.h_out * a.w_out * 4, 4);
        a.tile = kt_tile(&k, a.c * a.h_out);
        kt_run(&k, KANN_KERNEL_F32_PAD2D, &a, sizeof a, 1);
        kt_free(&k);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

/* Bands of rows per work-item, 16-float vector runs. */
static void test_pad2d_cpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    pad2d_cases(CL_DEVICE_TYPE_CPU);
}

/* One work-item per output element. */
static void test_pad2d_gpu(void **state) {
    (void)state;
    KT_NEED_DEVICE();
    pad2d_cases(CL_DEVICE_TYPE_GPU);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pad2d_cpu),       cmocka_unit_test(test_pad2d_gpu),
        cmocka_unit_test(test_strided_copy),    cmocka_unit_test(test_gather),
        cmocka_unit_test(test_gather_elements), cmocka_unit_test(test_gather_nd),
        cmocka_unit_test(test_scatter_nd),      cmocka_unit_test(test_scatter_elements),
        cmocka_unit_test(test_trilu),           cmocka_unit_test(test_pad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
