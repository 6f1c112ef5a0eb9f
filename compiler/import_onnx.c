/* ONNX protobuf importer: unpacks a ModelProto with protobuf-c and copies opsets, initializers,
 * inputs, outputs, nodes and attributes into the IR arena, then frees the protobuf. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import_onnx.h"
#include "passes.h"

/* Value lookup by name. kc_find_value is linear and models have thousands of values, so the
 * importer keeps an open-addressing table of value indices; if it cannot grow, lookups fall
 * back to the linear search rather than failing the import. */
typedef struct name_map {
    int *slots; /* value index, or -1 */
    size_t cap; /* a power of two */
    size_t count;
    int broken;
} name_map;

typedef struct importer {
    kc_graph *g;
    kc_diag *d;
    const char *base_dir;
    name_map map;
    int n_nodes_before;
} importer;

static size_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h ^ (h >> 29));
}

static void map_place(int *slots, size_t cap, const char *name, int v) {
    size_t h = hash_name(name) & (cap - 1);
    while (slots[h] >= 0)
        h = (h + 1) & (cap - 1);
    slots[h] = v;
}

static int map_grow(importer *im) {
    size_t cap = im->map.cap ? im->map.cap * 2 : 1024;
    int *slots = malloc(cap * sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < cap; i++)
        slots[i] = -1;
    for (size_t i = 0; i < im->map.cap; i++)
        if (im->map.slots[i] >= 0)
            map_place(slots, cap, im->g->values[im->map.slots[i]].name, im->map.slots[i]);
    free(im->map.slots);
    im->map.slots = slots;
    im->map.cap = cap;
    return 0;
}

static void map_insert(importer *im, int v) {
    if (im->map.broken) return;
    if ((im->map.count + 1) * 2 > im->map.cap && map_grow(im) != 0) {
        im->map.broken = 1;
        return;
    }
    map_place(im->map.slots, im->map.cap, im->g->values[v].name, v);
    im->map.count++;
}

static int find_value(const importer *im, const char *name) {
    if (im->map.broken) return kc_find_value(im->g, name);
    if (!im->map.cap) return -1;
    size_t mask = im->map.cap - 1;
    for (size_t h = hash_name(name) & mask; im->map.slots[h] >= 0; h = (h + 1) & mask)
        if (strcmp(im->g->values[im->map.slots[h]].name, name) == 0) return im->map.slots[h];
    return -1;
}

static int add_value(importer *im, const char *name) {
    int v = kc_add_value(im->g, name);
    map_insert(im, v);
    return v;
}

static int value_for(importer *im, const char *name) {
    int v = find_value(im, name);
    return v >= 0 ? v : add_value(im, name);
}

static int is_defined(const kc_value *v) {
    return (v->flags & (KC_VALUE_CONST | KC_VALUE_INPUT)) || v->producer >= 0;
}

static void set_const(kc_graph *g, int v, const kc_tensor *t) {
    kc_value *val = &g->values[v];
    val->dtype = t->dtype;
    val->rank = t->rank;
    for (int i = 0; i < KC_MAX_RANK; i++) {
        val->dims[i] = i < t->rank ? t->dims[i] : -1;
        val->dim_params[i] = NULL;
    }
    /* Like kc_add_const: a constant always has a data pointer, even when it holds nothing. */
    val->data = t->data ? t->data : kc_alloc(g, 1);
    val->flags |= KC_VALUE_CONST;
    val->producer = -1;
}

static const char *normalize_domain(const char *domain) {
    return !domain || strcmp(domain, "ai.onnx") == 0 ? "" : domain;
}

static int opset_version(const kc_graph *g, const char *domain, int *found) {
    for (int i = 0; i < g->n_opsets; i++) {
        if (strcmp(g->opsets[i].domain, domain) == 0) {
            *found = 1;
            int64_t v = g->opsets[i].version;
            return v > INT_MAX ? INT_MAX : v < 0 ? 0 : (int)v;
        }
    }
    *found = 0;
    return 0;
}

/* ---- types ---- */

static const char *type_kind(const Onnx__TypeProto *tp) {
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        return "tensor";
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
        return "sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        return "map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
        return "optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        return "sparse tensor";
    case ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE:
        return "opaque";
    default:
        return "unset";
    }
}

