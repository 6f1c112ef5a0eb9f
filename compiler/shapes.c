/* Shape inference: one function per op of ops.def, each following the ONNX semantics of the op
 * at the node's opset, plus the window/broadcast/axis/slice geometry the lowering shares. */
#include "shapes.h"

#include <string.h>

/* Where an op's definition gives no opset (hand-built graphs), read it as the newest one. */
#define KC_NEWEST_OPSET 22

int kc_node_opset(const kc_graph *g, int node) {
    const kc_node *n = &g->nodes[node];
    if (n->opset > 0) return n->opset;
    int v = kc_opset_of(g, n->domain);
    return v > 0 ? v : KC_NEWEST_OPSET;
}

/* ---- small helpers ---- */

const kc_value *kc_shape_input(const kc_graph *g, int node, int i) {
    const kc_node *n = &g->nodes[node];
    if (i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &g->values[n->inputs[i]];
}

const kc_value *kc_shape_need(const kc_graph *g, int node, int i, kc_diag *d) {
    const kc_value *v = kc_shape_input(g, node, i);
    if (!v) kc_error_node(d, g, node, "input %d is required", i);
    return v;
}

void kc_shape_like(kc_shape *o, const kc_value *v) {
    o->dtype = v->dtype;
    o->rank = v->rank;
    for (int i = 0; i < v->rank; i++)
        o->dims[i] = v->dims[i];
}

static void set_dims(kc_shape *o, int dtype, int rank, const int64_t *dims) {
    o->dtype = dtype;
    o->rank = rank;
    for (int i = 0; i < rank; i++)
        o->dims[i] = dims[i];
}

/* Dims as "[1,3,224,224]" for messages. */
static const char *fmt_dims(char *buf, size_t size, int rank, const int64_t *dims) {
    size_t at = 0;
    at += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

static int is_int_dtype(int dtype) {
    return dtype == KC_DTYPE_INT64 || dtype == KC_DTYPE_INT32;
}

static int64_t product(const int64_t *dims, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p = kc_dim_mul(p, dims[i]);
    return p;
}

int kc_normalize_axis(int64_t axis, int rank, int64_t *out) {
    if (axis < -(int64_t)rank || axis >= rank) return -1;
    *out = axis < 0 ? axis + rank : axis;
    return 0;
}

int kc_const_ints(const kc_graph *g, int v, int64_t *out, int max) {
    if (v < 0 || v >= g->n_values) return -1;
    const kc_value *val = &g->values[v];
    if (!(val->flags & KC_VALUE_CONST) || !is_int_dtype(val->dtype)) return -1;
    int64_t n = kc_value_numel(val);
    if (n < 0) return -1;
    if (n > max) return -2;
    for (int64_t i = 0; i < n; i++)
        out[i] = val->dtype == KC_DTYPE_INT64 ? ((const int64_t *)val->data)[i]
                                              : ((const int32_t *)val->data)[i];
    return (int)n;
}

/* An integer list an op's shape depends on: attribute attr before opset since, then input idx
 * (which must be constant). Returns the count, -1 if absent and optional, -2 after an error. */
static int shape_ints(const kc_graph *g, int node, const char *attr, int idx, int since,
                      int required, int64_t *out, int max, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    int opset = kc_node_opset(g, node);
    const kc_attr *a = kc_attr_find(n, attr);
    int has_input = idx < n->n_inputs && n->inputs[idx] >= 0;
    if (opset < since) {
        if (has_input) {
            kc_error_node(d, g, node, "before opset %d, '%s' is an attribute, not input %d", since,
                          attr, idx);
            return -2;
        }
        if (!a) {
            if (!required) return -1;
            kc_error_node(d, g, node, "attribute '%s' is required", attr);
            return -2;
        }
        int c = kc_attr_ints(n, attr, out, max);
        if (c < 0) {
            kc_error_node(d, g, node, "attribute '%s' must be a list of ints", attr);
            return -2;
        }
        if (c > max) {
            kc_error_node(d, g, node, "attribute '%s' has %d values, more than %d", attr, c, max);
            return -2;
        }
        return c;
    }
    if (a) {
        kc_error_node(d, g, node, "since opset %d, '%s' is input %d, not an attribute", since, attr,
                      idx);
        return -2;
    }
    if (!has_input) {
        if (!required) return -1;
        kc_error_node(d, g, node, "input %d ('%s') is required", idx, attr);
        return -2;
    }
    int v = n->inputs[idx];
    const kc_value *val = &g->values[v];
    if (!(val->flags & KC_VALUE_CONST)) {
        kc_error_node(d, g, node, "shape input '%s'%s%s%s must be constant", val->name,
                      strcmp(val->name, attr) ? " (" : "", strcmp(val->name, attr) ? attr : "",
                      strcmp(val->name, attr) ? ")" : "");
        return -2;
    }
    int c = kc_const_ints(g, v, out, max);
    if (c == -1) {
        kc_error_node(d, g, node, "shape input '%s' (%s) must be int64 or int32, not %s", val->name,
                      attr, kc_dtype_name(val->dtype));
        return -2;
    }
    if (c == -2) {
        kc_error_node(d, g, node, "shape input '%s' (%s) has more than %d values", val->name, attr,
                      max);
        return -2;
    }
    return c;
}

/* Reads an ints attribute of exactly count values, or fills dflt when absent. */
static int ints_or(const kc_graph *g, int node, const char *name, int count, int64_t dflt,
                   int64_t *out, kc_diag *d) {
    int64_t tmp[2 * KC_MAX_RANK];
    int c = kc_attr_ints(&g->nodes[node], name, tmp, 2 * KC_MAX_RANK);
    if (c < 0) {
        for (int i = 0; i < count; i++)
            out[i] = dflt;
        return 0;
    }
    if (c != count) {
        kc_error_node(d, g, node, "attribute '%s' has %d values, expected %d", name, c, count);
        return 1;
    }
    for (int i = 0; i < count; i++)
        out[i] = tmp[i];
    return 0;
}

int kc_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rank,
                       int64_t *out) {
    int r = ra > rb ? ra : rb;
    if (r > KC_MAX_RANK) return -1;
    int64_t res[KC_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
        if (x == y || y == 1)
            res[i] = x;
        else if (x == 1)
            res[i] = y;
        else if (x < 0)
            res[i] = y;
        else if (y < 0)
            res[i] = x;
        else
            return -1;
    }
    *rank = r;
    for (int i = 0; i < r; i++)
        out[i] = res[i];
    return 0;
}

int kc_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    int opset = kc_node_opset(g, node);
    int64_t dflt;
    switch (n->op) {
    case KC_OP_Concat:
        /* Concat-1 defaulted the axis to 1; from opset 4 it is required. */
        if (!kc_attr_find(n, "axis") && opset >= 4) {
            kc_error_node(d, g, node, "attribute 'axis' is required");
            return 1;
        }
        dflt = 1;
        break;
    case KC_OP_Softmax:
    case KC_OP_LogSoftmax:
        dflt = opset >= 13 ? -1 : 1;
        break;
    case KC_OP_Flatten:
        dflt = 1;
        break;
    default:
        dflt = 0;
        break;
    }
    int64_t a = kc_attr_int(n, "axis", dflt);
    if (n->op == KC_OP_Flatten) {
        /* Flatten's axis may equal rank (everything in the first dim). */
        if (a < 0) a += rank;
        if (a < 0 || a > rank) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d",
                          (long long)kc_attr_int(n, "axis", dflt), rank);
            return 1;
        }
        *axis = a;
        return 0;
    }
    if (kc_normalize_axis(a, rank, axis)) {
        kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)a, rank);
        return 1;
    }
    return 0;
}

