/* The AMX kernels of the 1x1 convs and of conv2d_packed's gathering and strided convs
 * (kann_amx.h): y = W x (x, or the gathered columns of B) as three bf16 tile products, with
 * conv2d_packed's and pointwise_lanes' bias, residual and activation, or pointwise_gap's activation
 * and average, applied to the sums as they leave the tiles.
 *
 * A record runs in strips of its pixels: the strip's input, every input channel of it, is split
 * into hi and lo pairs on the stack (B), then for each 32 output channels of the tile the
 * prepared weights' rows (A) go through the tiles against each 32 pixels of the strip: four
 * accumulator tiles of 16 channels by 16 pixels, and per 32 input channels
 *   C += A_hi B_hi, C += A_hi B_lo, C += A_lo B_hi.
 * The strip is as wide as the stack buffer holds (32 pixels at least, 16 past 1024 input
 * channels), so that a block of A,
 * fetched once from L3 or memory, serves all its pixels from L2. Each sum is the same whatever
 * the tile: parts of a record along either axis compute their outputs as the whole record does.
 * A gathering conv runs 32 pixels at a time: their columns gathered into the strip's place in
 * the scratch, split there, then every 32 output channels through the tiles. A conv of column
 * stride 2 runs 32 pixels of an output row at a time, its taps read from x and split on the
 * stack (no gather into memory first: sample_cnn's 48 -> 64 3x3 stride-2 conv, gathered that
 * way, took as long as on the FMA units, split straight from x 0.75 of it). */
#define KANN_VEC_BITS 512
#include <string.h>

#include "kann_amx.h"
#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"
#include "vec_math.h"
#include "simd_act.h"

/* ---- preparing the weights (scalar: it runs once per model) ----------------------------- */

static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f rounded to the nearest bf16, ties to even; a NaN stays a (quiet) NaN. */
static uint16_t bf16_round(float f) {
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* hi + lo = f to about 2^-17 of |f|. A finite f that rounds to infinity keeps its truncation
 * as hi; an infinity or NaN is hi alone. */
static void bf16_split(float f, uint16_t *hi, uint16_t *lo) {
    uint32_t u = float_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) {
        *hi = bf16_round(f);
        *lo = 0;
        return;
    }
    *hi = bf16_round(f);
    if ((*hi & 0x7f80u) == 0x7f80u) *hi = (uint16_t)(u >> 16);
    *lo = bf16_round(f - bits_float((uint32_t)*hi << 16));
}

static size_t round_k(uint32_t k) {
    return ((size_t)k + 31) / 32 * 32;
}

uint64_t kann_amx_gemm_bytes(const kann_amx_gemm *g) {
    return 2u * ((uint64_t)g->m + 32) * round_k(g->k) * sizeof(uint16_t);
}

void kann_amx_pack(const kann_amx_gemm *g, const uint8_t *consts, void *dst) {
    const float *w = (const float *)(consts + g->w_offset);
    size_t kp = round_k(g->k), rows = (size_t)g->m + 32, panel = g->panel;
    uint16_t *hi = dst, *lo = hi + rows * kp;
    memset(dst, 0, (size_t)kann_amx_gemm_bytes(g));
    for (size_t m = 0; m < g->m; m++)
        for (size_t k = 0; k < g->k; k++)
            bf16_split(w[(m / panel) * g->k * panel + k * panel + m % panel], &hi[m * kp + k],
                       &lo[m * kp + k]);
}

/* Where the tiles pay off: the split input costs about as much per pixel and input channel as
 * a 16-channel block of tile products, so the tiles run records of 64 output channels or more;
 * the weights' rows go through the tiles 32 input channels at a time, so fewer than 32 would
 * leave the tiles half empty. */
#define AMX_MIN_M 64
#define AMX_MIN_K 32

/* A conv the tiles take gathered: a scratch, a reduction of a multiple of 32. */
static int amx_gathers(const kann_conv2d_packed_args *a) {
    uint64_t K = (uint64_t)a->c_in * a->k_h * a->k_w;
    return a->scratch.space != KANN_SPACE_NONE && K % 32 == 0;
}

