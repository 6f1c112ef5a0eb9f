/* Prints an Onnx__ModelProto in the ONNX text syntax, in a canonical layout that the parser
 * reads back into the same model (so parse -> print -> parse -> print gives the same text).
 * Floats are printed with the fewest digits that read back to the same bits. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

typedef struct printer {
    FILE *out;
    char *err;
    size_t err_size;
    int failed;
} printer;

static void unprintable(printer *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void unprintable(printer *pr, const char *fmt, ...) {
    if (pr->failed) return;
    pr->failed = 1;
    if (!pr->err || !pr->err_size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pr->err, pr->err_size, fmt, ap);
    va_end(ap);
}

static const char *const prim_names[] = {
    NULL,
    "float",
    "uint8",
    "int8",
    "uint16",
    "int16",
    "int32",
    "int64",
    "string",
    "bool",
    "float16",
    "double",
    "uint32",
    "uint64",
    "complex64",
    "complex128",
    "bfloat16",
    "float8e4m3fn",
    "float8e4m3fnuz",
    "float8e5m2",
    "float8e5m2fnuz",
    "uint4",
    "int4",
    "float4e2m1",
    "float8e8m0",
    "uint2",
    "int2",
};
#define N_PRIM ((int)(sizeof prim_names / sizeof prim_names[0]))

static const char *prim_name(printer *pr, int dtype) {
    if (dtype > 0 && dtype < N_PRIM) return prim_names[dtype];
    unprintable(pr, "element type %d has no name in the text syntax", dtype);
    return "float";
}

static int is_identifier(const char *s) {
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* Words that the parser reads as the start of a type where a name may also stand. */
static int is_type_word(const char *s) {
    static const char *const words[] = {"seq", "map", "optional", "sparse_tensor", "opaque"};
    for (int i = 1; i < N_PRIM; i++)
        if (!strcmp(s, prim_names[i])) return 1;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(s, words[i])) return 1;
    return 0;
}

static void print_string_n(printer *pr, const char *s, size_t n) {
    fputc('"', pr->out);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') fputc('\\', pr->out);
        fputc(s[i], pr->out);
    }
    fputc('"', pr->out);
}

static void print_string(printer *pr, const char *s) {
    print_string_n(pr, s ? s : "", s ? strlen(s) : 0);
}

/* quotable-id: bare when it is an identifier that cannot be mistaken for a type. */
static void print_name(printer *pr, const char *s) {
    if (is_identifier(s) && !is_type_word(s))
        fputs(s, pr->out);
    else
        print_string(pr, s);
}

/* Where the syntax allows only an identifier (attribute names, op types, domains). */
static void print_id(printer *pr, const char *s, const char *what) {
    if (!is_identifier(s)) unprintable(pr, "%s '%s' is not an identifier", what, s ? s : "");
    fputs(s && *s ? s : "_", pr->out);
}

static void indent(printer *pr, int depth) {
    for (int i = 0; i < depth; i++)
        fputs("   ", pr->out);
}

/* The shortest decimal form that reads back to the same float; always with a '.' or an
 * exponent so that it reads back as a float, not an integer. */
static void print_real(printer *pr, double v, int is_float) {
    if (isnan(v)) {
        fputs("nan", pr->out);
        return;
    }
    if (isinf(v)) {
        fputs(v < 0 ? "-inf" : "inf", pr->out);
        return;
    }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    fputs(buf, pr->out);
}

/* ---- types ---- */

static void print_shape(printer *pr, const Onnx__TensorShapeProto *shape) {
    if (!shape) {
        fputs("[]", pr->out);
        return;
    }
    if (!shape->n_dim) return;
    fputc('[', pr->out);
    for (size_t i = 0; i < shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        if (i) fputs(",", pr->out);
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            fprintf(pr->out, "%" PRId64, d->dim_value);
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                 d->dim_param)
            print_name(pr, d->dim_param);
        else
            fputc('?', pr->out);
    }
    fputc(']', pr->out);
}

