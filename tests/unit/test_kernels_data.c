/* Data-movement kernels (strided_copy, gather, gather_elements, trilu, pad) against naive loops
 * on random shapes and element sizes, run as several records with complementary tiles in random
 * order; and their validators on hostile arguments. */
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

/* ---- fixed-seed random numbers ---- */

/* ---- two byte spaces addressed by offset; unused bytes hold a sentinel ---- */

enum { SPACE_BYTES = 1 << 20, SENTINEL = 0xA5 };
static uint8_t *mem[KANN_SPACE_COUNT];
static size_t used[KANN_SPACE_COUNT];
static kann_exec ex;
static kann_bounds bounds;

static int setup(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        mem[s] = aligned_alloc(64, SPACE_BYTES);
        if (!mem[s]) return -1;
    }
    ex.arena = mem[KANN_SPACE_ARENA];
    ex.consts = mem[KANN_SPACE_CONST];
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
        memset(mem[s], SENTINEL, SPACE_BYTES);
        used[s] = 0;
    }
}

/* n bytes in a space (64-byte aligned, a gap before); bounds end right after the last one. */
static kann_ref put(uint32_t space, size_t n, uint8_t **data) {
    size_t off = (used[space] + 64 + 63) & ~(size_t)63;
    assert_true(off + n + 64 <= SPACE_BYTES);
    used[space] = off + n;
    bounds.arena_size = used[KANN_SPACE_ARENA];
    bounds.const_size = used[KANN_SPACE_CONST];
    *data = mem[space] + off;
    return (kann_ref){space, 0, off};
}

static kann_ref put_random(uint32_t space, size_t n, uint8_t **data) {
    kann_ref r = put(space, n, data);
    for (size_t i = 0; i < n; i++)
        (*data)[i] = (uint8_t)rng_next();
    return r;
}

static uint32_t any_space(void) {
    return rng_range(0, 1) ? KANN_SPACE_ARENA : KANN_SPACE_CONST;
}

static uint32_t any_elem_size(void) {
    static const uint32_t sizes[] = {1, 2, 4, 8};
    return sizes[rng_range(0, 3)];
}

/* Runs args over [0, extent) as 1 to 5 complementary tiles in random order, each validated. */
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

/* Every arena byte outside [y, y + n) still holds what it held before (snapshot). */
static void check_untouched(const uint8_t *snapshot, const uint8_t *y, size_t n) {
    size_t lo = (size_t)(y - mem[KANN_SPACE_ARENA]), hi = lo + n;
    for (size_t i = 0; i < SPACE_BYTES; i++)
        if ((i < lo || i >= hi) && mem[KANN_SPACE_ARENA][i] != snapshot[i])
            fail_msg("arena byte %zu outside the output was written", i);
}

static uint8_t *snapshot(void) {
    uint8_t *s = malloc(SPACE_BYTES);
    assert_non_null(s);
    memcpy(s, mem[KANN_SPACE_ARENA], SPACE_BYTES);
    return s;
}

/* ---- strided_copy ---- */

