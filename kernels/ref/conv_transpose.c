/* conv_transpose reference kernel (transposed convolution over 1 to 3 spatial dims, groups,
 * stride, dilation, padding; weights read in place in the ONNX layout) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Adds one input plane times one filter into one output plane: every input pixel spreads over
 * the taps, o = i * stride - pad + k * dil on each spatial dim. */
static void scatter_plane(const kann_conv_transpose_args *a, const float *xp, const float *wp,
                          float *yp) {
    for (uint32_t i0 = 0; i0 < a->in[0]; i0++)
        for (uint32_t k0 = 0; k0 < a->k[0]; k0++) {
            int64_t o0 = (int64_t)i0 * a->stride[0] - a->pad[0] + (int64_t)k0 * a->dil[0];
            if (o0 < 0 || o0 >= a->out[0]) continue;
            for (uint32_t i1 = 0; i1 < a->in[1]; i1++)
                for (uint32_t k1 = 0; k1 < a->k[1]; k1++) {
                    int64_t o1 = (int64_t)i1 * a->stride[1] - a->pad[1] + (int64_t)k1 * a->dil[1];
                    if (o1 < 0 || o1 >= a->out[1]) continue;
                    const float *xr = xp + ((size_t)i0 * a->in[1] + i1) * a->in[2];
                    const float *wr = wp + ((size_t)k0 * a->k[1] + k1) * a->k[2];
                    float *yr = yp + ((size_t)o0 * a->out[1] + (size_t)o1) * a->out[2];
                    for (uint32_t i2 = 0; i2 < a->in[2]; i2++) {
                        float v = xr[i2];
                        for (uint32_t k2 = 0; k2 < a->k[2]; k2++) {
                            int64_t o2 =
                                (int64_t)i2 * a->stride[2] - a->pad[2] + (int64_t)k2 * a->dil[2];
                            if (o2 >= 0 && o2 < a->out[2]) yr[o2] += v * wr[k2];
                        }
                    }
                }
        }
}

void kann_f32_conv_transpose_ref(const void *args, const kann_exec *ex) {
    const kann_conv_transpose_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space != KANN_SPACE_NONE ? kann_cref(ex, a->bias) : NULL;
    float *y = kann_mref(ex, a->y);
    uint32_t cpg = a->c_in / a->group, mpg = a->c_out / a->group;
    size_t in_sp = (size_t)a->in[0] * a->in[1] * a->in[2];
    size_t out_sp = (size_t)a->out[0] * a->out[1] * a->out[2];
    size_t k_sp = (size_t)a->k[0] * a->k[1] * a->k[2];
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        size_t n = p / a->c_out, m = p % a->c_out, g = m / mpg, mm = m % mpg;
        float *yp = y + p * out_sp;
        float b = bias ? bias[m] : 0.0f;
        for (size_t i = 0; i < out_sp; i++)
            yp[i] = b;
        /* an empty input or window contributes nothing: skip the loops that would step
         * through the other extents for nothing */
        for (size_t c = 0; in_sp && k_sp && c < cpg; c++) {
            size_t ci = g * cpg + c;
            scatter_plane(a, x + (n * a->c_in + ci) * in_sp, w + (ci * mpg + mm) * k_sp, yp);
        }
        kann_act_apply_row(&a->act, yp, out_sp);
    }
}

kann_status kann_conv_transpose_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv_transpose_args *a = args;
    kann_status s;
    if (a->group == 0 || a->c_in % a->group != 0 || a->c_out % a->group != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv_transpose: group does not divide channels");
    for (int d = 0; d < 3; d++) {
        if (a->stride[d] == 0 || a->dil[d] == 0)
            return kann_msg_set(err, KANN_E_CORRUPT, "conv_transpose: zero stride or dilation");
        if (!kann_window_fits(a->in[d], a->stride[d], a->k[d], a->dil[d], a->pad[d], 0, a->out[d]))
            return kann_msg_set(err, KANN_E_CORRUPT, "conv_transpose: coordinates too large");
    }
    uint32_t plane_dims[2] = {a->n, a->c_out}, planes;
    if (!kann_count_fits_u32(plane_dims, 2, &planes))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv_transpose: more than 2^32-1 planes");
    if ((s = kann_check_tile(&a->tile, 1, &planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t x_dims[5] = {a->n, a->c_in, a->in[0], a->in[1], a->in[2]};
    uint32_t w_dims[5] = {a->c_in, a->c_out / a->group, a->k[0], a->k[1], a->k[2]};
    uint32_t y_dims[5] = {a->n, a->c_out, a->out[0], a->out[1], a->out[2]};
    if ((s = kann_check_dense(b, a->x, x_dims, 5, 0, 0, "conv_transpose x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 5, 0, 0, "conv_transpose w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv_transpose bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 5, 1, 0, "conv_transpose y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
