/* dwblock's lanes path (AVX-512): the expansion and the depthwise conv with 16 channels in the
 * lanes, so that the depthwise taps read the expanded rows as they were computed, one vector
 * of channels per pixel, without the channel planes' fill and transposes the band path's
 * depthwise conv pays (the stride-2 convs over 112x112 maps wait on it: docs/performance.md).
 *
 * The blocks of 16 channels go in groups of at most four, as even as they come. For each group,
 * every input row a window reads is expanded once into the group's rings of k_h rows
 * ([block][row % k_h][column][16], the padding columns zero): per pass 6, 8 or 12 pixels of one
 * row by 4, 3 or 2 blocks (24 accumulators), one broadcast of x per pixel and one weight vector
 * per block each reduction step. Each output row then takes its taps from the rings, 16 pixels
 * at a time, and goes to the band's d planes through one transpose; the projection runs on the
 * band as in the band path. The weights are repacked into blocks of 16 channels in the scratch
 * once per call. */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "kann_x86.h"
#include "ref/conv2d_packed.h"
#include "ref/dwblock.h"
#include "transpose_avx512.h"

#define LANES KANN_DWBLOCK_LANES
#define PIXELS KANN_DWBLOCK_LANES_PIXELS
#define GROUP 4       /* blocks an expansion pass computes at most */
#define MAX_PIXELS 12 /* pixels it takes at most */

typedef struct lanes {
    const kann_dwblock_args *a;
    const float *x;
    size_t plane;             /* floats of an x plane */
    const float *we, *be;     /* repacked: [block][c_in][16], [block][16] */
    const float *wd, *bd;     /* [block][k_h * k_w][16], [block][16] */
    float *ring;              /* [block][k_h][cols][16] */
    size_t cols, slot, block; /* ring columns; floats of a ring row and of a block's ring */
    int clamp_exp, clamp_dw;  /* the activation is a clamp (max, min) */
    vf lo_exp, hi_exp, lo_dw, hi_dw;
} lanes;

static inline __attribute__((always_inline)) vf act_out(vf v, const kann_act *act, int clamp, vf lo,
                                                        vf hi) {
    return clamp ? vf_min(hi, vf_max(lo, v)) : vf_act(v, act, lo, hi);
}

/* The expansion of np pixels of one x row (xr: their first in plane 0) for nb blocks from block
 * b0, into the ring at column pointer r (block 0's; the others l->block floats on); CLAMP: the
 * activation is a clamp. */
static inline __attribute__((always_inline)) void
expand_pass(const lanes *l, const float *xr, size_t b0, int nb, int np, float *r, int CLAMP) {
    const size_t c_in = l->a->c_in, plane = l->plane;
    const float *w = l->we + b0 * c_in * LANES;
    __m512 acc[GROUP][MAX_PIXELS];
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++) {
        __m512 bias = _mm512_loadu_ps(l->be + (b0 + (size_t)b) * LANES);
#pragma GCC unroll 12
        for (int p = 0; p < np; p++)
            acc[b][p] = bias;
    }
    for (size_t k = 0; k < c_in; k++) {
        __m512 wv[GROUP];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++)
            wv[b] = _mm512_loadu_ps(w + ((size_t)b * c_in + k) * LANES);
        const float *xk = xr + k * plane;
#pragma GCC unroll 12
        for (int p = 0; p < np; p++) {
            __m512 xv = _mm512_set1_ps(xk[p]);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++)
                acc[b][p] = _mm512_fmadd_ps(wv[b], xv, acc[b][p]);
        }
    }
#pragma GCC unroll 4
    for (int b = 0; b < nb; b++)
#pragma GCC unroll 12
        for (int p = 0; p < np; p++)
            _mm512_storeu_ps(r + (size_t)b * l->block + (size_t)p * LANES,
                             act_out(acc[b][p], &l->a->act_exp, CLAMP, l->lo_exp, l->hi_exp));
}

/* Input row iy of blocks [b0, b0 + nb) into their rings: passes of np pixels, the last one moved
 * back to end at the row's end (its first pixels computed twice). */
