/* conv2d_packed's lanes path on AVX-512, for strided k x k convs and narrow ones (a grouped
 * conv's groups): output channels in the lanes, input values broadcast. The 12 x 32 tile of the
 * phase path loads its two B vectors at any offset of a phase plane (split across cache lines)
 * and broadcasts 12 weights per reduction step; here a step loads up to 4 vectors of 16 output
 * channels' weights (aligned, from a block repacked for the pass) and broadcasts one input value
 * per pixel of a group of 6 (4 vectors: 24 accumulators either way, but 10 loads instead of 14
 * and no split line) or 8 pixels.
 *
 * Loop nest: blocks of input channels (about LANES_BLOCK_K reduction steps; a pass's weights of
 * the block stay in the L1 cache), their weights repacked for every pass of up to 64 output
 * channels; in each block, bands of output rows whose input rows, zero-padded, are copied once
 * to a band buffer (every tap a constant offset from a pixel's base there, strides and
 * dilations included); in each band, every pass, and in each pass groups of the tile's pixels
 * taken in order across rows. A group's sums go to a staging buffer in the tile's scratch
 * ([pixel][every pass's 64 channels]) between blocks; after the last block each band's pixels
 * go back to the channel planes through 16 x 16 transposes, bias, residual and activation
 * fused.
 *
 * The rows path (kann_conv2d_rows_avx512, at the end) is the same turn for narrow convs of
 * stride 1 or 2 on their padded input: one vector of channels, so a group holds 28 pixels, whole
 * rows of 7 or 14 (a single pointer per row, the pixels at constant offsets from it, stride
 * floats apart) or 28 columns of a wider row, and the reduction is short enough for one pass
 * without staging between blocks. */
#include <immintrin.h>
#include <string.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "transpose_avx512.h"
#include "row_pair_avx512.h"
#include "prefetch_share.h"

/* Output channels per pass (4 vectors). */
#define LANES_PASS 64
/* Reduction steps per block of input channels: its weights, LANES_BLOCK_K x 64 floats (24 KiB),
 * stay in the L1 cache beside the band buffer. */
#define LANES_BLOCK_K 96
/* The same for a tile of one vector of channels (a grouped conv's 16-channel groups): its
 * sums, staged between blocks, are few, and fewer channels a block leave the band room for
 * more output rows, so that the window rows two bands share are copied again less often. One
 * thread, alternated rounds: regnet_x_400mf's stride-2 grouped convs (2, 4 and 10 groups of 16
 * on 112x112, 56x56, 28x28) 2.4-2.9 % faster than at 96; resnet18's 64 -> 128 stride-2 conv
 * (4 vectors) 1.3 % slower at 48, so it keeps 96. */
#define LANES_BLOCK_K_NARROW 48
/* Floats of a band buffer (16 KiB): the rows of a block's input channels that a band of output
 * rows reads. */
#define LANES_BAND_FLOATS 4096
/* The most pixels of a group (lanes_px). */
#define LANES_MAX_PX 8

/* The geometry of the lanes path for one tile. */
typedef struct lanes_plan {
    size_t taps, K;
    size_t cb;        /* input channels per block */
    size_t w_p;       /* band row: the columns the outputs' windows reach, from -pad_left */
    size_t band_out;  /* output rows per band */
    size_t band_rows; /* input rows of a full band */
    size_t plane;     /* floats per channel in the band buffer */
    size_t p_begin, p_end, m_begin, m_end;
    size_t passes, ld;        /* passes of LANES_PASS channels; floats per staged pixel */
    float *stage, *wt, *band; /* in the tile's scratch */
} lanes_plan;

/* The lanes plan of tile a, or 0 when the path does not apply (kann_conv2d_packed_lanes), the
 * band buffer cannot hold one input row of the window's reach, or the tile's part of the scratch
 * cannot hold the staging buffer, a block's weights and the band. */
