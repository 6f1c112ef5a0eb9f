/* Tests for the ONNX text parser, printer, format detection and function inlining: the
 * ModelProto fields a text builds, the IR it imports to (the same as the protobuf path), the
 * inlined bodies of model-local functions, and error reports with line, column and caret. The
 * corpus in tests/text is checked against onnx.parser by tests/e2e/test_text_corpus.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passes.h"
#include "text.h"

static Onnx__ModelProto *parse_ok(const char *text) {
    kc_diag d;
    kc_diag_init(&d, "t", stderr);
    Onnx__ModelProto *m = kc_text_parse_model(text, strlen(text), "t", &d);
    assert_non_null(m);
    assert_int_equal(d.n_errors, 0);
    return m;
}

/* The error report for text, in a malloc'ed string. */
static char *parse_error(const char *text, size_t len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    kc_diag d;
    kc_diag_init(&d, "m.onnxtxt", out);
    Onnx__ModelProto *m = kc_text_parse_model(text, len, "m.onnxtxt", &d);
    fclose(out);
    assert_null(m);
    assert_int_equal(d.n_errors, 1);
    return buf;
}

static char *print_text(const Onnx__ModelProto *m) {
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    assert_non_null(out);
    char err[256];
    assert_int_equal(kc_text_print_model(m, out, err, sizeof err), 0);
    fclose(out);
    return buf;
}

