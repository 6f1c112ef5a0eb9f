/* Lowering of MaxPool, AveragePool and GlobalAveragePool. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* A pool2d call over planes [h_in][w_in] of x into y, the window along rows from axis r and
 * along columns from axis c of win (-1: a window of one). */
kc_call *kc_pool2d_call(kc_graph *g, kc_program *p, int id, const kc_window *win, int r, int c,
                        uint32_t planes, uint32_t h_in, uint32_t w_in, uint32_t h_out,
                        uint32_t w_out, int x, int y) {
    const kc_node *n = &g->nodes[id];
    kc_call *call = kc_new_call(g, p, KANN_KERNEL_F32_POOL2D, id);
    kann_pool2d_args *a = call->args;
    a->kind = n->op == KC_OP_MaxPool ? KANN_POOL_MAX : KANN_POOL_AVG;
    a->count_include_pad = (uint32_t)kc_attr_int(n, "count_include_pad", 0);
    a->planes = planes;
    a->h_in = h_in;
    a->w_in = w_in;
    a->h_out = h_out;
    a->w_out = w_out;
    a->k_h = r < 0 ? 1 : (uint32_t)win->kernel[r];
    a->k_w = c < 0 ? 1 : (uint32_t)win->kernel[c];
    a->stride_h = r < 0 ? 1 : (uint32_t)win->stride[r];
    a->stride_w = c < 0 ? 1 : (uint32_t)win->stride[c];
    a->dil_h = r < 0 ? 1 : (uint32_t)win->dilation[r];
    a->dil_w = c < 0 ? 1 : (uint32_t)win->dilation[c];
    a->pad_top = r < 0 ? 0 : (uint32_t)win->pad_begin[r];
    a->pad_bottom = r < 0 ? 0 : (uint32_t)win->pad_end[r];
    a->pad_left = c < 0 ? 0 : (uint32_t)win->pad_begin[c];
    a->pad_right = c < 0 ? 0 : (uint32_t)win->pad_end[c];
    kc_bind(call, offsetof(kann_pool2d_args, x), x, 0, 0);
    kc_bind(call, offsetof(kann_pool2d_args, y), y, 0, 1);
    kc_set_tile(call, planes, 1, 0, 0);
    call->macs = (double)planes * h_out * w_out * a->k_h * a->k_w;
    return call;
}

int kc_lower_pool(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && kc_value_uses(g, n->outputs[1])) {
        kc_error_node(d, g, id, "the Indices output of MaxPool is not supported");
        return 1;
    }
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    if (win.n_spatial < 1 || win.n_spatial > 2) {
        kc_error_node(d, g, id, "%dD pooling is not supported (1D and 2D are)", win.n_spatial);
        return 1;
    }
    const kc_value *xv = kc_val(g, x);
    int two = win.n_spatial == 2;
    kc_call *c =
        kc_pool2d_call(g, p, id, &win, two ? 0 : -1, two, (uint32_t)(xv->dims[0] * xv->dims[1]),
                       two ? (uint32_t)win.in[0] : 1, (uint32_t)win.in[two],
                       two ? (uint32_t)win.out[0] : 1, (uint32_t)win.out[two], x, y);
    ((kann_pool2d_args *)c->args)->act = kc_node_act(n);
    return 0;
}

int kc_lower_global_avgpool(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    if (kc_need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = kc_val(g, x);
    if (xv->rank < 2) {
        kc_error_node(d, g, id, "input must have rank >= 2");
        return 1;
    }
    if (kc_prod(xv->dims, 2, xv->rank) == 0) {
        kc_error_node(d, g, id, "input has no spatial elements: their mean is undefined");
        return 1;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_GLOBAL_AVGPOOL, id);
    kann_global_avgpool_args *a = c->args;
    a->planes = (uint32_t)(xv->dims[0] * xv->dims[1]);
    a->spatial = (uint32_t)kc_prod(xv->dims, 2, xv->rank);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_global_avgpool_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_global_avgpool_args, y), y, 0, 1);
    kc_set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->spatial;
    return 0;
}