static void print_type(printer *pr, const Onnx__TypeProto *tp) {
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        fputs(prim_name(pr, tp->tensor_type->elem_type), pr->out);
        print_shape(pr, tp->tensor_type->shape);
        break;
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
        fprintf(pr->out, "sparse_tensor(%s", prim_name(pr, tp->sparse_tensor_type->elem_type));
        print_shape(pr, tp->sparse_tensor_type->shape);
        fputc(')', pr->out);
        break;
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
        int seq = tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        const Onnx__TypeProto *elem =
            seq ? tp->sequence_type->elem_type : tp->optional_type->elem_type;
        fputs(seq ? "seq(" : "optional(", pr->out);
        if (elem)
            print_type(pr, elem);
        else
            unprintable(pr, "a %s type without an element type", seq ? "sequence" : "optional");
        fputc(')', pr->out);
        break;
    }
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
        fprintf(pr->out, "map(%s, ", prim_name(pr, tp->map_type->key_type));
        if (tp->map_type->value_type)
            print_type(pr, tp->map_type->value_type);
        else
            unprintable(pr, "a map type without a value type");
        fputc(')', pr->out);
        break;
    case ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE: {
        const Onnx__TypeProto__Opaque *o = tp->opaque_type;
        /* opaque(name) or opaque(domain, name) */
        fputs("opaque(", pr->out);
        if (o->domain && o->domain[0]) {
            fputs(o->domain, pr->out);
            fputs(", ", pr->out);
            print_id(pr, o->name, "opaque type name");
        } else if (o->name && o->name[0]) {
            fputs(o->name, pr->out);
        }
        fputc(')', pr->out);
        break;
    }
    default:
        unprintable(pr, "a type with no kind set");
        fputs("float[]", pr->out);
        break;
    }
}

static int has_tensor_type(const Onnx__TypeProto *tp) {
    return tp && tp->value_case != ONNX__TYPE_PROTO__VALUE__NOT_SET &&
           !(tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
             (!tp->tensor_type->has_elem_type || tp->tensor_type->elem_type == 0));
}

static void print_value_info(printer *pr, const Onnx__ValueInfoProto *vi) {
    if (has_tensor_type(vi->type)) {
        print_type(pr, vi->type);
        fputc(' ', pr->out);
    }
    print_name(pr, vi->name ? vi->name : "");
}

/* ---- tensors ---- */

static size_t element_size(int dtype) {
    switch (dtype) {
    case 1:
    case 6:
    case 12:
        return 4;
    case 2:
    case 3:
    case 9:
    case 17:
    case 18:
    case 19:
    case 20:
    case 24:
        return 1;
    case 4:
    case 5:
    case 10:
    case 16:
        return 2;
    case 7:
    case 11:
    case 13:
        return 8;
    case 14:
        return 4; /* each half of a complex64 */
    case 15:
        return 8;
    default:
        return 0;
    }
}

/* Values from raw_data (little-endian), printed as the typed field would hold them. */
static void print_raw(printer *pr, const Onnx__TensorProto *t) {
    size_t es = element_size(t->data_type);
    if (!es || t->raw_data.len % es) {
        unprintable(pr, "tensor '%s': raw data of element type %d has no text form",
                    t->name ? t->name : "", t->data_type);
        return;
    }
    const uint8_t *b = t->raw_data.data;
    for (size_t i = 0; i < t->raw_data.len / es; i++, b += es) {
        if (i) fputc(',', pr->out);
        uint64_t u = 0;
        for (size_t k = 0; k < es; k++)
            u |= (uint64_t)b[k] << (8 * k);
        switch (t->data_type) {
        case 1:
        case 14: {
            float f;
            uint32_t w = (uint32_t)u;
            memcpy(&f, &w, 4);
            print_real(pr, f, 1);
            break;
        }
        case 11:
        case 15: {
            double dv;
            memcpy(&dv, &u, 8);
            print_real(pr, dv, 0);
            break;
        }
        case 3:
            fprintf(pr->out, "%d", (int8_t)u);
            break;
        case 5:
            fprintf(pr->out, "%d", (int16_t)u);
            break;
        case 6:
            fprintf(pr->out, "%" PRId32, (int32_t)u);
            break;
        case 7:
            fprintf(pr->out, "%" PRId64, (int64_t)u);
            break;
        default:
            fprintf(pr->out, "%" PRIu64, u);
            break;
        }
    }
}

