/* Constant folding: evaluates, at compile time, a node whose inputs are all constant, so the
 * shape arithmetic exporters emit (Shape, Gather, Concat, ...) disappears before lowering. */
#ifndef KC_FOLD_CONSTANTS_H
#define KC_FOLD_CONSTANTS_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* Outputs larger than this stay unfolded: folding is about shapes and small tensors, and the
 * compiler should not balloon in memory on a model that computes a big tensor from constants. */
#define KC_FOLD_MAX_BYTES ((int64_t)256 << 20)

/* Evaluates node. Preconditions: every present input is constant (for Shape, input 0 only needs
 * a known shape) and every output's dtype and shape are inferred. On success, each present
 * output value gets its contents (allocated in the graph's arena) and KC_VALUE_CONST; the caller
 * marks the node dead.
 * Returns 1 if evaluated, 0 if left as is (no evaluator for this op or dtype, or an output over
 * KC_FOLD_MAX_BYTES; not an error), -1 after reporting an error naming the node (an integer
 * division by zero, an index out of range).
 * Semantics where ONNX leaves a choice: integer Div truncates toward zero, as ONNX Runtime does
 * (C division); Cast from floating point to an integer type saturates, NaN giving 0; integer
 * arithmetic wraps around. */
int kc_fold_node(kc_graph *g, int node, kc_diag *d);

#endif
