/* conv2d_winograd for AVX-512: the P GEMMs of each block of 32 tiles on a 12 x 32 register
 * tile (24 ZMM accumulators), or 12 x 16 for a block of at most 16 tiles (and conv2d_packed's
 * column tail for up to 8 more); the transforms 16 tiles a vector (the columns of the tiles split
 * out of the rows by permutes, masked loads and stores at the edges of x and y), one run of a
 * tile row each or, packed, the ends of several tile rows, for F(2x2, 3x3) and F(4x4, 3x3). */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_packed.h"
#include "ref/conv2d_winograd.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"
#include "wino_vec.h"

/* Reduction steps the weights are prefetched ahead. A panel's weights at a position (c_in x 12
 * floats) are read once per block, from memory for all but the smallest layers: without the
 * prefetch the hardware's prefetcher, which starts again at every 4 KiB page and at every panel,
 * left the GEMMs waiting (resnet18's 28x28 and 14x14 layers 30 % slower). The prefetch runs on
 * into the panel of the next GEMM (u_next). */
#define WINO_U_PREFETCH 64

/* The rows x 32 (w == 2) or rows x 16 (w == 1) register tile over a block's first 16 w
 * columns, rows 4, 8 or 12 of the panel, and with tail (w == 1) column 16 too, the panel's rows
 * in the lanes of one more FMA a step (a 7x7 grid's second block of 17 tiles: the column tail
 * through conv2d_packed's microkernel cost as much again in calls and set-up; squeezenet1_1's
 * 13x13 expand convs over 64 channels alone, one thread, 140 -> 136 us, its 27x27 ones 103 ->
 * 100); w, rows and tail are constants in each inlined copy, so the
 * accumulators stay in registers. Their loops are unrolled by pragma: left to itself gcc kept
 * the accumulator array on the stack after the reduction and copied it to m through it, 24
 * more stores and 24 loads a GEMM, as many as the FMA cycles of 4 reduction steps (squeezenet1_1's
 * 55x55 Winograd convs over 16 channels, alone: 150 -> 129-135 us). */
static inline __attribute__((always_inline)) void gemm_rxw(const float *u, const float *u_next,
                                                           const float *v, size_t c_in, float *m,
                                                           int rows, int w, int tail) {
    __m512 c[KANN_CONV_PANEL][2];
    __m512 d = _mm512_setzero_ps(); /* tail: column 16 with the panel's rows in the lanes */
    const __mmask16 panel = (__mmask16)((1u << KANN_CONV_PANEL) - 1u);
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int h = 0; h < w; h++)
            c[r][h] = _mm512_setzero_ps();
    size_t ahead = c_in < WINO_U_PREFETCH ? c_in : WINO_U_PREFETCH;
    const float *pf = u + ahead * KANN_CONV_PANEL, *u_end = u + c_in * KANN_CONV_PANEL;
    for (size_t k = 0; k < c_in; k++, u += KANN_CONV_PANEL, v += KANN_WINO_BLOCK) {
        if (pf == u_end) pf = u_next;
        _mm_prefetch((const char *)pf, _MM_HINT_T0);
        pf += KANN_CONV_PANEL;
        for (int h = 0; h < w; h++)
            _mm_prefetch((const char *)(v + 4 * KANN_WINO_BLOCK + 16 * h), _MM_HINT_T0);
        __m512 b[2];
        for (int h = 0; h < w; h++)
            b[h] = _mm512_loadu_ps(v + 16 * h);
        for (int r = 0; r < rows; r++) {
            __m512 wr = _mm512_set1_ps(u[r]);
            for (int h = 0; h < w; h++)
                c[r][h] = _mm512_fmadd_ps(wr, b[h], c[r][h]);
        }
        if (tail)
            d = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(panel, u), _mm512_set1_ps(v[16]), d);
    }
#pragma GCC unroll 12
    for (int r = 0; r < rows; r++)
#pragma GCC unroll 2
        for (int h = 0; h < w; h++)
            _mm512_storeu_ps(m + r * KANN_WINO_BLOCK + 16 * h, c[r][h]);
    if (tail) {
        float col[16];
        _mm512_storeu_ps(col, d);
        for (int r = 0; r < rows; r++)
            m[r * KANN_WINO_BLOCK + 16] = col[r];
    }
}

/* Columns [16, n) of a block of 18 to 16 + KANN_CONV_TAIL_COLS tiles through conv2d_packed's
 * microkernel, which takes so few columns
 * with the panel's rows in the lanes (its column tail), storing the sums without an epilogue:
 * cheaper than a second vector of mostly zero columns. */

