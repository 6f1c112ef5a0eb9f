/* The constant evaluator: reference semantics of the ops that shape arithmetic and constant
 * subgraphs use, over dense host tensors, one function per op. */
#include "fold_constants.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "shapes.h"
#include "shapes_reduce.h"

/* ---- element access in any numeric dtype ---- */

static int is_float(int dt) {
    return dt == KC_DTYPE_FLOAT || dt == KC_DTYPE_DOUBLE;
}

static int is_integer(int dt) {
    switch (dt) {
    case KC_DTYPE_INT8:
    case KC_DTYPE_UINT8:
    case KC_DTYPE_INT16:
    case KC_DTYPE_UINT16:
    case KC_DTYPE_INT32:
    case KC_DTYPE_UINT32:
    case KC_DTYPE_INT64:
    case KC_DTYPE_UINT64:
        return 1;
    default:
        return 0;
    }
}

/* Types the evaluator can convert between (Cast, arithmetic). */
static int is_numeric(int dt) {
    return is_float(dt) || is_integer(dt) || dt == KC_DTYPE_BOOL;
}

/* Float to integer saturates and sends NaN to 0: C leaves out-of-range conversions undefined. */
static int64_t saturate_i64(double x) {
    if (isnan(x)) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

static int64_t clamp_i64(int64_t x, int64_t lo, int64_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

static int64_t get_i(const void *p, int dt, int64_t i) {
    switch (dt) {
    case KC_DTYPE_INT8:
        return ((const int8_t *)p)[i];
    case KC_DTYPE_UINT8:
    case KC_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case KC_DTYPE_INT16:
        return ((const int16_t *)p)[i];
    case KC_DTYPE_UINT16:
        return ((const uint16_t *)p)[i];
    case KC_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case KC_DTYPE_UINT32:
        return ((const uint32_t *)p)[i];
    case KC_DTYPE_INT64:
        return ((const int64_t *)p)[i];
    case KC_DTYPE_UINT64:
        return (int64_t)((const uint64_t *)p)[i];
    case KC_DTYPE_FLOAT:
        return saturate_i64(((const float *)p)[i]);
    case KC_DTYPE_DOUBLE:
        return saturate_i64(((const double *)p)[i]);
    default:
        return 0;
    }
}

static double get_f(const void *p, int dt, int64_t i) {
    switch (dt) {
    case KC_DTYPE_FLOAT:
        return ((const float *)p)[i];
    case KC_DTYPE_DOUBLE:
        return ((const double *)p)[i];
    case KC_DTYPE_UINT64:
        return (double)((const uint64_t *)p)[i];
    default:
        return (double)get_i(p, dt, i);
    }
}

/* Stores an integer, wrapping into narrower integer types as a C conversion does. */
static void put_i(void *p, int dt, int64_t i, int64_t x) {
    switch (dt) {
    case KC_DTYPE_INT8:
        ((int8_t *)p)[i] = (int8_t)x;
        break;
    case KC_DTYPE_UINT8:
        ((uint8_t *)p)[i] = (uint8_t)x;
        break;
    case KC_DTYPE_BOOL:
        ((uint8_t *)p)[i] = x != 0;
        break;
    case KC_DTYPE_INT16:
        ((int16_t *)p)[i] = (int16_t)x;
        break;
    case KC_DTYPE_UINT16:
        ((uint16_t *)p)[i] = (uint16_t)x;
        break;
    case KC_DTYPE_INT32:
        ((int32_t *)p)[i] = (int32_t)x;
        break;
    case KC_DTYPE_UINT32:
        ((uint32_t *)p)[i] = (uint32_t)x;
        break;
    case KC_DTYPE_INT64:
        ((int64_t *)p)[i] = x;
        break;
    case KC_DTYPE_UINT64:
        ((uint64_t *)p)[i] = (uint64_t)x;
        break;
    case KC_DTYPE_FLOAT:
        ((float *)p)[i] = (float)x;
        break;
    case KC_DTYPE_DOUBLE:
        ((double *)p)[i] = (double)x;
        break;
    default:
        break;
    }
}

/* Stores a real number: rounded for floats, saturated for integers. */
static void put_f(void *p, int dt, int64_t i, double x) {
    switch (dt) {
    case KC_DTYPE_FLOAT:
        ((float *)p)[i] = (float)x;
        break;
    case KC_DTYPE_DOUBLE:
        ((double *)p)[i] = x;
        break;
    case KC_DTYPE_BOOL:
        ((uint8_t *)p)[i] = x != 0;
        break;
    case KC_DTYPE_INT8:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), INT8_MIN, INT8_MAX));
        break;
    case KC_DTYPE_UINT8:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), 0, UINT8_MAX));
        break;
    case KC_DTYPE_INT16:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), INT16_MIN, INT16_MAX));
        break;
    case KC_DTYPE_UINT16:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), 0, UINT16_MAX));
        break;
    case KC_DTYPE_INT32:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), INT32_MIN, INT32_MAX));
        break;
    case KC_DTYPE_UINT32:
        put_i(p, dt, i, clamp_i64(saturate_i64(x), 0, UINT32_MAX));
        break;
    case KC_DTYPE_UINT64:
        ((uint64_t *)p)[i] = isnan(x) || x <= 0            ? 0
                             : x >= 18446744073709551615.0 ? UINT64_MAX
                                                           : (uint64_t)x;
        break;
    default:
        put_i(p, dt, i, saturate_i64(x));
        break;
    }
}

