/* Lowering of Conv: a 1-D or 2-D convolution, any groups, with the fused epilogue. One image
 * with one group and constant weights runs as a GEMM over weights packed into 12-channel
 * panels (conv2d_packed); a depthwise conv gets its own kernel (dwconv2d); anything else the
 * direct conv2d. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "ref/conv2d_maxpool.h"
#include "ref/conv2d_packed.h"
#include "ref/dwblock.h"
#include "shapes.h"
#include "shapes_data.h"
#include "shapes_reduce.h"

/* Rows [m0, m0 + c_out) and columns [k0, k0 + K) of W [..][ld] (the ONNX layout, ld = c_in /
 * group * k_h * k_w) in blocks of `block` output channels, the channels innermost:
 * [block][K][block], channels past c_out zero. */
static int pack_weight_blocks(kc_graph *g, int w, size_t m0, uint32_t c_out, size_t ld, size_t k0,
                              size_t K, uint32_t block) {
    const kc_value *wv = kc_val(g, w);
    size_t blocks = (c_out + block - 1) / block;
    float *packed = calloc(blocks * K * block, sizeof(float));
    if (!packed) abort();
    const float *src = (const float *)wv->data + m0 * ld + k0;
    for (size_t m = 0; m < c_out; m++)
        for (size_t k = 0; k < K; k++)
            packed[(m / block) * K * block + k * block + m % block] = src[m * ld + k];
    int64_t dims[3] = {(int64_t)blocks, (int64_t)K, (int64_t)block};
    int v = kc_new_const_f32(g, kc_sprintf(g, "%s.panels%u", wv->name, block), 3, dims, packed);
    free(packed);
    return v;
}

/* As conv2d_packed's weights: panels of KANN_CONV_PANEL output channels, [panel][K][12]. */
static int pack_weight_panels(kc_graph *g, int w, size_t m0, uint32_t c_out, size_t ld, size_t k0,
                              size_t K) {
    return pack_weight_blocks(g, w, m0, c_out, ld, k0, K, KANN_CONV_PANEL);
}

/* The conv's input with its padding put around it once (kernel pad2d), just the rows and
 * columns the windows reach: [c_in][h][w]. */
/* A new float value [c][h][w] named after value of with suffix what. */
static int planes_value(kc_graph *g, int of, const char *what, uint32_t c, uint32_t h, uint32_t w) {
    int v = kc_add_value(g, kc_unique_name(g, kc_sprintf(g, "%s.%s", kc_val(g, of)->name, what)));
    kc_value *pv = &g->values[v];
    pv->dtype = KC_DTYPE_FLOAT;
    pv->rank = 3;
    pv->dims[0] = c;
    pv->dims[1] = h;
    pv->dims[2] = w;
    return v;
}

static int pad_input(kc_graph *g, kc_program *p, int id, int x, const kann_conv2d_args *c2,
                     uint32_t h, uint32_t w) {
    int v = planes_value(g, x, "padded", c2->c_in, h, w);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_PAD2D, id);
    kann_pad2d_args *a = c->args;
    a->c = c2->c_in;
    a->h_in = c2->h_in;
    a->w_in = c2->w_in;
    a->h_out = h;
    a->w_out = w;
    a->pad_top = c2->pad_top;
    a->pad_left = c2->pad_left;
    kc_bind(c, offsetof(kann_pad2d_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_pad2d_args, y), v, 0, 1);
    kc_set_tile(c, c2->c_in * h, 1, 0, 0);
    c->macs = (double)c2->c_in * h * w;
    return v;
}

/* F(2x2, 3x3) tiles of a conv's output. */
static uint64_t winograd_tiles2(const kann_conv2d_args *c2) {
    return (uint64_t)(c2->h_out / 2 + c2->h_out % 2) * (c2->w_out / 2 + c2->w_out % 2);
}

/* The fewest F(2x2, 3x3) tiles for Winograd: a full vector of the kernels' 12 x 16 GEMM tile.
 * Each transformed weight, 16/9 as many bytes as the packed ones and streamed from memory on
 * small maps, then serves 16 tiles: resnet18's 512-channel 7x7 layers (16 tiles) took 1.53-1.59
 * ms against 1.77-1.86 direct on one core, and 630-730 against 860-880 us per stream on two
 * (split along output channels; the block of 16 tiles does not split). */
#define KANN_WINO_MIN_TILES 16

/* ---- kann-c --tune: the lowering a node asks for, and what it could take ---------------- */

static int has_picks(const kc_program *p, int id) {
    return id >= 0 && id < p->n_pick_nodes;
}

/* The way asked of node id's conv, and the fusion asked of the node leading it. */
static kc_pick pick_of(const kc_program *p, int id) {
    return p->picks && has_picks(p, id) ? (kc_pick)p->picks[id].way : KC_PICK_AUTO;
}

static kc_pick fusion_of(const kc_program *p, int id) {
    return p->picks && has_picks(p, id) ? (kc_pick)p->picks[id].fusion : KC_PICK_AUTO;
}

/* Node id's conv could take the picks of the mask options and took `made`. */
static void note_pick(kc_program *p, int id, unsigned options, kc_pick made) {
    if (!p->pick_options || !has_picks(p, id)) return;
    p->pick_options[id] |= (uint16_t)options;
    p->picked[id].way = (uint8_t)made;
}

/* Node id leads a fusion of itself and the n nodes of members, fused or not (made). */
static void note_fusion(kc_program *p, int id, const int *members, int n, kc_pick made) {
    if (!p->pick_options || !has_picks(p, id)) return;
    p->pick_options[id] |= 1u << KC_PICK_FUSED | 1u << KC_PICK_APART;
    p->picked[id].fusion = (uint8_t)made;
    for (int i = 0; i < n; i++)
        if (has_picks(p, members[i])) p->pick_leader[members[i]] = id + 1;
}

/* Whether node id leads a fusion the cost model would take (fuse), or --tune asks otherwise. */
static int fusion_chosen(kc_program *p, int id, const int *members, int n, int fuse) {
    kc_pick k = fusion_of(p, id);
    int fused = k == KC_PICK_FUSED || (k != KC_PICK_APART && fuse);
    note_fusion(p, id, members, n, fused ? KC_PICK_FUSED : KC_PICK_APART);
    return fused;
}

#define PICK_BIT(k) (1u << (k))
/* The ways of a conv Winograd computes, and of a pointwise conv over a small map. */
#define WINO_WAYS (PICK_BIT(KC_PICK_PACKED) | PICK_BIT(KC_PICK_WINO_F2) | PICK_BIT(KC_PICK_WINO_F4))
#define LANES_WAYS (PICK_BIT(KC_PICK_PACKED) | PICK_BIT(KC_PICK_LANES))

/* Convs Winograd computes: 3x3 stride 1, undilated, with GEMMs over channels long enough for
 * its kernels' 12 x 16 tile (the image stems, a few input channels, stay on the direct path). */
static int winograd_shape(const kann_conv2d_args *c2) {
    return c2->k_h == 3 && c2->k_w == 3 && c2->stride_h == 1 && c2->stride_w == 1 &&
           c2->dil_h == 1 && c2->dil_w == 1 && c2->c_in >= 16 && c2->c_out >= 16;
}

/* Winograd pays where its shape fits and the tiles fill at least one vector (docs/performance.md);
 * a --tune pick decides instead where it names a way. */
static int winograd_chosen(kc_program *p, int id, const kann_conv2d_args *c2) {
    if (!winograd_shape(c2)) return 0;
    kc_pick k = pick_of(p, id);
    int wino = k == KC_PICK_WINO_F2 || k == KC_PICK_WINO_F4 ||
               (k != KC_PICK_PACKED && winograd_tiles2(c2) >= KANN_WINO_MIN_TILES);
    if (!wino) note_pick(p, id, WINO_WAYS, KC_PICK_PACKED);
    return wino;
}

/* Transformed F(4x4, 3x3) weights up to this size a stream are taken to stay in cache. Inside a
 * network every layer's weights come from L3 or memory at each run: on one stream squeezenet1_1's
 * four 13x13 expand convs (1.3 and 2.4 MB of F(4x4) weights, 0.6 and 1 MB of F(2x2)) took 98-103
 * and 158-163 µs cold on F(2x2) against 106-108 and 162-164 on F(4x4), though 90 and 151 against
 * 71 and 119 run twice in a row (the whole model 2.79 -> 2.74 ms). On P streams each reads its
 * output channels' part of the weights, and F(4x4)'s single block of 16 tiles splits along
 * output channels evenly, where F(2x2)'s 49 tiles split 32 + 17: on two streams those four convs
 * took 50 / 50 and 80 / 82 µs a stream on F(4x4) against 61 / 50 and 102 / 82 on F(2x2). */
#define KANN_WINO_F4_STREAM_WEIGHTS (5u << 18) /* 1.25 MiB */

/* The tiles of a Winograd conv. F(4x4, 3x3) does 2.25 multiply-adds per output and input
 * channel in its GEMMs against F(2x2, 3x3)'s 4, and measured 20-30 % faster on maps from 13x13
 * to 56x56 with 16-256 channels, one thread, where its tiles split into a block of 32 per stream
 * (a record splits only at blocks: with fewer, a stream idles and 2 threads took twice as
 * long), and where the block is full or the transformed weights (36 * c_in * c_out floats)
 * stay in cache: 256 channels on a 14x14 map (16 tiles, 9.4 MB of weights streamed for each)
 * measured no faster than F(2x2, 3x3) (docs/performance.md). Maps of fewer than 32 F(2x2)
 * tiles (7x7 to 10x10) keep F(2x2): their F(4x4) tiles (4 or 9) fill a quarter or half of the
 * GEMM's vector, which computes 16 columns for 36 positions against 16 for 16. */
static kann_wino_transform winograd_transform(const kann_conv2d_args *c2, int streams) {
    if (winograd_tiles2(c2) < KANN_CONV_PIXEL_GRANULE) return KANN_WINO_F2X2;
    uint64_t tiles = (uint64_t)((c2->h_out + 3) / 4) * ((c2->w_out + 3) / 4);
    uint64_t blocks = (tiles + KANN_CONV_PIXEL_GRANULE - 1) / KANN_CONV_PIXEL_GRANULE;
    uint64_t u_bytes = 36 * 4 * (uint64_t)c2->c_in * c2->c_out;
    uint64_t panels = (c2->c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    uint64_t P = streams > 1 ? (uint64_t)streams : 1;
    int fits = tiles >= KANN_CONV_PIXEL_GRANULE || u_bytes <= KANN_WINO_F4_STREAM_WEIGHTS * P;
    return (blocks >= P || panels >= P) && fits ? KANN_WINO_F4X4 : KANN_WINO_F2X2;
}

/* U = G g G^T of every 3x3 kernel of W [c_out][c_in][3][3] for the transform t, in the layout
 * of kann_conv2d_winograd_args: P positions of [c_out / 12][c_in][12] panels, channels past
 * c_out zero. Accumulated in double so that U is the exact transform rounded once. */
static int pack_winograd_weights(kc_graph *g, int w, uint32_t c_out, uint32_t c_in,
                                 kann_wino_transform t) {
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    static const double G4[6][3] = {{1.0 / 4, 0, 0},
                                    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                    {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                    {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                    {0, 0, 1}};
    const double(*G)[3] = t == KANN_WINO_F4X4 ? G4 : G2;
    size_t edge = t == KANN_WINO_F4X4 ? 6 : 4, positions = edge * edge;
    const kc_value *wv = kc_val(g, w);
    size_t panels = (c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    float *u = calloc(positions * panels * c_in * KANN_CONV_PANEL, sizeof(float));
    if (!u) abort();
    const float *src = wv->data;
    for (size_t m = 0; m < c_out; m++)
        for (size_t c = 0; c < c_in; c++) {
            const float *k = src + (m * c_in + c) * 9;
            for (size_t i = 0; i < edge; i++)
                for (size_t j = 0; j < edge; j++) {
                    double sum = 0.0;
                    for (size_t a = 0; a < 3; a++)
                        for (size_t b = 0; b < 3; b++)
                            sum += G[i][a] * k[a * 3 + b] * G[j][b];
                    u[(((i * edge + j) * panels + m / KANN_CONV_PANEL) * c_in + c) *
                          KANN_CONV_PANEL +
                      m % KANN_CONV_PANEL] = (float)sum;
                }
        }
    int64_t dims[4] = {(int64_t)positions, (int64_t)panels, (int64_t)c_in, KANN_CONV_PANEL};
    int v = kc_new_const_f32(g, kc_sprintf(g, "%s.winograd", wv->name), 4, dims, u);
    free(u);
    return v;
}

/* The arguments of conv c2 on conv2d_winograd with transform t (tile fields zero), its input
 * read in place. */
static kann_conv2d_winograd_args winograd_args_of(const kann_conv2d_args *c2,
                                                  kann_wino_transform t) {
    kann_conv2d_winograd_args a = {0};
    a.transform = t;
    a.c_in = c2->c_in;
    a.c_out = c2->c_out;
    a.h_out = c2->h_out;
    a.w_out = c2->w_out;
    a.h_in = c2->h_in;
    a.w_in = c2->w_in;
    a.act = c2->act;
    return a;
}

/* The arguments of one of the groups of conv c2 on conv2d_packed (tile fields zero). */
static kann_conv2d_packed_args packed_args_of(const kann_conv2d_args *c2, uint32_t groups) {
    kann_conv2d_packed_args a = {0};
    a.c_in = c2->c_in / groups;
    a.h_in = c2->h_in;
    a.w_in = c2->w_in;
    a.c_out = c2->c_out / groups;
    a.h_out = c2->h_out;
    a.w_out = c2->w_out;
    a.k_h = c2->k_h;
    a.k_w = c2->k_w;
    a.stride_h = c2->stride_h;
    a.stride_w = c2->stride_w;
    a.dil_h = c2->dil_h;
    a.dil_w = c2->dil_w;
    a.pad_top = c2->pad_top;
    a.pad_left = c2->pad_left;
    a.act = c2->act;
    return a;
}

/* A conv2d_winograd call of args over x (its padding read in place), the transformed weights
 * u, bias, residual and y (at their byte offsets; -1 for none), its transformed tiles in a
 * scratch value split by tiles. */
static kc_call *winograd_call(kc_graph *g, kc_program *p, int id,
                              const kann_conv2d_winograd_args *args, int x, int64_t x_off, int u,
                              int b, int64_t b_off, int res, int y, int64_t y_off) {
    const kann_conv2d_winograd_args *a = args;
    int64_t e = a->transform == KANN_WINO_F4X4 ? 4 : 2, fl = (int64_t)sizeof(float);
    int64_t tiles = (int64_t)(a->h_out + e - 1) / e * ((a->w_out + e - 1) / e);
    int64_t positions = (e + 2) * (e + 2), out = (int64_t)a->c_out * a->h_out * a->w_out * fl;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV2D_WINOGRAD, id);
    *(kann_conv2d_winograd_args *)c->args = *args;
    kc_bind_slice(c, offsetof(kann_conv2d_winograd_args, x), x, x_off,
                  (int64_t)a->c_in * a->h_in * a->w_in * fl, 0);
    kc_bind(c, offsetof(kann_conv2d_winograd_args, u), u, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_winograd_args, bias), b, b_off, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_winograd_args, residual), res, y_off, out, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_winograd_args, y), y, y_off, out, 1);
    /* the transformed tiles: a tile along output channels transforms them all */
    kc_bind_scratch(
        g, p, c, offsetof(kann_conv2d_winograd_args, scratch), "winograd_tiles",
        (int64_t)kann_wino_scratch_floats((uint64_t)positions, a->c_in, (uint64_t)tiles));
    kc_set_tile(c, a->c_out, KANN_WINO_CHANNEL_GRANULE, (uint32_t)tiles, KANN_CONV_PIXEL_GRANULE);
    c->macs = (double)a->c_out * a->h_out * a->w_out * a->c_in * 9;
    c->axis0_whole = (double)positions * a->c_in * (double)tiles;
    /* a block's transforms take 16 tiles a vector: a part of a block costs about a whole one
     * (one thread: 17 tiles of a 7x7 grid took as long as the other 32) */
    c->whole_granules = 2;
    return c;
}

