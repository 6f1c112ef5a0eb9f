/* The elementwise kernels over several dtypes (unary, binary_typed, ternary, cast) against
 * plain loops, run as several records with complementary tiles; their validators on good and
 * hostile arguments. */
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

/* ---- fixed-seed random numbers ----------------------------------------------------------- */

/* ---- byte memory: an arena and a constants space addressed by offset ----------------------- */

enum { MEM_CAP = 1 << 20, MEM_GAP = 24 };
static const uint8_t SENTINEL = 0xa5;

static uint8_t *mem[KANN_SPACE_COUNT];
static size_t mem_used[KANN_SPACE_COUNT];
static uint8_t *snapshot;
static kann_exec exec_ctx;
static kann_bounds bounds;

static int mem_setup(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++)
        if (!(mem[s] = malloc(MEM_CAP))) return -1;
    if (!(snapshot = malloc(MEM_CAP))) return -1;
    exec_ctx.arena = mem[KANN_SPACE_ARENA];
    exec_ctx.consts = mem[KANN_SPACE_CONST];
    return 0;
}

static int mem_teardown(void **state) {
    (void)state;
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++)
        free(mem[s]);
    free(snapshot);
    return 0;
}

static void mem_reset(void) {
    for (int s = KANN_SPACE_ARENA; s < KANN_SPACE_COUNT; s++) {
        memset(mem[s], SENTINEL, MEM_CAP);
        mem_used[s] = 0;
    }
}

/* Places n bytes, 8-byte aligned after a gap; the bounds end exactly at the last tensor. */
static kann_ref mem_put(uint32_t space, size_t n, void **data) {
    size_t off = (mem_used[space] + MEM_GAP + 7) & ~(size_t)7;
    assert_true(off + n + MEM_GAP <= MEM_CAP);
    mem_used[space] = off + n;
    bounds.arena_size = mem_used[KANN_SPACE_ARENA];
    bounds.const_size = mem_used[KANN_SPACE_CONST];
    *data = mem[space] + off;
    return (kann_ref){space, 0, off};
}

static uint32_t random_space(void) {
    return rng_range(0, 1) ? KANN_SPACE_ARENA : KANN_SPACE_CONST;
}

static size_t dtype_size(uint32_t dt) {
    return dt == KANN_DTYPE_I64 ? 8 : dt == KANN_DTYPE_F32 || dt == KANN_DTYPE_I32 ? 4 : 1;
}

/* Element i of a tensor of dtype, as int64 (floats truncated) or as double. */
static int64_t get_int(const void *p, uint32_t dt, size_t i) {
    switch (dt) {
    case KANN_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case KANN_DTYPE_I32:
        return ((const int32_t *)p)[i];
    case KANN_DTYPE_I64:
        return ((const int64_t *)p)[i];
    default:
        return ((const uint8_t *)p)[i];
    }
}

static void set_int(void *p, uint32_t dt, size_t i, int64_t v) {
    switch (dt) {
    case KANN_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case KANN_DTYPE_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case KANN_DTYPE_I64:
        ((int64_t *)p)[i] = v;
        break;
    default:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    }
}

/* A random value of dtype, with the type's extremes and zero now and then. */
static int64_t random_int(uint32_t dt) {
    static const int64_t edges[] = {0, 1, -1, 2, -2, 7, -7};
    int64_t lo = dt == KANN_DTYPE_U8    ? 0
                 : dt == KANN_DTYPE_I8  ? INT8_MIN
                 : dt == KANN_DTYPE_I32 ? INT32_MIN
                                        : INT64_MIN;
    int64_t hi = dt == KANN_DTYPE_U8    ? UINT8_MAX
                 : dt == KANN_DTYPE_I8  ? INT8_MAX
                 : dt == KANN_DTYPE_I32 ? INT32_MAX
                                        : INT64_MAX;
    switch (rng_range(0, 5)) {
    case 0:
        return lo;
    case 1:
        return hi;
    case 2: {
        int64_t e = edges[rng_range(0, 6)];
        return dt == KANN_DTYPE_U8 && e < 0 ? -e : e;
    }
    case 3:
        return (int64_t)rng_range(0, 40) - (dt == KANN_DTYPE_U8 ? 0 : 20);
    default:
        return (int64_t)(rng_next() & (dt == KANN_DTYPE_I64 ? UINT64_MAX : (uint64_t)(hi - lo)));
    }
}

/* ---- running a kernel as several records --------------------------------------------------- */

static void validate_or_fail(kann_kernel_id id, const void *args) {
    kann_error err = {0};
    if (kann_kernels[id].validate(args, &bounds, &err) != KANN_OK)
        fail_msg("%s: valid arguments rejected: %s", kann_kernels[id].name, err.message);
}

/* Runs kernel id over [0, extent) as 1 to 5 complementary tiles in random order; checks that
 * nothing in the arena but y[0, y_bytes) changed. */
static void run_tiled(kann_kernel_id id, const void *args, uint32_t extent, const void *y,
                      size_t y_bytes) {
    const kann_kernel_info *info = &kann_kernels[id];
    uint64_t buf[64];
    assert_true(info->args_size <= sizeof buf);
    memcpy(snapshot, mem[KANN_SPACE_ARENA], MEM_CAP);
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
        uint32_t t = (first + i) % n;
        kann_tile tile;
        memcpy(buf, args, info->args_size);
        memcpy(&tile, buf, sizeof tile);
        tile.begin = cuts[t];
        tile.end = cuts[t + 1];
        memcpy(buf, &tile, sizeof tile);
        validate_or_fail(id, buf);
        info->ref(buf, &exec_ctx);
    }
    size_t y_begin = (size_t)((const uint8_t *)y - mem[KANN_SPACE_ARENA]);
    for (size_t i = 0; i < MEM_CAP; i++)
        if ((i < y_begin || i >= y_begin + y_bytes) && mem[KANN_SPACE_ARENA][i] != snapshot[i])
            fail_msg("%s: arena byte %zu outside the output was written", info->name, i);
}

