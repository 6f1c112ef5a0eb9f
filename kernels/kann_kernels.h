/* Kernel argument structs, the uniform kernel ABI and the registry declarations.
 * Shared by the compiler (which fills the structs) and the runtime (which validates and runs
 * them). Every struct here is an on-disk layout: fixed-width fields, little-endian, no pointers,
 * sizes checked by _Static_assert. Changing a layout means bumping the format major version. */
#ifndef KANN_KERNELS_H
#define KANN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kann.h"

/* ---- memory references ------------------------------------------------------------------ */

/* Where a kernel argument lives. Arguments never hold pointers: a (space, offset) pair works
 * from any load address. */
typedef enum kann_space {
    KANN_SPACE_NONE = 0, /* optional argument absent (bias, residual) */
    KANN_SPACE_ARENA = 1, /* the caller's arena: activations, inputs, outputs, scratch */
    KANN_SPACE_CONST = 2, /* the constants section: packed weights (read-only) */
    KANN_SPACE_COUNT
} kann_space;

typedef struct kann_ref {
    uint32_t space; /* kann_space */
    uint32_t reserved; /* zero */
    uint64_t offset; /* byte offset inside the space */
} kann_ref;

/* The part of a record's work a kernel call does: [begin, end) along one of the kernel's
 * tile axes (each kernel family documents its axes). First member of every argument struct, so
 * the scheduler and the loader can read it without knowing the kernel. */
typedef struct kann_tile {
    uint32_t axis;
    uint32_t begin;
    uint32_t end;
    uint32_t reserved; /* zero */
} kann_tile;

/* Activation applied at the store of a kernel (its epilogue). */
typedef enum kann_act_kind {
    KANN_ACT_NONE = 0,
    KANN_ACT_RELU = 1, /* max(x, 0) */
    KANN_ACT_CLIP = 2, /* min(max(x, alpha), beta) */
    KANN_ACT_LEAKY_RELU = 3, /* x < 0 ? alpha * x : x */
    KANN_ACT_SIGMOID = 4, /* 1 / (1 + exp(-x)) */
    KANN_ACT_HARD_SIGMOID = 5, /* max(0, min(1, alpha * x + beta)) */
    KANN_ACT_HARD_SWISH = 6, /* x * max(0, min(1, x / 6 + 1/2)) */
    KANN_ACT_TANH = 7,
    KANN_ACT_COUNT
} kann_act_kind;

typedef struct kann_act {
    uint32_t kind; /* kann_act_kind */
    float alpha;
    float beta;
    uint32_t reserved; /* zero */
} kann_act;

/* ---- argument structs, one per kernel family ---------------------------------------------
 * All tensors are float32, dense, row-major (NCHW for images) unless strides say otherwise.
 * Optional refs use KANN_SPACE_NONE. Counts are element counts, strides element strides. */

/* conv2d: y[n][m][oh][ow] = act(sum_{c,kh,kw} x[n][g*C/G + c][ih][iw] * w[m][c][kh][kw]
 *                               + bias[m] + residual[n][m][oh][ow])
 * with ih = oh*stride_h - pad_top + kh*dil_h (likewise iw), out-of-range input reading as 0,
 * g = m / (c_out / group). Weights w are [c_out][c_in/group][k_h][k_w].
 * Tile axes: 0 = output channels m, 1 = output rows oh. */
typedef struct kann_conv2d_args {
    kann_tile tile;
    kann_ref x, w, bias, residual, y;
    uint32_t n, c_in, h_in, w_in;
    uint32_t c_out, h_out, w_out, group;
    uint32_t k_h, k_w, stride_h, stride_w;
    uint32_t dil_h, dil_w, pad_top, pad_left;
    kann_act act;
} kann_conv2d_args;