static void test_strided_copy(void **state) {
    (void)state;
    rng_state = 1;
    for (int iter = 0; iter < 400; iter++) {
        reset();
        kann_strided_copy_args a = {0};
        uint32_t es = any_elem_size(), rank = rng_range(1, KANN_MAX_RANK);
        a.elem_size = es;
        a.rank = rank;
        /* x: a dense source of larger dims, read with permuted, flipped or zero strides */
        int64_t src_dims[KANN_MAX_RANK], src_strides[KANN_MAX_RANK], s = 1;
        uint64_t count = 1;
        for (uint32_t d = 0; d < rank; d++) {
            a.dims[d] = rng_range(1, 5);
            if (rng_range(0, 15) == 0) a.dims[d] = 0;
            src_dims[d] = a.dims[d] + rng_range(0, 2);
            count *= a.dims[d];
        }
        for (uint32_t d = rank; d-- > 0;) {
            src_strides[d] = s;
            s *= src_dims[d];
        }
        uint32_t perm[KANN_MAX_RANK];
        for (uint32_t d = 0; d < rank; d++)
            perm[d] = d;
        for (uint32_t d = rank; d-- > 1;) {
            uint32_t j = rng_range(0, d), t = perm[d];
            perm[d] = perm[j];
            perm[j] = t;
        }
        int64_t base = 0;
        for (uint32_t d = 0; d < rank; d++) {
            /* the view's dim d walks the source dim perm[d]; clamp extents so it fits */
            uint32_t sd = perm[d];
            if (a.dims[d] > src_dims[sd]) a.dims[d] = (uint32_t)src_dims[sd];
            int mode = (int)rng_range(0, 5);
            if (mode == 0) {
                a.x_strides[d] = 0; /* broadcast */
            } else if (mode == 1 && a.dims[d] > 0) {
                a.x_strides[d] = -src_strides[sd]; /* reversed */
                base += (int64_t)(a.dims[d] - 1) * src_strides[sd];
            } else {
                a.x_strides[d] = src_strides[sd];
            }
        }
        count = 1;
        for (uint32_t d = 0; d < rank; d++)
            count *= a.dims[d];
        a.x_base = base;
        uint8_t *x, *y;
        a.x = put_random(any_space(), (size_t)s * es, &x);
        /* y: dense, or a slice of a bigger buffer (rows padded) */
        uint32_t pad = rng_range(0, 2);
        int64_t ys = 1;
        for (uint32_t d = rank; d-- > 0;) {
            a.y_strides[d] = ys;
            ys *= a.dims[d] + (d == rank - 1 ? pad : 0);
        }
        a.y_base = rng_range(0, 1);
        size_t y_bytes = (size_t)(ys + a.y_base) * es;
        a.y = put(KANN_SPACE_ARENA, y_bytes ? y_bytes : es, &y);
        uint8_t *expect = malloc(y_bytes + es);
        assert_non_null(expect);
        memcpy(expect, y, y_bytes);
        for (uint64_t e = 0; e < count; e++) {
            uint64_t f = e;
            int64_t xo = a.x_base, yo = a.y_base;
            for (uint32_t d = rank; d-- > 0;) {
                uint64_t i = f % a.dims[d];
                f /= a.dims[d];
                xo += (int64_t)i * a.x_strides[d];
                yo += (int64_t)i * a.y_strides[d];
            }
            memcpy(expect + yo * es, x + xo * es, es);
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_STRIDED_COPY, &a, (uint32_t)count);
        check_untouched(snap, y, y_bytes);
        if (memcmp(y, expect, y_bytes)) fail_msg("strided_copy case %d differs", iter);
        free(snap);
        free(expect);
    }
}

/* ---- gather, gather_elements ---- */

static void put_index(uint8_t *p, uint32_t size, int64_t v) {
    if (size == 4) {
        int32_t w = (int32_t)v;
        memcpy(p, &w, 4);
    } else {
        memcpy(p, &v, 8);
    }
}

/* A random index for an axis of length len: mostly valid (negative too), sometimes out. */
static int64_t random_index(uint32_t len) {
    int64_t j = (int64_t)rng_range(0, len ? len - 1 : 0);
    switch (rng_range(0, 7)) {
    case 0:
        return (int64_t)len + rng_range(0, 3); /* past the end */
    case 1:
        return -(int64_t)len - 1 - rng_range(0, 3); /* before the start */
    case 2:
    case 3:
        return j - (int64_t)len; /* negative, valid */
    default:
        return j;
    }
}

