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
    KANN_ACT_ELU = 8, /* x < 0 ? alpha * (exp(x) - 1) : x */
    KANN_ACT_SELU = 9, /* beta * (x <= 0 ? alpha * (exp(x) - 1) : x)  (ONNX's gamma is beta) */
    KANN_ACT_CELU = 10, /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), alpha != 0 */
    KANN_ACT_SOFTPLUS = 11, /* log(1 + exp(x)) */
    KANN_ACT_SOFTSIGN = 12, /* x / (1 + |x|) */
    KANN_ACT_THRESHOLDED_RELU = 13, /* x > alpha ? x : 0 */
    KANN_ACT_GELU = 14, /* x / 2 * (1 + erf(x / sqrt(2))) */
    KANN_ACT_GELU_TANH = 15, /* x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) */
    KANN_ACT_MISH = 16, /* x * tanh(log(1 + exp(x))) */
    KANN_ACT_SILU = 17, /* x * sigmoid(x) (x * Sigmoid(x) in ONNX graphs) */
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
 *   y[b][i][j] = act(alpha * sum_k a[b][i][k] * bm[b][k][j]
 *                    + beta * bias[i][j] + residual[b][i][j])
 * with a[b][i][k] at a + b*a_batch_stride + i*a_row_stride + k*a_col_stride (likewise bias; a
 * zero stride broadcasts). y and residual are dense [batch][m][n].
 * bm[b][k][j] at b + b*b_batch_stride + k*b_row_stride + col(j), where col(j) = j*b_col_stride
 * with b_panel_stride 0, and otherwise B's columns lie in panels of KANN_MATMUL_PANEL:
 * col(j) = (j / 64)*b_panel_stride + (j % 64)*b_col_stride (constant weights packed
 * [panel][k][64], each panel one sequential stream; kann_matmul_b_col).
 * Covers Gemm (transA/transB via strides, C via bias strides) and MatMul.
 * Tile axes: 0 = rows i, 1 = columns j (both apply to every batch). */
#define KANN_MATMUL_PANEL 64
typedef struct kann_matmul_args {
    kann_tile tile;
    kann_ref a, b, bias, residual, y;
    uint32_t batch, m, n, k;
    uint32_t a_batch_stride, a_row_stride, a_col_stride;
    uint32_t b_batch_stride, b_row_stride, b_col_stride, b_panel_stride;
    uint32_t bias_row_stride, bias_col_stride;
    float alpha, beta;
    kann_act act;
} kann_matmul_args;

/* B's column j: its offset (floats) from the start of its row. */
static inline size_t kann_matmul_b_col(const kann_matmul_args *a, size_t j) {
    if (!a->b_panel_stride) return j * a->b_col_stride;
    return j / KANN_MATMUL_PANEL * a->b_panel_stride + j % KANN_MATMUL_PANEL * a->b_col_stride;
}

/* How many of the len columns from j are b_col_stride apart: all of them, or those up to the
 * end of j's panel. */
static inline size_t kann_matmul_b_run(const kann_matmul_args *a, size_t j, size_t len) {
    size_t left = KANN_MATMUL_PANEL - j % KANN_MATMUL_PANEL;
    return a->b_panel_stride && left < len ? left : len;
}

#define KANN_MAX_RANK 6

typedef enum kann_binary_op {
    KANN_BINARY_ADD = 0,
    KANN_BINARY_SUB = 1,
    KANN_BINARY_MUL = 2,
    KANN_BINARY_DIV = 3, /* integers: truncated; a zero divisor gives 0 */
    KANN_BINARY_POW = 4, /* integers: exact with wrap-around; a negative exponent gives 1 / a^-b
                            truncated */
    KANN_BINARY_MAX = 5, /* NaN when either is NaN */
    KANN_BINARY_MIN = 6,
    KANN_BINARY_FMOD = 7, /* remainder of the truncated division (sign of a), C fmod */
    KANN_BINARY_MOD = 8, /* remainder of the floored division (sign of b); integers only */
    KANN_BINARY_PRELU = 9, /* a < 0 ? a * b : a */
    /* comparisons and logic: y is bool (one byte, 0 or 1) */
    KANN_BINARY_EQUAL = 10,
    KANN_BINARY_LESS = 11,
    KANN_BINARY_LESS_OR_EQUAL = 12,
    KANN_BINARY_GREATER = 13,
    KANN_BINARY_GREATER_OR_EQUAL = 14,
    KANN_BINARY_AND = 15, /* bool operands */
    KANN_BINARY_OR = 16,
    KANN_BINARY_XOR = 17,
    KANN_BINARY_SHIFT_LEFT = 18, /* unsigned operands; a shift past the width gives 0 */
    KANN_BINARY_SHIFT_RIGHT = 19,
    KANN_BINARY_COUNT
} kann_binary_op;

