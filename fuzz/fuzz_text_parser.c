/* libFuzzer target: the ONNX text parser (compiler/text_parser.c) and what follows it. Any bytes
 * are parsed; a model that parses must print, its printed text must parse and print to the same
 * text, and packing it and importing it (functions inlined) must not crash. Findings: any crash
 * or sanitizer report, and a trap when the round trip breaks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"
#include "text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *diag_sink;

/* The model as text in a malloc'ed buffer; traps if a parsed model does not print. */
static char *print_or_trap(const Onnx__ModelProto *m, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) abort();
    char err[256];
    int r = kc_text_print_model(m, f, err, sizeof err);
    fclose(f);
    if (r != 0) {
        fprintf(stderr, "a parsed model does not print: %s\n", err);
        __builtin_trap();
    }
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!diag_sink && !(diag_sink = fopen("/dev/null", "w"))) abort();
    kc_diag d;
    kc_diag_init(&d, "fuzz", diag_sink);
    Onnx__ModelProto *m = kc_text_parse_model((const char *)data, size, "fuzz", &d);
    if (!m) return 0;

    size_t n1, n2;
    char *t1 = print_or_trap(m, &n1);
    Onnx__ModelProto *m2 = kc_text_parse_model(t1, n1, "printed", &d);
    if (!m2) {
        fprintf(stderr, "the printed text does not parse:\n%s\n", t1);
        __builtin_trap();
    }
    char *t2 = print_or_trap(m2, &n2);
    if (n1 != n2 || memcmp(t1, t2, n1) != 0) {
        fprintf(stderr, "print(parse(print(x))) != print(x):\n%s\n---\n%s\n", t1, t2);
        __builtin_trap();
    }
    free(t1);
    free(t2);
    onnx__model_proto__free_unpacked(m2, NULL);

    size_t packed_size = onnx__model_proto__get_packed_size(m);
    uint8_t *packed = malloc(packed_size ? packed_size : 1);
    if (packed) {
        onnx__model_proto__pack(m, packed);
        kc_graph *g = kc_graph_new();
        kc_import_onnx_bytes(g, packed, packed_size, NULL, &d, NULL);
        kc_graph_free(g);
        free(packed);
    }
    onnx__model_proto__free_unpacked(m, NULL);
    return 0;
}