int kc_perm_of(const kc_graph *g, int node, int rank, int64_t *perm, kc_diag *d) {
    int c = kc_attr_ints(&g->nodes[node], "perm", perm, KC_MAX_RANK);
    if (c < 0) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return 0;
    }
    if (c != rank) {
        kc_error_node(d, g, node, "perm has %d values for rank %d", c, rank);
        return 1;
    }
    int seen[KC_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
        if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]++) {
            char buf[128];
            kc_error_node(d, g, node, "perm %s is not a permutation of 0..%d",
                          fmt_dims(buf, sizeof buf, rank, perm), rank - 1);
            return 1;
        }
    }
    return 0;
}

void kc_shape_range(const kc_graph *g, int node, int rank, int64_t *start, int64_t *end) {
    const kc_node *n = &g->nodes[node];
    int64_t s = kc_attr_int(n, "start", 0), e = kc_attr_int(n, "end", rank);
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = s;
    *end = e < s ? s : e;
}

/* ---- windows ---- */

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

int kc_window_of(const kc_graph *g, int node, kc_window *w, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    memset(w, 0, sizeof *w);
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 3 || x->rank > 5) {
        kc_error_node(d, g, node, "input must have rank 3 to 5 (N, C, 1 to 3 spatial dims), not %d",
                      x->rank);
        return 1;
    }
    int ns = x->rank - 2;
    w->n_spatial = ns;
    int64_t k[KC_MAX_RANK];
    int nk = kc_attr_ints(n, "kernel_shape", k, KC_MAX_RANK);
    if (n->op == KC_OP_Conv) {
        const kc_value *wt = kc_shape_need(g, node, 1, d);
        if (!wt) return 1;
        if (wt->rank != x->rank) {
            kc_error_node(d, g, node, "weight rank %d differs from input rank %d", wt->rank,
                          x->rank);
            return 1;
        }
        if (nk >= 0 && (nk != ns || memcmp(k, wt->dims + 2, sizeof(int64_t) * (size_t)ns))) {
            char b1[128], b2[128];
            kc_error_node(d, g, node, "kernel_shape %s does not match the weight's %s",
                          fmt_dims(b1, sizeof b1, nk < KC_MAX_RANK ? nk : KC_MAX_RANK, k),
                          fmt_dims(b2, sizeof b2, ns, wt->dims + 2));
            return 1;
        }
        for (int i = 0; i < ns; i++)
            k[i] = wt->dims[2 + i];
        nk = ns;
    } else if (nk < 0) {
        kc_error_node(d, g, node, "attribute 'kernel_shape' is required");
        return 1;
    }
    if (nk != ns) {
        kc_error_node(d, g, node, "kernel_shape has %d values for %d spatial dims", nk, ns);
        return 1;
    }
    int64_t pads[2 * 3];
    int errors = ints_or(g, node, "strides", ns, 1, w->stride, d);
    errors += ints_or(g, node, "dilations", ns, 1, w->dilation, d);
    errors += ints_or(g, node, "pads", 2 * ns, 0, pads, d);
    if (errors) return errors;

    const char *ap = kc_attr_string(n, "auto_pad", "NOTSET");
    int mode;
    if (!strcmp(ap, "NOTSET") || !ap[0])
        mode = PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        mode = PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        mode = PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        mode = PAD_VALID;
    else {
        kc_error_node(d, g, node, "unknown auto_pad '%s'", ap);
        return 1;
    }
    w->ceil_mode = n->op == KC_OP_Conv ? 0 : (int)kc_attr_int(n, "ceil_mode", 0);

    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], s = w->stride[i], dil = w->dilation[i];
        w->in[i] = in;
        w->kernel[i] = k[i];
        if (k[i] < 1 || s < 1 || dil < 1 || pads[i] < 0 || pads[ns + i] < 0) {
            kc_error_node(d, g, node,
                          "spatial dim %d: kernel %lld, stride %lld, dilation %lld and pads "
                          "%lld,%lld must be positive (pads non-negative)",
                          i, (long long)k[i], (long long)s, (long long)dil, (long long)pads[i],
                          (long long)pads[ns + i]);
            return 1;
        }
        int64_t dk = (k[i] - 1) * dil + 1; /* the dilated kernel's extent */
        int64_t out;
        if (mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
            /* SAME keeps ceil(in / stride) outputs whatever ceil_mode says. */
            out = (in + s - 1) / s;
            int64_t total = (out - 1) * s + dk - in;
            if (total < 0) total = 0;
            w->pad_begin[i] = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            w->pad_end[i] = total - w->pad_begin[i];
        } else {
            w->pad_begin[i] = mode == PAD_VALID ? 0 : pads[i];
            w->pad_end[i] = mode == PAD_VALID ? 0 : pads[ns + i];
            int64_t span = in + w->pad_begin[i] + w->pad_end[i] - dk;
            if (span < 0) {
                kc_error_node(d, g, node,
                              "spatial dim %d: the kernel extent %lld exceeds the padded input "
                              "%lld",
                              i, (long long)dk, (long long)(in + w->pad_begin[i] + w->pad_end[i]));
                return 1;
            }
            if (w->ceil_mode) {
                out = (span + s - 1) / s + 1;
                /* The last window must start inside the input or the left padding. */
                if ((out - 1) * s >= in + w->pad_begin[i]) out--;
            } else {
                out = span / s + 1;
            }
        }
        w->out[i] = out;
    }
    return 0;
}

