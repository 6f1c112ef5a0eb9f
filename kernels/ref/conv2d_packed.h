/* conv2d_packed pieces shared by the reference kernel, the validator and the SIMD variants:
 * the path tests (pointwise, wide), the gather of B (im2col) into column strips, and the loop
 * nests that walk a tile and call a variant's register-blocked microkernel. Static inline, so
 * that each variant's translation unit compiles them with its own ISA. */
#ifndef KANN_REF_CONV2D_PACKED_H
#define KANN_REF_CONV2D_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"

/* 1x1, stride 1, no padding, same spatial size: x is the B matrix [c_in][h*w] as it is. */
static inline int kann_conv2d_packed_pointwise(const kann_conv2d_packed_args *a) {
    return a->k_h == 1 && a->k_w == 1 && a->stride_h == 1 && a->stride_w == 1 && a->pad_top == 0 &&
           a->pad_left == 0 && a->h_in == a->h_out && a->w_in == a->w_out;
}

/* Window taps a wide conv reads per input channel (its offset table lives on the stack). */
#define KANN_CONV_MAX_TAPS 64

/* The wide path (implicit GEMM, no im2col): stride 1, no padding (the compiler pads x
 * beforehand, kernel pad2d) and every window inside x. On the "wide" grid of w_in columns,
 * wide pixel P = oh * w_in + ow, the B element of k = (c, kh, kw) is
 *   x[c * h_in * w_in + kh * dil_h * w_in + kw * dil_w + P],
 * a constant offset per k and contiguous in P: strips of B are read from x in place. Columns
 * ow >= w_out of the wide grid are computed and dropped at the store, so the path is taken
 * only while they are at most a third of the grid (else the gather costs less). */
static inline int kann_conv2d_packed_wide(const kann_conv2d_packed_args *a) {
    if (kann_conv2d_packed_pointwise(a) || a->stride_h != 1 || a->stride_w != 1 ||
        a->pad_top != 0 || a->pad_left != 0 || a->k_h == 0 || a->k_w == 0 || a->dil_h == 0 ||
        a->dil_w == 0 || (uint64_t)a->k_h * a->k_w > KANN_CONV_MAX_TAPS)
        return 0;
    uint64_t rows = (uint64_t)a->h_out + (uint64_t)a->dil_h * (a->k_h - 1);
    uint64_t cols = (uint64_t)a->w_out + (uint64_t)a->dil_w * (a->k_w - 1);
    return rows <= a->h_in && cols <= a->w_in && 3 * ((uint64_t)a->w_in - a->w_out) <= a->w_in;
}

/* Gathered B bytes per pixel block: a block is packed once and then multiplied by every weight
 * panel of the tile, so it should stay in the L2 cache while they stream past. */
#define KANN_CONV_BLOCK_BYTES (384u * 1024u)

/* Pixels per block: a multiple of KANN_CONV_PIXEL_GRANULE (so blocks start on strip bounds for
 * every strip width dividing it). */
static inline size_t kann_conv2d_packed_block(size_t k) {
    size_t g = KANN_CONV_PIXEL_GRANULE, n = KANN_CONV_BLOCK_BYTES / (sizeof(float) * (k ? k : 1));
    return n < g ? g : n / g * g;
}

static inline void kann_fill_zero(float *d, size_t n) {
    for (size_t i = 0; i < n; i++)
        d[i] = 0.0f;
}

/* The i in [0, run) with 0 <= iw0 + i * stride < w_in: [*lo, *hi). */
static inline void kann_valid_run(int64_t iw0, uint32_t stride, uint32_t w_in, size_t run,
                                  size_t *lo, size_t *hi) {
    int64_t l = iw0 >= 0 ? 0 : (-iw0 + stride - 1) / stride;
    int64_t h = iw0 >= (int64_t)w_in ? 0 : ((int64_t)w_in - iw0 + stride - 1) / stride;
    if (h > (int64_t)run) h = (int64_t)run;
    if (l > h) l = h;
    *lo = (size_t)l;
    *hi = (size_t)h;
}

/* Widest strip of any microkernel: bounds the row runs and store segments of a strip. */
#define KANN_CONV_MAX_STRIP 32

/* The part of an output row a strip holds, and where one window tap reads it in x:
 * columns [j, j + n) of the strip, of which [j + lo, j + hi) read x[src + i * stride_w]
 * (src < 0: the tap's row lies outside x) and the others are zero. */
typedef struct kann_gather_run {
    size_t j, n, oh, ow;
    size_t lo, hi;
    ptrdiff_t src;
} kann_gather_run;

static inline void kann_copy_strided(float *d, const float *s, size_t n, size_t stride) {
    if (stride == 1) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else if (stride == 2) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[2 * i];
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i * stride];
    }
}

/* d[j] = x_row[iw0 + j * stride] for j < n, 0 where the column lies outside [0, w_in). */
static inline void kann_row_copy(float *d, const float *x_row, int64_t iw0, uint32_t stride,
                                 uint32_t w_in, size_t n) {
    size_t lo, hi;
    kann_valid_run(iw0, stride, w_in, n, &lo, &hi);
    kann_fill_zero(d, lo);
    kann_copy_strided(d + lo, x_row + (iw0 + (int64_t)lo * stride), hi - lo, stride);
    kann_fill_zero(d + hi, n - hi);
}

/* A row copy into phase planes: d0[j] = x_row[iw0 + j * stride] for j < n, 0 where the column
 * lies outside [0, w_in); with d1 (stride 2 only) also d1[j] = x_row[iw0 + 1 + j * stride], the
 * odd columns beside the even ones, in the same pass over the row. Each variant has its own,
 * vectorized. */
typedef void (*kann_row_pair_fn)(float *d0, float *d1, const float *x_row, int64_t iw0,
                                 uint32_t stride, uint32_t w_in, size_t n);