static void test_gather(void **state) {
    (void)state;
    rng_state = 2;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        kann_gather_args a = {0};
        a.elem_size = any_elem_size();
        a.idx_size = rng_range(0, 1) ? 4 : 8;
        a.outer = rng_range(1, 4);
        a.axis_len = rng_range(1, 6);
        a.n_indices = rng_range(0, 7);
        a.inner = rng_range(1, 5);
        size_t row = (size_t)a.inner * a.elem_size, rows = (size_t)a.outer * a.n_indices;
        uint8_t *x, *idx, *y;
        a.x = put_random(any_space(), a.outer * a.axis_len * row, &x);
        a.idx = put(any_space(), a.n_indices * a.idx_size + 1, &idx);
        int64_t js[16];
        for (uint32_t k = 0; k < a.n_indices; k++) {
            js[k] = random_index(a.axis_len);
            put_index(idx + k * a.idx_size, a.idx_size, js[k]);
        }
        a.y = put(KANN_SPACE_ARENA, rows * row + 1, &y);
        uint8_t *expect = calloc(rows * row + 1, 1);
        assert_non_null(expect);
        for (size_t r = 0; r < rows; r++) {
            size_t o = r / a.n_indices;
            int64_t j = js[r % a.n_indices];
            if (j < 0) j += a.axis_len;
            if (j >= 0 && j < (int64_t)a.axis_len)
                memcpy(expect + r * row, x + (o * a.axis_len + (size_t)j) * row, row);
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_GATHER, &a, (uint32_t)rows);
        check_untouched(snap, y, rows * row);
        if (memcmp(y, expect, rows * row)) fail_msg("gather case %d differs", iter);
        free(snap);
        free(expect);
    }
}

static void test_gather_elements(void **state) {
    (void)state;
    rng_state = 3;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        kann_gather_elements_args a = {0};
        a.elem_size = any_elem_size();
        a.idx_size = rng_range(0, 1) ? 4 : 8;
        a.rank = rng_range(1, 4);
        a.axis = rng_range(0, a.rank - 1);
        uint32_t x_dims[KANN_MAX_RANK], count = 1, x_count = 1;
        for (uint32_t d = 0; d < a.rank; d++) {
            x_dims[d] = rng_range(1, 4);
            a.dims[d] = d == a.axis ? rng_range(1, 5) : rng_range(1, x_dims[d]);
            count *= a.dims[d];
        }
        for (uint32_t d = a.rank; d-- > 0;) {
            a.x_strides[d] = x_count;
            x_count *= x_dims[d];
        }
        a.axis_len = x_dims[a.axis];
        uint32_t es = a.elem_size;
        uint8_t *x, *idx, *y;
        a.x = put_random(any_space(), x_count * es, &x);
        a.idx = put(any_space(), count * a.idx_size, &idx);
        a.y = put(KANN_SPACE_ARENA, count * es, &y);
        uint8_t *expect = calloc(count * es + 1, 1);
        assert_non_null(expect);
        for (uint32_t e = 0; e < count; e++) {
            int64_t j = random_index(a.axis_len);
            put_index(idx + e * a.idx_size, a.idx_size, j);
            if (j < 0) j += a.axis_len;
            if (j < 0 || j >= (int64_t)a.axis_len) continue;
            uint32_t f = e, off = 0;
            for (uint32_t d = a.rank; d-- > 0;) {
                uint32_t i = f % a.dims[d];
                f /= a.dims[d];
                off += (d == a.axis ? (uint32_t)j : i) * a.x_strides[d];
            }
            memcpy(expect + e * es, x + off * es, es);
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_GATHER_ELEMENTS, &a, count);
        check_untouched(snap, y, count * es);
        if (memcmp(y, expect, count * es)) fail_msg("gather_elements case %d differs", iter);
        free(snap);
        free(expect);
    }
}

/* ---- trilu, pad ---- */

static void test_trilu(void **state) {
    (void)state;
    rng_state = 4;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        kann_trilu_args a = {0};
        a.elem_size = any_elem_size();
        a.upper = rng_range(0, 1);
        a.batch = rng_range(1, 3);
        a.rows = rng_range(1, 6);
        a.cols = rng_range(1, 6);
        int64_t k = (int64_t)rng_range(0, 16) - 8;
        if (rng_range(0, 9) == 0) k = rng_range(0, 1) ? INT64_MAX : INT64_MIN;
        uint8_t *x, *y, *kp;
        size_t es = a.elem_size, n = (size_t)a.batch * a.rows * a.cols;
        a.x = put_random(any_space(), n * es, &x);
        if (rng_range(0, 1)) {
            a.k_ref = put(any_space(), 8, &kp);
            memcpy(kp, &k, 8);
            a.k = 12345; /* ignored when k_ref is present */
        } else {
            a.k = k;
        }
        a.y = put(KANN_SPACE_ARENA, n * es, &y);
        uint8_t *expect = calloc(n * es, 1);
        assert_non_null(expect);
        for (size_t e = 0; e < n; e++) {
            int64_t i = (int64_t)(e / a.cols % a.rows), j = (int64_t)(e % a.cols);
            /* matrices are at most 6x6: clamping k changes nothing and avoids overflow */
            int64_t kk = k < -100 ? -100 : k > 100 ? 100 : k;
            int keep = a.upper ? j - i >= kk : j - i <= kk;
            if (keep) memcpy(expect + e * es, x + e * es, es);
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_TRILU, &a, a.batch * a.rows);
        check_untouched(snap, y, n * es);
        if (memcmp(y, expect, n * es))
            fail_msg("trilu case %d (k %lld) differs", iter, (long long)k);
        free(snap);
        free(expect);
    }
}

