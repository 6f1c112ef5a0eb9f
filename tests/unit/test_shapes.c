/* Shape inference: every op of the table and its attribute variants, input binding, and the
 * errors (each naming its node or value, several per run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag.h"
#include "ir.h"
#include "passes.h"
#include "shapes.h"

/* ---- building graphs ---- */

static void add_graph_input(kc_graph *g, int v) {
    int *in = kc_alloc(g, sizeof(int) * (size_t)(g->n_inputs + 1));
    if (g->n_inputs) memcpy(in, g->inputs, sizeof(int) * (size_t)g->n_inputs);
    in[g->n_inputs++] = v;
    g->inputs = in;
    g->values[v].flags |= KC_VALUE_INPUT;
}

static void add_graph_output(kc_graph *g, int v) {
    int *out = kc_alloc(g, sizeof(int) * (size_t)(g->n_outputs + 1));
    if (g->n_outputs) memcpy(out, g->outputs, sizeof(int) * (size_t)g->n_outputs);
    out[g->n_outputs++] = v;
    g->outputs = out;
    g->values[v].flags |= KC_VALUE_OUTPUT;
}

/* A graph input of known type; a dim of -1 is unknown. */
static int input(kc_graph *g, const char *name, int dtype, int rank, const int64_t *dims) {
    int v = kc_add_value(g, name);
    g->values[v].dtype = dtype;
    g->values[v].rank = rank;
    for (int i = 0; i < rank; i++)
        g->values[v].dims[i] = dims[i];
    add_graph_input(g, v);
    return v;
}

static int ints_const(kc_graph *g, const char *name, int n, const int64_t *vals) {
    int64_t dims[1] = {n};
    return kc_add_const(g, name, KC_DTYPE_INT64, 1, dims, vals);
}

static int float_const(kc_graph *g, const char *name, int rank, const int64_t *dims) {
    return kc_add_const(g, name, KC_DTYPE_FLOAT, rank, dims, NULL);
}

/* A node of op at opset with fresh output values; returns the node. */
static int node(kc_graph *g, int op, int opset, int n_in, const int *in, int n_out) {
    int outs[8];
    for (int i = 0; i < n_out; i++)
        outs[i] = kc_add_value(g, kc_sprintf(g, "%s_%d_out%d", kc_ops[op].name, g->n_nodes, i));
    int n = kc_add_node(g, op, NULL, kc_sprintf(g, "%s_%d", kc_ops[op].name, g->n_nodes), n_in, in,
                        n_out, outs);
    g->nodes[n].opset = opset;
    return n;
}

