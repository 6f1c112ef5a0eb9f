/* dwconv2d pieces shared by the SIMD variants: the band layout. A depthwise conv does few MACs
 * per input float (k_h * k_w / stride^2), so what limits it is how each tap reaches its input:
 * masked loads at the borders, permutes for stride 2, short rows that fill part of a vector.
 * The variants instead copy the input rows of a band of output rows, per channel, into a small
 * buffer that stays in the L1 cache, zero-padded and split into phase planes by the strides:
 *
 *   plane (pr, pc)[i][j] = x[(oh0 + i) * s_h + pr - pad_top][j * s_w + pc - pad_left]
 *
 * (0 outside x). Tap (kh, kw) of output pixel (oh0 + i, ow) then reads plane
 * ((kh d_h) % s_h, (kw d_w) % s_w) at [i + (kh d_h) / s_h][ow + (kw d_w) / s_w]: on the "wide"
 * grid of w_h columns (the output columns plus the taps' reach), wide pixel P = i * w_h + ow
 * reads the plane at P plus a constant offset per tap. So every tap of every vector is one
 * plain load, whatever the padding and stride, and vectors run across row ends (a 7-wide map
 * fills whole vectors). Columns ow >= w_out of the wide grid are computed and dropped at the
 * store: the kept lanes of a vector are consecutive output pixels. Static inline, so that each
 * variant's translation unit compiles them with its own ISA. */
#ifndef KANN_REF_DWCONV2D_H
#define KANN_REF_DWCONV2D_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"
#include "ref/conv2d_packed.h"

/* Floats of the band buffer: 32 KiB, the planes of a band stay in the L1 cache. */
#define KANN_DW_BAND_FLOATS 8192u

/* Floats past the end of each plane that the last vector of a band may read (lanes dropped). */
#define KANN_DW_SLACK 16u

/* Window taps the band layout handles (its offset table lives on the stack). */
#define KANN_DW_MAX_TAPS 64u

/* A full band's output rows are a multiple of this (when it holds that many): the variants
 * may compute blocks of up to that many rows and read a last, partial block's missing rows
 * from inside the planes (their results dropped). */
#define KANN_DW_ROW_BLOCK 8u

typedef struct kann_dw_band {
    size_t w_h;      /* columns of the wide grid and of every plane */
    size_t rows;     /* output rows of a full band */
    size_t reach;    /* plane rows past a band's output rows that the taps read */
    size_t plane;    /* floats per plane, slack included */
    size_t n_planes; /* the phases (pr, pc) some tap reads */
    uint32_t pr[KANN_DW_MAX_TAPS], pc[KANN_DW_MAX_TAPS];
    size_t n_taps;
    ptrdiff_t taps[KANN_DW_MAX_TAPS]; /* tap t = kh * k_w + kw: its offset in the buffer */
} kann_dw_band;

/* The band layout of a conv; 0 when it does not fit (too many taps, or not one output row
 * with its reach fits the buffer): then the variant leaves the conv to the reference. */
static inline int kann_dw_band_plan(const kann_dwconv2d_args *a, kann_dw_band *b) {
    size_t n_taps = (size_t)a->k_h * a->k_w;
    if (n_taps == 0 || n_taps > KANN_DW_MAX_TAPS || a->stride_h == 0 || a->stride_w == 0)
        return 0;
    uint64_t reach_r = (uint64_t)(a->k_h - 1) * a->dil_h / a->stride_h;
    uint64_t reach_c = (uint64_t)(a->k_w - 1) * a->dil_w / a->stride_w;
    uint64_t w_h = (uint64_t)a->w_out + reach_c;
    if (w_h > KANN_DW_BAND_FLOATS || reach_r > KANN_DW_BAND_FLOATS) return 0;
    size_t plane_of[KANN_DW_MAX_TAPS];
    b->n_planes = 0;
    for (size_t t = 0; t < n_taps; t++) {
        uint64_t r = (uint64_t)(t / a->k_w) * a->dil_h, c = (uint64_t)(t % a->k_w) * a->dil_w;
        uint32_t pr = (uint32_t)(r % a->stride_h), pc = (uint32_t)(c % a->stride_w);
        size_t p = 0;
        while (p < b->n_planes && (b->pr[p] != pr || b->pc[p] != pc))
            p++;
        if (p == b->n_planes) {
            b->pr[p] = pr;
            b->pc[p] = pc;
            b->n_planes++;
        }
        plane_of[t] = p;
    }
    size_t avail = KANN_DW_BAND_FLOATS / b->n_planes;
    if (avail < KANN_DW_SLACK + (reach_r + 1) * w_h) return 0;
    b->w_h = (size_t)w_h;
    b->reach = (size_t)reach_r;
    b->rows = (avail - KANN_DW_SLACK) / b->w_h - b->reach;
    if (b->rows >= KANN_DW_ROW_BLOCK) b->rows -= b->rows % KANN_DW_ROW_BLOCK;
    b->plane = (b->rows + b->reach) * b->w_h + KANN_DW_SLACK;
    b->n_taps = n_taps;
    for (size_t t = 0; t < n_taps; t++) {
        size_t r = (size_t)(t / a->k_w) * a->dil_h / a->stride_h;
        size_t c = (size_t)(t % a->k_w) * a->dil_w / a->stride_w;
        b->taps[t] = (ptrdiff_t)(plane_of[t] * b->plane + r * b->w_h + c);
    }
    return 1;
}

