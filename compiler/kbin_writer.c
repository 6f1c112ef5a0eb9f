/* kbin_writer: lays out a model.bin (schemas/model-format.md) from the pieces the emitter
 * adds, computes its CRCs, and writes files without ever leaving a partial one. */
#define _POSIX_C_SOURCE 200809L
#include "kbin_writer.h"

#include "kann_kernels.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KBIN_MAX_STREAM_INDEX 65535u
#define KBIN_MAX_EXTRA_SECTIONS 16

typedef struct kbin_buf {
    uint8_t *data;
    size_t len, cap;
} kbin_buf;

typedef struct kbin_stream {
    kann_record *records;
    size_t n, cap;
} kbin_stream;

typedef struct kbin_extra {
    uint32_t kind;
    kbin_buf bytes;
} kbin_extra;

struct kbin_writer {
    uint64_t arena_size;
    uint32_t n_streams, n_phases;
    int streams_set;
    uint16_t major, minor;
    kbin_buf meta, consts, args, names;
    kbin_buf inputs, outputs; /* kann_io_desc arrays */
    kbin_stream *streams;
    uint32_t n_stream_slots;
    /* NAMES dedup: open addressing over offsets into names (0 = empty slot). */
    uint32_t *name_slots;
    size_t name_cap, name_count;
    kbin_extra extras[KBIN_MAX_EXTRA_SECTIONS];
    uint32_t n_extras;
    char error[256];
};

