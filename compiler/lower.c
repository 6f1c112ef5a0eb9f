/* Lowering: each live node becomes one or more kernel calls with filled argument structs;
 * weights are packed into the layout the kernel reads. Anything a kernel cannot do (rank,
 * dtype, non-constant weights) is reported per node, every node in one run. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower.h"
#include "shapes.h"

/* ---- building calls ---- */

static kc_call *new_call(kc_graph *g, kc_program *p, int kernel, int node) {
    if (p->n_calls == p->cap_calls) {
        int cap = p->cap_calls ? 2 * p->cap_calls : 64;
        kc_call *calls = realloc(p->calls, (size_t)cap * sizeof *calls);
        if (!calls) abort();
        p->calls = calls;
        p->cap_calls = cap;
    }
    kc_call *c = &p->calls[p->n_calls++];
    memset(c, 0, sizeof *c);
    c->kernel = kernel;
    c->node = node;
    c->args_size = kann_kernels[kernel].args_size;
    c->args = kc_alloc(g, c->args_size);
    c->granules[0] = c->granules[1] = 1;
    return c;
}

/* Points the kann_ref at field (byte offset in args) to value v (+byte_offset). */
static void bind(kc_call *c, size_t field, int v, int64_t byte_offset, int write) {
    if (v < 0) return; /* optional argument left as KANN_SPACE_NONE */
    kc_fixup *f = &c->fixups[c->n_fixups++];
    f->field = (uint32_t)field;
    f->value = v;
    f->byte_offset = byte_offset;
    f->write = write;
}

static void set_tile(kc_call *c, uint32_t extent0, uint32_t granule0, uint32_t extent1,
                     uint32_t granule1) {
    kann_tile *t = c->args;
    t->axis = 0;
    t->begin = 0;
    t->end = extent0;
    c->extents[0] = extent0;
    c->extents[1] = extent1;
    c->granules[0] = granule0 ? granule0 : 1;
    c->granules[1] = granule1 ? granule1 : 1;
}

static kann_act node_act(const kc_node *n) {
    kann_act a = {(uint32_t)n->epi.act, n->epi.alpha, n->epi.beta, 0};
    return a;
}

static const kc_value *val(const kc_graph *g, int v) {
    return &g->values[v];
}

/* Requires value v (if present) to be float32 with a fully known shape. */
static int need_f32(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v < 0) return 0;
    const kc_value *x = val(g, v);
    if (x->dtype != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, node, "%s '%s' is %s; only float32 tensors are computed", what,
                      x->name, kc_dtype_name(x->dtype));
        return 1;
    }
    if (kc_value_numel(x) < 0) {
        kc_error_node(d, g, node, "%s '%s' has an unknown shape", what, x->name);
        return 1;
    }
    if (kc_value_numel(x) > UINT32_MAX / 4) {
        kc_error_node(d, g, node, "%s '%s' is too large (%lld elements)", what, x->name,
                      (long long)kc_value_numel(x));
        return 1;
    }
    return 0;
}

static int need_const(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v >= 0 && !kc_is_const(g, v)) {
        kc_error_node(d, g, node, "%s '%s' must be a constant (initializer)", what,
                      val(g, v)->name);
        return 1;
    }
    return 0;
}

static int64_t prod(const int64_t *dims, int from, int to) {
    int64_t n = 1;
    for (int i = from; i < to; i++) n *= dims[i];
    return n;
}

static int input(const kc_node *n, int i) {
    return i < n->n_inputs ? n->inputs[i] : -1;
}

/* A float32 constant made by the compiler (packed or folded parameters). */
static int new_const_f32(kc_graph *g, const char *base, int rank, const int64_t *dims,
                         const float *data) {
    return kc_add_const(g, kc_unique_name(g, base), KC_DTYPE_FLOAT, rank, dims, data);
}

/* ---- per-op lowering ---- */