/* A 3x3 stride-1 conv through conv2d_winograd: its padding read in place where the kernel can,
 * else its input padded once (pad2d). */
static void lower_winograd(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *c2) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    kc_pick k = pick_of(p, id);
    kann_wino_transform t = k == KC_PICK_WINO_F2   ? KANN_WINO_F2X2
                            : k == KC_PICK_WINO_F4 ? KANN_WINO_F4X4
                                                   : winograd_transform(c2, p->streams);
    note_pick(p, id, WINO_WAYS, t == KANN_WINO_F4X4 ? KC_PICK_WINO_F4 : KC_PICK_WINO_F2);
    int u = pack_winograd_weights(g, w, c2->c_out, c2->c_in, t);
    kann_conv2d_winograd_args args = winograd_args_of(c2, t), *a = &args;
    /* equal padding up to 2 above and left, no more below and right: read in place */
    uint32_t pad = c2->pad_top;
    int in_place = pad <= 2 && c2->pad_left == pad &&
                   (uint64_t)c2->h_out + 2 <= (uint64_t)c2->h_in + 2 * pad &&
                   (uint64_t)c2->w_out + 2 <= (uint64_t)c2->w_in + 2 * pad;
    if (in_place) {
        a->pad = pad;
    } else {
        a->h_in = c2->h_out + 2;
        a->w_in = c2->w_out + 2;
        x = pad_input(g, p, id, x, c2, a->h_in, a->w_in);
    }
    winograd_call(g, p, id, a, x, 0, u, b, 0, n->epi.residual, y, 0);
}

/* A conv2d_packed call of args over x, the packed weights, bias, residual and y (each at its
 * byte offset; -1 for none), tiled along output channels or pixels, with the gather scratch
 * where the kernel may need it. */
static kc_call *packed_call(kc_graph *g, kc_program *p, int id, const kann_conv2d_packed_args *args,
                            int x, int64_t x_off, int panels, int b, int64_t b_off, int res,
                            int64_t res_off, int y, int64_t y_off) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV2D_PACKED, id);
    *(kann_conv2d_packed_args *)c->args = *args;
    int64_t fl = (int64_t)sizeof(float), hw = (int64_t)args->h_out * args->w_out;
    /* slices: a group's channels of x, residual and y are all the call touches of them */
    kc_bind_slice(c, offsetof(kann_conv2d_packed_args, x), x, x_off,
                  (int64_t)args->c_in * args->h_in * args->w_in * fl, 0);
    kc_bind(c, offsetof(kann_conv2d_packed_args, w), panels, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_packed_args, bias), b, b_off, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_packed_args, residual), res, res_off,
                  args->c_out * hw * fl, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_packed_args, y), y, y_off, args->c_out * hw * fl, 1);
    kc_set_tile(c, args->c_out, KANN_CONV_PANEL, args->h_out * args->w_out,
                KANN_CONV_PIXEL_GRANULE);
    c->macs = (double)args->c_out * args->h_out * args->w_out * args->c_in * args->k_h * args->k_w;
    if (!kann_conv2d_packed_pointwise(args) &&
        (!kann_conv2d_packed_wide(args) || kann_conv2d_packed_lanes_stride1(args))) {
        /* the gathered B of a tile's pixels: a tile along output channels gathers them all (and
         * the lanes path's buffers where it takes a stride-1 conv) */
        int64_t g32 = KANN_CONV_PIXEL_GRANULE, K = (int64_t)args->c_in * args->k_h * args->k_w;
        kc_bind_scratch(g, p, c, offsetof(kann_conv2d_packed_args, scratch), "im2col",
                        K * ((hw + g32 - 1) / g32 * g32));
        c->axis0_whole = (double)K * hw;
    }
    return c;
}

/* ---- a pointwise conv with the output channels in the lanes ------------------------------
 * conv2d_packed computes a 1x1 conv as 12-channel panels by strips of 32 pixels: a 7x7 map's 49
 * pixels are a strip of 32 and one of 17, its rows of B misaligned. f32_pointwise_lanes holds
 * 32 output channels in the lanes by up to 12 pixels, groups as even as that allows, and turns the
 * sums around at the store; the store costs more a pixel than conv2d_packed's, so it pays where
 * the reduction is long against the map. One thread, mobilenet_v2 inside the network: 960 -> 160
 * on 7x7 66 -> 61 us, 160 -> 960 72 -> 67, 384 -> 64 on 14x14 40.5 -> 38.5; but 96 -> 576 on
 * 14x14 89 -> 97 (and alone 64 -> 384 on 14x14 41 -> 42, 32 -> 192 on 28x28 41 -> 47). */

/* A pointwise_lanes block's half (a vector of AVX-512 lanes). */
#define LANES_HALF_BLOCK (KANN_GAP_BLOCK / 2)

/* Few output channels that the packed kernel's 12-row panels leave ragged (16: 12 + 4, 32:
 * 12 + 12 + 8) fill the lanes path's half or whole blocks; with a reduction long enough to
 * carry its transposing stores that pays on any map: squeezenet1_1's squeezes inside the
 * network, one thread, 128 -> 16 on 55x55 122 -> 105 us, 128 -> 32 and 256 -> 32 on 27x27 48
 * -> 43 and 94 -> 80. Shorter ones lose: 64 -> 16 on 55x55 the same, 96 -> 32 on 28x28 (a
 * stream's partial sum of mobilenet_v2's projections) 32 -> 37-46. */
#define LANES_FEW_MIN_C_IN 128

static int lanes_few_channels(const kann_conv2d_packed_args *a) {
    uint32_t m = a->c_out;
    return m <= 2 * LANES_HALF_BLOCK && a->c_in >= LANES_FEW_MIN_C_IN &&
           (m + LANES_HALF_BLOCK - 1) / LANES_HALF_BLOCK * LANES_HALF_BLOCK <
               (m + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL * KANN_CONV_PANEL;
}

static int lanes_pays(kc_program *p, int id, const kann_conv2d_packed_args *a) {
    if (p->keep_pointwise || !kann_conv2d_packed_pointwise(a) || a->c_out < 16) return 0;
    uint64_t hw = (uint64_t)a->h_out * a->w_out;
    kc_pick k = pick_of(p, id);
    int lanes = k == KC_PICK_LANES ||
                (k != KC_PICK_PACKED && ((hw <= 64 && a->c_in >= 64) ||
                                         (hw <= 256 && a->c_in >= 128) || lanes_few_channels(a)));
    note_pick(p, id, LANES_WAYS, lanes ? KC_PICK_LANES : KC_PICK_PACKED);
    return lanes;
}

/* A pointwise_lanes call of conv a over x, the weights' columns [k0, k0 + a->c_in) of W [c_out]
 * [ld], bias, residual and y (each at its byte offset; -1 for none), tiled along output channels
 * or pixels. */
static kc_call *lanes_call(kc_graph *g, kc_program *p, int id, const kann_conv2d_packed_args *a,
                           int x, int64_t x_off, int w, size_t ld, size_t k0, int b, int res,
                           int y) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_POINTWISE_LANES, id);
    kann_pointwise_lanes_args *args = c->args;
    uint32_t hw = a->h_out * a->w_out;
    args->c_in = a->c_in;
    args->c_out = a->c_out;
    args->hw = hw;
    args->act = a->act;
    int64_t fl = (int64_t)sizeof(float), y_bytes = (int64_t)a->c_out * hw * fl;
    kc_bind_slice(c, offsetof(kann_pointwise_lanes_args, x), x, x_off,
                  (int64_t)a->c_in * hw * fl, 0);
    kc_bind(c, offsetof(kann_pointwise_lanes_args, w),
            pack_weight_blocks(g, w, 0, a->c_out, ld, k0, a->c_in, KANN_GAP_BLOCK), 0, 0);
    kc_bind(c, offsetof(kann_pointwise_lanes_args, bias), b, 0, 0);
    kc_bind_slice(c, offsetof(kann_pointwise_lanes_args, residual), res, 0, y_bytes, 0);
    kc_bind_slice(c, offsetof(kann_pointwise_lanes_args, y), y, 0, y_bytes, 1);
    kc_set_tile(c, a->c_out, KANN_GAP_BLOCK, hw, KANN_LANES_PIXEL_GRANULE);
    c->macs = (double)a->c_out * hw * a->c_in;
    return c;
}

/* ---- a pointwise conv summed across the streams ------------------------------------------
 * A 1x1 conv reading the output of a depthwise conv split along channels (the projection of an
 * inverted residual block) reads every input channel, (P - 1) / P of them written by the other
 * cores: on two threads mobilenet_v2's 14x14 projections (384 -> 64 channels) took 60 us a
 * stream against 69 on one. Summed across the streams instead, each stream computes the
 * partial sum over the channels its own depthwise tile wrote (a call on that stream alone,
 * weights packed for those columns, in the same phase as the others), and an add split by
 * elements sums the partials: what crosses cores is (P - 1) / P of the c_out-channel partials,
 * not of the c_in-channel input. The depthwise conv keeps its channel tiles (fixed_axis). The
 * same holds for the squeeze after a fire module's Concat on a 13x13 map, whose 3x3 branch (one
 * block of Winograd tiles) splits only along channels: on two threads its fire9-12 squeezes took
 * 0.81-0.98 of their one-thread time a stream. */

/* Bytes a stream's partial sum may have (lower_summed). */
#define KC_SUM_MAX_PART_BYTES (128u * 1024u)

/* A call that last wrote channels [c0, c0 + n) of a value and may be cut along them (its tile
 * axis 0: the output channels of a conv, depthwise or not). */
typedef struct channel_writer {
    kc_call *call;
    uint32_t c0, n;
} channel_writer;

#define KC_MAX_CHANNEL_WRITERS 4

/* The calls that last wrote value x, c_in planes of `plane` bytes, each a run of whole planes
 * (one call, or the convs a concat's views gather), sorted by channel; their count, 0 when
 * some bytes of x have another writer or none. */
static int channel_writers(const kc_graph *g, kc_program *p, int x, uint32_t c_in, uint64_t plane,
                           channel_writer *out) {
    int64_t x_off;
    int root = kc_value_root(g, x, &x_off);
    uint64_t lo_x = (uint64_t)x_off, hi_x = lo_x + (uint64_t)c_in * plane;
    uint32_t covered = 0;
    int n = 0;
    for (int ci = p->n_calls - 1; ci >= 0 && covered < c_in; ci--) {
        kc_call *c = &p->calls[ci];
        for (int k = 0; k < c->n_fixups; k++) {
            const kc_fixup *f = &c->fixups[k];
            int64_t off;
            if (!f->write || f->value < 0 || kc_value_root(g, f->value, &off) != root) continue;
            int64_t numel = kc_value_numel(&g->values[f->value]);
            if (numel < 0 || (f->byte_len == 0 && f->byte_offset != 0)) return 0;
            uint64_t lo = (uint64_t)(off + f->byte_offset);
            uint64_t hi =
                lo + (f->byte_len > 0 ? (uint64_t)f->byte_len
                                      : (uint64_t)numel * kc_dtype_size(g->values[f->value].dtype));
            if (hi <= lo_x || lo >= hi_x) continue;
            if (lo < lo_x || hi > hi_x || (lo - lo_x) % plane || (hi - lo) % plane) return 0;
            channel_writer w = {c, (uint32_t)((lo - lo_x) / plane), (uint32_t)((hi - lo) / plane)};
            for (int i = 0; i < n; i++)
                if (w.c0 < out[i].c0 + out[i].n && out[i].c0 < w.c0 + w.n) return 0;
            if (n == KC_MAX_CHANNEL_WRITERS) return 0;
            out[n++] = w;
            covered += w.n;
        }
    }
    if (covered != c_in) return 0;
    for (int i = 1; i < n; i++) /* by channel */
        for (int j = i; j > 0 && out[j].c0 < out[j - 1].c0; j--) {
            channel_writer t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* Whether node id alone reads value x's bytes (through x or any view of its root). */
static int only_reader(const kc_graph *g, int x, int id) {
    int64_t off;
    int root = kc_value_root(g, x, &off);
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead || i == id) continue;
        if (n->epi.residual >= 0 && kc_value_root(g, n->epi.residual, &off) == root) return 0;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0 && kc_value_root(g, n->inputs[j], &off) == root) return 0;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (kc_value_root(g, g->outputs[i], &off) == root) return 0;
    return 1;
}

