/* kc_pass_fold_bn: BatchNormalization and per-channel Mul/Add folded into Conv/Gemm/MatMul. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pass_graph.h"
#include "passes.h"

#define TOL 1e-6

typedef struct fixture {
    kc_graph *g;
    kc_diag d;
    kc_stats st;
    FILE *log;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->g = kc_graph_new();
    f->log = tmpfile();
    kc_diag_init(&f->d, "test.onnx", f->log);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    kc_graph_free(f->g);
    fclose(f->log);
    free(f);
    return 0;
}

/* Deterministic, varied test data (both signs, no zeros). */
static void fill(float *x, int n, float seed) {
    for (int i = 0; i < n; i++)
        x[i] = seed + 0.37f * (float)((i * 7) % 11) - 1.5f;
}

/* A BatchNormalization's parameters; var is kept positive. */
typedef struct bn_params {
    int c;
    float scale[8], bias[8], mean[8], var[8];
    float eps;
} bn_params;

static bn_params make_bn(int c) {
    bn_params p = {.c = c, .eps = 1e-3f};
    for (int i = 0; i < c; i++) {
        p.scale[i] = 0.5f + 0.25f * (float)i;
        p.bias[i] = -0.3f + 0.1f * (float)i;
        p.mean[i] = 0.2f * (float)i - 0.4f;
        p.var[i] = 0.5f + 0.3f * (float)i;
    }
    return p;
}

static double bn_s(const bn_params *p, int c) {
    return p->scale[c] / sqrt((double)p->var[c] + p->eps);
}

/* Adds BN(x) -> y with constant parameters from p; returns the node. */
static int add_bn(kc_graph *g, int x, int y, const bn_params *p) {
    int64_t dims[1] = {p->c};
    int ins[5] = {x, pg_const(g, "bn.scale", 1, dims, p->scale),
                  pg_const(g, "bn.bias", 1, dims, p->bias),
                  pg_const(g, "bn.mean", 1, dims, p->mean), pg_const(g, "bn.var", 1, dims, p->var)};
    int n = pg_node1(g, KC_OP_BatchNormalization, 5, ins, y);
    pg_attr_float(g, n, "epsilon", p->eps);
    return n;
}

/* Conv (m_out channels from c_in, 2x2 kernel, group) -> BN, with or without bias. */
static void check_conv_bn(int c_in, int m_out, int group, int with_bias) {
    kc_graph *g = kc_graph_new();
    kc_diag d;
    kc_diag_init(&d, "test.onnx", stderr);
    kc_stats st = {0};
    int cg = c_in / group;
    int64_t wdims[4] = {m_out, cg, 2, 2}, bdims[1] = {m_out};
    float w[8 * 8 * 4], b[8];
    fill(w, m_out * cg * 4, 0.1f);
    fill(b, m_out, -0.2f);
    int x = pg_input(g, pg_value(g, "x", 4, 1, c_in, 5, 5));
    int wv = pg_const(g, "w", 4, wdims, w);
    int bv = with_bias ? pg_const(g, "b", 1, bdims, b) : -1;
    int t = pg_value(g, "t", 4, 1, m_out, 4, 4);
    int y = pg_output(g, pg_value(g, "y", 4, 1, m_out, 4, 4));
    int ins[3] = {x, wv, bv};
    int conv = pg_node1(g, KC_OP_Conv, with_bias ? 3 : 2, ins, t);
    pg_attr_int(g, conv, "group", group);
    bn_params p = make_bn(m_out);
    int bn = add_bn(g, t, y, &p);

    assert_int_equal(kc_pass_fold_bn(g, &d, &st), 0);
    assert_true(g->nodes[bn].dead);
    assert_int_equal(st.batchnorms_folded, 1);
    assert_int_equal(st.batchnorms_standalone, 0);
    const kc_node *n = &g->nodes[conv];
    assert_false(n->dead);
    assert_int_equal(n->outputs[0], y);
    assert_int_equal(g->values[y].producer, conv);
    assert_string_equal(n->fused, "BatchNormalization");
    assert_int_equal(n->n_inputs, 3);
    assert_int_not_equal(n->inputs[1], wv);
    assert_true(kc_is_const(g, n->inputs[1]));
    assert_true(kc_is_const(g, n->inputs[2]));
    const float *nw = pg_data(g, n->inputs[1]), *nb = pg_data(g, n->inputs[2]);
    assert_int_equal(g->values[n->inputs[1]].rank, 4);
    assert_int_equal(g->values[n->inputs[2]].dims[0], m_out);
    for (int m = 0; m < m_out; m++) {
        double s = bn_s(&p, m);
        for (int c = 0; c < cg; c++)
            for (int k = 0; k < 4; k++) {
                int i = (m * cg + c) * 4 + k;
                assert_float_equal(nw[i], (float)(w[i] * s), TOL);
            }
        double b0 = with_bias ? b[m] : 0.0;
        assert_float_equal(nb[m], (float)((b0 - p.mean[m]) * s + p.bias[m]), TOL);
    }
    /* The initializer itself is untouched: another node may share it. */
    assert_memory_equal(pg_data(g, wv), w, sizeof(float) * (size_t)(m_out * cg * 4));
    assert_int_equal(kc_verify(g, &d), 0);
    kc_graph_free(g);
}