static int out_of(const kc_graph *g, int n, int i) {
    return g->nodes[n].outputs[i];
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

static void attr_string(kc_graph *g, int n, const char *name, const char *s) {
    kc_attr *a = kc_node_add_attr(g, n, name, KC_ATTR_STRING);
    a->s = kc_strdup(g, s);
    a->s_len = strlen(s);
}

/* ---- running the pass, capturing its messages ---- */

static char *messages;
static size_t messages_len;

static int run(kc_graph *g, const kc_shape_binding *b, int nb, kc_stats *st) {
    free(messages);
    messages = NULL;
    FILE *f = open_memstream(&messages, &messages_len);
    kc_diag d;
    kc_diag_init(&d, "test.onnx", f);
    kc_stats local = {0};
    int errors = kc_pass_shapes_constants(g, b, nb, &d, st ? st : &local);
    fclose(f);
    assert_int_equal(errors, d.n_errors);
    if (getenv("KC_TEST_VERBOSE")) fputs(messages, stderr);
    return errors;
}

static int said(const char *needle) {
    return messages && strstr(messages, needle) != NULL;
}

#define D(...) ((const int64_t[]){__VA_ARGS__})

static void check_shape(const kc_graph *g, int v, int dtype, int rank, const int64_t *dims) {
    const kc_value *val = &g->values[v];
    assert_int_equal(val->dtype, dtype);
    assert_int_equal(val->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(val->dims[i], dims[i]);
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

/* ---- convolutions and pools ---- */

static int conv(kc_graph *g, const int64_t *xd, int rank, const int64_t *wd, const char *auto_pad) {
    int x = input(g, kc_sprintf(g, "x%d", g->n_values), KC_DTYPE_FLOAT, rank, xd);
    int w = float_const(g, kc_sprintf(g, "w%d", g->n_values), rank, wd);
    int n = node(g, KC_OP_Conv, 13, 2, (int[]){x, w}, 1);
    if (auto_pad) attr_string(g, n, "auto_pad", auto_pad);
    return n;
}

static void test_conv_explicit_pads(void **state) {
    kc_graph *g = *state;
    int n = conv(g, D(1, 3, 224, 224), 4, D(64, 3, 7, 7), NULL);
    attr_ints(g, n, "pads", 4, D(3, 3, 3, 3));
    attr_ints(g, n, "strides", 2, D(2, 2));
    assert_int_equal(run(g, NULL, 0, NULL), 0);
    check_shape(g, out_of(g, n, 0), KC_DTYPE_FLOAT, 4, D(1, 64, 112, 112));
}

static void test_conv_auto_pad(void **state) {
    kc_graph *g = *state;
    int upper = conv(g, D(1, 3, 224, 224), 4, D(8, 3, 3, 3), "SAME_UPPER");
    attr_ints(g, upper, "strides", 2, D(2, 2));
    int lower = conv(g, D(1, 3, 224, 224), 4, D(8, 3, 3, 3), "SAME_LOWER");
    attr_ints(g, lower, "strides", 2, D(2, 2));
    int valid = conv(g, D(1, 3, 10, 10), 4, D(8, 3, 3, 3), "VALID");
    attr_ints(g, valid, "strides", 2, D(2, 2));
    attr_ints(g, valid, "pads", 4, D(5, 5, 5, 5)); /* ignored under VALID */
    int same1 = conv(g, D(1, 3, 7, 9), 4, D(8, 3, 3, 3), "SAME_UPPER");
    assert_int_equal(run(g, NULL, 0, NULL), 0);
    check_shape(g, out_of(g, upper, 0), KC_DTYPE_FLOAT, 4, D(1, 8, 112, 112));
    check_shape(g, out_of(g, lower, 0), KC_DTYPE_FLOAT, 4, D(1, 8, 112, 112));
    check_shape(g, out_of(g, valid, 0), KC_DTYPE_FLOAT, 4, D(1, 8, 4, 4));
    check_shape(g, out_of(g, same1, 0), KC_DTYPE_FLOAT, 4, D(1, 8, 7, 9));

    kc_diag d;
    kc_diag_init(&d, NULL, stderr);
    kc_window w;
    /* 224 with stride 2 and k 3 needs one pad: UPPER puts it at the end, LOWER at the start. */
    assert_int_equal(kc_window_of(g, upper, &w, &d), 0);
    assert_int_equal(w.n_spatial, 2);
    assert_int_equal(w.pad_begin[0], 0);
    assert_int_equal(w.pad_end[0], 1);
    assert_int_equal(kc_window_of(g, lower, &w, &d), 0);
    assert_int_equal(w.pad_begin[1], 1);
    assert_int_equal(w.pad_end[1], 0);
    assert_int_equal(kc_window_of(g, valid, &w, &d), 0);
    assert_int_equal(w.pad_begin[0] + w.pad_end[0], 0);
    assert_int_equal(kc_window_of(g, same1, &w, &d), 0);
    assert_int_equal(w.kernel[0], 3); /* from the weight: no kernel_shape attribute */
    assert_int_equal(w.pad_begin[0], 1);
    assert_int_equal(w.pad_end[0], 1);
}

static void test_conv_dilation_group_1d(void **state) {
    kc_graph *g = *state;
    int dil = conv(g, D(1, 3, 10, 10), 4, D(4, 3, 3, 3), NULL);
    attr_ints(g, dil, "dilations", 2, D(2, 2));
    int one_d = conv(g, D(1, 4, 10), 3, D(8, 4, 3), NULL);
    attr_ints(g, one_d, "pads", 2, D(0, 2));
    int dw = conv(g, D(1, 8, 5, 5), 4, D(8, 1, 3, 3), NULL);
    attr_int(g, dw, "group", 8);
    attr_ints(g, dw, "pads", 4, D(1, 1, 1, 1));
    int x = input(g, "xb", KC_DTYPE_FLOAT, 4, D(1, 3, 8, 8));
    int w = float_const(g, "wb", 4, D(6, 3, 1, 1));
    int b = float_const(g, "bb", 1, D(6));
    int biased = node(g, KC_OP_Conv, 13, 3, (int[]){x, w, b}, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 0);
    check_shape(g, out_of(g, dil, 0), KC_DTYPE_FLOAT, 4, D(1, 4, 6, 6));
    check_shape(g, out_of(g, one_d, 0), KC_DTYPE_FLOAT, 3, D(1, 8, 10));
    check_shape(g, out_of(g, dw, 0), KC_DTYPE_FLOAT, 4, D(1, 8, 5, 5));
    check_shape(g, out_of(g, biased, 0), KC_DTYPE_FLOAT, 4, D(1, 6, 8, 8));
}

static void test_conv_errors(void **state) {
    kc_graph *g = *state;
    conv(g, D(1, 3, 8, 8), 4, D(8, 4, 3, 3), NULL); /* channels */
    int grp = conv(g, D(1, 8, 8, 8), 4, D(6, 2, 3, 3), NULL);
    attr_int(g, grp, "group", 4); /* 6 filters do not split into 4 groups */
    int ks = conv(g, D(1, 3, 8, 8), 4, D(8, 3, 3, 3), NULL);
    attr_ints(g, ks, "kernel_shape", 2, D(5, 5));
    conv(g, D(1, 3, 2, 2), 4, D(8, 3, 3, 3), NULL); /* kernel larger than the input */
    int pad = conv(g, D(1, 3, 8, 8), 4, D(8, 3, 3, 3), "SAME_MIDDLE");
    (void)pad;
    assert_int_equal(run(g, NULL, 0, NULL), 5);
    assert_true(said("node 'Conv_0'"));
    assert_true(said("node 'Conv_1'"));
    assert_true(said("kernel_shape [5,5] does not match"));
    assert_true(said("exceeds the padded input"));
    assert_true(said("unknown auto_pad 'SAME_MIDDLE'"));
}

static int pool_node(kc_graph *g, int op, int64_t in, int64_t k, int64_t s, int64_t pad,
                     int ceil_mode) {
    int x = input(g, kc_sprintf(g, "p%d", g->n_values), KC_DTYPE_FLOAT, 4, D(1, 2, in, in));
    int n = node(g, op, 12, 1, &x, op == KC_OP_MaxPool ? 2 : 1);
    attr_ints(g, n, "kernel_shape", 2, D(k, k));
    attr_ints(g, n, "strides", 2, D(s, s));
    attr_ints(g, n, "pads", 4, D(pad, pad, pad, pad));
    if (ceil_mode) attr_int(g, n, "ceil_mode", 1);
    return n;
}

static void test_pools_ceil_mode(void **state) {
    kc_graph *g = *state;
    int floor8 = pool_node(g, KC_OP_MaxPool, 8, 3, 2, 0, 0);
    int ceil8 = pool_node(g, KC_OP_MaxPool, 8, 3, 2, 0, 1);
    /* ceil gives 4 windows, but the 4th would start in the right padding: 3. */
    int ceil5 = pool_node(g, KC_OP_AveragePool, 5, 2, 2, 1, 1);
    int ceil112 = pool_node(g, KC_OP_MaxPool, 112, 3, 2, 0, 1);
    int x = input(g, "sx", KC_DTYPE_FLOAT, 3, D(1, 2, 9));
    int same = node(g, KC_OP_AveragePool, 11, 1, &x, 1);
    attr_ints(g, same, "kernel_shape", 1, D(4));
    attr_ints(g, same, "strides", 1, D(2));
    attr_string(g, same, "auto_pad", "SAME_LOWER");
    int gap_in = input(g, "gx", KC_DTYPE_FLOAT, 4, D(1, 7, 5, 3));
    int gap = node(g, KC_OP_GlobalAveragePool, 1, 1, &gap_in, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 0);
    check_shape(g, out_of(g, floor8, 0), KC_DTYPE_FLOAT, 4, D(1, 2, 3, 3));
    check_shape(g, out_of(g, floor8, 1), KC_DTYPE_INT64, 4, D(1, 2, 3, 3));
    check_shape(g, out_of(g, ceil8, 0), KC_DTYPE_FLOAT, 4, D(1, 2, 4, 4));
    check_shape(g, out_of(g, ceil5, 0), KC_DTYPE_FLOAT, 4, D(1, 2, 3, 3));
    check_shape(g, out_of(g, ceil112, 0), KC_DTYPE_FLOAT, 4, D(1, 2, 56, 56));
    check_shape(g, out_of(g, same, 0), KC_DTYPE_FLOAT, 3, D(1, 2, 5));
    check_shape(g, out_of(g, gap, 0), KC_DTYPE_FLOAT, 4, D(1, 7, 1, 1));
    kc_diag d;
    kc_diag_init(&d, NULL, stderr);
    kc_window w;
    assert_int_equal(kc_window_of(g, same, &w, &d), 0);
    assert_int_equal(w.pad_begin[0], 2); /* total 3: LOWER puts the odd one first */
    assert_int_equal(w.pad_end[0], 1);
    assert_int_equal(w.ceil_mode, 0);
}

static void test_pool_needs_kernel_shape(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 2, 8, 8));
    node(g, KC_OP_MaxPool, 12, 1, &x, 1);
    int x2 = input(g, "x2", KC_DTYPE_FLOAT, 2, D(1, 2));
    int p2 = node(g, KC_OP_AveragePool, 12, 1, &x2, 1);
    attr_ints(g, p2, "kernel_shape", 1, D(1));
    assert_int_equal(run(g, NULL, 0, NULL), 2);
    assert_true(said("'kernel_shape' is required"));
    assert_true(said("rank 3 to 5"));
}

/* ---- matrix products and broadcasting ---- */

static void test_gemm(void **state) {
    kc_graph *g = *state;
    int a = input(g, "a", KC_DTYPE_FLOAT, 2, D(4, 3));
    int b = float_const(g, "b", 2, D(5, 3));
    int c = float_const(g, "c", 1, D(5));
    int plain = node(g, KC_OP_Gemm, 13, 3, (int[]){a, b, c}, 1);
    attr_int(g, plain, "transB", 1);
    int at = input(g, "at", KC_DTYPE_FLOAT, 2, D(3, 4));
    int bt = float_const(g, "bt", 2, D(3, 5));
    int ta = node(g, KC_OP_Gemm, 13, 2, (int[]){at, bt}, 1);
    attr_int(g, ta, "transA", 1);
    int bad_c = float_const(g, "bad_c", 2, D(4, 2));
    int bad = node(g, KC_OP_Gemm, 13, 3, (int[]){a, b, bad_c}, 1);
    attr_int(g, bad, "transB", 1);
    int bad_k = node(g, KC_OP_Gemm, 13, 2, (int[]){a, b}, 1); /* B not transposed */
    assert_int_equal(run(g, NULL, 0, NULL), 2);
    check_shape(g, out_of(g, plain, 0), KC_DTYPE_FLOAT, 2, D(4, 5));
    check_shape(g, out_of(g, ta, 0), KC_DTYPE_FLOAT, 2, D(4, 5));
    assert_true(said("C 'bad_c' [4,2] does not broadcast to [4,5]"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad_k].name)));
}