static inline __attribute__((always_inline)) void
expand_row_of(const lanes *l, size_t iy, size_t b0, int nb, int np, int CLAMP) {
    const size_t w_in = l->a->w_in;
    const float *xr = l->x + iy * w_in;
    float *r = l->ring + b0 * l->block + iy % l->a->k_h * l->slot + (size_t)l->a->pad_left * LANES;
    for (size_t x0 = 0;; x0 += (size_t)np) {
        if (x0 + (size_t)np > w_in) x0 = w_in - (size_t)np;
        expand_pass(l, xr + x0, b0, nb, np, r + x0 * LANES, CLAMP);
        if (x0 + (size_t)np >= w_in) break;
    }
}

/* The pixels an expansion pass of nb blocks takes where the row has them: 24 accumulators. */
static int pass_pixels(int nb, size_t w_in) {
    int np = nb == 4 ? 6 : nb == 3 ? 8 : 12;
    return w_in >= (size_t)np ? np : PIXELS;
}

#define EXPAND_CASE(NB, NP)                                                                        \
    case NB * 16 + NP:                                                                             \
        if (l->clamp_exp)                                                                          \
            expand_row_of(l, iy, b0, NB, NP, 1);                                                   \
        else                                                                                       \
            expand_row_of(l, iy, b0, NB, NP, 0);                                                   \
        break;

static void expand_row(const lanes *l, size_t iy, size_t b0, int nb) {
    switch (nb * 16 + pass_pixels(nb, l->a->w_in)) {
        EXPAND_CASE(4, 6)
        EXPAND_CASE(3, 8)
        EXPAND_CASE(3, 6)
        EXPAND_CASE(2, 12)
        EXPAND_CASE(2, 6)
        EXPAND_CASE(1, 12)
    default:
        EXPAND_CASE(1, 6)
    }
}

/* One ring row's taps for 16 outputs of a 3-column window at stride S (1 or 2): each of the
 * 15 S + 3 columns loaded once and used by every output whose window holds it (48 FMAs for 18
 * or 33 loads, against 48 loads tap by tap). */
static inline __attribute__((always_inline)) void taps3(__m512 *acc, const float *rt,
                                                        const float *w, int S) {
    const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + LANES);
    const __m512 w2 = _mm512_loadu_ps(w + 2 * LANES);
#pragma GCC unroll 40
    for (int j = 0; j < 15 * S + 3; j++) {
        __m512 v = _mm512_loadu_ps(rt + (size_t)j * LANES);
        __asm__("" : "+v"(v)); /* one load in a register, not one folded into each FMA */
        if (j % S == 0 && j / S < 16) acc[j / S] = _mm512_fmadd_ps(w0, v, acc[j / S]);
        if (j >= 1 && (j - 1) % S == 0 && (j - 1) / S < 16)
            acc[(j - 1) / S] = _mm512_fmadd_ps(w1, v, acc[(j - 1) / S]);
        if (j >= 2 && (j - 2) % S == 0 && (j - 2) / S < 16)
            acc[(j - 2) / S] = _mm512_fmadd_ps(w2, v, acc[(j - 2) / S]);
    }
}

/* Output row oy of block b into row `row` of the band's d planes (d_plane floats apart);
 * CLAMP: the activation is a clamp; S3: 0, or the stride (1 or 2) of a 3-column window. */
