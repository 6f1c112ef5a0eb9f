/* Constant folding inside the shapes pass: the exporters' shape arithmetic, arithmetic and casts
 * on constants, data movement ops, and the memory cap. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag.h"
#include "fold_constants.h"
#include "ir.h"
#include "passes.h"

/* ---- building graphs ---- */

static int input(kc_graph *g, const char *name, int dtype, int rank, const int64_t *dims) {
    int v = kc_add_value(g, name);
    g->values[v].dtype = dtype;
    g->values[v].rank = rank;
    for (int i = 0; i < rank; i++)
        g->values[v].dims[i] = dims[i];
    g->values[v].flags |= KC_VALUE_INPUT;
    int *in = kc_alloc(g, sizeof(int) * (size_t)(g->n_inputs + 1));
    if (g->n_inputs) memcpy(in, g->inputs, sizeof(int) * (size_t)g->n_inputs);
    in[g->n_inputs++] = v;
    g->inputs = in;
    return v;
}

static int i64s(kc_graph *g, int rank, const int64_t *dims, const int64_t *vals) {
    return kc_add_const(g, kc_sprintf(g, "c%d", g->n_values), KC_DTYPE_INT64, rank, dims, vals);
}

static int f32s(kc_graph *g, int rank, const int64_t *dims, const float *vals) {
    return kc_add_const(g, kc_sprintf(g, "c%d", g->n_values), KC_DTYPE_FLOAT, rank, dims, vals);
}

static int i32s(kc_graph *g, int rank, const int64_t *dims, const int32_t *vals) {
    return kc_add_const(g, kc_sprintf(g, "c%d", g->n_values), KC_DTYPE_INT32, rank, dims, vals);
}

static int node(kc_graph *g, int op, int opset, int n_in, const int *in, int n_out) {
    int outs[8];
    for (int i = 0; i < n_out; i++)
        outs[i] = kc_add_value(g, kc_sprintf(g, "%s_%d_out%d", kc_ops[op].name, g->n_nodes, i));
    int n = kc_add_node(g, op, NULL, kc_sprintf(g, "%s_%d", kc_ops[op].name, g->n_nodes), n_in, in,
                        n_out, outs);
    g->nodes[n].opset = opset;
    return n;
}

static int out_of(const kc_graph *g, int n) {
    return g->nodes[n].outputs[0];
}

static void attr_int(kc_graph *g, int n, const char *name, int64_t v) {
    kc_node_add_attr(g, n, name, KC_ATTR_INT)->i = v;
}

static void attr_ints(kc_graph *g, int n, const char *name, int count, const int64_t *v) {
    kc_attr *a = kc_node_add_attr(g, n, name, KC_ATTR_INTS);
    a->n = count;
    a->ints = kc_alloc(g, sizeof(int64_t) * (size_t)(count ? count : 1));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)count);
}

static void attr_tensor(kc_graph *g, int n, const char *name, int dtype, const void *one) {
    kc_attr *a = kc_node_add_attr(g, n, name, KC_ATTR_TENSOR);
    a->t = kc_alloc(g, sizeof *a->t);
    a->t->dtype = dtype;
    a->t->rank = 1;
    a->t->dims[0] = 1;
    a->t->data = kc_alloc(g, 8);
    memcpy(a->t->data, one, kc_dtype_size(dtype));
}

static char *messages;
static size_t messages_len;

static int run(kc_graph *g, kc_stats *st) {
    free(messages);
    messages = NULL;
    FILE *f = open_memstream(&messages, &messages_len);
    kc_diag d;
    kc_diag_init(&d, "test.onnx", f);
    int errors = kc_pass_shapes_constants(g, NULL, 0, &d, st);
    fclose(f);
    if (getenv("KC_TEST_VERBOSE")) fputs(messages, stderr);
    return errors;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})

static void check_i64(const kc_graph *g, int v, int n, const int64_t *want) {
    const kc_value *val = &g->values[v];
    assert_true(val->flags & KC_VALUE_CONST);
    assert_int_equal(val->dtype, KC_DTYPE_INT64);
    assert_int_equal(kc_value_numel(val), n);
    for (int i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)val->data)[i], want[i]);
}

