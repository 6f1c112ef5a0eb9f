/* conv2d_winograd pieces shared by the reference kernel and the SIMD variants: the input and
 * output transforms of Winograd F(2x2, 3x3) and F(4x4, 3x3) and the loop nest around a
 * variant's GEMM.
 * Static inline, so that each variant's translation unit compiles them with its own ISA. */
#ifndef KANN_REF_CONV2D_WINOGRAD_H
#define KANN_REF_CONV2D_WINOGRAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kann_kernels.h"
#include "ref/act.h"

/* Output tiles per block: the transformed tiles of a block ([P][c_in][32] floats in scratch)
 * are the B matrices of the P GEMMs; one GEMM call covers a block's whole width. */
#define KANN_WINO_BLOCK KANN_CONV_PIXEL_GRANULE

/* The most positions of a transform: F(4x4, 3x3)'s 6x6. */
#define KANN_WINO_MAX_POSITIONS 36

/* m[r * KANN_WINO_BLOCK + j] = sum_c u[c * 12 + r] * v[c * KANN_WINO_BLOCK + j] for at least
 * the r < mr (1 <= mr <= 12: the panel's channels below c_out; a variant may compute the others
 * of the panel, whose weights are zero) and at least the j < n (1 <= n <= KANN_WINO_BLOCK) a
 * block's tiles occupy; v holds every column of the block (those past the tiles are zero), so a
 * GEMM may compute more columns than n. The last block of a small map (a 7x7 map has 16 tiles) is
 * where computing only n pays. u_next is the panel the tile's next GEMM reads (the weights stream
 * from memory: a variant may prefetch into it while it ends this one); after a block's last GEMM,
 * the tile's first panel, which the next block reads first. */
typedef void (*kann_wino_gemm)(const float *u, const float *u_next, const float *v, size_t c_in,
                               size_t n, size_t mr, float *m);

/* The output tile edge e (2 or 4) and the positions (e + 2)^2 of the record's transform. */
static inline size_t kann_wino_edge(const kann_conv2d_winograd_args *a) {
    return a->transform == KANN_WINO_F4X4 ? 4 : 2;
}

static inline size_t kann_wino_positions(const kann_conv2d_winograd_args *a) {
    return (kann_wino_edge(a) + 2) * (kann_wino_edge(a) + 2);
}

static inline size_t kann_wino_tiles_w(const kann_conv2d_winograd_args *a) {
    size_t e = kann_wino_edge(a);
    return ((size_t)a->w_out + e - 1) / e;
}

static inline size_t kann_wino_tiles(const kann_conv2d_winograd_args *a) {
    size_t e = kann_wino_edge(a);
    return ((size_t)a->h_out + e - 1) / e * kann_wino_tiles_w(a);
}

