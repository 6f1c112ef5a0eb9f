/* dwconv2d for AVX-512 over the band layout of ref/dwconv2d.h: per channel and band of output
 * rows, the padded input rows are copied into phase planes in the L1 cache (masked loads at
 * the row ends; stride 2 splits the even and odd columns by permutes), then every tap is one
 * plain load. 3x3 windows with stride 1 or 2 along the rows take the row path: 8 output rows of
 * one 16-column vector at once, each plane row loaded once for all the rows that read it.
 * Other windows run 8 vectors of the wide grid at once (independent accumulators hide the FMA
 * latency); the store keeps the lanes that hold output columns (compress), the residual
 * unpacked to meet them (expand). Bias, residual and activation at the store. Taken first:
 * 3x3 and 5x5 stride 1 or 2 on maps of 10 output columns or more read their input where it
 * lies (d3_rows), then 16 channels in the lanes (cl_drive); the band layout takes what is
 * left. */
#include <immintrin.h>
#include <string.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/dwconv2d.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "dwconv2d_rows.h"
#include "row_pair_avx512.h"
#include "transpose_avx512.h"

#define LANES 16

/* Output vectors computed together. */
#define DW_VECS 8

/* The V vectors of wide pixels [P0, P0 + 16 V) of a band: bias plus every tap. */
static inline __attribute__((always_inline)) void dw_vectors(const kann_dw_band *b,
                                                             const float *buf, const float *wc,
                                                             size_t P0, __m512 bias, int V,
                                                             __m512 *acc) {
#pragma GCC unroll 8
    for (int i = 0; i < V; i++)
        acc[i] = bias;
    const float *p = buf + P0;
    for (size_t t = 0; t < b->n_taps; t++) {
        __m512 wv = _mm512_set1_ps(wc[t]);
        const float *q = p + b->taps[t];
#pragma GCC unroll 8
        for (int i = 0; i < V; i++)
            acc[i] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(q + LANES * i), acc[i]);
    }
}

/* One vector's store: the lanes of m (output pixels) packed to y[0...], the residual res[0...]
 * unpacked to meet them. */
static inline __attribute__((always_inline)) void dw_store(__m512 v, __mmask16 m, float *y,
                                                           const float *res, const dw_out *o) {
    unsigned n = (unsigned)_mm_popcnt_u32(m);
    __mmask16 packed = (__mmask16)((1u << n) - 1u);
    int prefix = m == packed; /* whole vectors and row ends: nothing to move */
    if (res) {
        __m512 r = _mm512_maskz_loadu_ps(packed, res);
        v = _mm512_add_ps(v, prefix ? r : _mm512_maskz_expand_ps(m, r));
    }
    if (o->vec_act) v = vf_act(v, o->act, o->lo, o->hi);
    _mm512_mask_storeu_ps(y, packed, prefix ? v : _mm512_maskz_compress_ps(m, v));
    if (!o->vec_act)
        for (unsigned j = 0; j < n; j++)
            y[j] = kann_act_apply(o->act, y[j]);
}

/* One band on the wide grid: vectors across row ends, DW_VECS at a time (any window). */
static void band_flat(const kann_dw_band *b, const float *buf, const float *wc, size_t n_px,
                      const uint32_t *masks, const uint32_t *at, float *yb, const float *rb,
                      const dw_out *o) {
    size_t nv = (n_px + LANES - 1) / LANES;
    for (size_t v0 = 0; v0 < nv;) {
        __m512 acc[DW_VECS];
        size_t V = nv - v0 >= 8 ? 8 : nv - v0 >= 4 ? 4 : nv - v0 >= 2 ? 2 : 1;
        /* constant V per call, so the accumulators stay in registers */
        if (V == 8)
            dw_vectors(b, buf, wc, v0 * LANES, o->bias, 8, acc);
        else if (V == 4)
            dw_vectors(b, buf, wc, v0 * LANES, o->bias, 4, acc);
        else if (V == 2)
            dw_vectors(b, buf, wc, v0 * LANES, o->bias, 2, acc);
        else
            dw_vectors(b, buf, wc, v0 * LANES, o->bias, 1, acc);
        for (size_t i = 0; i < V; i++, v0++) {
            __mmask16 m = (__mmask16)masks[v0];
            size_t left = n_px - v0 * LANES; /* the last band may be shorter */
            if (left < LANES) m &= (__mmask16)((1u << left) - 1u);
            dw_store(acc[i], m, yb + at[v0], rb ? rb + at[v0] : NULL, o);
        }
    }
}

/* One band of `rows` output rows by the row path (dw_rows), S the stride along the rows. */
static inline __attribute__((always_inline)) void
band_rows(const kann_dw_band *b, const float *buf, const float *wc, size_t k_w, size_t w_out,
          size_t rows, float *yb, const float *rb, const dw_out *o, int S) {
    for (size_t i0 = 0; i0 < rows; i0 += DW_ROWS) {
        size_t n_rows = rows - i0 < KANN_DW_ROW_BLOCK ? rows - i0 : KANN_DW_ROW_BLOCK;
        for (size_t col = 0; col < w_out; col += LANES) {
            __m512 acc[DW_ROWS];
            dw_rows(b, buf, wc, k_w, i0, col, o->bias, S, acc);
            __mmask16 m = kann_lanes16(0, (int64_t)(w_out - col));
            for (size_t r = 0; r < n_rows; r++) {
                size_t at = (i0 + r) * w_out + col;
                dw_store(acc[r], m, yb + at, rb ? rb + at : NULL, o);
            }
        }
    }
}

