/* f32_transpose (a strided gather into a dense output) and f32_copy (rows of a 2D block). */

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

/* NDRange: (row_len, rows of the tile). */
kernel void f32_copy(KANN_KERNEL_ARGS) {
    uint i = get_global_id(0), r = TILE_BEGIN + get_global_id(1);
    if (i >= U(A_copy_row_len) || r >= TILE_END) return;
    OUT_REF(A_copy_y)[(size_t)r * U(A_copy_y_stride) + i] =
        IN_REF(A_copy_x)[(size_t)r * U(A_copy_x_stride) + i];
}
