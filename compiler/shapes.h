/* Shape inference: one shape function per op of ops.def, and the geometry helpers (windows,
 * broadcasting, axes, slices) that the lowering reuses so each rule is written once. */
#ifndef KC_SHAPES_H
#define KC_SHAPES_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* The most outputs an op of the table has (BatchNormalization before opset 9 has five). */
#define KC_SHAPE_MAX_OUTPUTS 5

/* An inferred output type: dtype and a fully known shape. */
typedef struct kc_shape {
    int dtype;
    int rank; /* -1 while not inferred */
    int64_t dims[KC_MAX_RANK];
} kc_shape;

/* A shape function reads node's inputs (dtype and shape, known for all present inputs; the
 * contents of the constant inputs the op's shape depends on) and fills out[i] for each output i
 * of the node. Returns the number of errors it reported through d (each names the node). */
typedef int (*kc_shape_fn)(const kc_graph *g, int node, kc_shape *out, kc_diag *d);

#define KC_OP(name, min_opset, max_opset, attrs, dtypes)                                           \
    int kc_shape_##name(const kc_graph *g, int node, kc_shape *out, kc_diag *d);
#include "ops.def"
#undef KC_OP

/* Shape functions indexed by kc_op; NULL for KC_OP_UNKNOWN. */
extern const kc_shape_fn kc_shape_fns[KC_OP_COUNT];

/* The opset a node was imported at: its own, else the graph's for its domain, else the newest
 * opset the table knows. */
int kc_node_opset(const kc_graph *g, int node);

/* ---- helpers for shape functions ---- */

/* Input i of node, NULL when omitted. */
const kc_value *kc_shape_input(const kc_graph *g, int node, int i);
/* Input i of node; reports "input i is required" and gives NULL when omitted. */
const kc_value *kc_shape_need(const kc_graph *g, int node, int i, kc_diag *d);
/* o := v's dtype and shape. */
void kc_shape_like(kc_shape *o, const kc_value *v);

/* Dim arithmetic of shape functions on hostile inputs: a product or sum past int64 saturates
 * at INT64_MAX (no undefined overflow), which the shapes pass then refuses as too large. */
static inline int64_t kc_dim_mul(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
static inline int64_t kc_dim_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* ---- geometry shared with the lowering ---- */

/* A sliding window (Conv, MaxPool, AveragePool) over n_spatial dims, with auto_pad resolved into
 * explicit pads. */
typedef struct kc_window {
    int n_spatial;
    int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3];
    int ceil_mode;
} kc_window;

/* Fills w for a Conv, MaxPool or AveragePool node whose input 0 (and for Conv, input 1) has a
 * known shape. For Conv the kernel comes from the weight shape when kernel_shape is absent.
 * Returns 0, or the number of errors reported. */
int kc_window_of(const kc_graph *g, int node, kc_window *w, kc_diag *d);

/* Multidirectional (numpy) broadcasting of two shapes; out holds max(ra, rb) dims. An unknown
 * dim (-1) stays unknown unless the other side decides it. Returns 0, or -1 if incompatible. */
int kc_broadcast_shape(int ra, const int64_t *a, int rb, const int64_t *b, int *rank, int64_t *out);

/* Maps axis in [-rank, rank-1] to [0, rank-1]. Returns 0, or -1 if out of range. */
int kc_normalize_axis(int64_t axis, int rank, int64_t *out);

/* Reads constant integer tensor v (int64 or int32, any rank) into out as int64. Returns the
 * element count, -1 if v is absent, not constant or not an integer tensor, -2 if it holds more
 * than max elements. */
int kc_const_ints(const kc_graph *g, int v, int64_t *out, int max);

/* A Slice node resolved per dimension of its data input: element (i0, i1, ...) of the output
 * is element (start[0] + i0*step[0], ...) of the input; dims not sliced have start 0, step 1
 * and their full length. Needs the starts/ends/axes/steps inputs constant (opset >= 10).
 * Returns 0, or the number of errors reported. */
typedef struct kc_slice {
    int rank;
    int64_t start[KC_MAX_RANK], step[KC_MAX_RANK], len[KC_MAX_RANK];
} kc_slice;
int kc_slice_of(const kc_graph *g, int node, kc_slice *s, kc_diag *d);

/* The axis attribute of Concat, Gather, Flatten, Softmax or LogSoftmax with its default at the
 * node's opset, normalized against rank (Flatten: into 0..rank). Returns 0, or errors reported. */
int kc_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d);

/* The permutation of a Transpose node (default: reversed dims). Returns 0, or errors reported. */
int kc_perm_of(const kc_graph *g, int node, int rank, int64_t *perm, kc_diag *d);

/* The [start, end) range of dims a Shape node returns for an input of the given rank. */
void kc_shape_range(const kc_graph *g, int node, int rank, int64_t *start, int64_t *end);

#endif