/* Copies a declared tensor type onto value v. Graph inputs and outputs must be tensors
 * (what names them); for value_info hints (what == NULL) anything else is ignored. */
static int apply_type(importer *im, int v, const Onnx__TypeProto *tp, const char *what) {
    kc_graph *g = im->g;
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return 0;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        if (!what) return 0;
        kc_error_value(im->d, g, v, "%s has type '%s'; only tensors are supported", what,
                       type_kind(tp));
        return 1;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    const Onnx__TensorShapeProto *shape = tt->shape;
    if (shape && shape->n_dim > KC_MAX_RANK) {
        kc_error_value(im->d, g, v, "rank %zu exceeds the limit of %d", shape->n_dim, KC_MAX_RANK);
        return 1;
    }
    kc_value *val = &g->values[v];
    if (tt->has_elem_type && tt->elem_type != KC_DTYPE_UNDEFINED) val->dtype = tt->elem_type;
    if (!shape) return 0;
    val->rank = (int)shape->n_dim;
    for (int i = 0; i < KC_MAX_RANK; i++) {
        val->dims[i] = -1;
        val->dim_params[i] = NULL;
    }
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = shape->dim[i];
        if (!dim) continue;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            val->dims[i] = dim->dim_value >= 0 ? dim->dim_value : -1;
        else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 dim->dim_param && dim->dim_param[0])
            val->dim_params[i] = kc_strdup(g, dim->dim_param);
    }
    return 0;
}

/* ---- attributes ---- */