/* binary: y[i] = act(a[i'] OP b[i'']) over the output index space dims[0..rank), with a and b
 * addressed through their own strides (zero for a broadcast dimension). y is dense.
 * Float32 arithmetic only: ADD .. FMOD and PRELU (the others are binary_typed's).
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

/* conv2d_packed: the convolution of conv2d for one image and group 1, as a GEMM over packed
 * weights:
 *   y[m][p] = act(sum_k W[m][k] * B[k][p] + bias[m] + residual[m][p]),  p = oh * w_out + ow,
 *   k = (c * k_h + kh) * k_w + kw,  B[k][p] = x[c][ih][iw] (ih, iw as in conv2d; 0 outside).
 * Weights are packed in panels of KANN_CONV_PANEL output channels, K = c_in * k_h * k_w:
 *   w[(m / 12) * K * 12 + k * 12 + m % 12] = W[m][k], channels past c_out zero,
 * the one layout every ISA variant reads (AVX-512 12x32 tiles, AVX2 two 6x16 halves).
 * A pointwise conv (1x1, stride 1, no padding, same size: see kann_conv2d_packed_pointwise)
 * reads x as B directly and has no scratch. Any other gathers B into scratch: K floats per
 * output pixel rounded up to KANN_CONV_PIXEL_GRANULE, of which a tile writes only the part
 * from begin * K up to round_up(end) * K (axis 1) or, along axis 0, all of it: the compiler
 * gives each stream a scratch of its own (the layout inside is private to the variant).
 * Tile axes: 0 = output channels m (begin a multiple of KANN_CONV_PANEL), 1 = output pixels p
 * (begin a multiple of KANN_CONV_PIXEL_GRANULE). */
#define KANN_CONV_PANEL 12
#define KANN_CONV_PIXEL_GRANULE 32
typedef struct kann_conv2d_packed_args {
    kann_tile tile;
    kann_ref x, w, bias, residual, y, scratch;
    uint32_t c_in, h_in, w_in, c_out;
    uint32_t h_out, w_out, k_h, k_w;
    uint32_t stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t reserved[2]; /* zero */
    kann_act act;
} kann_conv2d_packed_args;

/* conv2d_maxpool: a conv2d_packed conv (no residual) whose output c goes straight into a max
 * pool, never stored whole:
 *   c[m][i][j] = act(bias[m] + sum_{c,kh,kw} W[m][c][kh][kw] * x[c][ih][iw]), with ih =
 *     i * stride_h - pad_top + kh * dil_h (likewise iw), x = 0 outside it, i < h_conv, j < w_conv;
 *   y[m][q][r] = max of c[m][q * pool_stride_h - pool_pad_top + u][r * pool_stride_w -
 *     pool_pad_left + v] over u < pool_k_h, v < pool_k_w inside [0, h_conv) x [0, w_conv)
 *     (NaNs skipped, as pool2d does; a window of NaNs only gives -inf).
 * Weights and bias as conv2d_packed's (panels of KANN_CONV_PANEL channels, [panel][K][12]).
 * Every pool window starts inside c (pads below the window size, the last window's first row
 * and column inside). scratch: one per stream, kann_conv2d_maxpool_scratch floats (rows of c
 * that the pool windows share, and what a variant needs to compute them; ref/conv2d_maxpool.h).
 * Tile axes: 0 = output channels m (begin a multiple of KANN_CONV_PANEL), 1 = pooled rows q. */
typedef struct kann_conv2d_maxpool_args {
    kann_tile tile;
    kann_ref x, w, bias, y, scratch;
    uint32_t c_in, h_in, w_in, c_out;
    uint32_t h_conv, w_conv, k_h, k_w;
    uint32_t stride_h, stride_w, dil_h, dil_w;
    uint32_t pad_top, pad_left;
    uint32_t pool_k_h, pool_k_w, pool_stride_h, pool_stride_w;
    uint32_t pool_pad_top, pool_pad_left;
    uint32_t h_out, w_out;
    kann_act act;
} kann_conv2d_maxpool_args;

/* dwblock: a depthwise conv between two pointwise convs (an inverted residual block), or
 * after none (expand 0: a depthwise-separable pair), whose inner maps e and d are never
 * stored whole:
 *   e[c][i][j] = act_exp(sum_k W_exp[c][k] * x[k][i][j] + b_exp[c])   (c < c_mid, expand 1)
 *   e = x, c_mid = c_in                                                (expand 0)
 *   d[c][oh][ow] = act_dw(sum_{kh,kw} w_dw[c][kh][kw] * e[c][ih][iw] + b_dw[c]), with
 *     ih = oh * stride_h - pad_top + kh * dil_h (likewise iw), e = 0 outside [0, h_in) x [0, w_in)
 *   y[m][oh][ow] = act_proj(sum_c W_proj[m][c] * d[c][oh][ow] + b_proj[m] + residual[m][oh][ow])
 * x [c_in][h_in][w_in], y and residual [c_out][h_out][w_out]; W_exp and W_proj packed as
 * conv2d_packed's weights (panels of KANN_CONV_PANEL output channels, [panel][K][12], K = c_in
 * and c_mid), w_dw [c_mid][k_h][k_w]; biases optional (absent: 0), W_exp and b_exp absent with
 * expand 0. Every output row's window reaches inside x: pad_top <= (k_h - 1) * dil_h and
 * (h_out - 1) * stride_h <= h_in - 1 + pad_top (likewise along the columns).
 * The kernel walks its rows band_rows output rows at a time: the rows of e they read into the
 * scratch, then their rows of d after them, then their rows of y (a band's first rows of e are
 * computed again by the next band where their windows overlap). scratch, one per stream:
 * kann_dwblock_scratch(args) floats (ref/dwblock.h), with slots 0; or slots copies of it,
 * kann_dwblock_slot_floats(args) apart, where the record runs in parts (slots >= 2): a thread
 * that runs a part while others run the rest takes a copy of its own (kann_kernel_part_slots),
 * and every part computes the rows of e it needs one at a time, so that they come out the same
 * in whichever part. The kernel claims each band (kann_exec.claim) before it computes it.
 * Tile axis 0 = output rows oh. */
