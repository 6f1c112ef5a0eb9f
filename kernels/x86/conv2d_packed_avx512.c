/* conv2d_packed for AVX-512: a 12 x 32 register tile (24 ZMM accumulators) over one weight
 * panel and a 32-column strip of B, bias, residual and activation fused into the store.
 * A strip's ragged end is cut to what it holds: 16 columns or fewer run one vector per row,
 * and a few columns past a whole vector turn the tile around, the panel's channels in the
 * lanes: alone (the 4 past 192 of a 14x14 map, column_tail), or past a first vector in the same
 * pass as it (the 49th pixel of a 7x7 map: 32 + 16 + 1, tile_16_tail). Convs over
 * at most 4 input channels (image stems) take a path of their own with the output channels in
 * the lanes, straight from x (direct_drive). */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_maxpool.h"
#include "ref/conv2d_packed.h"
#include "ref/dwblock.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "maxpool_vec.h"
#include "row_pair_avx512.h"
#include "transpose_avx512.h"

#define NR 32

/* Weight floats ahead of the reduction step that a step prefetches (64 steps of a panel): where
 * a panel meets few pixels (7x7 maps, 512 channels) its weights stream from memory and their
 * loads stalled the register tile; measured 10 % faster there (docs/performance.md). */
#define W_PREFETCH (64 * KANN_CONV_PANEL)

/* Lanes [lo, hi) of a 16-lane half as a mask (0 <= lo <= hi <= 16). */
static inline __mmask16 lanes(size_t lo, size_t hi) {
    return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

/* One vector's part of a wide strip's segment: the lanes m of row vector `half` are packed
 * together (compress) and stored at y + at (and the residual read there, unpacked to meet
 * them); lanes outside every segment (columns of the wide grid past w_out) are dropped. */
typedef struct segment_store {
    __mmask16 m, packed;
    unsigned half;
    size_t at;
} segment_store;

/* The segment stores of strip t, at most 2 * KANN_CONV_MAX_STRIP. */
static size_t segment_stores(const kann_conv_tile *t, segment_store *ops) {
    size_t count = 0;
    for (size_t s = 0; s < t->n_segments; s++) {
        const kann_conv_segment *sg = &t->segments[s];
        for (unsigned half = 0; half < 2; half++) {
            size_t a = sg->lo > 16 * half ? sg->lo - 16 * half : 0;
            size_t b = sg->hi < 16 * half + 16 ? sg->hi - 16 * half : 16;
            if (sg->hi <= 16 * half || a >= b) continue;
            ops[count++] = (segment_store){lanes(a, b), lanes(0, b - a), half,
                                           sg->at + (16 * half + a - sg->lo)};
        }
    }
    return count;
}

/* The last block's store of a wide strip: per segment store, every row. */
static void store_segments(const kann_conv_tile *t, __m512 c[KANN_CONV_PANEL][2], int vec_act,
                           __m512 lo, __m512 hi) {
    segment_store ops[2 * KANN_CONV_MAX_STRIP];
    size_t n_ops = segment_stores(t, ops);
    for (size_t o = 0; o < n_ops; o++) {
        const segment_store op = ops[o];
        float *y = t->y + op.at;
        const float *res = t->res ? t->res + op.at : NULL;
        for (size_t r = 0; r < t->mr; r++, y += t->ldy) {
            __m512 v = c[r][op.half];
            if (res) {
                v = _mm512_add_ps(v, _mm512_maskz_expand_ps(op.m,
                                                            _mm512_maskz_loadu_ps(op.packed, res)));
                res += t->ldy;
            }
            if (vec_act) v = vf_act(v, t->act, lo, hi);
            _mm512_mask_storeu_ps(y, op.packed, _mm512_maskz_compress_ps(op.m, v));
            if (!vec_act)
                for (unsigned j = 0; j < (unsigned)__builtin_popcount(op.m); j++)
                    y[j] = kann_act_apply(t->act, y[j]);
        }
    }
}

/* The contiguous rows of the epilogue; SILU: the activation is SiLU, taken without the
 * activation switch (a 16 -> 96 1x1 conv with SiLU on 112x112, one thread, every tile through
 * here: 0.84 ms by vf_act, 0.77 without the switch). */
static inline __attribute__((always_inline)) void epilogue_rows(const kann_conv_tile *t,
                                                                __m512 c[KANN_CONV_PANEL][2],
                                                                int vec_act, __m512 lo, __m512 hi,
                                                                int SILU) {
    size_t n = t->n;
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
    const kann_act *act = t->act;
    for (size_t r = 0; r < t->mr; r++) {
        float *y = t->y + r * t->ldy;
        __m512 v0 = c[r][0], v1 = c[r][1];
        if (t->res) {
            const float *res = t->res + r * t->ldy;
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, res));
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, res + 16));
        }
        if (SILU) {
            v0 = vf_silu(v0);
            v1 = vf_silu(v1);
        } else if (vec_act) {
            v0 = vf_act(v0, act, lo, hi);
            v1 = vf_act(v1, act, lo, hi);
        }
        _mm512_mask_storeu_ps(y, m0, v0);
        _mm512_mask_storeu_ps(y + 16, m1, v1);
        if (!SILU && !vec_act)
            for (size_t j = 0; j < n; j++)
                y[j] = kann_act_apply(act, y[j]);
    }
}

/* The last block's store: bias, residual and activation; contiguous or by segments. */
static __attribute__((noinline)) void epilogue(const kann_conv_tile *t,
                                               __m512 c[KANN_CONV_PANEL][2]) {
    const kann_act *act = t->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    if (t->bias)
        for (size_t r = 0; r < t->mr; r++) {
            __m512 bv = _mm512_set1_ps(t->bias[r]);
            c[r][0] = _mm512_add_ps(c[r][0], bv);
            c[r][1] = _mm512_add_ps(c[r][1], bv);
        }
    if (t->n_segments)
        store_segments(t, c, vec_act, lo, hi);
    else if (act->kind == KANN_ACT_SILU)
        epilogue_rows(t, c, vec_act, lo, hi, 1);
    else
        epilogue_rows(t, c, vec_act, lo, hi, 0);
}

/* The last block's store of a full tile (`rows` channels, nvec whole vectors) whose activation
 * is a clamp, or SiLU (SILU): bias, residual and activation on each accumulator in place, one
 * vector at a time. */
static inline __attribute__((always_inline)) void
store_direct(const kann_conv_tile *t, __m512 c[KANN_CONV_PANEL][2], int rows, int nvec, int SILU) {
    const kann_act *act = t->act;
    __m512 lo = _mm512_set1_ps(kann_act_clamp_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
        float *y = t->y + r * t->ldy;
        __m512 bv = _mm512_set1_ps(t->bias ? t->bias[r] : 0.0f);
#pragma GCC unroll 2
        for (int v = 0; v < nvec; v++) {
            __m512 x = _mm512_add_ps(c[r][v], bv);
            if (t->res) x = _mm512_add_ps(x, _mm512_loadu_ps(t->res + r * t->ldy + 16 * v));
            x = SILU ? vf_silu(x) : _mm512_min_ps(hi, _mm512_max_ps(lo, x));
            _mm512_storeu_ps(y + 16 * v, x);
        }
    }
}

/* The register tile for the first `rows` channels of the panel (4, 8 or 12: a panel's last
 * rows past c_out are not computed) and `nvec` vectors of 16 columns (1 when n <= 16); SILU:
 * the activation is SiLU (a copy of its own: SiLU's constants at the store of every copy took
 * registers from the accumulators, ReLU tiles 4 % slower). */