/* One band (kann_dw_band_fn): the 3-row path, row by row, or the wide grid. */
static void band(const kann_dw_band_job *job) {
    const kann_dwconv2d_args *a = job->a;
    dw_out o = dw_out_of(job);
    if (!job->rows_path && dw_by_rows(job->b, a->w_out))
        dw_band_by_rows(job->b, job->buf, job->wc, a->w_out, job->rows, job->y, job->res, &o);
    else if (!job->rows_path)
        band_flat(job->b, job->buf, job->wc, job->rows * job->b->w_h, job->masks, job->at, job->y,
                  job->res, &o);
    else if (a->stride_h == 1)
        band_rows(job->b, job->buf, job->wc, a->k_w, a->w_out, job->rows, job->y, job->res, &o, 1);
    else
        band_rows(job->b, job->buf, job->wc, a->k_w, a->w_out, job->rows, job->y, job->res, &o, 2);
}

/* ---- 16 channels in the lanes ------------------------------------------------------------- */
/* A small map gives each channel few output pixels (49 on 7x7) for the band's set-up, and a
 * stride-2 map halves the lanes a plane row fills. There 16 channels go at once, one per lane:
 * their input rows transposed (16x16 in registers) into a ring of rows in which every pixel is a
 * vector of its 16 channels, zero columns beside the input for the padding; each tap of an
 * output pixel is then one FMA of that vector by the tap's 16 weights, whatever the stride,
 * and 16 output pixels at a time go back through the transpose to the channels' planes, where
 * bias, residual and activation apply as in the band path. The ring holds padded rows
 * (ihp = ih + pad_top), row ihp in slot ihp % r; when it holds fewer than all of them, the
 * first span - 1 slots are mirrored after the last, so that a window of span rows from any slot
 * is contiguous and every tap is a constant offset from its pixel's window corner. */

#define CL_VECS 1024 /* vectors in the ring: 64 KiB */
#define CL_MAX_TAPS 64 /* the taps' weights a lane each, on the stack: 4 KiB */
#define CL_BLOCK 8   /* output pixels computed together (independent FMA chains) */

typedef struct cl_plan {
    size_t wp;     /* ring columns: input column iw at iw + pad_left, the taps' widest reach */
    size_t span;   /* rows one window covers */
    size_t hp;     /* padded rows the output reads */
    size_t r;      /* ring slots */
    size_t mirror; /* slots mirrored after the ring: span - 1 when r < hp (the ring wraps) */
    size_t n_taps;
    ptrdiff_t taps[CL_MAX_TAPS]; /* tap t: floats from the window corner */
} cl_plan;

/* The ring of a conv; 0 when the rows a block of output pixels needs do not fit. */
static int cl_plan_of(const kann_dwconv2d_args *a, cl_plan *p) {
    uint64_t n_taps = (uint64_t)a->k_h * a->k_w;
    if (n_taps == 0 || n_taps > CL_MAX_TAPS || a->stride_h == 0 || a->stride_w == 0 ||
        a->w_out == 0 || a->h_out == 0 || a->w_in == 0)
        return 0;
    uint64_t wp = (uint64_t)(a->w_out - 1) * a->stride_w + (uint64_t)(a->k_w - 1) * a->dil_w + 1;
    uint64_t span = (uint64_t)(a->k_h - 1) * a->dil_h + 1;
    uint64_t hp = (uint64_t)(a->h_out - 1) * a->stride_h + span;
    /* a block's pixels lie on up to `rows` output rows; the fill writes whole chunks of 16
     * input pixels, up to 15 past the last row the window needs */
    uint64_t rows = (CL_BLOCK - 1 + a->w_out - 1) / a->w_out;
    uint64_t need = rows * a->stride_h + span + 15 / a->w_in + 1;
    if (wp > CL_VECS || span > CL_VECS) return 0;
    if (hp * wp <= CL_VECS) {
        p->r = (size_t)hp;
        p->mirror = 0;
    } else {
        if ((need + span - 1) * wp > CL_VECS) return 0;
        p->r = (size_t)(CL_VECS / wp - (span - 1)); /* every slot that fits: fewer mirror writes */
        p->mirror = (size_t)span - 1;
    }
    p->wp = (size_t)wp;
    p->span = (size_t)span;
    p->hp = (size_t)hp;
    p->n_taps = (size_t)n_taps;
    for (size_t t = 0; t < n_taps; t++)
        p->taps[t] = (ptrdiff_t)(((t / a->k_w) * a->dil_h * wp + (t % a->k_w) * a->dil_w) * LANES);
    return 1;
}

/* 16 rows of `stride` floats from src, lanes of m, rows >= nc zero; transposed. */
static inline __attribute__((always_inline)) void load_transposed(__m512 *v, const float *src,
                                                                  size_t stride, size_t nc,
                                                                  __mmask16 m) {
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; i++)
        v[i] = i < nc ? _mm512_maskz_loadu_ps(m, src + i * stride) : _mm512_setzero_ps();
    kann_transpose16_ps(v);
}