/* Very old exporters leave AttributeProto.type unset; the filled field tells the kind. */
static int infer_attr_type(const Onnx__AttributeProto *ap) {
    if (ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return (int)ap->type;
    if (ap->has_f) return KC_ATTR_FLOAT;
    if (ap->has_i) return KC_ATTR_INT;
    if (ap->has_s) return KC_ATTR_STRING;
    if (ap->t) return KC_ATTR_TENSOR;
    if (ap->g) return KC_ATTR_GRAPH;
    if (ap->sparse_tensor) return KC_ATTR_SPARSE_TENSOR;
    if (ap->tp) return KC_ATTR_TYPE_PROTO;
    if (ap->n_floats) return KC_ATTR_FLOATS;
    if (ap->n_ints) return KC_ATTR_INTS;
    if (ap->n_strings) return KC_ATTR_STRINGS;
    if (ap->n_tensors) return KC_ATTR_TENSORS;
    if (ap->n_graphs) return KC_ATTR_GRAPHS;
    if (ap->n_sparse_tensors) return KC_ATTR_SPARSE_TENSORS;
    if (ap->n_type_protos) return KC_ATTR_TYPE_PROTOS;
    return KC_ATTR_UNDEFINED;
}

static char *binary_string(kc_graph *g, const ProtobufCBinaryData *b) {
    return b->len ? kc_strndup(g, (const char *)b->data, b->len) : kc_strdup(g, "");
}

static int import_attr(importer *im, int node, const Onnx__AttributeProto *ap) {
    kc_graph *g = im->g;
    if (!ap->name || !ap->name[0]) {
        kc_error_node(im->d, g, node, "attribute without a name");
        return 1;
    }
    int type = infer_attr_type(ap);
    size_t count = 0;
    switch (type) {
    case KC_ATTR_FLOATS:
        count = ap->n_floats;
        break;
    case KC_ATTR_INTS:
        count = ap->n_ints;
        break;
    case KC_ATTR_STRINGS:
        count = ap->n_strings;
        break;
    case KC_ATTR_TENSORS:
        count = ap->n_tensors;
        break;
    case KC_ATTR_GRAPHS:
        count = ap->n_graphs;
        break;
    case KC_ATTR_SPARSE_TENSORS:
        count = ap->n_sparse_tensors;
        break;
    case KC_ATTR_TYPE_PROTOS:
        count = ap->n_type_protos;
        break;
    default:
        break;
    }
    if (count > INT_MAX / 16) {
        kc_error_node(im->d, g, node, "attribute '%s' has too many elements (%zu)", ap->name,
                      count);
        return 1;
    }
    kc_attr *a = kc_node_add_attr(g, node, ap->name, type);
    a->n = (int)count;
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        a->ref_attr_name = kc_strdup(g, ap->ref_attr_name);
    const char *what = kc_sprintf(g, "node '%s' (%s) attribute '%s'", g->nodes[node].name,
                                  g->nodes[node].op_type, ap->name);
    int errors = 0;
    switch (type) {
    case KC_ATTR_FLOAT:
        a->f = ap->f;
        break;
    case KC_ATTR_INT:
        a->i = ap->i;
        break;
    case KC_ATTR_STRING:
        a->s = binary_string(g, &ap->s);
        a->s_len = ap->s.len;
        break;
    case KC_ATTR_TENSOR:
        a->t = kc_alloc(g, sizeof *a->t);
        if (ap->t)
            errors += kc_tensor_from_onnx_as(g, ap->t, im->base_dir, what, a->t, im->d) != 0;
        else if (!ap->ref_attr_name) {
            kc_error(im->d, "%s: tensor attribute without a tensor", what);
            errors++;
        }
        break;
    case KC_ATTR_FLOATS:
        a->floats = kc_alloc(g, sizeof(float) * (count ? count : 1));
        if (count) memcpy(a->floats, ap->floats, sizeof(float) * count);
        break;
    case KC_ATTR_INTS:
        a->ints = kc_alloc(g, sizeof(int64_t) * (count ? count : 1));
        if (count) memcpy(a->ints, ap->ints, sizeof(int64_t) * count);
        break;
    case KC_ATTR_STRINGS:
        a->strings = kc_alloc(g, sizeof(char *) * (count ? count : 1));
        for (size_t i = 0; i < count; i++)
            a->strings[i] = binary_string(g, &ap->strings[i]);
        break;
    case KC_ATTR_TENSORS:
        a->tensors = kc_alloc(g, sizeof(kc_tensor *) * (count ? count : 1));
        for (size_t i = 0; i < count; i++) {
            a->tensors[i] = kc_alloc(g, sizeof(kc_tensor));
            const char *what_i = kc_sprintf(g, "%s[%zu]", what, i);
            errors += kc_tensor_from_onnx_as(g, ap->tensors[i], im->base_dir, what_i, a->tensors[i],
                                             im->d) != 0;
        }
        break;
    /* Subgraphs, sparse tensors and type protos: only the kind is kept, so the support check
     * can name them; nothing downstream reads their contents. */
    case KC_ATTR_GRAPH:
    case KC_ATTR_GRAPHS:
    case KC_ATTR_SPARSE_TENSOR:
    case KC_ATTR_SPARSE_TENSORS:
    case KC_ATTR_TYPE_PROTO:
    case KC_ATTR_TYPE_PROTOS:
        break;
    default:
        kc_error(im->d, "%s: unknown attribute type %d", what, type);
        errors++;
        break;
    }
    return errors;
}

/* ---- nodes ---- */

static const char *node_label(kc_graph *g, const Onnx__NodeProto *np, const char *domain,
                              int opset) {
    return kc_sprintf(g, "node '%s' (%s%s%s, opset %d)",
                      np->name && np->name[0] ? np->name : "<unnamed>", domain,
                      domain[0] ? "." : "", np->op_type ? np->op_type : "?", opset);
}

/* Constant nodes become constant values; no node is added for them. */
static void import_constant(importer *im, const Onnx__NodeProto *np, const char *label) {
    kc_graph *g = im->g;
    kc_diag *d = im->d;
    if (np->n_output != 1 || !np->output[0] || !np->output[0][0]) {
        kc_error(d, "%s: a Constant must have exactly one output", label);
        return;
    }
    if (np->n_attribute != 1 || !np->attribute[0] || !np->attribute[0]->name) {
        kc_error(d,
                 "%s: a Constant needs exactly one of value, value_float, value_floats, "
                 "value_int, value_ints",
                 label);
        return;
    }
    const Onnx__AttributeProto *ap = np->attribute[0];
    const char *name = ap->name;
    int type = infer_attr_type(ap);
    kc_tensor t;
    memset(&t, 0, sizeof t);
    if (strcmp(name, "value") == 0 && type == KC_ATTR_TENSOR && ap->t) {
        const char *what = kc_sprintf(g, "%s attribute 'value'", label);
        if (kc_tensor_from_onnx_as(g, ap->t, im->base_dir, what, &t, d) != 0) return;
    } else if (strcmp(name, "value_float") == 0 && type == KC_ATTR_FLOAT) {
        t.dtype = KC_DTYPE_FLOAT;
        t.rank = 0;
        t.data = kc_alloc(g, sizeof(float));
        memcpy(t.data, &ap->f, sizeof(float));
    } else if (strcmp(name, "value_int") == 0 && type == KC_ATTR_INT) {
        t.dtype = KC_DTYPE_INT64;
        t.rank = 0;
        t.data = kc_alloc(g, sizeof(int64_t));
        memcpy(t.data, &ap->i, sizeof(int64_t));
    } else if (strcmp(name, "value_floats") == 0 &&
               (type == KC_ATTR_FLOATS || type == KC_ATTR_UNDEFINED)) {
        t.dtype = KC_DTYPE_FLOAT;
        t.rank = 1;
        t.dims[0] = (int64_t)ap->n_floats;
        if (ap->n_floats) {
            t.data = kc_alloc(g, sizeof(float) * ap->n_floats);
            memcpy(t.data, ap->floats, sizeof(float) * ap->n_floats);
        }
    } else if (strcmp(name, "value_ints") == 0 &&
               (type == KC_ATTR_INTS || type == KC_ATTR_UNDEFINED)) {
        t.dtype = KC_DTYPE_INT64;
        t.rank = 1;
        t.dims[0] = (int64_t)ap->n_ints;
        if (ap->n_ints) {
            t.data = kc_alloc(g, sizeof(int64_t) * ap->n_ints);
            memcpy(t.data, ap->ints, sizeof(int64_t) * ap->n_ints);
        }
    } else if (strcmp(name, "value_string") == 0 || strcmp(name, "value_strings") == 0) {
        kc_error(d, "%s: string constants ('%s') are not supported", label, name);
        return;
    } else if (strcmp(name, "sparse_value") == 0) {
        kc_error(d, "%s: sparse constants ('sparse_value') are not supported", label);
        return;
    } else {
        kc_error(d, "%s: unexpected attribute '%s' of type %d", label, name, type);
        return;
    }
    const char *out = np->output[0];
    int v = value_for(im, out);
    if (is_defined(&g->values[v])) {
        kc_error_value(d, g, v, "defined twice (again by %s)", label);
        return;
    }
    set_const(g, v, &t);
}

static void import_node(importer *im, const Onnx__NodeProto *np, int *reported_no_opset) {
    kc_graph *g = im->g;
    kc_diag *d = im->d;
    const char *domain = normalize_domain(np->domain);
    int found;
    int opset = opset_version(g, domain, &found);
    const char *label = node_label(g, np, domain, opset);
    if (!np->op_type || !np->op_type[0]) {
        kc_error(d, "%s: node has no op_type", label);
        return;
    }
    if (!found && !domain[0] && !*reported_no_opset) {
        kc_error(d, "the model imports no opset of the default domain (ai.onnx), which %s uses",
                 label);
        *reported_no_opset = 1;
    }
    if (!domain[0] && strcmp(np->op_type, "Constant") == 0) {
        import_constant(im, np, label);
        return;
    }
    if (np->n_input > INT_MAX / 16 || np->n_output > INT_MAX / 16) {
        kc_error(d, "%s: too many inputs or outputs", label);
        return;
    }
    /* Trailing empty output names are omitted optional outputs; drop them. */
    size_t n_out = np->n_output;
    while (n_out > 0 && (!np->output[n_out - 1] || !np->output[n_out - 1][0]))
        n_out--;
    int *ins = malloc(sizeof(int) * (np->n_input + n_out + 1));
    if (!ins) {
        kc_error(d, "%s: out of memory", label);
        return;
    }
    int *outs = ins + np->n_input;
    for (size_t i = 0; i < np->n_input; i++) {
        const char *in = np->input[i];
        ins[i] = in && in[0] ? value_for(im, in) : -1;
    }
    for (size_t i = 0; i < n_out; i++) {
        const char *out = np->output[i];
        outs[i] = out && out[0] ? value_for(im, out) : -1;
        if (outs[i] < 0) continue;
        int dup = is_defined(&g->values[outs[i]]);
        for (size_t j = 0; j < i; j++)
            dup |= outs[j] == outs[i];
        if (dup) {
            const kc_value *val = &g->values[outs[i]];
            const char *before = val->flags & KC_VALUE_CONST   ? "an initializer or constant"
                                 : val->flags & KC_VALUE_INPUT ? "a graph input"
                                 : val->producer >= 0          ? "the output of another node"
                                                               : "an earlier output of this node";
            kc_error_value(d, g, outs[i], "defined twice: %s and an output of %s", before, label);
            outs[i] = -1;
        }
    }
    int node = kc_add_node(g, kc_op_lookup(domain, np->op_type), np->op_type, np->name,
                           (int)np->n_input, ins, (int)n_out, outs);
    free(ins);
    g->nodes[node].domain = kc_strdup(g, domain);
    g->nodes[node].opset = opset;
    for (size_t i = 0; i < np->n_attribute; i++)
        if (np->attribute[i]) import_attr(im, node, np->attribute[i]);
}

/* ---- model ---- */

static void import_opsets(importer *im, const Onnx__ModelProto *m) {
    kc_graph *g = im->g;
    int has_default = 0;
    g->opsets = kc_alloc(g, sizeof(kc_opset) * (m->n_opset_import + 1));
    g->n_opsets = 0;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = m->opset_import[i];
        if (!op) continue;
        const char *domain = normalize_domain(op->domain);
        int found;
        opset_version(g, domain, &found);
        if (found) {
            kc_error(im->d, "opset_import lists domain '%s' twice", domain[0] ? domain : "ai.onnx");
            continue;
        }
        kc_opset *o = &g->opsets[g->n_opsets++];
        o->domain = kc_strdup(g, domain);
        o->version = op->has_version ? op->version : 1;
        has_default |= !domain[0];
    }
    /* IR versions before 3 had no opset_import: the default domain at opset 1 is implied. */
    if (!has_default && m->has_ir_version && m->ir_version < 3) {
        kc_opset *o = &g->opsets[g->n_opsets++];
        o->domain = kc_strdup(g, "");
        o->version = 1;
    }
}

