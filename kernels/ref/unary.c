/* unary reference kernel (elementwise math, tests and logic over float32, integers and bool)
 * and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/typed.h"

/* Round half to even without depending on the floating-point rounding mode. */
static float round_half_even(float x) {
    float r = floorf(x), diff = x - r;
    if (diff > 0.5f || (diff == 0.5f && fmodf(r, 2.0f) != 0.0f)) r += 1.0f;
    return copysignf(r, x); /* -0.4 rounds to -0 */
}

static float sign_f32(float x) {
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x; /* 0, -0 and NaN stay */
}

/* One float32 op over x[0..n) into y; the op is chosen once per call so each loop is plain. */
#define UNARY_LOOP(EXPR)                                                                           \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++) {                                                           \
            float v = x[i];                                                                        \
            y[i] = (EXPR);                                                                         \
        }                                                                                          \
    } while (0)

static void unary_f32(kann_unary_op op, const float *x, float *y, size_t n) {
    switch (op) {
    case KANN_UNARY_ABS:
        UNARY_LOOP(fabsf(v));
        break;
    case KANN_UNARY_NEG:
        UNARY_LOOP(-v);
        break;
    case KANN_UNARY_SIGN:
        UNARY_LOOP(sign_f32(v));
        break;
    case KANN_UNARY_EXP:
        UNARY_LOOP(expf(v));
        break;
    case KANN_UNARY_LOG:
        UNARY_LOOP(logf(v));
        break;
    case KANN_UNARY_SQRT:
        UNARY_LOOP(sqrtf(v));
        break;
    case KANN_UNARY_RECIPROCAL:
        UNARY_LOOP(1.0f / v);
        break;
    case KANN_UNARY_FLOOR:
        UNARY_LOOP(floorf(v));
        break;
    case KANN_UNARY_CEIL:
        UNARY_LOOP(ceilf(v));
        break;
    case KANN_UNARY_ROUND:
        UNARY_LOOP(round_half_even(v));
        break;
    case KANN_UNARY_SIN:
        UNARY_LOOP(sinf(v));
        break;
    case KANN_UNARY_COS:
        UNARY_LOOP(cosf(v));
        break;
    case KANN_UNARY_TAN:
        UNARY_LOOP(tanf(v));
        break;
    case KANN_UNARY_ASIN:
        UNARY_LOOP(asinf(v));
        break;
    case KANN_UNARY_ACOS:
        UNARY_LOOP(acosf(v));
        break;
    case KANN_UNARY_ATAN:
        UNARY_LOOP(atanf(v));
        break;
    case KANN_UNARY_SINH:
        UNARY_LOOP(sinhf(v));
        break;
    case KANN_UNARY_COSH:
        UNARY_LOOP(coshf(v));
        break;
    case KANN_UNARY_ASINH:
        UNARY_LOOP(asinhf(v));
        break;
    case KANN_UNARY_ACOSH:
        UNARY_LOOP(acoshf(v));
        break;
    case KANN_UNARY_ATANH:
        UNARY_LOOP(atanhf(v));
        break;
    case KANN_UNARY_ERF:
        UNARY_LOOP(erff(v));
        break;
    default: /* the bool-valued and bool ops are not float32 -> float32 */
        break;
    }
}

static int64_t unary_int(kann_unary_op op, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (op) {
    case KANN_UNARY_ABS:
        return v < 0 ? (int64_t)(0 - u) : v; /* the most negative value wraps to itself */
    case KANN_UNARY_NEG:
        return (int64_t)(0 - u);
    case KANN_UNARY_SIGN:
        return (v > 0) - (v < 0);
    default: /* NOT */
        return v == 0;
    }
}

void kann_unary_ref(const void *args, const kann_exec *ex) {
    const kann_unary_args *a = args;
    size_t begin = a->tile.begin, n = (size_t)a->tile.end - begin;
    if (n == 0) return;
    const uint8_t *xb = kann_cbytes(ex, a->x);
    uint8_t *yb = kann_mbytes(ex, a->y);
    kann_unary_op op = (kann_unary_op)a->op;
    if (a->dtype == KANN_DTYPE_F32) {
        const float *x = (const float *)(const void *)xb + begin;
        if (op == KANN_UNARY_IS_NAN || op == KANN_UNARY_IS_INF) {
            uint8_t *y = yb + begin;
            int pos = (a->flags & 1u) != 0, neg = (a->flags & 2u) != 0;
            for (size_t i = 0; i < n; i++) {
                float v = x[i];
                y[i] = op == KANN_UNARY_IS_NAN ? v != v
                                               : (pos && v == INFINITY) || (neg && v == -INFINITY);
            }
            return;
        }
        unary_f32(op, x, (float *)(void *)yb + begin, n);
        return;
    }
    for (size_t i = begin; i < begin + n; i++)
        kann_store_int(yb, a->dtype, i, unary_int(op, kann_load_int(xb, a->dtype, i)));
}

/* Whether the kernel runs op on dtype. */
static int unary_supported(uint32_t op, uint32_t dtype) {
    if (op >= KANN_UNARY_COUNT) return 0;
    if (dtype == KANN_DTYPE_F32) return op != KANN_UNARY_NOT;
    if (dtype == KANN_DTYPE_BOOL) return op == KANN_UNARY_NOT;
    return kann_typed_is_int(dtype) &&
           (op == KANN_UNARY_ABS || op == KANN_UNARY_NEG || op == KANN_UNARY_SIGN);
}

kann_status kann_unary_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_unary_args *a = args;
    kann_status s;
    if (!unary_supported(a->op, a->dtype)) {
        kann_msg_set(err, KANN_E_CORRUPT, "unary: op ");
        kann_msg_append_u64(err, a->op);
        kann_msg_append(err, " on dtype ");
        kann_msg_append_u64(err, a->dtype);
        kann_msg_append(err, " is not supported");
        return KANN_E_CORRUPT;
    }
    if (a->op != KANN_UNARY_IS_INF ? a->flags != 0 : a->flags > 3u)
        return kann_msg_set(err, KANN_E_CORRUPT, "unary: unknown flags");
    uint32_t y_dtype =
        a->op == KANN_UNARY_IS_NAN || a->op == KANN_UNARY_IS_INF ? KANN_DTYPE_BOOL : a->dtype;
    if ((s = kann_check_tile(&a->tile, 1, &a->count, err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->x, a->dtype, a->count, 0, "unary x", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->y, y_dtype, a->count, 1, "unary y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
