/* In-register transposes of AVX-512 float vectors, shared by the kernels that turn channels in
 * the lanes into channel planes and back. Include after <immintrin.h>, in a translation unit
 * compiled for AVX-512. */
#ifndef KANN_X86_TRANSPOSE_AVX512_H
#define KANN_X86_TRANSPOSE_AVX512_H

#include <immintrin.h>

/* r[i][j] <- r[j][i]: 16 vectors of 16 lanes. */
static inline __attribute__((always_inline)) void kann_transpose16_ps(__m512 *r) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* lane group L of t[4q + j] -> of r[4q + j]: column 4L + j of rows 4q .. 4q + 3 */
#pragma GCC unroll 4
    for (int i = 0; i < 16; i += 4) {
        __m512d a0 = _mm512_castps_pd(t[i]), a1 = _mm512_castps_pd(t[i + 1]);
        __m512d a2 = _mm512_castps_pd(t[i + 2]), a3 = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    /* column 4L + j gathers lane group L of r[j], r[4 + j], r[8 + j], r[12 + j] */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        __m512 lo0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x44);
        __m512 hi0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xee);
        __m512 lo1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x44);
        __m512 hi1 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xee);
        t[j] = _mm512_shuffle_f32x4(lo0, lo1, 0x88);
        t[4 + j] = _mm512_shuffle_f32x4(lo0, lo1, 0xdd);
        t[8 + j] = _mm512_shuffle_f32x4(hi0, hi1, 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(hi0, hi1, 0xdd);
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

#endif