static void test_matmul(void **state) {
    kc_graph *g = *state;
    int a4 = input(g, "a4", KC_DTYPE_FLOAT, 4, D(2, 1, 3, 4));
    int b3 = float_const(g, "b3", 3, D(5, 4, 6));
    int batched = node(g, KC_OP_MatMul, 13, 2, (int[]){a4, b3}, 1);
    int v = input(g, "v", KC_DTYPE_FLOAT, 1, D(4));
    int m = float_const(g, "m", 2, D(4, 6));
    int vec_mat = node(g, KC_OP_MatMul, 13, 2, (int[]){v, m}, 1);
    int a3 = input(g, "a3", KC_DTYPE_FLOAT, 3, D(2, 3, 4));
    int w = float_const(g, "w", 1, D(4));
    int mat_vec = node(g, KC_OP_MatMul, 13, 2, (int[]){a3, w}, 1);
    int dot = node(g, KC_OP_MatMul, 13, 2, (int[]){v, w}, 1);
    int b_bad = float_const(g, "b_bad", 3, D(3, 4, 6));
    int bad = node(g, KC_OP_MatMul, 13, 2, (int[]){a3, b_bad}, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 1);
    check_shape(g, out_of(g, batched, 0), KC_DTYPE_FLOAT, 4, D(2, 5, 3, 6));
    check_shape(g, out_of(g, vec_mat, 0), KC_DTYPE_FLOAT, 1, D(6));
    check_shape(g, out_of(g, mat_vec, 0), KC_DTYPE_FLOAT, 2, D(2, 3));
    check_shape(g, out_of(g, dot, 0), KC_DTYPE_FLOAT, 0, NULL);
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad].name)));
}