static void expect_rejected(kann_kernel_id id, const void *args, const char *what) {
    kann_error err;
    memset(&err, 0x55, sizeof err);
    kann_status s = kann_kernels[id].validate(args, &bounds, &err);
    if (s == KANN_OK) fail_msg("%s: accepted bad arguments (%s)", kann_kernels[id].name, what);
    assert_int_equal(err.status, s);
    assert_non_null(memchr(err.message, '\0', sizeof err.message));
    assert_true(err.message[0] != '\0');
    assert_int_not_equal(kann_kernels[id].validate(args, &bounds, NULL), KANN_OK);
}

/* ---- unary ----------------------------------------------------------------------------------- */

static double round_half_even(double x) {
    double r = floor(x + 0.5);
    return r - x == 0.5 && fmod(r, 2.0) != 0 ? r - 1 : r;
}

static double ref_unary_f32(uint32_t op, double x) {
    switch (op) {
    case KANN_UNARY_ABS:
        return fabs(x);
    case KANN_UNARY_NEG:
        return -x;
    case KANN_UNARY_SIGN:
        return x > 0 ? 1 : x < 0 ? -1 : x;
    case KANN_UNARY_EXP:
        return exp(x);
    case KANN_UNARY_LOG:
        return log(x);
    case KANN_UNARY_SQRT:
        return sqrt(x);
    case KANN_UNARY_RECIPROCAL:
        return 1 / x;
    case KANN_UNARY_FLOOR:
        return floor(x);
    case KANN_UNARY_CEIL:
        return ceil(x);
    case KANN_UNARY_ROUND:
        return round_half_even(x);
    case KANN_UNARY_SIN:
        return sin(x);
    case KANN_UNARY_COS:
        return cos(x);
    case KANN_UNARY_TAN:
        return tan(x);
    case KANN_UNARY_ASIN:
        return asin(x);
    case KANN_UNARY_ACOS:
        return acos(x);
    case KANN_UNARY_ATAN:
        return atan(x);
    case KANN_UNARY_SINH:
        return sinh(x);
    case KANN_UNARY_COSH:
        return cosh(x);
    case KANN_UNARY_ASINH:
        return asinh(x);
    case KANN_UNARY_ACOSH:
        return acosh(x);
    case KANN_UNARY_ATANH:
        return atanh(x);
    case KANN_UNARY_ERF:
        return erf(x);
    }
    fail_msg("op %u is not float32 -> float32", op);
    return 0;
}

/* An input in op's domain; halves for ROUND, so ties to even are exercised. */
static float unary_input(uint32_t op) {
    switch (op) {
    case KANN_UNARY_LOG:
    case KANN_UNARY_SQRT:
        return rng_float(0.01f, 10.0f);
    case KANN_UNARY_ASIN:
    case KANN_UNARY_ACOS:
    case KANN_UNARY_ATANH:
        return rng_float(-0.99f, 0.99f);
    case KANN_UNARY_ACOSH:
        return rng_float(1.0f, 10.0f);
    case KANN_UNARY_RECIPROCAL:
        return rng_range(0, 1) ? rng_float(0.1f, 5.0f) : -rng_float(0.1f, 5.0f);
    case KANN_UNARY_ROUND:
        return rng_range(0, 1) ? (float)((int)rng_range(0, 20) - 10) + 0.5f : rng_float(-5, 5);
    default:
        return rng_float(-4.0f, 4.0f);
    }
}

static void test_unary_f32(void **state) {
    (void)state;
    rng_state = 101;
    for (uint32_t op = 0; op <= KANN_UNARY_ERF; op++) {
        for (int c = 0; c < 6; c++) {
            mem_reset();
            kann_unary_args a = {0};
            a.op = op;
            a.dtype = KANN_DTYPE_F32;
            a.count = rng_range(1, 300);
            float *x, *y;
            a.x = mem_put(random_space(), a.count * 4, (void **)&x);
            for (uint32_t i = 0; i < a.count; i++)
                x[i] = unary_input(op);
            int in_place = a.x.space == KANN_SPACE_ARENA && c == 0;
            if (in_place) {
                a.y = a.x;
                y = x;
            } else {
                a.y = mem_put(KANN_SPACE_ARENA, a.count * 4, (void **)&y);
            }
            double *expected = malloc(a.count * sizeof(double));
            assert_non_null(expected);
            for (uint32_t i = 0; i < a.count; i++)
                expected[i] = ref_unary_f32(op, x[i]);
            run_tiled(KANN_KERNEL_UNARY, &a, a.count, y, a.count * 4);
            for (uint32_t i = 0; i < a.count; i++) {
                double tol = 2e-6 * (1 + fabs(expected[i]));
                if (!(fabs(y[i] - expected[i]) <= tol))
                    fail_msg("unary op %u: y[%u] = %.9g, expected %.9g", op, i, (double)y[i],
                             expected[i]);
            }
            free(expected);
        }
    }
}

