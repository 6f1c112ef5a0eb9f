/* conv2d reference kernel (direct convolution, any group count, stride, dilation and padding)
 * and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"
#include "ref/window.h"

/* Output pixels accumulated at once on the stack: small enough for a microcontroller stack,
 * long enough for the inner loop to vectorize. */
#define CONV_CHUNK 32

/* 1x1, stride 1, no padding, same spatial size: the output plane is a GEMM over contiguous
 * pixels, so whole tiles of rows are one long run instead of many short rows. */
static int is_pointwise(const kann_conv2d_args *a) {
    return a->k_h == 1 && a->k_w == 1 && a->stride_h == 1 && a->stride_w == 1 && a->pad_top == 0 &&
           a->pad_left == 0 && a->h_out == a->h_in && a->w_out == a->w_in;
}

/* y = act(acc + bias + residual) for one run of output pixels. */
static void store_epilogue(const kann_act *act, float *acc, size_t len, float bias,
                           const float *residual, float *y) {
    if (residual) {
        for (size_t j = 0; j < len; j++)
            acc[j] += bias + residual[j];
    } else {
        for (size_t j = 0; j < len; j++)
            acc[j] += bias;
    }
    kann_act_apply_row(act, acc, len);
    for (size_t j = 0; j < len; j++)
        y[j] = acc[j];
}

/* Output channels computed together: each input value loaded feeds CONV_BLOCK accumulators
 * (acc is CONV_BLOCK x CONV_CHUNK floats, 1 KiB of stack). */
#define CONV_BLOCK 8

/* acc[q][first + j] += w[q] * x[j * stride] for q < n_acc, j < count. A full block gets loops
 * with a constant channel count (unrolled; the pixel loop vectorizes when stride is 1). */
static void accumulate(float (*acc)[CONV_CHUNK], size_t n_acc, size_t first, const float *w,
                       const float *x, size_t stride, size_t count) {
    if (n_acc == CONV_BLOCK) {
        if (stride == 1) {
            for (size_t j = 0; j < count; j++)
                for (size_t q = 0; q < CONV_BLOCK; q++)
                    acc[q][first + j] += w[q] * x[j];
        } else {
            for (size_t j = 0; j < count; j++)
                for (size_t q = 0; q < CONV_BLOCK; q++)
                    acc[q][first + j] += w[q] * x[j * stride];
        }
        return;
    }
    for (size_t q = 0; q < n_acc; q++) {
        float wq = w[q], *aq = acc[q] + first;
        if (stride == 1) {
            for (size_t j = 0; j < count; j++)
                aq[j] += wq * x[j];
        } else {
            for (size_t j = 0; j < count; j++)
                aq[j] += wq * x[j * stride];
        }
    }
}

/* The output channels [m, m + n) that the next block handles: inside the tile and one group. */
static size_t channel_block(size_t m, size_t m_end, size_t m_per_group) {
    size_t n = m_end - m, left_in_group = m_per_group - m % m_per_group;
    n = n < left_in_group ? n : left_in_group;
    return n < CONV_BLOCK ? n : CONV_BLOCK;
}

static void conv_pointwise(const kann_conv2d_args *a, const float *x, const float *w,
                           const float *bias, const float *residual, float *y, uint32_t m_begin,
                           uint32_t m_end, size_t p_begin, size_t p_end) {
    size_t plane = (size_t)a->h_out * a->w_out;
    size_t c_per_group = a->c_in / a->group, m_per_group = a->c_out / a->group;
    float acc[CONV_BLOCK][CONV_CHUNK], wv[CONV_BLOCK];
    for (size_t n = 0; n < a->n; n++) {
        for (size_t m0 = m_begin, nb; m0 < m_end; m0 += nb) {
            nb = channel_block(m0, m_end, m_per_group);
            size_t g = m0 / m_per_group;
            const float *x_group = x + (n * a->c_in + g * c_per_group) * plane;
            for (size_t p0 = p_begin; p0 < p_end; p0 += CONV_CHUNK) {
                size_t len = p_end - p0 < CONV_CHUNK ? p_end - p0 : CONV_CHUNK;
                for (size_t q = 0; q < nb; q++)
                    for (size_t j = 0; j < len; j++)
                        acc[q][j] = 0.0f;
                for (size_t c = 0; c < c_per_group; c++) {
                    for (size_t q = 0; q < nb; q++)
                        wv[q] = w[(m0 + q) * c_per_group + c];
                    accumulate(acc, nb, 0, wv, x_group + c * plane + p0, 1, len);
                }
                for (size_t q = 0; q < nb; q++) {
                    size_t y_base = (n * a->c_out + m0 + q) * plane + p0;
                    store_epilogue(&a->act, acc[q], len, bias ? bias[m0 + q] : 0.0f,
                                   residual ? residual + y_base : NULL, y + y_base);
                }
            }
        }
    }
}

/* Direct convolution, one chunk of an output row for a block of output channels at a time. For
 * each horizontal tap kw the outputs whose input column lies inside the image are one range,
 * found once per chunk; within it the inner loop is a plain (strided) multiply-add over output
 * pixels. */