static void test_broadcast(void **state) {
    kc_graph *g = *state;
    int a = input(g, "a", KC_DTYPE_FLOAT, 3, D(2, 3, 1));
    int b = float_const(g, "b", 1, D(4));
    int add = node(g, KC_OP_Add, 14, 2, (int[]){a, b}, 1);
    int s = float_const(g, "s", 0, NULL);
    int mul = node(g, KC_OP_Mul, 14, 2, (int[]){s, a}, 1);
    int c = input(g, "c", KC_DTYPE_FLOAT, 2, D(2, 3));
    int bad = node(g, KC_OP_Sub, 14, 2, (int[]){c, b}, 1);
    int i = ints_const(g, "i", 1, D(1));
    int mixed = node(g, KC_OP_Div, 14, 2, (int[]){c, i}, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 2);
    check_shape(g, out_of(g, add, 0), KC_DTYPE_FLOAT, 3, D(2, 3, 4));
    check_shape(g, out_of(g, mul, 0), KC_DTYPE_FLOAT, 3, D(2, 3, 1));
    assert_true(said("shapes [2,3] ('c') and [4] ('b') do not broadcast"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad].name)));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[mixed].name)));

    int rank;
    int64_t out[KC_MAX_RANK];
    assert_int_equal(kc_broadcast_shape(2, D(3, 1), 3, D(2, 1, 5), &rank, out), 0);
    assert_int_equal(rank, 3);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 3);
    assert_int_equal(out[2], 5);
    assert_int_equal(kc_broadcast_shape(1, D(0), 1, D(1), &rank, out), 0);
    assert_int_equal(out[0], 0);
    assert_int_equal(kc_broadcast_shape(1, D(2), 1, D(3), &rank, out), -1);
    int64_t ax;
    assert_int_equal(kc_normalize_axis(-1, 4, &ax), 0);
    assert_int_equal(ax, 3);
    assert_int_equal(kc_normalize_axis(4, 4, &ax), -1);
    assert_int_equal(kc_normalize_axis(-5, 4, &ax), -1);
}

/* ---- shape manipulation ---- */

static void test_reshape(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 3, D(2, 3, 4));
    int copy = node(g, KC_OP_Reshape, 13, 2, (int[]){x, ints_const(g, "s1", 2, D(0, -1))}, 1);
    int infer = node(g, KC_OP_Reshape, 13, 2, (int[]){x, ints_const(g, "s2", 3, D(-1, 2, 2))}, 1);
    int legacy = node(g, KC_OP_Reshape, 4, 1, &x, 1);
    attr_ints(g, legacy, "shape", 2, D(6, 4));
    int z = input(g, "z", KC_DTYPE_FLOAT, 2, D(0, 3));
    int allowzero =
        node(g, KC_OP_Reshape, 14, 2, (int[]){z, ints_const(g, "s3", 3, D(3, 0, 5))}, 1);
    attr_int(g, allowzero, "allowzero", 1);
    int two = node(g, KC_OP_Reshape, 13, 2, (int[]){x, ints_const(g, "s4", 2, D(-1, -1))}, 1);
    int count = node(g, KC_OP_Reshape, 13, 2, (int[]){x, ints_const(g, "s5", 2, D(5, 5))}, 1);
    int dyn_shape = input(g, "dyn", KC_DTYPE_INT64, 1, D(2));
    int dyn = node(g, KC_OP_Reshape, 13, 2, (int[]){x, dyn_shape}, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 3);
    check_shape(g, out_of(g, copy, 0), KC_DTYPE_FLOAT, 2, D(2, 12));
    check_shape(g, out_of(g, infer, 0), KC_DTYPE_FLOAT, 3, D(6, 2, 2));
    check_shape(g, out_of(g, legacy, 0), KC_DTYPE_FLOAT, 2, D(6, 4));
    check_shape(g, out_of(g, allowzero, 0), KC_DTYPE_FLOAT, 3, D(3, 0, 5));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[two].name)));
    assert_true(said("cannot reshape [2,3,4] (24 elements) to [5,5] (25 elements)"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[count].name)));
    assert_true(said(
        kc_sprintf(g, "node '%s' (Reshape, opset 13): shape input 'dyn'", g->nodes[dyn].name)));
    assert_true(said("must be constant"));
}