static void test_fields(void **state) {
    (void)state;
    Onnx__ModelProto *m =
        parse_ok("<ir_version: 8, opset_import: [\"\" : 13, \"com.x\" : 2], producer_name: \"p\">\n"
                 "g (float[N, 3] x, int64[2] s = {4, -5}) => (float[N, 3] y)\n"
                 "<float[3] b = {1.5, 2, -0.25}, float[N, 3] h>\n"
                 "{\n"
                 "  [n1] h = com.x.Op:v2 <k = 3, f = 0.5, s = \"a\\\"b\", l = [1, 2]> (x, , b)\n"
                 "  y = Relu(h)\n"
                 "}\n");
    assert_true(m->has_ir_version);
    assert_int_equal(m->ir_version, 8);
    assert_int_equal(m->n_opset_import, 2);
    assert_string_equal(m->opset_import[1]->domain, "com.x");
    assert_int_equal(m->opset_import[1]->version, 2);
    assert_string_equal(m->producer_name, "p");
    Onnx__GraphProto *g = m->graph;
    assert_string_equal(g->name, "g");
    assert_int_equal(g->n_input, 2);
    const Onnx__TensorShapeProto *shape = g->input[0]->type->tensor_type->shape;
    assert_int_equal(shape->n_dim, 2);
    assert_string_equal(shape->dim[0]->dim_param, "N");
    assert_int_equal(shape->dim[1]->dim_value, 3);
    assert_int_equal(g->n_initializer, 2); /* s (input default), then b */
    assert_string_equal(g->initializer[0]->name, "s");
    assert_int_equal(g->initializer[0]->int64_data[1], -5);
    assert_string_equal(g->initializer[1]->name, "b");
    assert_true(g->initializer[1]->float_data[2] == -0.25f);
    assert_int_equal(g->n_value_info, 1);
    const Onnx__NodeProto *n = g->node[0];
    assert_string_equal(n->name, "n1");
    assert_string_equal(n->domain, "com.x");
    assert_string_equal(n->op_type, "Op");
    assert_string_equal(n->overload, "v2");
    assert_int_equal(n->n_input, 3);
    assert_string_equal(n->input[1], "");
    assert_int_equal(n->n_attribute, 4);
    assert_int_equal(n->attribute[0]->type, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    assert_int_equal(n->attribute[0]->i, 3);
    assert_true(n->attribute[1]->f == 0.5f);
    assert_int_equal(n->attribute[2]->s.len, 3);
    assert_memory_equal(n->attribute[2]->s.data, "a\"b", 3);
    assert_int_equal(n->attribute[3]->type, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    assert_int_equal(n->attribute[3]->n_ints, 2);
    assert_string_equal(g->node[1]->domain, "");
    onnx__model_proto__free_unpacked(m, NULL);
}

/* A qualified name is its identifiers joined by dots: spaces and comments between them are not
 * part of it (an opaque type's domain used to keep a comment's text, which printed as a name
 * that does not parse). */
static void test_qualified_names_skip_comments(void **state) {
    (void)state;
    Onnx__ModelProto *m = parse_ok("<ir_version: 8, opset_import: [\"\" : 15]>\n"
                                   "g (float[2] x) => (float[2] y) {\n"
                                   "  y = com . # a comment\n"
                                   "      x.Op <a = opaque(org. # more\n"
                                   "  kann , T)> (x)\n"
                                   "}\n");
    const Onnx__NodeProto *n = m->graph->node[0];
    assert_string_equal(n->domain, "com.x");
    assert_string_equal(n->op_type, "Op");
    assert_int_equal(n->n_attribute, 1);
    const Onnx__TypeProto__Opaque *o = n->attribute[0]->tp->opaque_type;
    assert_string_equal(o->domain, "org.kann");
    assert_string_equal(o->name, "T");
    onnx__model_proto__free_unpacked(m, NULL);
}

static void test_print_round_trip(void **state) {
    (void)state;
    Onnx__ModelProto *m = parse_ok(
        "<ir_version: 8, opset_import: [\"\" : 15, \"local\" : 1]>\n"
        "\"the graph\" (float[2] x) => (float[2] y) <float s = {inf}> {\n"
        "  y = local.f <alpha = 2.0, t = float[1] {nan}, g1 = b () => () {}> (x, \"\")\n"
        "}\n"
        "<domain: \"local\", opset_import: [\"\" : 15]>\n"
        "f <alpha: float = 1.0, beta> (float[N] X, Z) => (Y) { Y = Mul<k = @alpha>(X, X) }\n");
    char *t1 = print_text(m);
    Onnx__ModelProto *m2 = parse_ok(t1);
    char *t2 = print_text(m2);
    assert_string_equal(t1, t2);
    assert_non_null(strstr(t1, "\"the graph\" (float[2] x)"));
    assert_non_null(strstr(t1, "alpha = 2.0"));
    assert_non_null(strstr(t1, "k = @alpha"));
    free(t1);
    free(t2);
    onnx__model_proto__free_unpacked(m, NULL);
    onnx__model_proto__free_unpacked(m2, NULL);
}

static void test_error_report(void **state) {
    (void)state;
    char *e = parse_error("g (x) => (y)\n{\n\ty = Relu(x\n}\n", 29);
    assert_string_equal(e, "m.onnxtxt:4:1: error: expected ')' after the node's inputs, found '}'\n"
                           "    4 | }\n"
                           "      | ^\n");
    free(e);
    /* The caret line repeats tabs so that it lines up under the column. */
    e = parse_error("g (x) => (y)\n{\n\ty = Relu(x) $\n}\n", 31);
    assert_non_null(strstr(e, "m.onnxtxt:3:14: error: unexpected character '$'\n"));
    assert_non_null(strstr(e, "      | \t            ^\n"));
    free(e);
    static const char nul[] = "g (x) => (y) {\0}";
    e = parse_error(nul, sizeof nul - 1);
    assert_non_null(strstr(e, "1:15: error: unexpected byte 0x00"));
    free(e);
    e = parse_error("", 0);
    assert_non_null(strstr(e, "1:1: error: expected a graph name, found end of input"));
    free(e);
}

static void test_detect_format(void **state) {
    (void)state;
    static const unsigned char proto[] = {0x08, 0x08, 0x12, 0x04, 'k', 'a', 'n', 'n'};
    static const unsigned char opset_first[] = {'B', 0x04, 0x12, 0x02, 'x', 'y'};
    assert_false(kc_text_looks_like_text(proto, sizeof proto));
    assert_false(kc_text_looks_like_text(opset_first, sizeof opset_first));
    assert_false(kc_text_looks_like_text("", 0));
    assert_true(kc_text_looks_like_text("  <ir_version: 8>", 17));
    assert_true(kc_text_looks_like_text("# c\ng", 5));
    assert_true(kc_text_looks_like_text("g (x) => (y) {\x01}", 16)); /* the parser reports it */
}

/* Imports a model from text through kc_import_model_file. */
static kc_graph *import_text(const char *text, int *errors) {
    char path[] = "/tmp/test_text_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    kc_graph *g = kc_graph_new();
    kc_diag d;
    kc_diag_init(&d, path, stderr);
    *errors = kc_import_model_file(g, path, &d, NULL);
    unlink(path);
    return g;
}

static const kc_node *node_of(const kc_graph *g, const char *op, int nth) {
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].op_type, op) && nth-- == 0) return &g->nodes[i];
    return NULL;
}

