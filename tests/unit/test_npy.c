/* .npy reading and writing: round trips for every dtype, files written by numpy's own header
 * conventions (versions 1 and 2), and malformed headers that must be refused without a crash;
 * the host layer's model files and arenas. */
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

static void round_trip(uint32_t dtype, uint32_t rank, const uint32_t *dims) {
    kann_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    size_t size = kann_dtype_size(dtype);
    for (uint32_t k = 0; k < rank; k++) {
        t.dims[k] = dims[k];
        size *= dims[k];
    }
    uint8_t *data = malloc(size + 1);
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)(i * 37 + 11);
    if (dtype == KANN_DTYPE_BOOL)
        for (size_t i = 0; i < size; i++)
            data[i] &= 1;
    t.data = data;
    t.size = size;

    void *buf;
    size_t n;
    kann_error e;
    assert_int_equal(kann_host_npy_encode(&t, &buf, &n, &e), KANN_OK);
    assert_memory_equal(buf, "\x93NUMPY\x01\x00", 8);
    size_t header_len = ((uint8_t *)buf)[8] | ((uint8_t *)buf)[9] << 8;
    assert_int_equal((10 + header_len) % 64, 0);
    assert_int_equal(((char *)buf)[10 + header_len - 1], '\n');

    kann_host_tensor back;
    assert_int_equal(kann_host_npy_parse(buf, n, "mem.npy", &back, &e), KANN_OK);
    assert_int_equal(back.dtype, dtype);
    assert_int_equal(back.rank, rank);
    for (uint32_t k = 0; k < rank; k++)
        assert_int_equal(back.dims[k], dims[k]);
    assert_int_equal(back.size, size);
    assert_int_equal((uintptr_t)back.data % 64, 0);
    if (size) assert_memory_equal(back.data, data, size);
    assert_string_equal(back.name, "");
    kann_host_tensor_free(&back);
    free(buf);
    free(data);
}

static void test_round_trips(void **state) {
    (void)state;
    uint32_t d4[4] = {1, 3, 5, 7}, d1[1] = {10}, d0[1] = {0}, d8[8] = {1, 2, 1, 2, 1, 2, 1, 3};
    uint32_t dtypes[] = {KANN_DTYPE_F32,  KANN_DTYPE_I64, KANN_DTYPE_I32,
                         KANN_DTYPE_BOOL, KANN_DTYPE_U8,  KANN_DTYPE_I8};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        round_trip(dtypes[i], 4, d4);
        round_trip(dtypes[i], 1, d1);
        round_trip(dtypes[i], 0, NULL); /* a scalar */
        round_trip(dtypes[i], 1, d0);   /* no elements */
        round_trip(dtypes[i], 8, d8);
    }
}

static void test_file_round_trip(void **state) {
    (void)state;
    char dir[] = "/tmp/kann_npy_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.npy", dir);
    float v[6] = {1, -2, 3.5f, 0, 1e-30f, -1e30f};
    kann_tensor t = {.dtype = KANN_DTYPE_F32, .rank = 2, .dims = {2, 3}, .data = v, .size = 24};
    kann_error e;
    assert_int_equal(kann_host_npy_write(path, &t, &e), KANN_OK);
    kann_host_tensor back;
    assert_int_equal(kann_host_npy_read(path, &back, &e), KANN_OK);
    assert_memory_equal(back.data, v, sizeof v);
    kann_host_tensor_free(&back);
    assert_int_equal(kann_host_tensor_read(path, &back, &e), KANN_OK);
    assert_int_equal(back.dims[1], 3);
    kann_host_tensor_free(&back);
    unlink(path);
    rmdir(dir);
    /* A missing file is an I/O error naming it. */
    assert_int_equal(kann_host_npy_read(path, &back, &e), KANN_E_IO);
    assert_non_null(strstr(e.message, path));
    /* Writing where no directory exists fails the same way. */
    assert_int_equal(kann_host_npy_write(path, &t, &e), KANN_E_IO);
    assert_non_null(strstr(e.message, path));
    /* Size and shape must agree. */
    t.size = 20;
    assert_int_equal(kann_host_npy_write(path, &t, &e), KANN_E_ARGUMENT);
}

