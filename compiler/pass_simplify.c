/* Pass 3, simplify: removes the ops that compute nothing at inference (Identity, Dropout) and
 * turns the ops that only reinterpret a shape (Reshape, Flatten, Squeeze, Unsqueeze) into views
 * of their input, and a Gather, Slice or Split of contiguous ranges into views of them, so none
 * costs a copy at run time. */
#include "passes.h"
#include "shapes.h"

/* Dropout in training mode (opset 12+: a third input) is not an identity. */
static int dropout_in_training(const kc_graph *g, const kc_node *n) {
    if (n->n_inputs < 3 || n->inputs[2] < 0) return 0;
    const kc_value *t = &g->values[n->inputs[2]];
    if (!(t->flags & KC_VALUE_CONST) || !t->data || kc_value_numel(t) != 1) return 1;
    return t->dtype == KC_DTYPE_BOOL ? *(const uint8_t *)t->data != 0 : 1;
}

static int remove_identity(kc_graph *g, int ni, kc_diag *d, kc_stats *st) {
    kc_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->n_outputs < 1 || n->inputs[0] < 0 || n->outputs[0] < 0) {
        kc_error_node(d, g, ni, "expects one input and one output");
        return 1;
    }
    if (n->op == KC_OP_Dropout) {
        /* The mask has no inference meaning we could produce without running the op. */
        for (int j = 1; j < n->n_outputs; j++) {
            if (n->outputs[j] >= 0 && kc_value_uses(g, n->outputs[j]) > 0) {
                kc_error_node(d, g, ni, "the mask output '%s' is used; only inference is supported",
                              g->values[n->outputs[j]].name);
                return 1;
            }
        }
        if (dropout_in_training(g, n)) {
            kc_error_node(d, g, ni, "training_mode must be a constant false");
            return 1;
        }
    }
    int in = n->inputs[0], out = n->outputs[0];
    n->dead = 1;
    if (g->values[out].flags & KC_VALUE_OUTPUT) {
        /* The caller asks for the output by name: keep the value, sharing the input's bytes. */
        g->values[out].alias_of = in;
        g->values[out].alias_offset = 0;
    } else {
        kc_replace_uses(g, out, in);
        g->values[out].producer = -1;
    }
    st->identities_removed++;
    return 0;
}

static int make_view(kc_graph *g, int ni, kc_diag *d, kc_stats *st) {
    kc_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0) {
        kc_error_node(d, g, ni, "expects a data input and one output");
        return 1;
    }
    int in = n->inputs[0], out = n->outputs[0];
    /* A constant input means constant folding failed to run; leave it to the lowering. */
    if (kc_is_const(g, in)) return 0;
    const kc_value *vi = &g->values[in], *vo = &g->values[out];
    if (vi->dtype != vo->dtype || kc_value_numel(vi) != kc_value_numel(vo)) {
        kc_error_node(d, g, ni, "output '%s' does not hold the same elements as input '%s'",
                      vo->name, vi->name);
        return 1;
    }
    g->values[out].alias_of = in;
    g->values[out].alias_offset = 0;
    n->dead = 1;
    st->views++;
    return 0;
}

/* Whether the box [start, start + len) of x (unit steps) is one contiguous range of its bytes:
 * one element of every axis before the last axis it cuts, all of every axis after it. Its byte
 * offset in x goes to *offset. */
static int contiguous_box(const kc_value *x, const int64_t *start, const int64_t *len,
                          int64_t *offset) {
    int64_t esize = (int64_t)kc_dtype_size(x->dtype), bytes;
    if (esize == 0 || kc_value_numel(x) <= 0 ||
        __builtin_mul_overflow(kc_value_numel(x), esize, &bytes))
        return 0;
    int cut = -1; /* the last axis not taken whole */
    for (int i = 0; i < x->rank; i++)
        if (len[i] != x->dims[i]) cut = i;
    int64_t off = 0, stride = esize; /* both at most x's bytes */
    for (int i = x->rank - 1; i >= 0; i--) {
        if ((i < cut && len[i] != 1) || start[i] < 0 || len[i] < 0 ||
            start[i] + len[i] > x->dims[i])
            return 0;
        off += start[i] * stride;
        stride *= x->dims[i];
    }
    *offset = off;
    return 1;
}

/* Output out of node ni: a view of x from byte offset on, the node dead. */
static void view_at(kc_graph *g, int ni, int out, int x, int64_t offset, kc_stats *st) {
    g->values[out].alias_of = x;
    g->values[out].alias_offset = offset;
    g->nodes[ni].dead = 1;
    st->views++;
}

/* x's box of every element but [start, start + count) along axis: whether it is contiguous
 * (contiguous_box) and holds exactly out's elements. */
