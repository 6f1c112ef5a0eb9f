/* conv2d_maxpool (kann_kernels.h): what its variants share. The rows of the conv that the pool
 * windows of a tile need are computed one at a time into a ring of pool_k_h rows in the
 * scratch, each by the variant's own conv2d_packed kernel on a one-row conv (or a faster way of
 * its own), and every pooled row is taken from the ring as soon as its window's rows are there:
 * the conv's output never leaves the caches (squeezenet1_1's stem: 3 MB otherwise written and
 * read back by the max pool after it). */
#ifndef KANN_REF_CONV2D_MAXPOOL_H
#define KANN_REF_CONV2D_MAXPOOL_H

#include <math.h>

#include "kann_kernels.h"
#include "ref/checked.h"

/* The conv row function of a variant: conv2d_packed over arguments that describe one row. */
typedef void (*kann_conv_row_fn)(const void *args, const kann_exec *ex);

/* The ring: pool_k_h rows of c, conv row i in slot i % pool_k_h, each slot room for c_out and
 * w_conv rounded up to 16 (a variant may keep 16 channels of a pixel together); here a
 * channel's w_conv floats after another's, a tile's channels from the slot's start. */
static inline uint64_t kann_maxpool_slot(const kann_conv2d_maxpool_args *a) {
    return ((uint64_t)a->c_out + 15) / 16 * 16 * (((uint64_t)a->w_conv + 15) / 16 * 16);
}

/* Input rows a conv row's window spans. */
static inline uint64_t kann_maxpool_band_rows(const kann_conv2d_maxpool_args *a) {
    return ((uint64_t)a->k_h - 1) * a->dil_h + 1;
}

/* The scratch of a record, in floats: the ring (pool_k_h slots), then the
 * input rows of one conv row's window (c_in planes of kann_maxpool_band_rows rows, zero outside
 * x), then that row's gather (K floats per pixel, w_conv rounded up to
 * KANN_CONV_PIXEL_GRANULE). *band and *gather: where the last two start. 0 when a count
 * overflows. */
static inline uint64_t kann_conv2d_maxpool_scratch(const kann_conv2d_maxpool_args *a,
                                                   uint64_t *band, uint64_t *gather) {
    uint64_t ring = a->pool_k_h, in = a->c_in, g = KANN_CONV_PIXEL_GRANULE, k = a->c_in;
    if (!kann_mul_u64(&ring, ((uint64_t)a->c_out + 15) / 16 * 16) ||
        !kann_mul_u64(&ring, ((uint64_t)a->w_conv + 15) / 16 * 16) ||
        !kann_mul_u64(&in, kann_maxpool_band_rows(a)) || !kann_mul_u64(&in, a->w_in) ||
        !kann_mul_u64(&k, a->k_h) || !kann_mul_u64(&k, a->k_w) ||
        !kann_mul_u64(&k, (a->w_conv + g - 1) / g * g))
        return 0;
    uint64_t total = ring;
    *band = total;
    if (!kann_add_u64(&total, in)) return 0;
    *gather = total;
    if (!kann_add_u64(&total, k) || total > ((uint64_t)1 << 56)) return 0;
    return total;
}

/* The tile's channels [*m_begin, *m_end) and pooled rows [*q_begin, *q_end). */
static inline void kann_conv2d_maxpool_range(const kann_conv2d_maxpool_args *a, size_t *m_begin,
                                             size_t *m_end, size_t *q_begin, size_t *q_end) {
    *m_begin = 0;
    *m_end = a->c_out;
    *q_begin = 0;
    *q_end = a->h_out;
    if (a->tile.axis == 0) {
        *m_begin = a->tile.begin;
        *m_end = a->tile.end;
    } else {
        *q_begin = a->tile.begin;
        *q_end = a->tile.end;
    }
}

/* The conv rows [*lo, *hi) of pooled row q's window (never empty: validated). */
static inline void kann_maxpool_window_rows(const kann_conv2d_maxpool_args *a, size_t q, size_t *lo,
                                            size_t *hi) {
    int64_t top = (int64_t)q * a->pool_stride_h - a->pool_pad_top;
    int64_t end = top + a->pool_k_h;
    *lo = top < 0 ? 0 : (size_t)top;
    *hi = end > (int64_t)a->h_conv ? a->h_conv : (size_t)end;
}