static void conv_bn_folds(void **state) {
    check_conv_bn(2, 3, 1, 1);
}

static void conv_without_bias_bn_folds(void **state) {
    check_conv_bn(2, 3, 1, 0);
}

static void grouped_conv_bn_folds(void **state) {
    check_conv_bn(4, 6, 2, 1);
}

static void depthwise_conv_bn_folds(void **state) {
    check_conv_bn(4, 4, 4, 0);
}

/* Gemm(A [2,3], B, C) -> BN over the 4 output features. c_rows: 0 no C, 1 C [4], 2 C [2,4]. */
static void check_gemm_bn(int trans_b, int c_rows, float beta, int matmul) {
    kc_graph *g = kc_graph_new();
    kc_diag d;
    kc_diag_init(&d, "test.onnx", stderr);
    kc_stats st = {0};
    enum { M = 2, K = 3, N = 4 };
    float b[K * N], c[M * N];
    fill(b, K * N, 0.3f);
    fill(c, M * N, -0.1f);
    int64_t bdims[2] = {trans_b ? N : K, trans_b ? K : N};
    int64_t cdims[2] = {M, N};
    int a = pg_input(g, pg_value(g, "a", 2, M, K));
    int bv = pg_const(g, "B", 2, bdims, b);
    int cv = c_rows == 0   ? -1
             : c_rows == 1 ? pg_const(g, "C", 1, &cdims[1], c)
                           : pg_const(g, "C", 2, cdims, c);
    int t = pg_value(g, "t", 2, M, N);
    int y = pg_output(g, pg_value(g, "y", 2, M, N));
    int ins[3] = {a, bv, cv};
    int gemm;
    if (matmul) {
        gemm = pg_node1(g, KC_OP_MatMul, 2, ins, t);
    } else {
        gemm = pg_node1(g, KC_OP_Gemm, cv >= 0 ? 3 : 2, ins, t);
        pg_attr_int(g, gemm, "transB", trans_b);
        pg_attr_float(g, gemm, "beta", beta);
    }
    bn_params p = make_bn(N);
    int bn = add_bn(g, t, y, &p);

    assert_int_equal(kc_pass_fold_bn(g, &d, &st), 0);
    assert_true(g->nodes[bn].dead);
    assert_int_equal(st.batchnorms_folded, 1);
    const kc_node *n = &g->nodes[gemm];
    assert_int_equal(n->op, KC_OP_Gemm);
    assert_string_equal(n->op_type, "Gemm");
    assert_int_equal(n->outputs[0], y);
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->inputs[0], a);
    assert_float_equal(kc_attr_float(n, "beta", 1.0f), 1.0f, 0);
    assert_int_equal(kc_attr_int(n, "transB", 0), trans_b);
    const float *nb = pg_data(g, n->inputs[1]), *nc = pg_data(g, n->inputs[2]);
    const kc_value *ncv = &g->values[n->inputs[2]];
    for (int k = 0; k < K; k++)
        for (int j = 0; j < N; j++) {
            int i = trans_b ? j * K + k : k * N + j;
            assert_float_equal(nb[i], (float)(b[i] * bn_s(&p, j)), TOL);
        }
    int full = c_rows == 2;
    assert_int_equal(kc_value_numel(ncv), full ? M * N : N);
    for (int r = 0; r < (full ? M : 1); r++)
        for (int j = 0; j < N; j++) {
            double cval = c_rows == 0 ? 0.0 : c_rows == 1 ? c[j] : c[r * N + j];
            double s = bn_s(&p, j);
            double want = (beta * cval - p.mean[j]) * s + p.bias[j];
            assert_float_equal(nc[r * N + j], (float)want, TOL);
        }
    assert_memory_equal(pg_data(g, bv), b, sizeof b);
    assert_int_equal(kc_verify(g, &d), 0);
    kc_graph_free(g);
}

