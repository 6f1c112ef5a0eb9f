/* conv2d_winograd for AVX2: the 16 GEMMs of each block of 32 tiles as up to four 12 x 8
 * register tiles (12 YMM accumulators each; as many as the block's tiles need), the first of
 * them prefetching the weights as the AVX-512 variant does; both transforms 8 tiles a vector:
 * each input of a tile gathered (the padding masked off), each output row of 8 tiles of one
 * tile row interleaved back into a run of y (elsewhere stored tile by tile). */
#include <immintrin.h>
#include <stdint.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/conv2d_winograd.h"

#define KANN_VEC_BITS 256
#include "vec_math.h"
#include "simd_act.h"
#include "wino_vec.h"

/* o = B^T d of F(2x2, 3x3) on vectors. */
static inline __attribute__((always_inline)) void bt2(const __m256 d[4], __m256 o[4]) {
    o[0] = _mm256_sub_ps(d[0], d[2]);
    o[1] = _mm256_add_ps(d[1], d[2]);
    o[2] = _mm256_sub_ps(d[2], d[1]);
    o[3] = _mm256_sub_ps(d[1], d[3]);
}

/* Where the inputs of 8 tiles of a block lie: for window row i (column j) of the tiles, the
 * offset (i * w_in, j) of each lane's input and whether it lies inside x. */
typedef struct tile_lanes {
    __m256i row_at[6], col_at[6];
    __m256i row_in[6], col_in[6];
} tile_lanes;

/* Lanes k < 8 of tiles [q, q + 8) of the record; those at or past q_end lie outside x. */
static void tile_lanes_of(const kann_conv2d_winograd_args *a, size_t q, size_t q_end,
                          tile_lanes *t) {
    size_t e = kann_wino_edge(a), tw_n = kann_wino_tiles_w(a);
    int32_t r0[8], c0[8];
    for (int k = 0; k < 8; k++) {
        size_t qk = q + (size_t)k;
        /* past the block: rows above x (every input of the lane masked off) */
        r0[k] = qk < q_end ? (int32_t)(e * (qk / tw_n)) - (int32_t)a->pad : -8;
        c0[k] = qk < q_end ? (int32_t)(e * (qk % tw_n)) - (int32_t)a->pad : 0;
    }
    __m256i r = _mm256_loadu_si256((const __m256i *)r0),
            c = _mm256_loadu_si256((const __m256i *)c0);
    __m256i h = _mm256_set1_epi32((int32_t)a->h_in), w = _mm256_set1_epi32((int32_t)a->w_in);
    __m256i minus1 = _mm256_set1_epi32(-1);
    for (int i = 0; i < (int)e + 2; i++) {
        __m256i ri = _mm256_add_epi32(r, _mm256_set1_epi32(i));
        __m256i ci = _mm256_add_epi32(c, _mm256_set1_epi32(i));
        t->row_in[i] = _mm256_and_si256(_mm256_cmpgt_epi32(ri, minus1), _mm256_cmpgt_epi32(h, ri));
        t->col_in[i] = _mm256_and_si256(_mm256_cmpgt_epi32(ci, minus1), _mm256_cmpgt_epi32(w, ci));
        t->row_at[i] = _mm256_mullo_epi32(ri, w);
        t->col_at[i] = ci;
    }
}

/* Input (i, j) of the 8 tiles from the plane xc, 0 outside x. */
static inline __attribute__((always_inline)) __m256 tile_input(const float *xc, const tile_lanes *t,
                                                               int i, int j) {
    __m256i in = _mm256_and_si256(t->row_in[i], t->col_in[j]);
    __m256i at = _mm256_add_epi32(t->row_at[i], t->col_at[j]);
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), xc, at, _mm256_castsi256_ps(in), 4);
}

/* The input transform of a block [q0, q0 + n) into v [P][c_in][32] (kann_wino_input_block):
 * per channel and 8 tiles, d gathered, B^T d B on vectors, each position's 8 tiles to a stage
 * [P][32] of the channel, stored to v a whole row of the block at a time. Planes whose offsets
 * do not fit the gathers' 32-bit indices take the portable transform. */
