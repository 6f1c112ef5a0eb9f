/* conv2d_maxpool reference kernel (the portable conv2d_packed on one conv row at a time, the
 * pool from the ring) and its validator. */
#include "ref/conv2d_maxpool.h"
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

void kann_f32_conv2d_maxpool_ref(const void *args, const kann_exec *ex) {
    kann_conv2d_maxpool_packed(args, ex, kann_f32_conv2d_packed_ref, kann_maxpool_rows);
}

/* The pool's window along one axis: taps k at stride s over n_out outputs with pad below k, the
 * last window starting inside the n_in conv rows or columns. */
static int pool_axis_ok(uint32_t n_out, uint32_t k, uint32_t s, uint32_t pad, uint32_t n_in) {
    if (k == 0 || s == 0 || pad >= k) return 0;
    if (!kann_window_fits(n_out, s, k, 1, pad, 0, n_in)) return 0;
    return n_out == 0 || (uint64_t)(n_out - 1) * s < (uint64_t)n_in + pad;
}

kann_status kann_conv2d_maxpool_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv2d_maxpool_args *a = args;
    kann_status s;
    if (a->c_in == 0 || a->k_h == 0 || a->k_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_maxpool: empty reduction");
    if (a->stride_h == 0 || a->stride_w == 0 || a->dil_h == 0 || a->dil_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_maxpool: zero stride or dilation");
    if (!kann_window_fits(a->h_conv, a->stride_h, a->k_h, a->dil_h, a->pad_top, 0, a->h_in) ||
        !kann_window_fits(a->w_conv, a->stride_w, a->k_w, a->dil_w, a->pad_left, 0, a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_maxpool: window coordinates too large");
    if (!pool_axis_ok(a->h_out, a->pool_k_h, a->pool_stride_h, a->pool_pad_top, a->h_conv) ||
        !pool_axis_ok(a->w_out, a->pool_k_w, a->pool_stride_w, a->pool_pad_left, a->w_conv))
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "conv2d_maxpool: a pool window outside the conv's output");
    uint32_t k_dims[3] = {a->c_in, a->k_h, a->k_w}, hw_dims[2] = {a->h_conv, a->w_conv};
    uint32_t K, hw;
    if (!kann_count_fits_u32(k_dims, 3, &K) || !kann_count_fits_u32(hw_dims, 2, &hw))
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "conv2d_maxpool: reduction or pixel count overflows");
    uint32_t extents[2] = {a->c_out, a->h_out};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    if (a->tile.axis == 0 &&
        (s = kann_check_tile_begin(&a->tile, KANN_CONV_PANEL, "conv2d_maxpool", err)) != KANN_OK)
        return s;
    uint64_t band = 0, gather = 0, floats = kann_conv2d_maxpool_scratch(a, &band, &gather);
    if (floats == 0 || floats > UINT32_MAX)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_maxpool: scratch size overflows");
    uint32_t panels = a->c_out / KANN_CONV_PANEL + (a->c_out % KANN_CONV_PANEL != 0);
    uint32_t w_dims[3] = {panels, KANN_CONV_PANEL, K};
    uint32_t x_dims[3] = {a->c_in, a->h_in, a->w_in};
    uint32_t y_dims[3] = {a->c_out, a->h_out, a->w_out};
    uint32_t s_dims[1] = {(uint32_t)floats};
    if ((s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "conv2d_maxpool x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 3, 0, 0, "conv2d_maxpool w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv2d_maxpool bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "conv2d_maxpool y", err)) != KANN_OK)
        return s;
    return kann_check_dense(b, a->scratch, s_dims, 1, 1, 0, "conv2d_maxpool scratch", err);
}
