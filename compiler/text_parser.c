/* Recursive-descent parser of the ONNX text syntax into an Onnx__ModelProto, building the same
 * message as onnx.parser.parse_model (docs/text-syntax.md lists where it deliberately differs).
 * Every part is malloc'ed and attached to its parent as soon as it exists, so that on any error
 * the whole tree is freed by onnx__model_proto__free_unpacked. The grammar rule a function
 * parses is written above it. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "text_lexer.h"

/* Nested graphs and types recurse; a crafted text must not exhaust the stack. */
#define MAX_NESTING 64

typedef struct parser {
    kc_text_lexer lx;
    kc_text_token tok; /* the current (lookahead) token */
    int depth;
} parser;

typedef Onnx__AttributeProto__AttributeType attr_type;

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((x) != 0) return -1;                                                                   \
    } while (0)

/* ---- tokens ---- */

static void advance(parser *p) {
    if (p->tok.kind != KC_TOK_ERROR) p->tok = kc_text_lex(&p->lx);
}

static int fail(parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reports "expected <what>, found <token>" at the current token. */
static int fail(parser *p, const char *fmt, ...) {
    if (p->tok.kind == KC_TOK_ERROR || p->lx.failed) return -1;
    char what[256], found[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kc_text_describe(&p->tok, found, sizeof found);
    kc_text_error_at(&p->lx, p->tok.line, p->tok.col, "expected %s, found %s", what, found);
    return -1;
}

static int is_punct(const parser *p, char c) {
    return p->tok.kind == KC_TOK_PUNCT && p->tok.punct == c;
}

static int accept(parser *p, char c) {
    if (!is_punct(p, c)) return 0;
    advance(p);
    return 1;
}

static int expect(parser *p, char c, const char *context) {
    if (accept(p, c)) return 0;
    return fail(p, "'%c' %s", c, context);
}

static int is_id(const parser *p, const char *word) {
    return p->tok.kind == KC_TOK_ID && strlen(word) == p->tok.len &&
           memcmp(p->tok.start, word, p->tok.len) == 0;
}

static int out_of_memory(parser *p) {
    kc_text_error_at(&p->lx, p->tok.line, p->tok.col, "out of memory");
    return -1;
}

static char *token_text(const kc_text_token *t) {
    char *s = malloc(t->len + 1);
    if (s) {
        memcpy(s, t->start, t->len);
        s[t->len] = 0;
    }
    return s;
}

/* Takes the current identifier (if any) as a new string. */
static int take_id(parser *p, char **out, const char *what) {
    if (p->tok.kind != KC_TOK_ID) return fail(p, "%s", what);
    *out = token_text(&p->tok);
    if (!*out) return out_of_memory(p);
    advance(p);
    return 0;
}

/* qualified-id = id {"." id}: the identifiers joined by dots, as a new string. Built from the
 * tokens, so spaces and comments between them are not part of it. */
static int take_qualified_id(parser *p, char **out, const char *what) {
    TRY(take_id(p, out, what));
    while (accept(p, '.')) {
        if (p->tok.kind != KC_TOK_ID) {
            free(*out);
            *out = NULL;
            return fail(p, "an identifier after '.'");
        }
        size_t n = strlen(*out);
        char *s = realloc(*out, n + p->tok.len + 2);
        if (!s) return out_of_memory(p);
        s[n] = '.';
        memcpy(s + n + 1, p->tok.start, p->tok.len);
        s[n + 1 + p->tok.len] = 0;
        *out = s;
        advance(p);
    }
    return 0;
}

static int take_string(parser *p, char **out, size_t *len, const char *what) {
    if (p->tok.kind != KC_TOK_STRING) return fail(p, "%s", what);
    size_t n;
    *out = kc_text_unquote(&p->tok, &n);
    if (!*out) return out_of_memory(p);
    if (len) *len = n;
    advance(p);
    return 0;
}

/* quotable-id = id | str */
static int take_quotable(parser *p, char **out, const char *what) {
    if (p->tok.kind == KC_TOK_STRING) return take_string(p, out, NULL, what);
    return take_id(p, out, what);
}

/* Appends a zeroed element to a repeated field and returns a pointer to it. */
static void *grow(void **arr, size_t *n, size_t elem) {
    if (*n >= SIZE_MAX / elem / 2) return NULL;
    /* Powers of two: the array is reallocated only when n crosses one. */
    size_t cap = 1;
    while (cap < *n + 1)
        cap *= 2;
    if ((*n & (*n - 1)) == 0 || *n == 0) {
        void *a = realloc(*arr, cap * elem);
        if (!a) return NULL;
        *arr = a;
    }
    void *slot = (char *)*arr + *n * elem;
    memset(slot, 0, elem);
    (*n)++;
    return slot;
}

#define PUSH_SLOT(p, arr, n) ((__typeof__(arr))grow((void **)&(arr), &(n), sizeof *(arr)))

/* Allocates an initialized message of type T, appends it to arr, and yields it (or NULL). */
#define NEW_MSG(T, INIT, ptr)                                                                      \
    do {                                                                                           \
        (ptr) = malloc(sizeof(T));                                                                 \
        if (ptr) INIT(ptr);                                                                        \
    } while (0)

#define APPEND_MSG(p, T, INIT, arr, n, out)                                                        \
    do {                                                                                           \
        T **slot_ = PUSH_SLOT(p, arr, n);                                                          \
        if (!slot_) return out_of_memory(p);                                                       \
        NEW_MSG(T, INIT, *slot_);                                                                  \
        if (!*slot_) {                                                                             \
            (n)--;                                                                                 \
            return out_of_memory(p);                                                               \
        }                                                                                          \
        (out) = *slot_;                                                                            \
    } while (0)

static int append_string(parser *p, char ***arr, size_t *n, char *s) {
    char **slot = PUSH_SLOT(p, *arr, *n);
    if (!slot) {
        free(s);
        return out_of_memory(p);
    }
    *slot = s;
    return 0;
}

/* ---- numbers ---- */

static int is_float_word(const kc_text_token *t) {
    static const char *const words[] = {"inf", "infinity", "nan"};
    if (t->kind != KC_TOK_ID) return 0;
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        size_t n = strlen(words[w]);
        if (t->len != n) continue;
        size_t i = 0;
        while (i < n && (t->start[i] | 0x20) == words[w][i])
            i++;
        if (i == n) return 1;
    }
    return 0;
}

static int is_number(const parser *p) {
    return p->tok.kind == KC_TOK_INT || p->tok.kind == KC_TOK_FLOAT || is_float_word(&p->tok);
}

/* The token's text as a C string for strto*: tokens are short, numbers shorter than 64 bytes
 * in any sane text; longer ones are still read whole. */
static char *number_text(parser *p) {
    char *s = token_text(&p->tok);
    if (!s) out_of_memory(p);
    return s;
}

static int parse_int64(parser *p, int64_t *out, const char *what) {
    if (p->tok.kind != KC_TOK_INT) return fail(p, "%s (an integer)", what);
    char *s = number_text(p);
    if (!s) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    free(s);
    if (errno == ERANGE) {
        kc_text_error_at(&p->lx, p->tok.line, p->tok.col, "integer out of the 64-bit range");
        return -1;
    }
    *out = v;
    advance(p);
    return 0;
}

/* uint64 data: like the reference parser (std::stoull), a leading '-' wraps around. */
static int parse_uint64(parser *p, uint64_t *out, const char *what) {
    if (p->tok.kind != KC_TOK_INT) return fail(p, "%s (an integer)", what);
    char *s = number_text(p);
    if (!s) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    free(s);
    if (errno == ERANGE) {
        kc_text_error_at(&p->lx, p->tok.line, p->tok.col, "integer out of the 64-bit range");
        return -1;
    }
    *out = v;
    advance(p);
    return 0;
}

/* A float or double value: an int or float literal, or inf/infinity/nan in any case. */
static int parse_real(parser *p, double *out_d, float *out_f, const char *what) {
    if (!is_number(p)) return fail(p, "%s (a number)", what);
    char *s = number_text(p);
    if (!s) return -1;
    if (out_d) *out_d = strtod(s, NULL);
    if (out_f) *out_f = strtof(s, NULL);
    free(s);
    advance(p);
    return 0;
}

/* ---- types ---- */

static const struct {
    const char *name;
    int dtype;
} prim_types[] = {
    {"float", 1},         {"uint8", 2},           {"int8", 3},        {"uint16", 4},
    {"int16", 5},         {"int32", 6},           {"int64", 7},       {"string", 8},
    {"bool", 9},          {"float16", 10},        {"double", 11},     {"uint32", 12},
    {"uint64", 13},       {"complex64", 14},      {"complex128", 15}, {"bfloat16", 16},
    {"float8e4m3fn", 17}, {"float8e4m3fnuz", 18}, {"float8e5m2", 19}, {"float8e5m2fnuz", 20},
    {"uint4", 21},        {"int4", 22},           {"float4e2m1", 23}, {"float8e8m0", 24},
    {"uint2", 25},        {"int2", 26},
};

static int prim_type_of(const kc_text_token *t) {
    if (t->kind != KC_TOK_ID) return 0;
    for (size_t i = 0; i < sizeof prim_types / sizeof prim_types[0]; i++)
        if (strlen(prim_types[i].name) == t->len && !memcmp(prim_types[i].name, t->start, t->len))
            return prim_types[i].dtype;
    return 0;
}

static int next_is_type(const parser *p) {
    return prim_type_of(&p->tok) || is_id(p, "seq") || is_id(p, "map") || is_id(p, "optional") ||
           is_id(p, "sparse_tensor") || is_id(p, "opaque");
}

static int enter(parser *p) {
    if (++p->depth > MAX_NESTING) {
        kc_text_error_at(&p->lx, p->tok.line, p->tok.col,
                         "graphs or types nested more than %d deep", MAX_NESTING);
        return -1;
    }
    return 0;
}

/* dim = "?" | id | str | int */
static int parse_dim(parser *p, Onnx__TensorShapeProto *shape) {
    Onnx__TensorShapeProto__Dimension *dim;
    APPEND_MSG(p, Onnx__TensorShapeProto__Dimension, onnx__tensor_shape_proto__dimension__init,
               shape->dim, shape->n_dim, dim);
    if (accept(p, '?')) return 0;
    if (p->tok.kind == KC_TOK_ID || p->tok.kind == KC_TOK_STRING) {
        TRY(take_quotable(p, &dim->dim_param, "a dimension"));
        dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
        return 0;
    }
    if (p->tok.kind != KC_TOK_INT) return fail(p, "a dimension (a number, a name or '?')");
    TRY(parse_int64(p, &dim->dim_value, "a dimension"));
    dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    return 0;
}

/* shape = "[" [dim {"," dim}] "]"; none at all means a scalar, "[]" an unknown rank. */
static int parse_shape(parser *p, Onnx__TensorShapeProto **out) {
    if (!accept(p, '[')) {
        NEW_MSG(Onnx__TensorShapeProto, onnx__tensor_shape_proto__init, *out);
        return *out ? 0 : out_of_memory(p);
    }
    if (accept(p, ']')) return 0;
    NEW_MSG(Onnx__TensorShapeProto, onnx__tensor_shape_proto__init, *out);
    if (!*out) return out_of_memory(p);
    do {
        TRY(parse_dim(p, *out));
    } while (accept(p, ','));
    return expect(p, ']', "after the dimensions");
}

static int parse_type(parser *p, Onnx__TypeProto *tp);

/* Allocates a TypeProto into *slot (so that it is owned before parsing) and parses it. */
static int parse_type_into(parser *p, Onnx__TypeProto **slot) {
    NEW_MSG(Onnx__TypeProto, onnx__type_proto__init, *slot);
    if (!*slot) return out_of_memory(p);
    return parse_type(p, *slot);
}

/* type = prim-type [shape] | "seq" "(" type ")" | "map" "(" prim-type "," type ")"
 *      | "optional" "(" type ")" | "sparse_tensor" "(" prim-type [shape] ")"
 *      | "opaque" "(" [[qualified-id ","] id] ")" */
static int parse_type(parser *p, Onnx__TypeProto *tp) {
    TRY(enter(p));
    int dtype = prim_type_of(&p->tok);
    if (dtype) {
        advance(p);
        NEW_MSG(Onnx__TypeProto__Tensor, onnx__type_proto__tensor__init, tp->tensor_type);
        if (!tp->tensor_type) return out_of_memory(p);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        tp->tensor_type->has_elem_type = 1;
        tp->tensor_type->elem_type = dtype;
        TRY(parse_shape(p, &tp->tensor_type->shape));
    } else if (is_id(p, "seq") || is_id(p, "optional")) {
        int seq = is_id(p, "seq");
        advance(p);
        TRY(expect(p, '(', seq ? "after 'seq'" : "after 'optional'"));
        if (seq) {
            NEW_MSG(Onnx__TypeProto__Sequence, onnx__type_proto__sequence__init, tp->sequence_type);
            if (!tp->sequence_type) return out_of_memory(p);
            tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            TRY(parse_type_into(p, &tp->sequence_type->elem_type));
        } else {
            NEW_MSG(Onnx__TypeProto__Optional, onnx__type_proto__optional__init, tp->optional_type);
            if (!tp->optional_type) return out_of_memory(p);
            tp->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            TRY(parse_type_into(p, &tp->optional_type->elem_type));
        }
        TRY(expect(p, ')', "after the element type"));
    } else if (is_id(p, "map")) {
        advance(p);
        TRY(expect(p, '(', "after 'map'"));
        NEW_MSG(Onnx__TypeProto__Map, onnx__type_proto__map__init, tp->map_type);
        if (!tp->map_type) return out_of_memory(p);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
        int key = prim_type_of(&p->tok);
        if (!key) return fail(p, "a primitive key type (int64, string, ...)");
        advance(p);
        tp->map_type->has_key_type = 1;
        tp->map_type->key_type = key;
        TRY(expect(p, ',', "after the key type of a map"));
        TRY(parse_type_into(p, &tp->map_type->value_type));
        TRY(expect(p, ')', "after the value type of a map"));
    } else if (is_id(p, "sparse_tensor")) {
        advance(p);
        TRY(expect(p, '(', "after 'sparse_tensor'"));
        NEW_MSG(Onnx__TypeProto__SparseTensor, onnx__type_proto__sparse_tensor__init,
                tp->sparse_tensor_type);
        if (!tp->sparse_tensor_type) return out_of_memory(p);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE;
        int elem = prim_type_of(&p->tok);
        if (!elem) return fail(p, "the element type of a sparse tensor (float, int64, ...)");
        advance(p);
        tp->sparse_tensor_type->has_elem_type = 1;
        tp->sparse_tensor_type->elem_type = elem;
        TRY(parse_shape(p, &tp->sparse_tensor_type->shape));
        TRY(expect(p, ')', "after the sparse tensor type"));
    } else if (is_id(p, "opaque")) {
        advance(p);
        TRY(expect(p, '(', "after 'opaque'"));
        NEW_MSG(Onnx__TypeProto__Opaque, onnx__type_proto__opaque__init, tp->opaque_type);
        if (!tp->opaque_type) return out_of_memory(p);
        tp->value_case = ONNX__TYPE_PROTO__VALUE_OPAQUE_TYPE;
        if (p->tok.kind == KC_TOK_ID) {
            char *q = NULL;
            TRY(take_qualified_id(p, &q, "the name of an opaque type"));
            /* One name is the type's name; with two, the first is its domain. */
            if (accept(p, ',')) {
                tp->opaque_type->domain = q;
                TRY(take_id(p, &tp->opaque_type->name, "the name of an opaque type"));
            } else {
                tp->opaque_type->name = q;
            }
        }
        TRY(expect(p, ')', "after the opaque type"));
    } else {
        p->depth--;
        return fail(p, "a type (float[...], seq(...), map(...), optional(...), ...)");
    }
    p->depth--;
    return 0;
}

/* ---- tensors ---- */

/* One value of tensor-data, stored in the field that the reference parser uses for the type. */
static int parse_tensor_value(parser *p, Onnx__TensorProto *t) {
    switch (t->data_type) {
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 9:
    case 10:
    case 16:
    case 17:
    case 18:
    case 19:
    case 20:
    case 21:
    case 22:
    case 23:
    case 24:
    case 25:
    case 26: {
        int64_t v;
        int line = p->tok.line, col = p->tok.col;
        TRY(parse_int64(p, &v, "a tensor element"));
        if (v < INT32_MIN || v > INT32_MAX) {
            kc_text_error_at(&p->lx, line, col, "tensor element %lld does not fit in 32 bits",
                             (long long)v);
            return -1;
        }
        int32_t *slot = PUSH_SLOT(p, t->int32_data, t->n_int32_data);
        if (!slot) return out_of_memory(p);
        *slot = (int32_t)v;
        return 0;
    }
    case 7: {
        int64_t *slot = PUSH_SLOT(p, t->int64_data, t->n_int64_data);
        if (!slot) return out_of_memory(p);
        return parse_int64(p, slot, "a tensor element");
    }
    case 12:
    case 13: {
        uint64_t *slot = PUSH_SLOT(p, t->uint64_data, t->n_uint64_data);
        if (!slot) return out_of_memory(p);
        return parse_uint64(p, slot, "a tensor element");
    }
    case 1:
    case 14: {
        float *slot = PUSH_SLOT(p, t->float_data, t->n_float_data);
        if (!slot) return out_of_memory(p);
        return parse_real(p, NULL, slot, "a tensor element");
    }
    case 11:
    case 15: {
        double *slot = PUSH_SLOT(p, t->double_data, t->n_double_data);
        if (!slot) return out_of_memory(p);
        return parse_real(p, slot, NULL, "a tensor element");
    }
    case 8: {
        ProtobufCBinaryData *slot = PUSH_SLOT(p, t->string_data, t->n_string_data);
        if (!slot) return out_of_memory(p);
        char *s = NULL;
        size_t n = 0;
        TRY(take_string(p, &s, &n, "a string tensor element"));
        slot->data = (uint8_t *)s;
        slot->len = n;
        return 0;
    }
    default:
        kc_text_error_at(&p->lx, p->tok.line, p->tok.col,
                         "tensors of element type %d cannot be given values", (int)t->data_type);
        return -1;
    }
}

/* key-values = str ":" str {"," str ":" str} */
static int parse_string_pairs(parser *p, Onnx__StringStringEntryProto ***arr, size_t *n) {
    do {
        Onnx__StringStringEntryProto *e;
        APPEND_MSG(p, Onnx__StringStringEntryProto, onnx__string_string_entry_proto__init, *arr, *n,
                   e);
        TRY(take_string(p, &e->key, NULL, "a key string"));
        TRY(expect(p, ':', "between a key and its value"));
        TRY(take_string(p, &e->value, NULL, "a value string"));
    } while (accept(p, ','));
    return 0;
}

/* tensor-data = "{" [prim-const {"," prim-const}] "}" | "[" str ":" str {"," str ":" str} "]"
 * The type must be a tensor type with numeric dimensions. */
static int parse_tensor_data(parser *p, Onnx__TensorProto *t, const Onnx__TypeProto *tp, int line,
                             int col) {
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        kc_text_error_at(&p->lx, line, col, "a tensor value needs a tensor type, not this type");
        return -1;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    t->has_data_type = 1;
    t->data_type = tt->elem_type;
    if (!tt->shape) {
        kc_text_error_at(&p->lx, line, col,
                         "a tensor value needs its dimensions: '[]' (unknown rank) has none");
        return -1;
    }
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        if (dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            kc_text_error_at(&p->lx, line, col,
                             "a tensor value needs numeric dimensions (dimension %zu is not)",
                             i + 1);
            return -1;
        }
        int64_t *slot = PUSH_SLOT(p, t->dims, t->n_dims);
        if (!slot) return out_of_memory(p);
        *slot = dim->dim_value;
    }
    if (accept(p, '{')) {
        if (accept(p, '}')) return 0;
        do {
            TRY(parse_tensor_value(p, t));
        } while (accept(p, ','));
        return expect(p, '}', "after the tensor's values");
    }
    if (accept(p, '[')) {
        t->has_data_location = 1;
        t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        TRY(parse_string_pairs(p, &t->external_data, &t->n_external_data));
        return expect(p, ']', "after the external data keys");
    }
    return fail(p, "tensor data: '{' values '}' or '[' external data ']'");
}

