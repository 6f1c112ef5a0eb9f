/* kann.h — the kann-c runtime: open a compiled model.bin, bind an arena, run it.
 *
 * The core never allocates, never does I/O and never starts threads: the caller owns every
 * byte. The model bytes must outlive the kann_model opened on them (they are used in place,
 * never copied) and be 8-byte aligned (64 is best); the arena must outlive its session.
 *
 *   kann_model m;  kann_session s;  kann_error e;
 *   kann_model_open(&m, bytes, n_bytes, &e);             // validates everything once
 *   void *arena = aligned_alloc(64, kann_model_arena_size(&m));
 *   kann_session_init(&s, &m, arena, kann_model_arena_size(&m), &e);
 *   kann_tensor in;  kann_session_input(&s, 0, &in);     // in.data points into the arena
 *   ... fill in.data ...;  kann_session_run(&s, &e);
 *   kann_tensor out; kann_session_output(&s, 0, &out);
 */
#ifndef KANN_H
#define KANN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kann_status {
    KANN_OK = 0,
    KANN_E_ARGUMENT, /* a NULL or out-of-range argument to an API call */
    KANN_E_ALIGNMENT, /* model bytes or arena not suitably aligned */
    KANN_E_MAGIC, /* not a model.bin (or corrupted by a text-mode transfer) */
    KANN_E_VERSION, /* a newer major format version than this runtime reads */
    KANN_E_PROBE, /* endianness or float format of the file does not match this machine */
    KANN_E_TRUNCATED, /* the buffer is shorter than the file says */
    KANN_E_CRC, /* a checksum does not match: the file is corrupted */
    KANN_E_CORRUPT, /* a structural inconsistency (offsets, counts, sizes, shapes) */
    KANN_E_UNSUPPORTED, /* a kernel or feature this runtime or backend lacks */
    KANN_E_ARENA, /* the arena is smaller than the model needs */
    KANN_E_NOT_FOUND, /* no input/output with that name or index */
    KANN_E_RUNTIME, /* a failure while running (a backend error) */
    KANN_E_IO, /* reading or writing a file failed (host layer only) */
    KANN_STATUS_COUNT
} kann_status;

/* Short fixed name of a status ("KANN_E_CRC"). */
const char *kann_status_name(kann_status s);

/* Filled on failure with a message naming what is wrong (which section, record, kernel). */
typedef struct kann_error {
    kann_status status;
    char message[256];
} kann_error;

typedef enum kann_dtype {
    KANN_DTYPE_F32 = 1, /* values follow ONNX TensorProto.DataType */
    KANN_DTYPE_U8 = 2,
    KANN_DTYPE_I8 = 3,
    KANN_DTYPE_I32 = 6,
    KANN_DTYPE_I64 = 7,
    KANN_DTYPE_BOOL = 9,
} kann_dtype;

/* Bytes per element, 0 for an unknown dtype. */
size_t kann_dtype_size(uint32_t dtype);

#define KANN_MAX_IO_RANK 8

typedef struct kann_tensor {
    const char *name; /* points into the model bytes */
    uint32_t dtype; /* kann_dtype */
    uint32_t rank;
    uint32_t dims[KANN_MAX_IO_RANK];
    void *data; /* into the session's arena; NULL when got from a model alone */
    size_t size; /* bytes */
} kann_tensor;

struct kann_exec;
/* Uniform kernel ABI (kernels/kann_kernels.h): runs one validated argument struct. */
typedef void (*kann_kernel_fn)(const void *args, const struct kann_exec *ex);

/* A validated model. Fields are private: read them through the functions below. */
typedef struct kann_model {
    const uint8_t *bytes;
    uint64_t size;
    uint64_t arena_size;
    uint32_t n_streams, n_phases;
    uint32_t n_inputs, n_outputs;
    const void *io; /* kann_io_desc[n_inputs + n_outputs] */
    const uint8_t *consts;
    uint64_t consts_size;
    const uint8_t *args;
    uint64_t args_size;
    const void *streams; /* kann_stream_desc[n_streams] */
    const void *records; /* kann_record[] */
    uint32_t n_records;
    const char *names;
    uint64_t names_size;
    const kann_kernel_fn *kernels; /* function table of the chosen backend, by kernel id */
    const void *prepared; /* the ISA level's prepared weights (kann_model_set_isa_prepared) */
} kann_model;

