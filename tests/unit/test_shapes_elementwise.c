/* Shape functions of the elementwise ops: result dtypes (bool for comparisons and tests, the
 * base's for Pow, the model's for CastLike), broadcasting of binary, variadic and ternary ops,
 * PRelu's slope before and after opset 7, and the errors, each naming its node. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "diag.h"
#include "elementwise.h"
#include "ir.h"
#include "shapes.h"

typedef struct fixture {
    kc_graph *g;
    kc_diag d;
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

/* A value of dtype and shape (rank dims given as arguments). */
static int val(kc_graph *g, int dtype, int rank, ...) {
    int v = kc_add_value(g, kc_sprintf(g, "v%d", g->n_values));
    kc_value *x = &g->values[v];
    x->dtype = dtype;
    x->rank = rank;
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        x->dims[i] = va_arg(ap, int);
    va_end(ap);
    return v;
}

static int node(kc_graph *g, int op, int opset, int n_in, const int *in) {
    int out = kc_add_value(g, kc_sprintf(g, "out%d", g->n_nodes));
    int n = kc_add_node(g, op, NULL, kc_sprintf(g, "n%d", g->n_nodes), n_in, in, 1, &out);
    g->nodes[n].opset = opset;
    return n;
}

/* Runs op's shape function and checks the result's dtype and dims. */
static void expect_shape(fixture *f, int op, int opset, int n_in, const int *in, int dtype,
                         int rank, const int64_t *dims) {
    int n = node(f->g, op, opset, n_in, in);
    kc_shape out[KC_SHAPE_MAX_OUTPUTS];
    memset(out, 0, sizeof out);
    int errors = kc_shape_fns[op](f->g, n, out, &f->d);
    if (errors) fail_msg("%s: %d errors", kc_ops[op].name, errors);
    assert_int_equal(out[0].dtype, dtype);
    assert_int_equal(out[0].rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(out[0].dims[i], dims[i]);
}

/* Expects an error that names the node. */
static void expect_error(fixture *f, int op, int opset, int n_in, const int *in,
                         const char *needle) {
    int n = node(f->g, op, opset, n_in, in);
    kc_shape out[KC_SHAPE_MAX_OUTPUTS];
    int before = f->d.n_errors;
    assert_true(kc_shape_fns[op](f->g, n, out, &f->d) > 0);
    assert_true(f->d.n_errors > before);
    fflush(f->log);
    long size = ftell(f->log);
    char *text = calloc(1, (size_t)size + 1);
    rewind(f->log);
    assert_int_equal(fread(text, 1, (size_t)size, f->log), (size_t)size);
    if (!strstr(text, needle) || !strstr(text, f->g->nodes[n].name))
        fail_msg("expected '%s' naming node %s in:\n%s", needle, f->g->nodes[n].name, text);
    free(text);
}

static void unary_and_tests(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int x = val(g, KC_DTYPE_FLOAT, 3, 2, 3, 4);
    const int64_t dims[3] = {2, 3, 4};
    const int ops[] = {KC_OP_Abs,       KC_OP_Exp,  KC_OP_Erf,  KC_OP_Round, KC_OP_Sigmoid,
                       KC_OP_HardSwish, KC_OP_Gelu, KC_OP_Mish, KC_OP_Selu};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        expect_shape(f, ops[i], 20, 1, &x, KC_DTYPE_FLOAT, 3, dims);
    expect_shape(f, KC_OP_IsNaN, 13, 1, &x, KC_DTYPE_BOOL, 3, dims);
    expect_shape(f, KC_OP_IsInf, 13, 1, &x, KC_DTYPE_BOOL, 3, dims);
    int b = val(g, KC_DTYPE_BOOL, 0);
    expect_shape(f, KC_OP_Not, 1, 1, &b, KC_DTYPE_BOOL, 0, NULL);
    int i64 = val(g, KC_DTYPE_INT64, 1, 5);
    expect_shape(f, KC_OP_Neg, 13, 1, &i64, KC_DTYPE_INT64, 1, (const int64_t[]){5});
    int like[2] = {x, i64};
    expect_shape(f, KC_OP_CastLike, 15, 2, like, KC_DTYPE_INT64, 3, dims);
}

static void binary_broadcasting(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int a = val(g, KC_DTYPE_FLOAT, 4, 2, 3, 1, 5), b = val(g, KC_DTYPE_FLOAT, 2, 4, 1);
    int ab[2] = {a, b};
    const int64_t dims[4] = {2, 3, 4, 5};
    expect_shape(f, KC_OP_Max, 13, 2, ab, KC_DTYPE_FLOAT, 4, dims);
    expect_shape(f, KC_OP_Pow, 15, 2, ab, KC_DTYPE_FLOAT, 4, dims);
    expect_shape(f, KC_OP_Less, 13, 2, ab, KC_DTYPE_BOOL, 4, dims);
    expect_shape(f, KC_OP_GreaterOrEqual, 16, 2, ab, KC_DTYPE_BOOL, 4, dims);
    /* variadic: three inputs broadcast together */
    int c = val(g, KC_DTYPE_FLOAT, 1, 5);
    int abc[3] = {a, b, c};
    expect_shape(f, KC_OP_Sum, 13, 3, abc, KC_DTYPE_FLOAT, 4, dims);
    expect_shape(f, KC_OP_Mean, 13, 3, abc, KC_DTYPE_FLOAT, 4, dims);
    /* Pow keeps the base's type whatever the exponent's */
    int base = val(g, KC_DTYPE_INT32, 2, 3, 1), e = val(g, KC_DTYPE_FLOAT, 1, 6);
    int be[2] = {base, e};
    expect_shape(f, KC_OP_Pow, 15, 2, be, KC_DTYPE_INT32, 2, (const int64_t[]){3, 6});
    int p = val(g, KC_DTYPE_BOOL, 2, 3, 1), q = val(g, KC_DTYPE_BOOL, 1, 4);
    int pq[2] = {p, q};
    expect_shape(f, KC_OP_Xor, 7, 2, pq, KC_DTYPE_BOOL, 2, (const int64_t[]){3, 4});
    int m = val(g, KC_DTYPE_INT64, 1, 4);
    int mm[2] = {m, m};
    expect_shape(f, KC_OP_Mod, 13, 2, mm, KC_DTYPE_INT64, 1, (const int64_t[]){4});
}

static void where_and_prelu(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int cond = val(g, KC_DTYPE_BOOL, 2, 4, 1), x = val(g, KC_DTYPE_INT64, 1, 6),
        y = val(g, KC_DTYPE_INT64, 0);
    int w[3] = {cond, x, y};
    expect_shape(f, KC_OP_Where, 16, 3, w, KC_DTYPE_INT64, 2, (const int64_t[]){4, 6});
    /* PRelu-6: a 1-D slope of C values is per channel; PRelu-16: numpy broadcasting */
    int img = val(g, KC_DTYPE_FLOAT, 3, 2, 3, 4), s3 = val(g, KC_DTYPE_FLOAT, 1, 3);
    int s4 = val(g, KC_DTYPE_FLOAT, 1, 4);
    int old[2] = {img, s3}, new_[2] = {img, s4};
    expect_shape(f, KC_OP_PRelu, 6, 2, old, KC_DTYPE_FLOAT, 3, (const int64_t[]){2, 3, 4});
    expect_shape(f, KC_OP_PRelu, 16, 2, new_, KC_DTYPE_FLOAT, 3, (const int64_t[]){2, 3, 4});
    int64_t slope_dims[KC_MAX_RANK];
    int rank;
    int n = node(g, KC_OP_PRelu, 6, 2, old);
    kc_prelu_slope_dims(g, n, &rank, slope_dims);
    assert_int_equal(rank, 2);
    assert_int_equal(slope_dims[0], 3);
    assert_int_equal(slope_dims[1], 1);
}

static void errors_name_the_node(void **state) {
    fixture *f = *state;
    kc_graph *g = f->g;
    int a = val(g, KC_DTYPE_FLOAT, 2, 3, 4), b = val(g, KC_DTYPE_FLOAT, 1, 5);
    int i = val(g, KC_DTYPE_INT64, 2, 3, 4);
    int ab[2] = {a, b}, ai[2] = {a, i};
    expect_error(f, KC_OP_Min, 13, 2, ab, "does not broadcast");
    expect_error(f, KC_OP_Equal, 13, 2, ai, "differ in type");
    int cond_f[3] = {a, a, a};
    expect_error(f, KC_OP_Where, 16, 3, cond_f, "not bool");
    int cond = val(g, KC_DTYPE_BOOL, 0);
    int mixed[3] = {cond, a, i};
    expect_error(f, KC_OP_Where, 16, 3, mixed, "differ in type");
    /* PRelu's slope never widens X */
    int x = val(g, KC_DTYPE_FLOAT, 1, 4), wide = val(g, KC_DTYPE_FLOAT, 2, 3, 4);
    int xw[2] = {x, wide};
    expect_error(f, KC_OP_PRelu, 16, 2, xw, "does not broadcast to X");
    int xb[2] = {a, b};
    expect_error(f, KC_OP_PRelu, 16, 2, xb, "does not broadcast to X");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(unary_and_tests, setup, teardown),
        cmocka_unit_test_setup_teardown(binary_broadcasting, setup, teardown),
        cmocka_unit_test_setup_teardown(where_and_prelu, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_name_the_node, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