typedef struct kann_dwblock_args {
    kann_tile tile;
    kann_ref x, w_exp, b_exp, w_dw, b_dw, w_proj, b_proj, residual, y, scratch;
    uint32_t expand, c_in, c_mid, c_out;
    uint32_t h_in, w_in, h_out, w_out;
    uint32_t k_h, k_w, stride_h, stride_w;
    uint32_t dil_h, dil_w, pad_top, pad_left;
    uint32_t band_rows, slots; /* slots: the scratch's copies (0: one, not cut) */
    kann_act act_exp, act_dw, act_proj;
} kann_dwblock_args;

/* pointwise_gap: a 1x1 conv (stride 1, no padding, one group), its activation, and the global
 * average pool after it, the conv's output never stored (a classifier head: squeezenet1_1's
 * 512 -> 1000 conv over 13x13 and its pool, mobilenet_v2's last conv):
 *   y[m] = (1 / hw) * sum_{p < hw} act(bias[m] + sum_{k < c_in} W[m][k] * x[k][p]),  m < c_out
 * x dense [c_in][hw], y dense [c_out], bias [c_out] (optional: absent, 0). The weights are packed
 * in blocks of KANN_GAP_BLOCK output channels with the channels innermost, [block][c_in][32]:
 *   w[(m / 32) * c_in * 32 + k * 32 + m % 32] = W[m][k], channels past c_out zero,
 * so a variant holds the channels in its vector lanes and broadcasts x. Tile axis 0 = output
 * channels m (begin a multiple of KANN_GAP_BLOCK). */
#define KANN_GAP_BLOCK 32
typedef struct kann_pointwise_gap_args {
    kann_tile tile;
    kann_ref x, w, bias, y;
    uint32_t c_in, c_out, hw;
    uint32_t reserved; /* zero */
    kann_act act;
} kann_pointwise_gap_args;

/* pointwise_lanes: a 1x1 conv (stride 1, no padding, one group) with its bias, residual and
 * activation, for small maps (7x7 to 14x14), where conv2d_packed's 32-pixel strips come out
 * ragged (49 pixels: 32 + 17) and its rows of B misaligned, and for few output channels (16,
 * 32), where its 12-row panels do:
 *   y[m][p] = act(bias[m] + sum_{k < c_in} W[m][k] * x[k][p] + residual[m][p]),
 * m < c_out, p < hw; x dense [c_in][hw], y and residual [c_out][hw] (residual optional), bias
 * [c_out] (optional). Weights as pointwise_gap's, [block][c_in][KANN_GAP_BLOCK] with the output
 * channels innermost, so a variant holds a block's channels in its vector lanes, broadcasts x,
 * and turns the sums around at the store. Each y[m][p] is one sum over k in order, whatever the
 * tile. Tile axes: 0 = output channels m (begin a multiple of KANN_GAP_BLOCK), 1 = pixels p. */
/* The pixels a pointwise_lanes record is cut into parts by (tile axis 1). */
#define KANN_LANES_PIXEL_GRANULE 4
typedef struct kann_pointwise_lanes_args {
    kann_tile tile;
    kann_ref x, w, bias, residual, y;
    uint32_t c_in, c_out, hw;
    uint32_t reserved; /* zero */
    kann_act act;
} kann_pointwise_lanes_args;

/* The output channels [*m_begin, *m_end) and pixels [*p_begin, *p_end) of a's tile. */
static inline void kann_pointwise_lanes_tile(const kann_pointwise_lanes_args *a, size_t *m_begin,
                                             size_t *m_end, size_t *p_begin, size_t *p_end) {
    int channels = a->tile.axis == 0;
    *m_begin = channels ? a->tile.begin : 0;
    *m_end = channels ? a->tile.end : a->c_out;
    *p_begin = channels ? 0 : a->tile.begin;
    *p_end = channels ? a->hw : a->tile.end;
}

/* conv2d_winograd: a 3x3, stride-1, dilation-1, group-1 conv of one image, by Winograd
 * F(e x e, 3x3) with output tiles of edge e = 2 or 4, its padding read in place:
 *   y[m][oh][ow] = act(sum_{c,kh,kw} W[m][c][kh][kw] * x[c][oh + kh - pad][ow + kw - pad]
 *                      + bias[m] + residual[m][oh][ow]),
 * x[c][i][j] = 0 for i or j outside [0, h_in) x [0, w_in): pad (at most 2) rows above and
 * columns left of x, and below and right of it what the output size implies, with
 * h_out + 2 <= h_in + 2 * pad and w_out + 2 <= w_in + 2 * pad (unequal or larger paddings: x
 * padded beforehand, kernel pad2d, and pad 0).
 * transform picks the tiles: KANN_WINO_F2X2 (e = 2: 4x4 input tiles, P = 16 positions) or
 * KANN_WINO_F4X4 (e = 4: 6x6 input tiles, P = 36 positions; the transforms of Lavin and Gray
 * on the points 0, +-1, +-2, infinity).
 * Output tiles: t = th * tiles_w + tw, tiles_w = ceil(w_out / e), T = ceil(h_out / e) * tiles_w.
 * u holds the transformed weights U = G g G^T, P positions (row-major) of panels of
 * KANN_CONV_PANEL output channels: u[((pos * panels + m / 12) * c_in + c) * 12 + m % 12],
 * channels past c_out zero. scratch holds the transformed input tiles: per block of
 * KANN_CONV_PIXEL_GRANULE tiles P * (KANN_CONV_PIXEL_GRANULE * c_in + KANN_WINO_POS_PAD)
 * floats (each position's rows followed by a cache line, so that the rows of the P positions
 * do not all fall in one cache set), T rounded up to whole blocks, of which a tile writes only
 * the part of its own tiles (axis 1) or, along axis 0, all of it: the compiler gives each
 * stream a scratch of its own (the layout inside is private to the variant).
 * Tile axes: 0 = output channels (begin a multiple of KANN_WINO_CHANNEL_GRANULE: a tile may
 * start inside a panel), 1 = output tiles t (begin a multiple of KANN_CONV_PIXEL_GRANULE). */
