/* Lowering of the data-movement ops on run-time tensors of any dtype: Slice, Split, Transpose,
 * Concat, Expand, Tile, DepthToSpace, SpaceToDepth (all strided copies), Gather, GatherElements,
 * Pad and Trilu. */
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"
#include "shapes_data.h"

/* Largest tensor the byte-moving kernels take: keeps every stride within KANN_MAX_STRIDE. */
#define DATA_MAX_ELEMENTS ((int64_t)1 << 28)

/* Flat elements per strided-copy tile: big enough that a tile is worth a record. */
#define COPY_GRANULE 256

/* Innermost rows shorter than this walk another dim innermost where one is longer
 * (kc_emit_strided_copy). */
#define SHORT_ROW 8

int kc_need_movable(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v < 0) return 0;
    const kc_value *x = kc_val(g, v);
    size_t es = kc_dtype_size(x->dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8) {
        kc_error_node(d, g, node, "%s '%s' has type %s, which cannot be moved at run time", what,
                      x->name, kc_dtype_name(x->dtype));
        return 1;
    }
    int64_t n = kc_value_numel(x);
    if (n < 0) {
        kc_error_node(d, g, node, "%s '%s' has an unknown shape", what, x->name);
        return 1;
    }
    if (n > DATA_MAX_ELEMENTS) {
        kc_error_node(d, g, node, "%s '%s' is too large (%lld elements, at most 2^28)", what,
                      x->name, (long long)n);
        return 1;
    }
    return 0;
}

static void row_major(const kc_value *v, int64_t *strides) {
    int64_t s = 1;
    for (int i = v->rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= v->dims[i];
    }
}

/* v[i] moved to v[n - 1], those after it one place down. */
static void to_last(int64_t *v, int i, int n) {
    int64_t t = v[i];
    memmove(v + i, v + i + 1, (size_t)(n - 1 - i) * sizeof *v);
    v[n - 1] = t;
}

void kc_emit_strided_copy(kc_graph *g, kc_program *p, int node, int x, int64_t x_base, int y,
                          int64_t y_base, int rank, const int64_t *dims, const int64_t *xs,
                          const int64_t *ys) {
    /* Dims of extent 1 go; neighbours both views walk contiguously merge. */
    int64_t md[2 * KC_MAX_RANK], mx[2 * KC_MAX_RANK], my[2 * KC_MAX_RANK];
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0) return; /* nothing to copy */
        if (dims[i] == 1) continue;
        if (r > 0 && mx[r - 1] == xs[i] * dims[i] && my[r - 1] == ys[i] * dims[i]) {
            md[r - 1] *= dims[i];
            mx[r - 1] = xs[i];
            my[r - 1] = ys[i];
            continue;
        }
        md[r] = dims[i];
        mx[r] = xs[i];
        my[r] = ys[i];
        r++;
    }
    if (r == 0) {
        md[0] = 1;
        mx[0] = my[0] = 0;
        r = 1;
    }
    /* The kernel pays for each row's index arithmetic: a short innermost dim (DepthToSpace's
     * block columns) makes the walk cost more than the copy. A longer dim that one of the views
     * walks contiguously goes innermost instead (the elements copied are the same). */
    if (md[r - 1] < SHORT_ROW) {
        int best = -1;
        for (int i = 0; i < r - 1; i++)
            if ((mx[i] == 1 || my[i] == 1) && md[i] > md[r - 1] && (best < 0 || md[i] > md[best]))
                best = i;
        if (best >= 0) {
            to_last(md, best, r);
            to_last(mx, best, r);
            to_last(my, best, r);
        }
    }
    if (r > KANN_MAX_RANK) { /* one call per index of the outermost dim */
        for (int64_t i = 0; i < md[0]; i++)
            kc_emit_strided_copy(g, p, node, x, x_base + i * mx[0], y, y_base + i * my[0], r - 1,
                                 md + 1, mx + 1, my + 1);
        return;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_STRIDED_COPY, node);
    kann_strided_copy_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(kc_val(g, x)->dtype);
    a->rank = (uint32_t)r;
    a->x_base = x_base;
    a->y_base = y_base;
    int64_t count = 1;
    for (int i = 0; i < r; i++) {
        a->dims[i] = (uint32_t)md[i];
        a->x_strides[i] = mx[i];
        a->y_strides[i] = my[i];
        count *= md[i];
    }
    kc_bind(c, offsetof(kann_strided_copy_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_strided_copy_args, y), y, 0, 1);
    kc_set_tile(c, (uint32_t)count, COPY_GRANULE, 0, 0);
    c->macs = (double)count;
}

