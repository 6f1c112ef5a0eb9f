/* dwconv2d for AVX2 + FMA: 8 output pixels of one row per vector; each tap is one masked load
 * of the input row (stride 1) or a masked gather (other strides), so the padding needs no
 * branches. Bias, residual and activation at the store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/window.h"
#include "simd_act.h"

static inline __m256i iota8(void) {
    return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
}

/* Lanes i with lo <= i < hi, as a maskload mask. */
static inline __m256i lanes(int64_t lo, int64_t hi) {
    if (lo < -1) lo = -1;
    if (lo > 8) lo = 8;
    if (hi < 0) hi = 0;
    if (hi > 8) hi = 8;
    __m256i i = iota8();
    return _mm256_and_si256(_mm256_cmpgt_epi32(i, _mm256_set1_epi32((int)lo - 1)),
                            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), i));
}

static inline __m256 load_taps(const float *x_row, int64_t iw0, uint32_t stride, uint32_t w_in,
                               uint32_t len) {
    if (stride == 1) {
        __m256i m = _mm256_and_si256(lanes(-iw0, (int64_t)w_in - iw0), lanes(0, len));
        return _mm256_maskload_ps(x_row + iw0, m);
    }
    __m256i idx = _mm256_add_epi32(_mm256_mullo_epi32(iota8(), _mm256_set1_epi32((int)stride)),
                                   _mm256_set1_epi32((int)iw0));
    __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(-1)),
                                  _mm256_cmpgt_epi32(_mm256_set1_epi32((int)w_in), idx));
    ok = _mm256_and_si256(ok, lanes(0, len));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), x_row, idx, _mm256_castsi256_ps(ok), 4);
}

/* The gather path forms int32 lane indices: keep every input column they can name in range,
 * or let the reference (64-bit coordinates) handle the layer. */
static int columns_fit_i32(const kann_dwconv2d_args *a) {
    uint64_t reach =
        (uint64_t)a->w_out * a->stride_w + (uint64_t)a->k_w * a->dil_w + a->pad_left + a->w_in + 64;
    return reach < ((uint64_t)1 << 30);
}

void kann_f32_dwconv2d_avx2(const void *args, const kann_exec *ex) {
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
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    size_t taps = (size_t)a->k_h * a->k_w;
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m256 lo = _mm256_set1_ps(kann_act_lo(act)), hi = _mm256_set1_ps(kann_act_hi(act));
    for (size_t n = 0; n < a->n; n++) {
        for (size_t c = c_begin; c < c_end; c++) {
            const float *xc = x + (n * a->c_in + c) * x_plane, *wc = w + c * taps;
            size_t y_base = (n * a->c_out + c) * y_plane;
            __m256 b0 = _mm256_set1_ps(bias ? bias[c] : 0.0f);
            for (uint32_t oh = oh_begin; oh < oh_end; oh++) {
                int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
                kann_range kh_ok = kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
                float *yr = y + y_base + (size_t)oh * a->w_out;
                const float *rr = res ? res + y_base + (size_t)oh * a->w_out : NULL;
                for (uint32_t ow0 = 0; ow0 < a->w_out; ow0 += 8) {
                    uint32_t len = a->w_out - ow0 < 8 ? a->w_out - ow0 : 8;
                    __m256 acc = b0;
                    int64_t iw_base = (int64_t)ow0 * a->stride_w - a->pad_left;
                    for (uint32_t kh = kh_ok.lo; kh < kh_ok.hi; kh++) {
                        const float *xr = xc + (size_t)(ih0 + (int64_t)kh * a->dil_h) * a->w_in;
                        const float *wk = wc + (size_t)kh * a->k_w;
                        for (uint32_t kw = 0; kw < a->k_w; kw++) {
                            __m256 v = load_taps(xr, iw_base + (int64_t)kw * a->dil_w, a->stride_w,
                                                 a->w_in, len);
                            acc = _mm256_fmadd_ps(_mm256_set1_ps(wk[kw]), v, acc);
                        }
                    }
                    __m256i m = lanes(0, len);
                    if (rr) acc = _mm256_add_ps(acc, _mm256_maskload_ps(rr + ow0, m));
                    if (vec_act) acc = kann_act256(acc, act, lo, hi);
                    _mm256_maskstore_ps(yr + ow0, m, acc);
                    if (!vec_act)
                        for (uint32_t j = 0; j < len; j++)
                            yr[ow0 + j] = kann_act_apply(act, yr[ow0 + j]);
                }
            }
        }
    }
}