static int axis_range(const kc_value *x, int axis, int64_t start, int64_t count,
                      const kc_value *out, int64_t *offset) {
    int64_t starts[KC_MAX_RANK] = {0}, lens[KC_MAX_RANK], numel = 1;
    for (int i = 0; i < x->rank; i++)
        lens[i] = i == axis ? count : x->dims[i];
    starts[axis] = start;
    if (out->dtype != x->dtype || !contiguous_box(x, starts, lens, offset)) return 0;
    for (int i = 0; i < x->rank; i++)
        numel *= lens[i]; /* at most x's count: the box lies inside x */
    return kc_value_numel(out) == numel;
}

/* A Gather of one constant index along an axis with only unit dims before it: its output is one
 * contiguous range of the data, so it becomes a view of that range (torchvision's attention
 * takes q, k and v from one tensor this way, [3, S, 1, E] along axis 0; a classifier the first
 * token of [1, S, E] along axis 1). Anything else (a shape not known, an index out of range,
 * which the lowering reports) is left to the Gather kernel. */
static void gather_view(kc_graph *g, int ni, kc_stats *st) {
    const kc_node *n = &g->nodes[ni];
    if (n->n_inputs != 2 || n->n_outputs != 1) return;
    int data = n->inputs[0], out = n->outputs[0];
    int64_t index, offset;
    if (data < 0 || out < 0 || kc_is_const(g, data) ||
        kc_const_ints(g, n->inputs[1], &index, 1) != 1)
        return;
    const kc_value *dv = &g->values[data];
    int64_t axis = kc_attr_int(n, "axis", 0);
    if (axis < 0) axis += dv->rank;
    if (axis < 0 || axis >= dv->rank) return;
    if (index < 0) index += dv->dims[axis];
    if (axis_range(dv, (int)axis, index, 1, &g->values[out], &offset))
        view_at(g, ni, out, data, offset, st);
}

/* A Slice of one contiguous range of its input (unit steps: ShuffleNet's channel halves of
 * [1, C, H, W]) is a view of that range. The shapes pass has checked its parameters. */
static void slice_view(kc_graph *g, int ni, kc_diag *d, kc_stats *st) {
    const kc_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0) return;
    int x = n->inputs[0], out = n->outputs[0];
    for (int i = 1; i < n->n_inputs; i++) /* starts, ends, axes, steps known now, or a copy */
        if (n->inputs[i] >= 0 && !kc_is_const(g, n->inputs[i])) return;
    const kc_value *xv = &g->values[x];
    kc_slice sl;
    int64_t offset;
    if (kc_is_const(g, x) || kc_value_numel(xv) <= 0 || kc_value_numel(&g->values[out]) <= 0 ||
        kc_slice_of(g, ni, &sl, d))
        return;
    for (int i = 0; i < sl.rank; i++)
        if (sl.len[i] > 1 && sl.step[i] != 1) return;
    if (contiguous_box(xv, sl.start, sl.len, &offset)) view_at(g, ni, out, x, offset, st);
}

/* A Split along an axis with only unit dims before it: each output one range, a view. */
static void split_views(kc_graph *g, int ni, kc_stats *st) {
    const kc_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1) return;
    int x = n->inputs[0];
    const kc_value *xv = &g->values[x];
    int64_t axis = kc_attr_int(n, "axis", 0), at = 0, offset;
    if (axis < 0) axis += xv->rank;
    if (kc_is_const(g, x) || axis < 0 || axis >= xv->rank) return;
    /* every output a range first, then each a view */
    for (int pass = 0; pass < 2; pass++, at = 0)
        for (int k = 0; k < n->n_outputs; k++) {
            const kc_value *o = n->outputs[k] >= 0 ? &g->values[n->outputs[k]] : NULL;
            if (!o || o->rank != xv->rank ||
                !axis_range(xv, (int)axis, at, o->dims[axis], o, &offset))
                return;
            if (pass == 1) view_at(g, ni, n->outputs[k], x, offset, st);
            at += o->dims[axis];
        }
}

int kc_pass_simplify(kc_graph *g, kc_diag *d, kc_stats *st) {
    int errors = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        switch (g->nodes[i].op) {
        case KC_OP_Identity:
        case KC_OP_Dropout:
            errors += remove_identity(g, i, d, st);
            break;
        case KC_OP_Reshape:
        case KC_OP_Flatten:
        case KC_OP_Squeeze:
        case KC_OP_Unsqueeze:
            errors += make_view(g, i, d, st);
            break;
        case KC_OP_Gather:
            gather_view(g, i, st);
            break;
        case KC_OP_Slice:
            slice_view(g, i, d, st);
            break;
        case KC_OP_Split:
            split_views(g, i, st);
            break;
        default:
            break;
        }
    }
    return errors;
}