/* Round's ties, signed zeros and NaN through SIGN; IS_NAN and IS_INF with each flag. */
static void test_unary_special_values(void **state) {
    (void)state;
    rng_state = 102;
    const float xs[] = {2.5f, -2.5f, 3.5f, 0.5f, -0.5f, 1.5f, -0.0f, NAN, INFINITY, -INFINITY};
    const float rounded[] = {2, -2, 4, 0, -0.0f, 2, -0.0f, NAN, INFINITY, -INFINITY};
    const uint32_t n = sizeof xs / sizeof xs[0];
    mem_reset();
    float *x, *y;
    uint8_t *b;
    kann_unary_args a = {0};
    a.dtype = KANN_DTYPE_F32;
    a.count = n;
    a.x = mem_put(KANN_SPACE_CONST, n * 4, (void **)&x);
    memcpy(x, xs, sizeof xs);
    a.y = mem_put(KANN_SPACE_ARENA, n * 4, (void **)&y);
    a.op = KANN_UNARY_ROUND;
    run_tiled(KANN_KERNEL_UNARY, &a, n, y, n * 4);
    for (uint32_t i = 0; i < n; i++)
        assert_true(memcmp(&y[i], &rounded[i], 4) == 0 || (isnan(y[i]) && isnan(rounded[i])));
    a.op = KANN_UNARY_SIGN;
    run_tiled(KANN_KERNEL_UNARY, &a, n, y, n * 4);
    assert_true(y[0] == 1 && y[1] == -1 && y[6] == 0 && signbit(y[6]) && isnan(y[7]));
    assert_true(y[8] == 1 && y[9] == -1);

    kann_unary_args t = a;
    t.y = mem_put(KANN_SPACE_ARENA, n, (void **)&b);
    t.op = KANN_UNARY_IS_NAN;
    run_tiled(KANN_KERNEL_UNARY, &t, n, b, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(b[i], i == 7);
    t.op = KANN_UNARY_IS_INF;
    for (uint32_t flags = 0; flags < 4; flags++) {
        t.flags = flags;
        run_tiled(KANN_KERNEL_UNARY, &t, n, b, n);
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(b[i], (i == 8 && (flags & 1)) || (i == 9 && (flags & 2)));
    }
}

static void test_unary_int_and_bool(void **state) {
    (void)state;
    rng_state = 103;
    const uint32_t dtypes[] = {KANN_DTYPE_U8, KANN_DTYPE_I8, KANN_DTYPE_I32, KANN_DTYPE_I64};
    const uint32_t ops[] = {KANN_UNARY_ABS, KANN_UNARY_NEG, KANN_UNARY_SIGN};
    for (int di = 0; di < 4; di++) {
        for (int oi = 0; oi < 3; oi++) {
            mem_reset();
            uint32_t dt = dtypes[di], es = (uint32_t)dtype_size(dt);
            kann_unary_args a = {0};
            a.op = ops[oi];
            a.dtype = dt;
            a.count = rng_range(1, 200);
            void *x, *y;
            a.x = mem_put(random_space(), a.count * es, &x);
            a.y = mem_put(KANN_SPACE_ARENA, a.count * es, &y);
            for (uint32_t i = 0; i < a.count; i++)
                set_int(x, dt, i, random_int(dt));
            run_tiled(KANN_KERNEL_UNARY, &a, a.count, y, a.count * es);
            for (uint32_t i = 0; i < a.count; i++) {
                int64_t v = get_int(x, dt, i);
                /* two's complement: negating wraps; store and reload gives the type's value */
                int64_t e = a.op == KANN_UNARY_SIGN           ? (v > 0) - (v < 0)
                            : a.op == KANN_UNARY_NEG || v < 0 ? (int64_t)(0 - (uint64_t)v)
                                                              : v;
                uint8_t tmp[8];
                set_int(tmp, dt, 0, e);
                if (get_int(y, dt, i) != get_int(tmp, dt, 0))
                    fail_msg("unary op %u dtype %u: %lld -> %lld", a.op, dt, (long long)v,
                             (long long)get_int(y, dt, i));
            }
        }
    }
    mem_reset();
    kann_unary_args a = {0};
    a.op = KANN_UNARY_NOT;
    a.dtype = KANN_DTYPE_BOOL;
    a.count = 77;
    uint8_t *x, *y;
    a.x = mem_put(KANN_SPACE_ARENA, 77, (void **)&x);
    a.y = mem_put(KANN_SPACE_ARENA, 77, (void **)&y);
    for (int i = 0; i < 77; i++)
        x[i] = (uint8_t)(rng_next() & 1);
    run_tiled(KANN_KERNEL_UNARY, &a, 77, y, 77);
    for (int i = 0; i < 77; i++)
        assert_int_equal(y[i], !x[i]);
}

/* ---- binary_typed ---------------------------------------------------------------------------- */

/* The textbook integer semantics, in a different form from the kernel's. */
static int64_t ref_int_op(uint32_t op, int64_t a, int64_t b, uint32_t dt) {
    switch (op) {
    case KANN_BINARY_ADD:
        return (int64_t)((uint64_t)a + (uint64_t)b);
    case KANN_BINARY_SUB:
        return (int64_t)((uint64_t)a - (uint64_t)b);
    case KANN_BINARY_MUL:
        return (int64_t)((uint64_t)a * (uint64_t)b);
    case KANN_BINARY_DIV:
        if (b == 0) return 0;
        if (a == INT64_MIN && b == -1) return INT64_MIN;
        return a / b;
    case KANN_BINARY_POW: {
        if (b < 0) return a == 1 ? 1 : a == -1 ? (b % 2 ? -1 : 1) : 0;
        uint64_t r = 1;
        for (int64_t i = 0; i < b && i < 200; i++) /* the low bits repeat long before */
            r *= (uint64_t)a;
        if (b >= 200) { /* square-and-multiply for big exponents */
            uint64_t base = (uint64_t)a;
            r = 1;
            for (uint64_t e = (uint64_t)b; e; e >>= 1, base *= base)
                if (e & 1) r *= base;
        }
        return (int64_t)r;
    }
    case KANN_BINARY_MAX:
        return a > b ? a : b;
    case KANN_BINARY_MIN:
        return a < b ? a : b;
    case KANN_BINARY_FMOD:
        if (b == 0 || b == -1) return 0;
        return a - (a / b) * b;
    case KANN_BINARY_MOD: {
        if (b == 0 || b == -1) return 0;
        int64_t r = a - (a / b) * b;
        return (r != 0 && (r ^ b) < 0) ? r + b : r;
    }
    case KANN_BINARY_EQUAL:
        return a == b;
    case KANN_BINARY_LESS:
        return a < b;
    case KANN_BINARY_LESS_OR_EQUAL:
        return a <= b;
    case KANN_BINARY_GREATER:
        return a > b;
    case KANN_BINARY_GREATER_OR_EQUAL:
        return a >= b;
    case KANN_BINARY_SHIFT_LEFT:
        return b >= 8 ? 0 : (a << b) & 0xff;
    case KANN_BINARY_SHIFT_RIGHT:
        return b >= 8 ? 0 : a >> b;
    }
    (void)dt;
    fail_msg("op %u", op);
    return 0;
}

static size_t strided_index(uint32_t rank, const uint32_t *dims, const uint32_t *strides,
                            size_t flat) {
    size_t off = 0;
    for (uint32_t d = rank; d-- > 0;) {
        off += (flat % dims[d]) * strides[d];
        flat /= dims[d];
    }
    return off;
}

/* Dense strides of dims with the dims in mask broadcast (stride 0); returns the element count. */
static size_t broadcast_strides(uint32_t rank, const uint32_t *dims, uint32_t mask,
                                uint32_t *strides) {
    size_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        strides[d] = mask & (1u << d) ? 0 : (uint32_t)s;
        if (!(mask & (1u << d))) s *= dims[d];
    }
    return s;
}

