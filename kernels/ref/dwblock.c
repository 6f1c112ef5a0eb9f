/* dwblock reference kernel (the band loop over the portable conv2d_packed microkernel and the
 * reference depthwise conv) and its validator. */
#include "ref/dwblock.h"
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

void kann_f32_dwblock_ref(const void *args, const kann_exec *ex) {
    kann_dwblock_drive(args, ex, kann_conv_microkernel_ref, KANN_CONV_REF_STRIP,
                       kann_f32_dwconv2d_ref);
}

kann_status kann_dwblock_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_dwblock_args *a = args;
    kann_status s;
    if (a->expand > 1) return kann_msg_set(err, KANN_E_CORRUPT, "dwblock: expand is not 0 or 1");
    if (a->c_in == 0 || a->c_mid == 0 || a->c_out == 0 || (!a->expand && a->c_mid != a->c_in))
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "dwblock: channel counts zero, or c_mid != c_in without expansion");
    if (a->stride_h == 0 || a->stride_w == 0 || a->dil_h == 0 || a->dil_w == 0 || a->k_h == 0 ||
        a->k_w == 0 || a->band_rows == 0)
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "dwblock: zero stride, dilation, window or band rows");
    if (!kann_window_fits(a->h_out, a->stride_h, a->k_h, a->dil_h, a->pad_top, 0, a->h_in) ||
        !kann_window_fits(a->w_out, a->stride_w, a->k_w, a->dil_w, a->pad_left, 0, a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "dwblock: window coordinates too large");
    if (!kann_dwblock_window_inside(a->h_out, a->stride_h, a->k_h, a->dil_h, a->pad_top, a->h_in) ||
        !kann_dwblock_window_inside(a->w_out, a->stride_w, a->k_w, a->dil_w, a->pad_left, a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "dwblock: a window lies outside the input");
    uint32_t in_dims[3] = {a->c_mid, a->h_in, a->w_in},
             out_dims[3] = {a->c_mid, a->h_out, a->w_out};
    uint32_t y_dims[3] = {a->c_out, a->h_out, a->w_out}, count;
    if (!kann_count_fits_u32(in_dims, 3, &count) || !kann_count_fits_u32(out_dims, 3, &count) ||
        !kann_count_fits_u32(y_dims, 3, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "dwblock: map size overflows");
    if ((s = kann_check_tile(&a->tile, 1, &a->h_out, err)) != KANN_OK ||
        (s = kann_check_act(&a->act_exp, err)) != KANN_OK ||
        (s = kann_check_act(&a->act_dw, err)) != KANN_OK ||
        (s = kann_check_act(&a->act_proj, err)) != KANN_OK)
        return s;
    uint64_t scratch = kann_dwblock_scratch(a);
    if (scratch != 0 && a->slots &&
        __builtin_mul_overflow(kann_dwblock_slot_floats(a), (uint64_t)a->slots, &scratch))
        scratch = 0;
    if (scratch == 0 || scratch > UINT32_MAX)
        return kann_msg_set(err, KANN_E_CORRUPT, "dwblock: scratch size overflows");
    uint32_t p = KANN_CONV_PANEL;
    uint32_t x_dims[3] = {a->c_in, a->h_in, a->w_in}, dw_dims[3] = {a->c_mid, a->k_h, a->k_w};
    uint32_t exp_dims[3] = {a->c_mid / p + (a->c_mid % p != 0), a->c_in, p};
    uint32_t proj_dims[3] = {a->c_out / p + (a->c_out % p != 0), a->c_mid, p};
    uint32_t s_dims[1] = {(uint32_t)scratch};
    if ((s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "dwblock x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w_dw, dw_dims, 3, 0, 0, "dwblock w_dw", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->b_dw, &a->c_mid, 1, 0, 1, "dwblock b_dw", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w_proj, proj_dims, 3, 0, 0, "dwblock w_proj", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->b_proj, &a->c_out, 1, 0, 1, "dwblock b_proj", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 3, 0, 1, "dwblock residual", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "dwblock y", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->scratch, s_dims, 1, 1, 0, "dwblock scratch", err)) != KANN_OK)
        return s;
    if (!a->expand) {
        if (a->w_exp.space != KANN_SPACE_NONE || a->b_exp.space != KANN_SPACE_NONE)
            return kann_msg_set(err, KANN_E_CORRUPT,
                                "dwblock: expansion weights without an expansion");
        return KANN_OK;
    }
    if ((s = kann_check_dense(b, a->w_exp, exp_dims, 3, 0, 0, "dwblock w_exp", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->b_exp, &a->c_mid, 1, 0, 1, "dwblock b_exp", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
