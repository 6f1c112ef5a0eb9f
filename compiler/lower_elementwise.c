/* Lowering of the elementwise ops: broadcasting binary and variadic arithmetic (float32 through
 * f32_binary with its activation epilogue, integers and bool through binary_typed),
 * comparisons and logic, unary math, Cast/CastLike, Where, and Clip with bounds computed at run
 * time; and the activation ops read as kann_act epilogues. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "elementwise.h"
#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* ---- activations ---------------------------------------------------------------------------- */

/* A float32 scalar constant input i of n, or dflt when it is omitted; 0 when not constant. */
static int const_float_input(const kc_graph *g, const kc_node *n, int i, float dflt, float *out) {
    int v = kc_input(n, i);
    *out = dflt;
    if (v < 0) return 1;
    const kc_value *val = kc_val(g, v);
    if (!(val->flags & KC_VALUE_CONST) || !val->data || val->dtype != KC_DTYPE_FLOAT ||
        kc_value_numel(val) != 1)
        return 0;
    *out = *(const float *)val->data;
    return 1;
}

int kc_activation_of(const kc_graph *g, int node, kc_epilogue *epi, const char **why) {
    const kc_node *n = &g->nodes[node];
    const char *ignored;
    if (!why) why = &ignored;
    *why = "not an activation";
    int x = kc_input(n, 0);
    if (x < 0) return 0;
    if (kc_val(g, x)->dtype != KC_DTYPE_FLOAT) {
        *why = "its input is not float32";
        return 0;
    }
    float alpha = 0.0f, beta = 0.0f;
    int kind;
    switch (n->op) {
    case KC_OP_Relu:
        kind = KANN_ACT_RELU;
        break;
    case KC_OP_Clip:
        if (kc_node_opset(g, node) < 11) {
            alpha = kc_attr_float(n, "min", -FLT_MAX);
            beta = kc_attr_float(n, "max", FLT_MAX);
        } else if (!const_float_input(g, n, 1, -FLT_MAX, &alpha) ||
                   !const_float_input(g, n, 2, FLT_MAX, &beta)) {
            *why = "its bounds are not constant float32 scalars";
            return 0;
        }
        kind = alpha == 0.0f && beta >= FLT_MAX ? KANN_ACT_RELU : KANN_ACT_CLIP;
        if (kind == KANN_ACT_RELU) alpha = beta = 0.0f;
        break;
    case KC_OP_Sigmoid:
        kind = KANN_ACT_SIGMOID;
        break;
    case KC_OP_Tanh:
        kind = KANN_ACT_TANH;
        break;
    case KC_OP_LeakyRelu:
        kind = KANN_ACT_LEAKY_RELU;
        alpha = kc_attr_float(n, "alpha", 0.01f);
        break;
    case KC_OP_HardSigmoid:
        kind = KANN_ACT_HARD_SIGMOID;
        alpha = kc_attr_float(n, "alpha", 0.2f);
        beta = kc_attr_float(n, "beta", 0.5f);
        break;
    case KC_OP_HardSwish:
        kind = KANN_ACT_HARD_SWISH;
        break;
    case KC_OP_Elu:
        kind = KANN_ACT_ELU;
        alpha = kc_attr_float(n, "alpha", 1.0f);
        break;
    case KC_OP_Selu:
        kind = KANN_ACT_SELU;
        alpha = kc_attr_float(n, "alpha", 1.67326319217681884765625f);
        beta = kc_attr_float(n, "gamma", 1.05070102214813232421875f);
        break;
    case KC_OP_Celu:
        kind = KANN_ACT_CELU;
        alpha = kc_attr_float(n, "alpha", 1.0f);
        if (alpha == 0.0f) {
            *why = "alpha 0 divides by zero";
            return 0;
        }
        break;
    case KC_OP_Softplus:
        kind = KANN_ACT_SOFTPLUS;
        break;
    case KC_OP_Softsign:
        kind = KANN_ACT_SOFTSIGN;
        break;
    case KC_OP_ThresholdedRelu:
        kind = KANN_ACT_THRESHOLDED_RELU;
        alpha = kc_attr_float(n, "alpha", 1.0f);
        break;
    case KC_OP_Gelu: {
        const char *approx = kc_attr_string(n, "approximate", "none");
        if (!strcmp(approx, "none")) {
            kind = KANN_ACT_GELU;
        } else if (!strcmp(approx, "tanh")) {
            kind = KANN_ACT_GELU_TANH;
        } else {
            *why = "approximate must be 'none' or 'tanh'";
            return 0;
        }
        break;
    }
    case KC_OP_Mish:
        kind = KANN_ACT_MISH;
        break;
    default:
        return 0;
    }
    epi->act = kind;
    epi->alpha = alpha;
    epi->beta = beta;
    return 1;
}

