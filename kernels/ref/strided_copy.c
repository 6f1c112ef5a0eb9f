/* strided_copy reference kernel (a copy of any element type between two signed strided views:
 * slices, splits, broadcasts, transposes, concats) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

/* One row of n elements; the element size picks a typed loop the compiler can vectorize. */
#define COPY_ROW(T)                                                                                \
    do {                                                                                           \
        const T *xs = (const T *)(const void *)(x + xo * (int64_t)sizeof(T));                      \
        T *ys = (T *)(void *)(y + yo * (int64_t)sizeof(T));                                        \
        if (x_step == 1 && y_step == 1)                                                            \
            for (size_t i = 0; i < n; i++)                                                         \
                ys[i] = xs[i];                                                                     \
        else                                                                                       \
            for (size_t i = 0; i < n; i++)                                                         \
                ys[(int64_t)i * y_step] = xs[(int64_t)i * x_step];                                 \
    } while (0)

void kann_strided_copy_ref(const void *args, const kann_exec *ex) {
    const kann_strided_copy_args *a = args;
    size_t begin = a->tile.begin, end = a->tile.end;
    if (begin >= end) return;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *y = kann_mbytes(ex, a->y);
    uint32_t rank = a->rank, last = rank - 1, idx[KANN_MAX_RANK];
    size_t flat = begin;
    for (uint32_t d = rank; d-- > 0;) {
        idx[d] = (uint32_t)(flat % a->dims[d]);
        flat /= a->dims[d];
    }
    int64_t x_step = a->x_strides[last], y_step = a->y_strides[last];
    for (size_t pos = begin;;) {
        int64_t xo = a->x_base, yo = a->y_base;
        for (uint32_t d = 0; d < rank; d++) {
            xo += (int64_t)idx[d] * a->x_strides[d];
            yo += (int64_t)idx[d] * a->y_strides[d];
        }
        size_t n = a->dims[last] - idx[last];
        if (n > end - pos) n = end - pos;
        switch (a->elem_size) {
        case 1:
            COPY_ROW(uint8_t);
            break;
        case 2:
            COPY_ROW(uint16_t);
            break;
        case 4:
            COPY_ROW(uint32_t);
            break;
        default:
            COPY_ROW(uint64_t);
            break;
        }
        pos += n;
        if (pos == end) break;
        idx[last] = 0;
        for (uint32_t d = last; d-- > 0;) {
            if (++idx[d] < a->dims[d]) break;
            idx[d] = 0;
        }
    }
}

kann_status kann_strided_copy_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_strided_copy_args *a = args;
    kann_status s;
    if (a->rank < 1 || a->rank > KANN_MAX_RANK)
        return kann_msg_set(err, KANN_E_CORRUPT, "strided_copy: rank not in 1..6");
    if (!kann_elem_size_ok(a->elem_size))
        return kann_msg_set(err, KANN_E_CORRUPT, "strided_copy: element size not 1, 2, 4 or 8");
    uint32_t count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "strided_copy: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK) return s;
    if ((s = kann_check_signed_view(b, a->x, a->elem_size, a->rank, a->dims, a->x_base,
                                    a->x_strides, 0, "strided_copy x", err)) != KANN_OK ||
        (s = kann_check_signed_view(b, a->y, a->elem_size, a->rank, a->dims, a->y_base,
                                    a->y_strides, 1, "strided_copy y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