static inline __attribute__((always_inline)) void tile_rows(const kann_conv_tile *t, int rows,
                                                            int nvec, int SILU) {
    __m512 c[KANN_CONV_PANEL][2];
    size_t n = t->n;
    __mmask16 m0 = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
    __mmask16 m1 = n >= 32 ? 0xffff : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
        c[r][0] = c[r][1] = _mm512_setzero_ps();
        if (!t->first && (size_t)r < t->mr) { /* continue the partial sums in y */
            c[r][0] = _mm512_maskz_loadu_ps(m0, t->y + r * t->ldy);
            if (nvec > 1) c[r][1] = _mm512_maskz_loadu_ps(m1, t->y + r * t->ldy + 16);
        }
    }
    const float *w = t->w;
    const ptrdiff_t *taps = t->taps;
    size_t n_taps = t->n_taps, b_stride = t->b_stride;
    ptrdiff_t b_ahead = t->b_ahead;
    for (size_t g = 0; g < t->n_groups; g++) {
        const float *bg = t->b + g * b_stride;
        for (size_t tap = 0; tap < n_taps; tap++, w += KANN_CONV_PANEL) {
            const float *b = bg + taps[tap];
            /* B ahead (b_ahead: two groups on, or a pointwise conv's next strip) */
            _mm_prefetch((const char *)(b + b_ahead), _MM_HINT_T0);
            if (nvec > 1) _mm_prefetch((const char *)(b + b_ahead + 31), _MM_HINT_T0);
            _mm_prefetch((const char *)(w + W_PREFETCH), _MM_HINT_T0);
            __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
            __m512 b1 = nvec > 1 ? _mm512_maskz_loadu_ps(m1, b + 16) : b0;
#pragma GCC unroll 12
            for (int r = 0; r < rows; r++) {
                __m512 a = _mm512_set1_ps(w[r]);
                c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
                if (nvec > 1) c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
            }
        }
    }
    if (!t->last) {
#pragma GCC unroll 12
        for (int r = 0; r < rows; r++) {
            if ((size_t)r >= t->mr) break;
            _mm512_mask_storeu_ps(t->y + r * t->ldy, m0, c[r][0]);
            if (nvec > 1) _mm512_mask_storeu_ps(t->y + r * t->ldy + 16, m1, c[r][1]);
        }
        return;
    }
    /* A full tile whose activation is a clamp (none, relu, clip) or SiLU stores straight from
     * the accumulators: bias, residual and activation a vector at a time. With few reduction
     * steps (a 1x1 conv over 16 channels: 16 steps) the general epilogue's round trip of the
     * tile through memory cost as much as the steps (SiLU, 16 -> 96 channels on 112x112, one
     * thread: 0.77 ms through it, 0.72 straight). */
    if (t->mr == (size_t)rows && n == (size_t)(16 * nvec) && !t->n_segments &&
        (SILU || kann_act_is_clamp(t->act))) {
        store_direct(t, c, rows, nvec, SILU);
        return;
    }
    /* The epilogue is a call of its own: inlined, its registers would push accumulators of
     * the loop above onto the stack. */
    __m512 out[KANN_CONV_PANEL][2];
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++) {
        out[r][0] = c[r][0];
        out[r][1] = nvec > 1 ? c[r][1] : _mm512_setzero_ps(); /* past n: not stored */
    }
    epilogue(t, out);
}

/* A strip's column tail (KANN_CONV_TAIL_COLS, kann_x86.h) goes through column_tail. */
#define TAIL_COLS KANN_CONV_TAIL_COLS

/* Independent FMA chains of the column tail: enough to cover the FMA latency on both ports. */
#define TAIL_CHAINS 8

/* C columns [j0, j0 + C) of a column tail (C = 1, 2 or 4; those at or past n repeat column
 * n - 1, so B is read only where it exists, and are not stored): acc[j][r] (channel r of
 * column j) gets their sums added. With fewer columns than chains the reduction is dealt over
 * P = TAIL_CHAINS / C phases (consecutive groups in different chains), summed at the end. */
static inline __attribute__((always_inline)) void tail_columns(const kann_conv_tile *t, size_t j0,
                                                               int C, float acc[TAIL_COLS][16]) {
    const int P = TAIL_CHAINS / C;
    size_t col[4];
    __m512 d[TAIL_CHAINS];
#pragma GCC unroll 4
    for (int i = 0; i < C; i++)
        col[i] = j0 + i < t->n ? j0 + i : t->n - 1;
#pragma GCC unroll 8
    for (int u = 0; u < TAIL_CHAINS; u++)
        d[u] = _mm512_setzero_ps();
    const __mmask16 panel = lanes(0, KANN_CONV_PANEL);
    const ptrdiff_t *taps = t->taps;
    size_t n_taps = t->n_taps, b_stride = t->b_stride, g = 0;
    if (n_taps == 1) { /* one step per group: pointers walk B and the panel */
        const float *b = t->b + taps[0], *w = t->w;
        for (; g + (size_t)P <= t->n_groups;
             g += (size_t)P, b += (size_t)P * b_stride, w += P * KANN_CONV_PANEL) {
#pragma GCC unroll 8
            for (int p = 0; p < P; p++) {
                __m512 wv = _mm512_maskz_loadu_ps(panel, w + p * KANN_CONV_PANEL);
#pragma GCC unroll 4
                for (int i = 0; i < C; i++)
                    d[p * C + i] = _mm512_fmadd_ps(_mm512_set1_ps(b[p * b_stride + col[i]]), wv,
                                                   d[p * C + i]);
            }
        }
    }
    for (; g + (size_t)P <= t->n_groups; g += (size_t)P) {
        for (size_t tap = 0; tap < n_taps; tap++) {
#pragma GCC unroll 8
            for (int p = 0; p < P; p++) {
                const float *b = t->b + (g + p) * b_stride + taps[tap];
                __m512 wv = _mm512_maskz_loadu_ps(
                    panel, t->w + ((g + p) * n_taps + tap) * KANN_CONV_PANEL);
#pragma GCC unroll 4
                for (int i = 0; i < C; i++)
                    d[p * C + i] = _mm512_fmadd_ps(_mm512_set1_ps(b[col[i]]), wv, d[p * C + i]);
            }
        }
    }
    for (; g < t->n_groups; g++) { /* the last n_groups % P groups: phase 0 */
        for (size_t tap = 0; tap < n_taps; tap++) {
            const float *b = t->b + g * b_stride + taps[tap];
            __m512 wv =
                _mm512_maskz_loadu_ps(panel, t->w + (g * n_taps + tap) * KANN_CONV_PANEL);
#pragma GCC unroll 4
            for (int i = 0; i < C; i++)
                d[i] = _mm512_fmadd_ps(_mm512_set1_ps(b[col[i]]), wv, d[i]);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < C; i++) {
        if (j0 + i >= t->n) break;
        __m512 sum = _mm512_loadu_ps(acc[j0 + i]);
#pragma GCC unroll 8
        for (int p = 0; p < P; p++)
            sum = _mm512_add_ps(sum, d[p * C + i]);
        _mm512_storeu_ps(acc[j0 + i], sum);
    }
}

/* Where column j of a strip goes in a row of y: j itself, or where its segment puts it; -1
 * when no segment holds it (a wide strip's dropped column). */
static inline ptrdiff_t strip_column(const kann_conv_tile *t, size_t j) {
    if (!t->n_segments) return (ptrdiff_t)j;
    for (size_t s = 0; s < t->n_segments; s++)
        if (j >= t->segments[s].lo && j < t->segments[s].hi)
            return (ptrdiff_t)(t->segments[s].at + (j - t->segments[s].lo));
    return -1;
}

/* The last block's store of a column tail, column by column with the panel's channels in the
 * lanes: bias as one vector, residual gathered and the column scattered down the rows of y. */
static void column_tail_store(const kann_conv_tile *t, float acc[TAIL_COLS][16]) {
    const __mmask16 rows = lanes(0, t->mr);
    const __m512i row_at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                                11, 12, 13, 14, 15),
                                              _mm512_set1_epi32((int)t->ldy));
    const kann_act *act = t->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    __m512 bias = t->bias ? _mm512_maskz_loadu_ps(rows, t->bias) : _mm512_setzero_ps();
    for (size_t j = 0; j < t->n; j++) {
        ptrdiff_t at = strip_column(t, j);
        if (at < 0) continue;
        __m512 v = _mm512_add_ps(_mm512_loadu_ps(acc[j]), bias);
        if (t->res)
            v = _mm512_add_ps(v, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), rows, row_at,
                                                          t->res + at, 4));
        if (vec_act) v = vf_act(v, act, lo, hi);
        _mm512_mask_i32scatter_ps(t->y + at, rows, row_at, v, 4);
        if (!vec_act)
            for (size_t r = 0; r < t->mr; r++)
                t->y[r * t->ldy + at] = kann_act_apply(act, t->y[r * t->ldy + at]);
    }
}