/* ---- shared plumbing ---- */

typedef struct fold_ctx {
    kc_graph *g;
    int node;
    const kc_node *n;
    kc_diag *d;
} fold_ctx;

static const kc_value *in_v(const fold_ctx *c, int i) {
    if (i >= c->n->n_inputs || c->n->inputs[i] < 0) return NULL;
    return &c->g->values[c->n->inputs[i]];
}

static kc_value *out_v(const fold_ctx *c, int i) {
    if (i >= c->n->n_outputs || c->n->outputs[i] < 0) return NULL;
    return &c->g->values[c->n->outputs[i]];
}

static void row_major_strides(int rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Copies the elements of an output of the given dims, output element (i0, i1, ...) coming from
 * input element base + sum(ik * st[k]): covers transposes, slices and broadcasts. */
static void strided_copy(void *dst, const void *src, size_t es, int rank, const int64_t *dims,
                         int64_t base, const int64_t *st) {
    int64_t n = kc_numel(rank, dims), ctr[KC_MAX_RANK] = {0}, at = base;
    for (int64_t e = 0; e < n; e++) {
        memcpy((char *)dst + (size_t)e * es, (const char *)src + (size_t)at * es, es);
        for (int i = rank - 1; i >= 0; i--) {
            at += st[i];
            if (++ctr[i] < dims[i]) break;
            at -= st[i] * dims[i];
            ctr[i] = 0;
        }
    }
}

/* Element strides of an input of rank r read as the broadcast output (0 on broadcast dims). */
static void broadcast_strides(int ro, int r, const int64_t *dims, int64_t *st) {
    int64_t s = 1;
    for (int i = ro - 1; i >= 0; i--) {
        int j = i - (ro - r);
        st[i] = j >= 0 && dims[j] != 1 ? s : 0;
        if (j >= 0) s *= dims[j];
    }
}

/* ---- evaluators, one per op; each returns 1, 0 or -1 as kc_fold_node ---- */

static int eval_copy(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int64_t n = y ? kc_value_numel(y) : 0;
    if (n) memcpy(y->data, x->data, (size_t)n * kc_dtype_size(y->dtype));
    return 1;
}

static int eval_Dropout(const fold_ctx *c) {
    /* In training mode the output is random: leave it to whoever refuses or runs it. */
    const kc_value *training = in_v(c, 2);
    if (training && kc_value_numel(training) == 1 && get_i(training->data, training->dtype, 0))
        return 0;
    eval_copy(c);
    kc_value *mask = out_v(c, 1);
    if (mask) {
        /* Inference: nothing is dropped. */
        int64_t n = kc_value_numel(mask);
        for (int64_t i = 0; i < n; i++)
            put_i(mask->data, mask->dtype, i, 1);
    }
    return 1;
}

/* Walks the elements of an output in row-major order with the element index of each operand
 * under multidirectional broadcasting. */
#define FOLD_MAX_OPERANDS 8

typedef struct bcast {
    int n, rank;
    const int64_t *dims;
    int64_t st[FOLD_MAX_OPERANDS][KC_MAX_RANK], at[FOLD_MAX_OPERANDS], ctr[KC_MAX_RANK];
} bcast;

/* Operands of the node, in order from input first: all present (the caller checked n). */
static void bcast_init(bcast *b, const fold_ctx *c, int first, int n, const kc_value *y) {
    memset(b, 0, sizeof *b);
    b->n = n;
    b->rank = y->rank;
    b->dims = y->dims;
    for (int k = 0; k < n; k++) {
        const kc_value *x = in_v(c, first + k);
        broadcast_strides(y->rank, x->rank, x->dims, b->st[k]);
    }
}

static void bcast_step(bcast *b) {
    for (int i = b->rank - 1; i >= 0; i--) {
        for (int k = 0; k < b->n; k++)
            b->at[k] += b->st[k][i];
        if (++b->ctr[i] < b->dims[i]) return;
        for (int k = 0; k < b->n; k++)
            b->at[k] -= b->st[k][i] * b->dims[i];
        b->ctr[i] = 0;
    }
}

static int is_compare(int op) {
    return op == KC_OP_Equal || op == KC_OP_Less || op == KC_OP_Greater ||
           op == KC_OP_LessOrEqual || op == KC_OP_GreaterOrEqual;
}

static int is_logical(int op) {
    return op == KC_OP_And || op == KC_OP_Or || op == KC_OP_Xor;
}

/* A comparison's result from the three relations (all false for a NaN). */
static int compare(int op, int lt, int eq, int gt) {
    switch (op) {
    case KC_OP_Equal:
        return eq;
    case KC_OP_Less:
        return lt;
    case KC_OP_Greater:
        return gt;
    case KC_OP_LessOrEqual:
        return lt || eq;
    default:
        return gt || eq;
    }
}

/* Python's modulo (the sign of the divisor), ONNX Mod with fmod = 0; z != 0. */
static int64_t floor_mod(int64_t x, int64_t z) {
    if (z == -1) return 0; /* INT64_MIN % -1 traps in C */
    int64_t r = x % z;
    return r != 0 && ((r < 0) != (z < 0)) ? r + z : r;
}

/* One float operation in double, rounded once by the store: the float operation itself for
 * + - * / (and exact for Min, Max, Mod). */
static double float_op(int op, double x, double z) {
    switch (op) {
    case KC_OP_Add:
        return x + z;
    case KC_OP_Sub:
        return x - z;
    case KC_OP_Mul:
        return x * z;
    case KC_OP_Div:
        return x / z;
    case KC_OP_Mod:
        return fmod(x, z);
    case KC_OP_Pow:
        return pow(x, z);
    case KC_OP_Min:
        return isnan(x) || isnan(z) ? NAN : x < z ? x : z;
    default: /* Max */
        return isnan(x) || isnan(z) ? NAN : x > z ? x : z;
    }
}

/* Integer operations wrap around; a division by zero is an error (returns 0). */
static int int_op(int op, int fmod_attr, int64_t x, int64_t z, int64_t *r) {
    uint64_t ux = (uint64_t)x, uz = (uint64_t)z;
    switch (op) {
    case KC_OP_Add:
        *r = (int64_t)(ux + uz);
        return 1;
    case KC_OP_Sub:
        *r = (int64_t)(ux - uz);
        return 1;
    case KC_OP_Mul:
        *r = (int64_t)(ux * uz);
        return 1;
    case KC_OP_Min:
        *r = x < z ? x : z;
        return 1;
    case KC_OP_Max:
        *r = x > z ? x : z;
        return 1;
    case KC_OP_Pow: {
        /* Integer powers by squaring, wrapping like the multiplications; x^-n truncates
         * toward zero as 1 / x^n does. */
        if (z < 0) {
            *r = x == 1 ? 1 : x == -1 ? (z % 2 ? -1 : 1) : 0; /* 0 for 0, as the kernel */
            return 1;
        }
        uint64_t acc = 1, base = ux;
        for (uint64_t e = uz; e; e >>= 1) {
            if (e & 1) acc *= base;
            base *= base;
        }
        *r = (int64_t)acc;
        return 1;
    }
    default: /* Div, Mod */
        if (z == 0) return 0;
        if (op == KC_OP_Mod)
            *r = fmod_attr ? (z == -1 ? 0 : x % z) : floor_mod(x, z);
        else
            *r = z == -1 ? (int64_t)(0 - ux) : x / z; /* INT64_MIN / -1 wraps, not traps */
        return 1;
    }
}

/* Arithmetic (Add Sub Mul Div Mod Pow, variadic Min Max), comparisons and And/Or/Xor. The
 * operands of arithmetic have the output's dtype (Pow's exponent may differ: it is read as a
 * number); comparisons read both operands in the first operand's dtype. */
static int eval_binary(const fold_ctx *c) {
    kc_value *y = out_v(c, 0);
    int op = c->n->op, n = c->n->n_inputs;
    int variadic = op == KC_OP_Min || op == KC_OP_Max;
    if (n < 1 || n > FOLD_MAX_OPERANDS || (!variadic && n != 2)) return 0;
    for (int k = 0; k < n; k++)
        if (!in_v(c, k)) return 0;
    int dt = is_compare(op) || is_logical(op) ? in_v(c, 0)->dtype : y->dtype;
    if (!is_float(dt) && !is_integer(dt) && dt != KC_DTYPE_BOOL) return 0;
    int fmod_attr = (int)kc_attr_int(c->n, "fmod", 0);
    if (op == KC_OP_Mod && is_float(dt) && !fmod_attr) return 0; /* ONNX requires fmod = 1 */
    bcast b;
    bcast_init(&b, c, 0, n, y);
    int64_t count = kc_value_numel(y);
    for (int64_t e = 0; e < count; e++, bcast_step(&b)) {
        const void *xa = in_v(c, 0)->data;
        if (is_compare(op) || is_logical(op)) {
            const kc_value *bv = in_v(c, 1);
            int r;
            if (is_logical(op)) {
                int x = get_i(xa, dt, b.at[0]) != 0, z = get_i(bv->data, dt, b.at[1]) != 0;
                r = op == KC_OP_And ? x && z : op == KC_OP_Or ? x || z : x != z;
            } else if (is_float(dt)) {
                double x = get_f(xa, dt, b.at[0]), z = get_f(bv->data, dt, b.at[1]);
                r = compare(op, x<z, x == z, x> z);
            } else {
                int64_t x = get_i(xa, dt, b.at[0]), z = get_i(bv->data, dt, b.at[1]);
                r = compare(op, x<z, x == z, x> z);
            }
            put_i(y->data, y->dtype, e, r);
        } else if (is_float(dt)) {
            double acc = get_f(xa, dt, b.at[0]);
            for (int k = 1; k < n; k++) {
                const kc_value *v = in_v(c, k);
                acc = float_op(op, acc, get_f(v->data, v->dtype, b.at[k]));
            }
            put_f(y->data, dt, e, acc);
        } else {
            int64_t acc = get_i(xa, dt, b.at[0]);
            for (int k = 1; k < n; k++) {
                const kc_value *v = in_v(c, k);
                if (!int_op(op, fmod_attr, acc, get_i(v->data, v->dtype, b.at[k]), &acc)) {
                    kc_error_node(c->d, c->g, c->node,
                                  "integer division by zero in constant inputs");
                    return -1;
                }
            }
            put_i(y->data, dt, e, acc);
        }
    }
    return 1;
}

/* Where(condition, x, y): the selected element's bytes. */
static int eval_Where(const fold_ctx *c) {
    kc_value *y = out_v(c, 0);
    const kc_value *cond = in_v(c, 0), *xs[2] = {in_v(c, 1), in_v(c, 2)};
    if (!cond || !xs[0] || !xs[1]) return 0;
    size_t es = kc_dtype_size(y->dtype);
    bcast b;
    bcast_init(&b, c, 0, 3, y);
    int64_t count = kc_value_numel(y);
    for (int64_t e = 0; e < count; e++, bcast_step(&b)) {
        int k = get_i(cond->data, cond->dtype, b.at[0]) ? 0 : 1;
        memcpy((char *)y->data + (size_t)e * es,
               (const char *)xs[k]->data + (size_t)b.at[1 + k] * es, es);
    }
    return 1;
}

/* Unary ops exporters apply to shapes and small constants, exact or correctly rounded in float
 * (the double result of sqrt and 1/x rounds to the float one). */
static int eval_unary(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int op = c->n->op, dt = y->dtype;
    if (!is_float(dt) && !is_integer(dt) && dt != KC_DTYPE_BOOL) return 0;
    int64_t n = kc_value_numel(y);
    for (int64_t i = 0; i < n; i++) {
        if (op == KC_OP_Not) {
            put_i(y->data, dt, i, !get_i(x->data, x->dtype, i));
        } else if (is_float(dt)) {
            double v = get_f(x->data, dt, i), r;
            switch (op) {
            case KC_OP_Neg:
                r = -v;
                break;
            case KC_OP_Abs:
                r = fabs(v);
                break;
            case KC_OP_Floor:
                r = floor(v);
                break;
            case KC_OP_Ceil:
                r = ceil(v);
                break;
            case KC_OP_Round:
                r = nearbyint(v);
                break; /* half to even in the default mode */
            case KC_OP_Sqrt:
                r = sqrt(v);
                break;
            case KC_OP_Reciprocal:
                r = 1.0 / v;
                break;
            case KC_OP_Relu:
                r = v < 0 ? 0 : v;
                break;
            default:
                r = v > 0 ? 1 : v < 0 ? -1 : v;
                break; /* Sign; NaN stays NaN */
            }
            put_f(y->data, dt, i, r);
        } else {
            int64_t v = get_i(x->data, dt, i), r;
            switch (op) {
            case KC_OP_Neg:
                r = (int64_t)(0 - (uint64_t)v);
                break;
            case KC_OP_Abs:
                r = v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
                break;
            case KC_OP_Relu:
                r = v < 0 ? 0 : v;
                break;
            case KC_OP_Sign:
                r = v > 0 ? 1 : v < 0 ? -1 : 0;
                break;
            case KC_OP_Floor:
            case KC_OP_Ceil:
            case KC_OP_Round:
                r = v;
                break;
            default:
                return 0; /* Sqrt, Reciprocal of integers: not ONNX */
            }
            put_i(y->data, dt, i, r);
        }
    }
    return 1;
}

/* ReduceSum/Prod/Min/Max/Mean: each input element folded into its output element in order (a
 * float accumulates in float, as a kernel would). */
static int eval_reduce(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int op = c->n->op, dt = y->dtype;
    if ((!is_float(dt) && !is_integer(dt)) || x->dtype != dt) return 0;
    int reduced[KC_MAX_RANK] = {0}, noop = 0;
    if (kc_reduce_axes_of(c->g, c->node, x->rank, reduced, &noop, c->d)) return -1;
    int64_t nx = kc_value_numel(x), ny = kc_value_numel(y);
    if (noop) return eval_copy(c);
    if (nx == 0 && (op == KC_OP_ReduceMin || op == KC_OP_ReduceMax || op == KC_OP_ReduceMean))
        return 0; /* no identity to give */
    /* Output element strides of the input's dims (0 on reduced dims): keepdims does not change
     * the flat layout. */
    int64_t ost[KC_MAX_RANK], s = 1, ctr[KC_MAX_RANK] = {0}, at = 0;
    for (int i = x->rank - 1; i >= 0; i--) {
        ost[i] = reduced[i] ? 0 : s;
        if (!reduced[i]) s *= x->dims[i];
    }
    int64_t per = ny ? nx / ny : 0;
    for (int64_t e = 0; e < nx; e++) {
        int first = 1; /* the first element of its output element */
        for (int i = 0; i < x->rank; i++)
            if (reduced[i] && ctr[i]) first = 0;
        if (is_float(dt)) {
            double v = get_f(x->data, dt, e), a = first ? v : get_f(y->data, dt, at);
            if (!first && op == KC_OP_ReduceProd)
                a = a * v; /* the store rounds each step to the dtype */
            else if (!first && (op == KC_OP_ReduceMin || op == KC_OP_ReduceMax))
                a = float_op(op == KC_OP_ReduceMin ? KC_OP_Min : KC_OP_Max, a, v);
            else if (!first)
                a = a + v;
            put_f(y->data, dt, at, a);
        } else {
            int64_t v = get_i(x->data, dt, e), a = first ? v : get_i(y->data, dt, at);
            if (!first)
                a = op == KC_OP_ReduceProd  ? (int64_t)((uint64_t)a * (uint64_t)v)
                    : op == KC_OP_ReduceMin ? (v < a ? v : a)
                    : op == KC_OP_ReduceMax ? (v > a ? v : a)
                                            : (int64_t)((uint64_t)a + (uint64_t)v);
            put_i(y->data, dt, at, a);
        }
        for (int i = x->rank - 1; i >= 0; i--) {
            at += ost[i];
            if (++ctr[i] < x->dims[i]) break;
            at -= ost[i] * x->dims[i];
            ctr[i] = 0;
        }
    }
    if (nx == 0) /* empty reductions: the identity */
        for (int64_t e = 0; e < ny; e++)
            put_i(y->data, dt, e, op == KC_OP_ReduceProd);
    if (op == KC_OP_ReduceMean && per > 0)
        for (int64_t e = 0; e < ny; e++) {
            if (is_float(dt))
                put_f(y->data, dt, e, get_f(y->data, dt, e) / (double)per);
            else
                put_i(y->data, dt, e, get_i(y->data, dt, e) / per);
        }
    return 1;
}

/* Tile: output element (i0, i1, ...) is input element (i0 mod d0, i1 mod d1, ...). */
static int eval_Tile(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    size_t es = kc_dtype_size(y->dtype);
    int64_t xs[KC_MAX_RANK], ctr[KC_MAX_RANK] = {0}, n = kc_value_numel(y);
    row_major_strides(x->rank, x->dims, xs);
    for (int64_t e = 0; e < n; e++) {
        int64_t at = 0;
        for (int i = 0; i < y->rank; i++)
            at += ctr[i] % x->dims[i] * xs[i];
        memcpy((char *)y->data + (size_t)e * es, (const char *)x->data + (size_t)at * es, es);
        for (int i = y->rank - 1; i >= 0 && ++ctr[i] == y->dims[i]; i--)
            ctr[i] = 0;
    }
    return 1;
}

static int eval_Cast(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    if (!is_numeric(x->dtype) || !is_numeric(y->dtype)) return 0;
    int64_t n = kc_value_numel(y);
    for (int64_t i = 0; i < n; i++) {
        if (is_float(x->dtype) || (x->dtype == KC_DTYPE_UINT64 && is_float(y->dtype)))
            put_f(y->data, y->dtype, i, get_f(x->data, x->dtype, i));
        else
            put_i(y->data, y->dtype, i, get_i(x->data, x->dtype, i));
    }
    return 1;
}

static int eval_Clip(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0), *lo_v = in_v(c, 1), *hi_v = in_v(c, 2);
    kc_value *y = out_v(c, 0);
    int dt = y->dtype;
    if (!is_float(dt) && !is_integer(dt)) return 0;
    int64_t n = kc_value_numel(y);
    if (is_float(dt)) {
        double lo = -INFINITY, hi = INFINITY;
        if (kc_node_opset(c->g, c->node) < 11) {
            lo = kc_attr_float(c->n, "min", -FLT_MAX);
            hi = kc_attr_float(c->n, "max", FLT_MAX);
        }
        if (lo_v) lo = get_f(lo_v->data, lo_v->dtype, 0);
        if (hi_v) hi = get_f(hi_v->data, hi_v->dtype, 0);
        for (int64_t i = 0; i < n; i++) {
            double v = get_f(x->data, dt, i);
            v = v < lo ? lo : v > hi ? hi : v; /* NaN passes through */
            put_f(y->data, dt, i, v);
        }
    } else {
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        if (lo_v) lo = get_i(lo_v->data, lo_v->dtype, 0);
        if (hi_v) hi = get_i(hi_v->data, hi_v->dtype, 0);
        for (int64_t i = 0; i < n; i++)
            put_i(y->data, dt, i, clamp_i64(get_i(x->data, dt, i), lo, hi));
    }
    return 1;
}

