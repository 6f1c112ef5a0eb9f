/* The norm and lrn reference kernels against textbook loops on random shapes and every
 * parameter layout (LayerNorm, InstanceNorm, GroupNorm per group and per channel, given
 * statistics), each run as three records with complementary (ragged) tiles; their validators on
 * good and hostile arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_kernels.h"

enum { ARENA_FLOATS = 1 << 16 };
static float arena[ARENA_FLOATS];
static const kann_bounds bounds = {sizeof arena, 0};
static const kann_exec exec_ctx = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};

static uint64_t rng_state = 7;
static uint32_t rng_next(void) {
    rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
    return (uint32_t)(rng_state >> 33);
}
static uint32_t rng_range(uint32_t lo, uint32_t hi) {
    return lo + rng_next() % (hi - lo + 1);
}
static float rng_float(void) {
    return (float)rng_next() / 2147483648.0f * 2.0f - 1.0f;
}

static kann_ref at(size_t float_offset) {
    kann_ref r = {KANN_SPACE_ARENA, 0, float_offset * sizeof(float)};
    return r;
}

static void run_tiled(int kernel, void *args, uint32_t extent) {
    kann_tile *t = args;
    kann_error err;
    uint32_t a = rng_range(0, extent), b = rng_range(a, extent);
    uint32_t cuts[4] = {0, a, b, extent};
    for (int i = 0; i < 3; i++) {
        t->axis = 0;
        t->begin = cuts[i];
        t->end = cuts[i + 1];
        assert_int_equal(kann_kernels[kernel].validate(args, &bounds, &err), KANN_OK);
        kann_kernels[kernel].ref(args, &exec_ctx);
    }
}

enum {
    X = 0,
    Y = 8192,
    SCALE = 16384,
    BIAS = 17408,
    MEAN = 18432,
    VAR = 19456,
    MEAN_OUT = 20480,
    INV_OUT = 21504
};

static void test_norm_layouts(void **state) {
    (void)state;
    for (int iter = 0; iter < 120; iter++) {
        int layout = iter % 5; /* layer, instance, group/18, group/21, batchnorm given stats */
        uint32_t n = rng_range(1, 3), c = rng_range(1, 6), spatial = rng_range(1, 9);
        uint32_t g_count = 1, groups, len, pg, pgs, pin;
        switch (layout) {
        case 0: /* LayerNorm over [c][spatial] */
            groups = n, len = c * spatial, pg = 1, pgs = 0, pin = 1;
            break;
        case 1:
        case 4:
            groups = n * c, len = spatial, pg = c, pgs = 1, pin = spatial;
            break;
        default:
            g_count = c % 2 == 0 ? 2 : 1;
            groups = n * g_count, len = (c / g_count) * spatial, pg = g_count;
            pgs = layout == 2 ? 1 : c / g_count;
            pin = layout == 2 ? len : spatial;
            break;
        }
        kann_norm_args a = {0};
        a.groups = groups;
        a.len = len;
        a.param_groups = pg;
        a.param_group_stride = pgs;
        a.param_inner = pin;
        a.epsilon = 1e-3f;
        a.stats_given = layout == 4;
        a.x = at(X);
        a.y = at(Y);
        a.scale = at(SCALE);
        a.bias = rng_next() % 2 ? at(BIAS) : (kann_ref){0};
        if (a.stats_given) {
            a.mean = at(MEAN);
            a.var = at(VAR);
        } else {
            a.mean_out = at(MEAN_OUT);
            a.inv_std_out = at(INV_OUT);
        }
        for (uint32_t i = 0; i < groups * len; i++)
            arena[X + i] = 3.0f * rng_float() + 1.0f;
        for (uint32_t i = 0; i < 1024; i++) {
            arena[SCALE + i] = rng_float();
            arena[BIAS + i] = rng_float();
            arena[MEAN + i] = rng_float();
            arena[VAR + i] = 0.5f + rng_float() * 0.4f;
        }
        run_tiled(KANN_KERNEL_F32_NORM, &a, groups);
        for (uint32_t gi = 0; gi < groups; gi++) {
            const float *xg = arena + X + (size_t)gi * len;
            double mean = 0, var = 0;
            for (uint32_t j = 0; j < len; j++)
                mean += xg[j];
            mean /= len;
            for (uint32_t j = 0; j < len; j++)
                var += (xg[j] - mean) * (xg[j] - mean);
            var /= len;
            if (!a.stats_given) {
                assert_float_equal(arena[MEAN_OUT + gi], mean, 1e-4);
                assert_float_equal(arena[INV_OUT + gi], 1.0 / sqrt(var + 1e-3), 1e-3);
            }
            for (uint32_t j = 0; j < len; j++) {
                uint32_t p = (gi % pg) * pgs + j / pin;
                double m = a.stats_given ? arena[MEAN + p] : mean;
                double v = a.stats_given ? arena[VAR + p] : var;
                double want = (xg[j] - m) / sqrt(v + 1e-3) * arena[SCALE + p] +
                              (a.bias.space ? arena[BIAS + p] : 0.0);
                float got = arena[Y + (size_t)gi * len + j];
                if (fabs(got - want) > 1e-4 + 1e-4 * fabs(want)) {
                    print_error("layout %d iter %d group %u j %u: %g != %g\n", layout, iter, gi, j,
                                got, want);
                    fail();
                }
            }
        }
    }
}

