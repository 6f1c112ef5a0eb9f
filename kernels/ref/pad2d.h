/* The row loop of pad2d, shared by the reference kernel and the SIMD variants, each with its own
 * row fill and row copy: the columns of a row of y that come from x, and the row of x (if any)
 * they come from. */
#ifndef KANN_REF_PAD2D_H
#define KANN_REF_PAD2D_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"

typedef void (*kann_pad2d_zero_fn)(float *d, size_t n);
typedef void (*kann_pad2d_copy_fn)(float *d, const float *s, size_t n);

/* Rows [tile.begin, tile.end) of y: columns [lo, hi) copy a row of x, the others are zero, and
 * rows above or below x (or with no column inside it) are all zero. */
static inline __attribute__((always_inline)) void
kann_pad2d_rows(const kann_pad2d_args *a, const kann_exec *ex, kann_pad2d_zero_fn zero,
                kann_pad2d_copy_fn copy) {
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t w_out = a->w_out, w_in = a->w_in, pad_left = a->pad_left;
    size_t lo = pad_left < w_out ? pad_left : w_out;
    size_t hi = pad_left + w_in < w_out ? pad_left + w_in : w_out;
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        size_t c = r / a->h_out;
        int64_t i = (int64_t)(r - c * a->h_out) - a->pad_top;
        float *yr = y + r * w_out;
        if (i < 0 || i >= (int64_t)a->h_in || hi == lo) {
            zero(yr, w_out);
            continue;
        }
        zero(yr, lo);
        copy(yr + lo, x + (c * a->h_in + (size_t)i) * w_in, hi - lo);
        zero(yr + hi, w_out - hi);
    }
}

#endif