static void check_f32(const kc_graph *g, int v, int n, const float *want) {
    const kc_value *val = &g->values[v];
    assert_true(val->flags & KC_VALUE_CONST);
    assert_int_equal(val->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(kc_value_numel(val), n);
    for (int i = 0; i < n; i++)
        assert_float_equal(((const float *)val->data)[i], want[i], 0);
}

static int setup(void **state) {
    *state = kc_graph_new();
    return 0;
}

static int teardown(void **state) {
    kc_graph_free(*state);
    free(messages);
    messages = NULL;
    return 0;
}

/* The pattern PyTorch's exporter writes for x.view(x.size(0), -1). */
static void test_exporter_reshape_pattern(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(-1, 8, 7, 7));
    int shape = node(g, KC_OP_Shape, 13, 1, &x, 1);
    int64_t zero = 0;
    int idx = i64s(g, 0, NULL, &zero);
    int gather = node(g, KC_OP_Gather, 13, 2, (int[]){out_of(g, shape), idx}, 1);
    attr_int(g, gather, "axis", 0);
    int unsq =
        node(g, KC_OP_Unsqueeze, 13, 2, (int[]){out_of(g, gather), i64s(g, 1, D(1), D(0))}, 1);
    int cat = node(g, KC_OP_Concat, 13, 2, (int[]){out_of(g, unsq), i64s(g, 1, D(1), D(-1))}, 1);
    attr_int(g, cat, "axis", 0);
    int reshape = node(g, KC_OP_Reshape, 13, 2, (int[]){x, out_of(g, cat)}, 1);
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    assert_int_equal(st.constants_folded, 4);
    assert_true(g->nodes[shape].dead && g->nodes[gather].dead && g->nodes[unsq].dead &&
                g->nodes[cat].dead);
    assert_false(g->nodes[reshape].dead);
    check_i64(g, out_of(g, shape), 4, D(1, 8, 7, 7));
    check_i64(g, out_of(g, gather), 1, D(1));
    assert_int_equal(g->values[out_of(g, gather)].rank, 0);
    check_i64(g, out_of(g, cat), 2, D(1, -1));
    assert_int_equal(g->values[out_of(g, cat)].producer, -1);
    const kc_value *y = &g->values[out_of(g, reshape)];
    assert_int_equal(y->rank, 2);
    assert_int_equal(y->dims[0], 1);
    assert_int_equal(y->dims[1], 392);
    assert_int_equal(kc_count_live_nodes(g), 1);
}

/* Spatial size arithmetic in the style of resize/upsample exporters: Shape, Slice, Cast, Mul,
 * Cast back, Concat. */
static void test_shape_arithmetic_chain(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 3, 10, 20));
    int shape = node(g, KC_OP_Shape, 13, 1, &x, 1);
    int hw = node(g, KC_OP_Slice, 13, 3,
                  (int[]){out_of(g, shape), i64s(g, 1, D(1), D(2)), i64s(g, 1, D(1), D(4))}, 1);
    int castf = node(g, KC_OP_Cast, 13, 1, (int[]){out_of(g, hw)}, 1);
    attr_int(g, castf, "to", KC_DTYPE_FLOAT);
    int mul =
        node(g, KC_OP_Mul, 14, 2, (int[]){out_of(g, castf), f32s(g, 1, D(1), (float[]){1.5f})}, 1);
    int casti = node(g, KC_OP_Cast, 13, 1, (int[]){out_of(g, mul)}, 1);
    attr_int(g, casti, "to", KC_DTYPE_INT64);
    int nc = node(g, KC_OP_Slice, 13, 3,
                  (int[]){out_of(g, shape), i64s(g, 1, D(1), D(0)), i64s(g, 1, D(1), D(2))}, 1);
    int cat = node(g, KC_OP_Concat, 13, 2, (int[]){out_of(g, nc), out_of(g, casti)}, 1);
    attr_int(g, cat, "axis", -1);
    int cos = node(g, KC_OP_ConstantOfShape, 9, 1, (int[]){out_of(g, cat)}, 1);
    float one = 1.0f;
    attr_tensor(g, cos, "value", KC_DTYPE_FLOAT, &one);
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    assert_int_equal(st.constants_folded, 8);
    check_i64(g, out_of(g, cat), 4, D(1, 3, 15, 30));
    const kc_value *c = &g->values[out_of(g, cos)];
    assert_int_equal(c->rank, 4);
    assert_int_equal(kc_value_numel(c), 1 * 3 * 15 * 30);
    assert_float_equal(((const float *)c->data)[1349], 1.0f, 0);
}