#define KANN_WINO_POS_PAD 16
#define KANN_WINO_CHANNEL_GRANULE 4

/* Floats from one position's rows of a block's transformed tiles to the next. Unpadded, c_in a
 * multiple of 32 put the positions 4 KiB apart: a channel's 36 rows, stored by the input
 * transform and loaded by the GEMMs, all met in one set of the L1 cache (resnet18's 64-channel
 * 56x56 layer 0.45 ms, padded 0.38). */
static inline uint64_t kann_wino_pos_stride(uint64_t c_in) {
    return KANN_CONV_PIXEL_GRANULE * c_in + KANN_WINO_POS_PAD;
}

/* Floats of a conv2d_winograd scratch: `positions` (16 or 36) over `tiles` output tiles. */
static inline uint64_t kann_wino_scratch_floats(uint64_t positions, uint64_t c_in,
                                                uint64_t tiles) {
    uint64_t g = KANN_CONV_PIXEL_GRANULE;
    return (tiles + g - 1) / g * positions * kann_wino_pos_stride(c_in);
}

typedef enum kann_wino_transform {
    KANN_WINO_F2X2 = 0, /* F(2x2, 3x3) */
    KANN_WINO_F4X4 = 1, /* F(4x4, 3x3) */
    KANN_WINO_TRANSFORM_COUNT
} kann_wino_transform;

typedef struct kann_conv2d_winograd_args {
    kann_tile tile;
    kann_ref x, u, bias, residual, y, scratch;
    uint32_t c_in, h_in, w_in, c_out;
    uint32_t h_out, w_out;
    uint32_t transform; /* kann_wino_transform */
    uint32_t pad;       /* rows above and columns left of x read as zero */
    kann_act act;
} kann_conv2d_winograd_args;

/* dwconv2d: a depthwise conv2d (group = c_in = c_out): the conv2d argument struct and
 * semantics, weights [c][1][k_h][k_w]. Tile axes as conv2d: 0 = channels, 1 = output rows. */
typedef kann_conv2d_args kann_dwconv2d_args;

typedef enum kann_reduce_op {
    KANN_REDUCE_SUM = 0,
    KANN_REDUCE_MEAN = 1,
    KANN_REDUCE_MAX = 2,
    KANN_REDUCE_MIN = 3,
    KANN_REDUCE_PROD = 4,
    KANN_REDUCE_L1 = 5, /* sum |x| */
    KANN_REDUCE_L2 = 6, /* sqrt(sum x^2) */
    KANN_REDUCE_LOG_SUM = 7, /* log(sum x) */
    KANN_REDUCE_LOG_SUM_EXP = 8, /* log(sum exp(x)), the maximum subtracted first */
    KANN_REDUCE_SUM_SQUARE = 9, /* sum x^2 */
    KANN_REDUCE_ARGMAX = 10, /* int64 index along the (single) reduced axis */
    KANN_REDUCE_ARGMIN = 11,
    KANN_REDUCE_COUNT
} kann_reduce_op;

/* reduce: y[o] = OP over r of x[sum_d o_d * out_strides[d] + sum_e r_e * red_strides[e]]
 * for every output index o of out_dims[0..out_rank) (y dense, row-major) and reduction index r
 * of red_dims[0..red_rank). y is float32, or int64 for ARGMAX/ARGMIN (then red_rank is 1 and the
 * result is r_0; ties give the first index, or the last when select_last). An empty reduction
 * gives the op's identity (0, 1, -inf, +inf; NaN for MEAN). Tile axis 0 = flat output elements. */
typedef struct kann_reduce_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t op; /* kann_reduce_op */
    uint32_t out_rank; /* 1..KANN_MAX_RANK */
    uint32_t red_rank; /* 1..KANN_MAX_RANK */
    uint32_t select_last;
    uint32_t out_dims[KANN_MAX_RANK];
    uint32_t out_strides[KANN_MAX_RANK];
    uint32_t red_dims[KANN_MAX_RANK];
    uint32_t red_strides[KANN_MAX_RANK];
} kann_reduce_args;

/* norm: x viewed as [groups][len], each group normalized on its own:
 *   y[g][j] = act((x[g][j] - mean_g) * inv_std_g * scale[p] + bias[p]),  inv_std_g = 1/sqrt(var_g + epsilon)
 * with parameter index p = (g % param_groups) * param_group_stride + j / param_inner (LayerNorm:
 * 1, 0, 1; InstanceNorm: C, 1, len; GroupNorm: G, C/G, spatial). Absent scale reads 1, absent bias 0.
 * Statistics: computed over the group (mean, biased variance), or, with stats_given, read as
 * mean[p] and var[p] (BatchNormalization with statistics computed at run time). Optional
 * mean_out[g] and inv_std_out[g] receive the computed statistics. Tile axis 0 = groups. */