static int lanes_plan_of(const kann_conv2d_packed_args *a, const kann_exec *ex, lanes_plan *pl) {
    kann_conv2d_packed_range(a, &pl->m_begin, &pl->m_end, &pl->p_begin, &pl->p_end);
    if (pl->m_begin >= pl->m_end || !kann_conv2d_packed_lanes(a, pl->p_begin, pl->p_end)) return 0;
    size_t taps = (size_t)a->k_h * a->k_w;
    pl->taps = taps;
    pl->K = a->c_in * taps;
    pl->w_p = ((size_t)a->w_out - 1) * a->stride_w + (size_t)(a->k_w - 1) * a->dil_w + 1;
    size_t reach = (size_t)(a->k_h - 1) * a->dil_h + 1;
    size_t block_k = pl->m_end - pl->m_begin <= 16 ? LANES_BLOCK_K_NARROW : LANES_BLOCK_K;
    pl->cb = block_k / taps ? block_k / taps : 1;
    if (pl->cb > a->c_in) pl->cb = a->c_in;
    /* as many output rows as the band buffer holds for cb channels; fewer channels where even
     * one row does not fit */
    while (pl->cb > 1 && pl->cb * reach * pl->w_p > LANES_BAND_FLOATS)
        pl->cb--;
    /* rows so wide that a block holds a few channels' rows: the sums would go through the
     * staging buffer every few steps (a 1-D conv of 512 channels over 3199 columns at stride
     * 2: one channel a block, 24 GFLOPS); the other paths take it */
    if (reach * pl->w_p > LANES_BAND_FLOATS || 4 * pl->cb * taps < block_k) return 0;
    size_t rows_fit = LANES_BAND_FLOATS / (pl->cb * pl->w_p);
    pl->band_out = (rows_fit - reach) / a->stride_h + 1;
    size_t tile_rows = (pl->p_end - 1) / a->w_out - pl->p_begin / a->w_out + 1;
    if (pl->band_out > tile_rows) pl->band_out = tile_rows;
    pl->band_rows = (pl->band_out - 1) * a->stride_h + reach;
    pl->plane = pl->band_rows * pl->w_p;
    pl->passes = (pl->m_end - pl->m_begin + LANES_PASS - 1) / LANES_PASS;
    /* the tile's channels in whole vectors: pass i at i * LANES_PASS, the last one narrower */
    pl->ld = (pl->m_end - pl->m_begin + 15) / 16 * 16;
    uint64_t n_px = pl->p_end - pl->p_begin, g = KANN_CONV_PIXEL_GRANULE;
    uint64_t need = (n_px + (uint64_t)pl->cb * taps) * pl->ld + (uint64_t)pl->cb * pl->plane + 16;
    uint64_t avail = ((pl->p_end + g - 1) / g * g - pl->p_begin) * pl->K;
    if (need > avail) return 0;
    /* 64-byte aligned pieces: the weight rows are loaded aligned */
    float *s = kann_mref(ex, a->scratch) + pl->p_begin * pl->K;
    s += (16 - ((uintptr_t)s / sizeof(float)) % 16) % 16;
    pl->stage = s;
    pl->wt = s + n_px * pl->ld;
    pl->band = pl->wt + pl->cb * taps * pl->ld;
    return 1;
}

/* Pass i's first output channel; returns its channel count (at most LANES_PASS). */
static inline size_t lanes_pass(const lanes_plan *pl, size_t i, size_t *m0) {
    *m0 = pl->m_begin + i * LANES_PASS;
    return pl->m_end - *m0 < LANES_PASS ? pl->m_end - *m0 : LANES_PASS;
}

/* acc[j][v] (pixel j, channels 16v..16v+15 of the pass) += over the block's steps k of
 * wt[k][16v + lane] * src[off[k] + base[j]] (wt 16 V floats a step); P pixels, V vectors. */
static inline __attribute__((always_inline)) void lanes_sums(const float *wt, const float *src,
                                                             const ptrdiff_t *off, size_t kb,
                                                             const ptrdiff_t *base, int P, int V,
                                                             __m512 acc[LANES_MAX_PX][4]) {
    /* a pointer per pixel, the step's offset an index register: no address arithmetic */
    const float *px[LANES_MAX_PX];
#pragma GCC unroll 16
    for (int j = 0; j < P; j++)
        px[j] = src + base[j];
    for (size_t k = 0; k < kb; k++, wt += 16 * V) {
        __m512 w[4];
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            w[v] = _mm512_load_ps(wt + 16 * v);
        ptrdiff_t o = off[k];
#pragma GCC unroll 16
        for (int j = 0; j < P; j++) {
            __m512 x = _mm512_set1_ps(px[j][o]);
#pragma GCC unroll 4
            for (int v = 0; v < V; v++)
                acc[j][v] = _mm512_fmadd_ps(x, w[v], acc[j][v]);
        }
    }
}

/* What a group of pixels works on. */
typedef struct lanes_group {
    const float *wt, *band;
    const ptrdiff_t *off;
    size_t kb;
    float *stage; /* the group's first pixel's row of the staging buffer, its pass's part */
    size_t ld;    /* floats per staged pixel */
    ptrdiff_t base[LANES_MAX_PX];
    size_t n; /* pixels of the group (the others repeat the last one's base, not stored) */
    int first;
} lanes_group;

