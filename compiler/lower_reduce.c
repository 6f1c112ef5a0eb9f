/* Lowering of the reductions (Reduce*, ArgMax, ArgMin) onto the strided reduce kernel, and of
 * Hardmax onto the hardmax kernel. Dims of size 1 are dropped and neighbouring dims of the same
 * kind (kept or reduced) merged, so the kernel sees the fewest, longest runs. */
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"
#include "shapes_reduce.h"

static const struct {
    int op;
    uint32_t kind;
} reduce_kinds[] = {
    {KC_OP_ReduceSum, KANN_REDUCE_SUM},
    {KC_OP_ReduceMean, KANN_REDUCE_MEAN},
    {KC_OP_ReduceMax, KANN_REDUCE_MAX},
    {KC_OP_ReduceMin, KANN_REDUCE_MIN},
    {KC_OP_ReduceProd, KANN_REDUCE_PROD},
    {KC_OP_ReduceL1, KANN_REDUCE_L1},
    {KC_OP_ReduceL2, KANN_REDUCE_L2},
    {KC_OP_ReduceLogSum, KANN_REDUCE_LOG_SUM},
    {KC_OP_ReduceLogSumExp, KANN_REDUCE_LOG_SUM_EXP},
    {KC_OP_ReduceSumSquare, KANN_REDUCE_SUM_SQUARE},
    {KC_OP_ArgMax, KANN_REDUCE_ARGMAX},
    {KC_OP_ArgMin, KANN_REDUCE_ARGMIN},
};

/* Splits the dense dims of x into kept runs (the output, in order) and reduced runs. */
static void split_dims(const kc_value *x, const int *reduced, kann_reduce_args *a) {
    uint32_t size[KC_MAX_RANK], stride[KC_MAX_RANK];
    int kind[KC_MAX_RANK], n = 0;
    int64_t st = 1;
    uint32_t strides[KC_MAX_RANK];
    for (int i = x->rank - 1; i >= 0; i--) {
        strides[i] = (uint32_t)st;
        st *= x->dims[i];
    }
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] == 1) continue;
        if (n > 0 && kind[n - 1] == reduced[i]) { /* dense: the outer dim folds into this one */
            size[n - 1] *= (uint32_t)x->dims[i];
            stride[n - 1] = strides[i];
            continue;
        }
        size[n] = (uint32_t)x->dims[i];
        stride[n] = strides[i];
        kind[n++] = reduced[i];
    }
    a->out_rank = a->red_rank = 0;
    for (int i = 0; i < n; i++) {
        if (kind[i]) {
            a->red_dims[a->red_rank] = size[i];
            a->red_strides[a->red_rank++] = stride[i];
        } else {
            a->out_dims[a->out_rank] = size[i];
            a->out_strides[a->out_rank++] = stride[i];
        }
    }
    if (a->out_rank == 0) {
        a->out_dims[0] = 1;
        a->out_rank = 1;
    }
    if (a->red_rank == 0) {
        a->red_dims[0] = 1;
        a->red_rank = 1;
    }
}

