/* Activation epilogues (kann_act_kind), shared by every reference kernel. Comparisons are
 * written so that a NaN input stays NaN instead of being clamped to a bound. */
#ifndef KANN_REF_ACT_H
#define KANN_REF_ACT_H

#include <math.h>
#include <stddef.h>

#include "kann_kernels.h"

static inline float kann_act_relu(float x) {
    return x < 0.0f ? 0.0f : x;
}

static inline float kann_act_clip(float x, float lo, float hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

/* log(1 + exp(x)) without overflow for large x. */
static inline float kann_act_softplus(float x) {
    return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

static inline float kann_act_apply(const kann_act *a, float x) {
    switch ((kann_act_kind)a->kind) {
    case KANN_ACT_NONE:
        return x;
    case KANN_ACT_RELU:
        return kann_act_relu(x);
    case KANN_ACT_CLIP:
        return kann_act_clip(x, a->alpha, a->beta);
    case KANN_ACT_LEAKY_RELU:
        return x < 0.0f ? a->alpha * x : x;
    case KANN_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case KANN_ACT_HARD_SIGMOID:
        return kann_act_clip(a->alpha * x + a->beta, 0.0f, 1.0f);
    case KANN_ACT_HARD_SWISH:
        return x * kann_act_clip(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);
    case KANN_ACT_TANH:
        return tanhf(x);
    case KANN_ACT_ELU:
        return x < 0.0f ? a->alpha * expm1f(x) : x;
    case KANN_ACT_SELU:
        return a->beta * (x <= 0.0f ? a->alpha * expm1f(x) : x);
    case KANN_ACT_CELU:
        return x < 0.0f ? a->alpha * expm1f(x / a->alpha) : x;
    case KANN_ACT_SOFTPLUS:
        return kann_act_softplus(x);
    case KANN_ACT_SOFTSIGN:
        return x / (1.0f + fabsf(x));
    case KANN_ACT_THRESHOLDED_RELU:
        return x > a->alpha ? x : 0.0f;
    case KANN_ACT_GELU:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case KANN_ACT_GELU_TANH:
        return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case KANN_ACT_MISH:
        return x * tanhf(kann_act_softplus(x));
    case KANN_ACT_SILU:
        return x / (1.0f + expf(-x));
    case KANN_ACT_COUNT:
        break;
    }
    return x; /* unreachable on validated arguments */
}

/* Applies the activation to v[0..n) in place, choosing the kind once so that the loops of the
 * common kinds vectorize. */
static inline void kann_act_apply_row(const kann_act *a, float *v, size_t n) {
    switch ((kann_act_kind)a->kind) {
    case KANN_ACT_NONE:
        return;
    case KANN_ACT_RELU:
        for (size_t i = 0; i < n; i++)
            v[i] = kann_act_relu(v[i]);
        return;
    case KANN_ACT_CLIP: {
        float lo = a->alpha, hi = a->beta;
        for (size_t i = 0; i < n; i++)
            v[i] = kann_act_clip(v[i], lo, hi);
        return;
    }
    default:
        for (size_t i = 0; i < n; i++)
            v[i] = kann_act_apply(a, v[i]);
        return;
    }
}

#endif
