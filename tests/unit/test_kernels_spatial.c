/* Spatial kernels (conv_transpose, resize) against textbook loops on random shapes, run as
 * several records with complementary tiles in random order; and their validators on hostile
 * arguments. */
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

/* ---- float spaces addressed by offset ---- */

enum { SPACE_FLOATS = 1 << 18 };
static const float SENTINEL = 1234.5f;
static float *mem[KANN_SPACE_COUNT];
static size_t used[KANN_SPACE_COUNT];
static kann_exec ex;
static kann_bounds bounds;

static int setup(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        mem[s] = aligned_alloc(64, SPACE_FLOATS * sizeof(float));
        if (!mem[s]) return -1;
    }
    ex.arena = (uint8_t *)mem[KANN_SPACE_ARENA];
    ex.consts = (const uint8_t *)mem[KANN_SPACE_CONST];
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++)
        free(mem[s]);
    return 0;
}

static void reset(void) {
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        for (size_t i = 0; i < SPACE_FLOATS; i++)
            mem[s][i] = SENTINEL;
        used[s] = 0;
    }
}

static kann_ref put(uint32_t space, size_t n, float **data) {
    size_t off = (used[space] + 16 + 15) & ~(size_t)15;
    assert_true(off + n + 16 <= SPACE_FLOATS);
    used[space] = off + n;
    bounds.arena_size = used[KANN_SPACE_ARENA] * sizeof(float);
    bounds.const_size = used[KANN_SPACE_CONST] * sizeof(float);
    *data = mem[space] + off;
    return (kann_ref){space, 0, off * sizeof(float)};
}

static kann_ref put_random(uint32_t space, size_t n, float **data) {
    kann_ref r = put(space, n, data);
    for (size_t i = 0; i < n; i++)
        (*data)[i] = rng_float(-1, 1);
    return r;
}

static uint32_t any_space(void) {
    return rng_range(0, 1) ? KANN_SPACE_ARENA : KANN_SPACE_CONST;
}

static void run_tiled(kann_kernel_id id, const void *args, uint32_t extent) {
    const kann_kernel_info *info = &kann_kernels[id];
    uint64_t buf[64];
    assert_true(info->args_size <= sizeof buf);
    uint32_t cuts[6], n = rng_range(1, 5);
    cuts[0] = 0;
    cuts[n] = extent;
    for (uint32_t i = 1; i < n; i++)
        cuts[i] = rng_range(0, extent);
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
            uint32_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    uint32_t first = rng_range(0, n - 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = (first + i) % n;
        memcpy(buf, args, info->args_size);
        kann_tile *t = (kann_tile *)buf;
        t->begin = cuts[k];
        t->end = cuts[k + 1];
        kann_error err = {0};
        if (info->validate(buf, &bounds, &err) != KANN_OK)
            fail_msg("%s: valid arguments rejected: %s", info->name, err.message);
        info->ref(buf, &ex);
    }
}

/* y[0..n) matches expected and nothing after y (up to the next tensor's gap) was written. */
static void check(const float *y, const double *expected, size_t n, const char *what, int c) {
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)y[i] - expected[i]);
        if (!(diff <= 1e-5 * (1.0 + fabs(expected[i]))))
            fail_msg("%s case %d: y[%zu] = %.9g, expected %.9g", what, c, i, (double)y[i],
                     expected[i]);
    }
    for (size_t i = n; i < n + 16; i++)
        if (y[i] != SENTINEL) fail_msg("%s case %d: y[%zu] past the output written", what, c, i);
}

/* ---- conv_transpose ---- */