static int lower_conv(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), w = input(n, 1), b = input(n, 2), y = n->outputs[0];
    int errors = need_f32(g, id, x, "input", d) + need_f32(g, id, w, "weight", d) +
                 need_f32(g, id, b, "bias", d) + need_const(g, id, w, "weight", d) +
                 need_const(g, id, b, "bias", d) + need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    if (win.n_spatial < 1 || win.n_spatial > 2) {
        kc_error_node(d, g, id, "%dD convolution is not supported (1D and 2D are)", win.n_spatial);
        return 1;
    }
    const kc_value *xv = val(g, x), *yv = val(g, y);
    int two = win.n_spatial == 2;
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_CONV2D, id);
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
    a->act = node_act(n);
    bind(c, offsetof(kann_conv2d_args, x), x, 0, 0);
    bind(c, offsetof(kann_conv2d_args, w), w, 0, 0);
    bind(c, offsetof(kann_conv2d_args, bias), b, 0, 0);
    bind(c, offsetof(kann_conv2d_args, residual), n->epi.residual, 0, 0);
    bind(c, offsetof(kann_conv2d_args, y), y, 0, 1);
    uint32_t per_group = a->group ? a->c_out / a->group : 1;
    set_tile(c, a->c_out, per_group > 1 && per_group < 8 ? per_group : 1, a->h_out, 1);
    c->macs = (double)a->n * a->c_out * a->h_out * a->w_out * (a->c_in / (a->group ? a->group : 1)) *
              a->k_h * a->k_w;
    return 0;
}

/* Element strides of a tensor broadcast to a rank-r index space: right-aligned, zero where the
 * tensor has size 1. */
static void broadcast_strides(const kc_value *v, int r, uint32_t *strides) {
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - v->rank);
        if (j < 0 || v->dims[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = (uint32_t)stride;
            stride *= v->dims[j];
        }
    }
}

static int lower_gemm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = input(n, 0), B = input(n, 1), C = input(n, 2), y = n->outputs[0];
    int errors = need_f32(g, id, A, "A", d) + need_f32(g, id, B, "B", d) +
                 need_f32(g, id, C, "C", d) + need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    const kc_value *av = val(g, A), *bv = val(g, B);
    if (av->rank != 2 || bv->rank != 2) {
        kc_error_node(d, g, id, "Gemm operands must be 2-D");
        return 1;
    }
    int ta = (int)kc_attr_int(n, "transA", 0), tb = (int)kc_attr_int(n, "transB", 0);
    uint32_t M = (uint32_t)(ta ? av->dims[1] : av->dims[0]);
    uint32_t K = (uint32_t)(ta ? av->dims[0] : av->dims[1]);
    uint32_t N = (uint32_t)(tb ? bv->dims[0] : bv->dims[1]);
    /* A constant B^T is packed to [K][N] so the kernel's inner loop over columns is dense. */
    if (tb && kc_is_const(g, B)) {
        float *packed = malloc(sizeof(float) * (size_t)K * N);
        if (!packed) abort();
        const float *src = bv->data;
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t j = 0; j < N; j++) packed[(size_t)k * N + j] = src[(size_t)j * K + k];
        int64_t dims[2] = {K, N};
        B = new_const_f32(g, kc_sprintf(g, "%s.packed", bv->name), 2, dims, packed);
        free(packed);
        tb = 0;
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
    kann_matmul_args *a = c->args;
    a->batch = 1;
    a->m = M;
    a->n = N;
    a->k = K;
    a->a_row_stride = ta ? 1 : K;
    a->a_col_stride = ta ? M : 1;
    a->b_row_stride = tb ? 1 : N;
    a->b_col_stride = tb ? K : 1;
    a->alpha = kc_attr_float(n, "alpha", 1.0f);
    a->beta = kc_attr_float(n, "beta", 1.0f);
    if (C >= 0) {
        const kc_value *cv = val(g, C);
        uint32_t st[2];
        if (cv->rank > 2) {
            kc_error_node(d, g, id, "C must have rank <= 2");
            return 1;
        }
        broadcast_strides(cv, 2, st);
        a->bias_row_stride = st[0];
        a->bias_col_stride = st[1];
    }
    a->act = node_act(n);
    bind(c, offsetof(kann_matmul_args, a), A, 0, 0);
    bind(c, offsetof(kann_matmul_args, b), B, 0, 0);
    bind(c, offsetof(kann_matmul_args, bias), C, 0, 0);
    bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, 0, 0);
    bind(c, offsetof(kann_matmul_args, y), y, 0, 1);
    set_tile(c, M, 1, N, 16);
    c->macs = (double)M * N * K;
    return 0;
}

