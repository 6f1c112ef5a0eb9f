/* libFuzzer target: the host layer's tensor file readers, .npy (kann_host_npy_parse) and ONNX
 * TensorProto (kann_host_pb_parse), on arbitrary bytes. Whatever a reader accepts must survive
 * a round trip through its encoder unchanged. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kann_host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef kann_status (*parse_fn)(const void *bytes, size_t n, const char *what, kann_host_tensor *t,
                                kann_error *err);
typedef kann_status (*encode_fn)(const kann_tensor *t, void **out, size_t *out_size,
                                 kann_error *err);

static int same_tensor(const kann_host_tensor *a, const kann_host_tensor *b) {
    return a->dtype == b->dtype && a->rank == b->rank &&
           memcmp(a->dims, b->dims, sizeof a->dims) == 0 && a->size == b->size &&
           (a->size == 0 || memcmp(a->data, b->data, a->size) == 0);
}

static void check_reader(const uint8_t *data, size_t size, parse_fn parse, encode_fn encode) {
    kann_host_tensor t;
    kann_error e;
    kann_status st = parse(data, size, "fuzz", &t, &e);
    if (st != KANN_OK) {
        if (e.status != st || e.message[0] == '\0') __builtin_trap(); /* a rejection says why */
        return;
    }
    if (t.rank > KANN_MAX_IO_RANK || kann_dtype_size(t.dtype) == 0) __builtin_trap();
    kann_tensor view = {t.name, t.dtype, t.rank, {0}, t.data, t.size};
    memcpy(view.dims, t.dims, sizeof view.dims);
    void *bytes;
    size_t n;
    if (encode(&view, &bytes, &n, &e) != KANN_OK) __builtin_trap();
    kann_host_tensor again;
    if (parse(bytes, n, "fuzz round trip", &again, &e) != KANN_OK || !same_tensor(&t, &again))
        __builtin_trap();
    kann_host_tensor_free(&again);
    free(bytes);
    kann_host_tensor_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_reader(data, size, kann_host_npy_parse, kann_host_npy_encode);
    check_reader(data, size, kann_host_pb_parse, kann_host_pb_encode);
    return 0;
}