static void gemm_tail(const float *u, const float *v, size_t c_in, size_t n, size_t mr, float *m) {
    static const ptrdiff_t tap0[1] = {0};
    kann_conv_tile t = {0};
    t.w = u;
    t.b = v + 16;
    t.n_groups = c_in;
    t.b_stride = KANN_WINO_BLOCK;
    t.n_taps = 1;
    t.taps = tap0;
    t.n = n - 16;
    t.mr = mr;
    t.y = m + 16;
    t.ldy = KANN_WINO_BLOCK;
    t.first = 1;
    t.last = 0;
    kann_conv_microkernel_12x32_avx512(&t);
}

/* The GEMM of a block with `rows` of the panel's rows (a constant per copy). */
static inline __attribute__((always_inline)) void gemm_rows(const float *u, const float *u_next,
                                                            const float *v, size_t c_in, size_t n,
                                                            size_t mr, float *m, int rows) {
    if (n > 16 + KANN_CONV_TAIL_COLS) {
        gemm_rxw(u, u_next, v, c_in, m, rows, 2, 0);
        return;
    }
    if (n == 17) { /* a 7x7 grid's second block */
        gemm_rxw(u, u_next, v, c_in, m, rows, 1, 1);
        return;
    }
    gemm_rxw(u, u_next, v, c_in, m, rows, 1, 0);
    if (n > 16) gemm_tail(u, v, c_in, n, mr, m);
}

/* The GEMMs and both transforms are calls of their own (noinline), so that a profile tells
 * their shares apart. A panel's last rows past c_out are not computed: 64 channels are five
 * panels of 12 and one of 4, whose 8 zero rows took a ninth of the GEMMs (resnet18's and
 * squeezenet1_1's 64-channel layers). */
static __attribute__((noinline)) void gemm_panel(const float *u, const float *u_next,
                                                 const float *v, size_t c_in, size_t n, size_t mr,
                                                 float *m) {
    if (mr > 8)
        gemm_rows(u, u_next, v, c_in, n, mr, m, 12);
    else if (mr > 4)
        gemm_rows(u, u_next, v, c_in, n, mr, m, 8);
    else
        gemm_rows(u, u_next, v, c_in, n, mr, m, 4);
}

/* The first k lanes, k clamped to [0, 16]. */
static inline __mmask16 first_lanes(int64_t k) {
    return k <= 0 ? 0 : k >= 16 ? 0xffff : (__mmask16)((1u << k) - 1u);
}

/* The lanes [lo, hi) of a vector, clamped to [0, 16). */
static inline __mmask16 lane_range(int64_t lo, int64_t hi) {
    return first_lanes(hi) & (__mmask16)~first_lanes(lo);
}

/* Lanes [j, j + len) of a block (len <= 16): tiles tw0 .. tw0 + len - 1 of tile row th; lanes:
 * its lanes in its group's vector, or all of them for a group of one run from lane 0 (lanes
 * past the run then hold whatever the rows have there). */
typedef struct tile_run {
    size_t j, len, th, tw0;
    __mmask16 lanes;
} tile_run;

/* The input transform packs its vectors (block_groups) on grids at most this many tiles wide.
 * A run's row loads and permutes cost the same either way; packed, the tiles of several tile
 * rows share one transform (32 tiles of a 14-wide grid: 2 vectors, not 3), but runs are cut at
 * the vector ends and blended in. On grids 7 and 14 tiles wide that was slower than a vector a
 * run while each row load worked out its lanes; with those made once a block (row4_lanes) it is
 * faster: one thread, alone, squeezenet1_1's 55x55 expand conv 121 -> 119 us, 27x27 99.5 -> 96,
 * resnet18 10.8 -> 10.6 ms. */
#define WINO_PACK_INPUT_TILES_W 16

/* The runs [r, end) of a block transformed in one vector, whose lane 0 is the block's lane
 * base; its lanes past base + n hold no tile. */
typedef struct lane_group {
    size_t base, n, r, end;
} lane_group;

/* The runs of the block [q0, q0 + n) along tile rows, 16 tiles at most, and the vectors they
 * are transformed in: one a run (lane 0 its first tile) or, packed, one for each 16 lanes of
 * the block with the runs cut at their ends, so a vector may hold the ends of several tile rows
 * (7 + 7 + 2 tiles on a grid 7 tiles wide). Returns the number of groups. */