static void gemm_bn_folds(void **state) {
    check_gemm_bn(0, 1, 1.0f, 0);
    check_gemm_bn(1, 1, 1.0f, 0);
    check_gemm_bn(0, 0, 1.0f, 0);
    check_gemm_bn(1, 0, 1.0f, 0);
    check_gemm_bn(0, 2, 0.5f, 0);
    check_gemm_bn(1, 1, 0.5f, 0);
}

static void matmul_bn_becomes_gemm(void **state) {
    check_gemm_bn(0, 0, 1.0f, 1);
}

/* Conv x -> t, BN t -> y, plus whatever the case adds; returns the conv. */
static int conv_bn_graph(kc_graph *g, int *t, int *y, int *bn) {
    int64_t wdims[4] = {2, 2, 1, 1};
    float w[4] = {1, 2, 3, 4};
    int x = pg_input(g, pg_value(g, "x", 4, 1, 2, 3, 3));
    int wv = pg_const(g, "w", 4, wdims, w);
    *t = pg_value(g, "t", 4, 1, 2, 3, 3);
    *y = pg_output(g, pg_value(g, "y", 4, 1, 2, 3, 3));
    int ins[2] = {x, wv};
    int conv = pg_node1(g, KC_OP_Conv, 2, ins, *t);
    bn_params p = make_bn(2);
    *bn = add_bn(g, *t, *y, &p);
    return conv;
}

static void multi_use_conv_output_not_folded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    int conv = conv_bn_graph(g, &t, &y, &bn);
    int z = pg_output(g, pg_value(g, "z", 4, 1, 2, 3, 3));
    pg_node1(g, KC_OP_Relu, 1, &t, z);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[bn].dead);
    assert_int_equal(g->nodes[conv].outputs[0], t);
    assert_int_equal(f->st.batchnorms_folded, 0);
    assert_int_equal(f->st.batchnorms_standalone, 1);
}

static void conv_output_read_through_view_not_folded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    conv_bn_graph(g, &t, &y, &bn);
    /* A Reshape made a view of t: its reader does not show up as a use of t. */
    int r = pg_value(g, "r", 2, 2, 9);
    g->values[r].alias_of = t;
    int z = pg_output(g, pg_value(g, "z", 2, 2, 9));
    pg_node1(g, KC_OP_Relu, 1, &r, z);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[bn].dead);
    assert_int_equal(f->st.batchnorms_standalone, 1);
}

static void conv_graph_output_not_folded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    conv_bn_graph(g, &t, &y, &bn);
    pg_output(g, t);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[bn].dead);
    assert_int_equal(f->st.batchnorms_standalone, 1);
}

static void non_constant_bn_params_not_folded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    int conv = conv_bn_graph(g, &t, &y, &bn);
    g->nodes[bn].inputs[3] = pg_input(g, pg_value(g, "mean", 1, 2));

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[bn].dead);
    assert_int_equal(g->nodes[conv].n_inputs, 2);
    assert_int_equal(f->st.batchnorms_folded, 0);
    assert_int_equal(f->st.batchnorms_standalone, 1);
}

static void bn_after_non_conv_is_standalone(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 4, 1, 2, 3, 3));
    int y = pg_output(g, pg_value(g, "y", 4, 1, 2, 3, 3));
    bn_params p = make_bn(2);
    int bn = add_bn(g, x, y, &p);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[bn].dead);
    assert_int_equal(f->st.batchnorms_standalone, 1);
}

static void training_bn_is_an_error(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    conv_bn_graph(g, &t, &y, &bn);
    pg_attr_int(g, bn, "training_mode", 1);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 1);
    assert_false(g->nodes[bn].dead);
}

