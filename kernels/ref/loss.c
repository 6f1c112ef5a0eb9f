/* nll_loss reference kernel (NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss after a
 * log-softmax) and its validator. Targets are data: any value is safe, out-of-range ones count
 * as ignored. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

/* The loss at flat position e (= b * inner + i) and the weight it carries. */
static float loss_at(const kann_nll_loss_args *a, const float *x, const int64_t *t, const float *w,
                     size_t e, float *weight) {
    int64_t cls = t[e];
    *weight = 0.0f;
    if ((a->has_ignore && cls == a->ignore_index) || cls < 0 || cls >= (int64_t)a->c) return 0.0f;
    size_t b = e / a->inner, i = e % a->inner;
    *weight = w ? w[cls] : 1.0f;
    return -x[(b * a->c + (size_t)cls) * a->inner + i] * *weight;
}

void kann_f32_nll_loss_ref(const void *args, const kann_exec *ex) {
    const kann_nll_loss_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    const int64_t *t = (const int64_t *)(const void *)kann_cref(ex, a->target);
    const float *w = a->weight.space != KANN_SPACE_NONE ? kann_cref(ex, a->weight) : 0;
    float *y = kann_mref(ex, a->y);
    float weight;
    if (a->reduction == KANN_LOSS_NONE) {
        for (size_t e = a->tile.begin; e < a->tile.end; e++)
            y[e] = loss_at(a, x, t, w, e, &weight);
        return;
    }
    double sum = 0.0, total_weight = 0.0;
    size_t count = (size_t)a->n * a->inner;
    for (size_t e = 0; e < count; e++) {
        sum += loss_at(a, x, t, w, e, &weight);
        total_weight += weight;
    }
    y[0] = (float)(a->reduction == KANN_LOSS_MEAN ? sum / total_weight : sum);
}

kann_status kann_nll_loss_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_nll_loss_args *a = args;
    kann_status s;
    if (a->reduction >= KANN_LOSS_REDUCTION_COUNT || a->has_ignore > 1 || a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "nll_loss: bad reduction or flags");
    uint32_t x_dims[3] = {a->n, a->c, a->inner}, t_dims[2] = {a->n, a->inner}, count, one = 1;
    if (!kann_count_fits_u32(t_dims, 2, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "nll_loss: loss count overflows");
    if (a->target.offset % sizeof(int64_t) != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "nll_loss target: not 8-byte aligned");
    int none = a->reduction == KANN_LOSS_NONE;
    if ((s = kann_check_tile(&a->tile, 1, none ? &count : &one, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "nll_loss x", err)) != KANN_OK ||
        (s = kann_check_ref(b, a->target, (uint64_t)count * sizeof(int64_t), 0, 0,
                            "nll_loss target", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->weight, &a->c, 1, 0, 1, "nll_loss weight", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, none ? &count : &one, 1, 1, 0, "nll_loss y", err)) !=
            KANN_OK)
        return s;
    return KANN_OK;
}
