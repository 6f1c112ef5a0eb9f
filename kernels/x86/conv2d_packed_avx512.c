/* conv2d_packed for AVX-512: a 12 x 32 register tile (24 ZMM accumulators) over one weight
 * panel and a 32-column strip of B, bias, residual and activation fused into the store. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"
#include "simd_act.h"

#define NR 32

/* Lanes [lo, hi) of a 16-lane half as a mask (0 <= lo <= hi <= 16). */
static inline __mmask16 lanes(size_t lo, size_t hi) {
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* One row's two vectors through the segments of a wide strip: lanes outside every segment
 * (columns of the wide grid past w_out) are dropped; each segment's lanes are packed together
 * (compress) and stored at its place in y, the residual unpacked (expand) to meet them. */
static inline void store_segments(const kann_conv_tile *t, size_t r, __m512 v0, __m512 v1,
                                  int vec_act, __m512 lo, __m512 hi) {
    float *y = t->y + r * t->ldy;
    const float *res = t->res ? t->res + r * t->ldy : NULL;
    for (size_t s = 0; s < t->n_segments; s++) {
        const kann_conv_segment *sg = &t->segments[s];
        for (size_t half = 0; half < 2; half++) {
            size_t a = sg->lo > 16 * half ? sg->lo - 16 * half : 0;
            size_t b = sg->hi < 16 * half + 16 ? sg->hi - 16 * half : 16;
            if (sg->hi <= 16 * half || a >= b) continue;
            __mmask16 m = lanes(a, b), packed = lanes(0, b - a);
            size_t at = sg->at + (16 * half + a - sg->lo);
            __m512 v = half ? v1 : v0;
            if (res)
                v = _mm512_add_ps(
                    v, _mm512_maskz_expand_ps(m, _mm512_maskz_loadu_ps(packed, res + at)));
            if (vec_act) v = kann_act512(v, t->act, lo, hi);
            _mm512_mask_storeu_ps(y + at, packed, _mm512_maskz_compress_ps(m, v));
            if (!vec_act)
                for (size_t j = 0; j < b - a; j++)
                    y[at + j] = kann_act_apply(t->act, y[at + j]);
        }
    }
}

/* The last block's store: bias, residual and activation; contiguous or by segments. */
static __attribute__((noinline)) void epilogue(const kann_conv_tile *t,
                                               __m512 c[KANN_CONV_PANEL][2]) {
    size_t n = t->n;
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
    const kann_act *act = t->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    for (size_t r = 0; r < t->mr; r++) {
        float *y = t->y + r * t->ldy;
        __m512 v0 = c[r][0], v1 = c[r][1];
        if (t->bias) {
            __m512 bv = _mm512_set1_ps(t->bias[r]);
            v0 = _mm512_add_ps(v0, bv);
            v1 = _mm512_add_ps(v1, bv);
        }
        if (t->n_segments) {
            store_segments(t, r, v0, v1, vec_act, lo, hi);
            continue;
        }
        if (t->res) {
            const float *res = t->res + r * t->ldy;
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, res));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, res + 16));
        }
        if (vec_act) {
            v0 = kann_act512(v0, act, lo, hi);
            v1 = kann_act512(v1, act, lo, hi);
        }
        _mm512_mask_storeu_ps(y, m0, v0);
        _mm512_mask_storeu_ps(y + 16, m1, v1);
        if (!vec_act)
            for (size_t j = 0; j < n; j++)
                y[j] = kann_act_apply(act, y[j]);
    }
}

/* The register tile for the first `rows` channels of the panel (4, 8 or 12: a panel's last
 * rows past c_out are not computed). */
static inline __attribute__((always_inline)) void tile_rows(const kann_conv_tile *t, int rows) {
    __m512 c[KANN_CONV_PANEL][2];
    size_t n = t->n;
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
        c[r][0] = c[r][1] = _mm512_setzero_ps();
        if (!t->first && (size_t)r < t->mr) { /* continue the partial sums in y */
            c[r][0] = _mm512_maskz_loadu_ps(m0, t->y + r * t->ldy);
            c[r][1] = _mm512_maskz_loadu_ps(m1, t->y + r * t->ldy + 16);
        }
    }
    const float *w = t->w;
    const ptrdiff_t *taps = t->taps;
    size_t n_taps = t->n_taps, b_stride = t->b_stride;
    for (size_t g = 0; g < t->n_groups; g++) {
        const float *bg = t->b + g * b_stride;
        for (size_t tap = 0; tap < n_taps; tap++, w += KANN_CONV_PANEL) {
            const float *b = bg + taps[tap];
            /* the same B columns two groups on (in a wide strip: two channels on) */
            _mm_prefetch((const char *)(b + 2 * b_stride), _MM_HINT_T0);
            _mm_prefetch((const char *)(b + 2 * b_stride + 31), _MM_HINT_T0);
            __m512 b0 = _mm512_maskz_loadu_ps(m0, b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
#pragma GCC unroll 12
            for (int r = 0; r < rows; r++) {
                __m512 a = _mm512_set1_ps(w[r]);
                c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
                c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
            }
        }
    }
    if (!t->last) {
#pragma GCC unroll 12
        for (int r = 0; r < rows; r++) {
            if ((size_t)r >= t->mr) break;
            _mm512_mask_storeu_ps(t->y + r * t->ldy, m0, c[r][0]);
            _mm512_mask_storeu_ps(t->y + r * t->ldy + 16, m1, c[r][1]);
        }
        return;
    }
    /* The epilogue is a call of its own: inlined, its registers would push accumulators of
     * the loop above onto the stack. */
    __m512 out[KANN_CONV_PANEL][2];
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
        out[r][0] = c[r][0];
        out[r][1] = c[r][1];
    }
    epilogue(t, out);
}

static void microkernel_12x32(const kann_conv_tile *t) {
    if (t->mr > 8)
        tile_rows(t, 12);
    else if (t->mr > 4)
        tile_rows(t, 8);
    else
        tile_rows(t, 4);
}

void kann_f32_conv2d_packed_12x32_avx512(const void *args, const kann_exec *ex) {
    kann_conv2d_packed_drive(args, ex, NR, microkernel_12x32);
}