/* One group of up to 16 channels over the output rows [oh0, oh1). */
typedef struct cl_group {
    const kann_dwconv2d_args *a;
    const cl_plan *p;
    float *ring;     /* (r + mirror) * wp vectors, zeroed */
    const float *x;  /* the group's first input plane */
    float *y;        /* its first output plane, or the staging buffer */
    const float *res;
    size_t nc;       /* channels: lanes [0, nc) */
    size_t ihp;      /* padded rows complete below this */
    size_t px;       /* input pixels of each plane in the ring (flat) */
    size_t iw;       /* the column of the pixel px */
    size_t slot;     /* ring slot of its padded row */
    const uint32_t *dest; /* or NULL: where each input pixel goes in a ring of all the rows */
} cl_group;

/* Vector v into ring slot `slot`, column col, and into the slot's mirror. */
static inline __attribute__((always_inline)) void ring_store(const cl_group *g, size_t slot,
                                                             size_t col, __m512 v) {
    _mm512_store_ps(g->ring + (slot * g->p->wp + col) * LANES, v);
    if (slot < g->p->mirror)
        _mm512_store_ps(g->ring + ((slot + g->p->r) * g->p->wp + col) * LANES, v);
}

/* The next 16 input pixels of the group's planes, transposed into the ring; fewer at the end of
 * the rows any window reads (past them a ring of all the rows would wrap). */
static void ring_chunk(cl_group *g) {
    const kann_dwconv2d_args *a = g->a;
    const cl_plan *p = g->p;
    size_t rows = p->hp - a->pad_top < a->h_in ? p->hp - a->pad_top : a->h_in;
    size_t end = rows * a->w_in, n = end - g->px < 16 ? end - g->px : 16;
    __m512 v[16];
    load_transposed(v, g->x + g->px, (size_t)a->h_in * a->w_in, g->nc, kann_lanes16(0, (int64_t)n));
    size_t col = g->iw + a->pad_left;
    if (g->dest) {
        /* a ring of all the rows, its places looked up */
        const uint32_t *dest = g->dest + g->px;
        if (n == 16) {
#pragma GCC unroll 16
            for (size_t j = 0; j < 16; j++)
                _mm512_store_ps(g->ring + dest[j], v[j]);
        } else {
#pragma GCC unroll 16
            for (size_t j = 0; j < 16; j++)
                if (j < n) _mm512_store_ps(g->ring + dest[j], v[j]);
        }
    } else if (n == 16 && g->iw + 16 <= a->w_in && col + 16 <= p->wp) {
        /* inside one row: 16 vectors side by side */
        float *d = g->ring + (g->slot * p->wp + col) * LANES;
#pragma GCC unroll 16
        for (size_t j = 0; j < 16; j++)
            _mm512_store_ps(d + j * LANES, v[j]);
        if (g->slot < p->mirror) {
            d += p->r * p->wp * LANES;
#pragma GCC unroll 16
            for (size_t j = 0; j < 16; j++)
                _mm512_store_ps(d + j * LANES, v[j]);
        }
        g->iw += 16;
    } else {
        /* across row ends: pixel by pixel */
#pragma GCC unroll 16
        for (size_t j = 0; j < 16; j++) {
            if (j < n) {
                col = g->iw + a->pad_left;
                if (col < p->wp) ring_store(g, g->slot, col, v[j]);
                if (++g->iw == a->w_in) {
                    g->iw = 0;
                    if (++g->slot == p->r) g->slot = 0;
                }
            }
        }
    }
    if (g->iw == a->w_in) {
        g->iw = 0;
        if (++g->slot == p->r) g->slot = 0;
    }
    g->px += n;
}

/* Padded rows below ihp_need into the ring: padding rows zeroed, input rows transposed. */
static void ring_fill(cl_group *g, size_t ihp_need) {
    const kann_dwconv2d_args *a = g->a;
    const cl_plan *p = g->p;
    if (ihp_need > p->hp) ihp_need = p->hp;
    while (g->ihp < ihp_need) {
        if (g->ihp < a->pad_top || g->ihp >= (size_t)a->pad_top + a->h_in) {
            /* a ring of all the rows keeps the padding rows zero */
            size_t slot = g->ihp % p->r;
            if (p->r < p->hp)
                for (size_t col = 0; col < p->wp; col++)
                    ring_store(g, slot, col, _mm512_setzero_ps());
            g->ihp++;
            continue;
        }
        size_t end = (g->ihp - a->pad_top + 1) * a->w_in;
        while (g->px < end)
            ring_chunk(g);
        g->ihp = a->pad_top + g->px / a->w_in;
    }
}

/* What the stores of a group share; clamp: the activation is none, relu or clip (a clamp to
 * [lo, hi], relu's hi infinite), else vf_act or, without a vector form, the scalar one after the
 * store. */
typedef struct cl_out {
    const kann_act *act;
    int clamp, vec_act;
    __m512 lo, hi;
    size_t y_plane;
} cl_out;

/* Output pixels [q, q + m) (m <= 16) of every channel from the 16 pixel vectors v. CLAMP: the
 * activation is a clamp (a constant per call, so the channel loop has no switch). */
