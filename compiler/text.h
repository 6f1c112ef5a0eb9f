/* The ONNX text syntax (docs/text-syntax.md): a hand-written lexer and recursive-descent parser
 * that build an Onnx__ModelProto, and a printer that writes one back as text. */
#ifndef KC_TEXT_H
#define KC_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "diag.h"
#include "onnx.pb-c.h"

/* Parses text[0..len) (NUL bytes are an error, the text needs no terminator). On success returns
 * a model whose every part is malloc'ed, as protobuf-c's own unpacking does: free it with
 * onnx__model_proto__free_unpacked(m, NULL). On a syntax error reports
 * "path:line:col: error: ... expected ..." with the source line and a caret through d and
 * returns NULL. */
Onnx__ModelProto *kc_text_parse_model(const char *text, size_t len, const char *path, kc_diag *d);

/* Writes m as text. Parts the syntax cannot hold (doc strings of graphs, nodes and values,
 * sparse tensors, training info) are left out; the first one that changes the model's meaning
 * (a sparse tensor, data of a type that has no text form) is described in err and -1 is
 * returned after the rest has been printed. Returns 0 otherwise. */
int kc_text_print_model(const Onnx__ModelProto *m, FILE *out, char *err, size_t err_size);

/* Whether bytes look like ONNX text rather than a protobuf: protobuf-encoded models start with
 * field tags and lengths, which are control bytes; text is printable. */
int kc_text_looks_like_text(const void *bytes, size_t size);

/* Reads path (text or binary, told apart by content) into a ModelProto, as above. Returns NULL
 * after reporting through d; *unreadable is set when the file could not be read at all. */
Onnx__ModelProto *kc_text_read_model_file(const char *path, kc_diag *d, int *unreadable);

/* kann-c --print: the model in path (either form) as text on out. Returns 0; 1 when parts of
 * the model have no text form (reported); -1 when path is unreadable or invalid (reported). */
int kc_text_print_file(const char *path, FILE *out, kc_diag *d);

/* kann-c --save-onnx: the model in path (either form) written as protobuf to out_path, functions
 * not inlined. Returns 0, or -1 after reporting. */
int kc_text_save_onnx_file(const char *path, const char *out_path, kc_diag *d);

#endif
