/* conv2d_winograd for AVX2: the 16 GEMMs of each block of 32 tiles as up to four 12 x 8
 * register tiles (12 YMM accumulators each; as many as the block's tiles need), the first of
 * them prefetching the weights as the AVX-512 variant does; the input transform 8 tiles a
 * vector, each input of a tile gathered (the padding masked off); the output transform is the
 * shared portable one. */
#include <immintrin.h>
#include <stdint.h>

#include "kann_x86.h"
#include "ref/conv2d_winograd.h"

/* o = B^T d of F(4x4, 3x3) on vectors (kann_wino4_bt). */
static inline __attribute__((always_inline)) void bt4(const __m256 d[6], __m256 o[6]) {
    const __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f);
    __m256 a = _mm256_fnmadd_ps(four, d[2], d[4]), b = _mm256_fnmadd_ps(four, d[1], d[3]);
    __m256 c = _mm256_sub_ps(d[4], d[2]),
           e = _mm256_add_ps(_mm256_sub_ps(d[3], d[1]), _mm256_sub_ps(d[3], d[1]));
    o[0] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[2], _mm256_mul_ps(four, d[0])), d[4]);
    o[1] = _mm256_add_ps(a, b);
    o[2] = _mm256_sub_ps(a, b);
    o[3] = _mm256_add_ps(c, e);
    o[4] = _mm256_sub_ps(c, e);
    o[5] = _mm256_add_ps(_mm256_fnmadd_ps(five, d[3], _mm256_mul_ps(four, d[1])), d[5]);
}

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
    size_t plane = (size_t)a->h_in * a->w_in, ps = (size_t)a->c_in * KANN_WINO_BLOCK;
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
                    bt4(d, h[i]);
                }
                for (int j = 0; j < 6; j++) { /* then down the columns */
                    __m256 col[6], o[6];
                    for (int i = 0; i < 6; i++)
                        col[i] = h[i][j];
                    bt4(col, o);
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

static void gemm_12x8x4(const float *u, const float *u_next, const float *v, size_t c_in, size_t n,
                        float *m) {
    size_t ahead = c_in < WINO_U_PREFETCH ? c_in : WINO_U_PREFETCH;
    const float *u_end = u + c_in * KANN_CONV_PANEL;
    for (size_t j0 = 0; j0 < n; j0 += 8) {
        __m256 c[KANN_CONV_PANEL];
        for (int r = 0; r < KANN_CONV_PANEL; r++)
            c[r] = _mm256_setzero_ps();
        const float *uk = u, *vk = v + j0;
        /* the later tiles find the panel in cache */
        const float *pf = j0 == 0 ? u + ahead * KANN_CONV_PANEL : NULL;
        for (size_t k = 0; k < c_in; k++, uk += KANN_CONV_PANEL, vk += KANN_WINO_BLOCK) {
            if (pf) {
                if (pf == u_end) pf = u_next;
                _mm_prefetch((const char *)pf, _MM_HINT_T0);
                pf += KANN_CONV_PANEL;
            }
            __m256 b = _mm256_loadu_ps(vk);
            for (int r = 0; r < KANN_CONV_PANEL; r++)
                c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(uk + r), b, c[r]);
        }
        for (int r = 0; r < KANN_CONV_PANEL; r++)
            _mm256_storeu_ps(m + r * KANN_WINO_BLOCK + j0, c[r]);
    }
}

void kann_f32_conv2d_winograd_avx2(const void *args, const kann_exec *ex) {
    kann_conv2d_winograd_drive(args, ex, input_block, gemm_12x8x4, kann_wino_output_block, 1);
}