static int eval_Concat(const fold_ctx *c) {
    kc_value *y = out_v(c, 0);
    int64_t axis;
    if (kc_axis_of(c->g, c->node, y->rank, &axis, c->d)) return -1;
    size_t es = kc_dtype_size(y->dtype);
    int64_t outer = kc_numel((int)axis, y->dims);
    int64_t inner = kc_numel(y->rank - (int)axis - 1, y->dims + axis + 1);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int i = 0; i < c->n->n_inputs; i++) {
            const kc_value *x = in_v(c, i);
            size_t chunk = (size_t)(x->dims[axis] * inner) * es;
            if (chunk) memcpy(dst, (const char *)x->data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    }
    return 1;
}

static int eval_Constant(const fold_ctx *c) {
    kc_value *y = out_v(c, 0);
    int64_t n = kc_value_numel(y);
    const kc_attr *a;
    if ((a = kc_attr_find(c->n, "value")) && a->type == KC_ATTR_TENSOR && a->t) {
        if (n && a->t->data) memcpy(y->data, a->t->data, (size_t)n * kc_dtype_size(y->dtype));
    } else if ((a = kc_attr_find(c->n, "value_float"))) {
        ((float *)y->data)[0] = a->f;
    } else if ((a = kc_attr_find(c->n, "value_int"))) {
        ((int64_t *)y->data)[0] = a->i;
    } else if ((a = kc_attr_find(c->n, "value_floats"))) {
        if (n) memcpy(y->data, a->floats, (size_t)n * sizeof(float));
    } else if ((a = kc_attr_find(c->n, "value_ints"))) {
        if (n) memcpy(y->data, a->ints, (size_t)n * sizeof(int64_t));
    } else {
        return 0;
    }
    return 1;
}

