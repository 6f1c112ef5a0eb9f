/* kann_model_open: the complete load-time validation of a model.bin (schemas/model-format.md,
 * "Load-time checks"), so the walker can run records without a single check. */
#include "cpu_dispatch.h"
#include "kann_format.h"
#include "kann_kernels.h"
#include "kann_private.h"


static const char *const section_names[KANN_SECTION_KIND_COUNT] = {
    [KANN_SECTION_META] = "META",       [KANN_SECTION_IO] = "IO",
    [KANN_SECTION_CONST] = "CONST",     [KANN_SECTION_ARGS] = "ARGS",
    [KANN_SECTION_STREAMS] = "STREAMS", [KANN_SECTION_NAMES] = "NAMES",
    [KANN_SECTION_OPENCL] = "OPENCL",
};

static const char *section_name(uint32_t kind) {
    if (kind < KANN_SECTION_KIND_COUNT && section_names[kind]) return section_names[kind];
    return "unknown";
}

/* Sections this version cannot run without. CONST, ARGS and OPENCL may be absent (empty). */
static int section_required(uint32_t kind) {
    return kind == KANN_SECTION_META || kind == KANN_SECTION_IO || kind == KANN_SECTION_STREAMS ||
           kind == KANN_SECTION_NAMES;
}

/* [offset, offset + size) inside [0, limit), without overflow. */
static int range_inside(uint64_t offset, uint64_t size, uint64_t limit) {
    return offset <= limit && size <= limit - offset;
}

/* State of one open() call: the parsed pieces the later checks need. */
typedef struct loader {
    const uint8_t *bytes;
    const kann_file_header *hdr;
    const kann_section *table;
    const kann_section *by_kind[KANN_SECTION_KIND_COUNT];
    kann_model *m;
    kann_error *err;
} loader;

