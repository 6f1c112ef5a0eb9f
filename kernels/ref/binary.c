/* binary reference kernel (float32 elementwise arithmetic with broadcasting through strides)
 * and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"
#include "ref/nd.h"

/* One row: a and b at their strides; the common cases get loops without strides. */
#define BINARY_ROW(OP)                                                                             \
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
#define BINARY_ROW_FN(FN)                                                                          \
    do {                                                                                           \
        for (size_t i = 0; i < n; i++)                                                             \
            y[i] = FN(a[i * a_stride], b[i * b_stride]);                                           \
    } while (0)

static inline float binary_max(float x, float z) {
    return x != x || z != z ? x + z : x > z ? x : z; /* NaN wins, as numpy's maximum */
}

static inline float binary_min(float x, float z) {
    return x != x || z != z ? x + z : x < z ? x : z;
}

static inline float binary_prelu(float x, float slope) {
    return x < 0.0f ? x * slope : x;
}

/* x^2 and x^3, the powers exporters write for squares (RMS and layer norms, variances) and
 * GELU's tanh form, by multiplication instead of powf (tens of cycles per element): x * x is
 * powf's correctly rounded result, x * x * x within an ulp of it. */
static void pow_small(const float *a, size_t a_stride, int cube, float *y, size_t n) {
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

static void binary_row(kann_binary_op op, const float *a, size_t a_stride, const float *b,
                       size_t b_stride, float *y, size_t n) {
    switch (op) {
    case KANN_BINARY_ADD:
        BINARY_ROW(+);
        break;
    case KANN_BINARY_SUB:
        BINARY_ROW(-);
        break;
    case KANN_BINARY_MUL:
        BINARY_ROW(*);
        break;
    case KANN_BINARY_DIV:
        BINARY_ROW(/);
        break;
    case KANN_BINARY_POW:
        if (b_stride == 0 && (b[0] == 2.0f || b[0] == 3.0f))
            pow_small(a, a_stride, b[0] == 3.0f, y, n);
        else
            BINARY_ROW_FN(powf);
        break;
    case KANN_BINARY_MAX:
        BINARY_ROW_FN(binary_max);
        break;
    case KANN_BINARY_MIN:
        BINARY_ROW_FN(binary_min);
        break;
    case KANN_BINARY_FMOD:
        BINARY_ROW_FN(fmodf);
        break;
    case KANN_BINARY_PRELU:
        BINARY_ROW_FN(binary_prelu);
        break;
    default: /* not a float32 arithmetic op: refused by the validator */
        break;
    }
}

void kann_f32_binary_ref(const void *args, const kann_exec *ex) {
    const kann_binary_args *p = args;
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
        binary_row((kann_binary_op)p->op, a + nd.offsets[0], a_stride, b + nd.offsets[1], b_stride,
                   y + pos, n);
        kann_act_apply_row(&p->act, y + pos, n);
        pos += n;
        if (pos == end) break;
        kann_nd_next_row(&nd);
    }
}

kann_status kann_binary_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_binary_args *a = args;
    kann_status s;
    if (a->op > KANN_BINARY_FMOD && a->op != KANN_BINARY_PRELU) {
        kann_msg_set(err, KANN_E_CORRUPT, "binary: not a float32 arithmetic op: ");
        kann_msg_append_u64(err, a->op);
        return KANN_E_CORRUPT;
    }
    if (a->rank < 1 || a->rank > KANN_MAX_RANK) {
        kann_msg_set(err, KANN_E_CORRUPT, "binary: rank ");
        kann_msg_append_u64(err, a->rank);
        kann_msg_append(err, " not in 1..6");
        return KANN_E_CORRUPT;
    }
    uint32_t count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "binary: more than 2^32-1 output elements");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    if ((s = kann_check_strided(b, a->a, a->rank, a->dims, a->a_strides, 0, 0, "binary a", err)) !=
            KANN_OK ||
        (s = kann_check_strided(b, a->b, a->rank, a->dims, a->b_strides, 0, 0, "binary b", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, a->dims, a->rank, 1, 0, "binary y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
