/* f32_conv2d_winograd: Winograd F(2x2, 3x3) over the transformed weights U of the record.
 *
 * CPU devices (PoCL) take two launches per record, the reference kernel's scheme on
 * work-items of local size 1:
 *   f32_wino_input  one work-item per block of WINO_BLOCK output tiles and WINO_CG input
 *                   channels: V = B^T d B of its tiles (16 tiles of a tile row at a time, in
 *                   vectors) into the record's scratch, in the reference layout
 *                   [T / WINO_BLOCK][16][c_in][WINO_BLOCK] (columns past the tile zero);
 *   f32_wino_gemm   one work-item per panel of WB output channels and block: for each of the
 *                   16 positions, a WB x WINO_BLOCK GEMM over c_in in vector accumulators (a
 *                   broadcast weight times 16 tiles per FMA), folded at once into the 2x2
 *                   outputs of A^T M A; then bias, residual and activation.
 * The second launch reads the scratch the first wrote: the executor enqueues both on the
 * record's queue, in order (opencl_kernels.c, then_entry).
 *
 * GPUs run f32_conv2d_winograd: one work-item per output channel and tile, transforming its
 * input tile on the fly (tens of thousands of independent work-items, no scratch).
 *
 * Tiles: axis 0 splits output channels (begin a multiple of WB), axis 1 output tiles (begin a
 * multiple of WINO_BLOCK), so the blocks of a record are whole blocks of the layout. */

#define WB 12         /* output channels per work-item: one weight panel */
#define WINO_BLOCK 32 /* output tiles per block: KANN_CONV_PIXEL_GRANULE */
#define WINO_CG 32    /* input channels per work-item of the input transform */

/* A record's shape and ranges of output channels [m_begin, m_end) and tiles [t_begin, t_end). */
typedef struct wino_shape {
    uint c_in, h_in, w_in, c_out, h_out, w_out;
    size_t tiles_w, m_begin, m_end, t_begin, t_end;
} wino_shape;

inline wino_shape wino_read_shape(global const uint *args, uint at) {
    wino_shape s;
    s.c_in = U(A_conv2d_winograd_c_in);
    s.h_in = U(A_conv2d_winograd_h_in);
    s.w_in = U(A_conv2d_winograd_w_in);
    s.c_out = U(A_conv2d_winograd_c_out);
    s.h_out = U(A_conv2d_winograd_h_out);
    s.w_out = U(A_conv2d_winograd_w_out);
    s.tiles_w = (s.w_out + 1) / 2;
    s.m_begin = 0;
    s.m_end = s.c_out;
    s.t_begin = 0;
    s.t_end = (s.h_out + 1) / 2 * s.tiles_w;
    if (TILE_AXIS == 0) {
        s.m_begin = TILE_BEGIN;
        s.m_end = TILE_END;
    } else {
        s.t_begin = TILE_BEGIN;
        s.t_end = TILE_END;
    }
    return s;
}

inline float wino_bias(global const uint *args, uint at, global float *arena,
                       global const float *consts, size_t m) {
    return HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
}

/* ---- CPU devices -------------------------------------------------------------------------- */

/* A block's tiles are taken in runs along tile rows, 16 tiles (one vector) at most: the length
 * of the run from tile column tw with left tiles of the block to go. */
inline uint wino_run_len(const wino_shape *s, size_t tw, uint left) {
    return min(min(16u, left), (uint)(s->tiles_w - tw));
}

/* Tile (th, tw) moved len tiles on, within its row or to the start of the next. */
inline void wino_next_run(const wino_shape *s, uint len, size_t *th, size_t *tw) {
    *tw += len;
    if (*tw == s->tiles_w) {
        *tw = 0;
        (*th)++;
    }
}

#define WINO_LANES ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))

/* Row y of the channel plane xc at the columns x0 + 2k + j of the 16 tiles k of a run, j = 0..3
 * into d[j]; zero for lanes k >= len and for columns or rows past the plane. Inside the plane,
 * four vector loads split into even and odd lanes (a lane past the row reads the next row, then
 * is masked); at the end of the plane, a gather. */
