/* dwblock pieces shared by the reference kernel, the validator and the SIMD variants: the
 * scratch's layout, the band loop and the pointwise convs it runs on a band. An inverted
 * residual block's inner maps are its largest (mobilenet_v2's first expansion: 96 x 112 x 112,
 * 4.8 MB). Band by band they are never stored whole, which takes them out of the arena (what it
 * does to the speed: docs/performance.md): the expansion of the input rows a band's windows
 * read (e rows), the depthwise conv of those rows (d rows), then the projection of d into the
 * band's output rows. Each stage is the variant's own kernel on the band: its conv2d_packed
 * microkernel for the pointwise convs, its dwconv2d for the depthwise conv, called on the band
 * as a conv of its own (e rows dense, the band's padding where the image has it). Static
 * inline, so that each variant's translation unit compiles them with its own ISA. */
#ifndef KANN_REF_DWBLOCK_H
#define KANN_REF_DWBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"
#include "ref/conv2d_packed.h"

/* Rows of e that band_rows output rows read at most. */
static inline uint64_t kann_dwblock_e_rows(const kann_dwblock_args *a) {
    uint64_t rows = (uint64_t)(a->band_rows ? a->band_rows - 1 : 0) * a->stride_h +
                    (uint64_t)(a->k_h ? a->k_h - 1 : 0) * a->dil_h + 1;
    return rows < a->h_in ? rows : a->h_in;
}

/* Every output's window along one axis reaches inside the input (n_in rows or columns): it
 * starts at most at the last input and ends at least at the first, so every band reads at
 * least one row of x. */
static inline int kann_dwblock_window_inside(uint64_t n_out, uint64_t stride, uint64_t k,
                                             uint64_t dil, uint64_t pad, uint64_t n_in) {
    return n_in > 0 && k > 0 && pad <= (k - 1) * dil &&
           (n_out == 0 || (n_out - 1) * stride <= n_in - 1 + pad);
}

/* Channels a lanes block holds (the AVX-512 lanes path: one vector of channels per pixel). */
#define KANN_DWBLOCK_LANES 16
/* The pixels of x the lanes path's expansion takes per pass, and the input channels it allows
 * (the passes' weights stay in the L1 cache). */
#define KANN_DWBLOCK_LANES_PIXELS 6
#define KANN_DWBLOCK_LANES_MAX_C_IN 64

/* 1 if the block's shape suits the lanes path (an expansion, an undilated window, rows of at
 * least one expansion pass, few input channels); a variant may still take the band path. */
static inline int kann_dwblock_lanes_shape(const kann_dwblock_args *a) {
    return a->expand && a->dil_h == 1 && a->dil_w == 1 && a->w_in >= KANN_DWBLOCK_LANES_PIXELS &&
           a->c_in <= KANN_DWBLOCK_LANES_MAX_C_IN;
}

/* The lanes path's ring row: columns of the padded e rows that 16-pixel output runs read (the
 * columns past x zero). */
static inline uint64_t kann_dwblock_lanes_cols(const kann_dwblock_args *a) {
    uint64_t runs = ((uint64_t)a->w_out + 15) / 16 * 16;
    uint64_t read = (runs - 1) * a->stride_w + a->k_w, held = (uint64_t)a->pad_left + a->w_in;
    return read > held ? read : held;
}

/* Floats the lanes path keeps in the scratch's first part: for each block of 16 channels its
 * expansion weights and bias, its depthwise taps and bias, and a ring of k_h e rows
 * ([block][c_in][16], [block][16], [block][k_h * k_w][16], [block][16], then the rings as
 * [block][k_h][cols][16]); 0 where the shape does not suit it. */
static inline uint64_t kann_dwblock_lanes_floats(const kann_dwblock_args *a) {
    if (!kann_dwblock_lanes_shape(a)) return 0;
    uint64_t channels =
        ((uint64_t)a->c_mid + KANN_DWBLOCK_LANES - 1) / KANN_DWBLOCK_LANES * KANN_DWBLOCK_LANES;
    uint64_t taps, ring, per_channel, n, too_many = (uint64_t)1 << 41; /* past any scratch */
    if (__builtin_mul_overflow((uint64_t)a->k_h, (uint64_t)a->k_w, &taps) ||
        __builtin_mul_overflow((uint64_t)a->k_h, kann_dwblock_lanes_cols(a), &ring) ||
        __builtin_add_overflow(taps, ring, &per_channel) ||
        __builtin_add_overflow(per_channel, (uint64_t)a->c_in + 2, &per_channel) ||
        __builtin_mul_overflow(channels, per_channel, &n) || n > too_many)
        return too_many;
    return n;
}

/* Floats of the scratch's first part: c_mid planes of e rows, or the lanes path's weights and
 * rings where they take more (the d planes follow). */
static inline uint64_t kann_dwblock_e_floats(const kann_dwblock_args *a) {
    uint64_t planes = (uint64_t)a->c_mid * kann_dwblock_e_rows(a) * a->w_in;
    uint64_t lanes = kann_dwblock_lanes_floats(a);
    return lanes > planes ? lanes : planes;
}

