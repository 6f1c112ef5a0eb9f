/* What the x86 pool2d variants take on their vector path (the rest runs the reference): max
 * and average pooling, column strides 1 and 2, windows up to KANN_POOL_VEC_MAX_KW columns,
 * output rows of at most max_w_out columns, every coordinate well inside 64-bit arithmetic; an
 * average's windows under 2^24 taps, so that its divisor, a product of the rows and columns
 * counted, is exact in a float as the reference's is. */
#ifndef KANN_X86_POOL2D_VEC_H
#define KANN_X86_POOL2D_VEC_H

#include <stdint.h>

#include "kann_kernels.h"

#define KANN_POOL_VEC_MAX_KW 16

static inline int kann_pool2d_vector_path(const kann_pool2d_args *a, uint32_t max_w_out) {
    uint64_t reach = (uint64_t)a->w_out * a->stride_w + (uint64_t)a->k_w * a->dil_w + a->pad_left +
                     a->w_in + (uint64_t)a->h_out * a->stride_h + (uint64_t)a->k_h * a->dil_h +
                     a->pad_top + a->h_in;
    int avg_divisor_exact = (uint64_t)a->k_h * a->k_w < ((uint64_t)1 << 24);
    return (a->kind == KANN_POOL_MAX || (a->kind == KANN_POOL_AVG && avg_divisor_exact)) &&
           (a->stride_w == 1 || a->stride_w == 2) && a->k_w <= KANN_POOL_VEC_MAX_KW &&
           a->w_out <= max_w_out && reach < ((uint64_t)1 << 40);
}

#endif