/* matmul: for every batch b, row i < m, column j < n:
 *   y[b][i][j] = act(alpha * sum_k a[b][i][k] * bm[b][k][j] + beta * bias[i][j] + residual[b][i][j])
 * with a[b][i][k] at a + b*a_batch_stride + i*a_row_stride + k*a_col_stride (likewise b and
 * bias; a zero stride broadcasts). y and residual are dense [batch][m][n].
 * Covers Gemm (transA/transB via strides, C via bias strides) and MatMul.
 * Tile axes: 0 = rows i, 1 = columns j (both apply to every batch). */
typedef struct kann_matmul_args {
    kann_tile tile;
    kann_ref a, b, bias, residual, y;
    uint32_t batch, m, n, k;
    uint32_t a_batch_stride, a_row_stride, a_col_stride;
    uint32_t b_batch_stride, b_row_stride, b_col_stride;
    uint32_t bias_row_stride, bias_col_stride;
    float alpha, beta;
    kann_act act;
} kann_matmul_args;

#define KANN_MAX_RANK 6

typedef enum kann_binary_op {
    KANN_BINARY_ADD = 0,
    KANN_BINARY_SUB = 1,
    KANN_BINARY_MUL = 2,
    KANN_BINARY_DIV = 3,
    KANN_BINARY_COUNT
} kann_binary_op;

/* binary: y[i] = act(a[i'] OP b[i'']) over the output index space dims[0..rank), with a and b
 * addressed through their own strides (zero for a broadcast dimension). y is dense.
 * Tile axis 0 = flat output elements. */
typedef struct kann_binary_args {
    kann_tile tile;
    kann_ref a, b, y;
    uint32_t op; /* kann_binary_op */
    uint32_t rank; /* 1..KANN_MAX_RANK */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t a_strides[KANN_MAX_RANK];
    uint32_t b_strides[KANN_MAX_RANK];
    kann_act act;
} kann_binary_args;

/* act: y[i] = act(x[i]) for i < count. In place (x == y) is allowed.
 * Tile axis 0 = elements. */
typedef struct kann_act_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t count;
    uint32_t reserved;
    kann_act act;
} kann_act_args;

/* channel_affine: y[p][i] = act(x[p][i] * scale[p % channels] + shift[p % channels])
 * for planes p < planes (= batch * channels), i < inner. A batch-norm that cannot fold.
 * Tile axis 0 = planes. */
typedef struct kann_channel_affine_args {
    kann_tile tile;
    kann_ref x, scale, shift, y;
    uint32_t planes, channels, inner;
    uint32_t reserved;
    kann_act act;
} kann_channel_affine_args;

typedef enum kann_pool_kind {
    KANN_POOL_MAX = 0,
    KANN_POOL_AVG = 1, /* divisor: window clipped to the input (count_include_pad = 0) or to
                          the padded input (count_include_pad = 1) */
    KANN_POOL_COUNT
} kann_pool_kind;

/* pool2d: y[p][oh][ow] = max or average of x[p][ih][iw] over the window
 * ih = oh*stride_h - pad_top + kh*dil_h, kh < k_h (likewise w); planes p = n * c.
 * The padded input spans [-pad_top, h_in + pad_bottom). Tile axis 0 = planes. */
typedef struct kann_pool2d_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t kind; /* kann_pool_kind */
    uint32_t count_include_pad;
    uint32_t planes, h_in, w_in, h_out, w_out;
    uint32_t k_h, k_w, stride_h, stride_w;
    uint32_t dil_h, dil_w, pad_top, pad_left, pad_bottom, pad_right;
    uint32_t reserved;
    kann_act act;
} kann_pool2d_args;

/* global_avgpool: y[p] = mean_i x[p][i], p < planes, i < spatial. Tile axis 0 = planes. */
typedef struct kann_global_avgpool_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t planes, spatial;
    kann_act act;
} kann_global_avgpool_args;

/* softmax: over the middle axis of x viewed as [outer][axis_len][inner]:
 *   y[o][a][i] = exp(x[o][a][i] - max_a x) / sum_a exp(x[o][a][i] - max_a x)
 * Tile axis 0 = outer. */
