/* dwconv2d for AVX-512: 16 output pixels of one row per vector, four vertically adjacent vectors
 * at once (independent accumulators). Vectors whose taps all lie inside the input use plain
 * loads; the others masked loads with the column masks computed once per tap column (stride
 * 1) or two masked loads and an even-lane permute (stride 2), so the padding needs no
 * branches; other strides gather. Bias, residual, activation at the store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/window.h"
#include "simd_act.h"

/* Lanes i in [lo, hi) of 16. */
static inline __mmask16 lanes(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

/* x_row[iw0 + j * stride] for j < len (0 outside [0, w_in)). */
static inline __m512 load_taps(const float *x_row, int64_t iw0, uint32_t stride, uint32_t w_in,
                               uint32_t len) {
    if (stride == 1) {
        __mmask16 m = lanes(-iw0, (int64_t)w_in - iw0) & lanes(0, len);
        return _mm512_maskz_loadu_ps(m, x_row + iw0);
    }
    if (stride == 2) {
        /* lanes 0..31 hold x_row[iw0 + i]; output j takes lane 2j */
        int64_t end = 2 * (int64_t)len - 1;
        __mmask16 m0 = lanes(-iw0, (int64_t)w_in - iw0) & lanes(0, end);
        __mmask16 m1 = lanes(-iw0 - 16, (int64_t)w_in - iw0 - 16) & lanes(0, end - 16);
        __m512 a = _mm512_maskz_loadu_ps(m0, x_row + iw0);
        __m512 b = _mm512_maskz_loadu_ps(m1, x_row + iw0 + 16);
        const __m512i even =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        return _mm512_permutex2var_ps(a, even, b);
    }
    __m512i j = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i idx = _mm512_add_epi32(_mm512_mullo_epi32(j, _mm512_set1_epi32((int)stride)),
                                   _mm512_set1_epi32((int)iw0));
    __mmask16 m = _mm512_cmpge_epi32_mask(idx, _mm512_setzero_si512()) &
                  _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32((int)w_in)) & lanes(0, len);
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx, x_row, 4);
}

/* The gather path forms int32 lane indices: keep every input column they can name in range,
 * or let the reference (64-bit coordinates) handle the layer. */
static int columns_fit_i32(const kann_dwconv2d_args *a) {
    uint64_t reach =
        (uint64_t)a->w_out * a->stride_w + (uint64_t)a->k_w * a->dil_w + a->pad_left + a->w_in + 64;
    return reach < ((uint64_t)1 << 30);
}

/* Output vectors computed together: independent accumulators hide the FMA latency that one
 * chain of k_h * k_w taps would wait on. */
#define DW_VECS 4

/* One output vector: 16 pixels of row oh from column ow0. */
typedef struct dw_vec {
    int64_t ih0, iw0;
    uint32_t oh, ow0, len;
} dw_vec;

/* Whether every tap of the DW_VECS vectors reads inside x (full vectors, no padding): then
 * the taps need no masks. */
static inline int all_inside(const kann_dwconv2d_args *a, const dw_vec *vec) {
    if (a->stride_w > 2) return 0;
    int64_t rows = (int64_t)a->dil_h * (a->k_h - 1), cols = (int64_t)a->dil_w * (a->k_w - 1);
    for (size_t i = 0; i < DW_VECS; i++) {
        int64_t last = vec[i].iw0 + 15 * (int64_t)a->stride_w + cols;
        if (a->stride_w == 2) last++; /* the odd lane after the last even one is loaded too */
        if (vec[i].len != 16 || vec[i].ih0 < 0 || vec[i].ih0 + rows >= (int64_t)a->h_in ||
            vec[i].iw0 < 0 || last >= (int64_t)a->w_in)
            return 0;
    }
    return 1;
}

/* The taps of DW_VECS vectors inside x: plain loads (stride 1) or two loads and an even-lane
 * permute (stride 2). */
