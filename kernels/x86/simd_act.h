/* Fused activations on SIMD vectors, for the x86 variants' epilogues. max/min take the bound
 * first so that a NaN input passes through as NaN, as in the reference (ref/act.h). Kinds
 * without a vector form return 0 and the caller applies the scalar form after the store. */
#ifndef KANN_X86_SIMD_ACT_H
#define KANN_X86_SIMD_ACT_H

#include <immintrin.h>

#include "kann_kernels.h"

/* 1 if act has a vector form here (none, relu, clip). */
static inline int kann_act_vectorizes(const kann_act *act) {
    return act->kind == KANN_ACT_NONE || act->kind == KANN_ACT_RELU || act->kind == KANN_ACT_CLIP;
}

#ifdef __AVX512F__
static inline __m512 kann_act512(__m512 v, const kann_act *act, __m512 lo, __m512 hi) {
    if (act->kind == KANN_ACT_NONE) return v;
    v = _mm512_max_ps(lo, v);
    return act->kind == KANN_ACT_CLIP ? _mm512_min_ps(hi, v) : v;
}
#endif

#ifdef __AVX2__
static inline __m256 kann_act256(__m256 v, const kann_act *act, __m256 lo, __m256 hi) {
    if (act->kind == KANN_ACT_NONE) return v;
    v = _mm256_max_ps(lo, v);
    return act->kind == KANN_ACT_CLIP ? _mm256_min_ps(hi, v) : v;
}
#endif

/* The bounds kann_act512/256 use: clip's, or relu's [0, +inf). */
static inline float kann_act_lo(const kann_act *act) {
    return act->kind == KANN_ACT_CLIP ? act->alpha : 0.0f;
}
static inline float kann_act_hi(const kann_act *act) {
    return act->kind == KANN_ACT_CLIP ? act->beta : __builtin_inff();
}

#endif
