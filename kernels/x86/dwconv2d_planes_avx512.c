/* dwconv2d for AVX-512 on small maps: a channel's whole output plane in a few vectors, the
 * pixels in the lanes, read straight from the input plane.
 *
 * Maps narrower than the straight path's D3_MIN_WIDTH (7x7 in MobileNet and EfficientNet) went
 * through the channels-in-lanes ring: 16 channels of every input pixel transposed into it and
 * every output pixel transposed back, more shuffles than FMAs on a 49-pixel plane. Here:
 *
 * - 3x3 and 5x5 at stride 1 with the output as large as the input (padding 1 or 2 on each
 *   side): output pixel p and its tap (kh, kw) lie (kh - k / 2) * w + (kw - k / 2) floats apart
 *   in the flat planes, so a tap of 16 consecutive output pixels is the plane's vectors shifted
 *   by a constant: one permute of two of them (3x3 on rows of up to 15, 5x5 on rows of up to 7:
 *   576 channels on 7x7, one thread, warm, 17.3 -> 15.3 us against the channels-in-lanes ring,
 *   26.8 -> 16.2 inside mnasnet0_5), else (3x3 only) a masked load at that offset;
 *   the mask (worked out once per call for every vector and tap) drops the lanes whose tap falls
 *   outside the plane, which reads as the zero padding;
 * - stride 2, 3x3 and 5x5, rows of at most 8 outputs: a vector holds two output rows; per
 *   window row the two input rows are two masked loads (columns -pad_left .. 15 - pad_left) and
 *   each of the k taps one permute of them picking columns 2j + kw of each (a tap past the load
 *   must read padding, and picks a lane of the load that reads none). 5x5 took the
 *   channels-in-lanes ring before: one thread, warm, 288 channels from 14x14 11.5 -> 9.0 us,
 *   672 27.6 -> 21.3.
 *
 * Two channels go together so that 8 or more FMA chains hide the latency. Bias, residual and
 * activation at the store; output vectors are consecutive floats of the plane. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/dwconv2d.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "row_pair_avx512.h"

/* Output vectors of a plane at most (an 8x8 map; 7x7 maps take 4). */
#define PL_VECS 4
/* The window sides: 3x3, and 5x5 on rows of at most 7 (taps within a vector of the output pixel,
 * so each is a permute; with 25 masked loads a vector it measured slower than the
 * channels-in-lanes ring, 576 channels on 7x7, one thread: 17 -> 23 us). */
#define PL_MAX_K 5

/* Channels from which a 5x5 stride-1 tile goes to the channels-in-lanes ring instead: on the
 * Intel Xeon core pair, one thread, alternated runs, 1152 channels on 7x7 (MnasNet's last
 * stage) 61 -> 50 us, 576 channels 31 -> 25 (3x3 windows and 5x5 at stride 2 stay here: 960
 * channels 3x3 on 7x7 21 us here, 26 there; 576 channels 5x5 stride 2 from 14x14 34 and 36). */
#define PL_SAME5_RING_CHANNELS 16
#define PL_TAPS (PL_MAX_K * PL_MAX_K)

/* What the stores share: activation (clamp: none, relu, clip as a max and a min), bias and the
 * residual's planes. */
typedef struct pl_out {
    const kann_act *act;
    int clamp, vec_act;
    __m512 lo, hi;
} pl_out;

/* The store of an activation other than a clamp, out of line: one copy of vf_act's switch rather
 * than one per unrolled store. */
static __attribute__((noinline)) void pl_store_act(const pl_out *o, __m512 v, __mmask16 keep,
                                                   float *yc, const float *rc, size_t at) {
    if (rc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(keep, rc + at));
    if (o->vec_act) v = vf_act(v, o->act, o->lo, o->hi);
    _mm512_mask_storeu_ps(yc + at, keep, v);
    if (!o->vec_act)
        for (size_t j = 0; j < 16; j++)
            if (keep >> j & 1) yc[at + j] = kann_act_apply(o->act, yc[at + j]);
}

/* v (output floats [at, at + 16) of channel plane yc, lanes keep) with bias, residual and
 * activation. CLAMP: the activation is a clamp (a constant per copy), applied in line. */