static inline void taps_inside(const kann_dwconv2d_args *a, const float *xc, const float *wc,
                               const dw_vec *vec, __m512 *acc) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const float *xr[DW_VECS];
    for (size_t i = 0; i < DW_VECS; i++)
        xr[i] = xc + (size_t)vec[i].ih0 * a->w_in + (size_t)vec[i].iw0;
    for (uint32_t kh = 0; kh < a->k_h; kh++) {
        const float *wk = wc + (size_t)kh * a->k_w;
        size_t row = (size_t)kh * a->dil_h * a->w_in;
        for (uint32_t kw = 0; kw < a->k_w; kw++) {
            __m512 wv = _mm512_set1_ps(wk[kw]);
            size_t off = row + (size_t)kw * a->dil_w;
            if (a->stride_w == 1) {
#pragma GCC unroll 4
                for (size_t i = 0; i < DW_VECS; i++)
                    acc[i] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(xr[i] + off), acc[i]);
            } else {
#pragma GCC unroll 4
                for (size_t i = 0; i < DW_VECS; i++) {
                    __m512 t = _mm512_permutex2var_ps(_mm512_loadu_ps(xr[i] + off), even,
                                                      _mm512_loadu_ps(xr[i] + off + 16));
                    acc[i] = _mm512_fmadd_ps(wv, t, acc[i]);
                }
            }
        }
    }
}

/* The taps of DW_VECS vectors of one column (the same ow0) where some read outside x: the
 * column masks are the vectors' common ones, computed once per kw; rows outside x load
 * nothing. Strides 1 and 2. */
static inline void taps_masked(const kann_dwconv2d_args *a, const float *xc, const float *wc,
                               const dw_vec *vec, __m512 *acc_io) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const int64_t w_in = a->w_in, len = vec[0].len, dil_w = a->dil_w;
    const uint32_t k_w = a->k_w;
    const size_t row_step = (size_t)a->dil_h * a->w_in;
    const int stride2 = a->stride_w == 2;
    __m512 acc[DW_VECS];
    kann_range kh[DW_VECS];
    const float *x0[DW_VECS]; /* row of the first tap inside x, at column iw0 of the vector */
    for (size_t i = 0; i < DW_VECS; i++) {
        acc[i] = acc_io[i];
        kh[i] = kann_window_range(vec[i].ih0, a->dil_h, 0, a->h_in, a->k_h);
        int64_t ih = kh[i].hi > kh[i].lo ? vec[i].ih0 + (int64_t)kh[i].lo * a->dil_h : 0;
        x0[i] = xc + (size_t)ih * a->w_in;
    }
    for (uint32_t kw = 0; kw < k_w; kw++) {
        int64_t iw0 = vec[0].iw0 + (int64_t)kw * dil_w;
        __mmask16 m0, m1 = 0;
        if (!stride2) {
            m0 = lanes(-iw0, w_in - iw0) & lanes(0, len);
        } else {
            int64_t end = 2 * len - 1;
            m0 = lanes(-iw0, w_in - iw0) & lanes(0, end);
            m1 = lanes(-iw0 - 16, w_in - iw0 - 16) & lanes(0, end - 16);
        }
#pragma GCC unroll 4
        for (size_t i = 0; i < DW_VECS; i++) {
            const float *xr = x0[i] + iw0, *wk = wc + kw;
            for (uint32_t t = kh[i].lo; t < kh[i].hi; t++, xr += row_step) {
                __m512 v = _mm512_maskz_loadu_ps(m0, xr);
                if (stride2)
                    v = _mm512_permutex2var_ps(v, even, _mm512_maskz_loadu_ps(m1, xr + 16));
                acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(wk[(size_t)t * k_w]), v, acc[i]);
            }
        }
    }
    for (size_t i = 0; i < DW_VECS; i++)
        acc_io[i] = acc[i];
}

