/* Pass 2, shapes & constants: binds the graph inputs' shapes, then walks the nodes in order,
 * inferring each output's type and shape and evaluating the nodes whose inputs are constant. */
#include <stdlib.h>
#include <string.h>

#include "fold_constants.h"
#include "passes.h"
#include "shapes.h"

/* What the walk knows of a value. A broken value had an error reported already: nodes reading
 * it are skipped silently, so one mistake gives one message, not a cascade. */
enum { VALUE_UNDEFINED, VALUE_DEFINED, VALUE_BROKEN };

/* A symbolic dimension (dim_param) and the size it was bound to. */
typedef struct dim_symbol {
    const char *name;
    int64_t size;
} dim_symbol;

typedef struct symbol_table {
    dim_symbol *items;
    int n, cap;
} symbol_table;

static const dim_symbol *symbol_find(const symbol_table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->items[i].name, name)) return &t->items[i];
    return NULL;
}

/* Binds name to size; returns the size it was already bound to if that differs, else -1. */
static int64_t symbol_bind(symbol_table *t, const char *name, int64_t size) {
    const dim_symbol *s = symbol_find(t, name);
    if (s) return s->size == size ? -1 : s->size;
    if (t->n < t->cap) t->items[t->n++] = (dim_symbol){name, size};
    return -1;
}

static int find_input(const kc_graph *g, const char *name) {
    for (int i = 0; i < g->n_inputs; i++)
        if (!strcmp(g->values[g->inputs[i]].name, name)) return g->inputs[i];
    return -1;
}

/* Gives every unknown input dim whose dim_param is bound its size. */
static void apply_symbols(kc_graph *g, const symbol_table *t) {
    for (int i = 0; i < g->n_inputs; i++) {
        kc_value *v = &g->values[g->inputs[i]];
        for (int j = 0; j < v->rank; j++) {
            const dim_symbol *s = v->dim_params[j] ? symbol_find(t, v->dim_params[j]) : NULL;
            if (v->dims[j] < 0 && s) v->dims[j] = s->size;
        }
    }
}

static int apply_binding(kc_graph *g, const kc_shape_binding *b, symbol_table *t, kc_diag *d) {
    int vi = find_input(g, b->name);
    if (vi < 0) {
        char names[256] = "";
        size_t at = 0;
        for (int i = 0; i < g->n_inputs && at < sizeof names; i++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s'", i ? ", " : "",
                                   g->values[g->inputs[i]].name);
        kc_error(d, "--input-shape: the model has no input named '%s' (its inputs: %s)", b->name,
                 g->n_inputs ? names : "none");
        return 1;
    }
    kc_value *v = &g->values[vi];
    if (b->rank < 0 || b->rank > KC_MAX_RANK) {
        kc_error_value(d, g, vi, "--input-shape gives rank %d", b->rank);
        return 1;
    }
    if (v->rank >= 0 && v->rank != b->rank) {
        kc_error_value(d, g, vi, "--input-shape gives rank %d but the model declares rank %d",
                       b->rank, v->rank);
        return 1;
    }
    for (int j = 0; j < b->rank; j++) {
        if (b->dims[j] < 0) {
            kc_error_value(d, g, vi, "--input-shape gives a negative dimension %d", j);
            return 1;
        }
        if (v->rank >= 0 && v->dims[j] >= 0 && v->dims[j] != b->dims[j]) {
            kc_error_value(d, g, vi,
                           "--input-shape gives dimension %d as %lld but the model has %lld", j,
                           (long long)b->dims[j], (long long)v->dims[j]);
            return 1;
        }
    }
    int errors = 0;
    for (int j = 0; j < b->rank; j++) {
        const char *p = v->rank >= 0 ? v->dim_params[j] : NULL;
        int64_t other = p ? symbol_bind(t, p, b->dims[j]) : -1;
        if (other >= 0) {
            kc_error_value(d, g, vi,
                           "--input-shape binds dimension '%s' to %lld, but another binding "
                           "gave it %lld",
                           p, (long long)b->dims[j], (long long)other);
            errors++;
        }
    }
    if (v->rank < 0)
        for (int j = 0; j < KC_MAX_RANK; j++)
            v->dim_params[j] = NULL;
    v->rank = b->rank;
    for (int j = 0; j < b->rank; j++)
        v->dims[j] = b->dims[j];
    return errors;
}