/* The portable row pair: the valid runs copied, the rest zeroed. */
static inline void kann_row_pair(float *d0, float *d1, const float *x_row, int64_t iw0,
                                 uint32_t stride, uint32_t w_in, size_t n) {
    kann_row_copy(d0, x_row, iw0, stride, w_in, n);
    if (d1) kann_row_copy(d1, x_row, iw0 + 1, stride, w_in, n);
}

/* Phase planes of a conv input (the strided conv's phase path, the depthwise band):
 * plane p (row phase pr[p], column phase pc[p]), row i, column j holds
 *   x[(row0 + i) * s_h + pr[p] - pad_top][j * s_w + pc[p] - pad_left]  (0 outside x)
 * for i < rows, j < w_h; planes `plane` floats apart. */
typedef struct kann_phase_layout {
    const uint32_t *pr, *pc;
    size_t n_planes, row0, rows, w_h, plane;
} kann_phase_layout;

/* The planes of layout l from the channel plane xc (h_in x w_in) into buf. With stride 2 along
 * the columns the even and odd column planes of a row phase (adjacent in tap order) are
 * filled in one pass over each input row. */
static inline __attribute__((always_inline)) void
kann_phase_fill(const float *xc, uint32_t h_in, uint32_t w_in, uint32_t s_h, uint32_t s_w,
                uint32_t pad_top, uint32_t pad_left, const kann_phase_layout *l, float *buf,
                kann_row_pair_fn row_fn) {
    for (size_t p = 0; p < l->n_planes; p++) {
        float *d = buf + p * l->plane, *d1 = NULL;
        if (s_w == 2 && p + 1 < l->n_planes && l->pr[p + 1] == l->pr[p] &&
            l->pc[p + 1] == l->pc[p] + 1)
            d1 = buf + (p + 1) * l->plane;
        int64_t iw0 = (int64_t)l->pc[p] - pad_left;
        for (size_t i = 0; i < l->rows; i++, d += l->w_h) {
            int64_t ih = (int64_t)(l->row0 + i) * s_h + l->pr[p] - pad_top;
            float *e = d1 ? d1 + i * l->w_h : NULL;
            if (ih < 0 || ih >= (int64_t)h_in) {
                kann_fill_zero(d, l->w_h);
                if (e) kann_fill_zero(e, l->w_h);
            } else {
                row_fn(d, e, xc + (size_t)ih * w_in, iw0, s_w, w_in, l->w_h);
            }
        }
        if (d1) p++;
    }
}

/* B columns [p_begin, p_end) gathered into strips of nr columns: the strip holding column
 * p_begin + s * nr + j stores B[k][.] at dst[s * K * nr + k * nr + j]; the columns of the last
 * strip past p_end are zero. Strip by strip (its K * nr floats stay in the L1 cache): the row
 * runs of the strip once, where each window tap reads them once per tap, then a copy per
 * input channel and run. */
static inline void kann_conv2d_packed_gather(const kann_conv2d_packed_args *a, const float *x,
                                             float *dst, size_t p_begin, size_t p_end, size_t nr) {
    size_t taps = (size_t)a->k_h * a->k_w, K = a->c_in * taps, plane = (size_t)a->h_in * a->w_in;
    size_t sw = a->stride_w;
    kann_gather_run runs[KANN_CONV_MAX_STRIP + 1];
    for (size_t p0 = p_begin; p0 < p_end; p0 += nr, dst += K * nr) {
        size_t len = p_end - p0 < nr ? p_end - p0 : nr, n_runs = 0;
        size_t oh = p0 / a->w_out, ow = p0 - oh * a->w_out;
        for (size_t j = 0; j < len; oh++, ow = 0) {
            size_t n = a->w_out - ow < len - j ? a->w_out - ow : len - j;
            runs[n_runs++] = (kann_gather_run){j, n, oh, ow, 0, 0, -1};
            j += n;
        }
        if (len < nr)
            for (size_t k = 0; k < K; k++)
                kann_fill_zero(dst + k * nr + len, nr - len);
        for (size_t kh = 0; kh < a->k_h; kh++) {
            for (size_t kw = 0; kw < a->k_w; kw++) {
                for (size_t r = 0; r < n_runs; r++) {
                    kann_gather_run *u = &runs[r];
                    int64_t ih = (int64_t)u->oh * a->stride_h - a->pad_top + (int64_t)kh * a->dil_h;
                    int64_t iw0 = (int64_t)u->ow * sw - a->pad_left + (int64_t)kw * a->dil_w;
                    u->src = -1;
                    if (ih < 0 || ih >= (int64_t)a->h_in) continue;
                    kann_valid_run(iw0, a->stride_w, a->w_in, u->n, &u->lo, &u->hi);
                    u->src = (ptrdiff_t)(ih * a->w_in + iw0 + (int64_t)u->lo * a->stride_w);
                }
                float *d = dst + (kh * a->k_w + kw) * nr;
                const float *xc = x;
                for (size_t c = 0; c < a->c_in; c++, d += taps * nr, xc += plane) {
                    for (size_t r = 0; r < n_runs; r++) {
                        const kann_gather_run *u = &runs[r];
                        float *dr = d + u->j;
                        if (u->src < 0) {
                            kann_fill_zero(dr, u->n);
                            continue;
                        }
                        kann_fill_zero(dr, u->lo);
                        kann_copy_strided(dr + u->lo, xc + u->src, u->hi - u->lo, sw);
                        kann_fill_zero(dr + u->hi, u->n - u->hi);
                    }
                }
            }
        }
    }
}

/* Lanes [lo, hi) of a strip go to y[at + (j - lo)] (and read res likewise). */
typedef struct kann_conv_segment {
    size_t lo, hi, at;
} kann_conv_segment;

/* What a microkernel computes: for rows r < mr (<= KANN_CONV_PANEL) and columns j < n (<= its
 * strip width), with s = sum_k w[k * 12 + r] * B[k][j] over its k, where the reduction is
 * n_groups groups of n_taps: B[g * n_taps + t][j] = b[g * b_stride + taps[t] + j],
 *   first && last:  y[r * ldy + j] = act(s + bias[r] + res[r * ldy + j])  (bias, res optional)
 *   !first: s adds to the partial sum y holds; !last: y gets the partial sum, no epilogue.
 * With n_segments > 0 (first && last only) the columns go where the segments say, and columns
 * no segment names are dropped. It may read B[k][j] only for j < n. */
