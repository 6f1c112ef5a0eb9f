/* f32_matmul, in two styles.
 *
 * f32_matmul (GPUs; CPU devices when rows of B are strided): one output y[b][i][j] per
 * work-item, summed in the reference kernel's order (sequential over k when rows of B are
 * contiguous; eight partial sums when A's rows and B's columns are both contiguous), so results
 * match the CPU closely. Work-items of neighbouring j read neighbouring B columns, which devices
 * vectorize (PoCL) or coalesce (GPUs). Build macros: ACT, HAS_BIAS, HAS_RES (VW=1 for the
 * epilogue), DOT8 (a_col_stride == 1 and b_row_stride == 1 and b_col_stride != 1). NDRange:
 * (columns, rows of the tile, batch).
 *
 * f32_matmul_rows (CPU devices, b_col_stride == 1: every Linear and MatMul whose B is a
 * constant or a row-major activation): a CPU microkernel per work-item (local size 1), MM rows
 * x 2 * VW columns in named float16 accumulators, one broadcast A element per vector
 * multiply-add, summed sequentially over k like the reference kernel's i-k-j loop. One output
 * per work-item re-read a row of A and a column of B for every output: convnext_tiny's MLP
 * layers ran at 0.15 GFLOP/s on PoCL. Build macros: ROWS=1, MM, VW=16, ACT, HAS_BIAS, HAS_RES.
 * NDRange: (bands of blocks, 1, batch); block u is (row block u % row_blocks, column block
 * u / row_blocks), so the blocks of a band share B's columns, which stay in cache. */

#define MATMUL_PANEL 64 /* B's columns per panel: KANN_MATMUL_PANEL */

/* B's column j: its offset from the start of its row (kann_matmul_b_col). */
inline size_t matmul_b_col(uint j, uint b_cs, uint b_ps) {
    if (b_ps == 0) return (size_t)j * b_cs;
    return (size_t)(j / MATMUL_PANEL) * b_ps + (size_t)(j % MATMUL_PANEL) * b_cs;
}

/* m, n, k and the record's tile as rows [i_b, i_e) and columns [j_b, j_e), for every kernel. */
#define MATMUL_SHAPE_AND_TILE                                                                      \
    const uint m = U(A_matmul_m), n = U(A_matmul_n), k = U(A_matmul_k);                            \
    uint i_b = 0, j_b = 0, i_e = m, j_e = n;                                                       \
    KANN_TILE_RANGES(i_b, i_e, j_b, j_e);

#if ROWS
/* MM rows per block (1, 2, 4 or 8): the host picks the fewest that cover the tile's rows, so
 * that a matrix-vector product (mobilenet_v2's classifier, one row) does not multiply seven
 * copies of its row: it is bound by reading B, one broadcast and two multiply-adds per k. */
#if MM == 1
#define FOR_M(X) X(0)
#elif MM == 2
#define FOR_M(X) X(0) X(1)
#elif MM == 4
#define FOR_M(X) X(0) X(1) X(2) X(3)
#else
#define FOR_M(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#endif

/* y[0..hi) of one row = act(alpha * acc + beta * bias[j * bias_cs] + res[j]) */
inline void matmul_store(VT acc, float alpha, float beta, global const float *bias, uint bias_cs,
                         global const float *res, global float *y, int hi, float act_alpha,
                         float act_beta) {
    if (hi <= 0) return;
    const bool whole = hi == VW;
    VT v = acc * alpha;
#if HAS_BIAS
    float t[VW];
    for (int j = 0; j < VW; j++)
        t[j] = bias[(size_t)min(j, hi - 1) * bias_cs];
    v += beta * VLOAD(0, t);
#endif
#if HAS_RES
    v += whole ? VLOAD(0, res) : load_part(res, 0, hi);
#endif
    v = kann_act_vec(v, act_alpha, act_beta);
    if (whole) {
        VSTORE(v, 0, y);
    } else {
        float o[VW];
        VSTORE(v, 0, o);
        for (int j = 0; j < hi; j++)
            y[j] = o[j];
    }
}