/* y (dense, the shape of dims) from x read through strides starting at base. */
static void copy_to_dense(kc_graph *g, kc_program *p, int node, int x, int64_t base,
                          const int64_t *xs, int y) {
    const kc_value *yv = kc_val(g, y);
    int64_t ys[KC_MAX_RANK];
    row_major(yv, ys);
    kc_emit_strided_copy(g, p, node, x, base, y, 0, yv->rank, yv->dims, xs, ys);
}

int kc_lower_slice(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    kc_slice s;
    if (kc_slice_of(g, id, &s, d)) return 1;
    int64_t strides[KC_MAX_RANK], xs[KC_MAX_RANK], base = 0;
    row_major(kc_val(g, x), strides);
    for (int i = 0; i < s.rank; i++) {
        base += s.start[i] * strides[i];
        xs[i] = s.step[i] * strides[i];
    }
    copy_to_dense(g, p, id, x, base, xs, y);
    return 0;
}

int kc_lower_split(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0);
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    int64_t axis, sizes[KC_SHAPE_MAX_OUTPUTS], strides[KC_MAX_RANK], at = 0;
    if (kc_split_of(g, id, &axis, sizes, d)) return 1;
    row_major(kc_val(g, x), strides);
    for (int i = 0; i < n->n_outputs; i++) {
        /* An unread output needs no copy, unless it is a view a dead Concat reads. */
        int v = n->outputs[i];
        if (v >= 0 && (kc_value_uses(g, v) || kc_val(g, v)->alias_of >= 0))
            copy_to_dense(g, p, id, x, at * strides[axis], strides, n->outputs[i]);
        at += sizes[i];
    }
    return 0;
}

int kc_lower_transpose_any(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t perm[KC_MAX_RANK], strides[KC_MAX_RANK], xs[KC_MAX_RANK];
    if (kc_perm_of(g, id, xv->rank, perm, d)) return 1;
    row_major(xv, strides);
    for (int i = 0; i < xv->rank; i++)
        xs[i] = strides[perm[i]];
    copy_to_dense(g, p, id, x, 0, xs, y);
    return 0;
}

int kc_lower_concat_any(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0], errors = kc_need_movable(g, id, y, "output", d);
    for (int i = 0; i < n->n_inputs; i++)
        errors += kc_need_movable(g, id, n->inputs[i], "input", d);
    if (errors) return errors;
    const kc_value *yv = kc_val(g, y);
    int64_t axis;
    if (kc_axis_of(g, id, yv->rank, &axis, d)) return 1;
    int64_t ys[KC_MAX_RANK], at = 0;
    row_major(yv, ys);
    for (int i = 0; i < n->n_inputs; i++) {
        int x = n->inputs[i];
        const kc_value *xv = kc_val(g, x);
        int64_t xs[KC_MAX_RANK];
        row_major(xv, xs);
        kc_emit_strided_copy(g, p, id, x, 0, y, at * ys[axis], xv->rank, xv->dims, xs, ys);
        at += xv->dims[axis];
    }
    return 0;
}

int kc_lower_expand(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d) || kc_need_movable(g, id, y, "output", d)) return 1;
    const kc_value *xv = kc_val(g, x), *yv = kc_val(g, y);
    int64_t strides[KC_MAX_RANK], xs[KC_MAX_RANK];
    row_major(xv, strides);
    for (int i = 0; i < yv->rank; i++) {
        int j = i - (yv->rank - xv->rank);
        xs[i] = j < 0 || xv->dims[j] == 1 ? 0 : strides[j];
    }
    copy_to_dense(g, p, id, x, 0, xs, y);
    return 0;
}

