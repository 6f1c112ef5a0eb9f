/* matmul for AVX-512 when the rows of B are contiguous (b_col_stride 1: MatMul, Gemm with a
 * packed B, the fully-connected layers at batch 1): 64 output columns of one row in four ZMM
 * accumulators, B streamed once per row; the epilogue is the reference's. Other layouts run
 * the reference. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"

#define CHUNK 64

static inline __mmask16 lanes(size_t n) {
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

void kann_f32_matmul_avx512(const void *args, const kann_exec *ex) {
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
                __mmask16 m[4];
                for (int v = 0; v < 4; v++)
                    m[v] = len > (size_t)v * 16 ? lanes(len - (size_t)v * 16) : 0;
                __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
                const float *br = bm + bt * a->b_batch_stride + j0;
                for (size_t kk = 0; kk < k; kk++, br += b_rs) {
                    __m512 av = _mm512_set1_ps(a_row[kk * a_cs]);
                    c0 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[0], br), c0);
                    c1 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[1], br + 16), c1);
                    c2 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[2], br + 32), c2);
                    c3 = _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m[3], br + 48), c3);
                }
                _mm512_store_ps(acc, c0);
                _mm512_store_ps(acc + 16, c1);
                _mm512_store_ps(acc + 32, c2);
                _mm512_store_ps(acc + 48, c3);
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