/* Reports an input left with unknown dims, with the flag that would bind them. */
static void report_unbound(const kc_graph *g, int vi, kc_diag *d) {
    const kc_value *v = &g->values[vi];
    char dims[256] = "", flag[256] = "";
    size_t at = 0, ft = 0;
    int unknown = 0;
    for (int j = 0; j < v->rank; j++) {
        const char *p = v->dim_params[j];
        if (v->dims[j] >= 0) {
            ft += (size_t)snprintf(flag + ft, ft < sizeof flag ? sizeof flag - ft : 0, "%s%lld",
                                   j ? "x" : "", (long long)v->dims[j]);
            continue;
        }
        ft += (size_t)snprintf(flag + ft, ft < sizeof flag ? sizeof flag - ft : 0, "%s<%s>",
                               j ? "x" : "", p ? p : "?");
        unknown++;
        if (at < sizeof dims)
            at += (size_t)snprintf(dims + at, sizeof dims - at, "%s%d%s%s%s", at ? ", " : "", j,
                                   p ? " ('" : "", p ? p : "", p ? "')" : "");
    }
    kc_error_value(d, g, vi, "input dimension%s %s %s unknown; bind %s with --input-shape %s=%s",
                   unknown > 1 ? "s" : "", dims, unknown > 1 ? "are" : "is",
                   unknown > 1 ? "them" : "it", v->name, flag);
}

/* Binds the inputs' shapes and marks each input defined or broken. */
static void bind_inputs(kc_graph *g, const kc_shape_binding *bindings, int n_bindings,
                        unsigned char *state, kc_diag *d) {
    symbol_table t = {0};
    t.cap = g->n_inputs * KC_MAX_RANK + n_bindings * KC_MAX_RANK + 1;
    t.items = calloc((size_t)t.cap, sizeof *t.items);
    if (!t.items) t.cap = 0;
    for (int i = 0; i < n_bindings; i++) {
        for (int k = 0; k < i; k++) {
            if (!strcmp(bindings[k].name, bindings[i].name)) {
                kc_error(d, "--input-shape: input '%s' is bound twice", bindings[i].name);
                break;
            }
        }
        apply_binding(g, &bindings[i], &t, d);
    }
    apply_symbols(g, &t);
    /* The batch: a leading dim still unknown is 1, and so is its symbol wherever it appears. */
    for (int i = 0; i < g->n_inputs; i++) {
        kc_value *v = &g->values[g->inputs[i]];
        if (v->rank < 1 || v->dims[0] >= 0) continue;
        v->dims[0] = 1;
        if (v->dim_params[0]) symbol_bind(&t, v->dim_params[0], 1);
    }
    apply_symbols(g, &t);
    free(t.items);

    for (int i = 0; i < g->n_inputs; i++) {
        int vi = g->inputs[i];
        const kc_value *v = &g->values[vi];
        state[vi] = VALUE_BROKEN;
        if (v->rank < 0) {
            kc_error_value(d, g, vi, "input has no shape; bind it with --input-shape %s=...",
                           v->name);
        } else if (kc_dtype_size(v->dtype) == 0) {
            kc_error_value(d, g, vi, "input has element type %s, which is not supported",
                           kc_dtype_name(v->dtype));
        } else if (kc_value_numel(v) < 0) {
            report_unbound(g, vi, d);
        } else {
            state[vi] = VALUE_DEFINED;
        }
    }
}

static void format_shape(const kc_shape *s, char *buf, size_t size) {
    kc_value tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = s->dtype;
    tmp.rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        tmp.dims[i] = s->dims[i];
    kc_format_shape(&tmp, buf, size);
}

/* Far past any tensor a model computes, far below int64 overflow in the size arithmetic that
 * follows (bytes, offsets): a shape computed from hostile data is refused here. */
#define KC_MAX_ELEMENTS ((int64_t)1 << 48)

/* Stores an inferred type into output value v, checking it against what the file declared
 * (value_info, graph outputs): known dims must agree, unknown ones are filled. */
static int store_output(kc_graph *g, int node, int vi, const kc_shape *s, kc_diag *d) {
    kc_value *v = &g->values[vi];
    char declared[256], inferred[256];
    format_shape(s, inferred, sizeof inferred);
    if (s->rank < 0 || s->rank > KC_MAX_RANK || kc_numel(s->rank, s->dims) < 0 || !s->dtype) {
        kc_error_node(d, g, node, "cannot infer the shape of output '%s' (got %s)", v->name,
                      inferred);
        return 1;
    }
    if (kc_numel(s->rank, s->dims) > KC_MAX_ELEMENTS) {
        kc_error_node(d, g, node, "output '%s' %s has more than 2^48 elements", v->name,
                      inferred);
        return 1;
    }
    int conflict = (v->dtype && v->dtype != s->dtype) || (v->rank >= 0 && v->rank != s->rank);
    for (int i = 0; i < s->rank && !conflict && v->rank >= 0; i++)
        conflict = v->dims[i] >= 0 && v->dims[i] != s->dims[i];
    if (conflict) {
        kc_format_shape(v, declared, sizeof declared);
        kc_error_node(d, g, node, "output '%s' is declared %s but computes %s", v->name, declared,
                      inferred);
        return 1;
    }
    v->dtype = s->dtype;
    v->rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        v->dims[i] = s->dims[i];
    return 0;
}