static void import_initializers(importer *im, const Onnx__GraphProto *gp) {
    kc_graph *g = im->g;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t) continue;
        if (!t->name || !t->name[0]) {
            kc_error(im->d, "initializer %zu has no name", i);
            continue;
        }
        if (find_value(im, t->name) >= 0) {
            kc_error(im->d, "initializer '%s' is listed twice", t->name);
            continue;
        }
        kc_tensor tensor;
        const char *what = kc_sprintf(g, "initializer '%s'", t->name);
        int bad = kc_tensor_from_onnx_as(g, t, im->base_dir, what, &tensor, im->d) != 0;
        int v = add_value(im, t->name);
        /* A bad initializer still becomes a constant, so its readers are not also reported as
         * reading an undefined value. */
        if (bad) tensor.data = NULL;
        set_const(g, v, &tensor);
    }
    for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
        const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
        const char *name = sp && sp->values && sp->values->name ? sp->values->name : "?";
        kc_error(im->d, "sparse initializer '%s' is not supported", name);
        if (strcmp(name, "?") != 0 && find_value(im, name) < 0) {
            kc_tensor none;
            memset(&none, 0, sizeof none);
            set_const(g, add_value(im, name), &none);
        }
    }
}

static void import_inputs(importer *im, const Onnx__GraphProto *gp) {
    kc_graph *g = im->g;
    g->inputs = kc_alloc(g, sizeof(int) * (gp->n_input + 1));
    g->n_inputs = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi) continue;
        if (!vi->name || !vi->name[0]) {
            kc_error(im->d, "graph input %zu has no name", i);
            continue;
        }
        int v = find_value(im, vi->name);
        /* Older exporters list every initializer among the inputs: those are constants. */
        if (v >= 0 && (g->values[v].flags & KC_VALUE_CONST)) continue;
        if (v >= 0 && (g->values[v].flags & KC_VALUE_INPUT)) {
            kc_error_value(im->d, g, v, "listed twice among the graph inputs");
            continue;
        }
        if (v < 0) v = add_value(im, vi->name);
        g->values[v].flags |= KC_VALUE_INPUT;
        g->values[v].producer = -1;
        apply_type(im, v, vi->type, "graph input");
        g->inputs[g->n_inputs++] = v;
    }
}