static inline __attribute__((always_inline)) void pl_store(const pl_out *o, __m512 v,
                                                           __mmask16 keep, float *yc,
                                                           const float *rc, size_t at, int CLAMP) {
    if (!CLAMP) {
        pl_store_act(o, v, keep, yc, rc, at);
        return;
    }
    if (rc) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(keep, rc + at));
    _mm512_mask_storeu_ps(yc + at, keep, _mm512_min_ps(o->hi, _mm512_max_ps(o->lo, v)));
}

/* The accumulators of channels c0 .. c0 + C - 1, NV vectors each, set to their biases. */
static inline __attribute__((always_inline)) void pl_init(__m512 acc[2][PL_VECS], const float *bias,
                                                          size_t c0, const int C, const int NV) {
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
        __m512 b = _mm512_set1_ps(bias ? bias[c0 + c] : 0.0f);
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[c][v] = b;
    }
}

/* Vector v of channel c0 + c to its plane (plane floats each) at v * step, lanes keep[v]. */
static inline __attribute__((always_inline)) void
pl_store_all(const pl_out *o, __m512 acc[2][PL_VECS], const __mmask16 *keep, float *y,
             const float *res, size_t plane, size_t step, size_t c0, const int C, const int NV,
             int CLAMP) {
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
        float *yc = y + (c0 + c) * plane;
        const float *rc = res ? res + (c0 + c) * plane : NULL;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            pl_store(o, acc[c][v], keep[v], yc, rc, (size_t)v * step, CLAMP);
    }
}

/* ---- stride 1, output as large as the input ---------------------------------------------- */

typedef struct pl_same {
    size_t hw, nv;
    int k;                         /* the window's side, 3 or 5 */
    ptrdiff_t off[PL_TAPS];        /* tap t: floats from the output pixel */
    __mmask16 m[PL_VECS][PL_TAPS]; /* lanes of vector v whose tap t lies inside */
    __mmask16 keep[PL_VECS];       /* lanes of vector v inside the plane */
    int shifts;                    /* rows of at most 15: each tap a permute of the plane's loads */
    __m512i pick[PL_TAPS];         /* tap t: lanes off[t] + j of a pair of them (shifts) */
} pl_same;

static int pl_same_of(const kann_dwconv2d_args *a, pl_same *s) {
    uint32_t k = a->k_h;
    if ((k != 3 && k != 5) || a->k_w != k || a->stride_h != 1 || a->stride_w != 1 ||
        a->dil_h != 1 || a->dil_w != 1 || a->pad_top != k / 2 || a->pad_left != k / 2 ||
        a->h_out != a->h_in || a->w_out != a->w_in)
        return 0;
    size_t h = a->h_out, w = a->w_out, hw = h * w;
    if (hw == 0 || hw > 16 * PL_VECS || (k == 5 && w > 7)) return 0;
    s->k = (int)k;
    s->hw = hw;
    s->nv = (hw + 15) / 16;
    int64_t pad = k / 2;
    size_t taps = (size_t)k * k;
    for (size_t v = 0; v < s->nv; v++)
        s->keep[v] = kann_lanes16(0, (int64_t)(hw - 16 * v));
    /* each lane's row and column (worked out once, not per tap: the masks of 25 taps took a
     * tenth of a 576-channel 5x5 conv on 7x7) */
    __attribute__((aligned(64))) int32_t row[16 * PL_VECS], col[16 * PL_VECS];
    for (size_t p = 0, i = 0, j = 0; p < 16 * PL_VECS; p++) {
        row[p] = (int32_t)i;
        col[p] = (int32_t)j;
        if (++j == w) {
            j = 0;
            i++;
        }
    }
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i hv = _mm512_set1_epi32((int32_t)h), wv = _mm512_set1_epi32((int32_t)w);
    /* the taps before the centre reach back (off in [-16, 0]: vectors v - 1 and v), those after
     * it forward ([0, 16]: v and v + 1) */
    s->shifts = w <= 15; /* always for 5x5, whose rows are at most 7 here */
    for (size_t t = 0; t < taps; t++) {
        int32_t dh = (int32_t)(t / k) - (int32_t)pad, dw = (int32_t)(t % k) - (int32_t)pad;
        s->off[t] = (ptrdiff_t)dh * (ptrdiff_t)w + dw;
        /* inside: 0 <= row + dh < h and 0 <= col + dw < w, as unsigned compares */
        for (size_t v = 0; v < s->nv; v++) {
            __m512i ri = _mm512_add_epi32(_mm512_load_si512(row + 16 * v), _mm512_set1_epi32(dh));
            __m512i cj = _mm512_add_epi32(_mm512_load_si512(col + 16 * v), _mm512_set1_epi32(dw));
            s->m[v][t] = (__mmask16)(s->keep[v] & _mm512_cmplt_epu32_mask(ri, hv) &
                                     _mm512_cmplt_epu32_mask(cj, wv));
        }
        int32_t base = (int32_t)s->off[t] + (t < taps / 2 ? 16 : 0);
        s->pick[t] = _mm512_add_epi32(iota, _mm512_set1_epi32(base));
    }
    return 1;
}