static size_t block_groups(const kann_conv2d_winograd_args *a, size_t q0, size_t n, int packed,
                           tile_run *runs, lane_group *groups) {
    size_t tw_n = kann_wino_tiles_w(a), n_runs = 0, n_groups = 0;
    for (size_t j = 0; j < n;) {
        size_t q = q0 + j, th = q / tw_n, tw = q - th * tw_n, len = tw_n - tw;
        size_t room = packed ? 16 - j % 16 : 16;
        if (len > n - j) len = n - j;
        if (len > room) len = room;
        size_t base = packed ? j - j % 16 : j;
        if (n_groups == 0 || groups[n_groups - 1].base != base)
            groups[n_groups++] = (lane_group){base, 0, n_runs, n_runs};
        lane_group *g = &groups[n_groups - 1];
        g->end = n_runs + 1;
        g->n = j + len - base;
        runs[n_runs++] = (tile_run){j, len, th, tw, 0};
        j += len;
    }
    for (const lane_group *g = groups; g < groups + n_groups; g++)
        for (size_t k = g->r; k < g->end; k++) {
            int64_t s = (int64_t)(runs[k].j - g->base);
            runs[k].lanes = g->end - g->r == 1 && s == 0 ? (__mmask16)0xffff
                                                         : lane_range(s, s + (int64_t)runs[k].len);
        }
    return n_groups;
}

/* The groups of the input transform: packed on grids at most WINO_PACK_INPUT_TILES_W wide. */
static size_t input_groups(const kann_conv2d_winograd_args *a, size_t q0, size_t n, tile_run *runs,
                           lane_group *groups) {
    return block_groups(a, q0, n, kann_wino_tiles_w(a) <= WINO_PACK_INPUT_TILES_W, runs, groups);
}

/* The lanes i of a vector loaded from column col + i of a row w_in wide that lie in the row. */
static inline __mmask16 row_lanes(int64_t col, int64_t w_in) {
    return first_lanes(w_in - col) & (__mmask16)~first_lanes(-col);
}

/* Columns n and past (no tile of the block) zero in every position of a stage [P][32]. */
static void zero_stage_tail(float stage[][KANN_WINO_BLOCK], size_t positions, size_t n) {
    if (n >= KANN_WINO_BLOCK) return;
    __m512 z = _mm512_setzero_ps();
    for (size_t p = 0; p < positions; p++) {
        _mm512_mask_storeu_ps(stage[p], (__mmask16)~first_lanes((int64_t)n), z);
        _mm512_mask_storeu_ps(stage[p] + 16, (__mmask16)~first_lanes((int64_t)n - 16), z);
    }
}

/* A channel's transformed tiles are staged position by position ([P][32], 4.5 KiB at most)
 * and then stored to v [P][c_in][32] one whole row of the block at a time: stored straight
 * from the runs, each row of v took 2-3 partial writes 32 c_in bytes apart from the other
 * positions' rows (the same cache set for c_in a multiple of 32), and the lines were evicted
 * and fetched again between them. */
static void store_stage(const float stage[][KANN_WINO_BLOCK], size_t positions, float *vc,
                        size_t ps) {
    for (size_t p = 0; p < positions; p++) {
        _mm512_storeu_ps(vc + p * ps, _mm512_load_ps(stage[p]));
        _mm512_storeu_ps(vc + p * ps + 16, _mm512_load_ps(stage[p] + 16));
    }
}

/* The lanes of row4's six loads from column col0 of a row w_in wide that lie in the row. */
static inline void row4_lanes(int64_t col0, int64_t w_in, __mmask16 m[6]) {
    for (int q = 0; q < 4; q++)
        m[q] = row_lanes(col0 + 16 * q, w_in);
    m[4] = row_lanes(col0 + 64, w_in) & 1;
    m[5] = row_lanes(col0 + 65, w_in) & 1;
}

/* Row y of the plane xc at the columns col0 + 4k + j of the 16 tiles k of a run, j = 0..5, into
 * d[j] (m: row4_lanes of col0, made once a block); zero outside the plane (rows and columns of the padding, columns past the row; lanes of
 * tiles past the run hold whatever the row has there). The
 * 64 columns col0 .. col0 + 63 are split by column mod 4 in two steps: a permute puts columns
 * j and j + 1 of 8 tiles side by side, 128-bit shuffles join the halves; columns 4 and 5 of
 * tile k are columns 0 and 1 of tile k + 1. */
