/* Lowering of standalone activations and of a batch-norm that could not fold (a per-channel
 * multiply-add with parameters computed here); the other elementwise ops are in
 * lower_elementwise.c. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elementwise.h"
#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* A standalone activation. A node whose epilogue is set computes that epilogue instead of its
 * own op: the fuse pass makes x * Sigmoid(x) such a Sigmoid node (SiLU). Clip with bounds
 * computed at run time, or of integers, is a ternary kernel. */
int kc_lower_act(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    kc_epilogue epi = n->epi;
    const char *why = NULL;
    if (epi.act == KANN_ACT_NONE && !kc_activation_of(g, id, &epi, &why)) {
        if (n->op == KC_OP_Clip) return kc_lower_clip(g, p, id, d);
        kc_error_node(d, g, id, "cannot run: %s", why);
        return 1;
    }
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_ACT, id);
    kann_act_args *a = c->args;
    a->count = (uint32_t)kc_value_numel(kc_val(g, y));
    a->act = (kann_act){(uint32_t)epi.act, epi.alpha, epi.beta, 0};
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
    /* Adding the scale and shift constants below may move the value table: keep what the call
     * needs from x now. */
    uint32_t planes = (uint32_t)(xv->dims[0] * C), inner = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
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
    a->planes = planes;
    a->channels = (uint32_t)C;
    a->inner = inner;
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_channel_affine_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, scale), sv, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, shift), tv, 0, 0);
    kc_bind(c, offsetof(kann_channel_affine_args, y), y, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->inner;
    return 0;
}
