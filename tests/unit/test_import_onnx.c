/* Tests for the ONNX protobuf importer: models are built with the protobuf-c structs, packed to
 * bytes and imported; the IR and the diagnostics are checked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "import_onnx.h"
#include "passes.h"

/* ---- protobuf building: every allocation is tracked and freed after each test ---- */

static void **allocs;
static size_t n_allocs;

static void *talloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    allocs = realloc(allocs, (n_allocs + 1) * sizeof *allocs);
    assert_non_null(allocs);
    allocs[n_allocs++] = p;
    return p;
}

static void free_tracked(void) {
    for (size_t i = 0; i < n_allocs; i++)
        free(allocs[i]);
    free(allocs);
    allocs = NULL;
    n_allocs = 0;
}

/* Appends item to a repeated field (arrays are replaced, the old one stays tracked). */
#define PUSH(arr, n, item)                                                                         \
    do {                                                                                           \
        void *grown_ = talloc(sizeof(*(arr)) * ((n) + 1));                                         \
        if (n) memcpy(grown_, (arr), sizeof(*(arr)) * (n));                                        \
        (arr) = grown_;                                                                            \
        (arr)[(n)++] = (item);                                                                     \
    } while (0)

#define NEW(type, init)                                                                            \
    ({                                                                                             \
        type *p_ = talloc(sizeof(type));                                                           \
        type i_ = init;                                                                            \
        *p_ = i_;                                                                                  \
        p_;                                                                                        \
    })