static int64_t naive_source(int64_t c, int64_t n, uint32_t mode) {
    if (c >= 0 && c < n) return c;
    if (mode == KANN_PAD_CONSTANT) return -1;
    if (mode == KANN_PAD_EDGE) return c < 0 ? 0 : n - 1;
    if (mode == KANN_PAD_WRAP) return ((c % n) + n) % n;
    /* reflect, one bounce at a time */
    if (n == 1) return 0;
    while (c < 0 || c >= n)
        c = c < 0 ? -c : 2 * (n - 1) - c;
    return c;
}

static void test_pad(void **state) {
    (void)state;
    rng_state = 5;
    for (int iter = 0; iter < 400; iter++) {
        reset();
        kann_pad_args a = {0};
        a.elem_size = any_elem_size();
        a.rank = rng_range(1, 4);
        a.mode = rng_range(0, KANN_PAD_COUNT - 1);
        uint32_t count = 1, x_count = 1;
        for (uint32_t d = 0; d < a.rank; d++) {
            a.x_dims[d] = rng_range(1, 4);
            int64_t b = (int64_t)rng_range(0, 4) - 1, e = (int64_t)rng_range(0, 4) - 1;
            if (a.x_dims[d] + b + e < 0) b = e = 0;
            if (a.mode == KANN_PAD_CONSTANT && rng_range(0, 9) == 0) a.x_dims[d] = 0, b = 1, e = 0;
            a.pad_begin[d] = b;
            a.dims[d] = (uint32_t)(a.x_dims[d] + b + e);
            count *= a.dims[d];
            x_count *= a.x_dims[d];
        }
        a.value = rng_next();
        size_t es = a.elem_size;
        uint8_t *x, *y;
        a.x = put_random(any_space(), x_count * es, &x);
        a.y = put(KANN_SPACE_ARENA, count * es, &y);
        uint8_t *expect = calloc(count * es + 1, 1);
        assert_non_null(expect);
        for (uint32_t e = 0; e < count; e++) {
            uint32_t f = e;
            int64_t off = 0, stride = 1;
            int outside = 0;
            for (uint32_t d = a.rank; d-- > 0;) {
                int64_t i = f % a.dims[d];
                f /= a.dims[d];
                int64_t c = naive_source(i - a.pad_begin[d], a.x_dims[d], a.mode);
                if (c < 0) outside = 1;
                off += c * stride;
                stride *= a.x_dims[d];
            }
            memcpy(expect + e * es, outside ? (const uint8_t *)&a.value : x + off * es, es);
        }
        uint32_t rows = count / (a.dims[a.rank - 1] ? a.dims[a.rank - 1] : 1);
        if (a.dims[a.rank - 1] == 0) {
            rows = 1;
            for (uint32_t d = 0; d + 1 < a.rank; d++)
                rows *= a.dims[d];
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_PAD, &a, rows);
        check_untouched(snap, y, count * es);
        if (memcmp(y, expect, count * es)) fail_msg("pad case %d (mode %u) differs", iter, a.mode);
        free(snap);
        free(expect);
    }
}

/* ---- scatter_elements, scatter_nd, gather_nd ---- */

