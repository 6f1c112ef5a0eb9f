/* Transformer patterns for the fuse pass: a MatMul's bias Add (a constant vector along the
 * last axis) becomes the matmul's bias, a Div or Mul by a constant scalar its alpha, and GELU
 * written as the Erf formula x * (1 + erf(x / sqrt(2))) * 0.5 its GELU activation epilogue. */
#include <math.h>

#include "kann_kernels.h"
#include "passes.h"

/* x is read only by the live nodes being fused (uses of them), not a graph output, no view. */
static int private_value(const kc_graph *g, int x, int uses) {
    if (g->values[x].flags & KC_VALUE_OUTPUT || kc_value_uses(g, x) != uses) return 0;
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].alias_of == x) return 0;
    return 1;
}

/* Whether v is a constant f32 scalar (any rank, one element) equal to want within tol. */
static int const_scalar_near(const kc_graph *g, int v, double want, double tol) {
    if (v < 0 || !kc_is_const(g, v)) return 0;
    const kc_value *c = &g->values[v];
    if (c->dtype != KC_DTYPE_FLOAT || kc_value_numel(c) != 1 || !c->data) return 0;
    return fabs((double)*(const float *)c->data - want) <= tol;
}

/* The first live node with op reading v, or -1 (callers check that v has one reader). */
static int reader_with_op(const kc_graph *g, int v, int op) {
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead || n->op != op) continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == v) return i;
    }
    return -1;
}

static int same_dims(const kc_value *a, const kc_value *b) {
    if (a->rank != b->rank) return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return 0;
    return 1;
}

/* MatMul (rank >= 2 both sides, no epilogue yet) whose private output feeds Add with a
 * constant f32 of shape [..1.., N]: the Add's constant becomes the MatMul's third input, read
 * by the lowering as a bias broadcast over rows. */
static int fuse_linear_bias(kc_graph *g, int ai, kc_stats *st) {
    const kc_node *add = &g->nodes[ai];
    if (add->n_inputs != 2 || add->n_outputs != 1) return 0;
    for (int side = 0; side < 2; side++) {
        int y = add->inputs[side], c = add->inputs[1 - side];
        int p = kc_live_producer(g, y);
        if (p < 0 || c < 0 || g->nodes[p].op != KC_OP_MatMul || g->nodes[p].n_inputs != 2) continue;
        const kc_node *mm = &g->nodes[p];
        if (mm->epi.act != KANN_ACT_NONE || mm->epi.residual >= 0) continue;
        const kc_value *yv = &g->values[y], *cv = &g->values[c];
        if (yv->dtype != KC_DTYPE_FLOAT || g->values[mm->inputs[0]].rank < 2 ||
            g->values[mm->inputs[1]].rank < 2 || !private_value(g, y, 1))
            continue;
        if (!kc_is_const(g, c) || cv->dtype != KC_DTYPE_FLOAT || cv->rank < 1 ||
            cv->rank > yv->rank || cv->dims[cv->rank - 1] != yv->dims[yv->rank - 1])
            continue;
        int row_vector = 1;
        for (int i = 0; i < cv->rank - 1; i++)
            row_vector &= cv->dims[i] == 1;
        if (!row_vector || !same_dims(&g->values[add->outputs[0]], yv)) continue;
        int *inputs = kc_alloc(g, sizeof(int) * 3);
        inputs[0] = mm->inputs[0];
        inputs[1] = mm->inputs[1];
        inputs[2] = c;
        kc_node *m = &g->nodes[p];
        m->inputs = inputs;
        m->n_inputs = 3;
        int out = add->outputs[0];
        m->outputs[0] = out;
        g->values[out].producer = p;
        g->values[y].producer = -1;
        g->nodes[ai].dead = 1;
        m->fused = m->fused && m->fused[0] ? kc_sprintf(g, "%s, Add", m->fused) : "Add";
        st->affines_folded++;
        return 1;
    }
    return 0;
}

/* MatMul (no bias, no epilogue) whose private output is divided or multiplied by a constant
 * f32 scalar, as attention scores by sqrt(d): the scale becomes the matmul's alpha, kept as the
 * node's "alpha" attribute (one ONNX MatMul never has: the support check refuses it). */
