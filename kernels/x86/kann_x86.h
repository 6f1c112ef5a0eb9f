/* The x86 SIMD kernel variants (variants.def) and the CPU feature test that picks them. Built
 * only for x86 processors; each variant's file is compiled for its ISA, so call a variant only
 * when kann_x86_supports says the CPU (and the OS) can run it. */
#ifndef KANN_X86_H
#define KANN_X86_H

#include "kann_kernels.h"

typedef enum kann_x86_level {
    KANN_X86_AVX2 = 1,   /* AVX2 + FMA, YMM state enabled by the OS */
    KANN_X86_AVX512 = 2, /* AVX-512 F, VL, BW, DQ, ZMM state enabled by the OS */
    /* AVX-512 and AVX512-BF16, AMX-TILE and AMX-BF16, tile state enabled by the OS (XCR0); on
     * Linux a process must still ask for the tile data before its first use (kann.h) */
    KANN_X86_AMX = 3,
} kann_x86_level;

/* 1 if this CPU and OS can run code of that level. */
int kann_x86_supports(kann_x86_level level);

#define KANN_X86_VARIANT(ENUM, avx2, avx512)                                                       \
    void avx2(const void *args, const kann_exec *ex);                                              \
    void avx512(const void *args, const kann_exec *ex);
#include "variants.def"
#undef KANN_X86_VARIANT

/* The AVX-512 12 x 32 register-tile microkernel of conv2d_packed (conv2d_packed_avx512.c), for
 * any kann_conv_tile; also the GEMM of the AVX-512 Winograd conv for a block's columns past 16.
 * A strip's last KANN_CONV_TAIL_COLS columns or fewer past a whole vector go through its column
 * tail: per reduction step and column a broadcast and an FMA (and a weight load per step shared
 * by the columns), against 12 broadcasts and 12 FMAs of a 16-column vector. */
#define KANN_CONV_TAIL_COLS 8
struct kann_conv_tile;
void kann_conv_microkernel_12x32_avx512(const struct kann_conv_tile *t);

/* conv2d_packed's AVX-512 lanes path for strided convs (conv2d_lanes_avx512.c): runs tile a and
 * returns 1, or returns 0 without touching anything where the path does not apply. */
int kann_conv2d_lanes_avx512(const kann_conv2d_packed_args *a, const kann_exec *ex);
/* Its rows path for narrow convs of stride 1 or 2 (kann_conv2d_packed_rows): runs tile a and returns 1,
 * or returns 0 without touching anything where the path does not apply. */
int kann_conv2d_rows_avx512(const kann_conv2d_packed_args *a, const kann_exec *ex);

/* dwconv2d's AVX-512 path for small maps (dwconv2d_planes_avx512.c): runs the channels and rows
 * rg of conv a and returns 1, or returns 0 without touching anything where it does not apply. */
struct kann_dw_range;
int kann_dwconv2d_planes_avx512(const kann_dwconv2d_args *a, const kann_exec *ex,
                                const struct kann_dw_range *rg);

/* dwblock's AVX-512 lanes path (dwblock_lanes_avx512.c): the expansion and the depthwise conv
 * with 16 channels in the lanes, the projection through ukr (strips of nr pixels); runs tile a
 * and returns 1, or returns 0 without touching anything where the path does not apply. */
int kann_dwblock_lanes_avx512(const kann_dwblock_args *a, const kann_exec *ex,
                              void (*ukr)(const struct kann_conv_tile *t), size_t nr);

#endif
