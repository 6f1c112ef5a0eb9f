/* f32_conv2d_winograd: Winograd F(2x2, 3x3) or F(4x4, 3x3) over the transformed weights U of
 * the record, picked by its transform field: output tiles of edge e = 2 (4x4 input tiles, P = 16
 * positions) or e = 4 (6x6 input tiles, P = 36 positions; Lavin and Gray's transforms on the
 * points 0, +-1, +-2, infinity).
 *
 * CPU devices (PoCL) take two launches per record, the reference kernel's scheme on
 * work-items of local size 1:
 *   f32_wino_input  one work-item per block of WINO_BLOCK output tiles and WINO_CG input
 *                   channels: V = B^T d B of its tiles (16 tiles of a tile row at a time, in
 *                   vectors) into the record's scratch, in the reference layout
 *                   [T / WINO_BLOCK][P][c_in * WINO_BLOCK + WINO_POS_PAD] (columns past the
 *                   tiles zero, each position's rows padded by a cache line);
 *   f32_wino_gemm   one work-item per panel of WB output channels and block: for each of the
 *                   P positions, a WB x WINO_BLOCK GEMM over c_in in vector accumulators (a
 *                   broadcast weight times 16 tiles per FMA). F(2x2) folds each position at once
 *                   into the 2x2 outputs of A^T M A (weights +-1); F(4x4) keeps the sums of its
 *                   36 positions in a private M and applies the separable A^T M A after the
 *                   last (folding at once would take nine read-modify-writes of the
 *                   accumulators per position). Then bias, residual and activation.
 * The second launch reads the scratch the first wrote: the executor enqueues both on the
 * record's queue, in order (opencl_kernels.c, then_entry).
 *
 * GPUs run f32_conv2d_winograd: one work-item per output channel and tile, transforming its
 * input tile on the fly (tens of thousands of independent work-items, no scratch).
 *
 * Tiles: axis 0 splits output channels (begin a multiple of 4, maybe inside a panel of WB: the
 * CPU devices' GEMM computes the whole panel and stores the record's rows), axis 1 output tiles
 * (begin a multiple of WINO_BLOCK), so the blocks of a record are whole blocks of the layout. */

#define WB 12         /* output channels per work-item: one weight panel */
#define WINO_BLOCK 32 /* output tiles per block: KANN_CONV_PIXEL_GRANULE */
#define WINO_CG 32    /* input channels per work-item of the input transform */
#define WINO_POS_PAD 16 /* floats past each position's rows: KANN_WINO_POS_PAD */
#define WINO_F4X4 1   /* transform: KANN_WINO_F4X4 (else KANN_WINO_F2X2) */

/* Floats from one position's rows of a block of the scratch to the next. */
#define WINO_POS_STRIDE(c_in) ((size_t)(c_in) * WINO_BLOCK + WINO_POS_PAD)

/* A record's shape, output tile edge e (2 or 4) and ranges of output channels [m_begin, m_end)
 * and tiles [t_begin, t_end). */
