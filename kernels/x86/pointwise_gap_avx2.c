/* f32_pointwise_gap for AVX2: pointwise_gap.h on 256-bit vectors (32 channels by 3 pixels, 12
 * accumulators). */
#define KANN_VEC_BITS 256
#define GAP_ENTRY kann_f32_pointwise_gap_avx2
#define LANES_ENTRY kann_f32_pointwise_lanes_avx2
#include "pointwise_gap.h"