static kann_status check_header(loader *ld, size_t size) {
    const kann_file_header *h = ld->hdr;
    kann_error *err = ld->err;
    if (size < KANN_MAGIC_SIZE)
        return kann_rt_fail(err, KANN_E_TRUNCATED, "file of %llu bytes is too short for a model",
                            (unsigned long long)size);
    for (unsigned i = 0; i < KANN_MAGIC_SIZE; i++)
        if (ld->bytes[i] != (uint8_t)KANN_MAGIC[i])
            return kann_rt_fail(err, KANN_E_MAGIC,
                                "bad magic: not a model.bin, or altered by a text-mode transfer");
    if (size < sizeof(kann_file_header))
        return kann_rt_fail(err, KANN_E_TRUNCATED,
                            "file of %llu bytes is shorter than the %u-byte header",
                            (unsigned long long)size, (unsigned)sizeof(kann_file_header));
    /* A writer that dumped native structs on a big-endian machine: say so rather than report
     * a strange version number. */
    if (h->probe_u32 == 0x04030201u)
        return kann_rt_fail(err, KANN_E_PROBE,
                            "integer probe reads 0x04030201: the file's byte order does not match "
                            "this machine");
    if (h->major > KANN_FORMAT_MAJOR)
        return kann_rt_fail(err, KANN_E_VERSION,
                            "format version %u.%u is newer than this runtime reads (%u.x)",
                            h->major, h->minor, KANN_FORMAT_MAJOR);
    if (h->major < KANN_FORMAT_MAJOR)
        return kann_rt_fail(err, KANN_E_VERSION, "format version %u.%u is not supported (%u.x)",
                            h->major, h->minor, KANN_FORMAT_MAJOR);
    uint32_t crc = kann_crc32(0, h, offsetof(kann_file_header, header_crc));
    if (crc != h->header_crc)
        return kann_rt_fail(err, KANN_E_CRC, "header CRC mismatch (stored 0x%08x, computed 0x%08x)",
                            h->header_crc, crc);
    if (h->header_size != sizeof(kann_file_header))
        return kann_rt_fail(err, KANN_E_CORRUPT, "header_size is %u, expected %u", h->header_size,
                            (unsigned)sizeof(kann_file_header));
    if (h->probe_u32 != KANN_PROBE_U32)
        return kann_rt_fail(err, KANN_E_PROBE, "integer probe reads 0x%08x, expected 0x%08x",
                            h->probe_u32, KANN_PROBE_U32);
    const uint8_t *pf = (const uint8_t *)&h->probe_f32;
    if (pf[0] != 0x00 || pf[1] != 0x00 || pf[2] != 0xc0 || pf[3] != 0xbf)
        return kann_rt_fail(err, KANN_E_PROBE, "float probe bytes are not those of -1.5f");
    if (h->probe_f32 != KANN_PROBE_F32)
        return kann_rt_fail(err, KANN_E_PROBE,
                            "float probe does not read -1.5: this machine's float format is not "
                            "IEEE 754 binary32 little-endian");
    if (h->flags != 0)
        return kann_rt_fail(err, KANN_E_UNSUPPORTED, "header flags 0x%08x are not known", h->flags);
    if (h->file_size > size)
        return kann_rt_fail(err, KANN_E_TRUNCATED,
                            "truncated: the header says %llu bytes, the buffer has %llu",
                            (unsigned long long)h->file_size, (unsigned long long)size);
    if (h->n_sections > KANN_MAX_SECTIONS)
        return kann_rt_fail(err, KANN_E_CORRUPT, "%u sections, at most %u allowed", h->n_sections,
                            KANN_MAX_SECTIONS);
    uint64_t table_end = sizeof(kann_file_header) + (uint64_t)h->n_sections * sizeof(kann_section);
    if (table_end > h->file_size)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "section table (%u entries) ends at byte %llu, past the file's %llu",
                            h->n_sections, (unsigned long long)table_end,
                            (unsigned long long)h->file_size);
    ld->table = (const kann_section *)(ld->bytes + sizeof(kann_file_header));
    crc = kann_crc32(0, ld->table, (size_t)(table_end - sizeof(kann_file_header)));
    if (crc != h->table_crc)
        return kann_rt_fail(err, KANN_E_CRC,
                            "section table CRC mismatch (stored 0x%08x, computed 0x%08x)",
                            h->table_crc, crc);
    if (h->n_streams < 1 || h->n_streams > KANN_MAX_STREAMS)
        return kann_rt_fail(err, KANN_E_CORRUPT, "n_streams is %u, must be 1..%u", h->n_streams,
                            KANN_MAX_STREAMS);
    if (h->n_phases < 1)
        return kann_rt_fail(err, KANN_E_CORRUPT, "n_phases is 0, must be at least 1");
    if (h->arena_size > (uint64_t)(size_t)-1)
        return kann_rt_fail(err, KANN_E_UNSUPPORTED,
                            "arena of %llu bytes cannot be addressed on this machine",
                            (unsigned long long)h->arena_size);
    return KANN_OK;
}

static int bytes_zero(const uint8_t *p, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != 0) return 0;
    return 1;
}

/* Each section inside the file, aligned, of a known kind, not repeated, not overlapping
 * another; the bytes between sections zero (so every byte of the file is checked by a CRC or
 * by this); every section's CRC right. */