/* Model files and arenas of the host layer: a file of any size loads whole and 64-byte aligned
 * (small ones mapped, from 2 MiB up read into huge pages), and an arena of any size is zeroed,
 * 64-byte aligned and writable. */
static void test_host_files_and_arenas(void **state) {
    (void)state;
    char dir[] = "/tmp/kann_file_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/m.bin", dir);
    const size_t mib = (size_t)1 << 20;
    const size_t sizes[] = {0, 1, 100, 2 * mib - 1, 2 * mib, 3 * mib + 5};
    uint8_t *bytes = malloc(3 * mib + 5);
    assert_non_null(bytes);
    for (size_t i = 0; i < 3 * mib + 5; i++)
        bytes[i] = (uint8_t)(i * 131 + (i >> 12));
    kann_error e;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        assert_int_equal(kann_host_write_file_atomic(path, bytes, sizes[k], &e), KANN_OK);
        kann_host_file f;
        assert_int_equal(kann_host_file_load(path, &f, &e), KANN_OK);
        assert_int_equal(f.size, sizes[k]);
        if (sizes[k]) {
            assert_int_equal((uintptr_t)f.data % 64, 0);
            assert_memory_equal(f.data, bytes, sizes[k]);
        }
        kann_host_file_free(&f);
        uint8_t *arena = kann_host_arena_alloc(sizes[k]);
        assert_non_null(arena);
        assert_int_equal((uintptr_t)arena % 64, 0);
        for (size_t i = 0; i < sizes[k]; i++)
            assert_int_equal(arena[i], 0);
        memset(arena, 0xab, sizes[k]);
        kann_host_arena_free(arena);
    }
    free(bytes);
    unlink(path);
    rmdir(dir);
}

/* Builds a .npy file of the given version around a header dictionary and data bytes. */
static size_t make_npy(uint8_t *out, int version, const char *dict, const void *data,
                       size_t n_data) {
    size_t len = strlen(dict), pre = version == 1 ? 10 : 12;
    size_t header_len = (pre + len + 1 + 63) / 64 * 64 - pre;
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (uint8_t)version;
    out[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        out[8 + i] = (uint8_t)(header_len >> (8 * i));
    memcpy(out + pre, dict, len);
    memset(out + pre + len, ' ', header_len - len - 1);
    out[pre + header_len - 1] = '\n';
    memcpy(out + pre + header_len, data, n_data);
    return pre + header_len + n_data;
}

static void test_numpy_variants(void **state) {
    (void)state;
    uint8_t buf[512];
    int64_t v[3] = {-1, 2, 1LL << 40};
    kann_host_tensor t;
    kann_error e;
    /* Version 2, double quotes, keys in another order, no trailing comma. */
    size_t n = make_npy(buf, 2, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}",
                        v, sizeof v);
    assert_int_equal(kann_host_npy_parse(buf, n, "v2.npy", &t, &e), KANN_OK);
    assert_int_equal(t.dtype, KANN_DTYPE_I64);
    assert_memory_equal(t.data, v, sizeof v);
    kann_host_tensor_free(&t);
    /* Version 3 (UTF-8 header) is read like version 2. */
    n = make_npy(buf, 3, "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }", v,
                 sizeof v);
    assert_int_equal(kann_host_npy_parse(buf, n, "v3.npy", &t, &e), KANN_OK);
    assert_int_equal(t.rank, 2);
    kann_host_tensor_free(&t);
    /* Byte for byte what numpy 2 saves for np.arange(6, dtype='<f4').reshape(2, 3): its header
     * is padded to 128 bytes, not 64. */
    static const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    memcpy(buf, "\x93NUMPY\x01\x00v\x00", 10);
    memset(buf + 10, ' ', 118);
    memcpy(buf + 10, dict, strlen(dict));
    buf[127] = '\n';
    float f[6] = {0, 1, 2, 3, 4, 5};
    memcpy(buf + 128, f, sizeof f);
    assert_int_equal(kann_host_npy_parse(buf, 152, "numpy.npy", &t, &e), KANN_OK);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.dims[0], 2);
    assert_int_equal(t.dims[1], 3);
    assert_memory_equal(t.data, f, sizeof f);
    kann_host_tensor_free(&t);
}

