/* act reference kernel (a standalone activation, in place allowed) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

void kann_f32_act_ref(const void *args, const kann_exec *ex) {
    const kann_act_args *a = args;
    size_t begin = a->tile.begin, n = (size_t)a->tile.end - begin;
    if (n == 0) return;
    const float *x = kann_cref(ex, a->x) + begin;
    float *y = kann_mref(ex, a->y) + begin;
    if (x != y) {
        for (size_t i = 0; i < n; i++)
            y[i] = x[i];
    }
    kann_act_apply_row(&a->act, y, n);
}

kann_status kann_act_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_act_args *a = args;
    kann_status s;
    if ((s = kann_check_tile(&a->tile, 1, &a->count, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, &a->count, 1, 0, 0, "act x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, &a->count, 1, 1, 0, "act y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
