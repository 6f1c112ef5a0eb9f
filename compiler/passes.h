/* The compiler's phases and passes, in pipeline order. Each is a free function over the graph;
 * each returns 0 on success or the number of errors it reported through diag (it reports every
 * problem it finds, not just the first). main.c reads as this list. */
#ifndef KC_PASSES_H
#define KC_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "ir.h"

/* What the passes did, for the compile summary. */
typedef struct kc_stats {
    int nodes_imported; /* nodes in the source graph, Constant nodes included */
    int constants_folded; /* nodes evaluated at compile time */
    int identities_removed; /* Identity / Dropout */
    int views; /* Reshape / Flatten / Squeeze / Unsqueeze / Concat slices made views */
    int batchnorms_folded; /* into a preceding Conv / Gemm / MatMul */
    int batchnorms_standalone; /* lowered to a per-channel multiply-add */
    int affines_folded; /* per-channel constant Mul / Add folded into weights */
    int activations_fused;
    int residuals_fused;
} kc_stats;

/* --input-shape name=1x3x224x224 */
typedef struct kc_shape_binding {
    const char *name;
    int rank;
    int64_t dims[KC_MAX_RANK];
} kc_shape_binding;

/* 1. import (import_onnx.c): reads a .onnx file (external data relative to its directory). */
int kc_import_onnx_file(kc_graph *g, const char *path, kc_diag *d, kc_stats *st);
int kc_import_onnx_bytes(kc_graph *g, const void *bytes, size_t size, const char *path,
                         kc_diag *d, kc_stats *st);

/* 1. import, either form (text_import.c): the ONNX text syntax or protobuf, told apart by the
 * file's content; text is parsed (text_parser.c) and goes through kc_import_onnx_bytes too. */
int kc_import_model_file(kc_graph *g, const char *path, kc_diag *d, kc_stats *st);

/* 1a. (inline_functions.c, called by the importer): replaces every call of a model-local
 * function by its body, with attribute references resolved and internal values renamed
 * uniquely. Returns the number of errors reported. */
struct Onnx__ModelProto;
int kc_inline_functions(struct Onnx__ModelProto *m, kc_diag *d);

/* 1b. check (check_supported.c): every node's op, opset and attributes against the op table;
 * reports all unsupported nodes at once. */
int kc_check_supported(const kc_graph *g, kc_diag *d);

/* 2. shapes & constants (pass_shapes.c, shapes.c, fold_constants.c): binds input shapes
 * (symbolic dims from bindings, else batch 1 for a leading unknown dim), infers every shape in
 * node order and evaluates nodes whose inputs are all constant (Shape, Gather, Unsqueeze,
 * Concat, arithmetic ...), marking them dead. An unknown shape left over is an error naming the
 * value. */
int kc_pass_shapes_constants(kc_graph *g, const kc_shape_binding *bindings, int n_bindings,
                             kc_diag *d, kc_stats *st);

/* 3. simplify (pass_simplify.c): Identity/Dropout removed; Reshape/Flatten/Squeeze/Unsqueeze
 * become views (alias_of) of their input. */
int kc_pass_simplify(kc_graph *g, kc_diag *d, kc_stats *st);

/* 4. fold (pass_fold_bn.c): BatchNormalization (and per-channel constant Mul/Add) folded into
 * the weights and bias of the preceding Conv/Gemm/MatMul. Leftover BN stays for lowering. */
int kc_pass_fold_bn(kc_graph *g, kc_diag *d, kc_stats *st);

/* 5. fuse (pass_fuse.c): activations and residual Add become node epilogues (kc_node.epi);
 * Concat inputs become views into the Concat output where the layout allows. */
int kc_pass_fuse(kc_graph *g, kc_diag *d, kc_stats *st);
/* 5a. (pass_fuse_transformer.c, run first by kc_pass_fuse): a MatMul's constant bias Add
 * becomes its third input (a bias along the last axis), a scalar Div / Mul its "alpha"
 * attribute, GELU's Erf formula its activation; counted as affines / activations folded. */
void kc_fuse_transformer(kc_graph *g, kc_stats *st);

#endif