static void bn_with_unused_statistics_outputs_folds(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int t, y, bn;
    conv_bn_graph(g, &t, &y, &bn);
    int *outs = kc_alloc(g, sizeof(int) * 3);
    outs[0] = y;
    outs[1] = kc_add_value(g, "running_mean");
    outs[2] = kc_add_value(g, "running_var");
    g->nodes[bn].outputs = outs;
    g->nodes[bn].n_outputs = 3;

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_true(g->nodes[bn].dead);
    assert_int_equal(f->st.batchnorms_folded, 1);
}

static void shared_weights_fold_separately(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t wdims[4] = {2, 2, 1, 1};
    float w[4] = {1, 2, 3, 4};
    int wv = pg_const(g, "w", 4, wdims, w);
    bn_params p = make_bn(2);
    int convs[2];
    for (int i = 0; i < 2; i++) {
        int x = pg_input(g, pg_value(g, kc_sprintf(g, "x%d", i), 4, 1, 2, 1, 1));
        int t = pg_value(g, kc_sprintf(g, "t%d", i), 4, 1, 2, 1, 1);
        int y = pg_output(g, pg_value(g, kc_sprintf(g, "y%d", i), 4, 1, 2, 1, 1));
        int ins[2] = {x, wv};
        convs[i] = pg_node1(g, KC_OP_Conv, 2, ins, t);
        add_bn(g, t, y, &p);
    }

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_int_equal(f->st.batchnorms_folded, 2);
    assert_int_not_equal(g->nodes[convs[0]].inputs[1], g->nodes[convs[1]].inputs[1]);
    assert_memory_equal(pg_data(g, wv), w, sizeof w);
    const float *w0 = pg_data(g, g->nodes[convs[0]].inputs[1]);
    assert_float_equal(w0[2], (float)(w[2] * bn_s(&p, 1)), TOL);
}

/* Conv (3 out channels, bias) -> Mul(k_mul) -> Add(k_add). */
static void conv_mul_add_fold(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t wdims[4] = {3, 1, 1, 1}, bdims[1] = {3}, kdims3[3] = {3, 1, 1},
            kdims4[4] = {1, 3, 1, 1};
    float w[3] = {1, -2, 3}, b[3] = {0.5f, 0.25f, -1}, km[3] = {2, 3, -4}, ka[3] = {10, 20, 30};
    int x = pg_input(g, pg_value(g, "x", 4, 1, 1, 2, 2));
    int ins[3] = {x, pg_const(g, "w", 4, wdims, w), pg_const(g, "b", 1, bdims, b)};
    int t = pg_value(g, "t", 4, 1, 3, 2, 2);
    int u = pg_value(g, "u", 4, 1, 3, 2, 2);
    int y = pg_output(g, pg_value(g, "y", 4, 1, 3, 2, 2));
    int conv = pg_node1(g, KC_OP_Conv, 3, ins, t);
    int mul_in[2] = {pg_const(g, "km", 3, kdims3, km), t};
    int mul = pg_node1(g, KC_OP_Mul, 2, mul_in, u);
    int add_in[2] = {u, pg_const(g, "ka", 4, kdims4, ka)};
    int add = pg_node1(g, KC_OP_Add, 2, add_in, y);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_true(g->nodes[mul].dead);
    assert_true(g->nodes[add].dead);
    assert_int_equal(f->st.affines_folded, 2);
    const kc_node *n = &g->nodes[conv];
    assert_int_equal(n->outputs[0], y);
    assert_string_equal(n->fused, "Mul, Add");
    const float *nw = pg_data(g, n->inputs[1]), *nb = pg_data(g, n->inputs[2]);
    for (int m = 0; m < 3; m++) {
        assert_float_equal(nw[m], w[m] * km[m], TOL);
        assert_float_equal(nb[m], b[m] * km[m] + ka[m], TOL);
    }
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void conv_add_scalar_creates_bias(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t wdims[4] = {2, 1, 1, 1};
    float w[2] = {1, 2};
    int x = pg_input(g, pg_value(g, "x", 4, 1, 1, 2, 2));
    int ins[2] = {x, pg_const(g, "w", 4, wdims, w)};
    int t = pg_value(g, "t", 4, 1, 2, 2, 2);
    int y = pg_output(g, pg_value(g, "y", 4, 1, 2, 2, 2));
    int conv = pg_node1(g, KC_OP_Conv, 2, ins, t);
    int add_in[2] = {t, pg_scalar(g, "k", 1.5f)};
    pg_node1(g, KC_OP_Add, 2, add_in, y);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_int_equal(f->st.affines_folded, 1);
    const kc_node *n = &g->nodes[conv];
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->inputs[1], ins[1]); /* an Add leaves the weights alone */
    const float *nb = pg_data(g, n->inputs[2]);
    assert_float_equal(nb[0], 1.5f, 0);
    assert_float_equal(nb[1], 1.5f, 0);
}