static void test_inline_functions(void **state) {
    (void)state;
    int errors;
    kc_graph *g = import_text("<ir_version: 8, opset_import: [\"\" : 15, \"local\" : 1]>\n"
                              "g (float[4] x) => (float[4] y, float[4] z) {\n"
                              "  [call] y = local.scaled_add<alpha: float = 2.0>(x)\n"
                              "  z = local.scaled_add(y)\n"
                              "}\n"
                              "<domain: \"local\", opset_import: [\"\" : 15]>\n"
                              "scaled_add <alpha: float = 1.0> (X) => (Y, Unused) {\n"
                              "  a = Constant<value_float: float = @alpha>()\n"
                              "  [mul] ax = Mul(a, X)\n"
                              "  Y = Add(ax, X)\n"
                              "  Unused = Neg(X)\n"
                              "}\n",
                              &errors);
    assert_int_equal(errors, 0);
    /* Two expansions of Mul, Add, Neg; the Constants became constant values. */
    assert_int_equal(g->n_nodes, 6);
    const kc_node *mul1 = node_of(g, "Mul", 0), *mul2 = node_of(g, "Mul", 1);
    assert_non_null(mul1);
    assert_non_null(mul2);
    assert_string_equal(mul1->name, "call/mul");
    assert_string_equal(mul2->name, "scaled_add/mul");
    /* The call's alpha (2.0) in the first expansion, the default (1.0) in the second. */
    const kc_value *a1 = &g->values[mul1->inputs[0]], *a2 = &g->values[mul2->inputs[0]];
    assert_string_equal(a1->name, "call/a");
    assert_string_equal(a2->name, "scaled_add/a");
    assert_true(a1->flags & KC_VALUE_CONST);
    assert_true(*(const float *)a1->data == 2.0f);
    assert_true(*(const float *)a2->data == 1.0f);
    /* Formals bound to the call's values: the second call reads the first's output. */
    assert_string_equal(g->values[mul2->inputs[1]].name, "y");
    assert_string_equal(g->values[node_of(g, "Add", 1)->outputs[0]].name, "z");
    /* An output the call leaves unused still gets a unique name. */
    assert_string_equal(g->values[node_of(g, "Neg", 0)->outputs[0]].name, "call/Unused");
    assert_string_equal(g->values[node_of(g, "Neg", 1)->outputs[0]].name, "scaled_add/Unused");
    kc_graph_free(g);
}

static void test_inline_renames_around_existing_names(void **state) {
    (void)state;
    int errors;
    kc_graph *g = import_text("<ir_version: 8, opset_import: [\"\" : 15, \"l\" : 1]>\n"
                              "g (float[4] x) => (float[4] \"f/t\", float[4] y) {\n"
                              "  \"f/t\" = Relu(x)\n"
                              "  y = l.f(x)\n"
                              "}\n"
                              "<domain: \"l\", opset_import: [\"\" : 15]>\n"
                              "f (X) => (Y) { t = Neg(X)\n Y = Abs(t) }\n",
                              &errors);
    assert_int_equal(errors, 0);
    assert_string_equal(g->values[node_of(g, "Neg", 0)->outputs[0]].name, "f/t_2");
    kc_graph_free(g);
}

static void test_inline_errors(void **state) {
    (void)state;
    int errors;
    kc_graph *g = import_text("<ir_version: 8, opset_import: [\"\" : 13, \"l\" : 1]>\n"
                              "g (float[4] x) => (float[4] y) { y = l.f(x) }\n"
                              "<domain: \"l\", opset_import: [\"\" : 18]>\n"
                              "f (X) => (Y) { Y = Relu(X) }\n",
                              &errors);
    assert_int_equal(errors, 1); /* opset 18 in the function, 13 in the model */
    kc_graph_free(g);
    g = import_text("<ir_version: 8, opset_import: [\"\" : 13, \"l\" : 1]>\n"
                    "g (float[4] x) => (float[4] y) { y = l.f(x) }\n"
                    "<domain: \"l\", opset_import: [\"\" : 13]>\n"
                    "f (X) => (Y) { Y = l.f(X) }\n",
                    &errors);
    assert_int_equal(errors, 1); /* recursion */
    kc_graph_free(g);
}

/* The text path and the protobuf path give the same IR for the same model. */
static void test_same_ir_as_protobuf(void **state) {
    (void)state;
    const char *text = "<ir_version: 8, opset_import: [\"\" : 13]>\n"
                       "g (float[1, 4] x) => (float[1, 2] y)\n"
                       "<float[4, 2] w = {1, 2, 3, 4, 5, 6, 7, 8}>\n"
                       "{ h = MatMul(x, w)\n y = Relu(h) }\n";
    int errors;
    kc_graph *g1 = import_text(text, &errors);
    assert_int_equal(errors, 0);
    Onnx__ModelProto *m = parse_ok(text);
    size_t n = onnx__model_proto__get_packed_size(m);
    uint8_t *bytes = malloc(n);
    onnx__model_proto__pack(m, bytes);
    kc_graph *g2 = kc_graph_new();
    kc_diag d;
    kc_diag_init(&d, NULL, stderr);
    assert_int_equal(kc_import_onnx_bytes(g2, bytes, n, NULL, &d, NULL), 0);
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
    kc_dump(g1, fa);
    kc_dump(g2, fb);
    fclose(fa);
    fclose(fb);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(bytes);
    onnx__model_proto__free_unpacked(m, NULL);
    kc_graph_free(g1);
    kc_graph_free(g2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_qualified_names_skip_comments),
        cmocka_unit_test(test_print_round_trip),
        cmocka_unit_test(test_error_report),
        cmocka_unit_test(test_detect_format),
        cmocka_unit_test(test_inline_functions),
        cmocka_unit_test(test_inline_renames_around_existing_names),
        cmocka_unit_test(test_inline_errors),
        cmocka_unit_test(test_same_ir_as_protobuf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