static kann_status check_sections(loader *ld) {
    const kann_file_header *h = ld->hdr;
    kann_error *err = ld->err;
    uint32_t n = h->n_sections;
    uint64_t table_end = sizeof(kann_file_header) + (uint64_t)n * sizeof(kann_section);
    uint32_t order[KANN_MAX_SECTIONS];

    for (uint32_t i = 0; i < n; i++) {
        const kann_section *s = &ld->table[i];
        if (s->flags != 0 || s->reserved != 0)
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "section %u (%s): flags and reserved must be zero", i,
                                section_name(s->kind));
        if (s->offset % KANN_SECTION_ALIGN != 0)
            return kann_rt_fail(
                err, KANN_E_CORRUPT, "section %u (%s): offset %llu is not %u-byte aligned", i,
                section_name(s->kind), (unsigned long long)s->offset, KANN_SECTION_ALIGN);
        if (s->offset < table_end || !range_inside(s->offset, s->size, h->file_size))
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "section %u (%s): bytes [%llu, +%llu) are not inside the file "
                                "body [%llu, %llu)",
                                i, section_name(s->kind), (unsigned long long)s->offset,
                                (unsigned long long)s->size, (unsigned long long)table_end,
                                (unsigned long long)h->file_size);
        if (s->kind == 0 || s->kind >= KANN_SECTION_KIND_COUNT) {
            /* A newer minor version may add sections that older readers can skip. */
            if (h->minor <= KANN_FORMAT_MINOR)
                return kann_rt_fail(err, KANN_E_CORRUPT, "section %u: unknown kind %u", i, s->kind);
        } else {
            if (ld->by_kind[s->kind])
                return kann_rt_fail(err, KANN_E_CORRUPT, "section %u: a second %s section", i,
                                    section_name(s->kind));
            ld->by_kind[s->kind] = s;
        }
        /* Insertion sort by offset: n is at most KANN_MAX_SECTIONS. */
        uint32_t j = i;
        while (j > 0 && ld->table[order[j - 1]].offset > s->offset) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (uint32_t k = 1; k < KANN_SECTION_KIND_COUNT; k++)
        if (section_required(k) && !ld->by_kind[k])
            return kann_rt_fail(err, KANN_E_CORRUPT, "the required %s section is missing",
                                section_name(k));

    uint64_t pos = table_end;
    uint32_t prev = UINT32_MAX;
    for (uint32_t k = 0; k < n; k++) {
        const kann_section *s = &ld->table[order[k]];
        if (s->size == 0) continue;
        if (s->offset < pos) /* pos is past the table, so prev is a section */
            return kann_rt_fail(err, KANN_E_CORRUPT, "sections %u (%s) and %u (%s) overlap", prev,
                                section_name(ld->table[prev].kind), order[k],
                                section_name(s->kind));
        if (!bytes_zero(ld->bytes + pos, s->offset - pos))
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "padding bytes [%llu, %llu) before section %u are not zero",
                                (unsigned long long)pos, (unsigned long long)s->offset, order[k]);
        pos = s->offset + s->size;
        prev = order[k];
    }
    if (!bytes_zero(ld->bytes + pos, h->file_size - pos))
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "padding bytes [%llu, %llu) after the last section are not zero",
                            (unsigned long long)pos, (unsigned long long)h->file_size);

    for (uint32_t i = 0; i < n; i++) {
        const kann_section *s = &ld->table[i];
        uint32_t crc = kann_crc32(0, ld->bytes + s->offset, (size_t)s->size);
        if (crc != s->crc)
            return kann_rt_fail(err, KANN_E_CRC,
                                "section %u (%s): CRC mismatch (stored 0x%08x, computed 0x%08x)", i,
                                section_name(s->kind), s->crc, crc);
    }
    return KANN_OK;
}

static const uint8_t *section_bytes(const loader *ld, uint32_t kind, uint64_t *size) {
    const kann_section *s = ld->by_kind[kind];
    *size = s ? s->size : 0;
    return s ? ld->bytes + s->offset : ld->bytes; /* an absent section is empty */
}

/* NAMES starts with the empty string (offset 0 = "no name") and ends with a NUL, and no
 * string is longer than KANN_MAX_NAME: any offset inside it is then a bounded C string. */
static kann_status check_names(loader *ld) {
    uint64_t n;
    const uint8_t *p = section_bytes(ld, KANN_SECTION_NAMES, &n);
    if (n == 0 || p[0] != 0 || p[n - 1] != 0)
        return kann_rt_fail(ld->err, KANN_E_CORRUPT,
                            "NAMES must start and end with a NUL byte (size %llu)",
                            (unsigned long long)n);
    uint64_t run = 0;
    for (uint64_t i = 0; i < n; i++) {
        run = p[i] ? run + 1 : 0;
        if (run > KANN_MAX_NAME)
            return kann_rt_fail(ld->err, KANN_E_CORRUPT,
                                "NAMES: the string at byte %llu is longer than %u bytes",
                                (unsigned long long)(i + 1 - run), KANN_MAX_NAME);
    }
    ld->m->names = (const char *)p;
    ld->m->names_size = n;
    return KANN_OK;
}