/* Channels c0 .. c0 + C - 1 (C = 1 or 2) of one image, NV vectors each. */
static inline __attribute__((always_inline)) void
pl_same_channels(const pl_same *s, const pl_out *o, const float *x, const float *w,
                 const float *bias, const float *res, float *y, size_t c0, const int C,
                 const int NV, int CLAMP) {
    __m512 acc[2][PL_VECS];
    pl_init(acc, bias, c0, C, NV);
    const size_t hw = s->hw;
    const float *xc0 = x + c0 * hw, *wc0 = w + c0 * 9; /* 3x3: 5x5 rows here are permutes */
/* not unrolled: as fast, and with the taps unrolled into every copy the file took minutes to
 * compile under the sanitizers (rows wider than 15 only: narrower ones take pl_shift_channels) */
#pragma GCC unroll 1
    for (int t = 0; t < 9; t++) {
        const ptrdiff_t off = s->off[t];
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) {
            const float *xc = xc0 + c * hw + off;
            __m512 wt = _mm512_set1_ps(wc0[c * 9 + t]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[c][v] =
                    _mm512_fmadd_ps(wt, _mm512_maskz_loadu_ps(s->m[v][t], xc + 16 * v), acc[c][v]);
        }
    }
    pl_store_all(o, acc, s->keep, y, res, hw, 16, c0, C, NV, CLAMP);
}

/* The same by permutes (s->shifts): each channel's plane as NV + 2 vectors (zero outside it),
 * each tap of output vector v a permute of vectors v - 1 and v or v and v + 1, its lanes outside
 * the map left out of the FMA by its mask. The loads at the taps' offsets (pl_same_channels)
 * were what limited the loop, with plain loads as with masked ones; any of them mixed back in
 * slowed it. One thread, warm, 3x3 with clip on 7x7: 960 channels 15.5 -> 10.7 us, 576 9.7 ->
 * 6.7; 160 on 8x8 3.45 -> 2.6. */
static inline __attribute__((always_inline)) void
pl_shift_channels(const pl_same *s, const pl_out *o, const float *x, const float *w,
                  const float *bias, const float *res, float *y, size_t c0, const int C,
                  const int NV, const int K, int CLAMP) {
    __m512 acc[2][PL_VECS];
    pl_init(acc, bias, c0, C, NV);
    const size_t hw = s->hw;
    __m512 xv[2][PL_VECS + 2]; /* xv[c][v + 1]: plane floats [16 v, 16 v + 16) */
#pragma GCC unroll 2
    for (int c = 0; c < C; c++) {
        const float *xc = x + (c0 + c) * hw;
        xv[c][0] = _mm512_setzero_ps();
        xv[c][NV + 1] = _mm512_setzero_ps();
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            xv[c][v + 1] = _mm512_maskz_loadu_ps(s->keep[v], xc + 16 * v);
    }
    const int taps = K * K, centre = taps / 2;
    const float *wc0 = w + c0 * (size_t)taps;
#pragma GCC unroll 25
    for (int t = 0; t < taps; t++) {
        __m512i pick = s->pick[t];
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) {
            __m512 wt = _mm512_set1_ps(wc0[c * taps + t]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                __m512 tap = t == centre ? xv[c][v + 1]
                             : t < centre
                                 ? _mm512_permutex2var_ps(xv[c][v], pick, xv[c][v + 1])
                                 : _mm512_permutex2var_ps(xv[c][v + 1], pick, xv[c][v + 2]);
                acc[c][v] = _mm512_mask3_fmadd_ps(wt, tap, acc[c][v], s->m[v][t]);
            }
        }
    }
    pl_store_all(o, acc, s->keep, y, res, hw, 16, c0, C, NV, CLAMP);
}