static int lower_matmul(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = input(n, 0), B = input(n, 1), y = n->outputs[0];
    int errors = need_f32(g, id, A, "A", d) + need_f32(g, id, B, "B", d) +
                 need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    const kc_value *av = val(g, A), *bv = val(g, B);
    int ra = av->rank, rb = bv->rank;
    if (ra < 1 || rb < 1) {
        kc_error_node(d, g, id, "MatMul operands must have rank >= 1");
        return 1;
    }
    uint32_t M = ra == 1 ? 1 : (uint32_t)av->dims[ra - 2];
    uint32_t K = (uint32_t)av->dims[ra - 1];
    uint32_t N = rb == 1 ? 1 : (uint32_t)bv->dims[rb - 1];
    /* Batch dims: equal on both sides, or absent / all ones on one side (stride 0). */
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    int64_t batch_a = prod(av->dims, 0, ba), batch_b = prod(bv->dims, 0, bb);
    int same = ba == bb && memcmp(av->dims, bv->dims, sizeof(int64_t) * (size_t)ba) == 0;
    if (!same && batch_a != 1 && batch_b != 1) {
        kc_error_node(d, g, id, "MatMul batch broadcasting between %lld and %lld batches is not "
                      "supported", (long long)batch_a, (long long)batch_b);
        return 1;
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
    kann_matmul_args *a = c->args;
    a->batch = (uint32_t)(batch_a > batch_b ? batch_a : batch_b);
    a->m = M;
    a->n = N;
    a->k = K;
    a->a_batch_stride = batch_a == 1 ? 0 : M * K;
    a->a_row_stride = K;
    a->a_col_stride = 1;
    a->b_batch_stride = batch_b == 1 ? 0 : K * N;
    a->b_row_stride = N;
    a->b_col_stride = 1;
    a->alpha = 1.0f;
    a->beta = 0.0f;
    a->act = node_act(n);
    bind(c, offsetof(kann_matmul_args, a), A, 0, 0);
    bind(c, offsetof(kann_matmul_args, b), B, 0, 0);
    bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, 0, 0);
    bind(c, offsetof(kann_matmul_args, y), y, 0, 1);
    set_tile(c, M, 1, N, 16);
    c->macs = (double)a->batch * M * N * K;
    return 0;
}