static void input_block(const kann_conv2d_winograd_args *a, const float *x, size_t q0, size_t n,
                        float *v) {
    if ((uint64_t)(a->h_in + 8) * (a->w_in + 8) > INT32_MAX) {
        kann_wino_input_block(a, x, q0, n, v);
        return;
    }
    size_t plane = (size_t)a->h_in * a->w_in, ps = (size_t)kann_wino_pos_stride(a->c_in);
    size_t positions = kann_wino_positions(a), n_groups = (n + 7) / 8;
    tile_lanes lanes[KANN_WINO_BLOCK / 8];
    for (size_t g = 0; g < n_groups; g++)
        tile_lanes_of(a, q0 + 8 * g, q0 + n, &lanes[g]);
    _Alignas(32) float stage[KANN_WINO_MAX_POSITIONS][KANN_WINO_BLOCK];
    for (size_t p = 0; p < positions; p++) /* the groups past the block's tiles */
        for (size_t k = 8 * n_groups; k < KANN_WINO_BLOCK; k++)
            stage[p][k] = 0.0f;
    for (size_t c = 0; c < a->c_in; c++) {
        const float *xc = x + c * plane;
        for (size_t g = 0; g < n_groups; g++) {
            const tile_lanes *t = &lanes[g];
            float *dst = stage[0] + 8 * g;
            if (a->transform == KANN_WINO_F4X4) {
                __m256 h[6][6];
                for (int i = 0; i < 6; i++) { /* rows: B^T applied along each row's 6 inputs */
                    __m256 d[6];
                    for (int j = 0; j < 6; j++)
                        d[j] = tile_input(xc, t, i, j);
                    wino_bt4(d, h[i]);
                }
                for (int j = 0; j < 6; j++) { /* then down the columns */
                    __m256 col[6], o[6];
                    for (int i = 0; i < 6; i++)
                        col[i] = h[i][j];
                    wino_bt4(col, o);
                    for (int i = 0; i < 6; i++)
                        _mm256_storeu_ps(dst + (i * 6 + j) * KANN_WINO_BLOCK, o[i]);
                }
            } else {
                __m256 h[4][4];
                for (int i = 0; i < 4; i++) {
                    __m256 d[4];
                    for (int j = 0; j < 4; j++)
                        d[j] = tile_input(xc, t, i, j);
                    bt2(d, h[i]);
                }
                for (int j = 0; j < 4; j++) {
                    __m256 col[4], o[4];
                    for (int i = 0; i < 4; i++)
                        col[i] = h[i][j];
                    bt2(col, o);
                    for (int i = 0; i < 4; i++)
                        _mm256_storeu_ps(dst + (i * 4 + j) * KANN_WINO_BLOCK, o[i]);
                }
            }
        }
        float *vc = v + c * KANN_WINO_BLOCK;
        for (size_t p = 0; p < positions; p++)
            for (int k = 0; k < KANN_WINO_BLOCK; k += 8)
                _mm256_storeu_ps(vc + p * ps + k, _mm256_load_ps(stage[p] + k));
    }
}

/* Reduction steps the weights are prefetched ahead, into the next GEMM's panel at the end. */
#define WINO_U_PREFETCH 64

/* Columns [j0, j0 + 8) of the rows x n GEMM, rows 4, 8 or 12 of the panel from u on (a
 * constant in each inlined copy: a tile along output channels may start inside a panel, whose
 * rows past it are not read); prefetch (a constant too): the first 8 columns prefetch the
 * weights (the later ones find the panel in cache). */
static inline __attribute__((always_inline)) void gemm_rx8(const float *u, const float *u_next,
                                                           const float *v, size_t c_in, float *m,
                                                           size_t j0, int rows, int prefetch) {
    __m256 c[KANN_CONV_PANEL];
    for (int r = 0; r < rows; r++)
        c[r] = _mm256_setzero_ps();
    size_t ahead = c_in < WINO_U_PREFETCH ? c_in : WINO_U_PREFETCH;
    const float *uk = u, *vk = v + j0, *u_end = u + c_in * KANN_CONV_PANEL;
    const float *pf = u + ahead * KANN_CONV_PANEL;
    for (size_t k = 0; k < c_in; k++, uk += KANN_CONV_PANEL, vk += KANN_WINO_BLOCK) {
        if (prefetch) {
            if (pf == u_end) pf = u_next;
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
            pf += KANN_CONV_PANEL;
        }
        __m256 b = _mm256_loadu_ps(vk);
        for (int r = 0; r < rows; r++)
            c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(uk + r), b, c[r]);
    }
    for (int r = 0; r < rows; r++)
        _mm256_storeu_ps(m + r * KANN_WINO_BLOCK + j0, c[r]);
}