static uint32_t random_space_dims(uint32_t *dims) {
    uint32_t rank = rng_range(1, KANN_MAX_RANK);
    for (uint32_t d = 0; d < rank; d++)
        dims[d] = rng_range(1, 4);
    return rank;
}

static int is_predicate(uint32_t op) {
    return op >= KANN_BINARY_EQUAL && op <= KANN_BINARY_XOR;
}

static void run_typed_case(int index, uint32_t dt, uint32_t op) {
    mem_reset();
    kann_binary_typed_args p = {0};
    p.op = op;
    p.dtype = dt;
    p.rank = random_space_dims(p.dims);
    uint32_t full = (1u << p.rank) - 1;
    size_t na = broadcast_strides(p.rank, p.dims, (uint32_t)rng_next() & full, p.a_strides);
    size_t nb = broadcast_strides(p.rank, p.dims, (uint32_t)rng_next() & full, p.b_strides);
    size_t ny = broadcast_strides(p.rank, p.dims, 0, (uint32_t[KANN_MAX_RANK]){0});
    size_t es = dtype_size(dt), ys = is_predicate(op) || dt == KANN_DTYPE_BOOL ? 1 : es;
    void *a, *b, *y;
    p.a = mem_put(random_space(), na * es, &a);
    p.b = mem_put(random_space(), nb * es, &b);
    p.y = mem_put(KANN_SPACE_ARENA, ny * ys, &y);
    for (size_t i = 0; i < na; i++) {
        if (dt == KANN_DTYPE_F32)
            ((float *)a)[i] = (float)rng_range(0, 6) - 3.0f;
        else if (dt == KANN_DTYPE_BOOL)
            ((uint8_t *)a)[i] = (uint8_t)(rng_next() & 1);
        else
            set_int(a, dt, i, random_int(dt));
    }
    for (size_t i = 0; i < nb; i++) {
        if (dt == KANN_DTYPE_F32)
            ((float *)b)[i] = rng_range(0, 9) ? (float)rng_range(0, 6) - 3.0f : NAN;
        else if (dt == KANN_DTYPE_BOOL)
            ((uint8_t *)b)[i] = (uint8_t)(rng_next() & 1);
        else if (op == KANN_BINARY_POW || op >= KANN_BINARY_SHIFT_LEFT)
            set_int(b, dt, i, (int64_t)rng_range(0, 12) - (dt == KANN_DTYPE_U8 ? 0 : 3));
        else
            set_int(b, dt, i, random_int(dt));
    }
    run_tiled(KANN_KERNEL_BINARY_TYPED, &p, (uint32_t)ny, y, ny * ys);
    for (size_t i = 0; i < ny; i++) {
        size_t ia = strided_index(p.rank, p.dims, p.a_strides, i);
        size_t ib = strided_index(p.rank, p.dims, p.b_strides, i);
        int64_t e, got;
        if (dt == KANN_DTYPE_F32) {
            float x = ((float *)a)[ia], z = ((float *)b)[ib];
            e = op == KANN_BINARY_EQUAL           ? x == z
                : op == KANN_BINARY_LESS          ? x < z
                : op == KANN_BINARY_LESS_OR_EQUAL ? x <= z
                : op == KANN_BINARY_GREATER       ? x > z
                                                  : x >= z;
            got = ((uint8_t *)y)[i];
        } else if (dt == KANN_DTYPE_BOOL) {
            int x = ((uint8_t *)a)[ia], z = ((uint8_t *)b)[ib];
            e = op == KANN_BINARY_AND   ? x & z
                : op == KANN_BINARY_OR  ? x | z
                : op == KANN_BINARY_XOR ? x ^ z
                                        : x == z;
            got = ((uint8_t *)y)[i];
        } else {
            uint8_t tmp[8];
            e = ref_int_op(op, get_int(a, dt, ia), get_int(b, dt, ib), dt);
            if (ys == es) {
                set_int(tmp, dt, 0, e);
                e = get_int(tmp, dt, 0);
                got = get_int(y, dt, i);
            } else {
                got = ((uint8_t *)y)[i];
            }
        }
        if (got != e)
            fail_msg("binary_typed case %d (dtype %u, op %u): y[%zu] = %lld, expected %lld", index,
                     dt, op, i, (long long)got, (long long)e);
    }
}