static float combine_f(float a, float b, uint32_t r) {
    switch (r) {
    case KANN_SCATTER_ADD:
        return a + b;
    case KANN_SCATTER_MUL:
        return a * b;
    case KANN_SCATTER_MAX:
        return b > a ? b : a;
    case KANN_SCATTER_MIN:
        return b < a ? b : a;
    default:
        return b;
    }
}

static void test_scatter_elements(void **state) {
    (void)state;
    rng_state = 6;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        kann_scatter_elements_args a = {0};
        a.reduction = rng_range(0, KANN_SCATTER_COUNT - 1);
        a.elem_size = a.reduction ? 4 : any_elem_size();
        a.idx_size = rng_range(0, 1) ? 4 : 8;
        a.rank = rng_range(1, 3);
        a.axis = rng_range(0, a.rank - 1);
        uint32_t y_dims[KANN_MAX_RANK], count = 1, y_count = 1, es = a.elem_size;
        for (uint32_t d = 0; d < a.rank; d++) {
            y_dims[d] = rng_range(1, 4);
            a.dims[d] = d == a.axis ? rng_range(1, 6) : rng_range(1, y_dims[d]);
            count *= a.dims[d];
        }
        for (uint32_t d = a.rank; d-- > 0;) {
            a.y_strides[d] = y_count;
            y_count *= y_dims[d];
        }
        a.axis_len = y_dims[a.axis];
        uint8_t *idx, *upd, *y;
        a.idx = put(any_space(), count * a.idx_size, &idx);
        a.updates = put(any_space(), count * es, &upd);
        a.y = put(KANN_SPACE_ARENA, y_count * es, &y);
        for (uint32_t i = 0; i < count * es; i += 4) { /* small floats: exact sums */
            float v = (float)((int)rng_range(0, 8) - 4);
            memcpy(upd + i, &v, es < 4 ? es : 4);
            if (es == 8) memcpy(upd + i + 4, &v, 4);
        }
        for (uint32_t i = 0; i < y_count * es; i += 4) {
            float v = (float)((int)rng_range(0, 8) - 4);
            memcpy(y + i, &v, es < 4 ? es : 4);
            if (es == 8) memcpy(y + i + 4, &v, 4);
        }
        uint8_t *expect = malloc(y_count * es + 1);
        assert_non_null(expect);
        memcpy(expect, y, y_count * es);
        for (uint32_t e = 0; e < count; e++) {
            int64_t j = random_index(a.axis_len);
            put_index(idx + e * a.idx_size, a.idx_size, j);
            if (j < 0) j += a.axis_len;
            if (j < 0 || j >= (int64_t)a.axis_len) continue;
            uint32_t f = e, off = 0;
            for (uint32_t d = a.rank; d-- > 0;) {
                uint32_t i = f % a.dims[d];
                f /= a.dims[d];
                off += (d == a.axis ? (uint32_t)j : i) * a.y_strides[d];
            }
            if (a.reduction == KANN_SCATTER_NONE) {
                memcpy(expect + off * es, upd + e * es, es);
            } else {
                float u, v;
                memcpy(&u, expect + off * 4, 4);
                memcpy(&v, upd + e * 4, 4);
                u = combine_f(u, v, a.reduction);
                memcpy(expect + off * 4, &u, 4);
            }
        }
        uint8_t *snap = snapshot();
        run_tiled(KANN_KERNEL_SCATTER_ELEMENTS, &a, 1);
        check_untouched(snap, y, y_count * es);
        if (memcmp(y, expect, y_count * es))
            fail_msg("scatter_elements case %d (reduction %u) differs", iter, a.reduction);
        free(snap);
        free(expect);
    }
}