/* ---- slices ---- */

int kc_slice_of(const kc_graph *g, int node, kc_slice *s, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int r = x->rank;
    s->rank = r;
    for (int i = 0; i < r; i++) {
        s->start[i] = 0;
        s->step[i] = 1;
        s->len[i] = x->dims[i];
    }
    int64_t starts[KC_MAX_RANK], ends[KC_MAX_RANK], axes[KC_MAX_RANK], steps[KC_MAX_RANK];
    int ns = shape_ints(g, node, "starts", 1, 10, 1, starts, KC_MAX_RANK, d);
    int ne = shape_ints(g, node, "ends", 2, 10, 1, ends, KC_MAX_RANK, d);
    int na = shape_ints(g, node, "axes", 3, 10, 0, axes, KC_MAX_RANK, d);
    int nst = kc_node_opset(g, node) >= 10
                  ? shape_ints(g, node, "steps", 4, 10, 0, steps, KC_MAX_RANK, d)
                  : -1;
    if (ns < 0 || ne < 0 || na == -2 || nst == -2) return 1;
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns)) {
        kc_error_node(d, g, node, "starts, ends, axes and steps differ in length (%d, %d, %d, %d)",
                      ns, ne, na, nst);
        return 1;
    }
    if (na < 0 && ns > r) {
        kc_error_node(d, g, node, "%d starts for rank %d", ns, r);
        return 1;
    }
    int seen[KC_MAX_RANK] = {0};
    for (int i = 0; i < ns; i++) {
        int64_t ax = i, a = na >= 0 ? axes[i] : i;
        if (kc_normalize_axis(a, r, &ax)) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)a, r);
            return 1;
        }
        if (seen[ax]++) {
            kc_error_node(d, g, node, "axis %lld is sliced twice", (long long)ax);
            return 1;
        }
        int64_t step = nst >= 0 ? steps[i] : 1, dim = x->dims[ax];
        if (step == 0) {
            kc_error_node(d, g, node, "step 0 on axis %lld", (long long)ax);
            return 1;
        }
        /* ONNX clamps: to [0, dim] going forward, to [-1, dim-1] going backward. */
        int64_t st = starts[i] < 0 ? starts[i] + dim : starts[i];
        int64_t en = ends[i] < 0 ? ends[i] + dim : ends[i];
        int64_t len;
        if (step > 0) {
            st = st < 0 ? 0 : st > dim ? dim : st;
            en = en < 0 ? 0 : en > dim ? dim : en;
            len = en > st ? (en - st - 1) / step + 1 : 0;
        } else {
            st = st < 0 ? 0 : st > dim - 1 ? dim - 1 : st;
            en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
            int64_t mag = step < -INT64_MAX ? INT64_MAX : -step;
            len = st > en ? (st - en - 1) / mag + 1 : 0;
        }
        s->start[ax] = len ? st : 0;
        s->step[ax] = step;
        s->len[ax] = len;
    }
    return 0;
}

