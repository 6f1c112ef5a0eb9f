/* The row loop of pad2d, shared by the reference kernel and the SIMD variants, each with its own
 * row fill and row copy: the columns of a row of y that come from x, and the row of x (if any)
 * they come from. */
#ifndef KANN_REF_PAD2D_H
#define KANN_REF_PAD2D_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"

/* One row of y, w floats: columns [lo, hi) from the row of x at xr, the others zero; all zero
 * where xr is NULL. */
typedef void (*kann_pad2d_row_fn)(float *yr, const float *xr, size_t lo, size_t hi, size_t w);

/* Rows [tile.begin, tile.end) of y: columns [lo, hi) copy a row of x, the others are zero, and
 * rows above or below x (or with no column inside it) are all zero. The row's channel and its
 * row there are counted along (no division a row: a 7x7 map's rows are 9 floats). */
static inline __attribute__((always_inline)) void
kann_pad2d_rows(const kann_pad2d_args *a, const kann_exec *ex, kann_pad2d_row_fn row) {
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t w_out = a->w_out, w_in = a->w_in, pad_left = a->pad_left;
    size_t lo = pad_left < w_out ? pad_left : w_out;
    size_t hi = pad_left + w_in < w_out ? pad_left + w_in : w_out;
    size_t c = a->tile.begin / a->h_out, oh = a->tile.begin - c * a->h_out;
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        int64_t i = (int64_t)oh - a->pad_top;
        int inside = i >= 0 && i < (int64_t)a->h_in && hi > lo;
        row(y + r * w_out, inside ? x + (c * a->h_in + (size_t)i) * w_in : NULL, lo, hi, w_out);
        if (++oh == a->h_out) {
            oh = 0;
            c++;
        }
    }
}

#endif
