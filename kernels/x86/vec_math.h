/* One vector width's float operations under width-neutral names, so that a kernel body written
 * once (kernels/x86/rowops.h) compiles to AVX-512 or to AVX2 + FMA. The including file defines
 * KANN_VEC_BITS as 512 or 256 (its translation unit is compiled for that ISA). Partial vectors
 * (n < KANN_VL lanes) load zero in the missing lanes and store only the first n. */
#ifndef KANN_X86_VEC_MATH_H
#define KANN_X86_VEC_MATH_H

#include <stddef.h>

#include <immintrin.h>

#if KANN_VEC_BITS == 512
#include "transpose_avx512.h"
#define KANN_VL 16
typedef __m512 vf;
static inline vf vf_set1(float v) {
    return _mm512_set1_ps(v);
}
static inline vf vf_load(const float *p) {
    return _mm512_loadu_ps(p);
}
static inline vf vf_load_n(const float *p, size_t n) {
    return _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), p);
}
static inline void vf_store(float *p, vf v) {
    _mm512_storeu_ps(p, v);
}
static inline void vf_store_n(float *p, vf v, size_t n) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v);
}
static inline vf vf_add(vf a, vf b) {
    return _mm512_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
    return _mm512_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
    return _mm512_mul_ps(a, b);
}
static inline vf vf_fmadd(vf a, vf b, vf c) {
    return _mm512_fmadd_ps(a, b, c);
}
static inline vf vf_div(vf a, vf b) {
    return _mm512_div_ps(a, b);
}
/* 1 / a within 2^-14 relative */
static inline vf vf_rcp_estimate(vf a) {
    return _mm512_rcp14_ps(a);
}
/* the larger lane of a and b; b's lane where one is NaN */
static inline vf vf_max(vf a, vf b) {
    return _mm512_max_ps(a, b);
}
static inline vf vf_min(vf a, vf b) {
    return _mm512_min_ps(a, b);
}
static inline vf vf_round(vf a) {
    return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* c - a * b */
static inline vf vf_fnmadd(vf a, vf b, vf c) {
    return _mm512_fnmadd_ps(a, b, c);
}
/* p * 2^n for integral n in [-126, 127]: one vscalefps */
static inline vf vf_mul_pow2(vf p, vf n) {
    return _mm512_scalef_ps(p, n);
}
/* r where x is not less than lo (a NaN x included), else 0 */
static inline vf vf_zero_below(vf r, vf x, vf lo) {
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), r);
}
static inline float vf_sum(vf a) {
    return _mm512_reduce_add_ps(a);
}
static inline float vf_hmax(vf a) {
    return _mm512_reduce_max_ps(a);
}
/* r[i][j] <- r[j][i], KANN_VL vectors */
static inline __attribute__((always_inline)) void vf_transpose(vf *r) {
    kann_transpose16_ps(r);
}
/* The even lanes of a then of b: a0 a2 ... b0 b2 ... */
static inline vf vf_even(vf a, vf b) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(a, even, b);
}
/* a0 b0 a1 b1 ... : the first KANN_VL lanes in *lo, the rest in *hi */
static inline void vf_zip(vf a, vf b, vf *lo, vf *hi) {
    const __m512i il = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ih =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    *lo = _mm512_permutex2var_ps(a, il, b);
    *hi = _mm512_permutex2var_ps(a, ih, b);
}
#elif KANN_VEC_BITS == 256
#define KANN_VL 8
typedef __m256 vf;
static inline __m256i vf_lanes(size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vf vf_set1(float v) {
    return _mm256_set1_ps(v);
}
static inline vf vf_load(const float *p) {
    return _mm256_loadu_ps(p);
}
static inline vf vf_load_n(const float *p, size_t n) {
    return _mm256_maskload_ps(p, vf_lanes(n));
}
static inline void vf_store(float *p, vf v) {
    _mm256_storeu_ps(p, v);
}
static inline void vf_store_n(float *p, vf v, size_t n) {
    _mm256_maskstore_ps(p, vf_lanes(n), v);
}
static inline vf vf_add(vf a, vf b) {
    return _mm256_add_ps(a, b);
}
static inline vf vf_sub(vf a, vf b) {
    return _mm256_sub_ps(a, b);
}
static inline vf vf_mul(vf a, vf b) {
    return _mm256_mul_ps(a, b);
}
static inline vf vf_fmadd(vf a, vf b, vf c) {
    return _mm256_fmadd_ps(a, b, c);
}
static inline vf vf_div(vf a, vf b) {
    return _mm256_div_ps(a, b);
}
/* 1 / a within 1.5 * 2^-12 relative */
static inline vf vf_rcp_estimate(vf a) {
    return _mm256_rcp_ps(a);
}
static inline vf vf_max(vf a, vf b) {
    return _mm256_max_ps(a, b);
}
static inline vf vf_min(vf a, vf b) {
    return _mm256_min_ps(a, b);
}
static inline vf vf_round(vf a) {
    return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline vf vf_fnmadd(vf a, vf b, vf c) {
    return _mm256_fnmadd_ps(a, b, c);
}
/* 2^n built in the exponent field, times p */
static inline vf vf_mul_pow2(vf p, vf n) {
    __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(e, 23)));
}
static inline vf vf_zero_below(vf r, vf x, vf lo) {
    return _mm256_and_ps(r, _mm256_cmp_ps(x, lo, _CMP_NLT_UQ));
}
static inline float vf_sum(vf a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline float vf_hmax(vf a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
static inline vf vf_even(vf a, vf b) {
    __m256 t = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(t), _MM_SHUFFLE(3, 1, 2, 0)));
}
static inline void vf_zip(vf a, vf b, vf *lo, vf *hi) {
    __m256 l = _mm256_unpacklo_ps(a, b), h = _mm256_unpackhi_ps(a, b); /* a0 b0 a1 b1 | a4 b4 .. */
    *lo = _mm256_permute2f128_ps(l, h, 0x20);
    *hi = _mm256_permute2f128_ps(l, h, 0x31);
}
/* r[i][j] <- r[j][i], KANN_VL vectors */
static inline __attribute__((always_inline)) void vf_transpose(vf *r) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}
#else
#error "define KANN_VEC_BITS as 512 or 256"
#endif

