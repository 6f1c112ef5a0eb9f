/* Multiply-adds one record does, from its argument struct and tile: what a profile divides its
 * time by. Kernels that only move or map values count none. A Winograd conv counts the
 * multiply-adds of the direct conv it computes (the usual "effective" figure), so its rate
 * compares with the direct kernels' and may exceed the machine's peak. */
#include "kann_kernels.h"

/* The share [begin, end) of axis in a tile, or the whole extent for the other axes. */
static double share(const kann_tile *t, uint32_t axis, uint32_t extent) {
    return t->axis == axis ? (double)t->end - t->begin : (double)extent;
}

double kann_record_macs(uint32_t kernel, const void *args) {
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D:
    case KANN_KERNEL_F32_DWCONV2D: {
        const kann_conv2d_args *a = args;
        double taps = (double)a->k_h * a->k_w * (a->group ? a->c_in / a->group : 0);
        return a->n * share(&a->tile, 0, a->c_out) * share(&a->tile, 1, a->h_out) * a->w_out * taps;
    }
    case KANN_KERNEL_F32_CONV2D_PACKED: {
        const kann_conv2d_packed_args *a = args;
        double k = (double)a->c_in * a->k_h * a->k_w;
        return share(&a->tile, 0, a->c_out) * share(&a->tile, 1, a->h_out * a->w_out) * k;
    }
    case KANN_KERNEL_F32_POINTWISE_LANES: {
        const kann_pointwise_lanes_args *a = args;
        return share(&a->tile, 0, a->c_out) * share(&a->tile, 1, a->hw) * a->c_in;
    }
    case KANN_KERNEL_F32_POINTWISE_GAP: {
        const kann_pointwise_gap_args *a = args;
        return share(&a->tile, 0, a->c_out) * a->hw * a->c_in;
    }
    case KANN_KERNEL_F32_CONV2D_MAXPOOL: { /* the conv's rows a row tile's windows reach */
        const kann_conv2d_maxpool_args *a = args;
        double k = (double)a->c_in * a->k_h * a->k_w, rows = a->h_conv;
        if (a->tile.axis == 1) {
            if (a->tile.begin >= a->tile.end) return 0.0;
            int64_t lo = (int64_t)a->tile.begin * a->pool_stride_h - a->pool_pad_top;
            int64_t hi = (int64_t)(a->tile.end - 1) * a->pool_stride_h - a->pool_pad_top +
                         a->pool_k_h;
            if (lo < 0) lo = 0;
            if (hi > (int64_t)a->h_conv) hi = a->h_conv;
            rows = hi > lo ? (double)(hi - lo) : 0.0;
        }
        return share(&a->tile, 0, a->c_out) * rows * a->w_conv * k;
    }
    case KANN_KERNEL_F32_DWBLOCK: { /* per output row: its depthwise conv and projection, and
                                     * the expansion of its share of the input rows */
        const kann_dwblock_args *a = args;
        double rows = share(&a->tile, 0, a->h_out), frac = a->h_out ? rows / a->h_out : 0.0;
        double expand = a->expand ? (double)a->h_in * a->w_in * a->c_mid * a->c_in * frac : 0.0;
        return expand + rows * a->w_out * a->c_mid * ((double)a->k_h * a->k_w + a->c_out);
    }
    case KANN_KERNEL_F32_CONV2D_WINOGRAD: {
        const kann_conv2d_winograd_args *a = args;
        double pixels = (double)a->h_out * a->w_out;
        if (a->tile.axis == 1) { /* e x e output tiles; only the grid's edge tiles are partial */
            uint64_t e = a->transform == KANN_WINO_F4X4 ? 4 : 2;
            double tiles = (double)(((uint64_t)a->h_out + e - 1) / e) *
                           (double)(((uint64_t)a->w_out + e - 1) / e);
            double end = a->tile.end < tiles ? a->tile.end : tiles;
            pixels *= end > a->tile.begin ? (end - a->tile.begin) / tiles : 0.0;
        }
        return share(&a->tile, 0, a->c_out) * pixels * 9.0 * a->c_in;
    }
    case KANN_KERNEL_F32_MATMUL: {
        const kann_matmul_args *a = args;
        return (double)a->batch * share(&a->tile, 0, a->m) * share(&a->tile, 1, a->n) * a->k;
    }
    default:
        return 0.0;
    }
}
