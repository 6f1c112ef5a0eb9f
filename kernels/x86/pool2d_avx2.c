/* pool2d for AVX2: max and average pooling with 8 output pixels of a row per vector. A vector
 * whose taps all lie inside x (the rows' interior) loads each tap plainly, 8 columns (stride 1)
 * or 16 and a shuffle of the even ones (stride 2); at the row's ends the loads are masked and
 * the lanes outside x read as -inf (max) or 0 (average). Other strides, windows wider than 16
 * columns and huge coordinates run the reference. */
#include <math.h>

#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/window.h"
#include "pool2d_vec.h"

#define KANN_VEC_BITS 256
#include "vec_math.h"
#include "simd_act.h"
#include "maxpool_vec.h"

#define LANES 8
/* Output row width the vector path handles, in 8-column vectors. */
#define MAX_VECS 256

/* Lanes i of a vector whose column col + i lies in [0, w_in), as a load mask. */
static inline __m256i inside(int64_t col, int64_t w_in) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    /* col and w_in are below 2^40 (kann_pool2d_vector_path); the lane's column, relative to
     * col, against [-col, w_in - col), clamped into 32 bits */
    int64_t lo = -col, hi = w_in - col;
    lo = lo < -1 ? -1 : lo > LANES ? LANES : lo;
    hi = hi < 0 ? 0 : hi > LANES ? LANES : hi;
    __m256i ge_lo = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1));
    __m256i lt_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx);
    return _mm256_and_si256(ge_lo, lt_hi);
}

/* The 8 floats at p, -inf in the lanes m leaves out (which are not read). */
static inline __m256 load_or_neg_inf(const float *p, __m256i m) {
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(p, m),
                            _mm256_castsi256_ps(m));
}

/* The 8 floats at p, 0 in the lanes m leaves out (which are not read). */
static inline __m256 load_or_zero(const float *p, __m256i m) {
    return _mm256_maskload_ps(p, m);
}