/* o = B^T d of F(4x4, 3x3) for six values d0 .. d5 (a column or row of an input tile). */
static inline void kann_wino4_bt(const float d[6], float o[6]) {
    float a = d[4] - 4.0f * d[2], b = d[3] - 4.0f * d[1];
    float c = d[4] - d[2], e = 2.0f * (d[3] - d[1]);
    o[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    o[1] = a + b;
    o[2] = a - b;
    o[3] = c + e;
    o[4] = c - e;
    o[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

/* o = A^T m of F(4x4, 3x3) for six values m0 .. m5 (a column or row of a tile of positions). */
static inline void kann_wino4_at(const float m[6], float o[4]) {
    float a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
    o[0] = m[0] + a + c;
    o[1] = b + 2.0f * d;
    o[2] = a + 4.0f * c;
    o[3] = b + 8.0f * d + m[5];
}

/* xc[i][j] of a plane h_in x w_in, 0 outside it. */
static inline float kann_wino_at(const float *xc, size_t h_in, size_t w_in, int64_t i, int64_t j) {
    return i >= 0 && j >= 0 && (uint64_t)i < h_in && (uint64_t)j < w_in
               ? xc[(size_t)i * w_in + (size_t)j]
               : 0.0f;
}

/* V = B^T d B of the 4x4 input tile at row i0, column j0 (negative: in the padding); d rows
 * and columns outside x read as zero. */
static inline void kann_wino_input_tile(const float *xc, size_t h_in, size_t w_in, int64_t i0,
                                        int64_t j0, float v[16]) {
    float d[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            d[i][j] = kann_wino_at(xc, h_in, w_in, i0 + i, j0 + j);
    float t[4][4];
    for (size_t j = 0; j < 4; j++) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    for (size_t i = 0; i < 4; i++) {
        v[i * 4 + 0] = t[i][0] - t[i][2];
        v[i * 4 + 1] = t[i][1] + t[i][2];
        v[i * 4 + 2] = t[i][2] - t[i][1];
        v[i * 4 + 3] = t[i][1] - t[i][3];
    }
}

/* V = B^T d B of the 6x6 input tile of F(4x4, 3x3) at row i0, column j0; d rows and columns
 * outside x read as zero. */
static inline void kann_wino4_input_tile(const float *xc, size_t h_in, size_t w_in, int64_t i0,
                                         int64_t j0, float v[36]) {
    float d[6][6], t[6][6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            d[i][j] = kann_wino_at(xc, h_in, w_in, i0 + i, j0 + j);
    for (size_t j = 0; j < 6; j++) { /* columns: t = B^T d */
        float col[6], o[6];
        for (size_t i = 0; i < 6; i++)
            col[i] = d[i][j];
        kann_wino4_bt(col, o);
        for (size_t i = 0; i < 6; i++)
            t[i][j] = o[i];
    }
    for (size_t i = 0; i < 6; i++) /* rows: v = t B */
        kann_wino4_bt(t[i], v + i * 6);
}

/* The transformed tiles [q0, q0 + n) of every input channel into v [P][c_in][32], the
 * columns past n zero. */
static inline void kann_wino_input_block(const kann_conv2d_winograd_args *a, const float *x,
                                         size_t q0, size_t n, float *v) {
    size_t tw_n = kann_wino_tiles_w(a), plane = (size_t)a->h_in * a->w_in, c_in = a->c_in;
    size_t pos_stride = (size_t)kann_wino_pos_stride(c_in), e = kann_wino_edge(a);
    size_t positions = kann_wino_positions(a);
    /* a channel's tiles gathered position by position here, then each position's row of the
     * block stored in one piece (scattered single stores, 32 KiB apart, were the slow part) */
    float rows[KANN_WINO_MAX_POSITIONS][KANN_WINO_BLOCK];
    for (size_t c = 0; c < c_in; c++) {
        const float *xc = x + c * plane;
        float *vc = v + c * KANN_WINO_BLOCK;
        for (size_t j = 0; j < KANN_WINO_BLOCK; j++) {
            float t[KANN_WINO_MAX_POSITIONS] = {0};
            if (j < n) {
                size_t q = q0 + j, th = q / tw_n, tw = q - th * tw_n;
                int64_t i0 = (int64_t)(e * th) - a->pad, j0 = (int64_t)(e * tw) - a->pad;
                if (e == 4)
                    kann_wino4_input_tile(xc, a->h_in, a->w_in, i0, j0, t);
                else
                    kann_wino_input_tile(xc, a->h_in, a->w_in, i0, j0, t);
            }
            for (size_t p = 0; p < positions; p++)
                rows[p][j] = t[p];
        }
        for (size_t p = 0; p < positions; p++)
            memcpy(vc + p * pos_stride, rows[p], sizeof rows[p]);
    }
}

/* Y = A^T M A of one tile (m: 16 positions, stride ms) with bias, residual and activation,
 * stored where the 2x2 tile lies inside y. */
static inline void kann_wino_output_tile(const float *m, size_t ms, float bias, const float *res,
                                         float *y, size_t h_out, size_t w_out, size_t oh, size_t ow,
                                         const kann_act *act) {
    float s[2][4];
    for (size_t j = 0; j < 4; j++) {
        s[0][j] = m[j * ms] + m[(4 + j) * ms] + m[(8 + j) * ms];
        s[1][j] = m[(4 + j) * ms] - m[(8 + j) * ms] - m[(12 + j) * ms];
    }
    for (size_t i = 0; i < 2 && oh + i < h_out; i++) {
        float o[2] = {s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]};
        for (size_t j = 0; j < 2 && ow + j < w_out; j++) {
            size_t at = (oh + i) * w_out + ow + j;
            float val = o[j] + bias;
            if (res) val += res[at];
            y[at] = kann_act_apply(act, val);
        }
    }
}

/* Y = A^T M A of one F(4x4, 3x3) tile (m: 36 positions, stride ms) with bias, residual and
 * activation, stored where the 4x4 tile lies inside y. */
static inline void kann_wino4_output_tile(const float *m, size_t ms, float bias, const float *res,
                                          float *y, size_t h_out, size_t w_out, size_t oh,
                                          size_t ow, const kann_act *act) {
    float s[4][6];
    for (size_t j = 0; j < 6; j++) { /* columns: s = A^T M */
        float col[6], o[4];
        for (size_t i = 0; i < 6; i++)
            col[i] = m[(i * 6 + j) * ms];
        kann_wino4_at(col, o);
        for (size_t i = 0; i < 4; i++)
            s[i][j] = o[i];
    }
    for (size_t i = 0; i < 4 && oh + i < h_out; i++) {
        float o[4];
        kann_wino4_at(s[i], o); /* rows: s A */
        for (size_t j = 0; j < 4 && ow + j < w_out; j++) {
            size_t at = (oh + i) * w_out + ow + j;
            float val = o[j] + bias;
            if (res) val += res[at];
            y[at] = kann_act_apply(act, val);
        }
    }
}

/* The tile's output channels [*m_begin, *m_end) and output tiles [*t_begin, *t_end). */
static inline void kann_wino_range(const kann_conv2d_winograd_args *a, size_t *m_begin,
                                   size_t *m_end, size_t *t_begin, size_t *t_end) {
    *m_begin = 0;
    *m_end = a->c_out;
    *t_begin = 0;
    *t_end = kann_wino_tiles(a);
    if (a->tile.axis == 0) {
        *m_begin = a->tile.begin;
        *m_end = a->tile.end;
    } else {
        *t_begin = a->tile.begin;
        *t_end = a->tile.end;
    }
}

/* The output transform of one weight panel over a block: rows r < mr of mb [P][12][32] for the
 * tiles [q0, q0 + n), into the output channels m0 + r. */
typedef void (*kann_wino_output)(const kann_conv2d_winograd_args *a, const float *mb, size_t q0,
                                 size_t n, size_t m0, size_t mr, const float *bias,
                                 const float *res, float *y);

/* The input transform of a block (see kann_wino_input_block). */
typedef void (*kann_wino_input)(const kann_conv2d_winograd_args *a, const float *x, size_t q0,
                                size_t n, float *v);

static inline void kann_wino_output_block(const kann_conv2d_winograd_args *a, const float *mb,
                                          size_t q0, size_t n, size_t m0, size_t mr,
                                          const float *bias, const float *res, float *y) {
    size_t hw = (size_t)a->h_out * a->w_out, tw_n = kann_wino_tiles_w(a), e = kann_wino_edge(a);
    size_t ms = KANN_CONV_PANEL * KANN_WINO_BLOCK;
    for (size_t r = 0; r < mr; r++) {
        float b = bias ? bias[m0 + r] : 0.0f;
        const float *rr = res ? res + (m0 + r) * hw : NULL;
        float *yr = y + (m0 + r) * hw;
        for (size_t j = 0; j < n; j++) {
            size_t q = q0 + j, th = q / tw_n, tw = q - th * tw_n;
            const float *mj = mb + r * KANN_WINO_BLOCK + j;
            if (e == 4)
                kann_wino4_output_tile(mj, ms, b, rr, yr, a->h_out, a->w_out, 4 * th, 4 * tw,
                                       &a->act);
            else
                kann_wino_output_tile(mj, ms, b, rr, yr, a->h_out, a->w_out, 2 * th, 2 * tw,
                                      &a->act);
        }
    }
}

/* The weights of output channel m0 at position p: its row of its panel (the panel's rows from
 * m0 on, KANN_CONV_PANEL floats a reduction step). */
static inline const float *kann_wino_panel(const float *u, size_t p, size_t m0, size_t panels,
                                           size_t c_in) {
    return u + (p * panels + m0 / KANN_CONV_PANEL) * c_in * KANN_CONV_PANEL +
           m0 % KANN_CONV_PANEL;
}

/* The end of the rows from output channel m0 in its panel, at most m_end: a tile along output
 * channels may start inside a panel (at a multiple of KANN_WINO_CHANNEL_GRANULE), so that two
 * streams cut 64 channels 32 + 32 rather than 36 + 28; a GEMM then takes the panel's rows from
 * m0 on, at most 12 - m0 % 12 of them. */
static inline size_t kann_wino_panel_end(size_t m0, size_t m_end) {
    size_t end = (m0 / KANN_CONV_PANEL + 1) * KANN_CONV_PANEL;
    return end < m_end ? end : m_end;
}

/* Blocks of 32 output tiles: the input transform into scratch, then per weight panel of the
 * tile the P GEMMs into a stack buffer and the output transform with the epilogue. Each block
 * goes to its own place in the scratch (the layout the OpenCL kernel shares with the
 * reference), or with reuse every block of the tile to its first block's place, which stays in
 * cache from one block to the next (resnet18's Winograd layers 3-7 % faster on one thread). */
static inline __attribute__((always_inline)) void
kann_conv2d_winograd_drive(const kann_conv2d_winograd_args *a, const kann_exec *ex,
                           kann_wino_input input, kann_wino_gemm gemm, kann_wino_output output,
                           int reuse) {
    size_t m_begin, m_end, t_begin, t_end;
    kann_wino_range(a, &m_begin, &m_end, &t_begin, &t_end);
    if (m_begin >= m_end || t_begin >= t_end) return;
    const float *x = kann_cref(ex, a->x), *u = kann_cref(ex, a->u);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t c_in = a->c_in, positions = kann_wino_positions(a);
    size_t panels = ((size_t)a->c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t pos_stride = (size_t)kann_wino_pos_stride(c_in), block_floats = positions * pos_stride;
    float *scratch = kann_mref(ex, a->scratch);
    float mb[KANN_WINO_MAX_POSITIONS * KANN_CONV_PANEL * KANN_WINO_BLOCK];
    for (size_t q0 = t_begin; q0 < t_end; q0 += KANN_WINO_BLOCK) {
        size_t n = t_end - q0 < KANN_WINO_BLOCK ? t_end - q0 : KANN_WINO_BLOCK;
        float *v = scratch + (reuse ? t_begin : q0) / KANN_WINO_BLOCK * block_floats;
        input(a, x, q0, n, v);
        /* panel by panel, a tile's first (and last) maybe in part: its rows from m0 on */
        for (size_t m0 = m_begin, m1; m0 < m_end; m0 = m1) {
            m1 = kann_wino_panel_end(m0, m_end);
            size_t mr = m1 - m0;
            for (size_t p = 0; p < positions; p++) {
                /* the GEMMs go position by position, then panel by panel, then the next block
                 * from the first panel again */
                size_t p_next = p + 1 < positions ? p + 1 : 0;
                size_t m_next = p_next ? m0 : m1 < m_end ? m1 : m_begin;
                gemm(kann_wino_panel(u, p, m0, panels, c_in),
                     kann_wino_panel(u, p_next, m_next, panels, c_in),
                     v + p * pos_stride, c_in, n, mr,
                     mb + p * KANN_CONV_PANEL * KANN_WINO_BLOCK);
            }
            output(a, mb, q0, n, m0, mr, bias, res, y);
        }
    }
}

#endif
