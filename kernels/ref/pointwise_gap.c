/* pointwise_gap reference kernel (a 1x1 conv, its activation and a global average pool, the
 * conv's output never stored) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Per pixel, the block's 32 sums over the input channels (vectorizable along the block), then
 * their activations added to the block's running totals. */
void kann_f32_pointwise_gap_ref(const void *args, const kann_exec *ex) {
    const kann_pointwise_gap_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    float *y = kann_mref(ex, a->y);
    size_t c_in = a->c_in, hw = a->hw;
    float inv = 1.0f / (float)a->hw;
    for (size_t m0 = a->tile.begin; m0 < a->tile.end; m0 += KANN_GAP_BLOCK) {
        size_t n = a->tile.end - m0 < KANN_GAP_BLOCK ? a->tile.end - m0 : KANN_GAP_BLOCK;
        const float *wb = w + m0 * c_in; /* block m0 / 32: (m0 / 32) * c_in * 32 floats on */
        float total[KANN_GAP_BLOCK] = {0};
        for (size_t p = 0; p < hw; p++) {
            float acc[KANN_GAP_BLOCK] = {0};
            for (size_t k = 0; k < c_in; k++) {
                float xv = x[k * hw + p];
                for (size_t j = 0; j < KANN_GAP_BLOCK; j++)
                    acc[j] += wb[k * KANN_GAP_BLOCK + j] * xv;
            }
            for (size_t j = 0; j < n; j++)
                total[j] += kann_act_apply(&a->act, acc[j] + (bias ? bias[m0 + j] : 0.0f));
        }
        for (size_t j = 0; j < n; j++)
            y[m0 + j] = total[j] * inv;
    }
}

kann_status kann_pointwise_gap_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_pointwise_gap_args *a = args;
    kann_status s;
    if (a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pointwise_gap: reserved field is not zero");
    if (a->c_in == 0 || a->hw == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pointwise_gap: no input channels or pixels");
    if ((s = kann_check_tile(&a->tile, 1, &a->c_out, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    if ((s = kann_check_tile_begin(&a->tile, KANN_GAP_BLOCK, "pointwise_gap", err)) != KANN_OK)
        return s;
    /* the blocks cover c_out rounded up to a whole block */
    uint32_t blocks = a->c_out / KANN_GAP_BLOCK + (a->c_out % KANN_GAP_BLOCK != 0);
    uint32_t w_dims[3] = {blocks, a->c_in, KANN_GAP_BLOCK}, x_dims[2] = {a->c_in, a->hw};
    if ((s = kann_check_dense(b, a->x, x_dims, 2, 0, 0, "pointwise_gap x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 3, 0, 0, "pointwise_gap w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "pointwise_gap bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, &a->c_out, 1, 1, 0, "pointwise_gap y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