/* One group, P pixels and V vectors: continue the staged sums (unless the first block), add the
 * block's, stage them. */
static inline __attribute__((always_inline)) void lanes_group_run(const lanes_group *gr, int P,
                                                                  int V) {
    __m512 acc[LANES_MAX_PX][4];
#pragma GCC unroll 16
    for (int j = 0; j < P; j++)
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            acc[j][v] = gr->first || (size_t)j >= gr->n
                            ? _mm512_setzero_ps()
                            : _mm512_load_ps(gr->stage + j * gr->ld + 16 * v);
    lanes_sums(gr->wt, gr->band, gr->off, gr->kb, gr->base, P, V, acc);
#pragma GCC unroll 16
    for (int j = 0; j < P; j++) {
        if ((size_t)j >= gr->n) break;
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            _mm512_store_ps(gr->stage + j * gr->ld + 16 * v, acc[j][v]);
    }
}

/* Pixels per group for V vectors: 24 accumulators over 4 or 3 vectors; 16 over 2 and 8 over 1,
 * since a group keeps a pointer per pixel and more than 8 of them no longer fit the general
 * registers beside the loop's own (12 pixels of 2 vectors spilled 25 of them to the stack and
 * ran 5 % slower; 16 pixels of one vector, 7 spills: a 2-group 32-channel 3x3 stride-2 conv on
 * 112x112, one thread, 0.49 -> 0.37 ms at 8 pixels). */
static inline int lanes_px(int V) {
    return V == 4 ? 6 : 8;
}

static __attribute__((noinline)) void lanes_group_v4(const lanes_group *gr) {
    lanes_group_run(gr, 6, 4);
}
static __attribute__((noinline)) void lanes_group_v3(const lanes_group *gr) {
    lanes_group_run(gr, 8, 3);
}
static __attribute__((noinline)) void lanes_group_v2(const lanes_group *gr) {
    lanes_group_run(gr, 8, 2);
}
static __attribute__((noinline)) void lanes_group_v1(const lanes_group *gr) {
    lanes_group_run(gr, 8, 1);
}

/* r[j] (j < n <= 16): channels [ch0, ch0 + nl) (nl <= 16) of output pixel q0 + j, turned into
 * channel rows and stored to the planes (consecutive pixels of each) with bias, residual and
 * activation. */
static void lanes_put(const kann_conv2d_packed_args *a, __m512 r[16], size_t ch0, size_t nl,
                      size_t q0, size_t n, const float *bias, const float *res, float *y) {
    size_t hw = (size_t)a->h_out * a->w_out;
    __mmask16 m = (__mmask16)((1u << n) - 1u);
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    kann_transpose16_ps(r);
    for (size_t l = 0; l < nl; l++) {
        size_t ch = ch0 + l;
        __m512 t = r[l];
        if (bias) t = _mm512_add_ps(t, _mm512_set1_ps(bias[ch]));
        if (res) t = _mm512_add_ps(t, _mm512_maskz_loadu_ps(m, res + ch * hw + q0));
        if (vec_act) t = vf_act(t, act, lo, hi);
        float *d = y + ch * hw + q0;
        _mm512_mask_storeu_ps(d, m, t);
        if (!vec_act)
            for (size_t j = 0; j < n; j++)
                d[j] = kann_act_apply(act, d[j]);
    }
}

/* The staged sums of tile pixels [q0, q1) (q1 - q0 <= 16 pixels, consecutive) back to
 * the channel planes: nc channels of the pass from m0, bias, residual and activation. */
static void lanes_store(const kann_conv2d_packed_args *a, const lanes_plan *pl, const float *y_bias,
                        const float *res, float *y, size_t m0, size_t nc, size_t q0, size_t q1) {
    size_t n = q1 - q0;
    for (size_t v = 0; v * 16 < nc; v++) {
        __m512 r[16];
        for (size_t j = 0; j < 16; j++)
            r[j] = j < n ? _mm512_load_ps(pl->stage + (q0 + j - pl->p_begin) * pl->ld +
                                          (m0 - pl->m_begin) + 16 * v)
                         : _mm512_setzero_ps();
        lanes_put(a, r, m0 + 16 * v, nc - v * 16 < 16 ? nc - v * 16 : 16, q0, n, y_bias, res, y);
    }
}

/* The block [k0, k0 + kb) of pass [m0, m0 + nc)'s weights as wt[k][16 V] (V vectors, lanes
 * past nc zero) from the panels [m / 12][k][m % 12]: per panel and step, its channels in the
 * pass as one masked copy. */