static void test_conv_transpose(void **state) {
    (void)state;
    rng_state = 11;
    for (int iter = 0; iter < 150; iter++) {
        reset();
        kann_conv_transpose_args a = {0};
        a.n = rng_range(1, 2);
        a.group = rng_range(1, 2);
        a.c_in = a.group * rng_range(1, 3);
        a.c_out = a.group * rng_range(1, 3);
        for (int d = 0; d < 3; d++) {
            int used_dim = d >= (int)rng_range(0, 2);
            a.in[d] = used_dim ? rng_range(1, 5) : 1;
            a.k[d] = used_dim ? rng_range(1, 3) : 1;
            a.stride[d] = used_dim ? rng_range(1, 3) : 1;
            a.dil[d] = used_dim ? rng_range(1, 2) : 1;
            a.pad[d] = used_dim ? rng_range(0, 2) : 0;
            int64_t full = (int64_t)a.stride[d] * (a.in[d] - 1) + (a.k[d] - 1) * a.dil[d] + 1;
            int64_t out = full - a.pad[d] - (int64_t)rng_range(0, 2) + rng_range(0, 1);
            a.out[d] = out < 1 ? 1 : (uint32_t)out;
        }
        if (rng_range(0, 1)) a.act.kind = KANN_ACT_RELU;
        size_t in_sp = (size_t)a.in[0] * a.in[1] * a.in[2];
        size_t out_sp = (size_t)a.out[0] * a.out[1] * a.out[2];
        size_t k_sp = (size_t)a.k[0] * a.k[1] * a.k[2];
        uint32_t mpg = a.c_out / a.group, cpg = a.c_in / a.group;
        float *x, *w, *b = NULL, *y;
        a.x = put_random(any_space(), a.n * a.c_in * in_sp, &x);
        a.w = put_random(any_space(), a.c_in * mpg * k_sp, &w);
        if (rng_range(0, 1)) a.bias = put_random(any_space(), a.c_out, &b);
        size_t ny = a.n * a.c_out * out_sp;
        a.y = put(KANN_SPACE_ARENA, ny, &y);
        double *e = calloc(ny, sizeof *e);
        assert_non_null(e);
        for (size_t p = 0; p < (size_t)a.n * a.c_out; p++)
            for (size_t o = 0; o < out_sp; o++)
                e[p * out_sp + o] = b ? b[p % a.c_out] : 0;
        /* y[o] += x[i] * w[k] wherever o = i * stride - pad + k * dil on all three dims */
        for (uint32_t n = 0; n < a.n; n++)
            for (uint32_t ci = 0; ci < a.c_in; ci++)
                for (uint32_t m = 0; m < mpg; m++)
                    for (size_t i = 0; i < in_sp; i++)
                        for (size_t k = 0; k < k_sp; k++) {
                            int64_t id[3] = {(int64_t)(i / (a.in[1] * a.in[2])),
                                             (int64_t)(i / a.in[2] % a.in[1]),
                                             (int64_t)(i % a.in[2])};
                            int64_t kd[3] = {(int64_t)(k / (a.k[1] * a.k[2])),
                                             (int64_t)(k / a.k[2] % a.k[1]), (int64_t)(k % a.k[2])};
                            int64_t o[3];
                            int inside = 1;
                            for (int d = 0; d < 3; d++) {
                                o[d] = id[d] * a.stride[d] - a.pad[d] + kd[d] * a.dil[d];
                                inside &= o[d] >= 0 && o[d] < a.out[d];
                            }
                            if (!inside) continue;
                            size_t mo = (ci / cpg) * mpg + m;
                            size_t oi = (size_t)((o[0] * a.out[1] + o[1]) * a.out[2] + o[2]);
                            e[(n * a.c_out + mo) * out_sp + oi] +=
                                (double)x[(n * a.c_in + ci) * in_sp + i] *
                                w[(ci * mpg + m) * k_sp + k];
                        }
        if (a.act.kind == KANN_ACT_RELU)
            for (size_t i = 0; i < ny; i++)
                e[i] = e[i] < 0 ? 0 : e[i];
        run_tiled(KANN_KERNEL_F32_CONV_TRANSPOSE, &a, a.n * a.c_out);
        check(y, e, ny, "conv_transpose", iter);
        free(e);
    }
}

/* ---- resize ---- */