static inline __attribute__((always_inline)) void gemm_rows8(const float *u, const float *u_next,
                                                             const float *v, size_t c_in, size_t n,
                                                             float *m, int rows) {
    gemm_rx8(u, u_next, v, c_in, m, 0, rows, 1);
    for (size_t j0 = 8; j0 < n; j0 += 8)
        gemm_rx8(u, u_next, v, c_in, m, j0, rows, 0);
}

static void gemm_12x8x4(const float *u, const float *u_next, const float *v, size_t c_in, size_t n,
                        size_t mr, float *m) {
    if (mr > 8)
        gemm_rows8(u, u_next, v, c_in, n, m, 12);
    else if (mr > 4)
        gemm_rows8(u, u_next, v, c_in, n, m, 8);
    else
        gemm_rows8(u, u_next, v, c_in, n, m, 4);
}

/* o = A^T m of F(2x2, 3x3) on vectors. */
static inline __attribute__((always_inline)) void at2(const __m256 m[4], __m256 o[2]) {
    o[0] = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
    o[1] = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
}

/* Output row i of 8 tiles, o[j] holding column j of tile k in lane k, as the row's run of 4 * 8
 * (e = 4) or 2 * 8 floats, tile after tile, in run[0 .. e). */
static inline __attribute__((always_inline)) void interleave(const __m256 *o, int e, __m256 *run) {
    if (e == 2) {
        __m256 lo = _mm256_unpacklo_ps(o[0], o[1]), hi = _mm256_unpackhi_ps(o[0], o[1]);
        run[0] = _mm256_permute2f128_ps(lo, hi, 0x20); /* tiles 0..3 */
        run[1] = _mm256_permute2f128_ps(lo, hi, 0x31); /* tiles 4..7 */
        return;
    }
    __m256 u0 = _mm256_unpacklo_ps(o[0], o[1]), u1 = _mm256_unpackhi_ps(o[0], o[1]);
    __m256 u2 = _mm256_unpacklo_ps(o[2], o[3]), u3 = _mm256_unpackhi_ps(o[2], o[3]);
    __m256 w0 = _mm256_shuffle_ps(u0, u2, 0x44), w1 = _mm256_shuffle_ps(u0, u2, 0xee);
    __m256 w2 = _mm256_shuffle_ps(u1, u3, 0x44), w3 = _mm256_shuffle_ps(u1, u3, 0xee);
    run[0] = _mm256_permute2f128_ps(w0, w1, 0x20); /* tiles 0, 1 */
    run[1] = _mm256_permute2f128_ps(w2, w3, 0x20); /* tiles 2, 3 */
    run[2] = _mm256_permute2f128_ps(w0, w1, 0x31); /* tiles 4, 5 */
    run[3] = _mm256_permute2f128_ps(w2, w3, 0x31); /* tiles 6, 7 */
}

/* The output transform of one weight panel over a block (kann_wino_output_block), 8 tiles a
 * vector: A^T M A with the bias; 8 tiles of one tile row whose outputs lie inside y go back as
 * runs of their output rows (residual and activation as vectors), others tile by tile. */
