/* The AVX-512 row copy into phase planes (kann_row_pair_fn), shared by the depthwise band fill
 * and the strided conv's phase path: plain loads inside the row, masked ones across its ends
 * (the padding costs no branches per lane); stride 2 splits two loads into the even and odd
 * lanes, both column phases in one pass. Include after <immintrin.h> in an AVX-512 unit. */
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

static void kann_row_pair_avx512(float *d0, float *d1, const float *x_row, int64_t iw0,
                                 uint32_t stride, uint32_t w_in, size_t n) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    if (stride > 2) {
        kann_row_pair(d0, d1, x_row, iw0, stride, w_in, n);
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

#endif
