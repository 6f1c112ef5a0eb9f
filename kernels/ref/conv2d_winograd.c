/* conv2d_winograd reference kernel (Winograd F(2x2, 3x3) or F(4x4, 3x3) with a portable C GEMM
 * per position) and its validator. */
#include "ref/conv2d_winograd.h"
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

static void gemm_ref(const float *u, const float *u_next, const float *v, size_t c_in, size_t n,
                     size_t mr, float *m) {
    (void)u_next;
    float acc[KANN_CONV_PANEL][KANN_WINO_BLOCK] = {{0}};
    for (size_t c = 0; c < c_in; c++) {
        const float *uc = u + c * KANN_CONV_PANEL, *vc = v + c * KANN_WINO_BLOCK;
        for (size_t r = 0; r < mr; r++)
            for (size_t j = 0; j < n; j++)
                acc[r][j] += uc[r] * vc[j];
    }
    for (size_t r = 0; r < mr; r++)
        for (size_t j = 0; j < n; j++)
            m[r * KANN_WINO_BLOCK + j] = acc[r][j];
}

void kann_f32_conv2d_winograd_ref(const void *args, const kann_exec *ex) {
    kann_conv2d_winograd_drive(args, ex, kann_wino_input_block, gemm_ref, kann_wino_output_block,
                               0);
}

kann_status kann_conv2d_winograd_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv2d_winograd_args *a = args;
    kann_status s;
    if (a->pad > 2)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_winograd: padding past 2");
    if (a->transform >= KANN_WINO_TRANSFORM_COUNT)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_winograd: unknown transform");
    if ((uint64_t)a->h_out + 2 > (uint64_t)a->h_in + 2 * a->pad ||
        (uint64_t)a->w_out + 2 > (uint64_t)a->w_in + 2 * a->pad)
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "conv2d_winograd: the 3x3 windows do not fit the padded input");
    uint32_t e = (uint32_t)kann_wino_edge(a), positions = (uint32_t)kann_wino_positions(a);
    uint32_t tile_dims[2] = {a->h_out / e + (a->h_out % e != 0), a->w_out / e + (a->w_out % e != 0)};
    uint32_t hw_dims[2] = {a->h_out, a->w_out}, T, hw;
    if (!kann_count_fits_u32(tile_dims, 2, &T) || !kann_count_fits_u32(hw_dims, 2, &hw))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_winograd: pixel count overflows");
    uint32_t extents[2] = {a->c_out, T};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t align = a->tile.axis == 0 ? KANN_WINO_CHANNEL_GRANULE : KANN_CONV_PIXEL_GRANULE;
    if ((s = kann_check_tile_begin(&a->tile, align, "conv2d_winograd", err)) != KANN_OK) return s;
    uint32_t panels = a->c_out / KANN_CONV_PANEL + (a->c_out % KANN_CONV_PANEL != 0);
    uint32_t u_dims[4] = {positions, panels, a->c_in, KANN_CONV_PANEL};
    uint32_t x_dims[3] = {a->c_in, a->h_in, a->w_in};
    uint32_t y_dims[2] = {a->c_out, hw};
    uint32_t g = KANN_CONV_PIXEL_GRANULE;
    uint64_t pos_stride = kann_wino_pos_stride(a->c_in);
    if (pos_stride > UINT32_MAX)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_winograd: scratch size overflows");
    uint32_t s_dims[3] = {T / g + (T % g != 0), positions, (uint32_t)pos_stride};
    if ((s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "conv2d_winograd x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->u, u_dims, 4, 0, 0, "conv2d_winograd u", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv2d_winograd bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 2, 0, 1, "conv2d_winograd residual", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 2, 1, 0, "conv2d_winograd y", err)) != KANN_OK)
        return s;
    return kann_check_dense(b, a->scratch, s_dims, 3, 1, 0, "conv2d_winograd scratch", err);
}
