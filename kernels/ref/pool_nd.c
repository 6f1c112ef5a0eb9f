/* pool_nd reference kernel (max and average pooling over 1 to 3 spatial dims, with the
 * optional int64 argmax output of MaxPool) and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Taps t of one axis whose coordinate o*stride - pad + t*dil lies in [lo, hi). In closed form:
 * nothing bounds k (a pool has no weights), so stepping through the window could take 2^32
 * steps per output. */
static void tap_range(int64_t first, uint32_t dil, uint32_t k, int64_t lo, int64_t hi, uint32_t *t0,
                      uint32_t *t1) {
    /* the first t with first + t * dil >= lo, and the count of t with first + t * dil < hi */
    int64_t a = first >= lo ? 0 : (lo - first + dil - 1) / dil;
    int64_t b = first >= hi ? 0 : (hi - first + dil - 1) / dil;
    if (a > k) a = k;
    if (b > k) b = k;
    if (b < a) b = a;
    *t0 = (uint32_t)a;
    *t1 = (uint32_t)b;
}

void kann_f32_pool_nd_ref(const void *args, const kann_exec *ex) {
    const kann_pool_nd_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    int64_t *ind =
        a->indices.space != KANN_SPACE_NONE ? (int64_t *)(void *)kann_mref(ex, a->indices) : NULL;
    size_t in_sp = (size_t)a->in[0] * a->in[1] * a->in[2];
    size_t out_sp = (size_t)a->out[0] * a->out[1] * a->out[2];
    int is_max = a->kind == KANN_POOL_MAX;
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * in_sp;
        for (size_t o = 0; o < out_sp; o++) {
            uint32_t od[3] = {(uint32_t)(o / ((size_t)a->out[1] * a->out[2])),
                              (uint32_t)(o / a->out[2] % a->out[1]), (uint32_t)(o % a->out[2])};
            int64_t first[3];
            uint32_t t0[3], t1[3];
            uint64_t counted = 1;
            for (int d = 0; d < 3; d++) {
                first[d] = (int64_t)od[d] * a->stride[d] - a->pad_begin[d];
                tap_range(first[d], a->dil[d], a->k[d], 0, a->in[d], &t0[d], &t1[d]);
                uint32_t c0 = t0[d], c1 = t1[d];
                if (a->count_include_pad)
                    tap_range(first[d], a->dil[d], a->k[d], -(int64_t)a->pad_begin[d],
                              (int64_t)a->in[d] + a->pad_end[d], &c0, &c1);
                counted *= c1 - c0;
            }
            float acc = is_max ? -INFINITY : 0.0f;
            int64_t best = -1;
            for (uint32_t k0 = t0[0]; k0 < t1[0]; k0++)
                for (uint32_t k1 = t0[1]; k1 < t1[1]; k1++)
                    for (uint32_t k2 = t0[2]; k2 < t1[2]; k2++) {
                        size_t i0 = (size_t)(first[0] + (int64_t)k0 * a->dil[0]);
                        size_t i1 = (size_t)(first[1] + (int64_t)k1 * a->dil[1]);
                        size_t i2 = (size_t)(first[2] + (int64_t)k2 * a->dil[2]);
                        float v = xp[(i0 * a->in[1] + i1) * a->in[2] + i2];
                        if (!is_max) {
                            acc += v;
                        } else if (v > acc || best < 0) {
                            acc = v;
                            /* row-major, or column-major with storage_order 1 */
                            best = (int64_t)(a->storage_order
                                                 ? i0 + a->in[0] * (i1 + (size_t)a->in[1] * i2)
                                                 : (i0 * a->in[1] + i1) * a->in[2] + i2);
                        }
                    }
            if (!is_max) acc = counted ? acc / (float)counted : NAN;
            y[p * out_sp + o] = kann_act_apply(&a->act, acc);
            if (ind) ind[p * out_sp + o] = best < 0 ? 0 : (int64_t)(p * in_sp) + best;
        }
    }
}

kann_status kann_pool_nd_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_pool_nd_args *a = args;
    kann_status s;
    if (a->kind >= KANN_POOL_COUNT ||
        (a->indices.space != KANN_SPACE_NONE && a->kind != KANN_POOL_MAX))
        return kann_msg_set(err, KANN_E_CORRUPT, "pool_nd: bad kind");
    for (int d = 0; d < 3; d++) {
        if (a->stride[d] == 0 || a->dil[d] == 0)
            return kann_msg_set(err, KANN_E_CORRUPT, "pool_nd: zero stride or dilation");
        if (!kann_window_fits(a->out[d], a->stride[d], a->k[d], a->dil[d], a->pad_begin[d],
                              a->pad_end[d], a->in[d]))
            return kann_msg_set(err, KANN_E_CORRUPT, "pool_nd: window coordinates too large");
    }
    if ((s = kann_check_tile(&a->tile, 1, &a->planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t x_dims[4] = {a->planes, a->in[0], a->in[1], a->in[2]};
    uint32_t y_dims[4] = {a->planes, a->out[0], a->out[1], a->out[2]};
    uint32_t i_dims[5] = {2, a->planes, a->out[0], a->out[1], a->out[2]}; /* int64: 2 floats */
    if ((s = kann_check_dense(b, a->x, x_dims, 4, 0, 0, "pool_nd x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 4, 1, 0, "pool_nd y", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->indices, i_dims, 5, 1, 1, "pool_nd indices", err)) != KANN_OK)
        return s;
    if (a->indices.space != KANN_SPACE_NONE && a->indices.offset % 8)
        return kann_msg_set(err, KANN_E_CORRUPT, "pool_nd: indices not 8-byte aligned");
    return KANN_OK;
}