static kann_ref random_table(uint32_t rows, uint32_t taps, uint32_t n_in, int with_outside,
                             kann_resize_tap **table) {
    float *t;
    kann_ref r = put(any_space(), (size_t)rows * taps * 2, &t);
    *table = (kann_resize_tap *)(void *)t;
    for (uint32_t i = 0; i < rows * taps; i++) {
        int32_t index = (int32_t)rng_range(0, n_in - 1);
        if (with_outside && rng_range(0, 9) == 0) index = rng_range(0, 1) ? -1 : (int32_t)n_in;
        (*table)[i] = (kann_resize_tap){index, rng_float(-1, 1)};
    }
    return r;
}

/* A table as interpolating resizes build it: the taps of output o around o * n_in / n_out,
 * consecutive, clamped to the input (so repeated at its ends), random weights. */
static kann_ref sliding_table(uint32_t rows, uint32_t taps, uint32_t n_in,
                              kann_resize_tap **table) {
    float *t;
    kann_ref r = put(any_space(), (size_t)rows * taps * 2, &t);
    *table = (kann_resize_tap *)(void *)t;
    for (uint32_t o = 0; o < rows; o++)
        for (uint32_t i = 0; i < taps; i++) {
            int64_t index = (int64_t)o * n_in / rows + i - (taps - 1) / 2;
            index = index < 0 ? 0 : index >= n_in ? n_in - 1 : index;
            (*table)[o * taps + i] = (kann_resize_tap){(int32_t)index, rng_float(-1, 1)};
        }
    return r;
}

static void test_resize(void **state) {
    (void)state;
    rng_state = 12;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        kann_resize_args a = {0};
        /* a third upsample with sliding taps (rows meet several times, more than the kernel
         * keeps at once), the rest random tables over small maps */
        int sliding = iter % 3 == 0;
        a.planes = rng_range(1, 4);
        a.h_in = sliding ? rng_range(1, 12) : rng_range(1, 5);
        a.w_in = sliding ? rng_range(1, 12) : rng_range(1, 5);
        a.h_out = sliding ? a.h_in * rng_range(1, 4) + rng_range(0, 3) : rng_range(1, 6);
        a.w_out = sliding ? rng_range(1, 40) : rng_range(1, 6);
        a.taps_h = rng_range(1, 4);
        a.taps_w = rng_range(1, 4);
        a.extrapolation = rng_float(-3, 3);
        int outside = rng_range(0, 1);
        float *x, *y;
        kann_resize_tap *th, *tw;
        a.x = put_random(any_space(), (size_t)a.planes * a.h_in * a.w_in, &x);
        if (sliding) {
            a.table_h = sliding_table(a.h_out, a.taps_h, a.h_in, &th);
            a.table_w = outside ? random_table(a.w_out, a.taps_w, a.w_in, 1, &tw)
                                : sliding_table(a.w_out, a.taps_w, a.w_in, &tw);
        } else {
            a.table_h = random_table(a.h_out, a.taps_h, a.h_in, outside, &th);
            a.table_w = random_table(a.w_out, a.taps_w, a.w_in, outside, &tw);
        }
        size_t ny = (size_t)a.planes * a.h_out * a.w_out;
        a.y = put(KANN_SPACE_ARENA, ny, &y);
        double *e = calloc(ny, sizeof *e);
        assert_non_null(e);
        for (uint32_t p = 0; p < a.planes; p++)
            for (uint32_t oh = 0; oh < a.h_out; oh++)
                for (uint32_t ow = 0; ow < a.w_out; ow++) {
                    double acc = 0;
                    int out = 0;
                    for (uint32_t i = 0; i < a.taps_h; i++)
                        for (uint32_t j = 0; j < a.taps_w; j++) {
                            kann_resize_tap h = th[oh * a.taps_h + i], w = tw[ow * a.taps_w + j];
                            if (h.index < 0 || h.index >= (int32_t)a.h_in || w.index < 0 ||
                                w.index >= (int32_t)a.w_in) {
                                out = 1;
                                continue;
                            }
                            acc += (double)h.weight * w.weight *
                                   x[((size_t)p * a.h_in + h.index) * a.w_in + w.index];
                        }
                    e[((size_t)p * a.h_out + oh) * a.w_out + ow] = out ? a.extrapolation : acc;
                }
        run_tiled(KANN_KERNEL_F32_RESIZE, &a, a.planes);
        check(y, e, ny, "resize", iter);
        free(e);
    }
}

