/* The support check: every node's op, opset and attributes against the op table, all
 * unsupported nodes reported in one run. Shape-dependent limits are checked by the lowering. */
#include <string.h>

#include "passes.h"

/* Is name one of the space-separated words in list? */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        while (*p == ' ') p++;
        const char *end = p;
        while (*end && *end != ' ') end++;
        if ((size_t)(end - p) == n && n && strncmp(p, name, n) == 0) return 1;
        p = end;
    }
    return 0;
}

int kc_check_supported(const kc_graph *g, kc_diag *d) {
    int errors = 0;
    if (g->n_outputs == 0) {
        kc_error(d, "the graph has no outputs: there is nothing to compute");
        errors++;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        if (n->op == KC_OP_UNKNOWN) {
            kc_error_node(d, g, i, "unsupported operator");
            errors++;
            continue;
        }
        const kc_op_info *op = &kc_ops[n->op];
        /* ONNX marks an absent optional output with an empty name; no operator here may omit
         * its first output. */
        if (n->n_outputs < 1 || n->outputs[0] < 0) {
            kc_error_node(d, g, i, "output 0 is absent (an empty name)");
            errors++;
        }
        if (n->opset < op->min_opset || n->opset > op->max_opset) {
            kc_error_node(d, g, i, "opset %d is outside the supported range %d..%d", n->opset,
                          op->min_opset, op->max_opset);
            errors++;
        }
        for (int a = 0; a < n->n_attrs; a++) {
            const kc_attr *at = &n->attrs[a];
            if (!in_list(op->attrs, at->name)) {
                kc_error_node(d, g, i, "unsupported attribute '%s'", at->name);
                errors++;
            } else if (at->type == KC_ATTR_GRAPH || at->type == KC_ATTR_GRAPHS) {
                kc_error_node(d, g, i, "subgraph attribute '%s' is not supported", at->name);
                errors++;
            }
        }
    }
    return errors;
}