static inline __attribute__((always_inline)) void depthwise_row_of(const lanes *l, size_t oy,
                                                                   size_t b, float *d,
                                                                   size_t d_plane, size_t row,
                                                                   int CLAMP, int S3) {
    const kann_dwblock_args *a = l->a;
    const size_t k_h = a->k_h, k_w = a->k_w, s = a->stride_w, w_out = a->w_out;
    const int64_t top = (int64_t)oy * a->stride_h - a->pad_top;
    size_t dy0 = top < 0 ? (size_t)-top : 0, dy1 = k_h;
    if (top + (int64_t)k_h > (int64_t)a->h_in) dy1 = (size_t)((int64_t)a->h_in - top);
    const size_t slot0 = (size_t)(top + (int64_t)dy0) % k_h; /* the ring row of window row dy0 */
    const float *wd = l->wd + b * k_h * k_w * LANES, *ring = l->ring + b * l->block;
    const __m512 bias = _mm512_loadu_ps(l->bd + b * LANES);
    size_t channels = a->c_mid - b * LANES < LANES ? a->c_mid - b * LANES : LANES;
    float *out = d + b * LANES * d_plane + row * w_out;
    for (size_t ox0 = 0; ox0 < w_out; ox0 += 16) {
        __m512 acc[16];
        for (int p = 0; p < 16; p++)
            acc[p] = bias;
        for (size_t dy = dy0, slot = slot0; dy < dy1; dy++, slot = slot + 1 == k_h ? 0 : slot + 1) {
            const float *rr = ring + slot * l->slot + ox0 * s * LANES;
            if (S3) {
                taps3(acc, rr, wd + dy * 3 * LANES, S3);
                continue;
            }
            for (size_t dx = 0; dx < k_w; dx++) {
                __m512 w = _mm512_loadu_ps(wd + (dy * k_w + dx) * LANES);
                const float *rt = rr + dx * LANES;
                for (int p = 0; p < 16; p++)
                    acc[p] =
                        _mm512_fmadd_ps(w, _mm512_loadu_ps(rt + (size_t)p * s * LANES), acc[p]);
            }
        }
        for (int p = 0; p < 16; p++)
            acc[p] = act_out(acc[p], &a->act_dw, CLAMP, l->lo_dw, l->hi_dw);
        kann_transpose16_ps(acc);
        size_t n = w_out - ox0 < 16 ? w_out - ox0 : 16;
        __mmask16 m = (__mmask16)((1u << n) - 1);
        for (size_t c = 0; c < channels; c++)
            _mm512_mask_storeu_ps(out + c * d_plane + ox0, m, acc[c]);
    }
}

#define DEPTHWISE_CASE(CLAMP, S3)                                                                  \
    case CLAMP * 4 + S3:                                                                           \
        depthwise_row_of(l, oy, b, d, d_plane, row, CLAMP, S3);                                    \
        break;

static void depthwise_row(const lanes *l, size_t oy, size_t b, float *d, size_t d_plane,
                          size_t row) {
    int s3 = l->a->k_w == 3 && l->a->stride_w <= 2 ? (int)l->a->stride_w : 0;
    switch ((l->clamp_dw ? 4 : 0) + s3) {
        DEPTHWISE_CASE(1, 1)
        DEPTHWISE_CASE(1, 2)
        DEPTHWISE_CASE(1, 0)
        DEPTHWISE_CASE(0, 1)
        DEPTHWISE_CASE(0, 2)
    default:
        DEPTHWISE_CASE(0, 0)
    }
}

/* The weights in blocks of 16 channels (the last block's extra channels zero), the rings'
 * padding columns zeroed. */
static void lanes_setup(lanes *l, const kann_exec *ex) {
    const kann_dwblock_args *a = l->a;
    const size_t c_in = a->c_in, c_mid = a->c_mid, taps = (size_t)a->k_h * a->k_w;
    const size_t blocks = (c_mid + LANES - 1) / LANES;
    const float *w_exp = kann_cref(ex, a->w_exp), *w_dw = kann_cref(ex, a->w_dw);
    const float *b_exp = a->b_exp.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->b_exp);
    const float *b_dw = a->b_dw.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->b_dw);
    float *s = kann_mref(ex, a->scratch);
    float *we = s, *be = we + blocks * c_in * LANES, *wd = be + blocks * LANES;
    float *bd = wd + blocks * taps * LANES;
    l->ring = bd + blocks * LANES;
    for (size_t m = 0; m < blocks * LANES; m++) {
        size_t b = m / LANES, j = m % LANES, panel = m / KANN_CONV_PANEL;
        int live = m < c_mid;
        for (size_t k = 0; k < c_in; k++)
            we[(b * c_in + k) * LANES + j] =
                live ? w_exp[(panel * c_in + k) * KANN_CONV_PANEL + m % KANN_CONV_PANEL] : 0.0f;
        be[m] = live && b_exp ? b_exp[m] : 0.0f;
        for (size_t t = 0; t < taps; t++)
            wd[(b * taps + t) * LANES + j] = live ? w_dw[m * taps + t] : 0.0f;
        bd[m] = live && b_dw ? b_dw[m] : 0.0f;
    }
    l->we = we;
    l->be = be;
    l->wd = wd;
    l->bd = bd;
    l->cols = (size_t)kann_dwblock_lanes_cols(a);
    l->slot = l->cols * LANES;
    l->block = a->k_h * l->slot;
    const size_t left = a->pad_left, right = left + a->w_in;
    for (size_t r = 0; r < blocks * a->k_h; r++) {
        float *row = l->ring + r * l->slot;
        for (size_t c = 0; c < left; c++)
            _mm512_storeu_ps(row + c * LANES, _mm512_setzero_ps());
        for (size_t c = right; c < l->cols; c++)
            _mm512_storeu_ps(row + c * LANES, _mm512_setzero_ps());
    }
}

