/* kc_pass_simplify: Identity/Dropout removal, shape ops and one-range Gathers turned into views. */
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

/* Gathers of one constant index: views of their range where only unit dims come before the
 * axis (the index negative, or a one-element list), else left to the kernel (dims before the
 * axis, several indices, an index at run time or out of range). */
static void gathers_of_one_range_become_views(void **state) {
    (void)state;
    enum {
        VIEW_AXIS0,
        VIEW_NEGATIVE,
        VIEW_LIST_AXIS1,
        OUTER_DIM,
        TWO_INDICES,
        RUNTIME,
        OUT_OF_RANGE
    };
    for (int kind = VIEW_AXIS0; kind <= OUT_OF_RANGE; kind++) {
        kc_graph *g = kc_graph_new();
        kc_stats st = {0};
        kc_diag d;
        kc_diag_init(&d, "test.onnx", stderr);
        int axis1 = kind == VIEW_LIST_AXIS1 || kind == OUTER_DIM;
        int x = pg_input(g, kind == VIEW_LIST_AXIS1 ? pg_value(g, "x", 3, 1, 3, 5)
                                                    : pg_value(g, "x", 3, 3, 4, 5));
        int r =
            kind == VIEW_LIST_AXIS1 ? pg_value(g, "r", 3, 1, 3, 5) : pg_value(g, "r", 3, 3, 4, 5);
        pg_node1(g, KC_OP_Relu, 1, &x, r);
        int64_t one[1] = {1}, two[2] = {2}, values[2] = {2, 0};
        if (kind == VIEW_NEGATIVE) values[0] = -1;
        if (kind == OUT_OF_RANGE) values[0] = 3;
        int idx =
            kind == RUNTIME
                ? pg_input(g, kc_add_value(g, "i"))
                : kc_add_const(
                      g, "i", KC_DTYPE_INT64,
                      kind == VIEW_AXIS0 || kind == VIEW_NEGATIVE || kind == OUT_OF_RANGE ? 0 : 1,
                      kind == TWO_INDICES ? two : one, values);
        int y = kind == VIEW_LIST_AXIS1 ? pg_value(g, "y", 3, 1, 1, 5)
                : kind == OUTER_DIM     ? pg_value(g, "y", 2, 3, 5)
                : kind == TWO_INDICES   ? pg_value(g, "y", 3, 2, 4, 5)
                                        : pg_value(g, "y", 2, 4, 5);
        int z = pg_output(g, kc_add_value(g, "z"));
        int gather = pg_node1(g, KC_OP_Gather, 2, (int[]){r, idx}, y);
        if (axis1) pg_attr_int(g, gather, "axis", 1);
        pg_node1(g, KC_OP_Relu, 1, &y, z);

        assert_int_equal(kc_pass_simplify(g, &d, &st), 0);
        int view = kind <= VIEW_LIST_AXIS1;
        assert_int_equal(g->nodes[gather].dead, view);
        assert_int_equal(st.views, view);
        assert_int_equal(g->values[y].alias_of, view ? r : -1);
        /* x[2] (and x[-1]) of [3, 4, 5]: 40 floats on; x[:, 2] of [1, 3, 5]: 10 */
        if (view) assert_int_equal(g->values[y].alias_offset, (axis1 ? 10 : 40) * 4);
        kc_graph_free(g);
    }
}

/* A Slice or Split of contiguous ranges of [1, 6, 4, 3]: views (channels 2-4 at 24 floats on,
 * row 1 of channel 1 at 15, the split's 2 + 4 channels at 0 and 24); a step of 2, or channels of
 * [2, 6] (two ranges), copied by the kernels. */
static void slices_and_splits_of_ranges_become_views(void **state) {
    (void)state;
    enum { CHANNELS, ONE_ROW, SPLIT, STEP2, OUTER };
    for (int kind = CHANNELS; kind <= OUTER; kind++) {
        kc_graph *g = kc_graph_new();
        kc_stats st = {0};
        kc_diag d;
        kc_diag_init(&d, "test.onnx", stderr);
        int x = pg_input(g, kind == OUTER ? pg_value(g, "x", 2, 2, 6)
                                          : pg_value(g, "x", 4, 1, 6, 4, 3));
        int r = kind == OUTER ? pg_value(g, "r", 2, 2, 6) : pg_value(g, "r", 4, 1, 6, 4, 3);
        pg_node1(g, KC_OP_Relu, 1, &x, r);
        /* the slices: channels 2-4 (OUTER: of [2, 6]), or channel 1's row 1 */
        int one_row = kind == ONE_ROW;
        int64_t n1[1] = {1}, n2[1] = {2}, steps[1] = {2}, split[2] = {2, 4};
        int64_t starts[2] = {one_row ? 1 : 2, 1}, ends[2] = {one_row ? 2 : 5, 2}, axes[2] = {1, 2};
        int outs[2], n_out = kind == SPLIT ? 2 : 1, node;
        if (kind == SPLIT) {
            outs[0] = pg_value(g, "a", 4, 1, 2, 4, 3);
            outs[1] = pg_value(g, "b", 4, 1, 4, 4, 3);
            int sp = kc_add_const(g, "split", KC_DTYPE_INT64, 1, n2, split);
            node = pg_node(g, KC_OP_Split, 13, 2, (int[]){r, sp}, 2, outs);
            pg_attr_int(g, node, "axis", 1);
        } else {
            const int64_t *n = one_row ? n2 : n1;
            int ins[5] = {r, kc_add_const(g, "s", KC_DTYPE_INT64, 1, n, starts),
                          kc_add_const(g, "e", KC_DTYPE_INT64, 1, n, ends),
                          kc_add_const(g, "ax", KC_DTYPE_INT64, 1, n, axes),
                          kc_add_const(g, "st", KC_DTYPE_INT64, 1, n1, steps)};
            outs[0] = kind == OUTER   ? pg_value(g, "y", 2, 2, 3)
                      : one_row       ? pg_value(g, "y", 4, 1, 1, 1, 3)
                      : kind == STEP2 ? pg_value(g, "y", 4, 1, 2, 4, 3)
                                      : pg_value(g, "y", 4, 1, 3, 4, 3);
            node = pg_node(g, KC_OP_Slice, 13, kind == STEP2 ? 5 : 4, ins, 1, outs);
        }
        for (int k = 0; k < n_out; k++)
            pg_node1(g, KC_OP_Relu, 1, &outs[k],
                     pg_output(g, kc_add_value(g, kc_sprintf(g, "z%d", k))));

        assert_int_equal(kc_pass_simplify(g, &d, &st), 0);
        int view = kind <= SPLIT;
        assert_int_equal(g->nodes[node].dead, view);
        assert_int_equal(st.views, view ? n_out : 0);
        const int64_t offsets[3][2] = {{24, 0}, {15, 0}, {0, 24}};
        for (int k = 0; k < n_out; k++) {
            assert_int_equal(g->values[outs[k]].alias_of, view ? r : -1);
            if (view) assert_int_equal(g->values[outs[k]].alias_offset, offsets[kind][k] * 4);
        }
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
        cmocka_unit_test_setup_teardown(gathers_of_one_range_become_views, setup, teardown),
        cmocka_unit_test_setup_teardown(slices_and_splits_of_ranges_become_views, setup, teardown),
        cmocka_unit_test_setup_teardown(reshape_of_constant_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(identity_chain_into_view, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
