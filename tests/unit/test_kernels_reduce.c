/* The reduce, hardmax, cumsum, topk and nll_loss reference kernels against textbook loops on
 * random shapes,
 * each run as three records with complementary (ragged) tiles; their validators on good and
 * hostile arguments. */
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

static uint64_t rng_state = 42;
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

/* Validates, then runs the kernel as tiles [0, a), [a, b), [b, extent). */
static void run_tiled(int kernel, void *args, uint32_t extent) {
    kann_tile *t = args;
    kann_error err;
    uint32_t a = extent ? rng_range(0, extent) : 0, b = extent ? rng_range(a, extent) : 0;
    uint32_t cuts[4] = {0, a, b, extent};
    for (int i = 0; i < 3; i++) {
        t->axis = 0;
        t->begin = cuts[i];
        t->end = cuts[i + 1];
        assert_int_equal(kann_kernels[kernel].validate(args, &bounds, &err), KANN_OK);
        kann_kernels[kernel].ref(args, &exec_ctx);
    }
}

/* ---- reduce -------------------------------------------------------------------------------- */

/* Naive reduction of a dense tensor of the given dims over the dims flagged in reduced. */
static void naive_reduce(const float *x, int rank, const uint32_t *dims, const int *reduced,
                         uint32_t op, int select_last, float *y_f, int64_t *y_i) {
    size_t total = 1, n_out = 1, n_red = 1;
    for (int d = 0; d < rank; d++) {
        total *= dims[d];
        if (reduced[d])
            n_red *= dims[d];
        else
            n_out *= dims[d];
    }
    double *acc = calloc(n_out, sizeof *acc);
    float *best = malloc(n_out * sizeof *best);
    int64_t *best_at = calloc(n_out, sizeof *best_at);
    int64_t *seen = calloc(n_out, sizeof *seen);
    for (size_t o = 0; o < n_out; o++) {
        acc[o] = op == KANN_REDUCE_PROD ? 1.0 : 0.0;
        best[o] = op == KANN_REDUCE_MIN || op == KANN_REDUCE_ARGMIN ? INFINITY : -INFINITY;
    }
    for (size_t e = 0; e < total; e++) {
        size_t rest = e, o = 0, o_mul = 1, r_pos = 0, r_mul = 1;
        for (int d = rank - 1; d >= 0; d--) {
            size_t i = rest % dims[d];
            rest /= dims[d];
            if (reduced[d]) {
                r_pos += i * r_mul;
                r_mul *= dims[d];
            } else {
                o += i * o_mul;
                o_mul *= dims[d];
            }
        }
        float v = x[e];
        switch (op) {
        case KANN_REDUCE_SUM:
        case KANN_REDUCE_MEAN:
        case KANN_REDUCE_LOG_SUM:
            acc[o] += v;
            break;
        case KANN_REDUCE_PROD:
            acc[o] *= v;
            break;
        case KANN_REDUCE_L1:
            acc[o] += fabs(v);
            break;
        case KANN_REDUCE_L2:
        case KANN_REDUCE_SUM_SQUARE:
            acc[o] += (double)v * v;
            break;
        case KANN_REDUCE_LOG_SUM_EXP:
            acc[o] += exp(v);
            break;
        case KANN_REDUCE_MAX:
        case KANN_REDUCE_MIN:
        case KANN_REDUCE_ARGMAX:
        case KANN_REDUCE_ARGMIN: {
            int is_max = op == KANN_REDUCE_MAX || op == KANN_REDUCE_ARGMAX;
            int better = seen[o] == 0 || (is_max ? v > best[o] : v < best[o]) ||
                         (select_last && v == best[o]);
            if (better) {
                best[o] = v;
                best_at[o] = (int64_t)r_pos;
            }
            seen[o] = 1;
            break;
        }
        }
    }
    for (size_t o = 0; o < n_out; o++) {
        double r = acc[o];
        if (op == KANN_REDUCE_MEAN) r /= (double)n_red;
        if (op == KANN_REDUCE_L2) r = sqrt(r);
        if (op == KANN_REDUCE_LOG_SUM || op == KANN_REDUCE_LOG_SUM_EXP) r = log(r);
        if (op == KANN_REDUCE_MAX || op == KANN_REDUCE_MIN) r = best[o];
        if (y_f) y_f[o] = (float)r;
        if (y_i) y_i[o] = best_at[o];
    }
    free(acc);
    free(best);
    free(best_at);
    free(seen);
}

/* The lowering's view: kept and reduced dims of a dense tensor as strided runs (no merging, so
 * the kernel's multi-dim odometers get exercised). */
