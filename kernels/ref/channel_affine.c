/* channel_affine reference kernel (per-channel scale and shift: a batch-norm that could not be
 * folded) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

void kann_f32_channel_affine_ref(const void *args, const kann_exec *ex) {
    const kann_channel_affine_args *a = args;
    /* Nothing to write: do not spin through planes of no elements. */
    if (a->tile.begin >= a->tile.end || a->inner == 0) return;
    const float *x = kann_cref(ex, a->x);
    const float *scale = kann_cref(ex, a->scale);
    const float *shift = kann_cref(ex, a->shift);
    float *y = kann_mref(ex, a->y);
    size_t inner = a->inner;
    uint32_t channel = a->tile.begin % a->channels;
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        float s = scale[channel], t = shift[channel];
        const float *xp = x + p * inner;
        float *yp = y + p * inner;
        for (size_t i = 0; i < inner; i++)
            yp[i] = xp[i] * s + t;
        kann_act_apply_row(&a->act, yp, inner);
        if (++channel == a->channels) channel = 0;
    }
}

kann_status kann_channel_affine_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_channel_affine_args *a = args;
    kann_status s;
    if (a->channels == 0) return kann_msg_set(err, KANN_E_CORRUPT, "channel_affine: zero channels");
    uint32_t x_dims[2] = {a->planes, a->inner};
    if ((s = kann_check_tile(&a->tile, 1, &a->planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, x_dims, 2, 0, 0, "channel_affine x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->scale, &a->channels, 1, 0, 0, "channel_affine scale", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->shift, &a->channels, 1, 0, 0, "channel_affine shift", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, x_dims, 2, 1, 0, "channel_affine y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