/* Infers one live node; returns 1 if its outputs are all known. */
static int infer_node(kc_graph *g, int ni, unsigned char *state, kc_diag *d) {
    const kc_node *n = &g->nodes[ni];
    int broken = 0;
    for (int j = 0; j < n->n_inputs; j++) {
        int v = n->inputs[j];
        if (v < 0) continue;
        if (v >= g->n_values) {
            kc_error_node(d, g, ni, "input %d refers to value %d of %d", j, v, g->n_values);
            broken = 1;
        } else if (state[v] == VALUE_UNDEFINED) {
            const kc_value *val = &g->values[v];
            if (val->producer > ni)
                kc_error_node(d, g, ni,
                              "reads '%s' before node '%s' defines it (nodes are not "
                              "in topological order)",
                              val->name, g->nodes[val->producer].name);
            else
                kc_error_node(d, g, ni,
                              "reads '%s', which is no input, initializer or output of "
                              "an earlier node",
                              val->name);
            broken = 1;
        } else if (state[v] == VALUE_BROKEN) {
            broken = 1;
        }
    }
    for (int j = 0; j < n->n_outputs; j++) {
        int v = n->outputs[j];
        if (v >= g->n_values) {
            kc_error_node(d, g, ni, "output %d refers to value %d of %d", j, v, g->n_values);
            return 0;
        }
        if (v >= 0 && state[v] != VALUE_UNDEFINED) {
            kc_error_node(d, g, ni, "output '%s' is already defined", g->values[v].name);
            broken = 1;
        }
    }
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0) state[n->outputs[j]] = VALUE_BROKEN;
    if (broken) return 0;

    kc_shape_fn fn = n->op > 0 && n->op < KC_OP_COUNT ? kc_shape_fns[n->op] : NULL;
    if (!fn) {
        kc_error_node(d, g, ni, "cannot infer shapes: the op is not supported");
        return 0;
    }
    if (n->n_outputs > KC_SHAPE_MAX_OUTPUTS) {
        kc_error_node(d, g, ni, "%d outputs, more than the op has", n->n_outputs);
        return 0;
    }
    kc_shape out[KC_SHAPE_MAX_OUTPUTS];
    for (int j = 0; j < KC_SHAPE_MAX_OUTPUTS; j++)
        out[j] = (kc_shape){.dtype = 0, .rank = -1};
    if (fn(g, ni, out, d)) return 0;
    int ok = 1;
    for (int j = 0; j < n->n_outputs; j++) {
        int v = n->outputs[j];
        if (v < 0) continue;
        if (store_output(g, ni, v, &out[j], d))
            ok = 0;
        else
            state[v] = VALUE_DEFINED;
    }
    return ok;
}

/* Whether every present input is constant (Shape only reads its input's shape). */
static int inputs_constant(const kc_graph *g, int ni) {
    const kc_node *n = &g->nodes[ni];
    for (int j = 0; j < n->n_inputs; j++) {
        if ((n->op == KC_OP_Shape || n->op == KC_OP_Size) && j == 0) continue;
        if (n->inputs[j] >= 0 && !kc_is_const(g, n->inputs[j])) return 0;
    }
    return 1;
}

int kc_pass_shapes_constants(kc_graph *g, const kc_shape_binding *bindings, int n_bindings,
                             kc_diag *d, kc_stats *st) {
    int errors_before = d->n_errors;
    unsigned char *state = calloc((size_t)g->n_values + 1, 1);
    if (!state) {
        kc_error(d, "out of memory");
        return 1;
    }
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].flags & KC_VALUE_CONST) state[v] = VALUE_DEFINED;
    bind_inputs(g, bindings, n_bindings, state, d);

    for (int ni = 0; ni < g->n_nodes; ni++) {
        if (g->nodes[ni].dead) continue;
        if (!infer_node(g, ni, state, d)) continue;
        /* Folding here, inside the walk, is what lets later shapes see computed values
         * (Shape -> Gather -> Unsqueeze -> Concat -> Reshape). */
        if (!inputs_constant(g, ni)) continue;
        int r = kc_fold_node(g, ni, d);
        if (r == 1) {
            g->nodes[ni].dead = 1;
            if (st) st->constants_folded++;
        } else if (r < 0) {
            const kc_node *n = &g->nodes[ni];
            for (int j = 0; j < n->n_outputs; j++)
                if (n->outputs[j] >= 0) state[n->outputs[j]] = VALUE_BROKEN;
        }
    }

    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i];
        if (v >= 0 && v < g->n_values && state[v] == VALUE_UNDEFINED)
            kc_error_value(d, g, v, "graph output is never computed");
    }
    free(state);
    return d->n_errors - errors_before;
}
