/* The compiler's intermediate representation: one graph of values and nodes, linked by
 * indices (never pointers) so it is easy to copy, check and dump. All memory comes from the
 * graph's arena and is freed at once with the graph. */
#ifndef KC_IR_H
#define KC_IR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KC_MAX_RANK 8

/* Element types: the values of ONNX TensorProto.DataType. */
typedef enum kc_dtype {
    KC_DTYPE_UNDEFINED = 0,
    KC_DTYPE_FLOAT = 1,
    KC_DTYPE_UINT8 = 2,
    KC_DTYPE_INT8 = 3,
    KC_DTYPE_UINT16 = 4,
    KC_DTYPE_INT16 = 5,
    KC_DTYPE_INT32 = 6,
    KC_DTYPE_INT64 = 7,
    KC_DTYPE_STRING = 8,
    KC_DTYPE_BOOL = 9,
    KC_DTYPE_FLOAT16 = 10,
    KC_DTYPE_DOUBLE = 11,
    KC_DTYPE_UINT32 = 12,
    KC_DTYPE_UINT64 = 13,
    KC_DTYPE_BFLOAT16 = 16,
} kc_dtype;

/* Bytes per element, 0 for types we cannot hold (string, complex, unknown). */
size_t kc_dtype_size(int dtype);
const char *kc_dtype_name(int dtype);

/* Attribute kinds: the values of ONNX AttributeProto.AttributeType. */
typedef enum kc_attr_type {
    KC_ATTR_UNDEFINED = 0,
    KC_ATTR_FLOAT = 1,
    KC_ATTR_INT = 2,
    KC_ATTR_STRING = 3,
    KC_ATTR_TENSOR = 4,
    KC_ATTR_GRAPH = 5,
    KC_ATTR_FLOATS = 6,
    KC_ATTR_INTS = 7,
    KC_ATTR_STRINGS = 8,
    KC_ATTR_TENSORS = 9,
    KC_ATTR_GRAPHS = 10,
    KC_ATTR_SPARSE_TENSOR = 11,
    KC_ATTR_SPARSE_TENSORS = 12,
    KC_ATTR_TYPE_PROTO = 13,
    KC_ATTR_TYPE_PROTOS = 14,
} kc_attr_type;

/* A dense constant tensor in host byte order, row-major. */
typedef struct kc_tensor {
    int dtype;
    int rank;
    int64_t dims[KC_MAX_RANK];
    void *data; /* numel * dtype size bytes (NULL when numel == 0) */
} kc_tensor;

int64_t kc_numel(int rank, const int64_t *dims); /* -1 if any dim is unknown, or past int64 */

typedef struct kc_attr {
    const char *name;
    int type; /* kc_attr_type */
    int64_t i;
    float f;
    const char *s; /* NUL-terminated (ONNX strings may hold NUL: s_len is the truth) */
    size_t s_len;
    kc_tensor *t;
    int n; /* element count of ints/floats/strings/tensors */
    int64_t *ints;
    float *floats;
    const char **strings;
    kc_tensor **tensors;
    const char *ref_attr_name; /* inside functions: attribute reference, or NULL */
} kc_attr;

enum kc_value_flags {
    KC_VALUE_INPUT = 1u << 0, /* a graph input the caller fills */
    KC_VALUE_OUTPUT = 1u << 1, /* a graph output */
    KC_VALUE_CONST = 1u << 2, /* data holds its contents (initializer, Constant, folded) */
};

typedef struct kc_value {
    const char *name;
    int dtype; /* kc_dtype, 0 while unknown */
    int rank; /* -1 while unknown */
    int64_t dims[KC_MAX_RANK]; /* -1 for an unknown dimension */
    const char *dim_params[KC_MAX_RANK]; /* symbolic dimension names, or NULL */
    void *data; /* constant contents (KC_VALUE_CONST), dense in dtype */
    int producer; /* node index, -1 for inputs and constants */
    unsigned flags; /* kc_value_flags */
    /* Storage, set by the view passes and the planner. A view shares the bytes of another
     * value: alias_of is that value, alias_offset the byte offset inside it. */
    int alias_of; /* -1 if it owns its storage */
    int64_t alias_offset;
    int64_t offset; /* arena byte offset (planner), or constants offset (emitter); -1 unset */
} kc_value;

/* What the fuse passes attached to a compute node: out = act(op(...) + residual). */
typedef struct kc_epilogue {
    int act; /* kann_act_kind */
    float alpha, beta;
    int residual; /* value index added before the activation, or -1 */
} kc_epilogue;

/* The op table (ops.def) as an enum: KC_OP_Conv, ... */
typedef enum kc_op {
    KC_OP_UNKNOWN = 0,
#define KC_OP(name, min_opset, max_opset, attrs, dtypes) KC_OP_##name,
#include "ops.def"
#undef KC_OP
    KC_OP_COUNT
} kc_op;