/* ---- shape functions, one per op ---- */

static int same_as_input(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

static int broadcast_binary(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *a = kc_shape_need(g, node, 0, d), *b = kc_shape_need(g, node, 1, d);
    if (!a || !b) return 1;
    if (a->dtype != b->dtype) {
        kc_error_node(d, g, node, "operands '%s' (%s) and '%s' (%s) differ in type", a->name,
                      kc_dtype_name(a->dtype), b->name, kc_dtype_name(b->dtype));
        return 1;
    }
    if (kc_broadcast_shape(a->rank, a->dims, b->rank, b->dims, &out[0].rank, out[0].dims)) {
        char b1[128], b2[128];
        kc_error_node(d, g, node, "shapes %s ('%s') and %s ('%s') do not broadcast",
                      fmt_dims(b1, sizeof b1, a->rank, a->dims), a->name,
                      fmt_dims(b2, sizeof b2, b->rank, b->dims), b->name);
        return 1;
    }
    out[0].dtype = a->dtype;
    return 0;
}

int kc_shape_Add(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return broadcast_binary(g, node, out, d);
}

int kc_shape_Sub(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return broadcast_binary(g, node, out, d);
}

int kc_shape_Mul(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return broadcast_binary(g, node, out, d);
}

int kc_shape_Div(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return broadcast_binary(g, node, out, d);
}

static int pool(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_window w;
    int errors = kc_window_of(g, node, &w, d);
    if (errors) return errors;
    const kc_value *x = kc_shape_input(g, node, 0);
    int64_t dims[KC_MAX_RANK] = {x->dims[0], x->dims[1]};
    for (int i = 0; i < w.n_spatial; i++)
        dims[2 + i] = w.out[i];
    set_dims(&out[0], x->dtype, x->rank, dims);
    set_dims(&out[1], KC_DTYPE_INT64, x->rank, dims); /* MaxPool's optional Indices */
    return 0;
}

int kc_shape_AveragePool(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return pool(g, node, out, d);
}

int kc_shape_MaxPool(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return pool(g, node, out, d);
}

int kc_shape_Conv(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_window w;
    int errors = kc_window_of(g, node, &w, d);
    if (errors) return errors;
    const kc_value *x = kc_shape_input(g, node, 0), *wt = kc_shape_input(g, node, 1);
    int64_t group = kc_attr_int(&g->nodes[node], "group", 1);
    int64_t c = x->dims[1], m = wt->dims[0];
    if (x->dtype != wt->dtype) {
        kc_error_node(d, g, node, "input is %s but weight '%s' is %s", kc_dtype_name(x->dtype),
                      wt->name, kc_dtype_name(wt->dtype));
        return 1;
    }
    if (group < 1 || m % group) {
        kc_error_node(d, g, node, "weight '%s' has %lld filters, not a multiple of group %lld",
                      wt->name, (long long)m, (long long)group);
        return 1;
    }
    if (wt->dims[1] * group != c) {
        kc_error_node(d, g, node,
                      "input has %lld channels but weight '%s' [%lld,%lld,...] with group %lld "
                      "expects %lld",
                      (long long)c, wt->name, (long long)m, (long long)wt->dims[1],
                      (long long)group, (long long)(wt->dims[1] * group));
        return 1;
    }
    const kc_value *b = kc_shape_input(g, node, 2);
    if (b && (b->rank != 1 || b->dims[0] != m)) {
        char buf[128];
        kc_error_node(d, g, node, "bias '%s' is %s, expected [%lld]", b->name,
                      fmt_dims(buf, sizeof buf, b->rank, b->dims), (long long)m);
        return 1;
    }
    int64_t dims[KC_MAX_RANK] = {x->dims[0], m};
    for (int i = 0; i < w.n_spatial; i++)
        dims[2 + i] = w.out[i];
    set_dims(&out[0], x->dtype, x->rank, dims);
    return 0;
}

int kc_shape_BatchNormalization(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 2) {
        kc_error_node(d, g, node, "input rank %d, expected at least 2 (N, C, ...)", x->rank);
        return 1;
    }
    int64_t c = x->dims[1];
    int spatial = kc_attr_int(&g->nodes[node], "spatial", 1) != 0;
    static const char *const what[] = {"scale", "B", "mean", "var"};
    for (int i = 1; i <= 4; i++) {
        const kc_value *p = kc_shape_need(g, node, i, d);
        if (!p) return 1;
        if (spatial && (p->rank != 1 || p->dims[0] != c)) {
            char buf[128];
            kc_error_node(d, g, node, "%s '%s' is %s, expected [%lld]", what[i - 1], p->name,
                          fmt_dims(buf, sizeof buf, p->rank, p->dims), (long long)c);
            return 1;
        }
    }
    kc_shape_like(&out[0], x);
    /* Training outputs (running/saved mean and variance) are per channel. */
    const kc_value *mean = kc_shape_input(g, node, 3);
    for (int i = 1; i < KC_SHAPE_MAX_OUTPUTS; i++)
        kc_shape_like(&out[i], mean);
    return 0;
}