/* ---- operands ------------------------------------------------------------------------------- */

/* The dtypes the elementwise kernels compute on. */
static int kernel_dtype(int dtype) {
    switch (dtype) {
    case KC_DTYPE_FLOAT:
    case KC_DTYPE_UINT8:
    case KC_DTYPE_INT8:
    case KC_DTYPE_INT32:
    case KC_DTYPE_INT64:
    case KC_DTYPE_BOOL:
        return 1;
    default:
        return 0;
    }
}

static int is_int(int dtype) {
    return dtype == KC_DTYPE_UINT8 || dtype == KC_DTYPE_INT8 || dtype == KC_DTYPE_INT32 ||
           dtype == KC_DTYPE_INT64;
}

/* Requires value v to have a dtype the kernels compute on and a known, not too large shape. */
static int need_typed(kc_graph *g, int node, int v, const char *what, kc_diag *d) {
    if (v < 0) {
        kc_error_node(d, g, node, "%s is required", what);
        return 1;
    }
    const kc_value *x = kc_val(g, v);
    if (!kernel_dtype(x->dtype)) {
        kc_error_node(d, g, node,
                      "%s '%s' is %s; elementwise kernels compute float32, uint8, int8, int32, "
                      "int64 and bool",
                      what, x->name, kc_dtype_name(x->dtype));
        return 1;
    }
    if (kc_value_numel(x) < 0) {
        kc_error_node(d, g, node, "%s '%s' has an unknown shape", what, x->name);
        return 1;
    }
    if (kc_value_numel(x) > UINT32_MAX / 8) {
        kc_error_node(d, g, node, "%s '%s' is too large (%lld elements)", what, x->name,
                      (long long)kc_value_numel(x));
        return 1;
    }
    if (x->rank > KANN_MAX_RANK) {
        kc_error_node(d, g, node, "%s '%s' has rank %d, above the limit of %d", what, x->name,
                      x->rank, KANN_MAX_RANK);
        return 1;
    }
    return 0;
}

/* An operand as the kernels see it: a value and the dims it broadcasts with. */
typedef struct operand {
    int v;
    int rank;
    int64_t dims[KC_MAX_RANK];
} operand;

static operand operand_of(const kc_graph *g, int v) {
    operand o = {v, kc_val(g, v)->rank, {0}};
    memcpy(o.dims, kc_val(g, v)->dims, sizeof(int64_t) * (size_t)o.rank);
    return o;
}

/* Element strides of o read as an output of rank r: right-aligned, zero on broadcast dims. */
static void operand_strides(const operand *o, int r, uint32_t *strides) {
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; i--) {
        int j = i - (r - o->rank);
        if (j < 0 || o->dims[j] == 1) {
            strides[i] = 0;
        } else {
            strides[i] = (uint32_t)stride;
            stride *= o->dims[j];
        }
    }
}

/* The output index space: y's dims, a scalar as one element of rank 1. */
static int output_space(const kc_graph *g, int y, uint32_t *dims) {
    const kc_value *yv = kc_val(g, y);
    int r = yv->rank ? yv->rank : 1;
    for (int i = 0; i < r; i++)
        dims[i] = yv->rank ? (uint32_t)yv->dims[i] : 1;
    return r;
}

/* A fresh arena value named after base, of dtype and shape's shape, for intermediate
 * results. */
