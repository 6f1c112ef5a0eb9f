/* The elementwise activations in the fuse pass and the lowering: every activation op as an
 * epilogue with its attributes, x * Sigmoid(x) as SiLU and x * HardSigmoid(x) as HardSwish
 * (into the producer, or standalone), and what must stay unfused. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"
#include "kann_kernels.h"
#include "lower.h"
#include "pass_graph.h"
#include "passes.h"

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

static int image(kc_graph *g, const char *name) {
    return pg_value(g, name, 4, 1, 2, 4, 4);
}

/* A 1x1 Conv from x [1,2,4,4] to a new value t [1,2,4,4]; returns the node. */
static int add_conv(kc_graph *g, int x, const char *name, int *t) {
    int64_t wdims[4] = {2, 2, 1, 1};
    float w[4] = {1, 0, 0, 1};
    int ins[2] = {x, pg_const(g, kc_sprintf(g, "%s.w", name), 4, wdims, w)};
    *t = image(g, name);
    return pg_node1(g, KC_OP_Conv, 2, ins, *t);
}

static void assert_act(const kc_epilogue *e, int kind, float alpha, float beta) {
    assert_int_equal(e->act, kind);
    assert_true(e->alpha == alpha);
    assert_true(e->beta == beta);
}

/* conv -> x; y = x * Sigmoid(x): one Conv with a SiLU epilogue, either operand order. */
static void silu_becomes_conv_epilogue(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    for (int order = 0; order < 2; order++) {
        int in = pg_input(g, image(g, kc_sprintf(g, "in%d", order)));
        int x, s = image(g, kc_sprintf(g, "s%d", order));
        int y = pg_output(g, image(g, kc_sprintf(g, "y%d", order)));
        int conv = add_conv(g, in, kc_sprintf(g, "x%d", order), &x);
        int sig = pg_node1(g, KC_OP_Sigmoid, 1, &x, s);
        int mul_in[2] = {order ? s : x, order ? x : s};
        int mul = pg_node1(g, KC_OP_Mul, 2, mul_in, y);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        assert_true(g->nodes[sig].dead);
        assert_true(g->nodes[mul].dead);
        assert_int_equal(g->nodes[conv].outputs[0], y);
        assert_int_equal(g->values[y].producer, conv);
        assert_act(&g->nodes[conv].epi, KANN_ACT_SILU, 0, 0);
        assert_string_equal(g->nodes[conv].fused, "Sigmoid, Mul");
    }
}

/* x read by a third node: the Sigmoid node computes SiLU on its own, lowered as one act call. */
static void silu_standalone_when_x_is_shared(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int in = pg_input(g, image(g, "in"));
    int x, s = image(g, "s"), y = pg_output(g, image(g, "y")), z = pg_output(g, image(g, "z"));
    int conv = add_conv(g, in, "x", &x);
    int sig = pg_node1(g, KC_OP_Sigmoid, 1, &x, s);
    int mul_in[2] = {x, s};
    int mul = pg_node1(g, KC_OP_Mul, 2, mul_in, y);
    pg_node1(g, KC_OP_Relu, 1, &x, z);
    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[mul].dead);
    assert_false(g->nodes[sig].dead);
    assert_int_equal(g->nodes[sig].outputs[0], y);
    assert_int_equal(g->values[y].producer, sig);
    assert_act(&g->nodes[sig].epi, KANN_ACT_SILU, 0, 0);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_NONE);

    kc_program p = {0};
    assert_int_equal(kc_lower(g, &p, &f->d), 0);
    int found = 0;
    for (int i = 0; i < p.n_calls; i++) {
        if (p.calls[i].node != sig) continue;
        assert_int_equal(p.calls[i].kernel, KANN_KERNEL_F32_ACT);
        const kann_act_args *a = p.calls[i].args;
        assert_int_equal(a->act.kind, KANN_ACT_SILU);
        assert_int_equal(a->count, 32);
        found++;
    }
    assert_int_equal(found, 1);
    kc_program_free(&p);
}