static void test_squeeze_unsqueeze(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 3, 1, 5));
    int sq11 = node(g, KC_OP_Squeeze, 11, 1, &x, 1);
    attr_ints(g, sq11, "axes", 1, D(-2));
    int sq13 = node(g, KC_OP_Squeeze, 13, 2, (int[]){x, ints_const(g, "ax0", 1, D(0))}, 1);
    int sq_all = node(g, KC_OP_Squeeze, 13, 1, &x, 1);
    int un11 = node(g, KC_OP_Unsqueeze, 11, 1, &x, 1);
    attr_ints(g, un11, "axes", 2, D(0, -1));
    int y = input(g, "y", KC_DTYPE_FLOAT, 2, D(3, 4));
    int un13 = node(g, KC_OP_Unsqueeze, 13, 2, (int[]){y, ints_const(g, "ax1", 2, D(1, -1))}, 1);
    int sq_bad = node(g, KC_OP_Squeeze, 13, 2, (int[]){x, ints_const(g, "ax2", 1, D(1))}, 1);
    int un_attr13 = node(g, KC_OP_Unsqueeze, 13, 1, &y, 1);
    attr_ints(g, un_attr13, "axes", 1, D(0));
    int un_input11 = node(g, KC_OP_Unsqueeze, 11, 2, (int[]){y, ints_const(g, "ax3", 1, D(0))}, 1);
    int un_dup = node(g, KC_OP_Unsqueeze, 13, 2, (int[]){y, ints_const(g, "ax4", 2, D(0, -4))}, 1);
    assert_int_equal(run(g, NULL, 0, NULL), 4);
    check_shape(g, out_of(g, sq11, 0), KC_DTYPE_FLOAT, 3, D(1, 3, 5));
    check_shape(g, out_of(g, sq13, 0), KC_DTYPE_FLOAT, 3, D(3, 1, 5));
    check_shape(g, out_of(g, sq_all, 0), KC_DTYPE_FLOAT, 2, D(3, 5));
    check_shape(g, out_of(g, un11, 0), KC_DTYPE_FLOAT, 6, D(1, 1, 3, 1, 5, 1));
    check_shape(g, out_of(g, un13, 0), KC_DTYPE_FLOAT, 4, D(3, 1, 4, 1));
    assert_true(said("cannot squeeze axis 1 (size 3)"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[sq_bad].name)));
    assert_true(said("since opset 13, 'axes' is input 1"));
    assert_true(said("before opset 13, 'axes' is an attribute"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[un_dup].name)));
    (void)un_attr13;
    (void)un_input11;
}

static void test_slice(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 3, D(4, 10, 6));
    /* axes 1 and -1: [-3, INT64_MAX) clamps to 7..10, and 5 down to 0 by -2 gives 5, 3, 1. */
    int s13 =
        node(g, KC_OP_Slice, 13, 5,
             (int[]){x, ints_const(g, "st", 2, D(-3, 5)), ints_const(g, "en", 2, D(INT64_MAX, 0)),
                     ints_const(g, "ax", 2, D(1, -1)), ints_const(g, "sp", 2, D(1, -2))},
             1);
    int rev = node(g, KC_OP_Slice, 13, 5,
                   (int[]){x, ints_const(g, "st2", 1, D(-1)), ints_const(g, "en2", 1, D(INT64_MIN)),
                           ints_const(g, "ax2", 1, D(0)), ints_const(g, "sp2", 1, D(-1))},
                   1);
    int empty = node(g, KC_OP_Slice, 10, 3,
                     (int[]){x, ints_const(g, "st3", 1, D(8)), ints_const(g, "en3", 1, D(2))}, 1);
    int legacy = node(g, KC_OP_Slice, 9, 1, &x, 1);
    attr_ints(g, legacy, "starts", 2, D(1, -100));
    attr_ints(g, legacy, "ends", 2, D(3, 4));
    attr_ints(g, legacy, "axes", 2, D(0, 2));
    int zero_step = node(g, KC_OP_Slice, 13, 5,
                         (int[]){x, ints_const(g, "st4", 1, D(0)), ints_const(g, "en4", 1, D(1)),
                                 ints_const(g, "ax4", 1, D(0)), ints_const(g, "sp4", 1, D(0))},
                         1);
    assert_int_equal(run(g, NULL, 0, NULL), 1);
    check_shape(g, out_of(g, s13, 0), KC_DTYPE_FLOAT, 3, D(4, 3, 3));
    check_shape(g, out_of(g, rev, 0), KC_DTYPE_FLOAT, 3, D(4, 10, 6));
    check_shape(g, out_of(g, empty, 0), KC_DTYPE_FLOAT, 3, D(0, 10, 6)); /* 8 clamps to 4 */
    check_shape(g, out_of(g, legacy, 0), KC_DTYPE_FLOAT, 3, D(2, 10, 4));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[zero_step].name)));

    kc_diag d;
    kc_diag_init(&d, NULL, stderr);
    kc_slice s;
    assert_int_equal(kc_slice_of(g, s13, &s, &d), 0);
    assert_int_equal(s.start[1], 7);
    assert_int_equal(s.start[2], 5);
    assert_int_equal(s.step[2], -2);
    assert_int_equal(kc_slice_of(g, rev, &s, &d), 0);
    assert_int_equal(s.start[0], 3);
    assert_int_equal(s.len[0], 4);
}

