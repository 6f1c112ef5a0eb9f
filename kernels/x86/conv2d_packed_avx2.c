/* conv2d_packed for AVX2 + FMA: a 6 x 16 register tile (12 YMM accumulators), run on the two
 * 6-row halves of each 12-channel weight panel; bias, residual and activation fused into the
 * store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_maxpool.h"
#include "ref/conv2d_packed.h"
#include "ref/dwblock.h"

#define KANN_VEC_BITS 256
#include "vec_math.h"
#include "simd_act.h"
#include "maxpool_vec.h"

#define NR 16
#define MR 6

/* Weight floats ahead of the reduction step that the first half-tile prefetches (64 steps of
 * a panel), as the AVX-512 microkernel does. */
#define W_PREFETCH (64 * KANN_CONV_PANEL)

/* Lanes j < n of a YMM vector (n <= 8) as a maskload/maskstore mask. */
static inline __m256i lane_mask(size_t n) {
    __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), iota);
}

/* One row's two vectors through the segments of a wide strip: spilled, then each segment's
 * lanes (columns of the wide grid past w_out are in none) reloaded and stored at its place in
 * y with the residual and activation. */
static inline void store_segments(const kann_conv_tile *t, size_t row, __m256 v0, __m256 v1,
                                  int vec_act, __m256 lo, __m256 hi) {
    float lane[NR + 8];
    _mm256_storeu_ps(lane, v0);
    _mm256_storeu_ps(lane + 8, v1);
    _mm256_storeu_ps(lane + 16, _mm256_setzero_ps());
    float *y = t->y + row * t->ldy;
    const float *res = t->res ? t->res + row * t->ldy : NULL;
    for (size_t s = 0; s < t->n_segments; s++) {
        const kann_conv_segment *sg = &t->segments[s];
        for (size_t j = sg->lo; j < sg->hi; j += 8) {
            size_t at = sg->at + (j - sg->lo);
            __m256i m = lane_mask(sg->hi - j);
            __m256 v = _mm256_loadu_ps(lane + j);
            if (res) v = _mm256_add_ps(v, _mm256_maskload_ps(res + at, m));
            if (vec_act) v = vf_act(v, t->act, lo, hi);
            _mm256_maskstore_ps(y + at, m, v);
            if (!vec_act)
                for (size_t i = j; i < sg->hi && i < j + 8; i++)
                    y[sg->at + (i - sg->lo)] = kann_act_apply(t->act, y[sg->at + (i - sg->lo)]);
        }
    }
}

