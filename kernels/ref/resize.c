/* resize reference kernel (separable interpolation of the last two dims through per-axis tap
 * tables the compiler builds: nearest, linear, cubic, any coordinate mapping) and its
 * validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

/* A tap table row: taps (index, weight) pairs, packed as two 32-bit words each. */
static kann_resize_tap tap_at(const kann_resize_tap *table, uint32_t row, uint32_t taps,
                              uint32_t t) {
    return table[(size_t)row * taps + t];
}

/* Rows up to this wide go the separable way (the interpolated row on the stack); wider ones
 * pixel by pixel. */
#define RESIZE_ROW_FLOATS 4096u

/* One plane, separably: per output row, its row taps blended into one input-wide row (a
 * contiguous multiply-add per tap), then each output pixel from its column taps in that row.
 * h_in * w_in + w_out * taps_w operations per row instead of w_out * taps_h * taps_w. A tap
 * outside the input gives the extrapolation value to its whole row or column. */
static void resize_plane_rows(const kann_resize_args *a, const float *xp, float *yp,
                              const kann_resize_tap *th, const kann_resize_tap *tw) {
    float row[RESIZE_ROW_FLOATS];
    for (uint32_t oh = 0; oh < a->h_out; oh++) {
        float *yr = yp + (size_t)oh * a->w_out;
        int outside = 0;
        for (uint32_t i = 0; i < a->taps_h; i++) {
            kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
            if (h.index < 0 || (uint32_t)h.index >= a->h_in) {
                outside = 1;
                break;
            }
            const float *xr = xp + (size_t)h.index * a->w_in;
            if (i == 0)
                for (uint32_t c = 0; c < a->w_in; c++)
                    row[c] = h.weight * xr[c];
            else
                for (uint32_t c = 0; c < a->w_in; c++)
                    row[c] += h.weight * xr[c];
        }
        for (uint32_t ow = 0; ow < a->w_out; ow++) {
            float acc = 0.0f;
            int out_w = outside;
            for (uint32_t j = 0; j < a->taps_w && !out_w; j++) {
                kann_resize_tap w = tap_at(tw, ow, a->taps_w, j);
                if (w.index < 0 || (uint32_t)w.index >= a->w_in)
                    out_w = 1;
                else
                    acc += w.weight * row[w.index];
            }
            yr[ow] = out_w ? a->extrapolation : acc;
        }
    }
}

/* One plane, pixel by pixel (rows too wide for the separable buffer). */
static void resize_plane_pixels(const kann_resize_args *a, const float *xp, float *yp,
                                const kann_resize_tap *th, const kann_resize_tap *tw) {
    for (uint32_t oh = 0; oh < a->h_out; oh++) {
        for (uint32_t ow = 0; ow < a->w_out; ow++) {
            float acc = 0.0f;
            int outside = 0;
            for (uint32_t i = 0; i < a->taps_h && !outside; i++) {
                kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
                if (h.index < 0 || (uint32_t)h.index >= a->h_in) {
                    outside = 1;
                    break;
                }
                float row = 0.0f;
                for (uint32_t j = 0; j < a->taps_w; j++) {
                    kann_resize_tap w = tap_at(tw, ow, a->taps_w, j);
                    if (w.index < 0 || (uint32_t)w.index >= a->w_in) {
                        outside = 1;
                        break;
                    }
                    row += w.weight * xp[(size_t)h.index * a->w_in + (size_t)w.index];
                }
                acc += h.weight * row;
            }
            yp[(size_t)oh * a->w_out + ow] = outside ? a->extrapolation : acc;
        }
    }
}

void kann_f32_resize_ref(const void *args, const kann_exec *ex) {
    const kann_resize_args *a = args;
    const float *x = kann_cref(ex, a->x);
    const kann_resize_tap *th = (const kann_resize_tap *)(const void *)kann_cref(ex, a->table_h);
    const kann_resize_tap *tw = (const kann_resize_tap *)(const void *)kann_cref(ex, a->table_w);
    float *y = kann_mref(ex, a->y);
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * a->h_in * (size_t)a->w_in;
        float *yp = y + p * a->h_out * (size_t)a->w_out;
        if (a->w_in <= RESIZE_ROW_FLOATS)
            resize_plane_rows(a, xp, yp, th, tw);
        else
            resize_plane_pixels(a, xp, yp, th, tw);
    }
}

kann_status kann_resize_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_resize_args *a = args;
    kann_status s;
    if (a->taps_h == 0 || a->taps_w == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "resize: zero taps");
    if ((s = kann_check_tile(&a->tile, 1, &a->planes, err)) != KANN_OK) return s;
    uint32_t x_dims[3] = {a->planes, a->h_in, a->w_in}, y_dims[3] = {a->planes, a->h_out, a->w_out};
    /* A tap is two floats wide. */
    uint32_t th_dims[3] = {a->h_out, a->taps_h, 2}, tw_dims[3] = {a->w_out, a->taps_w, 2};
    if ((s = kann_check_dense(b, a->x, x_dims, 3, 0, 0, "resize x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->table_h, th_dims, 3, 0, 0, "resize table_h", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->table_w, tw_dims, 3, 0, 0, "resize table_w", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "resize y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
