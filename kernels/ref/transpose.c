/* transpose reference kernel (a general strided gather into a dense output) and its
 * validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"
#include "ref/nd.h"

/* Rows per block of the blocked transpose: a block's x lines (one per output column, BLOCK
 * floats each) and y lines stay in L1 while it is copied. */
#define BLOCK 16

/* rows x n elements from x (element (i, j) at i + j * x_col_stride) to the dense rows y (row
 * stride n), BLOCK columns at a time so that each x line read serves BLOCK output rows. */
static void transpose_rows(const float *x, size_t x_col_stride, float *y, size_t rows, size_t n) {
    for (size_t j0 = 0; j0 < n; j0 += BLOCK) {
        size_t j1 = j0 + BLOCK < n ? j0 + BLOCK : n;
        for (size_t j = j0; j < j1; j++) {
            const float *xc = x + j * x_col_stride;
            for (size_t i = 0; i < rows; i++)
                y[i * n + j] = xc[i];
        }
    }
}

void kann_f32_transpose_ref(const void *args, const kann_exec *ex) {
    const kann_transpose_args *a = args;
    size_t begin = a->tile.begin, end = a->tile.end;
    if (begin >= end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    const uint32_t *strides[1] = {a->x_strides};
    kann_nd nd = {0};
    kann_nd_init(&nd, a->rank, a->dims, strides, 1);
    kann_nd_seek(&nd, begin);
    uint32_t r = nd.rank;
    size_t x_stride = nd.strides[0][r - 1];
    /* The two innermost dims swapped (x contiguous along the rows' index, NCHW <-> NHWC once
     * the dims are merged): whole rows go BLOCK at a time, each read x line serving them all. */
    int blocked = r >= 2 && nd.strides[0][r - 2] == 1 && x_stride != 1;
    size_t n = nd.dims[r - 1];
    for (size_t pos = begin;;) {
        if (blocked && nd.index[r - 1] == 0 && end - pos >= n) {
            size_t rows = nd.dims[r - 2] - nd.index[r - 2];
            if (rows > BLOCK) rows = BLOCK;
            if (rows > (end - pos) / n) rows = (end - pos) / n;
            transpose_rows(x + nd.offsets[0], x_stride, y + pos, rows, n);
            pos += rows * n;
            if (pos == end) break;
            for (size_t i = 0; i < rows; i++)
                kann_nd_next_row(&nd);
            continue;
        }
        size_t len = kann_nd_row_left(&nd);
        if (len > end - pos) len = end - pos;
        const float *xr = x + nd.offsets[0];
        float *yr = y + pos;
        if (x_stride == 1) {
            for (size_t i = 0; i < len; i++)
                yr[i] = xr[i];
        } else {
            for (size_t i = 0; i < len; i++)
                yr[i] = xr[i * x_stride];
        }
        pos += len;
        if (pos == end) break;
        kann_nd_next_row(&nd);
    }
}

kann_status kann_transpose_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_transpose_args *a = args;
    kann_status s;
    if (a->rank < 1 || a->rank > KANN_MAX_RANK) {
        kann_msg_set(err, KANN_E_CORRUPT, "transpose: rank ");
        kann_msg_append_u64(err, a->rank);
        kann_msg_append(err, " not in 1..6");
        return KANN_E_CORRUPT;
    }
    uint32_t count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "transpose: more than 2^32-1 output elements");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK) return s;
    if ((s = kann_check_strided(b, a->x, a->rank, a->dims, a->x_strides, 0, 0, "transpose x",
                                err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, a->dims, a->rank, 1, 0, "transpose y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
