/* .npy tensor files (NumPy format versions 1-3): a strict reader that never trusts a length,
 * and a writer producing what numpy.save writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_private.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_SIZE 6
#define NPY_MAX_HEADER (1u << 20) /* numpy itself refuses headers over 10000 bytes by default */

static const struct {
    const char *descr;
    uint32_t dtype;
} npy_dtypes[] = {
    {"<f4", KANN_DTYPE_F32},  {"<i8", KANN_DTYPE_I64}, {"<i4", KANN_DTYPE_I32},
    {"|b1", KANN_DTYPE_BOOL}, {"|u1", KANN_DTYPE_U8},  {"|i1", KANN_DTYPE_I8},
};
#define N_NPY_DTYPES (sizeof npy_dtypes / sizeof npy_dtypes[0])

/* ---- the header dictionary: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } ---- */

typedef struct npy_lexer {
    const char *p, *end;
} npy_lexer;

static void skip_space(npy_lexer *lx) {
    while (lx->p < lx->end && (*lx->p == ' ' || *lx->p == '\t' || *lx->p == '\n' || *lx->p == '\r'))
        lx->p++;
}

static int eat(npy_lexer *lx, char c) {
    skip_space(lx);
    if (lx->p < lx->end && *lx->p == c) {
        lx->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes (all that numpy writes for these keys). */
static int parse_string(npy_lexer *lx, char *out, size_t cap) {
    skip_space(lx);
    if (lx->p >= lx->end || (*lx->p != '\'' && *lx->p != '"')) return 0;
    char q = *lx->p++;
    size_t n = 0;
    while (lx->p < lx->end && *lx->p != q) {
        if (*lx->p == '\\' || n + 1 >= cap) return 0;
        out[n++] = *lx->p++;
    }
    if (lx->p >= lx->end) return 0;
    lx->p++;
    out[n] = '\0';
    return 1;
}

static int parse_word(npy_lexer *lx, const char *word) {
    skip_space(lx);
    size_t n = strlen(word);
    if ((size_t)(lx->end - lx->p) < n || memcmp(lx->p, word, n) != 0) return 0;
    lx->p += n;
    return 1;
}

/* (d0, d1, ...) with an optional trailing comma; () is a scalar. */
static int parse_shape(npy_lexer *lx, uint32_t *rank, uint32_t *dims, const char **why) {
    *rank = 0;
    if (!eat(lx, '(')) {
        *why = "shape is not a tuple";
        return 0;
    }
    for (;;) {
        if (eat(lx, ')')) return 1;
        skip_space(lx);
        if (lx->p >= lx->end || *lx->p < '0' || *lx->p > '9') {
            *why = "shape holds something other than non-negative integers";
            return 0;
        }
        uint64_t v = 0;
        while (lx->p < lx->end && *lx->p >= '0' && *lx->p <= '9') {
            v = v * 10 + (uint64_t)(*lx->p++ - '0');
            if (v > UINT32_MAX) {
                *why = "a dimension is larger than 2^32 - 1";
                return 0;
            }
        }
        if (*rank == KANN_MAX_IO_RANK) {
            *why = "rank is over 8";
            return 0;
        }
        dims[(*rank)++] = (uint32_t)v;
        if (eat(lx, ')')) return 1;
        if (!eat(lx, ',')) {
            *why = "shape tuple is malformed";
            return 0;
        }
    }
}

kann_status kann_host_npy_parse(const void *bytes, size_t n, const char *what, kann_host_tensor *t,
                                kann_error *err) {
    const uint8_t *b = bytes;
    memset(t, 0, sizeof *t);
    if (!what) what = "(npy)";
    if (n < NPY_MAGIC_SIZE + 2 || memcmp(b, NPY_MAGIC, NPY_MAGIC_SIZE) != 0)
        return kann_host_fail(err, KANN_E_CORRUPT, "%s: not a .npy file (bad magic)", what);
    uint8_t major = b[6];
    size_t header_len, pos;
    if (major == 1) {
        if (n < 10) return kann_host_fail(err, KANN_E_TRUNCATED, "%s: truncated header", what);
        header_len = (size_t)b[8] | (size_t)b[9] << 8;
        pos = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return kann_host_fail(err, KANN_E_TRUNCATED, "%s: truncated header", what);
        header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        pos = 12;
    } else {
        return kann_host_fail(err, KANN_E_UNSUPPORTED, "%s: .npy format version %u is not known",
                              what, major);
    }
    if (header_len > NPY_MAX_HEADER || header_len > n - pos)
        return kann_host_fail(err, KANN_E_TRUNCATED,
                              "%s: header of %zu bytes does not fit the %zu-byte file", what,
                              header_len, n);

    npy_lexer lx = {(const char *)b + pos, (const char *)b + pos + header_len};
    char key[32], descr[16] = "";
    int fortran = -1, have_shape = 0;
    uint32_t rank = 0, dims[KANN_MAX_IO_RANK] = {0};
    const char *why = "the header is not a {'descr', 'fortran_order', 'shape'} dictionary";
    if (!eat(&lx, '{')) goto bad;
    while (!eat(&lx, '}')) {
        if (!parse_string(&lx, key, sizeof key) || !eat(&lx, ':')) goto bad;
        /* A repeated key would leave a mix of two values (dims of two shapes). */
        if ((strcmp(key, "descr") == 0 && descr[0]) ||
            (strcmp(key, "fortran_order") == 0 && fortran >= 0) ||
            (strcmp(key, "shape") == 0 && have_shape)) {
            why = "the header repeats a key";
            goto bad;
        }
        if (strcmp(key, "descr") == 0) {
            if (!parse_string(&lx, descr, sizeof descr)) {
                why = "descr is not a simple type string";
                goto bad;
            }
        } else if (strcmp(key, "fortran_order") == 0) {
            if (parse_word(&lx, "True"))
                fortran = 1;
            else if (parse_word(&lx, "False"))
                fortran = 0;
            else
                goto bad;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_shape(&lx, &rank, dims, &why)) goto bad;
            have_shape = 1;
        } else {
            why = "the header has an unknown key";
            goto bad;
        }
        if (!eat(&lx, ',')) {
            if (!eat(&lx, '}')) goto bad;
            break;
        }
    }
    skip_space(&lx);
    if (lx.p != lx.end) {
        why = "bytes follow the header dictionary";
        goto bad;
    }
    if (!descr[0] || fortran < 0 || !have_shape) {
        why = "the header lacks descr, fortran_order or shape";
        goto bad;
    }
    if (fortran)
        return kann_host_fail(err, KANN_E_UNSUPPORTED,
                              "%s: Fortran-order arrays are not supported (save in C order)", what);
    uint32_t dtype = 0;
    for (size_t i = 0; i < N_NPY_DTYPES; i++)
        if (strcmp(descr, npy_dtypes[i].descr) == 0) dtype = npy_dtypes[i].dtype;
    if (!dtype)
        return kann_host_fail(err, KANN_E_UNSUPPORTED,
                              "%s: dtype '%s' is not supported (float32, int64, int32, bool, "
                              "uint8, int8; little-endian)",
                              what, descr);

    uint64_t size = kann_dtype_size(dtype);
    for (uint32_t k = 0; k < rank; k++) {
        if (dims[k] != 0 && size > UINT64_MAX / dims[k]) {
            why = "the shape's size overflows";
            goto bad;
        }
        size *= dims[k];
    }
    size_t data_pos = pos + header_len;
    if (size != n - data_pos)
        return kann_host_fail(err, size > n - data_pos ? KANN_E_TRUNCATED : KANN_E_CORRUPT,
                              "%s: %zu data bytes, shape and dtype need %llu", what, n - data_pos,
                              (unsigned long long)size);

    t->name = calloc(1, 1);
    t->data = aligned_alloc(64, size ? (size + 63) / 64 * 64 : 64);
    if (!t->name || !t->data) {
        kann_host_tensor_free(t);
        return kann_host_fail(err, KANN_E_IO, "%s: out of memory", what);
    }
    if (size) memcpy(t->data, b + data_pos, size);
    t->dtype = dtype;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof dims);
    t->size = size;
    return KANN_OK;
bad:
    return kann_host_fail(err, KANN_E_CORRUPT, "%s: malformed .npy header: %s", what, why);
}