/* A conv the tiles take with its B split straight from x (run_window), gathered or not: a
 * window of 2 to AMX_WINDOW_TAPS taps at column stride 2 (the stride-1 convs go to Winograd or
 * the wide path), a reduction of 32 to AMX_WINDOW_K steps, not an image stem (the direct
 * path's). The 1x1 stride-2 downsamples stay gathered (resnet18's took 1.13 and 1.34 times as
 * long split from x). */
#define AMX_WINDOW_K (KANN_AMX_STACK / (32 * 4))
#define AMX_WINDOW_TAPS 49
static int amx_window(const kann_conv2d_packed_args *a) {
    uint64_t taps = (uint64_t)a->k_h * a->k_w, K = a->c_in * taps;
    return a->stride_w == 2 && taps >= 2 && taps <= AMX_WINDOW_TAPS && K >= AMX_MIN_K &&
           K <= AMX_WINDOW_K && !kann_conv2d_packed_direct(a);
}

static int gemm_fits(uint32_t m, uint32_t k, kann_ref w) {
    return w.space == KANN_SPACE_CONST && m >= AMX_MIN_M && k >= AMX_MIN_K && k <= KANN_AMX_MAX_K;
}

int kann_amx_gemm_of(uint32_t kernel, const void *args, kann_amx_gemm *g) {
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D_PACKED: {
        const kann_conv2d_packed_args *a = args;
        if (kann_conv2d_packed_pointwise(a)) {
            if (!gemm_fits(a->c_out, a->c_in, a->w)) return 0;
            *g = (kann_amx_gemm){a->w.offset, a->c_out, a->c_in, KANN_CONV_PANEL};
            return 1;
        }
        /* a gathering conv: its input columns gathered and split in place in its scratch, 32
         * pixels a strip (K floats a pixel: room for the pairs), K a multiple of 32; else (a
         * strided conv) at column stride 2 split straight from x (amx_window) */
        uint64_t K = (uint64_t)a->c_in * a->k_h * a->k_w;
        if (a->w.space != KANN_SPACE_CONST || a->c_out < AMX_MIN_M || K > UINT32_MAX ||
            (!amx_gathers(a) && !amx_window(a)))
            return 0;
        *g = (kann_amx_gemm){a->w.offset, a->c_out, (uint32_t)K, KANN_CONV_PANEL};
        return 1;
    }
    case KANN_KERNEL_F32_POINTWISE_LANES: {
        const kann_pointwise_lanes_args *a = args;
        if (!gemm_fits(a->c_out, a->c_in, a->w)) return 0;
        *g = (kann_amx_gemm){a->w.offset, a->c_out, a->c_in, KANN_GAP_BLOCK};
        return 1;
    }
    case KANN_KERNEL_F32_POINTWISE_GAP: {
        const kann_pointwise_gap_args *a = args;
        if (!gemm_fits(a->c_out, a->c_in, a->w)) return 0;
        *g = (kann_amx_gemm){a->w.offset, a->c_out, a->c_in, KANN_GAP_BLOCK};
        return 1;
    }
    default:
        return 0;
    }
}

/* The prepared entry of the weights at w_offset, if they are g's. */
static const kann_amx_entry *find_entry(const void *prepared, const kann_amx_gemm *g) {
    if (!prepared) return NULL;
    const kann_amx_table *t = prepared;
    size_t lo = 0, hi = (size_t)t->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->e[mid].w_offset < g->w_offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->count) return NULL;
    const kann_amx_entry *e = &t->e[lo];
    return e->w_offset == g->w_offset && e->m == g->m && e->k == g->k && e->panel == g->panel
               ? e
               : NULL;
}

/* ---- the tiles -------------------------------------------------------------------------- */

/* Palette 1: eight tiles of 16 rows by 64 bytes (16 floats, or 32 bf16 numbers, a row). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* A constant: GCC does not see _tile_loadconfig read the bytes of a local configuration, and
 * may drop the stores of its rows and columns (a build of it that did left every tile
 * unconfigured: the first tile load raised SIGILL). */