static void print_tensor_data(printer *pr, const Onnx__TensorProto *t) {
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        fputc('[', pr->out);
        for (size_t i = 0; i < t->n_external_data; i++) {
            if (i) fputs(", ", pr->out);
            print_string(pr, t->external_data[i]->key);
            fputs(": ", pr->out);
            print_string(pr, t->external_data[i]->value);
        }
        if (!t->n_external_data) unprintable(pr, "external tensor without a location");
        fputc(']', pr->out);
        return;
    }
    fputc('{', pr->out);
    if (t->has_raw_data && t->raw_data.len) {
        print_raw(pr, t);
    } else {
        switch (t->data_type) {
        case 1:
        case 14:
            for (size_t i = 0; i < t->n_float_data; i++) {
                if (i) fputc(',', pr->out);
                print_real(pr, t->float_data[i], 1);
            }
            break;
        case 11:
        case 15:
            for (size_t i = 0; i < t->n_double_data; i++) {
                if (i) fputc(',', pr->out);
                print_real(pr, t->double_data[i], 0);
            }
            break;
        case 7:
            for (size_t i = 0; i < t->n_int64_data; i++)
                fprintf(pr->out, "%s%" PRId64, i ? "," : "", t->int64_data[i]);
            break;
        case 12:
        case 13:
            for (size_t i = 0; i < t->n_uint64_data; i++)
                fprintf(pr->out, "%s%" PRIu64, i ? "," : "", t->uint64_data[i]);
            break;
        case 8:
            for (size_t i = 0; i < t->n_string_data; i++) {
                if (i) fputc(',', pr->out);
                print_string_n(pr, (const char *)t->string_data[i].data, t->string_data[i].len);
            }
            break;
        default:
            if (t->data_type <= 0 || t->data_type >= N_PRIM)
                unprintable(pr, "tensor '%s' has element type %d", t->name ? t->name : "",
                            t->data_type);
            for (size_t i = 0; i < t->n_int32_data; i++)
                fprintf(pr->out, "%s%" PRId32, i ? "," : "", t->int32_data[i]);
            break;
        }
    }
    fputc('}', pr->out);
}

static void print_tensor_type(printer *pr, const Onnx__TensorProto *t) {
    fputs(prim_name(pr, t->data_type), pr->out);
    if (t->n_dims) {
        fputc('[', pr->out);
        for (size_t i = 0; i < t->n_dims; i++)
            fprintf(pr->out, "%s%" PRId64, i ? "," : "", t->dims[i]);
        fputc(']', pr->out);
    }
}

/* tensor-const, as an attribute value: type [name] "=" data */
static void print_tensor_const(printer *pr, const Onnx__TensorProto *t) {
    print_tensor_type(pr, t);
    if (t->name && t->name[0]) {
        fputc(' ', pr->out);
        print_name(pr, t->name);
    }
    fputs(" = ", pr->out);
    print_tensor_data(pr, t);
}

/* ---- attributes, nodes, graphs ---- */

static void print_graph(printer *pr, const Onnx__GraphProto *g, int depth);

static const char *attr_type_name(int type) {
    static const char *const names[] = {
        "undefined",      "float",      "int",        "string",  "tensor", "graph",
        "floats",         "ints",       "strings",    "tensors", "graphs", "sparse_tensor",
        "sparse_tensors", "type_proto", "type_protos"};
    return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "undefined";
}