/* Random data dims [batches][k dims][slice], tuples and their expected effect. */
static void test_nd_index(void **state) {
    (void)state;
    rng_state = 7;
    for (int iter = 0; iter < 300; iter++) {
        reset();
        int scatter = iter % 2;
        kann_nd_index_args a = {0};
        a.reduction = scatter ? rng_range(0, KANN_SCATTER_COUNT - 1) : 0;
        a.elem_size = a.reduction ? 4 : any_elem_size();
        a.idx_size = rng_range(0, 1) ? 4 : 8;
        a.k = rng_range(1, 3);
        a.slice_len = rng_range(1, 4);
        a.batches = scatter ? 1 : rng_range(1, 3);
        uint32_t block = a.slice_len;
        for (uint32_t j = a.k; j-- > 0;) {
            a.dims[j] = rng_range(1, 4);
            a.strides[j] = block;
            block *= a.dims[j];
        }
        a.batch_stride = block;
        a.n_tuples = a.batches * rng_range(0, 4);
        uint32_t es = a.elem_size, data_n = a.batches * block;
        uint32_t other_n = a.n_tuples * a.slice_len;
        uint8_t *data, *other, *idx;
        kann_ref data_ref = scatter ? put(KANN_SPACE_ARENA, data_n * es, &data)
                                    : put_random(any_space(), data_n * es, &data);
        kann_ref other_ref = scatter ? put(any_space(), other_n * es + 1, &other)
                                     : put(KANN_SPACE_ARENA, other_n * es + 1, &other);
        a.idx = put(any_space(), a.n_tuples * a.k * a.idx_size + 1, &idx);
        a.src = scatter ? other_ref : data_ref;
        a.dst = scatter ? data_ref : other_ref;
        uint8_t *small = scatter ? data : NULL;
        for (uint32_t i = 0; scatter && i < data_n; i++) {
            float v = (float)((int)rng_range(0, 8) - 4);
            memcpy(small + i * es, &v, es < 4 ? es : 4);
        }
        for (uint32_t i = 0; scatter && i < other_n; i++) {
            float v = (float)((int)rng_range(0, 8) - 4);
            memcpy(other + i * es, &v, es < 4 ? es : 4);
        }
        uint8_t *target = scatter ? data : other;
        size_t target_n = (scatter ? data_n : other_n) * es;
        uint8_t *expect = calloc(target_n + 1, 1);
        assert_non_null(expect);
        if (scatter) memcpy(expect, data, target_n);
        uint32_t per_batch = a.batches ? a.n_tuples / a.batches : 0;
        for (uint32_t t = 0; t < a.n_tuples; t++) {
            int64_t off = 0;
            int skip = 0;
            for (uint32_t j = 0; j < a.k; j++) {
                int64_t v = random_index(a.dims[j]);
                put_index(idx + (t * a.k + j) * a.idx_size, a.idx_size, v);
                if (v < 0) v += a.dims[j];
                if (v < 0 || v >= a.dims[j]) skip = 1;
                off += v * a.strides[j];
            }
            if (skip) continue;
            if (!scatter) {
                memcpy(expect + (size_t)t * a.slice_len * es,
                       data + ((t / per_batch) * a.batch_stride + (size_t)off) * es,
                       (size_t)a.slice_len * es);
                continue;
            }
            for (uint32_t i = 0; i < a.slice_len; i++) {
                uint8_t *dst = expect + ((size_t)off + i) * es,
                        *src = other + (t * a.slice_len + i) * es;
                if (a.reduction == KANN_SCATTER_NONE) {
                    memcpy(dst, src, es);
                } else {
                    float u, v;
                    memcpy(&u, dst, 4);
                    memcpy(&v, src, 4);
                    u = combine_f(u, v, a.reduction);
                    memcpy(dst, &u, 4);
                }
            }
        }
        uint8_t *snap = snapshot();
        run_tiled(scatter ? KANN_KERNEL_SCATTER_ND : KANN_KERNEL_GATHER_ND, &a,
                  scatter ? 1 : a.n_tuples);
        check_untouched(snap, target, target_n);
        if (memcmp(target, expect, target_n))
            fail_msg("%s case %d differs", scatter ? "scatter_nd" : "gather_nd", iter);
        free(snap);
        free(expect);
    }
}

/* ---- validators on hostile arguments ---- */

static void expect_rejected(kann_kernel_id id, const void *args, const char *what) {
    kann_error err = {0};
    if (kann_kernels[id].validate(args, &bounds, &err) == KANN_OK)
        fail_msg("%s: %s accepted", kann_kernels[id].name, what);
}

