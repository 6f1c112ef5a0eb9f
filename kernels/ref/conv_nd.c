/* conv_nd reference kernel (direct convolution over 1 to 3 spatial dims: the 3-D convolutions
 * conv2d does not cover) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

void kann_f32_conv_nd_ref(const void *args, const kann_exec *ex) {
    const kann_conv_nd_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space != KANN_SPACE_NONE ? kann_cref(ex, a->bias) : NULL;
    float *y = kann_mref(ex, a->y);
    uint32_t cpg = a->c_in / a->group, mpg = a->c_out / a->group;
    size_t in_sp = (size_t)a->in[0] * a->in[1] * a->in[2];
    size_t out_sp = (size_t)a->out[0] * a->out[1] * a->out[2];
    size_t k_sp = (size_t)a->k[0] * a->k[1] * a->k[2];
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        size_t n = p / a->c_out, m = p % a->c_out, g = m / mpg;
        const float *wm = w + m * cpg * k_sp;
        for (size_t o = 0; o < out_sp; o++) {
            int64_t first[3] = {(int64_t)(o / ((size_t)a->out[1] * a->out[2])) * a->stride[0] -
                                    a->pad[0],
                                (int64_t)(o / a->out[2] % a->out[1]) * a->stride[1] - a->pad[1],
                                (int64_t)(o % a->out[2]) * a->stride[2] - a->pad[2]};
            float acc = bias ? bias[m] : 0.0f;
            for (size_t c = 0; c < cpg; c++) {
                const float *xc = x + (n * a->c_in + g * cpg + c) * in_sp;
                const float *wc = wm + c * k_sp;
                for (uint32_t k0 = 0; k0 < a->k[0]; k0++) {
                    int64_t i0 = first[0] + (int64_t)k0 * a->dil[0];
                    if (i0 < 0 || i0 >= a->in[0]) continue;
                    for (uint32_t k1 = 0; k1 < a->k[1]; k1++) {
                        int64_t i1 = first[1] + (int64_t)k1 * a->dil[1];
                        if (i1 < 0 || i1 >= a->in[1]) continue;
                        const float *xr = xc + ((size_t)i0 * a->in[1] + (size_t)i1) * a->in[2];
                        const float *wr = wc + ((size_t)k0 * a->k[1] + k1) * a->k[2];
                        for (uint32_t k2 = 0; k2 < a->k[2]; k2++) {
                            int64_t i2 = first[2] + (int64_t)k2 * a->dil[2];
                            if (i2 >= 0 && i2 < a->in[2]) acc += xr[i2] * wr[k2];
                        }
                    }
                }
            }
            y[p * out_sp + o] = kann_act_apply(&a->act, acc);
        }
    }
}

kann_status kann_conv_nd_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv_nd_args *a = args;
    kann_status s;
    if (a->group == 0 || a->c_in % a->group != 0 || a->c_out % a->group != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv_nd: group does not divide channels");
    for (int d = 0; d < 3; d++) {
        if (a->stride[d] == 0 || a->dil[d] == 0)
            return kann_msg_set(err, KANN_E_CORRUPT, "conv_nd: zero stride or dilation");
        if (!kann_window_fits(a->out[d], a->stride[d], a->k[d], a->dil[d], a->pad[d], 0, a->in[d]))
            return kann_msg_set(err, KANN_E_CORRUPT, "conv_nd: coordinates too large");
    }
    uint32_t plane_dims[2] = {a->n, a->c_out}, planes;
    if (!kann_count_fits_u32(plane_dims, 2, &planes))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv_nd: more than 2^32-1 planes");
    if ((s = kann_check_tile(&a->tile, 1, &planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t x_dims[5] = {a->n, a->c_in, a->in[0], a->in[1], a->in[2]};
    uint32_t w_dims[5] = {a->c_out, a->c_in / a->group, a->k[0], a->k[1], a->k[2]};
    uint32_t y_dims[5] = {a->n, a->c_out, a->out[0], a->out[1], a->out[2]};
    if ((s = kann_check_dense(b, a->x, x_dims, 5, 0, 0, "conv_nd x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 5, 0, 0, "conv_nd w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv_nd bias", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 5, 1, 0, "conv_nd y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
