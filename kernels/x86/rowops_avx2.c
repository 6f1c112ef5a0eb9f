/* f32_norm, f32_softmax, f32_pad2d and f32_transpose for AVX2 + FMA: the row kernels of rowops.h
 * on 256-bit vectors. */
#define KANN_VEC_BITS 256
#define ROWOPS_NORM kann_f32_norm_avx2
#define ROWOPS_SOFTMAX kann_f32_softmax_avx2
#define ROWOPS_PAD2D kann_f32_pad2d_avx2
#define ROWOPS_TRANSPOSE kann_f32_transpose_avx2
#include "rowops.h"
