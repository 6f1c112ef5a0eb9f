/* The OpenCL launch table: for each kernel id, which program (and build macros) runs a record,
 * under which entry point and NDRange, chosen per device type: CPU-style work-items (local size
 * 1, vector accumulators) on CPU devices, local-memory tiles on GPUs. */
#include <stdio.h>
#include <string.h>

#include "host_private.h"
#include "kann_kernels.h"
#include "opencl_internal.h"

static size_t round_up(size_t v, size_t to) {
    return (v + to - 1) / to * to;
}

/* The launch of an elementwise-style kernel over dims (d0, d1, d2): work-groups along d0. */
static void simple_launch(kann_ocl_launch *l, const char *entry, size_t d0, size_t d1, size_t d2) {
    size_t group = d0 >= 64 ? 64 : 8;
    l->program = KANN_OCL_PROGRAM_GENERIC;
    l->options[0] = '\0';
    l->entry = entry;
    l->has_local = 1;
    l->local[0] = group;
    l->local[1] = l->local[2] = 1;
    l->global[0] = d1 && d2 ? round_up(d0, group) : 0;
    l->global[1] = d1;
    l->global[2] = d2;
}

/* simple_launch for a kernel of another program (kernel ids 13 on). */
static void program_launch(kann_ocl_launch *l, kann_ocl_program_kind program, const char *entry,
                           size_t d0, size_t d1, size_t d2) {
    simple_launch(l, entry, d0, d1, d2);
    l->program = program;
}

/* Work-items for n units taken `per` at a time. */
static size_t bands(size_t n, size_t per) {
    return (n + per - 1) / per;
}

/* CPU devices: a memory-bound kernel over `rows` rows of `row_len` outputs in bands of rows,
 * one work-item (local size 1) per band of about BAND_OUTPUTS outputs (kann_band in
 * common.cl): PoCL spends microseconds on each work-group, more than a row takes. */
#define BAND_OUTPUTS 8192
static void band_launch(kann_ocl_launch *l, kann_ocl_program_kind program, const char *entry,
                        size_t rows, size_t row_len) {
    size_t n = bands(rows * row_len, BAND_OUTPUTS);
    program_launch(l, program, entry, 1, 1, 1);
    l->local[0] = 1;
    l->global[0] = rows && row_len ? (n < rows ? n : rows) : 0;
}

/* CPU devices: an elementwise kernel whose tile is flat elements, by rows of its innermost
 * dimension (row_len long; the tile may start and end inside a row), in bands (band_launch). */
static void row_band_launch(kann_ocl_launch *l, const char *entry, const kann_tile *t,
                            size_t row_len) {
    size_t r0 = row_len ? t->begin / row_len : 0;
    size_t r1 = row_len && t->end > t->begin ? (t->end - 1) / row_len + 1 : r0;
    band_launch(l, KANN_OCL_PROGRAM_GENERIC, entry, r1 - r0, row_len);
}

/* scatter_nd applies its tuples in order. When every tuple offset is a multiple of slice_len,
 * slice element i of any tuple lands on elements no other slice element reaches, so one
 * work-item per slice element (each walking the tuples in order) keeps that order; the kernel
 * makes the same test (data.cl). */
static size_t scatter_nd_width(const kann_scatter_nd_args *a) {
    if (a->slice_len == 0) return 0;
    for (uint32_t j = 0; j < a->k && j < KANN_MAX_RANK; j++)
        if (a->strides[j] % a->slice_len != 0) return 1;
    return a->slice_len;
}

/* The shape fields conv2d, dwconv2d and conv2d_packed share. */
typedef struct conv_shape {
    uint32_t n, c_in, h_in, w_in, c_out, h_out, w_out, group;
    uint32_t k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    uint32_t act, has_bias, has_res;
    uint32_t m_b, m_e, p_b, p_e; /* the tile as channels and flat output pixels */
} conv_shape;

/* CPU devices: the multiply-adds (vector lanes) a conv work-item does at least. */
#define CONV_ITEM_FMAS ((size_t)1 << 16)

/* Work-groups a GPU conv GEMM should have at least: a few per compute unit of a large GPU. */
#define GPU_GEMM_GROUPS 256

