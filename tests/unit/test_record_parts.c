/* Records cut into parts (kann_kernel_part_granule): for the pointwise, wide and gathering
 * packed convs, the Winograd conv along its tiles, the depthwise conv, pooling and the
 * inverted residual block (its parts in scratch copies of their own, or claimed as one call
 * goes), every variant, a record's tile run as parts cut at random multiples of the granule
 * writes the same bytes as the record run whole, and nothing outside its output (and its
 * scratch); a conv that gathers into a scratch is cut only along its pixels, a Winograd conv
 * only along its tiles, a block only with a scratch copy for each part. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_kernels.h"
#include "kernel_variants.h"
#include "ref/conv2d_packed.h"
#include "ref/conv2d_winograd.h"
#include "ref/dwblock.h"
#include "test_arena.h"
#include "test_rng.h"

static uint32_t rnd(uint32_t lo, uint32_t hi) {
    return (uint32_t)rng_range(lo, hi);
}

/* A claim (kann_exec.claim) that gives the caller its first `left` granules, then stops it;
 * it checks that they are asked for in order, a granule apart from the tile's begin. */
typedef struct stop_after {
    uint32_t next, granule, left;
} stop_after;

static int claim_some(void *ctx, uint32_t at) {
    stop_after *c = ctx;
    assert_int_equal(at, c->next);
    if (c->left == 0) return 0;
    c->left--;
    c->next += c->granule;
    return 1;
}

/* Runs a copy of args as the part [begin, end) in scratch copy `slot`, with claim ctx. */
static void run_part(kernel_variant v, uint32_t kernel, const void *args, size_t args_size,
                     uint32_t begin, uint32_t end, uint32_t slot, stop_after *claim) {
    _Alignas(8) unsigned char part[KANN_PART_ARGS_MAX];
    assert_true(args_size <= sizeof part);
    memcpy(part, args, args_size);
    kann_kernel_part_args(kernel, part, begin, end, slot);
    kann_bounds bd = {arena_used * sizeof(float), arena_used * sizeof(float)};
    kann_error err;
    if (kann_kernels[kernel].validate(part, &bd, &err) != KANN_OK)
        fail_msg("part [%u, %u) in copy %u: %s", begin, end, slot, err.message);
    kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, claim ? claim_some : NULL, claim,
                    NULL};
    v.fn(part, &ex);
}

/* Runs args whole with every variant of kernel, then as parts (each in a scratch copy of its
 * own where the kernel's parts take one), then, for a kernel that claims its parts, the tile in
 * one call stopped after some granules and the rest as a part in another copy; compares the
 * arena but scratch_floats floats at scratch (a kernel's working space, whose contents parts
 * may leave elsewhere in it). */
static void check_parts_but(uint32_t kernel, void *args, size_t args_size, const char *what,
                            kann_ref scratch, size_t scratch_floats) {
    kann_tile *t = args;
    double work;
    uint32_t g = kann_kernel_part_granule(kernel, args, &work);
    assert_true(g > 0);
    assert_true(work > 0.0);
    uint32_t slots = kann_kernel_part_slots(kernel, args);
    kann_bounds bd = {arena_used * sizeof(float), arena_used * sizeof(float)};
    kann_error err;
    if (kann_kernels[kernel].validate(args, &bd, &err) != KANN_OK)
        fail_msg("%s: %s", what, err.message);
    kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
    size_t bytes = arena_used * sizeof(float);
    float *start = malloc(bytes), *whole = malloc(bytes);
    assert_non_null(start);
    assert_non_null(whole);
    memcpy(start, arena, bytes);
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants((int)kernel, vs);
    uint32_t units = (t->end - t->begin + g - 1) / g;
    for (int v = 0; v < nv; v++) {
        memcpy(arena, start, bytes);
        vs[v].fn(args, &ex);
        memcpy(whole, arena, bytes);
        for (int way = 0; way < (kann_kernel_part_claims(kernel) ? 2 : 1); way++) {
            memcpy(arena, start, bytes);
            if (way == 0) { /* parts of 1 to 3 granules, the last up to the tile's end */
                uint32_t begin = t->begin, i = 0;
                while (begin < t->end) {
                    uint32_t end = begin + g * rnd(1, 3);
                    if (end > t->end) end = t->end;
                    run_part(vs[v], kernel, args, args_size, begin, end, slots ? i++ % slots : 0,
                             NULL);
                    begin = end;
                }
            } else { /* the first granules claimed by one call, the rest a part in copy 1 */
                stop_after c = {t->begin, g, rnd(0, units)};
                uint32_t rest = t->begin + c.left * g;
                run_part(vs[v], kernel, args, args_size, t->begin, t->end, 0, &c);
                if (rest < t->end) run_part(vs[v], kernel, args, args_size, rest, t->end, 1, NULL);
            }
            if (scratch_floats) {
                size_t at = scratch.offset / sizeof(float);
                memset(arena + at, 0, scratch_floats * sizeof(float));
                memset(whole + at, 0, scratch_floats * sizeof(float));
            }
            if (memcmp(arena, whole, bytes) != 0) {
                size_t i = 0;
                while (memcmp(&arena[i], &whole[i], sizeof(float)) == 0)
                    i++;
                fail_msg("%s (%s, axis %u, tile [%u, %u), granule %u, %s): float %zu is %g in "
                         "parts, %g whole",
                         what, vs[v].isa, t->axis, t->begin, t->end, g, way ? "claimed" : "cut", i,
                         (double)arena[i], (double)whole[i]);
            }
        }
    }
    free(start);
    free(whole);
}

