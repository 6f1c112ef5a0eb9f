/* Pass 5, fuse: a residual Add and a following activation (also x * Sigmoid(x) and
 * x * HardSigmoid(x) as SiLU and HardSwish) become the epilogue of the node that produces their
 * input, applied at its store; Concat inputs are computed straight into their
 * slice of the Concat output where that slice is one contiguous byte range. */
#include <string.h>

#include "elementwise.h"
#include "kann_kernels.h"
#include "passes.h"

static int value_is_aliased(const kc_graph *g, int v) {
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].alias_of == v) return 1;
    return 0;
}

/* Whether x may disappear into its producer: read only by the node being fused, not requested
 * by the caller, and not read through a view. */
static int private_intermediate(const kc_graph *g, int x) {
    return !(g->values[x].flags & KC_VALUE_OUTPUT) && kc_value_uses(g, x) == 1 &&
           !value_is_aliased(g, x);
}

static int same_shape(const kc_value *a, const kc_value *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* ---- residual Add ---- */

static int is_gemm_like(int op) {
    return op == KC_OP_Conv || op == KC_OP_Gemm || op == KC_OP_MatMul;
}

/* Whether r is ready before node p runs: a graph input, a constant, or a value made earlier.
 * Node order is topological, so a view's (dead) producer index also orders its target. */
static int ready_before(const kc_graph *g, int r, int p) {
    return g->values[r].producer < p;
}

static int fuse_residual(kc_graph *g, int ai, kc_stats *st) {
    const kc_node *add = &g->nodes[ai];
    if (add->n_inputs != 2 || add->n_outputs != 1) return 0;
    for (int side = 0; side < 2; side++) {
        int y = add->inputs[side], r = add->inputs[1 - side];
        int p = kc_live_producer(g, y);
        if (p < 0 || r < 0 || r == y || !is_gemm_like(g->nodes[p].op)) continue;
        const kc_node *pn = &g->nodes[p];
        if (pn->epi.act != KANN_ACT_NONE || pn->epi.residual >= 0) continue;
        if (g->values[y].dtype != KC_DTYPE_FLOAT || !private_intermediate(g, y)) continue;
        if (!same_shape(&g->values[r], &g->values[y]) ||
            !same_shape(&g->values[add->outputs[0]], &g->values[y]) || !ready_before(g, r, p))
            continue;
        g->nodes[p].epi.residual = r;
        kc_absorb_node(g, p, ai, "Add");
        st->residuals_fused++;
        return 1;
    }
    return 0;
}

/* ---- activations ---- */

static int is_act_producer(int op) {
    switch (op) {
    case KC_OP_Conv:
    case KC_OP_ConvTranspose:
    case KC_OP_Gemm:
    case KC_OP_MatMul:
    case KC_OP_Add:
    case KC_OP_Sub:
    case KC_OP_Mul:
    case KC_OP_Div:
    case KC_OP_BatchNormalization:
    case KC_OP_MaxPool:
    case KC_OP_AveragePool:
    case KC_OP_GlobalAveragePool:
        return 1;
    default:
        return 0;
    }
}

static int fuse_activation(kc_graph *g, int ni, kc_stats *st) {
    const kc_node *n = &g->nodes[ni];
    if (n->n_inputs < 1 || n->n_outputs != 1 || n->epi.act != KANN_ACT_NONE) return 0;
    int x = n->inputs[0];
    int p = kc_live_producer(g, x);
    if (p < 0 || !is_act_producer(g->nodes[p].op) || g->nodes[p].epi.act != KANN_ACT_NONE) return 0;
    if (g->values[x].dtype != KC_DTYPE_FLOAT || !private_intermediate(g, x)) return 0;
    kc_epilogue epi = g->nodes[p].epi;
    if (!kc_activation_of(g, ni, &epi, NULL)) return 0;
    g->nodes[p].epi = epi;
    kc_absorb_node(g, p, ni, kc_ops[n->op].name);
    st->activations_fused++;
    return 1;
}

/* ---- x * act(x): SiLU and HardSwish ---- */

/* The kind of x * act(x) for the activation node a, or KANN_ACT_NONE. */
static int gated_kind(const kc_graph *g, int a) {
    const kc_node *n = &g->nodes[a];
    kc_epilogue epi = {KANN_ACT_NONE, 0, 0, -1};
    if (!kc_activation_of(g, a, &epi, NULL)) return KANN_ACT_NONE;
    if (epi.act == KANN_ACT_SIGMOID) return KANN_ACT_SILU;
    /* HardSwish is x * HardSigmoid(x) with alpha 1/6 and beta 1/2 exactly. */
    if (n->op == KC_OP_HardSigmoid && epi.alpha == 1.0f / 6.0f && epi.beta == 0.5f)
        return KANN_ACT_HARD_SWISH;
    return KANN_ACT_NONE;
}

/* Mul(x, act(x)) with act(x) read by nothing else becomes one activation: the epilogue of x's
 * producer when x has no other reader, else the act node itself computing the gated kind (its
 * epilogue set, see kc_lower_act). */
static int fuse_gated(kc_graph *g, int mi, kc_stats *st) {
    const kc_node *mul = &g->nodes[mi];
    if (mul->n_inputs != 2 || mul->n_outputs != 1 || mul->epi.act != KANN_ACT_NONE) return 0;
    for (int side = 0; side < 2; side++) {
        int s = mul->inputs[side], x = mul->inputs[1 - side];
        int a = kc_live_producer(g, s);
        if (a < 0 || x < 0 || g->nodes[a].n_inputs < 1 || g->nodes[a].inputs[0] != x) continue;
        if (g->nodes[a].epi.act != KANN_ACT_NONE || !private_intermediate(g, s)) continue;
        int kind = gated_kind(g, a);
        int y = mul->outputs[0];
        if (kind == KANN_ACT_NONE || !same_shape(&g->values[y], &g->values[x])) continue;
        int p = kc_live_producer(g, x);
        int x_private = !(g->values[x].flags & KC_VALUE_OUTPUT) && kc_value_uses(g, x) == 2 &&
                        !value_is_aliased(g, x);
        g->nodes[mi].dead = 1;
        if (p >= 0 && x_private && is_act_producer(g->nodes[p].op) &&
            g->nodes[p].epi.act == KANN_ACT_NONE) {
            g->nodes[a].dead = 1;
            g->values[s].producer = -1;
            g->nodes[p].epi.act = kind;
            g->nodes[p].outputs[0] = y;
            g->values[y].producer = p;
            g->values[x].producer = -1;
            kc_note_fused(g, p, kc_sprintf(g, "%s, Mul", kc_ops[g->nodes[a].op].name));
        } else {
            g->nodes[a].epi.act = kind;
            g->nodes[a].outputs[0] = y;
            g->values[y].producer = a;
            g->values[s].producer = -1;
            kc_note_fused(g, a, "Mul");
        }
        st->activations_fused++;
        return 1;
    }
    return 0;
}

/* ---- Concat slices as views ---- */

static int occurrences(const kc_node *n, int v) {
    int k = 0;
    for (int i = 0; i < n->n_inputs; i++)
        k += n->inputs[i] == v;
    return k;
}

/* Whether input v of Concat c may be computed in place: a buffer of its own written by a live
 * node, appearing once in c, and not a graph output (whose bytes must outlive the Concat's). */
static int can_place(const kc_graph *g, const kc_node *c, int v) {
    const kc_value *val = &g->values[v];
    if (val->alias_of >= 0 || (val->flags & (KC_VALUE_CONST | KC_VALUE_INPUT | KC_VALUE_OUTPUT)))
        return 0;
    return val->producer >= 0 && !g->nodes[val->producer].dead && occurrences(c, v) == 1;
}

/* A Concat whose inputs already lie one after the other, in its order, inside one value (placed
 * there for a later Concat of the same values and more: densenet's layers each concatenate
 * every feature map of the block so far, and the block's last Concat holds them all) is that
 * range of the value: its output becomes a view of it, and nothing is copied. */
static int concat_of_view(kc_graph *g, kc_node *c, int64_t axis, int64_t inner) {
    int out = c->outputs[0];
    const kc_value *ov = &g->values[out];
    if (ov->alias_of >= 0 || (ov->flags & KC_VALUE_OUTPUT)) return 0;
    int target = g->values[c->inputs[0]].alias_of;
    int64_t base = g->values[c->inputs[0]].alias_offset, offset = base;
    if (target < 0 || target == out) return 0;
    for (int i = 0; i < c->n_inputs; i++) {
        const kc_value *v = &g->values[c->inputs[i]];
        if (v->alias_of != target || v->alias_offset != offset) return 0;
        offset += v->dims[axis] * inner;
    }
    g->values[out].alias_of = target;
    g->values[out].alias_offset = base;
    c->dead = 1;
    return 1;
}

static void place_concat_inputs(kc_graph *g, int ci, kc_stats *st) {
    kc_node *c = &g->nodes[ci];
    if (c->n_outputs != 1 || c->n_inputs < 1) return;
    int out = c->outputs[0];
    const kc_value *ov = &g->values[out];
    if (ov->flags & (KC_VALUE_CONST | KC_VALUE_INPUT)) return;
    size_t esize = kc_dtype_size(ov->dtype);
    int64_t axis = kc_attr_int(c, "axis", 1);
    if (axis < 0) axis += ov->rank;
    if (esize == 0 || axis < 0 || axis >= ov->rank) return;
    /* With only unit dims before the axis, each input is one contiguous range of the output. */
    for (int i = 0; i < axis; i++)
        if (ov->dims[i] != 1) return;
    for (int i = 0; i < c->n_inputs; i++) {
        int v = c->inputs[i];
        if (v < 0 || g->values[v].rank != ov->rank || g->values[v].dtype != ov->dtype) return;
    }
    int64_t inner = (int64_t)esize;
    for (int i = (int)axis + 1; i < ov->rank; i++)
        inner *= ov->dims[i];
    if (concat_of_view(g, c, axis, inner)) {
        st->views++;
        return;
    }

    int placed = 0;
    int64_t offset = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        int v = c->inputs[i];
        if (can_place(g, c, v)) {
            g->values[v].alias_of = out;
            g->values[v].alias_offset = offset;
            st->views++;
            placed++;
        }
        offset += g->values[v].dims[axis] * inner;
    }
    if (placed == c->n_inputs) c->dead = 1;
}

int kc_pass_fuse(kc_graph *g, kc_diag *d, kc_stats *st) {
    (void)d;
    kc_fuse_transformer(g, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Add) fuse_residual(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Mul) fuse_gated(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) fuse_activation(g, i, st);
    /* Backwards, so a Concat feeding another Concat is placed in its consumer's output first and
     * its own inputs then land in that slice too. */
    for (int i = g->n_nodes - 1; i >= 0; i--)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Concat) place_concat_inputs(g, i, st);
    return 0;
}
