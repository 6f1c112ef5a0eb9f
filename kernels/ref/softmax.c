/* softmax / log-softmax reference kernel (numerically stable: the maximum is subtracted before
 * exp) and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

/* Inner positions handled at once when the axis is not innermost. */
#define SOFTMAX_CHUNK 64

/* Softmax along a contiguous row of n elements. y may equal x. */
static void softmax_row(const float *x, float *y, size_t n, int log_softmax) {
    float max = x[0];
    for (size_t a = 1; a < n; a++)
        max = x[a] > max ? x[a] : max;
    float sum = 0.0f;
    if (log_softmax) {
        for (size_t a = 0; a < n; a++)
            sum += expf(x[a] - max);
        float shift = max + logf(sum);
        for (size_t a = 0; a < n; a++)
            y[a] = x[a] - shift;
    } else {
        for (size_t a = 0; a < n; a++) {
            y[a] = expf(x[a] - max);
            sum += y[a];
        }
        float inv = 1.0f / sum;
        for (size_t a = 0; a < n; a++)
            y[a] *= inv;
    }
}

/* Softmax along a strided axis for `len` neighbouring inner positions at once, so that every
 * pass reads contiguous memory. y may equal x. */
static void softmax_columns(const float *x, float *y, size_t axis_len, size_t inner, size_t len,
                            int log_softmax) {
    float max[SOFTMAX_CHUNK], sum[SOFTMAX_CHUNK];
    for (size_t i = 0; i < len; i++) {
        max[i] = x[i];
        sum[i] = 0.0f;
    }
    for (size_t a = 1; a < axis_len; a++) {
        const float *xa = x + a * inner;
        for (size_t i = 0; i < len; i++)
            max[i] = xa[i] > max[i] ? xa[i] : max[i];
    }
    for (size_t a = 0; a < axis_len; a++) {
        const float *xa = x + a * inner;
        float *ya = y + a * inner;
        if (log_softmax) {
            for (size_t i = 0; i < len; i++)
                sum[i] += expf(xa[i] - max[i]);
        } else {
            for (size_t i = 0; i < len; i++) {
                ya[i] = expf(xa[i] - max[i]);
                sum[i] += ya[i];
            }
        }
    }
    for (size_t i = 0; i < len; i++) /* reuse sum as the final scale or shift */
        sum[i] = log_softmax ? max[i] + logf(sum[i]) : 1.0f / sum[i];
    for (size_t a = 0; a < axis_len; a++) {
        const float *xa = x + a * inner;
        float *ya = y + a * inner;
        if (log_softmax) {
            for (size_t i = 0; i < len; i++)
                ya[i] = xa[i] - sum[i];
        } else {
            for (size_t i = 0; i < len; i++)
                ya[i] *= sum[i];
        }
    }
}

void kann_f32_softmax_ref(const void *args, const kann_exec *ex) {
    const kann_softmax_args *a = args;
    size_t axis_len = a->axis_len, inner = a->inner;
    if (a->tile.begin >= a->tile.end || axis_len == 0 || inner == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    int log_softmax = a->log != 0;
    size_t block = axis_len * inner;
    for (size_t o = a->tile.begin; o < a->tile.end; o++) {
        const float *xo = x + o * block;
        float *yo = y + o * block;
        if (inner == 1) {
            softmax_row(xo, yo, axis_len, log_softmax);
            continue;
        }
        for (size_t i0 = 0; i0 < inner; i0 += SOFTMAX_CHUNK) {
            size_t len = inner - i0 < SOFTMAX_CHUNK ? inner - i0 : SOFTMAX_CHUNK;
            softmax_columns(xo + i0, yo + i0, axis_len, inner, len, log_softmax);
        }
    }
}

kann_status kann_softmax_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_softmax_args *a = args;
    kann_status s;
    uint32_t dims[3] = {a->outer, a->axis_len, a->inner};
    if ((s = kann_check_tile(&a->tile, 1, &a->outer, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, dims, 3, 0, 0, "softmax x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, dims, 3, 1, 0, "softmax y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