/* Scratch floats a stream needs: c_mid planes of e rows, then c_mid planes of band_rows
 * output rows of d. 0 on overflow past 2^40. */
static inline uint64_t kann_dwblock_scratch(const kann_dwblock_args *a) {
    uint64_t n = kann_dwblock_e_floats(a) + (uint64_t)a->c_mid * a->band_rows * a->w_out;
    return n > ((uint64_t)1 << 40) ? 0 : n;
}

/* Floats from one copy of the scratch to the next (slots >= 1): kann_dwblock_scratch rounded
 * up to whole cache lines. */
static inline uint64_t kann_dwblock_slot_floats(const kann_dwblock_args *a) {
    return (kann_dwblock_scratch(a) + 15) / 16 * 16;
}

/* The input rows [*r0, *r1) that output rows [o0, o1) read (clipped to x). */
static inline void kann_dwblock_rows(const kann_dwblock_args *a, size_t o0, size_t o1, size_t *r0,
                                     size_t *r1) {
    int64_t lo = (int64_t)o0 * a->stride_h - a->pad_top;
    int64_t hi =
        (int64_t)(o1 - 1) * a->stride_h - a->pad_top + (int64_t)(a->k_h - 1) * a->dil_h + 1;
    *r0 = lo < 0 ? 0 : (size_t)lo;
    *r1 = hi > (int64_t)a->h_in ? a->h_in : (size_t)hi;
}

/* The pointwise conv of n pixels: y[m * ldy + j] = act(sum_k W[m][k] * b[k * b_stride + j] +
 * bias[m] + res[m * ldy + j]) for m < M, j < n, W packed in panels ([panel][K][12]); each strip
 * of nr pixels meets every panel while its K rows stay in the L1 cache, in reduction blocks of
 * KANN_CONV_KC (partial sums kept in y between them). */
static inline __attribute__((always_inline)) void
kann_pointwise_band(kann_conv_microkernel ukr, size_t nr, const float *w, size_t M, size_t K,
                    const float *b, size_t b_stride, size_t n, const float *bias, const float *res,
                    float *y, size_t ldy, const kann_act *act) {
    static const ptrdiff_t no_taps[1] = {0};
    kann_conv_tile t;
    t.n_taps = 1;
    t.taps = no_taps;
    t.b_stride = b_stride;
    t.b_ahead = (ptrdiff_t)nr;
    t.ldy = ldy;
    t.act = act;
    t.n_segments = 0;
    t.segments = NULL;
    for (size_t k0 = 0; k0 < K; k0 += KANN_CONV_KC) {
        t.n_groups = K - k0 < KANN_CONV_KC ? K - k0 : KANN_CONV_KC;
        t.first = k0 == 0;
        t.last = k0 + t.n_groups == K;
        for (size_t p0 = 0; p0 < n; p0 += nr) {
            t.n = n - p0 < nr ? n - p0 : nr;
            t.b = b + k0 * b_stride + p0;
            for (size_t m0 = 0; m0 < M; m0 += KANN_CONV_PANEL) {
                t.w = w + m0 * K + k0 * KANN_CONV_PANEL;
                t.mr = M - m0 < KANN_CONV_PANEL ? M - m0 : KANN_CONV_PANEL;
                t.bias = bias ? bias + m0 : NULL;
                t.res = res ? res + m0 * ldy + p0 : NULL;
                t.y = y + m0 * ldy + p0;
                ukr(&t);
            }
        }
    }
}

/* The depthwise conv of output rows [o0, o1) as a dwconv2d of its own: its input the e rows
 * from r0 at e (planes of e_rows rows), its output the band's d rows at d. */
static inline kann_dwconv2d_args kann_dwblock_dw_args(const kann_dwblock_args *a, kann_ref e,
                                                      kann_ref d, size_t o0, size_t o1, size_t r0) {
    kann_dwconv2d_args c = {0};
    c.tile.axis = 0;
    c.tile.begin = 0;
    c.tile.end = a->c_mid;
    c.x = e;
    c.w = a->w_dw;
    c.bias = a->b_dw;
    c.residual.space = KANN_SPACE_NONE;
    c.y = d;
    c.n = 1;
    c.c_in = c.c_out = c.group = a->c_mid;
    c.h_in = (uint32_t)kann_dwblock_e_rows(a);
    c.w_in = a->w_in;
    c.h_out = (uint32_t)(o1 - o0);
    c.w_out = a->w_out;
    c.k_h = a->k_h;
    c.k_w = a->k_w;
    c.stride_h = a->stride_h;
    c.stride_w = a->stride_w;
    c.dil_h = a->dil_h;
    c.dil_w = a->dil_w;
    /* output row o0 + i reads e row (o0 + i) * s - pad + kh, row (that - r0) of the band */
    c.pad_top = (uint32_t)((int64_t)r0 - (int64_t)o0 * a->stride_h + a->pad_top);
    c.pad_left = a->pad_left;
    c.act = a->act_dw;
    return c;
}