static void lanes_pack(const float *w, size_t K, size_t m0, size_t nc, size_t k0, size_t kb,
                       float *wt) {
    size_t V = (nc + 15) / 16;
    for (size_t k = 0; k < kb * V; k++) /* not memset: a rep stos per step cost more */
        _mm512_store_ps(wt + 16 * k, _mm512_setzero_ps());
    for (size_t i = m0 / KANN_CONV_PANEL; i * KANN_CONV_PANEL < m0 + nc; i++) {
        size_t lo = i * KANN_CONV_PANEL < m0 ? m0 - i * KANN_CONV_PANEL : 0;
        size_t hi =
            (i + 1) * KANN_CONV_PANEL > m0 + nc ? m0 + nc - i * KANN_CONV_PANEL : KANN_CONV_PANEL;
        __mmask16 m = (__mmask16)((1u << (hi - lo)) - 1u);
        const float *p = w + (i * K + k0) * KANN_CONV_PANEL + lo;
        float *d = wt + i * KANN_CONV_PANEL + lo - m0;
        for (size_t k = 0; k < kb; k++)
            _mm512_mask_storeu_ps(d + k * 16 * V, m,
                                  _mm512_maskz_loadu_ps(m, p + k * KANN_CONV_PANEL));
    }
}

/* Vectors of a band row at most: w_p <= LANES_BAND_FLOATS (lanes_plan_of). */
#define LANES_ROW_VECS (LANES_BAND_FLOATS / 16)

/* Input rows the windows of `rows` output rows reach. */
static inline size_t lanes_in_rows(const kann_conv2d_packed_args *a, size_t rows) {
    return (size_t)kann_conv_reach(rows, a->stride_h, a->k_h, a->dil_h);
}

/* The band of output rows [oh0, oh0 + rows): input channels [c0, c0 + cb) of its windows'
 * rows, zero-padded, into pl->band (channel planes pl->plane floats apart). Every row is the
 * same run of columns, so the masks of its vectors (the padding's lanes zero, the band row's
 * end) are worked out once for the band: per row only masked loads and stores are left, where
 * the general row copy spent more on its masks and branches than on the data (400 channels in
 * 25 groups, 3x3 stride 2 on 14x14, one thread: a fifth of the conv's time). */
static void lanes_fill_band(const kann_conv2d_packed_args *a, const lanes_plan *pl, const float *x,
                            size_t c0, size_t cb, size_t oh0, size_t rows) {
    size_t in_rows = lanes_in_rows(a, rows);
    size_t x_plane = (size_t)a->h_in * a->w_in, nv = (pl->w_p + 15) / 16;
    __mmask16 load[LANES_ROW_VECS], store[LANES_ROW_VECS];
    for (size_t v = 0; v < nv; v++) {
        int64_t col = 16 * (int64_t)v - a->pad_left;
        load[v] = kann_lanes16(-col, (int64_t)a->w_in - col);
        store[v] = kann_lanes16(0, (int64_t)(pl->w_p - 16 * v));
    }
    const __m512 zero = _mm512_setzero_ps();
    for (size_t c = 0; c < cb; c++) {
        float *d = pl->band + c * pl->plane;
        const float *xc = x + (c0 + c) * x_plane - a->pad_left;
        for (size_t i = 0; i < in_rows; i++, d += pl->w_p) {
            int64_t ih = (int64_t)(oh0 * a->stride_h + i) - a->pad_top;
            if (ih < 0 || ih >= (int64_t)a->h_in) {
                for (size_t v = 0; v < nv; v++)
                    _mm512_mask_storeu_ps(d + 16 * v, store[v], zero);
                continue;
            }
            const float *row = xc + (size_t)ih * a->w_in;
            for (size_t v = 0; v < nv; v++)
                _mm512_mask_storeu_ps(d + 16 * v, store[v],
                                      _mm512_maskz_loadu_ps(load[v], row + 16 * v));
        }
    }
}

/* Input channels of the block from c0: cb, fewer at the last. */
static inline size_t lanes_block_channels(const kann_conv2d_packed_args *a, const lanes_plan *pl,
                                          size_t c0) {
    return a->c_in - c0 < pl->cb ? a->c_in - c0 : pl->cb;
}

/* Output rows of the band from oh0: band_out, fewer at oh_end. */
static inline size_t lanes_band_rows(const lanes_plan *pl, size_t oh0, size_t oh_end) {
    return oh_end - oh0 < pl->band_out ? oh_end - oh0 : pl->band_out;
}