/* Opens and validates a model in place. On failure the model is unusable and err says why. */
kann_status kann_model_open(kann_model *m, const void *bytes, size_t size, kann_error *err);

uint64_t kann_model_arena_size(const kann_model *m);
uint32_t kann_model_n_streams(const kann_model *m);
uint32_t kann_model_n_inputs(const kann_model *m);
uint32_t kann_model_n_outputs(const kann_model *m);
/* Describes input/output i (data = NULL). */
kann_status kann_model_input(const kann_model *m, uint32_t i, kann_tensor *t);
kann_status kann_model_output(const kann_model *m, uint32_t i, kann_tensor *t);
/* Index of the input/output named name, or -1. */
int kann_model_find_input(const kann_model *m, const char *name);
int kann_model_find_output(const kann_model *m, const char *name);
/* Name of the node that record r of the model came from ("" if none). */
const char *kann_model_record_node(const kann_model *m, uint32_t record);
/* Value of the META entry key ("producer", "source_sha256", ...), NULL if absent. */
const char *kann_model_meta(const kann_model *m, const char *key);

/* Read-only views of a validated model's record streams, for backends that run the records
 * somewhere else than the walker (the OpenCL executor). Everything points into the model bytes. */
uint32_t kann_model_n_phases(const kann_model *m);
uint32_t kann_model_n_records(const kann_model *m);
/* Stream s holds records [*first, *first + *count), its barriers included. */
kann_status kann_model_stream(const kann_model *m, uint32_t s, uint32_t *first, uint32_t *count);
/* Record r: its kernel id (0 for a barrier) and its argument struct (NULL and 0 for a barrier). */
kann_status kann_model_record(const kann_model *m, uint32_t r, uint32_t *kernel, const void **args,
                              uint32_t *args_size);
/* The CONST and ARGS sections (NULL and 0 when empty). */
const void *kann_model_consts(const kann_model *m, uint64_t *size);
const void *kann_model_args(const kann_model *m, uint64_t *size);

/* CPU kernel variants. kann_model_open picks the best of generic, AVX2 and AVX-512 that this
 * CPU runs; a caller may force another (to compare or test them): their results agree within
 * float rounding.
 * AMX runs the AVX-512 kernels, but for the convs of 64 output channels or more that run as one
 * GEMM (1x1 convs, convs gathered into a scratch over a multiple of 32 weights each, convs of
 * column stride 2 over 32 to 1024 weights): each weight and input split into two bf16 numbers
 * (hi + lo), three bf16 tile products per multiply-add (hi hi + hi lo + lo hi). Their sums come
 * within a few 1e-6 of the float ones, relative to their size: the outputs agree within 1e-4 of
 * their largest value, not within float rounding. It needs its weights prepared in a buffer of the
 * caller's (kann_model_set_isa_prepared), and on Linux the process's permission to use the tile
 * data (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA: kann_host_amx_permit does it) before it
 * runs. Its kernels take about 132 KiB of the running thread's stack (a record's input split
 * into bf16 pairs). */
typedef enum kann_isa {
    KANN_ISA_GENERIC = 0, /* the portable C reference kernels */
    KANN_ISA_AVX2 = 1,    /* x86 AVX2 + FMA */
    KANN_ISA_AVX512 = 2,  /* x86 AVX-512 (F, VL, BW, DQ) */
    KANN_ISA_AMX = 3,     /* x86 AVX-512 and AMX-BF16: 1x1, gathered, strided convs on tiles */
    KANN_ISA_COUNT
} kann_isa;

