/* gather and gather_elements reference kernels (indices read at run time, any element type) and
 * their validators. An index outside the axis gives zeros: memory stays safe whatever the
 * indices hold. */
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

/* The position an index names on an axis of length len, or -1 when it is out of range. */
static int64_t wrap_index(int64_t j, uint32_t len) {
    if (j < 0) j += len;
    return j >= 0 && j < (int64_t)len ? j : -1;
}

void kann_gather_ref(const void *args, const kann_exec *ex) {
    const kann_gather_args *a = args;
    const uint8_t *x = kann_cbytes(ex, a->x), *idx = kann_cbytes(ex, a->idx);
    uint8_t *y = kann_mbytes(ex, a->y);
    size_t row = (size_t)a->inner * a->elem_size;
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        size_t o = r / a->n_indices, k = r % a->n_indices;
        int64_t j = wrap_index(kann_read_index(idx + k * a->idx_size, a->idx_size), a->axis_len);
        uint8_t *dst = y + r * row;
        if (j < 0)
            memset(dst, 0, row);
        else /* memmove: a file may make x and y overlap; the bytes are then defined */
            memmove(dst, x + ((size_t)o * a->axis_len + (size_t)j) * row, row);
    }
}

kann_status kann_gather_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_gather_args *a = args;
    kann_status s;
    if (!kann_elem_size_ok(a->elem_size) || (a->idx_size != 4 && a->idx_size != 8))
        return kann_msg_set(err, KANN_E_CORRUPT, "gather: bad element or index size");
    uint32_t rows_dims[2] = {a->outer, a->n_indices}, rows;
    if (!kann_count_fits_u32(rows_dims, 2, &rows))
        return kann_msg_set(err, KANN_E_CORRUPT, "gather: more than 2^32-1 rows");
    if ((s = kann_check_tile(&a->tile, 1, &rows, err)) != KANN_OK) return s;
    uint64_t x_bytes = a->elem_size, y_bytes = a->elem_size, i_bytes = a->idx_size;
    if (!kann_mul_u64(&x_bytes, a->outer) || !kann_mul_u64(&x_bytes, a->axis_len) ||
        !kann_mul_u64(&x_bytes, a->inner) || !kann_mul_u64(&y_bytes, rows) ||
        !kann_mul_u64(&y_bytes, a->inner) || !kann_mul_u64(&i_bytes, a->n_indices))
        return kann_msg_set(err, KANN_E_CORRUPT, "gather: size overflows");
    if ((s = kann_check_bytes(b, a->x, x_bytes, a->elem_size, 0, 0, "gather x", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->idx, i_bytes, a->idx_size, 0, 0, "gather indices", err)) !=
            KANN_OK ||
        (s = kann_check_bytes(b, a->y, y_bytes, a->elem_size, 1, 0, "gather y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}

void kann_gather_elements_ref(const void *args, const kann_exec *ex) {
    const kann_gather_elements_args *a = args;
    const uint8_t *x = kann_cbytes(ex, a->x), *idx = kann_cbytes(ex, a->idx);
    uint8_t *y = kann_mbytes(ex, a->y);
    uint32_t es = a->elem_size, rank = a->rank;
    for (size_t e = a->tile.begin; e < a->tile.end; e++) {
        size_t flat = e, off = 0;
        int64_t j = wrap_index(kann_read_index(idx + e * a->idx_size, a->idx_size), a->axis_len);
        for (uint32_t d = rank; d-- > 0;) {
            size_t i = flat % a->dims[d];
            flat /= a->dims[d];
            off += (d == a->axis ? (size_t)(j < 0 ? 0 : j) : i) * a->x_strides[d];
        }
        if (j < 0)
            memset(y + e * es, 0, es);
        else
            kann_copy_elem(y + e * es, x + off * es, es);
    }
}

kann_status kann_gather_elements_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_gather_elements_args *a = args;
    kann_status s;
    if (!kann_elem_size_ok(a->elem_size) || (a->idx_size != 4 && a->idx_size != 8))
        return kann_msg_set(err, KANN_E_CORRUPT, "gather_elements: bad element or index size");
    if (a->rank < 1 || a->rank > KANN_MAX_RANK || a->axis >= a->rank)
        return kann_msg_set(err, KANN_E_CORRUPT, "gather_elements: bad rank or axis");
    uint32_t count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "gather_elements: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK) return s;
    /* x is reached along the axis up to axis_len - 1, elsewhere up to dims - 1. */
    uint32_t x_dims[KANN_MAX_RANK];
    int64_t x_strides[KANN_MAX_RANK];
    for (uint32_t d = 0; d < a->rank; d++) {
        x_dims[d] = d == a->axis ? (a->axis_len ? a->axis_len : 1) : a->dims[d];
        x_strides[d] = a->x_strides[d];
    }
    uint64_t y_bytes = (uint64_t)count * a->elem_size, i_bytes = (uint64_t)count * a->idx_size;
    if ((s = kann_check_signed_view(b, a->x, a->elem_size, a->rank, x_dims, 0, x_strides, 0,
                                    "gather_elements x", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->idx, i_bytes, a->idx_size, 0, 0, "gather_elements indices",
                              err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->y, y_bytes, a->elem_size, 1, 0, "gather_elements y", err)) !=
            KANN_OK)
        return s;
    return KANN_OK;
}
