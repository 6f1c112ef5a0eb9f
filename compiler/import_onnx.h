/* ONNX TensorProto → kc_tensor conversion, shared by the model importer and by code that reads
 * standalone .pb tensors (test data). The graph entry points are in passes.h. */
#ifndef KC_IMPORT_ONNX_H
#define KC_IMPORT_ONNX_H

#include "diag.h"
#include "ir.h"
#include "onnx.pb-c.h"

/* Converts t (raw_data, typed fields or external data) into out, with the data copied into the
 * graph's arena in host byte order. base_dir is the directory external data paths are relative
 * to (NULL: external data is an error). Returns 0, or the number of errors reported through d
 * (out is then zeroed apart from dtype, rank and dims, which are set when they were valid). */
int kc_tensor_from_onnx(kc_graph *g, const Onnx__TensorProto *t, const char *base_dir,
                        kc_tensor *out, kc_diag *d);

/* The same, naming the tensor in errors as `what` (e.g. "initializer 'W'"). */
int kc_tensor_from_onnx_as(kc_graph *g, const Onnx__TensorProto *t, const char *base_dir,
                           const char *what, kc_tensor *out, kc_diag *d);

#endif
