/* Reductions and normalizations: the axis rules their shape functions and their lowering share,
 * so each rule is written once. */
#ifndef KC_SHAPES_REDUCE_H
#define KC_SHAPES_REDUCE_H

#include "diag.h"
#include "ir.h"

/* Which dims of input 0 a Reduce* node reduces, after its opset's rules: axes as attribute or
 * input (which must be constant), negative axes, an empty list meaning all dims unless
 * noop_with_empty_axes. reduced[d] is set for each reduced dim; *noop is set when the node is
 * an identity. Returns 0, or the number of errors reported. */
int kc_reduce_axes_of(const kc_graph *g, int node, int rank, int *reduced, int *noop, kc_diag *d);

/* The single axis of ArgMax/ArgMin, Hardmax, LayerNormalization or LpNormalization with its
 * default at the node's opset, normalized against rank. Returns 0, or the errors reported. */
int kc_norm_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d);

/* The axis of a CumSum node (input 1: a constant int32 or int64 scalar, the scan needs it at
 * compile time), normalized against rank. Returns 0, or the errors reported. */
int kc_cumsum_axis_of(const kc_graph *g, int node, int rank, int64_t *axis, kc_diag *d);

/* The axis (default -1) and k of a TopK node: the attribute k before opset 10, then input 1 (a
 * constant int64 tensor of one element, since the output shape depends on it); 0 <= k <= the
 * axis length. Returns 0, or the errors reported. */
int kc_topk_of(const kc_graph *g, int node, int rank, const int64_t *dims, int64_t *axis,
               int64_t *k, kc_diag *d);

#endif