/* Channels [c_begin, c_end) of one image by permutes, two at a time; K: the window's side. */
static inline __attribute__((always_inline)) void
pl_shift_run(const pl_same *s, const pl_out *o, const float *x, const float *w, const float *bias,
             const float *res, float *y, size_t c_begin, size_t c_end, const int NV, const int K,
             int CLAMP) {
    size_t c = c_begin;
    for (; c + 2 <= c_end; c += 2)
        pl_shift_channels(s, o, x, w, bias, res, y, c, 2, NV, K, CLAMP);
    if (c < c_end) pl_shift_channels(s, o, x, w, bias, res, y, c, 1, NV, K, CLAMP);
}

/* Channels [c_begin, c_end) of one image, two at a time. */
static inline __attribute__((always_inline)) void
pl_same_run(const pl_same *s, const pl_out *o, const float *x, const float *w, const float *bias,
            const float *res, float *y, size_t c_begin, size_t c_end, const int NV, int CLAMP) {
    if (s->shifts) {
        if (s->k == 5)
            pl_shift_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 5, CLAMP);
        else
            pl_shift_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 3, CLAMP);
        return;
    }
    size_t c = c_begin;
    for (; c + 2 <= c_end; c += 2)
        pl_same_channels(s, o, x, w, bias, res, y, c, 2, NV, CLAMP);
    if (c < c_end) pl_same_channels(s, o, x, w, bias, res, y, c, 1, NV, CLAMP);
}

#define PL_SAME_FN(NV)                                                                             \
    static __attribute__((noinline)) void pl_same_##NV(                                            \
        const pl_same *s, const pl_out *o, const float *x, const float *w, const float *bias,      \
        const float *res, float *y, size_t c_begin, size_t c_end) {                                \
        if (o->clamp)                                                                              \
            pl_same_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 1);                          \
        else                                                                                       \
            pl_same_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 0);                          \
    }
PL_SAME_FN(1)
PL_SAME_FN(2)
PL_SAME_FN(3)
PL_SAME_FN(4)
#undef PL_SAME_FN

typedef void (*pl_same_fn)(const pl_same *, const pl_out *, const float *, const float *,
                           const float *, const float *, float *, size_t, size_t);

static pl_same_fn pl_same_fn_of(size_t nv) {
    static const pl_same_fn fns[PL_VECS] = {pl_same_1, pl_same_2, pl_same_3, pl_same_4};
    return fns[nv - 1];
}

/* ---- stride 2, 3x3 and 5x5, two output rows a vector --------------------------------------- */

/* Output rows per vector (the two sources of a permute). */
#define PL_S2_ROWS 2

typedef struct pl_s2 {
    size_t x_plane, y_plane, w_out, nv;
    int k; /* the window's side, 3 or 5 */
    /* input row 2i + kh - pad_top of output row i, at its column -pad_left */
    ptrdiff_t row_at[PL_VECS][PL_MAX_K][PL_S2_ROWS];
    __mmask16 row_m[PL_VECS][PL_MAX_K][PL_S2_ROWS]; /* its lanes inside x (none: a row outside) */
    __m512i pick[PL_MAX_K];                         /* tap kw: column 2j + kw of each row's load */
    __mmask16 keep[PL_VECS];                        /* lanes of vector v holding outputs */
} pl_s2;

/* A lane of a row's load that reads no input column (zero), -1 if none: a tap past the load
 * picks it. */
static int pl_s2_zero_lane(const kann_dwconv2d_args *a) {
    if (a->pad_left > 0) return 0;
    return a->w_in < 16 ? 15 : -1;
}