typedef struct kann_conv_tile {
    const float *w; /* the weight panel [k][12] */
    const float *b;
    size_t n_groups, b_stride, n_taps;
    /* Floats from a reduction step's B columns to the ones it prefetches: two groups on, or in
     * a pointwise conv (B the input planes themselves, far apart) the next strip of the same
     * plane, whose lines would otherwise come from a cache level below L2 on demand. */
    ptrdiff_t b_ahead;
    const ptrdiff_t *taps;
    size_t n, mr;
    const float *bias, *res;
    float *y;
    size_t ldy;
    const kann_act *act;
    int first, last; /* the first / last block of the reduction */
    size_t n_segments;
    const kann_conv_segment *segments;
} kann_conv_tile;

typedef void (*kann_conv_microkernel)(const kann_conv_tile *t);

/* The portable microkernel (conv2d_packed.c): strips of KANN_CONV_REF_STRIP columns, 12 x 16
 * accumulators the compiler can vectorize. */
#define KANN_CONV_REF_STRIP 16
void kann_conv_microkernel_ref(const kann_conv_tile *t);

/* Reduction steps: a strip of B over this many k (KANN_CONV_KC * 32 floats, 32 KiB) stays in
 * the L1 cache while the weight panels stream past it. */
#define KANN_CONV_KC 256

/* Reduction steps with every panel meeting every strip (panels outer): a panel's block of
 * 12 x KANN_CONV_KC_PANELS weights (32 KiB) stays in the L1 cache while the strips pass. */
#define KANN_CONV_KC_PANELS 682

/* Weight bytes (panels x KC) that still fit the L2 cache beside the pixel block: then every
 * strip meets every panel (the panels stay in L2); else every panel meets every strip (the
 * block stays in L2 and the weights are read once). A quarter of a 2 MiB L2, not a half: the
 * block, the output and the partial sums compete for it, and squeezenet1_1's last 1x1 conv
 * (512 -> 1000 channels, 13x13, 1 MB of panels per block of KC steps) took 1177 µs a call with
 * every strip meeting every panel, 1100 with the panels outer (one core, the caches flushed
 * between calls, 10th percentile of 300; 1x1 convs of 576 and 960 channels with K <= KC, and
 * 512 over 14x14, unchanged within 1 %). */
#define KANN_CONV_PANELS_L2 (512u * 1024u)

/* A pointwise conv over at most KANN_CONV_WHOLE_K_STRIPS strips (maps up to 14x14) runs its whole
 * reduction, up to KANN_CONV_WHOLE_K_MAX steps, as one block. Cut into blocks of KANN_CONV_KC,
 * each panel's weights (read once per strip, from L3 inside a network on such maps) came as
 * 12 KiB pieces 12 K floats apart, the prefetch stream starting again at every one, and the
 * partial sums went through y between blocks. One thread, AMD EPYC (Zen 5), 2026-11-28:
 * regnet_x_400mf's 400 -> 400 1x1 convs on 7x7 97 -> 82 us inside the network (`--profile`),
 * the whole network 5.31-5.40 -> 4.95-4.98 ms, mobilenet_v2 3.32-3.40 -> 3.24-3.30 ms
 * (medians of 200 runs, alternated); a 576 -> 96 conv on 14x14 alone 88 -> 84 us. */
#define KANN_CONV_WHOLE_K_STRIPS 7
#define KANN_CONV_WHOLE_K_MAX 2048

/* Pixels of a block at least: a long reduction need not shrink the block to a strip or two,
 * each of which would stream every weight panel again (2048 -> 512 channels over 40x40: 4 MB
 * of weights once per 32 pixels); the reduction goes in blocks of KANN_CONV_KC or
 * KANN_CONV_KC_PANELS steps, and a block of steps of the pixel block stays in the L2 cache. The
 * gather path's scratch holds every pixel's column. */
#define KANN_CONV_MIN_BLOCK 256

static inline int kann_conv2d_packed_whole_k(int pointwise, size_t k, size_t n_strips) {
    return pointwise && n_strips <= KANN_CONV_WHOLE_K_STRIPS && k <= KANN_CONV_WHOLE_K_MAX;
}

/* Whether a pixel block's strips go panel by panel even though the panels would fit the L2
 * cache: a pointwise conv with one block of reduction steps and at least
 * KANN_CONV_FIRST_PANELS panels. Strip by strip, each 32-pixel strip stores into every output
 * plane of the tile (96 for a 16 -> 96 expansion), more store streams than the prefetchers
 * follow; where y is not in the caches (inside a network, a 4.8 MB map) each store then waits
 * for its line. Panel by panel, 12 planes take long runs and the block of x (at most
 * KANN_CONV_BLOCK_BYTES) is read again from L2 by every panel. One core, the caches flushed
 * between calls, 10th percentile of 100: mobilenet_v2's 16 -> 96 on 112x112 807 -> 509 µs,
 * 24 -> 144 on 56x56 331 -> 240, 32 -> 192 on 28x28 114 -> 97, squeezenet1_1's 64 -> 256 on 55x55
 * 1236 -> 1113; with the caches warm and on 14x14 and 7x7 maps unchanged within 1-7 %. From 2
 * panels on, not 4: inside regnet_x_400mf (`--profile`, one thread) its 32 -> 32 on 112x112 0.34-
 * 0.38 -> 0.27 ms and on 56x56 0.10-0.11 -> 0.09, whole runs 1 % faster (7 of 8 alternated
 * rounds on two threads), mobilenet_v2 and squeezenet1_1 within 0.5 %. */
#define KANN_CONV_FIRST_PANELS 2
static inline int kann_conv2d_packed_panels_first(int pointwise, size_t k, size_t n_panels) {
    return pointwise && k <= KANN_CONV_KC && n_panels >= KANN_CONV_FIRST_PANELS;
}

