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

/* The rows of the next column chunk of B that one block prefetches while it runs, one row's
 * lines every few of its steps, the blocks of a chunk sharing them evenly. A chunk is CHUNK
 * columns of every row, rows b_row_stride floats apart (B in rows: 1-12 KiB), which the
 * hardware prefetchers do not follow; inside a network a layer's weights come from L3 or
 * memory, and the first block of every chunk waited on them. One thread, alternated runs: vit_b_16
 * (330 MB of weights) min 277-288 -> 270-273 ms, convnext_tiny 78-85 -> 76-77. */
typedef struct mm_ahead {
    const char *row; /* the next row's first byte */
    size_t stride;   /* bytes from a row to the next */
    size_t left;     /* rows left to prefetch */
    size_t lines;    /* cache lines a row spans */
    size_t every;    /* steps between two rows */
    size_t at;       /* the step of the next row */
} mm_ahead;

/* The block's steps up to its next prefetch (its k steps, those left, once they are done). */
static inline __attribute__((always_inline)) size_t mm_ahead_until(const mm_ahead *p, size_t k) {
    return p->left && p->at < k ? p->at : k;
}

/* The next row's prefetch, at step p->at. */
static inline void mm_ahead_row(mm_ahead *p) {
    for (size_t l = 0; l < p->lines; l++)
        _mm_prefetch(p->row + 64 * l, _MM_HINT_T1);
    p->row += p->stride;
    p->left--;
    p->at += p->every;
}

/* B's bytes from which the blocks prefetch: a smaller B stays in the L1 and L2 caches while the
 * blocks pass over it. With B in panels, a network's layers of 256 KiB and more come from L3
 * each run (two runtimes alternated, one thread, against 2 MiB: the BERT encoder's 1 MiB layers
 * 0.89 of the time, swin_t 0.94-0.98, convnext_tiny 0.97-0.99; from 64 KiB, BERT 1.02-1.03). */
#define MM_AHEAD_MIN_BYTES (256u << 10)

/* Block i of n of a chunk: its share of the rows of the next chunk, whose columns begin at
 * next (NULL: none) and are len wide. */
static mm_ahead mm_ahead_share(const kann_matmul_args *a, const float *next, size_t len, size_t i,
                               size_t n) {
    mm_ahead p = {0};
    if (!next || (size_t)a->k * a->n * sizeof(float) < MM_AHEAD_MIN_BYTES) return p;
    size_t k = a->k, r0 = i * k / n, r1 = (i + 1) * k / n;
    uintptr_t first = (uintptr_t)(next + r0 * a->b_row_stride);
    p.row = (const char *)(first & ~(uintptr_t)63);
    p.stride = a->b_row_stride * sizeof(float);
    p.left = r1 - r0;
    p.lines = (len * sizeof(float) + 63) / 64 + (first % 64 != 0 || p.stride % 64 != 0);
    p.every = p.left ? k / p.left : 1;
    return p;
}

/* The sums of rows x len outputs in vecs vectors per row (rows <= NARROW_ROWS,
 * vecs * rows <= VECS * ROWS, len <= the vectors' lanes): the whole reduction over the rows
 * at a_blk and the columns at b_col, stored to acc (row stride CHUNK). */
