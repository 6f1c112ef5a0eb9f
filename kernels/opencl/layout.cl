/* f32_transpose (a strided gather into a dense output) and f32_copy (rows of a 2D block): one
 * element per work-item, and for CPU devices (the *_rows kernels) bands of rows 16 elements at a
 * time (kann_load16 and kann_store16 of eltwise.cl). */

/* NDRange: (tile elements). */
kernel void f32_transpose(KANN_KERNEL_ARGS) {
    uint pos = TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    size_t off = 0;
    uint rest = pos;
    for (int d = (int)U(A_transpose_rank) - 1; d >= 0; d--) {
        uint dim = U(A_transpose_dims + d);
        off += (size_t)(rest % dim) * U(A_transpose_x_strides + d);
        rest /= dim;
    }
    OUT_REF(A_transpose_y)[pos] = IN_REF(A_transpose_x)[off];
}

/* f32_transpose for CPU devices (local size 1): a band of output rows (the innermost
 * dimension) per work-item, the multi-index computed once per row, then x read along the row's
 * stride (vector loads where it is 1). NDRange: (bands of rows). */
kernel void f32_transpose_rows(KANN_KERNEL_ARGS) {
    const uint rank = U(A_transpose_rank), len = U(A_transpose_dims + rank - 1);
    const uint sx = U(A_transpose_x_strides + rank - 1);
    global const float *x = IN_REF(A_transpose_x);
    global float *y = OUT_REF(A_transpose_y);
    uint r0, r1, lo, hi;
    kann_tile_rows(len, TILE_BEGIN, TILE_END, &r0, &r1);
    kann_band(r1 - r0, 0, &lo, &hi);
    for (uint row = r0 + lo; row < r0 + hi; row++) {
        uint c0, c1;
        if (!kann_tile_row(row, len, TILE_BEGIN, TILE_END, &c0, &c1)) continue;
        size_t off = 0;
        uint rest = row;
        for (int d = (int)rank - 2; d >= 0; d--) {
            uint dim = U(A_transpose_dims + d);
            off += (size_t)(rest % dim) * U(A_transpose_x_strides + d);
            rest /= dim;
        }
        global float *yr = y + (size_t)row * len;
        for (uint c = c0; c < c1; c += 16) {
            const uint n = min(16u, c1 - c);
            kann_store16(kann_load16(x + off + (size_t)c * sx, sx, n), yr + c, n);
        }
    }
}

/* NDRange: (row_len, rows of the tile). */
kernel void f32_copy(KANN_KERNEL_ARGS) {
    uint i = get_global_id(0), r = TILE_BEGIN + get_global_id(1);
    if (i >= U(A_copy_row_len) || r >= TILE_END) return;
    OUT_REF(A_copy_y)[(size_t)r * U(A_copy_y_stride) + i] =
        IN_REF(A_copy_x)[(size_t)r * U(A_copy_x_stride) + i];
}

/* f32_copy for CPU devices (local size 1): a band of the tile's rows per work-item (kann_band),
 * 16 elements at a time (densenet121's concatenations ran one work-item per element). NDRange:
 * (bands of rows). */
kernel void f32_copy_rows(KANN_KERNEL_ARGS) {
    const uint len = U(A_copy_row_len), xs = U(A_copy_x_stride), ys = U(A_copy_y_stride);
    global const float *x = IN_REF(A_copy_x);
    global float *y = OUT_REF(A_copy_y);
    uint lo, hi;
    kann_band(TILE_END - TILE_BEGIN, 0, &lo, &hi);
    for (uint r = TILE_BEGIN + lo; r < TILE_BEGIN + hi; r++)
        for (uint i = 0; i < len; i += 16) {
            const uint n = min(16u, len - i);
            kann_store16(kann_load16(x + (size_t)r * xs + i, 1, n), y + (size_t)r * ys + i, n);
        }
}
