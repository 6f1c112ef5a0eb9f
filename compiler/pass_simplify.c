/* Pass 3, simplify: removes the ops that compute nothing at inference (Identity, Dropout) and
 * turns the ops that only reinterpret a shape (Reshape, Flatten, Squeeze, Unsqueeze) into views
 * of their input, so neither costs a copy at run time. */
#include "passes.h"

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
        default:
            break;
        }
    }
    return errors;
}