static inline __attribute__((always_inline)) void cl_store(const cl_group *g, const cl_out *o,
                                                           __m512 *v, size_t q, size_t m,
                                                           int CLAMP) {
    kann_transpose16_ps(v);
    __mmask16 mask = kann_lanes16(0, (int64_t)m);
    float *y = g->y + q;
    const float *res = g->res ? g->res + q : NULL;
    for (size_t c = 0; c < g->nc; c++, y += o->y_plane) {
        __m512 r = v[c];
        if (res) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mask, res + c * o->y_plane));
        if (CLAMP)
            r = _mm512_min_ps(o->hi, _mm512_max_ps(o->lo, r));
        else if (o->vec_act)
            r = vf_act(r, o->act, o->lo, o->hi);
        _mm512_mask_storeu_ps(y, mask, r);
        if (!CLAMP && !o->vec_act)
            for (size_t j = 0; j < m; j++)
                y[j] = kann_act_apply(o->act, y[j]);
    }
}

/* Staged output pixels: a ring of 32 vectors, 16 of them stored at once. */
#define STAGE 32

/* B output pixels whose window corners are base[0..B): bias plus every tap. */
static inline __attribute__((always_inline)) void cl_pixels(const float *const *base,
                                                            const float *wt, const cl_plan *p,
                                                            __m512 bias, int B, __m512 *acc) {
#pragma GCC unroll 8
    for (int b = 0; b < B; b++)
        acc[b] = bias;
    for (size_t t = 0; t < p->n_taps; t++) {
        __m512 wv = _mm512_load_ps(wt + t * LANES);
        ptrdiff_t off = p->taps[t];
#pragma GCC unroll 8
        for (int b = 0; b < B; b++)
            acc[b] = _mm512_fmadd_ps(wv, _mm512_load_ps(base[b] + off), acc[b]);
    }
}

/* The group's output rows [oh0, oh1): blocks of CL_BLOCK pixels in row-major order (across row
 * ends), staged until 16 are ready for the store. */
static inline __attribute__((always_inline)) void cl_rows(cl_group *g, const cl_out *o,
                                                          const float *wt, __m512 bias,
                                                          size_t oh0, size_t oh1, int CLAMP) {
    const kann_dwconv2d_args *a = g->a;
    const cl_plan *p = g->p;
    __attribute__((aligned(64))) float stage[STAGE * LANES];
    size_t head = 0, tail = 0, q = oh0 * a->w_out; /* q: the output pixel at tail */
    size_t oh = oh0, ow = 0, left = (oh1 - oh0) * a->w_out;
    size_t row_step = (size_t)a->stride_h % p->r, col_step = (size_t)a->stride_w * LANES;
    size_t slot = (oh0 * a->stride_h) % p->r; /* of the window corner of row oh */
    while (left > 0) {
        int B = left >= CL_BLOCK ? CL_BLOCK : (int)left;
        const float *base[CL_BLOCK];
        const float *row = g->ring + slot * p->wp * LANES;
        for (int b = 0; b < B; b++) {
            base[b] = row + ow * col_step;
            if (++ow == a->w_out) {
                ow = 0;
                oh++;
                slot += row_step;
                if (slot >= p->r) slot -= p->r;
                row = g->ring + slot * p->wp * LANES;
            }
        }
        size_t last = ow == 0 ? oh - 1 : oh; /* the block's last output row */
        ring_fill(g, last * a->stride_h + p->span);
        __m512 acc[CL_BLOCK];
        if (B == CL_BLOCK)
            cl_pixels(base, wt, p, bias, CL_BLOCK, acc);
        else
            for (int b = 0; b < B; b++)
                cl_pixels(base + b, wt, p, bias, 1, acc + b);
        for (int b = 0; b < B; b++)
            _mm512_store_ps(stage + ((head + (size_t)b) % STAGE) * LANES, acc[b]);
        head += (size_t)B;
        left -= (size_t)B;
        if (head - tail >= 16 || left == 0) {
            size_t m = head - tail < 16 ? head - tail : 16;
            __m512 v[16];
#pragma GCC unroll 16
            for (size_t i = 0; i < 16; i++)
                v[i] = _mm512_load_ps(stage + ((tail + i) % STAGE) * LANES);
            cl_store(g, o, v, q, m, CLAMP);
            q += m;
            tail += m;
            if (left == 0 && head > tail) { /* at most CL_BLOCK - 1 left */
#pragma GCC unroll 16
                for (size_t i = 0; i < 16; i++)
                    v[i] = _mm512_load_ps(stage + ((tail + i) % STAGE) * LANES);
                cl_store(g, o, v, q, head - tail, CLAMP);
            }
        }
    }
}

/* The largest output plane (floats) whose group of 16 is staged. A group's stores otherwise go
 * to 16 planes at once; where the next layer reads every channel (a 1x1 conv split along its
 * output channels on 2 cores), the other core holds those lines and each store waits for them.
 * Written in one pass, 14x14 layers of 384 and 576 channels took 27 and 39-40 us a stream instead
 * of 41 and 60 on 2 threads, the same on one; on 7x7 planes (under a line each) the stores are
 * nearly in order already and the copy only cost (docs/performance.md). */
#define CL_STAGE_PLANE 256