/* Moves `rows` rows of w floats from row `from` to row 0 in each of n planes of `plane` floats
 * (forward: the runs may overlap). */
static inline void kann_dwblock_shift(float *e, size_t n, size_t plane, size_t w, size_t from,
                                      size_t rows) {
    for (size_t c = 0; c < n; c++)
        kann_copy_strided(e + c * plane, e + c * plane + from * w, rows * w, 1);
}

/* The projection of the band of output rows [o0, o1) from its d planes (each (o1 - o0) * w_out
 * floats) into y, through the variant's microkernel ukr (strips of nr pixels). */
static inline __attribute__((always_inline)) void
kann_dwblock_project(const kann_dwblock_args *a, const kann_exec *ex, kann_conv_microkernel ukr,
                     size_t nr, const float *d, size_t o0, size_t o1) {
    const float *b_proj = a->b_proj.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->b_proj);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    size_t n_d = (o1 - o0) * a->w_out, at = o0 * a->w_out;
    kann_pointwise_band(ukr, nr, kann_cref(ex, a->w_proj), a->c_out, a->c_mid, d, n_d, n_d, b_proj,
                        res ? res + at : NULL, kann_mref(ex, a->y) + at,
                        (size_t)a->h_out * a->w_out, &a->act_proj);
}

/* The band loop: the tile's output rows band_rows at a time, each band's stages by the
 * variant's microkernel ukr (strips of nr pixels) and depthwise kernel dw. The e rows a band
 * shares with the previous one (its windows' overlap) move to the top of the planes instead of
 * being computed again; planes keep e_rows rows (kann_dwblock_e_rows), and where a band holds
 * fewer at the input's end, the rest are zeroed: the depthwise conv reads them as the padding
 * past x. */
static inline __attribute__((always_inline)) void kann_dwblock_drive(const kann_dwblock_args *a,
                                                                     const kann_exec *ex,
                                                                     kann_conv_microkernel ukr,
                                                                     size_t nr, kann_kernel_fn dw) {
    size_t o_begin = a->tile.begin, o_end = a->tile.end;
    if (o_begin >= o_end || a->w_out == 0 || a->c_out == 0) return;
    const float *x = kann_cref(ex, a->x), *w_exp = NULL, *b_exp = NULL;
    if (a->expand) {
        w_exp = kann_cref(ex, a->w_exp);
        b_exp = a->b_exp.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->b_exp);
    }
    float *e = kann_mref(ex, a->scratch);
    size_t w_in = a->w_in, in_plane = (size_t)a->h_in * w_in;
    size_t e_rows = (size_t)kann_dwblock_e_rows(a);
    size_t e_plane = e_rows * w_in, e_floats = (size_t)kann_dwblock_e_floats(a);
    float *d = e + e_floats;
    kann_ref e_ref = a->scratch, d_ref = a->scratch;
    d_ref.offset += e_floats * sizeof(float);
    size_t held0 = 0, held1 = 0; /* the input rows whose e rows the planes hold, from row 0 */
    for (size_t o0 = o_begin; o0 < o_end && kann_claim(ex, (uint32_t)o0); o0 += a->band_rows) {
        size_t o1 = o_end - o0 < a->band_rows ? o_end : o0 + a->band_rows, r0, r1;
        kann_dwblock_rows(a, o0, o1, &r0, &r1);
        size_t new0 = r0;
        if (r0 >= held0 && r0 < held1) {
            if (r0 > held0) kann_dwblock_shift(e, a->c_mid, e_plane, w_in, r0 - held0, held1 - r0);
            new0 = held1;
        }
        float *en = e + (new0 - r0) * w_in;
        size_t n_new = (r1 - new0) * w_in;
        if (a->expand) {
            /* the new rows in one pass, or, in a record cut into parts, row by row: a row's
             * sums then come out the same whatever band or part computes it (a strip's columns
             * may round differently from one place in it to another) */
            size_t step = a->slots || r1 == new0 ? 1 : r1 - new0;
            for (size_t r = new0; r < r1; r += step)
                kann_pointwise_band(ukr, nr, w_exp, a->c_mid, a->c_in, x + r * w_in, in_plane,
                                    step * w_in, b_exp, NULL, en + (r - new0) * w_in, e_plane,
                                    &a->act_exp);
        } else {
            for (size_t c = 0; c < a->c_mid; c++)
                kann_copy_strided(en + c * e_plane, x + c * in_plane + new0 * w_in, n_new, 1);
        }
        if (r1 - r0 < e_rows && r1 == a->h_in)
            for (size_t c = 0; c < a->c_mid; c++)
                kann_fill_zero(e + c * e_plane + (r1 - r0) * w_in, (e_rows - (r1 - r0)) * w_in);
        held0 = r0;
        held1 = r1;
        kann_dwconv2d_args da = kann_dwblock_dw_args(a, e_ref, d_ref, o0, o1, r0);
        dw(&da, ex);
        kann_dwblock_project(a, ex, ukr, nr, d, o0, o1);
    }
}

#endif
