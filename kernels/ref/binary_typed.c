/* binary_typed reference kernel (integer and boolean arithmetic, comparisons producing bool,
 * with broadcasting through strides) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/nd.h"
#include "ref/typed.h"

static int is_comparison(uint32_t op) {
    return op >= KANN_BINARY_EQUAL && op <= KANN_BINARY_GREATER_OR_EQUAL;
}

/* A comparison from the three outcomes: all false for a NaN operand. */
static uint8_t compare(kann_binary_op op, int less, int equal, int greater) {
    switch (op) {
    case KANN_BINARY_EQUAL:
        return (uint8_t)equal;
    case KANN_BINARY_LESS:
        return (uint8_t)less;
    case KANN_BINARY_LESS_OR_EQUAL:
        return (uint8_t)(less || equal);
    case KANN_BINARY_GREATER:
        return (uint8_t)greater;
    default: /* GREATER_OR_EQUAL */
        return (uint8_t)(greater || equal);
    }
}

/* a^b in two's complement arithmetic; a negative b gives the truncated 1 / a^-b. */
static int64_t int_pow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    uint64_t base = (uint64_t)a, r = 1;
    for (uint64_t e = (uint64_t)b; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return (int64_t)r;
}

/* Integer arithmetic in int64 with wrap-around; the store narrows to the dtype. A zero divisor
 * gives 0 rather than a trap, and INT64_MIN / -1 wraps. */
static int64_t int_arith(kann_binary_op op, int64_t x, int64_t z) {
    uint64_t ux = (uint64_t)x, uz = (uint64_t)z;
    switch (op) {
    case KANN_BINARY_ADD:
        return (int64_t)(ux + uz);
    case KANN_BINARY_SUB:
        return (int64_t)(ux - uz);
    case KANN_BINARY_MUL:
        return (int64_t)(ux * uz);
    case KANN_BINARY_DIV:
        return z == 0 ? 0 : z == -1 ? (int64_t)(0 - ux) : x / z;
    case KANN_BINARY_POW:
        return int_pow(x, z);
    case KANN_BINARY_MAX:
        return x > z ? x : z;
    case KANN_BINARY_MIN:
        return x < z ? x : z;
    case KANN_BINARY_FMOD:
        return z == 0 || z == -1 ? 0 : x % z;
    case KANN_BINARY_MOD: {
        if (z == 0 || z == -1) return 0;
        int64_t r = x % z;
        return r != 0 && ((r < 0) != (z < 0)) ? r + z : r;
    }
    case KANN_BINARY_SHIFT_LEFT: /* U8 only */
        return z >= 8 ? 0 : (int64_t)((ux << z) & 0xffu);
    case KANN_BINARY_SHIFT_RIGHT:
        return z >= 8 ? 0 : (int64_t)(ux >> z);
    default:
        return 0;
    }
}

static void typed_row(const kann_binary_typed_args *p, const uint8_t *a, size_t a_stride,
                      const uint8_t *b, size_t b_stride, uint8_t *y, size_t n) {
    kann_binary_op op = (kann_binary_op)p->op;
    uint32_t dt = p->dtype;
    if (dt == KANN_DTYPE_F32) { /* comparisons */
        const float *af = (const float *)(const void *)a, *bf = (const float *)(const void *)b;
        for (size_t i = 0; i < n; i++) {
            float x = af[i * a_stride], z = bf[i * b_stride];
            y[i] = compare(op, x<z, x == z, x> z);
        }
    } else if (dt == KANN_DTYPE_BOOL) {
        for (size_t i = 0; i < n; i++) {
            int x = a[i * a_stride] != 0, z = b[i * b_stride] != 0;
            y[i] = (uint8_t)(op == KANN_BINARY_AND  ? x && z
                             : op == KANN_BINARY_OR ? x || z
                                                    : x != z) ^
                   (op == KANN_BINARY_EQUAL); /* EQUAL is the negated XOR */
        }
    } else if (is_comparison(op)) {
        for (size_t i = 0; i < n; i++) {
            int64_t x = kann_load_int(a, dt, i * a_stride), z = kann_load_int(b, dt, i * b_stride);
            y[i] = compare(op, x<z, x == z, x> z);
        }
    } else {
        for (size_t i = 0; i < n; i++)
            kann_store_int(y, dt, i,
                           int_arith(op, kann_load_int(a, dt, i * a_stride),
                                     kann_load_int(b, dt, i * b_stride)));
    }
}