/* Whether call c may be cut along its output channels (tile axis 0) into n channels. */
static int cut_along_channels(const kc_call *c, uint32_t n) {
    int k = c->kernel;
    return (k == KANN_KERNEL_F32_DWCONV2D || k == KANN_KERNEL_F32_CONV2D_PACKED ||
            k == KANN_KERNEL_F32_CONV2D_WINOGRAD || k == KANN_KERNEL_F32_POINTWISE_LANES) &&
           c->stream < 0 && c->fixed_axis != 1 && c->extents[0] == n;
}

/* A float value of n elements for a partial sum. */
static int partial_value(kc_graph *g, int y, int s, int64_t n) {
    int v = kc_add_value(g, kc_unique_name(g, kc_sprintf(g, "%s.part%d", kc_val(g, y)->name, s)));
    kc_value *pv = &g->values[v];
    pv->dtype = KC_DTYPE_FLOAT;
    pv->rank = 1;
    pv->dims[0] = n;
    return v;
}

/* y = act(a + b) over n elements, split by elements. */
static void add_sum(kc_graph *g, kc_program *p, int id, int a, int b, int y, uint32_t n,
                    kann_act act) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_BINARY, id);
    kann_binary_args *args = c->args;
    args->op = KANN_BINARY_ADD;
    args->rank = 1;
    args->dims[0] = n;
    args->a_strides[0] = args->b_strides[0] = 1;
    args->act = act;
    kc_bind(c, offsetof(kann_binary_args, a), a, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, b), b, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, y), y, 0, 1);
    kc_set_tile(c, n, 64, 0, 0);
    c->macs = n;
}

/* The pointwise conv a (one group) as P partial sums and their adds, where that pays; 0 when
 * it lowered nothing. x's writers: a depthwise conv, or convs of which one splits only along
 * its channels (a Winograd conv of a single block of tiles: squeezenet1_1's 13x13 expands,
 * whose concat only its next squeeze reads; two threads 0.985 of the time); each stream sums
 * over the channels it wrote, one call a writer, each adding the one before it as its
 * residual. */
static int lower_summed(kc_graph *g, kc_program *p, int id, const kann_conv2d_packed_args *a,
                        int x, int w, int b, int y) {
    int P = p->streams;
    const kc_node *n = &g->nodes[id];
    if (P < 2 || P > KC_MAX_SUM_STREAMS) return 0;
    uint32_t hw = a->h_out * a->w_out;
    channel_writer ws[KC_MAX_CHANNEL_WRITERS];
    int nw = channel_writers(g, p, x, a->c_in, (uint64_t)hw * sizeof(float), ws);
    if (nw == 0) return 0;
    int channels_only = 0;
    for (int i = 0; i < nw; i++) {
        const kc_call *c = ws[i].call;
        if (!cut_along_channels(c, ws[i].n)) return 0;
        if (c->kernel == KANN_KERNEL_F32_DWCONV2D ||
            (c->extents[1] + c->granules[1] - 1) / c->granules[1] < (uint32_t)P)
            channels_only = 1;
    }
    /* a concat many convs read (googlenet's inception blocks) would be summed once for each:
     * 1.05 times as long on two threads */
    if (!channels_only || (nw > 1 && !only_reader(g, x, id))) return 0;
    /* the partials cross cores instead of the input: worth it where they are smaller, and
     * small enough that the add's pass over them costs less than the input's crossing saves */
    uint64_t count = (uint64_t)a->c_out * hw;
    if ((uint64_t)a->c_out * (uint64_t)P > a->c_in || count * sizeof(float) > KC_SUM_MAX_PART_BYTES)
        return 0;
    uint32_t bounds[KC_MAX_CHANNEL_WRITERS][KC_MAX_SUM_STREAMS + 1];
    for (int i = 0; i < nw; i++)
        kc_spread(ws[i].n, ws[i].call->granules[0], P, bounds[i]);
    for (int s = 0; s < P; s++) {
        int some = 0;
        for (int i = 0; i < nw; i++)
            some |= bounds[i][s + 1] > bounds[i][s];
        if (!some) return 0;
    }
    for (int i = 0; i < nw; i++)
        ws[i].call->fixed_axis = 0;
    int64_t fl = (int64_t)sizeof(float);
    int sums[KC_MAX_SUM_STREAMS];
    for (int s = 0; s < P; s++) {
        /* the first partial adds the bias and the residual, the others the partial before */
        int prev = -1, bias = s == 0 ? b : -1, res = s == 0 ? n->epi.residual : -1, k = 0;
        for (int i = 0; i < nw; i++) {
            uint32_t k0 = ws[i].c0 + bounds[i][s], kn = bounds[i][s + 1] - bounds[i][s];
            if (kn == 0) continue;
            kann_conv2d_packed_args args = *a;
            args.c_in = kn;
            args.act.kind = KANN_ACT_NONE;
            int part = partial_value(g, y, s * KC_MAX_CHANNEL_WRITERS + k++, (int64_t)count);
            kc_call *c;
            if (lanes_pays(p, id, &args)) {
                c = lanes_call(g, p, id, &args, x, (int64_t)k0 * hw * fl, w, a->c_in, k0, bias,
                               prev >= 0 ? prev : res, part);
            } else {
                int panels = pack_weight_panels(g, w, 0, a->c_out, a->c_in, k0, kn);
                c = packed_call(g, p, id, &args, x, (int64_t)k0 * hw * fl, panels, bias, 0,
                                prev >= 0 ? prev : res, 0, part, 0);
            }
            c->stream = s;
            bias = -1;
            prev = part;
        }
        sums[s] = prev;
    }
    /* sums[0] += sums[s] for the middle ones, the last add into y with the activation */
    kann_act none = {KANN_ACT_NONE, 0, 0, 0};
    for (int s = 1; s < P; s++)
        add_sum(g, p, id, sums[0], sums[s], s == P - 1 ? y : sums[0], (uint32_t)count,
                s == P - 1 ? a->act : none);
    return 1;
}

/* ---- a conv and the max pool after it as one record ---------------------------------------
 * An image stem (a conv over few input channels that the AVX-512 direct path takes) followed by
 * a max pool: f32_conv2d_maxpool computes the conv's rows into a ring in a per-stream scratch
 * and pools them from there, so its output (squeezenet1_1's: 64 x 111 x 111, 3 MB) is never
 * written to memory and read back. One core, squeezenet1_1's stem and pool, 10th percentile of
 * 100: 604 -> 500 µs with the caches warm, 697 -> 621 µs flushed between calls. */

/* The MaxPool node that alone reads a conv's output y and can take its rows as they come
 * (2-D, dilation 1, padding below the window, every window starting inside y, no activation of
 * its own, Indices unread), its window in *w; -1 if none. */
static int fusable_pool(kc_graph *g, int y, kc_window *w, kc_diag *d) {
    int pool = kc_single_consumer(g, y);
    if ((g->values[y].flags & KC_VALUE_OUTPUT) || pool < 0) return -1;
    const kc_node *n = &g->nodes[pool];
    if (n->op != KC_OP_MaxPool || n->inputs[0] != y || n->epi.act != KANN_ACT_NONE ||
        n->epi.residual >= 0)
        return -1;
    if (n->n_outputs > 1 && n->outputs[1] >= 0 && kc_value_uses(g, n->outputs[1])) return -1;
    if (kc_window_of(g, pool, w, d) || w->n_spatial != 2) return -1;
    for (int i = 0; i < 2; i++)
        if (w->dilation[i] != 1 || w->pad_begin[i] >= w->kernel[i] || w->out[i] < 1 ||
            (w->out[i] - 1) * w->stride[i] - w->pad_begin[i] >= w->in[i] || w->in[i] > UINT32_MAX ||
            w->out[i] > UINT32_MAX || w->kernel[i] > UINT32_MAX || w->stride[i] > UINT32_MAX)
            return -1;
    return pool;
}

/* Lowers conv a (a stem, kann_conv2d_packed_stem) and the max pool reading it as one
 * f32_conv2d_maxpool call; 0 if that pool is not there. */
static int lower_conv_maxpool(kc_graph *g, kc_program *p, int id, const kann_conv2d_packed_args *a,
                              kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2);
    kc_window pw;
    int pool = fusable_pool(g, n->outputs[0], &pw, d);
    if (pool < 0 || n->epi.residual >= 0) return 0;
    kann_conv2d_maxpool_args m = {0};
    m.c_in = a->c_in;
    m.h_in = a->h_in;
    m.w_in = a->w_in;
    m.c_out = a->c_out;
    m.h_conv = a->h_out;
    m.w_conv = a->w_out;
    m.k_h = a->k_h;
    m.k_w = a->k_w;
    m.stride_h = a->stride_h;
    m.stride_w = a->stride_w;
    m.dil_h = a->dil_h;
    m.dil_w = a->dil_w;
    m.pad_top = a->pad_top;
    m.pad_left = a->pad_left;
    m.pool_k_h = (uint32_t)pw.kernel[0];
    m.pool_k_w = (uint32_t)pw.kernel[1];
    m.pool_stride_h = (uint32_t)pw.stride[0];
    m.pool_stride_w = (uint32_t)pw.stride[1];
    m.pool_pad_top = (uint32_t)pw.pad_begin[0];
    m.pool_pad_left = (uint32_t)pw.pad_begin[1];
    m.h_out = (uint32_t)pw.out[0];
    m.w_out = (uint32_t)pw.out[1];
    m.act = a->act;
    uint64_t band, gather, floats = kann_conv2d_maxpool_scratch(&m, &band, &gather);
    if (floats == 0 || floats > UINT32_MAX || !fusion_chosen(p, id, &pool, 1, 1)) return 0;
    size_t K = (size_t)a->c_in * a->k_h * a->k_w;
    int panels = pack_weight_panels(g, w, 0, a->c_out, K, 0, K);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_CONV2D_MAXPOOL, id);
    *(kann_conv2d_maxpool_args *)c->args = m;
    kc_bind(c, offsetof(kann_conv2d_maxpool_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_maxpool_args, w), panels, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_maxpool_args, bias), b, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_maxpool_args, y), g->nodes[pool].outputs[0], 0, 1);
    kc_bind_scratch_private(g, p, c, offsetof(kann_conv2d_maxpool_args, scratch), "conv_pool_rows",
                            (int64_t)floats);
    kc_set_tile(c, m.c_out, KANN_CONV_PANEL, m.h_out, 1);
    c->macs = (double)a->c_out * a->h_out * a->w_out * K;
    g->nodes[pool].dead = 1;
    return 1;
}

/* ---- a 1x1 conv and the global average pool after it as one record ------------------------
 * A classifier head (squeezenet1_1's 512 -> 1000 conv over 13x13 and its pool, mobilenet_v2's
 * 320 -> 1280 over 7x7): f32_pointwise_gap adds each output channel's activated values over the
 * pixels as it computes them, so the conv's output is never stored and read back, and it holds
 * the output channels in the vector lanes, where 169 or 49 pixels leave conv2d_packed's strips of
 * 32 ragged. */

/* Whether node id is a ReduceMean over exactly the two spatial axes of its 4-D input (x.mean((2,
 * 3)) as exporters write it: mnasnet's head), a global average pool with or without the kept
 * dimensions. */
static int spatial_mean(const kc_graph *g, int id) {
    const kc_node *n = &g->nodes[id];
    if (n->op != KC_OP_ReduceMean || kc_val(g, n->inputs[0])->rank != 4) return 0;
    int reduced[KC_MAX_RANK] = {0}, noop = 0;
    kc_diag quiet;
    kc_diag_init(&quiet, "", NULL);
    quiet.silent = 1;
    if (kc_reduce_axes_of(g, id, 4, reduced, &noop, &quiet) || noop) return 0;
    return !reduced[0] && !reduced[1] && reduced[2] && reduced[3];
}

/* The GlobalAveragePool node (or spatial ReduceMean) that alone reads y, with no activation or
 * residual of its own; -1 if none. */
static int fusable_gap(const kc_graph *g, int y) {
    int pool = kc_single_consumer(g, y);
    if ((g->values[y].flags & KC_VALUE_OUTPUT) || pool < 0) return -1;
    const kc_node *n = &g->nodes[pool];
    if ((n->op != KC_OP_GlobalAveragePool && !spatial_mean(g, pool)) || n->inputs[0] != y ||
        n->epi.act != KANN_ACT_NONE || n->epi.residual >= 0)
        return -1;
    return pool;
}

/* Lowers pointwise conv a and the global average pool reading it as one f32_pointwise_gap
 * call; 0 if that pool is not there. */
static int lower_pointwise_gap(kc_graph *g, kc_program *p, int id,
                               const kann_conv2d_packed_args *a) {
    const kc_node *n = &g->nodes[id];
    int pool = fusable_gap(g, n->outputs[0]);
    uint64_t hw = (uint64_t)a->h_out * a->w_out;
    if (pool < 0 || n->epi.residual >= 0 || hw == 0 || hw > UINT32_MAX || a->c_in == 0 ||
        !fusion_chosen(p, id, &pool, 1, 1))
        return 0;
    kann_pointwise_gap_args args = {0};
    args.c_in = a->c_in;
    args.c_out = a->c_out;
    args.hw = (uint32_t)hw;
    args.act = a->act;
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_POINTWISE_GAP, id);
    *(kann_pointwise_gap_args *)c->args = args;
    kc_bind(c, offsetof(kann_pointwise_gap_args, x), kc_input(n, 0), 0, 0);
    kc_bind(c, offsetof(kann_pointwise_gap_args, w),
            pack_weight_blocks(g, kc_input(n, 1), 0, a->c_out, a->c_in, 0, a->c_in,
                               KANN_GAP_BLOCK),
            0, 0);
    kc_bind(c, offsetof(kann_pointwise_gap_args, bias), kc_input(n, 2), 0, 0);
    kc_bind(c, offsetof(kann_pointwise_gap_args, y), g->nodes[pool].outputs[0], 0, 1);
    kc_set_tile(c, a->c_out, KANN_GAP_BLOCK, 0, 0);
    c->macs = (double)a->c_out * (double)hw * a->c_in;
    g->nodes[pool].dead = 1;
    return 1;
}