static int temp_value(kc_graph *g, const char *base, int dtype, int shape) {
    int t = kc_add_value(g, kc_unique_name(g, base));
    kc_value *tv = &g->values[t];
    const kc_value *sv = kc_val(g, shape);
    tv->dtype = dtype;
    tv->rank = sv->rank;
    memcpy(tv->dims, sv->dims, sizeof(int64_t) * (size_t)sv->rank);
    return t;
}

/* ---- calls ---------------------------------------------------------------------------------- */

static void add_f32_binary(kc_graph *g, kc_program *p, int node, const operand *a, const operand *b,
                           int y, kann_binary_op op, kann_act act) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_BINARY, node);
    kann_binary_args *args = c->args;
    args->op = op;
    args->rank = (uint32_t)output_space(g, y, args->dims);
    operand_strides(a, (int)args->rank, args->a_strides);
    operand_strides(b, (int)args->rank, args->b_strides);
    args->act = act;
    kc_bind(c, offsetof(kann_binary_args, a), a->v, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, b), b->v, 0, 0);
    kc_bind(c, offsetof(kann_binary_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(kc_val(g, y));
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
}

static void add_typed_binary(kc_graph *g, kc_program *p, int node, const operand *a,
                             const operand *b, int y, kann_binary_op op, int dtype) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_BINARY_TYPED, node);
    kann_binary_typed_args *args = c->args;
    args->op = op;
    args->dtype = (uint32_t)dtype;
    args->rank = (uint32_t)output_space(g, y, args->dims);
    operand_strides(a, (int)args->rank, args->a_strides);
    operand_strides(b, (int)args->rank, args->b_strides);
    kc_bind(c, offsetof(kann_binary_typed_args, a), a->v, 0, 0);
    kc_bind(c, offsetof(kann_binary_typed_args, b), b->v, 0, 0);
    kc_bind(c, offsetof(kann_binary_typed_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(kc_val(g, y));
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
}

static void add_cast(kc_graph *g, kc_program *p, int node, int x, int y) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_CAST, node);
    kann_cast_args *args = c->args;
    args->count = (uint32_t)kc_value_numel(kc_val(g, y));
    args->from = (uint32_t)kc_val(g, x)->dtype;
    args->to = (uint32_t)kc_val(g, y)->dtype;
    kc_bind(c, offsetof(kann_cast_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_cast_args, y), y, 0, 1);
    kc_set_tile(c, args->count, 64, 0, 0);
    c->macs = args->count;
}

static void add_ternary(kc_graph *g, kc_program *p, int node, kann_ternary_op op, const operand *a,
                        const operand *b, const operand *cc, int y) {
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_TERNARY, node);
    kann_ternary_args *args = c->args;
    args->op = op;
    args->dtype = (uint32_t)kc_val(g, y)->dtype;
    args->rank = (uint32_t)output_space(g, y, args->dims);
    operand_strides(a, (int)args->rank, args->a_strides);
    operand_strides(b, (int)args->rank, args->b_strides);
    operand_strides(cc, (int)args->rank, args->c_strides);
    kc_bind(c, offsetof(kann_ternary_args, a), a->v, 0, 0);
    kc_bind(c, offsetof(kann_ternary_args, b), b->v, 0, 0);
    kc_bind(c, offsetof(kann_ternary_args, c), cc->v, 0, 0);
    kc_bind(c, offsetof(kann_ternary_args, y), y, 0, 1);
    uint32_t count = (uint32_t)kc_value_numel(kc_val(g, y));
    kc_set_tile(c, count, 64, 0, 0);
    c->macs = count;
}

/* ---- binary and variadic ops ---------------------------------------------------------------- */

static int is_predicate(kann_binary_op op) {
    return op >= KANN_BINARY_EQUAL && op <= KANN_BINARY_XOR;
}

