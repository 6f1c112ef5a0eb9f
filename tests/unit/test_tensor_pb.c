/* ONNX TensorProto files: round trips through raw_data, the typed repeated fields, the ONNX
 * backend test data, and malformed or unsupported tensors refused with a status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kann_host.h"
#include "onnx.pb-c.h"

static void *pack(const Onnx__TensorProto *tp, size_t *n) {
    *n = onnx__tensor_proto__get_packed_size(tp);
    void *buf = malloc(*n ? *n : 1);
    onnx__tensor_proto__pack(tp, buf);
    return buf;
}

static void test_round_trip(void **state) {
    (void)state;
    int32_t v[6] = {-3, 0, 7, 1 << 30, -1, 42};
    kann_tensor t = {.name = "input:0",
                     .dtype = KANN_DTYPE_I32,
                     .rank = 3,
                     .dims = {1, 2, 3},
                     .data = v,
                     .size = sizeof v};
    void *buf;
    size_t n;
    kann_error e;
    assert_int_equal(kann_host_pb_encode(&t, &buf, &n, &e), KANN_OK);
    kann_host_tensor back;
    assert_int_equal(kann_host_pb_parse(buf, n, "mem.pb", &back, &e), KANN_OK);
    assert_string_equal(back.name, "input:0");
    assert_int_equal(back.dtype, KANN_DTYPE_I32);
    assert_int_equal(back.rank, 3);
    assert_int_equal(back.dims[2], 3);
    assert_int_equal(back.size, sizeof v);
    assert_memory_equal(back.data, v, sizeof v);
    kann_host_tensor_free(&back);
    free(buf);

    /* Through a file, read by content detection. */
    char dir[] = "/tmp/kann_pb_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/input_0.pb", dir);
    assert_int_equal(kann_host_pb_write(path, &t, &e), KANN_OK);
    assert_int_equal(kann_host_tensor_read(path, &back, &e), KANN_OK);
    assert_memory_equal(back.data, v, sizeof v);
    kann_host_tensor_free(&back);
    assert_int_equal(kann_host_pb_read(path, &back, &e), KANN_OK);
    kann_host_tensor_free(&back);
    unlink(path);
    rmdir(dir);
    assert_int_equal(kann_host_pb_read(path, &back, &e), KANN_E_IO);
    assert_non_null(strstr(e.message, path));
}

static void test_typed_fields(void **state) {
    (void)state;
    int64_t dims[2] = {2, 2};
    kann_host_tensor t;
    kann_error e;
    size_t n;
    void *buf;

    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.n_dims = 2;
    tp.dims = dims;
    tp.has_data_type = 1;

    float f[4] = {1.5f, -2, 0, 3};
    tp.data_type = KANN_DTYPE_F32;
    tp.n_float_data = 4;
    tp.float_data = f;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "f.pb", &t, &e), KANN_OK);
    assert_memory_equal(t.data, f, sizeof f);
    kann_host_tensor_free(&t);
    free(buf);
    tp.n_float_data = 0;

    int64_t l[4] = {1, -2, 1LL << 40, 0};
    tp.data_type = KANN_DTYPE_I64;
    tp.n_int64_data = 4;
    tp.int64_data = l;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "l.pb", &t, &e), KANN_OK);
    assert_memory_equal(t.data, l, sizeof l);
    kann_host_tensor_free(&t);
    free(buf);
    tp.n_int64_data = 0;

    /* Bytes (bool, uint8, int8) are one int32_data entry each. */
    int32_t bytes[4] = {1, 0, 255, 1};
    tp.data_type = KANN_DTYPE_U8;
    tp.n_int32_data = 4;
    tp.int32_data = bytes;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "u8.pb", &t, &e), KANN_OK);
    assert_int_equal(t.size, 4);
    assert_memory_equal(t.data, "\x01\x00\xff\x01", 4);
    kann_host_tensor_free(&t);
    free(buf);

    /* Too few elements for the shape. */
    tp.n_int32_data = 3;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "short.pb", &t, &e), KANN_E_CORRUPT);
    assert_non_null(strstr(e.message, "int32_data"));
    free(buf);
}