void kann_binary_typed_ref(const void *args, const kann_exec *ex) {
    const kann_binary_typed_args *p = args;
    size_t begin = p->tile.begin, end = p->tile.end;
    if (begin >= end) return;
    size_t es = kann_typed_size(p->dtype);
    size_t ys = is_comparison(p->op) || p->dtype == KANN_DTYPE_BOOL ? 1 : es;
    const uint8_t *a = kann_cbytes(ex, p->a), *b = kann_cbytes(ex, p->b);
    uint8_t *y = kann_mbytes(ex, p->y);
    const uint32_t *strides[2] = {p->a_strides, p->b_strides};
    kann_nd nd;
    kann_nd_init(&nd, p->rank, p->dims, strides, 2);
    kann_nd_seek(&nd, begin);
    size_t a_stride = nd.strides[0][nd.rank - 1], b_stride = nd.strides[1][nd.rank - 1];
    for (size_t pos = begin;;) {
        size_t n = kann_nd_row_left(&nd);
        if (n > end - pos) n = end - pos;
        typed_row(p, a + nd.offsets[0] * es, a_stride, b + nd.offsets[1] * es, b_stride,
                  y + pos * ys, n);
        pos += n;
        if (pos == end) break;
        kann_nd_next_row(&nd);
    }
}

/* Whether the kernel runs op on dtype (see kann_binary_typed_args). */
static int typed_supported(uint32_t op, uint32_t dtype) {
    if (op >= KANN_BINARY_COUNT) return 0;
    switch (dtype) {
    case KANN_DTYPE_F32:
        return is_comparison(op);
    case KANN_DTYPE_BOOL:
        return op == KANN_BINARY_AND || op == KANN_BINARY_OR || op == KANN_BINARY_XOR ||
               op == KANN_BINARY_EQUAL;
    case KANN_DTYPE_U8:
        if (op == KANN_BINARY_SHIFT_LEFT || op == KANN_BINARY_SHIFT_RIGHT) return 1;
        /* fall through */
    case KANN_DTYPE_I8:
    case KANN_DTYPE_I32:
    case KANN_DTYPE_I64:
        return op <= KANN_BINARY_MOD || is_comparison(op);
    default:
        return 0;
    }
}

kann_status kann_binary_typed_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_binary_typed_args *a = args;
    kann_status s;
    if (!typed_supported(a->op, a->dtype)) {
        kann_msg_set(err, KANN_E_CORRUPT, "binary_typed: op ");
        kann_msg_append_u64(err, a->op);
        kann_msg_append(err, " on dtype ");
        kann_msg_append_u64(err, a->dtype);
        kann_msg_append(err, " is not supported");
        return KANN_E_CORRUPT;
    }
    uint32_t count;
    if ((s = kann_check_typed_space("binary_typed", a->rank, a->dims, &count, err)) != KANN_OK)
        return s;
    uint32_t y_dtype =
        is_comparison(a->op) || a->dtype == KANN_DTYPE_BOOL ? KANN_DTYPE_BOOL : a->dtype;
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK ||
        (s = kann_check_typed_strided(b, a->a, a->dtype, a->rank, a->dims, a->a_strides,
                                      "binary_typed a", err)) != KANN_OK ||
        (s = kann_check_typed_strided(b, a->b, a->dtype, a->rank, a->dims, a->b_strides,
                                      "binary_typed b", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->y, y_dtype, count, 1, "binary_typed y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