int kc_shape_Cast(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    const kc_attr *to = kc_attr_find(&g->nodes[node], "to");
    if (!to || to->type != KC_ATTR_INT) {
        kc_error_node(d, g, node, "attribute 'to' is required");
        return 1;
    }
    if (kc_dtype_size((int)to->i) == 0) {
        kc_error_node(d, g, node, "cannot cast to data type %lld", (long long)to->i);
        return 1;
    }
    kc_shape_like(&out[0], x);
    out[0].dtype = (int)to->i;
    return 0;
}

int kc_shape_Clip(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    int errors = same_as_input(g, node, out, d);
    for (int i = 1; i <= 2 && !errors; i++) {
        const kc_value *b = kc_shape_input(g, node, i);
        if (b && (kc_value_numel(b) != 1 || b->dtype != out[0].dtype)) {
            kc_error_node(d, g, node, "%s '%s' must be a scalar of the input's type",
                          i == 1 ? "min" : "max", b->name);
            errors++;
        }
    }
    return errors;
}

int kc_shape_Concat(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *first = kc_shape_need(g, node, 0, d);
    if (!first) return 1;
    int64_t axis;
    if (kc_axis_of(g, node, first->rank, &axis, d)) return 1;
    kc_shape_like(&out[0], first);
    out[0].dims[axis] = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const kc_value *v = kc_shape_need(g, node, i, d);
        if (!v) return 1;
        int bad = v->rank != first->rank || v->dtype != first->dtype;
        for (int j = 0; j < first->rank && !bad; j++)
            bad = j != axis && v->dims[j] != first->dims[j];
        if (bad) {
            char b1[128], b2[128];
            kc_error_node(d, g, node, "input '%s' %s %s does not match '%s' %s %s off axis %lld",
                          v->name, kc_dtype_name(v->dtype),
                          fmt_dims(b1, sizeof b1, v->rank, v->dims), first->name,
                          kc_dtype_name(first->dtype),
                          fmt_dims(b2, sizeof b2, first->rank, first->dims), (long long)axis);
            return 1;
        }
        out[0].dims[axis] = kc_dim_add(out[0].dims[axis], v->dims[axis]);
    }
    return 0;
}