/* META is a sequence of "key=value\0" entries with non-empty keys. */
static kann_status check_meta(loader *ld) {
    uint64_t n;
    const uint8_t *p = section_bytes(ld, KANN_SECTION_META, &n);
    if (n > 0 && p[n - 1] != 0)
        return kann_rt_fail(ld->err, KANN_E_CORRUPT, "META does not end with a NUL byte");
    uint64_t start = 0;
    while (start < n) {
        uint64_t i = start;
        while (p[i] != 0 && p[i] != '=')
            i++;
        if (p[i] != '=' || i == start)
            return kann_rt_fail(ld->err, KANN_E_CORRUPT,
                                "META: the entry at byte %llu is not key=value",
                                (unsigned long long)start);
        while (p[i] != 0)
            i++;
        start = i + 1;
    }
    return KANN_OK;
}

static kann_status check_io_desc(loader *ld, const kann_io_desc *d, const char *what, uint32_t i) {
    kann_error *err = ld->err;
    const kann_model *m = ld->m;
    if (d->name >= m->names_size)
        return kann_rt_fail(err, KANN_E_CORRUPT, "%s %u: name offset %u is outside NAMES (%llu)",
                            what, i, d->name, (unsigned long long)m->names_size);
    const char *name = m->names + d->name;
    if (name[0] == 0) return kann_rt_fail(err, KANN_E_CORRUPT, "%s %u has an empty name", what, i);
    size_t esize = kann_dtype_size(d->dtype);
    if (esize == 0)
        return kann_rt_fail(err, KANN_E_UNSUPPORTED, "%s '%s': unknown dtype %u", what, name,
                            d->dtype);
    if (d->rank > KANN_MAX_IO_RANK)
        return kann_rt_fail(err, KANN_E_CORRUPT, "%s '%s': rank %u is over %u", what, name, d->rank,
                            KANN_MAX_IO_RANK);
    if (d->reserved != 0)
        return kann_rt_fail(err, KANN_E_CORRUPT, "%s '%s': reserved field is not zero", what, name);
    uint64_t bytes = esize;
    for (uint32_t k = 0; k < KANN_MAX_IO_RANK; k++) {
        if (k >= d->rank) {
            if (d->dims[k] != 0)
                return kann_rt_fail(err, KANN_E_CORRUPT, "%s '%s': dims[%u] past the rank is not 0",
                                    what, name, k);
            continue;
        }
        if (d->dims[k] != 0 && bytes > UINT64_MAX / d->dims[k])
            return kann_rt_fail(err, KANN_E_CORRUPT, "%s '%s': element count overflows", what,
                                name);
        bytes *= d->dims[k];
    }
    if (d->size != bytes)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "%s '%s': size is %llu bytes, its shape needs %llu", what, name,
                            (unsigned long long)d->size, (unsigned long long)bytes);
    if (d->offset % esize != 0)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "%s '%s': arena offset %llu is not aligned to its %u-byte elements",
                            what, name, (unsigned long long)d->offset, (unsigned)esize);
    if (!range_inside(d->offset, d->size, m->arena_size))
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "%s '%s': bytes [%llu, +%llu) are outside the %llu-byte arena", what,
                            name, (unsigned long long)d->offset, (unsigned long long)d->size,
                            (unsigned long long)m->arena_size);
    return KANN_OK;
}