static void import_outputs(importer *im, const Onnx__GraphProto *gp) {
    kc_graph *g = im->g;
    g->outputs = kc_alloc(g, sizeof(int) * (gp->n_output + 1));
    g->n_outputs = 0;
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi) continue;
        if (!vi->name || !vi->name[0]) {
            kc_error(im->d, "graph output %zu has no name", i);
            continue;
        }
        int v = value_for(im, vi->name);
        /* a runtime output is found by its name: two of one name could not be told apart */
        if (g->values[v].flags & KC_VALUE_OUTPUT) {
            kc_error_value(im->d, g, v, "listed twice among the graph outputs");
            continue;
        }
        g->values[v].flags |= KC_VALUE_OUTPUT;
        if (!(g->values[v].flags & (KC_VALUE_CONST | KC_VALUE_INPUT)))
            apply_type(im, v, vi->type, "graph output");
        g->outputs[g->n_outputs++] = v;
    }
}

/* value_info: declared types of intermediate values, used as hints by shape inference. Names
 * no node reads or writes are ignored rather than creating values. */
static void import_value_info(importer *im, const Onnx__GraphProto *gp) {
    kc_graph *g = im->g;
    for (size_t i = 0; i < gp->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = gp->value_info[i];
        if (!vi || !vi->name) continue;
        int v = find_value(im, vi->name);
        if (v < 0 || (g->values[v].flags & (KC_VALUE_CONST | KC_VALUE_INPUT))) continue;
        apply_type(im, v, vi->type, NULL);
    }
}