/* The tile's output channels [*m_begin, *m_end) and pixels [*p_begin, *p_end). */
static inline void kann_conv2d_packed_range(const kann_conv2d_packed_args *a, size_t *m_begin,
                                            size_t *m_end, size_t *p_begin, size_t *p_end) {
    *m_begin = 0;
    *m_end = a->c_out;
    *p_begin = 0;
    *p_end = (size_t)a->h_out * a->w_out;
    if (a->tile.axis == 0) {
        *m_begin = a->tile.begin;
        *m_end = a->tile.end;
    } else {
        *p_begin = a->tile.begin;
        *p_end = a->tile.end;
    }
}

/* The segments of the wide strip [P0, P0 + n) (wide pixels of a grid w_in wide) that hold
 * output columns ow < w_out; a run continuing the previous one (w_in == w_out) extends it. */
static inline size_t kann_conv2d_wide_segments(size_t P0, size_t n, size_t w_in, size_t w_out,
                                               kann_conv_segment *seg) {
    size_t oh = P0 / w_in, ow = P0 - oh * w_in, count = 0;
    for (size_t j = 0; j < n; oh++, ow = 0) {
        size_t run = w_in - ow < n - j ? w_in - ow : n - j;
        if (ow < w_out) {
            size_t len = w_out - ow < run ? w_out - ow : run, at = oh * w_out + ow;
            if (count && seg[count - 1].hi == j &&
                seg[count - 1].at + (j - seg[count - 1].lo) == at)
                seg[count - 1].hi = j + len;
            else
                seg[count++] = (kann_conv_segment){j, j + len, at};
        }
        j += run;
    }
    return count;
}

/* B floats per pixel block of the wide and phase paths: the block's rows of every channel stay
 * in the L2 cache while the weight panels of the tile pass over them. */
#define KANN_CONV_WIDE_BLOCK_BYTES (1024u * 1024u)

/* The output channels and pixels of the tile, in the terms of kann_conv2d_packed_grid. */
typedef struct kann_conv_span {
    size_t m_begin, m_end, p_begin, p_end;
} kann_conv_span;

/* The loop nest of the wide and phase paths: the tile's output pixels [p_begin, p_end) on a
 * grid of grid_w columns whose row 0 is output row row0 (grid pixel P = (oh - row0) * grid_w
 * + ow, columns ow >= w_out computed and dropped at the store); the B element of reduction
 * step (c, tap) at grid pixel P is b[c * b_stride + taps[tap] + P]. Pixel blocks of the grid
 * (px_floats B floats per grid pixel); in each, every weight panel of the tile against every
 * strip of nr grid pixels, each strip the whole reduction in one microkernel call with the
 * epilogue at its store. */
static inline __attribute__((always_inline)) void
kann_conv2d_packed_grid(const kann_conv2d_packed_args *a, const kann_exec *ex, size_t nr,
                        kann_conv_microkernel ukr, kann_conv_span sp, const float *b,
                        size_t b_stride, size_t grid_w, size_t row0, const ptrdiff_t *taps,
                        size_t px_floats) {
    size_t w_out = a->w_out, hw = (size_t)a->h_out * w_out;
    size_t n_taps = (size_t)a->k_h * a->k_w, K = a->c_in * n_taps;
    const float *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y) + row0 * w_out;
    if (res) res += row0 * w_out;
    /* the grid pixels of the first and one past the last output pixel of the tile */
    size_t P_begin = (sp.p_begin / w_out - row0) * grid_w + sp.p_begin % w_out;
    size_t P_end = ((sp.p_end - 1) / w_out - row0) * grid_w + (sp.p_end - 1) % w_out + 1;
    size_t block = KANN_CONV_WIDE_BLOCK_BYTES / (sizeof(float) * px_floats);
    block = block < nr ? nr : block / nr * nr;
    kann_conv_segment segments[KANN_CONV_MAX_STRIP];
    kann_conv_tile t;
    t.b_stride = b_stride;
    t.b_ahead = 2 * (ptrdiff_t)b_stride;
    t.n_groups = a->c_in;
    t.n_taps = n_taps;
    t.taps = taps;
    t.ldy = hw;
    t.act = &a->act;
    t.first = t.last = 1;
    t.segments = segments;
    for (size_t q0 = P_begin; q0 < P_end; q0 += block) {
        size_t q1 = P_end - q0 < block ? P_end : q0 + block;
        for (size_t m0 = sp.m_begin; m0 < sp.m_end; m0 += KANN_CONV_PANEL) {
            /* m0 is a panel start: the tile begins on one */
            t.w = w + m0 * K;
            t.mr = sp.m_end - m0 < KANN_CONV_PANEL ? sp.m_end - m0 : KANN_CONV_PANEL;
            t.bias = bias ? bias + m0 : NULL;
            t.res = res ? res + m0 * hw : NULL;
            t.y = y + m0 * hw;
            for (size_t P0 = q0; P0 < q1; P0 += nr) {
                t.n = q1 - P0 < nr ? q1 - P0 : nr;
                t.b = b + P0;
                t.n_segments = kann_conv2d_wide_segments(P0, t.n, grid_w, w_out, segments);
                ukr(&t);
            }
        }
    }
}

/* The wide path (see kann_conv2d_packed_wide): x itself is the grid, w_in columns wide. */
static inline __attribute__((always_inline)) void
kann_conv2d_packed_drive_wide(const kann_conv2d_packed_args *a, const kann_exec *ex, size_t nr,
                              kann_conv_microkernel ukr, kann_conv_span sp) {
    ptrdiff_t taps[KANN_CONV_MAX_TAPS];
    for (size_t kh = 0; kh < a->k_h; kh++)
        for (size_t kw = 0; kw < a->k_w; kw++)
            taps[kh * a->k_w + kw] = (ptrdiff_t)(kh * a->dil_h * a->w_in + kw * a->dil_w);
    kann_conv2d_packed_grid(a, ex, nr, ukr, sp, kann_cref(ex, a->x), (size_t)a->h_in * a->w_in,
                            a->w_in, 0, taps, a->c_in);
}