/* ---- value infos ---- */

/* value-info = [type] quotable-id */
static int parse_value_info(parser *p, Onnx__ValueInfoProto *vi) {
    if (next_is_type(p)) TRY(parse_type_into(p, &vi->type));
    return take_quotable(p, &vi->name, "a value name");
}

/* A value-info followed by "=" tensor-data becomes an initializer of that type and name. */
static int parse_initializer(parser *p, Onnx__GraphProto *g, const Onnx__ValueInfoProto *vi,
                             int line, int col) {
    Onnx__TensorProto *t;
    APPEND_MSG(p, Onnx__TensorProto, onnx__tensor_proto__init, g->initializer, g->n_initializer, t);
    t->name = strdup(vi->name);
    if (!t->name) return out_of_memory(p);
    if (!vi->type) {
        kc_text_error_at(&p->lx, line, col, "an initializer needs a type, e.g. float[2] %s = {...}",
                         vi->name);
        return -1;
    }
    return parse_tensor_data(p, t, vi->type, line, col);
}

/* io-init = value-info ["=" tensor-data]; the list is "(" [io-init {"," io-init}] ")" */
static int parse_graph_inputs(parser *p, Onnx__GraphProto *g) {
    TRY(expect(p, '(', "before the graph's inputs"));
    if (accept(p, ')')) return 0;
    do {
        Onnx__ValueInfoProto *vi;
        int line = p->tok.line, col = p->tok.col;
        APPEND_MSG(p, Onnx__ValueInfoProto, onnx__value_info_proto__init, g->input, g->n_input, vi);
        TRY(parse_value_info(p, vi));
        if (accept(p, '=')) TRY(parse_initializer(p, g, vi, line, col));
    } while (accept(p, ','));
    return expect(p, ')', "after the graph's inputs");
}