/* The input rows lanes_fill_band will copy for the band from output row oh0, channels
 * [c0, c0 + cb), asked for ahead of that fill. */
static inline __attribute__((always_inline)) void
lanes_prefetch_band(const kann_conv2d_packed_args *a, const lanes_plan *pl, const float *x,
                    size_t c0, size_t cb, size_t oh0, size_t oh_end) {
    kann_prefetch_rows(x, c0, cb, (int64_t)(oh0 * a->stride_h) - a->pad_top,
                       lanes_in_rows(a, lanes_band_rows(pl, oh0, oh_end)), a->h_in, a->w_in);
}

/* The lanes path over tile a; 0 (nothing done) when it does not apply. */
int kann_conv2d_lanes_avx512(const kann_conv2d_packed_args *a, const kann_exec *ex) {
    lanes_plan pl;
    if (!lanes_plan_of(a, ex, &pl)) return 0;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t w_out = a->w_out, oh_first = pl.p_begin / w_out, oh_end = (pl.p_end - 1) / w_out + 1;
    /* step k of a block: (channel c, kh, kw) at this offset in the band, the same in every block */
    ptrdiff_t off[LANES_BLOCK_K > KANN_CONV_MAX_TAPS ? LANES_BLOCK_K : KANN_CONV_MAX_TAPS];
    for (size_t c = 0; c < pl.cb; c++)
        for (size_t kh = 0; kh < a->k_h; kh++)
            for (size_t kw = 0; kw < a->k_w; kw++)
                off[(c * a->k_h + kh) * a->k_w + kw] =
                    (ptrdiff_t)(c * pl.plane + kh * a->dil_h * pl.w_p + kw * a->dil_w);
    for (size_t c0 = 0; c0 < a->c_in; c0 += pl.cb) {
        size_t cb = lanes_block_channels(a, &pl, c0), kb = cb * pl.taps;
        /* the block's weights, pass after pass */
        for (size_t i = 0; i < pl.passes; i++) {
            size_t m0, nc = lanes_pass(&pl, i, &m0);
            lanes_pack(w, pl.K, m0, nc, c0 * pl.taps, kb, pl.wt + i * kb * LANES_PASS);
        }
        lanes_group gr;
        gr.band = pl.band;
        gr.off = off;
        gr.kb = kb;
        gr.ld = pl.ld;
        gr.first = c0 == 0;
        int last_block = c0 + cb == a->c_in;
        for (size_t oh0 = oh_first; oh0 < oh_end; oh0 += pl.band_out) {
            size_t rows = lanes_band_rows(&pl, oh0, oh_end);
            lanes_fill_band(a, &pl, x, c0, cb, oh0, rows);
            /* the next band's rows (this block's, else the next block's first) while this one
             * computes */
            if (oh0 + rows < oh_end)
                lanes_prefetch_band(a, &pl, x, c0, cb, oh0 + rows, oh_end);
            else if (c0 + cb < a->c_in)
                lanes_prefetch_band(a, &pl, x, c0 + cb, lanes_block_channels(a, &pl, c0 + cb),
                                    oh_first, oh_end);
            size_t q_lo = oh0 * w_out > pl.p_begin ? oh0 * w_out : pl.p_begin;
            size_t q_hi = (oh0 + rows) * w_out < pl.p_end ? (oh0 + rows) * w_out : pl.p_end;
            for (size_t i = 0; i < pl.passes; i++) {
                size_t m0, nc = lanes_pass(&pl, i, &m0);
                int V = (int)((nc + 15) / 16), P = lanes_px(V);
                void (*run)(const lanes_group *) = V == 4   ? lanes_group_v4
                                                   : V == 3 ? lanes_group_v3
                                                   : V == 2 ? lanes_group_v2
                                                            : lanes_group_v1;
                gr.wt = pl.wt + i * kb * LANES_PASS;
                /* the next pixel's row in the band and column, counted along: no division a
                 * pixel */
                size_t r = q_lo / w_out - oh0, col = q_lo % w_out;
                for (size_t q = q_lo; q < q_hi; q += (size_t)P) {
                    gr.n = q_hi - q < (size_t)P ? q_hi - q : (size_t)P;
                    for (size_t j = 0; j < gr.n; j++) {
                        gr.base[j] = (ptrdiff_t)(r * a->stride_h * pl.w_p + col * a->stride_w);
                        if (++col == w_out) {
                            col = 0;
                            r++;
                        }
                    }
                    for (size_t j = gr.n; j < (size_t)P; j++)
                        gr.base[j] = gr.base[gr.n - 1];
                    gr.stage = pl.stage + (q - pl.p_begin) * pl.ld + i * LANES_PASS;
                    run(&gr);
                }
            }
            if (!last_block) continue;
            /* 16 pixels at a time across the band's rows: consecutive in the planes too (7x7
             * maps: 4 transposes a channel vector instead of one per row's 7 pixels) */
            for (size_t q = q_lo; q < q_hi; q += 16) {
                size_t e = q_hi - q < 16 ? q_hi : q + 16;
                for (size_t i = 0; i < pl.passes; i++) {
                    size_t m0, nc = lanes_pass(&pl, i, &m0);
                    lanes_store(a, &pl, bias, res, y, m0, nc, q, e);
                }
            }
        }
    }
    return 1;
}

