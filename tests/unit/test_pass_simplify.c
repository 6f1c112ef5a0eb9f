/* kc_pass_simplify: Identity/Dropout removal and shape ops turned into views. */
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

static char *log_text(fixture *f) {
    static char buf[4096];
    rewind(f->log);
    size_t n = fread(buf, 1, sizeof buf - 1, f->log);
    buf[n] = 0;
    return buf;
}

static void identity_uses_replaced(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 1, 4));
    int y = pg_value(g, "y", 2, 1, 4);
    int z = pg_output(g, pg_value(g, "z", 2, 1, 4));
    int id = pg_node1(g, KC_OP_Identity, 1, &x, y);
    int relu = pg_node1(g, KC_OP_Relu, 1, &y, z);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 0);
    assert_true(g->nodes[id].dead);
    assert_false(g->nodes[relu].dead);
    assert_int_equal(g->nodes[relu].inputs[0], x);
    assert_int_equal(f->st.identities_removed, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void identity_to_graph_output_keeps_name(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 1, 4));
    int r = pg_value(g, "r", 2, 1, 4);
    int y = pg_output(g, pg_value(g, "y", 2, 1, 4));
    pg_node1(g, KC_OP_Relu, 1, &x, r);
    int id = pg_node1(g, KC_OP_Identity, 1, &r, y);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 0);
    assert_true(g->nodes[id].dead);
    assert_int_equal(g->outputs[0], y);
    assert_int_equal(g->values[y].alias_of, r);
    assert_int_equal(g->values[y].alias_offset, 0);
    assert_int_equal(f->st.identities_removed, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

static void dropout_with_unused_mask_removed(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 1, 4));
    int y = pg_value(g, "y", 2, 1, 4);
    int mask = kc_add_value(g, "mask");
    int z = pg_output(g, pg_value(g, "z", 2, 1, 4));
    int outs[2] = {y, mask};
    int drop = pg_node(g, KC_OP_Dropout, 13, 1, &x, 2, outs);
    int relu = pg_node1(g, KC_OP_Relu, 1, &y, z);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 0);
    assert_true(g->nodes[drop].dead);
    assert_int_equal(g->nodes[relu].inputs[0], x);
    assert_int_equal(f->st.identities_removed, 1);
}

static void dropout_with_used_mask_is_an_error(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 1, 4));
    int y = pg_output(g, pg_value(g, "y", 2, 1, 4));
    int mask = pg_output(g, kc_add_value(g, "mask"));
    int outs[2] = {y, mask};
    int drop = pg_node(g, KC_OP_Dropout, 13, 1, &x, 2, outs);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 1);
    assert_false(g->nodes[drop].dead);
    assert_int_equal(f->st.identities_removed, 0);
    assert_non_null(strstr(log_text(f), g->nodes[drop].name));
    assert_non_null(strstr(log_text(f), "mask"));
}

static void dropout_in_training_mode_is_an_error(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 1, 4));
    int y = pg_output(g, pg_value(g, "y", 2, 1, 4));
    int ratio = pg_scalar(g, "ratio", 0.5f);
    uint8_t yes = 1;
    int train = kc_add_const(g, "train", KC_DTYPE_BOOL, 0, NULL, &yes);
    int ins[3] = {x, ratio, train};
    int drop = pg_node(g, KC_OP_Dropout, 13, 3, ins, 1, &y);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 1);
    assert_false(g->nodes[drop].dead);
    assert_non_null(strstr(log_text(f), g->nodes[drop].name));
}

static void shape_ops_become_views(void **state) {
    fixture *f = *state;
    static const int ops[] = {KC_OP_Reshape, KC_OP_Flatten, KC_OP_Squeeze, KC_OP_Unsqueeze};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        kc_graph *g = kc_graph_new();
        kc_stats st = {0};
        int x = pg_input(g, pg_value(g, "x", 4, 1, 2, 3, 1));
        int r = pg_value(g, "r", 4, 1, 2, 3, 1);
        int64_t shape_dims[1] = {2};
        float unused[2] = {0};
        int shape = pg_const(g, "shape", 1, shape_dims, unused);
        int y = pg_value(g, "y", 2, 2, 3);
        int z = pg_output(g, pg_value(g, "z", 2, 2, 3));
        pg_node1(g, KC_OP_Relu, 1, &x, r);
        int ins[2] = {r, shape};
        int view = pg_node1(g, ops[i], ops[i] == KC_OP_Flatten ? 1 : 2, ins, y);
        int relu = pg_node1(g, KC_OP_Relu, 1, &y, z);

        assert_int_equal(kc_pass_simplify(g, &f->d, &st), 0);
        assert_true(g->nodes[view].dead);
        assert_int_equal(g->values[y].alias_of, r);
        assert_int_equal(g->values[y].alias_offset, 0);
        assert_int_equal(g->nodes[relu].inputs[0], y);
        assert_int_equal(st.views, 1);
        assert_int_equal(kc_verify(g, &f->d), 0);
        kc_graph_free(g);
    }
}

static void reshape_of_constant_left_alone(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int64_t dims[2] = {2, 2};
    float data[4] = {1, 2, 3, 4};
    int c = pg_const(g, "c", 2, dims, data);
    int y = pg_output(g, pg_value(g, "y", 1, 4));
    int reshape = pg_node1(g, KC_OP_Reshape, 1, &c, y);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 0);
    assert_false(g->nodes[reshape].dead);
    assert_int_equal(g->values[y].alias_of, -1);
    assert_int_equal(f->st.views, 0);
}

static void identity_chain_into_view(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = pg_input(g, pg_value(g, "x", 2, 2, 3));
    int a = pg_value(g, "a", 2, 2, 3);
    int b = pg_value(g, "b", 2, 2, 3);
    int c = pg_value(g, "c", 1, 6);
    int z = pg_output(g, pg_value(g, "z", 1, 6));
    pg_node1(g, KC_OP_Relu, 1, &x, a);
    pg_node1(g, KC_OP_Identity, 1, &a, b);
    int flat = pg_node1(g, KC_OP_Flatten, 1, &b, c);
    int relu = pg_node1(g, KC_OP_Relu, 1, &c, z);

    assert_int_equal(kc_pass_simplify(g, &f->d, &f->st), 0);
    assert_true(g->nodes[flat].dead);
    assert_int_equal(g->values[c].alias_of, a);
    assert_int_equal(g->nodes[relu].inputs[0], c);
    assert_int_equal(f->st.identities_removed, 1);
    assert_int_equal(f->st.views, 1);
    assert_int_equal(kc_verify(g, &f->d), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(identity_uses_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(identity_to_graph_output_keeps_name, setup, teardown),
        cmocka_unit_test_setup_teardown(dropout_with_unused_mask_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(dropout_with_used_mask_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(dropout_in_training_mode_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_ops_become_views, setup, teardown),
        cmocka_unit_test_setup_teardown(reshape_of_constant_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(identity_chain_into_view, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
