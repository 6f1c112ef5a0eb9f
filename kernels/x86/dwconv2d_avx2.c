/* dwconv2d for AVX2 + FMA over the band layout of ref/dwconv2d.h, as the AVX-512 variant with
 * 8-lane vectors: per channel and band of output rows, the padded input rows are copied into
 * phase planes in the L1 cache (masked loads at the row ends), then every tap is one plain
 * load. 3x3 windows with stride 1 or 2 along the rows take the row path (8 output rows of one
 * vector share their loads); other windows run 8 vectors of the wide grid at once, the lanes
 * that hold output columns packed at the store (through a spilled vector: AVX2 has no
 * compress). Bias, residual and activation at the store. 3x3 and 5x5 stride-1 convs read
 * their input where it lies instead (d3_rows). */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/dwconv2d.h"

#define KANN_VEC_BITS 256
#include "vec_math.h"
#include "simd_act.h"
#include "dwconv2d_rows.h"

#define LANES 8

/* Output vectors (wide-grid path) or rows (row path) computed together. */
#define DW_VECS 8

/* Lanes i with lo <= i < hi, as a maskload mask. */
static inline __m256i lanes(int64_t lo, int64_t hi) {
    if (lo < -1) lo = -1;
    if (lo > LANES) lo = LANES;
    if (hi < 0) hi = 0;
    if (hi > LANES) hi = LANES;
    __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(i, _mm256_set1_epi32((int)lo - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), i));
}

/* The band fill's row copy (kann_row_pair_fn): masked loads, so the padding costs no branches
 * per lane; stride 2 splits two loads into the even and odd lanes. */
static void dw_row(float *d0, float *d1, const float *x_row, int64_t iw0, uint32_t stride,
                   uint32_t w_in, size_t n) {
    if (stride > 2) {
        kann_row_pair(d0, d1, x_row, iw0, stride, w_in, n);
        return;
    }
    for (size_t j = 0; j < n; j += LANES) {
        int64_t c0 = iw0 + (int64_t)j * stride; /* the column of lane 0 */
        __m256i keep = lanes(0, (int64_t)(n - j));
        __m256 v0 = _mm256_maskload_ps(x_row + c0, lanes(-c0, (int64_t)w_in - c0));
        if (stride == 1) {
            _mm256_maskstore_ps(d0 + j, keep, v0);
            continue;
        }
        __m256 v1 =
            _mm256_maskload_ps(x_row + c0 + LANES, lanes(-c0 - LANES, (int64_t)w_in - c0 - LANES));
        /* [v0 0 2 | v1 0 2 | v0 4 6 | v1 4 6] in 64-bit pairs, then the pairs in order */
        __m256 e = _mm256_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 o = _mm256_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1));
        e = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
        _mm256_maskstore_ps(d0 + j, keep, e);
        if (d1) {
            o = _mm256_castpd_ps(
                _mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
            _mm256_maskstore_ps(d1 + j, keep, o);
        }
    }
}

/* The V vectors of wide pixels [P0, P0 + 8 V) of a band: bias plus every tap. */
static inline __attribute__((always_inline)) void dw_vectors(const kann_dw_band *b,
                                                             const float *buf, const float *wc,
                                                             size_t P0, __m256 bias, int V,
                                                             __m256 *acc) {
#pragma GCC unroll 8
    for (int i = 0; i < V; i++)
        acc[i] = bias;
    const float *p = buf + P0;
    for (size_t t = 0; t < b->n_taps; t++) {
        __m256 wv = _mm256_set1_ps(wc[t]);
        const float *q = p + b->taps[t];
#pragma GCC unroll 8
        for (int i = 0; i < V; i++)
            acc[i] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(q + LANES * i), acc[i]);
    }
}

/* One vector's store: the lanes of bit mask m (output pixels, in order) to y[0...], with the
 * residual res[0...]. Lanes 0..n-1 (whole vectors, row ends) go by a masked store; any other
 * mask (a row end inside the vector on the wide grid) through a spilled vector. */
static inline __attribute__((always_inline)) void dw_store(__m256 v, uint32_t m, float *y,
                                                           const float *res, const dw_out *o) {
    if ((m & (m + 1u)) == 0) {
        dw_store_lanes(v, (size_t)__builtin_popcount(m), y, res, o);
        return;
    }
    float lane[LANES];
    _mm256_storeu_ps(lane, v);
    size_t n = 0;
    for (size_t i = 0; i < LANES; i++) {
        if (!(m >> i & 1u)) continue;
        float s = lane[i] + (res ? res[n] : 0.0f);
        y[n++] = kann_act_apply(o->act, s);
    }
}