typedef struct kann_norm_args {
    kann_tile tile;
    kann_ref x, scale, bias, mean, var, y, mean_out, inv_std_out;
    uint32_t groups, len;
    uint32_t param_groups, param_group_stride, param_inner;
    uint32_t stats_given;
    float epsilon;
    uint32_t reserved; /* zero */
    kann_act act;
} kann_norm_args;

/* ---- data movement and spatial kernels (any element type where elem_size says so) ---------
 * Element sizes are 1, 2, 4 or 8 bytes; index tensors are int32 or int64 (idx_size 4 or 8). */

/* strided_copy: y[y_base + sum_d i_d * y_strides[d]] = x[x_base + sum_d i_d * x_strides[d]]
 * for every index i of dims[0..rank), in elements of elem_size bytes. Strides are signed
 * (negative: a reversed slice; zero: a broadcast), |stride| <= 2^28. Slice, Split, Expand,
 * Tile, Transpose, DepthToSpace, SpaceToDepth and Concat of any dtype.
 * Tile axis 0 = flat elements of dims, row-major. */
typedef struct kann_strided_copy_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t elem_size;
    uint32_t rank; /* 1..KANN_MAX_RANK */
    uint32_t dims[KANN_MAX_RANK];
    int64_t x_base, y_base;
    int64_t x_strides[KANN_MAX_RANK];
    int64_t y_strides[KANN_MAX_RANK];
} kann_strided_copy_args;

/* gather: y[o][k][i] = x[o][j][i] for o < outer, k < n_indices, i < inner, with j = idx[k]
 * (+ axis_len when negative). An index outside [-axis_len, axis_len) gives a row of zeros.
 * Tile axis 0 = rows o * n_indices + k. */
typedef struct kann_gather_args {
    kann_tile tile;
    kann_ref x, idx, y;
    uint32_t elem_size, idx_size;
    uint32_t outer, axis_len, n_indices, inner;
} kann_gather_args;

/* gather_elements: y and idx are dense with dims[0..rank); y[i] = x[sum_d c_d * x_strides[d]]
 * with c_d = i_d except c_axis = idx[i] (+ axis_len when negative); an index out of range
 * gives 0. Tile axis 0 = flat elements. */
typedef struct kann_gather_elements_args {
    kann_tile tile;
    kann_ref x, idx, y;
    uint32_t elem_size, idx_size;
    uint32_t rank, axis, axis_len;
    uint32_t reserved; /* zero */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t x_strides[KANN_MAX_RANK];
} kann_gather_elements_args;

/* trilu: x and y are [batch][rows][cols]; y[b][i][j] = x[b][i][j] where j - i >= k (upper) or
 * j - i <= k (lower), else 0. k is the int64 at k_ref when present, else the k field.
 * Tile axis 0 = rows b * rows + i. */
typedef struct kann_trilu_args {
    kann_tile tile;
    kann_ref x, k_ref, y;
    uint32_t elem_size, upper;
    uint32_t batch, rows, cols;
    uint32_t reserved; /* zero */
    int64_t k;
} kann_trilu_args;

/* cumsum: x and y are [outer][len][inner] of dtype (F32, I32 or I64); along the middle axis
 *   y[o][j][i] = sum of x[o][j'][i] over j' <= j (j' < j when exclusive; j' >= j, or j' > j,
 *   when reverse), in order along the axis (float sums round as a running sum does; integer
 *   sums wrap around). Each line (o, i) is a running sum of its own, so y may be x (in place).
 * Tile axis 0 = lines o * inner + i. */
typedef struct kann_cumsum_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t dtype; /* kann_dtype */
    uint32_t outer, len, inner;
    uint32_t exclusive, reverse;
} kann_cumsum_args;

/* topk: x is [outer][len][inner] of dtype (F32, I32 or I64); for each line (o, i) the k
 * largest (largest = 1) or smallest elements along the middle axis, best first, go to
 * values[o][r][i] (dtype) and their positions along the axis to indices[o][r][i] (int64),
 * r < k <= len. Equal elements keep their order along the axis (the lower index first); a NaN
 * ranks below every number. Tile axis 0 = lines o * inner + i. */
typedef struct kann_topk_args {
    kann_tile tile;
    kann_ref x, values, indices;
    uint32_t dtype; /* kann_dtype */
    uint32_t outer, len, inner, k;
    uint32_t largest;
} kann_topk_args;

typedef enum kann_pad_mode {
    KANN_PAD_CONSTANT = 0,
    KANN_PAD_REFLECT = 1, /* mirrored about the edge elements, which are not repeated */
    KANN_PAD_EDGE = 2,
    KANN_PAD_WRAP = 3,
    KANN_PAD_COUNT
} kann_pad_mode;

/* pad: y dense with dims[0..rank), x dense with x_dims; y[i] = x[c] with c_d = i_d - pad_begin[d]
 * when every c_d lies in [0, x_dims[d]); otherwise per mode: the constant (the low elem_size
 * bytes of value), or c_d moved inside by the edge, reflect or wrap rule. Negative pads crop.
 * Tile axis 0 = output rows (every dim but the last). */