/* The conv by channel groups of 16 (kann_dwconv2d_args' tile: channels or output rows). */
static __attribute__((noinline)) void cl_drive(const kann_dwconv2d_args *a, const kann_exec *ex,
                                               const cl_plan *p, kann_dw_range rg) {
    uint32_t c_begin = rg.c_begin, c_end = rg.c_end, oh_begin = rg.oh_begin, oh_end = rg.oh_end;
    if (c_begin >= c_end || oh_begin >= oh_end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    cl_out o = {&a->act,
                kann_act_is_clamp(&a->act),
                kann_act_vectorizes(&a->act),
                _mm512_set1_ps(kann_act_clamp_lo(&a->act)),
                _mm512_set1_ps(kann_act_hi(&a->act)),
                y_plane};
    __attribute__((aligned(64))) float ring[(CL_VECS + 1) * LANES];
    /* A ring of all the rows, over few input pixels: each pixel's place in a table (the vector
     * past the ring for the columns no window reads). */
    size_t in_rows = p->hp - a->pad_top < a->h_in ? p->hp - a->pad_top : a->h_in;
    if (p->hp <= a->pad_top) in_rows = 0;
    uint32_t dest[CL_VECS];
    int table = p->r == p->hp && in_rows * a->w_in <= CL_VECS;
    if (table)
        for (size_t ih = 0, i = 0; ih < in_rows; ih++)
            for (size_t iw = 0; iw < a->w_in; iw++, i++) {
                size_t col = iw + a->pad_left;
                dest[i] = (uint32_t)(
                    col < p->wp ? ((ih + a->pad_top) * p->wp + col) * LANES : CL_VECS * LANES);
            }
    __attribute__((aligned(64))) float wt[CL_MAX_TAPS * LANES];
    /* zeroed once: the padding columns are never written, the mirror only where it shadows */
    kann_fill_zero(ring, (p->r + p->mirror) * p->wp * LANES);
    cl_group g;
    g.a = a;
    g.p = p;
    g.ring = ring;
    g.dest = table ? dest : NULL;
    /* a tile of whole planes of 65 to CL_STAGE_PLANE floats: a group's planes are one block of y,
     * written in one pass after the group rather than 16 planes at a time */
    __attribute__((aligned(64))) float staged[16 * CL_STAGE_PLANE];
    int whole = oh_begin == 0 && oh_end == a->h_out;
    float *stage = whole && y_plane > 64 && y_plane <= CL_STAGE_PLANE ? staged : NULL;
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c0 = c_begin; c0 < c_end; c0 += 16) {
            g.nc = c_end - c0 < 16 ? c_end - c0 : 16;
            g.x = x + (n * a->c_in + c0) * x_plane;
            float *yg = y + (n * a->c_out + c0) * y_plane;
            g.y = stage ? stage : yg;
            g.res = res ? res + (n * a->c_out + c0) * y_plane : NULL;
            /* the taps' weights, a vector of the group's channels each */
            for (size_t t0 = 0; t0 < p->n_taps; t0 += 16) {
                __m512 v[16];
                size_t nt = p->n_taps - t0 < 16 ? p->n_taps - t0 : 16;
                load_transposed(v, w + c0 * p->n_taps + t0, p->n_taps, g.nc, kann_lanes16(0, (int64_t)nt));
                for (size_t t = 0; t < nt; t++)
                    _mm512_store_ps(wt + (t0 + t) * LANES, v[t]);
            }
            __m512 bv = bias ? _mm512_maskz_loadu_ps(kann_lanes16(0, (int64_t)g.nc), bias + c0)
                             : _mm512_setzero_ps();
            /* the ring from the first padded row of the tile's first window */
            g.ihp = (size_t)oh_begin * a->stride_h;
            size_t ih = g.ihp > a->pad_top ? g.ihp - a->pad_top : 0;
            g.iw = 0;
            g.px = ih * a->w_in;
            g.slot = (ih + a->pad_top) % p->r;
            if (o.clamp)
                cl_rows(&g, &o, wt, bv, oh_begin, oh_end, 1);
            else
                cl_rows(&g, &o, wt, bv, oh_begin, oh_end, 0);
            if (stage) memcpy(yg, stage, g.nc * y_plane * sizeof(float));
        }
    }
}

/* ---- 3x3 and 5x5, stride 1 or 2, straight from the planes -------------------------------- */
/* On wide maps a KxK conv (K = 3 or 5) reads its input where it lies: an output vector of 16
 * columns takes each input row as K loads shifted by a column (lanes whose tap falls into the
 * padding masked off, reading zero), and D3_ROWS output rows go together so that each input row
 * loaded feeds the K output rows that read it: (D3_ROWS + K - 1) * K loads for K * K * D3_ROWS
 * FMAs, no copy of the input and no transposes. A tile's last block may be of 6, 4 or 2 rows,
 * and rows past the tile are computed and dropped (at most one). 3x3 keeps its 9 weights in
 * registers; the FMAs of 5x5 broadcast its 25 from memory. 5x5 took the channels-in-lanes path
 * before, whose ring of transposed rows costs about what its taps do: one thread, warm, minima
 * of alternated rounds, 72 channels on 28x28 0.054 -> 0.045 ms, 120 on 56x56 0.362 -> 0.300, 144
 * from 56x56 at stride 2 0.155 -> 0.134. 7x7 stays there: its 49 weights broadcast by the FMAs
 * made it 4-5 % slower (96 channels on 56x56, 192 on 28x28, 384 on 14x14). */

#define D3_ROWS 8 /* 8 chains of FMAs: 4 cycles of latency at 2 a cycle. Blocks of 6 left a
                   * quarter of the issue slots empty: one thread, warm, 3x3 with clip, 384
                   * channels on 14x14 15.6 -> 13.9 us, 192 on 28x28 30.6 -> 28.8, 144 on 56x56
                   * 86 -> 78, 96 from 112x112 at stride 2 139 -> 125. Blocks of 12 were no
                   * better where they fit and cost a latency-bound tail block elsewhere. */