static void fill_reduce_args(kann_reduce_args *a, int rank, const uint32_t *dims,
                             const int *reduced) {
    uint32_t stride = 1, strides[KANN_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= dims[d];
    }
    a->out_rank = a->red_rank = 0;
    for (int d = 0; d < rank; d++) {
        if (reduced[d]) {
            a->red_dims[a->red_rank] = dims[d];
            a->red_strides[a->red_rank++] = strides[d];
        } else {
            a->out_dims[a->out_rank] = dims[d];
            a->out_strides[a->out_rank++] = strides[d];
        }
    }
    if (!a->out_rank) {
        a->out_dims[0] = 1;
        a->out_rank = 1;
    }
}

static void test_reduce_random(void **state) {
    (void)state;
    for (int iter = 0; iter < 200; iter++) {
        uint32_t op = iter % KANN_REDUCE_COUNT;
        int arg = op == KANN_REDUCE_ARGMAX || op == KANN_REDUCE_ARGMIN;
        int rank = (int)rng_range(1, 5);
        uint32_t dims[KANN_MAX_RANK];
        int reduced[KANN_MAX_RANK] = {0}, n_red = 0;
        size_t total = 1;
        for (int d = 0; d < rank; d++) {
            dims[d] = rng_range(1, 6);
            total *= dims[d];
        }
        if (arg) {
            reduced[rng_range(0, (uint32_t)rank - 1)] = 1;
        } else {
            for (int d = 0; d < rank; d++)
                n_red += reduced[d] = rng_next() % 2;
            if (!n_red) reduced[rng_range(0, (uint32_t)rank - 1)] = 1;
        }
        float *x = arena;
        for (size_t i = 0; i < total; i++) /* products stay near 1; ties for the arg ops */
            x[i] = op == KANN_REDUCE_PROD      ? 0.8f + 0.4f * (rng_float() + 1.0f) / 2.0f
                   : op == KANN_REDUCE_LOG_SUM ? 0.1f + fabsf(rng_float())
                   : arg                       ? (float)rng_range(0, 3)
                                               : rng_float();
        kann_reduce_args a = {0};
        a.op = op;
        a.select_last = arg ? rng_next() % 2 : 0;
        a.x = at(0);
        a.y = at(total + (total & 1)); /* 8-byte aligned for int64 results */
        fill_reduce_args(&a, rank, dims, reduced);
        uint32_t n_out = 1;
        for (uint32_t d = 0; d < a.out_rank; d++)
            n_out *= a.out_dims[d];
        float expect_f[4096];
        int64_t expect_i[4096];
        naive_reduce(x, rank, dims, reduced, op, (int)a.select_last, expect_f, expect_i);
        run_tiled(KANN_KERNEL_F32_REDUCE, &a, n_out);
        for (uint32_t o = 0; o < n_out; o++) {
            if (arg) {
                assert_int_equal(((int64_t *)(void *)(arena + a.y.offset / 4))[o], expect_i[o]);
            } else {
                float got = arena[a.y.offset / 4 + o], want = expect_f[o];
                if (fabsf(got - want) > 1e-4f + 1e-4f * fabsf(want)) {
                    print_error("op %u iter %d output %u: %g != %g\n", op, iter, o, got, want);
                    fail();
                }
            }
        }
    }
}