static inline __attribute__((always_inline)) void row4(const float *xc, size_t h_in, size_t w_in,
                                                       int64_t y, int64_t col0,
                                                       const __mmask16 m[6], __m512 d[6]) {
    if (y < 0 || y >= (int64_t)h_in) {
        for (int j = 0; j < 6; j++)
            d[j] = _mm512_setzero_ps();
        return;
    }
    const __m512i pair01 =
        _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
    const __m512i pair23 =
        _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31);
    /* masked lanes are not read: col0 may be negative (padding, or a packed run read from an
     * earlier lane) */
    const float *row = xc + ((ptrdiff_t)y * (ptrdiff_t)w_in + col0);
    __m512 A = _mm512_maskz_loadu_ps(m[0], row);
    __m512 B = _mm512_maskz_loadu_ps(m[1], row + 16);
    __m512 C = _mm512_maskz_loadu_ps(m[2], row + 32);
    __m512 D = _mm512_maskz_loadu_ps(m[3], row + 48);
    __m512 t4 = _mm512_maskz_loadu_ps(m[4], row + 64);
    __m512 t5 = _mm512_maskz_loadu_ps(m[5], row + 65);
    __m512 ab01 = _mm512_permutex2var_ps(A, pair01, B), cd01 = _mm512_permutex2var_ps(C, pair01, D);
    __m512 ab23 = _mm512_permutex2var_ps(A, pair23, B), cd23 = _mm512_permutex2var_ps(C, pair23, D);
    d[0] = _mm512_shuffle_f32x4(ab01, cd01, _MM_SHUFFLE(1, 0, 1, 0));
    d[1] = _mm512_shuffle_f32x4(ab01, cd01, _MM_SHUFFLE(3, 2, 3, 2));
    d[2] = _mm512_shuffle_f32x4(ab23, cd23, _MM_SHUFFLE(1, 0, 1, 0));
    d[3] = _mm512_shuffle_f32x4(ab23, cd23, _MM_SHUFFLE(3, 2, 3, 2));
    d[4] = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(t4), _mm512_castps_si512(d[0]), 1));
    d[5] = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(t5), _mm512_castps_si512(d[1]), 1));
}

/* Row i of the tiles of a group of F(4x4, 3x3), row4 per run, the run's lanes blended in: the
 * run at lanes s .. s + len - 1 of the vector is read as if the vector began s tiles before its
 * first tile. */
static inline __attribute__((always_inline)) void group_row4(const kann_conv2d_winograd_args *a,
                                                             const float *xc, const tile_run *runs,
                                                             const __mmask16 (*rm)[6],
                                                             const lane_group *g, size_t i,
                                                             __m512 d[6]) {
    for (int j = 0; j < 6; j++)
        d[j] = _mm512_setzero_ps();
    for (size_t k = g->r; k < g->end; k++) {
        const tile_run *run = &runs[k];
        int64_t s = (int64_t)(run->j - g->base);
        __m512 row[6];
        row4(xc, a->h_in, a->w_in, (int64_t)(4 * run->th + i) - a->pad,
             4 * ((int64_t)run->tw0 - s) - a->pad, rm[k], row);
        __mmask16 m = run->lanes;
        for (int j = 0; j < 6; j++)
            d[j] = _mm512_mask_mov_ps(d[j], m, row[j]);
    }
}

/* The first column run k of group g reads in each row (F(2x2, 3x3)). */
static inline int64_t rows2_col0(const kann_conv2d_winograd_args *a, const tile_run *runs,
                                 const lane_group *g, size_t k) {
    return 2 * ((int64_t)runs[k].tw0 - (int64_t)(runs[k].j - g->base)) - a->pad;
}

/* The four rows of the tiles of a group of F(2x2, 3x3), the columns 2k + j of tile k in d[i][j]
 * (even and odd columns split by permutes), zero outside the plane; runs as in group_row4. */
static inline __attribute__((always_inline)) void group_rows2(const kann_conv2d_winograd_args *a,
                                                              const float *xc, const tile_run *runs,
                                                              const __mmask16 (*rm)[4],
                                                              const lane_group *g, __m512 d[4][4]) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j < 4; j++)
            d[i][j] = _mm512_setzero_ps();
    int64_t w = (int64_t)a->w_in;
    for (size_t k = g->r; k < g->end; k++) {
        const tile_run *run = &runs[k];
        int64_t col0 = rows2_col0(a, runs, g, k);
        __mmask16 m0 = rm[k][0], m16 = rm[k][1], m2 = rm[k][2], m18 = rm[k][3];
        __mmask16 m = run->lanes;
        for (size_t i = 0; i < 4; i++) {
            int64_t y = (int64_t)(2 * run->th + i) - a->pad;
            if (y < 0 || y >= (int64_t)a->h_in) continue; /* padding rows: zero */
            /* masked lanes are not read: col0 may be negative */
            const float *row = xc + (y * w + col0);
            __m512 A = _mm512_maskz_loadu_ps(m0, row), B = _mm512_maskz_loadu_ps(m16, row + 16);
            __m512 A2 = _mm512_maskz_loadu_ps(m2, row + 2);
            __m512 B2 = _mm512_maskz_loadu_ps(m18, row + 18);
            d[i][0] = _mm512_mask_mov_ps(d[i][0], m, _mm512_permutex2var_ps(A, even, B));
            d[i][1] = _mm512_mask_mov_ps(d[i][1], m, _mm512_permutex2var_ps(A, odd, B));
            d[i][2] = _mm512_mask_mov_ps(d[i][2], m, _mm512_permutex2var_ps(A2, even, B2));
            d[i][3] = _mm512_mask_mov_ps(d[i][3], m, _mm512_permutex2var_ps(A2, odd, B2));
        }
    }
}

