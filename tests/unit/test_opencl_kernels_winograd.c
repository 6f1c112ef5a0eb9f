/* The OpenCL f32_conv2d_winograd kernels, both styles and both transforms (F(2x2, 3x3) and
 * F(4x4, 3x3)), against the reference kernel on random shapes (sizes that are not multiples of
 * the tile edge, ragged channel panels, padding of 0 to 2 read in place, inputs wider than the
 * windows, several blocks of tiles,
 * tile rows past one vector run), tiles on either axis, bias, residual and every activation
 * (PoCL in CI). Skipped without an OpenCL device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "opencl_test_main.h"

#ifdef KANN_WITH_OPENCL
#include "test_opencl_kernels_harness.h"

#define CASES 40

static kann_act random_act(kt *k) {
    kann_act a = {kt_range(k, 0, KANN_ACT_COUNT - 1), kt_float(k, 0.2f, 1.2f), 0.0f, 0};
    a.beta = a.alpha + kt_float(k, 0.5f, 2.0f);
    return a;
}

/* n floats at r, random multiples of 1/den in [-lo / den, lo / den]. */
static void fill_exact(kt *k, kann_ref r, size_t n, uint32_t lo, float den) {
    float *p = (float *)(void *)kt_ptr(k, r);
    for (size_t i = 0; i < n; i++)
        p[i] = ((float)kt_range(k, 0, 2 * lo) - (float)lo) / den;
}

/* The extents of a case: small (every edge case of a tile) or large (several blocks of 32
 * output tiles, tile rows longer than a 16-tile vector run, several weight panels and groups of
 * 32 input channels), for the tile edge of the case's transform. */
typedef struct wino_extents {
    uint32_t c_in, c_out, h_out, w_out;
} wino_extents;

/* An input extent for n outputs with pad rows (columns) of padding above (left): below it 0 to
 * pad of padding, or with none there, x up to one wider than the windows reach. */
static uint32_t in_extent(kt *k, uint32_t n, uint32_t pad) {
    uint32_t after = kt_range(k, 0, pad);
    if (n + 1 < pad + after) after = 0;
    return n + 2 - pad - after + (after == 0 ? kt_range(k, 0, 1) : 0);
}

/* One random record of the given extents and transform, run in the kernel style of kt_style. */
static void run_case(uint64_t seed, wino_extents max, kann_wino_transform transform) {
    kt k;
    kt_init(&k, seed);
    kann_conv2d_winograd_args a;
    memset(&a, 0, sizeof a);
    a.c_in = kt_range(&k, 1, max.c_in);
    a.c_out = kt_range(&k, 1, max.c_out);
    a.h_out = kt_range(&k, 1, max.h_out);
    a.w_out = kt_range(&k, 1, max.w_out);
    a.pad = kt_range(&k, 0, 2);
    a.h_in = in_extent(&k, a.h_out, a.pad);
    a.w_in = in_extent(&k, a.w_out, a.pad);
    a.act = random_act(&k);
    a.transform = transform;
    uint32_t e = transform == KANN_WINO_F4X4 ? 4 : 2, positions = (e + 2) * (e + 2);
    size_t panels = (a.c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t hw = (size_t)a.h_out * a.w_out;
    uint32_t T = (a.h_out + e - 1) / e * ((a.w_out + e - 1) / e);
    a.x = kt_input_f32(&k, (size_t)a.c_in * a.h_in * a.w_in, -2.0f, 2.0f);
    a.u = kt_input_f32(&k, positions * panels * a.c_in * KANN_CONV_PANEL, -1.0f, 1.0f);
    /* F(4x4)'s transforms (entries up to 5 in B, 8 in A) take random floats through sums far
     * larger than the result, whose rounding (fused multiply-adds or not, another order) the
     * 1e-4 tolerance does not cover: its cases take x in {-1, 0, 1} and u in eighths of
     * [-1, 1], whose transforms and sums (below 2^24 eighths for c_in <= 40) are exact in any
     * order, so that only bias, residual and the activation round. */
    if (transform == KANN_WINO_F4X4) {
        fill_exact(&k, a.x, (size_t)a.c_in * a.h_in * a.w_in, 1, 1.0f);
        fill_exact(&k, a.u, positions * panels * a.c_in * KANN_CONV_PANEL, 8, 8.0f);
    }
    if (kt_range(&k, 0, 1)) a.bias = kt_input_f32(&k, a.c_out, -1.0f, 1.0f);
    if (kt_range(&k, 0, 1)) a.residual = kt_input_f32(&k, a.c_out * hw, -1.0f, 1.0f);
    a.y = kt_output(&k, a.c_out * hw * 4, 4);
    a.scratch = kt_output(&k, (size_t)kann_wino_scratch_floats(positions, a.c_in, T) * 4, 4);
    uint32_t axis = kt_range(&k, 0, 1);
    a.tile = axis == 0 ? kt_aligned_tile(&k, 0, a.c_out, KANN_WINO_CHANNEL_GRANULE)
                       : kt_aligned_tile(&k, 1, T, KANN_CONV_PIXEL_GRANULE);
    /* The CPU style writes the scratch as the reference does. The GPU style transforms tiles
     * on the fly and leaves it alone: for that one, run the reference once beforehand so that
     * the scratch already holds what it writes, then put garbage back into y. */
    if (kt_style != CL_DEVICE_TYPE_CPU)
        kt_preset_scratch(&k, KANN_KERNEL_F32_CONV2D_WINOGRAD, &a, a.y, a.c_out * hw);
    kt_run(&k, KANN_KERNEL_F32_CONV2D_WINOGRAD, &a, sizeof a, 0);
    kt_free(&k);
}

static void run_cases(cl_device_type style) {
    /* F(4x4), within the harness's arena: wide (tile rows of up to 18 tiles, two blocks, two
     * groups of input channels) or tall (up to 66 tiles: three blocks) */
    const wino_extents small = {20, 30, 9, 11}, large = {40, 40, 11, 45};
    const wino_extents small4 = {20, 30, 13, 19}, wide4 = {40, 26, 9, 70}, tall4 = {20, 26, 24, 44};
    kt_style = style;
    for (uint64_t seed = 0; seed < CASES; seed++) {
        run_case(3500 + seed, small, KANN_WINO_F2X2);
        run_case(7100 + seed, large, KANN_WINO_F2X2);
        run_case(4300 + seed, small4, KANN_WINO_F4X4);
        run_case(8900 + seed, seed % 2 ? tall4 : wide4, KANN_WINO_F4X4);
    }
    kt_style = CL_DEVICE_TYPE_CPU;
}

/* The CPU kernel style: work-items of local size 1 (PoCL), the input transform into the scratch,
 * then the GEMMs. The GPU style: one work-item per output channel and tile. */
KT_BOTH_STYLES_MAIN(conv2d_winograd, run_cases)
#else
KT_MAIN_WITHOUT_OPENCL()
#endif