static const _Alignas(64) tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

static void tiles_configure(void) {
    _tile_loadconfig(&config);
}

/* The tiles, by number (the intrinsics take literal numbers): accumulators 0 (rows 0-15,
 * pixels 0-15), 1 (rows 0-15, pixels 16-31), 2 and 3 (rows 16-31); 4 and 5 rows 0-15 and 16-31
 * of A, 6 and 7 pixels 0-15 and 16-31 of B. */

#define B_TILE 512 /* bf16 numbers in a tile: 16 rows of 32 */

/* Rows 0-15 (and 16-31) of A from a, rows kp bf16 numbers apart, 32 of them. */
static inline void load_a(const uint16_t *a, size_t kp, int two_m) {
    _tile_loadd(4, a, kp * sizeof(uint16_t));
    if (two_m) _tile_loadd(5, a + 16 * kp, kp * sizeof(uint16_t));
}

/* Where a block of B lies for one 32-deep step: its hi and lo tiles of pixels 0-15, their rows
 * `stride` bytes apart, those of pixels 16-31 `next` bytes on. */
typedef struct b_step {
    const uint8_t *hi, *lo;
    size_t stride, next;
} b_step;

/* Pixels 0-15 (and 16-31, where the block has them) of B from b. */
static inline void load_b(const uint8_t *b, const b_step *bs, int two_n) {
    _tile_loadd(6, b, bs->stride);
    if (two_n) _tile_loadd(7, b + bs->next, bs->stride);
}

/* The accumulators in use += A B. */
static inline void dot_2x2(int two_m, int two_n) {
    _tile_dpbf16ps(0, 4, 6);
    if (two_n) _tile_dpbf16ps(1, 4, 7);
    if (two_m) _tile_dpbf16ps(2, 5, 6);
    if (two_m && two_n) _tile_dpbf16ps(3, 5, 7);
}

/* One 32-deep step of the 32 x 32 sums: hi x hi, hi x lo, lo x hi (A's rows kp numbers apart). */
static inline void dot_step(const uint16_t *ah, const uint16_t *al, size_t kp, int two_m,
                            const b_step *bs, int two_n) {
    load_a(ah, kp, two_m);
    load_b(bs->hi, bs, two_n);
    dot_2x2(two_m, two_n);
    load_b(bs->lo, bs, two_n);
    dot_2x2(two_m, two_n);
    load_a(al, kp, two_m);
    load_b(bs->hi, bs, two_n);
    dot_2x2(two_m, two_n);
}

/* The accumulators to zero before a block, and out to c[32][32] after it. */
static inline void zero_sums(void) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
}

static inline void store_sums(float c[32][32]) {
    _tile_stored(0, &c[0][0], 128);
    _tile_stored(1, &c[0][16], 128);
    _tile_stored(2, &c[16][0], 128);
    _tile_stored(3, &c[16][16], 128);
}

/* One strip of B: per 32 input channels, a tile for each 16 pixels of the strip (16 rows, row r
 * holding input channels 2r and 2r + 1 of each pixel side by side); hi then lo. */
typedef struct strip_b {
    uint16_t *hi, *lo;
    size_t pixels; /* in the strip, a multiple of 16 */
} strip_b;

/* The tile of pixels [16 h, 16 h + 16) of the strip at input-channel step `step`; the one of the
 * next 16 pixels follows it. */
static uint16_t *b_tile(uint16_t *b, const strip_b *s, size_t step, size_t h) {
    return b + (step * (s->pixels / 16) + h) * B_TILE;
}

/* The pairs of channels a and b (16 pixels each) as bf16 hi and lo: pixel j's pair in 32 bits,
 * a's number in the low half. */
