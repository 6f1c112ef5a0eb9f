/* pool2d reference kernel (max and average pooling with padding, stride and dilation) and its
 * validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"
#include "ref/window.h"

/* Output pixels of one row handled at once on the stack. */
#define POOL_CHUNK 64

/* Pools one chunk of an output row into acc (the max, or the sum). Only the taps kw that reach
 * the input for some output of the chunk are visited, so the work is bounded by the input size
 * however large k_w, the stride or the padding are. */
static void pool_chunk(const kann_pool2d_args *a, const float *x_plane, int64_t ih0,
                       kann_range kh_valid, int64_t iw_chunk, kann_range kw_reach, uint32_t len,
                       float *acc) {
    int is_max = a->kind == KANN_POOL_MAX;
    size_t stride_w = a->stride_w;
    for (size_t j = 0; j < len; j++)
        acc[j] = is_max ? -INFINITY : 0.0f;
    /* No window row inside the input (h_in = 0, or padding only): nothing to visit, however
     * many column taps there are. */
    if (kh_valid.hi <= kh_valid.lo) return;
    /* The taps output by output, last output first (its taps come first): each tap that lands
     * in the input for some output is visited once, in increasing order, and no other, so the
     * work stays within len * min(k_w, w_in) however far apart stride and padding put the
     * outputs. */
    uint32_t next_tap = kw_reach.lo;
    for (uint32_t jt = len; jt-- > 0;) {
        kann_range taps =
            kann_window_range(iw_chunk + (int64_t)jt * a->stride_w, a->dil_w, 0, a->w_in, a->k_w);
        if (taps.lo < next_tap) taps.lo = next_tap;
        for (uint32_t kw = taps.lo; kw < taps.hi; kw++) {
            int64_t iw0 = iw_chunk + (int64_t)kw * a->dil_w;
            kann_range r = kann_window_range(iw0, a->stride_w, 0, a->w_in, len);
            if (r.lo == r.hi) continue;
            size_t iw_first = (size_t)(iw0 + (int64_t)r.lo * a->stride_w);
            size_t count = r.hi - r.lo;
            float *acc_run = acc + r.lo;
            for (uint32_t kh = kh_valid.lo; kh < kh_valid.hi; kh++) {
                size_t ih = (size_t)(ih0 + (int64_t)kh * a->dil_h);
                const float *xr = x_plane + ih * a->w_in + iw_first;
                if (is_max) {
                    for (size_t j = 0; j < count; j++) {
                        float v = xr[j * stride_w];
                        acc_run[j] = v > acc_run[j] ? v : acc_run[j];
                    }
                } else {
                    for (size_t j = 0; j < count; j++)
                        acc_run[j] += xr[j * stride_w];
                }
            }
        }
        if (taps.hi > next_tap) next_tap = taps.hi;
    }
}

void kann_f32_pool2d_ref(const void *args, const kann_exec *ex) {
    const kann_pool2d_args *a = args;
    /* Nothing to write: do not spin through extents that no output bounds. */
    if (a->tile.begin >= a->tile.end || a->h_out == 0 || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    int is_max = a->kind == KANN_POOL_MAX;
    int count_pad = !is_max && a->count_include_pad;
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    float acc[POOL_CHUNK];
    uint32_t cols_counted[POOL_CHUNK];
    /* Chunks outermost: what depends only on the output column is computed once. */
    for (uint32_t ow0 = 0; ow0 < a->w_out; ow0 += POOL_CHUNK) {
        uint32_t len = a->w_out - ow0 < POOL_CHUNK ? a->w_out - ow0 : POOL_CHUNK;
        int64_t iw_chunk = (int64_t)ow0 * a->stride_w - a->pad_left;
        for (uint32_t j = 0; j < len; j++)
            cols_counted[j] =
                kann_pool_taps_counted(iw_chunk + (int64_t)j * a->stride_w, a->dil_w, a->k_w,
                                       a->w_in, a->pad_left, a->pad_right, count_pad);
        kann_range kw_reach = kann_window_range(iw_chunk, a->dil_w,
                                                -(int64_t)(len - 1) * a->stride_w, a->w_in, a->k_w);
        for (size_t p = a->tile.begin; p < a->tile.end; p++) {
            const float *xp = x + p * x_plane;
            for (uint32_t oh = 0; oh < a->h_out; oh++) {
                int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
                kann_range kh_valid = kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
                uint64_t rows_counted = kann_pool_taps_counted(
                    ih0, a->dil_h, a->k_h, a->h_in, a->pad_top, a->pad_bottom, count_pad);
                pool_chunk(a, xp, ih0, kh_valid, iw_chunk, kw_reach, len, acc);
                /* A window that covers nothing (possible with large padding) yields 0, not
                 * -inf or 0/0. */
                for (size_t j = 0; j < len; j++) {
                    uint64_t n = rows_counted * cols_counted[j];
                    if (n == 0)
                        acc[j] = 0.0f;
                    else if (!is_max)
                        acc[j] /= (float)n;
                }
                kann_act_apply_row(&a->act, acc, len);
                float *yr = y + p * y_plane + (size_t)oh * a->w_out + ow0;
                for (size_t j = 0; j < len; j++)
                    yr[j] = acc[j];
            }
        }
    }
}

kann_status kann_pool2d_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_pool2d_args *a = args;
    kann_status s;
    if (a->kind >= KANN_POOL_COUNT) {
        kann_msg_set(err, KANN_E_CORRUPT, "pool2d: unknown kind ");
        kann_msg_append_u64(err, a->kind);
        return KANN_E_CORRUPT;
    }
    if (a->stride_h == 0 || a->stride_w == 0 || a->dil_h == 0 || a->dil_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "pool2d: zero stride or dilation");
    if (!kann_window_fits(a->h_out, a->stride_h, a->k_h, a->dil_h, a->pad_top, a->pad_bottom,
                          a->h_in) ||
        !kann_window_fits(a->w_out, a->stride_w, a->k_w, a->dil_w, a->pad_left, a->pad_right,
                          a->w_in))
        return kann_msg_set(err, KANN_E_CORRUPT, "pool2d: window coordinates too large");
    uint32_t x_dims[3] = {a->planes, a->h_in, a->w_in};
    uint32_t y_dims[3] = {a->planes, a->h_out, a->w_out};
    if ((s = kann_check_tile(&a->tile, 1, &a->planes, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "pool2d x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "pool2d y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