static inline __attribute__((always_inline)) void block(const kann_matmul_args *a,
                                                        const float *a_blk, const float *b_col,
                                                        size_t rows, int vecs, size_t len,
                                                        float *acc, mm_ahead *pf);

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
        block(a, a_blk, b_col, R, V, len, acc, pf);                                                \
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
                      size_t rows, int narrow, size_t len, float *acc, mm_ahead *pf) {
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

/* Columns per pass of the single-row path: its sums (16 KiB) stay in the L1 cache, and a layer
 * of up to this many outputs reads its weights as one sequential stream, GEMV_STEP whole rows
 * after GEMV_STEP whole rows. Passes of 1024 columns read 4 KiB of each row, then jumped to the
 * next rows: alexnet's 9216 -> 4096 classifier layer (151 MB of weights from memory, one
 * thread) 7.6 ms at 1024 columns a pass, 6.5 at 4096. */
#define GEMV_CHUNK 4096
/* Rows of B per sweep over the sums: each sum is loaded and stored once per GEMV_STEP rows
 * (8 measured faster than 4 on mobilenet_v2's classifier: 0.26-0.29 against 0.30-0.32 ms). */
#define GEMV_STEP 8
_Static_assert(GEMV_STEP % 2 == 0, "sweep runs an even count of rows in two chains");

/* n floats at p (n <= KANN_VL; n = KANN_VL a whole vector). */
static inline __attribute__((always_inline)) vf gemv_load(const float *p, size_t n) {
    return n == KANN_VL ? vf_load(p) : vf_load_n(p, n);
}

/* sum + rows b[0..rows) at column j (n of its lanes) times s[r]: one row, or an even count in
 * two chains. */
static inline __attribute__((always_inline)) vf sweep(const vf *s, const float *const *b, int rows,
                                                      size_t j, vf sum, size_t n) {
    vf t = vf_fmadd(s[0], gemv_load(b[0] + j, n), sum);
    if (rows == 1) return t;
    vf u = vf_mul(s[1], gemv_load(b[1] + j, n));
#pragma GCC unroll 8
    for (int r = 2; r < rows; r += 2) {
        t = vf_fmadd(s[r], gemv_load(b[r] + j, n), t);
        u = vf_fmadd(s[r + 1], gemv_load(b[r + 1] + j, n), u);
    }
    return vf_add(t, u);
}

/* acc[0..len) += rows b[0..rows) times s[r], column after column. */
static inline __attribute__((always_inline)) void add_rows(float *acc, size_t len, const vf *s,
                                                           const float *const *b, int rows) {
    size_t j = 0;
    for (; j + KANN_VL <= len; j += KANN_VL)
        vf_store(acc + j, sweep(s, b, rows, j, vf_load(acc + j), KANN_VL));
    if (j < len)
        vf_store_n(acc + j, sweep(s, b, rows, j, vf_load_n(acc + j, len - j), len - j), len - j);
}

/* The sums of one row of A (a_row, element stride a_cs) against columns [0, len) of B at b_col
 * (len <= GEMV_CHUNK), stored to acc: B read row after row, each row's columns in order, added
 * into the sums GEMV_STEP rows at a time. A fully-connected layer at batch 1 reads its weights
 * once; the block path would read them CHUNK columns at a time down all the rows, a stride of a
 * whole row (4 KB for 1000 outputs) per step, which the prefetchers follow poorly. */
static void gemv(const kann_matmul_args *a, const float *a_row, const float *b_col, size_t len,
                 float *acc) {
    size_t k = a->k, a_cs = a->a_col_stride, b_rs = a->b_row_stride;
    for (size_t j = 0; j < len; j++)
        acc[j] = 0.0f;
    for (size_t kk = 0; kk < k;) {
        int rows = k - kk >= GEMV_STEP ? GEMV_STEP : 1;
        vf s[GEMV_STEP];
        const float *b[GEMV_STEP];
        for (int r = 0; r < rows; r++) {
            s[r] = vf_set1(a_row[(kk + (size_t)r) * a_cs]);
            b[r] = b_col + (kk + (size_t)r) * b_rs;
        }
        if (rows == GEMV_STEP)
            add_rows(acc, len, s, b, GEMV_STEP);
        else
            add_rows(acc, len, s, b, 1);
        kk += (size_t)rows;
    }
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
        if (i_end - i_begin == 1) { /* one row: B streamed (gemv) */
            float sums[GEMV_CHUNK] __attribute__((aligned(ACC_ALIGN)));
            const float *a_row = am + bt * a->a_batch_stride + i_begin * a->a_row_stride;
            for (size_t j0 = j_begin, len; j0 < j_end; j0 += len) {
                len = kann_matmul_b_run(a, j0, j_end - j0 < GEMV_CHUNK ? j_end - j0 : GEMV_CHUNK);
                size_t y_row = (bt * a->m + i_begin) * a->n + j0;
                gemv(a, a_row, b_batch + kann_matmul_b_col(a, j0), len, sums);
                finish_row(a, sums, len, i_begin, j0, bias, residual ? residual + y_row : NULL,
                           y + y_row);
            }
            continue;
        }
        for (size_t j0 = j_begin, len; j0 < j_end; j0 += len) {
            len = kann_matmul_b_run(a, j0, j_end - j0 < CHUNK ? j_end - j0 : CHUNK);
            int narrow = len <= CHUNK / 2;
            size_t step = narrow ? NARROW_ROWS : ROWS;
            size_t next_len =
                kann_matmul_b_run(a, j0 + len, j_end - j0 - len < CHUNK ? j_end - j0 - len : CHUNK);
            const float *next = next_len ? b_batch + kann_matmul_b_col(a, j0 + len) : NULL;
            const float *b_col = b_batch + kann_matmul_b_col(a, j0);
            size_t n_blocks = (i_end - i_begin + step - 1) / step;
            for (size_t i = i_begin; i < i_end; i += step) {
                size_t rows = i_end - i < step ? i_end - i : step;
                const float *a_blk = am + bt * a->a_batch_stride + i * a->a_row_stride;
                mm_ahead pf = mm_ahead_share(a, next, next_len, (i - i_begin) / step, n_blocks);
                run_block(a, a_blk, b_col, rows, narrow, len, acc, &pf);
                for (size_t r = 0; r < rows; r++) {
                    size_t y_row = (bt * a->m + i + r) * a->n + j0;
                    finish_row(a, acc + r * CHUNK, len, i + r, j0, bias,
                               residual ? residual + y_row : NULL, y + y_row);
                }
            }
        }
    }
}
