/* The row kernels' SIMD variants (kernels/x86/rowops.h: f32_norm, f32_softmax) against their
 * references on random shapes: LayerNorm, InstanceNorm and GroupNorm parameter layouts, with
 * and without scale, bias and statistics outputs, every activation, rows of 1 to 300 elements
 * (ragged vector tails), split tiles, in place and not; softmax and log-softmax along the last
 * axis and along a strided one (the reference path), inputs with a wide range. */
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

#define ARENA_FLOATS (1u << 20)
static float arena[ARENA_FLOATS];
static size_t arena_used;

static kann_ref alloc_floats(size_t n) {
    kann_ref r = {KANN_SPACE_ARENA, 0, arena_used * sizeof(float)};
    arena_used += (n + 15) / 16 * 16 + 16; /* a gap: a stray tail store shows as a mismatch */
    assert_true(arena_used <= ARENA_FLOATS);
    return r;
}

static float *at(kann_ref r) {
    return arena + r.offset / sizeof(float);
}

static kann_act random_act(void) {
    kann_act a = {rng_range(0, KANN_ACT_COUNT - 1), 0.5f, 0.0f, 0};
    if (a.kind == KANN_ACT_CLIP) {
        a.alpha = -0.5f;
        a.beta = 0.7f;
    } else if (a.kind == KANN_ACT_HARD_SIGMOID || a.kind == KANN_ACT_SELU) {
        a.beta = 0.6f;
    }
    return a;
}

/* Runs fn on args with the arena as it is in `before` (n floats), into the arena. */
static void run_from(kann_kernel_fn fn, const void *args, const float *before, size_t n) {
    memcpy(arena, before, n * sizeof(float));
    kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
    fn(args, &ex);
}

/* Every variant of id on args (with tiles split at a random point) gives the reference's
 * arena within tol, relative to 1 + |reference|. */
static void check_variants(int id, void *args, kann_tile *tile, uint32_t extent, double tol,
                           const char *what, int c) {
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(id, vs);
    size_t n = arena_used;
    float *before = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    assert_non_null(before);
    assert_non_null(want);
    memcpy(before, arena, n * sizeof(float));
    *tile = (kann_tile){0, 0, extent, 0};
    run_from(vs[0].fn, args, before, n);
    memcpy(want, arena, n * sizeof(float));
    for (int v = 1; v < nv; v++) {
        uint32_t cut = rng_range(0, extent);
        memcpy(arena, before, n * sizeof(float));
        kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
        *tile = (kann_tile){0, 0, cut, 0};
        vs[v].fn(args, &ex);
        *tile = (kann_tile){0, cut, extent, 0};
        vs[v].fn(args, &ex);
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)arena[i] - want[i]);
            int same_nan = isnan(arena[i]) && isnan(want[i]);
            if (!same_nan && !(d <= tol * (1.0 + fabs((double)want[i]))))
                fail_msg("%s case %d, %s: float %zu is %.9g, the reference %.9g", what, c,
                         vs[v].isa, i, arena[i], want[i]);
        }
    }
    free(before);
    free(want);
}

static void test_norm(void **state) {
    (void)state;
    for (int c = 0; c < 400; c++) {
        arena_used = 0;
        kann_norm_args a;
        memset(&a, 0, sizeof a);
        int layout = (int)rng_range(0, 2); /* LayerNorm, InstanceNorm, GroupNorm */
        uint32_t channels = rng_range(1, 6), spatial = rng_range(1, 70);
        a.groups = rng_range(1, 9);
        if (layout == 0) {
            a.len = rng_range(1, 300);
            a.param_groups = 1;
            a.param_group_stride = 0;
            a.param_inner = 1;
        } else if (layout == 1) {
            a.groups = channels * rng_range(1, 2);
            a.len = spatial;
            a.param_groups = channels;
            a.param_group_stride = 1;
            a.param_inner = spatial;
        } else {
            uint32_t per_group = rng_range(1, 4);
            a.groups = channels * rng_range(1, 2);
            a.len = per_group * spatial;
            a.param_groups = channels;
            a.param_group_stride = per_group;
            a.param_inner = spatial;
        }
        size_t n_params = layout == 0 ? a.len : (size_t)channels * (layout == 2 ? a.len : 1);
        size_t total = (size_t)a.groups * a.len;
        a.epsilon = 1e-5f;
        a.act = random_act();
        a.x = alloc_floats(total);
        /* the spread no smaller than a twentieth of the offset: a group's normalized values
         * carry the rounding of x relative to its deviation, which the summation order moves */
        float offset = 10.0f * rng_float(-1.0f, 1.0f), spread = 0.5f + 5.0f * (rng_float(-1.0f, 1.0f) + 1.0f);
        for (size_t i = 0; i < total; i++)
            at(a.x)[i] = offset + spread * rng_float(-1.0f, 1.0f);
        a.y = rng_range(0, 3) == 0 ? a.x : alloc_floats(total); /* in place, sometimes */
        a.scale = a.bias = a.mean = a.var = a.mean_out = a.inv_std_out =
            (kann_ref){KANN_SPACE_NONE, 0, 0};
        if (rng_range(0, 3)) {
            a.scale = alloc_floats(n_params);
            for (size_t i = 0; i < n_params; i++)
                at(a.scale)[i] = 2.0f * rng_float(-1.0f, 1.0f);
        }
        if (rng_range(0, 3)) {
            a.bias = alloc_floats(n_params);
            for (size_t i = 0; i < n_params; i++)
                at(a.bias)[i] = rng_float(-1.0f, 1.0f);
        }
        if (rng_range(0, 1)) {
            a.mean_out = alloc_floats(a.groups);
            a.inv_std_out = alloc_floats(a.groups);
        }
        check_variants(KANN_KERNEL_F32_NORM, &a, &a.tile, a.groups, 5e-5, "norm", c);
    }
}

