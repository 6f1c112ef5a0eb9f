/* Lowering of Conv: a 1-D or 2-D convolution, any groups, with the fused epilogue. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

int kc_lower_conv(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    /* Weights computed at run time are read in place ([M][C/group][kh][kw]) by the reference
     * kernel; constant ones may be packed. */
    int errors = kc_need_f32(g, id, x, "input", d) + kc_need_f32(g, id, w, "weight", d) +
                 kc_need_f32(g, id, b, "bias", d) +
                 kc_need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    if (win.n_spatial < 1 || win.n_spatial > 2) {
        kc_error_node(d, g, id, "%dD convolution is not supported (1D and 2D are)", win.n_spatial);
        return 1;
    }
    const kc_value *xv = kc_val(g, x), *yv = kc_val(g, y);
    int two = win.n_spatial == 2;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV2D, id);
    kann_conv2d_args *a = c->args;
    a->n = (uint32_t)xv->dims[0];
    a->c_in = (uint32_t)xv->dims[1];
    a->h_in = two ? (uint32_t)win.in[0] : 1;
    a->w_in = (uint32_t)win.in[two];
    a->c_out = (uint32_t)yv->dims[1];
    a->h_out = two ? (uint32_t)win.out[0] : 1;
    a->w_out = (uint32_t)win.out[two];
    a->group = (uint32_t)kc_attr_int(n, "group", 1);
    a->k_h = two ? (uint32_t)win.kernel[0] : 1;
    a->k_w = (uint32_t)win.kernel[two];
    a->stride_h = two ? (uint32_t)win.stride[0] : 1;
    a->stride_w = (uint32_t)win.stride[two];
    a->dil_h = two ? (uint32_t)win.dilation[0] : 1;
    a->dil_w = (uint32_t)win.dilation[two];
    a->pad_top = two ? (uint32_t)win.pad_begin[0] : 0;
    a->pad_left = (uint32_t)win.pad_begin[two];
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_conv2d_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, w), w, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, bias), b, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, residual), n->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, y), y, 0, 1);
    uint32_t per_group = a->group ? a->c_out / a->group : 1;
    kc_set_tile(c, a->c_out, per_group > 1 && per_group < 8 ? per_group : 1, a->h_out, 1);
    c->macs = (double)a->n * a->c_out * a->h_out * a->w_out *
              (a->c_in / (a->group ? a->group : 1)) * a->k_h * a->k_w;
    return 0;
}