/* The F(4x4, 3x3) input transform of a block: per channel and group, the rows' B^T d B
 * horizontally (each row's columns), then vertically. */
static void input_block4(const kann_conv2d_winograd_args *a, const float *x, size_t q0, size_t n,
                         float *v) {
    tile_run runs[KANN_WINO_BLOCK];
    lane_group groups[KANN_WINO_BLOCK];
    size_t n_groups = input_groups(a, q0, n, runs, groups);
    size_t ps = (size_t)kann_wino_pos_stride(a->c_in), plane = (size_t)a->h_in * a->w_in;
    __mmask16 rm[KANN_WINO_BLOCK][6]; /* each run's load lanes, the same in every channel */
    for (const lane_group *g = groups; g < groups + n_groups; g++)
        for (size_t k = g->r; k < g->end; k++)
            row4_lanes(4 * ((int64_t)runs[k].tw0 - (int64_t)(runs[k].j - g->base)) - a->pad,
                       (int64_t)a->w_in, rm[k]);
    _Alignas(64) float stage[36][KANN_WINO_BLOCK];
    zero_stage_tail(stage, 36, n);
    for (size_t c = 0; c < a->c_in; c++) {
        const float *xc = x + c * plane;
        for (const lane_group *g = groups; g < groups + n_groups; g++) {
            __m512 h[6][6];
            /* unrolled, so that h stays in registers */
#pragma GCC unroll 6
            for (size_t i = 0; i < 6; i++) {
                __m512 d[6];
                group_row4(a, xc, runs, rm, g, i, d);
                wino_bt4(d, h[i]);
            }
            __mmask16 keep = first_lanes((int64_t)g->n);
            float *dst = stage[0] + g->base;
            for (size_t j = 0; j < 6; j++) {
                __m512 col[6], o[6];
                for (size_t i = 0; i < 6; i++)
                    col[i] = h[i][j];
                wino_bt4(col, o);
                for (size_t i = 0; i < 6; i++)
                    _mm512_mask_storeu_ps(dst + (i * 6 + j) * KANN_WINO_BLOCK, keep, o[i]);
            }
        }
        store_stage(stage, 36, v + c * KANN_WINO_BLOCK, ps);
    }
}

/* The F(2x2, 3x3) input transform of a block, per channel and group. */
static void input_block2(const kann_conv2d_winograd_args *a, const float *x, size_t q0, size_t n,
                         float *v) {
    tile_run runs[KANN_WINO_BLOCK];
    lane_group groups[KANN_WINO_BLOCK];
    size_t n_groups = input_groups(a, q0, n, runs, groups);
    size_t ps = (size_t)kann_wino_pos_stride(a->c_in), plane = (size_t)a->h_in * a->w_in;
    __mmask16 rm[KANN_WINO_BLOCK][4]; /* each run's load lanes (group_rows2), made once */
    for (const lane_group *g = groups; g < groups + n_groups; g++)
        for (size_t k = g->r; k < g->end; k++) {
            int64_t col0 = rows2_col0(a, runs, g, k), w = (int64_t)a->w_in;
            rm[k][0] = row_lanes(col0, w);
            rm[k][1] = row_lanes(col0 + 16, w);
            rm[k][2] = row_lanes(col0 + 2, w);
            rm[k][3] = row_lanes(col0 + 18, w);
        }
    _Alignas(64) float stage[16][KANN_WINO_BLOCK];
    zero_stage_tail(stage, 16, n);
    for (size_t c = 0; c < a->c_in; c++) {
        const float *xc = x + c * plane;
        for (const lane_group *g = groups; g < groups + n_groups; g++) {
            __m512 d[4][4];
            group_rows2(a, xc, runs, rm, g, d);
            __mmask16 keep = first_lanes((int64_t)g->n);
            float *dst = stage[0] + g->base;
            for (size_t i = 0; i < 4; i++) {
                __m512 t[4];
                for (size_t j = 0; j < 4; j++) {
                    __m512 t0 = i == 0   ? _mm512_sub_ps(d[0][j], d[2][j])
                                : i == 1 ? _mm512_add_ps(d[1][j], d[2][j])
                                : i == 2 ? _mm512_sub_ps(d[2][j], d[1][j])
                                         : _mm512_sub_ps(d[1][j], d[3][j]);
                    t[j] = t0;
                }
                float *di = dst + i * 4 * KANN_WINO_BLOCK;
                _mm512_mask_storeu_ps(di, keep, _mm512_sub_ps(t[0], t[2]));
                _mm512_mask_storeu_ps(di + KANN_WINO_BLOCK, keep, _mm512_add_ps(t[1], t[2]));
                _mm512_mask_storeu_ps(di + 2 * KANN_WINO_BLOCK, keep, _mm512_sub_ps(t[2], t[1]));
                _mm512_mask_storeu_ps(di + 3 * KANN_WINO_BLOCK, keep, _mm512_sub_ps(t[1], t[3]));
            }
        }
        store_stage(stage, 16, v + c * KANN_WINO_BLOCK, ps);
    }
}