static void check_parts(uint32_t kernel, void *args, size_t args_size, const char *what) {
    check_parts_but(kernel, args, args_size, what, (kann_ref){0, 0, 0}, 0);
}

static void fill_random(void) {
    for (size_t i = 0; i < arena_used; i++)
        arena[i] = rng_float(-1.0f, 1.0f);
}

/* A random tile of the axis: the whole extent, or a part starting on a multiple of align. */
static kann_tile random_tile(uint32_t axis, uint32_t extent, uint32_t align) {
    kann_tile t = {axis, 0, extent, 0};
    if (rnd(0, 1)) {
        t.begin = rnd(0, (extent - 1) / align) * align;
        t.end = rnd(t.begin + 1, extent);
    }
    return t;
}

/* The arena of a packed conv's shape, its buffers bound (bias and residual or not, a scratch of
 * scratch floats where non-zero), filled at random. */
static void packed_buffers(kann_conv2d_packed_args *a, size_t scratch) {
    size_t K = (size_t)a->c_in * a->k_h * a->k_w, hw = (size_t)a->h_out * a->w_out;
    size_t panels = (a->c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t in = (size_t)a->c_in * a->h_in * a->w_in;
    arena = aligned_alloc(64, 64 * (K * hw + in + panels * KANN_CONV_PANEL * K + 3 * a->c_out * hw +
                                    a->c_out + scratch / 16 + 256));
    assert_non_null(arena);
    arena_used = 0;
    a->x = alloc_floats(in);
    a->w = alloc_floats(panels * KANN_CONV_PANEL * K);
    if (rnd(0, 1)) a->bias = alloc_floats(a->c_out);
    if (rnd(0, 1)) a->residual = alloc_floats(a->c_out * hw);
    a->y = alloc_floats(a->c_out * hw);
    if (scratch) a->scratch = alloc_floats(scratch);
    fill_random();
}

static void packed_case(int wide) {
    kann_conv2d_packed_args a;
    memset(&a, 0, sizeof a);
    a.c_in = rnd(1, 40);
    a.c_out = rnd(1, 40);
    a.k_h = a.k_w = wide ? 3 : 1;
    a.stride_h = a.stride_w = a.dil_h = a.dil_w = 1;
    a.h_out = rnd(1, 12);
    a.w_out = rnd(wide ? 6 : 1, 24);
    a.h_in = a.h_out + a.k_h - 1;
    a.w_in = a.w_out + a.k_w - 1;
    a.act.kind = rnd(0, 1) ? KANN_ACT_RELU : KANN_ACT_NONE;
    uint32_t hw = a.h_out * a.w_out;
    packed_buffers(&a, 0);
    uint32_t axis = wide ? 0 : rnd(0, 1);
    a.tile = axis == 0 ? random_tile(0, a.c_out, KANN_CONV_PANEL)
                       : random_tile(1, hw, KANN_CONV_PIXEL_GRANULE);
    assert_true(wide ? kann_conv2d_packed_wide(&a) : kann_conv2d_packed_pointwise(&a));
    check_parts(KANN_KERNEL_F32_CONV2D_PACKED, &a, sizeof a, wide ? "wide conv" : "pointwise conv");
    free(arena);
}

/* A strided conv that gathers B into its scratch (im2col, or the direct path of few input
 * channels: RGB stems, 1x1 and 3x3 stride-2 convs) cut along its pixels in whole rows. */
static void gather_case(void) {
    kann_conv2d_packed_args a;
    memset(&a, 0, sizeof a);
    uint32_t kinds[4][3] = {{3, 3, 3}, {1, 1, 40}, {3, 3, 10}, {5, 5, 3}}, kind = rnd(0, 4);
    if (kind < 4) {
        a.k_h = kinds[kind][0];
        a.k_w = kinds[kind][1];
        a.c_in = kind == 0 ? 3 : rnd(1, kinds[kind][2]);
        a.stride_h = a.stride_w = 2;
        a.dil_h = a.dil_w = 1;
    } else { /* any window, stride and dilation, strided along at least one axis */
        a.k_h = rnd(1, 7);
        a.k_w = rnd(1, 7);
        a.c_in = rnd(1, 12);
        a.stride_h = rnd(1, 3);
        a.stride_w = a.stride_h == 1 ? rnd(2, 3) : rnd(1, 3);
        a.dil_h = rnd(1, 2);
        a.dil_w = rnd(1, 2);
    }
    a.c_out = rnd(KANN_CONV_LANES_NARROW + 1, 48);
    uint32_t reach_h = (a.k_h - 1) * a.dil_h + 1, reach_w = (a.k_w - 1) * a.dil_w + 1;
    a.pad_top = rnd(0, reach_h / 2);
    a.pad_left = rnd(0, reach_w / 2);
    a.h_in = rnd(reach_h, 40);
    a.w_in = rnd(reach_w, 70);
    a.h_out = (a.h_in + 2 * a.pad_top - reach_h) / a.stride_h + 1;
    a.w_out = (a.w_in + 2 * a.pad_left - reach_w) / a.stride_w + 1;
    a.act.kind = rnd(0, 1) ? KANN_ACT_RELU : KANN_ACT_NONE;
    uint32_t K = a.c_in * a.k_h * a.k_w, hw = a.h_out * a.w_out;
    size_t scratch = (size_t)K * ((hw + KANN_CONV_PIXEL_GRANULE - 1) / KANN_CONV_PIXEL_GRANULE *
                                  KANN_CONV_PIXEL_GRANULE);
    packed_buffers(&a, scratch);
    a.tile = random_tile(1, hw, KANN_CONV_PIXEL_GRANULE);
    double work;
    if (kann_kernel_part_granule(KANN_KERNEL_F32_CONV2D_PACKED, &a, &work))
        check_parts_but(KANN_KERNEL_F32_CONV2D_PACKED, &a, sizeof a, "gathering conv", a.scratch,
                        scratch);
    else /* only a path the tile's extent picks keeps it whole */
        assert_true(a.k_h * a.k_w > 1 && K >= KANN_CONV_PHASE_MIN_K);
    free(arena);
}

/* A Winograd conv cut along its tiles: F(2x2, 3x3) or F(4x4, 3x3), grids of 1 to 80 tiles
 * (several blocks of KANN_WINO_BLOCK, a short last one), padding 0 to 2. */
static void winograd_case(void) {
    kann_conv2d_winograd_args a;
    memset(&a, 0, sizeof a);
    a.transform = rnd(0, 1) ? KANN_WINO_F4X4 : KANN_WINO_F2X2;
    a.c_in = rnd(1, 24);
    a.c_out = rnd(1, 30);
    a.pad = rnd(0, 2);
    a.h_out = rnd(1, 36);
    a.w_out = rnd(1, 36);
    /* at least the rows and columns the windows reach past the padding, at least one */
    int64_t h_in = (int64_t)a.h_out + 2 - 2 * (int64_t)a.pad + rnd(0, a.pad);
    int64_t w_in = (int64_t)a.w_out + 2 - 2 * (int64_t)a.pad + rnd(0, a.pad);
    a.h_in = h_in < 1 ? 1 : (uint32_t)h_in;
    a.w_in = w_in < 1 ? 1 : (uint32_t)w_in;
    a.act.kind = rnd(0, 1) ? KANN_ACT_RELU : KANN_ACT_NONE;
    size_t e = kann_wino_edge(&a), positions = kann_wino_positions(&a);
    uint32_t T = (uint32_t)(((a.h_out + e - 1) / e) * ((a.w_out + e - 1) / e));
    size_t panels = (a.c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t in = (size_t)a.c_in * a.h_in * a.w_in, out = (size_t)a.c_out * a.h_out * a.w_out;
    size_t u = positions * panels * a.c_in * KANN_CONV_PANEL;
    size_t scratch = (size_t)kann_wino_scratch_floats(positions, a.c_in, T);
    /* six pieces, each rounded up to 16 floats (alloc_floats) */
    size_t floats = in + u + a.c_out + 2 * out + scratch + 6 * 16;
    arena = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
    assert_non_null(arena);
    arena_used = 0;
    a.x = alloc_floats(in);
    a.u = alloc_floats(u);
    if (rnd(0, 1)) a.bias = alloc_floats(a.c_out);
    if (rnd(0, 1)) a.residual = alloc_floats(out);
    a.y = alloc_floats(out);
    a.scratch = alloc_floats(scratch);
    fill_random();
    a.tile = random_tile(1, T, KANN_WINO_BLOCK);
    check_parts_but(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a, sizeof a, "winograd conv", a.scratch,
                    scratch);
    /* along output channels: not cut */
    a.tile = (kann_tile){0, 0, a.c_out, 0};
    double work = 1.0;
    assert_int_equal(kann_kernel_part_granule(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a, &work), 0);
    free(arena);
}

static void dw_case(void) {
    kann_dwconv2d_args a;
    memset(&a, 0, sizeof a);
    uint32_t c = rnd(1, 70), s = rnd(1, 2);
    a.n = 1;
    a.c_in = a.c_out = a.group = c;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = s;
    a.dil_h = a.dil_w = 1;
    a.pad_top = a.pad_left = 1;
    a.h_in = rnd(2, 30);
    a.w_in = rnd(2, 30);
    a.h_out = (a.h_in + 2 - 3) / s + 1;
    a.w_out = (a.w_in + 2 - 3) / s + 1;
    a.act.kind = rnd(0, 1) ? KANN_ACT_RELU : KANN_ACT_NONE;
    size_t in = (size_t)c * a.h_in * a.w_in, out = (size_t)c * a.h_out * a.w_out;
    arena = aligned_alloc(64, 64 * (in + 9 * (size_t)c + c + 2 * out + 256));
    assert_non_null(arena);
    arena_used = 0;
    a.x = alloc_floats(in);
    a.w = alloc_floats(9 * (size_t)c);
    if (rnd(0, 1)) a.bias = alloc_floats(c);
    if (rnd(0, 1)) a.residual = alloc_floats(out);
    a.y = alloc_floats(out);
    fill_random();
    uint32_t axis = rnd(0, 1);
    a.tile = axis == 0 ? random_tile(0, c, 16) : random_tile(1, a.h_out, 1);
    double work;
    if (axis == 1 && a.tile.begin == 0 && a.tile.end == a.h_out) /* may run whole planes */
        assert_int_equal(kann_kernel_part_granule(KANN_KERNEL_F32_DWCONV2D, &a, &work), 0);
    else
        check_parts(KANN_KERNEL_F32_DWCONV2D, &a, sizeof a, "depthwise conv");
    free(arena);
}

static void pool_case(void) {
    kann_pool2d_args a;
    memset(&a, 0, sizeof a);
    a.kind = KANN_POOL_MAX;
    a.planes = rnd(1, 40);
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = rnd(1, 2);
    a.dil_h = a.dil_w = 1;
    a.h_in = rnd(3, 30);
    a.w_in = rnd(3, 30);
    a.h_out = (a.h_in - 3) / a.stride_h + 1;
    a.w_out = (a.w_in - 3) / a.stride_w + 1;
    size_t in = (size_t)a.planes * a.h_in * a.w_in, out = (size_t)a.planes * a.h_out * a.w_out;
    arena = aligned_alloc(64, 64 * (in + out + 64));
    assert_non_null(arena);
    arena_used = 0;
    a.x = alloc_floats(in);
    a.y = alloc_floats(out);
    fill_random();
    a.tile = random_tile(0, a.planes, 1);
    check_parts(KANN_KERNEL_F32_POOL2D, &a, sizeof a, "max pool");
    free(arena);
}

/* An inverted residual block (or a depthwise-separable pair) cut into bands of output rows,
 * in 2 or 3 scratch copies: shapes that take the AVX-512 lanes path (an expansion from at most
 * 64 channels over rows of at least 6) and the band path. */
static void dwblock_case(void) {
    kann_dwblock_args a;
    memset(&a, 0, sizeof a);
    uint32_t s = rnd(1, 2), k = rnd(0, 3) ? 3 : 5;
    a.expand = rnd(0, 3) != 0;
    a.c_in = rnd(1, 40);
    a.c_mid = a.expand ? rnd(1, 50) : a.c_in;
    a.c_out = rnd(1, 30);
    a.k_h = a.k_w = k;
    a.stride_h = a.stride_w = s;
    a.dil_h = a.dil_w = 1;
    a.pad_top = a.pad_left = k / 2;
    a.h_in = rnd(k, 20);
    a.w_in = rnd(k, 24);
    a.h_out = (a.h_in + k - 1 - k) / s + 1;
    a.w_out = (a.w_in + k - 1 - k) / s + 1;
    a.band_rows = rnd(1, 4);
    a.slots = rnd(2, 3);
    a.act_exp = (kann_act){KANN_ACT_CLIP, 0, 6, 0};
    a.act_dw.kind = rnd(0, 1) ? KANN_ACT_RELU : KANN_ACT_NONE;
    uint32_t p = KANN_CONV_PANEL;
    size_t in = (size_t)a.c_in * a.h_in * a.w_in, out = (size_t)a.c_out * a.h_out * a.w_out;
    size_t w_exp = (size_t)(a.c_mid + p - 1) / p * p * a.c_in;
    size_t w_proj = (size_t)(a.c_out + p - 1) / p * p * a.c_mid;
    size_t scratch = (size_t)(kann_dwblock_slot_floats(&a) * a.slots);
    size_t floats = in + w_exp + 2 * (size_t)a.c_mid + (size_t)a.c_mid * k * k + w_proj + a.c_out +
                    2 * out + scratch + 10 * 16;
    arena = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
    assert_non_null(arena);
    arena_used = 0;
    a.x = alloc_floats(in);
    if (a.expand) {
        a.w_exp = alloc_floats(w_exp);
        if (rnd(0, 1)) a.b_exp = alloc_floats(a.c_mid);
    }
    a.w_dw = alloc_floats((size_t)a.c_mid * k * k);
    if (rnd(0, 1)) a.b_dw = alloc_floats(a.c_mid);
    a.w_proj = alloc_floats(w_proj);
    if (rnd(0, 1)) a.b_proj = alloc_floats(a.c_out);
    if (rnd(0, 1)) a.residual = alloc_floats(out);
    a.y = alloc_floats(out);
    a.scratch = alloc_floats(scratch);
    fill_random();
    a.tile = random_tile(0, a.h_out, a.band_rows);
    check_parts_but(KANN_KERNEL_F32_DWBLOCK, &a, sizeof a, "dwblock", a.scratch, scratch);
    /* one scratch: not cut */
    a.slots = 1;
    double work = 1.0;
    assert_int_equal(kann_kernel_part_granule(KANN_KERNEL_F32_DWBLOCK, &a, &work), 0);
    free(arena);
}

static void test_parts_match_whole(void **state) {
    (void)state;
    rng_state = 20261121;
    for (int i = 0; i < 100; i++) {
        packed_case(0);
        packed_case(1);
        winograd_case();
        dw_case();
        pool_case();
        dwblock_case();
        gather_case();
    }
}

/* A gathering conv (stride 2: im2col or phase planes in its scratch) is not cut along output
 * channels, and other kernels are not cut. */
static void test_scratch_not_cut(void **state) {
    (void)state;
    kann_conv2d_packed_args a;
    memset(&a, 0, sizeof a);
    a.c_in = 8;
    a.c_out = 16;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = 2;
    a.dil_h = a.dil_w = 1;
    a.h_in = a.w_in = 9;
    a.h_out = a.w_out = 4;
    a.scratch = (kann_ref){KANN_SPACE_ARENA, 0, 0};
    a.tile = (kann_tile){0, 0, 16, 0};
    double work = 1.0;
    assert_int_equal(kann_kernel_part_granule(KANN_KERNEL_F32_CONV2D_PACKED, &a, &work), 0);
    assert_true(work == 0.0);
    kann_matmul_args m;
    memset(&m, 0, sizeof m);
    assert_int_equal(kann_kernel_part_granule(KANN_KERNEL_F32_MATMUL, &m, &work), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parts_match_whole),
        cmocka_unit_test(test_scratch_not_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