const char *kann_isa_name(kann_isa isa);  /* "generic", "avx2", "avx512", "amx" */
int kann_isa_from_name(const char *name); /* -1 if unknown */
/* 1 if this build has it and this CPU runs it (AMX: the OS enables the tile state; a Linux
 * process must still ask for it, above) */
int kann_isa_supported(kann_isa isa);
/* The level kann_model_open picks: the best supported one that needs nothing prepared (never
 * AMX). */
kann_isa kann_isa_best(void);
/* Switches an open model's kernels to isa; KANN_E_UNSUPPORTED if unsupported here,
 * KANN_E_ARGUMENT if isa needs prepared weights (kann_model_prepared_size non-zero). */
kann_status kann_model_set_isa(kann_model *m, kann_isa isa, kann_error *err);
/* The bytes of weights isa's kernels read in a form of their own (AMX: the bf16 pairs of the
 * weights of the records it runs on the tiles), 0 when none. */
uint64_t kann_model_prepared_size(const kann_model *m, kann_isa isa);
/* Like kann_model_set_isa, writing those weights into buf first: size >= kann_model_prepared_size
 * bytes, 64-byte aligned, owned by the caller and kept until the model switches to another
 * level or is no longer used (buf may be NULL where the size is 0). KANN_E_ARGUMENT (the model
 * unchanged) for a missing, short or misaligned buffer. */
kann_status kann_model_set_isa_prepared(kann_model *m, kann_isa isa, void *buf, size_t size,
                                        kann_error *err);
kann_isa kann_model_isa(const kann_model *m);
/* The function the model runs for kernel id (NULL if none): for tools that time records. */
kann_kernel_fn kann_model_kernel(const kann_model *m, uint32_t kernel);

/* One execution context: a model plus the caller's arena. Sessions of one model share nothing
 * but the read-only model, so several can run at once in different threads. */
typedef struct kann_session {
    const kann_model *model;
    uint8_t *arena;
} kann_session;

/* Binds an arena of at least kann_model_arena_size bytes, 64-byte aligned. */
kann_status kann_session_init(kann_session *s, const kann_model *m, void *arena,
                              size_t arena_size, kann_error *err);
/* Like kann_model_input/output, with data pointing into the arena. */
kann_status kann_session_input(const kann_session *s, uint32_t i, kann_tensor *t);
kann_status kann_session_output(const kann_session *s, uint32_t i, kann_tensor *t);

/* Runs all streams in this thread, phase by phase. Inputs are left intact (running again
 * without rewriting them gives the same outputs); outputs are valid until the next run. */
kann_status kann_session_run(kann_session *s, kann_error *err);

/* For a host thread pool: the calling worker runs streams first, first + stride, ... and
 * calls barrier(ctx) at the end of each phase; every worker must call this with the same
 * stride and its own first (0 <= first < stride). barrier must wait for all stride workers. */
typedef void (*kann_barrier_fn)(void *ctx);
kann_status kann_session_run_streams(kann_session *s, uint32_t first, uint32_t stride,
                                     kann_barrier_fn barrier, void *ctx);

/* For executors that hand a phase's streams to whichever thread is free (the host pool): runs
 * one stream's records of one phase, from record *cursor (the stream's first record, or where a
 * previous call or kann_model_skip_phase left it) through the phase's barrier, and leaves
 * *cursor at the stream's next phase. All streams of phase p must be done before any of p + 1
 * starts. KANN_E_ARGUMENT if *cursor is not a record of the model. */
kann_status kann_session_run_phase(kann_session *s, uint32_t *cursor);
/* The record after the barrier that ends the phase holding record cursor (cursor itself when it
 * is not a record of the model): a stream's next phase, without running this one. */
uint32_t kann_model_skip_phase(const kann_model *m, uint32_t cursor);
/* For executors that share one record among threads: the granule g at which record r's tile
 * [*begin, *end) may be cut into parts that run at the same time, each computing its outputs
 * bit for bit as the whole record does, no two parts writing the same byte (those with a
 * scratch each in a copy of their own: kann_model_record_slots); 0 when r runs only whole (a
 * barrier, a kernel whose parts would share one scratch, r not a record of the model).
 * *work (may be NULL): the record's multiply-adds, or elements compared, when it may be cut
 * (else 0). */
