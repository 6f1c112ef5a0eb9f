/* Shape functions of the reductions (Reduce*, ArgMax, ArgMin), the normalizations
 * (LayerNormalization, InstanceNormalization, GroupNormalization, LRN), Hardmax, CumSum and TopK,
 * following the ONNX semantics at the node's opset. */
#include <string.h>

#include "shapes.h"
#include "shapes_reduce.h"

/* ReduceSum took its axes as an input from opset 13, the other reductions from opset 18. */
static int axes_input_since(const kc_node *n) {
    return n->op == KC_OP_ReduceSum ? 13 : 18;
}

int kc_reduce_axes_of(const kc_graph *g, int node, int rank, int *reduced, int *noop, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    int opset = kc_node_opset(g, node);
    int64_t axes[KC_MAX_RANK];
    int count = 0;
    int axes_input = opset >= axes_input_since(n);
    const kc_value *axes_v = kc_shape_input(g, node, 1);
    if (axes_input) {
        if (kc_attr_find(n, "axes")) {
            kc_error_node(d, g, node, "since opset %d, 'axes' is input 1, not an attribute",
                          axes_input_since(n));
            return 1;
        }
        if (axes_v) {
            count = kc_const_ints(g, n->inputs[1], axes, KC_MAX_RANK);
            if (count == -1) {
                kc_error_node(d, g, node, "axes '%s' must be a constant int64 tensor",
                              axes_v->name);
                return 1;
            }
            if (count == -2) {
                kc_error_node(d, g, node, "axes '%s' has more than %d values", axes_v->name,
                              KC_MAX_RANK);
                return 1;
            }
        }
    } else {
        if (axes_v) {
            kc_error_node(d, g, node, "before opset %d, 'axes' is an attribute, not input 1",
                          axes_input_since(n));
            return 1;
        }
        count = kc_attr_ints(n, "axes", axes, KC_MAX_RANK);
        if (count > KC_MAX_RANK) {
            kc_error_node(d, g, node, "attribute 'axes' has %d values, more than %d", count,
                          KC_MAX_RANK);
            return 1;
        }
        if (count < 0) count = 0;
    }
    *noop = 0;
    for (int i = 0; i < rank; i++)
        reduced[i] = count == 0;
    if (count == 0) {
        *noop = axes_input && kc_attr_int(n, "noop_with_empty_axes", 0) != 0;
        if (*noop)
            for (int i = 0; i < rank; i++)
                reduced[i] = 0;
        return 0;
    }
    for (int i = 0; i < count; i++) {
        int64_t ax;
        if (kc_normalize_axis(axes[i], rank, &ax)) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)axes[i],
                          rank);
            return 1;
        }
        if (reduced[ax]++) {
            kc_error_node(d, g, node, "axis %lld is repeated", (long long)axes[i]);
            return 1;
        }
    }
    return 0;
}

int kc_norm_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    int opset = kc_node_opset(g, node);
    int64_t dflt = -1;
    if (n->op == KC_OP_ArgMax || n->op == KC_OP_ArgMin) dflt = 0;
    if (n->op == KC_OP_Hardmax && opset < 13) dflt = 1;
    int64_t a = kc_attr_int(n, "axis", dflt);
    /* Hardmax before opset 13 flattens to 2-D at axis, which may equal the rank. */
    int top = n->op == KC_OP_Hardmax && opset < 13 ? rank + 1 : rank;
    if (kc_normalize_axis(a, top, axis)) {
        kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)a, rank);
        return 1;
    }
    return 0;
}

static int reduce_shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int reduced[KC_MAX_RANK], noop;
    if (kc_reduce_axes_of(g, node, x->rank, reduced, &noop, d)) return 1;
    int keep = kc_attr_int(&g->nodes[node], "keepdims", 1) != 0;
    kc_shape *o = &out[0];
    o->dtype = x->dtype;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!reduced[i])
            o->dims[o->rank++] = x->dims[i];
        else if (keep)
            o->dims[o->rank++] = 1;
    }
    return 0;
}