/* CPU devices: conv2d_packed with output channels in the lanes (conv2d_lanes.cl), for the
 * convs that stride or pad inside the kernel, over a reduction of at least LANES_MIN_K steps
 * and LANES_MIN_C_IN channels: its store writes each pixel's channels one by one, which the
 * stems' short reductions (RGB input, K = 27 or 147) do not amortize (squeezenet1_1's 0.71 ->
 * 1.10 ms, resnet18's 1.82 -> 1.95 ms on PoCL; 3x3 stride 2 over 256 channels 1.83 -> 0.69,
 * over 64 channels 1.03 -> 0.83, 1x1 stride 2 over 128 channels 0.24 -> 0.22). A row of w_out
 * pixels is nb blocks of at most 16, np each (the last one ragged); the first and last blocks
 * are built with their column fixed, the ones in between must read inside the row, else this
 * returns 0 (the pixels-in-lanes kernel takes the conv). */
#define LANES_MIN_K 128
#define LANES_MIN_C_IN 16
static int lanes_launch(const conv_shape *c, kann_ocl_launch *l, int len) {
    if ((size_t)c->c_in * c->k_h * c->k_w < LANES_MIN_K || c->c_in < LANES_MIN_C_IN) return 0;
    size_t nb = (c->w_out + 15) / 16, np = (c->w_out + nb - 1) / nb;
    if (nb > 2) {
        long left = (long)np * c->stride_w - (long)c->pad_left; /* block 1's first column */
        long right = (long)((nb - 1) * np - 1) * c->stride_w - (long)c->pad_left +
                     (long)(c->k_w - 1) * c->dil_w; /* block nb - 2's last column */
        if (left < 0 || right >= (long)c->w_in) return 0;
    }
    snprintf(l->options + len, sizeof l->options - (size_t)len,
             " -DVW=16 -DW_IN=%u -DW_OUT=%u -DNP=%zu -DNB=%zu", c->w_in, c->w_out, np, nb);
    l->program = KANN_OCL_PROGRAM_CONV_LANES;
    l->entry = "f32_conv_lanes";
    size_t r0 = c->p_b / c->w_out, r1 = (c->p_e - 1) / c->w_out + 1;
    /* rows per work-item: enough multiply-adds (CONV_ITEM_FMAS lanes) for PoCL's cost per
     * work-group */
    size_t row_fmas = (size_t)16 * np * c->c_in * c->k_h * c->k_w;
    size_t rows_per = row_fmas >= CONV_ITEM_FMAS ? 1 : CONV_ITEM_FMAS / (row_fmas + 1) + 1;
    l->global[0] = nb;
    l->global[1] = bands(r1 - r0, rows_per);
    l->global[2] = (c->m_e - c->m_b + 11) / 12;
    return 1;
}