static void test_integer_arithmetic(void **state) {
    kc_graph *g = *state;
    int a = i64s(g, 1, D(4), D(-7, 7, -7, 7));
    int b = i64s(g, 1, D(4), D(2, -2, -2, 2));
    int div = node(g, KC_OP_Div, 14, 2, (int[]){a, b}, 1);
    int s = i64s(g, 0, NULL, D(10));
    int add = node(g, KC_OP_Add, 14, 2, (int[]){a, s}, 1);
    int sub = node(g, KC_OP_Sub, 14, 2, (int[]){s, a}, 1);
    int m = i64s(g, 2, D(2, 1), D(1, 2));
    int mul = node(g, KC_OP_Mul, 14, 2, (int[]){m, b}, 1); /* [2,1] x [4] -> [2,4] */
    int32_t i32a[2] = {INT32_MIN, 9}, i32b[2] = {-1, 4};
    int div32 =
        node(g, KC_OP_Div, 14, 2, (int[]){i32s(g, 1, D(2), i32a), i32s(g, 1, D(2), i32b)}, 1);
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    assert_int_equal(st.constants_folded, 5);
    /* Truncation toward zero, as ONNX Runtime and the ONNX reference evaluator do. */
    check_i64(g, out_of(g, div), 4, D(-3, -3, 3, 3));
    check_i64(g, out_of(g, add), 4, D(3, 17, 3, 17));
    check_i64(g, out_of(g, sub), 4, D(17, 3, 17, 3));
    check_i64(g, out_of(g, mul), 8, D(2, -2, -2, 2, 4, -4, -4, 4));
    const kc_value *d32 = &g->values[out_of(g, div32)];
    assert_int_equal(d32->dtype, KC_DTYPE_INT32);
    assert_int_equal(((const int32_t *)d32->data)[0], INT32_MIN); /* wraps, no trap */
    assert_int_equal(((const int32_t *)d32->data)[1], 2);
}

static void test_division_by_zero(void **state) {
    kc_graph *g = *state;
    int bad =
        node(g, KC_OP_Div, 14, 2, (int[]){i64s(g, 1, D(2), D(1, 2)), i64s(g, 1, D(2), D(1, 0))}, 1);
    int after = node(g, KC_OP_Add, 14, 2, (int[]){out_of(g, bad), i64s(g, 0, NULL, D(1))}, 1);
    int fdiv = node(g, KC_OP_Div, 14, 2,
                    (int[]){f32s(g, 1, D(2), (float[]){1, -1}), f32s(g, 0, NULL, (float[]){0})}, 1);
    assert_int_equal(run(g, NULL), 1);
    assert_non_null(strstr(messages, "node 'Div_0'"));
    assert_non_null(strstr(messages, "division by zero"));
    assert_false(g->nodes[bad].dead);
    assert_false(g->nodes[after].dead);
    check_f32(g, out_of(g, fdiv), 2, (float[]){INFINITY, -INFINITY});
}

static void test_float_arithmetic_and_activations(void **state) {
    kc_graph *g = *state;
    int a = f32s(g, 2, D(2, 2), (float[]){-1.5f, 0.25f, 3.0f, -0.0f});
    int b = f32s(g, 1, D(2), (float[]){0.1f, 2.0f});
    int add = node(g, KC_OP_Add, 14, 2, (int[]){a, b}, 1);
    int sub = node(g, KC_OP_Sub, 14, 2, (int[]){a, b}, 1);
    int div = node(g, KC_OP_Div, 14, 2, (int[]){a, b}, 1);
    int relu = node(g, KC_OP_Relu, 14, 1, &a, 1);
    int clip = node(g, KC_OP_Clip, 13, 3,
                    (int[]){a, f32s(g, 0, NULL, (float[]){-1}), f32s(g, 0, NULL, (float[]){1})}, 1);
    int clip6 = node(g, KC_OP_Clip, 6, 1, &a, 1);
    kc_node_add_attr(g, clip6, "min", KC_ATTR_FLOAT)->f = 0.0f;
    kc_node_add_attr(g, clip6, "max", KC_ATTR_FLOAT)->f = 2.0f;
    int clip_min = node(g, KC_OP_Clip, 13, 2, (int[]){a, f32s(g, 0, NULL, (float[]){0.5f})}, 1);
    assert_int_equal(run(g, NULL), 0);
    check_f32(g, out_of(g, add), 4, (float[]){-1.5f + 0.1f, 2.25f, 3.0f + 0.1f, 2.0f});
    check_f32(g, out_of(g, sub), 4, (float[]){-1.5f - 0.1f, -1.75f, 3.0f - 0.1f, -2.0f});
    check_f32(g, out_of(g, div), 4, (float[]){-1.5f / 0.1f, 0.125f, 3.0f / 0.1f, -0.0f});
    check_f32(g, out_of(g, relu), 4, (float[]){0, 0.25f, 3, 0});
    check_f32(g, out_of(g, clip), 4, (float[]){-1, 0.25f, 1, 0});
    check_f32(g, out_of(g, clip6), 4, (float[]){0, 0.25f, 2, 0});
    check_f32(g, out_of(g, clip_min), 4, (float[]){0.5f, 0.5f, 3, 0.5f});
}