/* 1 / a for finite a >= 1 (a denominator such as 1 + e^-x), about 1 ulp: the estimate refined
 * by one Newton step, a few cycles where a division takes ten or more per vector. */
static inline vf vf_rcp(vf a) {
    vf r = vf_rcp_estimate(a);
    return vf_mul(r, vf_fnmadd(a, r, vf_set1(2.0f)));
}

/* e^x for x in [-87.3, 88] (no clamp, no special values), relative error about 2 ulp:
 * x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts so that n ln2 is exact),
 * e^r = 1 + r + r^2 p(r) with p a degree-4 fit of (e^r - 1 - r) / r^2 for least relative
 * error, times 2^n. */
static inline vf vf_exp_in_range(vf x) {
    vf n = vf_round(vf_mul(x, vf_set1(1.44269504088896341f)));
    vf r = vf_fmadd(n, vf_set1(-0.693359375f), x);
    r = vf_fmadd(n, vf_set1(2.12194440e-4f), r);
    vf p = vf_set1(1.3871097471565008e-3f);
    p = vf_fmadd(p, r, vf_set1(8.36950447410345e-3f));
    p = vf_fmadd(p, r, vf_set1(4.166741669178009e-2f));
    p = vf_fmadd(p, r, vf_set1(1.6666513681411743e-1f));
    p = vf_fmadd(p, r, vf_set1(4.999999701976776e-1f));
    p = vf_fmadd(p, vf_mul(r, r), vf_add(r, vf_set1(1.0f)));
    return vf_mul_pow2(p, n);
}