static int pl_s2_of(const kann_dwconv2d_args *a, pl_s2 *s) {
    uint32_t k = a->k_h;
    if ((k != 3 && k != 5) || a->k_w != k || a->stride_h != 2 || a->stride_w != 2 ||
        a->dil_h != 1 || a->dil_w != 1 || a->pad_top > k - 1 || a->pad_left > k - 1)
        return 0;
    size_t w_out = a->w_out, h_out = a->h_out;
    if (w_out == 0 || h_out == 0 || 2 * w_out > 16 || (h_out + 1) / 2 > PL_VECS) return 0;
    /* a row's load covers columns -pad_left .. 15 - pad_left: a tap past it must read padding
     * (columns from w_in on), taken from a lane of the load that reads none */
    int zero = pl_s2_zero_lane(a);
    for (size_t j = 0; j < w_out; j++)
        for (uint32_t kw = 0; kw < k; kw++)
            if (2 * j + kw > 15 &&
                (zero < 0 || (int64_t)(2 * j + kw) - a->pad_left < (int64_t)a->w_in))
                return 0;
    s->k = (int)k;
    s->x_plane = (size_t)a->h_in * a->w_in;
    s->y_plane = h_out * w_out;
    s->w_out = w_out;
    s->nv = (h_out + 1) / 2;
    __mmask16 cols = kann_lanes16((int64_t)a->pad_left, (int64_t)a->pad_left + a->w_in);
    for (size_t v = 0; v < s->nv; v++) {
        for (size_t kh = 0; kh < k; kh++)
            for (size_t r = 0; r < PL_S2_ROWS; r++) {
                size_t i = 2 * v + r;
                int64_t ih = 2 * (int64_t)i + (int64_t)kh - a->pad_top;
                int inside = i < h_out && ih >= 0 && ih < (int64_t)a->h_in;
                s->row_at[v][kh][r] = inside ? (ptrdiff_t)(ih * (int64_t)a->w_in - a->pad_left) : 0;
                s->row_m[v][kh][r] = inside ? cols : 0;
            }
        size_t rows = h_out - 2 * v < 2 ? h_out - 2 * v : 2;
        s->keep[v] = kann_lanes16(0, (int64_t)(rows * w_out));
    }
    for (int kw = 0; kw < (int)k; kw++) {
        int idx[16];
        for (size_t l = 0; l < 16; l++) {
            size_t j = l < w_out ? l : l - w_out;
            int col = (int)(2 * j) + kw; /* of the row's load */
            if (col > 15) col = zero;
            idx[l] = l < w_out ? col : l < 2 * w_out ? 16 + col : 0;
        }
        s->pick[kw] = _mm512_loadu_si512(idx);
    }
    return 1;
}

/* Channels c0 .. c0 + C - 1 (C = 1 or 2) of one image. */
static inline __attribute__((always_inline)) void
pl_s2_channels(const pl_s2 *s, const pl_out *o, const float *x, const float *w, const float *bias,
               const float *res, float *y, size_t c0, const int C, const int NV, const int K,
               int CLAMP) {
    __m512 acc[2][PL_VECS];
    pl_init(acc, bias, c0, C, NV);
#pragma GCC unroll 5
    for (int kh = 0; kh < K; kh++) {
#pragma GCC unroll 2
        for (int c = 0; c < C; c++) {
            const float *xc = x + (c0 + c) * s->x_plane;
            const float *wc = w + (c0 + c) * (size_t)(K * K) + kh * K;
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                __m512 r0 = _mm512_maskz_loadu_ps(s->row_m[v][kh][0], xc + s->row_at[v][kh][0]);
                __m512 r1 = _mm512_maskz_loadu_ps(s->row_m[v][kh][1], xc + s->row_at[v][kh][1]);
#pragma GCC unroll 5
                for (int kw = 0; kw < K; kw++)
                    acc[c][v] =
                        _mm512_fmadd_ps(_mm512_set1_ps(wc[kw]),
                                        _mm512_permutex2var_ps(r0, s->pick[kw], r1), acc[c][v]);
            }
        }
    }
    pl_store_all(o, acc, s->keep, y, res, s->y_plane, PL_S2_ROWS * s->w_out, c0, C, NV, CLAMP);
}

