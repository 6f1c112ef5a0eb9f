/* Shape functions of the elementwise ops: unary math and activations (same shape), broadcasting
 * binary and variadic ops, comparisons and logic (bool results), Where, PRelu and CastLike. */
#include <string.h>

#include "elementwise.h"
#include "shapes.h"

static void shape_of(kc_shape *o, int dtype, const kc_value *v) {
    o->dtype = dtype;
    o->rank = v->rank;
    for (int i = 0; i < v->rank; i++)
        o->dims[i] = v->dims[i];
}

static void dims_text(char *buf, size_t size, const kc_value *v) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < v->rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)v->dims[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

/* y has x's shape and dtype (or out_dtype when it is not 0). */
static int elementwise(const kc_graph *g, int node, int out_dtype, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    shape_of(&out[0], out_dtype ? out_dtype : x->dtype, x);
    return 0;
}

/* The numpy broadcast of inputs [first, n_inputs) into out[0]; with same_dtype, the inputs must
 * share input first's dtype. out[0].dtype is input first's. */
static int broadcast_all(const kc_graph *g, int node, int first, int same_dtype, kc_shape *out,
                         kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *v0 = kc_shape_need(g, node, first, d);
    if (!v0) return 1;
    kc_shape *o = &out[0];
    shape_of(o, v0->dtype, v0);
    for (int i = first + 1; i < n->n_inputs; i++) {
        const kc_value *v = kc_shape_need(g, node, i, d);
        if (!v) return 1;
        if (same_dtype && v->dtype != v0->dtype) {
            kc_error_node(d, g, node, "inputs '%s' (%s) and '%s' (%s) differ in type", v0->name,
                          kc_dtype_name(v0->dtype), v->name, kc_dtype_name(v->dtype));
            return 1;
        }
        if (kc_broadcast_shape(o->rank, o->dims, v->rank, v->dims, &o->rank, o->dims)) {
            char buf[128];
            dims_text(buf, sizeof buf, v);
            kc_error_node(d, g, node, "input '%s' %s does not broadcast with the other inputs",
                          v->name, buf);
            return 1;
        }
    }
    return 0;
}

#define SAME_SHAPE_OP(name)                                                                        \
    int kc_shape_##name(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {                  \
        return elementwise(g, node, 0, out, d);                                                    \
    }

SAME_SHAPE_OP(Abs)
SAME_SHAPE_OP(Neg)
SAME_SHAPE_OP(Sign)
SAME_SHAPE_OP(Exp)
SAME_SHAPE_OP(Log)
SAME_SHAPE_OP(Sqrt)
SAME_SHAPE_OP(Reciprocal)
SAME_SHAPE_OP(Floor)
SAME_SHAPE_OP(Ceil)
SAME_SHAPE_OP(Round)
SAME_SHAPE_OP(Sin)
SAME_SHAPE_OP(Cos)
SAME_SHAPE_OP(Tan)
SAME_SHAPE_OP(Asin)
SAME_SHAPE_OP(Acos)
SAME_SHAPE_OP(Atan)
SAME_SHAPE_OP(Sinh)
SAME_SHAPE_OP(Cosh)
SAME_SHAPE_OP(Asinh)
SAME_SHAPE_OP(Acosh)
SAME_SHAPE_OP(Atanh)
SAME_SHAPE_OP(Erf)
SAME_SHAPE_OP(Not)
SAME_SHAPE_OP(Sigmoid)
SAME_SHAPE_OP(Tanh)
SAME_SHAPE_OP(LeakyRelu)
SAME_SHAPE_OP(HardSigmoid)
SAME_SHAPE_OP(HardSwish)
SAME_SHAPE_OP(Elu)
SAME_SHAPE_OP(Selu)
SAME_SHAPE_OP(Celu)
SAME_SHAPE_OP(Softplus)
SAME_SHAPE_OP(Softsign)
SAME_SHAPE_OP(ThresholdedRelu)
SAME_SHAPE_OP(Gelu)
SAME_SHAPE_OP(Mish)

int kc_shape_IsNaN(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return elementwise(g, node, KC_DTYPE_BOOL, out, d);
}

int kc_shape_IsInf(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return elementwise(g, node, KC_DTYPE_BOOL, out, d);
}

