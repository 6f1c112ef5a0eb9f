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

/* Whether index lies inside [0, n). */
static int tap_inside(int32_t index, uint32_t n) {
    return index >= 0 && (uint32_t)index < n;
}

/* Whether every column tap of output column ow lies inside the input. */
static int column_inside(const kann_resize_args *a, const kann_resize_tap *tw, uint32_t ow) {
    for (uint32_t j = 0; j < a->taps_w; j++)
        if (!tap_inside(tap_at(tw, ow, a->taps_w, j).index, a->w_in)) return 0;
    return 1;
}

/* Output column ow from its column taps in row (w_in floats) into *v; 0 when a tap lies outside
 * the input (the column takes the extrapolation value). */
static int column_taps(const kann_resize_args *a, const float *row, const kann_resize_tap *tw,
                       uint32_t ow, float *v) {
    float acc = 0.0f;
    for (uint32_t j = 0; j < a->taps_w; j++) {
        kann_resize_tap w = tap_at(tw, ow, a->taps_w, j);
        if (!tap_inside(w.index, a->w_in)) return 0;
        acc += w.weight * row[w.index];
    }
    *v = acc;
    return 1;
}

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
    for (uint32_t i = 0; i < a->taps_h; i++) {
        kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
        if (!tap_inside(h.index, a->h_in)) {
            for (uint32_t ow = 0; ow < a->w_out; ow++)
                yr[ow] = a->extrapolation;
            return;
        }
        blend_row(row, xp + (size_t)h.index * a->w_in, h.weight, a->w_in, i == 0);
    }
    for (uint32_t ow = 0; ow < a->w_out; ow++) {
        float v;
        yr[ow] = column_taps(a, row, tw, ow, &v) ? v : a->extrapolation;
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

static void resize_plane_slots(const kann_resize_args *a, const float *xp, float *yp,
                               const kann_resize_tap *th, const kann_resize_tap *tw) {
    float slots[RESIZE_SLOTS][RESIZE_SLOT_FLOATS];
    int64_t held[RESIZE_SLOTS] = {-1, -1, -1, -1}; /* the input row each slot holds */
    int cols_outside = 0;
    for (uint32_t ow = 0; ow < a->w_out; ow++)
        cols_outside |= !column_inside(a, tw, ow);
    for (uint32_t oh = 0; oh < a->h_out; oh++) {
        float *yr = yp + (size_t)oh * a->w_out;
        int outside = 0;
        for (uint32_t i = 0; i < a->taps_h; i++)
            outside |= !tap_inside(tap_at(th, oh, a->taps_h, i).index, a->h_in);
        if (outside) {
            for (uint32_t ow = 0; ow < a->w_out; ow++)
                yr[ow] = a->extrapolation;
            continue;
        }
        for (uint32_t i = 0; i < a->taps_h; i++) {
            kann_resize_tap h = tap_at(th, oh, a->taps_h, i);
            uint32_t slot = (uint32_t)h.index % RESIZE_SLOTS;
            if (held[slot] != h.index) { /* the row interpolated along the columns */
                const float *xr = xp + (size_t)h.index * a->w_in;
                for (uint32_t ow = 0; ow < a->w_out; ow++)
                    if (!column_taps(a, xr, tw, ow, &slots[slot][ow])) slots[slot][ow] = 0.0f;
                held[slot] = h.index;
            }
            blend_row(yr, slots[slot], h.weight, a->w_out, i == 0);
        }
        if (cols_outside)
            for (uint32_t ow = 0; ow < a->w_out; ow++)
                if (!column_inside(a, tw, ow)) yr[ow] = a->extrapolation;
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
