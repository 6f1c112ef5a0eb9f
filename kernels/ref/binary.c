/* binary reference kernel (float32 elementwise arithmetic with broadcasting through strides)
 * and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/binary.h"
#include "ref/checked.h"

/* One row of the tile, then its activation. */
static void binary_row_act(const kann_binary_args *p, const float *a, size_t a_stride,
                           const float *b, size_t b_stride, float *y, size_t n) {
    kann_binary_row((kann_binary_op)p->op, a, a_stride, b, b_stride, y, n);
    kann_act_apply_row(&p->act, y, n);
}

void kann_f32_binary_ref(const void *args, const kann_exec *ex) {
    kann_binary_rows(args, ex, binary_row_act);
}

kann_status kann_binary_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_binary_args *a = args;
    kann_status s;
    if (a->op > KANN_BINARY_FMOD && a->op != KANN_BINARY_PRELU) {
        kann_msg_set(err, KANN_E_CORRUPT, "binary: not a float32 arithmetic op: ");
        kann_msg_append_u64(err, a->op);
        return KANN_E_CORRUPT;
    }
    if (a->rank < 1 || a->rank > KANN_MAX_RANK) {
        kann_msg_set(err, KANN_E_CORRUPT, "binary: rank ");
        kann_msg_append_u64(err, a->rank);
        kann_msg_append(err, " not in 1..6");
        return KANN_E_CORRUPT;
    }
    uint32_t count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "binary: more than 2^32-1 output elements");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    if ((s = kann_check_strided(b, a->a, a->rank, a->dims, a->a_strides, 0, 0, "binary a", err)) !=
            KANN_OK ||
        (s = kann_check_strided(b, a->b, a->rank, a->dims, a->b_strides, 0, 0, "binary b", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, a->dims, a->rank, 1, 0, "binary y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
