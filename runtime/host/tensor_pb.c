/* ONNX TensorProto files (the backend test data's input_N.pb / output_N.pb), through the
 * protobuf-c code generated from schemas/onnx.proto. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_private.h"
#include "onnx.pb-c.h"

static int pb_dtype_known(int32_t data_type) {
    switch (data_type) {
    case KANN_DTYPE_F32:
    case KANN_DTYPE_U8:
    case KANN_DTYPE_I8:
    case KANN_DTYPE_I32:
    case KANN_DTYPE_I64:
    case KANN_DTYPE_BOOL:
        return 1; /* kann_dtype values are TensorProto.DataType values */
    default:
        return 0;
    }
}

/* The typed repeated field that data_type uses: its name, and in *n its element count. */
static const char *typed_field(const Onnx__TensorProto *tp, size_t *n) {
    switch (tp->data_type) {
    case KANN_DTYPE_F32:
        *n = tp->n_float_data;
        return "float_data";
    case KANN_DTYPE_I64:
        *n = tp->n_int64_data;
        return "int64_data";
    default: /* i32, and u8, i8, bool: one element per int32_data entry */
        *n = tp->n_int32_data;
        return "int32_data";
    }
}

/* Copies the typed repeated field that data_type uses into dst (count elements). */
static const char *copy_typed(const Onnx__TensorProto *tp, void *dst, uint64_t count) {
    size_t stored;
    const char *field = typed_field(tp, &stored);
    if (stored != count) return field;
    if (count == 0) return NULL; /* an empty repeated field has a NULL array */
    switch (tp->data_type) {
    case KANN_DTYPE_F32:
        if (tp->n_float_data != count) return "float_data";
        memcpy(dst, tp->float_data, (size_t)count * sizeof(float));
        return NULL;
    case KANN_DTYPE_I64:
        if (tp->n_int64_data != count) return "int64_data";
        memcpy(dst, tp->int64_data, (size_t)count * sizeof(int64_t));
        return NULL;
    case KANN_DTYPE_I32:
        if (tp->n_int32_data != count) return "int32_data";
        memcpy(dst, tp->int32_data, (size_t)count * sizeof(int32_t));
        return NULL;
    default: /* u8, i8, bool: one element per int32_data entry */
        if (tp->n_int32_data != count) return "int32_data";
        for (uint64_t i = 0; i < count; i++)
            ((uint8_t *)dst)[i] = (uint8_t)tp->int32_data[i];
        return NULL;
    }
}

