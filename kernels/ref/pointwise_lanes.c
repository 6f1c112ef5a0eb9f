/* pointwise_lanes reference kernel (a 1x1 conv over weights packed in blocks of output channels,
 * with its bias, residual and activation) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Per pixel of the tile, a block's sums over the input channels (vectorizable along the
 * block), then the epilogue of the tile's channels in it. */
void kann_f32_pointwise_lanes_ref(const void *args, const kann_exec *ex) {
    const kann_pointwise_lanes_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t c_in = a->c_in, hw = a->hw;
    size_t m_begin, m_end, p_begin, p_end;
    kann_pointwise_lanes_tile(a, &m_begin, &m_end, &p_begin, &p_end);
    for (size_t m0 = m_begin; m0 < m_end; m0 += KANN_GAP_BLOCK) {
        size_t n = m_end - m0 < KANN_GAP_BLOCK ? m_end - m0 : KANN_GAP_BLOCK;
        const float *wb = w + m0 * c_in; /* block m0 / 32: (m0 / 32) * c_in * 32 floats on */
        for (size_t p = p_begin; p < p_end; p++) {
            float acc[KANN_GAP_BLOCK] = {0};
            for (size_t k = 0; k < c_in; k++) {
                float xv = x[k * hw + p];
                for (size_t j = 0; j < KANN_GAP_BLOCK; j++)
                    acc[j] += wb[k * KANN_GAP_BLOCK + j] * xv;
            }
            for (size_t j = 0; j < n; j++) {
                size_t o = (m0 + j) * hw + p;
                float t = acc[j] + (bias ? bias[m0 + j] : 0.0f);
                if (res) t += res[o];
                y[o] = kann_act_apply(&a->act, t);
            }
        }
    }
}

kann_status kann_pointwise_lanes_validate(const void *args, const kann_bounds *b,
                                          kann_error *err) {
    const kann_pointwise_lanes_args *a = args;
    kann_status s;
    if (a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pointwise_lanes: reserved field is not zero");
    if (a->c_in == 0 || a->hw == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pointwise_lanes: no input channels or pixels");
    uint32_t extents[2] = {a->c_out, a->hw};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t align = a->tile.axis == 0 ? KANN_GAP_BLOCK : 1;
    if ((s = kann_check_tile_begin(&a->tile, align, "pointwise_lanes", err)) != KANN_OK) return s;
    /* the blocks cover c_out rounded up to a whole block */
    uint32_t blocks = a->c_out / KANN_GAP_BLOCK + (a->c_out % KANN_GAP_BLOCK != 0);
    uint32_t w_dims[3] = {blocks, a->c_in, KANN_GAP_BLOCK}, x_dims[2] = {a->c_in, a->hw};
    uint32_t y_dims[2] = {a->c_out, a->hw};
    if ((s = kann_check_dense(b, a->x, x_dims, 2, 0, 0, "pointwise_lanes x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 3, 0, 0, "pointwise_lanes w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "pointwise_lanes bias", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 2, 0, 1, "pointwise_lanes residual",
                              err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 2, 1, 0, "pointwise_lanes y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