static void conv_launch(const conv_shape *c, int packed, cl_device_type type, kann_ocl_launch *l) {
    int pointwise = c->k_h == 1 && c->k_w == 1 && c->stride_h == 1 && c->stride_w == 1 &&
                    c->pad_top == 0 && c->pad_left == 0 && c->h_in == c->h_out &&
                    c->w_in == c->w_out && c->group == 1;
    /* stride 1 and every window inside x (a padded input): outputs in x's row pitch */
    int wide = !pointwise && c->group == 1 && c->stride_h == 1 && c->stride_w == 1 &&
               c->pad_top == 0 && c->pad_left == 0 &&
               c->h_in >= c->h_out + (c->k_h - 1) * c->dil_h &&
               c->w_in >= c->w_out + (c->k_w - 1) * c->dil_w;
    size_t n_m = c->m_e - c->m_b, n_p = c->p_e - c->p_b;
    memset(l->global, 0, sizeof l->global);
    l->local[0] = l->local[1] = l->local[2] = 1;
    l->has_local = 1;
    int len = snprintf(l->options, sizeof l->options,
                       "-DFAM=%s -DPACKED=%d -DKH=%u -DKW=%u -DSH=%u -DSW=%u -DDH=%u -DDW=%u "
                       "-DPT=%u -DPL=%u -DACT=%u -DHAS_BIAS=%u -DHAS_RES=%u",
                       packed ? "conv2d_packed" : "conv2d", packed, c->k_h, c->k_w, c->stride_h,
                       c->stride_w, c->dil_h, c->dil_w, c->pad_top, c->pad_left, c->act,
                       c->has_bias, c->has_res);
    if (n_m == 0 || n_p == 0 || c->n == 0) return;
    if ((type & CL_DEVICE_TYPE_CPU) && packed && !pointwise && !wide && lanes_launch(c, l, len))
        return;
    if (type & CL_DEVICE_TYPE_CPU) {
        /* Blocks of 8 channels, packed weights too (read per channel): PoCL keeps their 16
         * vector accumulators in registers, where 12-channel panels (24 of them) ran slower on
         * every shared model (mobilenet_v2 7.4 -> 6.8 ms, squeezenet1_1 6.0 -> 5.2 ms,
         * minima over alternated rounds on two one-core sub-devices). */
        unsigned mb = c->group == 1 ? 8 : 1, vw, nv;
        if (pointwise || wide) {
            vw = 16;
            nv = 2;
        } else {
            vw = c->w_out <= 8 ? 8 : 16;
            nv = c->w_out > vw ? 2 : 1; /* a second vector only where the row fills it */
        }
        size_t r0 = c->p_b / c->w_out, r1 = (c->p_e - 1) / c->w_out + 1;
        /* one channel per work-item: 4 output rows at once share their input row loads */
        unsigned dwr = mb == 1 && !pointwise && !wide && r1 - r0 >= 4 ? 4 : 1;
        snprintf(l->options + len, sizeof l->options - (size_t)len,
                 " -DMB=%u -DVW=%u -DNV=%u -DPOINTWISE=%d -DWIDE=%d -DDWR=%u", mb, vw, nv,
                 pointwise, wide, dwr);
        l->program = KANN_OCL_PROGRAM_CONV_CPU;
        l->entry = "f32_conv";
        size_t pix = (size_t)vw * nv, blocks = (n_m + mb - 1) / mb;
        /* multiply-adds of one pixel block: a work-item takes enough of them (a band,
         * kann_band) for about CONV_ITEM_FMAS, so that small convs (depthwise, 1x1 over few
         * channels) do not spend their time on PoCL's cost per work-group */
        size_t block_fmas = (size_t)mb * pix * (c->c_in / c->group) * c->k_h * c->k_w;
        size_t per = block_fmas >= CONV_ITEM_FMAS ? 1 : CONV_ITEM_FMAS / (block_fmas + 1) + 1;
        l->global[1] = 1;
        if (pointwise) {
            l->global[0] = bands((n_p + pix - 1) / pix, per);
        } else if (wide) { /* rows r0 .. r1 - 1 at pitch w_in, the last one w_out long */
            l->global[0] = bands(((r1 - r0 - 1) * c->w_in + c->w_out + pix - 1) / pix, per);
        } else {
            size_t row_blocks = (c->w_out + pix - 1) / pix;
            l->global[0] = row_blocks;
            size_t rows_per = (per + row_blocks - 1) / row_blocks; /* rows of a band */
            l->global[1] = bands(bands(r1 - r0, dwr), bands(rows_per, dwr));
        }
        l->global[2] = (size_t)c->n * blocks;
        return;
    }
    /* GEMM tiles of 16 RT x 16 RT outputs: the largest RT that still gives GPU_GEMM_GROUPS
     * work-groups (batch-1 layers on 7x7 to 28x28 maps have few 64 x 64 tiles) */
    unsigned rt = 4;
    while (rt > 1 && bands(n_p, 16 * rt) * bands(n_m, 16 * rt) < GPU_GEMM_GROUPS)
        rt /= 2;
    snprintf(l->options + len, sizeof l->options - (size_t)len, " -DVW=1 -DRT=%u", rt);
    l->program = KANN_OCL_PROGRAM_CONV_GPU;
    if (c->group == 1) {
        l->entry = "f32_conv_gemm";
        l->local[0] = l->local[1] = 16;
        l->global[0] = bands(n_p, 16 * rt) * 16;
        l->global[1] = bands(n_m, 16 * rt) * 16;
    } else {
        l->entry = "f32_conv_direct";
        l->local[0] = 64;
        l->global[0] = round_up(n_p, 64);
        l->global[1] = n_m;
    }
    l->global[2] = c->n;
}

static void conv_shape_from_conv2d(const kann_conv2d_args *a, conv_shape *c) {
    *c = (conv_shape){a->n,
                      a->c_in,
                      a->h_in,
                      a->w_in,
                      a->c_out,
                      a->h_out,
                      a->w_out,
                      a->group,
                      a->k_h,
                      a->k_w,
                      a->stride_h,
                      a->stride_w,
                      a->dil_h,
                      a->dil_w,
                      a->pad_top,
                      a->pad_left,
                      a->act.kind,
                      a->bias.space != KANN_SPACE_NONE,
                      a->residual.space != KANN_SPACE_NONE,
                      0,
                      0,
                      0,
                      0};
    c->m_b = 0;
    c->m_e = a->c_out;
    c->p_b = 0;
    c->p_e = a->h_out * a->w_out;
    if (a->tile.axis == 0) {
        c->m_b = a->tile.begin;
        c->m_e = a->tile.end;
    } else {
        c->p_b = a->tile.begin * a->w_out;
        c->p_e = a->tile.end * a->w_out;
    }
}

