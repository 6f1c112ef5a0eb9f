/* Lowering of elementwise ops: broadcasting Add/Sub/Mul/Div, standalone activations, and a
 * batch-norm that could not fold (a per-channel multiply-add with parameters computed here). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

int kc_lower_binary(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = kc_input(n, 0), B = kc_input(n, 1), y = n->outputs[0];
    int errors = kc_need_f32(g, id, A, "A", d) + kc_need_f32(g, id, B, "B", d);
    if (errors) return errors;
    const kc_value *yv = kc_val(g, y);
    if (yv->rank > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d exceeds the limit of %d", yv->rank, KANN_MAX_RANK);
        return 1;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_BINARY, id);
    kann_binary_args *a = c->args;
    a->op = n->op == KC_OP_Add   ? KANN_BINARY_ADD
            : n->op == KC_OP_Sub ? KANN_BINARY_SUB
            : n->op == KC_OP_Mul ? KANN_BINARY_MUL
                                 : KANN_BINARY_DIV;
    int r = yv->rank ? yv->rank : 1;
    int64_t dims[KC_MAX_RANK];
    for (int i = 0; i < r; i++)
        dims[i] = yv->rank ? yv->dims[i] : 1;
    a->rank = (uint32_t)r;
    for (int i = 0; i < r; i++)
        a->dims[i] = (uint32_t)dims[i];
    kc_broadcast_strides(kc_val(g, A), r, a->a_strides);
    kc_broadcast_strides(kc_val(g, B), r, a->b_strides);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_binary_args, a), A, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, b), B, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(yv);
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
    return 0;
}

/* Constant scalar input i of node n as a float, or dflt when omitted. */
int kc_const_scalar(kc_graph *g, int id, int i, float dflt, float *out, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int v = kc_input(n, i);
    *out = dflt;
    if (v < 0) return 0;
    if (!kc_is_const(g, v) || kc_value_numel(kc_val(g, v)) != 1 ||
        kc_val(g, v)->dtype != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, id, "input %d must be a constant float scalar", i);
        return 1;
    }
    *out = *(const float *)kc_val(g, v)->data;
    return 0;
}

int kc_lower_act(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    kann_act act = {KANN_ACT_RELU, 0, 0, 0};
    if (n->op == KC_OP_Clip) {
        act.kind = KANN_ACT_CLIP;
        if (n->opset < 11) {
            act.alpha = kc_attr_float(n, "min", -FLT_MAX);
            act.beta = kc_attr_float(n, "max", FLT_MAX);
        } else if (kc_const_scalar(g, id, 1, -FLT_MAX, &act.alpha, d) +
                   kc_const_scalar(g, id, 2, FLT_MAX, &act.beta, d)) {
            return 1;
        }
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_ACT, id);
    kann_act_args *a = c->args;
    a->count = (uint32_t)kc_value_numel(kc_val(g, y));
    a->act = act;
    kc_bind(c, offsetof(kann_act_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_act_args, y), y, 0, 1);
    kc_set_tile(c, a->count, 64, 0, 0);
    c->macs = a->count;
    return 0;
}

int kc_lower_batchnorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    int errors = kc_need_f32(g, id, x, "input", d);
    for (int i = 1; i < 5; i++)
        errors += kc_need_f32(g, id, kc_input(n, i), "parameter", d) +
                  kc_need_const(g, id, kc_input(n, i), "parameter", d);
    if (errors) return errors;
    const kc_value *xv = kc_val(g, x);
    if (xv->rank < 2) {
        kc_error_node(d, g, id, "input must have rank >= 2");
        return 1;
    }
    int64_t C = xv->dims[1];
    for (int i = 1; i < 5; i++)
        if (kc_value_numel(kc_val(g, kc_input(n, i))) != C) {
            kc_error_node(d, g, id, "parameter %d must have %lld elements", i, (long long)C);
            return 1;
        }
    double eps = kc_attr_float(n, "epsilon", 1e-5f);
    const float *gamma = kc_val(g, kc_input(n, 1))->data, *beta = kc_val(g, kc_input(n, 2))->data;
    const float *mean = kc_val(g, kc_input(n, 3))->data, *var = kc_val(g, kc_input(n, 4))->data;
    float *scale = malloc(sizeof(float) * 2 * (size_t)C);
    if (!scale) abort();
    float *shift = scale + C;
    for (int64_t i = 0; i < C; i++) {
        double s = gamma[i] / sqrt((double)var[i] + eps);
        scale[i] = (float)s;
        shift[i] = (float)(beta[i] - mean[i] * s);
    }
    int sv = kc_new_const_f32(g, kc_sprintf(g, "%s.scale", n->name), 1, &C, scale);
    int tv = kc_new_const_f32(g, kc_sprintf(g, "%s.shift", n->name), 1, &C, shift);
    free(scale);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CHANNEL_AFFINE, id);
    kann_channel_affine_args *a = c->args;
    a->planes = (uint32_t)(xv->dims[0] * C);
    a->channels = (uint32_t)C;
    a->inner = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_channel_affine_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, scale), sv, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, shift), tv, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, y), y, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->inner;
    return 0;
}