static void test_reduce_validate_hostile(void **state) {
    (void)state;
    kann_error err;
    kann_reduce_args a = {0};
    a.op = KANN_REDUCE_SUM;
    a.out_rank = a.red_rank = 1;
    a.out_dims[0] = 4;
    a.out_strides[0] = 8;
    a.red_dims[0] = 8;
    a.red_strides[0] = 1;
    a.x = at(0);
    a.y = at(64);
    a.tile.end = 4;
    assert_int_equal(kann_reduce_validate(&a, &bounds, &err), KANN_OK);
    kann_reduce_args bad = a;
    bad.out_strides[0] = 1u << 30; /* x would run past the arena */
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.tile.end = 5;
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.op = KANN_REDUCE_COUNT;
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.op = KANN_REDUCE_ARGMAX;
    bad.red_rank = 2; /* an index runs along one dim only */
    bad.red_dims[1] = 1;
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.op = KANN_REDUCE_ARGMAX;
    bad.y = at(65); /* int64 output misaligned */
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.out_rank = KANN_MAX_RANK + 1;
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad = a;
    bad.y.space = KANN_SPACE_CONST;
    assert_int_equal(kann_reduce_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
}

/* ---- hardmax ------------------------------------------------------------------------------- */

static void test_hardmax_random(void **state) {
    (void)state;
    for (int iter = 0; iter < 50; iter++) {
        kann_softmax_args a = {0};
        a.outer = rng_range(1, 7);
        a.axis_len = rng_range(1, 9);
        a.inner = rng_range(1, 5);
        size_t total = (size_t)a.outer * a.axis_len * a.inner;
        for (size_t i = 0; i < total; i++)
            arena[i] = (float)rng_range(0, 4); /* ties: the first maximum wins */
        a.x = at(0);
        a.y = iter % 2 ? at(0) : at(total); /* in place on odd iterations */
        float x_copy[4096];
        memcpy(x_copy, arena, total * sizeof(float));
        run_tiled(KANN_KERNEL_F32_HARDMAX, &a, a.outer);
        const float *y = arena + a.y.offset / 4;
        for (size_t o = 0; o < a.outer; o++)
            for (size_t i = 0; i < a.inner; i++) {
                size_t best = 0;
                for (size_t k = 1; k < a.axis_len; k++)
                    if (x_copy[(o * a.axis_len + k) * a.inner + i] >
                        x_copy[(o * a.axis_len + best) * a.inner + i])
                        best = k;
                for (size_t k = 0; k < a.axis_len; k++)
                    assert_true(y[(o * a.axis_len + k) * a.inner + i] == (k == best ? 1.0f : 0.0f));
            }
    }
}

/* ---- cumsum -------------------------------------------------------------------------------- */

/* float32 (summed in order, as a running sum rounds), int32 wrapping past 2^31 and int64, every
 * flag combination, in place on odd iterations. */
static void test_cumsum_random(void **state) {
    (void)state;
    const uint32_t dtypes[3] = {KANN_DTYPE_F32, KANN_DTYPE_I32, KANN_DTYPE_I64};
    for (int iter = 0; iter < 120; iter++) {
        kann_cumsum_args a;
        memset(&a, 0, sizeof a);
        a.dtype = dtypes[iter % 3];
        a.outer = rng_range(1, 5);
        a.len = rng_range(1, 40);
        a.inner = rng_range(1, 6);
        a.exclusive = rng_range(0, 1);
        a.reverse = rng_range(0, 1);
        size_t total = (size_t)a.outer * a.len * a.inner, es = a.dtype == KANN_DTYPE_I64 ? 8 : 4;
        uint8_t x_copy[8 * 1600];
        uint8_t *xb = (uint8_t *)arena;
        for (size_t i = 0; i < total; i++) {
            if (a.dtype == KANN_DTYPE_F32)
                ((float *)arena)[i] = rng_float() * 100.0f;
            else if (a.dtype == KANN_DTYPE_I32) /* large: the sums wrap around */
                ((int32_t *)(void *)xb)[i] = (int32_t)(rng_next() ^ (rng_next() << 16));
            else
                ((int64_t *)(void *)xb)[i] = (int64_t)(((uint64_t)rng_next() << 31) ^ rng_next());
        }
        memcpy(x_copy, xb, total * es);
        a.x = at(0);
        a.y = iter % 2 ? at(0) : at(2 * total); /* float offsets: past x for 8-byte elements */
        run_tiled(KANN_KERNEL_CUMSUM, &a, a.outer * a.inner);
        const uint8_t *yb = (const uint8_t *)arena + a.y.offset;
        for (size_t o = 0; o < a.outer; o++)
            for (size_t i = 0; i < a.inner; i++) {
                float fs = 0.0f;
                uint64_t is = 0;
                for (size_t t = 0; t < a.len; t++) {
                    size_t j = a.reverse ? a.len - 1 - t : t, e = (o * a.len + j) * a.inner + i;
                    if (a.dtype == KANN_DTYPE_F32) {
                        float v = ((const float *)(const void *)x_copy)[e];
                        float want = a.exclusive ? fs : fs + v;
                        assert_true(((const float *)(const void *)yb)[e] == want);
                        fs += v;
                    } else if (a.dtype == KANN_DTYPE_I32) {
                        uint64_t v = (uint64_t)(int64_t)((const int32_t *)(const void *)x_copy)[e];
                        uint32_t want = (uint32_t)(a.exclusive ? is : is + v);
                        assert_int_equal((uint32_t)((const int32_t *)(const void *)yb)[e], want);
                        is += v;
                    } else {
                        uint64_t v = (uint64_t)((const int64_t *)(const void *)x_copy)[e];
                        uint64_t want = a.exclusive ? is : is + v;
                        assert_true((uint64_t)((const int64_t *)(const void *)yb)[e] == want);
                        is += v;
                    }
                }
            }
    }
}

/* Refused: other dtypes, unknown flags, x or y past the arena, a tile past the lines. */
static void test_cumsum_validate_hostile(void **state) {
    (void)state;
    kann_cumsum_args good;
    memset(&good, 0, sizeof good);
    good.dtype = KANN_DTYPE_F32;
    good.outer = 3;
    good.len = 5;
    good.inner = 4;
    good.x = at(0);
    good.y = at(100);
    good.tile = (kann_tile){0, 0, 12, 0};
    kann_error err;
    assert_int_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&good, &bounds, &err), KANN_OK);
    kann_cumsum_args bad = good;
    bad.dtype = KANN_DTYPE_U8;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.reverse = 2;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.y = at(ARENA_FLOATS - 59); /* 60 floats do not fit */
    assert_int_not_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.tile.end = 13;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.outer = 0x10000;
    bad.len = 0x10000; /* 2^32 elements */
    assert_int_not_equal(kann_kernels[KANN_KERNEL_CUMSUM].validate(&bad, &bounds, &err), KANN_OK);
}

