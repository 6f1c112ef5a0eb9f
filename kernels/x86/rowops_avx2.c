/* f32_norm and f32_softmax for AVX2 + FMA: the row kernels of rowops.h on 256-bit vectors. */
#define KANN_VEC_BITS 256
#define ROWOPS_NORM kann_f32_norm_avx2
#define ROWOPS_SOFTMAX kann_f32_softmax_avx2
#include "rowops.h"