/* The kernel op of node n, or -1 after reporting an attribute value it cannot take. */
static int binary_op_of(kc_graph *g, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    switch (n->op) {
    case KC_OP_Add:
    case KC_OP_Sum:
    case KC_OP_Mean:
        return KANN_BINARY_ADD;
    case KC_OP_Sub:
        return KANN_BINARY_SUB;
    case KC_OP_Mul:
        return KANN_BINARY_MUL;
    case KC_OP_Div:
        return KANN_BINARY_DIV;
    case KC_OP_Pow:
        return KANN_BINARY_POW;
    case KC_OP_Max:
        return KANN_BINARY_MAX;
    case KC_OP_Min:
        return KANN_BINARY_MIN;
    case KC_OP_Mod:
        return kc_attr_int(n, "fmod", 0) ? KANN_BINARY_FMOD : KANN_BINARY_MOD;
    case KC_OP_PRelu:
        return KANN_BINARY_PRELU;
    case KC_OP_Equal:
        return KANN_BINARY_EQUAL;
    case KC_OP_Less:
        return KANN_BINARY_LESS;
    case KC_OP_LessOrEqual:
        return KANN_BINARY_LESS_OR_EQUAL;
    case KC_OP_Greater:
        return KANN_BINARY_GREATER;
    case KC_OP_GreaterOrEqual:
        return KANN_BINARY_GREATER_OR_EQUAL;
    case KC_OP_And:
        return KANN_BINARY_AND;
    case KC_OP_Or:
        return KANN_BINARY_OR;
    case KC_OP_Xor:
        return KANN_BINARY_XOR;
    case KC_OP_BitShift: {
        const char *dir = kc_attr_string(n, "direction", "");
        if (!strcmp(dir, "LEFT")) return KANN_BINARY_SHIFT_LEFT;
        if (!strcmp(dir, "RIGHT")) return KANN_BINARY_SHIFT_RIGHT;
        kc_error_node(d, g, id, "direction '%s' is neither LEFT nor RIGHT", dir);
        return -1;
    }
    default:
        kc_error_node(d, g, id, "not a binary elementwise op");
        return -1;
    }
}

/* Whether op runs on operands of dtype, through f32_binary (*typed = 0) or binary_typed. */
static int binary_supported(kann_binary_op op, int dtype, int *typed) {
    *typed = dtype != KC_DTYPE_FLOAT || is_predicate(op);
    if (dtype == KC_DTYPE_FLOAT)
        return op <= KANN_BINARY_FMOD || op == KANN_BINARY_PRELU ||
               (op >= KANN_BINARY_EQUAL && op <= KANN_BINARY_GREATER_OR_EQUAL);
    if (dtype == KC_DTYPE_BOOL)
        return op == KANN_BINARY_AND || op == KANN_BINARY_OR || op == KANN_BINARY_XOR ||
               op == KANN_BINARY_EQUAL;
    if (!is_int(dtype)) return 0;
    if (op == KANN_BINARY_SHIFT_LEFT || op == KANN_BINARY_SHIFT_RIGHT)
        return dtype == KC_DTYPE_UINT8;
    return op <= KANN_BINARY_MOD || (op >= KANN_BINARY_EQUAL && op <= KANN_BINARY_GREATER_OR_EQUAL);
}

/* Operand B of an Add/Sub/Mul/Div before opset 7 with broadcast=1: its dims start at axis
 * (default: aligned to the end, as numpy). Returns 0, or 1 after an error. */
static int legacy_broadcast(kc_graph *g, int id, const operand *a, operand *b, int y, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    if (kc_node_opset(g, id) >= 7 || !kc_attr_int(n, "broadcast", 0)) return 0;
    int64_t axis = kc_attr_int(n, "axis", a->rank - b->rank);
    if (axis < 0) axis += a->rank;
    int trailing = a->rank - (int)axis - b->rank;
    const kc_value *yv = kc_val(g, y);
    int same = yv->rank == a->rank && !memcmp(yv->dims, a->dims, sizeof(int64_t) * (size_t)a->rank);
    if (axis < 0 || trailing < 0 || !same) {
        kc_error_node(d, g, id, "broadcast axis %lld does not place B (rank %d) inside A (rank %d)",
                      (long long)kc_attr_int(n, "axis", a->rank - b->rank), b->rank, a->rank);
        return 1;
    }
    for (int i = 0; i < trailing; i++)
        b->dims[b->rank++] = 1;
    for (int i = 0; i < b->rank; i++) {
        int64_t ad = a->dims[axis + i];
        if (b->dims[i] != 1 && b->dims[i] != ad) {
            kc_error_node(d, g, id, "B dim %d (%lld) does not match A dim %lld (%lld)", i,
                          (long long)b->dims[i], (long long)(axis + i), (long long)ad);
            return 1;
        }
    }
    return 0;
}