static void half_6x16(const kann_conv_tile *t, size_t row0, size_t rows) {
    __m256 c[MR][2];
    size_t n = t->n, ldb = t->b_stride;
    {
        __m256i m0 = lane_mask(n), m1 = lane_mask(n > 8 ? n - 8 : 0);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            c[r][0] = c[r][1] = _mm256_setzero_ps();
            if (!t->first && (size_t)r < rows) { /* continue the partial sums in y */
                const float *y = t->y + (row0 + (size_t)r) * t->ldy;
                c[r][0] = _mm256_maskload_ps(y, m0);
                c[r][1] = _mm256_maskload_ps(y + 8, m1);
            }
        }
    }
    const float *w = t->w + row0;
    const ptrdiff_t *taps = t->taps;
    size_t n_taps = t->n_taps;
    /* the first half prefetches for both: the panel W_PREFETCH steps ahead, B by b_ahead */
    int prefetch = row0 == 0;
    if (n == NR) {
        for (size_t g = 0; g < t->n_groups; g++) {
            const float *bg = t->b + g * ldb;
            for (size_t tap = 0; tap < n_taps; tap++, w += KANN_CONV_PANEL) {
                const float *b = bg + taps[tap];
                if (prefetch) {
                    _mm_prefetch((const char *)(b + t->b_ahead), _MM_HINT_T0);
                    _mm_prefetch((const char *)(w + W_PREFETCH), _MM_HINT_T0);
                }
                __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
                for (int r = 0; r < MR; r++) {
                    __m256 a = _mm256_broadcast_ss(w + r);
                    c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
                    c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
                }
            }
        }
    } else {
        __m256i m0 = lane_mask(n), m1 = lane_mask(n > 8 ? n - 8 : 0);
        for (size_t g = 0; g < t->n_groups; g++) {
            const float *bg = t->b + g * ldb;
            for (size_t tap = 0; tap < n_taps; tap++, w += KANN_CONV_PANEL) {
                const float *b = bg + taps[tap];
                __m256 b0 = _mm256_maskload_ps(b, m0), b1 = _mm256_maskload_ps(b + 8, m1);
#pragma GCC unroll 6
                for (int r = 0; r < MR; r++) {
                    __m256 a = _mm256_broadcast_ss(w + r);
                    c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
                    c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
                }
            }
        }
    }
    const kann_act *act = t->act;
    int vec_act = kann_act_vectorizes(act);
    int clamp = kann_act_is_clamp(act);
    __m256 lo = _mm256_set1_ps(kann_act_clamp_lo(act)), hi = _mm256_set1_ps(kann_act_hi(act));
    __m256i m0 = lane_mask(n), m1 = lane_mask(n > 8 ? n - 8 : 0);
    if (!t->last) {
        /* constant indices into c (unrolled), as everywhere: a variable one would keep the
         * accumulators in memory, stored at every step of the reduction */
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            if ((size_t)r >= rows) break;
            float *y = t->y + (row0 + (size_t)r) * t->ldy;
            _mm256_maskstore_ps(y, m0, c[r][0]);
            _mm256_maskstore_ps(y + 8, m1, c[r][1]);
        }
        return;
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        if ((size_t)r >= rows) break;
        size_t row = row0 + (size_t)r;
        float *y = t->y + row * t->ldy;
        __m256 v0 = c[r][0], v1 = c[r][1];
        if (t->bias) {
            __m256 bv = _mm256_set1_ps(t->bias[row]);
            v0 = _mm256_add_ps(v0, bv);
            v1 = _mm256_add_ps(v1, bv);
        }
        if (t->n_segments) {
            store_segments(t, row, v0, v1, vec_act, lo, hi);
            continue;
        }
        /* a whole strip: plain loads and stores */
        if (t->res) {
            const float *res = t->res + row * t->ldy;
            v0 = _mm256_add_ps(v0, n == NR ? _mm256_loadu_ps(res) : _mm256_maskload_ps(res, m0));
            v1 = _mm256_add_ps(v1, n == NR ? _mm256_loadu_ps(res + 8)
                                           : _mm256_maskload_ps(res + 8, m1));
        }
        if (clamp) {
            v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
            v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
        } else if (vec_act) {
            v0 = vf_act(v0, act, lo, hi);
            v1 = vf_act(v1, act, lo, hi);
        }
        if (n == NR) {
            _mm256_storeu_ps(y, v0);
            _mm256_storeu_ps(y + 8, v1);
        } else {
            _mm256_maskstore_ps(y, m0, v0);
            _mm256_maskstore_ps(y + 8, m1, v1);
        }
        if (!vec_act)
            for (size_t j = 0; j < n; j++)
                y[j] = kann_act_apply(act, y[j]);
    }
}

static void microkernel_12x16(const kann_conv_tile *t) {
    half_6x16(t, 0, t->mr < MR ? t->mr : MR);
    if (t->mr > MR) half_6x16(t, MR, t->mr - MR);
}

void kann_f32_conv2d_packed_6x16_avx2(const void *args, const kann_exec *ex) {
    kann_conv2d_packed_drive(args, ex, NR, microkernel_12x16, kann_row_pair);
}

/* conv2d_maxpool: the conv's rows through the 6 x 16 tile into the ring, pooled from there a
 * vector of columns at a time (maxpool_vec.h). */
void kann_f32_conv2d_maxpool_avx2(const void *args, const kann_exec *ex) {
    kann_conv2d_maxpool_packed(args, ex, kann_f32_conv2d_packed_6x16_avx2, maxpool_rows);
}

/* dwblock: the band's pointwise convs through the 6 x 16 tile, its depthwise conv by the AVX2
 * dwconv2d. */
void kann_f32_dwblock_avx2(const void *args, const kann_exec *ex) {
    kann_dwblock_drive(args, ex, microkernel_12x16, NR, kann_f32_dwconv2d_avx2);
}