/* "(" [value-info {"," value-info}] ")" */
static int parse_value_info_list(parser *p, Onnx__ValueInfoProto ***arr, size_t *n, char open,
                                 char close, const char *what) {
    char before[64], after[64];
    snprintf(before, sizeof before, "before %s", what);
    snprintf(after, sizeof after, "after %s", what);
    TRY(expect(p, open, before));
    if (accept(p, close)) return 0;
    do {
        Onnx__ValueInfoProto *vi;
        APPEND_MSG(p, Onnx__ValueInfoProto, onnx__value_info_proto__init, *arr, *n, vi);
        TRY(parse_value_info(p, vi));
    } while (accept(p, ','));
    return expect(p, close, after);
}

/* "<" [io-init {"," io-init}] ">": initializers (with "=") and value_info (without). */
static int parse_graph_value_infos(parser *p, Onnx__GraphProto *g) {
    if (!accept(p, '<')) return 0;
    if (accept(p, '>')) return 0;
    do {
        Onnx__ValueInfoProto *vi;
        int line = p->tok.line, col = p->tok.col;
        APPEND_MSG(p, Onnx__ValueInfoProto, onnx__value_info_proto__init, g->value_info,
                   g->n_value_info, vi);
        TRY(parse_value_info(p, vi));
        if (accept(p, '=')) {
            /* An initializer, not a value_info: move it over. */
            g->n_value_info--;
            int r = parse_initializer(p, g, vi, line, col);
            onnx__value_info_proto__free_unpacked(vi, NULL);
            TRY(r);
        }
    } while (accept(p, ','));
    return expect(p, '>', "after the initializers and value infos");
}

