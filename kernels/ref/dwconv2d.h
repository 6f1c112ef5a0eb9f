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
 * store: the kept lanes of a vector are consecutive output pixels. For 3x3 windows with
 * stride 1 or 2 along the rows the variants go row by row instead (kann_dw_rows_path), sharing
 * each plane row's loads among the output rows that read it. The loop nest (kann_dw_drive) is
 * shared; each variant brings its row copy and its band. Static inline, so that each variant's
 * translation unit compiles them with its own ISA. */
#ifndef KANN_REF_DWCONV2D_H
#define KANN_REF_DWCONV2D_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"
#include "ref/conv2d_packed.h"

/* Floats of the band buffer: 32 KiB, the planes of a band stay in the L1 cache. */
#define KANN_DW_BAND_FLOATS 8192u

/* Floats past the end of each plane that the last vector of a band may read (lanes dropped),
 * besides the columns its rightmost taps reach: a plane keeps KANN_DW_SLACK + reach_c floats
 * after its rows, so that the last vector of the last plane (up to 15 lanes past the band's
 * pixels, plus the tap's column offset) stays inside the buffer. */
#define KANN_DW_SLACK 16u

/* Window taps the band layout handles (its offset table lives on the stack, 8 KiB): up to
 * 32x32, the large-kernel depthwise convs of RepLKNet-style models (31x31). */
#define KANN_DW_MAX_TAPS 1024u

/* Phase planes the band layout handles: one per distinct (tap row mod s_h, tap column mod
 * s_w), at most s_h * s_w. */
#define KANN_DW_MAX_PLANES 64u

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
    uint32_t pr[KANN_DW_MAX_PLANES], pc[KANN_DW_MAX_PLANES];
    size_t n_taps;
    ptrdiff_t taps[KANN_DW_MAX_TAPS]; /* tap t = kh * k_w + kw: its offset in the buffer */
} kann_dw_band;

/* The band layout of a conv; 0 when it does not fit (too many taps, or not one output row
 * with its reach fits the buffer): then the variant leaves the conv to the reference. */
static inline int kann_dw_band_plan(const kann_dwconv2d_args *a, kann_dw_band *b) {
    size_t n_taps = (size_t)a->k_h * a->k_w;
    if (n_taps == 0 || n_taps > KANN_DW_MAX_TAPS || a->stride_h == 0 || a->stride_w == 0 ||
        (n_taps > KANN_DW_MAX_PLANES && (uint64_t)a->stride_h * a->stride_w > KANN_DW_MAX_PLANES))
        return 0;
    uint64_t reach_r = (uint64_t)(a->k_h - 1) * a->dil_h / a->stride_h;
    uint64_t reach_c = (uint64_t)(a->k_w - 1) * a->dil_w / a->stride_w;
    uint64_t w_h = (uint64_t)a->w_out + reach_c;
    /* w_h == 0 (no output columns, a 1-wide window): nothing to lay out, the reference
     * returns at once */
    if (w_h == 0 || w_h > KANN_DW_BAND_FLOATS || reach_r > KANN_DW_BAND_FLOATS) return 0;
    size_t plane_of[KANN_DW_MAX_TAPS];
    b->n_planes = kann_tap_phases(a->k_h, a->k_w, a->dil_h, a->dil_w, a->stride_h, a->stride_w,
                                  b->pr, b->pc, plane_of);
    size_t avail = KANN_DW_BAND_FLOATS / b->n_planes, slack = KANN_DW_SLACK + (size_t)reach_c;
    if (avail < slack + (reach_r + 1) * w_h) return 0;
    b->w_h = (size_t)w_h;
    b->reach = (size_t)reach_r;
    b->rows = (avail - slack) / b->w_h - b->reach;
    if (b->rows >= KANN_DW_ROW_BLOCK) b->rows -= b->rows % KANN_DW_ROW_BLOCK;
    b->plane = (b->rows + b->reach) * b->w_h + slack;
    b->n_taps = n_taps;
    for (size_t t = 0; t < n_taps; t++) {
        size_t r = (size_t)(t / a->k_w) * a->dil_h / a->stride_h;
        size_t c = (size_t)(t % a->k_w) * a->dil_w / a->stride_w;
        b->taps[t] = (ptrdiff_t)(plane_of[t] * b->plane + r * b->w_h + c);
    }
    return 1;
}

/* The planes of the band of `rows` output rows from oh0, channel plane xc, into buf
 * (kann_phase_fill; row_fn copies each row, a variant's own, vectorized). */