int kann_dwblock_lanes_avx512(const kann_dwblock_args *a, const kann_exec *ex,
                              kann_conv_microkernel ukr, size_t nr) {
    if (!kann_dwblock_lanes_shape(a) || !kann_act_vectorizes(&a->act_exp) ||
        !kann_act_vectorizes(&a->act_dw))
        return 0;
    size_t o_begin = a->tile.begin, o_end = a->tile.end;
    if (o_begin >= o_end || a->w_out == 0 || a->c_out == 0) return 1;
    lanes l;
    l.a = a;
    l.x = kann_cref(ex, a->x);
    l.plane = (size_t)a->h_in * a->w_in;
    l.clamp_exp = kann_act_is_clamp(&a->act_exp);
    l.clamp_dw = kann_act_is_clamp(&a->act_dw);
    l.lo_exp = vf_set1(kann_act_store_lo(&a->act_exp, l.clamp_exp));
    l.hi_exp = vf_set1(kann_act_hi(&a->act_exp));
    l.lo_dw = vf_set1(kann_act_store_lo(&a->act_dw, l.clamp_dw));
    l.hi_dw = vf_set1(kann_act_hi(&a->act_dw));
    lanes_setup(&l, ex);
    float *d = kann_mref(ex, a->scratch) + kann_dwblock_e_floats(a);
    const size_t blocks = (a->c_mid + LANES - 1) / LANES;
    const int64_t first = (int64_t)o_begin * a->stride_h - a->pad_top;
    size_t held = first < 0 ? 0 : (size_t)first; /* the first input row not yet in the rings */
    for (size_t o0 = o_begin; o0 < o_end && kann_claim(ex, (uint32_t)o0); o0 += a->band_rows) {
        size_t o1 = o_end - o0 < a->band_rows ? o_end : o0 + a->band_rows;
        size_t n_d = (o1 - o0) * a->w_out, next = held;
        size_t groups = (blocks + GROUP - 1) / GROUP;
        for (size_t g = 0, b0 = 0; g < groups; g++) { /* groups as even as they come */
            int nb = (int)((blocks - b0 + (groups - g) - 1) / (groups - g));
            next = held;
            for (size_t oy = o0; oy < o1; oy++) {
                int64_t top = (int64_t)oy * a->stride_h - a->pad_top;
                int64_t last = top + (int64_t)a->k_h - 1;
                if (last >= (int64_t)a->h_in) last = (int64_t)a->h_in - 1;
                if (top > 0 && next < (size_t)top) next = (size_t)top;
                for (; (int64_t)next <= last; next++)
                    expand_row(&l, next, b0, nb);
                for (int b = 0; b < nb; b++)
                    depthwise_row(&l, oy, b0 + (size_t)b, d, n_d, oy - o0);
            }
            b0 += (size_t)nb;
        }
        held = next;
        kann_dwblock_project(a, ex, ukr, nr, d, o0, o1);
    }
    return 1;
}
