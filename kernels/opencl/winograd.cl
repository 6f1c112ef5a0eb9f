/* f32_conv2d_winograd: Winograd F(2x2, 3x3) over the transformed weights U of the record.
 *
 * CPU devices (PoCL) take two launches per record, the reference kernel's scheme on
 * work-items of local size 1:
 *   f32_wino_input  one work-item per block of WINO_BLOCK output tiles and input channel:
 *                   V = B^T d B of each tile into the record's scratch, in the reference
 *                   layout [T / WINO_BLOCK][16][c_in][WINO_BLOCK] (columns past the tile zero);
 *   f32_wino_gemm   one work-item per block of tiles and panel of WB output channels: for each
 *                   of the 16 positions, a WB x WINO_BLOCK GEMM over c_in in vector
 *                   accumulators (a broadcast weight times 16 tiles per FMA), folded at once
 *                   into the 2x2 outputs of A^T M A; then bias, residual and activation.
 * The second launch reads the scratch the first wrote: the executor enqueues both on the
 * record's queue, in order.
 *
 * GPUs keep f32_conv2d_winograd: one work-item per output tile and panel, transforming each
 * input tile on the fly (thousands of independent work-items, no scratch).
 *
 * Tiles: axis 0 splits output channels (begin a multiple of WB), axis 1 output tiles (begin a
 * multiple of WINO_BLOCK), so the blocks of a record are whole blocks of the layout. */

#define WB 12         /* output channels per work-item: one weight panel */
#define WINO_BLOCK 32 /* output tiles per block: KANN_CONV_PIXEL_GRANULE */

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

/* V = B^T d B of the 4x4 input tile at (i0, j0) of channel plane xc; rows and columns past the
 * plane read as zero. */
inline void wino_input_tile(global const float *xc, uint h_in, uint w_in, size_t i0, size_t j0,
                            float v[16]) {
    float d[4][4], s[4][4];
    if (i0 + 4 <= h_in && j0 + 4 <= w_in) {
        for (int i = 0; i < 4; i++) {
            float4 r = vload4(0, xc + (i0 + i) * w_in + j0);
            d[i][0] = r.s0;
            d[i][1] = r.s1;
            d[i][2] = r.s2;
            d[i][3] = r.s3;
        }
    } else {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                d[i][j] = i0 + i < h_in && j0 + j < w_in ? xc[(i0 + i) * w_in + j0 + j] : 0.0f;
    }
    for (int j = 0; j < 4; j++) {
        s[0][j] = d[0][j] - d[2][j];
        s[1][j] = d[1][j] + d[2][j];
        s[2][j] = d[2][j] - d[1][j];
        s[3][j] = d[1][j] - d[3][j];
    }
    for (int i = 0; i < 4; i++) {
        v[i * 4 + 0] = s[i][0] - s[i][2];
        v[i * 4 + 1] = s[i][1] + s[i][2];
        v[i * 4 + 2] = s[i][2] - s[i][1];
        v[i * 4 + 3] = s[i][1] - s[i][3];
    }
}

/* The output value of 2x2 tile row a, column b at (oh, ow): bias, residual, activation. */
inline void wino_store(global const uint *args, uint at, global float *arena,
                       global const float *consts, size_t m, size_t oh, size_t ow, float val,
                       float bias) {
    const uint w_out = U(A_conv2d_winograd_w_out);
    const size_t o = m * U(A_conv2d_winograd_h_out) * w_out + oh * w_out + ow;
    val += bias;
    if (HAS_REF(A_conv2d_winograd_residual)) val += IN_REF(A_conv2d_winograd_residual)[o];
    OUT_REF(A_conv2d_winograd_y)[o] = kann_act(ACT_ARGS(conv2d_winograd), val);
}

inline float wino_bias(global const uint *args, uint at, global float *arena,
                       global const float *consts, size_t m) {
    return HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
}

/* ---- CPU devices -------------------------------------------------------------------------- */

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

/* The input transform of a run of len <= 16 tiles of tile row th from tile column tw0, channel
 * plane xc: V = B^T d B, lane k of v[p] for tile k. */
__attribute__((always_inline)) inline void wino_input_run(global const float *xc, uint h_in,
                                                          uint w_in, size_t th, size_t tw0,
                                                          uint len, float16 v[16]) {
    float16 d[4][4], s[4][4];
    for (int i = 0; i < 4; i++)
        wino_load_row(xc, h_in, w_in, 2 * th + i, 2 * tw0, len, d[i]);
    for (int j = 0; j < 4; j++) {
        s[0][j] = d[0][j] - d[2][j];
        s[1][j] = d[1][j] + d[2][j];
        s[2][j] = d[2][j] - d[1][j];
        s[3][j] = d[1][j] - d[3][j];
    }
    for (int i = 0; i < 4; i++) {
        v[i * 4 + 0] = s[i][0] - s[i][2];
        v[i * 4 + 1] = s[i][1] + s[i][2];
        v[i * 4 + 2] = s[i][2] - s[i][1];
        v[i * 4 + 3] = s[i][1] - s[i][3];
    }
}