static void test_flatten_concat_transpose(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(2, 3, 4, 5));
    int f_dflt = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    int f0 = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    attr_int(g, f0, "axis", 0);
    int fneg = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    attr_int(g, fneg, "axis", -1);
    int f4 = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    attr_int(g, f4, "axis", 4);
    int y = input(g, "y", KC_DTYPE_FLOAT, 4, D(2, 3, 4, 7));
    int cat = node(g, KC_OP_Concat, 13, 3, (int[]){x, y, x}, 1);
    attr_int(g, cat, "axis", -1);
    int t_dflt = node(g, KC_OP_Transpose, 13, 1, &x, 1);
    int t = node(g, KC_OP_Transpose, 13, 1, &x, 1);
    attr_ints(g, t, "perm", 4, D(0, 2, 3, 1));
    int bad_cat = node(g, KC_OP_Concat, 13, 2, (int[]){x, y}, 1);
    attr_int(g, bad_cat, "axis", 1);
    int bad_perm = node(g, KC_OP_Transpose, 13, 1, &x, 1);
    attr_ints(g, bad_perm, "perm", 4, D(0, 1, 1, 2));
    int no_axis = node(g, KC_OP_Concat, 13, 2, (int[]){x, x}, 1);
    int f_bad = node(g, KC_OP_Flatten, 13, 1, &x, 1);
    attr_int(g, f_bad, "axis", 5);
    assert_int_equal(run(g, NULL, 0, NULL), 4);
    check_shape(g, out_of(g, f_dflt, 0), KC_DTYPE_FLOAT, 2, D(2, 60));
    check_shape(g, out_of(g, f0, 0), KC_DTYPE_FLOAT, 2, D(1, 120));
    check_shape(g, out_of(g, fneg, 0), KC_DTYPE_FLOAT, 2, D(24, 5));
    check_shape(g, out_of(g, f4, 0), KC_DTYPE_FLOAT, 2, D(120, 1));
    check_shape(g, out_of(g, cat, 0), KC_DTYPE_FLOAT, 4, D(2, 3, 4, 17));
    check_shape(g, out_of(g, t_dflt, 0), KC_DTYPE_FLOAT, 4, D(5, 4, 3, 2));
    check_shape(g, out_of(g, t, 0), KC_DTYPE_FLOAT, 4, D(2, 4, 5, 3));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad_cat].name)));
    assert_true(said("perm [0,1,1,2] is not a permutation"));
    assert_true(said(kc_sprintf(g, "node '%s' (Concat, opset 13): attribute 'axis' is required",
                                g->nodes[no_axis].name)));
    assert_true(said("axis 5 is out of range for rank 4"));
}

static void test_gather_shape_cast(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 3, D(5, 6, 7));
    int idx = input(g, "idx", KC_DTYPE_INT64, 2, D(2, 3));
    int gat = node(g, KC_OP_Gather, 13, 2, (int[]){x, idx}, 1);
    attr_int(g, gat, "axis", -2);
    int64_t scalar = -1;
    int s = kc_add_const(g, "s", KC_DTYPE_INT64, 0, NULL, &scalar);
    int gat0 = node(g, KC_OP_Gather, 13, 2, (int[]){x, s}, 1);
    int big = ints_const(g, "big", 1, D(5));
    int gat_bad = node(g, KC_OP_Gather, 13, 2, (int[]){x, big}, 1);
    int shp = node(g, KC_OP_Shape, 15, 1, &x, 1);
    attr_int(g, shp, "start", -2);
    int shp_all = node(g, KC_OP_Shape, 13, 1, &x, 1);
    int cast = node(g, KC_OP_Cast, 13, 1, &x, 1);
    attr_int(g, cast, "to", KC_DTYPE_INT32);
    assert_int_equal(run(g, NULL, 0, NULL), 1);
    check_shape(g, out_of(g, gat, 0), KC_DTYPE_FLOAT, 4, D(5, 2, 3, 7));
    check_shape(g, out_of(g, gat0, 0), KC_DTYPE_FLOAT, 2, D(6, 7));
    assert_true(said("index 5 is out of range"));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[gat_bad].name)));
    check_shape(g, out_of(g, shp, 0), KC_DTYPE_INT64, 1, D(2));
    check_shape(g, out_of(g, shp_all, 0), KC_DTYPE_INT64, 1, D(3));
    check_shape(g, out_of(g, cast, 0), KC_DTYPE_INT32, 3, D(5, 6, 7));
}