static kann_status check_io(loader *ld) {
    kann_error *err = ld->err;
    kann_model *m = ld->m;
    uint64_t n;
    const uint8_t *p = section_bytes(ld, KANN_SECTION_IO, &n);
    if (n < sizeof(kann_io_header))
        return kann_rt_fail(err, KANN_E_CORRUPT, "IO section of %llu bytes has no header",
                            (unsigned long long)n);
    const kann_io_header *ioh = (const kann_io_header *)p;
    uint64_t count = (uint64_t)ioh->n_inputs + ioh->n_outputs;
    if (count > KANN_MAX_IO)
        return kann_rt_fail(err, KANN_E_CORRUPT, "%u inputs + %u outputs: at most %u allowed",
                            ioh->n_inputs, ioh->n_outputs, KANN_MAX_IO);
    if (n != sizeof(kann_io_header) + count * sizeof(kann_io_desc))
        return kann_rt_fail(
            err, KANN_E_CORRUPT, "IO section is %llu bytes, %u inputs + %u outputs need %llu",
            (unsigned long long)n, ioh->n_inputs, ioh->n_outputs,
            (unsigned long long)(sizeof(kann_io_header) + count * sizeof(kann_io_desc)));
    const kann_io_desc *d = (const kann_io_desc *)(p + sizeof(kann_io_header));
    for (uint32_t i = 0; i < count; i++) {
        int is_input = i < ioh->n_inputs;
        const char *what = is_input ? "input" : "output";
        uint32_t idx = is_input ? i : i - ioh->n_inputs;
        kann_status st = check_io_desc(ld, &d[i], what, idx);
        if (st != KANN_OK) return st;
        /* Names identify inputs and outputs: no two of one kind may share one. */
        uint32_t first_same_kind = is_input ? 0 : ioh->n_inputs;
        for (uint32_t j = first_same_kind; j < i; j++)
            if (kann_rt_streq(m->names + d[j].name, m->names + d[i].name))
                return kann_rt_fail(err, KANN_E_CORRUPT, "two %ss are named '%s'", what,
                                    m->names + d[i].name);
    }
    m->n_inputs = ioh->n_inputs;
    m->n_outputs = ioh->n_outputs;
    m->io = d;
    return KANN_OK;
}

/* One kernel record: a known kernel this backend has, an argument struct of the kernel's size
 * inside ARGS, a tile along one of its axes, and whatever its family's validator proves. */
static kann_status check_record(loader *ld, const kann_record *r, uint32_t stream, uint32_t index) {
    kann_error *err = ld->err;
    const kann_model *m = ld->m;
    const char *node = r->node < m->names_size ? m->names + r->node : "";
    if (r->node >= m->names_size)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "stream %u record %u: node name offset %u is outside NAMES (%llu)",
                            stream, index, r->node, (unsigned long long)m->names_size);
    /* a newer minor version may add record flags that this reader ignores */
    uint16_t unknown =
        ld->hdr->minor > KANN_FORMAT_MINOR ? 0 : (uint16_t)(r->flags & ~KANN_RECORD_FREE);
    if (unknown || ((r->flags & KANN_RECORD_FREE) && r->kernel == KANN_KERNEL_BARRIER))
        return kann_rt_fail(err, KANN_E_CORRUPT, "stream %u record %u (node '%s'): flags 0x%x",
                            stream, index, node, r->flags);
    if (r->kernel == KANN_KERNEL_BARRIER) {
        if (r->args_size != 0 || r->args_offset != 0)
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "stream %u record %u: a barrier must have no arguments", stream,
                                index);
        return KANN_OK;
    }
    if (r->kernel >= KANN_KERNEL_COUNT || kann_kernels[r->kernel].name == 0)
        return kann_rt_fail(err, KANN_E_UNSUPPORTED,
                            "stream %u record %u (node '%s'): unknown kernel id %u", stream, index,
                            node, r->kernel);
    const kann_kernel_info *k = &kann_kernels[r->kernel];
    if (m->kernels[r->kernel] == 0 || k->validate == 0)
        return kann_rt_fail(err, KANN_E_UNSUPPORTED,
                            "stream %u record %u (node '%s'): the cpu backend has no kernel %s",
                            stream, index, node, k->name);
    if (r->args_size != k->args_size)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "stream %u record %u (%s, node '%s'): args_size %u, the kernel's "
                            "arguments are %u bytes",
                            stream, index, k->name, node, r->args_size, k->args_size);
    if (r->args_offset % KANN_ARGS_ALIGN != 0 ||
        !range_inside(r->args_offset, r->args_size, m->args_size))
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "stream %u record %u (%s, node '%s'): arguments [%u, +%u) are not an "
                            "%u-aligned range inside ARGS (%llu bytes)",
                            stream, index, k->name, node, r->args_offset, r->args_size,
                            KANN_ARGS_ALIGN, (unsigned long long)m->args_size);
    const void *args = m->args + r->args_offset;
    const kann_tile *t = (const kann_tile *)args;
    if (t->axis >= k->n_tile_axes || t->begin > t->end || t->reserved != 0)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "stream %u record %u (%s, node '%s'): bad tile (axis %u of %u, "
                            "[%u, %u))",
                            stream, index, k->name, node, t->axis, k->n_tile_axes, t->begin,
                            t->end);
    kann_bounds bounds = {m->arena_size, m->consts_size};
    kann_error verr;
    verr.status = KANN_OK;
    verr.message[0] = '\0';
    kann_status st = k->validate(args, &bounds, &verr);
    if (st != KANN_OK) {
        if ((unsigned)st >= KANN_STATUS_COUNT) st = KANN_E_CORRUPT;
        return kann_rt_fail(err, st, "stream %u record %u (%s, node '%s'): %s", stream, index,
                            k->name, node, verr.message[0] ? verr.message : "invalid arguments");
    }
    return KANN_OK;
}