static __attribute__((noinline)) void input_block(const kann_conv2d_winograd_args *a,
                                                  const float *x, size_t q0, size_t n, float *v) {
    if (a->transform == KANN_WINO_F4X4)
        input_block4(a, x, q0, n, v);
    else
        input_block2(a, x, q0, n, v);
}

/* Lanes 0..7 (zip_lo) or 8..15 (zip_hi) of a and b interleaved: a0 b0 a1 b1 ... */
static inline __m512 zip_lo(__m512 a, __m512 b) {
    const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    return _mm512_permutex2var_ps(a, idx, b);
}

static inline __m512 zip_hi(__m512 a, __m512 b) {
    const __m512i idx =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    return _mm512_permutex2var_ps(a, idx, b);
}

/* The activation of a record's stores, in vectors where it has a vector form; clamp: none, relu
 * or clip, applied as max(lo) and min(hi) (none: -inf and +inf). */
typedef struct out_act {
    const kann_act *act;
    int vec, clamp;
    __m512 lo, hi;
} out_act;

static inline out_act out_act_of(const kann_act *act) {
    out_act o = {act, kann_act_vectorizes(act), kann_act_is_clamp(act),
                 _mm512_set1_ps(kann_act_clamp_lo(act)), _mm512_set1_ps(kann_act_hi(act))};
    return o;
}

/* Lanes [lo, hi) of the nv vectors v (as one array of 16 nv floats) to y[lo .. hi), plus the
 * residual res[lo .. hi) (if any), activated; keep[q]: those lanes of vector q. Only those
 * elements of y and res are accessed. clamp: a constant where inlined, o->clamp (the activation
 * as two compares, no switch). */
static inline __attribute__((always_inline)) void store_lanes(float *y, const float *res,
                                                              const __m512 *v, int nv, int64_t lo,
                                                              int64_t hi, const __mmask16 *keep,
                                                              const out_act *o, int clamp) {
#pragma GCC unroll 4
    for (int q = 0; q < nv; q++) {
        __mmask16 kq = keep[q];
        if (!kq) continue;
        __m512 vq = v[q];
        /* masked lanes are not accessed: y + 16 q may lie before the row */
        if (res) vq = _mm512_add_ps(vq, _mm512_maskz_loadu_ps(kq, res + 16 * q));
        if (clamp)
            vq = _mm512_min_ps(o->hi, _mm512_max_ps(o->lo, vq));
        else if (o->vec)
            vq = vf_act(vq, o->act, o->lo, o->hi);
        _mm512_mask_storeu_ps(y + 16 * q, kq, vq);
    }
    if (!clamp && !o->vec)
        for (int64_t j = lo; j < hi; j++)
            y[j] = kann_act_apply(o->act, y[j]);
}

/* Where a run's outputs go: output row i of its tiles (i < rows; the others lie past the
 * bottom of y) takes the lanes [lo, hi) of its group's transformed row i (per outputs a tile,
 * past the right edge of y cut) to y[at + i w_out + lo ..]; keep[q]: those lanes of its vector
 * q. Worked out once a block: with the masks made at each store, the scalar work took about as
 * long as the transform's vector work. */
