/* The row plan of pad2d, shared by the reference kernel and the SIMD variants: which columns of
 * a row of y come from x, and which row of x (if any) they come from. */
#ifndef KANN_REF_PAD2D_H
#define KANN_REF_PAD2D_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"

/* Columns [*lo, *hi) of every row of y copy a row of x; the others are zero. */
static inline void kann_pad2d_columns(const kann_pad2d_args *a, size_t *lo, size_t *hi) {
    size_t w_out = a->w_out, pad_left = a->pad_left, w_in = a->w_in;
    *lo = pad_left < w_out ? pad_left : w_out;
    *hi = pad_left + w_in < w_out ? pad_left + w_in : w_out;
}

/* The row of x that row r of y (c * h_out of them) copies into its columns [lo, hi); NULL
 * where the row is all zero (above or below x, or no column inside it). */
static inline const float *kann_pad2d_source(const kann_pad2d_args *a, const float *x, size_t r,
                                             size_t lo, size_t hi) {
    size_t c = r / a->h_out;
    int64_t i = (int64_t)(r - c * a->h_out) - a->pad_top;
    if (i < 0 || i >= (int64_t)a->h_in || hi == lo) return NULL;
    return x + (c * a->h_in + (size_t)i) * a->w_in;
}

#endif