#ifdef KANN_CONV_PANEL
static void conv_shape_from_packed(const kann_conv2d_packed_args *a, conv_shape *c) {
    *c = (conv_shape){1,
                      a->c_in,
                      a->h_in,
                      a->w_in,
                      a->c_out,
                      a->h_out,
                      a->w_out,
                      1,
                      a->k_h,
                      a->k_w,
                      a->stride_h,
                      a->stride_w,
                      a->dil_h,
                      a->dil_w,
                      a->pad_top,
                      a->pad_left,
                      a->act.kind,
                      a->bias.space != KANN_SPACE_NONE,
                      a->residual.space != KANN_SPACE_NONE,
                      0,
                      0,
                      0,
                      0};
    c->m_b = 0;
    c->m_e = a->c_out;
    c->p_b = 0;
    c->p_e = a->h_out * a->w_out;
    if (a->tile.axis == 0) {
        c->m_b = a->tile.begin;
        c->m_e = a->tile.end;
    } else {
        c->p_b = a->tile.begin;
        c->p_e = a->tile.end;
    }
}
#endif

/* multiply-adds (vector lanes) an f32_matmul_rows work-item does at least: as CONV_ITEM_FMAS */
#define MATMUL_ITEM_FMAS ((size_t)1 << 16)
#define MATMUL_ROWS_COLS 32 /* columns of a block (2 * VW) */
_Static_assert(KANN_MATMUL_PANEL == 64, "matmul.cl's MATMUL_PANEL");
#define MATMUL_MIN_ITEMS 16 /* work-items enough to keep a CPU device's cores busy */
#define MATMUL_FEW_ROWS 512

/* rows of an f32_matmul_rows block (MM in matmul.cl): 8, or the fewest of 1, 2, 4 that cover
 * the tile's rows (a matrix-vector product computes one row, not eight) */
static unsigned matmul_block_rows(size_t rows) {
    return rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : 8;
}

static void matmul_launch(const kann_matmul_args *a, cl_device_type type, kann_ocl_launch *l) {
    uint32_t i_b = 0, i_e = a->m, j_b = 0, j_e = a->n;
    if (a->tile.axis == 0) {
        i_b = a->tile.begin;
        i_e = a->tile.end;
    } else {
        j_b = a->tile.begin;
        j_e = a->tile.end;
    }
    size_t rows = i_e > i_b ? i_e - i_b : 0, cols = j_e > j_b ? j_e - j_b : 0;
    l->program = KANN_OCL_PROGRAM_MATMUL;
    l->has_local = 1;
    l->local[0] = l->local[1] = l->local[2] = 1;
    int len =
        snprintf(l->options, sizeof l->options, "-DACT=%u -DHAS_BIAS=%d -DHAS_RES=%d", a->act.kind,
                 a->bias.space != KANN_SPACE_NONE, a->residual.space != KANN_SPACE_NONE);
    /* f32_matmul_rows loads B's columns VW = 16 at a time from its tile's first: in panels,
     * each load must lie in one panel */
    if ((type & CL_DEVICE_TYPE_CPU) && a->b_col_stride == 1 &&
        (!a->b_panel_stride || j_b % 16 == 0)) {
        /* blocks of mm rows x 32 columns, in bands of at least MATMUL_ITEM_FMAS */
        unsigned mm = matmul_block_rows(rows);
        size_t blocks = bands(rows, mm) * bands(cols, MATMUL_ROWS_COLS);
        size_t block_fmas = (size_t)mm * MATMUL_ROWS_COLS * a->k;
        size_t per = block_fmas >= MATMUL_ITEM_FMAS ? 1 : MATMUL_ITEM_FMAS / (block_fmas + 1) + 1;
        /* Few rows (up to MATMUL_FEW_ROWS) over wide weights (vit_b_32's 50 tokens, swin_t's
         * last stage): where there are columns enough for every core, a band takes all the row
         * blocks of its columns, so that B's panel (k x 32) comes from memory once and serves
         * every row from cache, instead of once per row block. */
        size_t row_blocks = bands(rows, mm);
        if (rows <= MATMUL_FEW_ROWS && row_blocks && per < row_blocks &&
            blocks / row_blocks >= MATMUL_MIN_ITEMS)
            per = row_blocks;
        snprintf(l->options + len, sizeof l->options - (size_t)len, " -DROWS=1 -DMM=%u -DVW=16",
                 mm);
        l->entry = "f32_matmul_rows";
        l->global[0] = a->batch ? bands(blocks, per) : 0;
        l->global[1] = 1;
        l->global[2] = a->batch;
        return;
    }
    int dot8 = a->b_col_stride != 1 && a->a_col_stride == 1 && a->b_row_stride == 1;
    snprintf(l->options + len, sizeof l->options - (size_t)len, " -DROWS=0 -DVW=1 -DDOT8=%d", dot8);
    l->entry = "f32_matmul";
    l->local[0] = 16;
    l->global[0] = rows && a->batch ? round_up(cols, 16) : 0;
    l->global[1] = rows;
    l->global[2] = a->batch;
}