static void test_elementwise_and_misc(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    int bn = node(g, KC_OP_BatchNormalization, 15, 5,
                  (int[]){x, float_const(g, "sc", 1, D(16)), float_const(g, "bi", 1, D(16)),
                          float_const(g, "me", 1, D(16)), float_const(g, "va", 1, D(16))},
                  1);
    int relu = node(g, KC_OP_Relu, 14, 1, &x, 1);
    int clip = node(g, KC_OP_Clip, 13, 3,
                    (int[]){x, float_const(g, "lo", 0, NULL), float_const(g, "hi", 0, NULL)}, 1);
    int id = node(g, KC_OP_Identity, 16, 1, &x, 1);
    int drop = node(g, KC_OP_Dropout, 13, 1, &x, 2);
    int drop7 = node(g, KC_OP_Dropout, 7, 1, &x, 2);
    int z = input(g, "z", KC_DTYPE_FLOAT, 2, D(2, 10));
    int sm = node(g, KC_OP_Softmax, 13, 1, &z, 1);
    int lsm = node(g, KC_OP_LogSoftmax, 11, 1, &z, 1);
    int sm_bad = node(g, KC_OP_Softmax, 13, 1, &z, 1);
    attr_int(g, sm_bad, "axis", 2);
    int cos = node(g, KC_OP_ConstantOfShape, 9, 1, (int[]){ints_const(g, "cs", 2, D(3, 2))}, 1);
    int bn_bad = node(g, KC_OP_BatchNormalization, 15, 5,
                      (int[]){x, float_const(g, "sc2", 1, D(8)), float_const(g, "bi2", 1, D(16)),
                              float_const(g, "me2", 1, D(16)), float_const(g, "va2", 1, D(16))},
                      1);
    assert_int_equal(run(g, NULL, 0, NULL), 2);
    check_shape(g, out_of(g, bn, 0), KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, relu, 0), KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, clip, 0), KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, id, 0), KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, drop, 1), KC_DTYPE_BOOL, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, drop7, 1), KC_DTYPE_FLOAT, 4, D(1, 16, 8, 8));
    check_shape(g, out_of(g, sm, 0), KC_DTYPE_FLOAT, 2, D(2, 10));
    check_shape(g, out_of(g, lsm, 0), KC_DTYPE_FLOAT, 2, D(2, 10));
    check_shape(g, out_of(g, cos, 0), KC_DTYPE_FLOAT, 2, D(3, 2));
    assert_true(said("axis 2 is out of range for rank 2"));
    assert_true(said("scale 'sc2' is [8], expected [16]"));
    (void)sm_bad;
    (void)bn_bad;
}

/* ---- declared shapes, bindings and errors ---- */

static void test_declared_shapes(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 2, D(2, 3));
    int ok = node(g, KC_OP_Relu, 14, 1, &x, 1);
    kc_value *v = &g->values[out_of(g, ok, 0)];
    v->dtype = KC_DTYPE_FLOAT;
    v->rank = 2;
    v->dims[0] = -1; /* declared with a symbolic batch: filled */
    v->dim_params[0] = "batch";
    v->dims[1] = 3;
    add_graph_output(g, out_of(g, ok, 0));
    int bad = node(g, KC_OP_Relu, 14, 1, &x, 1);
    v = &g->values[out_of(g, bad, 0)];
    v->rank = 2;
    v->dims[0] = 2;
    v->dims[1] = 4;
    assert_int_equal(run(g, NULL, 0, NULL), 1);
    check_shape(g, out_of(g, ok, 0), KC_DTYPE_FLOAT, 2, D(2, 3));
    assert_true(said(kc_sprintf(g, "output '%s' is declared ?[2,4] but computes f32[2,3]",
                                g->values[out_of(g, bad, 0)].name)));
}

static void test_bindings(void **state) {
    kc_graph *g = *state;
    int img = input(g, "image", KC_DTYPE_FLOAT, 4, D(-1, 3, -1, -1));
    g->values[img].dim_params[0] = "N";
    g->values[img].dim_params[2] = "H";
    g->values[img].dim_params[3] = "W";
    int mask = input(g, "mask", KC_DTYPE_FLOAT, 3, D(-1, -1, -1));
    g->values[mask].dim_params[0] = "N";
    g->values[mask].dim_params[1] = "H";
    g->values[mask].dim_params[2] = "W";
    int seq = input(g, "tokens", KC_DTYPE_INT64, 2, D(-1, -1));
    g->values[seq].dim_params[1] = "N"; /* the batch symbol elsewhere: it defaults to 1 too */
    int relu = node(g, KC_OP_Relu, 14, 1, &mask, 1);
    kc_shape_binding b = {"image", 4, {1, 3, 32, 48}};
    assert_int_equal(run(g, &b, 1, NULL), 0);
    check_shape(g, img, KC_DTYPE_FLOAT, 4, D(1, 3, 32, 48));
    check_shape(g, mask, KC_DTYPE_FLOAT, 3, D(1, 32, 48));
    check_shape(g, seq, KC_DTYPE_INT64, 2, D(1, 1));
    check_shape(g, out_of(g, relu, 0), KC_DTYPE_FLOAT, 3, D(1, 32, 48));
}