/* NDRange: (blocks of the record's tiles). A block's tiles run along tile rows: each run of up
 * to 16 tiles of one row is transformed in vectors into the private block vb, then the block
 * goes to the scratch with aligned vector stores. */
kernel void f32_wino_input(KANN_KERNEL_ARGS) {
    const wino_shape s = wino_read_shape(args, at);
    const size_t q0 = (s.t_begin / WINO_BLOCK + get_global_id(0)) * WINO_BLOCK;
    if (q0 >= s.t_end) return;
    const uint n = min((size_t)WINO_BLOCK, s.t_end - q0);
    const size_t pos = (size_t)s.c_in * WINO_BLOCK; /* between positions */
    /* the columns past the last run stay zero for every channel; a run's vector store may
     * reach 15 columns past the block */
    float vb[16][WINO_BLOCK + 16];
    for (int p = 0; p < 16; p++)
        for (int j = 0; j < WINO_BLOCK + 16; j++)
            vb[p][j] = 0.0f;
    global float *v = OUT_REF(A_conv2d_winograd_scratch) + q0 * 16 * s.c_in;
    for (uint c = 0; c < s.c_in; c++, v += WINO_BLOCK) {
        global const float *xc = IN_REF(A_conv2d_winograd_x) + c * s.h_in * s.w_in;
        size_t th = q0 / s.tiles_w, tw = q0 - th * s.tiles_w;
        for (uint j = 0; j < n;) {
            const uint len = min(min(16u, n - j), (uint)(s.tiles_w - tw));
            float16 t[16];
            wino_input_run(xc, s.h_in, s.w_in, th, tw, len, t);
            for (int p = 0; p < 16; p++)
                vstore16(t[p], 0, vb[p] + j);
            j += len;
            tw += len;
            if (tw == s.tiles_w) {
                tw = 0;
                th++;
            }
        }
        for (int p = 0; p < 16; p++) {
            vstore16(vload16(0, vb[p]), 0, v + p * pos);
            vstore16(vload16(1, vb[p]), 1, v + p * pos);
        }
    }
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
    for (uint r = 0; r < nb; r++) {
        const float bias = wino_bias(args, at, arena, consts, m0 + r);
        float lanes[2][2][WINO_BLOCK];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                vstore16(y[a][b][r][0], 0, lanes[a][b]);
                if (wide) vstore16(y[a][b][r][1], 1, lanes[a][b]);
            }
        size_t th = q0 / s->tiles_w, tw = q0 - th * s->tiles_w;
        for (uint j = 0; j < n; j++) {
            for (int a = 0; a < 2 && 2 * th + a < s->h_out; a++)
                for (int b = 0; b < 2 && 2 * tw + b < s->w_out; b++)
                    wino_store(args, at, arena, consts, m0 + r, 2 * th + a, 2 * tw + b,
                               lanes[a][b][j], bias);
            if (++tw == s->tiles_w) {
                tw = 0;
                th++;
            }
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
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, nb, 2);
    else
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, nb, 1);
}

/* ---- GPUs --------------------------------------------------------------------------------- */

/* NDRange: (output tiles, blocks of WB output channels), each cut to the record's tile. */
kernel void f32_conv2d_winograd(KANN_KERNEL_ARGS) {
    const wino_shape s = wino_read_shape(args, at);
    const size_t t = s.t_begin + get_global_id(0);
    const size_t m0 = s.m_begin + get_global_id(1) * WB;
    if (t >= s.t_end || m0 >= s.m_end) return;
    const uint nb = min((size_t)WB, s.m_end - m0);
    const size_t panels = (s.c_out + WB - 1) / WB, th = t / s.tiles_w, i0 = 2 * th;
    const size_t j0 = 2 * (t - th * s.tiles_w), step = panels * s.c_in * WB;
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *u = IN_REF(A_conv2d_winograd_u);
    float acc[WB][16];
    for (uint b = 0; b < WB; b++)
        for (int p = 0; p < 16; p++)
            acc[b][p] = 0.0f;
    for (size_t c = 0; c < s.c_in; c++) {
        float v[16];
        wino_input_tile(x + c * s.h_in * s.w_in, s.h_in, s.w_in, i0, j0, v);
        for (uint b = 0; b < nb; b++) {
            global const float *um = u + ((m0 + b) / WB * s.c_in + c) * WB + (m0 + b) % WB;
            for (int p = 0; p < 16; p++)
                acc[b][p] += um[p * step] * v[p];
        }
    }
    for (uint b = 0; b < nb; b++) {
        const float bias = wino_bias(args, at, arena, consts, m0 + b);
        for (int a = 0; a < 2 && i0 + a < s.h_out; a++) {
            float r[4];
            for (int j = 0; j < 4; j++)
                r[j] = a == 0 ? acc[b][j] + acc[b][4 + j] + acc[b][8 + j]
                              : acc[b][4 + j] - acc[b][8 + j] - acc[b][12 + j];
            for (int bb = 0; bb < 2 && j0 + bb < s.w_out; bb++)
                wino_store(args, at, arena, consts, m0 + b, i0 + a, j0 + bb,
                           bb == 0 ? r[0] + r[1] + r[2] : r[1] - r[2] - r[3], bias);
        }
    }
}
