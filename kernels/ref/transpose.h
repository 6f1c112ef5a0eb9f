/* The transpose walk shared by the reference and the SIMD variants: the output's index space
 * one row at a time (kann_nd), and where the two innermost dims are swapped (x contiguous
 * along the output rows' index, NCHW <-> NHWC once the dims are merged) a block of whole rows
 * at a time, each x line read serving all of them. A variant brings its block copy; static
 * inline, so that each variant's translation unit compiles the walk with its own ISA. */
#ifndef KANN_REF_TRANSPOSE_H
#define KANN_REF_TRANSPOSE_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"
#include "ref/nd.h"

/* Output rows per block: a block's x lines (one per output column, this many floats each)
 * and its y rows stay in L1 while it is copied. Blocks of narrow rows (n columns, fewer than
 * this) take KANN_TRANSPOSE_BLOCK / n times as many rows: as many floats. */
#define KANN_TRANSPOSE_BLOCK 16u

/* Copies rows x n elements: y[i * n + j] = x[i + j * x_col_stride]. */
typedef void (*kann_transpose_block_fn)(const float *x, size_t x_col_stride, float *y, size_t rows,
                                        size_t n);

/* The scalar block copy: KANN_TRANSPOSE_BLOCK columns at a time, so that each x line read
 * serves every row of the block. */
static inline void kann_transpose_block_scalar(const float *x, size_t x_col_stride, float *y,
                                               size_t rows, size_t n) {
    for (size_t j0 = 0; j0 < n; j0 += KANN_TRANSPOSE_BLOCK) {
        size_t j1 = j0 + KANN_TRANSPOSE_BLOCK < n ? j0 + KANN_TRANSPOSE_BLOCK : n;
        for (size_t j = j0; j < j1; j++) {
            const float *xc = x + j * x_col_stride;
            for (size_t i = 0; i < rows; i++)
                y[i * n + j] = xc[i];
        }
    }
}

static inline __attribute__((always_inline)) void
kann_transpose_drive(const kann_transpose_args *a, const kann_exec *ex,
                     kann_transpose_block_fn block) {
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
    int blocked = r >= 2 && nd.strides[0][r - 2] == 1 && x_stride != 1;
    size_t n = nd.dims[r - 1];
    for (size_t pos = begin;;) {
        if (blocked && nd.index[r - 1] == 0 && end - pos >= n) {
            size_t rows = nd.dims[r - 2] - nd.index[r - 2];
            size_t most = n < KANN_TRANSPOSE_BLOCK ? KANN_TRANSPOSE_BLOCK / n * KANN_TRANSPOSE_BLOCK
                                                   : KANN_TRANSPOSE_BLOCK;
            if (rows > most) rows = most;
            if (rows > (end - pos) / n) rows = (end - pos) / n;
            block(x + nd.offsets[0], x_stride, y + pos, rows, n);
            pos += rows * n;
            if (pos == end) break;
            kann_nd_next_rows(&nd, (uint32_t)rows);
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

#endif