typedef struct kann_pad_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t elem_size, rank, mode;
    uint32_t reserved; /* zero */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t x_dims[KANN_MAX_RANK];
    int64_t pad_begin[KANN_MAX_RANK];
    uint64_t value;
} kann_pad_args;

/* conv_transpose (float32): over 3 spatial dims (unused ones of size 1), starting from bias,
 *   y[n][g*M/G + m][o] += x[n][g*C/G + c][i] * w[g*C/G + c][m][k],  o_d = i_d*stride_d - pad_d
 *   + k_d*dil_d (taps landing outside y are dropped), then y = act(y).
 * C = c_in, M = c_out, G = group; weights w are [c_in][c_out/group][k0][k1][k2] (ONNX layout).
 * Tile axis 0 = output planes n * c_out + m. */
typedef struct kann_conv_transpose_args {
    kann_tile tile;
    kann_ref x, w, bias, y;
    uint32_t n, c_in, c_out, group;
    uint32_t in[3], out[3], k[3], stride[3], dil[3], pad[3];
    uint32_t reserved[2]; /* zero */
    kann_act act;
} kann_conv_transpose_args;

/* One tap of a resize table: an input index on the axis and its weight. */
typedef struct kann_resize_tap {
    int32_t index;
    float weight;
} kann_resize_tap;

/* resize (float32): x [planes][h_in][w_in] to y [planes][h_out][w_out] through the tap tables
 * table_h [h_out][taps_h] and table_w [w_out][taps_w] (kann_resize_tap):
 *   y[p][oh][ow] = sum_a sum_b th[oh][a].weight * tw[ow][b].weight * x[p][ih][iw],
 *   ih = th[oh][a].index, iw = tw[ow][b].index.
 * An output any of whose taps has an index outside the input is the extrapolation value
 * (tf_crop_and_resize). Nearest, linear and cubic modes and every coordinate mapping are
 * tables; the compiler builds them. Tile axis 0 = planes. */
typedef struct kann_resize_args {
    kann_tile tile;
    kann_ref x, table_h, table_w, y;
    uint32_t planes, h_in, w_in, h_out, w_out, taps_h, taps_w;
    float extrapolation;
} kann_resize_args;

/* lrn: local response normalization across channels of x [n][c][inner]:
 *   y[b][k][i] = x[b][k][i] / (bias + alpha / size * sum_{k'} x[b][k'][i]^2)^beta
 * over k' in [k - (size - 1) / 2, k + size / 2] inside [0, c). Tile axis 0 = planes b * c + k. */
typedef struct kann_lrn_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t n, c, inner, size;
    float alpha, beta, bias;
    uint32_t reserved; /* zero */
} kann_lrn_args;

typedef enum kann_loss_reduction {
    KANN_LOSS_NONE = 0,
    KANN_LOSS_SUM = 1,
    KANN_LOSS_MEAN = 2, /* sum / sum of the weights of the targets not ignored */
    KANN_LOSS_REDUCTION_COUNT
} kann_loss_reduction;

/* nll_loss: negative log-likelihood of x [n][c][inner] (log-probabilities) at int64 targets
 * t [n][inner], with optional class weights w [c] (1 when absent):
 *   loss[b][i] = -x[b][t][i] * w[t], or 0 (weight 0) where t == ignore_index (has_ignore) or t
 *   lies outside [0, c).
 * y is loss [n][inner] (NONE), or one float: the sum (SUM) or the weighted mean (MEAN).
 * Tile axis 0 = flat loss elements (NONE), or the single result (SUM, MEAN: extent 1). */
typedef struct kann_nll_loss_args {
    kann_tile tile;
    kann_ref x, target, weight, y;
    uint32_t n, c, inner;
    uint32_t reduction; /* kann_loss_reduction */
    int64_t ignore_index;
    uint32_t has_ignore;
    uint32_t reserved; /* zero */
} kann_nll_loss_args;

typedef enum kann_scatter_reduction {
    KANN_SCATTER_NONE = 0, /* assign (any element size); the others are float32 only */
    KANN_SCATTER_ADD = 1,
    KANN_SCATTER_MUL = 2,
    KANN_SCATTER_MAX = 3,
    KANN_SCATTER_MIN = 4,
    KANN_SCATTER_COUNT
} kann_scatter_reduction;

/* scatter_elements: y already holds the data (a copy before it); for every element i of the
 * dense idx and updates (dims[0..rank)), in order:
 *   y[sum_d c_d * y_strides[d]] = y[...] OP updates[i], c_d = i_d except c_axis = idx[i]
 * (+ axis_len when negative); an index out of range is skipped. One tile does everything
 * (two updates may hit one element): tile axis 0 has extent 1. */
typedef struct kann_scatter_elements_args {
    kann_tile tile;
    kann_ref idx, updates, y;
    uint32_t elem_size, idx_size;
    uint32_t rank, axis, axis_len, reduction; /* kann_scatter_reduction */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t y_strides[KANN_MAX_RANK];
} kann_scatter_elements_args;

/* Index tuples into a data tensor: tuple t is idx[t][0..k) (each + dims[j] when negative),
 * naming element offset sum_j idx[t][j] * strides[j] (+ batch_stride * the tuple's batch,
 * batches blocks of n_tuples / batches tuples each), where a slice of slice_len elements
 * starts. A tuple with an index out of range is skipped (scatter) or gives zeros (gather).
 * gather_nd:  dst[t][0..slice_len) = src[offset(t) + 0..slice_len)
 *             tile axis 0 = tuples.
 * scatter_nd: dst[offset(t) + i] = dst[...] OP src[t][i] (dst already holds the data), in order;
 *             one tile (extent 1), batches 1. */