typedef struct wino_shape {
    uint c_in, h_in, w_in, c_out, h_out, w_out, e, pad;
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
    s.e = U(A_conv2d_winograd_transform) == WINO_F4X4 ? 4 : 2;
    s.pad = U(A_conv2d_winograd_pad);
    s.tiles_w = (s.w_out + s.e - 1) / s.e;
    s.m_begin = 0;
    s.m_end = s.c_out;
    s.t_begin = 0;
    s.t_end = (s.h_out + s.e - 1) / s.e * s.tiles_w;
    KANN_TILE_RANGES(s.m_begin, s.m_end, s.t_begin, s.t_end);
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

/* The row loaders' gather (F(2x2): step 2, n = 4 columns a tile; F(4x4): step 4, n = 6):
 * d[j] lane k = row[x0 + step * k + j] (row: the row's first column), the column clamped into
 * [0, w_in), read lane by lane so that nothing outside the row is touched. */
__attribute__((always_inline)) inline void wino_gather_row(global const float *row, int step, int n,
                                                           uint w_in, long x0, float16 *d) {
    for (int j = 0; j < n; j++) {
        float t[16];
        for (int k = 0; k < 16; k++)
            t[k] = row[clamp(x0 + step * k + j, 0L, (long)w_in - 1)];
        d[j] = vload16(0, t);
    }
}

/* Zero in d[j] the lanes k >= len and the columns x0 + step * k + j outside the row. */
__attribute__((always_inline)) inline void wino_mask_row(int step, int n, uint w_in, long x0,
                                                         uint len, float16 *d) {
    for (int j = 0; j < n; j++) {
        const int16 x = (int16)((int)x0 + j) + step * WINO_LANES;
        d[j] = select((float16)(0.0f), d[j],
                      (WINO_LANES < (int)len) & (x >= 0) & (x < (int)w_in));
    }
}

/* Row y of the channel plane xc at the columns x0 + 2k + j of the 16 tiles k of a run, j = 0..3
 * into d[j]; zero for lanes k >= len and for columns or rows outside the plane (y and x0 are
 * negative in the padding above and left of it). Inside the plane, four vector loads split
 * into even and odd lanes (a lane outside the row reads the row before or after, then is
 * masked); at the start and end of the plane, a gather. */
__attribute__((always_inline)) inline void wino_load_row(global const float *xc, uint h_in,
                                                         uint w_in, long y, long x0, uint len,
                                                         float16 d[4]) {
    if (y < 0 || y >= h_in) {
        d[0] = d[1] = d[2] = d[3] = (float16)(0.0f);
        return;
    }
    global const float *row = xc + y * w_in;
    if (y * w_in + x0 >= 0 && row + x0 + 2 * 16 + 2 <= xc + (size_t)h_in * w_in) {
        row += x0;
        const float16 a = vload16(0, row), b = vload16(1, row);
        const float16 c = vload16(0, row + 2), e = vload16(1, row + 2);
        d[0] = (float16)(a.even, b.even);
        d[1] = (float16)(a.odd, b.odd);
        d[2] = (float16)(c.even, e.even);
        d[3] = (float16)(c.odd, e.odd);
    } else {
        wino_gather_row(row, 2, 4, w_in, x0, d);
    }
    wino_mask_row(2, 4, w_in, x0, len, d);
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
                                                          uint w_in, uint pad, size_t th,
                                                          size_t tw0, uint len, float16 v[16]) {
    float16 d[4][4], s[4][4];
    for (int i = 0; i < 4; i++)
        wino_load_row(xc, h_in, w_in, (long)(2 * th + i) - pad, (long)(2 * tw0) - pad, len, d[i]);
    WINO_INPUT_TRANSFORM(d, s, v);
}

/* Row y of the channel plane xc at the columns x0 + 4k + j of the 16 tiles k of a run, j = 0..5
 * into d[j]; zero for lanes k >= len and for columns or rows outside the plane (y and x0 are
 * negative in the padding). Where the 66 floats from column x0 lie inside x (x, x_end: the
 * whole input, so that only the first rows of the first channel and the last rows of the last
 * miss), four vector loads split by column mod 4 in two rounds of even and odd lanes (eight
 * two-source permutes), and columns 4k + 4 and 4k + 5 are those of 4k and 4k + 1 one tile on
 * (a lane outside the row reads a neighbouring row or plane, then is masked); else a gather. */
__attribute__((always_inline)) inline void wino4_load_row(global const float *xc,
                                                          global const float *x,
                                                          global const float *x_end, uint h_in,
                                                          uint w_in, long y, long x0, uint len,
                                                          float16 d[6]) {
    if (y < 0 || y >= h_in) {
        for (int j = 0; j < 6; j++)
            d[j] = (float16)(0.0f);
        return;
    }
    global const float *row = xc + y * w_in;
    if ((xc - x) + y * w_in + x0 >= 0 && row + x0 + 4 * 16 + 2 <= x_end) {
        row += x0;
        const float16 a0 = vload16(0, row), a1 = vload16(1, row);
        const float16 a2 = vload16(2, row), a3 = vload16(3, row);
        const float16 e01 = (float16)(a0.even, a1.even), o01 = (float16)(a0.odd, a1.odd);
        const float16 e23 = (float16)(a2.even, a3.even), o23 = (float16)(a2.odd, a3.odd);
        d[0] = (float16)(e01.even, e23.even);
        d[1] = (float16)(o01.even, o23.even);
        d[2] = (float16)(e01.odd, e23.odd);
        d[3] = (float16)(o01.odd, o23.odd);
        d[4] = (float16)(d[0].s1234, d[0].s5678, d[0].s9abc, d[0].sdef, row[64]);
        d[5] = (float16)(d[1].s1234, d[1].s5678, d[1].s9abc, d[1].sdef, row[65]);
    } else {
        wino_gather_row(row, 4, 6, w_in, x0, d);
    }
    wino_mask_row(4, 6, w_in, x0, len, d);
}

/* o = B^T d of F(4x4, 3x3) for six values d0 .. d5 of type T (float or a vector of tiles): a
 * column or row of a 6x6 input tile, as kann_wino4_bt. */
#define WINO4_BT(T, d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5)                                \
    do {                                                                                           \
        const T a_ = (d4)-4.0f * (d2), b_ = (d3)-4.0f * (d1);                                      \
        const T c_ = (d4) - (d2), e_ = 2.0f * ((d3) - (d1));                                       \
        o0 = 4.0f * (d0)-5.0f * (d2) + (d4);                                                       \
        o1 = a_ + b_;                                                                              \
        o2 = a_ - b_;                                                                              \
        o3 = c_ + e_;                                                                              \
        o4 = c_ - e_;                                                                              \
        o5 = 4.0f * (d1)-5.0f * (d3) + (d5);                                                       \
    } while (0)

/* o = A^T m of F(4x4, 3x3) for six values m0 .. m5 of type T: a column or row of a 6x6 tile of
 * positions, as kann_wino4_at. */
#define WINO4_AT(T, m0, m1, m2, m3, m4, m5, o0, o1, o2, o3)                                        \
    do {                                                                                           \
        const T a_ = (m1) + (m2), b_ = (m1) - (m2), c_ = (m3) + (m4), d_ = (m3) - (m4);            \
        o0 = (m0) + a_ + c_;                                                                       \
        o1 = b_ + 2.0f * d_;                                                                       \
        o2 = a_ + 4.0f * c_;                                                                       \
        o3 = b_ + 8.0f * d_ + (m5);                                                                \
    } while (0)

/* V = B^T d B of a 6x6 input tile d of type T (s: scratch of T), into v[36] row-major. */
#define WINO4_INPUT_TRANSFORM(T, d, s, v)                                                          \
    do {                                                                                           \
        _Pragma("unroll") for (int j_ = 0; j_ < 6; j_++)                                           \
            WINO4_BT(T, d[0][j_], d[1][j_], d[2][j_], d[3][j_], d[4][j_], d[5][j_], s[0][j_],      \
                     s[1][j_], s[2][j_], s[3][j_], s[4][j_], s[5][j_]);                            \
        _Pragma("unroll") for (int i_ = 0; i_ < 6; i_++)                                           \
            WINO4_BT(T, s[i_][0], s[i_][1], s[i_][2], s[i_][3], s[i_][4], s[i_][5], v[i_ * 6],     \
                     v[i_ * 6 + 1], v[i_ * 6 + 2], v[i_ * 6 + 3], v[i_ * 6 + 4], v[i_ * 6 + 5]);   \
    } while (0)

/* The F(4x4) input transform of a run of len <= 16 tiles of tile row th from tile column tw0,
 * channel plane xc: V = B^T d B, lane k of v[p] for tile k. */
__attribute__((always_inline)) inline void wino4_input_run(global const float *xc,
                                                           global const float *x,
                                                           global const float *x_end, uint h_in,
                                                           uint w_in, uint pad, size_t th,
                                                           size_t tw0, uint len, float16 v[36]) {
    float16 d[6][6], s[6][6];
    for (int i = 0; i < 6; i++)
        wino4_load_row(xc, x, x_end, h_in, w_in, (long)(4 * th + i) - pad, (long)(4 * tw0) - pad,
                       len, d[i]);
    WINO4_INPUT_TRANSFORM(float16, d, s, v);
}

/* The F(4x4) input transform of a block of n tiles from q0, input channels [c0, c_end), as
 * f32_wino_input does F(2x2)'s (kept apart from that code, whose private block stays 16
 * positions). */
inline void wino4_input_block(global const uint *args, uint at, global float *arena,
                              global const float *consts, const wino_shape *s, size_t q0, uint n,
                              uint c0, uint c_end) {
    const size_t pos = WINO_POS_STRIDE(s->c_in); /* between positions */
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *x_end = x + (size_t)s->c_in * s->h_in * s->w_in;
    float vb[36][WINO_BLOCK + 16];
    for (int p = 0; p < 36; p++)
        for (int j = 0; j < WINO_BLOCK + 16; j++)
            vb[p][j] = 0.0f;
    global float *v =
        OUT_REF(A_conv2d_winograd_scratch) + q0 / WINO_BLOCK * 36 * pos + c0 * WINO_BLOCK;
    for (uint c = c0; c < c_end; c++, v += WINO_BLOCK) {
        global const float *xc = x + c * s->h_in * s->w_in;
        size_t th = q0 / s->tiles_w, tw = q0 - th * s->tiles_w;
        for (uint j = 0, len; j < n; j += len) {
            len = wino_run_len(s, tw, n - j);
            float16 t[36];
            wino4_input_run(xc, x, x_end, s->h_in, s->w_in, s->pad, th, tw, len, t);
            for (int p = 0; p < 36; p++)
                vstore16(t[p], 0, vb[p] + j);
            wino_next_run(s, len, &th, &tw);
        }
        for (int p = 0; p < 36; p++) {
            vstore16(vload16(0, vb[p]), 0, v + p * pos);
            vstore16(vload16(1, vb[p]), 1, v + p * pos);
        }
    }
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
    if (s.e == 4) {
        wino4_input_block(args, at, arena, consts, &s, q0, n, c0, c_end);
        return;
    }
    const size_t pos = WINO_POS_STRIDE(s.c_in); /* between positions */
    /* the columns past the last run stay zero for every channel; a run's vector store may
     * reach 15 columns past the block */
    float vb[16][WINO_BLOCK + 16];
    for (int p = 0; p < 16; p++)
        for (int j = 0; j < WINO_BLOCK + 16; j++)
            vb[p][j] = 0.0f;
    global float *v =
        OUT_REF(A_conv2d_winograd_scratch) + q0 / WINO_BLOCK * 16 * pos + c0 * WINO_BLOCK;
    for (uint c = c0; c < c_end; c++, v += WINO_BLOCK) {
        global const float *xc = IN_REF(A_conv2d_winograd_x) + c * s.h_in * s.w_in;
        size_t th = q0 / s.tiles_w, tw = q0 - th * s.tiles_w;
        for (uint j = 0, len; j < n; j += len) {
            len = wino_run_len(&s, tw, n - j);
            float16 t[16];
            wino_input_run(xc, s.h_in, s.w_in, s.pad, th, tw, len, t);
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

/* The lanes of the low (zip_lo) or high (zip_hi) halves of a and b interleaved: a0, b0, a1,
 * b1, ...; zip2: pairs of lanes, a0, a1, b0, b1, a2, a3, b2, b3, ... Written as swizzles, which
 * the compiler turns into one two-source permute, where PoCL 5 calls shuffle2 as a function. */
inline float16 wino_zip_lo(float16 a, float16 b) {
    return ((float16)(a.lo, b.lo)).s08192a3b4c5d6e7f;
}

inline float16 wino_zip_hi(float16 a, float16 b) {
    return ((float16)(a.hi, b.hi)).s08192a3b4c5d6e7f;
}

inline float16 wino_zip2_lo(float16 a, float16 b) {
    return ((float16)(a.lo, b.lo)).s018923ab45cd67ef;
}

inline float16 wino_zip2_hi(float16 a, float16 b) {
    return ((float16)(a.hi, b.hi)).s018923ab45cd67ef;
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

/* The epilogue's fields of a record, read once per work-item: the compiler cannot keep them in
 * registers across the stores to y (args might alias the arena). */
typedef struct wino_out {
    global float *y;
    global const float *res; /* residual, or 0 */
    uint kind;
    float alpha, beta;
} wino_out;

inline wino_out wino_read_out(global const uint *args, uint at, global float *arena,
                              global const float *consts) {
    wino_out e;
    e.y = OUT_REF(A_conv2d_winograd_y);
    e.res = HAS_REF(A_conv2d_winograd_residual) ? IN_REF(A_conv2d_winograd_residual) : 0;
    e.kind = U(A_conv2d_winograd_act_kind);
    e.alpha = F(A_conv2d_winograd_act_alpha);
    e.beta = F(A_conv2d_winograd_act_beta);
    return e;
}

/* Output values y[o + i] = act(v[i] + residual[o + i]) for i < cnt <= 32, v[i] lane i of
 * (v0, v1): ReLU and no activation in vectors, the other activations lane by lane
 * (kann_act). */
__attribute__((always_inline)) inline void wino_store_row(const wino_out *e, size_t o, uint cnt,
                                                          float16 v0, float16 v1) {
    const int full = cnt == 32;
    float t[32];
    if (e->res) {
        global const float *res = e->res + o;
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
    if (e->kind == 1) { /* ReLU, NaN kept as kann_act keeps it */
        v0 = select(v0, (float16)(0.0f), v0 < (float16)(0.0f));
        v1 = select(v1, (float16)(0.0f), v1 < (float16)(0.0f));
    }
    global float *y = e->y + o;
    if (e->kind > 1) {
        vstore16(v0, 0, t);
        vstore16(v1, 1, t);
        for (uint i = 0; i < cnt; i++)
            y[i] = kann_act(e->kind, e->alpha, e->beta, t[i]);
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

/* The accumulators of panel row r (two vectors of 16 tiles, the second used where wide), and
 * their FMA for one input channel: weights up[0..WB), tiles b0 and b1. */
#define WINO_ZERO(r) float16 acc##r##_0 = (float16)(0.0f), acc##r##_1 = (float16)(0.0f);
#define WINO_FMA(r)                                                                                \
    acc##r##_0 = fma((float16)(up[r]), b0, acc##r##_0);                                            \
    if (wide) acc##r##_1 = fma((float16)(up[r]), b1, acc##r##_1);

/* The GEMMs of one block and panel with wide = 1: two vectors of 16 tiles per channel (a full
 * block), 0: one (at most 16 of its tiles in the record). For each position p, M[p] = U[p] V[p]
 * over c_in in named accumulators (so that they stay in registers; wide is a constant once
 * inlined), folded at once into the 2x2 outputs y[a][b] of A^T M A; then the epilogue of each
 * tile of the record. */
__attribute__((always_inline)) inline void
wino_gemm_block(global const uint *args, uint at, global float *arena, global const float *consts,
                const wino_shape *s, size_t q0, uint n, size_t m0, uint r0, uint nb,
                const int wide) {
    const size_t panels = (s->c_out + WB - 1) / WB;
    global const float *u = IN_REF(A_conv2d_winograd_u) + m0 / WB * s->c_in * WB;
    const size_t pos = WINO_POS_STRIDE(s->c_in); /* between positions */
    global const float *v =
        (global const float *)OUT_REF(A_conv2d_winograd_scratch) + q0 / WINO_BLOCK * 16 * pos;
    float16 y[2][2][WB][2];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int r = 0; r < WB; r++)
                y[a][b][r][0] = y[a][b][r][1] = (float16)(0.0f);
    for (int p = 0; p < 16; p++) {
        WINO_ROWS(WINO_ZERO)
        global const float *up = u + p * panels * s->c_in * WB;
        global const float *vp = v + p * pos;
        for (uint c = 0; c < s->c_in; c++, up += WB, vp += WINO_BLOCK) {
            const float16 b0 = vload16(0, vp), b1 = wide ? vload16(1, vp) : (float16)(0.0f);
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
#undef WINO_FOLD
    }
    /* output row 2 th + a of a run interleaves the lanes of y[a][0] and y[a][1] */
    const size_t hw = (size_t)s->h_out * s->w_out;
    const wino_out out = wino_read_out(args, at, arena, consts);
    for (uint r = r0; r < nb; r++) {
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
                wino_store_row(&out, (m0 + r) * hw + (2 * th + a) * s->w_out + 2 * tw, cnt,
                               wino_zip_lo(e, o) + bias, wino_zip_hi(e, o) + bias);
            }
            wino_next_run(s, len, &th, &tw);
        }
    }
}

/* The F(4x4) GEMMs of one block and panel, wide as in wino_gemm_block. For each position p,
 * M[p] = U[p] V[p] over c_in in the same named accumulators, stored to the private mb (36 x 24
 * vectors); then, per output channel and vector of 16 tiles, Y = A^T M A from mb (six columns
 * of six positions to four rows, then each row to four outputs, as kann_wino4_output_tile) and
 * the epilogue of each tile of the record. Folding each M[p] at once into the 4x4 outputs as
 * F(2x2) does (A^T has 18 nonzero weights per row of positions: nine read-modify-writes of the
 * 24 accumulators per position on average) measured 11-18 % slower on PoCL, and so did one
 * vector of 16 tiles at a time (half of mb, the weights read twice). */
__attribute__((always_inline)) inline void
wino4_gemm_block(global const uint *args, uint at, global float *arena, global const float *consts,
                 const wino_shape *s, size_t q0, uint n, size_t m0, uint r0, uint nb,
                 const int wide) {
    const size_t panels = (s->c_out + WB - 1) / WB;
    global const float *u = IN_REF(A_conv2d_winograd_u) + m0 / WB * s->c_in * WB;
    const size_t pos = WINO_POS_STRIDE(s->c_in); /* between positions */
    global const float *v =
        (global const float *)OUT_REF(A_conv2d_winograd_scratch) + q0 / WINO_BLOCK * 36 * pos;
    float16 mb[36][WB][2];
    for (int p = 0; p < 36; p++) {
        WINO_ROWS(WINO_ZERO)
        global const float *up = u + p * panels * s->c_in * WB;
        global const float *vp = v + p * pos;
        for (uint c = 0; c < s->c_in; c++, up += WB, vp += WINO_BLOCK) {
            const float16 b0 = vload16(0, vp), b1 = wide ? vload16(1, vp) : (float16)(0.0f);
            WINO_ROWS(WINO_FMA)
        }
#define WINO_KEEP(r)                                                                               \
    mb[p][r][0] = acc##r##_0;                                                                      \
    if (wide) mb[p][r][1] = acc##r##_1;
        WINO_ROWS(WINO_KEEP)
#undef WINO_KEEP
    }
    /* output row 4 th + a of a run interleaves the lanes of outputs (a, 0..3): outputs 0 and 1,
     * 2 and 3 first (zip: tiles 0..7, then 8..15), then the two pairs (zip2: four tiles) */
    const size_t hw = (size_t)s->h_out * s->w_out;
    const wino_out out = wino_read_out(args, at, arena, consts);
    for (uint r = r0; r < nb; r++) {
        const float bias = wino_bias(args, at, arena, consts, m0 + r);
        /* a run's vector load may reach 15 lanes past the block */
        float lanes[4][4][WINO_BLOCK + 16];
        for (int h = 0; h < 2; h++) {
            if (h == 1 && !wide) {
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++)
                        vstore16((float16)(0.0f), 1, lanes[a][b]);
                break;
            }
            float16 t[4][6], o[4][4];
            for (int j = 0; j < 6; j++)
                WINO4_AT(float16, mb[j][r][h], mb[6 + j][r][h], mb[12 + j][r][h], mb[18 + j][r][h],
                         mb[24 + j][r][h], mb[30 + j][r][h], t[0][j], t[1][j], t[2][j], t[3][j]);
            for (int a = 0; a < 4; a++)
                WINO4_AT(float16, t[a][0], t[a][1], t[a][2], t[a][3], t[a][4], t[a][5], o[a][0],
                         o[a][1], o[a][2], o[a][3]);
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    vstore16(o[a][b] + bias, h, lanes[a][b]);
        }
        size_t th = q0 / s->tiles_w, tw = q0 - th * s->tiles_w;
        for (uint j = 0, len; j < n; j += len) {
            len = wino_run_len(s, tw, n - j);
            const uint cnt = min(4 * len, (uint)(s->w_out - 4 * tw));
            for (int a = 0; a < 4 && 4 * th + a < s->h_out; a++) {
                const float16 e0 = vload16(0, lanes[a][0] + j), e1 = vload16(0, lanes[a][1] + j);
                const float16 e2 = vload16(0, lanes[a][2] + j), e3 = vload16(0, lanes[a][3] + j);
                const float16 p01 = wino_zip_lo(e0, e1), p23 = wino_zip_lo(e2, e3);
                const size_t o = (m0 + r) * hw + (4 * th + a) * s->w_out + 4 * tw;
                wino_store_row(&out, o, min(cnt, 32u), wino_zip2_lo(p01, p23),
                               wino_zip2_hi(p01, p23));
                if (cnt > 32) {
                    const float16 q01 = wino_zip_hi(e0, e1), q23 = wino_zip_hi(e2, e3);
                    wino_store_row(&out, o + 32, cnt - 32, wino_zip2_lo(q01, q23),
                                   wino_zip2_hi(q01, q23));
                }
            }
            wino_next_run(s, len, &th, &tw);
        }
    }
}

/* NDRange: (the panels the record's channels reach into, blocks of its tiles): the panels of a
 * block run one after another while its transformed tiles are in cache. A record along output
 * channels may start or end inside a panel: its rows [r0, nb) of the panel at m0 are stored. */
kernel void f32_wino_gemm(KANN_KERNEL_ARGS) {
    const wino_shape s = wino_read_shape(args, at);
    const size_t q0 = (s.t_begin / WINO_BLOCK + get_global_id(1)) * WINO_BLOCK;
    const size_t m0 = (s.m_begin / WB + get_global_id(0)) * WB;
    if (q0 >= s.t_end || m0 >= s.m_end) return;
    const uint n = min((size_t)WINO_BLOCK, s.t_end - q0), nb = min((size_t)WB, s.m_end - m0);
    const uint r0 = s.m_begin > m0 ? (uint)(s.m_begin - m0) : 0;
    if (s.e == 4) {
        if (n > 16)
            wino4_gemm_block(args, at, arena, consts, &s, q0, n, m0, r0, nb, 1);
        else
            wino4_gemm_block(args, at, arena, consts, &s, q0, n, m0, r0, nb, 0);
    } else if (n > 16) {
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, r0, nb, 1);
    } else {
        wino_gemm_block(args, at, arena, consts, &s, q0, n, m0, r0, nb, 0);
    }
}

/* ---- GPUs --------------------------------------------------------------------------------- */

/* Output tile t of output channel m, one work-item's work in f32_conv2d_winograd, for tiles
 * of edge E (2: F(2x2), 4: F(4x4); a constant once inlined): the (E + 2)^2 sums of its input
 * tiles in registers, then Y = A^T M A and the epilogue. */
__attribute__((always_inline)) inline void wino_gpu_tile(global const uint *args, uint at,
                                                         global float *arena,
                                                         global const float *consts, size_t m,
                                                         size_t t, size_t tiles_w, const int E) {
    const int N = E + 2, P = N * N;
    const uint c_in = U(A_conv2d_winograd_c_in), h_in = U(A_conv2d_winograd_h_in);
    const uint w_in = U(A_conv2d_winograd_w_in), c_out = U(A_conv2d_winograd_c_out);
    const uint h_out = U(A_conv2d_winograd_h_out), w_out = U(A_conv2d_winograd_w_out);
    const long pad = U(A_conv2d_winograd_pad);
    const size_t panels = (c_out + 11) / 12, th = t / tiles_w, step = panels * c_in * 12;
    const size_t o0 = E * th, p0 = E * (t - th * tiles_w); /* the tile's first output */
    const long i0 = (long)o0 - pad, j0 = (long)p0 - pad;      /* and its input window's */
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *um = IN_REF(A_conv2d_winograd_u) + (m / 12) * c_in * 12 + m % 12;
    float acc[36];
    for (int p = 0; p < P; p++)
        acc[p] = 0.0f;
    for (size_t c = 0; c < c_in; c++) {
        global const float *xc = x + c * h_in * w_in;
        float d[6][6], s[6][6], v[36];
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                d[i][j] = i0 + i >= 0 && i0 + i < h_in && j0 + j >= 0 && j0 + j < w_in
                              ? xc[(i0 + i) * w_in + j0 + j]
                              : 0.0f;
        if (E == 4)
            WINO4_INPUT_TRANSFORM(float, d, s, v);
        else
            WINO_INPUT_TRANSFORM(d, s, v);
        for (int p = 0; p < P; p++)
            acc[p] += um[p * step + c * 12] * v[p];
    }
    float o[4][4]; /* the E x E outputs */
    if (E == 4) {
        float r[4][6];
        for (int j = 0; j < 6; j++)
            WINO4_AT(float, acc[j], acc[6 + j], acc[12 + j], acc[18 + j], acc[24 + j], acc[30 + j],
                     r[0][j], r[1][j], r[2][j], r[3][j]);
        for (int i = 0; i < 4; i++)
            WINO4_AT(float, r[i][0], r[i][1], r[i][2], r[i][3], r[i][4], r[i][5], o[i][0], o[i][1],
                     o[i][2], o[i][3]);
    } else {
        for (int i = 0; i < 2; i++) {
            float r[4];
            for (int j = 0; j < 4; j++)
                r[j] = i == 0 ? acc[j] + acc[4 + j] + acc[8 + j]
                              : acc[4 + j] - acc[8 + j] - acc[12 + j];
            o[i][0] = r[0] + r[1] + r[2];
            o[i][1] = r[1] - r[2] - r[3];
        }
    }
    const size_t hw = (size_t)h_out * w_out;
    const float bias = HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
    global float *y = OUT_REF(A_conv2d_winograd_y) + m * hw;
    for (int i = 0; i < E && o0 + i < h_out; i++)
        for (int j = 0; j < E && p0 + j < w_out; j++) {
            const size_t at_o = (o0 + i) * w_out + p0 + j;
            float val = o[i][j] + bias;
            if (HAS_REF(A_conv2d_winograd_residual))
                val += IN_REF(A_conv2d_winograd_residual)[m * hw + at_o];
            y[at_o] = kann_act(ACT_ARGS(conv2d_winograd), val);
        }
}

/* NDRange: (output channels, output tiles) of the record's tile: one work-item per channel and
 * tile with its 16 (F(2x2)) or 36 (F(4x4)) sums in registers (wino_gpu_tile). The work-items of
 * a warp share a tile (its input loads are one broadcast) and read neighbouring weights of a
 * panel; each transforms its input tile again per input channel, arithmetic a GPU has to spare,
 * where one work-item per tile and panel (192 sums) spilled its registers and left most of the
 * device idle on 13x13 maps. */
kernel void f32_conv2d_winograd(KANN_KERNEL_ARGS) {
    const uint c_out = U(A_conv2d_winograd_c_out);
    const uint h_out = U(A_conv2d_winograd_h_out), w_out = U(A_conv2d_winograd_w_out);
    const uint e = U(A_conv2d_winograd_transform) == WINO_F4X4 ? 4 : 2;
    const size_t tiles_w = (w_out + e - 1) / e, n_tiles = (h_out + e - 1) / e * tiles_w;
    size_t m = get_global_id(0), t = get_global_id(1), m_end = c_out, t_end = n_tiles;
    if (TILE_AXIS == 0) {
        m += TILE_BEGIN;
        m_end = TILE_END;
    } else {
        t += TILE_BEGIN;
        t_end = TILE_END;
    }
    if (t >= t_end || m >= m_end) return;
    if (e == 4)
        wino_gpu_tile(args, at, arena, consts, m, t, tiles_w, 4);
    else
        wino_gpu_tile(args, at, arena, consts, m, t, tiles_w, 2);
}