__attribute__((always_inline)) inline void wino_load_row(global const float *xc, uint h_in,
                                                         uint w_in, size_t y, size_t x0, uint len,
                                                         float16 d[4]) {
    if (y >= h_in) {
        d[0] = d[1] = d[2] = d[3] = (float16)(0.0f);
        return;
    }
    global const float *row = xc + y * w_in + x0;
    if (row + 2 * 16 + 2 <= xc + (size_t)h_in * w_in) {
        const float16 a = vload16(0, row), b = vload16(1, row);
        const float16 c = vload16(0, row + 2), e = vload16(1, row + 2);
        d[0] = (float16)(a.even, b.even);
        d[1] = (float16)(a.odd, b.odd);
        d[2] = (float16)(c.even, e.even);
        d[3] = (float16)(c.odd, e.odd);
    } else {
        for (int j = 0; j < 4; j++) {
            float t[16];
            for (int k = 0; k < 16; k++)
                t[k] = row[min((size_t)(2 * k + j), w_in - 1 - x0)];
            d[j] = vload16(0, t);
        }
    }
    for (int j = 0; j < 4; j++) {
        const int16 x = (int16)((int)x0 + j) + 2 * WINO_LANES;
        d[j] = select((float16)(0.0f), d[j], (WINO_LANES < (int)len) & (x < (int)w_in));
    }
}

/* V = B^T d B of a 4x4 input tile d (s: scratch of d's type), into v[16] row-major; d, s and
 * v hold floats or vectors of tiles alike. */
#define WINO_INPUT_TRANSFORM(d, s, v)                                                              \
    do {                                                                                           \
        for (int j_ = 0; j_ < 4; j_++) {                                                           \
            s[0][j_] = d[0][j_] - d[2][j_];                                                        \
            s[1][j_] = d[1][j_] + d[2][j_];                                                        \
            s[2][j_] = d[2][j_] - d[1][j_];                                                        \
            s[3][j_] = d[1][j_] - d[3][j_];                                                        \
        }                                                                                          \
        for (int i_ = 0; i_ < 4; i_++) {                                                           \
            v[i_ * 4 + 0] = s[i_][0] - s[i_][2];                                                   \
            v[i_ * 4 + 1] = s[i_][1] + s[i_][2];                                                   \
            v[i_ * 4 + 2] = s[i_][2] - s[i_][1];                                                   \
            v[i_ * 4 + 3] = s[i_][1] - s[i_][3];                                                   \
        }                                                                                          \
    } while (0)

/* The input transform of a run of len <= 16 tiles of tile row th from tile column tw0, channel
 * plane xc: V = B^T d B, lane k of v[p] for tile k. */
__attribute__((always_inline)) inline void wino_input_run(global const float *xc, uint h_in,
                                                          uint w_in, size_t th, size_t tw0,
                                                          uint len, float16 v[16]) {
    float16 d[4][4], s[4][4];
    for (int i = 0; i < 4; i++)
        wino_load_row(xc, h_in, w_in, 2 * th + i, 2 * tw0, len, d[i]);
    WINO_INPUT_TRANSFORM(d, s, v);
}

/* NDRange: (blocks of the record's tiles, groups of WINO_CG input channels). A block's tiles
 * run along tile rows: each run of up to 16 tiles of one row is transformed in vectors into the
 * private block vb, then the block goes to the scratch with vector stores. */
