/* kc_pass_fuse: residual Add and activations as epilogues, Concat inputs placed in their slice. */
#include <float.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_kernels.h"
#include "pass_graph.h"
#include "passes.h"

typedef struct fixture {
    kc_graph *g;
    kc_diag d;
    kc_stats st;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    f->g = kc_graph_new();
    kc_diag_init(&f->d, "test.onnx", stderr);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    kc_graph_free(f->g);
    free(f);
    return 0;
}

/* A 1x1 Conv from x [1,2,4,4] to a new value t [1,c,4,4]. */
static int add_conv(kc_graph *g, int x, int c, const char *name, int *t) {
    int64_t wdims[4] = {c, 2, 1, 1};
    float w[16] = {0};
    int ins[2] = {x, pg_const(g, kc_sprintf(g, "%s.w", name), 4, wdims, w)};
    *t = pg_value(g, name, 4, 1, c, 4, 4);
    return pg_node1(g, KC_OP_Conv, 2, ins, *t);
}

static int image(kc_graph *g, const char *name) {
    return pg_value(g, name, 4, 1, 2, 4, 4);
}

static void conv_add_relu_becomes_one_node(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int r = pg_input(g, image(g, "r"));
    int t, u = image(g, "u"), y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    int add_in[2] = {t, r};
    int add = pg_node1(g, KC_OP_Add, 2, add_in, u);
    int relu = pg_node1(g, KC_OP_Relu, 1, &u, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    const kc_node *n = &g->nodes[conv];
    assert_true(g->nodes[add].dead);
    assert_true(g->nodes[relu].dead);
    assert_int_equal(n->outputs[0], y);
    assert_int_equal(g->values[y].producer, conv);
    assert_int_equal(n->epi.residual, r);
    assert_int_equal(n->epi.act, KANN_ACT_RELU);
    assert_string_equal(n->fused, "Add, Relu");
    assert_int_equal(f->st.residuals_fused, 1);
    assert_int_equal(f->st.activations_fused, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void residual_produced_earlier_on_either_side(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int r = image(g, "r"), t, y = pg_output(g, image(g, "y"));
    pg_node1(g, KC_OP_Relu, 1, &x, r);
    int conv = add_conv(g, r, 2, "t", &t);
    int add_in[2] = {r, t};
    pg_node1(g, KC_OP_Add, 2, add_in, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_int_equal(g->nodes[conv].epi.residual, r);
    assert_int_equal(g->nodes[conv].outputs[0], y);
    assert_int_equal(f->st.residuals_fused, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void residual_produced_after_conv_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int t, r = image(g, "r"), y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    pg_node1(g, KC_OP_Relu, 1, &x, r);
    int add_in[2] = {t, r};
    int add = pg_node1(g, KC_OP_Add, 2, add_in, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[add].dead);
    assert_int_equal(g->nodes[conv].epi.residual, -1);
    assert_int_equal(f->st.residuals_fused, 0);
}

static void broadcast_residual_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int r = pg_input(g, pg_value(g, "r", 4, 1, 2, 1, 1));
    int t, y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    int add_in[2] = {t, r};
    int add = pg_node1(g, KC_OP_Add, 2, add_in, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[add].dead);
    assert_int_equal(g->nodes[conv].epi.residual, -1);
}

static void multi_use_intermediate_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int r = pg_input(g, image(g, "r"));
    int t, y = pg_output(g, image(g, "y")), z = pg_output(g, image(g, "z"));
    int conv = add_conv(g, x, 2, "t", &t);
    int add_in[2] = {t, r};
    int add = pg_node1(g, KC_OP_Add, 2, add_in, y);
    int relu = pg_node1(g, KC_OP_Relu, 1, &t, z);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[add].dead);
    assert_false(g->nodes[relu].dead);
    assert_int_equal(g->nodes[conv].epi.residual, -1);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_NONE);
    assert_int_equal(g->nodes[conv].outputs[0], t);
}

static void graph_output_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int t, y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    pg_output(g, t);
    int relu = pg_node1(g, KC_OP_Relu, 1, &t, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[relu].dead);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_NONE);
    assert_int_equal(f->st.activations_fused, 0);
}

static void intermediate_read_through_view_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int t, y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    int v = pg_output(g, pg_value(g, "v", 2, 2, 16));
    g->values[v].alias_of = t;
    int relu = pg_node1(g, KC_OP_Relu, 1, &t, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[relu].dead);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_NONE);
}