static int lower_binary(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = input(n, 0), B = input(n, 1), y = n->outputs[0];
    int errors = need_f32(g, id, A, "A", d) + need_f32(g, id, B, "B", d);
    if (errors) return errors;
    const kc_value *yv = val(g, y);
    if (yv->rank > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d exceeds the limit of %d", yv->rank, KANN_MAX_RANK);
        return 1;
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_BINARY, id);
    kann_binary_args *a = c->args;
    a->op = n->op == KC_OP_Add   ? KANN_BINARY_ADD
            : n->op == KC_OP_Sub ? KANN_BINARY_SUB
            : n->op == KC_OP_Mul ? KANN_BINARY_MUL
                                 : KANN_BINARY_DIV;
    int r = yv->rank ? yv->rank : 1;
    int64_t dims[KC_MAX_RANK];
    for (int i = 0; i < r; i++) dims[i] = yv->rank ? yv->dims[i] : 1;
    a->rank = (uint32_t)r;
    for (int i = 0; i < r; i++) a->dims[i] = (uint32_t)dims[i];
    broadcast_strides(val(g, A), r, a->a_strides);
    broadcast_strides(val(g, B), r, a->b_strides);
    a->act = node_act(n);
    bind(c, offsetof(kann_binary_args, a), A, 0, 0);
    bind(c, offsetof(kann_binary_args, b), B, 0, 0);
    bind(c, offsetof(kann_binary_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(yv);
    set_tile(c, count, 64, 0, 0);
    c->macs = count;
    return 0;
}

/* Constant scalar input i of node n as a float, or dflt when omitted. */
static int const_scalar(kc_graph *g, int id, int i, float dflt, float *out, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int v = input(n, i);
    *out = dflt;
    if (v < 0) return 0;
    if (!kc_is_const(g, v) || kc_value_numel(val(g, v)) != 1 || val(g, v)->dtype != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, id, "input %d must be a constant float scalar", i);
        return 1;
    }
    *out = *(const float *)val(g, v)->data;
    return 0;
}

static int lower_act(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    if (need_f32(g, id, x, "input", d)) return 1;
    kann_act act = {KANN_ACT_RELU, 0, 0, 0};
    if (n->op == KC_OP_Clip) {
        act.kind = KANN_ACT_CLIP;
        if (n->opset < 11) {
            act.alpha = kc_attr_float(n, "min", -FLT_MAX);
            act.beta = kc_attr_float(n, "max", FLT_MAX);
        } else if (const_scalar(g, id, 1, -FLT_MAX, &act.alpha, d) +
                   const_scalar(g, id, 2, FLT_MAX, &act.beta, d)) {
            return 1;
        }
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_ACT, id);
    kann_act_args *a = c->args;
    a->count = (uint32_t)kc_value_numel(val(g, y));
    a->act = act;
    bind(c, offsetof(kann_act_args, x), x, 0, 0);
    bind(c, offsetof(kann_act_args, y), y, 0, 1);
    set_tile(c, a->count, 64, 0, 0);
    c->macs = a->count;
    return 0;
}

static int lower_batchnorm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    int errors = need_f32(g, id, x, "input", d);
    for (int i = 1; i < 5; i++)
        errors += need_f32(g, id, input(n, i), "parameter", d) +
                  need_const(g, id, input(n, i), "parameter", d);
    if (errors) return errors;
    const kc_value *xv = val(g, x);
    if (xv->rank < 2) {
        kc_error_node(d, g, id, "input must have rank >= 2");
        return 1;
    }
    int64_t C = xv->dims[1];
    for (int i = 1; i < 5; i++)
        if (kc_value_numel(val(g, input(n, i))) != C) {
            kc_error_node(d, g, id, "parameter %d must have %lld elements", i, (long long)C);
            return 1;
        }
    double eps = kc_attr_float(n, "epsilon", 1e-5f);
    const float *gamma = val(g, input(n, 1))->data, *beta = val(g, input(n, 2))->data;
    const float *mean = val(g, input(n, 3))->data, *var = val(g, input(n, 4))->data;
    float *scale = malloc(sizeof(float) * 2 * (size_t)C);
    if (!scale) abort();
    float *shift = scale + C;
    for (int64_t i = 0; i < C; i++) {
        double s = gamma[i] / sqrt((double)var[i] + eps);
        scale[i] = (float)s;
        shift[i] = (float)(beta[i] - mean[i] * s);
    }
    int sv = new_const_f32(g, kc_sprintf(g, "%s.scale", n->name), 1, &C, scale);
    int tv = new_const_f32(g, kc_sprintf(g, "%s.shift", n->name), 1, &C, shift);
    free(scale);
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_CHANNEL_AFFINE, id);
    kann_channel_affine_args *a = c->args;
    a->planes = (uint32_t)(xv->dims[0] * C);
    a->channels = (uint32_t)C;
    a->inner = (uint32_t)prod(xv->dims, 2, xv->rank);
    a->act = node_act(n);
    bind(c, offsetof(kann_channel_affine_args, x), x, 0, 0);
    bind(c, offsetof(kann_channel_affine_args, scale), sv, 0, 0);
    bind(c, offsetof(kann_channel_affine_args, shift), tv, 0, 0);
    bind(c, offsetof(kann_channel_affine_args, y), y, 0, 1);
    set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->inner;
    return 0;
}

static int lower_pool(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    if (need_f32(g, id, x, "input", d)) return 1;
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
    const kc_value *xv = val(g, x);
    int two = win.n_spatial == 2;
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_POOL2D, id);
    kann_pool2d_args *a = c->args;
    a->kind = n->op == KC_OP_MaxPool ? KANN_POOL_MAX : KANN_POOL_AVG;
    a->count_include_pad = (uint32_t)kc_attr_int(n, "count_include_pad", 0);
    a->planes = (uint32_t)(xv->dims[0] * xv->dims[1]);
    a->h_in = two ? (uint32_t)win.in[0] : 1;
    a->w_in = (uint32_t)win.in[two];
    a->h_out = two ? (uint32_t)win.out[0] : 1;
    a->w_out = (uint32_t)win.out[two];
    a->k_h = two ? (uint32_t)win.kernel[0] : 1;
    a->k_w = (uint32_t)win.kernel[two];
    a->stride_h = two ? (uint32_t)win.stride[0] : 1;
    a->stride_w = (uint32_t)win.stride[two];
    a->dil_h = two ? (uint32_t)win.dilation[0] : 1;
    a->dil_w = (uint32_t)win.dilation[two];
    a->pad_top = two ? (uint32_t)win.pad_begin[0] : 0;
    a->pad_left = (uint32_t)win.pad_begin[two];
    a->pad_bottom = two ? (uint32_t)win.pad_end[0] : 0;
    a->pad_right = (uint32_t)win.pad_end[two];
    a->act = node_act(n);
    bind(c, offsetof(kann_pool2d_args, x), x, 0, 0);
    bind(c, offsetof(kann_pool2d_args, y), y, 0, 1);
    set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->h_out * a->w_out * a->k_h * a->k_w;
    return 0;
}