void kann_f32_dwconv2d_avx512(const void *args, const kann_exec *ex) {
    const kann_dwconv2d_args *a = args;
    if (!columns_fit_i32(a)) {
        kann_f32_dwconv2d_ref(args, ex);
        return;
    }
    uint32_t c_begin = 0, c_end = a->c_out, oh_begin = 0, oh_end = a->h_out;
    if (a->tile.axis == 0) {
        c_begin = a->tile.begin;
        c_end = a->tile.end;
    } else {
        oh_begin = a->tile.begin;
        oh_end = a->tile.end;
    }
    if (oh_begin >= oh_end || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    size_t taps = (size_t)a->k_h * a->k_w;
    /* groups of DW_VECS vertically adjacent vectors: columns inside x take the unmasked taps */
    uint32_t per_row = (a->w_out + 15) / 16;
    size_t n_blocks = (oh_end - oh_begin + DW_VECS - 1) / DW_VECS;
    size_t n_vecs = n_blocks * per_row * DW_VECS;
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c = c_begin; c < c_end; c++) {
            const float *xc = x + (n * a->c_in + c) * x_plane, *wc = w + c * taps;
            size_t y_base = (n * a->c_out + c) * y_plane;
            __m512 b0 = _mm512_set1_ps(bias ? bias[c] : 0.0f);
            for (size_t v0 = 0; v0 < n_vecs; v0 += DW_VECS) {
                dw_vec vec[DW_VECS];
                __m512 acc[DW_VECS];
                size_t group = v0 / DW_VECS, block = group / per_row;
                uint32_t oh0 = oh_begin + (uint32_t)(block * DW_VECS);
                uint32_t ow0 = (uint32_t)(group % per_row) * 16;
                size_t nv = oh_end - oh0 < DW_VECS ? oh_end - oh0 : DW_VECS;
                for (size_t i = 0; i < DW_VECS; i++) {
                    uint32_t oh = oh0 + (uint32_t)(i < nv ? i : 0); /* rows past nv repeat */
                    vec[i].oh = oh;
                    vec[i].ow0 = ow0;
                    vec[i].len = a->w_out - ow0 < 16 ? a->w_out - ow0 : 16;
                    vec[i].ih0 = (int64_t)oh * a->stride_h - a->pad_top;
                    vec[i].iw0 = (int64_t)ow0 * a->stride_w - a->pad_left;
                    acc[i] = b0;
                }
                if (all_inside(a, vec)) {
                    taps_inside(a, xc, wc, vec, acc);
                    goto store;
                }
                if (a->stride_w <= 2) {
                    taps_masked(a, xc, wc, vec, acc);
                    goto store;
                }
                for (uint32_t kh = 0; kh < a->k_h; kh++) {
                    const float *wk = wc + (size_t)kh * a->k_w;
                    const float *xr[DW_VECS];
                    uint32_t valid[DW_VECS];
                    for (size_t i = 0; i < DW_VECS; i++) {
                        int64_t ih = vec[i].ih0 + (int64_t)kh * a->dil_h;
                        valid[i] = ih >= 0 && ih < (int64_t)a->h_in ? vec[i].len : 0;
                        xr[i] = xc + (size_t)(valid[i] ? ih : 0) * a->w_in;
                    }
                    for (uint32_t kw = 0; kw < a->k_w; kw++) {
                        __m512 wv = _mm512_set1_ps(wk[kw]);
                        int64_t off = (int64_t)kw * a->dil_w;
#pragma GCC unroll 4
                        for (size_t i = 0; i < DW_VECS; i++) {
                            __m512 t =
                                load_taps(xr[i], vec[i].iw0 + off, a->stride_w, a->w_in, valid[i]);
                            acc[i] = _mm512_fmadd_ps(wv, t, acc[i]);
                        }
                    }
                }
            store:
                for (size_t i = 0; i < nv; i++) {
                    float *yr = y + y_base + (size_t)vec[i].oh * a->w_out + vec[i].ow0;
                    __mmask16 m = lanes(0, vec[i].len);
                    __m512 r = acc[i];
                    if (res) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, res + (yr - y)));
                    if (vec_act) r = kann_act512(r, act, lo, hi);
                    _mm512_mask_storeu_ps(yr, m, r);
                    if (!vec_act)
                        for (uint32_t j = 0; j < vec[i].len; j++)
                            yr[j] = kann_act_apply(act, yr[j]);
                }
            }
        }
    }
}