/* A strip of n <= TAIL_COLS columns with the panel's channels in the lanes: partial sums go
 * through a transposing buffer, the last block's store scatters the columns down y's rows
 * (rows at most INT32_MAX / 16 floats apart, else through the tile's epilogue). */
static __attribute__((noinline)) void column_tail(const kann_conv_tile *t) {
    float acc[TAIL_COLS][16];
    size_t n = t->n;
    for (size_t j = 0; j < n; j++)
        _mm512_storeu_ps(acc[j], _mm512_setzero_ps());
    if (!t->first)
        for (size_t j = 0; j < n; j++)
            for (size_t r = 0; r < t->mr; r++)
                acc[j][r] = t->y[r * t->ldy + j];
    for (size_t j0 = 0; j0 < n; j0 += 4) {
        if (n - j0 >= 3)
            tail_columns(t, j0, 4, acc);
        else if (n - j0 == 2)
            tail_columns(t, j0, 2, acc);
        else
            tail_columns(t, j0, 1, acc);
    }
    if (!t->last) {
        for (size_t r = 0; r < t->mr; r++)
            for (size_t j = 0; j < n; j++)
                t->y[r * t->ldy + j] = acc[j][r];
        return;
    }
    if (t->ldy <= INT32_MAX / 16) {
        column_tail_store(t, acc);
        return;
    }
    __m512 out[KANN_CONV_PANEL][2];
    for (size_t r = 0; r < KANN_CONV_PANEL; r++) {
        float row[16] = {0};
        for (size_t j = 0; j < n; j++)
            row[j] = acc[j][r];
        out[r][0] = _mm512_loadu_ps(row);
        out[r][1] = _mm512_setzero_ps();
    }
    epilogue(t, out);
}

/* A strip of 16 + R columns (1 <= R <= TAIL_COLS): the first 16 through the 12 x 16 register
 * tile, the other R with the panel's channels in the lanes, per reduction step a weight vector
 * (the 12 weights the tile broadcasts, from the same cache line) and a broadcast of B per
 * column. Run as a column tail of its own after the 16, those R columns fetched the panel's
 * weights again from L2 for R FMAs a step: 960 -> 160 on 7x7 (32 + 16 + 1 columns) took 65
 * µs, 10 of them for the 49th column. The tail's sums are turned into the tile's second
 * vector, so the store is the tile's (segments, partial sums and all). */
static inline __attribute__((always_inline)) void tile_16_tail(const kann_conv_tile *t, int R) {
    __m512 c[KANN_CONV_PANEL], d[TAIL_COLS];
    const __mmask16 panel = lanes(0, KANN_CONV_PANEL), m1 = lanes(0, (size_t)R);
    float part[TAIL_COLS][16];
#pragma GCC unroll 12
    for (int r = 0; r < KANN_CONV_PANEL; r++)
        c[r] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int j = 0; j < R; j++)
        d[j] = _mm512_setzero_ps();
    if (!t->first) { /* continue the partial sums in y */
#pragma GCC unroll 12
        for (int r = 0; r < KANN_CONV_PANEL; r++) {
            if ((size_t)r >= t->mr) break;
            c[r] = _mm512_loadu_ps(t->y + (size_t)r * t->ldy);
            for (int j = 0; j < R; j++)
                part[j][r] = t->y[(size_t)r * t->ldy + 16 + (size_t)j];
        }
#pragma GCC unroll 8
        for (int j = 0; j < R; j++)
            d[j] = _mm512_maskz_loadu_ps(lanes(0, t->mr), part[j]);
    }
    const float *w = t->w;
    const ptrdiff_t *taps = t->taps;
    size_t n_taps = t->n_taps, b_stride = t->b_stride;
    ptrdiff_t b_ahead = t->b_ahead;
    for (size_t g = 0; g < t->n_groups; g++) {
        const float *bg = t->b + g * b_stride;
        for (size_t tap = 0; tap < n_taps; tap++, w += KANN_CONV_PANEL) {
            const float *b = bg + taps[tap];
            _mm_prefetch((const char *)(b + b_ahead), _MM_HINT_T0);
            _mm_prefetch((const char *)(b + b_ahead + 16 + R - 1), _MM_HINT_T0);
            _mm_prefetch((const char *)(w + W_PREFETCH), _MM_HINT_T0);
            __m512 b0 = _mm512_loadu_ps(b);
            __m512 wv = _mm512_maskz_loadu_ps(panel, w);
#pragma GCC unroll 12
            for (int r = 0; r < KANN_CONV_PANEL; r++)
                c[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[r]), b0, c[r]);
#pragma GCC unroll 8
            for (int j = 0; j < R; j++)
                d[j] = _mm512_fmadd_ps(_mm512_set1_ps(b[16 + j]), wv, d[j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < R; j++)
        _mm512_storeu_ps(part[j], d[j]);
    __m512 out[KANN_CONV_PANEL][2];
#pragma GCC unroll 12
    for (int r = 0; r < KANN_CONV_PANEL; r++) {
        float row[16];
        for (int j = 0; j < R; j++)
            row[j] = part[j][r];
        out[r][0] = c[r];
        out[r][1] = _mm512_maskz_loadu_ps(m1, row);
    }
    if (!t->last) {
        for (size_t r = 0; r < t->mr; r++) {
            _mm512_storeu_ps(t->y + r * t->ldy, out[r][0]);
            _mm512_mask_storeu_ps(t->y + r * t->ldy + 16, m1, out[r][1]);
        }
        return;
    }
    epilogue(t, out);
}

/* tile_16_tail for the strip's R = n - 16. */
static __attribute__((noinline)) void vector_tile_tail(const kann_conv_tile *t) {
    switch (t->n - 16) {
    case 1: tile_16_tail(t, 1); break;
    case 2: tile_16_tail(t, 2); break;
    case 3: tile_16_tail(t, 3); break;
    case 4: tile_16_tail(t, 4); break;
    case 5: tile_16_tail(t, 5); break;
    case 6: tile_16_tail(t, 6); break;
    case 7: tile_16_tail(t, 7); break;
    default: tile_16_tail(t, 8); break;
    }
}

/* The vector tile over a strip of n <= 32 columns: rows and vectors cut to what it holds. */
static inline __attribute__((always_inline)) void vector_tile_act(const kann_conv_tile *t,
                                                                  int SILU) {
    if (t->n > 16) {
        if (t->mr > 8)
            tile_rows(t, 12, 2, SILU);
        else if (t->mr > 4)
            tile_rows(t, 8, 2, SILU);
        else
            tile_rows(t, 4, 2, SILU);
    } else {
        if (t->mr > 8)
            tile_rows(t, 12, 1, SILU);
        else if (t->mr > 4)
            tile_rows(t, 8, 1, SILU);
        else
            tile_rows(t, 4, 1, SILU);
    }
}

static void vector_tile(const kann_conv_tile *t) {
    vector_tile_act(t, 0);
}

/* The same for the last block of a SiLU conv. */
static __attribute__((noinline)) void vector_tile_silu(const kann_conv_tile *t) {
    vector_tile_act(t, 1);
}

/* A strip whose columns past a whole vector are few: those columns with the channels in the
 * lanes, alone or in the pass of the vector before them. */
void kann_conv_microkernel_12x32_avx512(const kann_conv_tile *t) {
    size_t tail = t->n % 16;
    if (tail == 0 || tail > TAIL_COLS) {
        if (t->last && t->act->kind == KANN_ACT_SILU)
            vector_tile_silu(t);
        else
            vector_tile(t);
    } else if (t->n > 16) {
        vector_tile_tail(t);
    } else {
        column_tail(t);
    }
}

/* ---- Short reductions: 16 channels x 16 pixels, straight from x ----------------------------- */

/* Convs over few input channels (the image stems: RGB 3x3, K = 27; 7x7, K = 147) spend as
 * long gathering B and storing through the 12 x 32 tile as multiplying. Here a block is 16
 * pixels of an output row for 16 output channels, 16 accumulators of one channel each: per
 * reduction step, one vector of 16 consecutive inputs and 16 FMAs, each broadcasting one weight.
 * The inputs come from a zero-padded copy of the output row's window rows, each split into its
 * stride_w column phases (kann_conv2d_direct_row), so that a tap's 16 pixels are consecutive
 * floats of one phase at a constant offset from the block's start. Bias, residual and
 * activation are fused into the stores, one channel plane per accumulator. One thread, medians:
 * 3x3 stride 2 over RGB to 64 channels 0.53 -> 0.42 ms (against the gather path), its stride-1
 * form (wide path) 2.32 -> 1.85, resnet18's 7x7 stride 2 1.61 -> 1.45; with 16 input channels
 * (K = 144) it measured no faster than the phase path, so it is taken for at most
 * KANN_CONV_DIRECT_MAX_C_IN input channels (kann_conv2d_packed_direct). It had the channels in
 * the lanes first (each input broadcast, the pixels turned into channel planes by a 16 x 16
 * transpose): 5 % slower on the RGB stems (squeezenet1_1's, caches warm, 10th percentile of
 * 200: 540 -> 513 µs; flushed 592 -> 562; mobilenet_v2's 281 -> 269), the 7x7 one the same. */

/* Output channels per pass (4 groups of 16): their weights stay in the L1 cache. */
#define DIRECT_CHANNELS 64

/* acc[c] = 16 pixels of channel c: init[c] plus the sum over k of w[k * 16 + c] * src[off[k] + j],
 * j < 16. */
static inline __attribute__((always_inline)) void direct_sums(const float *w, const float *src,
                                                              const ptrdiff_t *off, size_t K,
                                                              const __m512 *init, __m512 acc[16]) {
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        acc[c] = init[c];
    for (size_t k = 0; k < K; k++, w += 16) {
        __m512 b = _mm512_loadu_ps(src + off[k]);
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            acc[c] = _mm512_fmadd_ps(_mm512_set1_ps(w[c]), b, acc[c]);
    }
}

/* The same over 8 pixels (j < 8) in YMM registers, for a row's last block of at most 8: the
 * FMAs of a 256-bit vector take half a 512-bit one's issue, so a ragged tail costs half a block
 * (alexnet's 11x11 stride-4 stem, 55 columns as 16 + 16 + 16 + 7, one thread: 1.65 -> 1.5 ms). */
static inline __attribute__((always_inline)) void direct_sums8(const float *w, const float *src,
                                                               const ptrdiff_t *off, size_t K,
                                                               const __m512 *init,
                                                               __m512 acc[16]) {
    __m256 a8[16];
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        a8[c] = _mm512_castps512_ps256(init[c]);
    for (size_t k = 0; k < K; k++, w += 16) {
        __m256 b = _mm256_loadu_ps(src + off[k]);
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            a8[c] = _mm256_fmadd_ps(_mm256_set1_ps(w[c]), b, a8[c]);
    }
#pragma GCC unroll 16
    for (int c = 0; c < 16; c++)
        acc[c] = _mm512_zextps256_ps512(a8[c]);
}

/* What one pass over a tile's rows needs. */
typedef struct direct_pass {
    const kann_conv2d_packed_args *a;
    const float *wt; /* [group][K][16] */
    const float *st; /* the window rows' copy */
    const ptrdiff_t *off; /* tap k's offset in st */
    const float *bias, *res;
    float *y; /* plane of the pass's first channel */
    size_t K, hw;
    size_t nc; /* channels of the pass */
    int vec_act;
    __m512 lo, hi;
    /* the activation is a clamp (none, relu, clip): a max and a min by clamp_lo and hi */
    int clamp;
    __m512 clamp_lo;
} direct_pass;

/* acc[c * V + v] = init[c] plus pixels [16 v, 16 v + 16) of channel c < 8 of a group: per
 * reduction step V vectors of consecutive inputs and 8 broadcast weights for 8 V FMAs. 16
 * channels by one vector (direct_sums: 17 loads per 16 FMAs) ran at 85-90 % of the FMA rate on a
 * core with full-width 512-bit units; 8 by 3 (11 loads per 24 FMAs) keeps it fed. */
static inline __attribute__((always_inline)) void
direct_sums_8xv(const float *w, const float *src, const ptrdiff_t *off, size_t K,
                const __m512 *init, __m512 acc[24], const int V) {
#pragma GCC unroll 8
    for (int c = 0; c < 8; c++)
#pragma GCC unroll 3
        for (int v = 0; v < V; v++)
            acc[c * V + v] = init[c];
    for (size_t k = 0; k < K; k++, w += 16) {
        const float *p = src + off[k];
        __m512 b[3];
#pragma GCC unroll 3
        for (int v = 0; v < V; v++)
            b[v] = _mm512_loadu_ps(p + 16 * v);
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) {
            __m512 a = _mm512_set1_ps(w[c]);
#pragma GCC unroll 3
            for (int v = 0; v < V; v++)
                acc[c * V + v] = _mm512_fmadd_ps(a, b[v], acc[c * V + v]);
        }
    }
}

