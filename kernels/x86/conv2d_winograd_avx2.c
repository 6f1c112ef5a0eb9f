/* conv2d_winograd for AVX2: the 16 GEMMs of each block of 32 tiles as up to four 12 x 8
 * register tiles (12 YMM accumulators each; as many as the block's tiles need), the first of
 * them prefetching the weights as the AVX-512 variant does; the transforms are the shared
 * portable ones. */
#include <immintrin.h>

#include "kann_x86.h"
#include "ref/conv2d_winograd.h"

/* Reduction steps the weights are prefetched ahead, into the next GEMM's panel at the end. */
#define WINO_U_PREFETCH 64

static void gemm_12x8x4(const float *u, const float *u_next, const float *v, size_t c_in, size_t n,
                        float *m) {
    size_t ahead = c_in < WINO_U_PREFETCH ? c_in : WINO_U_PREFETCH;
    const float *u_end = u + c_in * KANN_CONV_PANEL;
    for (size_t j0 = 0; j0 < n; j0 += 8) {
        __m256 c[KANN_CONV_PANEL];
        for (int r = 0; r < KANN_CONV_PANEL; r++)
            c[r] = _mm256_setzero_ps();
        const float *uk = u, *vk = v + j0;
        /* the later tiles find the panel in cache */
        const float *pf = j0 == 0 ? u + ahead * KANN_CONV_PANEL : NULL;
        for (size_t k = 0; k < c_in; k++, uk += KANN_CONV_PANEL, vk += KANN_WINO_BLOCK) {
            if (pf) {
                if (pf == u_end) pf = u_next;
                _mm_prefetch((const char *)pf, _MM_HINT_T0);
                pf += KANN_CONV_PANEL;
            }
            __m256 b = _mm256_loadu_ps(vk);
            for (int r = 0; r < KANN_CONV_PANEL; r++)
                c[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(uk + r), b, c[r]);
        }
        for (int r = 0; r < KANN_CONV_PANEL; r++)
            _mm256_storeu_ps(m + r * KANN_WINO_BLOCK + j0, c[r]);
    }
}

void kann_f32_conv2d_winograd_avx2(const void *args, const kann_exec *ex) {
    kann_conv2d_winograd_drive(args, ex, kann_wino_input_block, gemm_12x8x4,
                               kann_wino_output_block, 1);
}