typedef struct kann_nd_index_args {
    kann_tile tile;
    kann_ref src, idx, dst;
    uint32_t elem_size, idx_size, reduction, k;
    uint32_t n_tuples, slice_len, batches, batch_stride;
    uint32_t dims[KANN_MAX_RANK];
    uint32_t strides[KANN_MAX_RANK];
} kann_nd_index_args;
typedef kann_nd_index_args kann_gather_nd_args;
typedef kann_nd_index_args kann_scatter_nd_args;

/* conv_nd (float32): the convolution of conv2d over 3 spatial dims (unused ones of size 1):
 *   y[n][m][o] = act(bias[m] + sum_{c,k} x[n][g*C/G + c][o*stride - pad + k*dil] * w[m][c][k])
 * out-of-range input reading 0; weights [c_out][c_in/group][k0][k1][k2]. The argument struct of
 * conv_transpose (pad: the leading pads). Tile axis 0 = output planes n * c_out + m. */
typedef kann_conv_transpose_args kann_conv_nd_args;

/* pool_nd (float32): pool2d over 3 spatial dims (unused ones of size 1), planes = n * c:
 * y[p][o] = act(max or average of x[p][o*stride - pad_begin + k*dil] over the taps inside x);
 * the average divides by the taps inside x, or inside the padded extent
 * [-pad_begin, in + pad_end) with count_include_pad. Optional indices (int64, MaxPool only):
 * the flat index in x of the first maximum, p * spatial + the offset inside the plane,
 * row-major, or column-major with storage_order 1 (a window wholly in the padding: -inf and
 * index 0). Tile axis 0 = planes. */
typedef struct kann_pool_nd_args {
    kann_tile tile;
    kann_ref x, y, indices;
    uint32_t kind, count_include_pad, planes, storage_order;
    uint32_t in[3], out[3], k[3], stride[3], dil[3], pad_begin[3], pad_end[3];
    uint32_t reserved; /* zero */
    kann_act act;
} kann_pool_nd_args;

/* ---- elementwise kernels over several dtypes ------------------------------------------------
 * dtype fields hold a kann_dtype: F32, U8, I8, I32, I64 or BOOL (one byte, 0 or 1). Offsets are
 * aligned to the element size. */

/* binary_typed: binary's index space and strides (no activation) over operands of any dtype:
 *   y[i] = a[i'] OP b[i'']
 * with a and b of `dtype` and y of `dtype`, or bool for the comparisons and logic ops.
 * Ops per dtype: F32 the comparisons; U8, I8, I32, I64 arithmetic ADD .. MOD, the comparisons
 * (and the shifts for U8), wrapping around like unsigned arithmetic; BOOL AND, OR, XOR, EQUAL.
 * Tile axis 0 = flat output elements. */
typedef struct kann_binary_typed_args {
    kann_tile tile;
    kann_ref a, b, y;
    uint32_t op; /* kann_binary_op */
    uint32_t dtype; /* kann_dtype of a and b */
    uint32_t rank; /* 1..KANN_MAX_RANK */
    uint32_t reserved; /* zero */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t a_strides[KANN_MAX_RANK];
    uint32_t b_strides[KANN_MAX_RANK];
} kann_binary_typed_args;

typedef enum kann_unary_op {
    KANN_UNARY_ABS = 0,
    KANN_UNARY_NEG = 1,
    KANN_UNARY_SIGN = 2, /* -1, 0 or 1 (NaN stays NaN) */
    KANN_UNARY_EXP = 3,
    KANN_UNARY_LOG = 4,
    KANN_UNARY_SQRT = 5,
    KANN_UNARY_RECIPROCAL = 6,
    KANN_UNARY_FLOOR = 7,
    KANN_UNARY_CEIL = 8,
    KANN_UNARY_ROUND = 9, /* to the nearest integer, halves to even */
    KANN_UNARY_SIN = 10,
    KANN_UNARY_COS = 11,
    KANN_UNARY_TAN = 12,
    KANN_UNARY_ASIN = 13,
    KANN_UNARY_ACOS = 14,
    KANN_UNARY_ATAN = 15,
    KANN_UNARY_SINH = 16,
    KANN_UNARY_COSH = 17,
    KANN_UNARY_ASINH = 18,
    KANN_UNARY_ACOSH = 19,
    KANN_UNARY_ATANH = 20,
    KANN_UNARY_ERF = 21,
    KANN_UNARY_IS_NAN = 22, /* y bool */
    KANN_UNARY_IS_INF = 23, /* y bool: +inf when flags bit 0, -inf when flags bit 1 */
    KANN_UNARY_NOT = 24, /* bool */
    KANN_UNARY_COUNT
} kann_unary_op;

/* unary: y[i] = OP(x[i]) for i < count; x of `dtype`, y of `dtype` or bool (IS_NAN, IS_INF).
 * Ops per dtype: F32 all but NOT; U8, I8, I32, I64 ABS, NEG, SIGN (wrapping around); BOOL NOT.
 * In place (x == y) is allowed when y has x's dtype. Tile axis 0 = elements. */
typedef struct kann_unary_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t op; /* kann_unary_op */
    uint32_t dtype; /* kann_dtype of x */
    uint32_t count;
    uint32_t flags; /* IS_INF: which infinities; zero for the other ops */
} kann_unary_args;

