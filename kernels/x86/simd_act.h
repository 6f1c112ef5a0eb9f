/* Fused activations on SIMD vectors, for the x86 variants' epilogues, written once over
 * vec_math.h's width-neutral vectors: the including translation unit defines KANN_VEC_BITS
 * (512 or 256) and includes vec_math.h first. max/min take the bound first so that a NaN input
 * passes through as NaN, as in the reference (ref/act.h). Kinds without a vector form here
 * (mish, softplus, softsign, selu, celu, thresholded relu) return 0 from kann_act_vectorizes
 * and the caller applies the scalar form after the store. */
#ifndef KANN_X86_SIMD_ACT_H
#define KANN_X86_SIMD_ACT_H

#ifndef KANN_X86_VEC_MATH_H
#error "define KANN_VEC_BITS and include vec_math.h before simd_act.h"
#endif

#include "kann_kernels.h"

/* 1 if act has a vector form (vf_act). */
static inline int kann_act_vectorizes(const kann_act *act) {
    switch (act->kind) {
    case KANN_ACT_NONE:
    case KANN_ACT_RELU:
    case KANN_ACT_CLIP:
    case KANN_ACT_LEAKY_RELU:
    case KANN_ACT_HARD_SIGMOID:
    case KANN_ACT_HARD_SWISH:
    case KANN_ACT_SIGMOID:
    case KANN_ACT_SILU:
    case KANN_ACT_ELU:
    case KANN_ACT_GELU:
    case KANN_ACT_TANH:
    case KANN_ACT_GELU_TANH:
        return 1;
    default:
        return 0;
    }
}

/* The bounds of relu and clip, which the epilogues set up once per call: clip's, or relu's
 * [0, +inf). */
static inline float kann_act_lo(const kann_act *act) {
    return act->kind == KANN_ACT_CLIP ? act->alpha : 0.0f;
}
static inline float kann_act_hi(const kann_act *act) {
    return act->kind == KANN_ACT_CLIP ? act->beta : __builtin_inff();
}

/* 1 if act is a clamp to [kann_act_clamp_lo, kann_act_hi]: none (no bounds), relu or clip, which
 * a store applies as a max and a min instead of going through vf_act's switch per vector. */
static inline int kann_act_is_clamp(const kann_act *act) {
    return act->kind == KANN_ACT_NONE || act->kind == KANN_ACT_RELU || act->kind == KANN_ACT_CLIP;
}
/* The clamp's lower bound: -inf for none, else kann_act_lo. */
static inline float kann_act_clamp_lo(const kann_act *act) {
    return act->kind == KANN_ACT_NONE ? -__builtin_inff() : kann_act_lo(act);
}
/* The lower bound a store applies: the clamp's where it treats act as one (clamp), else vf_act's
 * lo. */
static inline float kann_act_store_lo(const kann_act *act, int clamp) {
    return clamp ? kann_act_clamp_lo(act) : kann_act_lo(act);
}

/* The logistic sigmoid 1 / (1 + e^-x); 0 below -88, near where libm's e^-x overflows (those
 * lanes are masked, so e^-x needs no clamp there), and 1 above 87 (e^-87 is lost against 1), so
 * e^-x stays a normal float. A NaN x stays NaN. */
static inline vf vf_sigmoid(vf x) {
    vf e = vf_exp_in_range(vf_sub(vf_set1(0.0f), vf_min(vf_set1(87.0f), x)));
    return vf_zero_below(vf_rcp(vf_add(vf_set1(1.0f), e)), x, vf_set1(-88.0f));
}

/* SiLU x * sigmoid(x): -inf gives NaN, as in libm. Called directly (no vf_act switch) by the
 * stores that specialize on it. */
static inline vf vf_silu(vf x) {
    return vf_mul(x, vf_sigmoid(x));
}

/* The activation of kind act->kind on v (a kind kann_act_vectorizes accepts; others pass v
 * through). lo and hi: vf_set1(kann_act_lo(act)) and vf_set1(kann_act_hi(act)). */
static inline vf vf_act(vf v, const kann_act *act, vf lo, vf hi) {
    const vf zero = vf_set1(0.0f), one = vf_set1(1.0f);
    switch (act->kind) {
    case KANN_ACT_RELU:
        return vf_max(lo, v);
    case KANN_ACT_CLIP:
        return vf_min(hi, vf_max(lo, v));
    case KANN_ACT_LEAKY_RELU: /* x >= 0: x + alpha * 0; x < 0: 0 + alpha * x */
        return vf_fmadd(vf_set1(act->alpha), vf_min(zero, v), vf_max(zero, v));
    case KANN_ACT_HARD_SIGMOID:
        return vf_min(one, vf_max(zero, vf_fmadd(vf_set1(act->alpha), v, vf_set1(act->beta))));
    case KANN_ACT_HARD_SWISH:
        return vf_mul(v,
                      vf_min(one, vf_max(zero, vf_fmadd(v, vf_set1(1.0f / 6.0f), vf_set1(0.5f)))));
    case KANN_ACT_SIGMOID:
        return vf_sigmoid(v);
    case KANN_ACT_SILU:
        return vf_silu(v);
    case KANN_ACT_ELU: /* x >= 0: x + alpha (e^0 - 1); x < 0: 0 + alpha (e^x - 1) */
        return vf_fmadd(vf_set1(act->alpha), vf_sub(vf_exp(vf_min(zero, v)), one), vf_max(zero, v));
    case KANN_ACT_GELU:
        return vf_gelu(v);
    case KANN_ACT_TANH:
        return vf_tanh(v);
    case KANN_ACT_GELU_TANH: { /* x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
        vf x2 = vf_mul(v, v);
        vf inner =
            vf_mul(vf_set1(0.79788456080286536f), vf_fmadd(vf_mul(vf_set1(0.044715f), x2), v, v));
        vf half_x = vf_mul(v, vf_set1(0.5f));
        return vf_fmadd(half_x, vf_tanh(inner), half_x);
    }
    default:
        return v;
    }
}

#endif