/* Conv -> Clip (opset) -> y; bounds as attributes (opset < 11) or inputs (lo/hi value or -1). */
static int conv_clip(kc_graph *g, int opset, int lo, int hi, int *conv) {
    int x = pg_input(g, image(g, "x"));
    int t, y = pg_output(g, image(g, "y"));
    *conv = add_conv(g, x, 2, "t", &t);
    int ins[3] = {t, lo, hi};
    int n_in = hi >= 0 ? 3 : lo >= 0 ? 2 : 1;
    return pg_node(g, KC_OP_Clip, opset, opset < 11 ? 1 : n_in, ins, 1, &y);
}

static void clip_attributes_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int conv;
    int clip = conv_clip(g, 6, -1, -1, &conv);
    pg_attr_float(g, clip, "min", 0.0f);
    pg_attr_float(g, clip, "max", 6.0f);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[clip].dead);
    const kc_epilogue *e = &g->nodes[conv].epi;
    assert_int_equal(e->act, KANN_ACT_CLIP);
    assert_float_equal(e->alpha, 0.0f, 0);
    assert_float_equal(e->beta, 6.0f, 0);
    assert_string_equal(g->nodes[conv].fused, "Clip");
}

static void clip_attribute_defaults_are_unbounded(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int conv;
    int clip = conv_clip(g, 6, -1, -1, &conv);
    pg_attr_float(g, clip, "max", 1.0f);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    const kc_epilogue *e = &g->nodes[conv].epi;
    assert_int_equal(e->act, KANN_ACT_CLIP);
    assert_float_equal(e->alpha, -FLT_MAX, 0);
    assert_float_equal(e->beta, 1.0f, 0);
}

static void clip_constant_inputs_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int conv;
    int clip = conv_clip(g, 13, pg_scalar(g, "lo", -1.0f), pg_scalar(g, "hi", 6.0f), &conv);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[clip].dead);
    const kc_epilogue *e = &g->nodes[conv].epi;
    assert_int_equal(e->act, KANN_ACT_CLIP);
    assert_float_equal(e->alpha, -1.0f, 0);
    assert_float_equal(e->beta, 6.0f, 0);
    assert_int_equal(f->st.activations_fused, 1);
}

static void clip_from_zero_unbounded_is_relu(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int conv;
    conv_clip(g, 13, pg_scalar(g, "lo", 0.0f), -1, &conv);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_RELU);
}

static void clip_non_constant_bounds_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int conv;
    int lo = pg_input(g, pg_value(g, "lo", 0));
    int clip = conv_clip(g, 13, lo, pg_scalar(g, "hi", 6.0f), &conv);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[clip].dead);
    assert_int_equal(g->nodes[conv].epi.act, KANN_ACT_NONE);
    assert_int_equal(f->st.activations_fused, 0);
}

static void relu_after_pool_and_elementwise(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int a = pg_input(g, image(g, "a")), b = pg_input(g, image(g, "b"));
    int s = image(g, "s"), r = image(g, "r"), p = pg_value(g, "p", 4, 1, 2, 2, 2);
    int q = pg_value(g, "q", 4, 1, 2, 2, 2), y = pg_output(g, pg_value(g, "y", 4, 1, 2, 2, 2));
    int ins[2] = {a, b};
    int add = pg_node1(g, KC_OP_Add, 2, ins, s);
    pg_node1(g, KC_OP_Relu, 1, &s, r);
    int pool = pg_node1(g, KC_OP_MaxPool, 1, &r, p);
    pg_node1(g, KC_OP_Relu, 1, &p, q);
    int soft = pg_node1(g, KC_OP_Softmax, 1, &q, y);
    int z = pg_output(g, pg_value(g, "z", 4, 1, 2, 2, 2));
    int last = pg_node1(g, KC_OP_Relu, 1, &y, z);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_int_equal(g->nodes[add].epi.act, KANN_ACT_RELU);
    assert_int_equal(g->nodes[add].outputs[0], r);
    assert_int_equal(g->nodes[pool].epi.act, KANN_ACT_RELU);
    assert_int_equal(g->nodes[pool].outputs[0], q);
    assert_string_equal(g->nodes[pool].fused, "Relu");
    assert_false(g->nodes[last].dead); /* Softmax takes no epilogue */
    assert_int_equal(g->nodes[soft].epi.act, KANN_ACT_NONE);
    assert_int_equal(f->st.activations_fused, 2);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void second_activation_not_fused(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int t, u = image(g, "u"), y = pg_output(g, image(g, "y"));
    int conv = add_conv(g, x, 2, "t", &t);
    pg_node1(g, KC_OP_Relu, 1, &t, u);
    int second = pg_node1(g, KC_OP_Relu, 1, &u, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_int_equal(g->nodes[conv].outputs[0], u);
    assert_false(g->nodes[second].dead);
    assert_int_equal(f->st.activations_fused, 1);
}

/* Value v is a view of value target, offset bytes into it. */
static void expect_view(const kc_graph *g, int v, int target, int64_t offset) {
    assert_int_equal(g->values[v].alias_of, target);
    assert_int_equal(g->values[v].alias_offset, offset);
}

static int concat(kc_graph *g, int axis, int n, const int *ins, int out) {
    int c = pg_node1(g, KC_OP_Concat, n, ins, out);
    pg_attr_int(g, c, "axis", axis);
    return c;
}

static void concat_inputs_become_views(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 3, "b", &b);
    int c = pg_value(g, "c", 4, 1, 5, 4, 4), y = pg_output(g, pg_value(g, "y", 4, 1, 5, 4, 4));
    int ins[2] = {a, b};
    int cat = concat(g, -3, 2, ins, c);
    pg_node1(g, KC_OP_Relu, 1, &c, y);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[cat].dead);
    expect_view(g, a, c, 0);
    expect_view(g, b, c, 2 * 16 * 4);
    assert_int_equal(f->st.views, 2);
}