int kc_lower_tile(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d) || kc_need_movable(g, id, y, "output", d)) return 1;
    const kc_value *xv = kc_val(g, x), *yv = kc_val(g, y);
    /* Each dim becomes (repeat, length): the copy reads x with stride 0 across repeats. */
    int64_t xstr[KC_MAX_RANK], ystr[KC_MAX_RANK];
    int64_t dims[2 * KC_MAX_RANK], xs[2 * KC_MAX_RANK], ys[2 * KC_MAX_RANK];
    row_major(xv, xstr);
    row_major(yv, ystr);
    int r = 0;
    for (int i = 0; i < xv->rank; i++) {
        int64_t len = xv->dims[i], reps = len ? yv->dims[i] / len : 0;
        dims[r] = reps;
        xs[r] = 0;
        ys[r++] = len * ystr[i];
        dims[r] = len;
        xs[r] = xstr[i];
        ys[r++] = ystr[i];
    }
    kc_emit_strided_copy(g, p, id, x, 0, y, 0, r, dims, xs, ys);
    return 0;
}

int kc_lower_depth_space(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t b = kc_attr_int(n, "blocksize", 1);
    int64_t N = xv->dims[0], C = xv->dims[1], H = xv->dims[2], W = xv->dims[3];
    int64_t dims[6], xs[6], ys[6];
    if (n->op == KC_OP_DepthToSpace) {
        /* Walk y as [N][C'][H][b][W][b]: row h*b + b1, column w*b + b2. */
        int64_t Cp = C / (b * b), plane = H * W;
        int crd = !strcmp(kc_attr_string(n, "mode", "DCR"), "CRD");
        int64_t d6[6] = {N, Cp, H, b, W, b};
        /* DCR: channel (b1*b + b2)*C' + c; CRD: channel c*b*b + b1*b + b2. */
        int64_t x6[6] = {C * plane, crd ? b * b * plane : plane,
                         W,         crd ? b * plane : b * Cp * plane,
                         1,         crd ? plane : Cp * plane};
        memcpy(dims, d6, sizeof d6);
        memcpy(xs, x6, sizeof x6);
    } else {
        /* Walk y as [N][b][b][C][H'][W']: channel (b1*b + b2)*C + c. */
        int64_t d6[6] = {N, b, b, C, H / b, W / b};
        int64_t x6[6] = {C * H * W, W, 1, H * W, b * W, b};
        memcpy(dims, d6, sizeof d6);
        memcpy(xs, x6, sizeof x6);
    }
    if (xv->dtype == KC_DTYPE_FLOAT) { /* block columns interleaved a vector at a time */
        kc_emit_f32_transpose(g, p, id, x, y, 6, dims, xs);
        return 0;
    }
    int64_t s = 1;
    for (int i = 5; i >= 0; i--) {
        ys[i] = s;
        s *= dims[i];
    }
    kc_emit_strided_copy(g, p, id, x, 0, y, 0, 6, dims, xs, ys);
    return 0;
}

int kc_lower_gather(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), idx = kc_input(n, 1), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "data", d) || kc_need_movable(g, id, idx, "indices", d) ||
        kc_need_movable(g, id, y, "output", d))
        return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t axis;
    if (kc_axis_of(g, id, xv->rank, &axis, d)) return 1;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_GATHER, id);
    kann_gather_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->idx_size = (uint32_t)kc_dtype_size(kc_val(g, idx)->dtype);
    a->outer = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    a->axis_len = (uint32_t)xv->dims[axis];
    a->n_indices = (uint32_t)kc_value_numel(kc_val(g, idx));
    a->inner = (uint32_t)kc_prod(xv->dims, (int)axis + 1, xv->rank);
    kc_bind(c, offsetof(kann_gather_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_gather_args, idx), idx, 0, 0);
    kc_bind(c, offsetof(kann_gather_args, y), y, 0, 1);
    kc_set_tile(c, a->outer * a->n_indices, 1, 0, 0);
    c->macs = (double)a->outer * a->n_indices * a->inner;
    return 0;
}