static void test_binary_typed(void **state) {
    (void)state;
    rng_state = 104;
    const uint32_t ints[] = {KANN_DTYPE_U8, KANN_DTYPE_I8, KANN_DTYPE_I32, KANN_DTYPE_I64};
    int index = 0;
    for (int di = 0; di < 4; di++) {
        for (uint32_t op = 0; op <= KANN_BINARY_MOD; op++)
            for (int k = 0; k < 6; k++)
                run_typed_case(index++, ints[di], op);
        for (uint32_t op = KANN_BINARY_EQUAL; op <= KANN_BINARY_GREATER_OR_EQUAL; op++)
            for (int k = 0; k < 4; k++)
                run_typed_case(index++, ints[di], op);
    }
    for (uint32_t op = KANN_BINARY_SHIFT_LEFT; op <= KANN_BINARY_SHIFT_RIGHT; op++)
        for (int k = 0; k < 6; k++)
            run_typed_case(index++, KANN_DTYPE_U8, op);
    for (uint32_t op = KANN_BINARY_EQUAL; op <= KANN_BINARY_GREATER_OR_EQUAL; op++)
        for (int k = 0; k < 6; k++)
            run_typed_case(index++, KANN_DTYPE_F32, op);
    const uint32_t logic[] = {KANN_BINARY_AND, KANN_BINARY_OR, KANN_BINARY_XOR, KANN_BINARY_EQUAL};
    for (int oi = 0; oi < 4; oi++)
        for (int k = 0; k < 6; k++)
            run_typed_case(index++, KANN_DTYPE_BOOL, logic[oi]);
}

/* The integer corner cases one by one: no trap on a zero divisor or INT64_MIN / -1, the sign
 * rules of the two remainders, negative exponents, shifts past the width. */
