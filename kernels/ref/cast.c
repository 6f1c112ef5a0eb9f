/* cast reference kernel (conversion between float32, the integer types and bool) and its
 * validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/typed.h"

/* Float to integer: truncation, NaN to 0, saturation at the type's range (C leaves
 * out-of-range conversions undefined). */
static int64_t float_to_int(float v, uint32_t to) {
    if (v != v) return 0;
    double lo, hi;
    switch (to) {
    case KANN_DTYPE_U8:
        lo = 0.0, hi = 255.0;
        break;
    case KANN_DTYPE_I8:
        lo = -128.0, hi = 127.0;
        break;
    case KANN_DTYPE_I32:
        lo = -2147483648.0, hi = 2147483647.0;
        break;
    default: /* I64: the largest float below 2^63 converts exactly */
        if (v >= 9223372036854775808.0f) return INT64_MAX;
        if (v <= -9223372036854775808.0f) return INT64_MIN;
        return (int64_t)v;
    }
    double d = v;
    return (int64_t)(d < lo ? lo : d > hi ? hi : d);
}

void kann_cast_ref(const void *args, const kann_exec *ex) {
    const kann_cast_args *a = args;
    size_t begin = a->tile.begin, end = a->tile.end;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *y = kann_mbytes(ex, a->y);
    uint32_t from = a->from, to = a->to;
    if (from == KANN_DTYPE_F32) {
        const float *xf = (const float *)(const void *)x;
        if (to == KANN_DTYPE_F32) {
            float *yf = (float *)(void *)y;
            for (size_t i = begin; i < end; i++)
                yf[i] = xf[i];
        } else if (to == KANN_DTYPE_BOOL) {
            for (size_t i = begin; i < end; i++)
                y[i] = xf[i] != 0.0f;
        } else {
            for (size_t i = begin; i < end; i++)
                kann_store_int(y, to, i, float_to_int(xf[i], to));
        }
    } else if (to == KANN_DTYPE_F32) {
        float *yf = (float *)(void *)y;
        for (size_t i = begin; i < end; i++) {
            int64_t v = kann_load_int(x, from, i);
            yf[i] = from == KANN_DTYPE_BOOL ? (float)(v != 0) : (float)v;
        }
    } else {
        for (size_t i = begin; i < end; i++) {
            int64_t v = kann_load_int(x, from, i);
            kann_store_int(y, to, i, from == KANN_DTYPE_BOOL ? v != 0 : v);
        }
    }
}

kann_status kann_cast_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_cast_args *a = args;
    kann_status s;
    if (!kann_typed_size(a->from) || !kann_typed_size(a->to)) {
        kann_msg_set(err, KANN_E_CORRUPT, "cast: unsupported dtypes ");
        kann_msg_append_u64(err, a->from);
        kann_msg_append(err, " to ");
        kann_msg_append_u64(err, a->to);
        return KANN_E_CORRUPT;
    }
    if (a->reserved != 0) return kann_msg_set(err, KANN_E_CORRUPT, "cast: reserved is not zero");
    if ((s = kann_check_tile(&a->tile, 1, &a->count, err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->x, a->from, a->count, 0, "cast x", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->y, a->to, a->count, 1, "cast y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