kernel void f32_wino_input(KANN_KERNEL_ARGS) {
    const wino_shape s = wino_read_shape(args, at);
    const size_t q0 = (s.t_begin / WINO_BLOCK + get_global_id(0)) * WINO_BLOCK;
    const uint c0 = get_global_id(1) * WINO_CG;
    if (q0 >= s.t_end || c0 >= s.c_in) return;
    const uint n = min((size_t)WINO_BLOCK, s.t_end - q0), c_end = min(c0 + WINO_CG, s.c_in);
    const size_t pos = (size_t)s.c_in * WINO_BLOCK; /* between positions */
    /* the columns past the last run stay zero for every channel; a run's vector store may
     * reach 15 columns past the block */
    float vb[16][WINO_BLOCK + 16];
    for (int p = 0; p < 16; p++)
        for (int j = 0; j < WINO_BLOCK + 16; j++)
            vb[p][j] = 0.0f;
    global float *v = OUT_REF(A_conv2d_winograd_scratch) + q0 * 16 * s.c_in + c0 * WINO_BLOCK;
    for (uint c = c0; c < c_end; c++, v += WINO_BLOCK) {
        global const float *xc = IN_REF(A_conv2d_winograd_x) + c * s.h_in * s.w_in;
        size_t th = q0 / s.tiles_w, tw = q0 - th * s.tiles_w;
        for (uint j = 0, len; j < n; j += len) {
            len = wino_run_len(&s, tw, n - j);
            float16 t[16];
            wino_input_run(xc, s.h_in, s.w_in, th, tw, len, t);
            for (int p = 0; p < 16; p++)
                vstore16(t[p], 0, vb[p] + j);
            wino_next_run(&s, len, &th, &tw);
        }
        for (int p = 0; p < 16; p++) {
            vstore16(vload16(0, vb[p]), 0, v + p * pos);
            vstore16(vload16(1, vb[p]), 1, v + p * pos);
        }
    }
}

/* The first cnt <= 16 lanes of v at y, the memory past them left alone: at most five vector
 * stores (a row segment cut by the edge of the output). */
inline void wino_store_lanes(float16 v, uint cnt, global float *y) {
    if (cnt == 16) {
        vstore16(v, 0, y);
        return;
    }
    float8 r8 = v.lo;
    if (cnt & 8) {
        vstore8(r8, 0, y);
        y += 8;
        r8 = v.hi;
    }
    float4 r4 = r8.lo;
    if (cnt & 4) {
        vstore4(r4, 0, y);
        y += 4;
        r4 = r8.hi;
    }
    float2 r2 = r4.lo;
    if (cnt & 2) {
        vstore2(r2, 0, y);
        y += 2;
        r2 = r4.hi;
    }
    if (cnt & 1) *y = r2.x;
}

/* Output values y[o + i] = act(v[i] + residual[o + i]) for i < cnt <= 32, v[i] lane i of
 * (v0, v1): ReLU and no activation in vectors, the other activations lane by lane
 * (kann_act). */
inline void wino_store_row(global const uint *args, uint at, global float *arena,
                           global const float *consts, size_t o, uint cnt, float16 v0, float16 v1) {
    const int full = cnt == 32;
    float t[32];
    if (HAS_REF(A_conv2d_winograd_residual)) {
        global const float *res = IN_REF(A_conv2d_winograd_residual) + o;
        if (full) {
            v0 += vload16(0, res);
            v1 += vload16(1, res);
        } else {
            for (uint i = 0; i < 32; i++)
                t[i] = i < cnt ? res[i] : 0.0f;
            v0 += vload16(0, t);
            v1 += vload16(1, t);
        }
    }
    const uint kind = U(A_conv2d_winograd_act_kind);
    if (kind == 1) { /* ReLU, NaN kept as kann_act keeps it */
        v0 = select(v0, (float16)(0.0f), v0 < (float16)(0.0f));
        v1 = select(v1, (float16)(0.0f), v1 < (float16)(0.0f));
    }
    global float *y = OUT_REF(A_conv2d_winograd_y) + o;
    if (kind > 1) {
        vstore16(v0, 0, t);
        vstore16(v1, 1, t);
        for (uint i = 0; i < cnt; i++)
            y[i] = kann_act(ACT_ARGS(conv2d_winograd), t[i]);
        return;
    }
    wino_store_lanes(v0, min(cnt, 16u), y);
    if (cnt > 16) wino_store_lanes(v1, cnt - 16, y + 16);
}

/* A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: the weight of position row (or column) i in output
 * row (or column) a. */
inline int wino_at(int a, int i) {
    return a == 0 ? (i < 3) : i == 0 ? 0 : i == 1 ? 1 : -1;
}