static int fuse_scale(kc_graph *g, int si, kc_stats *st) {
    const kc_node *sn = &g->nodes[si];
    if (sn->n_inputs != 2 || sn->n_outputs != 1) return 0;
    for (int side = 0; side < 2; side++) {
        int y = sn->inputs[side], c = sn->inputs[1 - side];
        if (sn->op == KC_OP_Div && side == 1) break; /* c / y is no scale of y */
        int p = kc_live_producer(g, y);
        if (p < 0 || c < 0 || g->nodes[p].op != KC_OP_MatMul || g->nodes[p].n_inputs != 2) continue;
        const kc_node *mm = &g->nodes[p];
        if (mm->epi.act != KANN_ACT_NONE || mm->epi.residual >= 0 || kc_attr_find(mm, "alpha"))
            continue;
        const kc_value *cv = &g->values[c];
        if (!kc_is_const(g, c) || cv->dtype != KC_DTYPE_FLOAT || kc_value_numel(cv) != 1 ||
            !cv->data || g->values[y].dtype != KC_DTYPE_FLOAT || !private_value(g, y, 1) ||
            !same_dims(&g->values[sn->outputs[0]], &g->values[y]))
            continue;
        float k = *(const float *)cv->data;
        float alpha = sn->op == KC_OP_Div ? 1.0f / k : k;
        if (!isfinite(alpha) || alpha == 0.0f) continue;
        kc_node_add_attr(g, p, "alpha", KC_ATTR_FLOAT)->f = alpha;
        kc_node *m = &g->nodes[p];
        int out = sn->outputs[0];
        m->outputs[0] = out;
        g->values[out].producer = p;
        g->values[y].producer = -1;
        g->nodes[si].dead = 1;
        m->fused = m->fused && m->fused[0] ? kc_sprintf(g, "%s, %s", m->fused, kc_ops[sn->op].name)
                                           : kc_ops[sn->op].name;
        st->affines_folded++;
        return 1;
    }
    return 0;
}

/* Erf node e computing erf(x / sqrt(2)) inside Mul(Mul(x, Add(e, 1)), 0.5) (either operand
 * order at each step) with x produced by a MatMul or Gemm without activation: the producer
 * takes KANN_ACT_GELU and writes the last Mul's output. */
static int fuse_gelu(kc_graph *g, int ei, kc_stats *st) {
    const kc_node *erf = &g->nodes[ei];
    if (erf->n_inputs != 1 || erf->n_outputs != 1) return 0;
    int dv = erf->inputs[0], ev = erf->outputs[0];
    int di = kc_live_producer(g, dv);
    if (di < 0 || g->nodes[di].op != KC_OP_Div || g->nodes[di].n_inputs != 2) return 0;
    int x = g->nodes[di].inputs[0];
    if (!const_scalar_near(g, g->nodes[di].inputs[1], sqrt(2.0), 1e-6)) return 0;
    int p = kc_live_producer(g, x);
    if (p < 0 || (g->nodes[p].op != KC_OP_MatMul && g->nodes[p].op != KC_OP_Gemm)) return 0;
    if (g->nodes[p].epi.act != KANN_ACT_NONE || g->values[x].dtype != KC_DTYPE_FLOAT) return 0;
    if (!private_value(g, x, 2) || !private_value(g, dv, 1) || !private_value(g, ev, 1)) return 0;
    int ai = reader_with_op(g, ev, KC_OP_Add);
    if (ai < 0 || g->nodes[ai].n_inputs != 2) return 0;
    const kc_node *one = &g->nodes[ai];
    if (!const_scalar_near(g, one->inputs[one->inputs[0] == ev ? 1 : 0], 1.0, 0.0)) return 0;
    int av = one->outputs[0];
    int m1 = reader_with_op(g, av, KC_OP_Mul);
    if (m1 < 0 || !private_value(g, av, 1) || g->nodes[m1].n_inputs != 2) return 0;
    const kc_node *mul1 = &g->nodes[m1];
    if (mul1->inputs[mul1->inputs[0] == av ? 1 : 0] != x) return 0;
    int hv = mul1->outputs[0];
    int m2 = reader_with_op(g, hv, KC_OP_Mul);
    if (m2 < 0 || !private_value(g, hv, 1) || g->nodes[m2].n_inputs != 2) return 0;
    const kc_node *mul2 = &g->nodes[m2];
    if (!const_scalar_near(g, mul2->inputs[mul2->inputs[0] == hv ? 1 : 0], 0.5, 0.0)) return 0;
    int out = mul2->outputs[0];
    if (!same_dims(&g->values[out], &g->values[x]) || g->values[out].dtype != KC_DTYPE_FLOAT)
        return 0;
    kc_node *pn = &g->nodes[p];
    pn->epi.act = KANN_ACT_GELU;
    pn->epi.alpha = 0.0f;
    pn->epi.beta = 0.0f;
    pn->outputs[0] = out;
    g->values[out].producer = p;
    int gone[5] = {di, ei, ai, m1, m2};
    for (int i = 0; i < 5; i++) {
        g->nodes[gone[i]].dead = 1;
        g->values[g->nodes[gone[i]].outputs[0]].producer = -1;
    }
    g->values[out].producer = p;
    g->values[x].producer = -1;
    pn->fused = pn->fused && pn->fused[0] ? kc_sprintf(g, "%s, Gelu", pn->fused) : "Gelu";
    st->activations_fused++;
    return 1;
}

void kc_fuse_transformer(kc_graph *g, kc_stats *st) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Add) fuse_linear_bias(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && (g->nodes[i].op == KC_OP_Div || g->nodes[i].op == KC_OP_Mul))
            fuse_scale(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Erf) fuse_gelu(g, i, st);
}