/* Every value read by a node or listed as a graph output must come from somewhere. */
static void check_defined(importer *im) {
    kc_graph *g = im->g;
    unsigned char *reported = calloc((size_t)g->n_values + 1, 1);
    for (int n = im->n_nodes_before; n < g->n_nodes; n++) {
        const kc_node *node = &g->nodes[n];
        for (int j = 0; j < node->n_inputs; j++) {
            int v = node->inputs[j];
            if (v < 0 || (reported && reported[v])) continue;
            const kc_value *val = &g->values[v];
            /* ONNX lists nodes in topological order: a value read before (or by) the node that
             * makes it is a cycle or a misordered graph. */
            int later = !(val->flags & (KC_VALUE_CONST | KC_VALUE_INPUT)) && val->producer >= n;
            if (is_defined(val) && !later) continue;
            if (later)
                kc_error_value(im->d, g, v,
                               "read by node '%s' (%s) before the node that defines it (nodes "
                               "must be in topological order)",
                               node->name[0] ? node->name : "<unnamed>", node->op_type);
            else
                kc_error_value(im->d, g, v,
                               "read by node '%s' (%s) but no node, graph input or "
                               "initializer defines it",
                               node->name[0] ? node->name : "<unnamed>", node->op_type);
            if (reported) reported[v] = 1;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i];
        if (v < 0 || is_defined(&g->values[v]) || (reported && reported[v])) continue;
        kc_error_value(im->d, g, v,
                       "graph output, but no node, graph input or initializer "
                       "defines it");
        if (reported) reported[v] = 1;
    }
    free(reported);
}

/* protobuf-c unpacks nested messages recursively without a depth limit, so a crafted file of
 * deeply nested subgraphs would overflow the stack. The nesting is measured first, walking the
 * wire format with the same descriptors; anything malformed is left to the decoder to report. */
#define MAX_MESSAGE_DEPTH 100

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int nested_too_deep(const ProtobufCMessageDescriptor *desc, const uint8_t *p,
                           const uint8_t *end, int depth) {
    if (depth > MAX_MESSAGE_DEPTH) return 1;
    while (p < end) {
        uint64_t key, v;
        if (read_varint(&p, end, &key) != 0) return 0;
        switch (key & 7) {
        case 0:
            if (read_varint(&p, end, &v) != 0) return 0;
            break;
        case 1:
            if (end - p < 8) return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4) return 0;
            p += 4;
            break;
        case 2: {
            if (read_varint(&p, end, &v) != 0 || v > (uint64_t)(end - p)) return 0;
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= UINT_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(key >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                nested_too_deep(f->descriptor, p, p + v, depth + 1))
                return 1;
            p += v;
            break;
        }
        default:
            return 0;
        }
    }
    return 0;
}