static void concat_with_graph_input_keeps_node(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a;
    add_conv(g, x, 2, "a", &a);
    int c = pg_output(g, pg_value(g, "c", 4, 1, 4, 4, 4));
    int ins[2] = {x, a};
    int cat = concat(g, 1, 2, ins, c);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[cat].dead);
    assert_int_equal(g->values[x].alias_of, -1);
    expect_view(g, a, c, 2 * 16 * 4);
    assert_int_equal(f->st.views, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void concat_after_non_unit_dims_not_viewed(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 2, "b", &b);
    int c = pg_output(g, pg_value(g, "c", 4, 1, 2, 8, 4));
    int ins[2] = {a, b};
    int cat = concat(g, 2, 2, ins, c);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[cat].dead);
    assert_int_equal(g->values[a].alias_of, -1);
    assert_int_equal(g->values[b].alias_of, -1);
    assert_int_equal(f->st.views, 0);
}

static void concat_repeated_input_copied(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 2, "b", &b);
    int c = pg_output(g, pg_value(g, "c", 4, 1, 6, 4, 4));
    int ins[3] = {a, b, a};
    int cat = concat(g, 1, 3, ins, c);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_false(g->nodes[cat].dead);
    assert_int_equal(g->values[a].alias_of, -1);
    expect_view(g, b, c, 2 * 16 * 4);
}

static void input_shared_by_two_concats_placed_once(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b, d;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 2, "b", &b);
    add_conv(g, x, 2, "d", &d);
    int c1 = pg_output(g, pg_value(g, "c1", 4, 1, 4, 4, 4));
    int c2 = pg_output(g, pg_value(g, "c2", 4, 1, 4, 4, 4));
    int ins1[2] = {a, b}, ins2[2] = {d, a};
    int cat1 = concat(g, 1, 2, ins1, c1);
    int cat2 = concat(g, 1, 2, ins2, c2);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    expect_view(g, a, c2, 2 * 16 * 4);
    assert_true(g->nodes[cat2].dead);
    assert_false(g->nodes[cat1].dead);
    assert_int_equal(g->values[b].alias_of, c1);
    assert_int_equal(f->st.views, 3);
}

static void nested_concats_placed_in_the_outer_one(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b, d;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 2, "b", &b);
    int c1 = pg_value(g, "c1", 4, 1, 4, 4, 4);
    int ins1[2] = {a, b};
    int cat1 = concat(g, 1, 2, ins1, c1);
    add_conv(g, x, 2, "d", &d);
    int c2 = pg_output(g, pg_value(g, "c2", 4, 1, 6, 4, 4));
    int ins2[2] = {d, c1};
    int cat2 = concat(g, 1, 2, ins2, c2);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[cat1].dead);
    assert_true(g->nodes[cat2].dead);
    expect_view(g, c1, c2, 2 * 16 * 4);
    assert_int_equal(g->values[a].alias_of, c1);
    expect_view(g, b, c1, 2 * 16 * 4);
    assert_int_equal(g->values[d].alias_of, c2);
}