int kc_shape_Constant(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_attr *a;
    if ((a = kc_attr_find(n, "value")) && a->type == KC_ATTR_TENSOR && a->t) {
        set_dims(&out[0], a->t->dtype, a->t->rank, a->t->dims);
    } else if ((a = kc_attr_find(n, "value_float"))) {
        set_dims(&out[0], KC_DTYPE_FLOAT, 0, NULL);
    } else if ((a = kc_attr_find(n, "value_int"))) {
        set_dims(&out[0], KC_DTYPE_INT64, 0, NULL);
    } else if ((a = kc_attr_find(n, "value_floats"))) {
        int64_t len = a->n;
        set_dims(&out[0], KC_DTYPE_FLOAT, 1, &len);
    } else if ((a = kc_attr_find(n, "value_ints"))) {
        int64_t len = a->n;
        set_dims(&out[0], KC_DTYPE_INT64, 1, &len);
    } else {
        kc_error_node(d, g, node, "no supported value attribute");
        return 1;
    }
    return 0;
}

int kc_shape_ConstantOfShape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    int64_t dims[KC_MAX_RANK];
    int r = shape_ints(g, node, "shape", 0, 0, 1, dims, KC_MAX_RANK, d);
    if (r < 0) return 1;
    for (int i = 0; i < r; i++) {
        if (dims[i] < 0) {
            kc_error_node(d, g, node, "negative dimension %lld", (long long)dims[i]);
            return 1;
        }
    }
    const kc_attr *v = kc_attr_find(&g->nodes[node], "value");
    int dtype = KC_DTYPE_FLOAT;
    if (v) {
        if (v->type != KC_ATTR_TENSOR || !v->t || kc_numel(v->t->rank, v->t->dims) != 1) {
            kc_error_node(d, g, node, "attribute 'value' must be a one-element tensor");
            return 1;
        }
        dtype = v->t->dtype;
    }
    set_dims(&out[0], dtype, r, dims);
    return 0;
}

int kc_shape_Dropout(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    kc_shape_like(&out[0], x);
    kc_shape_like(&out[1], x);
    /* The mask became boolean at opset 10. */
    if (kc_node_opset(g, node) >= 10) out[1].dtype = KC_DTYPE_BOOL;
    return 0;
}

int kc_shape_Flatten(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_axis_of(g, node, x->rank, &axis, d)) return 1;
    int64_t dims[2] = {product(x->dims, 0, (int)axis), product(x->dims, (int)axis, x->rank)};
    set_dims(&out[0], x->dtype, 2, dims);
    return 0;
}

