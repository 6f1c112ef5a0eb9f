/* The model.bin layout: header, section table and section contents, as C structs.
 * schemas/model-format.md is the definition; this header follows it byte by byte.
 * Shared by the compiler (writer) and the runtime (reader). Little-endian on disk. */
#ifndef KANN_FORMAT_H
#define KANN_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "kann.h"

/* "\x89KANN\r\n\x1a": the high byte catches 7-bit transfers, CR LF and LF catch text-mode
 * line-ending conversion, 0x1a stops a DOS `type`. Same idea as PNG's signature. */
#define KANN_MAGIC "\x89KANN\r\n\x1a"
#define KANN_MAGIC_SIZE 8
#define KANN_FORMAT_MAJOR 2
#define KANN_FORMAT_MINOR 1
#define KANN_PROBE_U32 0x01020304u /* reads 0x04030201 on a big-endian host */
#define KANN_PROBE_F32 (-1.5f) /* 0xbfc00000: catches a non-IEEE float ABI */
#define KANN_SECTION_ALIGN 64
#define KANN_ARGS_ALIGN 8
#define KANN_MAX_STREAMS 256
#define KANN_MAX_SECTIONS 32
#define KANN_MAX_NAME 1024 /* longest name string, NUL excluded */
#define KANN_MAX_IO 4096 /* inputs + outputs */

typedef enum kann_section_kind {
    KANN_SECTION_META = 1, /* key=value\0 strings: producer, version, source hash, options */
    KANN_SECTION_IO = 2, /* kann_io_header + kann_io_desc[n_inputs + n_outputs] */
    KANN_SECTION_CONST = 3, /* packed weights, each blob 64-byte aligned */
    KANN_SECTION_ARGS = 4, /* argument structs, each KANN_ARGS_ALIGN aligned */
    KANN_SECTION_STREAMS = 5, /* kann_streams_header + kann_stream_desc[P] + kann_record[] */
    KANN_SECTION_NAMES = 6, /* string table: NUL-terminated UTF-8 strings */
    KANN_SECTION_OPENCL = 7, /* optional OpenCL programs */
    KANN_SECTION_KIND_COUNT
} kann_section_kind;

/* 64 bytes at offset 0. */
typedef struct kann_file_header {
    uint8_t magic[KANN_MAGIC_SIZE];
    uint16_t major, minor;
    uint32_t header_size; /* sizeof(kann_file_header) */
    uint32_t probe_u32; /* KANN_PROBE_U32 */
    float probe_f32; /* KANN_PROBE_F32 */
    uint32_t flags; /* zero in this version */
    uint32_t n_sections; /* entries in the section table that follows the header */
    uint64_t file_size; /* total bytes; a shorter buffer is truncated */
    uint64_t arena_size; /* bytes the caller's arena must have */
    uint32_t n_streams; /* P */
    uint32_t n_phases; /* barriers per stream */
    uint32_t table_crc; /* CRC-32 of the section table */
    uint32_t header_crc; /* CRC-32 of bytes 0..59 of this header */
} kann_file_header;

/* 32 bytes each, right after the header. */
typedef struct kann_section {
    uint32_t kind; /* kann_section_kind */
    uint32_t flags; /* zero */
    uint64_t offset; /* from the file start, KANN_SECTION_ALIGN aligned */
    uint64_t size;
    uint32_t crc; /* CRC-32 of the section bytes */
    uint32_t reserved;
} kann_section;

typedef enum kann_io_kind { KANN_IO_INPUT = 0, KANN_IO_OUTPUT = 1 } kann_io_kind;

typedef struct kann_io_header {
    uint32_t n_inputs;
    uint32_t n_outputs;
} kann_io_header;

/* One graph input or output: a dense tensor at an arena offset. 64 bytes. */
typedef struct kann_io_desc {
    uint32_t name; /* offset in NAMES */
    uint32_t dtype; /* kann_dtype */
    uint32_t rank; /* <= KANN_MAX_IO_RANK */
    uint32_t reserved;
    uint32_t dims[KANN_MAX_IO_RANK];
    uint64_t offset; /* in the arena */
    uint64_t size; /* bytes = product(dims) * dtype size */
} kann_io_desc;

typedef struct kann_streams_header {
    uint32_t n_streams; /* P, equals the file header's */
    uint32_t n_phases; /* equals the file header's */
    uint32_t n_records; /* all streams */
    uint32_t reserved;
} kann_streams_header;

typedef struct kann_stream_desc {
    uint32_t first; /* index of its first record */
    uint32_t count; /* records, barriers included; the last one is a barrier */
} kann_stream_desc;

/* One kernel call (or a barrier: kernel == 0, args_size == 0). 16 bytes. */
typedef struct kann_record {
    uint16_t kernel; /* kann_kernel_id */
    uint16_t flags;  /* KANN_RECORD_FREE or zero; zero for a barrier */
    uint32_t node; /* offset in NAMES of the source node's name, for messages and profiles */
    uint32_t args_offset; /* in ARGS */
    uint32_t args_size; /* must equal the kernel's argument struct size */
} kann_record;

/* A record's flag: no other record of its stream's phase is of the same layer, writes a byte it
 * reads or writes, or reads a byte it writes. A stream runs its records in order, so records of
 * a phase may depend on earlier ones of the same stream (a stream's partial sums); a FREE one may
 * run on any thread, before, after or beside the others (the host pool lets an idle thread take
 * it). A set flag is a promise of the producer: the loader cannot check it. */
#define KANN_RECORD_FREE 0x1u

/* CRC-32 as zlib's crc32() (reflected polynomial 0xEDB88320, initial and final XOR
 * 0xffffffff). Chainable: kann_crc32(kann_crc32(0, a, n), b, m) is the CRC of a then b. */
uint32_t kann_crc32(uint32_t crc, const void *data, size_t n);

_Static_assert(sizeof(kann_file_header) == 64, "header layout");
_Static_assert(sizeof(kann_section) == 32, "section layout");
_Static_assert(sizeof(kann_io_desc) == 64, "io layout");
_Static_assert(sizeof(kann_record) == 16, "record layout");

#endif