/* Whether the G group calls of a conv run whole, each on one of P streams: when they are enough
 * to balance (a multiple of P, or at least 4 a stream). Cut into tiles, a group's 16 channels
 * split 12 + 4 and a 7x7 map's 49 pixels 32 + 17, both far slower a pixel than whole groups, and
 * every group waits at a barrier of its own. A group that gathers its input (stride 2) does so
 * into a scratch of its own, which kc_schedule_trim_scratch cuts to one copy; they are alive
 * together in the merged phase, so none overlaps another. Tiled instead, each stream gathered
 * every group's whole input: regnet_x_400mf's first 7x7 grouped conv took 75 us a stream on two
 * threads against 75 on one; whole, 42 (the model 0.98 of its time, regnet_y_400mf too). */
static int groups_whole(uint32_t G, int P) {
    return P > 1 && G >= (uint32_t)P && (G % (uint32_t)P == 0 || G >= 4 * (uint32_t)P);
}

/* Whole groups a stream under which the rest of G / P goes in tiles (lower_packed). */
#define GROUPS_FEW 8

/* A conv on the packed kernel: one call, or with groups one call per group, each a group-1 conv
 * on its slice of the channels (input, weight rows, bias, residual and output slices are
 * contiguous in NCHW), all reading the input padded once when they take the wide path. */
static void lower_packed(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *c2,
                         kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    uint32_t groups = c2->group ? c2->group : 1;
    kann_conv2d_packed_args args = packed_args_of(c2, groups), *a = &args;
    size_t K = (size_t)a->c_in * a->k_h * a->k_w;
    if (groups == 1 && kann_conv2d_packed_stem(a) && lower_conv_maxpool(g, p, id, a, d)) return;
    if (groups == 1 && !p->keep_heads && kann_conv2d_packed_pointwise(a) &&
        lower_pointwise_gap(g, p, id, a))
        return;
    /* A stride-1 conv reads its windows in place (the wide path) from its input padded to
     * exactly the rows and columns they reach, unless that wastes too many columns. */
    if (a->stride_h == 1 && a->stride_w == 1 && !kann_conv2d_packed_pointwise(a)) {
        kann_conv2d_packed_args wide = *a;
        wide.h_in = a->h_out + a->dil_h * (a->k_h - 1);
        wide.w_in = a->w_out + a->dil_w * (a->k_w - 1);
        wide.pad_top = wide.pad_left = 0;
        int in_place = a->pad_top == 0 && a->pad_left == 0 && kann_conv2d_packed_wide(a);
        if (in_place) {
            wide = *a;
        } else if (kann_conv2d_packed_wide(&wide)) {
            x = pad_input(g, p, id, x, c2, wide.h_in, wide.w_in);
        }
        if (kann_conv2d_packed_wide(&wide)) *a = wide;
    }
    uint32_t hw = a->h_out * a->w_out;
    int64_t fl = (int64_t)sizeof(float);
    int64_t x_group = (int64_t)a->c_in * a->h_in * a->w_in * fl,
            y_group = (int64_t)a->c_out * hw * fl;
    if (groups == 1 && kann_conv2d_packed_pointwise(a) && lower_summed(g, p, id, a, x, w, b, y))
        return;
    if (groups == 1 && lanes_pays(p, id, a)) {
        lanes_call(g, p, id, a, x, 0, w, K, 0, b, n->epi.residual, y);
        return;
    }
    /* Groups that balance run whole (groups_whole), in runs of consecutive groups a stream.
     * Where a stream has few of them (under GROUPS_FEW) the last G mod P go in pixel tiles over
     * every stream instead, in the same phase (their output slices apart): whole, they left one
     * stream a group more than the others (regnet_y_800mf's 9 groups on 28x28: 131 / 157 us a
     * stream on two threads, 147 / 151 with the ninth in tiles). With many a stream the tiles
     * cost more than the group they even out (its 49 groups on 7x7: 76 / 78 -> 90 / 83). */
    int P = p->streams > 1 ? p->streams : 1;
    uint32_t bounds[KC_MAX_STREAMS + 1];
    uint32_t n_whole = !groups_whole(groups, P)            ? 0
                       : groups / (uint32_t)P < GROUPS_FEW ? groups - groups % (uint32_t)P
                                                           : groups;
    if (n_whole) kc_spread(n_whole, 1, P, bounds);
    for (uint32_t gi = 0, st = 0; gi < groups; gi++) {
        int panels = pack_weight_panels(g, w, (size_t)gi * a->c_out, a->c_out, K, 0, K);
        /* else tiles along channels or pixels, whichever balances */
        kc_call *c = packed_call(g, p, id, a, x, gi * x_group, panels, b,
                                 (int64_t)gi * a->c_out * fl, n->epi.residual, gi * y_group, y,
                                 gi * y_group);
        if (gi < n_whole) {
            while (gi >= bounds[st + 1])
                st++;
            c->stream = (int)st;
        } else if (n_whole && c->extents[1] > 0) {
            c->fixed_axis = 1;
        }
    }
}

/* ---- unpadded group-1 convs the lowering builds itself ------------------------------------
 * A 3-D conv's depth slices and a transposed conv's phases: convs over an input that already
 * holds the zeros their windows read (no padding), with constant weights packed once for the
 * calls that share them; Winograd where the shape fits (3x3, stride 1, 16 channels or more), else
 * conv2d_packed, reading its windows in place where it can. */
typedef struct conv_way {
    kann_conv2d_args c2;
    int winograd;
    kann_wino_transform t;
    int u; /* the packed panels, or the Winograd transformed weights */
} conv_way;

/* The way of c2 (padding 0, every window inside x) and its weights w [c_out][c_in][k_h][k_w]. */
static conv_way conv_way_of(kc_graph *g, const kc_program *p, const kann_conv2d_args *c2, int w) {
    conv_way cw = {*c2, 0, KANN_WINO_F2X2, -1};
    size_t K = (size_t)c2->c_in * c2->k_h * c2->k_w;
    cw.winograd = winograd_shape(c2) && winograd_tiles2(c2) >= KANN_WINO_MIN_TILES;
    if (cw.winograd) {
        cw.t = winograd_transform(c2, p->streams);
        cw.u = pack_winograd_weights(g, w, c2->c_out, c2->c_in, cw.t);
    } else {
        cw.u = pack_weight_panels(g, w, 0, c2->c_out, K, 0, K);
    }
    return cw;
}

/* The call of way cw over x, bias b (-1: none) and into y, each at its byte offset. */
static void conv_way_call(kc_graph *g, kc_program *p, int id, const conv_way *cw, int x,
                          int64_t x_off, int b, int64_t b_off, int y, int64_t y_off) {
    const kann_conv2d_args *c2 = &cw->c2;
    if (cw->winograd) {
        kann_conv2d_winograd_args a = winograd_args_of(c2, cw->t);
        winograd_call(g, p, id, &a, x, x_off, cw->u, b, b_off, -1, y, y_off);
        return;
    }
    kann_conv2d_packed_args a = packed_args_of(c2, 1);
    packed_call(g, p, id, &a, x, x_off, cw->u, b, b_off, -1, 0, y, y_off);
}

/* ---- a 3-D conv as 2-D convs, one an output depth slice -----------------------------------
 * Its input is gathered once (strided copies) with the zeros of its padding, to the depth
 * slices, rows and columns the windows reach, depth-major: [depth][c_in][h][w]. The k_d input
 * slices an output slice reads are then k_d * c_in consecutive planes: the input of a 2-D conv
 * with that many channels and the weights [c_out][k_d][c_in][k_h][k_w], packed once for all the
 * slices. Each output slice is a conv2d_packed call, or for 3x3 at stride 1 a conv2d_winograd
 * one, into a depth-major output turned back (strided copy) to [c_out][depth][h][w]. A grouped
 * conv does this group by group, its input gathered [group][depth][c_in / group][h][w]; a
 * depthwise one sums k_d depthwise 2-D convs per output slice, one for each depth tap, each
 * taking the sum so far as its residual. The direct conv_nd kernel keeps other many-group,
 * batched and depth-dilated convs and runtime weights. */

/* A new float value of rank dims (at most 4) named after value of with suffix what. */
static int f32_value(kc_graph *g, int of, const char *what, int rank, const int64_t *dims) {
    int v = kc_add_value(g, kc_unique_name(g, kc_sprintf(g, "%s.%s", kc_val(g, of)->name, what)));
    kc_value *pv = &g->values[v];
    pv->dtype = KC_DTYPE_FLOAT;
    pv->rank = rank;
    for (int i = 0; i < rank; i++)
        pv->dims[i] = dims[i];
    return v;
}

/* x [G * Cg][D][H][W] gathered group- then depth-major into [G][Dr][Cg][Hr][Wr], d, h and w
 * moved by pad {pd, ph, pw} and zeros around them (strided copies: one of x's elements, the
 * others of a zero at stride 0); x itself where that is its layout already. */
static int gather_volume(kc_graph *g, kc_program *p, int id, int x, int64_t G, const int64_t *in,
                         const int64_t *reach, const int64_t *pad) {
    int64_t Cg = in[0] / G, D = in[1], H = in[2], W = in[3], Dr = reach[0], Hr = reach[1],
            Wr = reach[2], pd = pad[0] < reach[0] ? pad[0] : reach[0], ph = pad[1], pw = pad[2];
    if (pd == 0 && ph == 0 && pw == 0 && Hr == H && Wr == W &&
        ((Cg == 1 && (Dr == D || (G == 1 && Dr <= D))) || (Dr == 1 && D == 1)))
        return x;
    /* the slices, rows and columns of x the windows read */
    int64_t Dc = D < Dr - pd ? D : Dr - pd, Hc = H < Hr - ph ? H : Hr - ph,
            Wc = W < Wr - pw ? W : Wr - pw;
    if (Dc <= 0 || Hc <= 0 || Wc <= 0) Dc = Hc = Wc = 0;
    int64_t plane = Hr * Wr, slice = Cg * plane, group = Dr * slice;
    int64_t dims[3] = {G * Dr * Cg, Hr, Wr};
    int v = f32_value(g, x, "depth_major", 3, dims);
    static const float zero = 0.0f;
    int64_t one = 1, z0[4] = {0, 0, 0, 0};
    int zv = kc_new_const_f32(g, "zero", 1, &one, &zero);
    /* zeros, in every group: the slices before and after x's, then the rows above and below and
     * the columns left and right of x's planes */
    int64_t inner = pd + Dc, top = ph + Hc, left = pw + Wc, planes = Dc * Cg;
    int64_t fills[6][4] = {
        {pd * slice, 1, 1, 0},
        {(Dr - inner) * slice, 1, 1, inner * slice},
        {planes, ph * Wr, 1, pd * slice},
        {planes, (Hr - top) * Wr, 1, pd * slice + top * Wr},
        {planes, Hc, pw, pd * slice + ph * Wr},
        {planes, Hc, Wr - left, pd * slice + ph * Wr + left},
    };
    for (int f = 0; f < 6; f++) {
        int64_t fd[4] = {G, fills[f][0], fills[f][1], fills[f][2]};
        int64_t ys[4] = {group, f < 2 ? 1 : plane, f < 4 ? 1 : Wr, 1};
        kc_emit_strided_copy(g, p, id, zv, 0, v, fills[f][3], 4, fd, z0, ys);
    }
    int64_t cd[5] = {G, Cg, Dc, Hc, Wc}, xs[5] = {Cg * D * H * W, D * H * W, H * W, W, 1},
            ys[5] = {group, plane, slice, Wr, 1};
    kc_emit_strided_copy(g, p, id, x, 0, v, pd * slice + ph * Wr + pw, 5, cd, xs, ys);
    return v;
}

/* The 2-D conv of an output depth slice of 3-D window win (channels, group and activation left
 * to the caller), over an input holding the depth slices, rows and columns the windows reach:
 * reach[0..2] (no padding left). 0 where the window leaves no output. */
static int slice_conv_of(const kc_window *win, int64_t *reach, kann_conv2d_args *c2) {
    int64_t kd = win->kernel[0], kh = win->kernel[1], kw = win->kernel[2];
    int64_t Do = win->out[0], Ho = win->out[1], Wo = win->out[2];
    if (Do < 1 || Ho < 1 || Wo < 1) return 0;
    reach[0] = (Do - 1) * win->stride[0] + kd;
    reach[1] = (Ho - 1) * win->stride[1] + (kh - 1) * win->dilation[1] + 1;
    reach[2] = (Wo - 1) * win->stride[2] + (kw - 1) * win->dilation[2] + 1;
    kann_conv2d_args a = {0};
    a.n = 1;
    a.h_in = (uint32_t)reach[1];
    a.w_in = (uint32_t)reach[2];
    a.h_out = (uint32_t)Ho;
    a.w_out = (uint32_t)Wo;
    a.k_h = (uint32_t)kh;
    a.k_w = (uint32_t)kw;
    a.stride_h = (uint32_t)win->stride[1];
    a.stride_w = (uint32_t)win->stride[2];
    a.dil_h = (uint32_t)win->dilation[1];
    a.dil_w = (uint32_t)win->dilation[2];
    *c2 = a;
    return 1;
}

/* yt [G][Do][Mg][hw] (group-, then depth-major) copied into y [G * Mg][Do][hw]. */
static void depth_major_back(kc_graph *g, kc_program *p, int id, int yt, int y, int64_t G,
                             int64_t Do, int64_t Mg, int64_t hw) {
    int64_t dims[4] = {G, Do, Mg, hw}, xs[4] = {Do * Mg * hw, Mg * hw, hw, 1},
            ys[4] = {Mg * Do * hw, hw, Do * hw, 1};
    kc_emit_strided_copy(g, p, id, yt, 0, y, 0, 4, dims, xs, ys);
}

static int lower_conv3d_depthwise(kc_graph *g, kc_program *p, int id, const kc_window *win,
                                  kann_act act);

/* Lowers Conv node id over a 3-D window as 2-D convs (above), act fused into their stores; 0
 * where it does not apply (nothing lowered). Grouped convs go group by group where the groups
 * are few (groups_pack's rule); depthwise and other many-group ones stay on conv_nd. */
