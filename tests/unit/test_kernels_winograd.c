/* conv2d_winograd (Winograd F(2x2, 3x3) and F(4x4, 3x3)): every CPU variant this machine runs against a direct
 * 3x3 conv on random shapes (odd sizes, ragged channel panels, inputs wider than the windows),
 * every activation, bias and residual, split into complementary tiles on either axis; the
 * validator on good and bad arguments, and on random argument bytes (whatever it accepts runs
 * inside an arena of exactly the bounds it was given); the multiply-adds a profile counts. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_rng.h"

#include "kann_kernels.h"
#include "kernel_variants.h"
#include "ref/act.h"
#include "test_arena.h" /* one arena of floats; the constants alias it */

static float *at(kann_ref r) {
    return arena + r.offset / sizeof(float);
}

/* U = G g G^T of each 3x3 kernel for the transform t, in the panel layout of
 * kann_conv2d_winograd_args. */
static void transform_weights(const float *w, uint32_t c_out, uint32_t c_in,
                              kann_wino_transform t, float *u) {
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    static const double G4[6][3] = {{0.25, 0, 0},          {-1 / 6.0, -1 / 6.0, -1 / 6.0},
                                    {-1 / 6.0, 1 / 6.0, -1 / 6.0}, {1 / 24.0, 1 / 12.0, 1 / 6.0},
                                    {1 / 24.0, -1 / 12.0, 1 / 6.0}, {0, 0, 1}};
    const double(*G)[3] = t == KANN_WINO_F4X4 ? G4 : G2;
    size_t edge = t == KANN_WINO_F4X4 ? 6 : 4;
    size_t panels = (c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    memset(u, 0, edge * edge * panels * c_in * KANN_CONV_PANEL * sizeof(float));
    for (size_t m = 0; m < c_out; m++)
        for (size_t c = 0; c < c_in; c++) {
            const float *g = w + (m * c_in + c) * 9;
            for (size_t i = 0; i < edge; i++)
                for (size_t j = 0; j < edge; j++) {
                    double s = 0.0;
                    for (size_t a = 0; a < 3; a++)
                        for (size_t b = 0; b < 3; b++)
                            s += G[i][a] * g[a * 3 + b] * G[j][b];
                    size_t p = i * edge + j;
                    u[((p * panels + m / KANN_CONV_PANEL) * c_in + c) * KANN_CONV_PANEL +
                      m % KANN_CONV_PANEL] = (float)s;
                }
        }
}

static kann_act random_act(void) {
    kann_act a = {rng_range(0, KANN_ACT_COUNT - 1), 0.5f + 0.5f * rng_float(-1.0f, 1.0f) + 0.5f, 0.0f, 0};
    if (a.kind == KANN_ACT_CLIP) {
        a.alpha = -0.5f;
        a.beta = 0.7f;
    } else if (a.kind == KANN_ACT_HARD_SIGMOID || a.kind == KANN_ACT_SELU) {
        a.beta = 0.6f;
    }
    return a;
}

/* Direct 3x3 conv in double: y, the value before the activation and the sum of the absolute
 * terms (the error scale). */
static void direct(const kann_conv2d_winograd_args *a, const float *w, const float *x,
                   const float *bias, const float *res, float *y, double *pre, double *scale) {
    size_t hw = (size_t)a->h_out * a->w_out;
    for (size_t m = 0; m < a->c_out; m++)
        for (size_t oh = 0; oh < a->h_out; oh++)
            for (size_t ow = 0; ow < a->w_out; ow++) {
                double s = bias ? bias[m] : 0.0, mag = fabs(s);
                for (size_t c = 0; c < a->c_in; c++)
                    for (size_t kh = 0; kh < 3; kh++)
                        for (size_t kw = 0; kw < 3; kw++) {
                            int64_t ih = (int64_t)(oh + kh) - a->pad;
                            int64_t iw = (int64_t)(ow + kw) - a->pad;
                            if (ih < 0 || iw < 0 || ih >= a->h_in || iw >= a->w_in) continue;
                            double t = (double)w[((m * a->c_in + c) * 3 + kh) * 3 + kw] *
                                       x[(c * a->h_in + (size_t)ih) * a->w_in + (size_t)iw];
                            s += t;
                            mag += fabs(t);
                        }
                size_t i = m * hw + oh * a->w_out + ow;
                if (res) {
                    s += res[i];
                    mag += fabs(res[i]);
                }
                y[i] = kann_act_apply(&a->act, (float)s);
                pre[i] = s;
                scale[i] = mag;
            }
}

/* An input extent for n outputs with pad rows (columns) of padding above (left): below it 0 to
 * pad of padding, or with no padding there 0 to 2 more than the windows reach. */
static uint32_t padded_extent(uint32_t n, uint32_t pad) {
    uint32_t after = rng_range(0, pad);
    if (n + 2 < pad + after + 1) after = 0;
    return n + 2 - pad - after + (after == 0 ? rng_range(0, 2) : 0);
}

static void run_case(kann_wino_transform transform, int with_bias, int with_res) {
    kann_conv2d_winograd_args a;
    memset(&a, 0, sizeof a);
    /* one case in eight past the steps the GEMMs prefetch their weights ahead (64): the
     * prefetch then moves on into the next GEMM's panel in the middle of a GEMM */
    a.c_in = rng_range(0, 7) ? rng_range(1, 40) : rng_range(60, 140);
    a.c_out = rng_range(1, 30);
    /* up to 3 blocks of tiles (F(4x4)), tile rows of 1 to more than 16 tiles: a vector of 16
     * tiles may hold the ends of several tile rows */
    a.h_out = rng_range(1, transform == KANN_WINO_F4X4 ? 26 : 13);
    a.w_out = rng_range(1, transform == KANN_WINO_F4X4 ? 70 : 40);
    if (rng_range(0, 5) == 0) { /* a 7x7 grid of tiles: a block of 32 and one of 17 */
        a.h_out = transform == KANN_WINO_F4X4 ? rng_range(25, 28) : rng_range(13, 14);
        a.w_out = transform == KANN_WINO_F4X4 ? rng_range(25, 28) : rng_range(13, 14);
    }
    /* padding read in place (0 to 2 rows and columns above and left; below and right at most
     * as many), or x wider than the windows */
    a.pad = rng_range(0, 2);
    a.h_in = padded_extent(a.h_out, a.pad);
    a.w_in = padded_extent(a.w_out, a.pad);
    a.act = random_act();
    a.transform = transform;
    size_t e = transform == KANN_WINO_F4X4 ? 4 : 2, positions = (e + 2) * (e + 2);
    size_t panels = (a.c_out + KANN_CONV_PANEL - 1) / KANN_CONV_PANEL;
    size_t hw = (size_t)a.h_out * a.w_out, T = (a.h_out + e - 1) / e * ((a.w_out + e - 1) / e);
    size_t n_x = (size_t)a.c_in * a.h_in * a.w_in, n_w = (size_t)a.c_out * a.c_in * 9;
    size_t n_u = positions * panels * a.c_in * KANN_CONV_PANEL, n_y = a.c_out * hw;
    size_t n_s = (size_t)kann_wino_scratch_floats(positions, a.c_in, T);
    size_t cap = n_x + n_w + n_u + a.c_out + 3 * n_y + n_s + 16 * 8;
    arena = aligned_alloc(64, (cap * sizeof(float) + 63) / 64 * 64);
    assert_non_null(arena);
    arena_used = 0;
    a.x = alloc_floats(n_x);
    kann_ref w = alloc_floats(n_w);
    a.u = alloc_floats(n_u);
    a.bias = with_bias ? alloc_floats(a.c_out) : (kann_ref){0};
    a.residual = with_res ? alloc_floats(n_y) : (kann_ref){0};
    a.y = alloc_floats(n_y);
    kann_ref want = alloc_floats(n_y);
    a.scratch = alloc_floats(n_s);
    float *base = arena;
    for (size_t i = 0; i < arena_used; i++)
        base[i] = rng_float(-1.0f, 1.0f);
    transform_weights(at(w), a.c_out, a.c_in, transform, at(a.u));
    double *scale = malloc(n_y * sizeof(double)), *pre = malloc(n_y * sizeof(double));
    assert_non_null(scale);
    assert_non_null(pre);
    direct(&a, at(w), at(a.x), with_bias ? at(a.bias) : NULL, with_res ? at(a.residual) : NULL,
           at(want), pre, scale);
    kann_bounds bd = {arena_used * sizeof(float), arena_used * sizeof(float)};
    kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(KANN_KERNEL_F32_CONV2D_WINOGRAD, vs);
    for (int v = 0; v < nv; v++) {
        /* the whole record, or two complementary tiles on a random axis */
        uint32_t axis = rng_range(0, 1), ext = axis == 0 ? a.c_out : (uint32_t)T;
        uint32_t align = axis == 0 ? KANN_WINO_CHANNEL_GRANULE : KANN_CONV_PIXEL_GRANULE;
        uint32_t cut = rng_range(0, (ext + align - 1) / align) * align;
        if (cut > ext) cut = ext;
        kann_tile tiles[2] = {{axis, 0, cut, 0}, {axis, cut, ext, 0}};
        for (size_t i = 0; i < n_y; i++)
            at(a.y)[i] = NAN;
        for (int t = 0; t < 2; t++) {
            kann_conv2d_winograd_args part = a;
            part.tile = tiles[t];
            kann_error err;
            if (kann_conv2d_winograd_validate(&part, &bd, &err) != KANN_OK)
                fail_msg("validate: %s", err.message);
            vs[v].fn(&part, &ex);
        }
        for (size_t i = 0; i < n_y; i++) {
            float got = at(a.y)[i], ref = at(want)[i];
            double tol = 1e-5 * (scale[i] + 1.0);
            if (a.act.kind != KANN_ACT_NONE && a.act.kind != KANN_ACT_RELU) tol *= 4.0;
            /* a value within rounding of the step of thresholded ReLU may land on either side */
            int near_step = a.act.kind == KANN_ACT_THRESHOLDED_RELU &&
                            fabs(pre[i] - a.act.alpha) <= tol &&
                            (got == 0.0f || fabs((double)got - pre[i]) <= tol);
            if (!near_step && !(fabs((double)got - ref) <= tol))
                fail_msg("%s F(%zux%zu): c_in %u c_out %u %ux%u (in %ux%u pad %u) act %u: "
                         "element %zu is %g, the direct conv says %g",
                         vs[v].isa, e, e, a.c_in, a.c_out, a.h_out, a.w_out, a.h_in, a.w_in, a.pad,
                         a.act.kind, i, (double)got, (double)ref);
        }
    }
    free(scale);
    free(pre);
    free(arena);
    arena = NULL;
}

static void test_against_direct(void **state) {
    (void)state;
    rng_state = 7;
    for (int i = 0; i < 120; i++)
        run_case(KANN_WINO_F2X2, i % 2, i % 3 == 0);
    for (int i = 0; i < 120; i++)
        run_case(KANN_WINO_F4X4, i % 2, i % 3 == 0);
}

/* A legal record over a tight arena: x, u, bias, residual, y, scratch in a row. */
static kann_conv2d_winograd_args legal(kann_bounds *bd) {
    kann_conv2d_winograd_args a;
    memset(&a, 0, sizeof a);
    a.c_in = 5;
    a.c_out = 14;
    a.h_out = 5;
    a.w_out = 7;
    a.h_in = 7;
    a.w_in = 9;
    uint64_t off = 0;
    a.x = (kann_ref){KANN_SPACE_ARENA, 0, off};
    off += 5 * 7 * 9 * 4;
    a.u = (kann_ref){KANN_SPACE_CONST, 0, 0};
    a.bias = (kann_ref){KANN_SPACE_ARENA, 0, off};
    off += 14 * 4;
    a.residual = (kann_ref){KANN_SPACE_ARENA, 0, off};
    off += 14 * 35 * 4;
    a.y = (kann_ref){KANN_SPACE_ARENA, 0, off};
    off += 14 * 35 * 4;
    a.scratch = (kann_ref){KANN_SPACE_ARENA, 0, off};
    off += kann_wino_scratch_floats(16, 5, 3 * 4) * 4;
    a.tile = (kann_tile){1, 0, 12, 0};
    *bd = (kann_bounds){off, 16 * 2 * 5 * 12 * 4};
    return a;
}

static void test_validator(void **state) {
    (void)state;
    kann_bounds bd;
    kann_error err;
    kann_conv2d_winograd_args a = legal(&bd), bad;
    assert_int_equal(kann_conv2d_winograd_validate(&a, &bd, &err), KANN_OK);
    bad = a;
    bad.pad = 3; /* past 2 */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    kann_conv2d_winograd_args padded = a;
    padded.pad = 1; /* 5 x 7 rows and columns, one of padding around */
    padded.h_in = 5;
    padded.w_in = 7;
    assert_int_equal(kann_conv2d_winograd_validate(&padded, &bd, &err), KANN_OK);
    bad = padded;
    bad.h_in = 4; /* windows reach a second row below x */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.transform = KANN_WINO_TRANSFORM_COUNT;
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.transform = KANN_WINO_F4X4; /* 36 positions: u and the scratch are too small */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.h_in = 6; /* windows reach row 6 */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.tile = (kann_tile){0, 6, 14, 0}; /* not a panel start */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.tile = (kann_tile){1, 0, 13, 0}; /* 12 tiles */
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    bad = a;
    bad.scratch.space = KANN_SPACE_NONE;
    assert_int_equal(kann_conv2d_winograd_validate(&bad, &bd, &err), KANN_E_CORRUPT);
    kann_bounds small = bd;
    small.arena_size -= 4; /* the scratch's last float */
    assert_int_equal(kann_conv2d_winograd_validate(&a, &small, &err), KANN_E_CORRUPT);
    small = bd;
    small.const_size -= 4; /* u's last float */
    assert_int_equal(kann_conv2d_winograd_validate(&a, &small, &err), KANN_E_CORRUPT);
}

/* Random argument bytes near a legal record: whatever the validator accepts runs inside
 * buffers of exactly the bounds (a sanitizer build catches any access past them). */
static void test_validator_random(void **state) {
    (void)state;
    rng_state = 99;
    kann_bounds bd;
    kann_conv2d_winograd_args good = legal(&bd);
    int accepted = 0;
    for (int i = 0; i < 3000; i++) {
        kann_conv2d_winograd_args a = good;
        uint32_t *words = (uint32_t *)&a;
        size_t n_words = sizeof a / 4;
        for (uint32_t f = rng_range(1, 3); f > 0; f--) {
            uint32_t v = rng_next() % 4 == 0 ? (uint32_t)rng_next() : rng_range(0, 80);
            words[rng_range(0, (uint32_t)n_words - 1)] = v;
        }
        kann_bounds b = {rng_range(0, 1) ? bd.arena_size : rng_range(0, 8192) * 4,
                         rng_range(0, 1) ? bd.const_size : rng_range(0, 8192) * 4};
        kann_error err;
        if (kann_conv2d_winograd_validate(&a, &b, &err) != KANN_OK) continue;
        accepted++;
        uint8_t *ar = malloc(b.arena_size ? b.arena_size : 1);
        uint8_t *cs = malloc(b.const_size ? b.const_size : 1);
        assert_non_null(ar);
        assert_non_null(cs);
        memset(ar, 0, b.arena_size);
        memset(cs, 0, b.const_size);
        kann_exec ex = {ar, cs, NULL, NULL, NULL};
        kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
        int nv = kernel_variants(KANN_KERNEL_F32_CONV2D_WINOGRAD, vs);
        for (int v = 0; v < nv; v++)
            vs[v].fn(&a, &ex);
        free(ar);
        free(cs);
    }
    assert_true(accepted > 10);
}

/* A profile counts the direct conv's multiply-adds, and complementary tiles on either axis add
 * up to the whole record. */
static void test_profile_macs(void **state) {
    (void)state;
    kann_conv2d_winograd_args a;
    memset(&a, 0, sizeof a);
    a.c_in = 5;
    a.c_out = 30;
    a.h_out = 7;
    a.w_out = 9; /* 4 x 5 tiles, the last row and column of them partial */
    a.h_in = 9;
    a.w_in = 11;
    a.tile = (kann_tile){0, 0, 30, 0};
    double whole = kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a);
    assert_true(whole == 7.0 * 9 * 30 * 5 * 9);
    a.tile = (kann_tile){0, 0, 12, 0};
    double part = kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a);
    a.tile = (kann_tile){0, 12, 30, 0};
    assert_true(fabs(part + kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a) - whole) < 1e-6);
    a.tile = (kann_tile){1, 0, 8, 0};
    part = kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a);
    a.tile = (kann_tile){1, 8, 32, 0}; /* past the 20 tiles: rounded up to a granule */
    assert_true(fabs(part + kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a) - whole) < 1e-6);
    /* F(4x4) on an even map: 2 x 3 tiles of 8 x 10 outputs, tiles split 4 + 2 */
    a.transform = KANN_WINO_F4X4;
    a.h_out = 8;
    a.w_out = 10;
    a.h_in = 10;
    a.w_in = 12;
    a.tile = (kann_tile){1, 0, 6, 0};
    whole = kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a);
    assert_true(whole == 8.0 * 10 * 30 * 5 * 9);
    a.tile = (kann_tile){1, 0, 4, 0};
    part = kann_record_macs(KANN_KERNEL_F32_CONV2D_WINOGRAD, &a);
    assert_true(fabs(part - whole * 4 / 6) < 1e-6);
}

int main(void) {
    rng_state = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_direct),
        cmocka_unit_test(test_validator),
        cmocka_unit_test(test_validator_random),
        cmocka_unit_test(test_profile_macs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