/* Row copy of the band fill: d0[j] = x_row[iw0 + j * stride] for j < n, 0 where the column
 * lies outside [0, w_in); with d1 (stride 2 only) also d1[j] = x_row[iw0 + 1 + j * stride], the
 * odd columns beside the even ones, in the same pass over the row. */
typedef void (*kann_dw_row_fn)(float *d0, float *d1, const float *x_row, int64_t iw0,
                               uint32_t stride, uint32_t w_in, size_t n);

/* The portable row copy: the valid run copied, the rest zeroed. */
static inline void kann_dw_row(float *d0, float *d1, const float *x_row, int64_t iw0,
                               uint32_t stride, uint32_t w_in, size_t n) {
    size_t lo, hi;
    kann_valid_run(iw0, stride, w_in, n, &lo, &hi);
    kann_fill_zero(d0, lo);
    kann_copy_strided(d0 + lo, x_row + (iw0 + (int64_t)lo * stride), hi - lo, stride);
    kann_fill_zero(d0 + hi, n - hi);
    if (d1) kann_dw_row(d1, NULL, x_row, iw0 + 1, stride, w_in, n);
}

/* The planes of the band of `rows` output rows from oh0, channel plane xc, into buf; row_fn
 * copies each row (a variant's own, vectorized). With stride 2 along the columns, the even
 * and odd column planes of a row phase (adjacent: kann_dw_band_plan adds them in tap order)
 * are filled in one pass. */
static inline __attribute__((always_inline)) void
kann_dw_band_fill(const kann_dwconv2d_args *a, const kann_dw_band *b, const float *xc, size_t oh0,
                  size_t rows, float *buf, kann_dw_row_fn row_fn) {
    for (size_t p = 0; p < b->n_planes; p++) {
        float *d = buf + p * b->plane, *d1 = NULL;
        if (a->stride_w == 2 && p + 1 < b->n_planes && b->pr[p + 1] == b->pr[p] &&
            b->pc[p + 1] == b->pc[p] + 1)
            d1 = buf + (p + 1) * b->plane;
        int64_t iw0 = (int64_t)b->pc[p] - a->pad_left;
        for (size_t i = 0; i < rows + b->reach; i++, d += b->w_h) {
            int64_t ih = (int64_t)(oh0 + i) * a->stride_h + b->pr[p] - a->pad_top;
            float *e = d1 ? d1 + i * b->w_h : NULL;
            if (ih < 0 || ih >= (int64_t)a->h_in) {
                kann_fill_zero(d, b->w_h);
                if (e) kann_fill_zero(e, b->w_h);
            } else {
                row_fn(d, e, xc + (size_t)ih * a->w_in, iw0, a->stride_w, a->w_in, b->w_h);
            }
        }
        if (d1) p++;
    }
}

/* The vectors of `width` lanes (<= 32) over the wide grid of a band of `rows` output rows:
 * for each, the lanes that hold output pixels (columns ow < w_out) as a bit mask, and where in
 * the band's output the first of them goes. Walks the grid once (no division per lane). */
static inline void kann_dw_band_lanes(const kann_dw_band *b, size_t w_out, size_t rows,
                                      size_t width, uint32_t *mask, uint32_t *at) {
    size_t n_px = rows * b->w_h, col = 0, out = 0;
    for (size_t v = 0; v * width < n_px; v++) {
        uint32_t m = 0;
        at[v] = (uint32_t)out;
        for (size_t i = 0; i < width && v * width + i < n_px; i++) {
            if (col < w_out) {
                m |= 1u << i;
                out++;
            }
            if (++col == b->w_h) col = 0;
        }
        mask[v] = m;
    }
}

/* The tile's channels [*c_begin, *c_end) and output rows [*oh_begin, *oh_end). */
static inline void kann_dw_range(const kann_dwconv2d_args *a, uint32_t *c_begin, uint32_t *c_end,
                                 uint32_t *oh_begin, uint32_t *oh_end) {
    *c_begin = 0;
    *c_end = a->c_out;
    *oh_begin = 0;
    *oh_end = a->h_out;
    if (a->tile.axis == 0) {
        *c_begin = a->tile.begin;
        *c_end = a->tile.end;
    } else {
        *oh_begin = a->tile.begin;
        *oh_end = a->tile.end;
    }
}

#endif