int kc_lower_conv3d(kc_graph *g, kc_program *p, int id, const kc_window *win, kann_act act) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    const kc_value *xv = kc_val(g, x), *wv = kc_val(g, w);
    int64_t G = kc_attr_int(n, "group", 1);
    if (win->n_spatial != 3 || xv->rank != 5 || xv->dims[0] != 1 || !kc_is_const(g, w) ||
        win->dilation[0] != 1 || G < 1)
        return 0;
    int64_t C = xv->dims[1], M = wv->dims[0], kd = win->kernel[0], kh = win->kernel[1],
            kw = win->kernel[2];
    if (G > 1 && G == C && M == C) return lower_conv3d_depthwise(g, p, id, win, act);
    if (C % G || M % G || (G > 1 && (G > 64 || M / G < 4))) return 0;
    int64_t Cg = C / G, Mg = M / G, Do = win->out[0], Ho = win->out[1], Wo = win->out[2];
    /* the slices, rows and columns the windows reach */
    int64_t reach[3];
    kann_conv2d_args c2;
    if (C < 1 || M < 1 || !slice_conv_of(win, reach, &c2)) return 0;
    int64_t Dr = reach[0], Hr = reach[1], Wr = reach[2];
    if (kd * Cg > INT32_MAX || Dr * C * Hr * Wr > INT32_MAX || Do * M * Ho * Wo > INT32_MAX)
        return 0;
    int64_t in[4] = {C, win->in[0], win->in[1], win->in[2]};
    /* the values below add to the graph's table: wv's fields taken now */
    const float *src = wv->data; /* [M][Cg][kd][kh][kw] */
    const char *wname = wv->name;
    int xt = gather_volume(g, p, id, x, G, in, reach, win->pad_begin);
    c2.c_in = (uint32_t)(kd * Cg);
    c2.c_out = (uint32_t)Mg;
    c2.group = 1;
    c2.act = act;
    /* the output [G][Do][Mg][Ho][Wo]: straight into y where that is y's layout */
    int64_t hw = Ho * Wo, fl = (int64_t)sizeof(float), taps = kh * kw, K = kd * Cg * taps;
    int64_t yt_dims[3] = {G * Do * Mg, Ho, Wo};
    int yt = Do == 1 || Mg == 1 ? y : f32_value(g, y, "depth_major", 3, yt_dims);
    int64_t x_step = win->stride[0] * Cg * Hr * Wr * fl;
    float *wt = malloc(sizeof(float) * (size_t)(Mg * K));
    if (!wt) abort();
    for (int64_t gi = 0; gi < G; gi++) {
        /* the group's weights [Mg][kd][Cg][kh][kw] */
        for (int64_t m = 0; m < Mg; m++)
            for (int64_t c = 0; c < Cg; c++)
                for (int64_t z = 0; z < kd; z++)
                    memcpy(wt + ((m * kd + z) * Cg + c) * taps,
                           src + (((gi * Mg + m) * Cg + c) * kd + z) * taps,
                           sizeof(float) * (size_t)taps);
        int64_t wdims[4] = {Mg, kd * Cg, kh, kw};
        int w2 = kc_new_const_f32(g, kc_sprintf(g, "%s.depth_major%lld", wname, (long long)gi),
                                  4, wdims, wt);
        conv_way cw = conv_way_of(g, p, &c2, w2);
        for (int64_t od = 0; od < Do; od++)
            conv_way_call(g, p, id, &cw, xt, (gi * Dr * Cg * Hr * Wr) * fl + od * x_step, b,
                          gi * Mg * fl, yt, (gi * Do + od) * Mg * hw * fl);
    }
    free(wt);
    if (yt != y) depth_major_back(g, p, id, yt, y, G, Do, Mg, hw);
    return 1;
}

/* ---- a transposed conv as strided-1 convs, one an output phase ----------------------------
 * Along an axis of stride s, output o = i * s - pad + k takes the taps k = o + pad (mod s): the
 * outputs of one phase r = o mod s read the taps k0 + s t of one residue k0 = (r + pad) mod s,
 * y[q s + r] = sum_t x[q + c - t] W[k0 + s t], c = (r + pad - k0) / s, a plain stride-1
 * correlation with the phase's taps reversed. So each of the s_h * s_w phases is a conv
 * (conv2d_packed, or Winograd for 3x3 phases) over the input padded once for all of them, its
 * output (a row or column ahead where the phase starts late, the rows past x reading zeros)
 * interleaved into y by a strided copy; bias and activation fused into the convs. A phase with
 * no tap (a kernel shorter than the stride) is a 1x1 conv of zero weights: the bias alone. A
 * depthwise one does the same with depthwise convs. The reference conv_transpose kernel keeps
 * other groups, dilations, batches, 3-D and runtime weights. */
static void dw_call(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *c2, int x,
                    int64_t x_off, int w, int b, int res, int64_t res_off, int y, int64_t y_off);

typedef struct phase_axis {
    int64_t k0, taps; /* the phase's first tap and its count (at least 1) */
    int64_t lead;     /* input positions before x its first output reads */
    int64_t outs;     /* its outputs in y */
} phase_axis;

static phase_axis phase_of(int64_t r, int64_t out, int64_t k, int64_t s, int64_t pad) {
    phase_axis a;
    a.k0 = (r + pad) % s;
    int64_t t = a.k0 < k ? (k - a.k0 + s - 1) / s : 0;
    a.taps = t > 0 ? t : 1;
    a.lead = a.taps - 1 - (r + pad - a.k0) / s;
    a.outs = r < out ? (out - r + s - 1) / s : 0;
    return a;
}

/* The stride-1 conv of one or more phases: c_in channels over the padded input (reach rows
 * and columns), c_out outputs of out[0] x out[1], taps[0] x taps[1] windows. */
static kann_conv2d_args phase_conv_of(int64_t c_in, int64_t c_out, const int64_t *reach,
                                      const int64_t *out, const int64_t *taps, uint32_t group,
                                      kann_act act) {
    kann_conv2d_args pc = {0};
    pc.n = 1;
    pc.c_in = (uint32_t)c_in;
    pc.c_out = (uint32_t)c_out;
    pc.h_in = (uint32_t)reach[0];
    pc.w_in = (uint32_t)reach[1];
    pc.h_out = (uint32_t)out[0];
    pc.w_out = (uint32_t)out[1];
    pc.k_h = (uint32_t)taps[0];
    pc.k_w = (uint32_t)taps[1];
    pc.stride_h = pc.stride_w = pc.dil_h = pc.dil_w = 1;
    pc.group = group;
    pc.act = act;
    return pc;
}

int kc_lower_conv_transpose_phases(kc_graph *g, kc_program *p, int id,
                                   const kc_conv_transpose *ct) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    const kc_value *xv = kc_val(g, x);
    /* group 1, or depthwise: each channel its own, on f32_dwconv2d */
    int depthwise = ct->group > 1 && ct->group == xv->dims[1] && ct->c_out == ct->group;
    if (ct->n_spatial > 2 || (ct->group != 1 && !depthwise) || xv->dims[0] != 1 ||
        !kc_is_const(g, w))
        return 0;
    int two = ct->n_spatial == 2;
    int64_t in[2] = {two ? ct->in[0] : 1, ct->in[two]},
            out[2] = {two ? ct->out[0] : 1, ct->out[two]},
            k[2] = {two ? ct->kernel[0] : 1, ct->kernel[two]},
            s[2] = {two ? ct->stride[0] : 1, ct->stride[two]},
            pad[2] = {two ? ct->pad_begin[0] : 0, ct->pad_begin[two]};
    if ((two && ct->dilation[0] != 1) || ct->dilation[two] != 1 || s[0] * s[1] > 64) return 0;
    int64_t C = xv->dims[1], M = ct->c_out;
    /* the padding every phase's windows need before x, and the extent they reach */
    int64_t lo[2] = {0, 0}, reach[2] = {in[0], in[1]};
    for (int ax = 0; ax < 2; ax++)
        for (int64_t r = 0; r < s[ax]; r++) {
            phase_axis a = phase_of(r, out[ax], k[ax], s[ax], pad[ax]);
            lo[ax] = a.lead > lo[ax] ? a.lead : lo[ax];
        }
    for (int ax = 0; ax < 2; ax++) {
        reach[ax] += lo[ax];
        for (int64_t r = 0; r < s[ax]; r++) {
            phase_axis a = phase_of(r, out[ax], k[ax], s[ax], pad[ax]);
            int64_t need = lo[ax] - a.lead + a.outs + a.taps - 1;
            reach[ax] = need > reach[ax] ? need : reach[ax];
        }
    }
    if (C * reach[0] * reach[1] > INT32_MAX || M * reach[0] * reach[1] > INT32_MAX) return 0;
    kann_conv2d_args c2 = {0};
    c2.n = 1;
    c2.c_in = (uint32_t)C;
    c2.h_in = (uint32_t)in[0];
    c2.w_in = (uint32_t)in[1];
    c2.pad_top = (uint32_t)lo[0];
    c2.pad_left = (uint32_t)lo[1];
    if (lo[0] || lo[1] || reach[0] != in[0] || reach[1] != in[1])
        x = pad_input(g, p, id, x, &c2, (uint32_t)reach[0], (uint32_t)reach[1]);
    const float *wsrc = kc_val(g, w)->data; /* [C][M][k_h][k_w] */
    kann_act act = kc_node_act(n);
    /* Phases all of out / s outputs, none starting late (a 2x2 kernel at stride 2): their
     * outputs side by side in one image [s_h][s_w][M][H][W], turned into y by one transpose
     * (pairs of columns interleaved a vector at a time), not copied phase by phase with stride
     * s_w stores. */
    int uniform = s[0] * s[1] > 1 && out[0] % s[0] == 0 && out[1] % s[1] == 0;
    for (int ax = 0; ax < 2 && uniform; ax++)
        for (int64_t r = 0; r < s[ax] && uniform; r++)
            uniform = phase_of(r, out[ax], k[ax], s[ax], pad[ax]).lead == lo[ax];
    int64_t Hp = out[0] / s[0], Wp = out[1] / s[1],
            phase_bytes = M * Hp * Wp * (int64_t)sizeof(float);
    int zs_all = -1;
    if (uniform) {
        int64_t zd[3] = {s[0] * s[1] * M, Hp, Wp};
        zs_all = f32_value(g, y, "phases", 3, zd);
    }
    /* Uniform phases of the same taps along each axis (a kernel a multiple of the stride: 2x2
     * at stride 2) are convs of one shape over the same input: one conv of s_h s_w M output
     * channels, the phases' weights (and bias) stacked, reads the input once. */
    int64_t th0 = phase_of(0, out[0], k[0], s[0], pad[0]).taps,
            tw0 = phase_of(0, out[1], k[1], s[1], pad[1]).taps;
    int stacked = uniform && !depthwise && (b < 0 || kc_is_const(g, b));
    for (int64_t r = 0; r < s[0] && stacked; r++)
        stacked = phase_of(r, out[0], k[0], s[0], pad[0]).taps == th0;
    for (int64_t r = 0; r < s[1] && stacked; r++)
        stacked = phase_of(r, out[1], k[1], s[1], pad[1]).taps == tw0;
    float *stack = NULL;
    if (stacked && !(stack = calloc((size_t)(s[0] * s[1] * M * C * th0 * tw0), sizeof(float))))
        abort();
    for (int64_t rh = 0; rh < s[0]; rh++)
        for (int64_t rw = 0; rw < s[1]; rw++) {
            phase_axis ah = phase_of(rh, out[0], k[0], s[0], pad[0]),
                       aw = phase_of(rw, out[1], k[1], s[1], pad[1]);
            if (ah.outs == 0 || aw.outs == 0) continue;
            /* the phase's kernel [M][C or 1][taps_h][taps_w], its taps reversed */
            int64_t th = ah.taps, tw = aw.taps, cw_in = depthwise ? 1 : C, K = cw_in * th * tw;
            float *v =
                stacked ? stack + (rh * s[1] + rw) * M * K : calloc((size_t)(M * K), sizeof(float));
            if (!v) abort();
            for (int64_t m = 0; m < M; m++)
                for (int64_t c = 0; c < cw_in; c++)
                    for (int64_t jh = 0; jh < th; jh++)
                        for (int64_t jw = 0; jw < tw; jw++) {
                            int64_t kh = ah.k0 + s[0] * (th - 1 - jh),
                                    kw = aw.k0 + s[1] * (tw - 1 - jw);
                            /* W [C][M / group][k_h][k_w]: a depthwise channel m's is row m */
                            int64_t row = depthwise ? m : c * M + m;
                            if (kh < k[0] && kw < k[1])
                                v[((m * cw_in + c) * th + jh) * tw + jw] =
                                    wsrc[(row * k[0] + kh) * k[1] + kw];
                        }
            if (stacked) continue; /* one conv for all of them, below */
            int64_t vdims[4] = {M, cw_in, th, tw};
            int wv = kc_new_const_f32(g,
                                      kc_sprintf(g, "%s.phase%lld_%lld", kc_val(g, w)->name,
                                                 (long long)rh, (long long)rw),
                                      4, vdims, v);
            free(v);
            /* the phase's conv: its first outputs dropped where it starts after others */
            int64_t eh = lo[0] - ah.lead, ew = lo[1] - aw.lead;
            int64_t pout[2] = {eh + ah.outs, ew + aw.outs}, ptaps[2] = {th, tw};
            kann_conv2d_args pc =
                phase_conv_of(C, M, reach, pout, ptaps, depthwise ? (uint32_t)C : 1, act);
            int whole = s[0] == 1 && s[1] == 1 && eh == 0 && ew == 0;
            int64_t z_off = uniform ? (rh * s[1] + rw) * phase_bytes : 0;
            int z = whole ? y
                    : uniform
                        ? zs_all
                        : planes_value(
                              g, y, kc_sprintf(g, "phase%lld_%lld", (long long)rh, (long long)rw),
                              pc.c_out, pc.h_out, pc.w_out);
            if (depthwise) {
                dw_call(g, p, id, &pc, x, 0, wv, b, -1, 0, z, z_off);
            } else {
                conv_way cw = conv_way_of(g, p, &pc, wv);
                conv_way_call(g, p, id, &cw, x, 0, b, 0, z, z_off);
            }
            if (whole || uniform) continue;
            int64_t dims[3] = {M, ah.outs, aw.outs},
                    zs[3] = {(int64_t)pc.h_out * pc.w_out, pc.w_out, 1},
                    ys[3] = {out[0] * out[1], s[0] * out[1], s[1]};
            kc_emit_strided_copy(g, p, id, z, eh * pc.w_out + ew, y, rh * out[1] + rw, 3, dims, zs,
                                 ys);
        }
    if (stacked) {
        int64_t Ms = s[0] * s[1] * M, vdims[4] = {Ms, C, th0, tw0};
        int wv =
            kc_new_const_f32(g, kc_sprintf(g, "%s.phases", kc_val(g, w)->name), 4, vdims, stack);
        int bs = -1;
        if (b >= 0) { /* the bias once per phase */
            const float *bias = kc_val(g, b)->data;
            for (int64_t i = 0; i < Ms; i++)
                stack[i] = bias[i % M];
            bs = kc_new_const_f32(g, kc_sprintf(g, "%s.phases", kc_val(g, b)->name), 1, &Ms, stack);
        }
        free(stack);
        int64_t pout[2] = {Hp, Wp}, ptaps[2] = {th0, tw0};
        kann_conv2d_args pc = phase_conv_of(C, Ms, reach, pout, ptaps, 1, act);
        conv_way cw = conv_way_of(g, p, &pc, wv);
        conv_way_call(g, p, id, &cw, x, 0, bs, 0, zs_all, 0);
    }
    if (uniform) { /* y [M][Hp][s_h][Wp][s_w] from the phases [s_h][s_w][M][Hp][Wp] */
        int64_t plane = Hp * Wp, dims[5] = {M, Hp, s[0], Wp, s[1]},
                xs[5] = {plane, Wp, s[1] * M * plane, 1, M * plane};
        kc_emit_f32_transpose(g, p, id, zs_all, y, 5, dims, xs);
    }
    return 1;
}