static int lower_global_avgpool(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    if (need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = val(g, x);
    if (xv->rank < 2) {
        kc_error_node(d, g, id, "input must have rank >= 2");
        return 1;
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_GLOBAL_AVGPOOL, id);
    kann_global_avgpool_args *a = c->args;
    a->planes = (uint32_t)(xv->dims[0] * xv->dims[1]);
    a->spatial = (uint32_t)prod(xv->dims, 2, xv->rank);
    a->act = node_act(n);
    bind(c, offsetof(kann_global_avgpool_args, x), x, 0, 0);
    bind(c, offsetof(kann_global_avgpool_args, y), y, 0, 1);
    set_tile(c, a->planes, 1, 0, 0);
    c->macs = (double)a->planes * a->spatial;
    return 0;
}

static int lower_softmax(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    if (need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = val(g, x);
    int r = xv->rank;
    int64_t axis = kc_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
    if (axis < 0) axis += r;
    if (r == 0) axis = 0;
    if (axis < 0 || (r > 0 && axis >= r)) {
        kc_error_node(d, g, id, "axis %lld is out of range for rank %d", (long long)axis, r);
        return 1;
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_SOFTMAX, id);
    kann_softmax_args *a = c->args;
    a->outer = (uint32_t)prod(xv->dims, 0, (int)axis);
    if (n->opset < 13) { /* coerced to 2-D: everything from axis on is one row */
        a->axis_len = (uint32_t)prod(xv->dims, (int)axis, r);
        a->inner = 1;
    } else {
        a->axis_len = r ? (uint32_t)xv->dims[axis] : 1;
        a->inner = (uint32_t)prod(xv->dims, (int)axis + 1, r);
    }
    a->log = n->op == KC_OP_LogSoftmax;
    bind(c, offsetof(kann_softmax_args, x), x, 0, 0);
    bind(c, offsetof(kann_softmax_args, y), y, 0, 1);
    set_tile(c, a->outer, 1, 0, 0);
    c->macs = (double)a->outer * a->axis_len * a->inner;
    return 0;
}

static int lower_transpose(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = input(n, 0), y = n->outputs[0];
    if (need_f32(g, id, x, "input", d)) return 1;
    const kc_value *xv = val(g, x);
    int r = xv->rank;
    if (r > KANN_MAX_RANK) {
        kc_error_node(d, g, id, "rank %d exceeds the limit of %d", r, KANN_MAX_RANK);
        return 1;
    }
    int64_t perm[KC_MAX_RANK];
    if (kc_attr_ints(n, "perm", perm, KC_MAX_RANK) != r)
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    int64_t in_strides[KC_MAX_RANK];
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        in_strides[i] = s;
        s *= xv->dims[i];
    }
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_TRANSPOSE, id);
    kann_transpose_args *a = c->args;
    a->rank = (uint32_t)(r ? r : 1);
    a->dims[0] = 1;
    for (int i = 0; i < r; i++) {
        a->dims[i] = (uint32_t)xv->dims[perm[i]];
        a->x_strides[i] = (uint32_t)in_strides[perm[i]];
    }
    bind(c, offsetof(kann_transpose_args, x), x, 0, 0);
    bind(c, offsetof(kann_transpose_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(val(g, y));
    set_tile(c, count, 64, 0, 0);
    c->macs = count;
    return 0;
}

/* A copy of rows x row_len floats from src (+src_off bytes) to dst (+dst_off bytes). */
static void add_copy(kc_graph *g, kc_program *p, int node, int src, int64_t src_off, int dst,
                     int64_t dst_off, uint32_t rows, uint32_t row_len, uint32_t src_stride,
                     uint32_t dst_stride) {
    kc_call *c = new_call(g, p, KANN_KERNEL_F32_COPY, node);
    kann_copy_args *a = c->args;
    a->rows = rows;
    a->row_len = row_len;
    a->x_stride = src_stride;
    a->y_stride = dst_stride;
    bind(c, offsetof(kann_copy_args, x), src, src_off, 0);
    bind(c, offsetof(kann_copy_args, y), dst, dst_off, 1);
    set_tile(c, rows, 1, 0, 0);
    c->macs = (double)rows * row_len;
}

static int lower_concat(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0];
    int errors = need_f32(g, id, y, "output", d);
    for (int i = 0; i < n->n_inputs; i++) errors += need_f32(g, id, n->inputs[i], "input", d);
    if (errors) return errors;
    const kc_value *yv = val(g, y);
    int r = yv->rank;
    int64_t axis = kc_attr_int(n, "axis", 1); /* required since opset 4; 1 before */
    if (axis < 0) axis += r;
    int64_t outer = prod(yv->dims, 0, (int)axis), inner = prod(yv->dims, (int)axis + 1, r);
    int64_t at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int x = n->inputs[i];
        int64_t len = val(g, x)->dims[axis];
        /* Already written in place by its producer (a view made by the fuse pass)? */
        int in_place = val(g, x)->alias_of == y && val(g, x)->alias_offset == at * inner * 4;
        if (!in_place && len > 0)
            add_copy(g, p, id, x, 0, y, at * inner * 4, (uint32_t)outer, (uint32_t)(len * inner),
                     (uint32_t)(len * inner), (uint32_t)(yv->dims[axis] * inner));
        at += len;
    }
    return 0;
}