kann_status kann_host_pb_parse(const void *bytes, size_t n, const char *what, kann_host_tensor *t,
                               kann_error *err) {
    memset(t, 0, sizeof *t);
    if (!what) what = "(TensorProto)";
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, n, bytes);
    if (!tp) return kann_host_fail(err, KANN_E_CORRUPT, "%s: not a valid TensorProto", what);
    kann_status st = KANN_E_CORRUPT;
    const char *why = NULL;
    char msg[128];
    size_t esize = 0;
    uint64_t count = 1;
    if (!tp->has_data_type || !pb_dtype_known(tp->data_type)) {
        snprintf(msg, sizeof msg,
                 "data type %d is not supported (float, int64, int32, bool, "
                 "uint8, int8)",
                 tp->has_data_type ? tp->data_type : 0);
        why = msg;
        st = KANN_E_UNSUPPORTED;
        goto done;
    }
    if (tp->segment || (tp->has_data_location &&
                        tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)) {
        why = "segmented or external data is not supported";
        st = KANN_E_UNSUPPORTED;
        goto done;
    }
    if (tp->n_dims > KANN_MAX_IO_RANK) {
        why = "rank is over 8";
        st = KANN_E_UNSUPPORTED;
        goto done;
    }
    esize = kann_dtype_size((uint32_t)tp->data_type);
    for (size_t k = 0; k < tp->n_dims; k++) {
        if (tp->dims[k] < 0 || tp->dims[k] > UINT32_MAX) {
            why = "a dimension is negative or over 2^32 - 1";
            goto done;
        }
        if (tp->dims[k] != 0 && count > UINT64_MAX / 8 / (uint64_t)tp->dims[k]) {
            why = "the element count overflows";
            goto done;
        }
        count *= (uint64_t)tp->dims[k];
        t->dims[k] = (uint32_t)tp->dims[k];
    }
    uint64_t size = count * esize;
    /* The data must be there before anything is allocated for it: a few bytes of header can
     * claim a shape of any size. */
    size_t stored;
    const char *field = typed_field(tp, &stored);
    if (tp->has_raw_data ? tp->raw_data.len != size : stored != count) {
        if (tp->has_raw_data)
            snprintf(msg, sizeof msg, "raw_data has %zu bytes, the shape needs %llu",
                     tp->raw_data.len, (unsigned long long)size);
        else
            snprintf(msg, sizeof msg, "%s does not hold the shape's %llu elements", field,
                     (unsigned long long)count);
        why = msg;
        goto done;
    }
    if (size > SIZE_MAX - 64) {
        why = "the tensor is too large";
        goto done;
    }
    t->data = aligned_alloc(64, size ? (size_t)(size + 63) / 64 * 64 : 64);
    t->name = strdup(tp->name ? tp->name : "");
    if (!t->data || !t->name) {
        why = "out of memory";
        st = KANN_E_IO;
        goto done;
    }
    if (tp->has_raw_data) {
        if (tp->raw_data.len != size) {
            snprintf(msg, sizeof msg, "raw_data has %zu bytes, the shape needs %llu",
                     tp->raw_data.len, (unsigned long long)size);
            why = msg;
            goto done;
        }
        if (size) memcpy(t->data, tp->raw_data.data, (size_t)size);
    } else {
        field = copy_typed(tp, t->data, count);
        if (field) {
            snprintf(msg, sizeof msg, "%s does not hold the shape's %llu elements", field,
                     (unsigned long long)count);
            why = msg;
            goto done;
        }
    }
    t->dtype = (uint32_t)tp->data_type;
    t->rank = (uint32_t)tp->n_dims;
    t->size = (size_t)size;
    st = KANN_OK;
done:
    onnx__tensor_proto__free_unpacked(tp, NULL);
    if (st != KANN_OK) {
        kann_host_tensor_free(t);
        return kann_host_fail(err, st, "%s: %s", what, why);
    }
    return KANN_OK;
}

kann_status kann_host_pb_read(const char *path, kann_host_tensor *t, kann_error *err) {
    void *data;
    size_t n;
    memset(t, 0, sizeof *t);
    kann_status st = kann_host_read_all(path, &data, &n, err);
    if (st != KANN_OK) return st;
    st = kann_host_pb_parse(data, n, path, t, err);
    free(data);
    return st;
}

kann_status kann_host_pb_encode(const kann_tensor *t, void **out, size_t *out_size,
                                kann_error *err) {
    *out = NULL;
    *out_size = 0;
    if (!pb_dtype_known((int32_t)t->dtype) || t->rank > KANN_MAX_IO_RANK)
        return kann_host_fail(err, KANN_E_ARGUMENT, "TensorProto: bad dtype %u or rank %u",
                              t->dtype, t->rank);
    int64_t dims[KANN_MAX_IO_RANK];
    uint64_t size = kann_dtype_size(t->dtype);
    for (uint32_t k = 0; k < t->rank; k++) {
        dims[k] = t->dims[k];
        size *= t->dims[k];
    }
    if (size != t->size)
        return kann_host_fail(err, KANN_E_ARGUMENT,
                              "TensorProto: %zu bytes given, the shape "
                              "needs %llu",
                              t->size, (unsigned long long)size);
    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.n_dims = t->rank;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = (int32_t)t->dtype;
    tp.name = (char *)(t->name ? t->name : "");
    tp.has_raw_data = 1;
    tp.raw_data.len = t->size;
    tp.raw_data.data = t->data;
    size_t n = onnx__tensor_proto__get_packed_size(&tp);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) return kann_host_fail(err, KANN_E_IO, "TensorProto: out of memory");
    onnx__tensor_proto__pack(&tp, buf);
    *out = buf;
    *out_size = n;
    return KANN_OK;
}

kann_status kann_host_pb_write(const char *path, const kann_tensor *t, kann_error *err) {
    void *buf;
    size_t n;
    kann_status st = kann_host_pb_encode(t, &buf, &n, err);
    if (st != KANN_OK) return st;
    st = kann_host_write_file_atomic(path, buf, n, err);
    free(buf);
    return st;
}