/* ---- a dilated 3x3 conv on Winograd, its phases side by side ------------------------------
 * At stride 1 with dilation d (per axis) and padding a multiple of it, output (i d + a, j d + b)
 * reads only input pixels of the same phase (a, b), as an undilated conv of the phase's grid
 * would. The d_h x d_w phase grids are gathered into one image, block by block, each block the
 * grid padded with zeros to the rows and columns its windows reach; one Winograd conv over the
 * image (its weights streamed once) computes every phase, the outputs at the seams between
 * blocks unused, and each phase's outputs are copied to their places in y. One thread, a
 * 256-channel 3x3 conv at dilation 2 on a 40x40 map (DeepLab's layer3): 12.9 ms on the wide
 * path; dilation 4, 512 channels: 56.5 ms. */
static int lower_dilated_phases(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *a,
                                int w) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), b = kc_input(n, 2), y = n->outputs[0];
    uint32_t dh = a->dil_h, dw = a->dil_w;
    if (a->n != 1 || a->group != 1 || (dh < 2 && dw < 2) || a->stride_h != 1 || a->stride_w != 1 ||
        a->pad_top % dh || a->pad_left % dw || n->epi.residual >= 0 || (uint64_t)dh * dw > 64)
        return 0;
    /* a block: the phase's output grid and the rows and columns its windows reach */
    int64_t ho = (a->h_out + dh - 1) / dh, wo = (a->w_out + dw - 1) / dw;
    int64_t bh = ho + a->k_h - 1, bw = wo + a->k_w - 1, qh = a->pad_top / dh, qw = a->pad_left / dw;
    kann_conv2d_args c2 = *a;
    c2.h_in = (uint32_t)(dh * bh);
    c2.w_in = (uint32_t)(dw * bw);
    c2.h_out = (uint32_t)(dh * bh - (a->k_h - 1));
    c2.w_out = (uint32_t)(dw * bw - (a->k_w - 1));
    c2.dil_h = c2.dil_w = 1;
    c2.pad_top = c2.pad_left = 0;
    if (!winograd_shape(&c2) || winograd_tiles2(&c2) < KANN_WINO_MIN_TILES ||
        (uint64_t)a->c_in * c2.h_in * c2.w_in > INT32_MAX ||
        (uint64_t)a->c_out * c2.h_out * c2.w_out > INT32_MAX)
        return 0;
    int xi = planes_value(g, x, "phases", a->c_in, c2.h_in, c2.w_in);
    int z = planes_value(g, y, "phases", a->c_out, c2.h_out, c2.w_out);
    static const float zero = 0.0f;
    int64_t one = 1, z0[1] = {0}, all = (int64_t)a->c_in * c2.h_in * c2.w_in, unit[1] = {1};
    kc_emit_strided_copy(g, p, id, kc_new_const_f32(g, "zero", 1, &one, &zero), 0, xi, 0, 1, &all,
                         z0, unit);
    int64_t W = a->w_in, HW = (int64_t)a->h_in * a->w_in, Wi = c2.w_in, Wz = c2.w_out;
    for (uint32_t pa = 0; pa < dh; pa++)
        for (uint32_t pb = 0; pb < dw; pb++) {
            /* the phase's input pixels, at rows and columns q past its block's corner */
            int64_t rows = ((int64_t)a->h_in - pa + dh - 1) / dh,
                    cols = ((int64_t)a->w_in - pb + dw - 1) / dw;
            rows = rows < bh - qh ? rows : bh - qh;
            cols = cols < bw - qw ? cols : bw - qw;
            int64_t in_dims[3] = {a->c_in, rows, cols}, xs[3] = {HW, dh * W, dw},
                    is[3] = {(int64_t)c2.h_in * Wi, Wi, 1};
            kc_emit_strided_copy(g, p, id, x, pa * W + pb, xi, (pa * bh + qh) * Wi + pb * bw + qw,
                                 3, in_dims, xs, is);
        }
    conv_way cw = conv_way_of(g, p, &c2, w);
    conv_way_call(g, p, id, &cw, xi, 0, b, 0, z, 0);
    int64_t Wy = a->w_out, HWy = (int64_t)a->h_out * a->w_out;
    for (uint32_t pa = 0; pa < dh && pa < a->h_out; pa++)
        for (uint32_t pb = 0; pb < dw && pb < a->w_out; pb++) {
            int64_t rows = ((int64_t)a->h_out - pa + dh - 1) / dh,
                    cols = ((int64_t)a->w_out - pb + dw - 1) / dw;
            int64_t dims[3] = {a->c_out, rows, cols}, zs[3] = {(int64_t)c2.h_out * Wz, Wz, 1},
                    ys[3] = {HWy, dh * Wy, dw};
            kc_emit_strided_copy(g, p, id, z, pa * bh * Wz + pb * bw, y, pa * Wy + pb, 3, dims, zs,
                                 ys);
        }
    return 1;
}

/* Grouped convs (not depthwise) as one packed conv per group, where the groups are few enough
 * for one call each and hold enough output channels to fill part of a 12-channel panel;
 * others (depthwise multipliers, hundreds of tiny groups) stay on the direct kernel. */
static int groups_pack(const kann_conv2d_args *a) {
    uint32_t G = a->group;
    return G > 1 && G <= 64 && a->c_in % G == 0 && a->c_out % G == 0 && a->c_out / G >= 4 &&
           !(G == a->c_in && a->c_out == a->c_in);
}

/* The kernel taps [*lo, *hi] along one axis that some output reads inside the input: tap k of
 * output o reads o * stride - pad + k * dil. Both ends of that range grow with k, so the taps
 * reading only padding for every output are the first and the last ones. */
static void live_taps(uint32_t k, uint32_t in, uint32_t out, uint32_t stride, uint32_t dil,
                      uint32_t pad, uint32_t *lo, uint32_t *hi) {
    int64_t reach = ((int64_t)out - 1) * stride - pad; /* the last output's tap 0 */
    *lo = 0;
    while (*lo < k && reach + (int64_t)*lo * dil < 0)
        (*lo)++;
    *hi = k;
    while (*hi > *lo && -(int64_t)pad + (int64_t)(*hi - 1) * dil >= (int64_t)in)
        (*hi)--;
}

/* A dilated conv on a small map (DeepLab's atrous rates 12 to 36 on a 28x28 map) has taps that
 * read nothing but padding for every output: they add zeros. The kernel is cut to the taps
 * that read input, the padding shrunk to match (only where it stays >= 0), as a new constant
 * weight this node reads instead. Returns the weight the node now reads. */
static int drop_padding_taps(kc_graph *g, int id, int w, kann_conv2d_args *a) {
    uint32_t h_lo, h_hi, w_lo, w_hi;
    live_taps(a->k_h, a->h_in, a->h_out, a->stride_h, a->dil_h, a->pad_top, &h_lo, &h_hi);
    live_taps(a->k_w, a->w_in, a->w_out, a->stride_w, a->dil_w, a->pad_left, &w_lo, &w_hi);
    if ((h_lo == 0 && h_hi == a->k_h && w_lo == 0 && w_hi == a->k_w) || h_lo >= h_hi ||
        w_lo >= w_hi || (uint64_t)h_lo * a->dil_h > a->pad_top ||
        (uint64_t)w_lo * a->dil_w > a->pad_left)
        return w;
    const kc_value *wv = kc_val(g, w);
    uint32_t kh = h_hi - h_lo, kw = w_hi - w_lo;
    size_t rows = (size_t)wv->dims[0] * wv->dims[1];
    float *cut = malloc(sizeof(float) * rows * kh * kw);
    if (!cut) abort();
    const float *src = wv->data;
    for (size_t r = 0; r < rows; r++)
        for (uint32_t i = 0; i < kh; i++)
            for (uint32_t j = 0; j < kw; j++)
                cut[(r * kh + i) * kw + j] = src[(r * a->k_h + h_lo + i) * a->k_w + w_lo + j];
    int64_t dims[4] = {wv->dims[0], wv->dims[1], kh, kw};
    int v = kc_new_const_f32(g, kc_sprintf(g, "%s.live_taps", wv->name), 4, dims, cut);
    free(cut);
    g->nodes[id].inputs[1] = v;
    a->pad_top -= h_lo * a->dil_h;
    a->pad_left -= w_lo * a->dil_w;
    a->k_h = kh;
    a->k_w = kw;
    if (kh == 1) a->dil_h = 1;
    if (kw == 1) a->dil_w = 1;
    return v;
}

/* ---- a dilated conv by taps ----------------------------------------------------------------
 * On a map smaller than its reach (DeepLab's ASPP at rate 12 on a 14x14 map) a dilated conv's
 * outer taps read input only for the outputs near an edge: tap (kh, kw) reads inside x over a
 * rectangle of outputs, and drop_padding_taps cuts only the taps whose rectangle is empty (rate
 * 12 on 14x14: all 9 kept, 18 % of the products reading input). Where the rectangles hold at
 * most 4/5 of the products, each tap is a pointwise conv over the inputs of its rectangle
 * (gathered by a strided copy), zero-padded to the output's size and summed; the tap whose
 * rectangle is the whole output takes that sum as its residual, with the bias, the node's
 * residual and the activation. One thread: DeepLab's ASPP at rate 12 on a 40x40 map of 2048
 * channels (64 % of the products) 152 ms gathered whole, 86 by taps; rate 6 on 33x33 (77 %)
 * 11.0 ms on the wide path, 9.7 by taps. */

/* Depth taps a depthwise 3-D conv may have on the 2-D kernel. */
#define KC_MAX_DEPTH_TAPS 16

/* Fewest outputs for the split: on smaller maps the records' fixed costs outweigh the work. */
#define KC_TAPS_MIN_PIXELS 16

typedef struct tap_rect {
    uint32_t kh, kw, r0, r1, c0, c1; /* outputs [r0, r1) x [c0, c1) */
} tap_rect;

/* The outputs [*lo, *hi) whose tap k reads inside [0, in) along one axis: output o reads
 * o * stride + k * dil - pad. */
static void tap_outputs(uint32_t out, uint32_t in, uint32_t stride, uint32_t dil, uint32_t pad,
                        uint32_t k, uint32_t *lo, uint32_t *hi) {
    int64_t off = (int64_t)k * dil - pad;
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = (int64_t)in - 1 - off < 0 ? 0 : ((int64_t)in - 1 - off) / stride + 1;
    h = h < (int64_t)out ? h : (int64_t)out;
    *lo = (uint32_t)(l < h ? l : h);
    *hi = (uint32_t)h;
}

/* The pointwise conv of tap t over the outputs of its rectangle: the inputs gathered, the
 * tap's weights [c_out][c_in] packed. last: it writes y with bias b, residual res and the
 * activation; else a new value [c_out][rows][cols], returned. */
static int tap_conv(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *a, int x, int w,
                    const tap_rect *t, int last, int b, int res, int y) {
    uint32_t rows = t->r1 - t->r0, cols = t->c1 - t->c0, taps = a->k_h * a->k_w;
    int64_t ih0 = (int64_t)t->r0 * a->stride_h + (int64_t)t->kh * a->dil_h - a->pad_top;
    int64_t iw0 = (int64_t)t->c0 * a->stride_w + (int64_t)t->kw * a->dil_w - a->pad_left;
    int xs = x;
    if (ih0 != 0 || iw0 != 0 || rows != a->h_in || cols != a->w_in || a->stride_h != 1 ||
        a->stride_w != 1) {
        xs = planes_value(g, y, kc_sprintf(g, "tap%u_%u.in", t->kh, t->kw), a->c_in, rows, cols);
        int64_t dims[3] = {a->c_in, rows, cols};
        int64_t xst[3] = {(int64_t)a->h_in * a->w_in, (int64_t)a->stride_h * a->w_in, a->stride_w};
        int64_t yst[3] = {(int64_t)rows * cols, cols, 1};
        kc_emit_strided_copy(g, p, id, x, ih0 * a->w_in + iw0, xs, 0, 3, dims, xst, yst);
    }
    const kc_value *wv = kc_val(g, w);
    float *tw = malloc(sizeof(float) * a->c_out * a->c_in);
    if (!tw) abort();
    for (size_t m = 0; m < a->c_out; m++)
        for (size_t c = 0; c < a->c_in; c++)
            tw[m * a->c_in + c] =
                ((const float *)wv->data)[(m * a->c_in + c) * taps + t->kh * a->k_w + t->kw];
    int64_t wdims[2] = {a->c_out, a->c_in};
    int wt =
        kc_new_const_f32(g, kc_sprintf(g, "%s.tap%u_%u", wv->name, t->kh, t->kw), 2, wdims, tw);
    free(tw);
    kann_conv2d_packed_args pa = {0};
    pa.c_in = a->c_in;
    pa.c_out = a->c_out;
    pa.h_in = pa.h_out = rows;
    pa.w_in = pa.w_out = cols;
    pa.k_h = pa.k_w = pa.stride_h = pa.stride_w = pa.dil_h = pa.dil_w = 1;
    if (last) pa.act = a->act;
    int ys =
        last ? y
             : planes_value(g, y, kc_sprintf(g, "tap%u_%u", t->kh, t->kw), a->c_out, rows, cols);
    packed_call(g, p, id, &pa, xs, 0, pack_weight_panels(g, wt, 0, a->c_out, a->c_in, 0, a->c_in),
                b, 0, res, 0, ys, 0);
    return ys;
}

