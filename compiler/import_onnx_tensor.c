/* TensorProto decoding: dims, data type and contents (raw bytes, typed fields or an external
 * file next to the model) into a kc_tensor in host byte order, every count checked. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import_onnx.h"

/* Far above any real weight tensor, and low enough that element counts times element sizes
 * cannot overflow int64_t or size_t anywhere below. */
static int64_t max_tensor_bytes(void) {
    int64_t cap = (int64_t)1 << 40;
    return (uint64_t)cap < (uint64_t)(SIZE_MAX / 2) ? cap : (int64_t)(SIZE_MAX / 2);
}

static int host_is_little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* ONNX stores raw and external data little-endian; turn it into host order in place. */
static void le_to_host(void *data, size_t n_elems, size_t esize) {
    if (host_is_little_endian() || esize == 1) return;
    uint8_t *p = data;
    for (size_t i = 0; i < n_elems; i++, p += esize) {
        for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
            uint8_t t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
    }
}

/* A non-negative decimal integer as ONNX writes external-data offsets and lengths. */
static int parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        unsigned digit = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - digit) / 10) return -1;
        v = v * 10 + digit;
    }
    *out = v;
    return 0;
}

/* External data must stay inside the model's directory: no absolute paths, no "..". */
static const char *location_problem(const char *loc) {
    if (!loc || !*loc) return "is empty";
    if (loc[0] == '/' || loc[0] == '\\' || (loc[0] && loc[1] == ':'))
        return "is absolute; it must be relative to the model's directory";
    for (const char *p = loc; *p;) {
        const char *end = p;
        while (*end && *end != '/' && *end != '\\')
            end++;
        if (end - p == 2 && p[0] == '.' && p[1] == '.') return "leaves the model's directory";
        p = *end ? end + 1 : end;
    }
    return NULL;
}

static int read_external(kc_graph *g, const Onnx__TensorProto *t, const char *base_dir,
                         const char *what, size_t nbytes, void **out, kc_diag *d) {
    const char *location = NULL, *offset_s = NULL, *length_s = NULL;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e || !e->key) continue;
        if (strcmp(e->key, "location") == 0)
            location = e->value;
        else if (strcmp(e->key, "offset") == 0)
            offset_s = e->value;
        else if (strcmp(e->key, "length") == 0)
            length_s = e->value;
    }
    if (!location) {
        kc_error(d, "%s: external data has no 'location'", what);
        return 1;
    }
    const char *problem = location_problem(location);
    if (problem) {
        kc_error(d, "%s: external data path '%s' %s", what, location, problem);
        return 1;
    }
    uint64_t offset = 0, length = 0;
    if (offset_s && parse_u64(offset_s, &offset) != 0) {
        kc_error(d, "%s: external data offset '%s' is not a non-negative integer", what, offset_s);
        return 1;
    }
    if (length_s && parse_u64(length_s, &length) != 0) {
        kc_error(d, "%s: external data length '%s' is not a non-negative integer", what, length_s);
        return 1;
    }
    if (length_s && length != nbytes) {
        kc_error(d,
                 "%s: external data length %" PRIu64 " does not match the %zu bytes its dims "
                 "and type need",
                 what, length, nbytes);
        return 1;
    }
    if (!base_dir) {
        kc_error(d,
                 "%s: external data '%s' needs the model's directory, but no model path was given",
                 what, location);
        return 1;
    }
    const char *path = kc_sprintf(g, "%s/%s", base_dir, location);
    FILE *f = fopen(path, "rb");
    if (!f) {
        kc_error(d, "%s: cannot open external data file '%s': %s", what, path, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        kc_error(d, "%s: external data '%s' is not a regular file", what, path);
        fclose(f);
        return 1;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (offset > size || size - offset < nbytes) {
        kc_error(d,
                 "%s: external data file '%s' holds %" PRIu64 " bytes; the tensor needs %zu "
                 "bytes at offset %" PRIu64,
                 what, path, size, nbytes, offset);
        fclose(f);
        return 1;
    }
    void *data = kc_alloc(g, nbytes);
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(data, 1, nbytes, f) != nbytes) {
        kc_error(d, "%s: cannot read %zu bytes at offset %" PRIu64 " of '%s'", what, nbytes, offset,
                 path);
        fclose(f);
        return 1;
    }
    fclose(f);
    *out = data;
    return 0;
}

