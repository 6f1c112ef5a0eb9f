/* The depthwise row path and the store's set-up shared by the SIMD variants
 * (dwconv2d_avx2.c, dwconv2d_avx512.c), written once over vec_math.h's width-neutral vectors:
 * the including file defines KANN_VEC_BITS and includes vec_math.h and simd_act.h first. */
#ifndef KANN_X86_DWCONV2D_ROWS_H
#define KANN_X86_DWCONV2D_ROWS_H

#include "ref/dwconv2d.h"

#define DW_ROWS ((int)KANN_DW_ROW_BLOCK)

/* What a band's stores share: the output epilogue and the channel's bias. */
typedef struct dw_out {
    const kann_act *act;
    int vec_act;
    vf lo, hi, bias;
} dw_out;

static inline dw_out dw_out_of(const kann_dw_band_job *job) {
    dw_out o;
    o.act = &job->a->act;
    o.vec_act = kann_act_vectorizes(o.act);
    o.lo = vf_set1(kann_act_lo(o.act));
    o.hi = vf_set1(kann_act_hi(o.act));
    o.bias = vf_set1(job->bias);
    return o;
}

/* The row path, for 3 kernel rows, dilation 1 and stride 1 or 2 along the rows (S): the same
 * KANN_VL columns of DW_ROWS output rows from band row i0; each plane row a column tap reads is
 * loaded once and feeds every output row that reads it (up to 3 for S = 1: 3 + 6 / DW_ROWS
 * loads for 9 FMAs per vector instead of 9). Tap (kh, kw) of band row i lies at
 * b->taps[kh * k_w + kw] + i * w_h: for S = 1 kh adds kh rows of one plane; for S = 2 kh = 0
 * and 2 read rows i and i + 1 of the even-row plane, kh = 1 row i of the odd-row one. */
static inline __attribute__((always_inline)) void dw_rows(const kann_dw_band *b, const float *buf,
                                                          const float *wc, size_t k_w, size_t i0,
                                                          size_t col, vf bias, int S, vf *acc) {
    size_t w_h = b->w_h;
#pragma GCC unroll 8
    for (int r = 0; r < DW_ROWS; r++)
        acc[r] = bias;
    for (size_t kw = 0; kw < k_w; kw++) {
        const float *p0 = buf + b->taps[kw] + i0 * w_h + col;
        const float *p1 = buf + b->taps[k_w + kw] + i0 * w_h + col;
        vf w0 = vf_set1(wc[kw]), w1 = vf_set1(wc[k_w + kw]), w2 = vf_set1(wc[2 * k_w + kw]);
        if (S == 1) {
#pragma GCC unroll 10
            for (int j = 0; j < DW_ROWS + 2; j++) {
                vf v = vf_load(p0 + j * w_h);
                if (j < DW_ROWS) acc[j] = vf_fmadd(w0, v, acc[j]);
                if (j >= 1 && j <= DW_ROWS) acc[j - 1] = vf_fmadd(w1, v, acc[j - 1]);
                if (j >= 2) acc[j - 2] = vf_fmadd(w2, v, acc[j - 2]);
            }
        } else {
#pragma GCC unroll 9
            for (int j = 0; j < DW_ROWS + 1; j++) {
                vf v = vf_load(p0 + j * w_h);
                if (j < DW_ROWS) acc[j] = vf_fmadd(w0, v, acc[j]);
                if (j >= 1) acc[j - 1] = vf_fmadd(w2, v, acc[j - 1]);
            }
#pragma GCC unroll 8
            for (int j = 0; j < DW_ROWS; j++)
                acc[j] = vf_fmadd(w1, vf_load(p1 + j * w_h), acc[j]);
        }
    }
}

/* ---- a band row by row --------------------------------------------------------------------
 * The wide grid computes w_h = w_out + reach columns a row and drops the reach: half the
 * lanes for a 31x31 window on a 32-wide map. Where a row's whole vectors hold fewer lanes than
 * that, a band goes row by row instead: R rows of C vectors at once (R * C <= 8 independent
 * accumulators), each tap one load per vector at its offset from the output pixel. */
static inline int dw_by_rows(const kann_dw_band *b, size_t w_out) {
    return (w_out + KANN_VL - 1) / KANN_VL * KANN_VL < b->w_h;
}

