/* f32_matmul: one output y[b][i][j] per work-item, summed in the reference kernel's order
 * (sequential over k when rows of B are contiguous; eight partial sums when A's rows and B's
 * columns are both contiguous), so results match the CPU closely. Work-items of neighbouring j
 * read neighbouring B columns, which devices vectorize (PoCL) or coalesce (GPUs).
 *
 * Build macros: ACT, HAS_BIAS, HAS_RES (VW=1 for the epilogue), DOT8 (a_col_stride == 1 and
 * b_row_stride == 1 and b_col_stride != 1). NDRange: (columns, rows of the tile, batch). */

kernel void f32_matmul(KANN_KERNEL_ARGS) {
    const uint m = U(A_matmul_m), n = U(A_matmul_n), k = U(A_matmul_k);
    uint i_b = 0, j_b = 0, i_e = m, j_e = n;
    if (TILE_AXIS == 0) {
        i_b = TILE_BEGIN;
        i_e = TILE_END;
    } else {
        j_b = TILE_BEGIN;
        j_e = TILE_END;
    }
    const uint j = j_b + get_global_id(0), i = i_b + get_global_id(1), bt = get_global_id(2);
    if (j >= j_e || i >= i_e) return;
    const uint a_rs = U(A_matmul_a_row_stride), a_cs = U(A_matmul_a_col_stride);
    const uint b_rs = U(A_matmul_b_row_stride), b_cs = U(A_matmul_b_col_stride);
    global const float *a_row =
        IN_REF(A_matmul_a) + (size_t)bt * U(A_matmul_a_batch_stride) + (size_t)i * a_rs;
    global const float *b_col =
        IN_REF(A_matmul_b) + (size_t)bt * U(A_matmul_b_batch_stride) + (size_t)j * b_cs;
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