static void test_binary_typed_corners(void **state) {
    (void)state;
    struct {
        uint32_t dt, op;
        int64_t a, b, y;
    } cases[] = {
        {KANN_DTYPE_I64, KANN_BINARY_DIV, 7, 0, 0},
        {KANN_DTYPE_I64, KANN_BINARY_DIV, INT64_MIN, -1, INT64_MIN},
        {KANN_DTYPE_I32, KANN_BINARY_DIV, INT32_MIN, -1, INT32_MIN},
        {KANN_DTYPE_I32, KANN_BINARY_DIV, -7, 2, -3},
        {KANN_DTYPE_I32, KANN_BINARY_MOD, -7, 3, 2},
        {KANN_DTYPE_I32, KANN_BINARY_MOD, 7, -3, -2},
        {KANN_DTYPE_I32, KANN_BINARY_MOD, -6, 3, 0},
        {KANN_DTYPE_I32, KANN_BINARY_FMOD, -7, 3, -1},
        {KANN_DTYPE_I32, KANN_BINARY_FMOD, 7, -3, 1},
        {KANN_DTYPE_I64, KANN_BINARY_MOD, INT64_MIN, -1, 0},
        {KANN_DTYPE_I64, KANN_BINARY_MOD, 5, 0, 0},
        {KANN_DTYPE_I8, KANN_BINARY_ADD, 127, 1, -128},
        {KANN_DTYPE_U8, KANN_BINARY_SUB, 3, 5, 254},
        {KANN_DTYPE_U8, KANN_BINARY_MUL, 200, 2, 144},
        {KANN_DTYPE_I64, KANN_BINARY_POW, 3, 4, 81},
        {KANN_DTYPE_I64, KANN_BINARY_POW, -2, 3, -8},
        {KANN_DTYPE_I64, KANN_BINARY_POW, 2, -1, 0},
        {KANN_DTYPE_I64, KANN_BINARY_POW, -1, -3, -1},
        {KANN_DTYPE_I64, KANN_BINARY_POW, 1, -3, 1},
        {KANN_DTYPE_I32, KANN_BINARY_POW, 2, 31, INT32_MIN},
        {KANN_DTYPE_U8, KANN_BINARY_SHIFT_LEFT, 0x81, 1, 2},
        {KANN_DTYPE_U8, KANN_BINARY_SHIFT_LEFT, 1, 8, 0},
        {KANN_DTYPE_U8, KANN_BINARY_SHIFT_RIGHT, 0x80, 7, 1},
        {KANN_DTYPE_U8, KANN_BINARY_SHIFT_RIGHT, 0xff, 200, 0},
        {KANN_DTYPE_I64, KANN_BINARY_LESS, INT64_MIN, INT64_MAX, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mem_reset();
        kann_binary_typed_args p = {0};
        p.op = cases[i].op;
        p.dtype = cases[i].dt;
        p.rank = 1;
        p.dims[0] = 1;
        p.a_strides[0] = p.b_strides[0] = 1;
        size_t es = dtype_size(p.dtype);
        void *a, *b, *y;
        p.a = mem_put(KANN_SPACE_CONST, es, &a);
        p.b = mem_put(KANN_SPACE_ARENA, es, &b);
        p.y = mem_put(KANN_SPACE_ARENA, es, &y);
        set_int(a, p.dtype, 0, cases[i].a);
        set_int(b, p.dtype, 0, cases[i].b);
        run_tiled(KANN_KERNEL_BINARY_TYPED, &p, 1, y, is_predicate(p.op) ? 1 : es);
        int64_t got = is_predicate(p.op) ? *(uint8_t *)y : get_int(y, p.dtype, 0);
        if (got != cases[i].y)
            fail_msg("corner case %zu: %lld op %u %lld = %lld, expected %lld", i,
                     (long long)cases[i].a, p.op, (long long)cases[i].b, (long long)got,
                     (long long)cases[i].y);
    }
}

/* ---- ternary --------------------------------------------------------------------------------- */

static void test_ternary(void **state) {
    (void)state;
    rng_state = 105;
    const uint32_t dtypes[] = {KANN_DTYPE_F32, KANN_DTYPE_U8,  KANN_DTYPE_I8,
                               KANN_DTYPE_I32, KANN_DTYPE_I64, KANN_DTYPE_BOOL};
    for (int c = 0; c < 120; c++) {
        mem_reset();
        kann_ternary_args p = {0};
        p.dtype = dtypes[c % 6];
        p.op = p.dtype == KANN_DTYPE_BOOL || c % 2 ? KANN_TERNARY_WHERE : KANN_TERNARY_CLIP;
        p.rank = random_space_dims(p.dims);
        uint32_t full = (1u << p.rank) - 1;
        size_t n[3];
        n[0] = broadcast_strides(p.rank, p.dims, (uint32_t)rng_next() & full, p.a_strides);
        n[1] = broadcast_strides(p.rank, p.dims, (uint32_t)rng_next() & full, p.b_strides);
        n[2] = broadcast_strides(p.rank, p.dims, (uint32_t)rng_next() & full, p.c_strides);
        size_t ny = broadcast_strides(p.rank, p.dims, 0, (uint32_t[KANN_MAX_RANK]){0});
        size_t es = dtype_size(p.dtype), aes = p.op == KANN_TERNARY_WHERE ? 1 : es;
        void *t[3], *y;
        p.a = mem_put(random_space(), n[0] * aes, &t[0]);
        p.b = mem_put(random_space(), n[1] * es, &t[1]);
        p.c = mem_put(random_space(), n[2] * es, &t[2]);
        p.y = mem_put(KANN_SPACE_ARENA, ny * es, &y);
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < n[k]; i++) {
                if (k == 0 && p.op == KANN_TERNARY_WHERE)
                    ((uint8_t *)t[k])[i] = (uint8_t)(rng_next() & 1);
                else if (p.dtype == KANN_DTYPE_F32)
                    ((float *)t[k])[i] = k == 0 && !rng_range(0, 15) ? NAN : rng_float(-3, 3);
                else if (p.dtype == KANN_DTYPE_BOOL)
                    ((uint8_t *)t[k])[i] = (uint8_t)(rng_next() & 1);
                else
                    set_int(t[k], p.dtype, i, random_int(p.dtype));
            }
        }
        run_tiled(KANN_KERNEL_TERNARY, &p, (uint32_t)ny, y, ny * es);
        for (size_t i = 0; i < ny; i++) {
            size_t ia = strided_index(p.rank, p.dims, p.a_strides, i);
            size_t ib = strided_index(p.rank, p.dims, p.b_strides, i);
            size_t ic = strided_index(p.rank, p.dims, p.c_strides, i);
            const uint8_t *src;
            uint8_t want[8];
            if (p.op == KANN_TERNARY_WHERE) {
                src = ((uint8_t *)t[0])[ia] ? (uint8_t *)t[1] + ib * es : (uint8_t *)t[2] + ic * es;
                memcpy(want, src, es);
            } else if (p.dtype == KANN_DTYPE_F32) {
                float x = ((float *)t[0])[ia], lo = ((float *)t[1])[ib], hi = ((float *)t[2])[ic];
                float v = isnan(x) ? x : fminf(fmaxf(x, lo), hi);
                memcpy(want, &v, 4);
            } else {
                int64_t x = get_int(t[0], p.dtype, ia), lo = get_int(t[1], p.dtype, ib),
                        hi = get_int(t[2], p.dtype, ic);
                set_int(want, p.dtype, 0, x < lo ? (lo > hi ? hi : lo) : x > hi ? hi : x);
            }
            if (memcmp((uint8_t *)y + i * es, want, es) != 0)
                fail_msg("ternary case %d (op %u, dtype %u): element %zu differs", c, p.op, p.dtype,
                         i);
        }
    }
}

/* ---- cast ------------------------------------------------------------------------------------ */

