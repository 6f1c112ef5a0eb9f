/* The OpenCL f32_matmul kernels, in both kernel styles, against the reference kernel on random
 * shapes: the CPU style's blocks of 1, 2, 4 or 8 rows x 32 columns (rows of B contiguous, or
 * panels) with ragged last blocks, and the one-output-per-work-item kernel (B transposed: the
 * 8-way dot product, or any strides); batches, tiles of rows and of columns, A and B transposed,
 * bias broadcast along rows, columns or both, residual and every activation (PoCL in CI). Skipped
 * without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 24

/* B's layouts: rows contiguous ([K][N], the CPU style's f32_matmul_rows), transposed ([N][K],
 * the dot product), both strides past 1 (a column of a wider matrix) or panels of 64 columns
 * ([N / 64][K][64], rows padded to 80: wide constant weights; f32_matmul_rows where the tile
 * begins on a vector of columns, one output per work-item otherwise). */
enum { B_ROWS, B_TRANSPOSED, B_STRIDED, B_PANELS, B_KINDS };

static void matmul_case(uint64_t seed, int b_kind, uint32_t max_m, uint32_t max_n, uint32_t max_k) {
    kt k;
    kt_init(&k, seed);
    kann_matmul_args a;
    memset(&a, 0, sizeof a);
    a.batch = kt_range(&k, 1, 3);
    a.m = kt_range(&k, 1, max_m);
    a.n = kt_range(&k, 1, max_n);
    a.k = kt_range(&k, 1, max_k);
    /* A row-major or transposed, the batch packed or with a gap after each matrix */
    int ta = (int)kt_range(&k, 0, 1);
    a.a_row_stride = ta ? 1 : a.k;
    a.a_col_stride = ta ? a.m : 1;
    a.a_batch_stride = a.m * a.k + kt_range(&k, 0, 5);
    uint32_t wide = b_kind == B_STRIDED ? 2 : 1;
    a.b_row_stride = b_kind == B_ROWS ? a.n : b_kind == B_TRANSPOSED ? 1 : a.n * wide;
    a.b_col_stride = b_kind == B_ROWS ? 1 : b_kind == B_TRANSPOSED ? a.k : wide;
    a.b_batch_stride = a.k * a.n * wide + kt_range(&k, 0, 5);
    if (b_kind == B_PANELS) {
        a.b_row_stride = KANN_MATMUL_PANEL + 16;
        a.b_col_stride = 1;
        a.b_panel_stride = a.k * a.b_row_stride + kt_range(&k, 0, 5);
        a.b_batch_stride = (a.n + KANN_MATMUL_PANEL - 1) / KANN_MATMUL_PANEL * a.b_panel_stride;
    }
    a.a = kt_input_f32(&k, (size_t)a.batch * a.a_batch_stride, -1.0f, 1.0f);
    a.b = kt_input_f32(&k, (size_t)a.batch * a.b_batch_stride, -1.0f, 1.0f);
    a.alpha = kt_float(&k, 0.5f, 1.5f);
    a.beta = kt_float(&k, 0.5f, 1.5f);
    if (kt_range(&k, 0, 1)) { /* bias [m][n], [n] (rows broadcast), [m][1] or a scalar */
        uint32_t shape = kt_range(&k, 0, 3);
        a.bias_row_stride = shape == 0 ? a.n : shape == 2 ? 1 : 0;
        a.bias_col_stride = shape <= 1 ? 1 : 0;
        a.bias = kt_input_f32(&k, (size_t)a.m * a.n, -1.0f, 1.0f);
    }
    size_t out = (size_t)a.batch * a.m * a.n;
    if (kt_range(&k, 0, 1)) a.residual = kt_input_f32(&k, out, -1.0f, 1.0f);
    a.y = kt_output(&k, out * 4, 4);
    a.act.kind = kt_range(&k, 0, KANN_ACT_COUNT - 1);
    a.act.alpha = kt_float(&k, 0.2f, 1.2f);
    a.act.beta = a.act.alpha + kt_float(&k, 0.5f, 2.0f);
    uint32_t axis = kt_range(&k, 0, 1);
    a.tile = kt_tile(&k, axis ? a.n : a.m);
    a.tile.axis = axis;
    kt_run(&k, KANN_KERNEL_F32_MATMUL, &a, sizeof a, 0);
    kt_free(&k);
}

static void run_cases(cl_device_type style) {
    kt_style = style;
    for (uint64_t seed = 0; seed < CASES; seed++) {
        int kind = (int)(seed % B_KINDS);
        matmul_case(6100 + seed, kind, 20, 70, 40);  /* ragged 8-row and 32-column blocks */
        matmul_case(6700 + seed, kind, 3, 12, 9);    /* fewer rows and columns than a block */
        matmul_case(7300 + seed, kind, 40, 40, 300); /* long sums */
        matmul_case(7900 + seed, kind, 20, 600, 24); /* few rows, wide: a band per column block */
        matmul_case(8500 + seed, kind, 1, 200, 150); /* one row: a matrix-vector product */
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

/* The CPU kernel style: f32_matmul_rows where B's rows are contiguous, one output per work-item
 * otherwise. The GPU style: one output per work-item. */
KT_BOTH_STYLES_MAIN(matmul, run_cases)
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