/* What the stores of a block share, in registers: the block's first output pixel in its
 * first channel's plane and in the residual's, planes hw floats apart. */
typedef struct direct_out {
    float *y;
    const float *res;
    size_t hw, ahead; /* ahead: the floats from a store to the one two rows on */
} direct_out;

static inline __attribute__((always_inline)) direct_out direct_out_of(const direct_pass *d,
                                                                      size_t ch, size_t at) {
    direct_out o = {d->y + ch * d->hw + at, d->res ? d->res + ch * d->hw + at : NULL, d->hw,
                    2 * (size_t)d->a->w_out};
    return o;
}

/* Pixel vector v (bias included) of channel l of the block at float j of its row: residual and
 * activation, then the store (n lanes, mask m). CLAMP: a copy for the clamp activations, a max
 * and a min (CLAMP 1: clip), a max alone (2: relu) or nothing (3: none), where vf_act's switch (a
 * jump through its table per vector) and the accumulators it pushed onto the stack took about a
 * third of mobilenet_v2's stem (K = 27 steps a block). */
static inline __attribute__((always_inline)) void direct_store(const direct_pass *d,
                                                               const direct_out *o, size_t l,
                                                               size_t j, __m512 v, __mmask16 m,
                                                               size_t n, const int CLAMP) {
    if (o->res) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, o->res + l * o->hw + j));
    if (CLAMP == 1)
        v = _mm512_min_ps(d->hi, _mm512_max_ps(d->clamp_lo, v));
    else if (CLAMP == 2)
        v = _mm512_max_ps(d->clamp_lo, v);
    else if (!CLAMP && d->vec_act)
        v = vf_act(v, &d->a->act, d->lo, d->hi);
    float *y = o->y + l * o->hw + j;
    /* the same columns two rows on: y is 3 MB inside a network and its lines come from L3
     * or memory (squeezenet1_1's stem, caches flushed between calls: 660 -> 586 µs; in a
     * run 691 -> 598; warm 1-2 % slower) */
    _mm_prefetch((const char *)(y + o->ahead), _MM_HINT_T0);
    _mm512_mask_storeu_ps(y, m, v);
    if (!CLAMP && !d->vec_act)
        for (size_t i = 0; i < n; i++)
            y[i] = kann_act_apply(&d->a->act, y[i]);
}

/* The biases of channels [c0, c0 + N) of the pass as vectors (zero past its channels). */
static inline __attribute__((always_inline)) void direct_bias(const direct_pass *d, size_t c0,
                                                              const int N, __m512 *init) {
#pragma GCC unroll 16
    for (int l = 0; l < N; l++)
        init[l] = d->bias && c0 + (size_t)l < d->nc ? _mm512_set1_ps(d->bias[c0 + (size_t)l])
                                                    : _mm512_setzero_ps();
}