static kann_status check_streams(loader *ld) {
    kann_error *err = ld->err;
    kann_model *m = ld->m;
    const kann_file_header *h = ld->hdr;
    uint64_t n;
    const uint8_t *p = section_bytes(ld, KANN_SECTION_STREAMS, &n);
    if (n < sizeof(kann_streams_header))
        return kann_rt_fail(err, KANN_E_CORRUPT, "STREAMS section of %llu bytes has no header",
                            (unsigned long long)n);
    const kann_streams_header *sh = (const kann_streams_header *)p;
    if (sh->n_streams != h->n_streams || sh->n_phases != h->n_phases)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "STREAMS says %u streams x %u phases, the header %u x %u",
                            sh->n_streams, sh->n_phases, h->n_streams, h->n_phases);
    if (sh->reserved != 0)
        return kann_rt_fail(err, KANN_E_CORRUPT, "STREAMS: reserved field is not zero");
    uint64_t need = sizeof(kann_streams_header) +
                    (uint64_t)sh->n_streams * sizeof(kann_stream_desc) +
                    (uint64_t)sh->n_records * sizeof(kann_record);
    if (n != need)
        return kann_rt_fail(err, KANN_E_CORRUPT,
                            "STREAMS section is %llu bytes, %u streams and %u records need %llu",
                            (unsigned long long)n, sh->n_streams, sh->n_records,
                            (unsigned long long)need);
    const kann_stream_desc *sd = (const kann_stream_desc *)(p + sizeof(kann_streams_header));
    const kann_record *rec = (const kann_record *)(sd + sh->n_streams);
    m->streams = sd;
    m->records = rec;
    m->n_records = sh->n_records;

    /* Streams tile the record array in order: stream s starts where stream s-1 ends. */
    uint64_t next = 0;
    for (uint32_t s = 0; s < sh->n_streams; s++) {
        if (sd[s].first != next || !range_inside(sd[s].first, sd[s].count, sh->n_records))
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "stream %u: records [%u, +%u) do not follow the previous stream "
                                "(%llu) inside the %u records",
                                s, sd[s].first, sd[s].count, (unsigned long long)next,
                                sh->n_records);
        next += sd[s].count;
        if (sd[s].count == 0 || rec[sd[s].first + sd[s].count - 1].kernel != KANN_KERNEL_BARRIER)
            return kann_rt_fail(err, KANN_E_CORRUPT, "stream %u does not end with a barrier", s);
        uint32_t barriers = 0;
        for (uint32_t i = 0; i < sd[s].count; i++) {
            const kann_record *r = &rec[sd[s].first + i];
            kann_status st = check_record(ld, r, s, i);
            if (st != KANN_OK) return st;
            barriers += r->kernel == KANN_KERNEL_BARRIER;
        }
        if (barriers != sh->n_phases)
            return kann_rt_fail(err, KANN_E_CORRUPT,
                                "stream %u has %u barriers, every stream must have %u (n_phases)",
                                s, barriers, sh->n_phases);
    }
    if (next != sh->n_records)
        return kann_rt_fail(err, KANN_E_CORRUPT, "streams hold %llu records, STREAMS says %u",
                            (unsigned long long)next, sh->n_records);
    return KANN_OK;
}