int kc_lower_reduce(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    uint32_t kind = KANN_REDUCE_COUNT;
    for (size_t i = 0; i < sizeof reduce_kinds / sizeof reduce_kinds[0]; i++)
        if (reduce_kinds[i].op == n->op) kind = reduce_kinds[i].kind;
    int arg = kind == KANN_REDUCE_ARGMAX || kind == KANN_REDUCE_ARGMIN;
    int reduced[KC_MAX_RANK] = {0}, noop = 0;
    if (arg) {
        int64_t axis;
        if (kc_norm_axis_of(g, id, xv->rank, &axis, d)) return 1;
        if (xv->dims[axis] == 0) {
            kc_error_node(d, g, id, "cannot take the index of an extremum over an empty axis");
            return 1;
        }
        reduced[axis] = 1;
    } else if (kc_reduce_axes_of(g, id, xv->rank, reduced, &noop, d)) {
        return 1;
    }
    int64_t outputs = kc_value_numel(kc_val(g, y));
    if (outputs < 0 || outputs > UINT32_MAX / 4) {
        kc_error_node(d, g, id, "output '%s' has an unknown shape or is too large",
                      kc_val(g, y)->name);
        return 1;
    }
    uint32_t count = (uint32_t)outputs;
    if (count == 0) return 0; /* nothing to compute */
    if (noop) {
        kc_add_copy(g, p, id, x, 0, y, 0, 1, count, count, count);
        return 0;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_REDUCE, id);
    kann_reduce_args *a = c->args;
    a->op = kind;
    a->select_last = arg && kc_attr_int(n, "select_last_index", 0) != 0;
    /* ArgMax/ArgMin reduce one dim: it stays a run of its own, its stride the index step. An
     * empty reduction (x has no elements, y some) reads nothing of x, whose other dims may be
     * past any stride: y's elements in one run, each reducing a run of none. */
    if (kc_value_numel(xv) > 0) {
        split_dims(xv, reduced, a);
    } else {
        a->out_rank = a->red_rank = 1;
        a->out_dims[0] = count;
    }
    kc_bind(c, offsetof(kann_reduce_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_reduce_args, y), y, 0, 1);
    /* Enough output elements per tile that tiles stay worth a record. */
    uint32_t per_out = (uint32_t)(kc_value_numel(xv) / count);
    kc_set_tile(c, count, per_out >= 256 ? 1 : 16, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}

int kc_lower_hardmax(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t axis;
    if (kc_norm_axis_of(g, id, xv->rank, &axis, d)) return 1;
    if (kc_value_numel(xv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_HARDMAX, id);
    kann_softmax_args *a = c->args;
    /* Before opset 13 the input is flattened to [outer][rest] at axis. */
    int coerced = kc_node_opset(g, id) < 13;
    a->outer = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    a->axis_len = (uint32_t)(coerced ? kc_prod(xv->dims, (int)axis, xv->rank) : xv->dims[axis]);
    a->inner = (uint32_t)(coerced ? 1 : kc_prod(xv->dims, (int)axis + 1, xv->rank));
    kc_bind(c, offsetof(kann_softmax_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_softmax_args, y), y, 0, 1);
    kc_set_tile(c, a->outer, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}

/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss as a log-softmax over dim 1 (into its
 * log_prob output, or a scratch value) followed by the same loss. */
int kc_lower_loss(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    int x = kc_input(&g->nodes[id], 0), t = kc_input(&g->nodes[id], 1);
    int w = kc_input(&g->nodes[id], 2), y = g->nodes[id].outputs[0];
    if (kc_need_f32(g, id, x, "input", d) + kc_need_f32(g, id, w, "weight", d)) return 1;
    if (kc_val(g, t)->dtype != KC_DTYPE_INT64) {
        kc_error_node(d, g, id, "target '%s' is %s; only int64 targets are supported",
                      kc_val(g, t)->name, kc_dtype_name(kc_val(g, t)->dtype));
        return 1;
    }
    const kc_value *xv = kc_val(g, x);
    uint32_t n = (uint32_t)xv->dims[0], classes = (uint32_t)xv->dims[1];
    uint32_t inner = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    const char *reduction = kc_attr_string(&g->nodes[id], "reduction", "mean");
    uint32_t red = strcmp(reduction, "none") == 0  ? KANN_LOSS_NONE
                   : strcmp(reduction, "sum") == 0 ? KANN_LOSS_SUM
                                                   : KANN_LOSS_MEAN;
    if (kc_value_numel(xv) == 0) {
        kc_error_node(d, g, id, "empty input");
        return 1;
    }
    if (g->nodes[id].op == KC_OP_SoftmaxCrossEntropyLoss) {
        int log_prob = g->nodes[id].n_outputs > 1 ? g->nodes[id].outputs[1] : -1;
        if (log_prob < 0) {
            log_prob =
                kc_add_value(g, kc_unique_name(g, kc_sprintf(g, "%s.log_prob", g->nodes[id].name)));
            kc_value *lv = &g->values[log_prob];
            xv = kc_val(g, x);
            lv->dtype = KC_DTYPE_FLOAT;
            lv->rank = xv->rank;
            memcpy(lv->dims, xv->dims, sizeof lv->dims);
        }
        kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_SOFTMAX, id);
        kann_softmax_args *sa = c->args;
        sa->outer = n;
        sa->axis_len = classes;
        sa->inner = inner;
        sa->log = 1;
        kc_bind(c, offsetof(kann_softmax_args, x), x, 0, 0);
        kc_bind(c, offsetof(kann_softmax_args, y), log_prob, 0, 1);
        kc_set_tile(c, n, 1, 0, 0);
        c->macs = (double)n * classes * inner;
        x = log_prob;
    }
    const kc_node *nd = &g->nodes[id];
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_NLL_LOSS, id);
    kann_nll_loss_args *a = c->args;
    a->n = n;
    a->c = classes;
    a->inner = inner;
    a->reduction = red;
    a->has_ignore = kc_attr_find(nd, "ignore_index") != NULL;
    a->ignore_index = kc_attr_int(nd, "ignore_index", 0);
    kc_bind(c, offsetof(kann_nll_loss_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_nll_loss_args, target), t, 0, 0);
    kc_bind(c, offsetof(kann_nll_loss_args, weight), w, 0, 0);
    kc_bind(c, offsetof(kann_nll_loss_args, y), y, 0, 1);
    kc_set_tile(c, red == KANN_LOSS_NONE ? n * inner : 1, 64, 0, 0);
    c->macs = (double)n * inner;
    return 0;
}

/* CumSum: x viewed as [outer][len][inner] around the axis, one scan per line (o, i). */
int kc_lower_cumsum(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t axis;
    if (kc_cumsum_axis_of(g, id, xv->rank, &axis, d)) return 1;
    if (kc_value_numel(xv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_CUMSUM, id);
    kann_cumsum_args *a = c->args;
    a->dtype = (uint32_t)xv->dtype; /* KC_DTYPE_* and KANN_DTYPE_* both follow ONNX */
    a->outer = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    a->len = (uint32_t)xv->dims[axis];
    a->inner = (uint32_t)kc_prod(xv->dims, (int)axis + 1, xv->rank);
    a->exclusive = kc_attr_int(n, "exclusive", 0) != 0;
    a->reverse = kc_attr_int(n, "reverse", 0) != 0;
    kc_bind(c, offsetof(kann_cumsum_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_cumsum_args, y), y, 0, 1);
    kc_set_tile(c, a->outer * a->inner, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}

/* TopK: x viewed as [outer][len][inner] around the axis, the k best of each line (o, i) in
 * order (sorted = 0 allows any order: they come sorted too). */
int kc_lower_topk(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), values = n->outputs[0];
    int indices = n->n_outputs > 1 ? n->outputs[1] : -1;
    if (indices < 0) { /* both outputs are required by ONNX; the kernel writes both */
        kc_error_node(d, g, id, "TopK needs both its outputs (Values and Indices)");
        return 1;
    }
    if (kc_need_movable(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int64_t axis, k;
    if (kc_topk_of(g, id, xv->rank, xv->dims, &axis, &k, d)) return 1;
    if (kc_value_numel(xv) == 0 || k == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_TOPK, id);
    kann_topk_args *a = c->args;
    a->dtype = (uint32_t)xv->dtype; /* KC_DTYPE_* and KANN_DTYPE_* both follow ONNX */
    a->outer = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    a->len = (uint32_t)xv->dims[axis];
    a->inner = (uint32_t)kc_prod(xv->dims, (int)axis + 1, xv->rank);
    a->k = (uint32_t)k;
    a->largest = kc_attr_int(n, "largest", 1) != 0;
    kc_bind(c, offsetof(kann_topk_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_topk_args, values), values, 0, 1);
    kc_bind(c, offsetof(kann_topk_args, indices), indices, 0, 1);
    kc_set_tile(c, a->outer * a->inner, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv);
    return 0;
}