static inline void split_pair(__m512 a, __m512 b, __m512i *hi, __m512i *lo) {
    __m256bh ha = _mm512_cvtneps_pbh(a), hb = _mm512_cvtneps_pbh(b);
    __m256bh la = _mm512_cvtneps_pbh(_mm512_sub_ps(a, _mm512_cvtpbh_ps(ha)));
    __m256bh lb = _mm512_cvtneps_pbh(_mm512_sub_ps(b, _mm512_cvtpbh_ps(hb)));
    *hi = _mm512_or_si512(_mm512_cvtepu16_epi32((__m256i)ha),
                          _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)hb), 16));
    *lo = _mm512_or_si512(_mm512_cvtepu16_epi32((__m256i)la),
                          _mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)lb), 16));
}

/* Channel pairs ahead of the one being split whose rows are prefetched: x often comes from the
 * other core's cache (written there by the other stream), and each of its rows is read in
 * short runs, hw floats apart, which the hardware's prefetcher does not follow. */
#define SPLIT_AHEAD 4

/* Splits x's input channels [0, k) of pixels [p, p + n) (row stride hw) into the strip's hi and
 * lo tiles, a pair of channel rows at a time along the strip; channels past k and pixels past n
 * are zero. */
static void split_input(const float *x, size_t hw, size_t k, size_t p, size_t n, const strip_b *s) {
    size_t kp = round_k((uint32_t)k);
    for (size_t k0 = 0; k0 < kp; k0 += 2) {
        for (size_t ahead = k0 + 2 * SPLIT_AHEAD; ahead < k0 + 2 * SPLIT_AHEAD + 2; ahead++)
            if (ahead < k)
                for (size_t c = 0; c < n; c += 16)
                    _mm_prefetch((const char *)(x + ahead * hw + p + c), _MM_HINT_T0);
        size_t step = k0 / 32, r = (k0 % 32) / 2;
        for (size_t h = 0; h < s->pixels / 16; h++) {
            size_t first = h * 16, cols = first >= n ? 0 : (n - first < 16 ? n - first : 16);
            __mmask16 mask = (__mmask16)((1u << cols) - 1);
            __m512 a =
                k0 < k ? _mm512_maskz_loadu_ps(mask, x + k0 * hw + p + first) : _mm512_setzero_ps();
            __m512 b = k0 + 1 < k ? _mm512_maskz_loadu_ps(mask, x + (k0 + 1) * hw + p + first)
                                  : _mm512_setzero_ps();
            __m512i hi, lo;
            split_pair(a, b, &hi, &lo);
            _mm512_store_si512(b_tile(s->hi, s, step, h) + r * 32, hi);
            _mm512_store_si512(b_tile(s->lo, s, step, h) + r * 32, lo);
        }
    }
}