/* Pixels [ow0, ow0 + n) of output row oh (n <= 16), group g of the pass. */
static inline __attribute__((always_inline)) void direct_block(const direct_pass *d, size_t oh,
                                                               size_t ow0, size_t n, size_t g,
                                                               const int CLAMP) {
    __mmask16 m = lanes(0, n);
    __m512 init[16], acc[16];
    direct_bias(d, g * 16, 16, init);
    if (n <= 8)
        direct_sums8(d->wt + g * d->K * 16, d->st + ow0, d->off, d->K, init, acc);
    else
        direct_sums(d->wt + g * d->K * 16, d->st + ow0, d->off, d->K, init, acc);
    size_t nl = d->nc - g * 16 < 16 ? d->nc - g * 16 : 16;
    direct_out o = direct_out_of(d, g * 16, oh * d->a->w_out + ow0);
#pragma GCC unroll 16
    for (size_t l = 0; l < 16; l++) {
        if (l >= nl) break;
        direct_store(d, &o, l, 0, acc[l], m, n, CLAMP);
    }
}

/* Pixels [ow0, ow0 + n) of output row oh (16 V - 16 < n <= 16 V), channels [8 h, 8 h + 8) of
 * group g of the pass. The stores' loops are unrolled: the accumulators stay in registers. */
static inline __attribute__((always_inline)) void direct_block_8xv(const direct_pass *d, size_t oh,
                                                                   size_t ow0, size_t n, size_t g,
                                                                   size_t h, const int V,
                                                                   const int CLAMP) {
    size_t c0 = g * 16 + h * 8;
    __m512 init[8], acc[24];
    direct_bias(d, c0, 8, init);
    direct_sums_8xv(d->wt + g * d->K * 16 + h * 8, d->st + ow0, d->off, d->K, init, acc, V);
    size_t nl = d->nc - c0 < 8 ? d->nc - c0 : 8;
    direct_out o = direct_out_of(d, c0, oh * d->a->w_out + ow0);
#pragma GCC unroll 8
    for (size_t l = 0; l < 8; l++) {
        if (l >= nl) break;
#pragma GCC unroll 3
        for (int v = 0; v < V; v++) {
            size_t nv = n - 16 * (size_t)v < 16 ? n - 16 * (size_t)v : 16;
            direct_store(d, &o, l, 16 * (size_t)v, acc[l * V + v], lanes(0, nv), nv, CLAMP);
        }
    }
}

/* Columns [c0, c1) of output row oh, group by group, so that 16 planes take the row's stores
 * at a time: with y not in the caches (the stem inside a network) 64 at a time stalled on
 * their lines (squeezenet1_1's stem, caches flushed between calls, 10th percentile of 100: 782
 * -> 720 µs; warm, unchanged). Blocks of 48 pixels (two halves of the group's channels), the
 * row's last 17 to 32 as one block of two vectors, 16 or fewer as one group of 16 channels. */
static inline __attribute__((always_inline)) void direct_blocks_as(const direct_pass *d, size_t oh,
                                                                   size_t c0, size_t c1,
                                                                   const int CLAMP) {
    for (size_t g = 0; g * 16 < d->nc; g++) {
        size_t halves = d->nc - g * 16 > 8 ? 2 : 1, ow = c0;
        while (c1 - ow > 32) {
            size_t n = c1 - ow < 48 ? c1 - ow : 48;
            for (size_t h = 0; h < halves; h++)
                direct_block_8xv(d, oh, ow, n, g, h, 3, CLAMP);
            ow += n;
        }
        if (c1 - ow > 16) {
            for (size_t h = 0; h < halves; h++)
                direct_block_8xv(d, oh, ow, c1 - ow, g, h, 2, CLAMP);
        } else if (ow < c1) {
            direct_block(d, oh, ow, c1 - ow, g, CLAMP);
        }
    }
}

static __attribute__((noinline)) void direct_blocks(const direct_pass *d, size_t oh, size_t c0,
                                                    size_t c1) {
    direct_blocks_as(d, oh, c0, c1, 0);
}

static __attribute__((noinline)) void direct_blocks_clamp(const direct_pass *d, size_t oh,
                                                          size_t c0, size_t c1) {
    direct_blocks_as(d, oh, c0, c1, 1);
}

static __attribute__((noinline)) void direct_blocks_relu(const direct_pass *d, size_t oh,
                                                         size_t c0, size_t c1) {
    direct_blocks_as(d, oh, c0, c1, 2);
}

static __attribute__((noinline)) void direct_blocks_none(const direct_pass *d, size_t oh,
                                                         size_t c0, size_t c1) {
    direct_blocks_as(d, oh, c0, c1, 3);
}

/* The buffers of the direct path (on the caller's stack). */
typedef struct direct_bufs {
    float st[KANN_CONV_DIRECT_STAGE];
    float wt[DIRECT_CHANNELS * KANN_CONV_DIRECT_MAX_K];
    ptrdiff_t off[KANN_CONV_DIRECT_MAX_K];
} direct_bufs;

/* d for conv a over the buffers (no pass yet): tap k at off[k] from a block's start, the copy
 * holding `rows` rows a channel (direct_stage's k_h window rows, or direct_stage_band's band; a
 * window's row kh is row kh from the block's row either way: band rows only undilated). */
static void direct_setup(direct_pass *d, const kann_conv2d_packed_args *a, direct_bufs *bufs,
                         size_t rows) {
    size_t taps = (size_t)a->k_h * a->k_w, w_st = kann_conv2d_direct_row(a), S = a->stride_w;
    for (size_t c = 0; c < a->c_in; c++)
        for (size_t kh = 0; kh < a->k_h; kh++)
            for (size_t kw = 0; kw < a->k_w; kw++)
                bufs->off[c * taps + kh * a->k_w + kw] =
                    (ptrdiff_t)(((c * rows + kh) * S + kw * a->dil_w % S) * w_st +
                                kw * a->dil_w / S);
    d->a = a;
    d->wt = bufs->wt;
    d->st = bufs->st;
    d->off = bufs->off;
    d->K = a->c_in * taps;
    d->vec_act = kann_act_vectorizes(&a->act);
    d->lo = _mm512_set1_ps(kann_act_lo(&a->act));
    d->hi = _mm512_set1_ps(kann_act_hi(&a->act));
    d->clamp = kann_act_is_clamp(&a->act);
    d->clamp_lo = _mm512_set1_ps(kann_act_clamp_lo(&a->act));
}

/* The pass of channels [m0, m0 + nc) (nc <= DIRECT_CHANNELS): its weights as [group][k][16]
 * from the panels [m / 12][k][m % 12], zero past its channels. */
static void direct_pass_weights(direct_pass *d, const float *w, size_t m0, size_t nc,
                                direct_bufs *bufs) {
    size_t K = d->K;
    d->nc = nc;
    for (size_t g = 0; g * 16 < nc; g++)
        for (size_t k = 0; k < K; k++)
            for (size_t l = 0; l < 16; l++) {
                size_t m = m0 + g * 16 + l;
                bufs->wt[(g * K + k) * 16 + l] =
                    g * 16 + l < nc ? w[(m / KANN_CONV_PANEL) * K * KANN_CONV_PANEL +
                                        k * KANN_CONV_PANEL + m % KANN_CONV_PANEL]
                                    : 0.0f;
            }
}

/* Input row ih of channel c into the copy's row dr, phase by phase: phase p holds the columns
 * p - pad_left + i * stride_w, i < kann_conv2d_direct_row, zero outside x. */
static void direct_stage_row(const kann_conv2d_packed_args *a, const float *x, size_t c,
                             int64_t ih, float *dr) {
    size_t w_st = kann_conv2d_direct_row(a), S = a->stride_w, plane = (size_t)a->h_in * a->w_in;
    if (ih < 0 || ih >= (int64_t)a->h_in) {
        kann_fill_zero(dr, S * w_st);
        return;
    }
    const float *x_row = x + c * plane + (size_t)ih * a->w_in;
    if (S == 2) { /* both phases in one pass */
        kann_row_pair_avx512(dr, dr + w_st, x_row, -(int64_t)a->pad_left, 2, a->w_in, w_st);
        return;
    }
    for (size_t p = 0; p < S; p++)
        kann_row_pair_avx512(dr + p * w_st, NULL, x_row, (int64_t)p - a->pad_left, a->stride_w,
                             a->w_in, w_st);
}

