/* A max pool's output row from its window's rows, written once over vec_math.h's width-neutral
 * vectors (the including file defines KANN_VEC_BITS and includes vec_math.h first): each
 * column's maximum over the window rows into a row padded with -inf (pad_left before it, enough
 * after it), then KANN_VL pooled columns a vector over the window's columns (stride 2: a window
 * column's values are the even lanes of two loads). NaNs are skipped, as pool2d does (vf_max
 * keeps its second operand where the first is NaN). Taken by conv2d_maxpool's pool of the conv
 * rows in its ring (maxpool_rows; on AVX2 the portable row had taken nearly twice as long as the
 * conv: squeezenet1_1's stem and pool, one thread, 2.75 -> 1.2-1.3 ms) and by AVX2's max pool. */
#ifndef KANN_X86_MAXPOOL_VEC_H
#define KANN_X86_MAXPOOL_VEC_H

#include <math.h>

#include "ref/conv2d_maxpool.h"

/* Widest input row the vector pool takes (its row of column maxima lives on the stack). */
#define MAXPOOL_VEC_W 2048
/* Floats of that row: MAXPOOL_VEC_W and the padding past it. */
#define MAXPOOL_ROW_FLOATS (MAXPOOL_VEC_W + 64 + KANN_VL)

/* The floats of the padded row that w_out outputs of windows kw wide at stride s read. */
static inline size_t maxpool_vec_need(size_t w_out, size_t kw, size_t s) {
    return s * (w_out + KANN_VL - 1) + kw + 2 * KANN_VL;
}

/* Whether the vector pool takes rows of w columns, pad_left pl, into w_out outputs of windows kw
 * wide at stride s (1 or 2). */
static inline int maxpool_vec_fits(size_t w, size_t pl, size_t kw, size_t s, size_t w_out) {
    return (s == 1 || s == 2) && kw >= 1 && kw <= 16 && w <= MAXPOOL_VEC_W && pl <= MAXPOOL_VEC_W &&
           maxpool_vec_need(w_out, kw, s) <= MAXPOOL_VEC_W + 64 && pl + w <= MAXPOOL_VEC_W + 64;
}

/* The padded row's -inf: the pl columns before the row's w and those after it that the
 * outputs read (set once for all the rows pooled). */
static inline void maxpool_vec_pad(float *row, size_t pl, size_t w, size_t need) {
    for (size_t j = 0; j < pl; j++)
        row[j] = -INFINITY;
    for (size_t j = pl + w; j < need; j++)
        row[j] = -INFINITY;
}

/* y[0 .. w_out): the max over the n window rows rows[0 .. n) (w columns each) and the kw
 * window columns at stride s, through row (maxpool_vec_pad'ed). */
static inline void maxpool_vec_row(const float *const *rows, size_t n, size_t w, size_t pl,
                                   size_t kw, size_t s, size_t w_out, float *row, float *y) {
    const vf none = vf_set1(-INFINITY);
    for (size_t j = 0; j < w; j += KANN_VL) {
        size_t m = w - j < KANN_VL ? w - j : KANN_VL;
        vf v = none;
        for (size_t i = 0; i < n; i++)
            v = vf_max(m == KANN_VL ? vf_load(rows[i] + j) : vf_load_n(rows[i] + j, m), v);
        vf_store_n(row + pl + j, v, m); /* the lanes past w not stored */
    }
    for (size_t r = 0; r < w_out; r += KANN_VL) {
        const float *p = row + s * r;
        vf acc = none;
        for (size_t v = 0; v < kw; v++) {
            vf t = s == 1 ? vf_load(p + v) : vf_even(vf_load(p + v), vf_load(p + v + KANN_VL));
            acc = vf_max(t, acc);
        }
        vf_store_n(y + r, acc, w_out - r < KANN_VL ? w_out - r : KANN_VL);
    }
}

/* kann_maxpool_pool_fn of conv2d_maxpool: pooled row q of channels [m_begin, m_end) from the
 * conv rows [lo, hi) in the ring; strides past 2, windows wider than 16 and rows wider than
 * MAXPOOL_VEC_W through the portable row. */
static inline void maxpool_rows(const kann_conv2d_maxpool_args *a, const kann_exec *ex, size_t q,
                                size_t lo, size_t hi, size_t m_begin, size_t m_end) {
    size_t w = a->w_conv, pl = a->pool_pad_left, kw = a->pool_k_w, s = a->pool_stride_w;
    if (!maxpool_vec_fits(w, pl, kw, s, a->w_out) || hi - lo > 16) {
        kann_maxpool_rows(a, ex, q, lo, hi, m_begin, m_end);
        return;
    }
    float row[MAXPOOL_ROW_FLOATS];
    maxpool_vec_pad(row, pl, w, maxpool_vec_need(a->w_out, kw, s));
    const float *rows[16];
    for (size_t m = m_begin; m < m_end; m++) {
        size_t at = (m - m_begin) * w;
        for (size_t i = lo, sl = lo % a->pool_k_h; i < hi; i++, sl = kann_maxpool_next_slot(a, sl))
            rows[i - lo] = kann_maxpool_slot_at(a, ex, sl) + at;
        maxpool_vec_row(rows, hi - lo, w, pl, kw, s, a->w_out, row,
                        kann_mref(ex, a->y) + ((size_t)m * a->h_out + q) * a->w_out);
    }
}

#endif