/* Lanes [lo, hi) of 16, clipped to [0, 16). */
static __mmask16 lanes_between(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* Where one tap (kh, kw) of a strip's window reads, for every input channel: its offset in a
 * channel plane and, per 16 output pixels, the lanes of the two 16-float loads (at the offset
 * and 16 on) inside x's row, none where the row is padding. */
typedef struct window_tap {
    ptrdiff_t off;
    __mmask16 m0[2], m1[2];
} window_tap;

/* Tap t's 16 pixels of half h for the channel plane at x: input columns off, off + 2, ...; the
 * lanes past `live` zero. */
static inline __m512 tap_pixels(const float *x, const window_tap *t, size_t h, __mmask16 live,
                                __m512i even) {
    const float *r = x + t->off + 32 * (ptrdiff_t)h;
    return _mm512_maskz_permutex2var_ps(live, _mm512_maskz_loadu_ps(t->m0[h], r), even,
                                        _mm512_maskz_loadu_ps(t->m1[h], r + 16));
}

/* B of output row oh's pixels [ow0, ow0 + n) (n <= 32) of a conv of column stride 2, read from x
 * tap by tap (no gather into memory first) and split into the strip's hi and lo tiles a pair of
 * reduction steps at a time; steps past K and pixels past n zero. */
static void split_window(const kann_conv2d_packed_args *a, const float *x, size_t oh, size_t ow0,
                         size_t n, const strip_b *s) {
    const size_t taps = (size_t)a->k_h * a->k_w, K = a->c_in * taps, kp = round_k((uint32_t)K);
    const size_t plane = (size_t)a->h_in * a->w_in;
    const int64_t w = a->w_in, ih0 = (int64_t)oh * a->stride_h - a->pad_top;
    window_tap tw[AMX_WINDOW_TAPS];
    const __mmask16 live[2] = {lanes_between(0, (int64_t)n), lanes_between(0, (int64_t)n - 16)};
    for (size_t t = 0; t < taps; t++) {
        int64_t ih = ih0 + (int64_t)(t / a->k_w) * a->dil_h;
        int64_t iw = (int64_t)ow0 * 2 - a->pad_left + (int64_t)(t % a->k_w) * a->dil_w;
        int inside = ih >= 0 && ih < (int64_t)a->h_in;
        tw[t].off = (ptrdiff_t)(inside ? ih * w : 0) + (ptrdiff_t)iw;
        for (size_t h = 0; h < 2; h++) {
            int64_t at = iw + 32 * (int64_t)h;
            tw[t].m0[h] = inside ? lanes_between(-at, w - at) : 0;
            tw[t].m1[h] = inside ? lanes_between(-at - 16, w - at - 16) : 0;
        }
    }
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const size_t halves = s->pixels / 16;
    size_t c = 0, t = 0; /* step k0's channel and tap */
    for (size_t k0 = 0; k0 < kp; k0 += 2) {
        size_t c1 = t + 1 == taps ? c + 1 : c, t1 = t + 1 == taps ? 0 : t + 1;
        const float *xa = k0 < K ? x + c * plane : NULL;
        const float *xb = k0 + 1 < K ? x + c1 * plane : NULL;
        size_t step = k0 / 32, r = (k0 % 32) / 2;
        for (size_t h = 0; h < halves; h++) {
            __m512i hi, lo;
            split_pair(xa ? tap_pixels(xa, &tw[t], h, live[h], even) : _mm512_setzero_ps(),
                       xb ? tap_pixels(xb, &tw[t1], h, live[h], even) : _mm512_setzero_ps(), &hi,
                       &lo);
            _mm512_store_si512(b_tile(s->hi, s, step, h) + r * 32, hi);
            _mm512_store_si512(b_tile(s->lo, s, step, h) + r * 32, lo);
        }
        c = t1 + 1 == taps ? c1 + 1 : c1;
        t = t1 + 1 == taps ? 0 : t1 + 1;
    }
}

/* What happens to the sums as they leave the tiles. */
typedef struct epilogue {
    const float *bias; /* per output channel, or NULL */
    const float *res;  /* [m][hw], or NULL */
    float *y;          /* [m][hw]; pointwise_gap: [m], the tile's totals so far */
    size_t hw;
    const kann_act *act;
    int gap, vec_act;
    int clamp; /* act is a clamp (kann_act_is_clamp): a max and a min, not vf_act's switch */
    vf lo, hi; /* the clamp's bounds, or vf_act's */
} epilogue;

/* Rows [m, m + rows) and pixels [p, p + n) of the sums, c[row][pixel] (32 by 32); CLAMP: e's
 * activation is a clamp. */
static inline __attribute__((always_inline)) void finish_as(const epilogue *e, float c[32][32],
                                                            size_t m, size_t rows, size_t p,
                                                            size_t n, const int CLAMP) {
    for (size_t r = 0; r < rows; r++) {
        size_t row = m + r;
        vf b = vf_set1(e->bias ? e->bias[row] : 0.0f);
        float total = 0.0f;
        for (size_t j = 0; j < n; j += 16) {
            size_t cols = n - j < 16 ? n - j : 16;
            __mmask16 mask = (__mmask16)((1u << cols) - 1);
            vf v = vf_add(_mm512_load_ps(&c[r][j]), b);
            if (e->gap) {
                if (CLAMP) {
                    v = vf_min(e->hi, vf_max(e->lo, v));
                } else if (e->vec_act) {
                    v = vf_act(v, e->act, e->lo, e->hi);
                } else {
                    _Alignas(64) float t[16];
                    _mm512_store_ps(t, v);
                    kann_act_apply_row(e->act, t, cols);
                    v = _mm512_load_ps(t);
                }
                total += _mm512_mask_reduce_add_ps(mask, v);
                continue;
            }
            float *y = e->y + row * e->hw + p + j;
            if (e->res) v = vf_add(v, _mm512_maskz_loadu_ps(mask, e->res + row * e->hw + p + j));
            if (CLAMP)
                v = vf_min(e->hi, vf_max(e->lo, v));
            else if (e->vec_act)
                v = vf_act(v, e->act, e->lo, e->hi);
            _mm512_mask_storeu_ps(y, mask, v);
            if (!CLAMP && !e->vec_act) kann_act_apply_row(e->act, y, cols);
        }
        if (e->gap) e->y[row] += total;
    }
}

static void finish(const epilogue *e, float c[32][32], size_t m, size_t rows, size_t p, size_t n) {
    if (e->clamp)
        finish_as(e, c, m, rows, p, n, 1);
    else
        finish_as(e, c, m, rows, p, n, 0);
}

/* A's rows of a prepared tensor: hi and lo, kp numbers a row. */
typedef struct a_rows {
    const uint16_t *hi, *lo;
    size_t kp;
} a_rows;

static a_rows a_of(const kann_amx_entry *ent, const void *prepared) {
    size_t kp = round_k(ent->k);
    const uint16_t *hi = (const uint16_t *)((const uint8_t *)prepared + ent->data);
    return (a_rows){hi, hi + ((size_t)ent->m + 32) * kp, kp};
}

/* Output channels [m, m + 32) (none past m1) over one block of n <= 32 pixels: the sums over
 * every 32-deep step (B's step 0 at bs, each next step `advance` bytes on), out through e at
 * pixels [p, p + n). */
static void block_out(const a_rows *A, size_t m, size_t m1, b_step bs, size_t advance, size_t p,
                      size_t n, float c[32][32], const epilogue *e) {
    int two_m = m1 - m > 16, two_n = n > 16;
    const uint16_t *ah = A->hi + m * A->kp, *al = A->lo + m * A->kp;
    zero_sums();
    for (size_t step = 0; step < A->kp / 32; step++, bs.hi += advance, bs.lo += advance)
        dot_step(ah + step * 32, al + step * 32, A->kp, two_m, &bs, two_n);
    store_sums(c);
    finish(e, c, m, m1 - m < 32 ? m1 - m : 32, p, n);
}

/* Output channels [m0, m1) by pixels [p0, p1) of y = W x, x [k][hw]. */
static void run_tiles(const kann_amx_entry *ent, const void *prepared, const float *x, size_t hw,
                      size_t m0, size_t m1, size_t p0, size_t p1, const epilogue *e) {
    a_rows A = a_of(ent, prepared);
    size_t kp = A.kp;
    /* B of as many pixels as fill KANN_AMX_STACK bytes (hi and lo: 4 bytes each): whole
     * 32-pixel blocks, or 16 pixels past 1024 input channels */
    _Alignas(64) uint16_t b_hi[KANN_AMX_STACK / 4], b_lo[KANN_AMX_STACK / 4];
    _Alignas(64) float c[32][32];
    size_t wide = KANN_AMX_STACK / (kp * 4 * 16) * 16;
    if (wide >= 32) wide = wide / 32 * 32;
    tiles_configure();
    for (size_t p = p0; p < p1; p += wide) {
        size_t n = p1 - p < wide ? p1 - p : wide;
        strip_b s = {b_hi, b_lo, (n + 15) / 16 * 16};
        split_input(x, hw, ent->k, p, n, &s);
        size_t advance = s.pixels / 16 * B_TILE * sizeof(uint16_t); /* one step of the strip */
        for (size_t m = m0; m < m1; m += 32)
            for (size_t q = 0; q < n; q += 32) {
                b_step bs = {(const uint8_t *)b_tile(b_hi, &s, 0, q / 16),
                             (const uint8_t *)b_tile(b_lo, &s, 0, q / 16), 64,
                             B_TILE * sizeof(uint16_t)};
                block_out(&A, m, m1, bs, advance, p + q, n - q < 32 ? n - q : 32, c, e);
            }
    }
    _tile_release();
}

/* Rows 2i and 2i + 1 of b (32 floats each: a strip's gathered columns) become, in the same 256
 * bytes, their pairs' hi (pixel j's two numbers side by side) then lo: B tiles read them 256
 * bytes a row apart, pixels 16-31 64 bytes on, lo 128 bytes on. */
static void split_strip(float *b, size_t k) {
    for (size_t i = 0; i < k / 2; i++) {
        float *r = b + 2 * i * 32;
        __m512i hi[2], lo[2];
        for (int h = 0; h < 2; h++)
            split_pair(_mm512_loadu_ps(r + 16 * h), _mm512_loadu_ps(r + 32 + 16 * h), &hi[h],
                       &lo[h]);
        _mm512_storeu_si512(r, hi[0]);
        _mm512_storeu_si512(r + 16, hi[1]);
        _mm512_storeu_si512(r + 32, lo[0]);
        _mm512_storeu_si512(r + 48, lo[1]);
    }
}

/* Output channels [m0, m1) by pixels [p0, p1) of a gathering conv: 32 pixels at a time their
 * columns of B (K numbers each) gathered into the strip's place in the scratch (the AVX-512
 * variant's gather: strip s at s * 32 * K floats), split there into pairs, then every 32 output
 * channels through the tiles. p0 is a multiple of 32. */
static void run_gathered(const kann_amx_entry *ent, const void *prepared,
                         const kann_conv2d_packed_args *a, const kann_exec *ex, size_t m0,
                         size_t m1, size_t p0, size_t p1, const epilogue *e) {
    size_t K = ent->k; /* a multiple of 32 */
    a_rows A = a_of(ent, prepared);
    const float *x = kann_cref(ex, a->x);
    float *scratch = kann_mref(ex, a->scratch);
    _Alignas(64) float c[32][32];
    tiles_configure();
    for (size_t p = p0; p < p1; p += 32) {
        size_t n = p1 - p < 32 ? p1 - p : 32;
        float *strip = scratch + p * K;
        kann_conv2d_packed_gather(a, x, strip, p, p + n, 32);
        split_strip(strip, K);
        const uint8_t *b = (const uint8_t *)strip;
        for (size_t m = m0; m < m1; m += 32)
            block_out(&A, m, m1, (b_step){b, b + 128, 256, 64}, 16 * 256, p, n, c, e);
    }
    _tile_release();
}

/* Output channels [m0, m1) by pixels [p0, p1) of a strided conv: per output row, 32 pixels at a
 * time, their B split straight from x (split_window), then every 32 output channels through
 * the tiles. */
static void run_window(const kann_amx_entry *ent, const void *prepared,
                       const kann_conv2d_packed_args *a, const kann_exec *ex, size_t m0, size_t m1,
                       size_t p0, size_t p1, const epilogue *e) {
    a_rows A = a_of(ent, prepared);
    size_t w_out = a->w_out;
    const float *x = kann_cref(ex, a->x);
    _Alignas(64) uint16_t b_hi[KANN_AMX_STACK / 4], b_lo[KANN_AMX_STACK / 4];
    _Alignas(64) float c[32][32];
    tiles_configure();
    for (size_t oh = p0 / w_out; oh * w_out < p1; oh++) {
        size_t c0 = oh * w_out < p0 ? p0 - oh * w_out : 0;
        size_t c1 = (oh + 1) * w_out > p1 ? p1 - oh * w_out : w_out;
        for (size_t ow = c0; ow < c1; ow += 32) {
            size_t n = c1 - ow < 32 ? c1 - ow : 32;
            strip_b s = {b_hi, b_lo, (n + 15) / 16 * 16};
            split_window(a, x, oh, ow, n, &s);
            b_step bs = {(const uint8_t *)b_hi, (const uint8_t *)b_lo, 64,
                         B_TILE * sizeof(uint16_t)};
            for (size_t m = m0; m < m1; m += 32)
                block_out(&A, m, m1, bs, s.pixels / 16 * B_TILE * sizeof(uint16_t), oh * w_out + ow,
                          n, c, e);
        }
    }
    _tile_release();
}

static void epilogue_init(epilogue *e, const kann_exec *ex, kann_ref bias, kann_ref res, float *y,
                          size_t hw, const kann_act *act, int gap) {
    e->bias = bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, bias);
    e->res = res.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, res);
    e->y = y;
    e->hw = hw;
    e->act = act;
    e->gap = gap;
    e->vec_act = kann_act_vectorizes(act);
    e->clamp = kann_act_is_clamp(act);
    e->lo = vf_set1(kann_act_store_lo(act, e->clamp));
    e->hi = vf_set1(kann_act_hi(act));
}

