/* transpose reference kernel (a general strided gather into a dense output, ref/transpose.h)
 * and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"
#include "ref/transpose.h"

void kann_f32_transpose_ref(const void *args, const kann_exec *ex) {
    kann_transpose_drive(args, ex, kann_transpose_block_scalar);
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
