/* conv2d_packed for AVX-512: a 12 x 32 register tile (24 ZMM accumulators) over one weight
 * panel and a 32-column strip of B, bias, residual and activation fused into the store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"
#include "simd_act.h"

#define NR 32

static void microkernel_12x32(const kann_conv_tile *t) {
    __m512 c[KANN_CONV_PANEL][2];
    size_t n = t->n;
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
#pragma GCC unroll 12
    for (int r = 0; r < KANN_CONV_PANEL; r++) {
        c[r][0] = c[r][1] = _mm512_setzero_ps();
        if (!t->first && (size_t)r < t->mr) { /* continue the partial sums in y */
            c[r][0] = _mm512_maskz_loadu_ps(m0, t->y + r * t->ldy);
            c[r][1] = _mm512_maskz_loadu_ps(m1, t->y + r * t->ldy + 16);
        }
    }
    const float *w = t->w, *b = t->b;
    size_t ldb = t->ldb;
    for (size_t k = 0; k < t->k; k++, w += KANN_CONV_PANEL, b += ldb) {
        __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 12
        for (int r = 0; r < KANN_CONV_PANEL; r++) {
            __m512 a = _mm512_set1_ps(w[r]);
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
        }
    }
    if (!t->last) {
#pragma GCC unroll 12
        for (int r = 0; r < KANN_CONV_PANEL; r++) {
            if ((size_t)r >= t->mr) break;
            _mm512_mask_storeu_ps(t->y + r * t->ldy, m0, c[r][0]);
            _mm512_mask_storeu_ps(t->y + r * t->ldy + 16, m1, c[r][1]);
        }
        return;
    }
    const kann_act *act = t->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
#pragma GCC unroll 12
    for (int r = 0; r < KANN_CONV_PANEL; r++) {
        if ((size_t)r >= t->mr) break;
        float *y = t->y + r * t->ldy;
        __m512 v0 = c[r][0], v1 = c[r][1];
        if (t->bias) {
            __m512 bv = _mm512_set1_ps(t->bias[r]);
            v0 = _mm512_add_ps(v0, bv);
            v1 = _mm512_add_ps(v1, bv);
        }
        if (t->res) {
            const float *res = t->res + r * t->ldy;
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, res));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, res + 16));
        }
        if (vec_act) {
            v0 = kann_act512(v0, act, lo, hi);
            v1 = kann_act512(v1, act, lo, hi);
        }
        _mm512_mask_storeu_ps(y, m0, v0);
        _mm512_mask_storeu_ps(y + 16, m1, v1);
        if (!vec_act)
            for (size_t j = 0; j < n; j++)
                y[j] = kann_act_apply(act, y[j]);
    }
}

void kann_f32_conv2d_packed_12x32_avx512(const void *args, const kann_exec *ex) {
    kann_conv2d_packed_drive(args, ex, NR, microkernel_12x32);
}