static const kann_ref no_ref = {KANN_SPACE_NONE, 0, 0};

/* ---- the kernels ------------------------------------------------------------------------ */

/* The prepared weights of record (kernel, args), NULL where it runs on the AVX-512 variant. */
static const kann_amx_entry *entry_of(uint32_t kernel, const void *args, const kann_exec *ex) {
    kann_amx_gemm g;
    return kann_amx_gemm_of(kernel, args, &g) ? find_entry(ex->prepared, &g) : NULL;
}

void kann_f32_conv2d_packed_amx(const void *args, const kann_exec *ex) {
    const kann_conv2d_packed_args *a = args;
    const kann_amx_entry *ent = entry_of(KANN_KERNEL_F32_CONV2D_PACKED, args, ex);
    if (!ent) {
        kann_f32_conv2d_packed_12x32_avx512(args, ex);
        return;
    }
    size_t m0, m1, p0, p1;
    kann_conv2d_packed_range(a, &m0, &m1, &p0, &p1);
    if (m0 >= m1 || p0 >= p1) return;
    size_t hw = (size_t)a->h_out * a->w_out;
    epilogue e;
    epilogue_init(&e, ex, a->bias, a->residual, kann_mref(ex, a->y), hw, &a->act, 0);
    if (kann_conv2d_packed_pointwise(a))
        run_tiles(ent, ex->prepared, kann_cref(ex, a->x), hw, m0, m1, p0, p1, &e);
    else if (amx_window(a))
        run_window(ent, ex->prepared, a, ex, m0, m1, p0, p1, &e);
    else
        run_gathered(ent, ex->prepared, a, ex, m0, m1, p0, p1, &e);
}