/* Bias plus every tap for output rows [i0, i0 + R) of a band, vectors of columns from col0. */
static inline __attribute__((always_inline)) void dw_block(const kann_dw_band *b, const float *buf,
                                                           const float *wc, size_t i0, size_t col0,
                                                           vf bias, int R, int C, vf *acc) {
#pragma GCC unroll 8
    for (int i = 0; i < R * C; i++)
        acc[i] = bias;
    size_t w_h = b->w_h;
    const float *p = buf + i0 * w_h + col0;
    for (size_t t = 0; t < b->n_taps; t++) {
        vf wv = vf_set1(wc[t]);
        const float *q = p + b->taps[t];
#pragma GCC unroll 8
        for (int r = 0; r < R; r++)
#pragma GCC unroll 8
            for (int c = 0; c < C; c++)
                acc[r * C + c] = vf_fmadd(wv, vf_load(q + r * w_h + c * KANN_VL), acc[r * C + c]);
    }
}

/* dw_block with R and C constants, so that the accumulators stay in registers. */
static void dw_block_of(const kann_dw_band *b, const float *buf, const float *wc, size_t i0,
                        size_t col0, vf bias, size_t R, size_t C, vf *acc) {
    switch (R * 16 + C) {
    case 0x81:
        dw_block(b, buf, wc, i0, col0, bias, 8, 1, acc);
        break;
    case 0x42:
        dw_block(b, buf, wc, i0, col0, bias, 4, 2, acc);
        break;
    case 0x23:
        dw_block(b, buf, wc, i0, col0, bias, 2, 3, acc);
        break;
    case 0x24:
        dw_block(b, buf, wc, i0, col0, bias, 2, 4, acc);
        break;
    case 0x11:
        dw_block(b, buf, wc, i0, col0, bias, 1, 1, acc);
        break;
    case 0x12:
        dw_block(b, buf, wc, i0, col0, bias, 1, 2, acc);
        break;
    case 0x13:
        dw_block(b, buf, wc, i0, col0, bias, 1, 3, acc);
        break;
    case 0x14:
        dw_block(b, buf, wc, i0, col0, bias, 1, 4, acc);
        break;
    case 0x15:
        dw_block(b, buf, wc, i0, col0, bias, 1, 5, acc);
        break;
    case 0x16:
        dw_block(b, buf, wc, i0, col0, bias, 1, 6, acc);
        break;
    case 0x17:
        dw_block(b, buf, wc, i0, col0, bias, 1, 7, acc);
        break;
    default:
        dw_block(b, buf, wc, i0, col0, bias, 1, 8, acc);
        break;
    }
}

/* The first n <= KANN_VL lanes of v to y, with the residual and the activation. */
static inline void dw_store_lanes(vf v, size_t n, float *y, const float *res, const dw_out *o) {
    if (res) v = vf_add(v, n == KANN_VL ? vf_load(res) : vf_load_n(res, n));
    if (o->vec_act) v = vf_act(v, o->act, o->lo, o->hi);
    if (n == KANN_VL)
        vf_store(y, v);
    else
        vf_store_n(y, v, n);
    if (!o->vec_act)
        for (size_t j = 0; j < n; j++)
            y[j] = kann_act_apply(o->act, y[j]);
}

/* A band of `rows` output rows, row by row: runs of up to 8 vectors of a row, by 8, 4 or 2 rows
 * where a run has 1, 2 or 3-4 vectors. A band's rows left over go one at a time: the planes
 * hold the band's rows and no more. */
static void dw_band_by_rows(const kann_dw_band *b, const float *buf, const float *wc, size_t w_out,
                            size_t rows, float *yb, const float *rb, const dw_out *o) {
    size_t n_vecs = (w_out + KANN_VL - 1) / KANN_VL;
    for (size_t v0 = 0; v0 < n_vecs;) {
        size_t C = n_vecs - v0 < 8 ? n_vecs - v0 : 8;
        size_t R = C >= 5 ? 1 : C >= 3 ? 2 : C == 2 ? 4 : 8;
        for (size_t i0 = 0; i0 < rows;) {
            size_t nr = rows - i0 >= R ? R : 1;
            vf acc[8];
            dw_block_of(b, buf, wc, i0, v0 * KANN_VL, o->bias, nr, C, acc);
            for (size_t r = 0; r < nr; r++)
                for (size_t c = 0; c < C; c++) {
                    size_t col = (v0 + c) * KANN_VL, at = (i0 + r) * w_out + col;
                    size_t n = w_out - col < KANN_VL ? w_out - col : KANN_VL;
                    dw_store_lanes(acc[r * C + c], n, yb + at, rb ? rb + at : NULL, o);
                }
            i0 += nr;
        }
        v0 += C;
    }
}

#endif
