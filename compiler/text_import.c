/* Reading a model file in either form: the ONNX text syntax or protobuf, told apart by content,
 * so that a text model compiles whatever its file is called. Text is parsed to a ModelProto and
 * packed, and both forms then go through the one protobuf importer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "passes.h"
#include "text.h"

int kc_text_looks_like_text(const void *bytes, size_t size) {
    const unsigned char *b = bytes;
    /* A protobuf opens with a field tag (0x08 for ir_version) followed by a value or a length:
     * the tags that are printable ('"' domain, 'B' opset_import) are followed by a length
     * byte, a control byte for any short field. Text opens with '<', '#', a name or a string,
     * followed by text. The rest is left to the parser, which reports stray bytes where they
     * are. */
    size_t first = 0;
    while (first < size &&
           (b[first] == ' ' || b[first] == '\t' || b[first] == '\n' || b[first] == '\r'))
        first++;
    if (first == size) return size > 0; /* only whitespace: an (empty) text */
    unsigned char c = b[first];
    if (!(c == '<' || c == '#' || c == '"' || c == '_' || (c >= 'a' && c <= 'z') ||
          (c >= 'A' && c <= 'Z')))
        return 0;
    if (first + 1 == size) return 1;
    unsigned char next = b[first + 1];
    return next >= 0x20 || next == '\t' || next == '\n' || next == '\r';
}

static void *read_file(const char *path, size_t *size, kc_diag *d) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        kc_error(d, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        kc_error(d, "cannot read '%s': not a regular file", path);
        fclose(f);
        return NULL;
    }
    *size = (size_t)sb.st_size;
    void *bytes = malloc(*size ? *size : 1);
    if (!bytes) {
        kc_error(d, "cannot read '%s': out of memory for %zu bytes", path, *size);
        fclose(f);
        return NULL;
    }
    if (fread(bytes, 1, *size, f) != *size) {
        kc_error(d, "cannot read '%s': %s", path, ferror(f) ? strerror(errno) : "file shrank");
        free(bytes);
        fclose(f);
        return NULL;
    }
    fclose(f);
    return bytes;
}

Onnx__ModelProto *kc_text_read_model_file(const char *path, kc_diag *d, int *unreadable) {
    size_t size;
    *unreadable = 0;
    void *bytes = read_file(path, &size, d);
    if (!bytes) {
        *unreadable = 1;
        return NULL;
    }
    Onnx__ModelProto *m;
    if (kc_text_looks_like_text(bytes, size)) {
        m = kc_text_parse_model(bytes, size, path, d);
    } else {
        m = onnx__model_proto__unpack(NULL, size, bytes);
        if (!m) kc_error(d, "not a valid ONNX model (protobuf decoding failed)");
    }
    free(bytes);
    return m;
}

int kc_import_model_file(kc_graph *g, const char *path, kc_diag *d, kc_stats *st) {
    size_t size;
    void *bytes = read_file(path, &size, d);
    if (!bytes) return 1;
    if (!kc_text_looks_like_text(bytes, size)) {
        int errors = kc_import_onnx_bytes(g, bytes, size, path, d, st);
        free(bytes);
        return errors;
    }
    int errors_before = d->n_errors;
    Onnx__ModelProto *m = kc_text_parse_model(bytes, size, path, d);
    free(bytes);
    if (!m) return d->n_errors - errors_before ? d->n_errors - errors_before : 1;
    size_t packed_size = onnx__model_proto__get_packed_size(m);
    uint8_t *packed = malloc(packed_size ? packed_size : 1);
    if (!packed) {
        onnx__model_proto__free_unpacked(m, NULL);
        kc_error(d, "out of memory packing the model (%zu bytes)", packed_size);
        return 1;
    }
    onnx__model_proto__pack(m, packed);
    onnx__model_proto__free_unpacked(m, NULL);
    int errors = kc_import_onnx_bytes(g, packed, packed_size, path, d, st);
    free(packed);
    return errors;
}

int kc_text_print_file(const char *path, FILE *out, kc_diag *d) {
    int unreadable;
    Onnx__ModelProto *m = kc_text_read_model_file(path, d, &unreadable);
    if (!m) return -1;
    char err[256];
    int r = kc_text_print_model(m, out, err, sizeof err);
    onnx__model_proto__free_unpacked(m, NULL);
    if (r != 0) {
        kc_error(d, "the text leaves out part of the model: %s", err);
        return 1;
    }
    return 0;
}

int kc_text_save_onnx_file(const char *path, const char *out_path, kc_diag *d) {
    int unreadable;
    Onnx__ModelProto *m = kc_text_read_model_file(path, d, &unreadable);
    if (!m) return -1;
    size_t size = onnx__model_proto__get_packed_size(m);
    uint8_t *bytes = malloc(size ? size : 1);
    if (!bytes) {
        onnx__model_proto__free_unpacked(m, NULL);
        kc_error(d, "out of memory packing the model (%zu bytes)", size);
        return -1;
    }
    onnx__model_proto__pack(m, bytes);
    onnx__model_proto__free_unpacked(m, NULL);
    /* Written under a temporary name and renamed: a failure never leaves half a file. */
    size_t n = strlen(out_path) + 8;
    char *tmp = malloc(n);
    FILE *f = tmp ? (snprintf(tmp, n, "%s.tmp", out_path), fopen(tmp, "wb")) : NULL;
    int ok = f && fwrite(bytes, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, out_path) != 0) ok = 0;
    if (!ok) {
        kc_error(d, "cannot write '%s': %s", out_path, strerror(errno));
        if (f) remove(tmp);
    }
    free(tmp);
    free(bytes);
    return ok ? 0 : -1;
}