/* The input rows [ih0, ih0 + n) of every channel into st, `rows` rows a channel. */
static void direct_stage_band(const kann_conv2d_packed_args *a, const float *x, int64_t ih0,
                              size_t n, size_t rows, float *st) {
    size_t row = kann_conv2d_direct_row(a) * a->stride_w;
    for (size_t c = 0; c < a->c_in; c++)
        for (size_t i = 0; i < n; i++)
            direct_stage_row(a, x, c, ih0 + (int64_t)i, st + (c * rows + i) * row);
}

/* The window rows of output row oh into st, k_h rows a channel. */
static void direct_stage(const kann_conv2d_packed_args *a, const float *x, size_t oh, float *st) {
    size_t row = kann_conv2d_direct_row(a) * a->stride_w;
    for (size_t c = 0; c < a->c_in; c++)
        for (size_t kh = 0; kh < a->k_h; kh++)
            direct_stage_row(a, x, c,
                             (int64_t)oh * a->stride_h - a->pad_top + (int64_t)kh * a->dil_h,
                             st + (c * a->k_h + kh) * row);
}

/* Output rows a band of the direct path's copy holds: as many as fit, up to
 * DIRECT_BAND_ROWS, undilated windows only (else 1, the window rows alone). A window row
 * shared by the output rows of a band is copied once (the stride-2 RGB stems copied each of
 * theirs 1.5 times a row). */
#define DIRECT_BAND_ROWS 8
static size_t direct_band(const kann_conv2d_packed_args *a) {
    if (a->dil_h != 1) return 1;
    size_t row = kann_conv2d_direct_row(a) * a->stride_w, B = DIRECT_BAND_ROWS;
    while (B > 1 && a->c_in * ((B - 1) * a->stride_h + a->k_h) * row > KANN_CONV_DIRECT_STAGE)
        B--;
    return B;
}

/* The tile's channels in passes of DIRECT_CHANNELS, each over the tile's pixels row by row. */
static __attribute__((noinline)) void direct_drive(const kann_conv2d_packed_args *a,
                                                   const kann_exec *ex) {
    size_t m_begin, m_end, p_begin, p_end;
    kann_conv2d_packed_range(a, &m_begin, &m_end, &p_begin, &p_end);
    if (m_begin >= m_end || p_begin >= p_end) return;
    size_t hw = (size_t)a->h_out * a->w_out;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    direct_bufs bufs;
    direct_pass d;
    size_t B = direct_band(a), band_rows = (B - 1) * a->stride_h + a->k_h;
    size_t row = kann_conv2d_direct_row(a) * a->stride_w;
    direct_setup(&d, a, &bufs, B > 1 ? band_rows : a->k_h);
    d.hw = hw;
    size_t oh_first = p_begin / a->w_out, oh_end = (p_end - 1) / a->w_out + 1;
    for (size_t m0 = m_begin; m0 < m_end; m0 += DIRECT_CHANNELS) {
        direct_pass_weights(&d, w, m0, m_end - m0 < DIRECT_CHANNELS ? m_end - m0 : DIRECT_CHANNELS,
                            &bufs);
        d.bias = bias ? bias + m0 : NULL;
        d.res = res ? res + m0 * hw : NULL;
        d.y = kann_mref(ex, a->y) + m0 * hw;
        for (size_t oh0 = oh_first; oh0 < oh_end; oh0 += B) {
            size_t n = oh_end - oh0 < B ? oh_end - oh0 : B;
            int64_t ih0 = (int64_t)(oh0 * a->stride_h) - a->pad_top;
            if (B > 1)
                direct_stage_band(a, x, ih0, (n - 1) * a->stride_h + a->k_h, band_rows, bufs.st);
            else
                direct_stage(a, x, oh0, bufs.st);
            /* the next band's window rows, while this band's blocks run: inside a network the
             * image has left the caches (regnet_x_400mf's stem in its --profile, one thread,
             * three alternated rounds: 349-355 -> 343-347 µs) */
            kann_prefetch_rows(x, 0, a->c_in, ih0 + (int64_t)(n * a->stride_h),
                               (B - 1) * a->stride_h + (size_t)(a->k_h - 1) * a->dil_h + 1,
                               a->h_in, a->w_in);
            for (size_t oh = oh0; oh < oh0 + n; oh++) {
                size_t c0 = oh * a->w_out < p_begin ? p_begin - oh * a->w_out : 0;
                size_t c1 = (oh + 1) * a->w_out > p_end ? p_end - oh * a->w_out : a->w_out;
                d.st = bufs.st + (oh - oh0) * a->stride_h * row;
                if (a->act.kind == KANN_ACT_RELU)
                    direct_blocks_relu(&d, oh, c0, c1);
                else if (a->act.kind == KANN_ACT_NONE)
                    direct_blocks_none(&d, oh, c0, c1);
                else if (d.clamp)
                    direct_blocks_clamp(&d, oh, c0, c1);
                else
                    direct_blocks(&d, oh, c0, c1);
            }
        }
    }
}

void kann_f32_conv2d_packed_12x32_avx512(const void *args, const kann_exec *ex) {
    const kann_conv2d_packed_args *a = args;
    if (kann_conv2d_packed_direct(a)) {
        direct_drive(a, ex);
        return;
    }
    if (kann_conv2d_rows_avx512(a, ex) || kann_conv2d_lanes_avx512(a, ex)) return;
    kann_conv2d_packed_drive(args, ex, NR, kann_conv_microkernel_12x32_avx512,
                             kann_row_pair_avx512);
}

/* ---- conv2d_maxpool: the conv's rows into a ring, pooled from there ------------------------ */

/* Widest conv row the direct path pools with 16 channels together (its padded row of window
 * maxima, one vector a column, lives on the stack). */
#define MAXPOOL_DIRECT_W 512

/* What the direct path's conv rows need: the pass, its buffers and the view of the conv. */
typedef struct maxpool_direct {
    direct_pass d;
    direct_bufs *bufs;
    const float *x;
    const float *bt; /* the pass's biases, 16 per group, 0 past its channels */
    int across;      /* each conv row pooled across its columns in its slot (maxpool_across) */
} maxpool_direct;

/* Whether a conv row's slot can hold its own maxima across the pool's columns: pooled column r
 * written over column r only once no later window reads it (every window after r's starts past
 * r: stride above the left pad), and no more pooled columns than the slot's; windows of up to
 * 16 rows (maxpool_down's). */
static int maxpool_across_fits(const kann_conv2d_maxpool_args *a) {
    return a->pool_stride_w > a->pool_pad_left && a->w_out <= a->w_conv && a->pool_k_h <= 16;
}

/* Pooled columns [r0, r1) of a slot row ([column][16]) in place, window by window over the
 * columns inside the row, from -inf; NaNs skipped. */
static inline void maxpool_windows(const kann_conv2d_maxpool_args *a, float *row, size_t r0,
                                   size_t r1) {
    size_t w = a->w_conv, kw = a->pool_k_w, s = a->pool_stride_w, pl = a->pool_pad_left;
    for (size_t r = r0; r < r1; r++) {
        size_t left = r * s, j0 = left < pl ? 0 : left - pl, j1 = left + kw - pl;
        __m512 acc = _mm512_set1_ps(-INFINITY);
        for (size_t j = j0; j < (j1 < w ? j1 : w); j++)
            acc = _mm512_max_ps(_mm512_loadu_ps(row + j * 16), acc);
        _mm512_storeu_ps(row + r * 16, acc);
    }
}

/* The slot of a conv row ([group][column][16], groups gs floats apart) pooled across its
 * columns in place: pooled column r's maximum over its window's columns inside the row, 16
 * channels a vector, at column r. NaNs are skipped, as pool2d does. The windows wholly inside
 * the row, [r_in, r_end), of 3 columns (the common one) take their three loads at once. */