/* densenet: each layer concatenates every feature map so far; the last Concat holds them all,
 * and every earlier one is its first channels. */
static void growing_concats_become_views_of_the_last(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b, d;
    add_conv(g, x, 2, "a", &a);
    int c1 = pg_value(g, "c1", 4, 1, 2, 4, 4), r1 = pg_value(g, "r1", 4, 1, 2, 4, 4);
    int cat1 = concat(g, 1, 1, &a, c1);
    pg_node1(g, KC_OP_Relu, 1, &c1, r1);
    add_conv(g, r1, 2, "b", &b);
    int c2 = pg_value(g, "c2", 4, 1, 4, 4, 4), r2 = pg_output(g, pg_value(g, "r2", 4, 1, 4, 4, 4));
    int ins2[2] = {a, b};
    int cat2 = concat(g, 1, 2, ins2, c2);
    pg_node1(g, KC_OP_Relu, 1, &c2, r2);
    add_conv(g, x, 2, "d", &d);
    int c3 = pg_output(g, pg_value(g, "c3", 4, 1, 6, 4, 4));
    int ins3[3] = {a, b, d};
    int cat3 = concat(g, 1, 3, ins3, c3);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[cat3].dead);
    assert_true(g->nodes[cat2].dead);
    assert_true(g->nodes[cat1].dead);
    expect_view(g, c2, c3, 0);
    expect_view(g, c1, c3, 0);
    expect_view(g, d, c3, 4 * 16 * 4);
    assert_int_equal(f->st.views, 5);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

/* A Concat of inputs placed in another value out of its order, or with a gap between them, or
 * whose output is a graph output: copied. */
static void concats_of_views_out_of_place_copied(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, image(g, "x"));
    int a, b, d;
    add_conv(g, x, 2, "a", &a);
    add_conv(g, x, 2, "b", &b);
    add_conv(g, x, 2, "d", &d);
    int swapped = pg_value(g, "swapped", 4, 1, 4, 4, 4), gap = pg_value(g, "gap", 4, 1, 4, 4, 4);
    int out = pg_output(g, pg_value(g, "out", 4, 1, 4, 4, 4));
    int all = pg_output(g, pg_value(g, "all", 4, 1, 6, 4, 4));
    int ins_swapped[2] = {b, a}, ins_gap[2] = {a, d}, ins_out[2] = {a, b}, ins_all[3] = {a, b, d};
    int cat_swapped = concat(g, 1, 2, ins_swapped, swapped);
    int cat_gap = concat(g, 1, 2, ins_gap, gap);
    int cat_out = concat(g, 1, 2, ins_out, out);
    int sum_in[2] = {swapped, gap};
    pg_node1(g, KC_OP_Add, 2, sum_in, pg_output(g, pg_value(g, "sum", 4, 1, 4, 4, 4)));
    int cat_all = concat(g, 1, 3, ins_all, all);

    assert_int_equal(kc_pass_fuse(g, &f->d, &f->st), 0);
    assert_true(g->nodes[cat_all].dead);
    assert_false(g->nodes[cat_swapped].dead);
    assert_false(g->nodes[cat_gap].dead);
    assert_false(g->nodes[cat_out].dead);
    assert_int_equal(g->values[swapped].alias_of, -1);
    assert_int_equal(g->values[gap].alias_of, -1);
    assert_int_equal(g->values[out].alias_of, -1);
    assert_int_equal(f->st.views, 3);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(conv_add_relu_becomes_one_node),
        T(residual_produced_earlier_on_either_side),
        T(residual_produced_after_conv_not_fused),
        T(broadcast_residual_not_fused),
        T(multi_use_intermediate_not_fused),
        T(graph_output_not_fused),
        T(intermediate_read_through_view_not_fused),
        T(clip_attributes_fused),
        T(clip_attribute_defaults_are_unbounded),
        T(clip_constant_inputs_fused),
        T(clip_from_zero_unbounded_is_relu),
        T(clip_non_constant_bounds_not_fused),
        T(relu_after_pool_and_elementwise),
        T(second_activation_not_fused),
        T(concat_inputs_become_views),
        T(concat_with_graph_input_keeps_node),
        T(concat_after_non_unit_dims_not_viewed),
        T(concat_repeated_input_copied),
        T(input_shared_by_two_concats_placed_once),
        T(nested_concats_placed_in_the_outer_one),
        T(growing_concats_become_views_of_the_last),
        T(concats_of_views_out_of_place_copied),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
