/* The AMX kernels (gemm_amx.c): 1x1 convs (conv2d_packed's pointwise path, pointwise_lanes,
 * pointwise_gap) and conv2d_packed's gathering and strided convs as products of bf16 tiles, on
 * x86 processors with AMX-BF16.
 *
 * A float a splits into two bf16 numbers, hi = a rounded to bf16 and lo = a - hi rounded to
 * bf16, so that a = hi + lo to about 2^-17 of |a|. A product a b is then hi_a hi_b + hi_a lo_b +
 * lo_a hi_b (the fourth product, lo_a lo_b, is below 2^-16 of it): three tile products, each
 * of which sums its pairs in float, against one float FMA per multiply-add. The sums differ from
 * the float kernels' by a few 1e-6 of their size: these kernels agree with the references within
 * the bound a model's outputs are checked to (1e-4 of their largest value), not within float
 * rounding as the AVX-512 and AVX2 variants do.
 *
 * The weights are split once, when a model switches to the AMX kernels: kann_amx_gemm_of names
 * the records that run on them and their weights, kann_amx_pack writes those weights as bf16
 * pairs into the caller's buffer (runtime/src/cpu_dispatch.c lays out the buffer: a
 * kann_amx_table, then each weight tensor's pairs). Each record's input is split as it runs:
 * a 1x1 conv's into a buffer on the stack of at most KANN_AMX_STACK bytes, a gathering conv's
 * gathered columns in place in its scratch, a strided conv's taps from x into a buffer on the
 * stack. */
#ifndef KANN_AMX_H
#define KANN_AMX_H

#include <stdint.h>

#include "kann_kernels.h"

/* The input channels a record may have at most: a strip of 16 pixels of its split input fills
 * the stack buffer (KANN_AMX_STACK) at this many. */
#define KANN_AMX_MAX_K 2048
#define KANN_AMX_STACK (KANN_AMX_MAX_K * 16 * 4)

/* One weight tensor as the AMX kernels read it: W[m][k], m < m, k < k, packed in panels of
 * `panel` output channels (conv2d_packed's KANN_CONV_PANEL, pointwise_gap's and
 * pointwise_lanes' KANN_GAP_BLOCK): w[(m / panel) * k * panel + k * panel + m % panel]. */
typedef struct kann_amx_gemm {
    uint64_t w_offset; /* the packed weights' offset in the constants */
    uint32_t m, k, panel;
} kann_amx_gemm;

/* A prepared tensor: its kann_amx_gemm and where its pairs lie, `data` bytes from the table's
 * start: hi, then lo, each [m + 32][round_up(k, 32)] bf16 row by row, zero past m and k. */
typedef struct kann_amx_entry {
    uint64_t w_offset, data;
    uint32_t m, k, panel, reserved;
} kann_amx_entry;

/* The start of a prepared buffer: count entries, sorted by w_offset, no two the same. */
typedef struct kann_amx_table {
    uint64_t count, reserved[7];
    kann_amx_entry e[];
} kann_amx_table;

/* 1 if record (kernel, args) runs on the AMX kernels once its weights are prepared, with *g its
 * weights; 0 if it runs on the AVX-512 variant (neither a 1x1 conv, nor a conv of column stride
 * 2 over 32 to 1024 weights, nor a gathering conv with a reduction of a multiple of 32; too
 * small a product for the tiles to pay off; a 1x1 conv of more input channels than
 * KANN_AMX_MAX_K). args: validated. */
int kann_amx_gemm_of(uint32_t kernel, const void *args, kann_amx_gemm *g);
/* Bytes of g's pairs (hi and lo), a multiple of 64. */
uint64_t kann_amx_gemm_bytes(const kann_amx_gemm *g);
/* Writes g's pairs, read from the constants, to dst (64-byte aligned, kann_amx_gemm_bytes). */
void kann_amx_pack(const kann_amx_gemm *g, const uint8_t *consts, void *dst);

/* The AMX kernels of those ids: the AMX path where the record's weights are in the prepared
 * table (kann_exec.prepared), else the AVX-512 variant. */
void kann_f32_conv2d_packed_amx(const void *args, const kann_exec *ex);
void kann_f32_pointwise_lanes_amx(const void *args, const kann_exec *ex);
void kann_f32_pointwise_gap_amx(const void *args, const kann_exec *ex);

#endif