static void test_validators(void **state) {
    (void)state;
    reset();
    uint8_t *p;
    kann_strided_copy_args c = {0};
    c.elem_size = 4;
    c.rank = 2;
    c.dims[0] = 3, c.dims[1] = 4;
    c.x_strides[0] = 4, c.x_strides[1] = 1;
    c.y_strides[0] = 4, c.y_strides[1] = 1;
    c.x = put(KANN_SPACE_CONST, 48, &p);
    c.y = put(KANN_SPACE_ARENA, 48, &p);
    c.tile = (kann_tile){0, 0, 12, 0};
    kann_error err = {0};
    assert_int_equal(kann_kernels[KANN_KERNEL_STRIDED_COPY].validate(&c, &bounds, &err), KANN_OK);
    kann_strided_copy_args bad = c;
    bad.x_strides[0] = -4;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "a view reaching before x");
    bad = c, bad.x_base = 1;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "a view reaching past x");
    bad = c, bad.x_strides[1] = (int64_t)1 << 40;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "a huge stride");
    bad = c, bad.elem_size = 3;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "element size 3");
    bad = c, bad.elem_size = 8;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "8-byte elements past the buffers");
    bad = c, bad.rank = 0;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "rank 0");
    bad = c, bad.y.offset += 2;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "a misaligned y");
    bad = c, bad.y = bad.x;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "an output in the constants");
    bad = c, bad.tile.end = 13;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "a tile past the elements");
    bad = c, bad.dims[0] = 0x10000, bad.dims[1] = 0x10000;
    expect_rejected(KANN_KERNEL_STRIDED_COPY, &bad, "more than 2^32 elements");

    kann_gather_args g = {0};
    g.elem_size = 4, g.idx_size = 8, g.outer = 2, g.axis_len = 3, g.n_indices = 2, g.inner = 2;
    g.x = put(KANN_SPACE_CONST, 48, &p);
    g.idx = put(KANN_SPACE_ARENA, 16, &p);
    g.y = put(KANN_SPACE_ARENA, 32, &p);
    g.tile = (kann_tile){0, 0, 4, 0};
    assert_int_equal(kann_kernels[KANN_KERNEL_GATHER].validate(&g, &bounds, &err), KANN_OK);
    kann_gather_args gb = g;
    gb.axis_len = 4;
    expect_rejected(KANN_KERNEL_GATHER, &gb, "x past its buffer");
    gb = g, gb.idx_size = 2;
    expect_rejected(KANN_KERNEL_GATHER, &gb, "index size 2");
    gb = g, gb.n_indices = 3;
    expect_rejected(KANN_KERNEL_GATHER, &gb, "a tile past the rows");

    kann_pad_args pa = {0};
    pa.elem_size = 4, pa.rank = 1, pa.mode = KANN_PAD_EDGE;
    pa.dims[0] = 4, pa.x_dims[0] = 0, pa.pad_begin[0] = 2;
    pa.x = put(KANN_SPACE_CONST, 4, &p);
    pa.y = put(KANN_SPACE_ARENA, 16, &p);
    pa.tile = (kann_tile){0, 0, 1, 0};
    expect_rejected(KANN_KERNEL_PAD, &pa, "edge padding of an empty input");
    pa.mode = KANN_PAD_COUNT;
    expect_rejected(KANN_KERNEL_PAD, &pa, "an unknown mode");

    kann_trilu_args t = {0};
    t.elem_size = 4, t.batch = 1, t.rows = 2, t.cols = 2;
    t.x = put(KANN_SPACE_CONST, 16, &p);
    t.y = put(KANN_SPACE_ARENA, 16, &p);
    t.tile = (kann_tile){0, 0, 2, 0};
    assert_int_equal(kann_kernels[KANN_KERNEL_TRILU].validate(&t, &bounds, &err), KANN_OK);
    t.k_ref = (kann_ref){KANN_SPACE_ARENA, 0, bounds.arena_size - 4};
    expect_rejected(KANN_KERNEL_TRILU, &t, "k past the arena");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strided_copy),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_gather_elements),
        cmocka_unit_test(test_trilu),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_scatter_elements),
        cmocka_unit_test(test_nd_index),
        cmocka_unit_test(test_validators),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