static void model_clear(kann_model *m) {
    uint8_t *p = (uint8_t *)m;
    for (size_t i = 0; i < sizeof *m; i++)
        p[i] = 0;
}

kann_status kann_model_open(kann_model *m, const void *bytes, size_t size, kann_error *err) {
    if (m == 0 || (bytes == 0 && size != 0))
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_model_open: NULL model or bytes");
    model_clear(m);
    if (bytes == 0) return kann_rt_fail(err, KANN_E_TRUNCATED, "empty model buffer");
    if ((uintptr_t)bytes % 8 != 0)
        return kann_rt_fail(err, KANN_E_ALIGNMENT, "model bytes are not 8-byte aligned");

    loader ld = {0};
    ld.bytes = (const uint8_t *)bytes;
    ld.hdr = (const kann_file_header *)bytes;
    ld.m = m;
    ld.err = err;
    kann_status st = check_header(&ld, size);
    if (st == KANN_OK) st = check_sections(&ld);
    if (st == KANN_OK) {
        m->bytes = ld.bytes;
        m->size = ld.hdr->file_size;
        m->arena_size = ld.hdr->arena_size;
        m->n_streams = ld.hdr->n_streams;
        m->n_phases = ld.hdr->n_phases;
        m->consts = section_bytes(&ld, KANN_SECTION_CONST, &m->consts_size);
        m->args = section_bytes(&ld, KANN_SECTION_ARGS, &m->args_size);
        m->kernels = kann_cpu_kernels(kann_isa_best()); /* the CPU backend, best ISA */
        st = check_names(&ld);
    }
    if (st == KANN_OK) st = check_meta(&ld);
    if (st == KANN_OK) st = check_io(&ld);
    if (st == KANN_OK) st = check_streams(&ld);
    if (st != KANN_OK) {
        model_clear(m);
        return st;
    }
    return kann_rt_ok(err);
}

uint64_t kann_model_arena_size(const kann_model *m) {
    return m ? m->arena_size : 0;
}

uint32_t kann_model_n_streams(const kann_model *m) {
    return m ? m->n_streams : 0;
}

uint32_t kann_model_n_inputs(const kann_model *m) {
    return m ? m->n_inputs : 0;
}

uint32_t kann_model_n_outputs(const kann_model *m) {
    return m ? m->n_outputs : 0;
}

static kann_status describe(const kann_model *m, uint32_t index, kann_tensor *t) {
    const kann_io_desc *d = (const kann_io_desc *)m->io + index;
    t->name = m->names + d->name;
    t->dtype = d->dtype;
    t->rank = d->rank;
    for (uint32_t k = 0; k < KANN_MAX_IO_RANK; k++)
        t->dims[k] = d->dims[k];
    t->data = 0;
    t->size = (size_t)d->size;
    return KANN_OK;
}

kann_status kann_model_input(const kann_model *m, uint32_t i, kann_tensor *t) {
    if (m == 0 || t == 0 || m->bytes == 0) return KANN_E_ARGUMENT;
    if (i >= m->n_inputs) return KANN_E_NOT_FOUND;
    return describe(m, i, t);
}