/* ---- attributes ---- */

static const struct {
    const char *name;
    attr_type type;
} attr_types[] = {
    {"float", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT},
    {"int", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT},
    {"string", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING},
    {"tensor", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR},
    {"graph", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH},
    {"sparse_tensor", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR},
    {"type_proto", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO},
    {"floats", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS},
    {"ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS},
    {"strings", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS},
    {"tensors", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS},
    {"graphs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS},
    {"sparse_tensors", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS},
    {"type_protos", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS},
};

static const char *attr_type_name(attr_type t) {
    for (size_t i = 0; i < sizeof attr_types / sizeof attr_types[0]; i++)
        if (attr_types[i].type == t) return attr_types[i].name;
    return "undefined";
}

/* The element type of a list type; single types map to themselves. */
static attr_type element_type(attr_type t) {
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS:
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
    default:
        return t;
    }
}

static attr_type list_type(attr_type t) {
    for (size_t i = 0; i < sizeof attr_types / sizeof attr_types[0]; i++)
        if (attr_types[i].type != t && element_type(attr_types[i].type) == t)
            return attr_types[i].type;
    return t;
}

static int is_list_type(attr_type t) {
    return element_type(t) != t;
}

static int parse_graph(parser *p, Onnx__GraphProto *g);

/* single = prim-const | "@" quotable-id | tensor-type [quotable-id] ["="] tensor-data | type
 *        | graph
 * The value's kind follows from its form; a declared type `expected` must match, except that
 * an integer is taken as a float where a float is declared. */
static int parse_single_value(parser *p, Onnx__AttributeProto *a, attr_type expected) {
    int line = p->tok.line, col = p->tok.col;
    if (p->tok.kind == KC_TOK_ID && next_is_type(p)) {
        Onnx__TypeProto *tp;
        NEW_MSG(Onnx__TypeProto, onnx__type_proto__init, tp);
        if (!tp) return out_of_memory(p);
        a->tp = tp; /* owned by the attribute until it turns out to be a tensor's type */
        TRY(parse_type(p, tp));
        if (is_punct(p, '{') || is_punct(p, '=') || p->tok.kind == KC_TOK_ID ||
            p->tok.kind == KC_TOK_STRING) {
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
            NEW_MSG(Onnx__TensorProto, onnx__tensor_proto__init, a->t);
            if (!a->t) return out_of_memory(p);
            if (p->tok.kind == KC_TOK_ID || p->tok.kind == KC_TOK_STRING)
                TRY(take_quotable(p, &a->t->name, "a tensor name"));
            else if (!(a->t->name = strdup("")))
                return out_of_memory(p);
            accept(p, '=');
            TRY(parse_tensor_data(p, a->t, tp, line, col));
            a->tp = NULL;
            onnx__type_proto__free_unpacked(tp, NULL);
        } else {
            a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO;
        }
    } else if (is_float_word(&p->tok) || p->tok.kind == KC_TOK_FLOAT) {
        TRY(parse_real(p, NULL, &a->f, "a float"));
        a->has_f = 1;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    } else if (p->tok.kind == KC_TOK_ID) {
        NEW_MSG(Onnx__GraphProto, onnx__graph_proto__init, a->g);
        if (!a->g) return out_of_memory(p);
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        TRY(parse_graph(p, a->g));
    } else if (accept(p, '@')) {
        TRY(take_quotable(p, &a->ref_attr_name, "the name of the referenced attribute after '@'"));
        return 0; /* its type is the declared one, if any */
    } else if (p->tok.kind == KC_TOK_INT) {
        TRY(parse_int64(p, &a->i, "an integer"));
        a->has_i = 1;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    } else if (p->tok.kind == KC_TOK_STRING) {
        char *s;
        size_t n;
        TRY(take_string(p, &s, &n, "a string"));
        a->s.data = (uint8_t *)s;
        a->s.len = n;
        a->has_s = 1;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    } else {
        return fail(p, "an attribute value (a number, a string, a tensor, a type, a graph, a "
                       "list or @name)");
    }
    a->has_type = 1;
    if (expected == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED || expected == a->type)
        return 0;
    if (expected == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT &&
        a->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) {
        a->type = expected;
        a->f = (float)a->i;
        a->has_f = 1;
        a->has_i = 0;
        a->i = 0;
        return 0;
    }
    kc_text_error_at(&p->lx, line, col, "expected a value of type '%s', found a %s",
                     attr_type_name(expected), attr_type_name(a->type));
    return -1;
}

/* Moves element e (one parsed list item) to the end of list attribute a. */
static int append_element(parser *p, Onnx__AttributeProto *a, Onnx__AttributeProto *e) {
    switch (e->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: {
        int64_t *s = PUSH_SLOT(p, a->ints, a->n_ints);
        if (!s) return out_of_memory(p);
        *s = e->i;
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: {
        float *s = PUSH_SLOT(p, a->floats, a->n_floats);
        if (!s) return out_of_memory(p);
        *s = e->f;
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        ProtobufCBinaryData *s = PUSH_SLOT(p, a->strings, a->n_strings);
        if (!s) return out_of_memory(p);
        *s = e->s;
        e->s.data = NULL;
        e->has_s = 0;
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        Onnx__TensorProto **s = PUSH_SLOT(p, a->tensors, a->n_tensors);
        if (!s) return out_of_memory(p);
        *s = e->t;
        e->t = NULL;
        return 0;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
        Onnx__GraphProto **s = PUSH_SLOT(p, a->graphs, a->n_graphs);
        if (!s) return out_of_memory(p);
        *s = e->g;
        e->g = NULL;
        return 0;
    }
    default: {
        Onnx__TypeProto **s = PUSH_SLOT(p, a->type_protos, a->n_type_protos);
        if (!s) return out_of_memory(p);
        *s = e->tp;
        e->tp = NULL;
        return 0;
    }
    }
}

/* attr-value = single | "[" [single {"," single}] "]"
 * A list takes the kind of its first element (or of the declared type); "[]" needs a declared
 * list type. */
static int parse_attr_value(parser *p, Onnx__AttributeProto *a) {
    if (!is_punct(p, '[')) return parse_single_value(p, a, a->has_type ? a->type : 0);
    int line = p->tok.line, col = p->tok.col;
    advance(p);
    if (is_punct(p, ']')) {
        if (!a->has_type) {
            kc_text_error_at(&p->lx, line, col,
                             "an empty list needs a declared type, e.g. '%s: ints = []'", a->name);
            return -1;
        }
        if (!is_list_type(a->type)) {
            kc_text_error_at(&p->lx, line, col,
                             "'%s' is the type of a single value; a list needs '%ss'",
                             attr_type_name(a->type), attr_type_name(a->type));
            return -1;
        }
        advance(p);
        return 0;
    }
    attr_type expected = a->has_type ? element_type(a->type) : 0;
    do {
        if (is_punct(p, '@')) return fail(p, "a list element (an '@' reference stands alone)");
        Onnx__AttributeProto *e;
        NEW_MSG(Onnx__AttributeProto, onnx__attribute_proto__init, e);
        if (!e) return out_of_memory(p);
        int r = parse_single_value(p, e, expected);
        if (r == 0) {
            expected = e->type;
            a->has_type = 1;
            a->type = list_type(e->type);
            r = append_element(p, a, e);
        }
        onnx__attribute_proto__free_unpacked(e, NULL);
        TRY(r);
    } while (accept(p, ','));
    return expect(p, ']', "after the list's elements");
}

/* attr = id [":" attr-type] "=" attr-value (the name already taken) */
static int parse_attr_rest(parser *p, Onnx__AttributeProto *a) {
    if (accept(p, ':')) {
        if (p->tok.kind != KC_TOK_ID)
            return fail(p, "an attribute type (int, floats, tensor, ...)");
        size_t i = 0;
        while (i < sizeof attr_types / sizeof attr_types[0] &&
               !(strlen(attr_types[i].name) == p->tok.len &&
                 !memcmp(attr_types[i].name, p->tok.start, p->tok.len)))
            i++;
        if (i == sizeof attr_types / sizeof attr_types[0])
            return fail(p, "an attribute type (int, float, string, tensor, graph, type_proto, "
                           "sparse_tensor, or a plural of one)");
        a->has_type = 1;
        a->type = attr_types[i].type;
        advance(p);
    }
    TRY(expect(p, '=', "before the attribute's value"));
    return parse_attr_value(p, a);
}

/* attr-list = "<" attr {"," attr} ">" */
static int parse_attr_list(parser *p, Onnx__AttributeProto ***arr, size_t *n) {
    TRY(expect(p, '<', "before the attributes"));
    do {
        Onnx__AttributeProto *a;
        APPEND_MSG(p, Onnx__AttributeProto, onnx__attribute_proto__init, *arr, *n, a);
        TRY(take_id(p, &a->name, "an attribute name"));
        TRY(parse_attr_rest(p, a));
    } while (accept(p, ','));
    return expect(p, '>', "after the attributes");
}

/* ---- nodes and graphs ---- */

/* id-list = [ [quotable-id] {"," [quotable-id]} ]: an empty slot is an absent optional value
 * (""); one trailing empty slot is dropped. */
static int parse_id_list(parser *p, char ***arr, size_t *n) {
    for (;;) {
        char *s = NULL;
        if (p->tok.kind == KC_TOK_ID || p->tok.kind == KC_TOK_STRING) {
            TRY(take_quotable(p, &s, "a value name"));
        } else if (!is_punct(p, ',')) {
            return 0; /* an empty last slot */
        } else if (!(s = strdup(""))) {
            return out_of_memory(p);
        }
        TRY(append_string(p, arr, n, s));
        if (!accept(p, ',')) return 0;
    }
}

/* node = ["[" [quotable-id] "]"] id-list "=" qualified-id [":" id]
 *        ( attr-list "(" id-list ")" | "(" id-list ")" [attr-list] ) */
static int parse_node(parser *p, Onnx__NodeProto *n) {
    if (accept(p, '[')) {
        if (p->tok.kind == KC_TOK_ID || p->tok.kind == KC_TOK_STRING)
            TRY(take_quotable(p, &n->name, "a node label"));
        else if (!(n->name = strdup("")))
            return out_of_memory(p);
        TRY(expect(p, ']', "after the node label"));
    }
    TRY(parse_id_list(p, &n->output, &n->n_output));
    if (!is_punct(p, '=')) return fail(p, "'=' after the node's outputs");
    advance(p);
    /* qualified-id: the last identifier is the op, the ones before it (joined by dots) the
     * domain. */
    char *q = NULL;
    TRY(take_qualified_id(p, &q, "an operator name"));
    char *dot = strrchr(q, '.');
    n->domain = dot ? strndup(q, (size_t)(dot - q)) : strdup("");
    n->op_type = strdup(dot ? dot + 1 : q);
    free(q);
    if (!n->domain || !n->op_type) return out_of_memory(p);
    if (accept(p, ':')) TRY(take_id(p, &n->overload, "an overload name after ':'"));
    int attrs_first = is_punct(p, '<');
    if (attrs_first) TRY(parse_attr_list(p, &n->attribute, &n->n_attribute));
    TRY(expect(p, '(', "before the node's inputs"));
    TRY(parse_id_list(p, &n->input, &n->n_input));
    TRY(expect(p, ')', "after the node's inputs"));
    if (!attrs_first && is_punct(p, '<')) TRY(parse_attr_list(p, &n->attribute, &n->n_attribute));
    return 0;
}

/* node-list = "{" {node} "}" */
static int parse_node_list(parser *p, Onnx__NodeProto ***arr, size_t *n) {
    TRY(expect(p, '{', "before the nodes"));
    while (!accept(p, '}')) {
        if (p->tok.kind == KC_TOK_EOF) return fail(p, "'}' after the nodes");
        Onnx__NodeProto *node;
        APPEND_MSG(p, Onnx__NodeProto, onnx__node_proto__init, *arr, *n, node);
        TRY(parse_node(p, node));
    }
    return 0;
}

/* graph = quotable-id "(" [io-init {"," io-init}] ")" "=>" "(" [value-info {"," value-info}] ")"
 *         ["<" [io-init {"," io-init}] ">"] node-list */
static int parse_graph(parser *p, Onnx__GraphProto *g) {
    TRY(enter(p));
    TRY(take_quotable(p, &g->name, "a graph name"));
    TRY(parse_graph_inputs(p, g));
    if (p->tok.kind != KC_TOK_ARROW) return fail(p, "'=>' between the inputs and the outputs");
    advance(p);
    TRY(parse_value_info_list(p, &g->output, &g->n_output, '(', ')', "the graph's outputs"));
    TRY(parse_graph_value_infos(p, g));
    TRY(parse_node_list(p, &g->node, &g->n_node));
    p->depth--;
    return 0;
}

/* opsets = "[" [str ":" int {"," str ":" int}] "]" */
static int parse_opsets(parser *p, Onnx__OperatorSetIdProto ***arr, size_t *n) {
    TRY(expect(p, '[', "before the opset list"));
    if (accept(p, ']')) return 0;
    do {
        Onnx__OperatorSetIdProto *o;
        APPEND_MSG(p, Onnx__OperatorSetIdProto, onnx__operator_set_id_proto__init, *arr, *n, o);
        TRY(take_string(p, &o->domain, NULL, "an opset domain string (\"\" for ai.onnx)"));
        TRY(expect(p, ':', "between an opset's domain and version"));
        TRY(parse_int64(p, &o->version, "an opset version"));
        o->has_version = 1;
    } while (accept(p, ','));
    return expect(p, ']', "after the opset list");
}

/* "(" [[type] quotable-id {"," [type] quotable-id}] ")": names go to ids, types to value_info */
static int parse_function_io(parser *p, Onnx__FunctionProto *f, char ***ids, size_t *n,
                             const char *what) {
    char before[64], after[64];
    snprintf(before, sizeof before, "before the function's %s", what);
    snprintf(after, sizeof after, "after the function's %s", what);
    TRY(expect(p, '(', before));
    if (accept(p, ')')) return 0;
    do {
        char *name = NULL;
        if (next_is_type(p)) {
            Onnx__ValueInfoProto *vi;
            APPEND_MSG(p, Onnx__ValueInfoProto, onnx__value_info_proto__init, f->value_info,
                       f->n_value_info, vi);
            TRY(parse_value_info(p, vi));
            name = strdup(vi->name);
            if (!name) return out_of_memory(p);
        } else {
            TRY(take_quotable(p, &name, "a value name"));
        }
        TRY(append_string(p, ids, n, name));
    } while (accept(p, ','));
    return expect(p, ')', after);
}

/* "<" (id | attr) {"," (id | attr)} ">": attribute names, with a default value or without. */
static int parse_function_attrs(parser *p, Onnx__FunctionProto *f) {
    if (!accept(p, '<')) return 0;
    do {
        char *name = NULL;
        TRY(take_quotable(p, &name, "an attribute name"));
        if (is_punct(p, ':') || is_punct(p, '=')) {
            Onnx__AttributeProto *a;
            int r = 0;
            Onnx__AttributeProto **slot = PUSH_SLOT(p, f->attribute_proto, f->n_attribute_proto);
            if (slot) NEW_MSG(Onnx__AttributeProto, onnx__attribute_proto__init, *slot);
            if (!slot || !*slot) {
                if (slot) f->n_attribute_proto--;
                free(name);
                return out_of_memory(p);
            }
            a = *slot;
            a->name = name;
            r = parse_attr_rest(p, a);
            TRY(r);
        } else {
            TRY(append_string(p, &f->attribute, &f->n_attribute, name));
        }
    } while (accept(p, ','));
    return expect(p, '>', "after the function's attributes");
}

/* function = ["<" fn-kv {"," fn-kv} ">"] quotable-id ["<" (id | attr) {"," (id | attr)} ">"]
 *            "(" [value-info {"," value-info}] ")" "=>" "(" [value-info {"," value-info}] ")"
 *            ["<" [value-info {"," value-info}] ">"] node-list
 * fn-kv = "opset_import" ":" opsets | "domain" ":" str | "doc_string" ":" str
 *       | "overload" ":" str */
static int parse_function(parser *p, Onnx__FunctionProto *f) {
    if (accept(p, '<')) {
        do {
            if (is_id(p, "opset_import")) {
                advance(p);
                TRY(expect(p, ':', "after 'opset_import'"));
                TRY(parse_opsets(p, &f->opset_import, &f->n_opset_import));
                continue;
            }
            char **field = is_id(p, "domain")       ? &f->domain
                           : is_id(p, "doc_string") ? &f->doc_string
                           : is_id(p, "overload")   ? &f->overload
                                                    : NULL;
            if (!field)
                return fail(p, "a function key (opset_import, domain, doc_string, overload)");
            advance(p);
            TRY(expect(p, ':', "after the key"));
            free(*field);
            *field = NULL;
            TRY(take_string(p, field, NULL, "a string"));
        } while (accept(p, ','));
        TRY(expect(p, '>', "after the function's keys"));
    }
    TRY(take_quotable(p, &f->name, "a function name"));
    TRY(parse_function_attrs(p, f));
    TRY(parse_function_io(p, f, &f->input, &f->n_input, "inputs"));
    if (p->tok.kind != KC_TOK_ARROW) return fail(p, "'=>' between the inputs and the outputs");
    advance(p);
    TRY(parse_function_io(p, f, &f->output, &f->n_output, "outputs"));
    if (is_punct(p, '<'))
        TRY(parse_value_info_list(p, &f->value_info, &f->n_value_info, '<', '>',
                                  "the function's value infos"));
    return parse_node_list(p, &f->node, &f->n_node);
}

/* model-kv = "ir_version" ":" int | "model_version" ":" int | "opset_import" ":" opsets
 *          | "producer_name" ":" str | "producer_version" ":" str | "domain" ":" str
 *          | "doc_string" ":" str | "metadata_props" ":" "[" [str ":" str {"," ...}] "]" */
static int parse_model_kv(parser *p, Onnx__ModelProto *m) {
    if (is_id(p, "ir_version") || is_id(p, "model_version")) {
        int ir = is_id(p, "ir_version");
        advance(p);
        TRY(expect(p, ':', "after the key"));
        TRY(parse_int64(p, ir ? &m->ir_version : &m->model_version, "a version"));
        if (ir)
            m->has_ir_version = 1;
        else
            m->has_model_version = 1;
        return 0;
    }
    if (is_id(p, "opset_import")) {
        advance(p);
        TRY(expect(p, ':', "after 'opset_import'"));
        return parse_opsets(p, &m->opset_import, &m->n_opset_import);
    }
    if (is_id(p, "metadata_props")) {
        advance(p);
        TRY(expect(p, ':', "after 'metadata_props'"));
        TRY(expect(p, '[', "before the metadata"));
        if (accept(p, ']')) return 0;
        TRY(parse_string_pairs(p, &m->metadata_props, &m->n_metadata_props));
        return expect(p, ']', "after the metadata");
    }
    char **field = is_id(p, "producer_name")      ? &m->producer_name
                   : is_id(p, "producer_version") ? &m->producer_version
                   : is_id(p, "domain")           ? &m->domain
                   : is_id(p, "doc_string")       ? &m->doc_string
                                                  : NULL;
    if (!field)
        return fail(p, "a model key (ir_version, opset_import, producer_name, producer_version, "
                       "domain, model_version, doc_string, metadata_props)");
    advance(p);
    TRY(expect(p, ':', "after the key"));
    free(*field);
    *field = NULL;
    return take_string(p, field, NULL, "a string");
}

/* model = ["<" model-kv {"," model-kv} ">"] graph {function} */
static int parse_model(parser *p, Onnx__ModelProto *m) {
    if (accept(p, '<')) {
        do {
            TRY(parse_model_kv(p, m));
        } while (accept(p, ','));
        TRY(expect(p, '>', "after the model's keys"));
    }
    NEW_MSG(Onnx__GraphProto, onnx__graph_proto__init, m->graph);
    if (!m->graph) return out_of_memory(p);
    TRY(parse_graph(p, m->graph));
    while (p->tok.kind != KC_TOK_EOF) {
        if (p->tok.kind == KC_TOK_ERROR) return -1;
        Onnx__FunctionProto *f;
        APPEND_MSG(p, Onnx__FunctionProto, onnx__function_proto__init, m->functions, m->n_functions,
                   f);
        TRY(parse_function(p, f));
    }
    return 0;
}

Onnx__ModelProto *kc_text_parse_model(const char *text, size_t len, const char *path, kc_diag *d) {
    parser p;
    memset(&p, 0, sizeof p);
    kc_text_lexer_init(&p.lx, text ? text : "", text ? len : 0, path, d);
    Onnx__ModelProto *m;
    NEW_MSG(Onnx__ModelProto, onnx__model_proto__init, m);
    if (!m) {
        if (d) kc_error(d, "out of memory");
        return NULL;
    }
    advance(&p);
    if (parse_model(&p, m) != 0 || p.lx.failed) {
        if (!p.lx.failed) kc_text_error_at(&p.lx, p.tok.line, p.tok.col, "invalid model");
        onnx__model_proto__free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}