/* One band on the wide grid: vectors across row ends, DW_VECS at a time (any window). */
static void band_flat(const kann_dw_band *b, const float *buf, const float *wc, size_t n_px,
                      const uint32_t *masks, const uint32_t *at, float *yb, const float *rb,
                      const dw_out *o) {
    size_t nv = (n_px + LANES - 1) / LANES;
    for (size_t v0 = 0; v0 < nv;) {
        __m256 acc[DW_VECS];
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
            uint32_t m = masks[v0];
            size_t left = n_px - v0 * LANES; /* the last band may be shorter */
            if (left < LANES) m &= (1u << left) - 1u;
            dw_store(acc[i], m, yb + at[v0], rb ? rb + at[v0] : NULL, o);
        }
    }
}

/* One band of `rows` output rows by the row path, S the stride along the rows. */
static inline __attribute__((always_inline)) void
band_rows(const kann_dw_band *b, const float *buf, const float *wc, size_t k_w, size_t w_out,
          size_t rows, float *yb, const float *rb, const dw_out *o, int S) {
    for (size_t i0 = 0; i0 < rows; i0 += KANN_DW_ROW_BLOCK) {
        size_t n_rows = rows - i0 < KANN_DW_ROW_BLOCK ? rows - i0 : KANN_DW_ROW_BLOCK;
        for (size_t col = 0; col < w_out; col += LANES) {
            __m256 acc[DW_ROWS];
            dw_rows(b, buf, wc, k_w, i0, col, o->bias, S, acc);
            uint32_t m = w_out - col >= LANES ? 0xffu : (1u << (w_out - col)) - 1u;
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

/* ---- 3x3 and 5x5, stride 1, straight from the planes ------------------------------------ */
/* As the AVX-512 variant's path: an output vector of 8 columns takes each input row as K loads
 * shifted by a column (lanes whose tap falls into the padding masked off), and D3_ROWS output
 * rows share the loads of the rows they read; no copy of the input. 4 rows: for 3x3 their
 * accumulators, the 9 weights and the 3 loads fill the 16 YMM registers; the FMAs of 5x5
 * broadcast its 25 weights from memory. */

#define D3_ROWS 4

/* Output columns from which the path is taken: from 2 it measured faster than the band path
 * (7x7 maps of 960 channels 142 -> 67 us, 112x112 of 32 channels 613 -> 316). */
#define D3_MIN_WIDTH 2

/* The window's side K when the conv takes the straight path, else 0. */
static int d3_side(const kann_dwconv2d_args *a) {
    int fits = a->k_h == a->k_w && (a->k_h == 3 || a->k_h == 5) && a->stride_h == 1 &&
               a->stride_w == 1 && a->dil_h == 1 && a->dil_w == 1 && a->w_out >= D3_MIN_WIDTH;
    return fits ? (int)a->k_h : 0;
}

/* The weight of tap (kh, kw): from registers (wv, 3x3) or broadcast from wc (5x5). */
static inline __attribute__((always_inline)) __m256 d3_w(const __m256 *wv, const float *wc, int kh,
                                                         int kw, int K) {
    return K == 3 ? wv[3 * kh + kw] : _mm256_set1_ps(wc[K * kh + kw]);
}

/* Output rows [oh, oh + D3_ROWS) at columns [c0, c0 + 8) of the plane xc (m0 .. m4: the lanes
 * whose tap kw = 0 .. K - 1 reads an input column; a row outside the input loads as zero). The
 * loads and masks are named, not arrays: arrays indexed in the unrolled loops stayed on the
 * stack (3x3 on 112x112 7 % slower). */
static inline __attribute__((always_inline)) void
d3_block(const kann_dwconv2d_args *a, const float *xc, const __m256 *wv, const float *wc,
         __m256 bias, size_t oh, ptrdiff_t c0, __m256i m0, __m256i m1, __m256i m2, __m256i m3,
         __m256i m4, __m256 *acc, int K) {
#pragma GCC unroll 4
    for (int r = 0; r < D3_ROWS; r++)
        acc[r] = bias;
    ptrdiff_t ih0 = (ptrdiff_t)oh - (ptrdiff_t)a->pad_top, h_in = (ptrdiff_t)a->h_in;
    const float *col = xc + c0 - (ptrdiff_t)a->pad_left;
    const __m256i none = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int j = 0; j < D3_ROWS + K - 1; j++) {
        ptrdiff_t ih = ih0 + j;
        int in = ih >= 0 && ih < h_in;
        const float *row = col + (in ? ih : 0) * (ptrdiff_t)a->w_in;
        __m256 x0 = _mm256_maskload_ps(row, in ? m0 : none);
        __m256 x1 = _mm256_maskload_ps(row + 1, in ? m1 : none);
        __m256 x2 = _mm256_maskload_ps(row + 2, in ? m2 : none);
        __m256 x3 = K > 3 ? _mm256_maskload_ps(row + 3, in ? m3 : none) : x2;
        __m256 x4 = K > 3 ? _mm256_maskload_ps(row + 4, in ? m4 : none) : x2;
#pragma GCC unroll 5
        for (int kh = 0; kh < K; kh++) {
            int r = j - kh;
            if (r < 0 || r >= D3_ROWS) continue;
            acc[r] = _mm256_fmadd_ps(d3_w(wv, wc, kh, 0, K), x0, acc[r]);
            acc[r] = _mm256_fmadd_ps(d3_w(wv, wc, kh, 1, K), x1, acc[r]);
            acc[r] = _mm256_fmadd_ps(d3_w(wv, wc, kh, 2, K), x2, acc[r]);
            if (K > 3) {
                acc[r] = _mm256_fmadd_ps(d3_w(wv, wc, kh, 3, K), x3, acc[r]);
                acc[r] = _mm256_fmadd_ps(d3_w(wv, wc, kh, 4, K), x4, acc[r]);
            }
        }
    }
}

/* The tile's channels and rows; CLAMP: the activation is a clamp (a constant per copy). */
static inline __attribute__((always_inline)) void
d3_rows(const kann_dwconv2d_args *a, const kann_exec *ex, kann_dw_range rg, int K, int CLAMP) {
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
    int64_t w_in = (int64_t)a->w_in;
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c = rg.c_begin; c < rg.c_end; c++) {
            const float *xc = x + (n * a->c_in + c) * x_plane, *wc = w + c * taps;
            size_t plane = (n * a->c_out + c) * y_plane;
            __m256 wv[9];
            if (K == 3)
                for (int t = 0; t < 9; t++)
                    wv[t] = _mm256_set1_ps(wc[t]);
            __m256 bv = _mm256_set1_ps(bias ? bias[c] : 0.0f);
            for (size_t oh = rg.oh_begin; oh < rg.oh_end; oh += D3_ROWS) {
                size_t rows = rg.oh_end - oh < D3_ROWS ? rg.oh_end - oh : D3_ROWS;
                for (size_t c0 = 0; c0 < a->w_out; c0 += LANES) {
                    int64_t left = (int64_t)(a->w_out - c0), iw0 = (int64_t)c0 - a->pad_left;
                    __m256i out = lanes(0, left);
                    __m256i m0 = _mm256_and_si256(out, lanes(-iw0, w_in - iw0));
                    __m256i m1 = _mm256_and_si256(out, lanes(-iw0 - 1, w_in - iw0 - 1));
                    __m256i m2 = _mm256_and_si256(out, lanes(-iw0 - 2, w_in - iw0 - 2));
                    __m256i m3 =
                        K > 3 ? _mm256_and_si256(out, lanes(-iw0 - 3, w_in - iw0 - 3)) : m2;
                    __m256i m4 =
                        K > 3 ? _mm256_and_si256(out, lanes(-iw0 - 4, w_in - iw0 - 4)) : m2;
                    __m256 acc[D3_ROWS];
                    d3_block(a, xc, wv, wc, bv, oh, (ptrdiff_t)c0, m0, m1, m2, m3, m4, acc, K);
                    float *yr = y + plane + oh * a->w_out + c0;
                    const float *rr = res ? res + plane + oh * a->w_out + c0 : NULL;
                    uint32_t mo = left >= LANES ? 0xffu : (1u << left) - 1u;
#pragma GCC unroll 4
                    for (size_t r = 0; r < D3_ROWS; r++) {
                        if (r >= rows) break;
                        __m256 v = acc[r];
                        if (CLAMP) {
                            if (rr)
                                v = _mm256_add_ps(v, _mm256_maskload_ps(rr + r * a->w_out, out));
                            _mm256_maskstore_ps(yr + r * a->w_out, out,
                                                _mm256_min_ps(o.hi, _mm256_max_ps(o.lo, v)));
                        } else {
                            dw_store(v, mo, yr + r * a->w_out, rr ? rr + r * a->w_out : NULL, &o);
                        }
                    }
                }
            }
        }
    }
}

/* A function of its own for each window side (as in the AVX-512 variant). */
static __attribute__((noinline)) void d3_3x3(const kann_dwconv2d_args *a, const kann_exec *ex,
                                             kann_dw_range rg) {
    kann_act_is_clamp(&a->act) ? d3_rows(a, ex, rg, 3, 1) : d3_rows(a, ex, rg, 3, 0);
}

static __attribute__((noinline)) void d3_5x5(const kann_dwconv2d_args *a, const kann_exec *ex,
                                             kann_dw_range rg) {
    kann_act_is_clamp(&a->act) ? d3_rows(a, ex, rg, 5, 1) : d3_rows(a, ex, rg, 5, 0);
}

void kann_f32_dwconv2d_avx2(const void *args, const kann_exec *ex) {
    const kann_dwconv2d_args *a = args;
    kann_dw_range rg = kann_dw_range_of(a);
    int side = d3_side(a);
    if (side) {
        if (rg.c_begin >= rg.c_end || rg.oh_begin >= rg.oh_end) return;
        side == 3 ? d3_3x3(a, ex, rg) : d3_5x5(a, ex, rg);
        return;
    }
    kann_dw_drive(a, ex, rg, LANES, dw_row, band);
}