/* cast: y[i] = x[i] converted from dtype `from` to dtype `to`, i < count. Float to integer
 * truncates toward zero, saturates at the type's range and sends NaN to 0; integer to a
 * narrower integer wraps around; anything to bool is x != 0 (NaN is true). Tile axis 0 =
 * elements. */
typedef struct kann_cast_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t count;
    uint32_t from, to; /* kann_dtype */
    uint32_t reserved; /* zero */
} kann_cast_args;

typedef enum kann_ternary_op {
    KANN_TERNARY_WHERE = 0, /* y = a ? b : c, a bool */
    KANN_TERNARY_CLIP = 1, /* y = min(max(a, b), c): c when b > c; a NaN a stays NaN */
    KANN_TERNARY_COUNT
} kann_ternary_op;

/* ternary: y[i] = OP(a[i'], b[i''], c[i''']) over the output index space dims[0..rank), each
 * operand through its own strides (zero for a broadcast dimension); y dense. b, c and y are of
 * `dtype` (any), a is bool for WHERE, of `dtype` for CLIP (F32, U8, I8, I32, I64).
 * Tile axis 0 = flat output elements. */
typedef struct kann_ternary_args {
    kann_tile tile;
    kann_ref a, b, c, y;
    uint32_t op; /* kann_ternary_op */
    uint32_t dtype; /* kann_dtype of y */
    uint32_t rank; /* 1..KANN_MAX_RANK */
    uint32_t reserved; /* zero */
    uint32_t dims[KANN_MAX_RANK];
    uint32_t a_strides[KANN_MAX_RANK];
    uint32_t b_strides[KANN_MAX_RANK];
    uint32_t c_strides[KANN_MAX_RANK];
} kann_ternary_args;

/* pad2d (float32): every plane of x [c][h_in][w_in] zero-padded (or cropped) into y
 * [c][h_out][w_out]:
 *   y[c][i][j] = x[c][i - pad_top][j - pad_left] where that lies inside x, else 0.
 * Puts a conv's padding around its input once, so that conv2d_packed reads windows in place
 * (its wide path). Tile axis 0 = rows of y, c * h_out of them. */
typedef struct kann_pad2d_args {
    kann_tile tile;
    kann_ref x, y;
    uint32_t c, h_in, w_in, h_out, w_out, pad_top, pad_left;
    uint32_t reserved; /* zero */
} kann_pad2d_args;

/* ---- the registry ------------------------------------------------------------------------- */

/* What a kernel may touch, for validation. */
typedef struct kann_bounds {
    uint64_t arena_size;
    uint64_t const_size;
} kann_bounds;

/* Base addresses for one run, and a claim for a kernel that takes the parts of its tile as it
 * goes (kann_kernel_part_claims): before each granule it computes, at its first index `at`,
 * the kernel calls claim(claim_ctx, at), and stops where that returns 0 (the rest of the tile
 * is other threads'). claim NULL: the whole tile is the caller's. */
typedef struct kann_exec {
    uint8_t *arena;
    const uint8_t *consts;
    int (*claim)(void *ctx, uint32_t at);
    void *claim_ctx;
    /* the weights the model's ISA level reads in another form, prepared when the model switched
     * to it (kann_model_set_isa_prepared; AMX: x86/kann_amx.h), or NULL */
    const void *prepared;
} kann_exec;

/* Whether the granule from `at` on is the caller's (kann_exec.claim). */
static inline int kann_claim(const kann_exec *ex, uint32_t at) {
    return ex->claim == 0 || ex->claim(ex->claim_ctx, at);
}

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

/* The granule at which a record of this kernel with these (validated) arguments may be cut into
 * parts: the tile [begin + i g, begin + j g) (or up to its end) of any i < j is valid wherever
 * the whole tile is, computes its outputs bit for bit as the whole record does, in every
 * variant, and writes no byte another part writes (a scratch only at places of its own: a
 * Winograd conv's blocks of tiles, or a copy of the scratch for each thread running parts at
 * once: kann_kernel_part_slots). 0: the record runs only whole. *work: the record's
 * multiply-adds (or compared elements), for an executor weighing the cut; 0 with no cut. */
uint32_t kann_kernel_part_granule(uint32_t kernel, const void *args, double *work);

/* For a record kann_kernel_part_granule cuts: the copies of the scratch its parts work in, one
 * after another from the one its arguments name (0: its parts use none). Parts may run at once
 * on at most that many threads, each in a copy of its own (kann_kernel_part_args). */
uint32_t kann_kernel_part_slots(uint32_t kernel, const void *args);

/* 1 if the kernel claims the granules of its tile as it goes (kann_exec.claim): one call can
 * run the parts that no other thread takes, without starting over at each. */
int kann_kernel_part_claims(uint32_t kernel);

/* args, a copy of a cut record's arguments (at most KANN_PART_ARGS_MAX bytes), made the part
 * [begin, end) of its tile in scratch copy `slot` (< kann_kernel_part_slots, or 0). */
#define KANN_PART_ARGS_MAX 512
void kann_kernel_part_args(uint32_t kernel, void *args, uint32_t begin, uint32_t end,
                           uint32_t slot);

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

/* Multiply-adds record arguments args of kernel id kernel do (0 for data movement). */
double kann_record_macs(uint32_t kernel, const void *args);

#endif