/* ---- the rows path: narrow convs of stride 1 or 2 on their padded input -------------------- */

/* Pixels of a group: accumulators, beside the step's weight vector. */
#define ROWS_PX KANN_CONV_ROWS_PX

/* What a group of R rows of C pixels works on. */
typedef struct rows_group {
    const float *wt;      /* [K][16] */
    const ptrdiff_t *off; /* step k's offset from a pixel's window origin */
    size_t K;
    const float *src[4]; /* the window origin of each row's first pixel */
    kann_prefetch_share pf; /* the group's share of the next record's weights */
} rows_group;

/* acc[r * C + c] = over k of wt[k][lane] * src[r][off[k] + S c]: one weight vector a step,
 * broadcast against every pixel of the group (S the stride along the rows). */
static inline __attribute__((always_inline)) void rows_sums(const rows_group *g, int R, int C,
                                                            int S, __m512 acc[ROWS_PX]) {
#pragma GCC unroll 28
    for (int j = 0; j < R * C; j++)
        acc[j] = _mm512_setzero_ps();
    const float *wt = g->wt;
    kann_prefetch_share pf = g->pf;
    size_t pf_at = 0;
    for (size_t k = 0; k < g->K; k++, wt += 16) {
        kann_prefetch_step(&pf, k, &pf_at);
        __m512 w = _mm512_load_ps(wt);
        ptrdiff_t o = g->off[k];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            /* p opaque: each pixel's input a displacement from it, not base + index * 4, which
             * Intel cores split into two uops a FMA at rename (regnet_x_400mf's group convs
             * took 1.75 times as long in the host's slow stretches, against 1.5 for its 1x1
             * convs) */
            const float *p = g->src[r] + o;
            __asm__("" : "+r"(p));
#pragma GCC unroll 28
            for (int c = 0; c < C; c++)
                acc[r * C + c] = _mm512_fmadd_ps(_mm512_set1_ps(p[S * c]), w, acc[r * C + c]);
        }
    }
}

/* One group's sums as [pixel][16 channels] into st. */
#define ROWS_GROUP_FN(R, C, S)                                                                     \
    static __attribute__((noinline)) void rows_group_##R##_##C##_s##S(const rows_group *g,         \
                                                                       float *st) {                \
        __m512 acc[ROWS_PX];                                                                       \
        rows_sums(g, R, C, S, acc);                                                                \
        for (int j = 0; j < (R) * (C); j++)                                                        \
            _mm512_store_ps(st + 16 * j, acc[j]);                                                  \
    }
#define ROWS_GROUP_FNS(S)                                                                          \
    ROWS_GROUP_FN(4, 7, S)                                                                         \
    ROWS_GROUP_FN(3, 7, S)                                                                         \
    ROWS_GROUP_FN(2, 7, S)                                                                         \
    ROWS_GROUP_FN(1, 7, S)                                                                         \
    ROWS_GROUP_FN(2, 14, S)                                                                        \
    ROWS_GROUP_FN(1, 14, S)                                                                        \
    ROWS_GROUP_FN(1, 28, S)
ROWS_GROUP_FNS(1)
ROWS_GROUP_FNS(2)
#undef ROWS_GROUP_FNS
#undef ROWS_GROUP_FN

typedef void (*rows_group_fn)(const rows_group *, float *);