static void conv_direct(const kann_conv2d_args *a, const float *x, const float *w,
                        const float *bias, const float *residual, float *y, uint32_t m_begin,
                        uint32_t m_end, uint32_t oh_begin, uint32_t oh_end) {
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    size_t c_per_group = a->c_in / a->group, m_per_group = a->c_out / a->group;
    size_t k_plane = (size_t)a->k_h * a->k_w, w_filter = c_per_group * k_plane;
    float acc[CONV_BLOCK][CONV_CHUNK], wv[CONV_BLOCK];
    for (size_t n = 0; n < a->n; n++) {
        for (size_t m0 = m_begin, nb; m0 < m_end; m0 += nb) {
            nb = channel_block(m0, m_end, m_per_group);
            size_t g = m0 / m_per_group;
            const float *x_group = x + (n * a->c_in + g * c_per_group) * x_plane;
            const float *w_block = w + m0 * w_filter;
            for (uint32_t oh = oh_begin; oh < oh_end; oh++) {
                int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
                kann_range kh_range = kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
                for (uint32_t ow0 = 0; ow0 < a->w_out; ow0 += CONV_CHUNK) {
                    uint32_t len = a->w_out - ow0 < CONV_CHUNK ? a->w_out - ow0 : CONV_CHUNK;
                    for (size_t q = 0; q < nb; q++)
                        for (size_t j = 0; j < len; j++)
                            acc[q][j] = 0.0f;
                    /* only taps that reach the input for some output of the chunk */
                    int64_t iw_chunk = (int64_t)ow0 * a->stride_w - a->pad_left;
                    kann_range kw_reach = kann_window_range(
                        iw_chunk, a->dil_w, -(int64_t)(len - 1) * a->stride_w, a->w_in, a->k_w);
                    /* output by output, last first: each tap reaching the input once, in
                     * increasing order (see pool_chunk in pool2d.c) */
                    uint32_t next_tap = kw_reach.lo;
                    for (uint32_t jt = len; jt-- > 0;) {
                        kann_range taps = kann_window_range(iw_chunk + (int64_t)jt * a->stride_w,
                                                            a->dil_w, 0, a->w_in, a->k_w);
                        if (taps.lo < next_tap) taps.lo = next_tap;
                        for (uint32_t kw = taps.lo; kw < taps.hi; kw++) {
                            int64_t iw0 = iw_chunk + (int64_t)kw * a->dil_w;
                            kann_range r = kann_window_range(iw0, a->stride_w, 0, a->w_in, len);
                            if (r.lo == r.hi) continue;
                            size_t iw_first = (size_t)(iw0 + (int64_t)r.lo * a->stride_w);
                            for (size_t c = 0; c < c_per_group; c++) {
                                const float *x_c = x_group + c * x_plane + iw_first;
                                for (uint32_t kh = kh_range.lo; kh < kh_range.hi; kh++) {
                                    size_t ih = (size_t)(ih0 + (int64_t)kh * a->dil_h);
                                    size_t tap = c * k_plane + (size_t)kh * a->k_w + kw;
                                    for (size_t q = 0; q < nb; q++)
                                        wv[q] = w_block[q * w_filter + tap];
                                    accumulate(acc, nb, r.lo, wv, x_c + ih * a->w_in, a->stride_w,
                                               r.hi - r.lo);
                                }
                            }
                        }
                        if (taps.hi > next_tap) next_tap = taps.hi;
                    }
                    for (size_t q = 0; q < nb; q++) {
                        size_t y_row = (n * a->c_out + m0 + q) * y_plane + (size_t)oh * a->w_out;
                        store_epilogue(&a->act, acc[q], len, bias ? bias[m0 + q] : 0.0f,
                                       residual ? residual + y_row + ow0 : NULL, y + y_row + ow0);
                    }
                }
            }
        }
    }
}

void kann_f32_conv2d_ref(const void *args, const kann_exec *ex) {
    const kann_conv2d_args *a = args;
    uint32_t m_begin = 0, m_end = a->c_out, oh_begin = 0, oh_end = a->h_out;
    if (a->tile.axis == 0) {
        m_begin = a->tile.begin;
        m_end = a->tile.end;
    } else {
        oh_begin = a->tile.begin;
        oh_end = a->tile.end;
    }
    /* Nothing to write: do not spin through extents that no output bounds. */
    if (m_begin >= m_end || oh_begin >= oh_end || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x);
    const float *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *residual =
        a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    if (is_pointwise(a))
        conv_pointwise(a, x, w, bias, residual, y, m_begin, m_end, (size_t)oh_begin * a->w_out,
                       (size_t)oh_end * a->w_out);
    else
        conv_direct(a, x, w, bias, residual, y, m_begin, m_end, oh_begin, oh_end);
}

kann_status kann_conv2d_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_conv2d_args *a = args;
    kann_status s;
    if (a->group == 0 || a->c_in % a->group != 0 || a->c_out % a->group != 0) {
        kann_msg_set(err, KANN_E_CORRUPT, "conv2d: group ");
        kann_msg_append_u64(err, a->group);
        kann_msg_append(err, " does not divide c_in and c_out");
        return KANN_E_CORRUPT;
    }
    if (a->stride_h == 0 || a->stride_w == 0 || a->dil_h == 0 || a->dil_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d: zero stride or dilation");
    if (!kann_window_fits(a->h_out, a->stride_h, a->k_h, a->dil_h, a->pad_top, 0, a->h_in) ||
        !kann_window_fits(a->w_out, a->stride_w, a->k_w, a->dil_w, a->pad_left, 0, a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "conv2d: window coordinates too large");
    uint32_t extents[2] = {a->c_out, a->h_out};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t x_dims[4] = {a->n, a->c_in, a->h_in, a->w_in};
    uint32_t w_dims[4] = {a->c_out, a->c_in / a->group, a->k_h, a->k_w};
    uint32_t y_dims[4] = {a->n, a->c_out, a->h_out, a->w_out};
    if ((s = kann_check_dense(b, a->x, x_dims, 4, 0, 0, "conv2d x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->w, w_dims, 4, 0, 0, "conv2d w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &a->c_out, 1, 0, 1, "conv2d bias", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 4, 0, 1, "conv2d residual", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 4, 1, 0, "conv2d y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