kernel void f32_matmul_rows(KANN_KERNEL_ARGS) {
    MATMUL_SHAPE_AND_TILE
    const uint bt = get_global_id(2);
    const uint a_rs = U(A_matmul_a_row_stride), a_cs = U(A_matmul_a_col_stride);
    const uint b_rs = U(A_matmul_b_row_stride), b_ps = U(A_matmul_b_panel_stride);
    global const float *a = IN_REF(A_matmul_a) + (size_t)bt * U(A_matmul_a_batch_stride);
    global const float *b = IN_REF(A_matmul_b) + (size_t)bt * U(A_matmul_b_batch_stride);
#if HAS_BIAS
    global const float *bias = IN_REF(A_matmul_bias);
    const uint bias_rs = U(A_matmul_bias_row_stride), bias_cs = U(A_matmul_bias_col_stride);
#else
    global const float *bias = a;
    const uint bias_rs = 0, bias_cs = 0;
#endif
    global float *y = OUT_REF(A_matmul_y) + (size_t)bt * m * n;
#if HAS_RES
    global const float *res = IN_REF(A_matmul_residual) + (size_t)bt * m * n;
#else
    global const float *res = y;
#endif
    const float alpha = F(A_matmul_alpha), beta = F(A_matmul_beta);
    const float act_alpha = F(A_matmul_act_alpha), act_beta = F(A_matmul_act_beta);
    const uint row_blocks = (i_e - i_b + MM - 1) / MM;
    const uint col_blocks = (j_e - j_b + 2 * VW - 1) / (2 * VW);
    uint band_lo, band_hi;
    kann_band(row_blocks * col_blocks, 0, &band_lo, &band_hi);
    for (uint u = band_lo; u < band_hi; u++) {
        const uint i0 = i_b + (u % row_blocks) * MM, j0 = j_b + (u / row_blocks) * (2 * VW);
        const int rows = (int)min((uint)MM, i_e - i0), cols = (int)min(2u * VW, j_e - j0);
        const int hi0 = min(cols, VW), hi1 = max(cols - VW, 0);
        /* rows past the tile repeat its last row (computed, not stored) */
#define DECL_ROW(r)                                                                                \
    global const float *a##r = a + (size_t)min(i0 + (r), i_e - 1) * a_rs;                          \
    VT acc##r##_0 = (VT)(0.0f), acc##r##_1 = (VT)(0.0f);
        FOR_M(DECL_ROW)
        /* each vector of columns lies in one panel of B (the host checks j_b % VW == 0) */
        global const float *bp0 = b + matmul_b_col(j0, 1, b_ps);
        global const float *bp1 = b + matmul_b_col(j0 + VW, 1, b_ps);
#define FMA_ROW(r)                                                                                 \
    {                                                                                              \
        const VT av = (VT)(a##r[(size_t)kk * a_cs]);                                               \
        acc##r##_0 = fma(av, b0, acc##r##_0);                                                      \
        acc##r##_1 = fma(av, b1, acc##r##_1);                                                      \
    }
        if (cols == 2 * VW) {
            for (uint kk = 0; kk < k; kk++) {
                const size_t row = (size_t)kk * b_rs;
                const VT b0 = VLOAD(0, bp0 + row), b1 = VLOAD(0, bp1 + row);
                FOR_M(FMA_ROW)
            }
        } else { /* the tile's last columns: nothing past them is read */
            for (uint kk = 0; kk < k; kk++) {
                const size_t row = (size_t)kk * b_rs;
                const VT b0 = hi0 == VW ? VLOAD(0, bp0 + row) : load_part(bp0 + row, 0, hi0);
                const VT b1 = load_part(bp1 + row, 0, hi1);
                FOR_M(FMA_ROW)
            }
        }
#define STORE_ROW(r)                                                                               \
    if ((r) < rows) {                                                                              \
        const size_t i = i0 + (r), out = i * n + j0;                                               \
        global const float *bias_row = bias + i * bias_rs + (size_t)j0 * bias_cs;                  \
        matmul_store(acc##r##_0, alpha, beta, bias_row, bias_cs, res + out, y + out, hi0,          \
                     act_alpha, act_beta);                                                         \
        matmul_store(acc##r##_1, alpha, beta, bias_row + (size_t)VW * bias_cs, bias_cs,            \
                     res + out + VW, y + out + VW, hi1, act_alpha, act_beta);                      \
    }
        FOR_M(STORE_ROW)
    }
}
#else
kernel void f32_matmul(KANN_KERNEL_ARGS) {
    MATMUL_SHAPE_AND_TILE
    const uint j = j_b + get_global_id(0), i = i_b + get_global_id(1), bt = get_global_id(2);
    if (j >= j_e || i >= i_e) return;
    const uint a_rs = U(A_matmul_a_row_stride), a_cs = U(A_matmul_a_col_stride);
    const uint b_rs = U(A_matmul_b_row_stride), b_cs = U(A_matmul_b_col_stride);
    global const float *a_row =
        IN_REF(A_matmul_a) + (size_t)bt * U(A_matmul_a_batch_stride) + (size_t)i * a_rs;
    global const float *b_col = IN_REF(A_matmul_b) + (size_t)bt * U(A_matmul_b_batch_stride) +
                                matmul_b_col(j, b_cs, U(A_matmul_b_panel_stride));
    float acc = 0.0f;
#if DOT8
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
    uint kk = 0;
    for (; kk + 8 <= k; kk += 8) {
        float8 av = vload8(0, a_row + kk), bv = vload8(0, b_col + kk);
        s0 += av.s0 * bv.s0;
        s1 += av.s1 * bv.s1;
        s2 += av.s2 * bv.s2;
        s3 += av.s3 * bv.s3;
        s4 += av.s4 * bv.s4;
        s5 += av.s5 * bv.s5;
        s6 += av.s6 * bv.s6;
        s7 += av.s7 * bv.s7;
    }
    for (; kk < k; kk++)
        s0 += a_row[kk] * b_col[kk];
    acc = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
#else
    for (uint kk = 0; kk < k; kk++)
        acc += a_row[(size_t)kk * a_cs] * b_col[(size_t)kk * b_rs];
#endif
    acc *= F(A_matmul_alpha);
#if HAS_BIAS
    acc += F(A_matmul_beta) * IN_REF(A_matmul_bias)[(size_t)i * U(A_matmul_bias_row_stride) +
                                                    (size_t)j * U(A_matmul_bias_col_stride)];
#endif
    const size_t out = ((size_t)bt * m + i) * n + j;
#if HAS_RES
    acc += IN_REF(A_matmul_residual)[out];
#endif
    OUT_REF(A_matmul_y)[out] = kann_act_vec(acc, F(A_matmul_act_alpha), F(A_matmul_act_beta));
}
#endif
