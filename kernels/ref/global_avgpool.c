/* global_avgpool reference kernel (mean over each plane) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

void kann_f32_global_avgpool_ref(const void *args, const kann_exec *ex) {
    const kann_global_avgpool_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t spatial = a->spatial;
    float inv = 1.0f / (float)a->spatial;
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * spatial;
        /* independent partial sums: vectorizable, and less rounding on large planes */
        float sums[8] = {0};
        size_t i = 0;
        for (; i + 8 <= spatial; i += 8)
            for (size_t l = 0; l < 8; l++)
                sums[l] += xp[i + l];
        for (; i < spatial; i++)
            sums[0] += xp[i];
        float sum = ((sums[0] + sums[1]) + (sums[2] + sums[3])) +
                    ((sums[4] + sums[5]) + (sums[6] + sums[7]));
        y[p] = kann_act_apply(&a->act, sum * inv);
    }
}

kann_status kann_global_avgpool_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_global_avgpool_args *a = args;
    kann_status s;
    if (a->spatial == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "global_avgpool: empty planes (spatial 0)");
    uint32_t x_dims[2] = {a->planes, a->spatial};
    if ((s = kann_check_tile(&a->tile, 1, &a->planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, x_dims, 2, 0, 0, "global_avgpool x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, &a->planes, 1, 1, 0, "global_avgpool y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