/* ---- topk ---------------------------------------------------------------------------------- */

/* Against selection by counting: element j of a line ranks at position (number of elements
 * that come before it), where "before" is the better value or an equal value at a lower index;
 * the first k ranks are the output. Values from a small range (many ties), NaNs for float32. */
static void test_topk_random(void **state) {
    (void)state;
    const uint32_t dtypes[3] = {KANN_DTYPE_F32, KANN_DTYPE_I32, KANN_DTYPE_I64};
    for (int iter = 0; iter < 150; iter++) {
        kann_topk_args a;
        memset(&a, 0, sizeof a);
        a.dtype = dtypes[iter % 3];
        a.outer = rng_range(1, 4);
        a.len = rng_range(1, 30);
        a.inner = rng_range(1, 5);
        a.k = rng_range(0, a.len);
        a.largest = rng_range(0, 1);
        size_t total = (size_t)a.outer * a.len * a.inner, out = (size_t)a.outer * a.k * a.inner;
        double xv[600];
        for (size_t e = 0; e < total; e++) {
            int64_t v = (int64_t)rng_range(0, 9) - 4;
            xv[e] = (double)v;
            if (a.dtype == KANN_DTYPE_F32) {
                int nan = rng_range(0, 15) == 0;
                ((float *)arena)[e] = nan ? NAN : (float)v;
                if (nan) xv[e] = NAN;
            } else if (a.dtype == KANN_DTYPE_I32) {
                ((int32_t *)(void *)arena)[e] = (int32_t)v;
            } else {
                ((int64_t *)(void *)arena)[e] = v;
            }
        }
        a.x = at(0);
        a.values = at(2 * total);
        a.indices = at(2 * total + 2 * out + 2);
        run_tiled(KANN_KERNEL_TOPK, &a, a.outer * a.inner);
        const uint8_t *vb = (const uint8_t *)arena + a.values.offset;
        const int64_t *ib = (const int64_t *)(const void *)((const uint8_t *)arena + a.indices.offset);
        for (size_t o = 0; o < a.outer; o++)
            for (size_t i = 0; i < a.inner; i++)
                for (size_t j = 0; j < a.len; j++) {
                    double v = xv[(o * a.len + j) * a.inner + i];
                    size_t rank = 0;
                    for (size_t q = 0; q < a.len; q++) {
                        double w = xv[(o * a.len + q) * a.inner + i];
                        int better = isnan(w) ? 0 : isnan(v) ? 1 : a.largest ? w > v : w < v;
                        int tie_before = q < j && (w == v || (isnan(w) && isnan(v)));
                        rank += better || tie_before;
                    }
                    if (rank >= a.k) continue;
                    size_t slot = (o * a.k + rank) * a.inner + i;
                    assert_int_equal(ib[slot], (int64_t)j);
                    double got = a.dtype == KANN_DTYPE_F32
                                     ? ((const float *)(const void *)vb)[slot]
                                 : a.dtype == KANN_DTYPE_I32
                                     ? ((const int32_t *)(const void *)vb)[slot]
                                     : (double)((const int64_t *)(const void *)vb)[slot];
                    assert_true(got == v || (isnan(got) && isnan(v)));
                }
    }
}

