/* kbin_writer: builds a model.bin in memory, laid out per schemas/model-format.md with every
 * CRC, and writes files atomically. Used by the emitter and by tests that craft models.
 *
 *   kbin_writer *w = kbin_writer_new();
 *   kbin_set_arena_size(w, 4096);
 *   kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 2, (uint32_t[]){1, 8}, 0);
 *   kbin_add_call(w, 0, KANN_KERNEL_F32_ACT, "relu0", &args, sizeof args);
 *   kbin_add_barrier(w, 0);
 *   void *bin; size_t n;
 *   if (kbin_finish(w, &bin, &n) != 0) fprintf(stderr, "%s\n", kbin_writer_error(w));
 *
 * Functions returning int give 0 on success and -1 on failure, with the reason in
 * kbin_writer_error(w). The writer checks only what it must to lay the file out (sizes,
 * alignment, name lengths); the loader checks the meaning, so tests can build bad models. */
#ifndef KBIN_WRITER_H
#define KBIN_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "kann_format.h"

typedef struct kbin_writer kbin_writer;

/* NULL when out of memory. */
kbin_writer *kbin_writer_new(void);
void kbin_writer_free(kbin_writer *w);
/* The last failure's message ("" if none). Owned by the writer. */
const char *kbin_writer_error(const kbin_writer *w);

/* Header fields. n_streams and n_phases default to the number of streams added and the
 * number of barriers in stream 0; set them to write something else. */
void kbin_set_arena_size(kbin_writer *w, uint64_t arena_size);
void kbin_set_streams(kbin_writer *w, uint32_t n_streams, uint32_t n_phases);
/* Format version written to the header (default KANN_FORMAT_MAJOR.KANN_FORMAT_MINOR). */
void kbin_set_version(kbin_writer *w, uint16_t major, uint16_t minor);

/* Appends "key=value" to META. The key must be non-empty and hold no '='. */
int kbin_add_meta(kbin_writer *w, const char *key, const char *value);
/* Adds a string to NAMES (equal strings share one copy) and gives its offset; "" and NULL
 * are offset 0. At most KANN_MAX_NAME bytes. */
int kbin_add_name(kbin_writer *w, const char *s, uint32_t *offset);
/* Appends a constant blob at the next 64-byte boundary of CONST; gives its offset. */
int kbin_add_const(kbin_writer *w, const void *data, size_t n, uint64_t *offset);
/* Appends an argument struct at the next KANN_ARGS_ALIGN boundary of ARGS; gives its offset. */
int kbin_add_args(kbin_writer *w, const void *args, size_t n, uint32_t *offset);
/* Adds an input or output descriptor; its size is computed from dtype and dims. Inputs and
 * outputs keep the order they were added in. */
int kbin_add_io(kbin_writer *w, kann_io_kind kind, const char *name, uint32_t dtype, uint32_t rank,
                const uint32_t *dims, uint64_t arena_offset);
/* Appends a record, as given, to stream `stream` (streams up to it are created empty). */
int kbin_add_record(kbin_writer *w, uint32_t stream, const kann_record *r);
/* Appends a kernel call: adds args to ARGS and node to NAMES, then the record. */
int kbin_add_call(kbin_writer *w, uint32_t stream, uint32_t kernel, const char *node,
                  const void *args, size_t args_size);
/* The same with the record's flags (KANN_RECORD_FREE or 0). */
int kbin_add_call_flags(kbin_writer *w, uint32_t stream, uint32_t kernel, const char *node,
                        const void *args, size_t args_size, uint16_t flags);
int kbin_add_barrier(kbin_writer *w, uint32_t stream);
/* Adds a section of any kind with these bytes (an OPENCL section, or a test's odd one),
 * placed after the sections the writer builds. */
int kbin_add_section(kbin_writer *w, uint32_t kind, const void *data, size_t n);

/* Lays the file out: header, section table, then META, IO, CONST, ARGS, STREAMS, NAMES and
 * the added sections, each 64-byte aligned, with every CRC. *out is malloc'd (64-byte
 * aligned, free() it); the writer can be freed or kept. */
int kbin_finish(kbin_writer *w, void **out, size_t *out_size);

/* Recomputes every section CRC, the table CRC and the header CRC of a model.bin in place,
 * as far as the bytes allow (entries pointing outside buf are skipped). For tests that
 * corrupt a structure and want only the structural checks to see it. -1 if buf is too short
 * to hold a header. */
int kbin_fix_crcs(void *buf, size_t n);

/* Writes buf to a temporary file in path's directory, fsyncs it and renames it over path:
 * path ends up either unchanged or complete. On failure the temporary is removed and err
 * (errn bytes, may be 0) names the file and the cause. 0 or -1. */
int kbin_write_file_atomic(const char *path, const void *buf, size_t n, char *err, size_t errn);

#endif
