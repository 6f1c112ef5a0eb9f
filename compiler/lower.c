/* Lowering: each live node becomes one or more kernel calls with filled argument structs;
 * weights are packed into the layout the kernel reads. Anything a kernel cannot do (rank,
 * dtype, non-constant weights) is reported per node, every node in one run. This file holds
 * the dispatch and the helpers; each op family lowers in its own lower_<family>.c. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* ---- building calls ---- */

kc_call *kc_new_call(kc_graph *g, kc_program *p, int kernel, int node) {
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
    c->fixed_axis = -1;
    c->stream = -1;
    return c;
}

/* Points the kann_ref at field (byte offset in args) to value v (+byte_offset). */
void kc_bind(kc_call *c, size_t field, int v, int64_t byte_offset, int write) {
    if (v < 0) return; /* optional argument left as KANN_SPACE_NONE */
    if (c->n_fixups == KC_MAX_FIXUPS) abort();
    kc_fixup *f = &c->fixups[c->n_fixups++];
    f->field = (uint32_t)field;
    f->value = v;
    f->byte_offset = byte_offset;
    f->byte_len = 0;
    f->write = write;
    f->copies = 0;
    f->private_all = 0;
}

void kc_bind_slice(kc_call *c, size_t field, int v, int64_t byte_offset, int64_t byte_len,
                   int write) {
    if (v < 0) return;
    kc_bind(c, field, v, byte_offset, write);
    c->fixups[c->n_fixups - 1].byte_len = byte_len;
}