/* ---- conv_nd, pool_nd ---- */

/* Random 3-D window geometry; out from in, kernel, stride, dilation and both pads. */
static void random_window(uint32_t *in, uint32_t *out, uint32_t *k, uint32_t *stride, uint32_t *dil,
                          uint32_t *pad_b, uint32_t *pad_e) {
    for (int d = 0; d < 3; d++) {
        int used_dim = d >= (int)rng_range(0, 2);
        in[d] = used_dim ? rng_range(1, 6) : 1;
        k[d] = used_dim ? rng_range(1, 3) : 1;
        stride[d] = used_dim ? rng_range(1, 2) : 1;
        dil[d] = used_dim ? rng_range(1, 2) : 1;
        pad_b[d] = used_dim ? rng_range(0, 1) : 0;
        pad_e[d] = used_dim ? rng_range(0, 1) : 0;
        int64_t span = (int64_t)in[d] + pad_b[d] + pad_e[d] - (int64_t)(k[d] - 1) * dil[d] - 1;
        if (span < 0) pad_e[d] += (uint32_t)-span, span = 0;
        out[d] = (uint32_t)(span / stride[d] + 1);
    }
}

static void test_conv_nd(void **state) {
    (void)state;
    rng_state = 13;
    for (int iter = 0; iter < 150; iter++) {
        reset();
        kann_conv_nd_args a = {0};
        uint32_t pad_e[3];
        a.n = rng_range(1, 2);
        a.group = rng_range(1, 2);
        a.c_in = a.group * rng_range(1, 3);
        a.c_out = a.group * rng_range(1, 3);
        random_window(a.in, a.out, a.k, a.stride, a.dil, a.pad, pad_e);
        if (rng_range(0, 1)) a.act.kind = KANN_ACT_RELU;
        size_t in_sp = (size_t)a.in[0] * a.in[1] * a.in[2];
        size_t out_sp = (size_t)a.out[0] * a.out[1] * a.out[2];
        size_t k_sp = (size_t)a.k[0] * a.k[1] * a.k[2];
        uint32_t cpg = a.c_in / a.group, mpg = a.c_out / a.group;
        float *x, *w, *b = NULL, *y;
        a.x = put_random(any_space(), a.n * a.c_in * in_sp, &x);
        a.w = put_random(any_space(), a.c_out * cpg * k_sp, &w);
        if (rng_range(0, 1)) a.bias = put_random(any_space(), a.c_out, &b);
        size_t ny = a.n * a.c_out * out_sp;
        a.y = put(KANN_SPACE_ARENA, ny, &y);
        double *e = calloc(ny, sizeof *e);
        assert_non_null(e);
        for (size_t p = 0; p < (size_t)a.n * a.c_out; p++)
            for (size_t o = 0; o < out_sp; o++) {
                size_t n = p / a.c_out, m = p % a.c_out;
                int64_t od[3] = {(int64_t)(o / (a.out[1] * a.out[2])),
                                 (int64_t)(o / a.out[2] % a.out[1]), (int64_t)(o % a.out[2])};
                double acc = b ? b[m] : 0;
                for (size_t c = 0; c < cpg; c++)
                    for (size_t k = 0; k < k_sp; k++) {
                        int64_t kd[3] = {(int64_t)(k / (a.k[1] * a.k[2])),
                                         (int64_t)(k / a.k[2] % a.k[1]), (int64_t)(k % a.k[2])};
                        int64_t i[3];
                        int inside = 1;
                        for (int d = 0; d < 3; d++) {
                            i[d] = od[d] * a.stride[d] - a.pad[d] + kd[d] * a.dil[d];
                            inside &= i[d] >= 0 && i[d] < a.in[d];
                        }
                        if (!inside) continue;
                        size_t ci = (m / mpg) * cpg + c;
                        acc += (double)x[(n * a.c_in + ci) * in_sp +
                                         (size_t)((i[0] * a.in[1] + i[1]) * a.in[2] + i[2])] *
                               w[(m * cpg + c) * k_sp + k];
                    }
                e[p * out_sp + o] = a.act.kind == KANN_ACT_RELU && acc < 0 ? 0 : acc;
            }
        run_tiled(KANN_KERNEL_F32_CONV_ND, &a, a.n * a.c_out);
        check(y, e, ny, "conv_nd", iter);
        free(e);
    }
}