static void test_cast(void **state) {
    kc_graph *g = *state;
    int f = f32s(g, 1, D(6), (float[]){1.9f, -1.9f, NAN, 1e20f, -1e20f, 0});
    int to_i32 = node(g, KC_OP_Cast, 13, 1, &f, 1);
    attr_int(g, to_i32, "to", KC_DTYPE_INT32);
    int to_u8 = node(g, KC_OP_Cast, 13, 1, &f, 1);
    attr_int(g, to_u8, "to", KC_DTYPE_UINT8);
    int to_bool = node(g, KC_OP_Cast, 13, 1, &f, 1);
    attr_int(g, to_bool, "to", KC_DTYPE_BOOL);
    int to_f64 = node(g, KC_OP_Cast, 13, 1, &f, 1);
    attr_int(g, to_f64, "to", KC_DTYPE_DOUBLE);
    int big = i64s(g, 1, D(2), D(16777217, -300));
    int i_to_f = node(g, KC_OP_Cast, 13, 1, &big, 1);
    attr_int(g, i_to_f, "to", KC_DTYPE_FLOAT);
    int i_to_i8 = node(g, KC_OP_Cast, 13, 1, &big, 1);
    attr_int(g, i_to_i8, "to", KC_DTYPE_INT8);
    assert_int_equal(run(g, NULL), 0);
    const int32_t *i32 = g->values[out_of(g, to_i32)].data;
    assert_int_equal(i32[0], 1);
    assert_int_equal(i32[1], -1);
    assert_int_equal(i32[2], 0);
    assert_int_equal(i32[3], INT32_MAX);
    assert_int_equal(i32[4], INT32_MIN);
    const uint8_t *u8 = g->values[out_of(g, to_u8)].data;
    assert_int_equal(u8[0], 1);
    assert_int_equal(u8[1], 0);
    assert_int_equal(u8[3], 255);
    const uint8_t *b = g->values[out_of(g, to_bool)].data;
    assert_int_equal(g->values[out_of(g, to_bool)].dtype, KC_DTYPE_BOOL);
    assert_memory_equal(b, ((uint8_t[]){1, 1, 1, 1, 1, 0}), 6);
    const double *f64 = g->values[out_of(g, to_f64)].data;
    assert_true(f64[0] == (double)1.9f && isnan(f64[2]));
    check_f32(g, out_of(g, i_to_f), 2, (float[]){16777216.0f, -300.0f});
    const int8_t *i8 = g->values[out_of(g, i_to_i8)].data;
    assert_int_equal(i8[0], 1); /* 16777217 mod 256, as a C conversion wraps */
    assert_int_equal(i8[1], (int8_t)-300);
}