void kc_set_tile(kc_call *c, uint32_t extent0, uint32_t granule0, uint32_t extent1,
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

kann_act kc_node_act(const kc_node *n) {
    kann_act a = {(uint32_t)n->epi.act, n->epi.alpha, n->epi.beta, 0};
    return a;
}

/* Requires value v (if present) to be float32 with a fully known shape. */
int kc_need_f32(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v < 0) return 0;
    const kc_value *x = kc_val(g, v);
    if (x->dtype != KC_DTYPE_FLOAT) {
        kc_error_node(d, g, node, "%s '%s' is %s; only float32 tensors are computed", what, x->name,
                      kc_dtype_name(x->dtype));
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

int kc_need_const(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v >= 0 && !kc_is_const(g, v)) {
        kc_error_node(d, g, node, "%s '%s' must be a constant (initializer)", what,
                      kc_val(g, v)->name);
        return 1;
    }
    return 0;
}

int64_t kc_prod(const int64_t *dims, int from, int to) {
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= dims[i];
    return n;
}

/* A float32 arena value a lowering uses as scratch or between its calls: live from the first
 * to the last call that binds it (the memory plan's rule for every value). */
int kc_new_scratch(kc_graph *g, const char *base, int64_t floats) {
    int v = kc_add_value(g, kc_unique_name(g, base));
    kc_value *s = &g->values[v];
    s->dtype = KC_DTYPE_FLOAT;
    s->rank = 1;
    s->dims[0] = floats;
    return v;
}

/* A scratch of floats bound to field, of which tiles of c along axis 1 write disjoint parts
 * and each tile along axis 0 all: a copy for each of the streams the program is lowered for,
 * so that tiles along axis 0 may run at the same time (kc_schedule_trim_scratch drops the
 * copies a call does not use). */
void kc_bind_scratch(kc_graph *g, const kc_program *p, kc_call *c, size_t field, const char *base,
                     int64_t floats) {
    int copies = p->streams > 1 ? p->streams : 1;
    kc_bind(c, field, kc_new_scratch(g, base, floats * copies), 0, 1);
    c->fixups[c->n_fixups - 1].copies = copies;
}

void kc_bind_scratch_private(kc_graph *g, const kc_program *p, kc_call *c, size_t field,
                             const char *base, int64_t floats) {
    kc_bind_scratch(g, p, c, field, base, floats);
    c->fixups[c->n_fixups - 1].private_all = 1;
}

/* A float32 constant made by the compiler (packed or folded parameters). */
int kc_new_const_f32(kc_graph *g, const char *base, int rank, const int64_t *dims,
                     const float *data) {
    return kc_add_const(g, kc_unique_name(g, base), KC_DTYPE_FLOAT, rank, dims, data);
}

/* Element strides of a tensor broadcast to a rank-r index space: right-aligned, zero where the
 * tensor has size 1. */
void kc_broadcast_strides(const kc_value *v, int r, uint32_t *strides) {
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

/* A copy of rows x row_len floats from src (+src_off bytes) to dst (+dst_off bytes). */
void kc_add_copy(kc_graph *g, kc_program *p, int node, int src, int64_t src_off, int dst,
                 int64_t dst_off, uint32_t rows, uint32_t row_len, uint32_t src_stride,
                 uint32_t dst_stride) {
    /* One contiguous range (a Concat input that is a view of another value's range) is one row,
     * which the streams cannot share: cut it into rows of 1-4 Ki elements where some such length
     * divides it. */
    uint64_t n = (uint64_t)rows * row_len;
    if ((rows == 1 || (src_stride == row_len && dst_stride == row_len)) && n > 4096)
        for (uint32_t len = 4096; len >= 1024; len--)
            if (n % len == 0) {
                rows = (uint32_t)(n / len);
                row_len = src_stride = dst_stride = len;
                break;
            }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_COPY, node);
    kann_copy_args *a = c->args;
    a->rows = rows;
    a->row_len = row_len;
    a->x_stride = src_stride;
    a->y_stride = dst_stride;
    kc_bind(c, offsetof(kann_copy_args, x), src, src_off, 0);
    kc_bind(c, offsetof(kann_copy_args, y), dst, dst_off, 1);
    kc_set_tile(c, rows, 1, 0, 0);
    c->macs = (double)rows * row_len;
}

/* ---- dispatch ---- */

static int lower_node(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    kc_node *n = &g->nodes[id];
    /* The records count elements in 32 bits (and bytes within a 4 GiB arena): an output past
     * that, which a hostile shape can ask for, is refused here for every op alike. A node whose
     * outputs are all empty computes nothing (its dims may still be huge: 10^9 x 0). */
    int empty = 1;
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0) continue;
        int64_t count = kc_value_numel(kc_val(g, n->outputs[i]));
        if (count > UINT32_MAX / 4) {
            kc_error_node(d, g, id, "output '%s' is too large (%lld elements)",
                          kc_val(g, n->outputs[i])->name, (long long)count);
            return 1;
        }
        empty &= count == 0;
    }
    if (empty && n->n_outputs > 0) return 0;
    switch (n->op) {
    case KC_OP_Conv: /* 3-D convolutions by the direct conv_nd kernel */
        return kc_val(g, n->inputs[0])->rank == 5 ? kc_lower_conv_nd(g, p, id, d)
                                                  : kc_lower_conv(g, p, id, d);
    case KC_OP_Gemm:
        return kc_lower_gemm(g, p, id, d);
    case KC_OP_MatMul:
        return kc_lower_matmul(g, p, id, d);
    case KC_OP_Einsum:
        return kc_lower_einsum(g, p, id, d);
    case KC_OP_Add:
    case KC_OP_Sub:
    case KC_OP_Mul:
    case KC_OP_Div:
    case KC_OP_Pow:
    case KC_OP_Max:
    case KC_OP_Min:
    case KC_OP_Sum:
    case KC_OP_Mean:
    case KC_OP_Mod:
    case KC_OP_PRelu:
    case KC_OP_BitShift:
    case KC_OP_Equal:
    case KC_OP_Less:
    case KC_OP_LessOrEqual:
    case KC_OP_Greater:
    case KC_OP_GreaterOrEqual:
    case KC_OP_And:
    case KC_OP_Or:
    case KC_OP_Xor:
        return kc_lower_elementwise_binary(g, p, id, d);
    case KC_OP_Abs:
    case KC_OP_Neg:
    case KC_OP_Sign:
    case KC_OP_Exp:
    case KC_OP_Log:
    case KC_OP_Sqrt:
    case KC_OP_Reciprocal:
    case KC_OP_Floor:
    case KC_OP_Ceil:
    case KC_OP_Round:
    case KC_OP_Sin:
    case KC_OP_Cos:
    case KC_OP_Tan:
    case KC_OP_Asin:
    case KC_OP_Acos:
    case KC_OP_Atan:
    case KC_OP_Sinh:
    case KC_OP_Cosh:
    case KC_OP_Asinh:
    case KC_OP_Acosh:
    case KC_OP_Atanh:
    case KC_OP_Erf:
    case KC_OP_IsNaN:
    case KC_OP_IsInf:
    case KC_OP_Not:
        return kc_lower_unary(g, p, id, d);
    case KC_OP_Relu:
    case KC_OP_Clip:
    case KC_OP_Sigmoid:
    case KC_OP_Tanh:
    case KC_OP_LeakyRelu:
    case KC_OP_HardSigmoid:
    case KC_OP_HardSwish:
    case KC_OP_Elu:
    case KC_OP_Selu:
    case KC_OP_Celu:
    case KC_OP_Softplus:
    case KC_OP_Softsign:
    case KC_OP_ThresholdedRelu:
    case KC_OP_Gelu:
    case KC_OP_Mish:
        return kc_lower_act(g, p, id, d);
    case KC_OP_Cast:
    case KC_OP_CastLike:
        return kc_lower_cast(g, p, id, d);
    case KC_OP_Where:
        return kc_lower_where(g, p, id, d);
    case KC_OP_BatchNormalization: /* constant parameters: kc_lower_batchnorm */
    case KC_OP_LayerNormalization:
    case KC_OP_InstanceNormalization:
    case KC_OP_GroupNormalization:
        return kc_lower_norm(g, p, id, d);
    case KC_OP_ReduceSum:
    case KC_OP_ReduceMean:
    case KC_OP_ReduceMax:
    case KC_OP_ReduceMin:
    case KC_OP_ReduceProd:
    case KC_OP_ReduceL1:
    case KC_OP_ReduceL2:
    case KC_OP_ReduceLogSum:
    case KC_OP_ReduceLogSumExp:
    case KC_OP_ReduceSumSquare:
    case KC_OP_ArgMax:
    case KC_OP_ArgMin:
        return kc_lower_reduce(g, p, id, d);
    case KC_OP_Hardmax:
        return kc_lower_hardmax(g, p, id, d);
    case KC_OP_LRN:
        return kc_lower_lrn(g, p, id, d);
    case KC_OP_NegativeLogLikelihoodLoss:
    case KC_OP_SoftmaxCrossEntropyLoss:
        return kc_lower_loss(g, p, id, d);
    case KC_OP_MaxPool:
    case KC_OP_AveragePool: /* 3-D, or MaxPool's Indices: pool_nd */
        return kc_pool_wants_nd(g, id) ? kc_lower_pool_nd(g, p, id, d) : kc_lower_pool(g, p, id, d);
    case KC_OP_GlobalAveragePool:
        return kc_lower_global_avgpool(g, p, id, d);
    case KC_OP_Softmax:
    case KC_OP_LogSoftmax:
        return kc_lower_softmax(g, p, id, d);
    case KC_OP_Transpose: /* float32 by the transpose kernel, other dtypes by strided copy */
        return kc_val(g, n->outputs[0])->dtype == KC_DTYPE_FLOAT
                   ? kc_lower_transpose(g, p, id, d)
                   : kc_lower_transpose_any(g, p, id, d);
    case KC_OP_Concat:
        return kc_val(g, n->outputs[0])->dtype == KC_DTYPE_FLOAT ? kc_lower_concat(g, p, id, d)
                                                                 : kc_lower_concat_any(g, p, id, d);
    case KC_OP_Slice:
        return kc_lower_slice(g, p, id, d);
    case KC_OP_Split:
        return kc_lower_split(g, p, id, d);
    case KC_OP_Expand:
        return kc_lower_expand(g, p, id, d);
    case KC_OP_Tile:
        return kc_lower_tile(g, p, id, d);
    case KC_OP_DepthToSpace:
    case KC_OP_SpaceToDepth:
        return kc_lower_depth_space(g, p, id, d);
    case KC_OP_Gather:
        return kc_lower_gather(g, p, id, d);
    case KC_OP_GatherElements:
        return kc_lower_gather_elements(g, p, id, d);
    case KC_OP_Pad:
        return kc_lower_pad(g, p, id, d);
    case KC_OP_Trilu:
        return kc_lower_trilu(g, p, id, d);
    case KC_OP_CumSum:
        return kc_lower_cumsum(g, p, id, d);
    case KC_OP_TopK:
        return kc_lower_topk(g, p, id, d);
    case KC_OP_ConvTranspose:
        return kc_lower_conv_transpose(g, p, id, d);
    case KC_OP_GlobalMaxPool:
        return kc_lower_global_maxpool(g, p, id, d);
    case KC_OP_Resize:
    case KC_OP_Upsample:
        return kc_lower_resize(g, p, id, d);
    case KC_OP_Scatter:
    case KC_OP_ScatterElements:
        return kc_lower_scatter_elements(g, p, id, d);
    case KC_OP_ScatterND:
        return kc_lower_scatter_nd(g, p, id, d);
    case KC_OP_GatherND:
        return kc_lower_gather_nd(g, p, id, d);
    default:
        kc_error_node(d, g, id,
                      "cannot run on a runtime tensor: only constant inputs are "
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
        size_t es = kc_dtype_size(g->values[v].dtype);
        if (es != 1 && es != 2 && es != 4 && es != 8) {
            kc_error_value(d, g, v, "a constant output cannot have type %s",
                           kc_dtype_name(g->values[v].dtype));
            errors++;
            continue;
        }
        /* The output gets arena storage of its own, filled from a constant twin. */
        int src = root;
        if (root == v) {
            const kc_value *cv = kc_val(g, v);
            src = kc_add_const(g, kc_unique_name(g, cv->name), cv->dtype, cv->rank, cv->dims,
                               cv->data);
        }
        kc_value *out = &g->values[v];
        out->alias_of = -1;
        out->flags &= ~(unsigned)KC_VALUE_CONST;
        out->data = NULL;
        uint32_t count = (uint32_t)kc_value_numel(out);
        if (out->dtype == KC_DTYPE_FLOAT) {
            kc_add_copy(g, p, -1, src, off, v, 0, 1, count, count, count);
        } else { /* other dtypes: a byte-exact strided copy */
            int64_t dims[1] = {count}, one[1] = {1};
            kc_emit_strided_copy(g, p, -1, src, off / (int64_t)es, v, 0, 1, dims, one, one);
        }
    }
    return errors;
}

void kc_program_free(kc_program *p) {
    free(p->calls);
    free(p->phase_first);
    free(p->phase_last);
    p->phase_first = p->phase_last = NULL;
    p->calls = NULL;
    p->n_calls = p->cap_calls = 0;
}