kann_status kann_model_output(const kann_model *m, uint32_t i, kann_tensor *t) {
    if (m == 0 || t == 0 || m->bytes == 0) return KANN_E_ARGUMENT;
    if (i >= m->n_outputs) return KANN_E_NOT_FOUND;
    return describe(m, m->n_inputs + i, t);
}

static int find_io(const kann_model *m, uint32_t first, uint32_t count, const char *name) {
    if (m == 0 || m->bytes == 0 || name == 0) return -1;
    const kann_io_desc *d = (const kann_io_desc *)m->io;
    for (uint32_t i = 0; i < count; i++)
        if (kann_rt_streq(m->names + d[first + i].name, name)) return (int)i;
    return -1;
}

int kann_model_find_input(const kann_model *m, const char *name) {
    return find_io(m, 0, m ? m->n_inputs : 0, name);
}

int kann_model_find_output(const kann_model *m, const char *name) {
    return find_io(m, m ? m->n_inputs : 0, m ? m->n_outputs : 0, name);
}

const char *kann_model_record_node(const kann_model *m, uint32_t record) {
    if (m == 0 || m->bytes == 0 || record >= m->n_records) return "";
    return m->names + ((const kann_record *)m->records)[record].node;
}

const char *kann_model_meta(const kann_model *m, const char *key) {
    if (m == 0 || m->bytes == 0 || key == 0) return 0;
    const kann_file_header *h = (const kann_file_header *)m->bytes;
    const kann_section *table = (const kann_section *)(m->bytes + sizeof(kann_file_header));
    for (uint32_t i = 0; i < h->n_sections; i++) {
        if (table[i].kind != KANN_SECTION_META) continue;
        const char *p = (const char *)m->bytes + table[i].offset;
        const char *end = p + table[i].size;
        while (p < end) {
            size_t k = 0;
            while (key[k] && p[k] == key[k])
                k++;
            if (key[k] == 0 && p[k] == '=') return p + k + 1;
            p += kann_rt_strlen(p) + 1;
        }
    }
    return 0;
}

kann_status kann_session_init(kann_session *s, const kann_model *m, void *arena, size_t arena_size,
                              kann_error *err) {
    if (s == 0 || m == 0 || m->bytes == 0)
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_session_init: NULL session or model");
    s->model = 0;
    s->arena = 0;
    if (arena == 0 && m->arena_size != 0)
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_session_init: NULL arena");
    if ((uintptr_t)arena % 64 != 0)
        return kann_rt_fail(err, KANN_E_ALIGNMENT, "arena is not 64-byte aligned");
    if (arena_size < m->arena_size)
        return kann_rt_fail(err, KANN_E_ARENA, "arena of %llu bytes, the model needs %llu",
                            (unsigned long long)arena_size, (unsigned long long)m->arena_size);
    s->model = m;
    s->arena = (uint8_t *)arena;
    return kann_rt_ok(err);
}

static kann_status session_tensor(const kann_session *s, uint32_t index, kann_tensor *t) {
    const kann_io_desc *d = (const kann_io_desc *)s->model->io + index;
    describe(s->model, index, t);
    t->data = s->arena + d->offset;
    return KANN_OK;
}

kann_status kann_session_input(const kann_session *s, uint32_t i, kann_tensor *t) {
    if (s == 0 || s->model == 0 || t == 0) return KANN_E_ARGUMENT;
    if (i >= s->model->n_inputs) return KANN_E_NOT_FOUND;
    return session_tensor(s, i, t);
}

kann_status kann_session_output(const kann_session *s, uint32_t i, kann_tensor *t) {
    if (s == 0 || s->model == 0 || t == 0) return KANN_E_ARGUMENT;
    if (i >= s->model->n_outputs) return KANN_E_NOT_FOUND;
    return session_tensor(s, s->model->n_inputs + i, t);
}
