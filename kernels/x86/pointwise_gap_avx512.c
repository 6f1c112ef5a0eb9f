/* f32_pointwise_gap for AVX-512: pointwise_gap.h on 512-bit vectors (32 channels by 12 pixels,
 * 24 accumulators). */
#define KANN_VEC_BITS 512
#define GAP_ENTRY kann_f32_pointwise_gap_avx512
#define LANES_ENTRY kann_f32_pointwise_lanes_avx512
#include "pointwise_gap.h"