__attribute__((format(printf, 2, 3))) static int fail(kbin_writer *w, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int buf_reserve(kbin_buf *b, size_t extra) {
    if (extra > SIZE_MAX - b->len) return -1;
    size_t need = b->len + extra;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static int buf_append(kbin_buf *b, const void *data, size_t n) {
    if (buf_reserve(b, n) != 0) return -1;
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    return 0;
}

static int buf_align(kbin_buf *b, size_t align) {
    size_t pad = (align - b->len % align) % align;
    if (pad == 0) return 0;
    if (buf_reserve(b, pad) != 0) return -1;
    memset(b->data + b->len, 0, pad);
    b->len += pad;
    return 0;
}

kbin_writer *kbin_writer_new(void) {
    kbin_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->major = KANN_FORMAT_MAJOR;
    w->minor = KANN_FORMAT_MINOR;
    /* NAMES starts with the empty string: offset 0 means "no name". */
    if (buf_append(&w->names, "", 1) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

void kbin_writer_free(kbin_writer *w) {
    if (!w) return;
    free(w->meta.data);
    free(w->consts.data);
    free(w->args.data);
    free(w->names.data);
    free(w->inputs.data);
    free(w->outputs.data);
    for (uint32_t i = 0; i < w->n_stream_slots; i++)
        free(w->streams[i].records);
    free(w->streams);
    free(w->name_slots);
    for (uint32_t i = 0; i < w->n_extras; i++)
        free(w->extras[i].bytes.data);
    free(w);
}

const char *kbin_writer_error(const kbin_writer *w) {
    return w ? w->error : "no writer";
}

void kbin_set_arena_size(kbin_writer *w, uint64_t arena_size) {
    w->arena_size = arena_size;
}

void kbin_set_streams(kbin_writer *w, uint32_t n_streams, uint32_t n_phases) {
    w->n_streams = n_streams;
    w->n_phases = n_phases;
    w->streams_set = 1;
}

void kbin_set_version(kbin_writer *w, uint16_t major, uint16_t minor) {
    w->major = major;
    w->minor = minor;
}

int kbin_add_meta(kbin_writer *w, const char *key, const char *value) {
    if (!key || !*key || strchr(key, '='))
        return fail(w, "META key '%s' is empty or holds '='", key ? key : "(null)");
    if (!value) value = "";
    size_t nk = strlen(key), nv = strlen(value);
    if (buf_append(&w->meta, key, nk) != 0 || buf_append(&w->meta, "=", 1) != 0 ||
        buf_append(&w->meta, value, nv + 1) != 0)
        return fail(w, "out of memory");
    return 0;
}

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static int names_grow(kbin_writer *w) {
    size_t cap = w->name_cap ? w->name_cap * 2 : 64;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < w->name_cap; i++) {
        uint32_t off = w->name_slots[i];
        if (!off) continue;
        size_t j = name_hash((const char *)w->names.data + off) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = off;
    }
    free(w->name_slots);
    w->name_slots = slots;
    w->name_cap = cap;
    return 0;
}

int kbin_add_name(kbin_writer *w, const char *s, uint32_t *offset) {
    if (!s || !*s) {
        *offset = 0;
        return 0;
    }
    size_t n = strlen(s);
    if (n > KANN_MAX_NAME) return fail(w, "name of %zu bytes is longer than %d", n, KANN_MAX_NAME);
    if ((w->name_count + 1) * 2 > w->name_cap && names_grow(w) != 0)
        return fail(w, "out of memory");
    size_t j = name_hash(s) & (w->name_cap - 1);
    while (w->name_slots[j]) {
        if (strcmp((const char *)w->names.data + w->name_slots[j], s) == 0) {
            *offset = w->name_slots[j];
            return 0;
        }
        j = (j + 1) & (w->name_cap - 1);
    }
    if (w->names.len + n + 1 > UINT32_MAX) return fail(w, "NAMES is over 4 GiB");
    uint32_t off = (uint32_t)w->names.len;
    if (buf_append(&w->names, s, n + 1) != 0) return fail(w, "out of memory");
    w->name_slots[j] = off;
    w->name_count++;
    *offset = off;
    return 0;
}

int kbin_add_const(kbin_writer *w, const void *data, size_t n, uint64_t *offset) {
    if (buf_align(&w->consts, KANN_SECTION_ALIGN) != 0) return fail(w, "out of memory");
    *offset = w->consts.len;
    if (buf_append(&w->consts, data, n) != 0) return fail(w, "out of memory");
    return 0;
}

int kbin_add_args(kbin_writer *w, const void *args, size_t n, uint32_t *offset) {
    if (buf_align(&w->args, KANN_ARGS_ALIGN) != 0) return fail(w, "out of memory");
    if (w->args.len + n > UINT32_MAX) return fail(w, "ARGS is over 4 GiB");
    *offset = (uint32_t)w->args.len;
    if (buf_append(&w->args, args, n) != 0) return fail(w, "out of memory");
    return 0;
}

int kbin_add_io(kbin_writer *w, kann_io_kind kind, const char *name, uint32_t dtype, uint32_t rank,
                const uint32_t *dims, uint64_t arena_offset) {
    if (rank > KANN_MAX_IO_RANK)
        return fail(w, "io '%s': rank %u is over %d", name, rank, KANN_MAX_IO_RANK);
    kann_io_desc d;
    memset(&d, 0, sizeof d);
    if (kbin_add_name(w, name, &d.name) != 0) return -1;
    d.dtype = dtype;
    d.rank = rank;
    uint64_t size = kann_dtype_size(dtype);
    for (uint32_t k = 0; k < rank; k++) {
        d.dims[k] = dims[k];
        size *= dims[k];
    }
    d.offset = arena_offset;
    d.size = size;
    kbin_buf *b = kind == KANN_IO_INPUT ? &w->inputs : &w->outputs;
    if (buf_append(b, &d, sizeof d) != 0) return fail(w, "out of memory");
    return 0;
}

static kbin_stream *stream_at(kbin_writer *w, uint32_t stream) {
    if (stream > KBIN_MAX_STREAM_INDEX) {
        fail(w, "stream index %u is too large", stream);
        return NULL;
    }
    if (stream >= w->n_stream_slots) {
        kbin_stream *s = realloc(w->streams, (stream + 1) * sizeof *s);
        if (!s) {
            fail(w, "out of memory");
            return NULL;
        }
        memset(s + w->n_stream_slots, 0, (stream + 1 - w->n_stream_slots) * sizeof *s);
        w->streams = s;
        w->n_stream_slots = stream + 1;
    }
    return &w->streams[stream];
}

int kbin_add_record(kbin_writer *w, uint32_t stream, const kann_record *r) {
    kbin_stream *s = stream_at(w, stream);
    if (!s) return -1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        kann_record *p = realloc(s->records, cap * sizeof *p);
        if (!p) return fail(w, "out of memory");
        s->records = p;
        s->cap = cap;
    }
    s->records[s->n++] = *r;
    return 0;
}

int kbin_add_call(kbin_writer *w, uint32_t stream, uint32_t kernel, const char *node,
                  const void *args, size_t args_size) {
    return kbin_add_call_flags(w, stream, kernel, node, args, args_size, 0);
}

int kbin_add_call_flags(kbin_writer *w, uint32_t stream, uint32_t kernel, const char *node,
                        const void *args, size_t args_size, uint16_t flags) {
    if (kernel > UINT16_MAX) return fail(w, "kernel id %u does not fit a record", kernel);
    kann_record r;
    memset(&r, 0, sizeof r);
    r.kernel = (uint16_t)kernel;
    r.flags = flags;
    r.args_size = (uint32_t)args_size;
    if (kbin_add_name(w, node, &r.node) != 0 || kbin_add_args(w, args, args_size, &r.args_offset))
        return -1;
    return kbin_add_record(w, stream, &r);
}

int kbin_add_barrier(kbin_writer *w, uint32_t stream) {
    kann_record r;
    memset(&r, 0, sizeof r);
    r.kernel = KANN_KERNEL_BARRIER;
    return kbin_add_record(w, stream, &r);
}

int kbin_add_section(kbin_writer *w, uint32_t kind, const void *data, size_t n) {
    if (w->n_extras == KBIN_MAX_EXTRA_SECTIONS) return fail(w, "too many added sections");
    kbin_extra *e = &w->extras[w->n_extras];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    if (buf_append(&e->bytes, data, n) != 0) return fail(w, "out of memory");
    w->n_extras++;
    return 0;
}

/* The STREAMS section: header, stream descriptors, then every stream's records in order. */
static int build_streams(kbin_writer *w, kbin_buf *out, uint32_t *n_streams, uint32_t *n_phases) {
    size_t n_records = 0;
    for (uint32_t i = 0; i < w->n_stream_slots; i++)
        n_records += w->streams[i].n;
    if (n_records > UINT32_MAX) return fail(w, "%zu records: too many", n_records);
    uint32_t phases = 0;
    if (w->n_stream_slots > 0)
        for (size_t i = 0; i < w->streams[0].n; i++)
            phases += w->streams[0].records[i].kernel == KANN_KERNEL_BARRIER;
    *n_streams = w->streams_set ? w->n_streams : w->n_stream_slots;
    *n_phases = w->streams_set ? w->n_phases : phases;

    kann_streams_header sh = {*n_streams, *n_phases, (uint32_t)n_records, 0};
    if (buf_append(out, &sh, sizeof sh) != 0) return fail(w, "out of memory");
    uint32_t first = 0;
    for (uint32_t i = 0; i < w->n_stream_slots; i++) {
        kann_stream_desc d = {first, (uint32_t)w->streams[i].n};
        if (buf_append(out, &d, sizeof d) != 0) return fail(w, "out of memory");
        first += d.count;
    }
    for (uint32_t i = 0; i < w->n_stream_slots; i++)
        if (buf_append(out, w->streams[i].records, w->streams[i].n * sizeof(kann_record)) != 0)
            return fail(w, "out of memory");
    return 0;
}

static size_t align_up(size_t n, size_t a) {
    return (n + a - 1) / a * a;
}

int kbin_finish(kbin_writer *w, void **out, size_t *out_size) {
    *out = NULL;
    *out_size = 0;
    kbin_buf io = {0}, streams = {0};
    uint32_t n_streams = 0, n_phases = 0;
    kann_io_header ioh = {(uint32_t)(w->inputs.len / sizeof(kann_io_desc)),
                          (uint32_t)(w->outputs.len / sizeof(kann_io_desc))};
    int rc = -1;
    if (buf_append(&io, &ioh, sizeof ioh) != 0 ||
        buf_append(&io, w->inputs.data, w->inputs.len) != 0 ||
        buf_append(&io, w->outputs.data, w->outputs.len) != 0) {
        fail(w, "out of memory");
        goto done;
    }
    if (build_streams(w, &streams, &n_streams, &n_phases) != 0) goto done;

    struct {
        uint32_t kind;
        const kbin_buf *b;
    } parts[6 + KBIN_MAX_EXTRA_SECTIONS] = {
        {KANN_SECTION_META, &w->meta},    {KANN_SECTION_IO, &io},
        {KANN_SECTION_CONST, &w->consts}, {KANN_SECTION_ARGS, &w->args},
        {KANN_SECTION_STREAMS, &streams}, {KANN_SECTION_NAMES, &w->names},
    };
    uint32_t n_parts = 6;
    for (uint32_t i = 0; i < w->n_extras; i++) {
        parts[n_parts].kind = w->extras[i].kind;
        parts[n_parts].b = &w->extras[i].bytes;
        n_parts++;
    }

    size_t pos = sizeof(kann_file_header) + n_parts * sizeof(kann_section);
    kann_section table[6 + KBIN_MAX_EXTRA_SECTIONS];
    memset(table, 0, sizeof table);
    for (uint32_t i = 0; i < n_parts; i++) {
        pos = align_up(pos, KANN_SECTION_ALIGN);
        table[i].kind = parts[i].kind;
        table[i].offset = pos;
        table[i].size = parts[i].b->len;
        if (parts[i].b->len > SIZE_MAX - pos - KANN_SECTION_ALIGN) {
            fail(w, "model is too large for this machine's address space");
            goto done;
        }
        pos += parts[i].b->len;
    }
    size_t total = align_up(pos, KANN_SECTION_ALIGN); /* aligned_alloc needs a multiple */
    uint8_t *bin = aligned_alloc(KANN_SECTION_ALIGN, total);
    if (!bin) {
        fail(w, "out of memory (%zu bytes)", total);
        goto done;
    }
    memset(bin, 0, total);

    kann_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, KANN_MAGIC, KANN_MAGIC_SIZE);
    h.major = w->major;
    h.minor = w->minor;
    h.header_size = sizeof h;
    h.probe_u32 = KANN_PROBE_U32;
    h.probe_f32 = KANN_PROBE_F32;
    h.n_sections = n_parts;
    h.file_size = pos;
    h.arena_size = w->arena_size;
    h.n_streams = n_streams;
    h.n_phases = n_phases;
    memcpy(bin, &h, sizeof h);
    memcpy(bin + sizeof h, table, n_parts * sizeof(kann_section));
    for (uint32_t i = 0; i < n_parts; i++)
        if (parts[i].b->len) memcpy(bin + table[i].offset, parts[i].b->data, parts[i].b->len);
    kbin_fix_crcs(bin, pos);
    *out = bin;
    *out_size = pos;
    rc = 0;
done:
    free(io.data);
    free(streams.data);
    return rc;
}

int kbin_fix_crcs(void *buf, size_t n) {
    uint8_t *p = buf;
    kann_file_header h;
    if (n < sizeof h) return -1;
    memcpy(&h, p, sizeof h);
    uint64_t n_sections = h.n_sections;
    if (n_sections > (n - sizeof h) / sizeof(kann_section))
        n_sections = (n - sizeof h) / sizeof(kann_section);
    for (uint64_t i = 0; i < n_sections; i++) {
        kann_section s;
        memcpy(&s, p + sizeof h + i * sizeof s, sizeof s);
        if (s.offset > n || s.size > n - s.offset) continue;
        s.crc = kann_crc32(0, p + s.offset, (size_t)s.size);
        memcpy(p + sizeof h + i * sizeof s, &s, sizeof s);
    }
    /* The table CRC covers the entries the header declares; skipped if they do not fit. */
    if (h.n_sections <= (n - sizeof h) / sizeof(kann_section))
        h.table_crc = kann_crc32(0, p + sizeof h, h.n_sections * sizeof(kann_section));
    memcpy(p, &h, sizeof h);
    h.header_crc = kann_crc32(0, p, offsetof(kann_file_header, header_crc));
    memcpy(p, &h, sizeof h);
    return 0;
}

static void set_err(char *err, size_t errn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errn, const char *fmt, ...) {
    if (!err || errn == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errn, fmt, ap);
    va_end(ap);
}

int kbin_write_file_atomic(const char *path, const void *buf, size_t n, char *err, size_t errn) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + sizeof ".tmp.XXXXXX");
    if (!tmp) {
        set_err(err, errn, "%s: out of memory", path);
        return -1;
    }
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        set_err(err, errn, "%s: cannot create a temporary file: %s", path, strerror(errno));
        free(tmp);
        return -1;
    }
    const uint8_t *p = buf;
    size_t left = n;
    const char *what = NULL;
    while (left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            what = "write";
            break;
        }
        p += k;
        left -= (size_t)k;
    }
    /* mkstemp makes the file private (0600); a model is an ordinary file. */
    if (!what && fchmod(fd, 0644) != 0) what = "chmod";
    if (!what && fsync(fd) != 0) what = "fsync";
    int saved = errno;
    if (close(fd) != 0 && !what) {
        what = "close";
        saved = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename";
        saved = errno;
    }
    if (what) {
        set_err(err, errn, "%s: %s failed: %s", path, what, strerror(saved ? saved : EIO));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    /* Make the rename itself durable; failure here leaves a complete file, so it is ignored. */
    char *dir = strdup(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *d = ".";
        if (slash == dir) {
            d = "/";
        } else if (slash) {
            *slash = '\0';
            d = dir;
        }
        int dfd = open(d, O_RDONLY);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
    return 0;
}