/* Pow whose operands differ in type: the exponent is converted to the base's type, an integer
 * base with a float32 exponent computes in float32 (as ONNX Runtime does) and converts back. */
static int lower_mixed_pow(kc_graph *g, kc_program *p, int id, const operand *a, const operand *b,
                           int y, kc_diag *d) {
    int at = kc_val(g, a->v)->dtype, bt = kc_val(g, b->v)->dtype;
    if (at != KC_DTYPE_FLOAT && !is_int(at)) {
        kc_error_node(d, g, id, "Pow of a %s base is not supported", kc_dtype_name(at));
        return 1;
    }
    const char *yname = kc_val(g, y)->name;
    if (at == KC_DTYPE_FLOAT || is_int(bt)) {
        operand eb = *b;
        eb.v = temp_value(g, kc_sprintf(g, "%s.exponent", yname), at, b->v);
        add_cast(g, p, id, b->v, eb.v);
        if (at == KC_DTYPE_FLOAT)
            add_f32_binary(g, p, id, a, &eb, y, KANN_BINARY_POW, kc_node_act(&g->nodes[id]));
        else
            add_typed_binary(g, p, id, a, &eb, y, KANN_BINARY_POW, at);
        return 0;
    }
    /* integer base, float32 exponent */
    operand fa = *a;
    fa.v = temp_value(g, kc_sprintf(g, "%s.base", yname), KC_DTYPE_FLOAT, a->v);
    add_cast(g, p, id, a->v, fa.v);
    int yf = temp_value(g, kc_sprintf(g, "%s.pow", yname), KC_DTYPE_FLOAT, y);
    add_f32_binary(g, p, id, &fa, b, yf, KANN_BINARY_POW, (kann_act){0, 0, 0, 0});
    add_cast(g, p, id, yf, y);
    return 0;
}

int kc_lower_elementwise_binary(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0];
    int errors = 0;
    for (int i = 0; i < n->n_inputs; i++)
        errors += need_typed(g, id, n->inputs[i], "input", d);
    errors += need_typed(g, id, y, "output", d);
    if (errors) return errors;
    int op = binary_op_of(g, id, d);
    if (op < 0) return 1;
    int dtype = kc_val(g, n->inputs[0])->dtype;
    int variadic =
        n->op == KC_OP_Sum || n->op == KC_OP_Mean || n->op == KC_OP_Max || n->op == KC_OP_Min;
    if (!variadic && n->n_inputs != 2) {
        kc_error_node(d, g, id, "expects 2 inputs, not %d", n->n_inputs);
        return 1;
    }
    operand a = operand_of(g, n->inputs[0]);
    if (n->op == KC_OP_Pow && kc_val(g, n->inputs[1])->dtype != dtype) {
        operand b = operand_of(g, n->inputs[1]);
        return lower_mixed_pow(g, p, id, &a, &b, y, d);
    }
    int typed;
    if (!binary_supported((kann_binary_op)op, dtype, &typed)) {
        kc_error_node(d, g, id, "%s%s is not supported on %s operands", kc_ops[n->op].name,
                      n->op == KC_OP_Mod && op == KANN_BINARY_MOD ? " with fmod=0" : "",
                      kc_dtype_name(dtype));
        return 1;
    }
    kann_act act = kc_node_act(n);
    if (n->n_inputs == 1) { /* a variadic op of one input is a copy */
        if (dtype == KC_DTYPE_FLOAT) {
            kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_ACT, id);
            kann_act_args *args = c->args;
            args->count = (uint32_t)kc_value_numel(kc_val(g, y));
            args->act = act;
            kc_bind(c, offsetof(kann_act_args, x), a.v, 0, 0);
            kc_bind(c, offsetof(kann_act_args, y), y, 0, 1);
            kc_set_tile(c, args->count, 64, 0, 0);
            c->macs = args->count;
        } else {
            add_cast(g, p, id, a.v, y);
        }
        return 0;
    }
    operand b;
    if (n->op == KC_OP_PRelu) {
        b.v = n->inputs[1];
        kc_prelu_slope_dims(g, id, &b.rank, b.dims);
    } else {
        b = operand_of(g, n->inputs[1]);
        if (legacy_broadcast(g, id, &a, &b, y, d)) return 1;
    }
    /* A chain over the inputs, accumulated in y: y = in0 op in1, then y = y op in_k. Every input
     * broadcasts to y, so each step computes over y's whole index space. */
    int mean = n->op == KC_OP_Mean;
    operand acc = operand_of(g, y);
    for (int i = 1; i < n->n_inputs; i++) {
        if (i > 1) b = operand_of(g, n->inputs[i]);
        const operand *lhs = i == 1 ? &a : &acc;
        int last = i == n->n_inputs - 1 && !mean;
        if (typed)
            add_typed_binary(g, p, id, lhs, &b, y, (kann_binary_op)op, dtype);
        else
            add_f32_binary(g, p, id, lhs, &b, y, (kann_binary_op)op,
                           last ? act : (kann_act){0, 0, 0, 0});
    }
    if (mean) {
        float count = (float)n->n_inputs;
        operand k = {
            kc_new_const_f32(g, kc_sprintf(g, "%s.count", n->name), 0, NULL, &count), 0, {0}};
        add_f32_binary(g, p, id, &acc, &k, y, KANN_BINARY_DIV, act);
    }
    return 0;
}

