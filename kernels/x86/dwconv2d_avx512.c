/* dwconv2d for AVX-512 over the band layout of ref/dwconv2d.h: per channel and band of output
 * rows, the padded input rows are copied into phase planes in the L1 cache (masked loads at
 * the row ends; stride 2 splits the even and odd columns by permutes), then every tap is one
 * plain load. 3x3 windows with stride 1 or 2 along the rows take the row path: 8 output rows of
 * one 16-column vector at once, each plane row loaded once for all the rows that read it.
 * Other windows run 8 vectors of the wide grid at once (independent accumulators hide the FMA
 * latency); the store keeps the lanes that hold output columns (compress), the residual
 * unpacked to meet them (expand). Bias, residual and activation at the store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/dwconv2d.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "dwconv2d_rows.h"

#define LANES 16

/* Lanes i in [lo, hi) of 16. */
static inline __mmask16 lanes(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > LANES) hi = LANES;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

/* The band fill's row copy (kann_dw_row_fn): plain loads inside the row, masked ones across
 * its ends (the padding costs no branches per lane); stride 2 splits two loads into the even
 * and odd lanes. */
static void dw_row(float *d0, float *d1, const float *x_row, int64_t iw0, uint32_t stride,
                   uint32_t w_in, size_t n) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    if (stride > 2) {
        kann_dw_row(d0, d1, x_row, iw0, stride, w_in, n);
        return;
    }
    int64_t span = LANES * (int64_t)stride; /* input columns per output vector */
    for (size_t j = 0; j < n; j += LANES) {
        int64_t c0 = iw0 + (int64_t)j * stride; /* the column of lane 0 */
        __mmask16 keep = lanes(0, (int64_t)(n - j));
        int inside = c0 >= 0 && c0 + span <= (int64_t)w_in;
        __mmask16 m0 = inside ? 0xffff : lanes(-c0, (int64_t)w_in - c0);
        __m512 v0 = _mm512_maskz_loadu_ps(m0, x_row + c0);
        if (stride == 1) {
            _mm512_mask_storeu_ps(d0 + j, keep, v0);
            continue;
        }
        __mmask16 m1 = inside ? 0xffff : lanes(-c0 - LANES, (int64_t)w_in - c0 - LANES);
        __m512 v1 = _mm512_maskz_loadu_ps(m1, x_row + c0 + LANES);
        _mm512_mask_storeu_ps(d0 + j, keep, _mm512_permutex2var_ps(v0, even, v1));
        if (d1) _mm512_mask_storeu_ps(d1 + j, keep, _mm512_permutex2var_ps(v0, odd, v1));
    }
}

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
            __mmask16 m = lanes(0, (int64_t)(w_out - col));
            for (size_t r = 0; r < n_rows; r++) {
                size_t at = (i0 + r) * w_out + col;
                dw_store(acc[r], m, yb + at, rb ? rb + at : NULL, o);
            }
        }
    }
}

/* One band (kann_dw_band_fn): the row path or the wide grid. */
static void band(const kann_dw_band_job *job) {
    const kann_dwconv2d_args *a = job->a;
    dw_out o = dw_out_of(job);
    if (!job->rows_path)
        band_flat(job->b, job->buf, job->wc, job->rows * job->b->w_h, job->masks, job->at, job->y,
                  job->res, &o);
    else if (a->stride_h == 1)
        band_rows(job->b, job->buf, job->wc, a->k_w, a->w_out, job->rows, job->y, job->res, &o, 1);
    else
        band_rows(job->b, job->buf, job->wc, a->k_w, a->w_out, job->rows, job->y, job->res, &o, 2);
}

void kann_f32_dwconv2d_avx512(const void *args, const kann_exec *ex) {
    kann_dw_drive(args, ex, LANES, dw_row, band);
}