static Onnx__ModelProto *new_model(int64_t opset) {
    Onnx__ModelProto *m = NEW(Onnx__ModelProto, ONNX__MODEL_PROTO__INIT);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = (char *)"unit";
    m->producer_version = (char *)"1.0";
    if (opset > 0) {
        Onnx__OperatorSetIdProto *o =
            NEW(Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
        o->domain = (char *)"";
        o->has_version = 1;
        o->version = opset;
        PUSH(m->opset_import, m->n_opset_import, o);
    }
    m->graph = NEW(Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
    m->graph->name = (char *)"g";
    return m;
}

static void add_opset(Onnx__ModelProto *m, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = NEW(Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
    o->domain = (char *)domain;
    o->has_version = 1;
    o->version = version;
    PUSH(m->opset_import, m->n_opset_import, o);
}

static Onnx__TensorProto *tensor(const char *name, int dtype, int rank, const int64_t *dims) {
    Onnx__TensorProto *t = NEW(Onnx__TensorProto, ONNX__TENSOR_PROTO__INIT);
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = talloc(sizeof(int64_t) * (size_t)(rank ? rank : 1));
    if (rank) memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    return t;
}

static void set_raw(Onnx__TensorProto *t, const void *data, size_t n) {
    t->has_raw_data = 1;
    t->raw_data.len = n;
    t->raw_data.data = talloc(n);
    if (n) memcpy(t->raw_data.data, data, n);
}

static Onnx__TensorProto *tensor_f32(const char *name, int rank, const int64_t *dims,
                                     const float *vals, size_t n, int raw) {
    Onnx__TensorProto *t = tensor(name, KC_DTYPE_FLOAT, rank, dims);
    if (raw) {
        set_raw(t, vals, n * sizeof(float));
    } else {
        t->n_float_data = n;
        t->float_data = talloc(n * sizeof(float));
        memcpy(t->float_data, vals, n * sizeof(float));
    }
    return t;
}

static void add_initializer(Onnx__ModelProto *m, Onnx__TensorProto *t) {
    PUSH(m->graph->initializer, m->graph->n_initializer, t);
}

/* dims[i] < 0 with params[i] set: a dim_param; without: a dimension left unset. rank < 0: no
 * shape at all. */
static Onnx__ValueInfoProto *value_info(const char *name, int elem_type, int rank,
                                        const int64_t *dims, const char *const *params) {
    Onnx__ValueInfoProto *vi = NEW(Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
    vi->name = (char *)name;
    vi->type = NEW(Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    vi->type->tensor_type = NEW(Onnx__TypeProto__Tensor, ONNX__TYPE_PROTO__TENSOR__INIT);
    vi->type->tensor_type->has_elem_type = 1;
    vi->type->tensor_type->elem_type = elem_type;
    if (rank < 0) return vi;
    Onnx__TensorShapeProto *shape = NEW(Onnx__TensorShapeProto, ONNX__TENSOR_SHAPE_PROTO__INIT);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d =
            NEW(Onnx__TensorShapeProto__Dimension, ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT);
        if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else if (params && params[i]) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = (char *)params[i];
        }
        PUSH(shape->dim, shape->n_dim, d);
    }
    vi->type->tensor_type->shape = shape;
    return vi;
}

static void add_input(Onnx__ModelProto *m, Onnx__ValueInfoProto *vi) {
    PUSH(m->graph->input, m->graph->n_input, vi);
}

static void add_output(Onnx__ModelProto *m, Onnx__ValueInfoProto *vi) {
    PUSH(m->graph->output, m->graph->n_output, vi);
}

/* ins/outs: NULL-terminated name lists ("" for an omitted optional one). */
static Onnx__NodeProto *add_node(Onnx__ModelProto *m, const char *op_type, const char *name,
                                 const char *const *ins, const char *const *outs) {
    Onnx__NodeProto *n = NEW(Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
    n->op_type = (char *)op_type;
    n->name = (char *)name;
    for (int i = 0; ins && ins[i]; i++)
        PUSH(n->input, n->n_input, (char *)ins[i]);
    for (int i = 0; outs && outs[i]; i++)
        PUSH(n->output, n->n_output, (char *)outs[i]);
    PUSH(m->graph->node, m->graph->n_node, n);
    return n;
}

static Onnx__AttributeProto *add_attr(Onnx__NodeProto *n, const char *name, int type) {
    Onnx__AttributeProto *a = NEW(Onnx__AttributeProto, ONNX__ATTRIBUTE_PROTO__INIT);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = (Onnx__AttributeProto__AttributeType)type;
    PUSH(n->attribute, n->n_attribute, a);
    return a;
}

static uint8_t *pack_model(const Onnx__ModelProto *m, size_t *size) {
    *size = onnx__model_proto__get_packed_size(m);
    uint8_t *bytes = talloc(*size);
    assert_int_equal(onnx__model_proto__pack(m, bytes), *size);
    return bytes;
}

/* ---- fixture ---- */

typedef struct ctx {
    kc_graph *g;
    kc_diag d;
    kc_stats st;
    char *msg;
    size_t msg_len;
    FILE *out;
} ctx;

static int setup(void **state) {
    ctx *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->g = kc_graph_new();
    c->out = open_memstream(&c->msg, &c->msg_len);
    kc_diag_init(&c->d, NULL, c->out);
    *state = c;
    return 0;
}

static int teardown(void **state) {
    ctx *c = *state;
    kc_graph_free(c->g);
    fclose(c->out);
    free(c->msg);
    free(c);
    free_tracked();
    return 0;
}

static const char *messages(ctx *c) {
    fflush(c->out);
    return c->msg ? c->msg : "";
}

static void assert_message(ctx *c, const char *needle) {
    const char *all = messages(c);
    if (!strstr(all, needle)) fail_msg("expected '%s' in diagnostics:\n%s", needle, all);
}

static int import_model(ctx *c, const Onnx__ModelProto *m) {
    size_t size;
    uint8_t *bytes = pack_model(m, &size);
    return kc_import_onnx_bytes(c->g, bytes, size, NULL, &c->d, &c->st);
}

static int import_ok(ctx *c, const Onnx__ModelProto *m) {
    int errors = import_model(c, m);
    if (errors) fail_msg("import failed:\n%s", messages(c));
    return errors;
}

static const kc_value *value(ctx *c, const char *name) {
    int v = kc_find_value(c->g, name);
    if (v < 0) fail_msg("no value '%s'", name);
    return &c->g->values[v];
}

static const kc_attr *attr(const kc_node *n, const char *name) {
    const kc_attr *a = kc_attr_find(n, name);
    if (!a) fail_msg("node '%s' has no attribute '%s'", n->name, name);
    return a;
}

/* ---- graph structure ---- */

static void test_inputs_initializers_outputs(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    static const int64_t xdims[4] = {-1, 3, -1, 224};
    static const char *const xparams[4] = {"N", NULL, NULL, NULL};
    add_input(m, value_info("X", KC_DTYPE_FLOAT, 4, xdims, xparams));
    static const float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    static const int64_t wdims[4] = {2, 1, 2, 2};
    add_initializer(m, tensor_f32("W", 4, wdims, w, 8, 1));
    static const float b[2] = {0.5f, -0.5f};
    static const int64_t bdims[1] = {2};
    add_initializer(m, tensor_f32("B", 1, bdims, b, 2, 0));
    /* Older exporters also list initializers as inputs. */
    add_input(m, value_info("W", KC_DTYPE_FLOAT, 4, wdims, NULL));
    add_input(m, value_info("B", KC_DTYPE_FLOAT, 1, bdims, NULL));
    add_node(m, "Conv", "conv0", (const char *[]){"X", "W", "B", NULL},
             (const char *[]){"Y", NULL});
    static const int64_t ydims[4] = {-1, 2, -1, -1};
    static const char *const yparams[4] = {"N", NULL, "H", NULL};
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, 4, ydims, yparams));
    import_ok(c, m);

    kc_graph *g = c->g;
    assert_int_equal(g->n_inputs, 1);
    const kc_value *x = &g->values[g->inputs[0]];
    assert_string_equal(x->name, "X");
    assert_true(x->flags & KC_VALUE_INPUT);
    assert_false(x->flags & KC_VALUE_CONST);
    assert_int_equal(x->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(x->rank, 4);
    assert_int_equal(x->dims[0], -1);
    assert_string_equal(x->dim_params[0], "N");
    assert_int_equal(x->dims[1], 3);
    assert_null(x->dim_params[1]);
    assert_int_equal(x->dims[2], -1); /* no dim_value, no dim_param */
    assert_null(x->dim_params[2]);
    assert_int_equal(x->dims[3], 224);
    assert_int_equal(x->producer, -1);

    const kc_value *wv = value(c, "W");
    assert_true(wv->flags & KC_VALUE_CONST);
    assert_false(wv->flags & KC_VALUE_INPUT);
    assert_int_equal(wv->producer, -1);
    assert_int_equal(wv->rank, 4);
    assert_int_equal(wv->dims[0], 2);
    assert_int_equal(wv->dims[3], 2);
    assert_memory_equal(wv->data, w, sizeof w);
    const kc_value *bv = value(c, "B");
    assert_true(bv->flags & KC_VALUE_CONST);
    assert_memory_equal(bv->data, b, sizeof b);

    assert_int_equal(g->n_nodes, 1);
    const kc_node *n = &g->nodes[0];
    assert_int_equal(n->op, KC_OP_Conv);
    assert_string_equal(n->op_type, "Conv");
    assert_string_equal(n->name, "conv0");
    assert_string_equal(n->domain, "");
    assert_int_equal(n->opset, 13);
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->inputs[0], g->inputs[0]);
    assert_int_equal(n->inputs[1], kc_find_value(g, "W"));
    assert_int_equal(n->inputs[2], kc_find_value(g, "B"));

    assert_int_equal(g->n_outputs, 1);
    const kc_value *y = &g->values[g->outputs[0]];
    assert_string_equal(y->name, "Y");
    assert_true(y->flags & KC_VALUE_OUTPUT);
    assert_int_equal(y->producer, 0);
    assert_int_equal(y->rank, 4);
    assert_int_equal(y->dims[1], 2);
    assert_string_equal(y->dim_params[2], "H");
    assert_null(y->dim_params[3]);

    assert_string_equal(g->producer, "unit 1.0");
    assert_string_equal(g->name, "g");
    assert_int_equal(c->st.nodes_imported, 1);
    assert_int_equal(kc_verify(g, &c->d), 0);
}

static void test_input_without_shape_and_value_info(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Relu", "", (const char *[]){"X", NULL}, (const char *[]){"T", NULL});
    add_node(m, "Relu", "", (const char *[]){"T", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    static const int64_t tdims[2] = {1, 7};
    PUSH(m->graph->value_info, m->graph->n_value_info,
         value_info("T", KC_DTYPE_FLOAT, 2, tdims, NULL));
    /* A hint for a value nothing uses creates no value. */
    PUSH(m->graph->value_info, m->graph->n_value_info,
         value_info("stray", KC_DTYPE_FLOAT, 2, tdims, NULL));
    import_ok(c, m);
    const kc_value *x = value(c, "X");
    assert_int_equal(x->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(x->rank, -1);
    const kc_value *t = value(c, "T");
    assert_int_equal(t->rank, 2);
    assert_int_equal(t->dims[1], 7);
    assert_int_equal(value(c, "Y")->rank, -1);
    assert_int_equal(kc_find_value(c->g, "stray"), -1);
    assert_string_equal(c->g->nodes[0].name, "");
}

static void test_opset_domains(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(0);
    add_opset(m, "ai.onnx", 17);
    add_opset(m, "com.microsoft", 1);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Relu", "a", (const char *[]){"X", NULL}, (const char *[]){"A", NULL});
    Onnx__NodeProto *b =
        add_node(m, "Relu", "b", (const char *[]){"A", NULL}, (const char *[]){"B", NULL});
    b->domain = (char *)"ai.onnx";
    Onnx__NodeProto *f =
        add_node(m, "FusedConv", "f", (const char *[]){"B", NULL}, (const char *[]){"Y", NULL});
    f->domain = (char *)"com.microsoft";
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    import_ok(c, m);
    kc_graph *g = c->g;
    assert_int_equal(g->n_opsets, 2);
    assert_string_equal(g->opsets[0].domain, "");
    assert_int_equal(g->opsets[0].version, 17);
    assert_string_equal(g->opsets[1].domain, "com.microsoft");
    assert_int_equal(kc_opset_of(g, ""), 17);
    assert_int_equal(g->nodes[0].op, KC_OP_Relu);
    assert_int_equal(g->nodes[0].opset, 17);
    assert_int_equal(g->nodes[1].op, KC_OP_Relu);
    assert_string_equal(g->nodes[1].domain, "");
    assert_int_equal(g->nodes[1].opset, 17);
    assert_int_equal(g->nodes[2].op, KC_OP_UNKNOWN);
    assert_string_equal(g->nodes[2].op_type, "FusedConv");
    assert_string_equal(g->nodes[2].domain, "com.microsoft");
    assert_int_equal(g->nodes[2].opset, 1);
    /* Unknown ops still import; the support check reports them. */
    assert_int_equal(kc_check_supported(g, &c->d), 1);
    assert_message(c, "FusedConv");
}

static void test_missing_default_opset(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(0);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Relu", "r", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    assert_int_equal(import_model(c, m), 1);
    assert_message(c, "no opset of the default domain");
}

static void test_old_ir_implies_opset1(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(0);
    m->ir_version = 2;
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Relu", "r", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    import_ok(c, m);
    assert_int_equal(c->g->nodes[0].opset, 1);
}

static void test_omitted_optional_inputs_outputs(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    static const float hi = 6.0f;
    add_initializer(m, tensor_f32("hi", 0, NULL, &hi, 1, 1));
    add_node(m, "Clip", "clip", (const char *[]){"X", "", "hi", NULL}, (const char *[]){"C", NULL});
    add_node(m, "Dropout", "drop", (const char *[]){"C", NULL}, (const char *[]){"D", "", NULL});
    add_node(m, "Split3", "s", (const char *[]){"D", NULL}, (const char *[]){"", "S1", NULL});
    add_output(m, value_info("S1", KC_DTYPE_FLOAT, -1, NULL, NULL));
    import_ok(c, m);
    kc_graph *g = c->g;
    const kc_node *clip = &g->nodes[0];
    assert_int_equal(clip->n_inputs, 3);
    assert_int_equal(clip->inputs[1], -1);
    assert_int_equal(clip->inputs[2], kc_find_value(g, "hi"));
    assert_int_equal(g->nodes[1].n_outputs, 1); /* trailing omitted output dropped */
    assert_int_equal(g->nodes[2].n_outputs, 2);
    assert_int_equal(g->nodes[2].outputs[0], -1);
    assert_int_equal(g->nodes[2].outputs[1], kc_find_value(g, "S1"));
    assert_int_equal(kc_verify(g, &c->d), 0);
}

static void test_defined_twice_and_undefined(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Relu", "r1", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_node(m, "Relu", "r2", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_node(m, "Add", "add", (const char *[]){"Y", "ghost", NULL}, (const char *[]){"Z", NULL});
    add_node(m, "Relu", "r3", (const char *[]){"ghost", NULL}, (const char *[]){"X", NULL});
    add_output(m, value_info("Z", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_output(m, value_info("nowhere", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_output(m, value_info("Z", KC_DTYPE_FLOAT, -1, NULL, NULL));
    assert_int_equal(import_model(c, m), 5);
    assert_message(c, "value 'Z': listed twice among the graph outputs");
    assert_message(c, "value 'Y': defined twice");
    assert_message(c, "node 'r2'");
    assert_message(c, "value 'X': defined twice: a graph input");
    assert_message(c, "value 'ghost': read by node 'add'");
    assert_message(c, "value 'nowhere': graph output");
    assert_int_equal(c->st.nodes_imported, 4);
}

/* ---- tensor contents ---- */

static void test_tensor_dtypes_raw_and_typed(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    static const int64_t d3[1] = {3};
    static const int64_t d23[2] = {2, 3};

    static const int64_t i64[3] = {-1, 1LL << 40, 7};
    Onnx__TensorProto *t = tensor("i64_raw", KC_DTYPE_INT64, 1, d3);
    set_raw(t, i64, sizeof i64);
    add_initializer(m, t);
    t = tensor("i64_typed", KC_DTYPE_INT64, 1, d3);
    t->n_int64_data = 3;
    t->int64_data = (int64_t *)i64;
    add_initializer(m, t);

    static const int32_t i32[6] = {1, -2, 3, -4, 5, 2147483647};
    t = tensor("i32_raw", KC_DTYPE_INT32, 2, d23);
    set_raw(t, i32, sizeof i32);
    add_initializer(m, t);
    t = tensor("i32_typed", KC_DTYPE_INT32, 2, d23);
    t->n_int32_data = 6;
    t->int32_data = (int32_t *)i32;
    add_initializer(m, t);

    static const uint8_t bools[3] = {1, 0, 1};
    t = tensor("bool_raw", KC_DTYPE_BOOL, 1, d3);
    set_raw(t, bools, sizeof bools);
    add_initializer(m, t);
    static const int32_t bool_words[3] = {1, 0, 1};
    t = tensor("bool_typed", KC_DTYPE_BOOL, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = (int32_t *)bool_words;
    add_initializer(m, t);

    static const int32_t i8_words[3] = {-128, 0, 127};
    t = tensor("i8_typed", KC_DTYPE_INT8, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = (int32_t *)i8_words;
    add_initializer(m, t);

    static const int32_t f16_words[3] = {0x3c00, 0xc000, 0x7bff}; /* 1, -2, 65504 */
    t = tensor("f16_typed", KC_DTYPE_FLOAT16, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = (int32_t *)f16_words;
    add_initializer(m, t);

    static const uint64_t u32[3] = {0, 1, 4294967295u};
    t = tensor("u32_typed", KC_DTYPE_UINT32, 1, d3);
    t->n_uint64_data = 3;
    t->uint64_data = (uint64_t *)u32;
    add_initializer(m, t);

    static const double f64[3] = {0.25, -1e300, 3};
    t = tensor("f64_typed", KC_DTYPE_DOUBLE, 1, d3);
    t->n_double_data = 3;
    t->double_data = (double *)f64;
    add_initializer(m, t);

    static const float scalar = 2.5f;
    add_initializer(m, tensor_f32("scalar", 0, NULL, &scalar, 1, 0));
    static const int64_t d0[2] = {4, 0};
    add_initializer(m, tensor("empty", KC_DTYPE_FLOAT, 2, d0));
    import_ok(c, m);

    assert_memory_equal(value(c, "i64_raw")->data, i64, sizeof i64);
    assert_memory_equal(value(c, "i64_typed")->data, i64, sizeof i64);
    assert_int_equal(value(c, "i64_typed")->dtype, KC_DTYPE_INT64);
    assert_memory_equal(value(c, "i32_raw")->data, i32, sizeof i32);
    assert_memory_equal(value(c, "i32_typed")->data, i32, sizeof i32);
    assert_int_equal(value(c, "i32_typed")->rank, 2);
    assert_memory_equal(value(c, "bool_raw")->data, bools, sizeof bools);
    assert_memory_equal(value(c, "bool_typed")->data, bools, sizeof bools);
    const int8_t i8[3] = {-128, 0, 127};
    assert_memory_equal(value(c, "i8_typed")->data, i8, sizeof i8);
    const uint16_t f16[3] = {0x3c00, 0xc000, 0x7bff};
    assert_memory_equal(value(c, "f16_typed")->data, f16, sizeof f16);
    const uint32_t u32_host[3] = {0, 1, 4294967295u};
    assert_memory_equal(value(c, "u32_typed")->data, u32_host, sizeof u32_host);
    assert_memory_equal(value(c, "f64_typed")->data, f64, sizeof f64);
    const kc_value *s = value(c, "scalar");
    assert_int_equal(s->rank, 0);
    assert_true(*(const float *)s->data == 2.5f);
    const kc_value *e = value(c, "empty");
    assert_true(e->flags & KC_VALUE_CONST);
    assert_int_equal(e->rank, 2);
    assert_int_equal(e->dims[1], 0);
    assert_int_equal(c->g->n_inputs, 0);
}

static void test_tensor_errors(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    static const int64_t d3[1] = {3};
    static const float vals[2] = {1, 2};
    add_initializer(m, tensor_f32("short_typed", 1, d3, vals, 2, 0));
    add_initializer(m, tensor_f32("short_raw", 1, d3, vals, 2, 1));
    Onnx__TensorProto *t = tensor("strings", KC_DTYPE_STRING, 1, d3);
    add_initializer(m, t);
    static const int64_t neg[2] = {2, -3};
    add_initializer(m, tensor("negative", KC_DTYPE_FLOAT, 2, neg));
    static const int64_t deep[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    add_initializer(m, tensor("deep", KC_DTYPE_FLOAT, 9, deep));
    static const int64_t huge[3] = {1LL << 40, 1LL << 40, 1LL << 40};
    add_initializer(m, tensor("huge", KC_DTYPE_FLOAT, 3, huge));
    t = tensor("untyped", KC_DTYPE_UNDEFINED, 1, d3);
    t->has_data_type = 0;
    add_initializer(m, t);
    static const int32_t big[3] = {1, 2, 300};
    t = tensor("u8_range", KC_DTYPE_UINT8, 1, d3);
    t->n_int32_data = 3;
    t->int32_data = (int32_t *)big;
    add_initializer(m, t);
    t = tensor("complex", 14, 1, d3);
    add_initializer(m, t);
    add_initializer(m, tensor_f32("short_typed", 1, d3, vals, 2, 0)); /* listed twice */
    assert_int_equal(import_model(c, m), 10);
    assert_message(
        c, "initializer 'short_typed': f32 tensor of 3 elements has 2 values in float_data");
    assert_message(c, "initializer 'short_raw': raw_data holds 8 bytes");
    assert_message(c, "initializer 'strings': string tensors are not supported");
    assert_message(c, "initializer 'negative': dimension 1 is negative");
    assert_message(c, "initializer 'deep': rank 9 exceeds");
    assert_message(c, "initializer 'huge': dims describe more than");
    assert_message(c, "initializer 'untyped': tensor has no data type");
    assert_message(c, "initializer 'u8_range': u8 element 2 holds 300");
    assert_message(c, "initializer 'complex': tensor data type 14 is not supported");
    assert_message(c, "initializer 'short_typed' is listed twice");
}

static void test_tensor_from_onnx_direct(void **state) {
    ctx *c = *state;
    static const int64_t d2[2] = {1, 2};
    static const float vals[2] = {3, 4};
    Onnx__TensorProto *t = tensor_f32("direct", 2, d2, vals, 2, 1);
    kc_tensor out;
    assert_int_equal(kc_tensor_from_onnx(c->g, t, NULL, &out, &c->d), 0);
    assert_int_equal(out.dtype, KC_DTYPE_FLOAT);
    assert_int_equal(out.rank, 2);
    assert_int_equal(out.dims[1], 2);
    assert_memory_equal(out.data, vals, sizeof vals);
    t->raw_data.len = 4;
    assert_int_equal(kc_tensor_from_onnx(c->g, t, NULL, &out, &c->d), 1);
    assert_message(c, "tensor 'direct': raw_data holds 4 bytes");
}

static void test_sparse_initializer(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    Onnx__SparseTensorProto *sp = NEW(Onnx__SparseTensorProto, ONNX__SPARSE_TENSOR_PROTO__INIT);
    static const int64_t d1[1] = {1};
    static const float one = 1;
    sp->values = tensor_f32("sparse_w", 1, d1, &one, 1, 0);
    sp->indices = tensor("", KC_DTYPE_INT64, 1, d1);
    PUSH(m->graph->sparse_initializer, m->graph->n_sparse_initializer, sp);
    add_node(m, "Relu", "r", (const char *[]){"sparse_w", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    assert_int_equal(import_model(c, m), 1);
    assert_message(c, "sparse initializer 'sparse_w' is not supported");
}

/* ---- Constant nodes ---- */

static void test_constant_nodes(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    static const int64_t d2[1] = {2};
    static const float tv[2] = {1.5f, -2.5f};
    Onnx__NodeProto *n = add_node(m, "Constant", "c_tensor", NULL, (const char *[]){"ct", NULL});
    add_attr(n, "value", KC_ATTR_TENSOR)->t = tensor_f32("", 1, d2, tv, 2, 1);
    n = add_node(m, "Constant", "c_float", NULL, (const char *[]){"cf", NULL});
    Onnx__AttributeProto *a = add_attr(n, "value_float", KC_ATTR_FLOAT);
    a->has_f = 1;
    a->f = 0.125f;
    n = add_node(m, "Constant", "c_floats", NULL, (const char *[]){"cfs", NULL});
    a = add_attr(n, "value_floats", KC_ATTR_FLOATS);
    a->n_floats = 2;
    a->floats = (float *)tv;
    n = add_node(m, "Constant", "c_int", NULL, (const char *[]){"ci", NULL});
    a = add_attr(n, "value_int", KC_ATTR_INT);
    a->has_i = 1;
    a->i = -42;
    static const int64_t ints[3] = {1, -1, 1LL << 50};
    n = add_node(m, "Constant", "c_ints", NULL, (const char *[]){"cis", NULL});
    a = add_attr(n, "value_ints", KC_ATTR_INTS);
    a->n_ints = 3;
    a->ints = (int64_t *)ints;
    n = add_node(m, "Constant", "c_domain", NULL, (const char *[]){"cd", NULL});
    n->domain = (char *)"ai.onnx";
    a = add_attr(n, "value_int", KC_ATTR_INT);
    a->has_i = 1;
    a->i = 9;
    add_node(m, "Concat", "cat", (const char *[]){"cis", "ci", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_INT64, -1, NULL, NULL));
    import_ok(c, m);

    assert_int_equal(c->g->n_nodes, 1);
    assert_int_equal(c->st.nodes_imported, 7);
    const kc_value *v = value(c, "ct");
    assert_true(v->flags & KC_VALUE_CONST);
    assert_int_equal(v->producer, -1);
    assert_int_equal(v->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(v->rank, 1);
    assert_memory_equal(v->data, tv, sizeof tv);
    v = value(c, "cf");
    assert_int_equal(v->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(v->rank, 0);
    assert_true(*(const float *)v->data == 0.125f);
    v = value(c, "cfs");
    assert_int_equal(v->rank, 1);
    assert_int_equal(v->dims[0], 2);
    assert_memory_equal(v->data, tv, sizeof tv);
    v = value(c, "ci");
    assert_int_equal(v->dtype, KC_DTYPE_INT64);
    assert_int_equal(v->rank, 0);
    assert_int_equal(*(const int64_t *)v->data, -42);
    v = value(c, "cis");
    assert_int_equal(v->dtype, KC_DTYPE_INT64);
    assert_int_equal(v->dims[0], 3);
    assert_memory_equal(v->data, ints, sizeof ints);
    assert_int_equal(*(const int64_t *)value(c, "cd")->data, 9);
    assert_int_equal(kc_verify(c->g, &c->d), 0);
}

static void test_constant_errors(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    Onnx__NodeProto *n = add_node(m, "Constant", "c_str", NULL, (const char *[]){"a", NULL});
    Onnx__AttributeProto *at = add_attr(n, "value_string", KC_ATTR_STRING);
    at->has_s = 1;
    at->s.data = (uint8_t *)"hi";
    at->s.len = 2;
    n = add_node(m, "Constant", "c_strs", NULL, (const char *[]){"b", NULL});
    add_attr(n, "value_strings", KC_ATTR_STRINGS);
    n = add_node(m, "Constant", "c_sparse", NULL, (const char *[]){"c", NULL});
    add_attr(n, "sparse_value", KC_ATTR_SPARSE_TENSOR)->sparse_tensor =
        NEW(Onnx__SparseTensorProto, ONNX__SPARSE_TENSOR_PROTO__INIT);
    add_node(m, "Constant", "c_none", NULL, (const char *[]){"d", NULL});
    static const int64_t d1[1] = {1};
    static const float one = 1;
    add_initializer(m, tensor_f32("w", 1, d1, &one, 1, 0));
    n = add_node(m, "Constant", "c_dup", NULL, (const char *[]){"w", NULL});
    at = add_attr(n, "value_int", KC_ATTR_INT);
    at->has_i = 1;
    assert_int_equal(import_model(c, m), 5);
    assert_message(c, "node 'c_str' (Constant, opset 13): string constants ('value_string')");
    assert_message(c, "node 'c_strs' (Constant, opset 13): string constants ('value_strings')");
    assert_message(c, "node 'c_sparse' (Constant, opset 13): sparse constants");
    assert_message(c, "node 'c_none' (Constant, opset 13): a Constant needs exactly one");
    assert_message(c, "value 'w': defined twice (again by node 'c_dup'");
    assert_int_equal(c->g->n_nodes, 0);
    assert_int_equal(c->st.nodes_imported, 5);
}

/* ---- attributes ---- */

static void test_every_attribute_kind(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    Onnx__NodeProto *n =
        add_node(m, "Custom", "k", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    Onnx__AttributeProto *a = add_attr(n, "f", KC_ATTR_FLOAT);
    a->has_f = 1;
    a->f = 0.5f;
    a = add_attr(n, "i", KC_ATTR_INT);
    a->has_i = 1;
    a->i = -7;
    a = add_attr(n, "s", KC_ATTR_STRING);
    a->has_s = 1;
    a->s.data = (uint8_t *)"ab\0cd";
    a->s.len = 5;
    static const int64_t d2[1] = {2};
    static const float tv[2] = {4, 5};
    add_attr(n, "t", KC_ATTR_TENSOR)->t = tensor_f32("tt", 1, d2, tv, 2, 0);
    Onnx__GraphProto *sub = NEW(Onnx__GraphProto, ONNX__GRAPH_PROTO__INIT);
    sub->name = (char *)"body";
    add_attr(n, "g", KC_ATTR_GRAPH)->g = sub;
    a = add_attr(n, "floats", KC_ATTR_FLOATS);
    a->n_floats = 2;
    a->floats = (float *)tv;
    static const int64_t ints[3] = {3, 1, 4};
    a = add_attr(n, "ints", KC_ATTR_INTS);
    a->n_ints = 3;
    a->ints = (int64_t *)ints;
    a = add_attr(n, "strings", KC_ATTR_STRINGS);
    ProtobufCBinaryData strs[2] = {{3, (uint8_t *)"one"}, {0, NULL}};
    a->n_strings = 2;
    a->strings = strs;
    a = add_attr(n, "tensors", KC_ATTR_TENSORS);
    PUSH(a->tensors, a->n_tensors, tensor_f32("t0", 1, d2, tv, 2, 1));
    static const int64_t i64v[1] = {11};
    static const int64_t d1[1] = {1};
    Onnx__TensorProto *ti = tensor("t1", KC_DTYPE_INT64, 1, d1);
    ti->n_int64_data = 1;
    ti->int64_data = (int64_t *)i64v;
    PUSH(a->tensors, a->n_tensors, ti);
    a = add_attr(n, "graphs", KC_ATTR_GRAPHS);
    PUSH(a->graphs, a->n_graphs, sub);
    PUSH(a->graphs, a->n_graphs, sub);
    Onnx__ValueInfoProto *vi = value_info("tp", KC_DTYPE_FLOAT, -1, NULL, NULL);
    add_attr(n, "tp", KC_ATTR_TYPE_PROTO)->tp = vi->type;
    a = add_attr(n, "tps", KC_ATTR_TYPE_PROTOS);
    PUSH(a->type_protos, a->n_type_protos, vi->type);
    a = add_attr(n, "ref", KC_ATTR_FLOAT);
    a->ref_attr_name = (char *)"alpha";
    /* No type: very old files; the filled field decides. */
    a = add_attr(n, "old_int", KC_ATTR_UNDEFINED);
    a->has_type = 0;
    a->has_i = 1;
    a->i = 99;
    import_ok(c, m);

    const kc_node *k = &c->g->nodes[0];
    assert_int_equal(k->op, KC_OP_UNKNOWN);
    assert_int_equal(k->n_attrs, 14);
    const kc_attr *x = attr(k, "f");
    assert_int_equal(x->type, KC_ATTR_FLOAT);
    assert_true(x->f == 0.5f);
    x = attr(k, "i");
    assert_int_equal(x->type, KC_ATTR_INT);
    assert_int_equal(x->i, -7);
    x = attr(k, "s");
    assert_int_equal(x->type, KC_ATTR_STRING);
    assert_int_equal(x->s_len, 5);
    assert_memory_equal(x->s, "ab\0cd", 6);
    x = attr(k, "t");
    assert_int_equal(x->type, KC_ATTR_TENSOR);
    assert_int_equal(x->t->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(x->t->rank, 1);
    assert_memory_equal(x->t->data, tv, sizeof tv);
    assert_int_equal(attr(k, "g")->type, KC_ATTR_GRAPH);
    x = attr(k, "floats");
    assert_int_equal(x->type, KC_ATTR_FLOATS);
    assert_int_equal(x->n, 2);
    assert_memory_equal(x->floats, tv, sizeof tv);
    x = attr(k, "ints");
    assert_int_equal(x->type, KC_ATTR_INTS);
    assert_int_equal(x->n, 3);
    assert_memory_equal(x->ints, ints, sizeof ints);
    int64_t got[4];
    assert_int_equal(kc_attr_ints(k, "ints", got, 4), 3);
    x = attr(k, "strings");
    assert_int_equal(x->type, KC_ATTR_STRINGS);
    assert_int_equal(x->n, 2);
    assert_string_equal(x->strings[0], "one");
    assert_string_equal(x->strings[1], "");
    x = attr(k, "tensors");
    assert_int_equal(x->type, KC_ATTR_TENSORS);
    assert_int_equal(x->n, 2);
    assert_memory_equal(x->tensors[0]->data, tv, sizeof tv);
    assert_int_equal(x->tensors[1]->dtype, KC_DTYPE_INT64);
    assert_int_equal(*(const int64_t *)x->tensors[1]->data, 11);
    x = attr(k, "graphs");
    assert_int_equal(x->type, KC_ATTR_GRAPHS);
    assert_int_equal(x->n, 2);
    assert_int_equal(attr(k, "tp")->type, KC_ATTR_TYPE_PROTO);
    x = attr(k, "tps");
    assert_int_equal(x->type, KC_ATTR_TYPE_PROTOS);
    assert_int_equal(x->n, 1);
    x = attr(k, "ref");
    assert_string_equal(x->ref_attr_name, "alpha");
    assert_null(attr(k, "f")->ref_attr_name);
    x = attr(k, "old_int");
    assert_int_equal(x->type, KC_ATTR_INT);
    assert_int_equal(x->i, 99);
}

static void test_bad_attribute_tensor(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    Onnx__NodeProto *n =
        add_node(m, "Custom", "k", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    static const int64_t d3[1] = {3};
    add_attr(n, "value", KC_ATTR_TENSOR)->t = tensor("", KC_DTYPE_STRING, 1, d3);
    assert_int_equal(import_model(c, m), 1);
    assert_message(c, "node 'k' (Custom) attribute 'value': string tensors are not supported");
}

static void test_non_tensor_input(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    Onnx__ValueInfoProto *vi = NEW(Onnx__ValueInfoProto, ONNX__VALUE_INFO_PROTO__INIT);
    vi->name = (char *)"seq";
    vi->type = NEW(Onnx__TypeProto, ONNX__TYPE_PROTO__INIT);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    vi->type->sequence_type = NEW(Onnx__TypeProto__Sequence, ONNX__TYPE_PROTO__SEQUENCE__INIT);
    add_input(m, vi);
    add_node(m, "Identity", "id", (const char *[]){"seq", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    assert_int_equal(import_model(c, m), 1);
    assert_message(c, "value 'seq': graph input has type 'sequence'");
}

/* A call of a model-local function is inlined: its body's nodes replace the call, bound to the
 * call's values; a call of an op that no function or table row defines stays unknown. */
static void test_model_function_calls_are_inlined(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_opset(m, "local", 1);
    Onnx__FunctionProto *fn = NEW(Onnx__FunctionProto, ONNX__FUNCTION_PROTO__INIT);
    fn->name = (char *)"Twice";
    fn->domain = (char *)"local";
    PUSH(fn->input, fn->n_input, (char *)"a");
    PUSH(fn->output, fn->n_output, (char *)"b");
    Onnx__NodeProto *body = NEW(Onnx__NodeProto, ONNX__NODE_PROTO__INIT);
    body->op_type = (char *)"Add";
    PUSH(body->input, body->n_input, (char *)"a");
    PUSH(body->input, body->n_input, (char *)"a");
    PUSH(body->output, body->n_output, (char *)"b");
    PUSH(fn->node, fn->n_node, body);
    Onnx__OperatorSetIdProto *o = NEW(Onnx__OperatorSetIdProto, ONNX__OPERATOR_SET_ID_PROTO__INIT);
    o->domain = (char *)"";
    o->has_version = 1;
    o->version = 13;
    PUSH(fn->opset_import, fn->n_opset_import, o);
    PUSH(m->functions, m->n_functions, fn);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    Onnx__NodeProto *n =
        add_node(m, "Twice", "call", (const char *[]){"X", NULL}, (const char *[]){"Y", NULL});
    n->domain = (char *)"local";
    Onnx__NodeProto *u =
        add_node(m, "Thrice", "other", (const char *[]){"Y", NULL}, (const char *[]){"Z", NULL});
    u->domain = (char *)"local";
    add_output(m, value_info("Z", KC_DTYPE_FLOAT, -1, NULL, NULL));
    import_ok(c, m);
    assert_int_equal(c->g->n_nodes, 2);
    const kc_node *add = &c->g->nodes[0];
    assert_int_equal(add->op, KC_OP_Add);
    assert_string_equal(c->g->values[add->inputs[0]].name, "X");
    assert_string_equal(c->g->values[add->inputs[1]].name, "X");
    assert_string_equal(c->g->values[add->outputs[0]].name, "Y");
    assert_int_equal(c->g->nodes[1].op, KC_OP_UNKNOWN);
    assert_string_equal(c->g->nodes[1].domain, "local");
    assert_int_equal(c->g->nodes[1].opset, 1);
}

/* ---- external data ---- */

typedef struct tmpdir {
    char path[64];
} tmpdir;

static void make_tmpdir(tmpdir *t) {
    strcpy(t->path, "/tmp/kc_import_XXXXXX");
    assert_non_null(mkdtemp(t->path));
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void remove_tmpdir(tmpdir *t, const char *const *files) {
    char path[256];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", t->path, files[i]);
        unlink(path);
    }
    rmdir(t->path);
}

static void set_external(Onnx__TensorProto *t, const char *location, const char *offset,
                         const char *length) {
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *keys[3] = {"location", "offset", "length"};
    const char *vals[3] = {location, offset, length};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        Onnx__StringStringEntryProto *e =
            NEW(Onnx__StringStringEntryProto, ONNX__STRING_STRING_ENTRY_PROTO__INIT);
        e->key = (char *)keys[i];
        e->value = (char *)vals[i];
        PUSH(t->external_data, t->n_external_data, e);
    }
}

static int import_file_model(ctx *c, const Onnx__ModelProto *m, const char *path) {
    size_t size;
    uint8_t *bytes = pack_model(m, &size);
    write_file(path, bytes, size);
    return kc_import_onnx_file(c->g, path, &c->d, &c->st);
}

static void test_external_data(void **state) {
    ctx *c = *state;
    tmpdir dir;
    make_tmpdir(&dir);
    char path[256];
    /* weights.bin: 16 bytes of padding, then four floats. */
    uint8_t blob[32];
    memset(blob, 0xee, sizeof blob);
    static const float w[4] = {1, 2, 3, 4};
    memcpy(blob + 16, w, sizeof w);
    snprintf(path, sizeof path, "%s/weights.bin", dir.path);
    write_file(path, blob, sizeof blob);

    Onnx__ModelProto *m = new_model(13);
    static const int64_t d4[1] = {4};
    static const int64_t d2[1] = {2};
    Onnx__TensorProto *t = tensor("W", KC_DTYPE_FLOAT, 1, d4);
    set_external(t, "weights.bin", "16", "16");
    add_initializer(m, t);
    t = tensor("W_nolen", KC_DTYPE_FLOAT, 1, d2);
    set_external(t, "./weights.bin", "24", NULL);
    add_initializer(m, t);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    add_node(m, "Mul", "mul", (const char *[]){"X", "W", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    snprintf(path, sizeof path, "%s/model.onnx", dir.path);
    int errors = import_file_model(c, m, path);
    if (errors) fail_msg("%s", messages(c));
    assert_memory_equal(value(c, "W")->data, w, sizeof w);
    assert_memory_equal(value(c, "W_nolen")->data, w + 2, 2 * sizeof(float));
    assert_string_equal(c->g->source_path, path);

    remove_tmpdir(&dir, (const char *[]){"weights.bin", "model.onnx", NULL});
}

static void test_external_data_errors(void **state) {
    ctx *c = *state;
    tmpdir dir;
    make_tmpdir(&dir);
    char path[256];
    uint8_t blob[20] = {0};
    snprintf(path, sizeof path, "%s/weights.bin", dir.path);
    write_file(path, blob, sizeof blob);

    Onnx__ModelProto *m = new_model(13);
    static const int64_t d4[1] = {4};
    struct {
        const char *name, *location, *offset, *length;
    } cases[] = {
        {"missing", "nothere.bin", NULL, NULL},
        {"too_short", "weights.bin", "8", NULL},
        {"escapes", "../weights.bin", NULL, NULL},
        {"escapes_inner", "sub/../../weights.bin", NULL, NULL},
        {"absolute", "/etc/passwd", NULL, NULL},
        {"bad_length", "weights.bin", "0", "12"},
        {"bad_offset", "weights.bin", "-4", NULL},
        {"no_location", NULL, "0", NULL},
    };
    size_t n_cases = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n_cases; i++) {
        Onnx__TensorProto *t = tensor(cases[i].name, KC_DTYPE_FLOAT, 1, d4);
        set_external(t, cases[i].location, cases[i].offset, cases[i].length);
        add_initializer(m, t);
    }
    snprintf(path, sizeof path, "%s/model.onnx", dir.path);
    assert_int_equal(import_file_model(c, m, path), (int)n_cases);
    assert_message(c, "initializer 'missing': cannot open external data file");
    assert_message(c, "initializer 'too_short': external data file");
    assert_message(c, "holds 20 bytes; the tensor needs 16 bytes at offset 8");
    assert_message(c, "initializer 'escapes': external data path '../weights.bin' leaves");
    assert_message(
        c, "initializer 'escapes_inner': external data path 'sub/../../weights.bin' leaves");
    assert_message(c, "initializer 'absolute': external data path '/etc/passwd' is absolute");
    assert_message(c, "initializer 'bad_length': external data length 12 does not match the 16");
    assert_message(c, "initializer 'bad_offset': external data offset '-4'");
    assert_message(c, "initializer 'no_location': external data has no 'location'");
    remove_tmpdir(&dir, (const char *[]){"weights.bin", "model.onnx", NULL});
}

static void test_external_data_without_path(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    static const int64_t d1[1] = {1};
    Onnx__TensorProto *t = tensor("W", KC_DTYPE_FLOAT, 1, d1);
    set_external(t, "weights.bin", NULL, NULL);
    add_initializer(m, t);
    assert_int_equal(import_model(c, m), 1);
    assert_message(c, "no model path was given");
}

/* ---- corrupt input ---- */

static void test_random_garbage(void **state) {
    ctx *c = *state;
    uint8_t buf[4096];
    uint32_t seed = 12345;
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(round * 37 % 4096);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            buf[i] = (uint8_t)(seed >> 24);
        }
        kc_graph *g = kc_graph_new();
        int errors = kc_import_onnx_bytes(g, buf, n, NULL, &c->d, NULL);
        assert_true(errors > 0);
        kc_graph_free(g);
    }
    assert_int_equal(kc_import_onnx_bytes(c->g, NULL, 0, NULL, &c->d, NULL), 1);
    assert_message(c, "not a valid ONNX model");
}

static void test_truncated_model(void **state) {
    ctx *c = *state;
    Onnx__ModelProto *m = new_model(13);
    add_input(m, value_info("X", KC_DTYPE_FLOAT, -1, NULL, NULL));
    static const int64_t d2[1] = {2};
    static const float w[2] = {1, 2};
    add_initializer(m, tensor_f32("W", 1, d2, w, 2, 1));
    add_node(m, "Mul", "mul", (const char *[]){"X", "W", NULL}, (const char *[]){"Y", NULL});
    add_output(m, value_info("Y", KC_DTYPE_FLOAT, -1, NULL, NULL));
    size_t size;
    uint8_t *bytes = pack_model(m, &size);
    for (size_t n = 0; n < size; n++) {
        kc_graph *g = kc_graph_new();
        /* A copy of exactly n bytes, so reading past it is caught by the sanitizers. */
        uint8_t *prefix = malloc(n ? n : 1);
        assert_non_null(prefix);
        memcpy(prefix, bytes, n);
        int errors = kc_import_onnx_bytes(g, prefix, n, NULL, &c->d, NULL);
        if (errors == 0) fail_msg("a prefix of %zu of %zu bytes imported without error", n, size);
        free(prefix);
        kc_graph_free(g);
    }
}

static size_t put_key_len(uint8_t *p, int field, uint64_t len) {
    size_t n = 0;
    uint64_t key = (uint64_t)field << 3 | 2;
    for (int i = 0; i < 2; i++) {
        uint64_t v = i ? len : key;
        do {
            p[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
            v >>= 7;
        } while (v);
    }
    return n;
}

static size_t key_len_size(int field, uint64_t len) {
    uint8_t tmp[24];
    return put_key_len(tmp, field, len);
}

/* Subgraphs nested 100000 deep (graph.node.attribute.g ...) must not overflow the stack. */
static void test_deeply_nested_subgraphs(void **state) {
    ctx *c = *state;
    enum { LEVELS = 100000 };
    /* Inside out: sizes of each graph, node and attribute; then the headers outside in. */
    uint64_t *graph_len = malloc(sizeof(uint64_t) * (LEVELS + 1));
    assert_non_null(graph_len);
    graph_len[0] = 0;
    for (int i = 1; i <= LEVELS; i++) {
        uint64_t attr = key_len_size(6, graph_len[i - 1]) + graph_len[i - 1];
        uint64_t node = key_len_size(5, attr) + attr;
        graph_len[i] = key_len_size(1, node) + node;
    }
    size_t size = key_len_size(7, graph_len[LEVELS]) + graph_len[LEVELS];
    uint8_t *bytes = malloc(size);
    assert_non_null(bytes);
    size_t at = put_key_len(bytes, 7, graph_len[LEVELS]);
    for (int i = LEVELS; i >= 1; i--) {
        uint64_t attr = key_len_size(6, graph_len[i - 1]) + graph_len[i - 1];
        uint64_t node = key_len_size(5, attr) + attr;
        at += put_key_len(bytes + at, 1, node);
        at += put_key_len(bytes + at, 5, attr);
        at += put_key_len(bytes + at, 6, graph_len[i - 1]);
    }
    assert_int_equal(at, size);
    assert_int_equal(kc_import_onnx_bytes(c->g, bytes, size, NULL, &c->d, NULL), 1);
    assert_message(c, "nested more than");
    free(bytes);
    free(graph_len);
}

static void test_file_errors(void **state) {
    ctx *c = *state;
    assert_int_equal(kc_import_onnx_file(c->g, "/nonexistent/model.onnx", &c->d, NULL), 1);
    assert_message(c, "cannot open '/nonexistent/model.onnx'");
    assert_int_equal(kc_import_onnx_file(c->g, "/tmp", &c->d, NULL), 1);
    assert_message(c, "not a regular file");
}

/* ---- a real model ---- */

static void test_resnet18(void **state) {
    ctx *c = *state;
    char path[1024];
    const char *dir = getenv("KANN_MODELS_DIR");
    const char *src = getenv("KANN_SOURCE_DIR");
    struct stat sb;
    if (dir)
        snprintf(path, sizeof path, "%s/resnet18.onnx", dir);
    else if (src)
        snprintf(path, sizeof path, "%s/../shared/models/resnet18.onnx", src);
    else
        path[0] = 0;
    if (!path[0] || stat(path, &sb) != 0) {
        skip();
        return;
    }
    int errors = kc_import_onnx_file(c->g, path, &c->d, &c->st);
    if (errors) fail_msg("%s", messages(c));
    kc_graph *g = c->g;
    assert_int_equal(g->n_nodes, 49);
    assert_int_equal(c->st.nodes_imported, 49);
    assert_int_equal(g->n_inputs, 1);
    const kc_value *in = &g->values[g->inputs[0]];
    assert_int_equal(in->dtype, KC_DTYPE_FLOAT);
    assert_int_equal(in->rank, 4);
    assert_int_equal(in->dims[0], 1);
    assert_int_equal(in->dims[1], 3);
    assert_int_equal(in->dims[2], 224);
    assert_int_equal(in->dims[3], 224);
    assert_int_equal(g->n_outputs, 1);
    assert_int_equal(kc_opset_of(g, ""), 13);
    const kc_value *fc = value(c, "fc.weight");
    assert_true(fc->flags & KC_VALUE_CONST);
    assert_int_equal(fc->dims[0], 1000);
    assert_int_equal(fc->dims[1], 512);
    assert_true(isfinite(((const float *)fc->data)[512 * 1000 - 1]));
    assert_int_equal(kc_verify(g, &c->d), 0);
    assert_int_equal(kc_check_supported(g, &c->d), 0);
}

#define TEST(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        TEST(test_inputs_initializers_outputs),
        TEST(test_input_without_shape_and_value_info),
        TEST(test_opset_domains),
        TEST(test_missing_default_opset),
        TEST(test_old_ir_implies_opset1),
        TEST(test_omitted_optional_inputs_outputs),
        TEST(test_defined_twice_and_undefined),
        TEST(test_tensor_dtypes_raw_and_typed),
        TEST(test_tensor_errors),
        TEST(test_tensor_from_onnx_direct),
        TEST(test_sparse_initializer),
        TEST(test_constant_nodes),
        TEST(test_constant_errors),
        TEST(test_every_attribute_kind),
        TEST(test_bad_attribute_tensor),
        TEST(test_non_tensor_input),
        TEST(test_model_function_calls_are_inlined),
        TEST(test_external_data),
        TEST(test_external_data_errors),
        TEST(test_external_data_without_path),
        TEST(test_random_garbage),
        TEST(test_truncated_model),
        TEST(test_deeply_nested_subgraphs),
        TEST(test_file_errors),
        TEST(test_resnet18),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