static void test_pool_nd(void **state) {
    (void)state;
    rng_state = 14;
    for (int iter = 0; iter < 200; iter++) {
        reset();
        kann_pool_nd_args a = {0};
        a.kind = rng_range(0, 1) ? KANN_POOL_MAX : KANN_POOL_AVG;
        a.count_include_pad = a.kind == KANN_POOL_AVG ? rng_range(0, 1) : 0;
        a.storage_order = rng_range(0, 1);
        a.planes = rng_range(1, 4);
        random_window(a.in, a.out, a.k, a.stride, a.dil, a.pad_begin, a.pad_end);
        size_t in_sp = (size_t)a.in[0] * a.in[1] * a.in[2];
        size_t out_sp = (size_t)a.out[0] * a.out[1] * a.out[2];
        float *x, *y, *ind = NULL;
        a.x = put_random(any_space(), a.planes * in_sp, &x);
        size_t ny = a.planes * out_sp;
        a.y = put(KANN_SPACE_ARENA, ny, &y);
        int with_indices = a.kind == KANN_POOL_MAX && rng_range(0, 1);
        if (with_indices) a.indices = put(KANN_SPACE_ARENA, 2 * ny, &ind);
        double *e = calloc(ny, sizeof *e);
        int64_t *ei = calloc(ny, sizeof *ei);
        assert_true(e && ei);
        for (size_t p = 0; p < a.planes; p++)
            for (size_t o = 0; o < out_sp; o++) {
                int64_t od[3] = {(int64_t)(o / (a.out[1] * a.out[2])),
                                 (int64_t)(o / a.out[2] % a.out[1]), (int64_t)(o % a.out[2])};
                double acc = a.kind == KANN_POOL_MAX ? -INFINITY : 0;
                int64_t best = -1, counted = 0, inside_n = 0;
                for (uint32_t k0 = 0; k0 < a.k[0]; k0++)
                    for (uint32_t k1 = 0; k1 < a.k[1]; k1++)
                        for (uint32_t k2 = 0; k2 < a.k[2]; k2++) {
                            uint32_t kd[3] = {k0, k1, k2};
                            int64_t i[3];
                            int inside = 1, in_padded = 1;
                            for (int d = 0; d < 3; d++) {
                                i[d] = od[d] * a.stride[d] - a.pad_begin[d] + kd[d] * a.dil[d];
                                inside &= i[d] >= 0 && i[d] < a.in[d];
                                in_padded &= i[d] >= -(int64_t)a.pad_begin[d] &&
                                             i[d] < (int64_t)a.in[d] + a.pad_end[d];
                            }
                            counted += in_padded;
                            if (!inside) continue;
                            inside_n++;
                            int64_t flat = (i[0] * a.in[1] + i[1]) * a.in[2] + i[2];
                            double v = x[p * in_sp + (size_t)flat];
                            if (a.kind == KANN_POOL_AVG) {
                                acc += v;
                            } else if (v > acc || best < 0) {
                                acc = v;
                                best = a.storage_order ? i[0] + (int64_t)a.in[0] *
                                                                    (i[1] + (int64_t)a.in[1] * i[2])
                                                       : flat;
                            }
                        }
                if (a.kind == KANN_POOL_AVG)
                    acc /= (double)(a.count_include_pad ? counted : inside_n);
                e[p * out_sp + o] = acc;
                ei[p * out_sp + o] = best < 0 ? 0 : (int64_t)(p * in_sp) + best;
            }
        run_tiled(KANN_KERNEL_F32_POOL_ND, &a, a.planes);
        for (size_t i = 0; i < ny; i++) {
            double diff = fabs((double)y[i] - e[i]);
            if ((double)y[i] != e[i] && !(diff <= 1e-5 * (1.0 + fabs(e[i]))) &&
                !(isnan(e[i]) && isnan(y[i])))
                fail_msg("pool_nd case %d: y[%zu] = %.9g, expected %.9g", iter, i, (double)y[i],
                         e[i]);
            int64_t got;
            if (with_indices && (memcpy(&got, ind + 2 * i, 8), got != ei[i]))
                fail_msg("pool_nd case %d: index %zu = %lld, expected %lld", iter, i,
                         (long long)got, (long long)ei[i]);
        }
        free(e);
        free(ei);
    }
}