/* ---- unary ops ------------------------------------------------------------------------------ */

static int unary_op_of(int op) {
    switch (op) {
    case KC_OP_Abs:
        return KANN_UNARY_ABS;
    case KC_OP_Neg:
        return KANN_UNARY_NEG;
    case KC_OP_Sign:
        return KANN_UNARY_SIGN;
    case KC_OP_Exp:
        return KANN_UNARY_EXP;
    case KC_OP_Log:
        return KANN_UNARY_LOG;
    case KC_OP_Sqrt:
        return KANN_UNARY_SQRT;
    case KC_OP_Reciprocal:
        return KANN_UNARY_RECIPROCAL;
    case KC_OP_Floor:
        return KANN_UNARY_FLOOR;
    case KC_OP_Ceil:
        return KANN_UNARY_CEIL;
    case KC_OP_Round:
        return KANN_UNARY_ROUND;
    case KC_OP_Sin:
        return KANN_UNARY_SIN;
    case KC_OP_Cos:
        return KANN_UNARY_COS;
    case KC_OP_Tan:
        return KANN_UNARY_TAN;
    case KC_OP_Asin:
        return KANN_UNARY_ASIN;
    case KC_OP_Acos:
        return KANN_UNARY_ACOS;
    case KC_OP_Atan:
        return KANN_UNARY_ATAN;
    case KC_OP_Sinh:
        return KANN_UNARY_SINH;
    case KC_OP_Cosh:
        return KANN_UNARY_COSH;
    case KC_OP_Asinh:
        return KANN_UNARY_ASINH;
    case KC_OP_Acosh:
        return KANN_UNARY_ACOSH;
    case KC_OP_Atanh:
        return KANN_UNARY_ATANH;
    case KC_OP_Erf:
        return KANN_UNARY_ERF;
    case KC_OP_IsNaN:
        return KANN_UNARY_IS_NAN;
    case KC_OP_IsInf:
        return KANN_UNARY_IS_INF;
    case KC_OP_Not:
        return KANN_UNARY_NOT;
    default:
        return -1;
    }
}