typedef struct kc_op_info {
    const char *name; /* ONNX op_type */
    int min_opset, max_opset; /* opset versions of ai.onnx we accept */
    const char *attrs; /* space-separated attribute names we honour */
    const char *dtypes; /* the element types it runs on, for the docs */
} kc_op_info;

extern const kc_op_info kc_ops[KC_OP_COUNT];
kc_op kc_op_lookup(const char *domain, const char *op_type);

typedef struct kc_node {
    int op; /* kc_op; KC_OP_UNKNOWN for ops not in the table */
    const char *op_type;
    const char *domain; /* "" for ai.onnx */
    const char *name; /* never NULL; "" if the model had none */
    int opset; /* the opset version imported for its domain */
    int n_inputs, n_outputs;
    int *inputs; /* value indices; -1 for an omitted optional input */
    int *outputs;
    int n_attrs;
    kc_attr *attrs;
    int dead; /* removed by a pass; skipped by everyone after */
    kc_epilogue epi;
    const char *fused; /* what was folded/fused into it, for the summary ("BatchNormalization, Relu") */
} kc_node;

typedef struct kc_opset {
    const char *domain;
    int64_t version;
} kc_opset;

typedef struct kc_arena kc_arena;

typedef struct kc_graph {
    kc_arena *arena;
    kc_value *values;
    int n_values, cap_values;
    kc_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs; /* graph inputs (not initializers) in model order */
    int n_inputs;
    int *outputs;
    int n_outputs;
    kc_opset *opsets;
    int n_opsets;
    const char *name;
    const char *producer; /* producer_name + version of the source model */
    const char *source_path; /* the file it came from; external data is relative to it */
} kc_graph;

/* ---- construction ---- */
kc_graph *kc_graph_new(void);
void kc_graph_free(kc_graph *g);
void *kc_alloc(kc_graph *g, size_t n); /* zeroed, 16-byte aligned; aborts on OOM */
char *kc_strdup(kc_graph *g, const char *s);
char *kc_strndup(kc_graph *g, const char *s, size_t n);
char *kc_sprintf(kc_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Adds a value with unknown type and shape; returns its index. */
int kc_add_value(kc_graph *g, const char *name);
/* Finds a value by name, -1 if none. Linear; build a map yourself for hot loops. */
int kc_find_value(const kc_graph *g, const char *name);
/* Adds a constant value holding a copy of data. */
int kc_add_const(kc_graph *g, const char *name, int dtype, int rank, const int64_t *dims,
                 const void *data);
/* Adds a node; inputs/outputs are copied. Returns its index. Sets producer of outputs. */
int kc_add_node(kc_graph *g, int op, const char *op_type, const char *name, int n_inputs,
                const int *inputs, int n_outputs, const int *outputs);
kc_attr *kc_node_add_attr(kc_graph *g, int node, const char *name, int type);
/* A fresh value name derived from base ("base__1"). */
const char *kc_unique_name(kc_graph *g, const char *base);

/* ---- queries ---- */
const kc_attr *kc_attr_find(const kc_node *n, const char *name);
int64_t kc_attr_int(const kc_node *n, const char *name, int64_t dflt);
float kc_attr_float(const kc_node *n, const char *name, float dflt);
const char *kc_attr_string(const kc_node *n, const char *name, const char *dflt);
/* Copies up to max ints into out; returns the count, or -1 if absent. */
int kc_attr_ints(const kc_node *n, const char *name, int64_t *out, int max);
int kc_opset_of(const kc_graph *g, const char *domain); /* 0 if not imported */
int64_t kc_value_numel(const kc_value *v); /* -1 while unknown */
int kc_is_const(const kc_graph *g, int value);
/* Number of live nodes reading value v, plus 1 if it is a graph output; reads through views
 * of v count. */
int kc_value_uses(const kc_graph *g, int v);
/* Index of the single live node reading v, -1 if none, several, or v has views. */
int kc_single_consumer(const kc_graph *g, int v);
/* Replaces every use of value from by value to in live nodes and graph outputs. */
void kc_replace_uses(kc_graph *g, int from, int to);
int kc_count_live_nodes(const kc_graph *g);
/* The live node producing x as its first output, or -1. */
int kc_live_producer(const kc_graph *g, int x);
/* Notes in node ni's summary line that `what` was folded or fused into it. */
void kc_note_fused(kc_graph *g, int ni, const char *what);
/* Node p takes over the first output of node f, which dies (noted as `what` fused into p); the
 * value p wrote before is left without a producer. */
void kc_absorb_node(kc_graph *g, int p, int f, const char *what);

/* ---- checking and printing ---- */
typedef struct kc_diag kc_diag;
/* Structural checks: indices in range, one producer per value, no use before definition,
 * acyclic order. Reports through diag, returns the number of problems. */
int kc_verify(const kc_graph *g, kc_diag *d);
void kc_dump(const kc_graph *g, FILE *out);
void kc_format_shape(const kc_value *v, char *buf, size_t n); /* "f32[1,3,224,224]" */

#endif