static int count_mismatch(kc_diag *d, const char *what, int dtype, int64_t numel, size_t have,
                          const char *field) {
    kc_error(d, "%s: %s tensor of %" PRId64 " elements has %zu values in %s", what,
             kc_dtype_name(dtype), numel, have, field);
    return 1;
}

/* The typed repeated fields. int32_data carries every type of 16 bits or less (float16 and
 * bfloat16 as bit patterns); uint64_data carries uint32 and uint64. */
/* Elements in the typed field that holds a tensor of dtype (copy_typed reads the same one). */
static size_t typed_count(const Onnx__TensorProto *t, int dtype) {
    switch (dtype) {
    case KC_DTYPE_FLOAT:
        return t->n_float_data;
    case KC_DTYPE_DOUBLE:
        return t->n_double_data;
    case KC_DTYPE_INT64:
        return t->n_int64_data;
    case KC_DTYPE_UINT64:
    case KC_DTYPE_UINT32:
        return t->n_uint64_data;
    default:
        return t->n_int32_data;
    }
}

static int copy_typed(const Onnx__TensorProto *t, const char *what, int dtype, int64_t numel,
                      void *dst, kc_diag *d) {
    size_t n = (size_t)numel;
    switch (dtype) {
    case KC_DTYPE_FLOAT:
        if (t->n_float_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_float_data, "float_data");
        if (n) memcpy(dst, t->float_data, n * sizeof(float));
        return 0;
    case KC_DTYPE_DOUBLE:
        if (t->n_double_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_double_data, "double_data");
        if (n) memcpy(dst, t->double_data, n * sizeof(double));
        return 0;
    case KC_DTYPE_INT64:
        if (t->n_int64_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_int64_data, "int64_data");
        if (n) memcpy(dst, t->int64_data, n * sizeof(int64_t));
        return 0;
    case KC_DTYPE_INT32:
        if (t->n_int32_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_int32_data, "int32_data");
        if (n) memcpy(dst, t->int32_data, n * sizeof(int32_t));
        return 0;
    case KC_DTYPE_UINT64:
        if (t->n_uint64_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_uint64_data, "uint64_data");
        if (n) memcpy(dst, t->uint64_data, n * sizeof(uint64_t));
        return 0;
    case KC_DTYPE_UINT32:
        if (t->n_uint64_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_uint64_data, "uint64_data");
        for (size_t i = 0; i < n; i++) {
            if (t->uint64_data[i] > UINT32_MAX) {
                kc_error(d, "%s: u32 element %zu holds %" PRIu64 ", out of range", what, i,
                         t->uint64_data[i]);
                return 1;
            }
            ((uint32_t *)dst)[i] = (uint32_t)t->uint64_data[i];
        }
        return 0;
    case KC_DTYPE_INT8:
    case KC_DTYPE_UINT8:
    case KC_DTYPE_BOOL:
    case KC_DTYPE_INT16:
    case KC_DTYPE_UINT16:
    case KC_DTYPE_FLOAT16:
    case KC_DTYPE_BFLOAT16: {
        if (t->n_int32_data != n)
            return count_mismatch(d, what, dtype, numel, t->n_int32_data, "int32_data");
        int32_t lo, hi;
        switch (dtype) {
        case KC_DTYPE_INT8:
            lo = INT8_MIN, hi = INT8_MAX;
            break;
        case KC_DTYPE_UINT8:
            lo = 0, hi = UINT8_MAX;
            break;
        case KC_DTYPE_BOOL:
            lo = INT32_MIN, hi = INT32_MAX;
            break;
        case KC_DTYPE_INT16:
            lo = INT16_MIN, hi = INT16_MAX;
            break;
        case KC_DTYPE_UINT16:
            lo = 0, hi = UINT16_MAX;
            break;
        default:
            lo = INT16_MIN, hi = UINT16_MAX;
            break; /* bit patterns, either signedness */
        }
        for (size_t i = 0; i < n; i++) {
            int32_t v = t->int32_data[i];
            if (v < lo || v > hi) {
                kc_error(d, "%s: %s element %zu holds %" PRId32 ", out of range", what,
                         kc_dtype_name(dtype), i, v);
                return 1;
            }
            if (dtype == KC_DTYPE_BOOL)
                ((uint8_t *)dst)[i] = v != 0;
            else if (kc_dtype_size(dtype) == 1)
                ((uint8_t *)dst)[i] = (uint8_t)v;
            else
                ((uint16_t *)dst)[i] = (uint16_t)v;
        }
        return 0;
    }
    default:
        kc_error(d, "%s: no typed field holds %s data", what, kc_dtype_name(dtype));
        return 1;
    }
}