int kc_lower_gather_elements(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), idx = kc_input(n, 1), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "data", d) || kc_need_movable(g, id, idx, "indices", d) ||
        kc_need_movable(g, id, y, "output", d))
        return 1;
    const kc_value *xv = kc_val(g, x), *iv = kc_val(g, idx);
    if (xv->rank > KANN_MAX_RANK || xv->rank < 1) {
        kc_error_node(d, g, id, "rank %d is not in 1..%d", xv->rank, KANN_MAX_RANK);
        return 1;
    }
    int64_t axis, strides[KC_MAX_RANK];
    if (kc_normalize_axis(kc_attr_int(n, "axis", 0), xv->rank, &axis)) return 1;
    row_major(xv, strides);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_GATHER_ELEMENTS, id);
    kann_gather_elements_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->idx_size = (uint32_t)kc_dtype_size(iv->dtype);
    a->rank = (uint32_t)xv->rank;
    a->axis = (uint32_t)axis;
    a->axis_len = (uint32_t)xv->dims[axis];
    for (int i = 0; i < xv->rank; i++) {
        a->dims[i] = (uint32_t)iv->dims[i];
        a->x_strides[i] = (uint32_t)strides[i];
    }
    uint32_t count = (uint32_t)kc_value_numel(iv);
    kc_bind(c, offsetof(kann_gather_elements_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_gather_elements_args, idx), idx, 0, 0);
    kc_bind(c, offsetof(kann_gather_elements_args, y), y, 0, 1);
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
    return 0;
}

/* The bytes of value v (a double) in dtype, little-endian in the low bytes of *out. */
static int scalar_bytes(int dtype, double v, uint64_t *out) {
    union {
        float f;
        double d;
        int64_t i64;
        uint64_t u64;
        int32_t i32;
        uint32_t u32;
        int16_t i16;
        uint16_t u16;
        int8_t i8;
        uint8_t u8;
    } u = {.u64 = 0};
    switch (dtype) {
    case KC_DTYPE_FLOAT:
        u.f = (float)v;
        break;
    case KC_DTYPE_DOUBLE:
        u.d = v;
        break;
    case KC_DTYPE_INT64:
        u.i64 = (int64_t)v;
        break;
    case KC_DTYPE_UINT64:
        u.u64 = v > 0 ? (uint64_t)v : 0;
        break;
    case KC_DTYPE_INT32:
        u.i32 = (int32_t)v;
        break;
    case KC_DTYPE_UINT32:
        u.u32 = v > 0 ? (uint32_t)v : 0;
        break;
    case KC_DTYPE_INT16:
        u.i16 = (int16_t)v;
        break;
    case KC_DTYPE_UINT16:
        u.u16 = v > 0 ? (uint16_t)v : 0;
        break;
    case KC_DTYPE_INT8:
        u.i8 = (int8_t)v;
        break;
    case KC_DTYPE_UINT8:
        u.u8 = v > 0 ? (uint8_t)v : 0;
        break;
    case KC_DTYPE_BOOL:
        u.u8 = v != 0;
        break;
    default:
        return 1;
    }
    *out = u.u64;
    return 0;
}

int kc_lower_pad(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d) || kc_need_movable(g, id, y, "output", d)) return 1;
    const kc_value *xv = kc_val(g, x), *yv = kc_val(g, y);
    if (xv->rank < 1 || xv->rank > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d is not in 1..%d", xv->rank, KANN_MAX_RANK);
        return 1;
    }
    static const char *const modes[KANN_PAD_COUNT] = {"constant", "reflect", "edge", "wrap"};
    const char *mode = kc_attr_string(n, "mode", "constant");
    int m = -1;
    for (int i = 0; i < KANN_PAD_COUNT; i++)
        if (!strcmp(mode, modes[i])) m = i;
    if (m < 0) {
        kc_error_node(d, g, id, "unknown mode '%s'", mode);
        return 1;
    }
    int64_t begin[KC_MAX_RANK], end[KC_MAX_RANK];
    if (kc_pad_of(g, id, begin, end, d)) return 1;
    uint64_t value = 0;
    int cv = kc_node_opset(g, id) >= 11 ? kc_input(n, 2) : -1;
    if (cv >= 0 && kc_value_numel(kc_val(g, cv)) > 0) {
        const kc_value *v = kc_val(g, cv);
        if (!kc_is_const(g, cv) || v->dtype != xv->dtype || kc_value_numel(v) != 1) {
            kc_error_node(d, g, id,
                          "constant_value '%s' must be a constant scalar of the input's type "
                          "(computed at run time is not supported)",
                          v->name);
            return 1;
        }
        memcpy(&value, v->data, kc_dtype_size(v->dtype));
    } else if (scalar_bytes(xv->dtype, kc_attr_float(n, "value", 0.0f), &value)) {
        kc_error_node(d, g, id, "cannot pad %s tensors", kc_dtype_name(xv->dtype));
        return 1;
    }
    for (int i = 0; i < xv->rank; i++) {
        if (m != KANN_PAD_CONSTANT && xv->dims[i] == 0 && yv->dims[i] > 0) {
            kc_error_node(d, g, id, "cannot %s-pad the empty axis %d", mode, i);
            return 1;
        }
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_PAD, id);
    kann_pad_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->rank = (uint32_t)xv->rank;
    a->mode = (uint32_t)m;
    a->value = value;
    for (int i = 0; i < xv->rank; i++) {
        a->dims[i] = (uint32_t)yv->dims[i];
        a->x_dims[i] = (uint32_t)xv->dims[i];
        a->pad_begin[i] = begin[i];
    }
    uint32_t rows = (uint32_t)kc_prod(yv->dims, 0, yv->rank - 1);
    kc_bind(c, offsetof(kann_pad_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_pad_args, y), y, 0, 1);
    kc_set_tile(c, rows, 1, 0, 0);
    c->macs = (double)kc_value_numel(yv);
    return 0;
}

