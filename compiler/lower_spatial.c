/* Lowering of the spatial ops: ConvTranspose (1 to 3 spatial dims), Resize and Upsample (tap
 * tables built here, with ONNX Runtime's coordinate and rounding rules), GlobalMaxPool. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"
#include "shapes_data.h"

int kc_lower_conv_transpose(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d) || kc_need_f32(g, id, w, "weight", d) ||
        kc_need_f32(g, id, b, "bias", d))
        return 1;
    kc_conv_transpose ct;
    if (kc_conv_transpose_of(g, id, &ct, d)) return 1;
    if (kc_lower_conv_transpose_phases(g, p, id, &ct)) return 0;
    const kc_value *xv = kc_val(g, x);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV_TRANSPOSE, id);
    kann_conv_transpose_args *a = c->args;
    a->n = (uint32_t)xv->dims[0];
    a->c_in = (uint32_t)xv->dims[1];
    a->c_out = (uint32_t)ct.c_out;
    a->group = (uint32_t)ct.group;
    /* Fewer than 3 spatial dims: the leading ones have length 1. */
    int lead = 3 - ct.n_spatial;
    for (int i = 0; i < 3; i++) {
        int s = i - lead;
        a->in[i] = s < 0 ? 1 : (uint32_t)ct.in[s];
        a->out[i] = s < 0 ? 1 : (uint32_t)ct.out[s];
        a->k[i] = s < 0 ? 1 : (uint32_t)ct.kernel[s];
        a->stride[i] = s < 0 ? 1 : (uint32_t)ct.stride[s];
        a->dil[i] = s < 0 ? 1 : (uint32_t)ct.dilation[s];
        a->pad[i] = s < 0 ? 0 : (uint32_t)ct.pad_begin[s];
    }
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_conv_transpose_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_conv_transpose_args, w), w, 0, 0);
    kc_bind(c, offsetof(kann_conv_transpose_args, bias), b, 0, 0);
    kc_bind(c, offsetof(kann_conv_transpose_args, y), y, 0, 1);
    kc_set_tile(c, a->n * a->c_out, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv) * (double)ct.c_out / (double)ct.group * (double)a->k[0] *
              a->k[1] * a->k[2];
    return 0;
}

int kc_lower_global_maxpool(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    /* A max pool whose one window is the whole (flattened) spatial extent. */
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_POOL2D, id);
    kann_pool2d_args *a = c->args;
    a->kind = KANN_POOL_MAX;
    a->planes = (uint32_t)(xv->dims[0] * xv->dims[1]);
    a->h_in = a->h_out = a->w_out = a->k_h = 1;
    a->w_in = a->k_w = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    a->stride_h = a->stride_w = a->dil_h = a->dil_w = 1;
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_pool2d_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_pool2d_args, y), y, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}

/* ---- Resize ---- */

/* Where output coordinate x_out falls in the input, as ONNX Runtime computes it (in float). */
static float original_coord(const kc_resize *rs, int axis, float x_out, float in_len,
                            float out_len) {
    float scale = rs->scale[axis];
    switch (rs->ctm) {
    case KC_RESIZE_ASYMMETRIC:
        return x_out / scale;
    case KC_RESIZE_PYTORCH_HALF_PIXEL:
        return out_len > 1 ? (x_out + 0.5f) / scale - 0.5f : 0.0f;
    case KC_RESIZE_TF_HALF_PIXEL_FOR_NN:
        return (x_out + 0.5f) / scale;
    case KC_RESIZE_ALIGN_CORNERS:
        return out_len == 1 ? 0.0f : x_out * (in_len - 1) / (out_len - 1);
    case KC_RESIZE_TF_CROP_AND_RESIZE: {
        float lo = rs->roi_start[axis], hi = rs->roi_end[axis];
        return out_len > 1 ? lo * (in_len - 1) + (x_out * (hi - lo) * (in_len - 1)) / (out_len - 1)
                           : 0.5f * (lo + hi) * (in_len - 1);
    }
    case KC_RESIZE_HALF_PIXEL_SYMMETRIC: {
        float adjustment = out_len / (scale * in_len), center = in_len / 2;
        return center * (1 - adjustment) + (x_out + 0.5f) / scale - 0.5f;
    }
    default: /* half_pixel */
        return (x_out + 0.5f) / scale - 0.5f;
    }
}

