/* The AVX-512 row copy into phase planes (kann_row_pair_fn), shared by the depthwise band fill
 * and the strided conv's phase path: plain loads inside the row, masked ones across its ends
 * (the padding costs no branches per lane); stride 2 splits two loads into the even and odd
 * lanes, both column phases in one pass; strides 3 and 4 take every stride-th lane of four
 * loads, one phase a pass (the direct path's copy of alexnet's stride-4 stem rows: 1.49 ->
 * 1.465 ms against the portable copy). Include after <immintrin.h> in an AVX-512 unit. */
#ifndef KANN_X86_ROW_PAIR_AVX512_H
#define KANN_X86_ROW_PAIR_AVX512_H

#include "ref/conv2d_packed.h"

/* Lanes i in [lo, hi) of 16. */
static inline __mmask16 kann_lanes16(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

static __attribute__((unused)) void kann_row_pair_avx512(float *d0, float *d1, const float *x_row,
                                                         int64_t iw0, uint32_t stride,
                                                         uint32_t w_in, size_t n) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    if (stride > 4 || (stride > 2 && d1)) {
        kann_row_pair(d0, d1, x_row, iw0, stride, w_in, n);
        return;
    }
    if (stride > 2) { /* 16 lanes from 4 vectors: the first 32 columns, then the next 32 */
        __m512i step = _mm512_mullo_epi32(
            _mm512_set1_epi32((int)stride),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        __m512i low = _mm512_and_si512(step, _mm512_set1_epi32(31));
        __mmask16 high = _mm512_cmpge_epi32_mask(step, _mm512_set1_epi32(32));
        for (size_t j = 0; j < n; j += 16) {
            int64_t c0 = iw0 + (int64_t)j * stride;
            __mmask16 keep = kann_lanes16(0, (int64_t)(n - j));
            __m512 v[4];
            for (int q = 0; q < 4; q++) {
                int64_t c = c0 + 16 * q;
                __mmask16 m = c >= 0 && c + 16 <= (int64_t)w_in
                                  ? 0xffff
                                  : kann_lanes16(-c, (int64_t)w_in - c);
                v[q] = _mm512_maskz_loadu_ps(m, x_row + c);
            }
            __m512 lo = _mm512_permutex2var_ps(v[0], low, v[1]);
            __m512 hi = _mm512_permutex2var_ps(v[2], low, v[3]);
            _mm512_mask_storeu_ps(d0 + j, keep, _mm512_mask_blend_ps(high, lo, hi));
        }
        return;
    }
    int64_t span = 16 * (int64_t)stride; /* input columns per output vector */
    for (size_t j = 0; j < n; j += 16) {
        int64_t c0 = iw0 + (int64_t)j * stride; /* the column of lane 0 */
        __mmask16 keep = kann_lanes16(0, (int64_t)(n - j));
        int inside = c0 >= 0 && c0 + span <= (int64_t)w_in;
        __mmask16 m0 = inside ? 0xffff : kann_lanes16(-c0, (int64_t)w_in - c0);
        __m512 v0 = _mm512_maskz_loadu_ps(m0, x_row + c0);
        if (stride == 1) {
            _mm512_mask_storeu_ps(d0 + j, keep, v0);
            continue;
        }
        __mmask16 m1 = inside ? 0xffff : kann_lanes16(-c0 - 16, (int64_t)w_in - c0 - 16);
        __m512 v1 = _mm512_maskz_loadu_ps(m1, x_row + c0 + 16);
        _mm512_mask_storeu_ps(d0 + j, keep, _mm512_permutex2var_ps(v0, even, v1));
        if (d1) _mm512_mask_storeu_ps(d1 + j, keep, _mm512_permutex2var_ps(v0, odd, v1));
    }
}

/* Rows [ih0, ih0 + n) of channel planes [c0, c0 + nc) of x (h_in x w_in; rows outside x
 * skipped) asked of the L2 cache ahead of their copy into a band or stage: such a copy reads a
 * few short rows of many channel planes, which the hardware prefetchers do not follow, and
 * inside a network its loads stalled on the L3 cache or memory. Always inline: GCC drops a call
 * to a function whose only effects are prefetches. */
static inline __attribute__((always_inline)) void kann_prefetch_rows(const float *x, size_t c0,
                                                                     size_t nc, int64_t ih0,
                                                                     size_t n, uint32_t h_in,
                                                                     uint32_t w_in) {
    int64_t lo = ih0 < 0 ? 0 : ih0, hi = ih0 + (int64_t)n;
    if (hi > (int64_t)h_in) hi = h_in;
    size_t bytes = sizeof(float) * w_in;
    for (size_t c = c0; c < c0 + nc; c++)
        for (int64_t ih = lo; ih < hi; ih++) {
            const char *row = (const char *)(x + (c * h_in + (size_t)ih) * w_in);
            for (size_t b = 0; b < bytes; b += 64)
                _mm_prefetch(row + b, _MM_HINT_T1);
            _mm_prefetch(row + bytes - 1, _MM_HINT_T1);
        }
}

#endif
