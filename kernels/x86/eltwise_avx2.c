/* f32_binary and f32_act for AVX2 + FMA: the elementwise kernels of eltwise.h on 256-bit
 * vectors. */
#define KANN_VEC_BITS 256
#define ELTWISE_BINARY kann_f32_binary_avx2
#define ELTWISE_ACT kann_f32_act_avx2
#include "eltwise.h"