static int64_t nearest_index(const kc_resize *rs, int axis, float v) {
    if (rs->legacy) /* Resize-10 and Upsample: truncate up-sampling, round up down-sampling */
        return rs->scale[axis] < 1 ? (int64_t)ceilf(v) : (int64_t)v;
    switch (rs->nearest_mode) {
    case KC_RESIZE_ROUND_PREFER_CEIL:
        return (int64_t)roundf(v);
    case KC_RESIZE_FLOOR:
        return (int64_t)floorf(v);
    case KC_RESIZE_CEIL:
        return (int64_t)ceilf(v);
    default:
        return v == floorf(v) + 0.5f ? (int64_t)floorf(v) : (int64_t)roundf(v);
    }
}

static int64_t clamp_index(int64_t i, int64_t len) {
    return i < 0 ? 0 : i >= len ? len - 1 : i;
}

/* The tap table of one axis: out_len rows of *taps (index, weight); an index of -1 marks an
 * output outside the input (tf_crop_and_resize extrapolation). Returns the constant's value. */
static int axis_table(kc_graph *g, const kc_resize *rs, int axis, int64_t in_len, int64_t out_len,
                      uint32_t *taps) {
    int t = rs->mode == KC_RESIZE_NEAREST ? 1 : rs->mode == KC_RESIZE_LINEAR ? 2 : 4;
    kann_resize_tap *tab = calloc((size_t)(out_len * t), sizeof *tab);
    if (!tab) abort();
    int crop = rs->ctm == KC_RESIZE_TF_CROP_AND_RESIZE;
    for (int64_t o = 0; o < out_len; o++) {
        kann_resize_tap *row = tab + o * t;
        float v = original_coord(rs, axis, (float)o, (float)in_len, (float)out_len);
        if (crop && (v < 0 || v > (float)(in_len - 1))) {
            for (int i = 0; i < t; i++)
                row[i] = (kann_resize_tap){-1, 0.0f};
            continue;
        }
        if (rs->mode == KC_RESIZE_NEAREST) {
            row[0] =
                (kann_resize_tap){(int32_t)clamp_index(nearest_index(rs, axis, v), in_len), 1.0f};
        } else if (rs->mode == KC_RESIZE_LINEAR) {
            v = v < 0 ? 0 : v > (float)(in_len - 1) ? (float)(in_len - 1) : v;
            int64_t x1 = clamp_index((int64_t)v, in_len), x2 = clamp_index(x1 + 1, in_len);
            float d1 = fabsf(v - (float)x1), d2 = fabsf(v - (float)x2);
            if (x1 == x2) d1 = d2 = 0.5f;
            row[0] = (kann_resize_tap){(int32_t)x1, d2};
            row[1] = (kann_resize_tap){(int32_t)x2, d1};
        } else {
            float a = rs->cubic_a, s = v - floorf(v), c[4];
            c[0] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
            c[1] = ((a + 2) * s - (a + 3)) * s * s + 1;
            c[2] = ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1;
            c[3] = ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a;
            int64_t base = (int64_t)floorf(v) - 1;
            float sum = 0;
            for (int i = 0; i < 4; i++) {
                int64_t at = base + i;
                if (rs->exclude_outside && (at < 0 || at >= in_len)) c[i] = 0;
                sum += c[i];
            }
            for (int i = 0; i < 4; i++)
                row[i] = (kann_resize_tap){(int32_t)clamp_index(base + i, in_len),
                                           rs->exclude_outside && sum != 0 ? c[i] / sum : c[i]};
        }
    }
    int64_t dims[3] = {out_len, t, 2};
    int v = kc_new_const_f32(g, "resize_taps", 3, dims, (const float *)(const void *)tab);
    free(tab);
    *taps = (uint32_t)t;
    return v;
}