static void test_binding_errors(void **state) {
    kc_graph *g = *state;
    int img = input(g, "image", KC_DTYPE_FLOAT, 4, D(-1, 3, -1, -1));
    g->values[img].dim_params[2] = "height";
    int other = input(g, "other", KC_DTYPE_FLOAT, 2, D(-1, 5));
    int relu = node(g, KC_OP_Relu, 14, 1, &img, 1);
    int relu2 = node(g, KC_OP_Relu, 14, 1, &relu, 1); /* no cascade from the unbound input */
    (void)relu2;
    kc_shape_binding b[] = {
        {"nope", 2, {1, 2}},
        {"other", 2, {1, 6}},
    };
    assert_int_equal(run(g, b, 2, NULL), 3);
    assert_true(said("no input named 'nope' (its inputs: 'image', 'other')"));
    assert_true(said("value 'other': --input-shape gives dimension 1 as 6 but the model has 5"));
    assert_true(said("value 'image': input dimensions 2 ('height'), 3 are unknown; bind them "
                     "with --input-shape image=1x3x<height>x<?>"));
    (void)other;
}

static void test_binding_rank_mismatch(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 2, D(-1, 5));
    kc_shape_binding b = {"x", 3, {1, 5, 1}};
    assert_int_equal(run(g, &b, 1, NULL), 1);
    assert_true(said("value 'x': --input-shape gives rank 3 but the model declares rank 2"));
    (void)x;
}

static void test_several_errors_one_run(void **state) {
    kc_graph *g = *state;
    int x = input(g, "x", KC_DTYPE_FLOAT, 2, D(2, 3));
    int y = input(g, "y", KC_DTYPE_FLOAT, 2, D(4, 5));
    int bad1 = node(g, KC_OP_Add, 14, 2, (int[]){x, y}, 1);
    int after1 = node(g, KC_OP_Relu, 14, 1, (int[]){out_of(g, bad1, 0)}, 1);
    int bad2 = node(g, KC_OP_MatMul, 13, 2, (int[]){x, x}, 1);
    int good = node(g, KC_OP_Relu, 14, 1, &y, 1);
    int later = kc_add_value(g, "later");
    int bad3 = node(g, KC_OP_Relu, 14, 1, &later, 1);
    int producer = kc_add_node(g, KC_OP_Relu, NULL, "makes_later", 1, &x, 1, &later);
    g->nodes[producer].opset = 14;
    assert_int_equal(run(g, NULL, 0, NULL), 3);
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad1].name)));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad2].name)));
    assert_true(said(kc_sprintf(g, "node '%s'", g->nodes[bad3].name)));
    assert_true(said("reads 'later' before node 'makes_later' defines it"));
    assert_false(said(kc_sprintf(g, "node '%s'", g->nodes[after1].name)));
    check_shape(g, out_of(g, good, 0), KC_DTYPE_FLOAT, 2, D(4, 5));
}

/* Einsum equations: explicit and implicit outputs, ellipsis broadcasting, and the refusals. */
static void test_einsum(void **state) {
    kc_graph *g = *state;
    int a = input(g, "a", KC_DTYPE_FLOAT, 4, D(1, 2, 5, 8));
    int b = input(g, "b", KC_DTYPE_FLOAT, 4, D(1, 2, 7, 8));
    const char *eqs[] = {"bhid,bhjd->bhij", "bhid , bhjd",    "...id,...jd->...ij", "...d,...d",
                         "bhid,bhjd->",     "bhii,bhjd->bhj", "bhid,bhjd->bhix",    "bhd,bhjd->bhj",
                         "bhid,bhjd,b->b",  "bhid->bhid"};
    int nodes[10];
    for (int i = 0; i < 10; i++) {
        int n_in = i == 9 ? 1 : 2;
        nodes[i] = node(g, KC_OP_Einsum, 12, n_in, (int[]){a, b}, 1);
        attr_string(g, nodes[i], "equation", eqs[i]);
    }
    assert_int_equal(run(g, NULL, 0, NULL), 5);
    check_shape(g, out_of(g, nodes[0], 0), KC_DTYPE_FLOAT, 4, D(1, 2, 5, 7));
    /* implicit: the labels used once, alphabetically (h, i, j; b and d twice) */
    check_shape(g, out_of(g, nodes[1], 0), KC_DTYPE_FLOAT, 2, D(5, 7));
    check_shape(g, out_of(g, nodes[2], 0), KC_DTYPE_FLOAT, 4, D(1, 2, 5, 7));
    /* nodes[3]: implicit with ellipsis keeps the ellipsis dims, whose last is 5 against 7 */
    check_shape(g, out_of(g, nodes[4], 0), KC_DTYPE_FLOAT, 0, NULL);
    check_shape(g, out_of(g, nodes[9], 0), KC_DTYPE_FLOAT, 4, D(1, 2, 5, 8));
    assert_true(said("label '...' has extents 5 and 7"));
    assert_true(said("Einsum of more than 2 operands is not supported"));
    assert_true(said("repeated in one operand (a diagonal) is not supported"));
    assert_true(said("output label 'x' is in no input"));
    assert_true(said("3 labels for an operand of rank 4"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conv_explicit_pads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv_auto_pad, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv_dilation_group_1d, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conv_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pools_ceil_mode, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_needs_kernel_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gemm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broadcast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_squeeze_unsqueeze, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slice, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flatten_concat_transpose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gather_shape_cast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elementwise_and_misc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_declared_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bindings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_rank_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_errors_one_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_einsum, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