static const char *base_dir_of(kc_graph *g, const char *path) {
    if (!path) return NULL;
    const char *slash = strrchr(path, '/');
    if (!slash) return ".";
    if (slash == path) return "/";
    return kc_strndup(g, path, (size_t)(slash - path));
}

static void import_model(importer *im, const Onnx__ModelProto *m) {
    kc_graph *g = im->g;
    const Onnx__GraphProto *gp = m->graph;
    const char *pname = m->producer_name ? m->producer_name : "";
    const char *pver = m->producer_version ? m->producer_version : "";
    g->producer = kc_sprintf(g, "%s%s%s", pname, pname[0] && pver[0] ? " " : "", pver);
    g->name = kc_strdup(g, gp->name);
    import_opsets(im, m);
    import_initializers(im, gp);
    import_inputs(im, gp);
    int reported_no_opset = 0;
    for (size_t i = 0; i < gp->n_node; i++)
        if (gp->node[i]) import_node(im, gp->node[i], &reported_no_opset);
    import_outputs(im, gp);
    import_value_info(im, gp);
    check_defined(im);
}

int kc_import_onnx_bytes(kc_graph *g, const void *bytes, size_t size, const char *path, kc_diag *d,
                         kc_stats *st) {
    static const uint8_t empty[1];
    int errors_before = d->n_errors;
    const char *where = d->file ? "" : path ? path : "";
    const char *sep = where[0] ? ": " : "";
    const uint8_t *data = bytes && size ? (const uint8_t *)bytes : empty;
    if (nested_too_deep(&onnx__model_proto__descriptor, data, data + size, 0)) {
        kc_error(d, "%s%snot a valid ONNX model (messages nested more than %d deep)", where, sep,
                 MAX_MESSAGE_DEPTH);
        return d->n_errors - errors_before;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    if (!m) {
        kc_error(d, "%s%snot a valid ONNX model (protobuf decoding failed)", where, sep);
        return d->n_errors - errors_before;
    }
    if (!m->graph) {
        kc_error(d, "%s%snot a valid ONNX model (it has no graph)", where, sep);
        onnx__model_proto__free_unpacked(m, NULL);
        return d->n_errors - errors_before;
    }
    if (kc_inline_functions(m, d) != 0) {
        onnx__model_proto__free_unpacked(m, NULL);
        return d->n_errors - errors_before;
    }
    if (path) g->source_path = kc_strdup(g, path);
    importer im;
    memset(&im, 0, sizeof im);
    im.g = g;
    im.d = d;
    im.base_dir = base_dir_of(g, path);
    im.n_nodes_before = g->n_nodes;
    for (int v = 0; v < g->n_values; v++)
        map_insert(&im, v);
    import_model(&im, m);
    if (st) st->nodes_imported += (int)m->graph->n_node;
    free(im.map.slots);
    onnx__model_proto__free_unpacked(m, NULL);
    return d->n_errors - errors_before;
}

int kc_import_onnx_file(kc_graph *g, const char *path, kc_diag *d, kc_stats *st) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        kc_error(d, "cannot open '%s': %s", path, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        kc_error(d, "cannot read '%s': not a regular file", path);
        fclose(f);
        return 1;
    }
    size_t size = (size_t)sb.st_size;
    void *bytes = malloc(size ? size : 1);
    if (!bytes) {
        kc_error(d, "cannot read '%s': out of memory for %zu bytes", path, size);
        fclose(f);
        return 1;
    }
    if (fread(bytes, 1, size, f) != size) {
        kc_error(d, "cannot read '%s': %s", path, ferror(f) ? strerror(errno) : "file shrank");
        free(bytes);
        fclose(f);
        return 1;
    }
    fclose(f);
    int errors = kc_import_onnx_bytes(g, bytes, size, path, d, st);
    free(bytes);
    return errors;
}
