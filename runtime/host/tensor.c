/* Tensors read from files: release, and reading a file whose format is told by its content. */
#include <stdlib.h>
#include <string.h>

#include "host_private.h"

void kann_host_tensor_free(kann_host_tensor *t) {
    if (!t) return;
    free(t->name);
    free(t->data);
    memset(t, 0, sizeof *t);
}

kann_status kann_host_tensor_read(const char *path, kann_host_tensor *t, kann_error *err) {
    void *data;
    size_t n;
    memset(t, 0, sizeof *t);
    kann_status st = kann_host_read_all(path, &data, &n, err);
    if (st != KANN_OK) return st;
    if (n >= 6 && memcmp(data, "\x93NUMPY", 6) == 0)
        st = kann_host_npy_parse(data, n, path, t, err);
    else
        st = kann_host_pb_parse(data, n, path, t, err);
    free(data);
    return st;
}