/* A function's attribute defaults may have quoted names; a node's attributes may not. */
static void print_attr(printer *pr, const Onnx__AttributeProto *a, int depth, int quotable) {
    if (quotable)
        print_name(pr, a->name ? a->name : "");
    else
        print_id(pr, a->name, "attribute name");
    int type = a->has_type ? (int)a->type : 0;
    if (a->ref_attr_name) {
        if (type) fprintf(pr->out, ": %s", attr_type_name(type));
        fputs(" = @", pr->out);
        print_name(pr, a->ref_attr_name);
        return;
    }
    size_t n = 0;
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        n = a->n_floats;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        n = a->n_ints;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        n = a->n_strings;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        n = a->n_tensors;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        n = a->n_graphs;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        n = a->n_type_protos;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        n = a->n_sparse_tensors;
        break;
    default:
        n = 1;
        break;
    }
    /* Only an empty list needs its type written out: every other value shows its kind. */
    if (n == 0) {
        fprintf(pr->out, ": %s = []", attr_type_name(type));
        return;
    }
    fputs(" = ", pr->out);
    switch (type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        print_real(pr, a->f, 1);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        fprintf(pr->out, "%" PRId64, a->i);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        print_string_n(pr, (const char *)a->s.data, a->s.len);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (a->t)
            print_tensor_const(pr, a->t);
        else
            unprintable(pr, "tensor attribute '%s' without a tensor", a->name);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH:
        if (a->g)
            print_graph(pr, a->g, depth);
        else
            unprintable(pr, "graph attribute '%s' without a graph", a->name);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO:
        if (a->tp)
            print_type(pr, a->tp);
        else
            unprintable(pr, "type attribute '%s' without a type", a->name);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR:
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        unprintable(pr, "sparse tensor attribute '%s' has no text form", a->name);
        fputs("[]", pr->out);
        return;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        unprintable(pr, "attribute '%s' has no type", a->name);
        fputs("[]", pr->out);
        return;
    default:
        break;
    }
    fputc('[', pr->out);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", pr->out);
        switch (type) {
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
            print_real(pr, a->floats[i], 1);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
            fprintf(pr->out, "%" PRId64, a->ints[i]);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
            print_string_n(pr, (const char *)a->strings[i].data, a->strings[i].len);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
            print_tensor_const(pr, a->tensors[i]);
            break;
        case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
            print_graph(pr, a->graphs[i], depth);
            break;
        default:
            print_type(pr, a->type_protos[i]);
            break;
        }
    }
    fputc(']', pr->out);
}

static void print_attrs(printer *pr, Onnx__AttributeProto *const *attrs, size_t n, int depth) {
    fputc('<', pr->out);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", pr->out);
        print_attr(pr, attrs[i], depth, 0);
    }
    fputc('>', pr->out);
}

/* Names of a node's inputs or outputs; an absent optional value is written "", which (unlike
 * an empty slot) also survives in the last position. */
static void print_ids(printer *pr, char *const *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", pr->out);
        if (ids[i] && ids[i][0])
            print_name(pr, ids[i]);
        else
            fputs("\"\"", pr->out);
    }
}