static void output_block(const kann_conv2d_winograd_args *a, const float *mb, size_t q0, size_t n,
                         size_t m0, size_t mr, const float *bias, const float *res, float *y) {
    size_t hw = (size_t)a->h_out * a->w_out, tw_n = kann_wino_tiles_w(a), e = kann_wino_edge(a);
    size_t w_out = a->w_out, ms = KANN_CONV_PANEL * KANN_WINO_BLOCK;
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m256 lo = _mm256_set1_ps(kann_act_lo(act)), hi = _mm256_set1_ps(kann_act_hi(act));
    for (size_t r = 0; r < mr; r++) {
        __m256 bv = _mm256_set1_ps(bias ? bias[m0 + r] : 0.0f);
        const float *rr = res ? res + (m0 + r) * hw : NULL;
        float *yr = y + (m0 + r) * hw;
        for (size_t g0 = 0; g0 < n; g0 += 8) {
            size_t cnt = n - g0 < 8 ? n - g0 : 8;
            const float *src = mb + r * KANN_WINO_BLOCK + g0;
            __m256 o[4][4]; /* output (i, j) of the 8 tiles, the bias added */
            if (e == 4) {
                __m256 s[4][6];
                for (size_t j = 0; j < 6; j++) { /* columns: s = A^T M */
                    __m256 col[6], c4[4];
                    for (size_t i = 0; i < 6; i++)
                        col[i] = _mm256_loadu_ps(src + (i * 6 + j) * ms);
                    wino_at4(col, c4);
                    for (size_t i = 0; i < 4; i++)
                        s[i][j] = c4[i];
                }
                for (size_t i = 0; i < 4; i++) /* rows: s A */
                    wino_at4(s[i], o[i]);
            } else {
                __m256 s[2][4];
                for (size_t j = 0; j < 4; j++) {
                    __m256 col[4], c2[2];
                    for (size_t i = 0; i < 4; i++)
                        col[i] = _mm256_loadu_ps(src + (i * 4 + j) * ms);
                    at2(col, c2);
                    s[0][j] = c2[0];
                    s[1][j] = c2[1];
                }
                at2(s[0], o[0]);
                at2(s[1], o[1]);
            }
            for (size_t i = 0; i < e; i++)
                for (size_t j = 0; j < e; j++)
                    o[i][j] = _mm256_add_ps(o[i][j], bv);
            size_t q = q0 + g0, th = q / tw_n, tw = q - th * tw_n;
            if (cnt == 8 && tw + 8 <= tw_n && e * (tw + 8) <= w_out && e * (th + 1) <= a->h_out) {
                for (size_t i = 0; i < e; i++) {
                    __m256 run[4];
                    interleave(o[i], (int)e, run);
                    size_t at = (e * th + i) * w_out + e * tw;
                    for (size_t k = 0; k < e; k++) {
                        __m256 v = run[k];
                        if (rr) v = _mm256_add_ps(v, _mm256_loadu_ps(rr + at + 8 * k));
                        if (vec_act) v = vf_act(v, act, lo, hi);
                        _mm256_storeu_ps(yr + at + 8 * k, v);
                    }
                    if (!vec_act)
                        for (size_t k = 0; k < 8 * e; k++)
                            yr[at + k] = kann_act_apply(act, yr[at + k]);
                }
                continue;
            }
            /* tiles of two tile rows, or cut by y's edges: each output row of the 8 tiles as a
             * run in a buffer (tile k's e outputs at e k), the residual added there, activated in
             * vectors, then each tile's columns inside y copied to its place (tile by tile
             * through the activation's scalar form, such groups took most of the AVX2 conv:
             * 16 -> 64 channels on 55x55 1.19 ms against 0.17 on AVX-512) */
            size_t at_k[8], cols_k[8], row_k[8];
            for (size_t k = 0; k < cnt; k++) {
                size_t qk = q + k, thk = qk / tw_n, twk = qk - thk * tw_n;
                row_k[k] = e * thk;
                cols_k[k] = w_out - e * twk < e ? w_out - e * twk : e;
                at_k[k] = row_k[k] * w_out + e * twk;
            }
            for (size_t i = 0; i < e; i++) {
                _Alignas(32) float buf[32];
                __m256 run[4];
                interleave(o[i], (int)e, run);
                for (size_t k = 0; k < e; k++)
                    _mm256_store_ps(buf + 8 * k, run[k]);
                if (rr)
                    for (size_t k = 0; k < cnt; k++)
                        for (size_t j = 0; j < cols_k[k] && row_k[k] + i < a->h_out; j++)
                            buf[e * k + j] += rr[at_k[k] + i * w_out + j];
                if (vec_act)
                    for (size_t k = 0; k < e; k++)
                        _mm256_store_ps(buf + 8 * k,
                                        vf_act(_mm256_load_ps(buf + 8 * k), act, lo, hi));
                else
                    for (size_t k = 0; k < 8 * e; k++)
                        buf[k] = kann_act_apply(act, buf[k]);
                for (size_t k = 0; k < cnt; k++) {
                    if (row_k[k] + i >= a->h_out) continue;
                    float *d = yr + at_k[k] + i * w_out;
                    for (size_t j = 0; j < cols_k[k]; j++)
                        d[j] = buf[e * k + j];
                }
            }
        }
    }
}

void kann_f32_conv2d_winograd_avx2(const void *args, const kann_exec *ex) {
    kann_conv2d_winograd_drive(args, ex, input_block, gemm_12x8x4, output_block, 1);
}