/* Refused: k past the axis, other dtypes, unknown flags, indices past the arena. */
static void test_topk_validate_hostile(void **state) {
    (void)state;
    kann_topk_args good;
    memset(&good, 0, sizeof good);
    good.dtype = KANN_DTYPE_F32;
    good.outer = 2;
    good.len = 10;
    good.inner = 3;
    good.k = 4;
    good.x = at(0);
    good.values = at(100);
    good.indices = at(200);
    good.tile = (kann_tile){0, 0, 6, 0};
    kann_error err;
    assert_int_equal(kann_kernels[KANN_KERNEL_TOPK].validate(&good, &bounds, &err), KANN_OK);
    kann_topk_args bad = good;
    bad.k = 11;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_TOPK].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.dtype = KANN_DTYPE_BOOL;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_TOPK].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.largest = 7;
    assert_int_not_equal(kann_kernels[KANN_KERNEL_TOPK].validate(&bad, &bounds, &err), KANN_OK);
    bad = good;
    bad.indices = at(ARENA_FLOATS - 40); /* 24 int64 = 48 floats */
    assert_int_not_equal(kann_kernels[KANN_KERNEL_TOPK].validate(&bad, &bounds, &err), KANN_OK);
}

/* ---- nll_loss ------------------------------------------------------------------------------ */

static void test_nll_loss_random(void **state) {
    (void)state;
    for (int iter = 0; iter < 60; iter++) {
        kann_nll_loss_args a = {0};
        a.n = rng_range(1, 5);
        a.c = rng_range(1, 6);
        a.inner = rng_range(1, 7);
        a.reduction = iter % 3;
        a.has_ignore = rng_next() % 2;
        a.ignore_index = (int64_t)rng_range(0, 3) - 1;
        uint32_t count = a.n * a.inner, nx = a.n * a.c * a.inner;
        float *x = arena, *w = arena + nx;
        int64_t *t = (int64_t *)(void *)(arena + 2 * 4096);
        for (uint32_t i = 0; i < nx; i++)
            x[i] = rng_float();
        for (uint32_t i = 0; i < a.c; i++)
            w[i] = 0.5f + (rng_float() + 1.0f);
        for (uint32_t i = 0; i < count; i++) /* some targets out of range: ignored, never read */
            t[i] = (int64_t)rng_range(0, a.c + 1) - 1;
        int weighted = rng_next() % 2;
        a.x = at(0);
        a.weight = weighted ? at(nx) : (kann_ref){0};
        a.target = at(2 * 4096);
        a.y = at(4 * 4096);
        double sum = 0.0, wsum = 0.0, expect[4096];
        for (uint32_t e = 0; e < count; e++) {
            int64_t cls = t[e];
            expect[e] = 0.0;
            if ((a.has_ignore && cls == a.ignore_index) || cls < 0 || cls >= (int64_t)a.c) continue;
            double wt = weighted ? w[cls] : 1.0;
            uint32_t b = e / a.inner, i = e % a.inner;
            expect[e] = -x[(b * a.c + (uint32_t)cls) * a.inner + i] * wt;
            sum += expect[e];
            wsum += wt;
        }
        run_tiled(KANN_KERNEL_F32_NLL_LOSS, &a, a.reduction == KANN_LOSS_NONE ? count : 1);
        const float *y = arena + 4 * 4096;
        if (a.reduction == KANN_LOSS_NONE) {
            for (uint32_t e = 0; e < count; e++)
                assert_float_equal(y[e], expect[e], 1e-5);
        } else if (a.reduction == KANN_LOSS_SUM) {
            assert_float_equal(y[0], sum, 1e-4);
        } else if (wsum > 0) {
            assert_float_equal(y[0], sum / wsum, 1e-4);
        }
    }
    kann_error err;
    kann_nll_loss_args bad = {0};
    bad.n = bad.c = bad.inner = 1;
    bad.x = at(0);
    bad.y = at(8);
    bad.target = at(5); /* int64 targets must be 8-byte aligned */
    bad.tile.end = 1;
    assert_int_equal(kann_nll_loss_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
    bad.target = at(4);
    assert_int_equal(kann_nll_loss_validate(&bad, &bounds, &err), KANN_OK);
    bad.reduction = KANN_LOSS_REDUCTION_COUNT;
    assert_int_equal(kann_nll_loss_validate(&bad, &bounds, &err), KANN_E_CORRUPT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reduce_random),
        cmocka_unit_test(test_reduce_validate_hostile),
        cmocka_unit_test(test_hardmax_random),
        cmocka_unit_test(test_cumsum_random),
        cmocka_unit_test(test_cumsum_validate_hostile),
        cmocka_unit_test(test_topk_random),
        cmocka_unit_test(test_topk_validate_hostile),
        cmocka_unit_test(test_nll_loss_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