/* The whole conv as conv2d_packed sees it: x, weights, bias, activation and geometry, no
 * residual (y, scratch and tile left empty). */
static inline kann_conv2d_packed_args kann_conv2d_maxpool_conv(const kann_conv2d_maxpool_args *a) {
    kann_conv2d_packed_args c = {0};
    c.x = a->x;
    c.w = a->w;
    c.bias = a->bias;
    c.residual.space = KANN_SPACE_NONE;
    c.c_in = a->c_in;
    c.h_in = a->h_in;
    c.w_in = a->w_in;
    c.c_out = a->c_out;
    c.h_out = a->h_conv;
    c.w_out = a->w_conv;
    c.k_h = a->k_h;
    c.k_w = a->k_w;
    c.stride_h = a->stride_h;
    c.stride_w = a->stride_w;
    c.dil_h = a->dil_h;
    c.dil_w = a->dil_w;
    c.pad_top = a->pad_top;
    c.pad_left = a->pad_left;
    c.act = a->act;
    return c;
}

/* Conv row i of channels [m_begin, m_end) as a conv2d_packed call of its own, into the ring
 * slot at ring_at (channel m - m_begin's columns at ring_at + (m - m_begin) * w_conv): the input
 * rows of its window are copied into the scratch's band (zero outside x), a one-row conv over
 * them with its gather past the band (band, gather: kann_conv2d_maxpool_scratch's). */
static inline void kann_conv2d_maxpool_row(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                           size_t i, size_t m_begin, size_t m_end, uint64_t ring_at,
                                           uint64_t band, uint64_t gather, kann_conv_row_fn conv) {
    size_t rows = (size_t)kann_maxpool_band_rows(a), w_in = a->w_in;
    int64_t top = (int64_t)i * a->stride_h - a->pad_top;
    const float *x = kann_cref(ex, a->x);
    float *b = kann_mref(ex, a->scratch) + band;
    for (size_t c = 0; c < a->c_in; c++)
        for (size_t r = 0; r < rows; r++) {
            int64_t ih = top + (int64_t)r;
            float *d = b + (c * rows + r) * w_in;
            if (ih < 0 || ih >= (int64_t)a->h_in)
                for (size_t j = 0; j < w_in; j++)
                    d[j] = 0.0f;
            else
                for (size_t j = 0; j < w_in; j++)
                    d[j] = x[(c * a->h_in + (size_t)ih) * w_in + j];
        }
    uint64_t K = (uint64_t)a->c_in * a->k_h * a->k_w;
    kann_conv2d_packed_args c = kann_conv2d_maxpool_conv(a);
    c.tile.end = (uint32_t)(m_end - m_begin);
    c.x = a->scratch;
    c.x.offset += band * sizeof(float);
    c.w.offset += m_begin * K * sizeof(float);
    if (c.bias.space != KANN_SPACE_NONE) c.bias.offset += m_begin * sizeof(float);
    c.y = a->scratch;
    c.y.offset += ring_at * sizeof(float);
    c.scratch = a->scratch;
    c.scratch.offset += gather * sizeof(float);
    c.h_in = (uint32_t)rows;
    c.c_out = (uint32_t)(m_end - m_begin);
    c.h_out = 1;
    c.pad_top = 0;
    conv(&c, ex);
}

/* Slot s of the ring (a tile's first channel at its start), and the slot after s: a window's
 * rows, from its first row's slot lo % pool_k_h on. */
static inline float *kann_maxpool_slot_at(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                          size_t s) {
    return kann_mref(ex, a->scratch) + s * kann_maxpool_slot(a);
}
static inline size_t kann_maxpool_next_slot(const kann_conv2d_maxpool_args *a, size_t s) {
    return s + 1 == a->pool_k_h ? 0 : s + 1;
}

/* Pooled row q of channel m from the conv rows [lo, hi) in the ring: the max over the window's
 * taps inside c, NaNs skipped (pool2d's order of operands). */