int kc_lower_trilu(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), k = kc_input(n, 1), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    if (kc_value_numel(xv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_TRILU, id);
    kann_trilu_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->upper = kc_attr_int(n, "upper", 1) != 0;
    a->batch = (uint32_t)kc_prod(xv->dims, 0, xv->rank - 2);
    a->rows = (uint32_t)xv->dims[xv->rank - 2];
    a->cols = (uint32_t)xv->dims[xv->rank - 1];
    if (k >= 0 && kc_is_const(g, k))
        a->k = *(const int64_t *)kc_val(g, k)->data;
    else if (k >= 0)
        kc_bind(c, offsetof(kann_trilu_args, k_ref), k, 0, 0);
    kc_bind(c, offsetof(kann_trilu_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_trilu_args, y), y, 0, 1);
    kc_set_tile(c, a->batch * a->rows, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}

/* ---- ScatterElements, Scatter, ScatterND, GatherND ---- */

static int reduction_of(kc_graph *g, int id, const kc_value *xv, uint32_t *out, kc_diag *d) {
    static const char *const names[KANN_SCATTER_COUNT] = {"none", "add", "mul", "max", "min"};
    const char *r = kc_attr_string(&g->nodes[id], "reduction", "none");
    for (uint32_t i = 0; i < KANN_SCATTER_COUNT; i++) {
        if (strcmp(r, names[i])) continue;
        if (i != KANN_SCATTER_NONE && xv->dtype != KC_DTYPE_FLOAT) {
            kc_error_node(d, g, id, "reduction '%s' is supported on float32 only, not %s", r,
                          kc_dtype_name(xv->dtype));
            return 1;
        }
        *out = i;
        return 0;
    }
    kc_error_node(d, g, id, "unknown reduction '%s'", r);
    return 1;
}

/* y = a copy of the data, which the scatter call then updates. */
static void copy_data(kc_graph *g, kc_program *p, int id, int x, int y) {
    const kc_value *xv = kc_val(g, x);
    int64_t count = kc_value_numel(xv), one = 1;
    kc_emit_strided_copy(g, p, id, x, 0, y, 0, 1, &count, &one, &one);
}

int kc_lower_scatter_elements(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), idx = kc_input(n, 1), upd = kc_input(n, 2), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "data", d) || kc_need_movable(g, id, idx, "indices", d) ||
        kc_need_movable(g, id, upd, "updates", d))
        return 1;
    const kc_value *xv = kc_val(g, x), *iv = kc_val(g, idx);
    uint32_t reduction;
    int64_t axis, strides[KC_MAX_RANK];
    if (reduction_of(g, id, xv, &reduction, d)) return 1;
    if (xv->rank < 1 || xv->rank > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d is not in 1..%d", xv->rank, KANN_MAX_RANK);
        return 1;
    }
    if (kc_normalize_axis(kc_attr_int(n, "axis", 0), xv->rank, &axis)) return 1;
    row_major(xv, strides);
    copy_data(g, p, id, x, y);
    if (kc_value_numel(iv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_SCATTER_ELEMENTS, id);
    kann_scatter_elements_args *a = c->args;
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->idx_size = (uint32_t)kc_dtype_size(iv->dtype);
    a->rank = (uint32_t)xv->rank;
    a->axis = (uint32_t)axis;
    a->axis_len = (uint32_t)xv->dims[axis];
    a->reduction = reduction;
    for (int i = 0; i < xv->rank; i++) {
        a->dims[i] = (uint32_t)iv->dims[i];
        a->y_strides[i] = (uint32_t)strides[i];
    }
    kc_bind(c, offsetof(kann_scatter_elements_args, idx), idx, 0, 0);
    kc_bind(c, offsetof(kann_scatter_elements_args, updates), upd, 0, 0);
    kc_bind(c, offsetof(kann_scatter_elements_args, y), y, 0, 1);
    kc_set_tile(c, 1, 1, 0, 0); /* updates apply in order: one tile */
    c->macs = (double)kc_value_numel(iv);
    return 0;
}