static void conv_mul_along_last_axis_not_folded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t wdims[4] = {3, 1, 1, 1}, kdims[1] = {3};
    float w[3] = {1, 2, 3}, k[3] = {2, 3, 4};
    int x = pg_input(g, pg_value(g, "x", 4, 1, 1, 3, 3));
    int ins[2] = {x, pg_const(g, "w", 4, wdims, w)};
    int t = pg_value(g, "t", 4, 1, 3, 3, 3);
    int y = pg_output(g, pg_value(g, "y", 4, 1, 3, 3, 3));
    pg_node1(g, KC_OP_Conv, 2, ins, t);
    /* [3] broadcasts along the width, not the channels. */
    int mul_in[2] = {t, pg_const(g, "k", 1, kdims, k)};
    int mul = pg_node1(g, KC_OP_Mul, 2, mul_in, y);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_false(g->nodes[mul].dead);
    assert_int_equal(f->st.affines_folded, 0);
}

static void conv_bn_then_mul_chain(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t wdims[4] = {2, 1, 1, 1};
    float w[2] = {1, 2};
    int x = pg_input(g, pg_value(g, "x", 4, 1, 1, 2, 2));
    int ins[2] = {x, pg_const(g, "w", 4, wdims, w)};
    int t = pg_value(g, "t", 4, 1, 2, 2, 2);
    int u = pg_value(g, "u", 4, 1, 2, 2, 2);
    int y = pg_output(g, pg_value(g, "y", 4, 1, 2, 2, 2));
    int conv = pg_node1(g, KC_OP_Conv, 2, ins, t);
    bn_params p = make_bn(2);
    add_bn(g, t, u, &p);
    int mul_in[2] = {u, pg_scalar(g, "k", 2.0f)};
    pg_node1(g, KC_OP_Mul, 2, mul_in, y);

    assert_int_equal(kc_pass_fold_bn(g, &f->d, &f->st), 0);
    assert_int_equal(f->st.batchnorms_folded, 1);
    assert_int_equal(f->st.affines_folded, 1);
    const kc_node *n = &g->nodes[conv];
    assert_int_equal(n->outputs[0], y);
    assert_string_equal(n->fused, "BatchNormalization, Mul");
    const float *nw = pg_data(g, n->inputs[1]), *nb = pg_data(g, n->inputs[2]);
    for (int m = 0; m < 2; m++) {
        double s = bn_s(&p, m);
        assert_float_equal(nw[m], (float)(w[m] * s * 2.0), 1e-5);
        assert_float_equal(nb[m], (float)((p.bias[m] - p.mean[m] * s) * 2.0), 1e-5);
    }
    assert_int_equal(kc_verify(g, &f->d), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_bn_folds),
        cmocka_unit_test(conv_without_bias_bn_folds),
        cmocka_unit_test(grouped_conv_bn_folds),
        cmocka_unit_test(depthwise_conv_bn_folds),
        cmocka_unit_test(gemm_bn_folds),
        cmocka_unit_test(matmul_bn_becomes_gemm),
        cmocka_unit_test_setup_teardown(multi_use_conv_output_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_output_read_through_view_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_graph_output_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(non_constant_bn_params_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(bn_after_non_conv_is_standalone, setup, teardown),
        cmocka_unit_test_setup_teardown(training_bn_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(bn_with_unused_statistics_outputs_folds, setup, teardown),
        cmocka_unit_test_setup_teardown(shared_weights_fold_separately, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_mul_add_fold, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_add_scalar_creates_bias, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_mul_along_last_axis_not_folded, setup, teardown),
        cmocka_unit_test_setup_teardown(conv_bn_then_mul_chain, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