/* e^x. Below x = -87.3 (where e^x leaves the normal floats) the result is 0: a masked attention
 * score (-1e9, -inf, -FLT_MAX) must give exactly 0, as libm's expf does, and no subnormal that
 * would slow every later multiply by it. Above 88 it is e^88; a NaN x gives NaN. */
static inline vf vf_exp(vf x) {
    const vf lo = vf_set1(-87.3f);
    vf xc = vf_min(vf_set1(88.0f), vf_max(lo, x)); /* max/min return a NaN x */
    return vf_zero_below(vf_exp_in_range(xc), x, lo);
}

/* erf(x) as a rational function of x (odd over even polynomials in x^2) on [-4, 4], where
 * float erf reaches +-1; absolute error below 5e-7. */
static inline vf vf_erf(vf x) {
    x = vf_max(vf_min(x, vf_set1(4.0f)), vf_set1(-4.0f));
    vf x2 = vf_mul(x, x);
    vf p = vf_set1(-2.72614225801306e-10f);
    p = vf_fmadd(p, x2, vf_set1(2.77068142495902e-08f));
    p = vf_fmadd(p, x2, vf_set1(-2.10102402082508e-06f));
    p = vf_fmadd(p, x2, vf_set1(-5.69250639462346e-05f));
    p = vf_fmadd(p, x2, vf_set1(-7.34990630326855e-04f));
    p = vf_fmadd(p, x2, vf_set1(-2.95459980854025e-03f));
    p = vf_fmadd(p, x2, vf_set1(-1.60960333262415e-02f));
    p = vf_mul(p, x);
    vf q = vf_set1(-1.45660718464996e-05f);
    q = vf_fmadd(q, x2, vf_set1(-2.13374055278905e-04f));
    q = vf_fmadd(q, x2, vf_set1(-1.68282697438203e-03f));
    q = vf_fmadd(q, x2, vf_set1(-7.37332916720468e-03f));
    q = vf_fmadd(q, x2, vf_set1(-1.42647390514189e-02f));
    return vf_div(p, q);
}

/* tanh(x) as x p(x^2) / q(x^2) (degrees 13 over 6) on [-7.9, 7.9], where float tanh reaches
 * +-1; relative error below 4e-7 (checked against double tanh over [-10, 10] and down to 1e-8).
 * The clamp takes the bound first so that a NaN x stays NaN. */
static inline vf vf_tanh(vf x) {
    const float bound = 7.90531110763549805f;
    x = vf_max(vf_set1(-bound), vf_min(vf_set1(bound), x));
    vf x2 = vf_mul(x, x);
    vf p = vf_set1(-2.76076847742355e-16f);
    p = vf_fmadd(p, x2, vf_set1(2.00018790482477e-13f));
    p = vf_fmadd(p, x2, vf_set1(-8.60467152213735e-11f));
    p = vf_fmadd(p, x2, vf_set1(5.12229709037114e-08f));
    p = vf_fmadd(p, x2, vf_set1(1.48572235717979e-05f));
    p = vf_fmadd(p, x2, vf_set1(6.37261928875436e-04f));
    p = vf_fmadd(p, x2, vf_set1(4.89352455891786e-03f));
    p = vf_mul(p, x);
    vf q = vf_set1(1.19825839466702e-06f);
    q = vf_fmadd(q, x2, vf_set1(1.18534705686654e-04f));
    q = vf_fmadd(q, x2, vf_set1(2.26843463243900e-03f));
    q = vf_fmadd(q, x2, vf_set1(4.89352518554385e-03f));
    return vf_div(p, q);
}

/* GELU: x / 2 * (1 + erf(x / sqrt(2))); a NaN x stays NaN through x / 2. */
static inline vf vf_gelu(vf x) {
    vf e = vf_erf(vf_mul(x, vf_set1(0.70710678118654752f)));
    vf half_x = vf_mul(x, vf_set1(0.5f));
    return vf_fmadd(half_x, e, half_x);
}

#endif