/* Maps at least this wide take the path (a narrower one leaves lanes idle; the channels-in-lanes
 * path is faster there). */
#define D3_MIN_WIDTH 10

/* The window's side K when the conv takes the straight path, else 0. */
static int d3_side(const kann_dwconv2d_args *a) {
    int square = a->k_h == a->k_w && (a->k_h == 3 || a->k_h == 5);
    int fits = square && a->stride_h == a->stride_w && (a->stride_h == 1 || a->stride_h == 2) &&
               a->dil_h == 1 && a->dil_w == 1 && a->w_out >= D3_MIN_WIDTH;
    return fits ? (int)a->k_h : 0;
}

/* Tap t's weight as a vector: 3x3 from registers (wv); 5x5 a vector load from wc, the weights
 * broadcast once a channel into 25 vectors. gcc had reloaded and broadcast them apart from the
 * FMAs (one thread, warm, 72 channels on 28x28 25.7 -> 21.4 us, 120 on 56x56 184 -> 149); at
 * stride 2 it kept them as scalars and broadcast each from its register into the FMA, a shuffle
 * on the port the stride's permutes use: 72 channels from 56x56 69 -> 61 us (minima). */
static inline __attribute__((always_inline)) __m512 d3_weight(const __m512 *wv, const float *wc,
                                                              int t, int K) {
    return K == 3 ? wv[t] : _mm512_load_ps(wc + 16 * t);
}

/* Output rows [oh, oh + R) at columns [c0, c0 + 16) of the plane xc, R <= D3_ROWS: bias plus
 * the K * K taps (m[kw]: the lanes whose tap kw reads an input column; a row outside the input
 * is zero, not loaded, so every block runs the same straight line of FMAs: a masked load of
 * no lanes there took 4 % longer on a 3x3 conv over 112x112 maps). FULL: every lane of every
 * tap inside the row, plain loads (a masked load issues one a cycle, a plain one two). 5x5
 * sums its odd taps apart (odd[]) and adds them at the end: an input row feeds each output row
 * a chain of 5 dependent FMAs, two chains of 3 and 2 finish sooner (one thread, warm, 72
 * channels on 28x28 38.4 -> 35.7 us, 120 on 56x56 252 -> 236, 32 on 112x112 234 -> 218; 3x3
 * gained nothing that way). */
static inline __attribute__((always_inline)) void
d3_block(const kann_dwconv2d_args *a, const float *xc, const __m512 *wv, const float *wc,
         __m512 bias, size_t oh, ptrdiff_t c0, const __mmask16 *m, __m512 *acc, int R, int K,
         int FULL) {
    __m512 odd[D3_ROWS];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) {
        acc[r] = bias;
        odd[r] = _mm512_setzero_ps();
    }
    ptrdiff_t ih0 = (ptrdiff_t)oh - (ptrdiff_t)a->pad_top, h_in = (ptrdiff_t)a->h_in;
    const float *col = xc + c0 - (ptrdiff_t)a->pad_left;
#pragma GCC unroll 16
    for (int j = 0; j < R + K - 1; j++) {
        ptrdiff_t ih = ih0 + j;
        int in = ih >= 0 && ih < h_in;
        const float *row = col + (in ? ih : 0) * (ptrdiff_t)a->w_in;
        __m512 xv[5];
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++)
            xv[kw] = !in  ? _mm512_setzero_ps()
                     : FULL ? _mm512_loadu_ps(row + kw)
                            : _mm512_maskz_loadu_ps(m[kw], row + kw);
#pragma GCC unroll 5
        for (int kh = 0; kh < K; kh++) {
            int r = j - kh;
            if (r < 0 || r >= R) continue;
#pragma GCC unroll 5
            for (int kw = 0; kw < K; kw++) {
                __m512 *to = K == 5 && kw % 2 ? &odd[r] : &acc[r];
                *to = _mm512_fmadd_ps(d3_weight(wv, wc, K * kh + kw, K), xv[kw], *to);
            }
        }
    }
    if (K == 5)
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_add_ps(acc[r], odd[r]);
}

/* The same for stride 2: output column j reads input columns 2 j - pad_left + kw, so each
 * input row is (K + 1) / 2 pairs of vectors, from the window's first column and every second
 * one past it, their even columns (even taps) and odd ones (odd taps) picked by permutes; input
 * row 2 oh - pad_top + j feeds output rows (j - kh) / 2. m[2 i], m[2 i + 1]: the lanes of pair
 * i's loads that read an input column. */
