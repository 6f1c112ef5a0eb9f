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

#ifdef __cplusplus
}
#endif

#endif