static void maxpool_across(const kann_conv2d_maxpool_args *a, float *slot, size_t gs,
                           size_t n_groups) {
    const __m512 none = _mm512_set1_ps(-INFINITY);
    size_t w = a->w_conv, kw = a->pool_k_w, s = a->pool_stride_w, pl = a->pool_pad_left;
    size_t r_in = (pl + s - 1) / s, r_end = w >= kw - pl ? (w + pl - kw) / s + 1 : 0;
    if (r_end > a->w_out) r_end = a->w_out;
    if (r_in > r_end || kw != 3) r_in = r_end;
    for (size_t g = 0; g < n_groups; g++) {
        float *row = slot + g * gs;
        maxpool_windows(a, row, 0, r_in);
        for (size_t r = r_in; r < r_end; r++) {
            const float *p = row + (r * s - pl) * 16;
            __m512 acc = _mm512_max_ps(_mm512_loadu_ps(p), none);
            acc = _mm512_max_ps(_mm512_loadu_ps(p + 16), acc);
            _mm512_storeu_ps(row + r * 16, _mm512_max_ps(_mm512_loadu_ps(p + 32), acc));
        }
        maxpool_windows(a, row, r_end, a->w_out);
    }
}

/* NP pixels of NG groups of 16 channels (NG * NP <= 24 accumulators) from the window rows' copy
 * at src into the ring slot out ([group][column][16], groups gs floats apart): per reduction
 * step NG weight vectors and NP broadcast inputs for NG * NP FMAs. One group of 16 pixels
 * (17 loads per 16 FMAs) ran the 7x7 stem at 85 % of the FMA rate on a core with full-width
 * 512-bit units; 2 groups of 12 pixels or 4 of 6 (14 or 10 loads per 24 FMAs) keep it fed. */
static inline __attribute__((always_inline)) void
maxpool_direct_block(const direct_pass *d, const float *wg, const float *bt, const float *src,
                     float *out, size_t gs, const int NG, const int NP) {
    __m512 acc[24]; /* acc[j * NG + g]: pixel j, group g (fixed size: kept in registers) */
#pragma GCC unroll 4
    for (int g = 0; g < NG; g++) {
        __m512 b = _mm512_loadu_ps(bt + 16 * g);
#pragma GCC unroll 16
        for (int j = 0; j < NP; j++)
            acc[j * NG + g] = b;
    }
    size_t K = d->K;
    for (size_t k = 0; k < K; k++) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int g = 0; g < NG; g++)
            wv[g] = _mm512_loadu_ps(wg + (g * K + k) * 16);
        const float *p = src + d->off[k];
        /* p opaque: each pixel's input a displacement from it, not an index register */
        __asm__("" : "+r"(p));
#pragma GCC unroll 16
        for (int j = 0; j < NP; j++) {
            __m512 x = _mm512_set1_ps(p[j]);
#pragma GCC unroll 4
            for (int g = 0; g < NG; g++)
                acc[j * NG + g] = _mm512_fmadd_ps(x, wv[g], acc[j * NG + g]);
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < NG; g++) {
        float *o = out + g * gs;
#pragma GCC unroll 16
        for (int j = 0; j < NP; j++)
            _mm512_storeu_ps(o + 16 * j,
                             d->vec_act ? vf_act(acc[j * NG + g], &d->a->act, d->lo, d->hi)
                                         : acc[j * NG + g]);
        if (!d->vec_act)
            for (size_t e = 0; e < (size_t)NP * 16; e++)
                o[e] = kann_act_apply(&d->a->act, o[e]);
    }
}

/* The last n < NP pixels of a row, NG groups: one block of exactly n, so that no column past
 * the row lands in the next group's part of the slot. */
#define MP_TAIL_CASE(NG, N)                                                                     \
    case N:                                                                                    \
        maxpool_direct_block(d, wg, bt, src, out, gs, NG, N);                                   \
        break;
static __attribute__((noinline)) void maxpool_direct_tail(const direct_pass *d, const float *wg,
                                                          const float *bt, const float *src,
                                                          float *out, size_t gs, int ng, size_t n) {
    if (ng == 4) {
        switch (n) { MP_TAIL_CASE(4, 1) MP_TAIL_CASE(4, 2) MP_TAIL_CASE(4, 3) MP_TAIL_CASE(4, 4)
                     MP_TAIL_CASE(4, 5) }
    } else if (ng == 3) {
        switch (n) { MP_TAIL_CASE(3, 1) MP_TAIL_CASE(3, 2) MP_TAIL_CASE(3, 3) MP_TAIL_CASE(3, 4)
                     MP_TAIL_CASE(3, 5) MP_TAIL_CASE(3, 6) MP_TAIL_CASE(3, 7) }
    } else {
        switch (n) { MP_TAIL_CASE(2, 1) MP_TAIL_CASE(2, 2) MP_TAIL_CASE(2, 3) MP_TAIL_CASE(2, 4)
                     MP_TAIL_CASE(2, 5) MP_TAIL_CASE(2, 6) MP_TAIL_CASE(2, 7) MP_TAIL_CASE(2, 8)
                     MP_TAIL_CASE(2, 9) MP_TAIL_CASE(2, 10) MP_TAIL_CASE(2, 11) }
    }
}
#undef MP_TAIL_CASE

/* Groups of a block: as many as the pass has, up to 4, while their weights stay within 20 KiB
 * of the L1 cache beside the window rows' copy (resnet18's 7x7 stem, K = 147: 2 groups). */
static int maxpool_direct_groups(const direct_pass *d) {
    int ng = (int)((d->nc + 15) / 16);
    while (ng > 1 && (size_t)ng * d->K * 16 * sizeof(float) > 20 * 1024)
        ng--;
    return ng > 4 ? 4 : ng;
}

/* Conv row i of the pass's channels into its ring slot, 16 channels of a pixel together
 * ([group][column][16]): blocks of NG groups by 24 / NG pixels (maxpool_direct_block), one
 * group by 16 pixels where the pass has one group or its weights are long; bias and activation
 * before the pool. No transpose: the pool takes whole vectors of channels, and only its output,
 * a quarter of the pixels or fewer, goes back to planes. */
static void maxpool_direct_row(const kann_conv2d_maxpool_args *a, const kann_exec *ex, size_t i,
                               size_t m_begin, size_t m_end, void *ctx) {
    maxpool_direct *md = ctx;
    const direct_pass *d = &md->d;
    (void)m_begin; /* the pass's channels from the slot's start */
    (void)m_end;
    direct_stage(d->a, md->x, i, md->bufs->st);
    size_t w = a->w_conv, w16 = (w + 15) / 16 * 16, K = d->K, gs = w16 * 16;
    float *slot = kann_maxpool_slot_at(a, ex, i % a->pool_k_h);
    size_t n_groups = (d->nc + 15) / 16;
    int ng = maxpool_direct_groups(d);
    for (size_t g = 0; g < n_groups; g += (size_t)ng) {
        int gn = n_groups - g < (size_t)ng ? (int)(n_groups - g) : ng;
        const float *wg = d->wt + g * K * 16, *bt = md->bt + g * 16;
        float *out = slot + g * gs;
        size_t ow = 0;
        if (gn == 1) { /* 16 pixels a block; the slot's columns run to w16 */
            for (; ow < w; ow += 16) {
                if (w - ow <= 8)
                    maxpool_direct_block(d, wg, bt, d->st + ow, out + ow * 16, gs, 1, 8);
                else
                    maxpool_direct_block(d, wg, bt, d->st + ow, out + ow * 16, gs, 1, 16);
            }
            continue;
        }
        size_t np = (size_t)(24 / gn);
        for (; ow + np <= w; ow += np) {
            if (gn == 4)
                maxpool_direct_block(d, wg, bt, d->st + ow, out + ow * 16, gs, 4, 6);
            else if (gn == 3)
                maxpool_direct_block(d, wg, bt, d->st + ow, out + ow * 16, gs, 3, 8);
            else
                maxpool_direct_block(d, wg, bt, d->st + ow, out + ow * 16, gs, 2, 12);
        }
        if (ow < w) maxpool_direct_tail(d, wg, bt, d->st + ow, out + ow * 16, gs, gn, w - ow);
    }
    if (md->across) maxpool_across(a, slot, gs, n_groups);
}

