/* conv2d_packed pieces shared by the reference kernel, the validator and the SIMD variants:
 * the pointwise test, the gather of B (im2col) into column strips, and the loop nest that
 * walks a tile in cache-sized pixel blocks and calls a variant's register-blocked microkernel.
 * Static inline, so that each variant's translation unit compiles them with its own ISA. */
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

/* B columns [p_begin, p_end) gathered into strips of nr columns: the strip holding column
 * p_begin + s * nr + j stores B[k][.] at dst[s * K * nr + k * nr + j]; the columns of the last
 * strip past p_end are zero. */
static inline void kann_conv2d_packed_gather(const kann_conv2d_packed_args *a, const float *x,
                                             float *dst, size_t p_begin, size_t p_end, size_t nr) {
    size_t K = (size_t)a->c_in * a->k_h * a->k_w;
    size_t k = 0;
    for (uint32_t c = 0; c < a->c_in; c++) {
        const float *x_c = x + (size_t)c * a->h_in * a->w_in;
        for (uint32_t kh = 0; kh < a->k_h; kh++) {
            for (uint32_t kw = 0; kw < a->k_w; kw++, k++) {
                for (size_t p0 = p_begin; p0 < p_end; p0 += nr) {
                    float *d = dst + (p0 - p_begin) / nr * K * nr + k * nr;
                    size_t len = p_end - p0 < nr ? p_end - p0 : nr;
                    size_t oh = p0 / a->w_out, ow = p0 % a->w_out;
                    for (size_t j = 0; j < len;) {
                        size_t run = a->w_out - ow < len - j ? a->w_out - ow : len - j;
                        int64_t ih =
                            (int64_t)oh * a->stride_h - a->pad_top + (int64_t)kh * a->dil_h;
                        if (ih < 0 || ih >= (int64_t)a->h_in) {
                            kann_fill_zero(d + j, run);
                        } else {
                            const float *row = x_c + (size_t)ih * a->w_in;
                            int64_t iw0 =
                                (int64_t)ow * a->stride_w - a->pad_left + (int64_t)kw * a->dil_w;
                            size_t lo, hi;
                            kann_valid_run(iw0, a->stride_w, a->w_in, run, &lo, &hi);
                            kann_fill_zero(d + j, lo);
                            const float *src = row + (iw0 + (int64_t)lo * a->stride_w);
                            if (a->stride_w == 1) {
                                for (size_t i = lo; i < hi; i++)
                                    d[j + i] = src[i - lo];
                            } else {
                                for (size_t i = lo; i < hi; i++)
                                    d[j + i] = src[(i - lo) * a->stride_w];
                            }
                            kann_fill_zero(d + j + hi, run - hi);
                        }
                        j += run;
                        ow = 0;
                        oh++;
                    }
                    kann_fill_zero(d + len, nr - len);
                }
            }
        }
    }
}

/* What a microkernel computes: for rows r < mr (<= KANN_CONV_PANEL) and columns j < n (<= its
 * strip width), with s = sum_k w[k * 12 + r] * b[k * ldb + j] over its k:
 *   first && last:  y[r * ldy + j] = act(s + bias[r] + res[r * ldy + j])  (bias, res optional)
 *   !first: s adds to the partial sum y holds; !last: y gets the partial sum, no epilogue.
 * It may read b[k * ldb + j] only for j < n. */
typedef struct kann_conv_tile {
    size_t k;       /* reduction length */
    const float *w; /* the weight panel [k][12] */
    const float *b;
    size_t ldb;
    size_t n, mr;
    const float *bias, *res;
    float *y;
    size_t ldy;
    const kann_act *act;
    int first, last; /* the first / last block of the reduction */
} kann_conv_tile;

typedef void (*kann_conv_microkernel)(const kann_conv_tile *t);

/* Reduction steps: a strip of B over this many k (KANN_CONV_KC * 32 floats, 32 KiB) stays in
 * the L1 cache while the weight panels stream past it. */
#define KANN_CONV_KC 256

/* Weight bytes (panels x KC) that still fit the L2 cache beside the pixel block: then every
 * strip meets every panel (the panels stay in L2); else every panel meets every strip (the
 * block stays in L2 and the weights are read once). */
#define KANN_CONV_PANELS_L2 (1024u * 1024u)

/* The tile's loop nest: pixel blocks; in each, the gather (unless pointwise), then for each
 * step of the reduction every weight panel of the tile against every strip of nr columns. */
static inline __attribute__((always_inline)) void
kann_conv2d_packed_drive(const kann_conv2d_packed_args *a, const kann_exec *ex, size_t nr,
                         kann_conv_microkernel ukr) {
    size_t hw = (size_t)a->h_out * a->w_out, K = (size_t)a->c_in * a->k_h * a->k_w;
    size_t m_begin = 0, m_end = a->c_out, p_begin = 0, p_end = hw;
    if (a->tile.axis == 0) {
        m_begin = a->tile.begin;
        m_end = a->tile.end;
    } else {
        p_begin = a->tile.begin;
        p_end = a->tile.end;
    }
    if (m_begin >= m_end || p_begin >= p_end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    int pointwise = kann_conv2d_packed_pointwise(a);
    float *scratch = pointwise ? NULL : kann_mref(ex, a->scratch) + p_begin * K;
    size_t block = kann_conv2d_packed_block(K);
    kann_conv_tile t;
    t.ldy = hw;
    t.act = &a->act;
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
            n_panels * KANN_CONV_PANEL * KANN_CONV_KC * sizeof(float) <= KANN_CONV_PANELS_L2;
        for (size_t k0 = 0; k0 < K; k0 += KANN_CONV_KC) {
            t.k = K - k0 < KANN_CONV_KC ? K - k0 : KANN_CONV_KC;
            t.first = k0 == 0;
            t.last = k0 + t.k == K;
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
                    t.ldb = hw;
                } else {
                    t.b = packed + (p0 - q0) * K + k0 * nr;
                    t.ldb = nr;
                }
                t.res = res ? res + m0 * hw + p0 : NULL;
                t.y = y + m0 * hw + p0;
                ukr(&t);
            }
        }
    }
}

#endif