static void expect_rejected(kann_kernel_id id, const void *args, const char *what) {
    kann_error err = {0};
    if (kann_kernels[id].validate(args, &bounds, &err) == KANN_OK)
        fail_msg("%s: %s accepted", kann_kernels[id].name, what);
}

static void test_validators(void **state) {
    (void)state;
    reset();
    float *p;
    kann_conv_transpose_args c = {0};
    c.n = 1, c.c_in = 2, c.c_out = 2, c.group = 1;
    for (int d = 0; d < 3; d++)
        c.in[d] = c.out[d] = c.k[d] = c.stride[d] = c.dil[d] = 1;
    c.x = put(KANN_SPACE_ARENA, 2, &p);
    c.w = put(KANN_SPACE_CONST, 4, &p);
    c.y = put(KANN_SPACE_ARENA, 2, &p);
    c.tile = (kann_tile){0, 0, 2, 0};
    kann_error err = {0};
    assert_int_equal(kann_kernels[KANN_KERNEL_F32_CONV_TRANSPOSE].validate(&c, &bounds, &err),
                     KANN_OK);
    kann_conv_transpose_args b = c;
    b.group = 3;
    expect_rejected(KANN_KERNEL_F32_CONV_TRANSPOSE, &b, "a group not dividing the channels");
    b = c, b.stride[1] = 0;
    expect_rejected(KANN_KERNEL_F32_CONV_TRANSPOSE, &b, "stride 0");
    b = c, b.out[2] = 2;
    expect_rejected(KANN_KERNEL_F32_CONV_TRANSPOSE, &b, "y past the arena");
    b = c, b.k[0] = 2;
    expect_rejected(KANN_KERNEL_F32_CONV_TRANSPOSE, &b, "weights past the constants");
    b = c, b.stride[0] = 0xffffffffu, b.in[0] = 0xffffffffu, b.dil[0] = 0xffffffffu;
    expect_rejected(KANN_KERNEL_F32_CONV_TRANSPOSE, &b, "coordinates too large");

    kann_resize_args r = {0};
    r.planes = 1, r.h_in = r.w_in = r.h_out = r.w_out = 2, r.taps_h = r.taps_w = 1;
    r.x = put(KANN_SPACE_ARENA, 4, &p);
    r.table_h = put(KANN_SPACE_CONST, 4, &p);
    r.table_w = put(KANN_SPACE_CONST, 4, &p);
    r.y = put(KANN_SPACE_ARENA, 4, &p);
    r.tile = (kann_tile){0, 0, 1, 0};
    assert_int_equal(kann_kernels[KANN_KERNEL_F32_RESIZE].validate(&r, &bounds, &err), KANN_OK);
    kann_resize_args rb = r;
    rb.taps_w = 0;
    expect_rejected(KANN_KERNEL_F32_RESIZE, &rb, "zero taps");
    rb = r, rb.taps_w = 2;
    expect_rejected(KANN_KERNEL_F32_RESIZE, &rb, "a table past its buffer");
    rb = r, rb.tile.end = 2;
    expect_rejected(KANN_KERNEL_F32_RESIZE, &rb, "a tile past the planes");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_transpose), cmocka_unit_test(test_resize),
        cmocka_unit_test(test_conv_nd),        cmocka_unit_test(test_pool_nd),
        cmocka_unit_test(test_validators),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