static void test_data_movement(void **state) {
    kc_graph *g = *state;
    int64_t vals[24];
    for (int i = 0; i < 24; i++)
        vals[i] = i;
    int x = i64s(g, 3, D(2, 3, 4), vals);
    int tr = node(g, KC_OP_Transpose, 13, 1, &x, 1);
    attr_ints(g, tr, "perm", 3, D(2, 0, 1));
    int sl = node(g, KC_OP_Slice, 13, 5,
                  (int[]){x, i64s(g, 1, D(2), D(-1, 1)), i64s(g, 1, D(2), D(INT64_MIN, 3)),
                          i64s(g, 1, D(2), D(2, 1)), i64s(g, 1, D(2), D(-2, 1))},
                  1);
    int ga = node(g, KC_OP_Gather, 13, 2, (int[]){x, i64s(g, 1, D(2), D(-1, 0))}, 1);
    attr_int(g, ga, "axis", 1);
    int cat = node(g, KC_OP_Concat, 13, 2, (int[]){x, out_of(g, ga)}, 1);
    attr_int(g, cat, "axis", 1);
    int fl = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    int un = node(g, KC_OP_Unsqueeze, 13, 2, (int[]){x, i64s(g, 1, D(1), D(0))}, 1);
    int sq = node(g, KC_OP_Squeeze, 13, 2, (int[]){out_of(g, un), i64s(g, 1, D(1), D(0))}, 1);
    int id = node(g, KC_OP_Identity, 16, 1, &x, 1);
    int dr = node(g, KC_OP_Dropout, 13, 1, &x, 2);
    int sh = node(g, KC_OP_Shape, 15, 1, &x, 1);
    attr_int(g, sh, "start", 1);
    attr_int(g, sh, "end", -1);
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    assert_int_equal(st.constants_folded, 10);
    check_i64(
        g, out_of(g, tr), 24,
        D(0, 4, 8, 12, 16, 20, 1, 5, 9, 13, 17, 21, 2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23));
    /* axis 2 from 3 down by 2 (3, 1); axis 1 from 1 to 3 (1, 2). */
    check_i64(g, out_of(g, sl), 8, D(7, 5, 11, 9, 19, 17, 23, 21));
    check_i64(g, out_of(g, ga), 16, D(8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15));
    const kc_value *c = &g->values[out_of(g, cat)];
    assert_int_equal(c->dims[1], 5);
    assert_int_equal(((const int64_t *)c->data)[12], 8);
    assert_int_equal(((const int64_t *)c->data)[20], 12);
    assert_int_equal(g->values[out_of(g, fl)].dims[1], 12);
    check_i64(g, out_of(g, fl), 24, vals);
    assert_int_equal(g->values[out_of(g, un)].rank, 4);
    check_i64(g, out_of(g, sq), 24, vals);
    assert_int_equal(g->values[out_of(g, sq)].rank, 3);
    check_i64(g, out_of(g, id), 24, vals);
    check_i64(g, out_of(g, dr), 24, vals);
    const kc_value *mask = &g->values[g->nodes[dr].outputs[1]];
    assert_int_equal(mask->dtype, KC_DTYPE_BOOL);
    assert_int_equal(((const uint8_t *)mask->data)[23], 1);
    check_i64(g, out_of(g, sh), 1, D(3));
}

static void test_training_dropout_not_folded(void **state) {
    kc_graph *g = *state;
    int x = f32s(g, 1, D(4), (float[]){1, 2, 3, 4});
    uint8_t yes = 1;
    int training = kc_add_const(g, "training", KC_DTYPE_BOOL, 0, NULL, &yes);
    int dr =
        node(g, KC_OP_Dropout, 13, 3, (int[]){x, f32s(g, 0, NULL, (float[]){0.5f}), training}, 2);
    assert_int_equal(run(g, NULL), 0);
    assert_false(g->nodes[dr].dead);
    assert_int_equal(g->values[out_of(g, dr)].dims[0], 4);
}

static void test_constant_node(void **state) {
    kc_graph *g = *state;
    int c = node(g, KC_OP_Constant, 13, 0, NULL, 1);
    attr_ints(g, c, "value_ints", 3, D(4, 5, 6));
    int cf = node(g, KC_OP_Constant, 13, 0, NULL, 1);
    kc_node_add_attr(g, cf, "value_float", KC_ATTR_FLOAT)->f = 2.5f;
    assert_int_equal(run(g, NULL), 0);
    check_i64(g, out_of(g, c), 3, D(4, 5, 6));
    check_f32(g, out_of(g, cf), 1, (float[]){2.5f});
    assert_int_equal(g->values[out_of(g, cf)].rank, 0);
}