static void print_node(printer *pr, const Onnx__NodeProto *n, int depth) {
    indent(pr, depth);
    if (n->name) { /* "[]" keeps an empty name, which is not the same as none */
        fputc('[', pr->out);
        if (n->name[0]) print_name(pr, n->name);
        fputs("] ", pr->out);
    }
    print_ids(pr, n->output, n->n_output);
    fputs(n->n_output ? " = " : "= ", pr->out);
    if (n->domain && n->domain[0]) {
        /* qualified-id: every part of the domain must be an identifier */
        const char *s = n->domain;
        while (*s) {
            const char *dot = strchr(s, '.');
            size_t len = dot ? (size_t)(dot - s) : strlen(s);
            char part[256];
            snprintf(part, sizeof part, "%.*s", (int)len, s);
            print_id(pr, part, "domain part");
            fputc('.', pr->out);
            s += len;
            if (*s == '.') s++;
        }
    }
    print_id(pr, n->op_type, "operator name");
    if (n->overload && n->overload[0]) {
        fputc(':', pr->out);
        print_id(pr, n->overload, "overload");
    }
    fputc(' ', pr->out);
    if (n->n_attribute) {
        print_attrs(pr, n->attribute, n->n_attribute, depth + 1);
        fputc(' ', pr->out);
    }
    fputc('(', pr->out);
    print_ids(pr, n->input, n->n_input);
    fputs(")\n", pr->out);
}

static void print_nodes(printer *pr, Onnx__NodeProto *const *nodes, size_t n, int depth) {
    fputs("{\n", pr->out);
    for (size_t i = 0; i < n; i++)
        print_node(pr, nodes[i], depth + 1);
    indent(pr, depth);
    fputc('}', pr->out);
}

static void print_graph(printer *pr, const Onnx__GraphProto *g, int depth) {
    print_name(pr, g->name ? g->name : "");
    fputs(" (", pr->out);
    for (size_t i = 0; i < g->n_input; i++) {
        if (i) fputs(", ", pr->out);
        print_value_info(pr, g->input[i]);
    }
    fputs(") => (", pr->out);
    for (size_t i = 0; i < g->n_output; i++) {
        if (i) fputs(", ", pr->out);
        print_value_info(pr, g->output[i]);
    }
    fputc(')', pr->out);
    if (g->n_initializer || g->n_value_info) {
        fputc('\n', pr->out);
        indent(pr, depth);
        fputc('<', pr->out);
        for (size_t i = 0; i < g->n_initializer; i++) {
            const Onnx__TensorProto *t = g->initializer[i];
            if (i) fputs(", ", pr->out);
            print_tensor_type(pr, t);
            fputc(' ', pr->out);
            print_name(pr, t->name ? t->name : "");
            fputs(" = ", pr->out);
            print_tensor_data(pr, t);
        }
        for (size_t i = 0; i < g->n_value_info; i++) {
            if (i || g->n_initializer) fputs(", ", pr->out);
            print_value_info(pr, g->value_info[i]);
        }
        fputc('>', pr->out);
    }
    if (g->n_sparse_initializer) unprintable(pr, "sparse initializers have no text form");
    fputc('\n', pr->out);
    indent(pr, depth);
    print_nodes(pr, g->node, g->n_node, depth);
}

static void print_opsets(printer *pr, Onnx__OperatorSetIdProto *const *o, size_t n) {
    fputc('[', pr->out);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", pr->out);
        print_string(pr, o[i]->domain);
        fprintf(pr->out, ": %" PRId64, o[i]->version);
    }
    fputc(']', pr->out);
}

/* A header "<key: value, ...>" printed one key per line; sep tracks the commas. */
static void key(printer *pr, int *n, const char *name) {
    fprintf(pr->out, "%s   %s: ", *n ? ",\n" : "<\n", name);
    (*n)++;
}

/* Prints a function's input or output ids. The parser appends the types written there to
 * value_info in order (typed inputs, then typed outputs, then the "<...>" list), so an id is
 * printed with a type exactly when the next value_info entry (*next) is that id with a
 * printable type: the entries keep their order through printing and parsing again. */
static void print_function_io(printer *pr, const Onnx__FunctionProto *f, char *const *ids, size_t n,
                              size_t *next) {
    fputc('(', pr->out);
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", pr->out);
        const char *id = ids[i] ? ids[i] : "";
        const Onnx__ValueInfoProto *vi = *next < f->n_value_info ? f->value_info[*next] : NULL;
        if (vi && vi->name && !strcmp(vi->name, id) && has_tensor_type(vi->type)) {
            print_type(pr, vi->type);
            fputc(' ', pr->out);
            (*next)++;
        }
        print_name(pr, id);
    }
    fputc(')', pr->out);
}