/* Float32 to dtype: rounded to float, tested against zero, or truncated and saturated. */
static double cast_expected(double v, uint32_t to) {
    if (to == KANN_DTYPE_F32) return (float)v;
    if (to == KANN_DTYPE_BOOL) return v != 0;
    if (isnan(v)) return 0;
    double lo = to == KANN_DTYPE_U8    ? 0
                : to == KANN_DTYPE_I8  ? -128
                : to == KANN_DTYPE_I32 ? -2147483648.0
                                       : -9223372036854775808.0;
    double hi = to == KANN_DTYPE_U8    ? 255
                : to == KANN_DTYPE_I8  ? 127
                : to == KANN_DTYPE_I32 ? 2147483647.0
                                       : 9223372036854775807.0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

static void test_cast(void **state) {
    (void)state;
    rng_state = 106;
    const uint32_t dtypes[] = {KANN_DTYPE_F32, KANN_DTYPE_U8,  KANN_DTYPE_I8,
                               KANN_DTYPE_I32, KANN_DTYPE_I64, KANN_DTYPE_BOOL};
    const float specials[] = {NAN,   INFINITY, -INFINITY, 1e20f,   -1e20f,        300.7f, -300.7f,
                              -0.9f, 0.9f,     127.5f,    -128.9f, 2147483520.0f, 0.0f};
    const size_t n_specials = sizeof specials / sizeof specials[0];
    for (int fi = 0; fi < 6; fi++) {
        for (int ti = 0; ti < 6; ti++) {
            mem_reset();
            kann_cast_args a = {0};
            a.from = dtypes[fi];
            a.to = dtypes[ti];
            a.count = (uint32_t)n_specials + rng_range(1, 60);
            size_t fs = dtype_size(a.from), ts = dtype_size(a.to);
            void *x, *y;
            a.x = mem_put(random_space(), a.count * fs, &x);
            a.y = mem_put(KANN_SPACE_ARENA, a.count * ts, &y);
            double *src = malloc(a.count * sizeof(double));
            int64_t *isrc = malloc(a.count * sizeof(int64_t));
            assert_non_null(isrc);
            assert_non_null(src);
            for (uint32_t i = 0; i < a.count; i++) {
                if (a.from == KANN_DTYPE_F32) {
                    float v = i < n_specials ? specials[i] : rng_float(-1000, 1000);
                    ((float *)x)[i] = v;
                    src[i] = v;
                } else if (a.from == KANN_DTYPE_BOOL) {
                    ((uint8_t *)x)[i] = (uint8_t)(rng_next() & 1);
                    isrc[i] = ((uint8_t *)x)[i];
                } else {
                    set_int(x, a.from, i, random_int(a.from));
                    isrc[i] = get_int(x, a.from, i);
                }
            }
            run_tiled(KANN_KERNEL_CAST, &a, a.count, y, a.count * ts);
            for (uint32_t i = 0; i < a.count; i++) {
                if (a.from == KANN_DTYPE_F32) {
                    double want = cast_expected(src[i], a.to);
                    double got =
                        a.to == KANN_DTYPE_F32 ? ((float *)y)[i] : (double)get_int(y, a.to, i);
                    if (!(got == want || (isnan(got) && isnan(want))))
                        fail_msg("cast float32 -> %u: %.9g gave %.9g, expected %.9g", a.to, src[i],
                                 got, want);
                } else if (a.to == KANN_DTYPE_F32) {
                    assert_true(((float *)y)[i] == (float)isrc[i]);
                } else {
                    uint8_t tmp[8];
                    int64_t v = a.from == KANN_DTYPE_BOOL || a.to == KANN_DTYPE_BOOL ? isrc[i] != 0
                                                                                     : isrc[i];
                    set_int(tmp, a.to, 0, v);
                    if (get_int(y, a.to, i) != get_int(tmp, a.to, 0))
                        fail_msg("cast %u -> %u: %lld gave %lld", a.from, a.to, (long long)isrc[i],
                                 (long long)get_int(y, a.to, i));
                }
            }
            free(src);
            free(isrc);
        }
    }
}

/* ---- validators ------------------------------------------------------------------------------ */

/* n bytes at the very end of the arena: whatever reads past them leaves the bounds. */
static kann_ref arena_tail(size_t n) {
    void *p;
    return mem_put(KANN_SPACE_ARENA, n, &p);
}

static void test_validators(void **state) {
    (void)state;
    mem_reset();
    void *p1, *p2, *p3, *p4;
    kann_ref f32x = mem_put(KANN_SPACE_ARENA, 64 * 4, &p1);
    kann_ref f32y = mem_put(KANN_SPACE_ARENA, 64 * 4, &p2);
    kann_ref cst = mem_put(KANN_SPACE_CONST, 64 * 8, &p3);
    kann_ref tail = mem_put(KANN_SPACE_ARENA, 64, &p4);
    kann_ref odd = f32x;
    odd.offset += 1;

    kann_unary_args u = {{0, 0, 64, 0}, f32x, f32y, KANN_UNARY_EXP, KANN_DTYPE_F32, 64, 0};
    validate_or_fail(KANN_KERNEL_UNARY, &u);
    kann_unary_args bad = u;
    bad.op = KANN_UNARY_NOT;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "NOT on float32");
    bad = u;
    bad.op = KANN_UNARY_COUNT;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "unknown op");
    bad = u;
    bad.dtype = 11; /* double */
    expect_rejected(KANN_KERNEL_UNARY, &bad, "unknown dtype");
    bad = u;
    bad.dtype = KANN_DTYPE_I32;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "EXP on int32");
    bad = u;
    bad.flags = 1;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "flags on EXP");
    bad = u;
    bad.y = cst;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "y in the constants");
    bad = u;
    bad.y = arena_tail(64);
    expect_rejected(KANN_KERNEL_UNARY, &bad, "y past the arena");
    bad = u;
    bad.x = odd;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "misaligned x");
    bad = u;
    bad.tile.end = 65;
    expect_rejected(KANN_KERNEL_UNARY, &bad, "tile past count");
    /* IS_NAN writes one byte per element: the 64-byte tail is enough */
    kann_unary_args isnan_args = u;
    isnan_args.op = KANN_UNARY_IS_NAN;
    isnan_args.y = arena_tail(64);
    validate_or_fail(KANN_KERNEL_UNARY, &isnan_args);

    kann_binary_typed_args b = {0};
    b.tile.end = 64;
    b.a = f32x;
    b.b = cst;
    b.y = f32y;
    b.op = KANN_BINARY_ADD;
    b.dtype = KANN_DTYPE_I64;
    b.rank = 2;
    b.dims[0] = 8;
    b.dims[1] = 8;
    b.a_strides[0] = 0; /* a: one row of 8 int64 broadcast */
    b.a_strides[1] = 1;
    b.b_strides[0] = 8;
    b.b_strides[1] = 1;
    kann_binary_typed_args bb = b;
    bb.y = cst;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "y in the constants");
    b.y = mem_put(KANN_SPACE_ARENA, 64 * 8, &p1);
    validate_or_fail(KANN_KERNEL_BINARY_TYPED, &b);
    bb = b;
    bb.op = KANN_BINARY_PRELU;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "PRELU on int64");
    bb = b;
    bb.op = KANN_BINARY_SHIFT_LEFT;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "shift on int64");
    bb = b;
    bb.op = KANN_BINARY_AND;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "AND on int64");
    bb = b;
    bb.dtype = KANN_DTYPE_F32;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "float32 ADD");
    bb = b;
    bb.rank = 0;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "rank 0");
    bb = b;
    bb.rank = KANN_MAX_RANK + 1;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "rank 7");
    bb = b;
    bb.b_strides[0] = 9;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "b stride past the constants");
    bb = b;
    bb.dims[0] = 0x10000;
    bb.dims[1] = 0x10000;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "count over 2^32");
    bb = b;
    bb.dims[0] = 0xffffffffu;
    bb.dims[1] = 1;
    bb.a_strides[0] = 0xffffffffu;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "stride overflow");
    bb = b;
    bb.a.offset += 4;
    expect_rejected(KANN_KERNEL_BINARY_TYPED, &bb, "int64 a at a 4-byte offset");
    /* the same view of int8 elements: an eighth of the bytes, any offset */
    bb = b;
    bb.dtype = KANN_DTYPE_I8;
    bb.a.offset += 3;
    bb.y = arena_tail(64);
    validate_or_fail(KANN_KERNEL_BINARY_TYPED, &bb);
    bb.op = KANN_BINARY_LESS;
    validate_or_fail(KANN_KERNEL_BINARY_TYPED, &bb);

    kann_ternary_args t = {0};
    t.tile.end = 64;
    t.op = KANN_TERNARY_WHERE;
    t.dtype = KANN_DTYPE_F32;
    t.a = tail; /* 64 bools */
    t.b = f32x;
    t.c = cst;
    t.y = f32y;
    t.rank = 1;
    t.dims[0] = 64;
    t.a_strides[0] = t.b_strides[0] = t.c_strides[0] = 1;
    validate_or_fail(KANN_KERNEL_TERNARY, &t);
    kann_ternary_args tt = t;
    tt.op = KANN_TERNARY_CLIP;
    tt.a = arena_tail(64);
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "CLIP reads a as float32: past the arena");
    tt = t;
    tt.op = KANN_TERNARY_COUNT;
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "unknown op");
    tt = t;
    tt.op = KANN_TERNARY_CLIP;
    tt.dtype = KANN_DTYPE_BOOL;
    tt.a = tail;
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "CLIP of bool");
    tt = t;
    tt.dtype = KANN_DTYPE_I64;
    tt.b = tt.c = cst;
    tt.y = arena_tail(64 * 4);
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "int64 y past the arena");
    tt = t;
    tt.c_strides[0] = 0x100000;
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "c stride past the constants");
    tt = t;
    tt.tile.begin = 65;
    tt.tile.end = 64;
    expect_rejected(KANN_KERNEL_TERNARY, &tt, "begin after end");

    kann_cast_args c = {{0, 0, 64, 0}, f32x, arena_tail(64), 64, KANN_DTYPE_F32, KANN_DTYPE_U8, 0};
    validate_or_fail(KANN_KERNEL_CAST, &c);
    kann_cast_args cc = c;
    cc.to = KANN_DTYPE_I32;
    expect_rejected(KANN_KERNEL_CAST, &cc, "int32 y past the arena");
    cc = c;
    cc.from = 10; /* float16 */
    expect_rejected(KANN_KERNEL_CAST, &cc, "float16");
    cc = c;
    cc.reserved = 1;
    expect_rejected(KANN_KERNEL_CAST, &cc, "reserved");
    cc = c;
    cc.count = 0xffffffffu;
    cc.tile.end = 0xffffffffu;
    expect_rejected(KANN_KERNEL_CAST, &cc, "count past x");

    /* f32_binary runs only the float32 arithmetic ops */
    kann_binary_args fb = {0};
    fb.tile.end = 64;
    fb.a = f32x;
    fb.b = cst;
    fb.y = f32y;
    fb.rank = 1;
    fb.dims[0] = 64;
    fb.a_strides[0] = fb.b_strides[0] = 1;
    for (uint32_t op = 0; op < KANN_BINARY_COUNT + 2; op++) {
        fb.op = op;
        if (op <= KANN_BINARY_FMOD || op == KANN_BINARY_PRELU)
            validate_or_fail(KANN_KERNEL_F32_BINARY, &fb);
        else
            expect_rejected(KANN_KERNEL_F32_BINARY, &fb, "not a float32 arithmetic op");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_f32),
        cmocka_unit_test(test_unary_special_values),
        cmocka_unit_test(test_unary_int_and_bool),
        cmocka_unit_test(test_binary_typed),
        cmocka_unit_test(test_binary_typed_corners),
        cmocka_unit_test(test_ternary),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_validators),
    };
    return cmocka_run_group_tests(tests, mem_setup, mem_teardown);
}