/* Fills the tuple geometry of an nd_index call for data dims [batch dims b][k][slice...]. */
static void nd_geometry(kann_nd_index_args *a, const kc_value *xv, const kc_value *iv, int b) {
    int k = (int)iv->dims[iv->rank - 1];
    a->idx_size = (uint32_t)kc_dtype_size(iv->dtype);
    a->elem_size = (uint32_t)kc_dtype_size(xv->dtype);
    a->k = (uint32_t)k;
    a->n_tuples = (uint32_t)(kc_value_numel(iv) / k);
    a->slice_len = (uint32_t)kc_prod(xv->dims, b + k, xv->rank);
    a->batches = (uint32_t)kc_prod(xv->dims, 0, b);
    a->batch_stride = (uint32_t)kc_prod(xv->dims, b, xv->rank);
    for (int j = 0; j < k; j++) {
        a->dims[j] = (uint32_t)xv->dims[b + j];
        a->strides[j] = (uint32_t)kc_prod(xv->dims, b + j + 1, xv->rank);
    }
}

int kc_lower_scatter_nd(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), idx = kc_input(n, 1), upd = kc_input(n, 2), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "data", d) || kc_need_movable(g, id, idx, "indices", d) ||
        kc_need_movable(g, id, upd, "updates", d))
        return 1;
    const kc_value *xv = kc_val(g, x), *iv = kc_val(g, idx);
    uint32_t reduction;
    if (reduction_of(g, id, xv, &reduction, d)) return 1;
    if (iv->dims[iv->rank - 1] > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "index tuples longer than %d", KANN_MAX_RANK);
        return 1;
    }
    copy_data(g, p, id, x, y);
    if (kc_value_numel(iv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_SCATTER_ND, id);
    kann_scatter_nd_args *a = c->args;
    nd_geometry(a, xv, iv, 0);
    a->reduction = reduction;
    kc_bind(c, offsetof(kann_scatter_nd_args, src), upd, 0, 0);
    kc_bind(c, offsetof(kann_scatter_nd_args, idx), idx, 0, 0);
    kc_bind(c, offsetof(kann_scatter_nd_args, dst), y, 0, 1);
    kc_set_tile(c, 1, 1, 0, 0); /* updates apply in order: one tile */
    c->macs = (double)a->n_tuples * a->slice_len;
    return 0;
}

int kc_lower_gather_nd(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), idx = kc_input(n, 1), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "data", d) || kc_need_movable(g, id, idx, "indices", d) ||
        kc_need_movable(g, id, y, "output", d))
        return 1;
    const kc_value *xv = kc_val(g, x), *iv = kc_val(g, idx);
    if (iv->dims[iv->rank - 1] > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "index tuples longer than %d", KANN_MAX_RANK);
        return 1;
    }
    if (kc_value_numel(iv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_GATHER_ND, id);
    kann_gather_nd_args *a = c->args;
    nd_geometry(a, xv, iv, (int)kc_attr_int(n, "batch_dims", 0));
    kc_bind(c, offsetof(kann_gather_nd_args, src), x, 0, 0);
    kc_bind(c, offsetof(kann_gather_nd_args, idx), idx, 0, 0);
    kc_bind(c, offsetof(kann_gather_nd_args, dst), y, 0, 1);
    kc_set_tile(c, a->n_tuples, 1, 0, 0);
    c->macs = (double)a->n_tuples * a->slice_len;
    return 0;
}