static void test_norm_validate_hostile(void **state) {
    (void)state;
    kann_error err;
    kann_norm_args a = {0};
    a.groups = 4;
    a.len = 8;
    a.param_groups = 4;
    a.param_group_stride = 1;
    a.param_inner = 8;
    a.x = at(0);
    a.y = at(64);
    a.scale = at(SCALE);
    a.tile.end = 4;
    assert_int_equal(kann_norm_validate(&a, &bounds, &err), KANN_OK);
    kann_norm_args bad = a;
    bad.param_inner = 0;
    assert_int_equal(kann_norm_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.param_group_stride = 1u << 31; /* parameter index past the arena */
    assert_int_equal(kann_norm_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.scale = at(ARENA_FLOATS - 2); /* 4 parameters do not fit */
    assert_int_equal(kann_norm_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.stats_given = 1; /* given statistics need mean and var */
    assert_int_equal(kann_norm_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.groups = 1u << 30;
    bad.tile.end = 1u << 30;
    assert_int_equal(kann_norm_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
}

static void test_lrn_random(void **state) {
    (void)state;
    for (int iter = 0; iter < 40; iter++) {
        kann_lrn_args a = {0};
        a.n = rng_range(1, 3);
        a.c = rng_range(1, 9);
        a.inner = rng_range(1, 7);
        a.size = rng_range(1, 6);
        a.alpha = 0.3f;
        a.beta = 0.75f;
        a.bias = 1.5f;
        a.x = at(X);
        a.y = at(Y);
        uint32_t total = a.n * a.c * a.inner;
        for (uint32_t i = 0; i < total; i++)
            arena[X + i] = 2.0f * rng_float();
        run_tiled(KANN_KERNEL_F32_LRN, &a, a.n * a.c);
        for (uint32_t b = 0; b < a.n; b++)
            for (uint32_t k = 0; k < a.c; k++)
                for (uint32_t i = 0; i < a.inner; i++) {
                    double sum = 0;
                    for (int q = (int)k - (int)(a.size - 1) / 2; q <= (int)(k + a.size / 2); q++)
                        if (q >= 0 && q < (int)a.c) {
                            double v = arena[X + (b * a.c + (uint32_t)q) * a.inner + i];
                            sum += v * v;
                        }
                    size_t e = (b * a.c + k) * a.inner + i;
                    double want = arena[X + e] / pow(1.5 + 0.3 / a.size * sum, 0.75);
                    assert_float_equal(arena[Y + e], want, 1e-5 + 1e-5 * fabs(want));
                }
    }
    kann_error err;
    kann_lrn_args bad = {0};
    bad.n = bad.c = bad.inner = 1;
    bad.x = at(0);
    bad.y = at(4);
    bad.tile.end = 1;
    assert_int_equal(kann_lrn_validate(&bad, &bounds, &err), KANN_E_CORRUPT); /* size 0 */
    bad.size = 1;
    assert_int_equal(kann_lrn_validate(&bad, &bounds, &err), KANN_OK);
    bad.inner = 1u << 30;
    assert_int_equal(kann_lrn_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norm_layouts),
        cmocka_unit_test(test_norm_validate_hostile),
        cmocka_unit_test(test_lrn_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