typedef struct run_out {
    ptrdiff_t at;
    int64_t lo, hi;
    size_t rows;
    __mmask16 keep[4];
} run_out;

static void run_outputs(const kann_conv2d_winograd_args *a, const tile_run *runs,
                        const lane_group *groups, size_t n_groups, size_t per, run_out *outs) {
    size_t w_out = a->w_out;
    for (const lane_group *g = groups; g < groups + n_groups; g++)
        for (size_t k = g->r; k < g->end; k++) {
            const tile_run *run = &runs[k];
            size_t oh = per * run->th, col0 = per * run->tw0;
            int64_t lo = (int64_t)(per * (run->j - g->base)), cnt = (int64_t)(w_out - col0);
            if (cnt > (int64_t)(per * run->len)) cnt = (int64_t)(per * run->len);
            outs[k].lo = lo;
            outs[k].hi = lo + cnt;
            outs[k].at = (ptrdiff_t)(oh * w_out + col0) - lo; /* lane lo lands on column col0 */
            outs[k].rows = a->h_out - oh < per ? a->h_out - oh : per;
            for (int q = 0; q < 4; q++)
                outs[k].keep[q] = lane_range(lo - 16 * q, lo + cnt - 16 * q);
        }
}

/* Output row i of a group's runs from its transformed row v (nv vectors). */
static inline __attribute__((always_inline)) void
store_runs(const run_out *outs, const lane_group *g, size_t i, size_t w_out, const __m512 *v,
           int nv, float *yr, const float *rr, const out_act *o, int clamp) {
    for (const run_out *ro = outs + g->r; ro < outs + g->end; ro++) {
        if (i >= ro->rows) continue;
        ptrdiff_t at = ro->at + (ptrdiff_t)(i * w_out);
        store_lanes(yr + at, rr ? rr + at : NULL, v, nv, ro->lo, ro->hi, ro->keep, o, clamp);
    }
}

/* The F(4x4, 3x3) output transform of one weight panel over a block: per output channel and
 * vector of 16 tiles, A^T M A (columns, then rows), each output row's four column vectors
 * interleaved into 64 outputs (4 per tile), then bias, residual and activation as they are
 * stored to the tiles' rows of y. */
static inline __attribute__((always_inline)) void
output_block4(const kann_conv2d_winograd_args *a, const float *mb, size_t q0, size_t n, size_t m0,
              size_t mr, const float *bias, const float *res, float *y, int clamp) {
    tile_run runs[KANN_WINO_BLOCK];
    lane_group groups[KANN_WINO_BLOCK];
    run_out outs[KANN_WINO_BLOCK];
    size_t n_groups = block_groups(a, q0, n, 1, runs, groups), hw = (size_t)a->h_out * a->w_out;
    size_t w_out = a->w_out, ms = KANN_CONV_PANEL * KANN_WINO_BLOCK;
    out_act oa = out_act_of(&a->act);
    run_outputs(a, runs, groups, n_groups, 4, outs);
    /* columns b, b + 1 of tiles k = 0..7 (zip_lo) or 8..15 (zip_hi) side by side, then pairs of
     * pairs */
    const __m512i quad_lo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
    const __m512i quad_hi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    for (size_t r = 0; r < mr; r++) {
        __m512 bv = _mm512_set1_ps(bias ? bias[m0 + r] : 0.0f);
        const float *rr = res ? res + (m0 + r) * hw : NULL;
        float *yr = y + (m0 + r) * hw;
        for (const lane_group *g = groups; g < groups + n_groups; g++) {
            __mmask16 keep = first_lanes((int64_t)g->n);
            const float *src = mb + r * KANN_WINO_BLOCK + g->base;
            __m512 s[4][6];
            for (size_t j = 0; j < 6; j++) {
                __m512 col[6], o[4];
                for (size_t i = 0; i < 6; i++)
                    col[i] = _mm512_maskz_loadu_ps(keep, src + (i * 6 + j) * ms);
                wino_at4(col, o);
                for (size_t i = 0; i < 4; i++)
                    s[i][j] = o[i];
            }
            /* unrolled, so that s stays in registers */
#pragma GCC unroll 4
            for (size_t i = 0; i < 4; i++) {
                __m512 o[4];
                wino_at4(s[i], o);
                for (int b = 0; b < 4; b++)
                    o[b] = _mm512_add_ps(o[b], bv);
                __m512d p01l = _mm512_castps_pd(zip_lo(o[0], o[1]));
                __m512d p01h = _mm512_castps_pd(zip_hi(o[0], o[1]));
                __m512d p23l = _mm512_castps_pd(zip_lo(o[2], o[3]));
                __m512d p23h = _mm512_castps_pd(zip_hi(o[2], o[3]));
                __m512 out[4] = {
                    _mm512_castpd_ps(_mm512_permutex2var_pd(p01l, quad_lo, p23l)),
                    _mm512_castpd_ps(_mm512_permutex2var_pd(p01l, quad_hi, p23l)),
                    _mm512_castpd_ps(_mm512_permutex2var_pd(p01h, quad_lo, p23h)),
                    _mm512_castpd_ps(_mm512_permutex2var_pd(p01h, quad_hi, p23h)),
                };
                store_runs(outs, g, i, w_out, out, 4, yr, rr, &oa, clamp);
            }
        }
    }
}