int kc_lower_resize(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    kc_resize rs;
    if (kc_resize_of(g, id, &rs, d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int r = xv->rank;
    if (r < 1) {
        kc_error_node(d, g, id, "cannot resize a scalar");
        return 1;
    }
    /* The last two dims are interpolated; every other dim must stay as it is. */
    for (int i = 0; i < r - 2; i++) {
        if (rs.out[i] != xv->dims[i] || rs.scale[i] != 1.0f ||
            (rs.ctm == KC_RESIZE_TF_CROP_AND_RESIZE &&
             (rs.roi_start[i] != 0.0f || rs.roi_end[i] != 1.0f))) {
            kc_error_node(d, g, id, "only the last two dims can be resized (dim %d has scale %g)",
                          i, (double)rs.scale[i]);
            return 1;
        }
    }
    int64_t h_in = r >= 2 ? xv->dims[r - 2] : 1, h_out = r >= 2 ? rs.out[r - 2] : 1;
    int64_t w_in = xv->dims[r - 1], w_out = rs.out[r - 1];
    if (h_in < 1 || w_in < 1 || h_out * w_out > INT32_MAX) {
        kc_error_node(d, g, id, "cannot resize an empty or huge input");
        return 1;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_RESIZE, id);
    kann_resize_args *a = c->args;
    a->planes = (uint32_t)kc_prod(xv->dims, 0, r >= 2 ? r - 2 : 0);
    int th, tw; /* adding the tables may move the values: xv is not used after */
    if (r >= 2) {
        th = axis_table(g, &rs, r - 2, h_in, h_out, &a->taps_h);
    } else {
        kc_resize one = rs;
        one.mode = KC_RESIZE_NEAREST;
        one.ctm = KC_RESIZE_ASYMMETRIC;
        one.scale[0] = 1.0f;
        th = axis_table(g, &one, 0, 1, 1, &a->taps_h);
    }
    tw = axis_table(g, &rs, r - 1, w_in, w_out, &a->taps_w);
    a->h_in = (uint32_t)h_in;
    a->w_in = (uint32_t)w_in;
    a->h_out = (uint32_t)h_out;
    a->w_out = (uint32_t)w_out;
    a->extrapolation = rs.extrapolation;
    kc_bind(c, offsetof(kann_resize_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_resize_args, table_h), th, 0, 0);
    kc_bind(c, offsetof(kann_resize_args, table_w), tw, 0, 0);
    kc_bind(c, offsetof(kann_resize_args, y), y, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * (double)(h_out * w_out) * a->taps_h * a->taps_w;
    return 0;
}

/* ---- 3-D convolution and pooling, MaxPool's Indices ---- */

/* Whether a MaxPool/AveragePool needs pool_nd: three spatial dims, or MaxPool's Indices read. */
int kc_pool_wants_nd(const kc_graph *g, int id) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0);
    if (x >= 0 && kc_val(g, x)->rank == 5) return 1;
    return n->n_outputs > 1 && n->outputs[1] >= 0 && kc_value_uses(g, n->outputs[1]) > 0;
}

/* Spatial dims of a window, right-aligned into 3 (leading ones of length 1). */
static void window_3(const kc_window *w, uint32_t *in, uint32_t *out, uint32_t *k, uint32_t *stride,
                     uint32_t *dil, uint32_t *pad_begin, uint32_t *pad_end) {
    int lead = 3 - w->n_spatial;
    for (int i = 0; i < 3; i++) {
        int s = i - lead;
        in[i] = s < 0 ? 1 : (uint32_t)w->in[s];
        out[i] = s < 0 ? 1 : (uint32_t)w->out[s];
        k[i] = s < 0 ? 1 : (uint32_t)w->kernel[s];
        stride[i] = s < 0 ? 1 : (uint32_t)w->stride[s];
        dil[i] = s < 0 ? 1 : (uint32_t)w->dilation[s];
        pad_begin[i] = s < 0 ? 0 : (uint32_t)w->pad_begin[s];
        if (pad_end) pad_end[i] = s < 0 ? 0 : (uint32_t)w->pad_end[s];
    }
}

/* A 3-D max or average pool as two 2-D ones on the vector pool2d kernel: the window's rows and
 * columns over every depth slice, then its depth over those pooled planes (a k_d x 1 window
 * over planes of depth rows by h_out * w_out columns). The window clipped to the input, or to
 * the padded input, is a box, so an average's divisor is the product of the two passes'. */
static int lower_pool3d(kc_graph *g, kc_program *p, int id, const kc_window *win) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    const kc_value *xv = kc_val(g, x);
    if (win->n_spatial != 3 || xv->rank != 5) return 0;
    int64_t planes = xv->dims[0] * xv->dims[1], D = win->in[0], hw = win->out[1] * win->out[2];
    if (planes * D > UINT32_MAX || hw > UINT32_MAX) return 0;
    int t = kc_add_value(g, kc_unique_name(g, kc_sprintf(g, "%s.rows_pooled", kc_val(g, y)->name)));
    kc_value *tv = &g->values[t];
    tv->dtype = KC_DTYPE_FLOAT;
    tv->rank = 3;
    tv->dims[0] = planes * D;
    tv->dims[1] = win->out[1];
    tv->dims[2] = win->out[2];
    kc_pool2d_call(g, p, id, win, 1, 2, (uint32_t)(planes * D), (uint32_t)win->in[1],
                   (uint32_t)win->in[2], (uint32_t)win->out[1], (uint32_t)win->out[2], x, t);
    kc_call *c = kc_pool2d_call(g, p, id, win, 0, -1, (uint32_t)planes, (uint32_t)D, (uint32_t)hw,
                                (uint32_t)win->out[0], (uint32_t)hw, t, y);
    ((kann_pool2d_args *)c->args)->act = kc_node_act(n);
    return 1;
}