/* The group of r rows (at most 28 / C) of C columns at stride S (1 or 2). */
static rows_group_fn rows_group_of(size_t C, size_t r, uint32_t S) {
    static const rows_group_fn of7[2][4] = {
        {rows_group_1_7_s1, rows_group_2_7_s1, rows_group_3_7_s1, rows_group_4_7_s1},
        {rows_group_1_7_s2, rows_group_2_7_s2, rows_group_3_7_s2, rows_group_4_7_s2}};
    int s2 = S == 2;
    if (C == 7) return of7[s2][r - 1];
    if (C == 14)
        return r == 2 ? (s2 ? rows_group_2_14_s2 : rows_group_2_14_s1)
                      : (s2 ? rows_group_1_14_s2 : rows_group_1_14_s1);
    return s2 ? rows_group_1_28_s2 : rows_group_1_28_s1;
}

/* Output pixels [q0, q1) (at most 16, consecutive in the channel planes) from the staged sums
 * st (pixel p0 + j at st + 16 j): channels [m0, m0 + nc) of the conv. */
static void rows_store(const kann_conv2d_packed_args *a, const float *st, size_t p0, size_t q0,
                       size_t q1, size_t m0, size_t nc, const float *bias, const float *res,
                       float *y) {
    size_t n = q1 - q0;
    __m512 r[16];
    for (size_t j = 0; j < 16; j++)
        r[j] = j < n ? _mm512_load_ps(st + 16 * (q0 - p0 + j)) : _mm512_setzero_ps();
    lanes_put(a, r, m0, nc, q0, n, bias, res, y);
}

/* The weights of channels [m0, m0 + nc) (one vector; m0 a multiple of 12) as wt[k][16], lanes
 * past nc zero: per step lanes [0, 12) from one panel's row and the rest from the next one's, one
 * vector stored (lanes_pack's zero pass and copy per panel took 8 % of regnet_x_400mf's 7x7
 * grouped convs). Reading the two panels in the reduction loop instead, two masked loads a
 * step, took twice as long. */
static void rows_pack(const float *w, size_t K, size_t m0, size_t nc, float *wt) {
    size_t n_lo = nc < KANN_CONV_PANEL ? nc : KANN_CONV_PANEL;
    __mmask16 lo = kann_lanes16(0, (int64_t)n_lo), hi = kann_lanes16((int64_t)n_lo, (int64_t)nc);
    const float *p = w + m0 * K;
    /* lane 12 + j of step k is the next panel's [k][j]: loaded from 12 floats before its row */
    const float *q = nc > KANN_CONV_PANEL ? p + (K - 1) * KANN_CONV_PANEL : p;
    for (size_t k = 0; k < K; k++, p += KANN_CONV_PANEL, q += KANN_CONV_PANEL)
        _mm512_store_ps(wt + 16 * k, _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(lo, p), hi, q));
}

/* The input rows [ih0, ih0 + n) of channels [0, c_in), zero outside x, into the band's channel
 * planes (`plane` floats apart) of rows `row` floats wide, input column 0 at
 * KANN_CONV_ROWS_BAND_COL0 (64-byte aligned, as x's rows where their width is a multiple of 16):
 * whole vectors stored, the padding columns zero. */
static void rows_fill(const kann_conv2d_packed_args *a, const float *x, int64_t ih0, size_t n,
                      size_t row, size_t plane, float *band) {
    size_t nv = row / 16 - 1, x_plane = (size_t)a->h_in * a->w_in;
    size_t full = a->w_in / 16 < nv ? a->w_in / 16 : nv; /* vectors wholly inside the row */
    const __m512 zero = _mm512_setzero_ps();
    for (size_t c = 0; c < a->c_in; c++) {
        float *d = band + c * plane;
        for (size_t i = 0; i < n; i++, d += row) {
            int64_t ih = ih0 + (int64_t)i;
            _mm512_store_ps(d, zero);
            float *dr = d + KANN_CONV_ROWS_BAND_COL0;
            if (ih < 0 || ih >= (int64_t)a->h_in) {
                for (size_t v = 0; v < nv; v++)
                    _mm512_store_ps(dr + 16 * v, zero);
                continue;
            }
            const float *xr = x + c * x_plane + (size_t)ih * a->w_in;
            size_t v = 0;
            for (; v < full; v++)
                _mm512_store_ps(dr + 16 * v, _mm512_loadu_ps(xr + 16 * v));
            for (; v < nv; v++) {
                __mmask16 m = kann_lanes16(0, (int64_t)a->w_in - 16 * (int64_t)v);
                _mm512_store_ps(dr + 16 * v, _mm512_maskz_loadu_ps(m, xr + 16 * v));
            }
        }
    }
}