/* The F(2x2, 3x3) output transform of one weight panel over a block. */
static inline __attribute__((always_inline)) void
output_block2(const kann_conv2d_winograd_args *a, const float *mb, size_t q0, size_t n, size_t m0,
              size_t mr, const float *bias, const float *res, float *y, int clamp) {
    tile_run runs[KANN_WINO_BLOCK];
    lane_group groups[KANN_WINO_BLOCK];
    run_out outs[KANN_WINO_BLOCK];
    size_t n_groups = block_groups(a, q0, n, 1, runs, groups), hw = (size_t)a->h_out * a->w_out;
    size_t w_out = a->w_out, ms = KANN_CONV_PANEL * KANN_WINO_BLOCK;
    out_act oa = out_act_of(&a->act);
    run_outputs(a, runs, groups, n_groups, 2, outs);
    for (size_t r = 0; r < mr; r++) {
        __m512 bv = _mm512_set1_ps(bias ? bias[m0 + r] : 0.0f);
        const float *rr = res ? res + (m0 + r) * hw : NULL;
        float *yr = y + (m0 + r) * hw;
        for (const lane_group *g = groups; g < groups + n_groups; g++) {
            __mmask16 keep = first_lanes((int64_t)g->n);
            const float *src = mb + r * KANN_WINO_BLOCK + g->base;
            __m512 m[16];
            for (size_t p = 0; p < 16; p++)
                m[p] = _mm512_maskz_loadu_ps(keep, src + p * ms);
            for (size_t i = 0; i < 2; i++) {
                __m512 s[4];
                for (size_t j = 0; j < 4; j++)
                    s[j] = i == 0 ? _mm512_add_ps(_mm512_add_ps(m[j], m[4 + j]), m[8 + j])
                                  : _mm512_sub_ps(_mm512_sub_ps(m[4 + j], m[8 + j]), m[12 + j]);
                __m512 o0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s[0], s[1]), s[2]), bv);
                __m512 o1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s[1], s[2]), s[3]), bv);
                __m512 v[2] = {zip_lo(o0, o1), zip_hi(o0, o1)};
                store_runs(outs, g, i, w_out, v, 2, yr, rr, &oa, clamp);
            }
        }
    }
}

/* Each transform in two copies: a clamp activation (none, relu, clip: the shared models' convs)
 * inlined as two compares, or any activation. */
static __attribute__((noinline)) void output_f4(const kann_conv2d_winograd_args *a, const float *mb,
                                                size_t q0, size_t n, size_t m0, size_t mr,
                                                const float *bias, const float *res, float *y) {
    if (out_act_of(&a->act).clamp)
        output_block4(a, mb, q0, n, m0, mr, bias, res, y, 1);
    else
        output_block4(a, mb, q0, n, m0, mr, bias, res, y, 0);
}

static __attribute__((noinline)) void output_f2(const kann_conv2d_winograd_args *a, const float *mb,
                                                size_t q0, size_t n, size_t m0, size_t mr,
                                                const float *bias, const float *res, float *y) {
    if (out_act_of(&a->act).clamp)
        output_block2(a, mb, q0, n, m0, mr, bias, res, y, 1);
    else
        output_block2(a, mb, q0, n, m0, mr, bias, res, y, 0);
}

static void output_block(const kann_conv2d_winograd_args *a, const float *mb, size_t q0, size_t n,
                         size_t m0, size_t mr, const float *bias, const float *res, float *y) {
    (a->transform == KANN_WINO_F4X4 ? output_f4 : output_f2)(a, mb, q0, n, m0, mr, bias, res, y);
}

void kann_f32_conv2d_winograd_avx512(const void *args, const kann_exec *ex) {
    kann_conv2d_winograd_drive(args, ex, input_block, gemm_panel, output_block, 1);
}