static void print_function(printer *pr, const Onnx__FunctionProto *f) {
    int n = 0;
    fputc('\n', pr->out);
    if (f->domain) {
        key(pr, &n, "domain");
        print_string(pr, f->domain);
    }
    if (f->n_opset_import) {
        key(pr, &n, "opset_import");
        print_opsets(pr, f->opset_import, f->n_opset_import);
    }
    if (f->overload) {
        key(pr, &n, "overload");
        print_string(pr, f->overload);
    }
    if (f->doc_string) {
        key(pr, &n, "doc_string");
        print_string(pr, f->doc_string);
    }
    if (n) fputs("\n>\n", pr->out);
    print_name(pr, f->name ? f->name : "");
    if (f->n_attribute || f->n_attribute_proto) {
        fputs(" <", pr->out);
        for (size_t i = 0; i < f->n_attribute; i++) {
            if (i) fputs(", ", pr->out);
            print_name(pr, f->attribute[i]);
        }
        for (size_t i = 0; i < f->n_attribute_proto; i++) {
            if (i || f->n_attribute) fputs(", ", pr->out);
            print_attr(pr, f->attribute_proto[i], 1, 1);
        }
        fputc('>', pr->out);
    }
    fputc(' ', pr->out);
    size_t next = 0;
    print_function_io(pr, f, f->input, f->n_input, &next);
    fputs(" => ", pr->out);
    print_function_io(pr, f, f->output, f->n_output, &next);
    for (size_t i = next; i < f->n_value_info; i++) {
        fputs(i == next ? "\n<" : ", ", pr->out);
        print_value_info(pr, f->value_info[i]);
    }
    if (next < f->n_value_info) fputc('>', pr->out);
    fputc('\n', pr->out);
    print_nodes(pr, f->node, f->n_node, 0);
    fputc('\n', pr->out);
}

int kc_text_print_model(const Onnx__ModelProto *m, FILE *out, char *err, size_t err_size) {
    printer pr = {out, err, err_size, 0};
    if (err && err_size) err[0] = 0;
    int n = 0;
    if (m->has_ir_version) {
        key(&pr, &n, "ir_version");
        fprintf(out, "%" PRId64, m->ir_version);
    }
    if (m->n_opset_import) {
        key(&pr, &n, "opset_import");
        print_opsets(&pr, m->opset_import, m->n_opset_import);
    }
    if (m->producer_name) {
        key(&pr, &n, "producer_name");
        print_string(&pr, m->producer_name);
    }
    if (m->producer_version) {
        key(&pr, &n, "producer_version");
        print_string(&pr, m->producer_version);
    }
    if (m->domain) {
        key(&pr, &n, "domain");
        print_string(&pr, m->domain);
    }
    if (m->has_model_version) {
        key(&pr, &n, "model_version");
        fprintf(out, "%" PRId64, m->model_version);
    }
    if (m->doc_string) {
        key(&pr, &n, "doc_string");
        print_string(&pr, m->doc_string);
    }
    if (m->n_metadata_props) {
        key(&pr, &n, "metadata_props");
        fputc('[', out);
        for (size_t i = 0; i < m->n_metadata_props; i++) {
            if (i) fputs(", ", out);
            print_string(&pr, m->metadata_props[i]->key);
            fputs(": ", out);
            print_string(&pr, m->metadata_props[i]->value);
        }
        fputc(']', out);
    }
    if (n) fputs("\n>\n", out);
    if (m->graph)
        print_graph(&pr, m->graph, 0);
    else
        unprintable(&pr, "the model has no graph");
    fputc('\n', out);
    for (size_t i = 0; i < m->n_functions; i++)
        print_function(&pr, m->functions[i]);
    return pr.failed ? -1 : 0;
}