static inline __attribute__((always_inline)) void
d3_block_s2(const kann_dwconv2d_args *a, const float *xc, const __m512 *wv, const float *wc,
            __m512 bias, size_t oh, ptrdiff_t ic0, const __mmask16 *m, __m512 *acc, int R, int K,
            int NARROW) {
    const __m512i even2 =
        _mm512_setr_epi32(2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 0);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        acc[r] = bias;
    ptrdiff_t ih0 = 2 * (ptrdiff_t)oh - (ptrdiff_t)a->pad_top, h_in = (ptrdiff_t)a->h_in;
    const float *col = xc + ic0;
#pragma GCC unroll 32
    for (int j = 0; j < 2 * R + K - 2; j++) {
        ptrdiff_t ih = ih0 + j;
        __mmask16 in = ih >= 0 && ih < h_in ? 0xffff : 0;
        const float *row = col + (in ? ih : 0) * (ptrdiff_t)a->w_in;
        __m512 xv[5];
#pragma GCC unroll 3
        for (int i = 0; 2 * i < K; i++) {
            if (NARROW && i == 1) { /* columns 2 j + 2 lie in the first pair's 32 (j < 15) */
                xv[2] = _mm512_permutex2var_ps(xv[3], even2, xv[4]);
                break;
            }
            __m512 p0 = _mm512_maskz_loadu_ps(m[2 * i] & in, row + 2 * i);
            __m512 p1 = _mm512_maskz_loadu_ps(m[2 * i + 1] & in, row + 2 * i + 16);
            if (NARROW) { /* K == 3: keep the pair for tap 2 */
                xv[3] = p0;
                xv[4] = p1;
            }
            xv[2 * i] = _mm512_permutex2var_ps(p0, even, p1);
            if (2 * i + 1 < K) xv[2 * i + 1] = _mm512_permutex2var_ps(p0, odd, p1);
        }
#pragma GCC unroll 5
        for (int kh = 0; kh < K; kh++) {
            int r2 = j - kh;
            if (r2 < 0 || r2 % 2 || r2 / 2 >= R) continue;
            int r = r2 / 2;
#pragma GCC unroll 5
            for (int kw = 0; kw < K; kw++)
                acc[r] = _mm512_fmadd_ps(d3_weight(wv, wc, K * kh + kw, K), xv[kw], acc[r]);
        }
    }
}

/* R output rows from oh at columns [c0, c0 + 16) (out: the columns inside the map) by the
 * block of stride S: the lanes each of its loads reads inside the input row. */
static inline __attribute__((always_inline)) void
d3_block_at(const kann_dwconv2d_args *a, const float *xc, const __m512 *wv, const float *wc,
            __m512 bias, size_t oh, size_t c0, __mmask16 out, int S, int R, int K, __m512 *acc) {
    int64_t w_in = (int64_t)a->w_in, iw0 = S * (int64_t)c0 - (int64_t)a->pad_left;
    __mmask16 m[6];
    if (S == 1) {
#pragma GCC unroll 5
        for (int kw = 0; kw < K; kw++)
            m[kw] = out & kann_lanes16(-iw0 - kw, w_in - iw0 - kw);
        /* a vector whose taps all lie inside the row: plain loads (3x3 over 112x112 maps:
         * 72 -> 64 us); the 5x5 blocks keep one copy (a second slowed those on 28x28 maps) */
        int full = K == 3;
        for (int kw = 0; kw < K; kw++)
            full &= m[kw] == 0xffff;
        if (full)
            d3_block(a, xc, wv, wc, bias, oh, (ptrdiff_t)c0, m, acc, R, K, 1);
        else
            d3_block(a, xc, wv, wc, bias, oh, (ptrdiff_t)c0, m, acc, R, K, 0);
    } else {
#pragma GCC unroll 3
        for (int i = 0; 2 * i < K; i++) {
            m[2 * i] = kann_lanes16(-iw0 - 2 * i, w_in - iw0 - 2 * i);
            m[2 * i + 1] = kann_lanes16(-iw0 - 2 * i - 16, w_in - iw0 - 2 * i - 16);
        }
        /* an output vector without its lane 15 (a row's last, narrower vector: 14 columns
         * from 28) takes tap 2 from the loads of taps 0 and 1: two masked loads an input row
         * instead of four (one thread, warm, 384 channels from 28x28 31.5 -> 24.8 us, 144 from
         * 56x56 48.7 -> 45.9) */
        if (K == 3 && !(out >> 15))
            d3_block_s2(a, xc, wv, wc, bias, oh, (ptrdiff_t)iw0, m, acc, R, K, 1);
        else
            d3_block_s2(a, xc, wv, wc, bias, oh, (ptrdiff_t)iw0, m, acc, R, K, 0);
    }
}

/* The tile's channels and rows; CLAMP: the activation is a clamp, SILU: it is SiLU (constants
 * per copy, so their stores have no switch; others go through dw_store). */
