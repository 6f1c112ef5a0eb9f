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

#endif