int kc_shape_Gather(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *idx = kc_shape_need(g, node, 1, d);
    if (!x || !idx) return 1;
    if (!is_int_dtype(idx->dtype)) {
        kc_error_node(d, g, node, "indices '%s' must be int64 or int32, not %s", idx->name,
                      kc_dtype_name(idx->dtype));
        return 1;
    }
    if (x->rank < 1 || x->rank + idx->rank - 1 > KC_MAX_RANK) {
        kc_error_node(d, g, node, "data rank %d with indices rank %d is not supported", x->rank,
                      idx->rank);
        return 1;
    }
    int64_t axis;
    if (kc_axis_of(g, node, x->rank, &axis, d)) return 1;
    int64_t dim = x->dims[axis];
    if (idx->flags & KC_VALUE_CONST) {
        int64_t n = kc_value_numel(idx);
        for (int64_t i = 0; i < n; i++) {
            int64_t j = idx->dtype == KC_DTYPE_INT64 ? ((const int64_t *)idx->data)[i]
                                                     : ((const int32_t *)idx->data)[i];
            if (j < -dim || j >= dim) {
                kc_error_node(d, g, node, "index %lld is out of range for dim %lld of size %lld",
                              (long long)j, (long long)axis, (long long)dim);
                return 1;
            }
        }
    }
    kc_shape *o = &out[0];
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < axis; i++)
        o->dims[o->rank++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        o->dims[o->rank++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        o->dims[o->rank++] = x->dims[i];
    return 0;
}

int kc_shape_Gemm(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *a = kc_shape_need(g, node, 0, d), *b = kc_shape_need(g, node, 1, d);
    if (!a || !b) return 1;
    if (a->rank != 2 || b->rank != 2) {
        kc_error_node(d, g, node, "A and B must be matrices, not rank %d and %d", a->rank, b->rank);
        return 1;
    }
    if (a->dtype != b->dtype) {
        kc_error_node(d, g, node, "A is %s but B is %s", kc_dtype_name(a->dtype),
                      kc_dtype_name(b->dtype));
        return 1;
    }
    int ta = kc_attr_int(n, "transA", 0) != 0, tb = kc_attr_int(n, "transB", 0) != 0;
    int64_t m = a->dims[ta], k = a->dims[!ta], kb = b->dims[tb], nn = b->dims[!tb];
    if (k != kb) {
        kc_error_node(d, g, node,
                      "inner dims differ: A '%s' gives K=%lld (transA=%d), B '%s' K=%lld "
                      "(transB=%d)",
                      a->name, (long long)k, ta, b->name, (long long)kb, tb);
        return 1;
    }
    int64_t dims[2] = {m, nn};
    const kc_value *c = kc_shape_input(g, node, 2);
    if (c) {
        int r;
        int64_t res[KC_MAX_RANK];
        if (c->rank > 2 || kc_broadcast_shape(2, dims, c->rank, c->dims, &r, res) || res[0] != m ||
            res[1] != nn) {
            char buf[128];
            kc_error_node(d, g, node, "C '%s' %s does not broadcast to [%lld,%lld]", c->name,
                          fmt_dims(buf, sizeof buf, c->rank, c->dims), (long long)m, (long long)nn);
            return 1;
        }
    }
    set_dims(&out[0], a->dtype, 2, dims);
    return 0;
}

int kc_shape_GlobalAveragePool(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 2) {
        kc_error_node(d, g, node, "input rank %d, expected at least 2 (N, C, ...)", x->rank);
        return 1;
    }
    kc_shape_like(&out[0], x);
    for (int i = 2; i < x->rank; i++)
        out[0].dims[i] = 1;
    return 0;
}

int kc_shape_Identity(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return same_as_input(g, node, out, d);
}

static int softmax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_axis_of(g, node, x->rank, &axis, d)) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_shape_LogSoftmax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return softmax(g, node, out, d);
}

int kc_shape_Softmax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return softmax(g, node, out, d);
}

int kc_shape_MatMul(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *a = kc_shape_need(g, node, 0, d), *b = kc_shape_need(g, node, 1, d);
    if (!a || !b) return 1;
    if (a->rank < 1 || b->rank < 1) {
        kc_error_node(d, g, node, "operands must have rank 1 or more, not %d and %d", a->rank,
                      b->rank);
        return 1;
    }
    if (a->dtype != b->dtype) {
        kc_error_node(d, g, node, "A is %s but B is %s", kc_dtype_name(a->dtype),
                      kc_dtype_name(b->dtype));
        return 1;
    }
    /* numpy.matmul: a 1-D A is a row, a 1-D B a column; both dropped from the result. */
    int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
    int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    int64_t nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
    char b1[128], b2[128];
    int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0, r;
    kc_shape *o = &out[0];
    if (k != kb || kc_broadcast_shape(ba, a->dims, bb, b->dims, &r, o->dims)) {
        kc_error_node(d, g, node, "cannot multiply '%s' %s by '%s' %s", a->name,
                      fmt_dims(b1, sizeof b1, a->rank, a->dims), b->name,
                      fmt_dims(b2, sizeof b2, b->rank, b->dims));
        return 1;
    }
    o->dtype = a->dtype;
    o->rank = r;
    if (a->rank >= 2) o->dims[o->rank++] = m;
    if (b->rank >= 2) o->dims[o->rank++] = nn;
    return 0;
}

int kc_shape_Relu(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return same_as_input(g, node, out, d);
}