int kc_shape_ReduceL1(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceL2(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceLogSum(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceLogSumExp(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceMax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceMean(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceMin(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceProd(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceSum(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

int kc_shape_ReduceSumSquare(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return reduce_shape(g, node, out, d);
}

static int arg_shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_norm_axis_of(g, node, x->rank, &axis, d)) return 1;
    int keep = kc_attr_int(&g->nodes[node], "keepdims", 1) != 0;
    kc_shape *o = &out[0];
    o->dtype = KC_DTYPE_INT64;
    o->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != axis)
            o->dims[o->rank++] = x->dims[i];
        else if (keep)
            o->dims[o->rank++] = 1;
    }
    return 0;
}

int kc_shape_ArgMax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return arg_shape(g, node, out, d);
}

int kc_shape_ArgMin(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return arg_shape(g, node, out, d);
}

int kc_shape_Hardmax(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_norm_axis_of(g, node, x->rank, &axis, d)) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_shape_LRN(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 2) {
        kc_error_node(d, g, node, "input rank %d, expected at least 2 (N, C, ...)", x->rank);
        return 1;
    }
    if (kc_attr_int(&g->nodes[node], "size", 0) < 1) {
        kc_error_node(d, g, node, "attribute 'size' is required and must be positive");
        return 1;
    }
    kc_shape_like(&out[0], x);
    return 0;
}

/* Scale and bias of a normalization: absent (when optional) or exactly count elements. */
static int check_params(const kc_graph *g, int node, int first, int last, int64_t count,
                        int optional_from, kc_diag *d) {
    for (int i = first; i <= last; i++) {
        const kc_value *p = kc_shape_input(g, node, i);
        if (!p) {
            if (i >= optional_from) continue;
            kc_error_node(d, g, node, "input %d is required", i);
            return 1;
        }
        if (kc_value_numel(p) != count) {
            kc_error_node(d, g, node, "input %d '%s' has %lld elements, expected %lld", i, p->name,
                          (long long)kc_value_numel(p), (long long)count);
            return 1;
        }
    }
    return 0;
}

int kc_shape_LayerNormalization(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_norm_axis_of(g, node, x->rank, &axis, d)) return 1;
    int64_t len = 1;
    for (int i = (int)axis; i < x->rank; i++)
        len = kc_dim_mul(len, x->dims[i]);
    if (check_params(g, node, 1, 2, len, 2, d)) return 1;
    kc_shape_like(&out[0], x);
    /* Mean and InvStdDev keep the leading dims, 1 for each normalized one. */
    for (int j = 1; j <= 2; j++) {
        kc_shape_like(&out[j], x);
        out[j].dtype = KC_DTYPE_FLOAT;
        for (int i = (int)axis; i < x->rank; i++)
            out[j].dims[i] = 1;
    }
    return 0;
}

int kc_shape_InstanceNormalization(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 3) {
        kc_error_node(d, g, node, "input rank %d, expected at least 3 (N, C, D1, ...)", x->rank);
        return 1;
    }
    if (check_params(g, node, 1, 2, x->dims[1], 3, d)) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_shape_GroupNormalization(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t groups = kc_attr_int(&g->nodes[node], "num_groups", 0);
    if (x->rank < 3) {
        kc_error_node(d, g, node, "input rank %d, expected at least 3 (N, C, D1, ...)", x->rank);
        return 1;
    }
    if (groups < 1 || x->dims[1] % groups != 0) {
        kc_error_node(d, g, node, "num_groups %lld must be positive and divide the %lld channels",
                      (long long)groups, (long long)x->dims[1]);
        return 1;
    }
    /* Opset 18 scales per group; opset 21 per channel. */
    int64_t count = kc_node_opset(g, node) >= 21 ? x->dims[1] : groups;
    if (check_params(g, node, 1, 2, count, 3, d)) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: x [N][C][d...], target [N][d...]
 * (integer), weight [C]; the loss is [N][d...] without reduction, else a scalar. */
static int loss_shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *t = kc_shape_need(g, node, 1, d);
    if (!x || !t) return 1;
    const kc_value *w = kc_shape_input(g, node, 2);
    int bad = x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0];
    for (int i = 2; i < x->rank && !bad; i++)
        bad = t->dims[i - 1] != x->dims[i];
    if (bad) {
        kc_error_node(d, g, node, "target '%s' must have the input's shape without dim 1", t->name);
        return 1;
    }
    if (t->dtype != KC_DTYPE_INT64 && t->dtype != KC_DTYPE_INT32) {
        kc_error_node(d, g, node, "target '%s' must be an integer tensor", t->name);
        return 1;
    }
    if (w && (w->rank != 1 || w->dims[0] != x->dims[1])) {
        kc_error_node(d, g, node, "weight '%s' must have %lld elements", w->name,
                      (long long)x->dims[1]);
        return 1;
    }
    const char *reduction = kc_attr_string(&g->nodes[node], "reduction", "mean");
    if (strcmp(reduction, "none") && strcmp(reduction, "sum") && strcmp(reduction, "mean")) {
        kc_error_node(d, g, node, "reduction '%s' is not none, sum or mean", reduction);
        return 1;
    }
    out[0].dtype = x->dtype;
    out[0].rank = 0;
    if (strcmp(reduction, "none") == 0) {
        out[0].rank = t->rank;
        for (int i = 0; i < t->rank; i++)
            out[0].dims[i] = t->dims[i];
    }
    kc_shape_like(&out[1], x); /* SoftmaxCrossEntropyLoss: log_prob */
    return 0;
}