static void test_softmax(void **state) {
    (void)state;
    for (int c = 0; c < 400; c++) {
        arena_used = 0;
        kann_softmax_args a;
        memset(&a, 0, sizeof a);
        a.outer = rng_range(1, 12);
        a.axis_len = rng_range(1, 300);
        a.inner = rng_range(0, 4) == 0 ? rng_range(2, 5) : 1;
        a.log = rng_range(0, 1);
        size_t total = (size_t)a.outer * a.axis_len * a.inner;
        a.x = alloc_floats(total);
        float range = rng_range(0, 1) ? 1.0f : 60.0f; /* wide: many terms underflow to ~0 */
        for (size_t i = 0; i < total; i++)
            at(a.x)[i] = range * rng_float(-1.0f, 1.0f);
        if (rng_range(0, 5) == 0) /* a masked position, as attention masks write */
            at(a.x)[rng_range(0, (uint32_t)total - 1)] = -1e9f;
        a.y = rng_range(0, 3) == 0 ? a.x : alloc_floats(total);
        check_variants(KANN_KERNEL_F32_SOFTMAX, &a, &a.tile, a.outer, 2e-5, "softmax", c);
    }
}

/* exp through softmax of two elements: softmax([0, t])[1] = 1 / (1 + e^-t), over the range
 * where that is a normal float, against the double formula. */
static void test_softmax_exp_accuracy(void **state) {
    (void)state;
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(KANN_KERNEL_F32_SOFTMAX, vs);
    for (int v = 0; v < nv; v++)
        for (int i = -8000; i <= 8000; i++) {
            float t = (float)i * 0.01f;
            arena_used = 0;
            kann_softmax_args a;
            memset(&a, 0, sizeof a);
            a.outer = 1;
            a.axis_len = 2;
            a.inner = 1;
            a.tile = (kann_tile){0, 0, 1, 0};
            a.x = alloc_floats(2);
            a.y = alloc_floats(2);
            at(a.x)[0] = 0.0f;
            at(a.x)[1] = t;
            kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
            vs[v].fn(&a, &ex);
            double want = 1.0 / (1.0 + exp(-(double)t)), got = at(a.y)[1];
            if (!(fabs(got - want) <= 1e-6 * want))
                fail_msg("%s: softmax([0, %g])[1] = %.9g, want %.9g", vs[v].isa, t, got, want);
        }
}

/* Masked attention scores (-1e9, -FLT_MAX, -inf) come out as exactly 0 in every variant, as
 * with libm's expf: not as tiny or subnormal values that would slow the next matmul. */
static void test_softmax_masked_is_zero(void **state) {
    (void)state;
    kernel_variant vs[KANN_MAX_KERNEL_VARIANTS];
    int nv = kernel_variants(KANN_KERNEL_F32_SOFTMAX, vs);
    const float masked[] = {-1e9f, -3.4028235e38f, -__builtin_inff()};
    for (int v = 0; v < nv; v++)
        for (uint32_t len = 1; len <= 40; len++) {
            arena_used = 0;
            kann_softmax_args a;
            memset(&a, 0, sizeof a);
            a.outer = 1;
            a.axis_len = len + 1;
            a.inner = 1;
            a.tile = (kann_tile){0, 0, 1, 0};
            a.x = alloc_floats(len + 1);
            a.y = alloc_floats(len + 1);
            for (uint32_t i = 0; i <= len; i++)
                at(a.x)[i] = i == len / 2 ? 0.5f : masked[i % 3];
            kann_exec ex = {(uint8_t *)arena, (const uint8_t *)arena, NULL, NULL, NULL};
            vs[v].fn(&a, &ex);
            for (uint32_t i = 0; i <= len; i++) {
                float y = at(a.y)[i];
                if (i == len / 2 ? y != 1.0f : y != 0.0f)
                    fail_msg("%s: softmax element %u of %u is %g (input %g)", vs[v].isa, i, len + 1,
                             y, at(a.x)[i]);
            }
        }
}

int main(void) {
    rng_state = 7;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_norm),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_softmax_exp_accuracy),
        cmocka_unit_test(test_softmax_masked_is_zero),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