static int eval_ConstantOfShape(const fold_ctx *c) {
    kc_value *y = out_v(c, 0);
    size_t es = kc_dtype_size(y->dtype);
    const kc_attr *a = kc_attr_find(c->n, "value");
    unsigned char fill[8] = {0}; /* the default is float 0 */
    if (a && a->t && a->t->data) memcpy(fill, a->t->data, es);
    int64_t n = kc_value_numel(y);
    for (int64_t i = 0; i < n; i++)
        memcpy((char *)y->data + (size_t)i * es, fill, es);
    return 1;
}

static int eval_Gather(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0), *idx = in_v(c, 1);
    kc_value *y = out_v(c, 0);
    int64_t axis;
    if (kc_axis_of(c->g, c->node, x->rank, &axis, c->d)) return -1;
    size_t es = kc_dtype_size(x->dtype);
    int64_t outer = kc_numel((int)axis, x->dims), dim = x->dims[axis];
    size_t inner = (size_t)kc_numel(x->rank - (int)axis - 1, x->dims + axis + 1) * es;
    int64_t ni = kc_value_numel(idx);
    char *dst = y->data;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t k = 0; k < ni; k++) {
            int64_t j = get_i(idx->data, idx->dtype, k);
            if (j < -dim || j >= dim) {
                kc_error_node(c->d, c->g, c->node, "index %lld is out of range for size %lld",
                              (long long)j, (long long)dim);
                return -1;
            }
            if (j < 0) j += dim;
            if (inner)
                memcpy(dst, (const char *)x->data + ((size_t)o * (size_t)dim + (size_t)j) * inner,
                       inner);
            dst += inner;
        }
    }
    return 1;
}