/* x * HardSigmoid(x) is HardSwish only with alpha 1/6 and beta 1/2. */
static void hard_swish_from_hard_sigmoid(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int nodes[2][3];
    for (int i = 0; i < 2; i++) {
        int in = pg_input(g, image(g, kc_sprintf(g, "in%d", i)));
        int x, s = image(g, kc_sprintf(g, "s%d", i));
        int y = pg_output(g, image(g, kc_sprintf(g, "y%d", i)));
        nodes[i][0] = add_conv(g, in, kc_sprintf(g, "x%d", i), &x);
        nodes[i][1] = pg_node1(g, KC_OP_HardSigmoid, 1, &x, s);
        pg_attr_float(g, nodes[i][1], "alpha", i ? 0.2f : 1.0f / 6.0f);
        int mul_in[2] = {x, s};
        nodes[i][2] = pg_node1(g, KC_OP_Mul, 2, mul_in, y);
    }
    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_act(&g->nodes[nodes[0][0]].epi, KANN_ACT_HARD_SWISH, 0, 0);
    assert_true(g->nodes[nodes[0][2]].dead);
    /* alpha 0.2: the HardSigmoid cannot fuse (x has two readers), the Mul stays */
    assert_false(g->nodes[nodes[1][2]].dead);
    assert_false(g->nodes[nodes[1][1]].dead);
    assert_int_equal(g->nodes[nodes[1][0]].epi.act, KANN_ACT_NONE);
}

/* Sigmoid(x) read by another node too: nothing is gated. */
static void silu_needs_a_private_sigmoid(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int s = pg_output(g, image(g, "s")), y = pg_output(g, image(g, "y"));
    int sig = pg_node1(g, KC_OP_Sigmoid, 1, &x, s);
    int mul_in[2] = {x, s};
    int mul = pg_node1(g, KC_OP_Mul, 2, mul_in, y);
    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[sig].dead);
    assert_false(g->nodes[mul].dead);
    assert_int_equal(g->nodes[sig].epi.act, KANN_ACT_NONE);
}