static void test_not_folded(void **state) {
    kc_graph *g = *state;
    /* 4 GiB of zeros: the shape is inferred, the contents are not built. */
    int big =
        node(g, KC_OP_ConstantOfShape, 9, 1, (int[]){i64s(g, 1, D(2), D(1 << 15, 1 << 15))}, 1);
    int x = input(g, "x", KC_DTYPE_FLOAT, 2, D(2, 3));
    int relu = node(g, KC_OP_Relu, 14, 1, &x, 1); /* not constant */
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    assert_int_equal(st.constants_folded, 0);
    assert_false(g->nodes[big].dead);
    assert_false(g->values[out_of(g, big)].flags & KC_VALUE_CONST);
    assert_int_equal(g->values[out_of(g, big)].dims[1], 1 << 15);
    assert_false(g->nodes[relu].dead);
}

static void check_bool(const kc_graph *g, int v, int n, const uint8_t *want) {
    const kc_value *val = &g->values[v];
    assert_true(val->flags & KC_VALUE_CONST);
    assert_int_equal(val->dtype, KC_DTYPE_BOOL);
    assert_int_equal(kc_value_numel(val), n);
    for (int i = 0; i < n; i++)
        assert_int_equal(((const uint8_t *)val->data)[i], want[i]);
}

/* The window padding torchvision's Swin computes for F.pad: (window - size % window) % window
 * per side, concatenated, then reversed through Reshape/Slice(step -1)/Transpose and cast: all
 * of it must fold for Pad to get constant pads. */
static void test_swin_pad_arithmetic(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 56, 56, 96));
    int shape = node(g, KC_OP_Shape, 13, 1, &x, 1);
    int w = node(g, KC_OP_Gather, 13, 2, (int[]){out_of(g, shape), i64s(g, 0, NULL, D(2))}, 1);
    int window = i64s(g, 0, NULL, D(7 + 3)); /* 56 % 10 = 6: pad 4 */
    int m1 = node(g, KC_OP_Mod, 13, 2, (int[]){out_of(g, w), window}, 1);
    int sub = node(g, KC_OP_Sub, 14, 2, (int[]){window, out_of(g, m1)}, 1);
    int m2 = node(g, KC_OP_Mod, 13, 2, (int[]){out_of(g, sub), window}, 1);
    int u = node(g, KC_OP_Unsqueeze, 13, 2, (int[]){out_of(g, m2), i64s(g, 1, D(1), D(0))}, 1);
    int cat = node(g, KC_OP_Concat, 13, 3,
                   (int[]){i64s(g, 1, D(2), D(0, 0)), out_of(g, u), i64s(g, 1, D(1), D(0))}, 1);
    attr_int(g, cat, "axis", 0);
    int neg = node(g, KC_OP_Neg, 13, 1, (int[]){out_of(g, cat)}, 1);
    int back = node(g, KC_OP_Slice, 13, 5,
                    (int[]){out_of(g, neg), i64s(g, 1, D(1), D(-1)), i64s(g, 1, D(1), D(INT64_MIN)),
                            i64s(g, 1, D(1), D(0)), i64s(g, 1, D(1), D(-1))},
                    1);
    kc_stats st = {0};
    assert_int_equal(run(g, &st), 0);
    check_i64(g, out_of(g, m2), 1, D(4));
    check_i64(g, out_of(g, cat), 4, D(0, 0, 4, 0));
    check_i64(g, out_of(g, back), 4, D(0, -4, 0, 0));
    assert_int_equal(kc_count_live_nodes(g), 0);
}

/* Reshape targets with -1 entries filled in the exporters' way, Where(Equal(s, -1), fill, s),
 * and the other comparisons and boolean ops. */