/* Lanes 0, 2, .., 14 of the 16 floats (a, b). */
static inline __m256 even_lanes(__m256 a, __m256 b) {
    __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 a4 a6 b4 b6 */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* Lanes 1, 3, .., 15 of the 16 floats (a, b). */
static inline __m256 odd_lanes(__m256 a, __m256 b) {
    __m256 s = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* Output vector v (len of its lanes) of the row at yr, the activation applied (vec_act: in the
 * vector). */
static inline __attribute__((always_inline)) void store_vector(const kann_act *act, float *yr,
                                                               uint32_t v, int64_t len, __m256 acc,
                                                               int vec_act, __m256 lo, __m256 hi) {
    if (vec_act) acc = vf_act(acc, act, lo, hi);
    float *yv = yr + LANES * v;
    if (len == LANES)
        _mm256_storeu_ps(yv, acc);
    else
        _mm256_maskstore_ps(yv, inside(0, len), acc);
    if (!vec_act)
        for (int64_t j = 0; j < len; j++)
            yv[j] = kann_act_apply(act, yv[j]);
}

void kann_f32_pool2d_avx2(const void *args, const kann_exec *ex) {
    const kann_pool2d_args *a = args;
    if (!kann_pool2d_vector_path(a, LANES * MAX_VECS)) {
        kann_f32_pool2d_ref(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end || a->h_out == 0 || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m256 lo = _mm256_set1_ps(kann_act_lo(act)), hi = _mm256_set1_ps(kann_act_hi(act));
    int64_t w_in = a->w_in, s_w = a->stride_w;
    uint32_t n_vecs = (a->w_out + LANES - 1) / LANES;
    /* per vector of a row: which outputs have a window column inside x (the others give 0, as
     * in the reference), the same for every row and plane */
    uint8_t has_cols[MAX_VECS];
    /* an average's divisor: the rows counted times cols_counted, per output column */
    int avg = a->kind == KANN_POOL_AVG, count_pad = avg && a->count_include_pad;
    __m256 cols_counted[MAX_VECS];
    for (uint32_t v = 0; v < n_vecs; v++) {
        int64_t len = a->w_out - LANES * v < LANES ? a->w_out - LANES * v : LANES;
        has_cols[v] = 0;
        float cols[LANES] = {0};
        for (int64_t j = 0; j < len; j++) {
            int64_t iw = (int64_t)v * LANES * s_w - a->pad_left + j * s_w;
            kann_range r = kann_window_range(iw, a->dil_w, 0, w_in, a->k_w);
            if (r.hi > r.lo) has_cols[v] |= (uint8_t)(1u << j);
            cols[j] = (float)kann_pool_taps_counted(iw, a->dil_w, a->k_w, a->w_in, a->pad_left,
                                                    a->pad_right, count_pad);
        }
        cols_counted[v] = _mm256_loadu_ps(cols);
    }
    /* a max pool whose every output has a window column inside x: row by row through
     * maxpool_vec.h (squeezenet1_1's 3x3 stride-2 pools: 128 x 55 x 55 0.243 -> 0.137 ms), the
     * outputs of a window with no row inside x 0, as in the reference */
    int all_cols = 1;
    for (uint32_t v = 0; v < n_vecs; v++) {
        int64_t len = a->w_out - LANES * v < LANES ? a->w_out - LANES * v : LANES;
        all_cols &= has_cols[v] == (uint8_t)((1u << len) - 1u);
    }
    int fast = !avg && all_cols && a->dil_w == 1 && a->k_h <= 16 &&
               maxpool_vec_fits(a->w_in, a->pad_left, a->k_w, (size_t)s_w, a->w_out);
    float row[MAXPOOL_ROW_FLOATS];
    const float *rows[16];
    if (fast) maxpool_vec_pad(row, a->pad_left, a->w_in, maxpool_vec_need(a->w_out, a->k_w, s_w));
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    /* 3 columns, stride 2, dilation 1 (resnet18's and squeezenet1_1's max pools): in the rows'
     * interior, the running max over the window rows of columns 0..15 and 1..16 (four loads a
     * row), then output j takes columns 2j, 2j + 1 and 2j + 2 from their even and odd lanes */
    int shared3 = !avg && s_w == 2 && a->k_w == 3 && a->dil_w == 1;
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * x_plane;
        for (uint32_t oh = 0; oh < a->h_out; oh++) {
            int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
            kann_range kh = kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
            float *yr = y + p * y_plane + (size_t)oh * a->w_out;
            if (fast) {
                for (uint32_t t = kh.lo; t < kh.hi; t++)
                    rows[t - kh.lo] = xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in;
                if (kh.hi > kh.lo)
                    maxpool_vec_row(rows, kh.hi - kh.lo, a->w_in, a->pad_left, a->k_w, (size_t)s_w,
                                    a->w_out, row, yr);
                else
                    for (uint32_t j = 0; j < a->w_out; j++)
                        yr[j] = 0.0f;
                if (act->kind != KANN_ACT_NONE)
                    for (uint32_t v = 0; v < n_vecs; v++) {
                        int64_t len = a->w_out - LANES * v < LANES ? a->w_out - LANES * v : LANES;
                        __m256 got = _mm256_maskload_ps(yr + LANES * v, inside(0, len));
                        store_vector(act, yr, v, len, got, vec_act, lo, hi);
                    }
                continue;
            }
            __m256 rows_counted = _mm256_setzero_ps();
            if (avg)
                rows_counted = _mm256_set1_ps((float)kann_pool_taps_counted(
                    ih0, a->dil_h, a->k_h, a->h_in, a->pad_top, a->pad_bottom, count_pad));
            for (uint32_t v = 0; v < n_vecs; v++) {
                int64_t len = a->w_out - LANES * v < LANES ? a->w_out - LANES * v : LANES;
                int64_t iw_base = (int64_t)v * LANES * s_w - a->pad_left;
                /* the columns the vector's taps read: [iw_base, iw_base + span) */
                int64_t span = (len - 1) * s_w + (int64_t)(a->k_w - 1) * a->dil_w + 1 + (s_w == 2);
                int whole = len == LANES && iw_base >= 0 && iw_base + span <= w_in;
                /* one running max per other tap column: independent chains */
                __m256 acc = neg_inf, acc1 = neg_inf;
                if (avg) {
                    /* the taps column after column over the rows inside x, in the reference's
                     * order (its sums to the bit); a window that counts nothing gives 0 */
                    acc = _mm256_setzero_ps();
                    for (uint32_t kw = 0; kw < a->k_w; kw++) {
                        int64_t iw0 = iw_base + (int64_t)kw * a->dil_w;
                        __m256i m0 = inside(iw0, w_in), m1 = inside(iw0 + 8, w_in);
                        for (uint32_t t = kh.lo; t < kh.hi; t++) {
                            const float *xc =
                                xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in + iw0;
                            __m256 e;
                            if (whole)
                                e = s_w == 1
                                        ? _mm256_loadu_ps(xc)
                                        : even_lanes(_mm256_loadu_ps(xc), _mm256_loadu_ps(xc + 8));
                            else if (s_w == 1)
                                e = load_or_zero(xc, m0);
                            else
                                e = even_lanes(load_or_zero(xc, m0), load_or_zero(xc + 8, m1));
                            acc = _mm256_add_ps(acc, e);
                        }
                    }
                    __m256 n = _mm256_mul_ps(rows_counted, cols_counted[v]);
                    acc = _mm256_and_ps(_mm256_div_ps(acc, n),
                                        _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_NEQ_UQ));
                    store_vector(act, yr, v, len, acc, vec_act, lo, hi);
                    continue;
                }
                /* no tap column inside x: no row to visit (the outputs are 0) */
                uint32_t t_lo = has_cols[v] ? kh.lo : kh.hi;
                if (shared3 && whole) {
                    __m256 c0 = neg_inf, c8 = neg_inf, c1 = neg_inf, c9 = neg_inf;
                    for (uint32_t t = t_lo; t < kh.hi; t++) {
                        const float *xc =
                            xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in + iw_base;
                        /* NaN inputs are skipped, as in the reference */
                        c0 = _mm256_max_ps(_mm256_loadu_ps(xc), c0);
                        c8 = _mm256_max_ps(_mm256_loadu_ps(xc + 8), c8);
                        c1 = _mm256_max_ps(_mm256_loadu_ps(xc + 1), c1);
                        c9 = _mm256_max_ps(_mm256_loadu_ps(xc + 9), c9);
                    }
                    acc = _mm256_max_ps(even_lanes(c0, c8), odd_lanes(c0, c8));
                    acc1 = odd_lanes(c1, c9);
                }
                for (uint32_t t = shared3 && whole ? kh.hi : t_lo; t < kh.hi; t++) {
                    const float *xr = xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in;
                    for (uint32_t kw = 0; kw < a->k_w; kw++) {
                        int64_t iw0 = iw_base + (int64_t)kw * a->dil_w;
                        const float *xc = xr + iw0;
                        __m256 e;
                        if (whole)
                            e = s_w == 1 ? _mm256_loadu_ps(xc)
                                         : even_lanes(_mm256_loadu_ps(xc), _mm256_loadu_ps(xc + 8));
                        else if (s_w == 1)
                            e = load_or_neg_inf(xc, inside(iw0, w_in));
                        else
                            e = even_lanes(load_or_neg_inf(xc, inside(iw0, w_in)),
                                           load_or_neg_inf(xc + 8, inside(iw0 + 8, w_in)));
                        /* NaN inputs are skipped, as in the reference */
                        if (kw & 1)
                            acc1 = _mm256_max_ps(e, acc1);
                        else
                            acc = _mm256_max_ps(e, acc);
                    }
                }
                acc = _mm256_max_ps(acc1, acc);
                /* outputs with no window column inside x, or no window row, are 0 */
                uint32_t keep = kh.hi > kh.lo ? has_cols[v] : 0;
                if (keep != 0xff) {
                    __m256i k = _mm256_and_si256(_mm256_set1_epi32((int)keep), bit);
                    acc = _mm256_and_ps(acc, _mm256_castsi256_ps(_mm256_cmpeq_epi32(k, bit)));
                }
                store_vector(act, yr, v, len, acc, vec_act, lo, hi);
            }
        }
    }
}