static inline void kann_maxpool_row(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                    size_t q, size_t lo, size_t hi, size_t m, size_t m_begin) {
    float *y = kann_mref(ex, a->y) + ((size_t)m * a->h_out + q) * a->w_out;
    size_t first = lo % a->pool_k_h, at = (m - m_begin) * a->w_conv;
    for (size_t r = 0; r < a->w_out; r++) {
        int64_t left = (int64_t)r * a->pool_stride_w - a->pool_pad_left;
        int64_t right = left + a->pool_k_w;
        size_t j0 = left < 0 ? 0 : (size_t)left;
        size_t j1 = right > (int64_t)a->w_conv ? a->w_conv : (size_t)right;
        float acc = -INFINITY;
        for (size_t i = lo, sl = first; i < hi; i++, sl = kann_maxpool_next_slot(a, sl)) {
            const float *row = kann_maxpool_slot_at(a, ex, sl) + at;
            for (size_t j = j0; j < j1; j++)
                acc = row[j] > acc ? row[j] : acc;
        }
        y[r] = acc;
    }
}

/* Computes conv row i of channels [m_begin, m_end) into the ring (ctx: the variant's). */
typedef void (*kann_maxpool_row_fn)(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                    size_t i, size_t m_begin, size_t m_end, void *ctx);
/* Pools row q of channels [m_begin, m_end) from the conv rows [lo, hi) in the ring. */
typedef void (*kann_maxpool_pool_fn)(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                     size_t q, size_t lo, size_t hi, size_t m_begin, size_t m_end);

/* Pooled rows [q_begin, q_end) of channels [m_begin, m_end): each conv row a window needs is
 * computed once, when the first window that needs it comes (windows move down, a row stays in
 * the ring while a window may still need it: no window is taller than the ring). */
static inline void kann_conv2d_maxpool_drive(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                             size_t m_begin, size_t m_end, size_t q_begin,
                                             size_t q_end, kann_maxpool_row_fn row, void *ctx,
                                             kann_maxpool_pool_fn pool) {
    if (m_begin >= m_end) return;
    size_t next = 0;
    for (size_t q = q_begin; q < q_end; q++) {
        size_t lo, hi;
        kann_maxpool_window_rows(a, q, &lo, &hi);
        for (size_t i = lo > next ? lo : next; i < hi; i++)
            row(a, ex, i, m_begin, m_end, ctx);
        if (hi > next) next = hi;
        pool(a, ex, q, lo, hi, m_begin, m_end);
    }
}

/* The conv rows through a variant's conv2d_packed (kann_conv2d_maxpool_row), the scratch's
 * band and gather where kann_conv2d_maxpool_scratch puts them. */
typedef struct kann_maxpool_packed {
    kann_conv_row_fn conv;
    uint64_t band, gather;
} kann_maxpool_packed;

static inline void kann_maxpool_packed_row(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                           size_t i, size_t m_begin, size_t m_end, void *ctx) {
    const kann_maxpool_packed *p = ctx;
    kann_conv2d_maxpool_row(a, ex, i, m_begin, m_end, i % a->pool_k_h * kann_maxpool_slot(a),
                            p->band, p->gather, p->conv);
}

static inline void kann_maxpool_rows(const kann_conv2d_maxpool_args *a, const kann_exec *ex,
                                     size_t q, size_t lo, size_t hi, size_t m_begin, size_t m_end) {
    for (size_t m = m_begin; m < m_end; m++)
        kann_maxpool_row(a, ex, q, lo, hi, m, m_begin);
}

/* The record's tile: its conv rows through conv (a variant's conv2d_packed), pooled by pool. */
static inline void kann_conv2d_maxpool_packed(const kann_conv2d_maxpool_args *a,
                                              const kann_exec *ex, kann_conv_row_fn conv,
                                              kann_maxpool_pool_fn pool) {
    size_t m_begin, m_end, q_begin, q_end;
    kann_conv2d_maxpool_range(a, &m_begin, &m_end, &q_begin, &q_end);
    if (a->w_out == 0) return;
    kann_maxpool_packed ctx = {conv, 0, 0};
    kann_conv2d_maxpool_scratch(a, &ctx.band, &ctx.gather);
    kann_conv2d_maxpool_drive(a, ex, m_begin, m_end, q_begin, q_end, kann_maxpool_packed_row, &ctx,
                              pool);
}

#endif
