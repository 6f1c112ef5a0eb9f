/* Einsum equations, resolved against the operands' ranks: shared by the shape function and the
 * lowering so the rules are written once. */
#ifndef KC_EINSUM_H
#define KC_EINSUM_H

#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* Labels: a letter is its character code; the dims an ellipsis stands for are
 * KC_EINSUM_ELLIPSIS + k, k counted so that ellipsis dims line up from the right across
 * operands (numpy's broadcasting). */
#define KC_EINSUM_ELLIPSIS 128
#define KC_EINSUM_LABELS (KC_EINSUM_ELLIPSIS + KC_MAX_RANK)
#define KC_EINSUM_MAX_OPERANDS 2

typedef struct kc_einsum {
    int n_operands;
    int rank[KC_EINSUM_MAX_OPERANDS];
    int labels[KC_EINSUM_MAX_OPERANDS][KC_MAX_RANK];
    int out_rank;
    int out_labels[KC_MAX_RANK];
    int64_t
        size[KC_EINSUM_LABELS]; /* the extent of each label (broadcast: the largest), 0 if unused */
} kc_einsum;

/* Parses the node's equation against its inputs' shapes: explicit ("ij,jk->ik") or implicit
 * output (ellipsis dims, then the labels used once, in alphabetical order), at most one
 * ellipsis per term, one or two operands; a label's extents must agree or be 1. A label
 * repeated within one operand (a diagonal) is refused. Returns 0, or the errors reported. */
int kc_einsum_of(const kc_graph *g, int node, kc_einsum *e, kc_diag *d);

#endif
