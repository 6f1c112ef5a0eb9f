/* matmul for AVX2 + FMA when the rows of B are contiguous (b_col_stride 1: MatMul, Gemm with a
 * packed B, the fully-connected layers at batch 1): 64 output columns of one row in eight YMM
 * accumulators, B streamed once per row; the epilogue is the reference's. Other layouts run
 * the reference. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"

#define CHUNK 64

/* Lanes j < n (n may exceed 8) as a maskload mask. */
static inline __m256i lanes(size_t n) {
    int c = n > 8 ? 8 : (int)n;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

void kann_f32_matmul_avx2(const void *args, const kann_exec *ex) {
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
    size_t k = a->k, a_cs = a->a_col_stride, b_rs = a->b_row_stride;
    float acc[CHUNK] __attribute__((aligned(64)));
    for (size_t bt = 0; bt < a->batch; bt++) {
        for (size_t i = i_begin; i < i_end; i++) {
            size_t y_row = (bt * a->m + i) * a->n;
            const float *a_row = am + bt * a->a_batch_stride + i * a->a_row_stride;
            for (size_t j0 = j_begin; j0 < j_end; j0 += CHUNK) {
                size_t len = j_end - j0 < CHUNK ? j_end - j0 : CHUNK;
                __m256i m[8];
                __m256 c[8];
                for (int v = 0; v < 8; v++) {
                    m[v] = lanes(len > (size_t)v * 8 ? len - (size_t)v * 8 : 0);
                    c[v] = _mm256_setzero_ps();
                }
                const float *br = bm + bt * a->b_batch_stride + j0;
                for (size_t kk = 0; kk < k; kk++, br += b_rs) {
                    __m256 av = _mm256_set1_ps(a_row[kk * a_cs]);
#pragma GCC unroll 8
                    for (int v = 0; v < 8; v++)
                        c[v] = _mm256_fmadd_ps(av, _mm256_maskload_ps(br + 8 * v, m[v]), c[v]);
                }
                for (int v = 0; v < 8; v++)
                    _mm256_store_ps(acc + 8 * v, c[v]);
                float alpha = a->alpha, beta = a->beta;
                for (size_t j = 0; j < len; j++)
                    acc[j] *= alpha;
                if (bias) {
                    const float *bias_row = bias + i * a->bias_row_stride;
                    size_t bias_cs = a->bias_col_stride;
                    for (size_t j = 0; j < len; j++)
                        acc[j] += beta * bias_row[(j0 + j) * bias_cs];
                }
                if (residual) {
                    const float *r = residual + y_row + j0;
                    for (size_t j = 0; j < len; j++)
                        acc[j] += r[j];
                }
                kann_act_apply_row(&a->act, acc, len);
                float *out = y + y_row + j0;
                for (size_t j = 0; j < len; j++)
                    out[j] = acc[j];
            }
        }
    }
}
