/* conv2d_maxpool's pool of conv rows from the ring (kernels/ref/conv2d_maxpool.h), written once
 * over vec_math.h's width-neutral vectors: the including file defines KANN_VEC_BITS and
 * includes vec_math.h first. Each column's maximum over the window rows goes into a row padded
 * with -inf (pool_pad_left before it, enough after it), then KANN_VL pooled columns a vector
 * over the window's columns (stride 2: a window column's values are the even lanes of two
 * loads). NaNs are skipped, as pool2d does (vf_max keeps its second operand where the first is
 * NaN). Strides past 2, windows wider than 16 and rows wider than MAXPOOL_VEC_W pool through the
 * portable row, which on AVX2 took three times as long as the conv (squeezenet1_1's stem and
 * pool, one thread: 2.75 ms through it, 1.31 ms here). */
#ifndef KANN_X86_MAXPOOL_VEC_H
#define KANN_X86_MAXPOOL_VEC_H

#include <math.h>

#include "ref/conv2d_maxpool.h"

/* Widest conv row the vector pool takes (its row of window maxima lives on the stack). */
#define MAXPOOL_VEC_W 2048

/* kann_maxpool_pool_fn: pooled row q of channels [m_begin, m_end) from the conv rows [lo, hi)
 * in the ring. */
static void maxpool_rows(const kann_conv2d_maxpool_args *a, const kann_exec *ex, size_t q,
                         size_t lo, size_t hi, size_t m_begin, size_t m_end) {
    size_t w = a->w_conv, pl = a->pool_pad_left, kw = a->pool_k_w, s = a->pool_stride_w;
    size_t need = s * ((size_t)a->w_out + KANN_VL - 1) + kw + KANN_VL * 2; /* floats read */
    if (s > 2 || kw > 16 || w > MAXPOOL_VEC_W || need > MAXPOOL_VEC_W + 64) {
        kann_maxpool_rows(a, ex, q, lo, hi, m_begin, m_end);
        return;
    }
    const vf none = vf_set1(-INFINITY);
    float row[MAXPOOL_VEC_W + 64 + KANN_VL];
    for (size_t j = 0; j < pl; j++)
        row[j] = -INFINITY;
    for (size_t j = pl + w; j < need; j++)
        row[j] = -INFINITY;
    size_t first = lo % a->pool_k_h;
    for (size_t m = m_begin; m < m_end; m++) {
        size_t at = (m - m_begin) * w;
        for (size_t j = 0; j < w; j += KANN_VL) {
            size_t n = w - j < KANN_VL ? w - j : KANN_VL;
            vf v = none;
            for (size_t i = lo, sl = first; i < hi; i++, sl = kann_maxpool_next_slot(a, sl)) {
                const float *src = kann_maxpool_slot_at(a, ex, sl) + at + j;
                v = vf_max(n == KANN_VL ? vf_load(src) : vf_load_n(src, n), v);
            }
            vf_store_n(row + pl + j, v, n); /* the lanes past w not stored */
        }
        float *y = kann_mref(ex, a->y) + ((size_t)m * a->h_out + q) * a->w_out;
        for (size_t r = 0; r < a->w_out; r += KANN_VL) {
            const float *p = row + s * r;
            vf acc = none;
            for (size_t v = 0; v < kw; v++) {
                vf t = s == 1 ? vf_load(p + v) : vf_even(vf_load(p + v), vf_load(p + v + KANN_VL));
                acc = vf_max(t, acc);
            }
            vf_store_n(y + r, acc, a->w_out - r < KANN_VL ? a->w_out - r : KANN_VL);
        }
    }
}

#endif
