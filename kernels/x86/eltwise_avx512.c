/* f32_binary and f32_act for AVX-512: the elementwise kernels of eltwise.h on 512-bit
 * vectors. */
#define KANN_VEC_BITS 512
#define ELTWISE_BINARY kann_f32_binary_avx512
#define ELTWISE_ACT kann_f32_act_avx512
#include "eltwise.h"