static int eval_Shape(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int64_t start, end;
    kc_shape_range(c->g, c->node, x->rank, &start, &end);
    for (int64_t i = start; i < end; i++)
        ((int64_t *)y->data)[i - start] = x->dims[i];
    return 1;
}

static int eval_Slice(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    kc_slice s;
    if (kc_slice_of(c->g, c->node, &s, c->d)) return -1;
    int64_t strides[KC_MAX_RANK], st[KC_MAX_RANK], base = 0;
    row_major_strides(x->rank, x->dims, strides);
    for (int i = 0; i < x->rank; i++) {
        base += s.start[i] * strides[i];
        st[i] = s.step[i] * strides[i];
    }
    strided_copy(y->data, x->data, kc_dtype_size(x->dtype), y->rank, y->dims, base, st);
    return 1;
}

static int eval_Transpose(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int64_t perm[KC_MAX_RANK], strides[KC_MAX_RANK], st[KC_MAX_RANK];
    if (kc_perm_of(c->g, c->node, x->rank, perm, c->d)) return -1;
    row_major_strides(x->rank, x->dims, strides);
    for (int i = 0; i < x->rank; i++)
        st[i] = strides[perm[i]];
    strided_copy(y->data, x->data, kc_dtype_size(x->dtype), y->rank, y->dims, 0, st);
    return 1;
}