/* f32_conv2d_winograd (winograd.cl), output tiles of 2x2 or 4x4 (the record's transform).
 * CPU devices: two launches of local size 1, the input transform per (block of 32 output
 * tiles, 32 input channels) into the record's scratch, then the GEMMs and output transform per
 * (panel of 12 output channels, block). GPUs: one work-item per (output channel, output tile). */
static void winograd_launch(const kann_conv2d_winograd_args *a, cl_device_type type,
                            kann_ocl_launch *l) {
    size_t e = a->transform == KANN_WINO_F4X4 ? 4 : 2;
    size_t tiles = ((size_t)a->h_out + e - 1) / e * (((size_t)a->w_out + e - 1) / e);
    size_t len = (size_t)a->tile.end - a->tile.begin;
    size_t channels = a->tile.axis == 0 ? len : a->c_out;
    /* the panels the channels reach into (a record along them may start inside one) */
    size_t m_begin = a->tile.axis == 0 ? a->tile.begin : 0;
    size_t panels = channels ? (m_begin + channels + 11) / 12 - m_begin / 12 : 0;
    if (a->tile.axis == 0) len = channels ? tiles : 0;
    if (!(type & CL_DEVICE_TYPE_CPU)) {
        program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_conv2d_winograd", panels ? channels : 0,
                       len, 1);
        return;
    }
    size_t blocks = (len + KANN_CONV_PIXEL_GRANULE - 1) / KANN_CONV_PIXEL_GRANULE;
    l->program = KANN_OCL_PROGRAM_SPATIAL;
    l->has_local = 1;
    l->local[0] = l->local[1] = l->local[2] = 1;
    l->entry = "f32_wino_input";
    l->global[0] = panels ? blocks : 0;
    l->global[1] = a->c_in ? (a->c_in + 31) / 32 : 1; /* WINO_CG channels each */
    l->global[2] = 1;
    l->then_entry = "f32_wino_gemm";
    l->then_global[0] = panels;
    l->then_global[1] = blocks;
    l->then_global[2] = 1;
}

