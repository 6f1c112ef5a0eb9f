/* Walking a dense output index space whose operands are strided views (binary, ternary, transpose):
 * dims are simplified first, then the walk goes one innermost row at a time so kernels run a
 * plain strided loop per row and pay for the index arithmetic only between rows. */
#ifndef KANN_REF_ND_H
#define KANN_REF_ND_H

#include <stddef.h>
#include <stdint.h>

#include "kann_kernels.h"

#define KANN_ND_MAX_OPERANDS 3

typedef struct kann_nd {
    uint32_t rank; /* >= 1 after kann_nd_init */
    uint32_t n_operands;
    uint32_t dims[KANN_MAX_RANK];
    uint32_t strides[KANN_ND_MAX_OPERANDS][KANN_MAX_RANK];
    /* the walk's position: index per dim and each operand's element offset */
    uint32_t index[KANN_MAX_RANK];
    size_t offsets[KANN_ND_MAX_OPERANDS];
} kann_nd;

/* Drops dims of extent 1 and merges neighbours that every operand (and the dense output)
 * walks contiguously, so a plain elementwise op becomes one long row. The element count must
 * be non-zero. */
static inline void kann_nd_init(kann_nd *v, uint32_t rank, const uint32_t *dims,
                                const uint32_t *const *strides, uint32_t n_operands) {
    v->rank = 0;
    v->n_operands = n_operands;
    for (uint32_t d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        uint32_t r = v->rank;
        int mergeable = r > 0;
        for (uint32_t o = 0; o < n_operands && mergeable; o++)
            mergeable = (uint64_t)strides[o][d] * dims[d] == v->strides[o][r - 1];
        if (mergeable) {
            v->dims[r - 1] *= dims[d];
            for (uint32_t o = 0; o < n_operands; o++)
                v->strides[o][r - 1] = strides[o][d];
            continue;
        }
        v->dims[r] = dims[d];
        for (uint32_t o = 0; o < n_operands; o++)
            v->strides[o][r] = strides[o][d];
        v->rank = r + 1;
    }
    if (v->rank == 0) { /* a single element */
        v->rank = 1;
        v->dims[0] = 1;
        for (uint32_t o = 0; o < n_operands; o++)
            v->strides[o][0] = 0;
    }
}

static inline void kann_nd_update_offsets(kann_nd *v) {
    for (uint32_t o = 0; o < v->n_operands; o++) {
        size_t off = 0;
        for (uint32_t d = 0; d < v->rank; d++)
            off += (size_t)v->index[d] * v->strides[o][d];
        v->offsets[o] = off;
    }
}

/* Positions the walk at flat output element `flat` (< element count). */
static inline void kann_nd_seek(kann_nd *v, size_t flat) {
    for (uint32_t d = v->rank; d-- > 0;) {
        v->index[d] = (uint32_t)(flat % v->dims[d]);
        flat /= v->dims[d];
    }
    kann_nd_update_offsets(v);
}

/* Elements left in the current innermost row. */
static inline size_t kann_nd_row_left(const kann_nd *v) {
    return v->dims[v->rank - 1] - v->index[v->rank - 1];
}

/* Moves to the start of the next innermost row (the current one is finished). */
static inline void kann_nd_next_row(kann_nd *v) {
    uint32_t d = v->rank - 1;
    v->index[d] = 0;
    while (d-- > 0) {
        if (++v->index[d] < v->dims[d]) break;
        v->index[d] = 0;
    }
    kann_nd_update_offsets(v);
}

/* Moves k rows on (rank >= 2, the current row finished, index[rank - 2] + k at most its
 * dim): what k calls of kann_nd_next_row do, the offsets worked out once. */
static inline void kann_nd_next_rows(kann_nd *v, uint32_t k) {
    uint32_t d = v->rank - 2;
    v->index[d + 1] = 0;
    v->index[d] += k;
    if (v->index[d] == v->dims[d]) {
        v->index[d] = 0;
        while (d-- > 0) {
            if (++v->index[d] < v->dims[d]) break;
            v->index[d] = 0;
        }
    }
    kann_nd_update_offsets(v);
}

#endif
