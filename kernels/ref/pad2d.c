/* pad2d reference kernel (zero borders around every plane, row copies at memcpy speed) and its
 * validator. */
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"
#include "ref/pad2d.h"

static void pad_row(float *yr, const float *xr, size_t lo, size_t hi, size_t w) {
    if (!xr) {
        memset(yr, 0, w * sizeof(float));
        return;
    }
    memset(yr, 0, lo * sizeof(float));
    memcpy(yr + lo, xr, (hi - lo) * sizeof(float));
    memset(yr + hi, 0, (w - hi) * sizeof(float));
}

void kann_f32_pad2d_ref(const void *args, const kann_exec *ex) {
    kann_pad2d_rows(args, ex, pad_row);
}

kann_status kann_pad2d_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_pad2d_args *a = args;
    kann_status s;
    if (a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pad2d: reserved field is not zero");
    uint32_t x_dims[3] = {a->c, a->h_in, a->w_in}, y_dims[3] = {a->c, a->h_out, a->w_out};
    uint32_t rows, x_count, y_count;
    if (!kann_count_fits_u32(y_dims, 2, &rows) || !kann_count_fits_u32(x_dims, 3, &x_count) ||
        !kann_count_fits_u32(y_dims, 3, &y_count))
        return kann_msg_set(err, KANN_E_CORRUPT, "pad2d: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &rows, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "pad2d x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "pad2d y", err)) != KANN_OK)
        return s;
    /* Rows are copied with memcpy: x and y must not overlap. */
    if (a->x.space == KANN_SPACE_ARENA && x_count && y_count &&
        a->x.offset < a->y.offset + (uint64_t)y_count * sizeof(float) &&
        a->y.offset < a->x.offset + (uint64_t)x_count * sizeof(float))
        return kann_msg_set(err, KANN_E_CORRUPT, "pad2d: x and y overlap");
    return KANN_OK;
}