/* The phases (row mod s_h, column mod s_w) that the taps of a k_h x k_w window with dilations
 * d_h, d_w read, in tap order (a row phase's column phases come out adjacent): pr[p], pc[p]
 * for p below the returned count, plane_of[t] the phase of tap t = kh * k_w + kw (k_h * k_w
 * at most KANN_CONV_MAX_TAPS, strides not zero). */
static inline size_t kann_tap_phases(uint32_t k_h, uint32_t k_w, uint32_t d_h, uint32_t d_w,
                                     uint32_t s_h, uint32_t s_w, uint32_t *pr, uint32_t *pc,
                                     size_t *plane_of) {
    size_t n = 0, n_taps = (size_t)k_h * k_w;
    for (size_t t = 0; t < n_taps; t++) {
        uint64_t r = (uint64_t)(t / k_w) * d_h, c = (uint64_t)(t % k_w) * d_w;
        uint32_t tr = (uint32_t)(r % s_h), tc = (uint32_t)(c % s_w);
        size_t p = 0;
        while (p < n && (pr[p] != tr || pc[p] != tc))
            p++;
        if (p == n) {
            pr[p] = tr;
            pc[p] = tc;
            n++;
        }
        plane_of[t] = p;
    }
    return n;
}

/* The phase path, for strided convs: the input rows a tile reads, split by the strides into
 * phase planes in its scratch (zero-padded, as kann_dw_band_plan lays out a depthwise band),
 *   plane (pr, pc)[i][j] = x[c][(row0 + i) * s_h + pr - pad_top][j * s_w + pc - pad_left],
 * so that tap (kh, kw) of output (row0 + i, ow) reads plane ((kh d_h) % s_h, (kw d_w) % s_w) at
 * [i + (kh d_h) / s_h][ow + (kw d_w) / s_w]: a stride-1 grid of w_h = w_out + reach_c columns,
 * every B element read in place as on the wide path, no K-fold gather. Only the phases some
 * tap reads are filled (one for a 1x1 stride-2 conv). */
typedef struct kann_conv_phases {
    size_t w_h, rows, row0; /* plane columns and rows, the tile's first output row */
    size_t n_planes;
    uint32_t pr[KANN_CONV_MAX_TAPS], pc[KANN_CONV_MAX_TAPS];
    ptrdiff_t taps[KANN_CONV_MAX_TAPS]; /* tap t = kh * k_w + kw: its offset in a channel */
} kann_conv_phases;

/* Where the phase path beats the gather (one thread of the 2-core machine, medians): a
 * reduction of at least KANN_CONV_PHASE_MIN_K, since each strip's store walks its segments of
 * the grid (3x3 stride 2 over RGB, K = 27: 0.59 ms gathered, 0.73 ms on planes; resnet18's 7x7
 * stride-2 conv, K = 147: 2.17 -> 1.86 ms; its 3x3 stride-2 ones on 28x28 and 14x14 outputs
 * 3 % and 8 % faster); more than one tap (a 1x1 window's gather is one strided copy per
 * channel: 0.10 ms gathered, 0.12 ms on planes for 128 -> 256 channels); outputs at least
 * KANN_CONV_PHASE_MIN_W wide (the 7x7 output of a 3x3 stride-2 conv spreads 49 pixels over a
 * grid of 56, 32 + 24 columns: 1.06 ms gathered, 1.16 ms on planes). */
#define KANN_CONV_PHASE_MIN_K 96
#define KANN_CONV_PHASE_MIN_W 8

/* The phase layout of the tile [p_begin, p_end); 0 when the path does not apply: stride 1, a
 * 1x1 window or more taps than the offset table holds, too short a reduction, too narrow an
 * output or a grid wasting more than a third of its columns, or planes that do not fit the
 * tile's part of the scratch (from p_begin * K up to round_up(p_end) * K). */
static inline int kann_conv2d_packed_phase_plan(const kann_conv2d_packed_args *a, size_t p_begin,
                                                size_t p_end, kann_conv_phases *ph) {
    size_t n_taps = (size_t)a->k_h * a->k_w;
    if ((a->stride_h == 1 && a->stride_w == 1) || a->stride_h == 0 || a->stride_w == 0 ||
        n_taps < 2 || n_taps > KANN_CONV_MAX_TAPS || a->w_out < KANN_CONV_PHASE_MIN_W ||
        p_begin >= p_end)
        return 0;
    uint64_t reach_r = (uint64_t)(a->k_h - 1) * a->dil_h / a->stride_h;
    uint64_t reach_c = (uint64_t)(a->k_w - 1) * a->dil_w / a->stride_w;
    uint64_t w_h = (uint64_t)a->w_out + reach_c;
    if (3 * reach_c > w_h) return 0;
    size_t row0 = p_begin / a->w_out, row1 = (p_end - 1) / a->w_out + 1;
    uint64_t rows = (uint64_t)(row1 - row0) + reach_r;
    size_t plane_of[KANN_CONV_MAX_TAPS];
    ph->n_planes = kann_tap_phases(a->k_h, a->k_w, a->dil_h, a->dil_w, a->stride_h, a->stride_w,
                                   ph->pr, ph->pc, plane_of);
    uint64_t g = KANN_CONV_PIXEL_GRANULE, K = (uint64_t)a->c_in * n_taps;
    if (K < KANN_CONV_PHASE_MIN_K) return 0;
    uint64_t avail = ((p_end + g - 1) / g * g - p_begin) * K;
    if ((uint64_t)a->c_in * ph->n_planes * rows * w_h > avail) return 0;
    ph->w_h = (size_t)w_h;
    ph->rows = (size_t)rows;
    ph->row0 = row0;
    for (size_t t = 0; t < n_taps; t++) {
        size_t r = (size_t)(t / a->k_w) * a->dil_h, c = (size_t)(t % a->k_w) * a->dil_w;
        ph->taps[t] = (ptrdiff_t)((plane_of[t] * ph->rows + r / a->stride_h) * ph->w_h +
                                  c / a->stride_w);
    }
    return 1;
}

