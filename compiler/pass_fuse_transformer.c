/* Transformer patterns for the fuse pass: a MatMul's bias Add (a constant vector along the
 * last axis) becomes the matmul's bias, a Div or Mul by a constant scalar its alpha, and GELU
 * written as the Erf formula x * (1 + erf(x / sqrt(2))) * 0.5 one Gelu node (an epilogue of
 * x's producer once fuse_activation has run). */
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

/* The operand of binary node n other than v (-1 if n does not read v). */
static int other_operand(const kc_node *n, int v) {
    if (n->n_inputs != 2) return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : -1;
}

/* The Mul reading v (its only reader) whose other operand is want; -1 if none. */
static int mul_by(const kc_graph *g, int v, int want) {
    int m = reader_with_op(g, v, KC_OP_Mul);
    if (m < 0 || !private_value(g, v, 1) || other_operand(&g->nodes[m], v) != want) return -1;
    return m;
}

/* The Mul reading v (its only reader) by the constant scalar 0.5; -1 if none. */
static int mul_by_half(const kc_graph *g, int v) {
    int m = reader_with_op(g, v, KC_OP_Mul);
    if (m < 0 || !private_value(g, v, 1) ||
        !const_scalar_near(g, other_operand(&g->nodes[m], v), 0.5, 0.0))
        return -1;
    return m;
}

/* Erf node e computing erf(x / sqrt(2)) (or erf(x * (1 / sqrt(2)))) inside GELU's formula
 * x * (1 + erf(...)) * 0.5, with the half taken last, first on x, or on (1 + erf(...)): the
 * Erf node becomes Gelu(x) writing the formula's output and the rest goes. Whatever produces x
 * (a conv, a matmul, a norm), fuse_activation then makes the Gelu its producer's epilogue where
 * x has no other reader. */
static int fuse_gelu(kc_graph *g, int ei) {
    const kc_node *erf = &g->nodes[ei];
    if (erf->n_inputs != 1 || erf->n_outputs != 1) return 0;
    int dv = erf->inputs[0], ev = erf->outputs[0];
    int di = kc_live_producer(g, dv);
    if (di < 0 || g->nodes[di].n_inputs != 2) return 0;
    const kc_node *scale = &g->nodes[di];
    int x = scale->inputs[0];
    if (scale->op == KC_OP_Div) {
        if (!const_scalar_near(g, scale->inputs[1], sqrt(2.0), 1e-6)) return 0;
    } else if (scale->op == KC_OP_Mul) {
        if (!const_scalar_near(g, scale->inputs[1], sqrt(0.5), 1e-7)) {
            x = scale->inputs[1];
            if (!const_scalar_near(g, scale->inputs[0], sqrt(0.5), 1e-7)) return 0;
        }
    } else {
        return 0;
    }
    if (x < 0 || g->values[x].dtype != KC_DTYPE_FLOAT || !private_value(g, dv, 1) ||
        !private_value(g, ev, 1))
        return 0;
    int ai = reader_with_op(g, ev, KC_OP_Add);
    if (ai < 0 || !const_scalar_near(g, other_operand(&g->nodes[ai], ev), 1.0, 0.0)) return 0;
    int av = g->nodes[ai].outputs[0];
    int gone[2] = {-1, -1};                  /* the Muls */
    if ((gone[0] = mul_by(g, av, x)) >= 0) { /* (x * A) * 0.5 */
        gone[1] = mul_by_half(g, g->nodes[gone[0]].outputs[0]);
    } else if ((gone[0] = mul_by_half(g, av)) >= 0) { /* x * (A * 0.5) */
        gone[1] = mul_by(g, g->nodes[gone[0]].outputs[0], x);
    } else { /* (x * 0.5) * A */
        int m = reader_with_op(g, av, KC_OP_Mul);
        int h = m >= 0 && private_value(g, av, 1) ? other_operand(&g->nodes[m], av) : -1;
        int hp = h >= 0 ? kc_live_producer(g, h) : -1;
        if (hp < 0 || g->nodes[hp].op != KC_OP_Mul || other_operand(&g->nodes[hp], x) < 0 ||
            !const_scalar_near(g, other_operand(&g->nodes[hp], x), 0.5, 0.0) ||
            !private_value(g, h, 1))
            return 0;
        gone[0] = hp;
        gone[1] = m;
    }
    if (gone[1] < 0) return 0;
    int out = g->nodes[gone[1]].outputs[0];
    if (!same_dims(&g->values[out], &g->values[x]) || g->values[out].dtype != KC_DTYPE_FLOAT)
        return 0;
    int dead[4] = {di, ai, gone[0], gone[1]};
    for (int i = 0; i < 4; i++) {
        g->nodes[dead[i]].dead = 1;
        g->values[g->nodes[dead[i]].outputs[0]].producer = -1;
    }
    kc_node *n = &g->nodes[ei];
    n->op = KC_OP_Gelu;
    n->inputs[0] = x;
    n->outputs[0] = out;
    g->values[out].producer = ei;
    g->values[ev].producer = -1;
    kc_note_fused(g, ei, kc_sprintf(g, "%s, Add, Mul, Mul", kc_ops[g->nodes[di].op].name));
    return 1;
}

void kc_fuse_transformer(kc_graph *g, kc_stats *st) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Add) fuse_linear_bias(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && (g->nodes[i].op == KC_OP_Div || g->nodes[i].op == KC_OP_Mul))
            fuse_scale(g, i, st);
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == KC_OP_Erf) fuse_gelu(g, i);
}
