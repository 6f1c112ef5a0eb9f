/* The binary kernel's row function and its walk over the output, shared by the reference
 * (kernels/ref/binary.c) and the x86 variants (kernels/x86/eltwise.h): a variant computes the
 * rows it vectorizes itself and hands every other row to kann_binary_row, so that both give
 * the same results there. */
#ifndef KANN_REF_BINARY_H
#define KANN_REF_BINARY_H

#include <math.h>
#include <stddef.h>

#include "kann_kernels.h"
#include "ref/nd.h"

/* One row: a and b at their strides; the common cases get loops without strides. */
#define KANN_BINARY_ROW(OP)                                                                        \
    do {                                                                                           \
        if (a_stride == 1 && b_stride == 1) {                                                      \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = a[i] OP b[i];                                                               \
        } else if (a_stride == 1 && b_stride == 0) {                                               \
            float bv = b[0];                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = a[i] OP bv;                                                                 \
        } else if (a_stride == 0 && b_stride == 1) {                                               \
            float av = a[0];                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = av OP b[i];                                                                 \
        } else {                                                                                   \
            for (size_t i = 0; i < n; i++)                                                         \
                y[i] = a[i * a_stride] OP b[i * b_stride];                                         \
        }                                                                                          \
    } while (0)

/* The same with a function of the two operands. */
#define KANN_BINARY_ROW_FN(FN)                                                                     \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++)                                                             \
            y[i] = FN(a[i * a_stride], b[i * b_stride]);                                           \
    } while (0)

static inline float kann_binary_max(float x, float z) {
    return x != x || z != z ? x + z : x > z ? x : z; /* NaN wins, as numpy's maximum */
}

static inline float kann_binary_min(float x, float z) {
    return x != x || z != z ? x + z : x < z ? x : z;
}

static inline float kann_binary_prelu(float x, float slope) {
    return x < 0.0f ? x * slope : x;
}

/* 2 or 3 when b (at b_stride) is that constant exponent, for which POW multiplies instead of
 * calling powf (tens of cycles per element): x^2 and x^3 are the powers exporters write for
 * squares (RMS and layer norms, variances) and GELU's tanh form. x * x is powf's correctly
 * rounded result, x * x * x within an ulp of it. 0 otherwise. */
static inline int kann_binary_small_power(const float *b, size_t b_stride) {
    return b_stride == 0 && (b[0] == 2.0f || b[0] == 3.0f) ? (int)b[0] : 0;
}

static inline void kann_binary_pow_small(const float *a, size_t a_stride, int cube, float *y,
                                         size_t n) {
    if (cube)
        for (size_t i = 0; i < n; i++) {
            float x = a[i * a_stride];
            y[i] = x * x * x;
        }
    else
        for (size_t i = 0; i < n; i++) {
            float x = a[i * a_stride];
            y[i] = x * x;
        }
}

/* y[i] = a[i * a_stride] OP b[i * b_stride] for i < n, without the activation. */
static inline void kann_binary_row(kann_binary_op op, const float *a, size_t a_stride,
                                   const float *b, size_t b_stride, float *y, size_t n) {
    switch (op) {
    case KANN_BINARY_ADD:
        KANN_BINARY_ROW(+);
        break;
    case KANN_BINARY_SUB:
        KANN_BINARY_ROW(-);
        break;
    case KANN_BINARY_MUL:
        KANN_BINARY_ROW(*);
        break;
    case KANN_BINARY_DIV:
        KANN_BINARY_ROW(/);
        break;
    case KANN_BINARY_POW: {
        int power = kann_binary_small_power(b, b_stride);
        if (power)
            kann_binary_pow_small(a, a_stride, power == 3, y, n);
        else
            KANN_BINARY_ROW_FN(powf);
        break;
    }
    case KANN_BINARY_MAX:
        KANN_BINARY_ROW_FN(kann_binary_max);
        break;
    case KANN_BINARY_MIN:
        KANN_BINARY_ROW_FN(kann_binary_min);
        break;
    case KANN_BINARY_FMOD:
        KANN_BINARY_ROW_FN(fmodf);
        break;
    case KANN_BINARY_PRELU:
        KANN_BINARY_ROW_FN(kann_binary_prelu);
        break;
    default: /* not a float32 arithmetic op: refused by the validator */
        break;
    }
}

/* What a binary kernel computes for one row of its tile: y[0..n) = act(a OP b) with a and b
 * at their strides (the innermost dim's, after kann_nd_init merged what it could). */
typedef void (*kann_binary_row_fn)(const kann_binary_args *p, const float *a, size_t a_stride,
                                   const float *b, size_t b_stride, float *y, size_t n);

/* Walks p's tile one innermost row at a time (a row cut where the tile begins or ends),
 * calling row on each. Inlined with a constant row, the call is direct. */
static inline void kann_binary_rows(const kann_binary_args *p, const kann_exec *ex,
                                    kann_binary_row_fn row) {
    size_t begin = p->tile.begin, end = p->tile.end;
    if (begin >= end) return;
    const float *a = kann_cref(ex, p->a);
    const float *b = kann_cref(ex, p->b);
    float *y = kann_mref(ex, p->y);
    const uint32_t *strides[2] = {p->a_strides, p->b_strides};
    kann_nd nd;
    kann_nd_init(&nd, p->rank, p->dims, strides, 2);
    kann_nd_seek(&nd, begin);
    size_t a_stride = nd.strides[0][nd.rank - 1], b_stride = nd.strides[1][nd.rank - 1];
    for (size_t pos = begin;;) {
        size_t n = kann_nd_row_left(&nd);
        if (n > end - pos) n = end - pos;
        row(p, a + nd.offsets[0], a_stride, b + nd.offsets[1], b_stride, y + pos, n);
        pos += n;
        if (pos == end) break;
        kann_nd_next_row(&nd);
    }
}

#endif