typedef struct kann_softmax_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t outer, axis_len, inner;
    uint32_t log; /* 1: LogSoftmax */
} kann_softmax_args;

/* transpose (general strided gather): y dense with dims[0..rank);
 *   y[i0..ir] = x[sum_d i_d * x_strides[d]]
 * Tile axis 0 = flat output elements. */
typedef struct kann_transpose_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t rank;
    uint32_t reserved;
    uint32_t dims[KANN_MAX_RANK];
    uint32_t x_strides[KANN_MAX_RANK];
} kann_transpose_args;

/* copy: rows of row_len elements: y[r*y_stride + i] = x[r*x_stride + i].
 * Concat that cannot be a view, outputs that alias inputs or constants.
 * Tile axis 0 = rows. */
typedef struct kann_copy_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t rows, row_len, x_stride, y_stride;
} kann_copy_args;

/* ---- the registry ------------------------------------------------------------------------- */

/* What a kernel may touch, for validation. */
typedef struct kann_bounds {
    uint64_t arena_size;
    uint64_t const_size;
} kann_bounds;

/* Base addresses for one run. */
typedef struct kann_exec {
    uint8_t *arena;
    const uint8_t *consts;
} kann_exec;

/* kann_kernel_fn (kann.h) is the uniform kernel ABI: called only on validated arguments,
 * it never fails on them. */

/* Proves that running the kernel on these arguments stays inside the bounds: sizes, tile,
 * every (space, offset, extent). Writes a message (what is wrong) and returns non-zero. */
typedef kann_status (*kann_validate_fn)(const void *args, const kann_bounds *b, kann_error *err);

/* kernels.def rows: KANN_KERNEL(ENUM, name, id, family) */
typedef enum kann_kernel_id {
    KANN_KERNEL_BARRIER = 0, /* not a kernel: ends a phase in a record stream */
#define KANN_KERNEL(ENUM, name, id, family) KANN_KERNEL_##ENUM = id,
#include "kernels.def"
#undef KANN_KERNEL
    KANN_KERNEL_COUNT
} kann_kernel_id;

typedef struct kann_kernel_info {
    const char *name; /* NULL for unused ids */
    uint32_t args_size;
    uint32_t n_tile_axes;
    kann_kernel_fn ref; /* portable C reference */
    kann_validate_fn validate;
} kann_kernel_info;

/* Indexed by kann_kernel_id; entry 0 (barrier) has no function. */
extern const kann_kernel_info kann_kernels[KANN_KERNEL_COUNT];

/* Reference kernels and family validators. */
#define KANN_KERNEL(ENUM, name, id, family) void kann_##name##_ref(const void *args, const kann_exec *ex);
#include "kernels.def"
#undef KANN_KERNEL
#define KANN_FAMILY(family, n_axes)                                                              \
    kann_status kann_##family##_validate(const void *args, const kann_bounds *b, kann_error *err);
#include "families.def"
#undef KANN_FAMILY

/* Helpers shared by kernels. */
static inline const float *kann_cref(const kann_exec *ex, kann_ref r) {
    return (const float *)(r.space == KANN_SPACE_CONST ? ex->consts + r.offset
                                                       : ex->arena + r.offset);
}
static inline float *kann_mref(const kann_exec *ex, kann_ref r) {
    return (float *)(ex->arena + r.offset);
}

/* Validation helpers (kernels/validate.c). */
kann_status kann_check_ref(const kann_bounds *b, kann_ref r, uint64_t n_bytes, int writable,
                           int optional, const char *what, kann_error *err);
kann_status kann_check_tile(const kann_tile *t, uint32_t n_axes, const uint32_t *extents,
                            kann_error *err);
kann_status kann_check_act(const kann_act *a, kann_error *err);
/* Bytes spanned by a strided float view; 0 and *overflow = 1 on overflow. */
uint64_t kann_strided_bytes(uint32_t rank, const uint32_t *dims, const uint32_t *strides,
                            int *overflow);

#endif