int kc_tensor_from_onnx_as(kc_graph *g, const Onnx__TensorProto *t, const char *base_dir,
                           const char *what, kc_tensor *out, kc_diag *d) {
    memset(out, 0, sizeof *out);
    if (!t) {
        kc_error(d, "%s: missing tensor", what);
        return 1;
    }
    int dtype = t->has_data_type ? t->data_type : KC_DTYPE_UNDEFINED;
    if (dtype == KC_DTYPE_UNDEFINED) {
        kc_error(d, "%s: tensor has no data type", what);
        return 1;
    }
    if (dtype == KC_DTYPE_STRING) {
        kc_error(d, "%s: string tensors are not supported", what);
        return 1;
    }
    size_t esize = kc_dtype_size(dtype);
    if (esize == 0) {
        kc_error(d, "%s: tensor data type %d is not supported", what, dtype);
        return 1;
    }
    if (t->n_dims > KC_MAX_RANK) {
        kc_error(d, "%s: rank %zu exceeds the limit of %d", what, t->n_dims, KC_MAX_RANK);
        return 1;
    }
    const int64_t max_bytes = max_tensor_bytes();
    int64_t numel = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        int64_t dim = t->dims[i];
        if (dim < 0) {
            kc_error(d, "%s: dimension %zu is negative (%" PRId64 ")", what, i, dim);
            return 1;
        }
        if (dim > 0 && numel > max_bytes / (int64_t)esize / dim) {
            kc_error(d, "%s: dims describe more than %" PRId64 " bytes", what, max_bytes);
            return 1;
        }
        numel *= dim;
    }
    out->dtype = dtype;
    out->rank = (int)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++)
        out->dims[i] = t->dims[i];
    if (t->segment) {
        kc_error(d, "%s: segmented tensors are not supported", what);
        return 1;
    }

    size_t nbytes = (size_t)numel * esize;
    void *data = NULL;
    int is_external =
        t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (is_external) {
        if (read_external(g, t, base_dir, what, nbytes, &data, d) != 0) return 1;
        le_to_host(data, (size_t)numel, esize);
    } else if (t->has_raw_data) {
        if (t->raw_data.len != nbytes) {
            kc_error(d, "%s: raw_data holds %zu bytes; %" PRId64 " %s elements need %zu", what,
                     t->raw_data.len, numel, kc_dtype_name(dtype), nbytes);
            return 1;
        }
        if (nbytes) {
            data = kc_alloc(g, nbytes);
            memcpy(data, t->raw_data.data, nbytes);
            le_to_host(data, (size_t)numel, esize);
        }
    } else {
        /* the count first: dims may claim far more than the file holds */
        if (typed_count(t, dtype) != (size_t)numel) return copy_typed(t, what, dtype, numel, NULL, d);
        data = nbytes ? kc_alloc(g, nbytes) : NULL;
        if (copy_typed(t, what, dtype, numel, data, d) != 0) return 1;
    }
    out->data = numel > 0 ? data : NULL;
    return 0;
}

int kc_tensor_from_onnx(kc_graph *g, const Onnx__TensorProto *t, const char *base_dir,
                        kc_tensor *out, kc_diag *d) {
    char what[320];
    if (t && t->name && t->name[0])
        snprintf(what, sizeof what, "tensor '%s'", t->name);
    else
        snprintf(what, sizeof what, "tensor");
    return kc_tensor_from_onnx_as(g, t, base_dir, what, out, d);
}