int kc_shape_Reshape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t shape[KC_MAX_RANK], dims[KC_MAX_RANK];
    int r = shape_ints(g, node, "shape", 1, 5, 1, shape, KC_MAX_RANK, d);
    if (r < 0) return 1;
    int allowzero = kc_node_opset(g, node) >= 14 && kc_attr_int(&g->nodes[node], "allowzero", 0);
    int infer = -1;
    int64_t known = 1, numel = kc_value_numel(x);
    char b1[128], b2[128];
    for (int i = 0; i < r; i++) {
        if (shape[i] == 0 && !allowzero) {
            if (i >= x->rank) {
                kc_error_node(d, g, node, "shape %s copies dim %d, which the input %s lacks",
                              fmt_dims(b1, sizeof b1, r, shape), i,
                              fmt_dims(b2, sizeof b2, x->rank, x->dims));
                return 1;
            }
            dims[i] = x->dims[i];
        } else if (shape[i] == -1 && infer < 0) {
            infer = i;
            continue;
        } else if (shape[i] < 0) {
            kc_error_node(d, g, node, "bad shape %s: only one -1 is allowed, no other negative",
                          fmt_dims(b1, sizeof b1, r, shape));
            return 1;
        } else {
            dims[i] = shape[i];
        }
        if (__builtin_mul_overflow(known, dims[i], &known)) {
            kc_error_node(d, g, node, "shape %s overflows", fmt_dims(b1, sizeof b1, r, shape));
            return 1;
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known) {
            kc_error_node(d, g, node, "cannot reshape %s (%lld elements) to %s",
                          fmt_dims(b1, sizeof b1, x->rank, x->dims), (long long)numel,
                          fmt_dims(b2, sizeof b2, r, shape));
            return 1;
        }
        dims[infer] = numel / known;
    } else if (known != numel) {
        kc_error_node(d, g, node, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                      fmt_dims(b1, sizeof b1, x->rank, x->dims), (long long)numel,
                      fmt_dims(b2, sizeof b2, r, dims), (long long)known);
        return 1;
    }
    set_dims(&out[0], x->dtype, r, dims);
    return 0;
}

int kc_shape_Shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t start, end;
    kc_shape_range(g, node, x->rank, &start, &end);
    int64_t len = end - start;
    set_dims(&out[0], KC_DTYPE_INT64, 1, &len);
    return 0;
}

int kc_shape_Slice(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_slice s;
    int errors = kc_slice_of(g, node, &s, d);
    if (errors) return errors;
    set_dims(&out[0], kc_shape_input(g, node, 0)->dtype, s.rank, s.len);
    return 0;
}

int kc_shape_Squeeze(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axes[KC_MAX_RANK];
    int na = shape_ints(g, node, "axes", 1, 13, 0, axes, KC_MAX_RANK, d);
    if (na == -2) return 1;
    int drop[KC_MAX_RANK] = {0};
    for (int i = 0; i < x->rank; i++)
        drop[i] = na < 0 && x->dims[i] == 1;
    for (int i = 0; i < na; i++) {
        int64_t ax;
        if (kc_normalize_axis(axes[i], x->rank, &ax)) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)axes[i],
                          x->rank);
            return 1;
        }
        if (drop[ax]++ || x->dims[ax] != 1) {
            kc_error_node(d, g, node, "cannot squeeze axis %lld (size %lld%s)", (long long)axes[i],
                          (long long)x->dims[ax], drop[ax] > 1 ? ", listed twice" : "");
            return 1;
        }
    }
    kc_shape *o = &out[0];
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i]) o->dims[o->rank++] = x->dims[i];
    return 0;
}

int kc_shape_Transpose(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t perm[KC_MAX_RANK];
    if (kc_perm_of(g, node, x->rank, perm, d)) return 1;
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        out[0].dims[i] = x->dims[perm[i]];
    return 0;
}

int kc_shape_Unsqueeze(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axes[KC_MAX_RANK];
    int na = shape_ints(g, node, "axes", 1, 13, 1, axes, KC_MAX_RANK, d);
    if (na < 0) return 1;
    int r = x->rank + na;
    if (r > KC_MAX_RANK) {
        kc_error_node(d, g, node, "result rank %d exceeds %d", r, KC_MAX_RANK);
        return 1;
    }
    int add[KC_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int64_t ax;
        /* Axes index the result, so they range over its rank. */
        if (kc_normalize_axis(axes[i], r, &ax)) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)axes[i],
                          r);
            return 1;
        }
        if (add[ax]++) {
            kc_error_node(d, g, node, "axis %lld is repeated", (long long)axes[i]);
            return 1;
        }
    }
    kc_shape *o = &out[0];
    o->dtype = x->dtype;
    o->rank = r;
    for (int i = 0, j = 0; i < r; i++)
        o->dims[i] = add[i] ? 1 : x->dims[j++];
    return 0;
}

const kc_shape_fn kc_shape_fns[KC_OP_COUNT] = {
    [KC_OP_UNKNOWN] = NULL,
#define KC_OP(name, min_opset, max_opset, attrs, dtypes) [KC_OP_##name] = kc_shape_##name,
#include "ops.def"
#undef KC_OP
};