void kann_f32_pointwise_lanes_amx(const void *args, const kann_exec *ex) {
    const kann_pointwise_lanes_args *a = args;
    const kann_amx_entry *ent = entry_of(KANN_KERNEL_F32_POINTWISE_LANES, args, ex);
    if (!ent) {
        kann_f32_pointwise_lanes_avx512(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end) return;
    size_t m0, m1, p0, p1;
    kann_pointwise_lanes_tile(a, &m0, &m1, &p0, &p1);
    epilogue e;
    epilogue_init(&e, ex, a->bias, a->residual, kann_mref(ex, a->y), a->hw, &a->act, 0);
    run_tiles(ent, ex->prepared, kann_cref(ex, a->x), a->hw, m0, m1, p0, p1, &e);
}

void kann_f32_pointwise_gap_amx(const void *args, const kann_exec *ex) {
    const kann_pointwise_gap_args *a = args;
    const kann_amx_entry *ent = entry_of(KANN_KERNEL_F32_POINTWISE_GAP, args, ex);
    if (!ent) {
        kann_f32_pointwise_gap_avx512(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end) return;
    float *y = kann_mref(ex, a->y);
    for (size_t m = a->tile.begin; m < a->tile.end; m++)
        y[m] = 0.0f;
    epilogue e;
    epilogue_init(&e, ex, a->bias, no_ref, y, a->hw, &a->act, 1);
    run_tiles(ent, ex->prepared, kann_cref(ex, a->x), a->hw, a->tile.begin, a->tile.end, 0, a->hw,
              &e);
    float inv = 1.0f / (float)a->hw;
    for (size_t m = a->tile.begin; m < a->tile.end; m++)
        y[m] *= inv;
}