typedef struct bad_npy {
    const char *what;
    int version;
    const char *dict;
    size_t n_data;
    kann_status want;
} bad_npy;

static const bad_npy bad_npys[] = {
    {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8,
     KANN_E_UNSUPPORTED},
    {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8,
     KANN_E_UNSUPPORTED},
    {"float64", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
     KANN_E_UNSUPPORTED},
    {"structured dtype", 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
     KANN_E_CORRUPT},
    {"missing shape", 1, "{'descr': '<f4', 'fortran_order': False, }", 8, KANN_E_CORRUPT},
    {"missing descr", 1, "{'fortran_order': False, 'shape': (2,), }", 8, KANN_E_CORRUPT},
    {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
     KANN_E_CORRUPT},
    {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8,
     KANN_E_CORRUPT},
    {"dim too large", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,), }", 8,
     KANN_E_CORRUPT},
    {"size overflow", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967295, 4294967295, 4294967295), }", 8,
     KANN_E_CORRUPT},
    {"rank 9", 1,
     "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", 4,
     KANN_E_CORRUPT},
    {"data short", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8,
     KANN_E_TRUNCATED},
    {"data long", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 8,
     KANN_E_CORRUPT},
    {"unterminated dict", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", 8,
     KANN_E_CORRUPT},
    {"unterminated string", 1, "{'descr': '<f4", 8, KANN_E_CORRUPT},
    {"bad tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", 8,
     KANN_E_CORRUPT},
    {"fortran not bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8,
     KANN_E_CORRUPT},
    {"not a dict", 1, "['descr', '<f4']", 8, KANN_E_CORRUPT},
    {"trailing text", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", 8,
     KANN_E_CORRUPT},
    {"version 4", 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8,
     KANN_E_UNSUPPORTED},
};

static void test_malformed_headers(void **state) {
    (void)state;
    uint8_t buf[1024], zeros[64] = {0};
    for (size_t i = 0; i < sizeof bad_npys / sizeof bad_npys[0]; i++) {
        const bad_npy *c = &bad_npys[i];
        size_t n = make_npy(buf, c->version, c->dict, zeros, c->n_data);
        kann_host_tensor t;
        kann_error e;
        memset(&e, 0, sizeof e);
        kann_status st = kann_host_npy_parse(buf, n, "bad.npy", &t, &e);
        print_message("  %-20s -> %s: %s\n", c->what, kann_status_name(st), e.message);
        if (st != c->want)
            fail_msg("%s: want %s, got %s (%s)", c->what, kann_status_name(c->want),
                     kann_status_name(st), e.message);
        assert_non_null(strstr(e.message, "bad.npy"));
        assert_null(t.data);
    }
}

static void test_lengths_never_trusted(void **state) {
    (void)state;
    uint8_t buf[256];
    float v[2] = {1, 2};
    size_t n =
        make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
    kann_host_tensor t;
    kann_error e;
    /* Every prefix is refused. */
    for (size_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        assert_int_not_equal(kann_host_npy_parse(copy, len, "cut.npy", &t, &e), KANN_OK);
        free(copy);
    }
    /* A header length pointing past the file. */
    buf[8] = 0xff;
    buf[9] = 0xff;
    assert_int_equal(kann_host_npy_parse(buf, n, "len.npy", &t, &e), KANN_E_TRUNCATED);
    /* Every single byte of the header replaced by every value: no crash, only statuses. */
    n = make_npy(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", v, sizeof v);
    uint8_t *copy = malloc(n);
    for (size_t i = 0; i < 74; i++)
        for (int b = 0; b < 256; b++) {
            memcpy(copy, buf, n);
            copy[i] = (uint8_t)b;
            if (kann_host_npy_parse(copy, n, "fuzz.npy", &t, &e) == KANN_OK)
                kann_host_tensor_free(&t);
        }
    free(copy);
    assert_int_equal(kann_host_npy_parse("\x93NUMPX", 6, "m.npy", &t, &e), KANN_E_CORRUPT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trips),           cmocka_unit_test(test_file_round_trip),
        cmocka_unit_test(test_host_files_and_arenas),
        cmocka_unit_test(test_numpy_variants),        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_lengths_never_trusted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