/* Channels [c_begin, c_end) of one image, two at a time; K: the window's side. */
static inline __attribute__((always_inline)) void
pl_s2_pairs(const pl_s2 *s, const pl_out *o, const float *x, const float *w, const float *bias,
            const float *res, float *y, size_t c_begin, size_t c_end, const int NV, const int K,
            int CLAMP) {
    size_t c = c_begin;
    for (; c + 2 <= c_end; c += 2)
        pl_s2_channels(s, o, x, w, bias, res, y, c, 2, NV, K, CLAMP);
    if (c < c_end) pl_s2_channels(s, o, x, w, bias, res, y, c, 1, NV, K, CLAMP);
}

static inline __attribute__((always_inline)) void
pl_s2_run(const pl_s2 *s, const pl_out *o, const float *x, const float *w, const float *bias,
          const float *res, float *y, size_t c_begin, size_t c_end, const int NV, int CLAMP) {
    if (s->k == 5)
        pl_s2_pairs(s, o, x, w, bias, res, y, c_begin, c_end, NV, 5, CLAMP);
    else
        pl_s2_pairs(s, o, x, w, bias, res, y, c_begin, c_end, NV, 3, CLAMP);
}

#define PL_S2_FN(NV)                                                                               \
    static __attribute__((noinline)) void pl_s2_##NV(                                              \
        const pl_s2 *s, const pl_out *o, const float *x, const float *w, const float *bias,        \
        const float *res, float *y, size_t c_begin, size_t c_end) {                                \
        if (o->clamp)                                                                              \
            pl_s2_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 1);                            \
        else                                                                                       \
            pl_s2_run(s, o, x, w, bias, res, y, c_begin, c_end, NV, 0);                            \
    }
PL_S2_FN(1)
PL_S2_FN(2)
PL_S2_FN(3)
PL_S2_FN(4)
#undef PL_S2_FN

typedef void (*pl_s2_fn)(const pl_s2 *, const pl_out *, const float *, const float *, const float *,
                         const float *, float *, size_t, size_t);

static pl_s2_fn pl_s2_fn_of(size_t nv) {
    static const pl_s2_fn fns[PL_VECS] = {pl_s2_1, pl_s2_2, pl_s2_3, pl_s2_4};
    return fns[nv - 1];
}

/* ---- entry ---------------------------------------------------------------------------------- */

int kann_dwconv2d_planes_avx512(const kann_dwconv2d_args *a, const kann_exec *ex,
                                const kann_dw_range *range) {
    kann_dw_range rg = *range;
    /* whole planes only: a tile along output rows goes to the other paths */
    if (rg.oh_begin != 0 || rg.oh_end != a->h_out || rg.c_begin >= rg.c_end) return 0;
    pl_same same;
    pl_s2 s2;
    pl_same_fn f_same = NULL;
    pl_s2_fn f_s2 = NULL;
    if (pl_same_of(a, &same)) {
        if (same.k == 5 && rg.c_end - rg.c_begin >= PL_SAME5_RING_CHANNELS) return 0;
        f_same = pl_same_fn_of(same.nv);
    } else if (pl_s2_of(a, &s2))
        f_s2 = pl_s2_fn_of(s2.nv);
    if (!f_same && !f_s2) return 0;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    pl_out o = {&a->act, kann_act_is_clamp(&a->act), kann_act_vectorizes(&a->act),
                _mm512_set1_ps(kann_act_clamp_lo(&a->act)), _mm512_set1_ps(kann_act_hi(&a->act))};
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    for (size_t n = 0; n < a->n; n++) {
        const float *xn = x + n * a->c_in * x_plane;
        const float *rn = res ? res + n * a->c_out * y_plane : NULL;
        float *yn = y + n * a->c_out * y_plane;
        if (f_same)
            f_same(&same, &o, xn, w, bias, rn, yn, rg.c_begin, rg.c_end);
        else
            f_s2(&s2, &o, xn, w, bias, rn, yn, rg.c_begin, rg.c_end);
    }
    return 1;
}