kann_status kann_ocl_plan_launch(uint32_t kernel_id, const void *args, cl_device_type type,
                                 kann_ocl_launch *l, kann_error *err) {
    memset(l, 0, sizeof *l);
    const kann_tile *t = args;
    size_t tile_len = (size_t)t->end - t->begin;
    conv_shape c;
    switch (kernel_id) {
    case KANN_KERNEL_F32_CONV2D:
        conv_shape_from_conv2d(args, &c);
        conv_launch(&c, 0, type, l);
        return KANN_OK;
#ifdef KANN_CONV_PANEL
    case KANN_KERNEL_F32_DWCONV2D:
        conv_shape_from_conv2d(args, &c);
        conv_launch(&c, 0, type, l);
        return KANN_OK;
    case KANN_KERNEL_F32_CONV2D_PACKED:
        conv_shape_from_packed(args, &c);
        conv_launch(&c, 1, type, l);
        return KANN_OK;
#endif
    case KANN_KERNEL_F32_MATMUL:
        matmul_launch(args, type, l);
        return KANN_OK;
    case KANN_KERNEL_F32_BINARY: {
        const kann_binary_args *a = args;
        if ((type & CL_DEVICE_TYPE_CPU) && a->rank >= 1 && a->rank <= KANN_MAX_RANK)
            row_band_launch(l, "f32_binary_rows", t, a->dims[a->rank - 1]);
        else
            simple_launch(l, "f32_binary", tile_len, 1, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_ACT:
        simple_launch(l, "f32_act", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_F32_CHANNEL_AFFINE: {
        const kann_channel_affine_args *a = args;
        if (type & CL_DEVICE_TYPE_CPU)
            band_launch(l, KANN_OCL_PROGRAM_GENERIC, "f32_channel_affine_rows", tile_len, a->inner);
        else
            simple_launch(l, "f32_channel_affine", a->inner, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_POOL2D: {
        const kann_pool2d_args *a = args;
        if (type & CL_DEVICE_TYPE_CPU)
            band_launch(l, KANN_OCL_PROGRAM_GENERIC, "f32_pool2d_rows", tile_len * a->h_out,
                        a->w_out);
        else
            simple_launch(l, "f32_pool2d", a->w_out, a->h_out, tile_len);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_GLOBAL_AVGPOOL:
        simple_launch(l, "f32_global_avgpool", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_F32_POINTWISE_GAP:
        if (type & CL_DEVICE_TYPE_CPU) {
            simple_launch(l, "f32_pointwise_gap", tile_len, 1, 1);
        } else { /* a work-group of 64 per channel (GAP_GROUP in pool.cl) */
            simple_launch(l, "f32_pointwise_gap_groups", 64, tile_len, 1);
            l->local[0] = 64;
        }
        return KANN_OK;
    case KANN_KERNEL_F32_POINTWISE_LANES: {
        /* both styles: a work-item per output, (pixels, output channels) of the tile (pool.cl) */
        const kann_pointwise_lanes_args *a = args;
        size_t pixels = t->axis == 1 ? tile_len : a->hw,
               channels = t->axis == 0 ? tile_len : a->c_out;
        simple_launch(l, "f32_pointwise_lanes", pixels, channels, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_SOFTMAX: {
        const kann_softmax_args *a = args;
        simple_launch(l, "f32_softmax", a->inner, a->axis_len ? tile_len : 0, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_TRANSPOSE: {
        const kann_transpose_args *a = args;
        if ((type & CL_DEVICE_TYPE_CPU) && a->rank >= 1 && a->rank <= KANN_MAX_RANK)
            row_band_launch(l, "f32_transpose_rows", t, a->dims[a->rank - 1]);
        else
            simple_launch(l, "f32_transpose", tile_len, 1, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_COPY: {
        const kann_copy_args *a = args;
        if (type & CL_DEVICE_TYPE_CPU)
            band_launch(l, KANN_OCL_PROGRAM_GENERIC, "f32_copy_rows", tile_len, a->row_len);
        else
            simple_launch(l, "f32_copy", a->row_len, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_REDUCE:
        program_launch(l, KANN_OCL_PROGRAM_REDUCE, "f32_reduce", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_F32_NORM: {
        const kann_norm_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_REDUCE, "f32_norm", a->len ? tile_len : 0, 1, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_HARDMAX: {
        const kann_softmax_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_REDUCE, "f32_hardmax", a->inner,
                       a->axis_len ? tile_len : 0, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_LRN: {
        const kann_lrn_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_REDUCE, "f32_lrn", a->inner, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_NLL_LOSS: {
        const kann_nll_loss_args *a = args;
        size_t n = a->reduction == KANN_LOSS_NONE ? tile_len : tile_len ? 1 : 0;
        program_launch(l, KANN_OCL_PROGRAM_REDUCE, "f32_nll_loss", n, 1, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_STRIDED_COPY:
        program_launch(l, KANN_OCL_PROGRAM_DATA, "strided_copy", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_GATHER: {
        const kann_gather_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_DATA, "gather", a->inner, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_GATHER_ELEMENTS:
        program_launch(l, KANN_OCL_PROGRAM_DATA, "gather_elements", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_GATHER_ND: {
        const kann_gather_nd_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_DATA, "gather_nd", a->slice_len, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_SCATTER_ELEMENTS:
        program_launch(l, KANN_OCL_PROGRAM_DATA, "scatter_elements", tile_len ? 1 : 0, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_SCATTER_ND:
        program_launch(l, KANN_OCL_PROGRAM_DATA, "scatter_nd",
                       tile_len ? scatter_nd_width(args) : 0, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_TRILU: {
        const kann_trilu_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_DATA, "trilu", a->cols, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_PAD: {
        const kann_pad_args *a = args;
        size_t row = a->rank >= 1 && a->rank <= KANN_MAX_RANK ? a->dims[a->rank - 1] : 0;
        program_launch(l, KANN_OCL_PROGRAM_DATA, "pad", row, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_PAD2D: {
        const kann_pad2d_args *a = args;
        if (type & CL_DEVICE_TYPE_CPU)
            band_launch(l, KANN_OCL_PROGRAM_DATA, "f32_pad2d_rows", tile_len, a->w_out);
        else
            program_launch(l, KANN_OCL_PROGRAM_DATA, "f32_pad2d", a->w_out, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_CONV2D_WINOGRAD:
        winograd_launch(args, type, l);
        return KANN_OK;
    case KANN_KERNEL_F32_CONV_TRANSPOSE:
    case KANN_KERNEL_F32_CONV_ND: {
        const kann_conv_transpose_args *a = args;
        size_t out_sp = (size_t)a->out[0] * a->out[1] * a->out[2];
        program_launch(l, KANN_OCL_PROGRAM_SPATIAL,
                       kernel_id == KANN_KERNEL_F32_CONV_ND ? "f32_conv_nd" : "f32_conv_transpose",
                       out_sp, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_CONV2D_MAXPOOL: {
        const kann_conv2d_maxpool_args *a = args;
        size_t rows = t->axis == 1 ? tile_len : a->h_out,
               channels = t->axis == 0 ? tile_len : a->c_out;
        program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_conv2d_maxpool", a->w_out, rows, channels);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_DWBLOCK: {
        /* a work-item per panel of output channels and output pixel, or block of 16 output
         * columns (CPU devices, local size 1) */
        const kann_dwblock_args *a = args;
        size_t panels = bands(a->c_out, KANN_CONV_PANEL);
        if (type & CL_DEVICE_TYPE_CPU) {
            program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_dwblock_rows", 1, tile_len, panels);
            l->local[0] = 1;
            l->global[0] = tile_len && panels ? bands(a->w_out, 16) : 0;
        } else {
            program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_dwblock", a->w_out, tile_len, panels);
        }
        return KANN_OK;
    }
    case KANN_KERNEL_F32_POOL_ND: {
        const kann_pool_nd_args *a = args;
        size_t out_sp = (size_t)a->out[0] * a->out[1] * a->out[2];
        program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_pool_nd", out_sp, tile_len, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_F32_RESIZE: {
        const kann_resize_args *a = args;
        program_launch(l, KANN_OCL_PROGRAM_SPATIAL, "f32_resize", a->w_out, a->h_out, tile_len);
        return KANN_OK;
    }
    case KANN_KERNEL_UNARY: {
        const kann_unary_args *a = args;
        if ((type & CL_DEVICE_TYPE_CPU) && a->dtype == KANN_DTYPE_F32 && a->op <= KANN_UNARY_ERF)
            band_launch(l, KANN_OCL_PROGRAM_TYPED, "unary_f32_band", tile_len, 1);
        else
            program_launch(l, KANN_OCL_PROGRAM_TYPED, "unary", tile_len, 1, 1);
        return KANN_OK;
    }
    case KANN_KERNEL_CUMSUM: /* one work-item per line of the scan */
        program_launch(l, KANN_OCL_PROGRAM_TYPED, "cumsum", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_TOPK: /* one work-item per line */
        program_launch(l, KANN_OCL_PROGRAM_TYPED, "topk", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_BINARY_TYPED:
        program_launch(l, KANN_OCL_PROGRAM_TYPED, "binary_typed", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_TERNARY:
        program_launch(l, KANN_OCL_PROGRAM_TYPED, "ternary", tile_len, 1, 1);
        return KANN_OK;
    case KANN_KERNEL_CAST:
        program_launch(l, KANN_OCL_PROGRAM_TYPED, "cast", tile_len, 1, 1);
        return KANN_OK;
    default:
        break;
    }
    const char *name = kernel_id < KANN_KERNEL_COUNT && kann_kernels[kernel_id].name
                           ? kann_kernels[kernel_id].name
                           : "(unknown id)";
    return kann_host_fail(err, KANN_E_UNSUPPORTED, "the opencl backend has no kernel %s (id %u)",
                          name, kernel_id);
}
