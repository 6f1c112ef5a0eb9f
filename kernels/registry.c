/* The kernel table, generated from kernels.def and families.def: name, argument size, tile
 * axes, reference function and validator of every kernel id. */
#include "kann_kernels.h"
#include "ref/conv2d_packed.h"
#include "ref/conv2d_winograd.h"
#include "ref/dwblock.h"

#define KANN_FAMILY(family, n_axes) enum { kann_axes_##family = n_axes };
#include "families.def"
#undef KANN_FAMILY

const kann_kernel_info kann_kernels[KANN_KERNEL_COUNT] = {
    [KANN_KERNEL_BARRIER] = {"barrier", 0, 0, 0, 0},
#define KANN_KERNEL(ENUM, name, id, family)                                                      \
    [id] = {#name, sizeof(kann_##family##_args), kann_axes_##family, kann_##name##_ref,           \
            kann_##family##_validate},
#include "kernels.def"
#undef KANN_KERNEL
};

/* Every argument struct is an on-disk layout: 8-byte multiple, tile first. */
#define KANN_FAMILY(family, n_axes)                                                              \
    _Static_assert(sizeof(kann_##family##_args) % 8 == 0, #family " args size");               \
    _Static_assert(offsetof(kann_##family##_args, tile) == 0, #family " args tile first");
#include "families.def"
#undef KANN_FAMILY

/* The least common multiple of a > 0 and b, a power of two; 0 past UINT32_MAX. */
static uint32_t lcm_pow2(uint32_t a, uint32_t b) {
    uint32_t common = a & (~a + 1u); /* the largest power of two dividing a */
    uint64_t m = common >= b ? a : (uint64_t)(a / common) * b;
    return m > UINT32_MAX ? 0 : (uint32_t)m;
}

uint32_t kann_kernel_part_granule(uint32_t kernel, const void *args, double *work) {
    const kann_tile *t = args;
    double share = t->end > t->begin ? (double)(t->end - t->begin) : 0.0;
    *work = 0.0;
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D_PACKED: {
        /* The pointwise path reads x in place: cut along either axis. The wide path's pixel
         * blocks start at the tile's first pixel, and where they end changes how its sums
         * round: cut along output channels only. A gathering conv (a scratch) along its pixels,
         * each part gathering its own into its own place, in whole output rows of whole
         * 32-pixel strips (where the strips and the direct path's rows fall the same as the
         * whole tile's); not where the tile picks its path by its extent (the phase planes and
         * the AVX-512 lanes path: windows of several taps over a long reduction, and narrow
         * convs), nor along output channels (each part would gather every pixel into the same
         * place). */
        const kann_conv2d_packed_args *a = args;
        double k = (double)a->c_in * a->k_h * a->k_w, hw = (double)a->h_out * a->w_out;
        if (a->scratch.space != KANN_SPACE_NONE) {
            if (t->axis != 1 || a->w_out == 0 || a->c_out <= KANN_CONV_LANES_NARROW ||
                ((uint32_t)a->k_h * a->k_w > 1 && k >= KANN_CONV_PHASE_MIN_K))
                return 0;
            uint32_t g = lcm_pow2(a->w_out, KANN_CONV_PIXEL_GRANULE);
            if (g) *work = share * k * a->c_out;
            return g;
        }
        if (t->axis == 1 && !kann_conv2d_packed_pointwise(a)) return 0;
        *work = share * k * (t->axis == 0 ? hw : (double)a->c_out);
        return t->axis == 0 ? KANN_CONV_PANEL : KANN_CONV_PIXEL_GRANULE;
    }
    case KANN_KERNEL_F32_CONV2D_WINOGRAD: {
        /* along the tiles only, in blocks: each block of the tile has its own place in the
         * scratch (one for the streams, the call cut along tiles), so parts never share one;
         * along output channels each part would transform every tile into the same place */
        const kann_conv2d_winograd_args *a = args;
        if (t->axis != 1) return 0;
        double e = (double)kann_wino_edge(a);
        *work = share * e * e * 9.0 * a->c_in * a->c_out;
        return KANN_WINO_BLOCK;
    }
    case KANN_KERNEL_F32_DWCONV2D: {
        /* channels in 16-lane groups, or output rows; a tile of every row may run whole
         * planes (the AVX-512 planes path), which sum otherwise than the row paths its parts
         * would take: along rows only a tile of some of them */
        const kann_conv2d_args *a = args;
        if (t->axis == 1 && t->begin == 0 && t->end == a->h_out) return 0;
        double taps = (double)a->k_h * a->k_w;
        double per = t->axis == 0 ? (double)a->h_out * a->w_out : (double)a->w_out * a->c_out;
        *work = share * taps * per;
        return t->axis == 0 ? 16 : 1;
    }
    case KANN_KERNEL_F32_POOL2D: {
        const kann_pool2d_args *a = args;
        *work = share * a->h_out * a->w_out * a->k_h * a->k_w;
        return 1; /* planes */
    }
    case KANN_KERNEL_F32_POINTWISE_GAP: { /* blocks of output channels, each its own sums */
        const kann_pointwise_gap_args *a = args;
        *work = share * a->hw * a->c_in;
        return KANN_GAP_BLOCK;
    }
    case KANN_KERNEL_F32_POINTWISE_LANES: { /* blocks of output channels, or pixels */
        const kann_pointwise_lanes_args *a = args;
        *work = share * a->c_in * (t->axis == 0 ? (double)a->hw : (double)a->c_out);
        return t->axis == 0 ? KANN_GAP_BLOCK : KANN_LANES_PIXEL_GRANULE;
    }
    case KANN_KERNEL_F32_DWBLOCK: { /* bands of output rows, with a scratch for each thread */
        const kann_dwblock_args *a = args;
        if (a->slots < 2) return 0;
        double row = (double)a->w_out * a->c_mid * ((double)a->k_h * a->k_w + a->c_out);
        if (a->expand) row += (double)a->stride_h * a->w_in * a->c_mid * a->c_in;
        *work = share * row;
        return a->band_rows;
    }
    default:
        return 0;
    }
}

uint32_t kann_kernel_part_slots(uint32_t kernel, const void *args) {
    return kernel == KANN_KERNEL_F32_DWBLOCK ? ((const kann_dwblock_args *)args)->slots : 0;
}

int kann_kernel_part_claims(uint32_t kernel) {
    return kernel == KANN_KERNEL_F32_DWBLOCK;
}

void kann_kernel_part_args(uint32_t kernel, void *args, uint32_t begin, uint32_t end,
                           uint32_t slot) {
    kann_tile *t = args;
    t->begin = begin;
    t->end = end;
    if (slot && kernel == KANN_KERNEL_F32_DWBLOCK) { /* the part's own copy, and only it */
        kann_dwblock_args *a = args;
        a->scratch.offset += slot * kann_dwblock_slot_floats(a) * sizeof(float);
        a->slots = 1;
    }
}
