/* matmul for AVX2 + FMA when the rows of B are contiguous (b_col_stride 1: MatMul, Gemm with a
 * packed B, the fully-connected layers at batch 1): a block of up to ROWS output rows by 16
 * columns lives in YMM accumulators, so each B vector loaded serves every row of the block; the
 * epilogue runs in vectors (GELU included) where the bias row is dense. A tile of one row
 * streams B row after row instead (gemv in matmul_driver.h). Other layouts run the reference. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"

#define KANN_VEC_BITS 256
#include "vec_math.h"
#include "simd_act.h"

#define CHUNK 16
#define VECS 2
#define ROWS 6
#define ACC_ALIGN 32
#define KANN_MATMUL_ENTRY kann_f32_matmul_avx2
#include "matmul_driver.h"

/* Lanes j < n (n may exceed 8) as a maskload mask. */
static inline __m256i lanes(size_t n) {
    int c = n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* alpha, bias, residual and the activation on one row of len accumulated columns, then the
 * store to y. A dense bias row and an activation with a vector form (simd_act.h) run in
 * vectors; the rest goes through the reference epilogue. */
static void finish_row(const kann_matmul_args *a, float *acc, size_t len, size_t i, size_t j0,
                       const float *bias, const float *residual, float *y_row) {
    float alpha = a->alpha, beta = a->beta;
    const float *bias_row = bias ? bias + i * a->bias_row_stride : NULL;
    if (!bias || a->bias_col_stride == 1) {
        int vector_act = kann_act_vectorizes(&a->act);
        vf lo = vf_set1(kann_act_lo(&a->act)), hi = vf_set1(kann_act_hi(&a->act));
        __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
        for (size_t j = 0; j < len; j += 8) {
            __m256i m = lanes(len - j);
            __m256 v = _mm256_mul_ps(_mm256_load_ps(acc + j), va);
            if (bias_row)
                v = _mm256_add_ps(v, _mm256_mul_ps(vb, _mm256_maskload_ps(bias_row + j0 + j, m)));
            if (residual) v = _mm256_add_ps(v, _mm256_maskload_ps(residual + j, m));
            if (vector_act)
                _mm256_maskstore_ps(y_row + j, m, vf_act(v, &a->act, lo, hi));
            else
                _mm256_store_ps(acc + j, v);
        }
        if (vector_act) return;
    }
    finish_row_scalar(a, acc, len, j0, bias_row, residual, y_row);
}

static inline __attribute__((always_inline)) void block(const kann_matmul_args *a,
                                                        const float *a_blk, const float *b_col,
                                                        size_t rows, int vecs, size_t len,
                                                        float *acc, mm_ahead *pf) {
    size_t k = a->k, a_rs = a->a_row_stride, a_cs = a->a_col_stride, b_rs = a->b_row_stride;
    __m256i m[VECS] = {lanes(len), lanes(len > 8 ? len - 8 : 0)};
    __m256 c[NARROW_ROWS][VECS];
#pragma GCC unroll 12
    for (size_t r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int v = 0; v < vecs; v++)
            c[r][v] = _mm256_setzero_ps();
    const float *b = b_col;
    for (size_t kk = 0, until = mm_ahead_until(pf, k); kk < k; kk++, b += b_rs) {
        if (kk == until) { /* the prefetch steps apart from the plain ones */
            mm_ahead_row(pf);
            until = mm_ahead_until(pf, k);
        }
        __m256 bv[VECS];
#pragma GCC unroll 2
        for (int v = 0; v < vecs; v++)
            bv[v] = _mm256_maskload_ps(b + 8 * v, m[v]);
        const float *ak = a_blk + kk * a_cs;
#pragma GCC unroll 12
        for (size_t r = 0; r < rows; r++) {
            __m256 av = _mm256_broadcast_ss(ak + r * a_rs);
#pragma GCC unroll 2
            for (int v = 0; v < vecs; v++)
                c[r][v] = _mm256_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
#pragma GCC unroll 12
    for (size_t r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int v = 0; v < vecs; v++)
            _mm256_store_ps(acc + r * CHUNK + 8 * v, c[r][v]);
}
