/* Builders for the small graphs the pass tests start from: the state the import and shape passes
 * leave (every value typed and shaped, constants with data, nodes in topological order). */
#ifndef KC_TEST_PASS_GRAPH_H
#define KC_TEST_PASS_GRAPH_H

#include <stdarg.h>
#include <string.h>

#include "ir.h"

/* A float32 activation value of the given shape: pg_value(g, "x", 4, 1, 3, 8, 8). */
static inline int pg_value(kc_graph *g, const char *name, int rank, ...) {
    int v = kc_add_value(g, name);
    kc_value *val = &g->values[v];
    val->dtype = KC_DTYPE_FLOAT;
    val->rank = rank;
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        val->dims[i] = va_arg(ap, int);
    va_end(ap);
    return v;
}

static inline void pg_push(kc_graph *g, int **list, int *n, int v) {
    int *grown = kc_alloc(g, sizeof(int) * (size_t)(*n + 1));
    if (*n) memcpy(grown, *list, sizeof(int) * (size_t)*n);
    grown[(*n)++] = v;
    *list = grown;
}

static inline int pg_input(kc_graph *g, int v) {
    g->values[v].flags |= KC_VALUE_INPUT;
    pg_push(g, &g->inputs, &g->n_inputs, v);
    return v;
}

static inline int pg_output(kc_graph *g, int v) {
    g->values[v].flags |= KC_VALUE_OUTPUT;
    pg_push(g, &g->outputs, &g->n_outputs, v);
    return v;
}

/* A float32 constant; dims are given as an array because the data usually comes with them. */
static inline int pg_const(kc_graph *g, const char *name, int rank, const int64_t *dims,
                           const float *data) {
    return kc_add_const(g, name, KC_DTYPE_FLOAT, rank, dims, data);
}

static inline int pg_scalar(kc_graph *g, const char *name, float x) {
    return kc_add_const(g, name, KC_DTYPE_FLOAT, 0, NULL, &x);
}

/* A node of an ai.onnx op at the given opset; inputs and outputs as value indices. */
static inline int pg_node(kc_graph *g, int op, int opset, int n_in, const int *in, int n_out,
                          const int *out) {
    int n = kc_add_node(g, op, NULL, kc_sprintf(g, "%s_%d", kc_ops[op].name, g->n_nodes), n_in, in,
                        n_out, out);
    g->nodes[n].opset = opset;
    return n;
}

static inline int pg_node1(kc_graph *g, int op, int n_in, const int *in, int out) {
    return pg_node(g, op, 13, n_in, in, 1, &out);
}

static inline void pg_attr_int(kc_graph *g, int node, const char *name, int64_t i) {
    kc_node_add_attr(g, node, name, KC_ATTR_INT)->i = i;
}

static inline void pg_attr_float(kc_graph *g, int node, const char *name, float f) {
    kc_node_add_attr(g, node, name, KC_ATTR_FLOAT)->f = f;
}

static inline const float *pg_data(const kc_graph *g, int v) {
    return (const float *)g->values[v].data;
}

#endif