/* Lowers the conv by taps where that pays (see above); 0 when it lowered nothing. */
static int lower_by_taps(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *a, int w) {
    const kc_node *n = &g->nodes[id];
    uint32_t taps = a->k_h * a->k_w;
    uint64_t hw = (uint64_t)a->h_out * a->w_out, live = 0;
    if (a->n != 1 || a->group != 1 || taps < 2 || taps > KANN_CONV_MAX_TAPS ||
        hw < KC_TAPS_MIN_PIXELS || (a->dil_h < 2 && a->dil_w < 2))
        return 0;
    tap_rect rects[KANN_CONV_MAX_TAPS];
    int n_rects = 0, full = -1;
    for (uint32_t kh = 0; kh < a->k_h; kh++)
        for (uint32_t kw = 0; kw < a->k_w; kw++) {
            tap_rect t = {kh, kw, 0, 0, 0, 0};
            tap_outputs(a->h_out, a->h_in, a->stride_h, a->dil_h, a->pad_top, kh, &t.r0, &t.r1);
            tap_outputs(a->w_out, a->w_in, a->stride_w, a->dil_w, a->pad_left, kw, &t.c0, &t.c1);
            uint64_t area = (uint64_t)(t.r1 - t.r0) * (t.c1 - t.c0);
            if (area == 0) continue;
            if (area == hw && full < 0) full = n_rects;
            live += area;
            rects[n_rects++] = t;
        }
    if (full < 0 || n_rects < 2 || 5 * live > 4 * (uint64_t)taps * hw) return 0;
    int x = kc_input(n, 0), b = kc_input(n, 2), y = n->outputs[0], sum = n->epi.residual;
    uint32_t count = a->c_out * a->h_out * a->w_out;
    for (int i = 0; i < n_rects; i++) {
        if (i == full) continue;
        const tap_rect *t = &rects[i];
        int part = tap_conv(g, p, id, a, x, w, t, 0, -1, -1, y);
        kann_conv2d_args pad = {0};
        pad.c_in = a->c_out;
        pad.h_in = t->r1 - t->r0;
        pad.w_in = t->c1 - t->c0;
        pad.pad_top = t->r0;
        pad.pad_left = t->c0;
        part = pad_input(g, p, id, part, &pad, a->h_out, a->w_out);
        if (sum >= 0) {
            int s = planes_value(g, y, kc_sprintf(g, "taps%d", i), a->c_out, a->h_out, a->w_out);
            add_sum(g, p, id, sum, part, s, count, (kann_act){0});
            part = s;
        }
        sum = part;
    }
    tap_conv(g, p, id, a, x, w, &rects[full], 1, b, sum, y);
    return 1;
}

/* Tiles that split an NCHW output between streams should meet on a cache-line bound, or the two
 * cores write the line they share in turn: a depthwise layer split by rows on two cores took
 * 1.4-1.8x as long on a 28x28x192 map (each tile's last row ends mid-line) as the channel split,
 * 1.1-1.2x on a 32x32 one. The granule g (a multiple of base) whose g units of unit_floats
 * floats fill whole 64-byte lines, unless that leaves fewer than two granules per stream of the
 * extent (then base: a split that shares a line beats no split). */
static uint32_t line_granule(uint32_t base, uint64_t unit_floats, uint32_t extent, int streams) {
    uint64_t a = unit_floats, b = 16; /* floats per line */
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    uint64_t units = a ? 16 / a : 1, g = base;
    while (g % units) g += base;
    uint64_t P = streams > 1 ? (uint64_t)streams : 1;
    return extent / g >= 2 * P ? (uint32_t)g : base;
}

/* A depthwise f32_dwconv2d call of c2 over x, weights w, bias b, residual res and into y, each
 * at its byte offset (-1: none). */
static void dw_call(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *c2, int x,
                    int64_t x_off, int w, int b, int res, int64_t res_off, int y, int64_t y_off) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_DWCONV2D, id);
    *(kann_conv2d_args *)c->args = *c2;
    int64_t fl = (int64_t)sizeof(float), hw = (int64_t)c2->h_out * c2->w_out;
    kc_bind_slice(c, offsetof(kann_conv2d_args, x), x, x_off,
                  (int64_t)c2->c_in * c2->h_in * c2->w_in * fl, 0);
    kc_bind(c, offsetof(kann_conv2d_args, w), w, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, bias), b, 0, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_args, residual), res, res_off, c2->c_out * hw * fl, 0);
    kc_bind_slice(c, offsetof(kann_conv2d_args, y), y, y_off, c2->c_out * hw * fl, 1);
    kc_set_tile(c, c2->c_out, line_granule(1, (uint64_t)hw, c2->c_out, p->streams), c2->h_out,
                line_granule(1, c2->w_out, c2->h_out, p->streams));
    c->macs = (double)c2->c_out * hw * c2->k_h * c2->k_w;
}

/* A depthwise 3-D conv (kc_lower_conv3d): its input gathered depth-major, each output slice the
 * sum of k_d depthwise 2-D convs over the slices it reads, through two scratch maps, the last
 * one into the slice with the activation. */
static int lower_conv3d_depthwise(kc_graph *g, kc_program *p, int id, const kc_window *win,
                                  kann_act act) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    const kc_value *xv = kc_val(g, x), *wv = kc_val(g, w);
    int64_t C = xv->dims[1], kd = win->kernel[0], kh = win->kernel[1], kw = win->kernel[2];
    int64_t Do = win->out[0], Ho = win->out[1], Wo = win->out[2], reach[3];
    kann_conv2d_args c2;
    if (wv->dims[1] != 1 || kd > KC_MAX_DEPTH_TAPS || !slice_conv_of(win, reach, &c2) ||
        reach[0] * C * reach[1] * reach[2] > INT32_MAX || Do * C * Ho * Wo > INT32_MAX)
        return 0;
    int64_t Hr = reach[1], Wr = reach[2], in[4] = {C, win->in[0], win->in[1], win->in[2]};
    /* the values below add to the graph's table: wv's fields taken now */
    const float *wdata = wv->data;
    const char *wname = wv->name;
    int xt = gather_volume(g, p, id, x, 1, in, reach, win->pad_begin);
    c2.c_in = c2.c_out = c2.group = (uint32_t)C;
    int64_t hw = Ho * Wo, fl = (int64_t)sizeof(float), taps = kh * kw;
    int64_t yt_dims[3] = {Do * C, Ho, Wo};
    int yt = Do == 1 ? y : f32_value(g, y, "depth_major", 3, yt_dims);
    int sums[2] = {-1, -1};
    for (int i = 0; i < 2 && kd > 1; i++)
        sums[i] = planes_value(g, y, kc_sprintf(g, "depth_sum%d", i), c2.c_out, c2.h_out, c2.w_out);
    int wz[KC_MAX_DEPTH_TAPS];
    float *v = malloc(sizeof(float) * (size_t)(C * taps));
    if (!v) abort();
    for (int64_t z = 0; z < kd; z++) {
        for (int64_t c = 0; c < C; c++)
            memcpy(v + c * taps, wdata + (c * kd + z) * taps,
                   sizeof(float) * (size_t)taps);
        int64_t dims[4] = {C, 1, kh, kw};
        wz[z] =
            kc_new_const_f32(g, kc_sprintf(g, "%s.depth%lld", wname, (long long)z), 4, dims, v);
    }
    free(v);
    for (int64_t od = 0; od < Do; od++) {
        int sum = -1;
        for (int64_t z = 0; z < kd; z++) {
            int last = z == kd - 1, to = last ? yt : sums[z % 2];
            kann_conv2d_args a = c2;
            a.act = last ? act : (kann_act){0};
            dw_call(g, p, id, &a, xt, (od * win->stride[0] + z) * C * Hr * Wr * fl, wz[z],
                    z == 0 ? b : -1, sum, 0, to, last ? od * C * hw * fl : 0);
            sum = to;
        }
    }
    if (yt != y) depth_major_back(g, p, id, yt, y, 1, Do, C, hw);
    return 1;
}

/* ---- many small groups as depthwise passes ---------------------------------------------------
 * A grouped conv the packed kernel does not take (more than 64 groups, or fewer than 4 output
 * channels a group: depthwise multipliers) would run on the direct reference. Output channel
 * g * Mg + j of G groups of Cg input channels is the sum over i < Cg of input channel g * Cg + i
 * convolved by its weights [g * Mg + j][i]: for each (j, i) one depthwise conv over all G
 * groups at once, on f32_dwconv2d. The input goes [Cg][G][H][W] first (a strided copy; x itself
 * when Cg = 1), the sums of a j through two scratch maps (bias in its first pass, activation in
 * its last), into y itself when Mg = 1 and otherwise into [Mg][G][Ho][Wo], copied back
 * interleaved. 128 groups of 2 channels, 3x3 on 28x28, one thread: 1.59 -> 0.30 ms (ONNX
 * Runtime 0.75-1.07). */

/* Passes (Cg * Mg depthwise convs) above which a conv stays on the direct kernel. */
#define KC_GROUP_PASSES 64

static int lower_group_passes(kc_graph *g, kc_program *p, int id, const kann_conv2d_args *a,
                              int w) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), b = kc_input(n, 2), y = n->outputs[0], res = n->epi.residual;
    uint32_t G = a->group;
    if (a->n != 1 || G < 2 || a->c_in % G || a->c_out % G || !kc_is_const(g, w)) return 0;
    uint32_t Cg = a->c_in / G, Mg = a->c_out / G;
    if ((Cg == 1 && Mg == 1) || (uint64_t)Cg * Mg > KC_GROUP_PASSES || (res >= 0 && Mg > 1) ||
        (b >= 0 && Mg > 1 && !kc_is_const(g, b)))
        return 0;
    int64_t fl = (int64_t)sizeof(float), hw_in = (int64_t)a->h_in * a->w_in,
            hw = (int64_t)a->h_out * a->w_out, taps = (int64_t)a->k_h * a->k_w;
    /* the values below add to the graph's table: the constants' fields taken now */
    const float *wdata = kc_val(g, w)->data, *bdata = b >= 0 ? kc_val(g, b)->data : NULL;
    const char *wname = kc_val(g, w)->name, *bname = b >= 0 ? kc_val(g, b)->name : NULL;
    int xg = x;
    if (Cg > 1) { /* x [G][Cg][hw] -> [Cg][G][hw] */
        int64_t dims[3] = {Cg, G, hw_in}, xs[3] = {hw_in, Cg * hw_in, 1},
                ys[3] = {G * hw_in, hw_in, 1};
        xg = f32_value(g, x, "group_major", 3, dims);
        kc_emit_strided_copy(g, p, id, x, 0, xg, 0, 3, dims, xs, ys);
    }
    int64_t yt_dims[3] = {Mg, G, hw};
    int yt = Mg == 1 ? y : f32_value(g, y, "group_major", 3, yt_dims);
    int sums[2] = {-1, -1};
    for (int i = 0; i < 2 && Cg > 1; i++)
        sums[i] = planes_value(g, y, kc_sprintf(g, "group_sum%d", i), G, a->h_out, a->w_out);
    kann_conv2d_args c2 = *a;
    c2.c_in = c2.c_out = c2.group = G;
    float *v = malloc(sizeof(float) * (size_t)(G * taps));
    if (!v) abort();
    for (uint32_t j = 0; j < Mg; j++) {
        int bj = b;
        if (b >= 0 && Mg > 1) { /* the biases of output channels g * Mg + j */
            for (uint32_t gi = 0; gi < G; gi++)
                v[gi] = bdata[gi * Mg + j];
            int64_t bd = G;
            bj = kc_new_const_f32(g, kc_sprintf(g, "%s.pass%u", bname, j), 1, &bd, v);
        }
        int sum = res;
        for (uint32_t i = 0; i < Cg; i++) {
            for (uint32_t gi = 0; gi < G; gi++)
                memcpy(v + gi * taps, wdata + ((gi * Mg + j) * Cg + i) * taps,
                       sizeof(float) * (size_t)taps);
            int64_t wd[4] = {G, 1, a->k_h, a->k_w};
            int wij = kc_new_const_f32(g, kc_sprintf(g, "%s.pass%u_%u", wname, j, i), 4, wd, v);
            int last = i == Cg - 1, to = last ? yt : sums[i % 2];
            kann_conv2d_args c = c2;
            c.act = last ? a->act : (kann_act){0};
            dw_call(g, p, id, &c, xg, (int64_t)i * G * hw_in * fl, wij, i == 0 ? bj : -1, sum, 0,
                    to, last ? (int64_t)j * G * hw * fl : 0);
            sum = to;
        }
    }
    free(v);
    if (Mg > 1) { /* [Mg][G][hw] -> y [G][Mg][hw] */
        int64_t dims[3] = {G, Mg, hw}, xs[3] = {hw, G * hw, 1}, ys[3] = {Mg * hw, hw, 1};
        kc_emit_strided_copy(g, p, id, yt, 0, y, 0, 3, dims, xs, ys);
    }
    return 1;
}