#define WINO_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* The GEMMs of one block and panel with wide = 1: two vectors of 16 tiles per channel (a full
 * block), 0: one (at most 16 of its tiles in the record). For each position p, M[p] = U[p] V[p]
 * over c_in in named accumulators (so that they stay in registers; wide is a constant once
 * inlined), folded at once into the 2x2 outputs y[a][b] of A^T M A; then the epilogue of each
 * tile of the record. */
__attribute__((always_inline)) inline void
wino_gemm_block(global const uint *args, uint at, global float *arena, global const float *consts,
                const wino_shape *s, size_t q0, uint n, size_t m0, uint nb, const int wide) {
    const size_t panels = (s->c_out + WB - 1) / WB;
    global const float *u = IN_REF(A_conv2d_winograd_u) + m0 / WB * s->c_in * WB;
    global const float *v =
        (global const float *)OUT_REF(A_conv2d_winograd_scratch) + q0 * 16 * s->c_in;
    float16 y[2][2][WB][2];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < WB; r++)
                y[a][b][r][0] = y[a][b][r][1] = (float16)(0.0f);
    for (int p = 0; p < 16; p++) {
#define WINO_ZERO(r) float16 acc##r##_0 = (float16)(0.0f), acc##r##_1 = (float16)(0.0f);
        WINO_ROWS(WINO_ZERO)
        global const float *up = u + p * panels * s->c_in * WB;
        global const float *vp = v + p * s->c_in * WINO_BLOCK;
        for (uint c = 0; c < s->c_in; c++, up += WB, vp += WINO_BLOCK) {
            const float16 b0 = vload16(0, vp), b1 = wide ? vload16(1, vp) : (float16)(0.0f);
#define WINO_FMA(r)                                                                                \
    acc##r##_0 = fma((float16)(up[r]), b0, acc##r##_0);                                            \
    if (wide) acc##r##_1 = fma((float16)(up[r]), b1, acc##r##_1);
            WINO_ROWS(WINO_FMA)
        }
        /* the weights of A^T M A are +-1 or 0: add or subtract M[p] where it counts (exact,
         * and an infinite M never meets a zero weight, as in the reference) */
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                const int wgt = wino_at(a, p >> 2) * wino_at(b, p & 3);
                if (wgt == 0) continue;
                float16 *ya = &y[a][b][0][0];
#define WINO_FOLD(r)                                                                               \
    ya[2 * r] += wgt > 0 ? acc##r##_0 : -acc##r##_0;                                               \
    if (wide) ya[2 * r + 1] += wgt > 0 ? acc##r##_1 : -acc##r##_1;
                WINO_ROWS(WINO_FOLD)
            }
#undef WINO_ZERO
#undef WINO_FMA
#undef WINO_FOLD
    }
    /* output row 2 th + a of a run interleaves the lanes of y[a][0] and y[a][1] */
    const uint16 lo = (uint16)(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const uint16 hi = lo + (uint16)(8);
    const size_t hw = (size_t)s->h_out * s->w_out;
    for (uint r = 0; r < nb; r++) {
        const float bias = wino_bias(args, at, arena, consts, m0 + r);
        /* a run's vector load may reach 15 lanes past the block */
        float lanes[2][2][WINO_BLOCK + 16];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                vstore16(y[a][b][r][0], 0, lanes[a][b]);
                vstore16(wide ? y[a][b][r][1] : (float16)(0.0f), 1, lanes[a][b]);
            }
        size_t th = q0 / s->tiles_w, tw = q0 - th * s->tiles_w;
        for (uint j = 0, len; j < n; j += len) {
            len = wino_run_len(s, tw, n - j);
            const uint cnt = min(2 * len, (uint)(s->w_out - 2 * tw));
            for (int a = 0; a < 2 && 2 * th + a < s->h_out; a++) {
                const float16 e = vload16(0, lanes[a][0] + j), o = vload16(0, lanes[a][1] + j);
                wino_store_row(args, at, arena, consts,
                               (m0 + r) * hw + (2 * th + a) * s->w_out + 2 * tw, cnt,
                               shuffle2(e, o, lo) + bias, shuffle2(e, o, hi) + bias);
            }
            wino_next_run(s, len, &th, &tw);
        }
    }
}

