/* matmul for AVX2 + FMA when the rows of B are contiguous (b_col_stride 1: MatMul, Gemm with a
 * packed B, the fully-connected layers at batch 1): a block of up to ROWS output rows by 16
 * columns lives in YMM accumulators, so each B vector loaded serves every row of the block; the
 * epilogue runs in vectors (GELU included) where the bias row is dense. Other layouts run the
 * reference. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"

#define CHUNK 16
#define ROWS 6
#define ACC_ALIGN 32
#define KANN_MATMUL_ENTRY kann_f32_matmul_avx2
#include "matmul_driver.h"

/* Lanes j < n (n may exceed 8) as a maskload mask. */
static inline __m256i lanes(size_t n) {
    int c = n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* erf(x) as a rational function of x (odd over even polynomials in x^2) on [-4, 4], where
 * float erf reaches +-1; absolute error below 5e-7. */
static inline __m256 erf8(__m256 x) {
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(4.0f)), _mm256_set1_ps(-4.0f));
    __m256 x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(-2.72614225801306e-10f);
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.77068142495902e-08f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.10102402082508e-06f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-5.69250639462346e-05f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-7.34990630326855e-04f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-2.95459980854025e-03f));
    p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.60960333262415e-02f));
    p = _mm256_mul_ps(p, x);
    __m256 q = _mm256_set1_ps(-1.45660718464996e-05f);
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-2.13374055278905e-04f));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.68282697438203e-03f));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-7.37332916720468e-03f));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.42647390514189e-02f));
    return _mm256_div_ps(p, q);
}

/* x / 2 * (1 + erf(x / sqrt(2))); a NaN x stays NaN through x / 2. */
static inline __m256 gelu8(__m256 x) {
    __m256 e = erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
    __m256 half_x = _mm256_mul_ps(x, _mm256_set1_ps(0.5f));
    return _mm256_fmadd_ps(half_x, e, half_x);
}

/* alpha, bias, residual and the activation on one row of len accumulated columns, then the
 * store to y. A dense bias row and no activation or GELU run in vectors; the rest goes
 * through the reference epilogue. */
static void finish_row(const kann_matmul_args *a, float *acc, size_t len, size_t i, size_t j0,
                       const float *bias, const float *residual, float *y_row) {
    float alpha = a->alpha, beta = a->beta;
    const float *bias_row = bias ? bias + i * a->bias_row_stride : NULL;
    int kind = a->act.kind;
    if (!bias || a->bias_col_stride == 1) {
        int vector_act = kind == KANN_ACT_NONE || kind == KANN_ACT_GELU;
        __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
        for (size_t j = 0; j < len; j += 8) {
            __m256i m = lanes(len - j);
            __m256 v = _mm256_mul_ps(_mm256_load_ps(acc + j), va);
            if (bias_row)
                v = _mm256_add_ps(v, _mm256_mul_ps(vb, _mm256_maskload_ps(bias_row + j0 + j, m)));
            if (residual) v = _mm256_add_ps(v, _mm256_maskload_ps(residual + j, m));
            if (kind == KANN_ACT_GELU) v = gelu8(v);
            if (vector_act)
                _mm256_maskstore_ps(y_row + j, m, v);
            else
                _mm256_store_ps(acc + j, v);
        }
        if (vector_act) return;
    }
    finish_row_scalar(a, acc, len, j0, bias_row, residual, y_row);
}

/* Rows [i, i + rows) of one batch, columns [j0, j0 + len): rows <= ROWS, len <= CHUNK. The
 * row count is a compile-time constant in each inlined copy so the accumulators stay in
 * registers. */
static inline __attribute__((always_inline)) void block(const kann_matmul_args *a,
                                                        const float *a_blk, const float *b_col,
                                                        size_t rows, size_t len,
                                                        float (*acc)[CHUNK]) {
    size_t k = a->k, a_rs = a->a_row_stride, a_cs = a->a_col_stride, b_rs = a->b_row_stride;
    __m256i m0 = lanes(len), m1 = lanes(len > 8 ? len - 8 : 0);
    __m256 c[ROWS][2];
#pragma GCC unroll 6
    for (size_t r = 0; r < rows; r++) {
        c[r][0] = _mm256_setzero_ps();
        c[r][1] = _mm256_setzero_ps();
    }
    const float *br = b_col;
    for (size_t kk = 0; kk < k; kk++, br += b_rs) {
        __m256 b0 = _mm256_maskload_ps(br, m0), b1 = _mm256_maskload_ps(br + 8, m1);
        const float *ak = a_blk + kk * a_cs;
#pragma GCC unroll 6
        for (size_t r = 0; r < rows; r++) {
            __m256 av = _mm256_broadcast_ss(ak + r * a_rs);
            c[r][0] = _mm256_fmadd_ps(av, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(av, b1, c[r][1]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < rows; r++) {
        _mm256_store_ps(acc[r], c[r][0]);
        _mm256_store_ps(acc[r] + 8, c[r][1]);
    }
}
