/* trilu reference kernel (keeps the upper or lower triangle of the last two dims, any element
 * type, k fixed or read at run time) and its validator. */
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

void kann_trilu_ref(const void *args, const kann_exec *ex) {
    const kann_trilu_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *y = kann_mbytes(ex, a->y);
    int64_t k = a->k;
    if (a->k_ref.space != KANN_SPACE_NONE) k = kann_read_index(kann_cbytes(ex, a->k_ref), 8);
    /* Clamped so that i + k below cannot overflow; any |k| >= cols means all or nothing. */
    int64_t limit = (int64_t)a->cols + a->rows + 1;
    k = k < -limit ? -limit : k > limit ? limit : k;
    size_t es = a->elem_size, row = (size_t)a->cols * es;
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        int64_t i = (int64_t)(r % a->rows);
        /* Columns j kept: j >= i + k (upper) or j <= i + k (lower). */
        int64_t edge = a->upper ? i + k : i + k + 1;
        size_t cut = edge < 0 ? 0 : edge > (int64_t)a->cols ? a->cols : (size_t)edge;
        const uint8_t *xr = x + r * row;
        uint8_t *yr = y + r * row;
        /* memmove: y may be x itself (in place), or a file may make them overlap */
        if (a->upper) {
            memset(yr, 0, cut * es);
            memmove(yr + cut * es, xr + cut * es, row - cut * es);
        } else {
            memmove(yr, xr, cut * es);
            memset(yr + cut * es, 0, row - cut * es);
        }
    }
}

kann_status kann_trilu_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_trilu_args *a = args;
    kann_status s;
    if (!kann_elem_size_ok(a->elem_size))
        return kann_msg_set(err, KANN_E_CORRUPT, "trilu: element size not 1, 2, 4 or 8");
    if (a->rows == 0) return kann_msg_set(err, KANN_E_CORRUPT, "trilu: zero rows");
    uint32_t dims[2] = {a->batch, a->rows}, rows;
    if (!kann_count_fits_u32(dims, 2, &rows))
        return kann_msg_set(err, KANN_E_CORRUPT, "trilu: more than 2^32-1 rows");
    if ((s = kann_check_tile(&a->tile, 1, &rows, err)) != KANN_OK) return s;
    uint64_t bytes = (uint64_t)rows * a->cols;
    if (!kann_mul_u64(&bytes, a->elem_size))
        return kann_msg_set(err, KANN_E_CORRUPT, "trilu: size overflows");
    if ((s = kann_check_bytes(b, a->x, bytes, a->elem_size, 0, 0, "trilu x", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->k_ref, 8, 8, 0, 1, "trilu k", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->y, bytes, a->elem_size, 1, 0, "trilu y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