/* Size reads only its input's shape, like Shape. */
static int eval_Size(const fold_ctx *c) {
    ((int64_t *)out_v(c, 0)->data)[0] = kc_value_numel(in_v(c, 0));
    return 1;
}

static int eval_Range(const fold_ctx *c) {
    const kc_value *start = in_v(c, 0), *delta = in_v(c, 2);
    kc_value *y = out_v(c, 0);
    int64_t n = kc_value_numel(y);
    for (int64_t i = 0; i < n; i++) {
        if (is_float(y->dtype))
            put_f(y->data, y->dtype, i,
                  get_f(start->data, start->dtype, 0) +
                      (double)i * get_f(delta->data, delta->dtype, 0));
        else
            put_i(y->data, y->dtype, i,
                  get_i(start->data, start->dtype, 0) + i * get_i(delta->data, delta->dtype, 0));
    }
    return 1;
}

static int eval_Expand(const fold_ctx *c) {
    const kc_value *x = in_v(c, 0);
    kc_value *y = out_v(c, 0);
    int64_t st[KC_MAX_RANK];
    broadcast_strides(y->rank, x->rank, x->dims, st);
    strided_copy(y->data, x->data, kc_dtype_size(x->dtype), y->rank, y->dims, 0, st);
    return 1;
}