int kc_lower_pool_nd(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    int ind = n->n_outputs > 1 && n->outputs[1] >= 0 && kc_value_uses(g, n->outputs[1])
                  ? n->outputs[1]
                  : -1;
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    if (ind < 0 && lower_pool3d(g, p, id, &win)) return 0;
    const kc_value *xv = kc_val(g, x);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_POOL_ND, id);
    kann_pool_nd_args *a = c->args;
    a->kind = n->op == KC_OP_MaxPool ? KANN_POOL_MAX : KANN_POOL_AVG;
    a->count_include_pad = (uint32_t)kc_attr_int(n, "count_include_pad", 0);
    a->storage_order = (uint32_t)kc_attr_int(n, "storage_order", 0);
    a->planes = (uint32_t)(xv->dims[0] * xv->dims[1]);
    window_3(&win, a->in, a->out, a->k, a->stride, a->dil, a->pad_begin, a->pad_end);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_pool_nd_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_pool_nd_args, y), y, 0, 1);
    kc_bind(c, offsetof(kann_pool_nd_args, indices), ind, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)kc_value_numel(kc_val(g, y)) * a->k[0] * a->k[1] * a->k[2];
    return 0;
}

/* The direct conv_nd call of Conv node id over window win, act fused. */
static void conv_nd_call(kc_graph *g, kc_program *p, int id, const kc_window *win, kann_act act) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    const kc_value *xv = kc_val(g, x), *wv = kc_val(g, w);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV_ND, id);
    kann_conv_nd_args *a = c->args;
    a->n = (uint32_t)xv->dims[0];
    a->c_in = (uint32_t)xv->dims[1];
    a->c_out = (uint32_t)wv->dims[0];
    a->group = (uint32_t)kc_attr_int(n, "group", 1);
    window_3(win, a->in, a->out, a->k, a->stride, a->dil, a->pad, NULL);
    a->act = act;
    kc_bind(c, offsetof(kann_conv_nd_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_conv_nd_args, w), w, 0, 0);
    kc_bind(c, offsetof(kann_conv_nd_args, bias), b, 0, 0);
    kc_bind(c, offsetof(kann_conv_nd_args, y), y, 0, 1);
    kc_set_tile(c, a->n * a->c_out, 1, 0, 0);
    c->macs = (double)kc_value_numel(kc_val(g, y)) * (double)(a->c_in / a->group) * a->k[0] *
              a->k[1] * a->k[2];
}

int kc_lower_conv_nd(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d) || kc_need_f32(g, id, w, "weight", d) ||
        kc_need_f32(g, id, b, "bias", d))
        return 1;
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    int residual = n->epi.residual;
    kann_act act = residual < 0 ? kc_node_act(n) : (kann_act){0};
    if (!kc_lower_conv3d(g, p, id, &win, act)) conv_nd_call(g, p, id, &win, act);
    if (residual >= 0) { /* a fused residual Add: y = act(y + residual), in place */
        kc_call *r = kc_new_call(g, p, KANN_KERNEL_F32_BINARY, id);
        kann_binary_args *ba = r->args;
        uint32_t count = (uint32_t)kc_value_numel(kc_val(g, y));
        ba->op = KANN_BINARY_ADD;
        ba->rank = 1;
        ba->dims[0] = count;
        ba->a_strides[0] = ba->b_strides[0] = 1;
        ba->act = kc_node_act(n);
        kc_bind(r, offsetof(kann_binary_args, a), y, 0, 0);
        kc_bind(r, offsetof(kann_binary_args, b), residual, 0, 0);
        kc_bind(r, offsetof(kann_binary_args, y), y, 0, 1);
        kc_set_tile(r, count, 64, 0, 0);
        r->macs = count;
    }
    return 0;
}