uint32_t kann_model_record_parts(const kann_model *m, uint32_t r, uint32_t *begin, uint32_t *end,
                                 double *work);
/* 1 when record r carries KANN_RECORD_FREE (kann_format.h): a thread other than its stream's
 * may run it whole while that one runs the phase's other records; 0 otherwise. */
int kann_model_record_free(const kann_model *m, uint32_t r);
/* Runs the part [begin, end) of record r's tile: the whole tile, or (g from
 * kann_model_record_parts non-zero) begin = the tile's begin + i g and end the tile's end or its
 * begin + j g, i < j. KANN_E_ARGUMENT (nothing run) for any other part or a barrier. */
kann_status kann_session_run_part(kann_session *s, uint32_t r, uint32_t begin, uint32_t end);
/* For a record r that kann_model_record_parts cuts: the copies of a scratch its parts work in,
 * one for each part running at the same time (0: its parts use none, so any number of them may
 * run at once); *claims (may be NULL) 1 where r's kernel takes its parts as it goes, so that
 * one call runs every part no other thread has taken (kann_session_run_part_in). */
uint32_t kann_model_record_slots(const kann_model *m, uint32_t r, int *claims);
/* kann_session_run_part, in scratch copy `slot` (0, or below kann_model_record_slots; else
 * KANN_E_ARGUMENT), and with claim non-NULL, for a record whose kernel claims its parts: before
 * each granule of the part it computes, from index `at`, the kernel calls claim(claim_ctx, at)
 * and stops where that returns 0. */
kann_status kann_session_run_part_in(kann_session *s, uint32_t r, uint32_t begin, uint32_t end,
                                     uint32_t slot, int (*claim)(void *ctx, uint32_t at),
                                     void *claim_ctx);

/* ---- static models (kann-c --emit c) -----------------------------------------------------
 * A model compiled to C source for firmware: its records hold kernel function pointers and
 * pointers to their argument structs, its weights are const arrays. Nothing is opened or
 * validated at run time (kann-c ran the loader's checks before writing the source) and only
 * the kernels the model uses are linked. The generated header names the model's
 * kann_static_model and its arena size; the caller owns the arena (64-byte aligned). */
typedef struct kann_static_record {
    kann_kernel_fn fn; /* NULL: a barrier, the end of a phase */
    const void *args;
} kann_static_record;

typedef struct kann_static_io {
    const char *name;
    uint32_t dtype; /* kann_dtype */
    uint32_t rank;
    uint32_t dims[KANN_MAX_IO_RANK];
    size_t offset; /* in the arena */
    size_t size; /* bytes */
} kann_static_io;

typedef struct kann_static_model {
    size_t arena_size;
    uint32_t n_streams, n_phases;
    const kann_static_record *records; /* the streams back to back, each ending in a barrier */
    const uint32_t *stream_first; /* [n_streams]: index of each stream's first record */
    const void *consts; /* the weights the argument structs' KANN_SPACE_CONST refs point into */
    uint32_t n_inputs, n_outputs;
    const kann_static_io *io; /* inputs, then outputs */
} kann_static_model;

/* Runs every stream in this thread, phase by phase, like kann_session_run. */
kann_status kann_static_run(const kann_static_model *m, void *arena);
/* Like kann_session_run_streams, for several cores or threads sharing one arena. */
kann_status kann_static_run_streams(const kann_static_model *m, void *arena, uint32_t first,
                                    uint32_t stride, kann_barrier_fn barrier, void *ctx);
/* Input/output i, with data pointing into arena. */
kann_status kann_static_input(const kann_static_model *m, void *arena, uint32_t i, kann_tensor *t);
kann_status kann_static_output(const kann_static_model *m, void *arena, uint32_t i, kann_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