typedef int (*eval_fn)(const fold_ctx *c);

static eval_fn evaluator(int op) {
    switch (op) {
    case KC_OP_Add:
    case KC_OP_Sub:
    case KC_OP_Mul:
    case KC_OP_Div:
    case KC_OP_Mod:
    case KC_OP_Pow:
    case KC_OP_Min:
    case KC_OP_Max:
    case KC_OP_Equal:
    case KC_OP_Less:
    case KC_OP_Greater:
    case KC_OP_LessOrEqual:
    case KC_OP_GreaterOrEqual:
    case KC_OP_And:
    case KC_OP_Or:
    case KC_OP_Xor:
        return eval_binary;
    case KC_OP_Neg:
    case KC_OP_Abs:
    case KC_OP_Floor:
    case KC_OP_Ceil:
    case KC_OP_Round:
    case KC_OP_Sqrt:
    case KC_OP_Reciprocal:
    case KC_OP_Sign:
    case KC_OP_Not:
    case KC_OP_Relu:
        return eval_unary;
    case KC_OP_ReduceSum:
    case KC_OP_ReduceProd:
    case KC_OP_ReduceMin:
    case KC_OP_ReduceMax:
    case KC_OP_ReduceMean:
        return eval_reduce;
    case KC_OP_Where:
        return eval_Where;
    case KC_OP_Tile:
        return eval_Tile;
    case KC_OP_Cast:
        return eval_Cast;
    case KC_OP_Clip:
        return eval_Clip;
    case KC_OP_Concat:
        return eval_Concat;
    case KC_OP_Constant:
        return eval_Constant;
    case KC_OP_ConstantOfShape:
        return eval_ConstantOfShape;
    case KC_OP_Dropout:
        return eval_Dropout;
    case KC_OP_Gather:
        return eval_Gather;
    case KC_OP_Shape:
        return eval_Shape;
    case KC_OP_Slice:
        return eval_Slice;
    case KC_OP_Transpose:
        return eval_Transpose;
    case KC_OP_Size:
        return eval_Size;
    case KC_OP_Range:
        return eval_Range;
    case KC_OP_Expand:
        return eval_Expand;
    /* Same bytes, new shape. */
    case KC_OP_Flatten:
    case KC_OP_Identity:
    case KC_OP_Reshape:
    case KC_OP_Squeeze:
    case KC_OP_Unsqueeze:
        return eval_copy;
    default:
        return NULL;
    }
}

