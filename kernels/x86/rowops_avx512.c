/* f32_norm, f32_softmax, f32_pad2d and f32_transpose for AVX512: the row kernels of rowops.h
 * on 512-bit vectors. */
#define KANN_VEC_BITS 512
#define ROWOPS_NORM kann_f32_norm_avx512
#define ROWOPS_SOFTMAX kann_f32_softmax_avx512
#define ROWOPS_PAD2D kann_f32_pad2d_avx512
#define ROWOPS_TRANSPOSE kann_f32_transpose_avx512
#include "rowops.h"