/* The AVX-512 variant's lanes path (output channels in the lanes, conv2d_lanes_avx512.c) takes
 * the strided convs of the phase path (at least 2 taps, KANN_CONV_PHASE_MIN_K reduction steps)
 * whose tile holds at least KANN_CONV_LANES_MIN_PIXELS output pixels: its repacked weights serve
 * every pixel of the tile, and over fewer the 12 x 32 tile, streaming the panels in place, is
 * faster (resnet18's layer4 3x3 stride 2, 49 pixels: 1.2x slower on lanes; its layer3 one, 196
 * pixels, 904-922 against 820-823 us inside the network, one thread). Narrow convs, at most
 * KANN_CONV_LANES_NARROW output channels (one vector: the groups of a grouped conv, one call
 * each), take it whatever their pixels and reduction: their weights are few to repack, and the
 * 12-row panels run them as a 12-row and a 4-row tile, the gather copying B tap by tap (one
 * thread: regnet_x_400mf's 16-channel groups, 3x3 stride 2 on 7x7, 25 groups 0.216 -> 0.097
 * ms; on 14x14 the same as the phase path; resnext50's 8-channel ones, K = 72, 28x28, 32 groups
 * 0.89 -> 0.81 ms). */
#define KANN_CONV_LANES_MIN_PIXELS 256
#define KANN_CONV_LANES_NARROW 16

/* Stride-1 windows the lanes path takes too, where the compiler gives the conv the gather
 * path's scratch: those of at least 5 taps but 3x3 (which goes to Winograd). On the wide path
 * their B loads, at every tap's column offset, cross cache lines; the lanes path loads the
 * weights aligned and broadcasts the inputs (one thread: a 5x5 conv of 64 channels on 56x56
 * 7.0 -> 4.3 ms, Inception v3's 1x7 of 128 -> 192 channels on 17x17 1.26 -> 0.69). */
static inline int kann_conv2d_packed_lanes_stride1(const kann_conv2d_packed_args *a) {
    uint64_t taps = (uint64_t)a->k_h * a->k_w;
    return a->stride_h == 1 && a->stride_w == 1 && taps >= 5 && !(a->k_h == 3 && a->k_w == 3);
}

static inline int kann_conv2d_packed_lanes(const kann_conv2d_packed_args *a, size_t p_begin,
                                           size_t p_end) {
    uint64_t taps = (uint64_t)a->k_h * a->k_w;
    int narrow = a->c_out <= KANN_CONV_LANES_NARROW;
    int strided = !(a->stride_h == 1 && a->stride_w == 1);
    if (!strided && (a->scratch.space == KANN_SPACE_NONE || !kann_conv2d_packed_lanes_stride1(a)))
        return 0;
    return a->stride_h != 0 && a->stride_w != 0 && taps >= 2 && taps <= KANN_CONV_MAX_TAPS &&
           (a->c_in * taps >= KANN_CONV_PHASE_MIN_K || narrow) && a->w_out != 0 &&
           p_begin < p_end && (p_end - p_begin >= KANN_CONV_LANES_MIN_PIXELS || narrow);
}

/* The AVX-512 variant's rows path (conv2d_lanes_avx512.c) takes the narrow convs of more than
 * one panel (13 to KANN_CONV_LANES_NARROW output channels: a grouped conv's 16-channel groups)
 * of stride 1 or 2: output channels in the lanes, a group of 28 pixels (4 rows of 7, 2 of 14 or 1
 * of 28: the rows' widths the path takes) accumulating whole reductions of at most
 * KANN_CONV_ROWS_MAX_K steps, each pixel's input values broadcast from where they lie, whatever
 * the stride. It reads x in place where every window lies inside it (a stride-1 conv on the
 * input pad2d padded for it, as the compiler lowers those); otherwise, from a band buffer of the
 * input rows a group's output rows reach, zero-padded, of at most KANN_CONV_ROWS_BAND_FLOATS
 * floats. The wide path computes the padded grid's columns too (63 pixels for a 7x7 map) in a
 * 12-row and a 4-row tile: one thread, regnet_x_400mf's 25 groups on 7x7 0.082 -> 0.070 ms, its
 * 10 on 14x14 0.104 -> 0.093, its 4 on 28x28 0.159 -> 0.144. Over one panel the wide path wins,
 * every lane busy: resnext50's 4- and 8-channel groups (56x56, 28x28) ran 3x and 1.65x slower
 * on rows. */
#define KANN_CONV_ROWS_MAX_K 288
#define KANN_CONV_ROWS_PX 28
#define KANN_CONV_ROWS_BAND_FLOATS 8192

/* Input rows (or columns) the windows of n >= 1 outputs span along an axis. */
static inline uint64_t kann_conv_reach(uint64_t n, uint32_t stride, uint32_t k, uint32_t dil) {
    return (n - 1) * stride + (uint64_t)(k - 1) * dil + 1;
}

/* Output rows of a rows-path group (KANN_CONV_ROWS_PX pixels, whole rows of w columns). */
static inline uint64_t kann_conv2d_rows_group_rows(uint64_t w) {
    return w % KANN_CONV_ROWS_PX == 0 ? 1 : KANN_CONV_ROWS_PX / w;
}

/* Every window of a inside x, no padding: x is read in place. */
static inline int kann_conv2d_rows_in_place(const kann_conv2d_packed_args *a) {
    return a->pad_top == 0 && a->pad_left == 0 &&
           a->h_in >= kann_conv_reach(a->h_out, a->stride_h, a->k_h, a->dil_h) &&
           a->w_in >= kann_conv_reach(a->w_out, a->stride_w, a->k_w, a->dil_w);
}

/* Input column 0's place in a band row of the rows path: the padding columns before it, input
 * rows copied to aligned vectors. */
#define KANN_CONV_ROWS_BAND_COL0 16

/* Floats of a band row of the rows path: its columns up to the last window's end, whole
 * vectors. */
