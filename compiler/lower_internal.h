/* Shared by the lowering files: call construction and operand checks, and one entry point per
 * op family (lower_<family>.c). Private to the compiler. */
#ifndef KC_LOWER_INTERNAL_H
#define KC_LOWER_INTERNAL_H

#include "kann_kernels.h"
#include "lower.h"

static inline const kc_value *kc_val(const kc_graph *g, int v) {
    return &g->values[v];
}

static inline int kc_input(const kc_node *n, int i) {
    return i < n->n_inputs ? n->inputs[i] : -1;
}

kc_call *kc_new_call(kc_graph *g, kc_program *p, int kernel, int node);
void kc_bind(kc_call *c, size_t field, int v, int64_t byte_offset, int write);
/* kc_bind of the byte_len bytes at byte_offset that the kernel alone touches in v. */
void kc_bind_slice(kc_call *c, size_t field, int v, int64_t byte_offset, int64_t byte_len,
                   int write);
void kc_set_tile(kc_call *c, uint32_t extent0, uint32_t granule0, uint32_t extent1,
                 uint32_t granule1);
kann_act kc_node_act(const kc_node *n);
int kc_need_f32(kc_graph *g, int node, int v, const char *what, kc_diag *d);
int kc_need_const(kc_graph *g, int node, int v, const char *what, kc_diag *d);
int64_t kc_prod(const int64_t *dims, int from, int to);
int kc_new_const_f32(kc_graph *g, const char *base, int rank, const int64_t *dims,
                     const float *data);
int kc_new_scratch(kc_graph *g, const char *base, int64_t floats);
void kc_bind_scratch(kc_graph *g, const kc_program *p, kc_call *c, size_t field, const char *base,
                     int64_t floats);
/* kc_bind_scratch for a scratch every tile writes whole, along either axis: each stream its
 * own copy whatever the tile's axis. */
void kc_bind_scratch_private(kc_graph *g, const kc_program *p, kc_call *c, size_t field,
                             const char *base, int64_t floats);
void kc_broadcast_strides(const kc_value *v, int r, uint32_t *strides);
void kc_add_copy(kc_graph *g, kc_program *p, int node, int src, int64_t src_off, int dst,
                 int64_t dst_off, uint32_t rows, uint32_t row_len, uint32_t src_stride,
                 uint32_t dst_stride);
/* A fused MatMul's third input (kc_fuse_transformer), if any, bound as the matmul call's bias
 * along the last axis: the same row for every row and batch (lower_gemm.c). */
void kc_matmul_row_bias(const kc_node *n, kc_call *c);

int kc_lower_conv(kc_graph *g, kc_program *p, int id, kc_diag *d);
/* A 3-D Conv as 2-D convs over depth slices (lower_conv.c), act fused; 0 where it does not
 * apply and nothing was lowered. */
struct kc_window;
int kc_lower_conv3d(kc_graph *g, kc_program *p, int id, const struct kc_window *win, kann_act act);
/* A 1-D or 2-D ConvTranspose as stride-1 convs over its output phases (lower_conv.c); 0 where
 * that does not apply and nothing was lowered. */
struct kc_conv_transpose;
int kc_lower_conv_transpose_phases(kc_graph *g, kc_program *p, int id,
                                   const struct kc_conv_transpose *ct);
int kc_lower_gemm(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_matmul(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_einsum(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_matmul_broadcast(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_elementwise_binary(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_unary(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_cast(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_where(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_clip(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_act(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_batchnorm(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_pool(kc_graph *g, kc_program *p, int id, kc_diag *d);
/* A pool2d call over planes [h_in][w_in] of x into y, the window along rows from axis r and
 * along columns from axis c of win (-1: a window of one); no activation (lower_pool.c). */
struct kc_window;
kc_call *kc_pool2d_call(kc_graph *g, kc_program *p, int id, const struct kc_window *win, int r,
                        int c, uint32_t planes, uint32_t h_in, uint32_t w_in, uint32_t h_out,
                        uint32_t w_out, int x, int y);
int kc_lower_global_avgpool(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_softmax(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_transpose(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_concat(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_reduce(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_hardmax(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_cumsum(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_topk(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_norm(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_lrn(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_loss(kc_graph *g, kc_program *p, int id, kc_diag *d);
/* Data movement and spatial ops (lower_data.c, lower_spatial.c). */
int kc_need_movable(kc_graph *g, int node, int v, const char *what, kc_diag *d);
/* y (dense, dims) from x read through x_strides (elements), on f32_transpose (lower_layout.c). */
void kc_emit_f32_transpose(kc_graph *g, kc_program *p, int node, int x, int y, int rank,
                           const int64_t *dims, const int64_t *x_strides);
/* Copies y[y_base + sum i*ys] = x[x_base + sum i*xs] over dims (elements of x's dtype). */
void kc_emit_strided_copy(kc_graph *g, kc_program *p, int node, int x, int64_t x_base, int y,
                          int64_t y_base, int rank, const int64_t *dims, const int64_t *xs,
                          const int64_t *ys);
int kc_lower_slice(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_split(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_transpose_any(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_concat_any(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_expand(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_tile(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_depth_space(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_gather(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_gather_elements(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_pad(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_trilu(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_conv_transpose(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_global_maxpool(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_resize(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_scatter_elements(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_scatter_nd(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_gather_nd(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_pool_wants_nd(const kc_graph *g, int id);
int kc_lower_pool_nd(kc_graph *g, kc_program *p, int id, kc_diag *d);
int kc_lower_conv_nd(kc_graph *g, kc_program *p, int id, kc_diag *d);

#endif