int kc_fold_node(kc_graph *g, int node, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    eval_fn fn = n->op > 0 && n->op < KC_OP_COUNT ? evaluator(n->op) : NULL;
    if (!fn) return 0;
    fold_ctx c = {g, node, n, d};
    for (int i = 0; i < n->n_inputs; i++) {
        const kc_value *x = in_v(&c, i);
        if (!x || ((n->op == KC_OP_Shape || n->op == KC_OP_Size) && i == 0)) continue;
        if (!(x->flags & KC_VALUE_CONST) || kc_value_numel(x) < 0) return 0;
        if (kc_value_numel(x) > 0 && !x->data) return 0;
    }
    for (int i = 0; i < n->n_outputs; i++) {
        const kc_value *y = out_v(&c, i);
        if (!y) continue;
        int64_t numel = kc_value_numel(y);
        size_t es = kc_dtype_size(y->dtype);
        if (numel < 0 || es == 0 || numel > KC_FOLD_MAX_BYTES / (int64_t)es) return 0;
    }
    /* An evaluation that fails leaves the outputs as they were (its arena bytes are dropped). */
    void *data[KC_SHAPE_MAX_OUTPUTS] = {0};
    for (int i = 0; i < n->n_outputs && i < KC_SHAPE_MAX_OUTPUTS; i++) {
        kc_value *y = out_v(&c, i);
        if (!y) continue;
        data[i] = y->data;
        y->data = kc_alloc(g, (size_t)kc_value_numel(y) * kc_dtype_size(y->dtype) + 1);
    }
    int r = n->n_outputs <= KC_SHAPE_MAX_OUTPUTS ? fn(&c) : 0;
    for (int i = 0; i < n->n_outputs && i < KC_SHAPE_MAX_OUTPUTS; i++) {
        kc_value *y = out_v(&c, i);
        if (!y) continue;
        if (r == 1) {
            y->flags |= KC_VALUE_CONST;
            y->producer = -1;
        } else {
            y->data = data[i];
        }
    }
    return r;
}