static inline __attribute__((always_inline)) void d3_rows(const kann_dwconv2d_args *a,
                                                          const kann_exec *ex, kann_dw_range rg,
                                                          int K, int S, int CLAMP, int SILU) {
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    size_t taps = (size_t)K * K;
    dw_out o;
    o.act = &a->act;
    o.vec_act = kann_act_vectorizes(o.act);
    o.lo = vf_set1(kann_act_store_lo(o.act, CLAMP));
    o.hi = vf_set1(kann_act_hi(o.act));
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c = rg.c_begin; c < rg.c_end; c++) {
            const float *xc = x + (n * a->c_in + c) * x_plane, *wc = w + c * taps;
            size_t plane = (n * a->c_out + c) * y_plane;
            __m512 wv[9];
            if (K == 3)
                for (int t = 0; t < 9; t++)
                    wv[t] = _mm512_set1_ps(wc[t]);
            /* 5x5: the weights broadcast once a channel, each FMA's operand a vector load */
            __attribute__((aligned(64))) float wb[25 * 16];
            if (K == 5) {
                for (int t = 0; t < 25; t++)
                    _mm512_store_ps(wb + 16 * t, _mm512_set1_ps(wc[t]));
                wc = wb;
            }
            __m512 bv = _mm512_set1_ps(bias ? bias[c] : 0.0f);
            for (size_t oh = rg.oh_begin; oh < rg.oh_end; oh += D3_ROWS) {
                size_t rows = rg.oh_end - oh < D3_ROWS ? rg.oh_end - oh : D3_ROWS;
                for (size_t c0 = 0; c0 < a->w_out; c0 += 16) {
                    __mmask16 out = kann_lanes16(0, (int64_t)(a->w_out - c0));
                    /* rows past the block's R are never stored: zero only to say so */
                    __m512 acc[D3_ROWS] = {0};
                    /* a block of D3_ROWS rows, or of 6, 4 or 2 for a tile's last rows (28 rows:
                     * 3 blocks of 8 and one of 4, not a fourth of 8 with 4 rows dropped) */
                    if (rows > 6)
                        d3_block_at(a, xc, wv, wc, bv, oh, c0, out, S, D3_ROWS, K, acc);
                    else if (rows > 4)
                        d3_block_at(a, xc, wv, wc, bv, oh, c0, out, S, 6, K, acc);
                    else if (rows > 2)
                        d3_block_at(a, xc, wv, wc, bv, oh, c0, out, S, 4, K, acc);
                    else
                        d3_block_at(a, xc, wv, wc, bv, oh, c0, out, S, 2, K, acc);
                    float *yr = y + plane + oh * a->w_out + c0;
                    const float *rr = res ? res + plane + oh * a->w_out + c0 : NULL;
#pragma GCC unroll 8
                    for (size_t r = 0; r < D3_ROWS; r++) {
                        if (r >= rows) break;
                        __m512 v = acc[r];
                        if (CLAMP || SILU) {
                            if (rr)
                                v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(out, rr + r * a->w_out));
                            v = CLAMP ? _mm512_min_ps(o.hi, _mm512_max_ps(o.lo, v)) : vf_silu(v);
                            if (S == 1 && out == 0xffff) /* stride 2: no gain, 5 % lost */
                                _mm512_storeu_ps(yr + r * a->w_out, v);
                            else
                                _mm512_mask_storeu_ps(yr + r * a->w_out, out, v);
                        } else {
                            dw_store(v, out, yr + r * a->w_out, rr ? rr + r * a->w_out : NULL, &o);
                        }
                    }
                }
            }
        }
    }
}

/* One window side and stride: the three epilogue copies. */
static inline __attribute__((always_inline)) void
d3_side_stride(const kann_dwconv2d_args *a, const kann_exec *ex, kann_dw_range rg, int K, int S) {
    if (kann_act_is_clamp(&a->act))
        d3_rows(a, ex, rg, K, S, 1, 0);
    else if (a->act.kind == KANN_ACT_SILU)
        d3_rows(a, ex, rg, K, S, 0, 1);
    else
        d3_rows(a, ex, rg, K, S, 0, 0);
}

/* A function of its own for each window side and stride: as copies inside one function the
 * 3x3 ones ran 10 % slower (112x112 maps) once the larger windows' joined them. */
#define D3_ENTRY(K, S)                                                                             \
    static __attribute__((noinline)) void d3_##K##x##K##_s##S(                                     \
        const kann_dwconv2d_args *a, const kann_exec *ex, kann_dw_range rg) {                      \
        d3_side_stride(a, ex, rg, K, S);                                                           \
    }
D3_ENTRY(3, 1)
D3_ENTRY(3, 2)
D3_ENTRY(5, 1)
D3_ENTRY(5, 2)
#undef D3_ENTRY

static void d3_drive(const kann_dwconv2d_args *a, const kann_exec *ex, kann_dw_range rg, int K) {
    if (rg.c_begin >= rg.c_end || rg.oh_begin >= rg.oh_end) return;
    int s1 = a->stride_h == 1;
    if (K == 3)
        s1 ? d3_3x3_s1(a, ex, rg) : d3_3x3_s2(a, ex, rg);
    else
        s1 ? d3_5x5_s1(a, ex, rg) : d3_5x5_s2(a, ex, rg);
}

/* Channels in the lanes for groups of at least CL_MIN_CHANNELS (fewer leave lanes idle: the
 * band path is faster for a group of 8 on a 56x56 map), the channels left over by the band
 * path. */
#define CL_MIN_CHANNELS 12

void kann_f32_dwconv2d_avx512(const void *args, const kann_exec *ex) {
    const kann_dwconv2d_args *a = args;
    kann_dw_range rg = kann_dw_range_of(a);
    int side = d3_side(a);
    if (side) {
        d3_drive(a, ex, rg, side);
        return;
    }
    if (kann_dwconv2d_planes_avx512(a, ex, &rg)) return;
    cl_plan p;
    if (rg.c_end > rg.c_begin && rg.c_end - rg.c_begin >= CL_MIN_CHANNELS && cl_plan_of(a, &p)) {
        uint32_t n = rg.c_end - rg.c_begin, tail = n % 16;
        uint32_t cl_end = tail >= CL_MIN_CHANNELS ? rg.c_end : rg.c_end - tail;
        kann_dw_range cl = rg;
        cl.c_end = cl_end;
        cl_drive(a, ex, &p, cl);
        if (cl_end == rg.c_end) return;
        rg.c_begin = cl_end;
    }
    kann_dw_drive(a, ex, rg, LANES, kann_row_pair_avx512, band);
}