/* ---- an inverted residual block as one record -----------------------------------------------
 * A pointwise expansion, a depthwise conv and a pointwise projection (or just the last two)
 * lower to one f32_dwblock call where their inner maps are large: band by band, the expanded
 * rows and the depthwise conv's rows stay in a per-stream scratch instead of being stored whole
 * (mobilenet_v2's first expansion: 4.8 MB), which shrinks the arena. By default (KC_FUSE_LANES)
 * only the blocks the AVX-512 lanes path takes (an expansion from at most 64 channels, an
 * undilated window) over maps past the L2 cache: there the expansion's channel vectors feed
 * the depthwise taps directly (docs/performance.md); with --fuse-blocks every block. */

/* Inner map bytes (the expansion's output and the depthwise conv's) from which a block is
 * lowered to one record: any block, and one the lanes path takes by default. */
#define KC_DWBLOCK_MIN_BYTES (1024u * 1024u)
#define KC_DWBLOCK_LANES_MIN_BYTES (2048u * 1024u)
/* Scratch bytes a band may take: its expanded rows and depthwise rows beside the input and
 * output rows in a core's L2 cache. */
#define KC_DWBLOCK_SCRATCH_BYTES (640u * 1024u)

/* One conv of a block: a 2-D Conv of one image with constant float weights and bias (or none),
 * no residual unless allowed, its window in *w. */
static int block_conv(const kc_graph *g, int id, int residual_ok, kc_window *w) {
    const kc_node *n = &g->nodes[id];
    if (n->dead || n->op != KC_OP_Conv || n->n_outputs < 1 ||
        (!residual_ok && n->epi.residual >= 0))
        return 0;
    int x = kc_input(n, 0), wt = kc_input(n, 1), b = kc_input(n, 2);
    if (x < 0 || !kc_is_const(g, wt) || (b >= 0 && !kc_is_const(g, b))) return 0;
    const kc_value *xv = kc_val(g, x), *wv = kc_val(g, wt), *yv = kc_val(g, n->outputs[0]);
    if (xv->dtype != KC_DTYPE_FLOAT || wv->dtype != KC_DTYPE_FLOAT || yv->dtype != KC_DTYPE_FLOAT ||
        (b >= 0 && kc_val(g, b)->dtype != KC_DTYPE_FLOAT) || xv->rank != 4 || yv->rank != 4 ||
        xv->dims[0] != 1)
        return 0;
    if (n->epi.residual >= 0) {
        const kc_value *rv = kc_val(g, n->epi.residual);
        if (rv->dtype != KC_DTYPE_FLOAT || kc_value_numel(rv) != kc_value_numel(yv)) return 0;
    }
    kc_diag probe; /* a conv kc_window_of refuses is reported when it is lowered itself */
    kc_diag_init(&probe, NULL, NULL);
    probe.silent = 1;
    if (kc_window_of(g, id, w, &probe) || w->n_spatial != 2) return 0;
    for (int i = 0; i < 2; i++)
        if (w->in[i] < 1 || w->out[i] < 1 || w->in[i] > UINT32_MAX || w->out[i] > UINT32_MAX ||
            w->kernel[i] > 64 || w->stride[i] > 64 || w->dilation[i] > 64)
            return 0;
    return 1;
}

/* A 1x1 stride-1 conv without padding or groups. */
static int pointwise_conv(const kc_graph *g, int id, const kc_window *w) {
    return kc_attr_int(&g->nodes[id], "group", 1) == 1 && w->kernel[0] == 1 && w->kernel[1] == 1 &&
           w->stride[0] == 1 && w->stride[1] == 1 && w->pad_begin[0] == 0 && w->pad_begin[1] == 0 &&
           w->out[0] == w->in[0] && w->out[1] == w->in[1];
}

/* The node reading value v alone (as its input 0), if v is no graph output; else -1. */
static int sole_reader(const kc_graph *g, int v) {
    int r = kc_single_consumer(g, v);
    if (r < 0 || (g->values[v].flags & KC_VALUE_OUTPUT) || g->nodes[r].inputs[0] != v) return -1;
    return r;
}

/* Lowers the block starting at node id (its expansion, or its depthwise conv) as one
 * f32_dwblock call; 0 if there is no such block there, or it does not pay. */
static int lower_dwblock(kc_graph *g, kc_program *p, int id) {
    kc_window we, wd, wp;
    if (p->fuse_blocks == KC_FUSE_NONE || !block_conv(g, id, 0, &we)) return 0;
    int expand = pointwise_conv(g, id, &we), dw = id;
    if (expand) {
        dw = sole_reader(g, g->nodes[id].outputs[0]);
        if (dw < 0 || !block_conv(g, dw, 0, &wd)) return 0;
    } else {
        wd = we;
    }
    const kc_node *nd = &g->nodes[dw];
    int64_t c_mid = kc_val(g, nd->outputs[0])->dims[1];
    if (kc_val(g, nd->inputs[0])->dims[1] != c_mid || kc_attr_int(nd, "group", 1) != c_mid)
        return 0;
    for (int i = 0; i < 2; i++)
        if (wd.pad_begin[i] < 0 ||
            !kann_dwblock_window_inside((uint64_t)wd.out[i], (uint64_t)wd.stride[i],
                                        (uint64_t)wd.kernel[i], (uint64_t)wd.dilation[i],
                                        (uint64_t)wd.pad_begin[i], (uint64_t)wd.in[i]))
            return 0;
    int pj = sole_reader(g, nd->outputs[0]);
    if (pj < 0 || !block_conv(g, pj, 1, &wp) || !pointwise_conv(g, pj, &wp)) return 0;
    const kc_node *ne = &g->nodes[id], *np = &g->nodes[pj];
    int x = kc_input(ne, 0), y = np->outputs[0];
    kann_dwblock_args a = {0};
    a.expand = (uint32_t)expand;
    a.c_in = (uint32_t)kc_val(g, x)->dims[1];
    a.c_mid = (uint32_t)c_mid;
    a.c_out = (uint32_t)kc_val(g, y)->dims[1];
    a.h_in = (uint32_t)wd.in[0];
    a.w_in = (uint32_t)wd.in[1];
    a.h_out = (uint32_t)wd.out[0];
    a.w_out = (uint32_t)wd.out[1];
    a.k_h = (uint32_t)wd.kernel[0];
    a.k_w = (uint32_t)wd.kernel[1];
    a.stride_h = (uint32_t)wd.stride[0];
    a.stride_w = (uint32_t)wd.stride[1];
    a.dil_h = (uint32_t)wd.dilation[0];
    a.dil_w = (uint32_t)wd.dilation[1];
    a.pad_top = (uint32_t)wd.pad_begin[0];
    a.pad_left = (uint32_t)wd.pad_begin[1];
    a.act_exp = expand ? kc_node_act(ne) : (kann_act){KANN_ACT_NONE, 0, 0, 0};
    a.act_dw = kc_node_act(nd);
    a.act_proj = kc_node_act(np);
    uint64_t inner = (uint64_t)c_mid * a.h_out * a.w_out;
    if (expand) inner += (uint64_t)c_mid * a.h_in * a.w_in;
    if (inner * sizeof(float) < KC_DWBLOCK_MIN_BYTES) return 0;
    /* the tallest band whose scratch fits */
    for (a.band_rows = 1; a.band_rows < a.h_out; a.band_rows++) {
        kann_dwblock_args taller = a;
        taller.band_rows++;
        if (kann_dwblock_scratch(&taller) * sizeof(float) > KC_DWBLOCK_SCRATCH_BYTES) break;
    }
    uint64_t floats = kann_dwblock_scratch(&a);
    if (floats == 0 || floats * sizeof(float) > KC_DWBLOCK_SCRATCH_BYTES) return 0;
    int members[2] = {expand ? dw : pj, pj};
    if (!fusion_chosen(p, id, members, expand ? 2 : 1,
                       p->fuse_blocks == KC_FUSE_ALL ||
                           (kann_dwblock_lanes_shape(&a) &&
                            inner * sizeof(float) >= KC_DWBLOCK_LANES_MIN_BYTES)))
        return 0;
    if (p->streams > 1) { /* a copy for each thread that may run a part of a stream's rows */
        a.slots = (uint32_t)p->streams;
        floats = kann_dwblock_slot_floats(&a) * a.slots;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_DWBLOCK, id);
    *(kann_dwblock_args *)c->args = a;
    kc_bind(c, offsetof(kann_dwblock_args, x), x, 0, 0);
    if (expand) {
        int w = pack_weight_panels(g, kc_input(ne, 1), 0, a.c_mid, a.c_in, 0, a.c_in);
        kc_bind(c, offsetof(kann_dwblock_args, w_exp), w, 0, 0);
        kc_bind(c, offsetof(kann_dwblock_args, b_exp), kc_input(ne, 2), 0, 0);
    }
    kc_bind(c, offsetof(kann_dwblock_args, w_dw), kc_input(nd, 1), 0, 0);
    kc_bind(c, offsetof(kann_dwblock_args, b_dw), kc_input(nd, 2), 0, 0);
    int w = pack_weight_panels(g, kc_input(np, 1), 0, a.c_out, a.c_mid, 0, a.c_mid);
    kc_bind(c, offsetof(kann_dwblock_args, w_proj), w, 0, 0);
    kc_bind(c, offsetof(kann_dwblock_args, b_proj), kc_input(np, 2), 0, 0);
    kc_bind(c, offsetof(kann_dwblock_args, residual), np->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_dwblock_args, y), y, 0, 1);
    kc_bind_scratch_private(g, p, c, offsetof(kann_dwblock_args, scratch), "dwblock_rows",
                            (int64_t)floats);
    /* Rows in whole lines, unless those granules split unevenly: a block's row costs its
     * expansion, taps and projection, far more than its c_out planes' shared lines (on 2 streams
     * mobilenet_v2's 28-row features.4 cut 12 + 16 in 4-row granules took 63 and 86 us) */
    uint32_t granule = line_granule(1, a.w_out, a.h_out, p->streams), P = (uint32_t)p->streams;
    uint32_t granules = a.h_out / granule;
    if (P > 1 && granules % P != 0 && granules < 4 * P) granule = 1;
    kc_set_tile(c, a.h_out, granule, 0, 0);
    double rows_in = (double)a.h_in * a.w_in, rows_out = (double)a.h_out * a.w_out;
    c->macs = (expand ? rows_in * a.c_mid * a.c_in : 0.0) +
              rows_out * a.c_mid * ((double)a.k_h * a.k_w + a.c_out);
    if (expand) g->nodes[dw].dead = 1;
    g->nodes[pj].dead = 1;
    return 1;
}

int kc_lower_conv(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), w = kc_input(n, 1), b = kc_input(n, 2), y = n->outputs[0];
    /* Weights computed at run time are read in place ([M][C/group][kh][kw]) by the reference
     * kernel; constant ones may be packed. */
    int errors = kc_need_f32(g, id, x, "input", d) + kc_need_f32(g, id, w, "weight", d) +
                 kc_need_f32(g, id, b, "bias", d) +
                 kc_need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    if (lower_dwblock(g, p, id)) return 0;
    kc_window win;
    if (kc_window_of(g, id, &win, d)) return 1;
    if (win.n_spatial < 1 || win.n_spatial > 2) {
        kc_error_node(d, g, id, "%dD convolution is not supported (1D and 2D are)", win.n_spatial);
        return 1;
    }
    const kc_value *xv = kc_val(g, x), *yv = kc_val(g, y);
    int two = win.n_spatial == 2;
    kann_conv2d_args conv = {0};
    kann_conv2d_args *a = &conv;
    a->n = (uint32_t)xv->dims[0];
    a->c_in = (uint32_t)xv->dims[1];
    a->h_in = two ? (uint32_t)win.in[0] : 1;
    a->w_in = (uint32_t)win.in[two];
    a->c_out = (uint32_t)yv->dims[1];
    a->h_out = two ? (uint32_t)win.out[0] : 1;
    a->w_out = (uint32_t)win.out[two];
    a->group = (uint32_t)kc_attr_int(n, "group", 1);
    a->k_h = two ? (uint32_t)win.kernel[0] : 1;
    a->k_w = (uint32_t)win.kernel[two];
    a->stride_h = two ? (uint32_t)win.stride[0] : 1;
    a->stride_w = (uint32_t)win.stride[two];
    a->dil_h = two ? (uint32_t)win.dilation[0] : 1;
    a->dil_w = (uint32_t)win.dilation[two];
    a->pad_top = two ? (uint32_t)win.pad_begin[0] : 0;
    a->pad_left = (uint32_t)win.pad_begin[two];
    a->act = kc_node_act(n);
    if (kc_is_const(g, w)) w = drop_padding_taps(g, id, w, a);
    if (kc_is_const(g, w) && lower_by_taps(g, p, id, a, w)) return 0;
    if (kc_is_const(g, w) && lower_dilated_phases(g, p, id, a, w)) return 0;
    if (a->n == 1 && groups_pack(a) && kc_is_const(g, w)) {
        lower_packed(g, p, id, a, d);
        return 0;
    }
    if (a->n == 1 && a->group == 1 && kc_is_const(g, w)) {
        if (winograd_chosen(p, id, a))
            lower_winograd(g, p, id, a);
        else
            lower_packed(g, p, id, a, d);
        return 0;
    }
    if (lower_group_passes(g, p, id, a, w)) return 0;
    int depthwise = a->group > 1 && a->group == a->c_in && a->c_out == a->c_in;
    kc_call *c =
        kc_new_call(g, p, depthwise ? KANN_KERNEL_F32_DWCONV2D : KANN_KERNEL_F32_CONV2D, id);
    *(kann_conv2d_args *)c->args = conv;
    kc_bind(c, offsetof(kann_conv2d_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, w), w, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, bias), b, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, residual), n->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_conv2d_args, y), y, 0, 1);
    uint32_t per_group = a->group ? a->c_out / a->group : 1;
    uint64_t hw = (uint64_t)a->h_out * a->w_out;
    kc_set_tile(c, a->c_out,
                line_granule(per_group > 1 && per_group < 8 ? per_group : 1, hw, a->c_out,
                             p->streams),
                a->h_out, line_granule(1, a->w_out, a->h_out, p->streams));
    c->macs = (double)a->n * a->c_out * a->h_out * a->w_out *
              (a->c_in / (a->group ? a->group : 1)) * a->k_h * a->k_w;
    return 0;
}