static void test_rejects(void **state) {
    (void)state;
    kann_host_tensor t;
    kann_error e;
    size_t n;
    void *buf;
    int64_t dims[2] = {2, 3};
    uint8_t raw[48] = {0};

    Onnx__TensorProto tp = ONNX__TENSOR_PROTO__INIT;
    tp.n_dims = 2;
    tp.dims = dims;
    tp.has_data_type = 1;
    tp.data_type = KANN_DTYPE_F32;
    tp.has_raw_data = 1;
    tp.raw_data.data = raw;
    tp.raw_data.len = 20; /* the shape needs 24 */
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "raw.pb", &t, &e), KANN_E_CORRUPT);
    assert_non_null(strstr(e.message, "raw.pb"));
    assert_null(t.data);
    free(buf);

    tp.raw_data.len = 48;
    tp.data_type = 11; /* DOUBLE */
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "double.pb", &t, &e), KANN_E_UNSUPPORTED);
    free(buf);

    tp.data_type = KANN_DTYPE_F32;
    tp.raw_data.len = 24;
    dims[0] = -2;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "neg.pb", &t, &e), KANN_E_CORRUPT);
    free(buf);
    dims[0] = 2;

    tp.has_data_location = 1;
    tp.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "ext.pb", &t, &e), KANN_E_UNSUPPORTED);
    free(buf);
    tp.has_data_location = 0;

    int64_t many[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tp.n_dims = 9;
    tp.dims = many;
    tp.raw_data.len = 4;
    buf = pack(&tp, &n);
    assert_int_equal(kann_host_pb_parse(buf, n, "rank.pb", &t, &e), KANN_E_UNSUPPORTED);
    free(buf);

    /* Not a protobuf at all, and every prefix of a valid one: statuses, never a crash. */
    assert_int_equal(kann_host_pb_parse("\xff\xff\xff\xff\xff", 5, "junk.pb", &t, &e),
                     KANN_E_CORRUPT);
    float f[6] = {1, 2, 3, 4, 5, 6};
    kann_tensor ok = {.name = "x",
                      .dtype = KANN_DTYPE_F32,
                      .rank = 2,
                      .dims = {2, 3},
                      .data = f,
                      .size = sizeof f};
    assert_int_equal(kann_host_pb_encode(&ok, &buf, &n, &e), KANN_OK);
    for (size_t len = 0; len < n; len++)
        if (kann_host_pb_parse(buf, len, "cut.pb", &t, &e) == KANN_OK) kann_host_tensor_free(&t);
    uint8_t *copy = malloc(n);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 256; b += 3) {
            memcpy(copy, buf, n);
            copy[i] = (uint8_t)b;
            if (kann_host_pb_parse(copy, n, "fuzz.pb", &t, &e) == KANN_OK)
                kann_host_tensor_free(&t);
        }
    free(copy);
    free(buf);
}

/* A tensor from the ONNX backend test data (Debian libonnx-testdata), when installed. */
static void test_backend_test_data(void **state) {
    (void)state;
    const char *path = "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/input_0.pb";
    if (access(path, R_OK) != 0) skip();
    kann_host_tensor t;
    kann_error e;
    assert_int_equal(kann_host_tensor_read(path, &t, &e), KANN_OK);
    assert_string_equal(t.name, "x");
    assert_int_equal(t.dtype, KANN_DTYPE_F32);
    assert_int_equal(t.rank, 3);
    assert_int_equal(t.dims[0], 3);
    assert_int_equal(t.dims[1], 4);
    assert_int_equal(t.dims[2], 5);
    assert_float_equal(((float *)t.data)[0], 1.7640524f, 1e-7);
    kann_host_tensor_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_typed_fields),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_backend_test_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
