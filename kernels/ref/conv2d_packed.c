/* conv2d_packed reference kernel (portable C microkernel over the packed weight panels) and
 * its validator. */
#include "ref/conv2d_packed.h"
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

void kann_conv_microkernel_ref(const kann_conv_tile *t) {
    float acc[KANN_CONV_PANEL][KANN_CONV_REF_STRIP] = {{0}};
    size_t n = t->n;
    if (!t->first)
        for (size_t r = 0; r < t->mr; r++)
            for (size_t j = 0; j < n; j++)
                acc[r][j] = t->y[r * t->ldy + j];
    const float *wk = t->w;
    for (size_t g = 0; g < t->n_groups; g++) {
        for (size_t tap = 0; tap < t->n_taps; tap++, wk += KANN_CONV_PANEL) {
            const float *bk = t->b + g * t->b_stride + t->taps[tap];
            for (size_t r = 0; r < KANN_CONV_PANEL; r++)
                for (size_t j = 0; j < n; j++)
                    acc[r][j] += wk[r] * bk[j];
        }
    }
    if (!t->last) {
        for (size_t r = 0; r < t->mr; r++)
            for (size_t j = 0; j < n; j++)
                t->y[r * t->ldy + j] = acc[r][j];
        return;
    }
    kann_conv_segment whole = {0, n, 0};
    const kann_conv_segment *segs = t->n_segments ? t->segments : &whole;
    size_t n_segs = t->n_segments ? t->n_segments : 1;
    for (size_t r = 0; r < t->mr; r++) {
        float b = t->bias ? t->bias[r] : 0.0f;
        for (size_t s = 0; s < n_segs; s++) {
            float *y = t->y + r * t->ldy + segs[s].at;
            const float *res = t->res ? t->res + r * t->ldy + segs[s].at : NULL;
            for (size_t j = segs[s].lo; j < segs[s].hi; j++) {
                float v = acc[r][j] + b;
                if (res) v += res[j - segs[s].lo];
                y[j - segs[s].lo] = kann_act_apply(t->act, v);
            }
        }
    }
}

void kann_f32_conv2d_packed_ref(const void *args, const kann_exec *ex) {
    kann_conv2d_packed_drive(args, ex, KANN_CONV_REF_STRIP, kann_conv_microkernel_ref,
                             kann_row_pair);
}

kann_status kann_conv2d_packed_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv2d_packed_args *a = args;
    kann_status s;
    if (a->reserved[0] != 0 || a->reserved[1] != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_packed: reserved fields are not zero");
    if (a->c_in == 0) /* the wide path sizes its pixel blocks by c_in */
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_packed: no input channels");
    if (a->stride_h == 0 || a->stride_w == 0 || a->dil_h == 0 || a->dil_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_packed: zero stride or dilation");
    if (!kann_window_fits(a->h_out, a->stride_h, a->k_h, a->dil_h, a->pad_top, 0, a->h_in) ||
        !kann_window_fits(a->w_out, a->stride_w, a->k_w, a->dil_w, a->pad_left, 0, a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d_packed: window coordinates too large");
    uint32_t k_dims[3] = {a->c_in, a->k_h, a->k_w}, hw_dims[2] = {a->h_out, a->w_out};
    uint32_t K, hw;
    if (!kann_count_fits_u32(k_dims, 3, &K) || !kann_count_fits_u32(hw_dims, 2, &hw))
        return kann_msg_set(err, KANN_E_CORRUPT,
                            "conv2d_packed: reduction or pixel count overflows");
    uint32_t extents[2] = {a->c_out, hw};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t align = a->tile.axis == 0 ? KANN_CONV_PANEL : KANN_CONV_PIXEL_GRANULE;
    if ((s = kann_check_tile_begin(&a->tile, align, "conv2d_packed", err)) != KANN_OK) return s;
    /* Weight panels cover c_out rounded up to a whole panel. */
    uint32_t panels = a->c_out / KANN_CONV_PANEL + (a->c_out % KANN_CONV_PANEL != 0);
    uint32_t w_dims[3] = {panels, KANN_CONV_PANEL, K};
    uint32_t x_dims[3] = {a->c_in, a->h_in, a->w_in};
    uint32_t y_dims[2] = {a->c_out, hw};
    if ((s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "conv2d_packed x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 3, 0, 0, "conv2d_packed w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv2d_packed bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 2, 0, 1, "conv2d_packed residual", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 2, 1, 0, "conv2d_packed y", err)) != KANN_OK)
        return s;
    /* The pointwise and wide paths read x in place: no gather, no scratch (a wide conv of a
     * file written before the wide path existed may still name one; it goes unused). */
    if (kann_conv2d_packed_pointwise(a)) {
        if (a->scratch.space != KANN_SPACE_NONE)
            return kann_msg_set(err, KANN_E_CORRUPT,
                                "conv2d_packed: a pointwise conv has no scratch");
        return KANN_OK;
    }
    /* K floats for every pixel, the count rounded up to a whole granule. */
    uint32_t g = KANN_CONV_PIXEL_GRANULE;
    uint32_t s_dims[3] = {hw / g + (hw % g != 0), g, K};
    return kann_check_dense(b, a->scratch, s_dims, 3, 1, kann_conv2d_packed_wide(a),
                            "conv2d_packed scratch", err);
}