/* out[j]: 16 channels of pooled pixel j < n, turned into the rows of nl channel planes (hw
 * floats apart) from y on. */
static inline __attribute__((always_inline)) void maxpool_store_pixels(__m512 out[16], float *y,
                                                                       size_t hw, size_t nl,
                                                                       size_t n) {
    kann_transpose16_ps(out);
    __mmask16 keep = lanes(0, n);
    for (size_t l = 0; l < nl; l++)
        _mm512_mask_storeu_ps(y + l * hw, keep, out[l]);
}

/* Pooled row q of the pass's channels from the ring rows [lo, hi), each already pooled across
 * its columns (maxpool_across): 16 pooled pixels' maxima over the window rows, turned into 16
 * channel rows of y. NaNs are skipped, as pool2d does. */
static void maxpool_down(const kann_conv2d_maxpool_args *a, const kann_exec *ex, size_t q,
                         size_t lo, size_t hi, size_t m_begin, size_t m_end) {
    size_t w16 = ((size_t)a->w_conv + 15) / 16 * 16, w_out = a->w_out;
    size_t first = lo % a->pool_k_h, hw = (size_t)a->h_out * w_out;
    const __m512 none = _mm512_set1_ps(-INFINITY);
    const float *rows[16];
    size_t n_rows = 0;
    for (size_t i = lo, sl = first; i < hi; i++, sl = kann_maxpool_next_slot(a, sl))
        rows[n_rows++] = kann_maxpool_slot_at(a, ex, sl);
    float *y = kann_mref(ex, a->y) + q * w_out;
    for (size_t g = 0; g * 16 < m_end - m_begin; g++) {
        size_t nl = m_end - m_begin - g * 16 < 16 ? m_end - m_begin - g * 16 : 16;
        size_t at = g * w16 * 16;
        for (size_t r0 = 0; r0 < w_out; r0 += 16) {
            size_t n = w_out - r0 < 16 ? w_out - r0 : 16;
            /* 16 columns even past w_out (inside the slot's w16; their lanes are not stored) */
            __m512 out[16];
#pragma GCC unroll 16
            for (size_t j = 0; j < 16; j++)
                out[j] = none;
            for (size_t i = 0; i < n_rows; i++) {
                const float *p = rows[i] + at + r0 * 16;
#pragma GCC unroll 16
                for (size_t j = 0; j < 16; j++)
                    out[j] = _mm512_max_ps(_mm512_loadu_ps(p + j * 16), out[j]);
            }
            maxpool_store_pixels(out, y + (m_begin + g * 16) * hw + r0, hw, nl, n);
        }
    }
}

/* Pooled row q of the pass's channels from the ring rows [lo, hi) as maxpool_direct_row left
 * them: per group, each column's maximum over the window rows (16 channels a vector) into a row
 * padded with -inf, the window's columns, then 16 pooled pixels turned into 16 channel rows of
 * y. NaNs are skipped, as pool2d does. */
static void maxpool_direct_pool(const kann_conv2d_maxpool_args *a, const kann_exec *ex, size_t q,
                                size_t lo, size_t hi, size_t m_begin, size_t m_end) {
    size_t w = a->w_conv, w16 = (w + 15) / 16 * 16, pl = a->pool_pad_left;
    size_t kw = a->pool_k_w, s = a->pool_stride_w, w_out = a->w_out;
    size_t first = lo % a->pool_k_h, hw = (size_t)a->h_out * w_out;
    const __m512 none = _mm512_set1_ps(-INFINITY);
    /* the padded row: column c at pl + c, -inf before and after (the last window's reach) */
    size_t reach = (w_out - 1) * s + kw, n_pad = reach > pl + w ? reach : pl + w;
    __m512 vm[MAXPOOL_DIRECT_W + 2 * 16];
    for (size_t c = 0; c < pl; c++)
        vm[c] = none;
    for (size_t c = pl + w; c < n_pad; c++)
        vm[c] = none;
    float *y = kann_mref(ex, a->y) + q * w_out;
    for (size_t g = 0; g * 16 < m_end - m_begin; g++) {
        size_t nl = m_end - m_begin - g * 16 < 16 ? m_end - m_begin - g * 16 : 16;
        for (size_t c = 0; c < w; c++)
            vm[pl + c] = none;
        for (size_t i = lo, sl = first; i < hi; i++, sl = kann_maxpool_next_slot(a, sl)) {
            const float *r = kann_maxpool_slot_at(a, ex, sl) + g * w16 * 16;
            for (size_t c = 0; c < w; c++)
                vm[pl + c] = _mm512_max_ps(_mm512_loadu_ps(r + c * 16), vm[pl + c]);
        }
        for (size_t r0 = 0; r0 < w_out; r0 += 16) {
            size_t n = w_out - r0 < 16 ? w_out - r0 : 16;
            __m512 out[16];
            for (size_t j = 0; j < 16; j++) {
                __m512 acc = none;
                if (j < n) {
                    const __m512 *t = vm + (r0 + j) * s;
                    for (size_t v = 0; v < kw; v++)
                        acc = _mm512_max_ps(t[v], acc);
                }
                out[j] = acc;
            }
            maxpool_store_pixels(out, y + (m_begin + g * 16) * hw + r0, hw, nl, n);
        }
    }
}

void kann_f32_conv2d_maxpool_avx512(const void *args, const kann_exec *ex) {
    const kann_conv2d_maxpool_args *a = args;
    size_t m_begin, m_end, q_begin, q_end;
    kann_conv2d_maxpool_range(a, &m_begin, &m_end, &q_begin, &q_end);
    if (a->w_out == 0 || m_begin >= m_end || q_begin >= q_end) return;
    /* the conv alone, as the direct path sees it (rows into the ring: no y, no tile) */
    kann_conv2d_packed_args c = kann_conv2d_maxpool_conv(a);
    if (!kann_conv2d_packed_direct(&c) || a->pool_k_w > 16 ||
        (size_t)(a->w_out - 1) * a->pool_stride_w + a->pool_k_w > MAXPOOL_DIRECT_W ||
        (size_t)a->pool_pad_left + a->w_conv > MAXPOOL_DIRECT_W) {
        kann_conv2d_maxpool_packed(a, ex, kann_f32_conv2d_packed_12x32_avx512, maxpool_rows);
        return;
    }
    const float *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    direct_bufs bufs;
    maxpool_direct md;
    direct_setup(&md.d, &c, &bufs, c.k_h);
    md.bufs = &bufs;
    md.x = kann_cref(ex, a->x);
    md.across = maxpool_across_fits(a);
    float bt[DIRECT_CHANNELS];
    md.bt = bt;
    for (size_t m0 = m_begin; m0 < m_end; m0 += DIRECT_CHANNELS) {
        size_t nc = m_end - m0 < DIRECT_CHANNELS ? m_end - m0 : DIRECT_CHANNELS;
        direct_pass_weights(&md.d, w, m0, nc, &bufs);
        for (size_t l = 0; l < DIRECT_CHANNELS; l++)
            bt[l] = bias && l < nc ? bias[m0 + l] : 0.0f;
        kann_conv2d_maxpool_drive(a, ex, m0, m0 + nc, q_begin, q_end, maxpool_direct_row, &md,
                                  md.across ? maxpool_down : maxpool_direct_pool);
    }
}

/* dwblock: the lanes path where it applies, else the band's pointwise convs through the
 * 12 x 32 tile and its depthwise conv by the AVX-512 dwconv2d. */
void kann_f32_dwblock_avx512(const void *args, const kann_exec *ex) {
    if (kann_dwblock_lanes_avx512(args, ex, kann_conv_microkernel_12x32_avx512, NR)) return;
    kann_dwblock_drive(args, ex, kann_conv_microkernel_12x32_avx512, NR, kann_f32_dwconv2d_avx512);
}