static inline __attribute__((always_inline)) void
kann_dw_band_fill(const kann_dwconv2d_args *a, const kann_dw_band *b, const float *xc, size_t oh0,
                  size_t rows, float *buf, kann_row_pair_fn row_fn) {
    kann_phase_layout l = {b->pr, b->pc, b->n_planes, oh0, rows + b->reach, b->w_h, b->plane};
    kann_phase_fill(xc, a->h_in, a->w_in, a->stride_h, a->stride_w, a->pad_top, a->pad_left, &l,
                    buf, row_fn);
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

/* One band as a variant computes it: its planes filled, the output rows it writes. */
typedef struct kann_dw_band_job {
    const kann_dwconv2d_args *a;
    const kann_dw_band *b;
    const float *buf; /* the planes */
    const float *wc;  /* the channel's weights [k_h][k_w] */
    float bias;
    size_t rows;                /* output rows of this band */
    float *y;                   /* its first output row */
    const float *res;           /* likewise in the residual, or NULL */
    int rows_path;              /* 3x3 rows (see kann_dw_rows_path), else the wide grid */
    const uint32_t *masks, *at; /* the wide grid's lanes (kann_dw_band_lanes) */
} kann_dw_band_job;

typedef void (*kann_dw_band_fn)(const kann_dw_band_job *job);

/* Whether a conv takes the row path: 3 kernel rows, dilation 1 and stride 1 or 2 along the
 * rows (then output rows i and i + 1 read the same plane rows: a variant loads each once for
 * a block of KANN_DW_ROW_BLOCK rows), rows wider than half a vector of `width` lanes (narrower
 * ones fill more lanes on the wide grid), and full bands of at least one block. */
static inline int kann_dw_rows_path(const kann_dwconv2d_args *a, const kann_dw_band *b,
                                    size_t width) {
    return a->k_h == 3 && a->dil_h == 1 && a->stride_h <= 2 && a->w_out > width / 2 &&
           b->rows >= KANN_DW_ROW_BLOCK;
}

/* The channels [c_begin, c_end) and output rows [oh_begin, oh_end) of a conv's tile. */
typedef struct kann_dw_range {
    uint32_t c_begin, c_end, oh_begin, oh_end;
} kann_dw_range;

static inline kann_dw_range kann_dw_range_of(const kann_dwconv2d_args *a) {
    kann_dw_range r = {0, a->c_out, 0, a->h_out};
    if (a->tile.axis == 0) {
        r.c_begin = a->tile.begin;
        r.c_end = a->tile.end;
    } else {
        r.oh_begin = a->tile.begin;
        r.oh_end = a->tile.end;
    }
    return r;
}

/* The loop nest of the SIMD variants (vectors of `width` lanes, at least 8) over the channels
 * and rows of rg: per channel and band of its rows, the planes filled by row_fn, then band_fn.
 * Convs the band layout cannot hold go to the reference, which computes the whole tile. */
static inline __attribute__((always_inline)) void
kann_dw_drive(const kann_dwconv2d_args *a, const kann_exec *ex, kann_dw_range rg, size_t width,
              kann_row_pair_fn row_fn, kann_dw_band_fn band_fn) {
    kann_dw_band b;
    if (!kann_dw_band_plan(a, &b)) {
        kann_f32_dwconv2d_ref(a, ex);
        return;
    }
    uint32_t c_begin = rg.c_begin, c_end = rg.c_end, oh_begin = rg.oh_begin, oh_end = rg.oh_end;
    if (c_begin >= c_end || oh_begin >= oh_end || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    kann_dw_band_job job;
    job.a = a;
    job.b = &b;
    job.rows_path = kann_dw_rows_path(a, &b, width);
    /* Bands no taller than the tile (the planes keep their size, so a partial row block still
     * reads inside them); the lanes of every vector of a full band on the wide grid, the same
     * in every band. */
    if (b.rows > oh_end - oh_begin) b.rows = oh_end - oh_begin;
    uint32_t masks[KANN_DW_BAND_FLOATS / 8 + 1], at[KANN_DW_BAND_FLOATS / 8 + 1];
    if (!job.rows_path) kann_dw_band_lanes(&b, a->w_out, b.rows, width, masks, at);
    job.masks = masks;
    job.at = at;
    /* zeroed once: the lanes past a band's pixels (dropped) never read uninitialized bytes */
    __attribute__((aligned(64))) float buf[KANN_DW_BAND_FLOATS];
    kann_fill_zero(buf, KANN_DW_BAND_FLOATS);
    job.buf = buf;
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c = c_begin; c < c_end; c++) {
            const float *xc = x + (n * a->c_in + c) * x_plane;
            size_t y_base = (n * a->c_out + c) * y_plane;
            job.wc = w + c * b.n_taps;
            job.bias = bias ? bias[c] : 0.0f;
            for (size_t oh0 = oh_begin; oh0 < oh_end; oh0 += b.rows) {
                job.rows = oh_end - oh0 < b.rows ? oh_end - oh0 : b.rows;
                kann_dw_band_fill(a, &b, xc, oh0, job.rows, buf, row_fn);
                job.y = y + y_base + oh0 * a->w_out;
                job.res = res ? res + y_base + oh0 * a->w_out : NULL;
                band_fn(&job);
            }
        }
    }
}

#endif