static inline uint64_t kann_conv2d_rows_band_row(const kann_conv2d_packed_args *a) {
    uint64_t reach = kann_conv_reach(a->w_out, a->stride_w, a->k_w, a->dil_w);
    return (KANN_CONV_ROWS_BAND_COL0 - a->pad_left + reach + 15) / 16 * 16;
}

/* Floats of the band buffer a group's output rows read: channel planes of the rows their
 * windows reach. */
static inline uint64_t kann_conv2d_rows_band(const kann_conv2d_packed_args *a) {
    uint64_t rows =
        kann_conv_reach(kann_conv2d_rows_group_rows(a->w_out), a->stride_h, a->k_h, a->dil_h);
    return a->c_in * rows * kann_conv2d_rows_band_row(a);
}

static inline int kann_conv2d_packed_rows(const kann_conv2d_packed_args *a) {
    uint64_t taps = (uint64_t)a->k_h * a->k_w, K = a->c_in * taps, w = a->w_out;
    int stride = a->stride_h == a->stride_w && (a->stride_h == 1 || a->stride_h == 2);
    return stride && a->c_out > KANN_CONV_PANEL && a->c_out <= KANN_CONV_LANES_NARROW &&
           taps >= 2 && K <= KANN_CONV_ROWS_MAX_K &&
           (w == 7 || w == 14 || (w != 0 && w % KANN_CONV_ROWS_PX == 0)) && a->h_out != 0 &&
           a->dil_h != 0 && a->dil_w != 0 &&
           (kann_conv2d_rows_in_place(a) || (a->pad_left <= KANN_CONV_ROWS_BAND_COL0 &&
                                             kann_conv2d_rows_band(a) <= KANN_CONV_ROWS_BAND_FLOATS));
}

/* The phase path's loop nest: the planes of every channel into buf (kann_phase_fill, rows by
 * row_fn), then the grid. */
static inline __attribute__((always_inline)) void
kann_conv2d_packed_drive_phase(const kann_conv2d_packed_args *a, const kann_exec *ex, size_t nr,
                               kann_conv_microkernel ukr, kann_conv_span sp,
                               const kann_conv_phases *ph, float *buf, kann_row_pair_fn row_fn) {
    const float *x = kann_cref(ex, a->x);
    size_t plane = ph->rows * ph->w_h, x_plane = (size_t)a->h_in * a->w_in;
    kann_phase_layout l = {ph->pr, ph->pc, ph->n_planes, ph->row0, ph->rows, ph->w_h, plane};
    for (size_t c = 0; c < a->c_in; c++)
        kann_phase_fill(x + c * x_plane, a->h_in, a->w_in, a->stride_h, a->stride_w, a->pad_top,
                        a->pad_left, &l, buf + c * ph->n_planes * plane, row_fn);
    kann_conv2d_packed_grid(a, ex, nr, ukr, sp, buf, ph->n_planes * plane, ph->w_h, ph->row0,
                            ph->taps, a->c_in * ph->n_planes);
}

/* The AVX-512 variant's direct path for convs over few input channels (16 pixels of 16
 * channels at a time, weights broadcast, inputs from a zero-padded copy of each output row's
 * window rows): at most KANN_CONV_DIRECT_MAX_C_IN input channels and KANN_CONV_DIRECT_MAX_K
 * reduction steps, the copy (c_in * k_h * stride_w rows of kann_conv2d_direct_row floats) at
 * most KANN_CONV_DIRECT_STAGE floats, and at least KANN_CONV_DIRECT_MIN_C_OUT output channels:
 * a pass computes them 16 at a time, so fewer leave most of its work unused (the 4-channel
 * groups of resnext50_32x4d's first grouped conv, 56x56: 1.58 ms direct, 0.49 ms on the wide
 * path, one thread). The reduction limit takes alexnet's 11x11 stride-4 stem (K = 363: 1.88 ms
 * gathered, 1.65 direct, one thread); its weights, 23 KiB a group of 16 channels, still stay in
 * the L1 cache while a row's blocks pass. */
#define KANN_CONV_DIRECT_MAX_C_IN 4
#define KANN_CONV_DIRECT_MAX_K 384
#define KANN_CONV_DIRECT_STAGE 12288
#define KANN_CONV_DIRECT_MIN_C_OUT 16

/* The length of one row of the copy: the copy holds, for each window row of the output row,
 * its stride_w phases (columns of x at pad_left distance, every stride_w-th, phase by phase),
 * so that the 16 pixels a block of output computes read 16 consecutive floats of one phase
 * for each tap, from a column past w_out rounded up to a whole block. */
static inline size_t kann_conv2d_direct_row(const kann_conv2d_packed_args *a) {
    size_t w = ((size_t)a->w_out + 15) / 16 * 16 + (size_t)(a->k_w - 1) * a->dil_w / a->stride_w;
    return (w + 15) / 16 * 16;
}

/* A conv of the direct path's shape with at most max_k reduction steps: few input channels, a
 * copy that fits. */
static inline int kann_conv2d_packed_direct_shape(const kann_conv2d_packed_args *a,
                                                  uint64_t max_k) {
    uint64_t K = (uint64_t)a->c_in * a->k_h * a->k_w;
    if (a->c_in > KANN_CONV_DIRECT_MAX_C_IN || K == 0 || K > max_k || a->stride_w == 0 ||
        a->stride_h == 0 || a->w_out == 0 || kann_conv2d_packed_pointwise(a))
        return 0;
    return (uint64_t)a->c_in * a->k_h * a->stride_w * kann_conv2d_direct_row(a) <=
           KANN_CONV_DIRECT_STAGE;
}

/* The image stems the compiler fuses with the max pool after them (f32_conv2d_maxpool): the
 * direct path's shape, at most KANN_CONV_STEM_MAX_K reduction steps. Over longer reductions the
 * other variants, which compute the fused conv a row at a time through their packed tiles, are
 * slower fused than apart (alexnet's 11x11 stem and its pool on AVX2, one thread: 2.62 ms as
 * two records, 3.10 as one), and the AVX-512 direct path gains nothing (1.50 either way). */
