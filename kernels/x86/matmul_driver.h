/* The parts of the SIMD matmul variants (matmul_avx2.c, matmul_avx512.c) that do not depend on
 * the vector width: the scalar epilogue for strided bias rows and non-vector activations, and
 * the tile walk. A variant defines CHUNK (columns per block, VECS vectors), ROWS (rows per
 * block of CHUNK columns), ACC_ALIGN and KANN_MATMUL_ENTRY (its entry point's name), includes
 * this file, then defines the two functions declared below: its register-blocked microkernel
 * and its vector epilogue. */
#ifndef KANN_MATMUL_ENTRY
#error "define KANN_MATMUL_ENTRY, CHUNK, VECS, ROWS and ACC_ALIGN first"
#endif

/* Rows per block of at most CHUNK / 2 columns: half the vectors, as many accumulators. */
#define NARROW_ROWS (2 * ROWS)

/* The sums of rows x len outputs in vecs vectors per row (rows <= NARROW_ROWS,
 * vecs * rows <= VECS * ROWS, len <= the vectors' lanes): the whole reduction over the rows
 * at a_blk and the columns at b_col, stored to acc (row stride CHUNK). */
static inline __attribute__((always_inline)) void block(const kann_matmul_args *a,
                                                        const float *a_blk, const float *b_col,
                                                        size_t rows, int vecs, size_t len,
                                                        float *acc);

/* alpha, bias, residual and the activation on row i's len accumulated columns from j0, then
 * the store to y_row (bias and residual are the whole tensors' and the row's). */
static void finish_row(const kann_matmul_args *a, float *acc, size_t len, size_t i, size_t j0,
                       const float *bias, const float *residual, float *y_row);

/* alpha, a bias row read with any column stride, residual and the activation on len
 * accumulated columns, then the store: the epilogue's general case, in scalars. */
static inline void finish_row_scalar(const kann_matmul_args *a, float *acc, size_t len, size_t j0,
                                     const float *bias_row, const float *residual, float *y_row) {
    if (bias_row && a->bias_col_stride != 1) {
        for (size_t j = 0; j < len; j++)
            acc[j] = acc[j] * a->alpha + a->beta * bias_row[(j0 + j) * a->bias_col_stride];
        if (residual)
            for (size_t j = 0; j < len; j++)
                acc[j] += residual[j];
    }
    kann_act_apply_row(&a->act, acc, len);
    for (size_t j = 0; j < len; j++)
        y_row[j] = acc[j];
}

/* One block: the row and vector counts compile-time constants in each inlined copy so the
 * accumulators stay in registers. */
#define KANN_MATMUL_CASE(R, V)                                                                     \
    case R:                                                                                        \
        block(a, a_blk, b_col, R, V, len, acc);                                                    \
        break;

/* Blocks of 1 to ROWS rows, V vectors each. */
#define KANN_MATMUL_CASES_TO_ROWS(V)                                                               \
    KANN_MATMUL_CASE(6, V)                                                                         \
    KANN_MATMUL_CASE(5, V)                                                                         \
    KANN_MATMUL_CASE(4, V)                                                                         \
    KANN_MATMUL_CASE(3, V)                                                                         \
    KANN_MATMUL_CASE(2, V)                                                                         \
    KANN_MATMUL_CASE(1, V)

_Static_assert(ROWS == 6, "the cases below");

static void run_block(const kann_matmul_args *a, const float *a_blk, const float *b_col,
                      size_t rows, int narrow, size_t len, float *acc) {
    if (narrow) { /* NARROW_ROWS = 2 x ROWS rows, half the vectors */
        switch (rows) {
            KANN_MATMUL_CASE(12, VECS / 2)
            KANN_MATMUL_CASE(11, VECS / 2)
            KANN_MATMUL_CASE(10, VECS / 2)
            KANN_MATMUL_CASE(9, VECS / 2)
            KANN_MATMUL_CASE(8, VECS / 2)
            KANN_MATMUL_CASE(7, VECS / 2)
            KANN_MATMUL_CASES_TO_ROWS(VECS / 2)
        }
        return;
    }
    switch (rows) { KANN_MATMUL_CASES_TO_ROWS(VECS) }
}

/* The record's tile (rows on axis 0, columns on axis 1) in blocks of ROWS x CHUNK, or of
 * NARROW_ROWS x CHUNK / 2 where the columns left are that few (a 24- or 32-column layer keeps
 * as many accumulators busy as a wide one); column chunks outside, so one K x CHUNK panel of B
 * stays cached while every row block passes over it. B with strided columns, or an empty
 * reduction, runs the reference. */
void KANN_MATMUL_ENTRY(const void *args, const kann_exec *ex) {
    const kann_matmul_args *a = args;
    if (a->b_col_stride != 1 || a->k == 0) {
        kann_f32_matmul_ref(args, ex);
        return;
    }
    uint32_t i_begin = 0, i_end = a->m, j_begin = 0, j_end = a->n;
    if (a->tile.axis == 0) {
        i_begin = a->tile.begin;
        i_end = a->tile.end;
    } else {
        j_begin = a->tile.begin;
        j_end = a->tile.end;
    }
    const float *am = kann_cref(ex, a->a), *bm = kann_cref(ex, a->b);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *residual =
        a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    float acc[NARROW_ROWS * CHUNK] __attribute__((aligned(ACC_ALIGN)));
    for (size_t bt = 0; bt < a->batch; bt++) {
        const float *b_batch = bm + bt * a->b_batch_stride;
        for (size_t j0 = j_begin; j0 < j_end; j0 += CHUNK) {
            size_t len = j_end - j0 < CHUNK ? j_end - j0 : CHUNK;
            int narrow = len <= CHUNK / 2;
            size_t step = narrow ? NARROW_ROWS : ROWS;
            for (size_t i = i_begin; i < i_end; i += step) {
                size_t rows = i_end - i < step ? i_end - i : step;
                const float *a_blk = am + bt * a->a_batch_stride + i * a->a_row_stride;
                run_block(a, a_blk, b_batch + j0, rows, narrow, len, acc);
                for (size_t r = 0; r < rows; r++) {
                    size_t y_row = (bt * a->m + i + r) * a->n + j0;
                    finish_row(a, acc + r * CHUNK, len, i + r, j0, bias,
                               residual ? residual + y_row : NULL, y + y_row);
                }
            }
        }
    }
}
