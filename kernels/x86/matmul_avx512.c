/* matmul for AVX-512 when the rows of B are contiguous (b_col_stride 1: MatMul, Gemm with a
 * packed B, the fully-connected layers at batch 1): a block of up to ROWS output rows by 64
 * columns lives in ZMM accumulators, so each B vector loaded serves every row of the block; the
 * epilogue runs in vectors (GELU included) where the bias row is dense. A tile of one row
 * streams B row after row instead (gemv in matmul_driver.h). Other layouts run the reference. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"

#define CHUNK 64
#define VECS 4
#define ROWS 6
#define ACC_ALIGN 64
#define KANN_MATMUL_ENTRY kann_f32_matmul_avx512
#include "matmul_driver.h"
/* Consecutive rows of B lie b_row_stride apart (1-4 KiB in transformer layers), a pattern the
 * hardware prefetchers follow poorly: each step asks for the row this many steps ahead (a prefetch
 * past the end of B is a hint and never faults). */
#define PREFETCH_ROWS 8

static inline __mmask16 lanes(size_t n) {
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
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
        __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
        for (size_t j = 0; j < len; j += 16) {
            __mmask16 m = lanes(len - j);
            __m512 v = _mm512_mul_ps(_mm512_load_ps(acc + j), va);
            if (bias_row)
                v = _mm512_add_ps(v,
                                  _mm512_mul_ps(vb, _mm512_maskz_loadu_ps(m, bias_row + j0 + j)));
            if (residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, residual + j));
            if (vector_act)
                _mm512_mask_storeu_ps(y_row + j, m, vf_act(v, &a->act, lo, hi));
            else
                _mm512_store_ps(acc + j, v);
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
    __mmask16 m[VECS];
    for (int v = 0; v < VECS; v++)
        m[v] = len > (size_t)v * 16 ? lanes(len - (size_t)v * 16) : 0;
    __m512 c[NARROW_ROWS][VECS];
#pragma GCC unroll 12
    for (size_t r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            c[r][v] = _mm512_setzero_ps();
    const float *b = b_col;
    for (size_t kk = 0, until = mm_ahead_until(pf, k); kk < k; kk++, b += b_rs) {
        if (kk == until) { /* the prefetch steps apart from the plain ones */
            mm_ahead_row(pf);
            until = mm_ahead_until(pf, k);
        }
        __m512 bv[VECS];
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            bv[v] = _mm512_maskz_loadu_ps(m[v], b + 16 * v);
        const char *ahead = (const char *)(b + PREFETCH_ROWS * b_rs);
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            _mm_prefetch(ahead + 64 * v, _MM_HINT_T0);
        const float *ak = a_blk + kk * a_cs;
#pragma GCC unroll 12
        for (size_t r = 0; r < rows; r++) {
            __m512 av = _mm512_set1_ps(ak[r * a_rs]);
#pragma GCC unroll 4
            for (int v = 0; v < vecs; v++)
                c[r][v] = _mm512_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
#pragma GCC unroll 12
    for (size_t r = 0; r < rows; r++)
#pragma GCC unroll 4
        for (int v = 0; v < vecs; v++)
            _mm512_store_ps(acc + r * CHUNK + 16 * v, c[r][v]);
}