int kc_shape_CastLike(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *like = kc_shape_need(g, node, 1, d);
    if (!x || !like) return 1;
    shape_of(&out[0], like->dtype, x);
    return 0;
}

/* Arithmetic over same-typed operands: the result has their type. */
#define BROADCAST_OP(name)                                                                         \
    int kc_shape_##name(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {                  \
        return broadcast_all(g, node, 0, 1, out, d);                                               \
    }

BROADCAST_OP(Max)
BROADCAST_OP(Min)
BROADCAST_OP(Sum)
BROADCAST_OP(Mean)
BROADCAST_OP(Mod)
BROADCAST_OP(BitShift)

/* Comparisons and logic: bool results. */
#define PREDICATE_OP(name)                                                                         \
    int kc_shape_##name(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {                  \
        int errors = broadcast_all(g, node, 0, 1, out, d);                                         \
        out[0].dtype = KC_DTYPE_BOOL;                                                              \
        return errors;                                                                             \
    }

PREDICATE_OP(Equal)
PREDICATE_OP(Less)
PREDICATE_OP(LessOrEqual)
PREDICATE_OP(Greater)
PREDICATE_OP(GreaterOrEqual)
PREDICATE_OP(And)
PREDICATE_OP(Or)
PREDICATE_OP(Xor)

/* Pow's exponent may have another numeric type; the result has the base's. */
int kc_shape_Pow(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return broadcast_all(g, node, 0, 0, out, d);
}

int kc_shape_Where(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *cond = kc_shape_need(g, node, 0, d), *x = kc_shape_need(g, node, 1, d),
                   *y = kc_shape_need(g, node, 2, d);
    if (!cond || !x || !y) return 1;
    if (cond->dtype != KC_DTYPE_BOOL) {
        kc_error_node(d, g, node, "condition '%s' is %s, not bool", cond->name,
                      kc_dtype_name(cond->dtype));
        return 1;
    }
    if (x->dtype != y->dtype) {
        kc_error_node(d, g, node, "X '%s' (%s) and Y '%s' (%s) differ in type", x->name,
                      kc_dtype_name(x->dtype), y->name, kc_dtype_name(y->dtype));
        return 1;
    }
    int errors = broadcast_all(g, node, 0, 0, out, d);
    out[0].dtype = x->dtype;
    return errors;
}

int kc_prelu_slope_dims(const kc_graph *g, int node, int *rank, int64_t *dims) {
    const kc_value *x = kc_shape_input(g, node, 0), *slope = kc_shape_input(g, node, 1);
    /* PRelu before opset 7 took one slope per channel (dim 1), not a numpy broadcast. */
    if (kc_node_opset(g, node) < 7 && slope->rank == 1 && x->rank >= 2 &&
        slope->dims[0] == x->dims[1] && slope->dims[0] != 1) {
        *rank = x->rank - 1;
        dims[0] = slope->dims[0];
        for (int i = 1; i < *rank; i++)
            dims[i] = 1;
        return 0;
    }
    *rank = slope->rank;
    memcpy(dims, slope->dims, sizeof(int64_t) * (size_t)slope->rank);
    return 0;
}

int kc_shape_PRelu(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *slope = kc_shape_need(g, node, 1, d);
    if (!x || !slope) return 1;
    if (x->dtype != slope->dtype) {
        kc_error_node(d, g, node, "X '%s' (%s) and slope '%s' (%s) differ in type", x->name,
                      kc_dtype_name(x->dtype), slope->name, kc_dtype_name(slope->dtype));
        return 1;
    }
    int rank, r;
    int64_t dims[KC_MAX_RANK], res[KC_MAX_RANK];
    kc_prelu_slope_dims(g, node, &rank, dims);
    /* The slope broadcasts to X, never X to the slope. */
    int bad = rank > x->rank || kc_broadcast_shape(x->rank, x->dims, rank, dims, &r, res);
    for (int i = 0; !bad && i < r; i++)
        bad = res[i] != x->dims[i];
    if (bad) {
        char b1[128], b2[128];
        dims_text(b1, sizeof b1, slope);
        dims_text(b2, sizeof b2, x);
        kc_error_node(d, g, node, "slope '%s' %s does not broadcast to X %s", slope->name, b1, b2);
        return 1;
    }
    shape_of(&out[0], x->dtype, x);
    return 0;
}
