/* Lowering of the normalizations onto the norm kernel: LayerNormalization, InstanceNormalization,
 * GroupNormalization, and BatchNormalization whose parameters are only known at run time (a
 * constant one becomes a per-channel multiply-add, lower_eltwise.c). */
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"
#include "shapes_reduce.h"

static int output_at(const kc_node *n, int i) {
    return i < n->n_outputs ? n->outputs[i] : -1;
}

/* One norm call over x viewed as [groups][len], parameters indexed as kann_norm_args says. */
static kc_call *norm_call(kc_graph *g, kc_program *p, int id, int x, int y, uint32_t groups,
                          uint32_t len, uint32_t param_groups, uint32_t param_group_stride,
                          uint32_t param_inner) {
    const kc_node *n = &g->nodes[id];
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_NORM, id);
    kann_norm_args *a = c->args;
    a->groups = groups;
    a->len = len;
    a->param_groups = param_groups;
    a->param_group_stride = param_group_stride;
    a->param_inner = param_inner;
    a->epsilon = kc_attr_float(n, "epsilon", 1e-5f);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_norm_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_norm_args, y), y, 0, 1);
    kc_set_tile(c, groups, 1, 0, 0);
    c->macs = 3.0 * groups * len;
    return c;
}

static int need_inputs_f32(kc_graph *g, int id, int from, int to, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int errors = 0;
    for (int i = from; i <= to; i++)
        errors += kc_need_f32(g, id, kc_input(n, i), "input", d);
    return errors;
}

static int lower_layernorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (need_inputs_f32(g, id, 0, 2, d)) return 1;
    if (kc_attr_int(n, "stash_type", 1) != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, id, "stash_type %lld is not supported (only 1, float32)",
                      (long long)kc_attr_int(n, "stash_type", 1));
        return 1;
    }
    const kc_value *xv = kc_val(g, x);
    int64_t axis;
    if (kc_norm_axis_of(g, id, xv->rank, &axis, d)) return 1;
    uint32_t groups = (uint32_t)kc_prod(xv->dims, 0, (int)axis);
    uint32_t len = (uint32_t)kc_prod(xv->dims, (int)axis, xv->rank);
    if ((uint64_t)groups * len == 0) return 0;
    kc_call *c = norm_call(g, p, id, x, y, groups, len, 1, 0, 1);
    kc_bind(c, offsetof(kann_norm_args, scale), kc_input(n, 1), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, bias), kc_input(n, 2), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, mean_out), output_at(n, 1), 0, 1);
    kc_bind(c, offsetof(kann_norm_args, inv_std_out), output_at(n, 2), 0, 1);
    return 0;
}

static int lower_instancenorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (need_inputs_f32(g, id, 0, 2, d)) return 1;
    const kc_value *xv = kc_val(g, x);
    uint32_t channels = (uint32_t)xv->dims[1];
    uint32_t groups = (uint32_t)(xv->dims[0] * channels);
    uint32_t len = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    if ((uint64_t)groups * len == 0) return 0;
    kc_call *c = norm_call(g, p, id, x, y, groups, len, channels, 1, len);
    kc_bind(c, offsetof(kann_norm_args, scale), kc_input(n, 1), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, bias), kc_input(n, 2), 0, 0);
    return 0;
}

static int lower_groupnorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (need_inputs_f32(g, id, 0, 2, d)) return 1;
    if (kc_attr_int(n, "stash_type", 1) != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, id, "stash_type %lld is not supported (only 1, float32)",
                      (long long)kc_attr_int(n, "stash_type", 1));
        return 1;
    }
    const kc_value *xv = kc_val(g, x);
    uint32_t n_groups = (uint32_t)kc_attr_int(n, "num_groups", 1);
    uint32_t per_group = (uint32_t)xv->dims[1] / n_groups;
    uint32_t spatial = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    uint32_t groups = (uint32_t)xv->dims[0] * n_groups, len = per_group * spatial;
    if ((uint64_t)groups * len == 0) return 0;
    kc_call *c = kc_node_opset(g, id) >= 21
                     ? norm_call(g, p, id, x, y, groups, len, n_groups, per_group, spatial)
                     : norm_call(g, p, id, x, y, groups, len, n_groups, 1, len);
    kc_bind(c, offsetof(kann_norm_args, scale), kc_input(n, 1), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, bias), kc_input(n, 2), 0, 0);
    return 0;
}

/* Inference BatchNormalization: y = (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c]. */
static int lower_batchnorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int all_const = 1;
    for (int i = 1; i < 5; i++)
        all_const &= kc_input(n, i) >= 0 && kc_is_const(g, kc_input(n, i));
    if (all_const) return kc_lower_batchnorm(g, p, id, d);
    int x = kc_input(n, 0), y = n->outputs[0];
    if (need_inputs_f32(g, id, 0, 4, d)) return 1;
    const kc_value *xv = kc_val(g, x);
    if (xv->rank < 2) {
        kc_error_node(d, g, id, "input must have rank >= 2");
        return 1;
    }
    uint32_t channels = (uint32_t)xv->dims[1];
    for (int i = 1; i < 5; i++)
        if (kc_input(n, i) < 0 || kc_value_numel(kc_val(g, kc_input(n, i))) != channels) {
            kc_error_node(d, g, id, "parameter %d must have %u elements", i, channels);
            return 1;
        }
    uint32_t groups = (uint32_t)xv->dims[0] * channels;
    uint32_t len = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    if ((uint64_t)groups * len == 0) return 0;
    kc_call *c = norm_call(g, p, id, x, y, groups, len, channels, 1, len);
    kann_norm_args *a = c->args;
    a->stats_given = 1;
    kc_bind(c, offsetof(kann_norm_args, scale), kc_input(n, 1), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, bias), kc_input(n, 2), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, mean), kc_input(n, 3), 0, 0);
    kc_bind(c, offsetof(kann_norm_args, var), kc_input(n, 4), 0, 0);
    return 0;
}

int kc_lower_norm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    switch (g->nodes[id].op) {
    case KC_OP_LayerNormalization:
        return lower_layernorm(g, p, id, d);
    case KC_OP_InstanceNormalization:
        return lower_instancenorm(g, p, id, d);
    case KC_OP_GroupNormalization:
        return lower_groupnorm(g, p, id, d);
    case KC_OP_BatchNormalization:
        return lower_batchnorm(g, p, id, d);
    default:
        kc_error_node(d, g, id, "not a normalization");
        return 1;
    }
}

int kc_lower_lrn(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    if (kc_value_numel(xv) == 0) return 0;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_LRN, id);
    kann_lrn_args *a = c->args;
    a->n = (uint32_t)xv->dims[0];
    a->c = (uint32_t)xv->dims[1];
    a->inner = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    a->size = (uint32_t)kc_attr_int(n, "size", 1);
    a->alpha = kc_attr_float(n, "alpha", 1e-4f);
    a->beta = kc_attr_float(n, "beta", 0.75f);
    a->bias = kc_attr_float(n, "bias", 1.0f);
    kc_bind(c, offsetof(kann_lrn_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_lrn_args, y), y, 0, 1);
    kc_set_tile(c, a->n * a->c, 1, 0, 0);
    c->macs = (double)kc_value_numel(xv) * a->size;
    return 0;
}
