/* copy reference kernel (a 2D strided block copy: concat slices, aliased outputs) and its
 * validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

void kann_f32_copy_ref(const void *args, const kann_exec *ex) {
    const kann_copy_args *a = args;
    if (a->tile.begin >= a->tile.end || a->row_len == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t row_len = a->row_len;
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        const float *xr = x + r * a->x_stride;
        float *yr = y + r * a->y_stride;
        for (size_t i = 0; i < row_len; i++)
            yr[i] = xr[i];
    }
}

kann_status kann_copy_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_copy_args *a = args;
    kann_status s;
    uint32_t dims[2] = {a->rows, a->row_len};
    uint32_t x_strides[2] = {a->x_stride, 1}, y_strides[2] = {a->y_stride, 1};
    /* Rows of y that overlap would be written twice (and by two streams at once); no model
     * does that, and it would let rows grow without bound over a few bytes of arena. */
    if (a->rows > 1 && a->row_len > 0 && a->y_stride < a->row_len)
        return kann_msg_set(err, KANN_E_CORRUPT, "copy: rows of y overlap (y_stride < row_len)");
    if ((s = kann_check_tile(&a->tile, 1, &a->rows, err)) != KANN_OK ||
        (s = kann_check_strided(b, a->x, 2, dims, x_strides, 0, 0, "copy x", err)) != KANN_OK ||
        (s = kann_check_strided(b, a->y, 2, dims, y_strides, 1, 0, "copy y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