/* Each activation op with its attributes (and defaults) becomes the Conv's epilogue. */
static void every_activation_fuses(void **state) {
    fixture *f = *state;
    struct {
        int op;
        const char *attr1;
        float v1;
        const char *attr2;
        float v2;
        int kind;
        float alpha, beta;
    } cases[] = {
        {KC_OP_Sigmoid, NULL, 0, NULL, 0, KANN_ACT_SIGMOID, 0, 0},
        {KC_OP_Tanh, NULL, 0, NULL, 0, KANN_ACT_TANH, 0, 0},
        {KC_OP_LeakyRelu, NULL, 0, NULL, 0, KANN_ACT_LEAKY_RELU, 0.01f, 0},
        {KC_OP_LeakyRelu, "alpha", 0.3f, NULL, 0, KANN_ACT_LEAKY_RELU, 0.3f, 0},
        {KC_OP_HardSigmoid, NULL, 0, NULL, 0, KANN_ACT_HARD_SIGMOID, 0.2f, 0.5f},
        {KC_OP_HardSigmoid, "alpha", 0.4f, "beta", 0.1f, KANN_ACT_HARD_SIGMOID, 0.4f, 0.1f},
        {KC_OP_HardSwish, NULL, 0, NULL, 0, KANN_ACT_HARD_SWISH, 0, 0},
        {KC_OP_Elu, NULL, 0, NULL, 0, KANN_ACT_ELU, 1.0f, 0},
        {KC_OP_Elu, "alpha", 0.5f, NULL, 0, KANN_ACT_ELU, 0.5f, 0},
        {KC_OP_Selu, NULL, 0, NULL, 0, KANN_ACT_SELU, 1.67326319217681884765625f,
         1.05070102214813232421875f},
        {KC_OP_Selu, "alpha", 2.0f, "gamma", 3.0f, KANN_ACT_SELU, 2.0f, 3.0f},
        {KC_OP_Celu, "alpha", 2.0f, NULL, 0, KANN_ACT_CELU, 2.0f, 0},
        {KC_OP_Softplus, NULL, 0, NULL, 0, KANN_ACT_SOFTPLUS, 0, 0},
        {KC_OP_Softsign, NULL, 0, NULL, 0, KANN_ACT_SOFTSIGN, 0, 0},
        {KC_OP_ThresholdedRelu, NULL, 0, NULL, 0, KANN_ACT_THRESHOLDED_RELU, 1.0f, 0},
        {KC_OP_ThresholdedRelu, "alpha", 0.25f, NULL, 0, KANN_ACT_THRESHOLDED_RELU, 0.25f, 0},
        {KC_OP_Gelu, NULL, 0, NULL, 0, KANN_ACT_GELU, 0, 0},
        {KC_OP_Mish, NULL, 0, NULL, 0, KANN_ACT_MISH, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kc_graph *g = f->g;
        int in = pg_input(g, image(g, kc_sprintf(g, "in%zu", i)));
        int x, y = pg_output(g, image(g, kc_sprintf(g, "y%zu", i)));
        int conv = add_conv(g, in, kc_sprintf(g, "x%zu", i), &x);
        int act = pg_node1(g, cases[i].op, 1, &x, y);
        if (cases[i].attr1) pg_attr_float(g, act, cases[i].attr1, cases[i].v1);
        if (cases[i].attr2) pg_attr_float(g, act, cases[i].attr2, cases[i].v2);
        assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
        if (!g->nodes[act].dead)
            fail_msg("case %zu (%s) did not fuse", i, kc_ops[cases[i].op].name);
        assert_act(&g->nodes[conv].epi, cases[i].kind, cases[i].alpha, cases[i].beta);
    }
}

/* Gelu's tanh approximation; attribute values no kind expresses stay standalone and are
 * refused with a reason. */
static void activation_attribute_values(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int y1 = image(g, "y1"), y2 = image(g, "y2"), y3 = image(g, "y3");
    int gelu = pg_node1(g, KC_OP_Gelu, 1, &x, y1);
    kc_attr *a = kc_node_add_attr(g, gelu, "approximate", KC_ATTR_STRING);
    a->s = "tanh";
    a->s_len = 4;
    int bad_gelu = pg_node1(g, KC_OP_Gelu, 1, &x, y2);
    a = kc_node_add_attr(g, bad_gelu, "approximate", KC_ATTR_STRING);
    a->s = "erf";
    a->s_len = 3;
    int celu = pg_node1(g, KC_OP_Celu, 1, &x, y3);
    pg_attr_float(g, celu, "alpha", 0.0f);
    kc_epilogue e = {0, 0, 0, -1};
    const char *why = NULL;
    assert_int_equal(kc_activation_of(g, gelu, &e, &why), 1);
    assert_int_equal(e.act, KANN_ACT_GELU_TANH);
    assert_int_equal(kc_activation_of(g, bad_gelu, &e, &why), 0);
    assert_non_null(strstr(why, "approximate"));
    assert_int_equal(kc_activation_of(g, celu, &e, &why), 0);
    assert_non_null(strstr(why, "alpha"));
    /* A Clip whose bound is computed at run time is no epilogue. */
    int lo = pg_input(g, pg_value(g, "lo", 0));
    int clip_in[2] = {x, lo};
    int clip = pg_node1(g, KC_OP_Clip, 2, clip_in, pg_value(g, "y4", 4, 1, 2, 4, 4));
    assert_int_equal(kc_activation_of(g, clip, &e, &why), 0);
    /* Clip(0, +inf) is a Relu. */
    int zero = pg_scalar(g, "zero", 0.0f);
    int relu_in[2] = {x, zero};
    int relu_clip = pg_node1(g, KC_OP_Clip, 2, relu_in, pg_value(g, "y5", 4, 1, 2, 4, 4));
    assert_int_equal(kc_activation_of(g, relu_clip, &e, &why), 1);
    assert_int_equal(e.act, KANN_ACT_RELU);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(silu_becomes_conv_epilogue, setup, teardown),
        cmocka_unit_test_setup_teardown(silu_standalone_when_x_is_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(hard_swish_from_hard_sigmoid, setup, teardown),
        cmocka_unit_test_setup_teardown(silu_needs_a_private_sigmoid, setup, teardown),
        cmocka_unit_test_setup_teardown(every_activation_fuses, setup, teardown),
        cmocka_unit_test_setup_teardown(activation_attribute_values, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
