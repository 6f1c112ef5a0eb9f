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

/* d = w * s (first) or d += w * s, over n floats: one row tap of a blend. */
static void blend_row(float *d, const float *s, float w, uint32_t n, int first) {
    if (first)
        for (uint32_t c = 0; c < n; c++)
            d[c] = w * s[c];
    else
        for (uint32_t c = 0; c < n; c++)
            d[c] += w * s[c];
}

/* Output row oh of one plane, separably: its row taps blended into one input-wide row (a
 * contiguous multiply-add per tap), then each output pixel from its column taps in that row.
 * h_in * w_in + w_out * taps_w operations per row instead of w_out * taps_h * taps_w. A tap
 * outside the input gives the extrapolation value to its whole row or column. */
static void resize_row_blend_first(const kann_resize_args *a, const float *xp, float *yr,
                                   uint32_t oh, const kann_resize_tap *th,
                                   const kann_resize_tap *tw) {
    float row[RESIZE_ROW_FLOATS];
    int outside = 0;
    for (uint32_t i = 0; i < a->taps_h; i++) {
        kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
        if (h.index < 0 || (uint32_t)h.index >= a->h_in) {
            outside = 1;
            break;
        }
        blend_row(row, xp + (size_t)h.index * a->w_in, h.weight, a->w_in, i == 0);
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

/* Upsampling reads each input row for several output rows: interpolated along the columns
 * once (w_out wide, into one of RESIZE_SLOTS slots, slot = row index mod RESIZE_SLOTS), each
 * output row is then a blend of its rows' slots, contiguous multiply-adds over w_out. DeepLab's
 * 28x28 -> 224x224 bilinear: 224 * 2 scalar column taps per input row instead of per output
 * row. Only where no output row has two input rows for one slot. */
#define RESIZE_SLOTS 4u
#define RESIZE_SLOT_FLOATS 1024u

static int resize_slots_fit(const kann_resize_args *a, const kann_resize_tap *th) {
    if (a->h_out <= a->h_in || a->taps_h > RESIZE_SLOTS || a->w_out > RESIZE_SLOT_FLOATS) return 0;
    for (uint32_t oh = 0; oh < a->h_out; oh++)
        for (uint32_t i = 0; i < a->taps_h; i++)
            for (uint32_t k = 0; k < i; k++) {
                int32_t r = tap_at(th, oh, a->taps_h, i).index;
                int32_t q = tap_at(th, oh, a->taps_h, k).index;
                if (q != r && (uint32_t)q % RESIZE_SLOTS == (uint32_t)r % RESIZE_SLOTS) return 0;
            }
    return 1;
}

/* Input row xr interpolated along the columns into d (w_out floats); a column with a tap
 * outside the input gets 0 here and the extrapolation value in the output row. */
static void resize_columns(const kann_resize_args *a, const float *xr, const kann_resize_tap *tw,
                           float *d) {
    for (uint32_t ow = 0; ow < a->w_out; ow++) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < a->taps_w; j++) {
            kann_resize_tap w = tap_at(tw, ow, a->taps_w, j);
            if (w.index < 0 || (uint32_t)w.index >= a->w_in) {
                acc = 0.0f;
                break;
            }
            acc += w.weight * xr[w.index];
        }
        d[ow] = acc;
    }
}

static void resize_plane_slots(const kann_resize_args *a, const float *xp, float *yp,
                               const kann_resize_tap *th, const kann_resize_tap *tw) {
    float slots[RESIZE_SLOTS][RESIZE_SLOT_FLOATS];
    int64_t held[RESIZE_SLOTS] = {-1, -1, -1, -1}; /* the input row each slot holds */
    int cols_outside = 0;
    for (uint32_t ow = 0; ow < a->w_out; ow++)
        for (uint32_t j = 0; j < a->taps_w; j++) {
            int32_t i = tap_at(tw, ow, a->taps_w, j).index;
            cols_outside |= i < 0 || (uint32_t)i >= a->w_in;
        }
    for (uint32_t oh = 0; oh < a->h_out; oh++) {
        float *yr = yp + (size_t)oh * a->w_out;
        int outside = 0;
        for (uint32_t i = 0; i < a->taps_h; i++) {
            int32_t r = tap_at(th, oh, a->taps_h, i).index;
            outside |= r < 0 || (uint32_t)r >= a->h_in;
        }
        if (outside) {
            for (uint32_t ow = 0; ow < a->w_out; ow++)
                yr[ow] = a->extrapolation;
            continue;
        }
        for (uint32_t i = 0; i < a->taps_h; i++) {
            kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
            float *s = slots[(uint32_t)h.index % RESIZE_SLOTS];
            if (held[(uint32_t)h.index % RESIZE_SLOTS] != h.index) {
                resize_columns(a, xp + (size_t)h.index * a->w_in, tw, s);
                held[(uint32_t)h.index % RESIZE_SLOTS] = h.index;
            }
            blend_row(yr, s, h.weight, a->w_out, i == 0);
        }
        if (cols_outside)
            for (uint32_t ow = 0; ow < a->w_out; ow++)
                for (uint32_t j = 0; j < a->taps_w; j++) {
                    int32_t i = tap_at(tw, ow, a->taps_w, j).index;
                    if (i < 0 || (uint32_t)i >= a->w_in) {
                        yr[ow] = a->extrapolation;
                        break;
                    }
                }
    }
}

/* One plane, separably, row by row with the blend first. */
static void resize_plane_rows(const kann_resize_args *a, const float *xp, float *yp,
                              const kann_resize_tap *th, const kann_resize_tap *tw) {
    for (uint32_t oh = 0; oh < a->h_out; oh++)
        resize_row_blend_first(a, xp, yp + (size_t)oh * a->w_out, oh, th, tw);
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
    int slots = resize_slots_fit(a, th);
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * a->h_in * (size_t)a->w_in;
        float *yp = y + p * a->h_out * (size_t)a->w_out;
        if (slots)
            resize_plane_slots(a, xp, yp, th, tw);
        else if (a->w_in <= RESIZE_ROW_FLOATS)
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