static void test_compare_where_logic(void **state) {
    kc_graph *g = *state;
    int s = i64s(g, 1, D(4), D(1, -1, 8, -1));
    int eq = node(g, KC_OP_Equal, 13, 2, (int[]){s, i64s(g, 0, NULL, D(-1))}, 1);
    int wh = node(g, KC_OP_Where, 16, 3, (int[]){out_of(g, eq), i64s(g, 1, D(1), D(1)), s}, 1);
    int a = f32s(g, 1, D(4), (float[]){1, 2, NAN, 4});
    int b = f32s(g, 0, NULL, (float[]){2});
    int lt = node(g, KC_OP_Less, 13, 2, (int[]){a, b}, 1);
    int ge = node(g, KC_OP_GreaterOrEqual, 16, 2, (int[]){a, b}, 1);
    int le = node(g, KC_OP_LessOrEqual, 16, 2, (int[]){a, b}, 1);
    int gt = node(g, KC_OP_Greater, 13, 2, (int[]){s, i64s(g, 0, NULL, D(0))}, 1);
    int nt = node(g, KC_OP_Not, 1, 1, (int[]){out_of(g, lt)}, 1);
    int and = node(g, KC_OP_And, 7, 2, (int[]){out_of(g, nt), out_of(g, le)}, 1);
    int xor = node(g, KC_OP_Xor, 7, 2, (int[]){out_of(g, lt), out_of(g, ge)}, 1);
    assert_int_equal(run(g, NULL), 0);
    check_bool(g, out_of(g, eq), 4, (const uint8_t[]){0, 1, 0, 1});
    check_i64(g, out_of(g, wh), 4, D(1, 1, 8, 1));
    check_bool(g, out_of(g, lt), 4, (const uint8_t[]){1, 0, 0, 0}); /* NaN compares false */
    check_bool(g, out_of(g, ge), 4, (const uint8_t[]){0, 1, 0, 1});
    check_bool(g, out_of(g, le), 4, (const uint8_t[]){1, 1, 0, 0});
    check_bool(g, out_of(g, gt), 4, (const uint8_t[]){1, 0, 1, 0});
    check_bool(g, out_of(g, and), 4, (const uint8_t[]){0, 1, 0, 0});
    check_bool(g, out_of(g, xor), 4, (const uint8_t[]){1, 1, 0, 1});
}

static void test_min_max_pow_mod(void **state) {
    kc_graph *g = *state;
    int a = i64s(g, 1, D(4), D(-7, 7, -7, 7));
    int b = i64s(g, 1, D(4), D(3, -3, -3, 3));
    int mod = node(g, KC_OP_Mod, 13, 2, (int[]){a, b}, 1); /* Python's % */
    int fmod = node(g, KC_OP_Mod, 13, 2, (int[]){a, b}, 1);
    attr_int(g, fmod, "fmod", 1); /* C's % */
    int mx = node(g, KC_OP_Max, 13, 3, (int[]){a, b, i64s(g, 0, NULL, D(5))}, 1);
    int mn = node(g, KC_OP_Min, 13, 2, (int[]){a, b}, 1);
    int pw = node(g, KC_OP_Pow, 15, 2,
                  (int[]){i64s(g, 1, D(3), D(3, 2, -2)), i64s(g, 1, D(3), D(4, -1, 3))}, 1);
    int fa = f32s(g, 1, D(2), (float[]){-7.5f, 2.0f});
    int fpw = node(g, KC_OP_Pow, 15, 2, (int[]){fa, i32s(g, 0, NULL, (int32_t[]){2})}, 1);
    int ffm = node(g, KC_OP_Mod, 13, 2, (int[]){fa, f32s(g, 0, NULL, (float[]){2.0f})}, 1);
    attr_int(g, ffm, "fmod", 1);
    int fbad = node(g, KC_OP_Mod, 13, 2, (int[]){fa, f32s(g, 0, NULL, (float[]){2.0f})}, 1);
    int fmx = node(g, KC_OP_Max, 13, 2, (int[]){fa, f32s(g, 0, NULL, (float[]){0.5f})}, 1);
    assert_int_equal(run(g, NULL), 0);
    check_i64(g, out_of(g, mod), 4, D(2, -2, -1, 1));
    check_i64(g, out_of(g, fmod), 4, D(-1, 1, -1, 1));
    check_i64(g, out_of(g, mx), 4, D(5, 7, 5, 7));
    check_i64(g, out_of(g, mn), 4, D(-7, -3, -7, 3));
    check_i64(g, out_of(g, pw), 3, D(81, 0, -8));
    check_f32(g, out_of(g, fpw), 2, (float[]){56.25f, 4.0f});
    check_f32(g, out_of(g, ffm), 2, (float[]){-1.5f, 0.0f});
    check_f32(g, out_of(g, fmx), 2, (float[]){0.5f, 2.0f});
    /* Float Mod needs fmod = 1: left for the lowering to refuse, not folded */
    assert_false(g->values[out_of(g, fbad)].flags & KC_VALUE_CONST);
}