int kc_shape_NegativeLogLikelihoodLoss(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return loss_shape(g, node, out, d);
}

int kc_shape_SoftmaxCrossEntropyLoss(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return loss_shape(g, node, out, d);
}

int kc_cumsum_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    int v = n->n_inputs > 1 ? n->inputs[1] : -1;
    int64_t raw;
    if (v < 0 || !kc_is_const(g, v) || kc_const_ints(g, v, &raw, 1) != 1) {
        kc_error_node(d, g, node, "axis input%s%s%s must be a constant int32 or int64 scalar",
                      v >= 0 ? " '" : "", v >= 0 ? g->values[v].name : "", v >= 0 ? "'" : "");
        return 1;
    }
    if (kc_normalize_axis(raw, rank, axis)) {
        kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)raw, rank);
        return 1;
    }
    return 0;
}

int kc_shape_CumSum(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis;
    if (kc_cumsum_axis_of(g, node, x->rank, &axis, d)) return 1;
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_topk_of(const kc_graph *g, int node, int rank, const int64_t *dims, int64_t *axis,
               int64_t *k, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    if (kc_norm_axis_of(g, node, rank, axis, d)) return 1;
    if (kc_node_opset(g, node) < 10) {
        *k = kc_attr_int(n, "k", -1);
    } else {
        int v = n->n_inputs > 1 ? n->inputs[1] : -1;
        if (v < 0 || !kc_is_const(g, v) || kc_const_ints(g, v, k, 1) != 1) {
            kc_error_node(d, g, node,
                          "K input%s%s%s must be a constant int64 tensor of one element (the "
                          "output shape depends on it)",
                          v >= 0 ? " '" : "", v >= 0 ? g->values[v].name : "", v >= 0 ? "'" : "");
            return 1;
        }
    }
    if (*k < 0 || *k > dims[*axis]) {
        kc_error_node(d, g, node, "k %lld is not in 0..%lld (the length of axis %lld)",
                      (long long)*k, (long long)dims[*axis], (long long)*axis);
        return 1;
    }
    return 0;
}

int kc_shape_TopK(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int64_t axis, k;
    if (kc_topk_of(g, node, x->rank, x->dims, &axis, &k, d)) return 1;
    kc_shape_like(&out[0], x);
    out[0].dims[axis] = k;
    out[1] = out[0];
    out[1].dtype = KC_DTYPE_INT64;
    return 0;
}