/* NDRange: (panels of the record's channels, blocks of its tiles): the panels of a block run
 * one after another while its transformed tiles are in cache. */
kernel void f32_wino_gemm(KANN_KERNEL_ARGS) {
    const wino_shape s = wino_read_shape(args, at);
    const size_t q0 = (s.t_begin / WINO_BLOCK + get_global_id(1)) * WINO_BLOCK;
    const size_t m0 = s.m_begin + get_global_id(0) * WB;
    if (q0 >= s.t_end || m0 >= s.m_end) return;
    const uint n = min((size_t)WINO_BLOCK, s.t_end - q0), nb = min((size_t)WB, s.m_end - m0);
    if (n > 16)
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, nb, 1);
    else
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, nb, 0);
}

/* ---- GPUs --------------------------------------------------------------------------------- */

/* NDRange: (output channels, output tiles) of the record's tile: one work-item per channel and
 * tile with its 16 sums in registers. The work-items of a warp share a tile (its input loads
 * are one broadcast) and read neighbouring weights of a panel; each transforms its input tile
 * again per input channel, arithmetic a GPU has to spare, where one work-item per tile and panel
 * (192 sums) spilled its registers and left most of the device idle on 13x13 maps. */
kernel void f32_conv2d_winograd(KANN_KERNEL_ARGS) {
    const uint c_in = U(A_conv2d_winograd_c_in), h_in = U(A_conv2d_winograd_h_in);
    const uint w_in = U(A_conv2d_winograd_w_in), c_out = U(A_conv2d_winograd_c_out);
    const uint h_out = U(A_conv2d_winograd_h_out), w_out = U(A_conv2d_winograd_w_out);
    const size_t tiles_w = (w_out + 1) / 2, n_tiles = (h_out + 1) / 2 * tiles_w;
    size_t m = get_global_id(0), t = get_global_id(1), m_end = c_out, t_end = n_tiles;
    if (TILE_AXIS == 0) {
        m += TILE_BEGIN;
        m_end = TILE_END;
    } else {
        t += TILE_BEGIN;
        t_end = TILE_END;
    }
    if (t >= t_end || m >= m_end) return;
    const size_t panels = (c_out + 11) / 12, th = t / tiles_w, i0 = 2 * th;
    const size_t j0 = 2 * (t - th * tiles_w), step = panels * c_in * 12;
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *um = IN_REF(A_conv2d_winograd_u) + (m / 12) * c_in * 12 + m % 12;
    float acc[16];
    for (int p = 0; p < 16; p++)
        acc[p] = 0.0f;
    for (size_t c = 0; c < c_in; c++) {
        global const float *xc = x + c * h_in * w_in;
        float d[4][4], s[4][4], v[16];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                d[i][j] = i0 + i < h_in && j0 + j < w_in ? xc[(i0 + i) * w_in + j0 + j] : 0.0f;
        WINO_INPUT_TRANSFORM(d, s, v);
        for (int p = 0; p < 16; p++)
            acc[p] += um[p * step + c * 12] * v[p];
    }
    const size_t hw = (size_t)h_out * w_out;
    const float bias = HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
    global float *y = OUT_REF(A_conv2d_winograd_y) + m * hw;
    for (int i = 0; i < 2; i++) {
        float r[4];
        for (int j = 0; j < 4; j++)
            r[j] = i == 0 ? acc[j] + acc[4 + j] + acc[8 + j] : acc[4 + j] - acc[8 + j] - acc[12 + j];
        for (int j = 0; j < 2; j++) {
            if (i0 + i >= h_out || j0 + j >= w_out) continue;
            size_t o = (i0 + i) * w_out + j0 + j;
            float val = (j == 0 ? r[0] + r[1] + r[2] : r[1] - r[2] - r[3]) + bias;
            if (HAS_REF(A_conv2d_winograd_residual))
                val += IN_REF(A_conv2d_winograd_residual)[m * hw + o];
            y[o] = kann_act(ACT_ARGS(conv2d_winograd), val);
        }
    }
}
