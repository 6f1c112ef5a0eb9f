/* What the elementwise ops' shape functions, lowering and the fuse pass share: the activation
 * ops read as kann_act epilogues (one place for their attributes and defaults), and PRelu's
 * slope layout. */
#ifndef KC_ELEMENTWISE_H
#define KC_ELEMENTWISE_H

#include <stdint.h>

#include "ir.h"

/* Reads node's activation (Relu, Clip, Sigmoid, Tanh, LeakyRelu, HardSigmoid, HardSwish, Elu,
 * Selu, Celu, Softplus, Softsign, ThresholdedRelu, Gelu, Mish) into epi->act, alpha and beta.
 * Returns 1 on success; 0 when the node is no activation or this instance cannot be one (Clip
 * bounds not constant float scalars, an attribute value no kind expresses), with *why saying
 * which when why is not NULL. */
int kc_activation_of(const kc_graph *g, int node, kc_epilogue *epi, const char **why);

/* PRelu's slope dims as broadcast against X: before opset 7 a 1-D slope of X's channel count
 * is one slope per channel (dims [C,1,...]); from opset 7 it is a numpy broadcast. */
int kc_prelu_slope_dims(const kc_graph *g, int node, int *rank, int64_t *dims);

#endif