static void test_unary(void **state) {
    kc_graph *g = *state;
    int f = f32s(g, 1, D(5), (float[]){2.5f, -2.5f, 3.5f, -0.0f, 2.0f});
    int ops[] = {KC_OP_Neg,   KC_OP_Abs,  KC_OP_Floor,      KC_OP_Ceil,
                 KC_OP_Round, KC_OP_Sqrt, KC_OP_Reciprocal, KC_OP_Sign};
    int outs[8];
    for (int i = 0; i < 8; i++)
        outs[i] = out_of(g, node(g, ops[i], 13, 1, &f, 1));
    int in = i64s(g, 1, D(3), D(-4, 0, 9));
    int ineg = node(g, KC_OP_Neg, 13, 1, &in, 1);
    int iabs = node(g, KC_OP_Abs, 13, 1, &in, 1);
    int isgn = node(g, KC_OP_Sign, 13, 1, &in, 1);
    assert_int_equal(run(g, NULL), 0);
    check_f32(g, outs[0], 5, (float[]){-2.5f, 2.5f, -3.5f, 0.0f, -2.0f});
    check_f32(g, outs[1], 5, (float[]){2.5f, 2.5f, 3.5f, 0.0f, 2.0f});
    check_f32(g, outs[2], 5, (float[]){2, -3, 3, 0, 2});
    check_f32(g, outs[3], 5, (float[]){3, -2, 4, 0, 2});
    check_f32(g, outs[4], 5, (float[]){2, -2, 4, 0, 2}); /* halves to even */
    const float *sq = g->values[outs[5]].data, *rc = g->values[outs[6]].data;
    assert_float_equal(sq[4], sqrtf(2.0f), 0);
    assert_true(isnan(sq[1]));
    assert_float_equal(rc[0], 1.0f / 2.5f, 0);
    check_f32(g, outs[7], 5, (float[]){1, -1, 1, 0, 1});
    check_i64(g, out_of(g, ineg), 3, D(4, 0, -9));
    check_i64(g, out_of(g, iabs), 3, D(4, 0, 9));
    check_i64(g, out_of(g, isgn), 3, D(-1, 0, 1));
}

static void test_reduce_and_tile(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 3, 4, 5));
    int shape = node(g, KC_OP_Shape, 13, 1, &x, 1);
    int hw = node(g, KC_OP_Slice, 13, 3,
                  (int[]){out_of(g, shape), i64s(g, 1, D(1), D(1)), i64s(g, 1, D(1), D(4))}, 1);
    int prod = node(g, KC_OP_ReduceProd, 13, 1, (int[]){out_of(g, hw)}, 1);
    attr_int(g, prod, "keepdims", 0);
    int m = i64s(g, 2, D(2, 3), D(1, 2, 3, 4, 5, 6));
    int sum = node(g, KC_OP_ReduceSum, 13, 2, (int[]){m, i64s(g, 1, D(1), D(1))}, 1);
    int mx = node(g, KC_OP_ReduceMax, 18, 2, (int[]){m, i64s(g, 1, D(1), D(0))}, 1);
    attr_int(g, mx, "keepdims", 0);
    int fm = f32s(g, 2, D(2, 2), (float[]){1, 2, 3, 5});
    int mean = node(g, KC_OP_ReduceMean, 13, 1, &fm, 1);
    int tile = node(g, KC_OP_Tile, 13, 2,
                    (int[]){i64s(g, 2, D(1, 2), D(7, 8)), i64s(g, 1, D(2), D(2, 3))}, 1);
    assert_int_equal(run(g, NULL), 0);
    check_i64(g, out_of(g, prod), 1, D(60));
    assert_int_equal(g->values[out_of(g, prod)].rank, 0);
    check_i64(g, out_of(g, sum), 2, D(6, 15));
    assert_int_equal(g->values[out_of(g, sum)].dims[1], 1);
    check_i64(g, out_of(g, mx), 3, D(4, 5, 6));
    check_f32(g, out_of(g, mean), 1, (float[]){2.75f});
    check_i64(g, out_of(g, tile), 12, D(7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exporter_reshape_pattern, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_arithmetic_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integer_arithmetic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_division_by_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_float_arithmetic_and_activations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_movement, setup, teardown),
        cmocka_unit_test_setup_teardown(test_training_dropout_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_constant_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_swin_pad_arithmetic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compare_where_logic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_max_pow_mod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reduce_and_tile, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
