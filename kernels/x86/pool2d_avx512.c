/* pool2d for AVX-512: max pooling with 16 output pixels of a row per vector, each tap one masked
 * load (stride 1) or two and an even-lane permute (stride 2), or for 3 columns at stride 2 four
 * loads per window row shared by the taps, padding loaded as -inf, the column masks computed
 * once per call. Average pooling, other strides, windows wider than 16 columns,
 * rows wider than 1024 and huge coordinates run the reference. */
#include <math.h>

#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/window.h"
#include "pool2d_vec.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"

/* Lanes i in [lo, hi) of 16. */
static inline __mmask16 lanes(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

/* Window width the vector path handles (its column masks live on the stack). */
#define MAX_KW KANN_POOL_VEC_MAX_KW
/* Output row width it handles, in 16-column vectors. */
#define MAX_VECS 64

void kann_f32_pool2d_avx512(const void *args, const kann_exec *ex) {
    const kann_pool2d_args *a = args;
    if (!kann_pool2d_vector_path(a, 16 * MAX_VECS)) {
        kann_f32_pool2d_ref(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end || a->h_out == 0 || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    int64_t w_in = a->w_in;
    int stride2 = a->stride_w == 2;
    /* per 16-column vector of a row: which outputs have a window column inside x (the others
     * give 0, as in the reference) and the taps' column masks, the same for every row and
     * plane */
    uint32_t n_vecs = (a->w_out + 15) / 16;
    __mmask16 has_cols[MAX_VECS], masks[MAX_VECS][MAX_KW][2];
    int64_t first[MAX_VECS][MAX_KW];
    uint32_t n_kw[MAX_VECS];
    for (uint32_t v = 0; v < n_vecs; v++) {
        int64_t len = a->w_out - 16 * v < 16 ? a->w_out - 16 * v : 16;
        int64_t iw_base = (int64_t)v * 16 * a->stride_w - a->pad_left;
        has_cols[v] = 0;
        for (int64_t j = 0; j < len; j++) {
            kann_range r = kann_window_range(iw_base + j * a->stride_w, a->dil_w, 0, w_in, a->k_w);
            if (r.hi > r.lo) has_cols[v] |= (__mmask16)(1u << j);
        }
        n_kw[v] = 0;
        for (uint32_t kw = 0; kw < a->k_w; kw++) {
            int64_t iw0 = iw_base + (int64_t)kw * a->dil_w;
            __mmask16 m0, m1 = 0;
            if (!stride2) {
                m0 = lanes(-iw0, w_in - iw0) & lanes(0, len);
            } else {
                int64_t end = 2 * len - 1;
                m0 = lanes(-iw0, w_in - iw0) & lanes(0, end);
                m1 = lanes(-iw0 - 16, w_in - iw0 - 16) & lanes(0, end - 16);
            }
            if (!m0 && !m1) continue;
            masks[v][n_kw[v]][0] = m0;
            masks[v][n_kw[v]][1] = m1;
            first[v][n_kw[v]++] = iw0;
        }
    }
    /* 3 columns, stride 2, dilation 1 (resnet18's and squeezenet1_1's max pools): per window
     * row, the 33 columns 16 outputs read as columns 0..31 and 1..32 (four masked loads, their
     * running max over the rows), then output j takes columns 2j, 2j + 1 and 2j + 2 by three
     * permutes: 4 loads a row instead of 6 loads and 3 permutes */
    int shared3 = stride2 && a->k_w == 3 && a->dil_w == 1;
    __mmask16 cols3[MAX_VECS][4];
    for (uint32_t v = 0; shared3 && v < n_vecs; v++) {
        int64_t len = a->w_out - 16 * v < 16 ? a->w_out - 16 * v : 16;
        int64_t iw_base = (int64_t)v * 32 - a->pad_left, end = 2 * len + 1; /* columns read */
        for (int q = 0; q < 4; q++) {
            int64_t off = (q & 1) * 16 + (q >> 1); /* 0, 16, 1, 17 */
            cols3[v][q] = lanes(-iw_base - off, w_in - iw_base - off) & lanes(0, end - off);
        }
    }
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * x_plane;
        for (uint32_t oh = 0; oh < a->h_out; oh++) {
            int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
            kann_range kh = kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
            float *yr = y + p * y_plane + (size_t)oh * a->w_out;
            for (uint32_t v = 0; v < n_vecs; v++) {
                /* one running max per other tap column: independent chains */
                __m512 acc = neg_inf, acc1 = neg_inf;
                if (shared3) {
                    __m512 c0 = neg_inf, c16 = neg_inf, c1 = neg_inf, c17 = neg_inf;
                    const __mmask16 *m = cols3[v];
                    for (uint32_t t = kh.lo; t < kh.hi; t++) {
                        const float *xc = xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in +
                                          ((int64_t)v * 32 - a->pad_left);
                        /* NaN inputs are skipped, as in the reference */
                        c0 = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, m[0], xc), c0);
                        c16 = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, m[1], xc + 16), c16);
                        c1 = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, m[2], xc + 1), c1);
                        c17 = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, m[3], xc + 17), c17);
                    }
                    acc = _mm512_max_ps(_mm512_permutex2var_ps(c0, even, c16),
                                        _mm512_permutex2var_ps(c0, odd, c16));
                    acc1 = _mm512_permutex2var_ps(c1, odd, c17);
                }
                /* no tap column inside x: no row to visit (the outputs are 0) */
                for (uint32_t t = n_kw[v] && !shared3 ? kh.lo : kh.hi; t < kh.hi; t++) {
                    const float *xr = xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in;
                    for (uint32_t i = 0; i < n_kw[v]; i++) {
                        const float *xc = xr + first[v][i];
                        __m512 e = _mm512_mask_loadu_ps(neg_inf, masks[v][i][0], xc);
                        if (stride2)
                            e = _mm512_permutex2var_ps(
                                e, even, _mm512_mask_loadu_ps(neg_inf, masks[v][i][1], xc + 16));
                        /* NaN inputs are skipped, as in the reference */
                        if (i & 1)
                            acc1 = _mm512_max_ps(e, acc1);
                        else
                            acc = _mm512_max_ps(e, acc);
                    }
                }
                acc =
                    _mm512_maskz_mov_ps(kh.hi > kh.lo ? has_cols[v] : 0, _mm512_max_ps(acc1, acc));
                if (vec_act) acc = vf_act(acc, act, lo, hi);
                uint32_t len = a->w_out - 16 * v < 16 ? a->w_out - 16 * v : 16;
                _mm512_mask_storeu_ps(yr + 16 * v, lanes(0, len), acc);
                if (!vec_act)
                    for (uint32_t j = 0; j < len; j++)
                        yr[16 * v + j] = kann_act_apply(act, yr[16 * v + j]);
            }
        }
    }
}