kann_status kann_host_npy_read(const char *path, kann_host_tensor *t, kann_error *err) {
    void *data;
    size_t n;
    memset(t, 0, sizeof *t);
    kann_status st = kann_host_read_all(path, &data, &n, err);
    if (st != KANN_OK) return st;
    st = kann_host_npy_parse(data, n, path, t, err);
    free(data);
    return st;
}

kann_status kann_host_npy_encode(const kann_tensor *t, void **out, size_t *out_size,
                                 kann_error *err) {
    *out = NULL;
    *out_size = 0;
    const char *descr = NULL;
    for (size_t i = 0; i < N_NPY_DTYPES; i++)
        if (npy_dtypes[i].dtype == t->dtype) descr = npy_dtypes[i].descr;
    if (!descr)
        return kann_host_fail(err, KANN_E_UNSUPPORTED, "npy: dtype %u has no .npy form", t->dtype);
    if (t->rank > KANN_MAX_IO_RANK)
        return kann_host_fail(err, KANN_E_ARGUMENT, "npy: rank %u is over %d", t->rank,
                              KANN_MAX_IO_RANK);
    uint64_t size = kann_dtype_size(t->dtype);
    for (uint32_t k = 0; k < t->rank; k++)
        size *= t->dims[k];
    if (size != t->size)
        return kann_host_fail(err, KANN_E_ARGUMENT, "npy: %zu bytes given, the shape needs %llu",
                              t->size, (unsigned long long)size);

    char dict[256];
    int len =
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint32_t k = 0; k < t->rank; k++)
        len += snprintf(dict + len, sizeof dict - (size_t)len, "%s%u", k ? ", " : "", t->dims[k]);
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%s), }", t->rank == 1 ? "," : "");
    /* Version 1 header, padded with spaces and a newline so the data starts 64-aligned. */
    size_t header_len = ((size_t)10 + (size_t)len + 1 + 63) / 64 * 64 - 10;
    size_t total = 10 + header_len + t->size;
    uint8_t *buf = malloc(total);
    if (!buf) return kann_host_fail(err, KANN_E_IO, "npy: out of memory");
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_SIZE);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (uint8_t)(header_len & 0xff);
    buf[9] = (uint8_t)(header_len >> 8);
    memcpy(buf + 10, dict, (size_t)len);
    memset(buf + 10 + len, ' ', header_len - (size_t)len - 1);
    buf[10 + header_len - 1] = '\n';
    if (t->size) memcpy(buf + 10 + header_len, t->data, t->size);
    *out = buf;
    *out_size = total;
    return KANN_OK;
}

kann_status kann_host_npy_write(const char *path, const kann_tensor *t, kann_error *err) {
    void *buf;
    size_t n;
    kann_status st = kann_host_npy_encode(t, &buf, &n, err);
    if (st != KANN_OK) {
        if (err) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            kann_host_fail(err, st, "%s: %s", path, msg);
        }
        return st;
    }
    st = kann_host_write_file_atomic(path, buf, n, err);
    free(buf);
    return st;
}