int kc_lower_unary(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    int errors = need_typed(g, id, x, "input", d) + need_typed(g, id, y, "output", d);
    if (errors) return errors;
    int op = unary_op_of(n->op), dtype = kc_val(g, x)->dtype;
    int ok = op >= 0 && (dtype == KC_DTYPE_FLOAT  ? op != KANN_UNARY_NOT
                         : dtype == KC_DTYPE_BOOL ? op == KANN_UNARY_NOT
                                                  : op == KANN_UNARY_ABS || op == KANN_UNARY_NEG ||
                                                        op == KANN_UNARY_SIGN);
    if (!ok) {
        kc_error_node(d, g, id, "%s is not supported on %s", kc_ops[n->op].name,
                      kc_dtype_name(dtype));
        return 1;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_UNARY, id);
    kann_unary_args *args = c->args;
    args->op = (uint32_t)op;
    args->dtype = (uint32_t)dtype;
    args->count = (uint32_t)kc_value_numel(kc_val(g, y));
    if (op == KANN_UNARY_IS_INF)
        args->flags = (kc_attr_int(n, "detect_positive", 1) ? 1u : 0u) |
                      (kc_attr_int(n, "detect_negative", 1) ? 2u : 0u);
    kc_bind(c, offsetof(kann_unary_args, x), x, 0, 0);
    kc_bind(c, offsetof(kann_unary_args, y), y, 0, 1);
    kc_set_tile(c, args->count, 64, 0, 0);
    c->macs = args->count;
    return 0;
}

/* ---- Cast, CastLike, Where, Clip ------------------------------------------------------------ */

int kc_lower_cast(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    int errors = need_typed(g, id, x, "input", d) + need_typed(g, id, y, "output", d);
    if (errors) return errors;
    add_cast(g, p, id, x, y);
    return 0;
}

int kc_lower_where(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0];
    int errors = need_typed(g, id, y, "output", d);
    for (int i = 0; i < 3; i++)
        errors += need_typed(g, id, kc_input(n, i), i ? "input" : "condition", d);
    if (errors) return errors;
    operand cond = operand_of(g, n->inputs[0]), a = operand_of(g, n->inputs[1]),
            b = operand_of(g, n->inputs[2]);
    add_ternary(g, p, id, KANN_TERNARY_WHERE, &cond, &a, &b, y);
    return 0;
}

/* A scalar constant of dtype holding its lowest (upper = 0) or highest value. */
static int extreme_const(kc_graph *g, int dtype, int upper, const char *base) {
    union {
        float f;
        uint8_t u8;
        int8_t i8;
        int32_t i32;
        int64_t i64;
    } v;
    memset(&v, 0, sizeof v);
    switch (dtype) {
    case KC_DTYPE_FLOAT:
        v.f = upper ? INFINITY : -INFINITY;
        break;
    case KC_DTYPE_UINT8:
        v.u8 = upper ? UINT8_MAX : 0;
        break;
    case KC_DTYPE_INT8:
        v.i8 = upper ? INT8_MAX : INT8_MIN;
        break;
    case KC_DTYPE_INT32:
        v.i32 = upper ? INT32_MAX : INT32_MIN;
        break;
    default:
        v.i64 = upper ? INT64_MAX : INT64_MIN;
        break;
    }
    return kc_add_const(g, kc_unique_name(g, base), dtype, 0, NULL, &v);
}

/* Clip whose bounds are computed at run time, or of integers: the ternary kernel, an absent
 * bound read as the type's extreme. */
int kc_lower_clip(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int x = kc_input(n, 0), y = n->outputs[0];
    int errors = need_typed(g, id, x, "input", d) + need_typed(g, id, y, "output", d);
    if (errors) return errors;
    int dtype = kc_val(g, x)->dtype;
    if (dtype == KC_DTYPE_BOOL) {
        kc_error_node(d, g, id, "Clip of bool is not supported");
        return 1;
    }
    if (kc_node_opset(g, id) < 11) {
        kc_error_node(d, g, id, "Clip before opset 11 takes float32 only");
        return 1;
    }
    int bounds[2];
    for (int i = 0; i < 2; i++) {
        bounds[i] = kc_input(n, 1 + i);
        if (bounds[i] < 0)
            bounds[i] =
                extreme_const(g, dtype, i, kc_sprintf(g, "%s.%s", n->name, i ? "max" : "min"));
        else if ((errors = need_typed(g, id, bounds[i], i ? "max" : "min", d)) != 0)
            return errors;
    }
    operand xo = operand_of(g, x), lo = operand_of(g, bounds[0]), hi = operand_of(g, bounds[1]);
    add_ternary(g, p, id, KANN_TERNARY_CLIP, &xo, &lo, &hi, y);
    return 0;
}