#define KANN_CONV_STEM_MAX_K 160
static inline int kann_conv2d_packed_stem(const kann_conv2d_packed_args *a) {
    return kann_conv2d_packed_direct_shape(a, KANN_CONV_STEM_MAX_K);
}

static inline int kann_conv2d_packed_direct(const kann_conv2d_packed_args *a) {
    return kann_conv2d_packed_direct_shape(a, KANN_CONV_DIRECT_MAX_K) &&
           a->c_out >= KANN_CONV_DIRECT_MIN_C_OUT;
}

/* A pointwise conv's panels meeting the strips in turn (panels outer) prefetch each step's
 * B columns for the next strip, which the next call reads, where a strip's B (its reduction
 * steps by its columns) fits in this many bytes of the L1 cache; past that the lines would
 * leave L1 before that call, and a step prefetches the plane KANN_CONV_B_AHEAD_STEPS steps on
 * instead (B comes from L2, planes far apart: each step's lines a miss the prefetchers do not
 * foresee). */
#define KANN_CONV_B_STRIP_L1 (24u * 1024u)
#define KANN_CONV_B_AHEAD_STEPS 8

/* The loop nest of the pointwise and gather paths: pixel blocks; in each, the gather (unless
 * pointwise), then for each step of the reduction every weight panel of the tile against
 * every strip of nr columns. */
static inline __attribute__((always_inline)) void
kann_conv2d_packed_drive(const kann_conv2d_packed_args *a, const kann_exec *ex, size_t nr,
                         kann_conv_microkernel ukr, kann_row_pair_fn row_fn) {
    size_t m_begin, m_end, p_begin, p_end;
    kann_conv2d_packed_range(a, &m_begin, &m_end, &p_begin, &p_end);
    if (m_begin >= m_end || p_begin >= p_end) return;
    kann_conv_span sp = {m_begin, m_end, p_begin, p_end};
    if (kann_conv2d_packed_wide(a)) {
        kann_conv2d_packed_drive_wide(a, ex, nr, ukr, sp);
        return;
    }
    kann_conv_phases ph;
    if (kann_conv2d_packed_phase_plan(a, p_begin, p_end, &ph)) {
        size_t K = (size_t)a->c_in * a->k_h * a->k_w;
        kann_conv2d_packed_drive_phase(a, ex, nr, ukr, sp, &ph,
                                       kann_mref(ex, a->scratch) + p_begin * K, row_fn);
        return;
    }
    size_t hw = (size_t)a->h_out * a->w_out, K = (size_t)a->c_in * a->k_h * a->k_w;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    int pointwise = kann_conv2d_packed_pointwise(a);
    float *scratch = pointwise ? NULL : kann_mref(ex, a->scratch) + p_begin * K;
    size_t block = kann_conv2d_packed_block(K);
    if (block < KANN_CONV_MIN_BLOCK) block = KANN_CONV_MIN_BLOCK;
    static const ptrdiff_t no_taps[1] = {0};
    kann_conv_tile t;
    t.ldy = hw;
    t.act = &a->act;
    t.n_taps = 1;
    t.taps = no_taps;
    t.n_segments = 0;
    t.segments = NULL;
    for (size_t q0 = p_begin; q0 < p_end; q0 += block) {
        size_t q1 = p_end - q0 < block ? p_end : q0 + block;
        float *packed = NULL;
        if (!pointwise) {
            packed = scratch + (q0 - p_begin) * K;
            kann_conv2d_packed_gather(a, x, packed, q0, q1, nr);
        }
        size_t n_panels = (m_end - m_begin + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
        size_t n_strips = (q1 - q0 + nr - 1) / nr;
        int strips_outer =
            n_panels * KANN_CONV_PANEL * KANN_CONV_KC * sizeof(float) <= KANN_CONV_PANELS_L2 &&
            !kann_conv2d_packed_panels_first(pointwise, K, n_panels);
        /* panels outer, each strip's B comes from the L2 cache whatever the block of k: longer
         * blocks only spare the partial sums' round trips through y */
        size_t kc = strips_outer ? KANN_CONV_KC : KANN_CONV_KC_PANELS;
        if (kann_conv2d_packed_whole_k(pointwise, K, n_strips)) kc = K;
        for (size_t k0 = 0; k0 < K; k0 += kc) {
            t.n_groups = K - k0 < kc ? K - k0 : kc;
            t.first = k0 == 0;
            t.last = k0 + t.n_groups == K;
            for (size_t i = 0; i < n_panels * n_strips; i++) {
                size_t panel = strips_outer ? i % n_panels : i / n_strips;
                size_t strip = strips_outer ? i / n_panels : i % n_strips;
                size_t m0 = m_begin + panel * KANN_CONV_PANEL, p0 = q0 + strip * nr;
                /* m0 is a panel start: the tile begins on one */
                t.w = w + m0 * K + k0 * KANN_CONV_PANEL;
                t.mr = m_end - m0 < KANN_CONV_PANEL ? m_end - m0 : KANN_CONV_PANEL;
                t.bias = bias ? bias + m0 : NULL;
                t.n = q1 - p0 < nr ? q1 - p0 : nr;
                if (pointwise) {
                    t.b = x + k0 * hw + p0;
                    t.b_stride = hw;
                    t.b_ahead =
                        strips_outer || t.n_groups * nr * sizeof(float) <= KANN_CONV_B_STRIP_L1
                            ? (ptrdiff_t)nr
                            : (ptrdiff_t)(KANN_CONV_B_AHEAD_STEPS * hw);
                } else {
                    t.b = packed + (p0 - q0) * K + k0 * nr;
                    t.b_stride = nr;
                    t.b_ahead = 2 * (ptrdiff_t)nr;
                }
                t.res = res ? res + m0 * hw + p0 : NULL;
                t.y = y + m0 * hw + p0;
                ukr(&t);
            }
        }
    }
}

#endif