static int lower_node(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    kc_node *n = &g->nodes[id];
    switch (n->op) {
    case KC_OP_Conv: return lower_conv(g, p, id, d);
    case KC_OP_Gemm: return lower_gemm(g, p, id, d);
    case KC_OP_MatMul: return lower_matmul(g, p, id, d);
    case KC_OP_Add: case KC_OP_Sub: case KC_OP_Mul: case KC_OP_Div:
        return lower_binary(g, p, id, d);
    case KC_OP_Relu: case KC_OP_Clip: return lower_act(g, p, id, d);
    case KC_OP_BatchNormalization: return lower_batchnorm(g, p, id, d);
    case KC_OP_MaxPool: case KC_OP_AveragePool: return lower_pool(g, p, id, d);
    case KC_OP_GlobalAveragePool: return lower_global_avgpool(g, p, id, d);
    case KC_OP_Softmax: case KC_OP_LogSoftmax: return lower_softmax(g, p, id, d);
    case KC_OP_Transpose: return lower_transpose(g, p, id, d);
    case KC_OP_Concat: return lower_concat(g, p, id, d);
    default:
        kc_error_node(d, g, id, "cannot run on a runtime tensor: only constant inputs are "
                      "supported for this operator (it must fold at compile time)");
        return 1;
    }
}

int kc_lower(kc_graph *g, kc_program *p, kc_diag *d) {
    int errors = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].dead) errors += lower_node(g, p, i, d);
    /* Outputs must live in the arena: copy constants (or views of them) there. */
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i];
        int64_t off = 0;
        int root = kc_value_root(g, v, &off);
        if (!kc_is_const(g, root)) continue;
        if (g->values[v].dtype != KC_DTYPE_FLOAT) {
            kc_error_value(d, g, v, "a constant output must be float32, not %s",
                           kc_dtype_name(g->values[v].dtype));
            errors++;
            continue;
        }
        /* The output gets arena storage of its own, filled from a constant twin. */
        int src = root;
        if (root == v) {
            const kc_value *cv = val(g, v);
            src = kc_add_const(g, kc_unique_name(g, cv->name), cv->dtype, cv->rank, cv->dims,
                               cv->data);
        }
        kc_value *out = &g->values[v];
        out->alias_of = -1;
        out->flags &= ~(unsigned)KC_VALUE_CONST;
        out->data = NULL;
        uint32_t count = (uint32_t)kc_value_numel(out);
        add_copy(g, p, -1, src, off, v, 0, 1, count, count, count);
    }
    return errors;
}

void kc_program_free(kc_program *p) {
    free(p->calls);
    p->calls = NULL;
    p->n_calls = p->cap_calls = 0;
}