/* The rows path over tile a (kann_conv2d_packed_rows): the tile's channels (one vector) and
 * weights repacked as [k][16]; its output rows in groups of 28 / C rows of C columns (C the row
 * width, or 28 for rows a multiple of 28 wide), fewer rows at the tile's end. Each group's rows
 * read x in place, or a band buffer on the stack into which their window rows are copied
 * zero-padded, once for the groups side by side. A group's pixels are consecutive in the channel
 * planes: its sums are staged on the stack and stored 16 pixels at a time across its rows,
 * inside the tile's pixels only. */
int kann_conv2d_rows_avx512(const kann_conv2d_packed_args *a, const kann_exec *ex) {
    size_t m_begin, m_end, p_begin, p_end;
    kann_conv2d_packed_range(a, &m_begin, &m_end, &p_begin, &p_end);
    if (!kann_conv2d_packed_rows(a)) return 0;
    if (m_begin >= m_end || p_begin >= p_end) return 1;
    size_t taps = (size_t)a->k_h * a->k_w, K = a->c_in * taps, nc = m_end - m_begin;
    float wt[KANN_CONV_ROWS_MAX_K * 16] __attribute__((aligned(64)));
    float st[ROWS_PX * 16] __attribute__((aligned(64)));
    float band[KANN_CONV_ROWS_BAND_FLOATS] __attribute__((aligned(64)));
    ptrdiff_t off[KANN_CONV_ROWS_MAX_K];
    size_t w = a->w_out, C = w % ROWS_PX == 0 ? ROWS_PX : w;
    size_t R = (size_t)kann_conv2d_rows_group_rows(w);
    int in_place = kann_conv2d_rows_in_place(a);
    /* in place: x's rows and planes; else the band's */
    size_t row = in_place ? a->w_in : (size_t)kann_conv2d_rows_band_row(a);
    size_t plane = in_place ? (size_t)a->h_in * a->w_in : lanes_in_rows(a, R) * row;
    for (size_t c = 0; c < a->c_in; c++)
        for (size_t kh = 0; kh < a->k_h; kh++)
            for (size_t kw = 0; kw < a->k_w; kw++)
                off[(c * a->k_h + kh) * a->k_w + kw] =
                    (ptrdiff_t)(c * plane + kh * a->dil_h * row + kw * a->dil_w);
    const float *weights = kann_cref(ex, a->w);
    rows_pack(weights, K, m_begin, nc, wt);
    const float *x = kann_cref(ex, a->x);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    rows_group g;
    g.wt = wt;
    g.off = off;
    g.K = K;
    size_t oh_first = p_begin / w, oh_end = (p_end - 1) / w + 1;
    /* The constants lie in the order the records first use them (the compiler's memory plan),
     * so the bytes past this conv's weight panels are the next record's weights: a grouped
     * conv's next group, one record each, whose panels rows_pack would otherwise read from L3
     * or memory, a line at a time against the core's few outstanding misses (regnet_x_400mf:
     * the repack of its 380 group records about 4 % of its run). As many lines as these
     * panels, spread over this record's groups, one every few reduction steps. */
    size_t panels = (a->c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t pf_lines = panels * KANN_CONV_PANEL * K * sizeof(float) / 64;
    size_t n_groups = (oh_end - oh_first + R - 1) / R * ((w + C - 1) / C), gi = 0;
    const float *next = weights + panels * KANN_CONV_PANEL * K;
    for (size_t oh0 = oh_first; oh0 < oh_end; oh0 += R) {
        size_t rows = oh_end - oh0 < R ? oh_end - oh0 : R;
        /* the first input row the group's windows read */
        const float *src = x + oh0 * a->stride_h * a->w_in;
        if (!in_place) {
            rows_fill(a, x, (int64_t)(oh0 * a->stride_h) - a->pad_top, lanes_in_rows(a, rows), row,
                      plane, band);
            src = band + KANN_CONV_ROWS_BAND_COL0 - a->pad_left;
        }
        for (size_t c0 = 0; c0 < w; c0 += C, gi++) {
            for (size_t r = 0; r < rows; r++)
                g.src[r] = src + r * a->stride_h * row + c0 * a->stride_w;
            g.pf = kann_prefetch_share_of(next, pf_lines, gi, n_groups, K);
            rows_group_of(C, rows, a->stride_w)(&g, st);
            /* the group's pixels are consecutive in the planes: the tile's part of them */
            size_t p0 = oh0 * w + c0, n = rows * C;
            size_t lo = p0 > p_begin ? p0 : p_begin, hi = p0 + n < p_end ? p0 + n : p_end;
            for (size_t q = lo; q < hi; q += 16)
                rows_store(a, st, p0, q, hi - q < 16 ? hi : q + 16, m_begin, nc, bias, res, y);
        }
    }
    return 1;
}
