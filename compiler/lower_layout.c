/* Lowering of Softmax/LogSoftmax, Transpose and the Concat inputs not already written in place. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

int kc_lower_softmax(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int r = xv->rank;
    int64_t axis = kc_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
    if (axis < 0) axis += r;
    if (r == 0) axis = 0;
    if (axis < 0 || (r > 0 && axis >= r)) {
        kc_error_node(d, g, id, "axis %lld is out of range for rank %d", (long long)axis, r);
        return 1;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_SOFTMAX, id);
    kann_softmax_args *a = c->args;
    a->outer = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    if (n->opset < 13) { /* coerced to 2-D: everything from axis on is one row */
        a->axis_len = (uint32_t)kc_prod(xv->dims, (int)axis, r);
        a->inner = 1;
    } else {
        a->axis_len = r ? (uint32_t)xv->dims[axis] : 1;
        a->inner = (uint32_t)kc_prod(xv->dims, (int)axis + 1, r);
    }
    a->log = n->op == KC_OP_LogSoftmax;
    kc_bind(c, offsetof(kann_softmax_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_softmax_args, y), y, 0, 1);
    kc_set_tile(c, a->outer, 1, 0, 0);
    c->macs = (double)a->outer * a->axis_len * a->inner;
    return 0;
}

int kc_lower_transpose(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    int r = xv->rank;
    if (r > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d exceeds the limit of %d", r, KANN_MAX_RANK);
        return 1;
    }
    int64_t perm[KC_MAX_RANK];
    if (kc_attr_ints(n, "perm", perm, KC_MAX_RANK) != r)
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    int64_t in_strides[KC_MAX_RANK], dims[KC_MAX_RANK], xs[KC_MAX_RANK];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        in_strides[i] = s;
        s *= xv->dims[i];
    }
    for (int i = 0; i < r; i++) {
        dims[i] = xv->dims[perm[i]];
        xs[i] = in_strides[perm[i]];
    }
    kc_emit_f32_transpose(g, p, id, x, y, r, dims, xs);
    return 0;
}

void kc_emit_f32_transpose(kc_graph *g, kc_program *p, int node, int x, int y, int rank,
                           const int64_t *dims, const int64_t *x_strides) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_TRANSPOSE, node);
    kann_transpose_args *a = c->args;
    a->rank = (uint32_t)(rank ? rank : 1);
    a->dims[0] = 1;
    for (int i = 0; i < rank; i++) {
        a->dims[i] = (uint32_t)dims[i];
        a->x_strides[i] = (uint32_t)x_strides[i];
    }
    kc_bind(c, offsetof(kann_transpose_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_transpose_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(kc_val(g, y));
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
}

int kc_lower_concat(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0];
    int errors = kc_need_f32(g, id, y, "output", d);
    for (int i = 0; i < n->n_inputs; i++)
        errors += kc_need_f32(g, id, n->inputs[i], "input", d);
    if (errors) return errors;
    const kc_value *yv = kc_val(g, y);
    int r = yv->rank;
    int64_t axis = kc_attr_int(n, "axis", 1); /* required since opset 4; 1 before */
    if (axis < 0) axis += r;
    int64_t outer = kc_prod(yv->dims, 0, (int)axis), inner = kc_prod(yv->dims, (int)axis + 1, r);
    int64_t at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int x = n->inputs[i];
        int64_t len = kc_val(g, x)->dims[axis];
        /* Already written in place by its producer (a view made by the fuse pass)? */
        int in_place = kc_val(g, x)->alias_of == y && kc_val(g, x)->alias_offset == at * inner * 4;
        if (!in_place && len > 0)
            kc_add_copy(g, p, id, x, 0, y, at * inner * 4, (uint32_t)outer, (uint32_t)(len * inner),
                        (uint32_t)(len * inner), (uint32_t)(yv->dims[axis] * inner));
        at += len;
    }
    return 0;
}
