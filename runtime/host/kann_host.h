/* kann_host.h — host conveniences around the kann core: model files, arenas, a thread
 * pool for the parallel walk, and .npy / ONNX TensorProto tensor files.
 *
 * Unlike the core, this layer allocates, does I/O and starts threads. Every function that can
 * fail returns a kann_status and fills an optional kann_error whose message names the file.
 * I/O failures are KANN_E_IO, malformed files KANN_E_CORRUPT (or KANN_E_TRUNCATED), valid
 * files this code does not handle (Fortran order, a big-endian dtype) KANN_E_UNSUPPORTED. */
#ifndef KANN_HOST_H
#define KANN_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "kann.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- files and arenas --------------------------------------------------------------------- */

/* A whole file's bytes, read-only: from 2 MiB up read into a buffer on huge pages (advised:
 * weights streamed every run walk fewer page tables), smaller ones mapped, or read into a
 * 64-byte-aligned buffer where mapping fails (pipes, some file systems). Suitable for
 * kann_model_open. */
typedef struct kann_host_file {
    const void *data;
    size_t size;
    int mapped; /* private: how to release data */
} kann_host_file;

kann_status kann_host_file_load(const char *path, kann_host_file *f, kann_error *err);
void kann_host_file_free(kann_host_file *f);

/* Writes n bytes to a temporary file next to path, fsyncs and renames it: path is either left
 * as it was or complete. */
kann_status kann_host_write_file_atomic(const char *path, const void *data, size_t n,
                                        kann_error *err);

/* A zeroed, 64-byte-aligned arena of at least size bytes (size 0 gives a valid minimal one),
 * on huge pages from 2 MiB up (advised); NULL when out of memory. Release with
 * kann_host_arena_free. */
void *kann_host_arena_alloc(size_t size);
void kann_host_arena_free(void *arena);

/* CPUs this process may run on (at least 1). */
uint32_t kann_host_cpu_count(void);

/* ---- CPU kernels ---------------------------------------------------------------------------- */

/* Asks the OS to let this process use the AMX tile data (Linux: arch_prctl
 * ARCH_REQ_XCOMP_PERM); 1 if it may, 0 if not (or not on Linux x86-64). */
int kann_host_amx_permit(void);

/* Switches m to the CPU kernels of the level named (kann_isa_name; NULL or "": the best this
 * CPU and OS run, AMX included where kann_host_amx_permit grants it), preparing the weights
 * that level reads in a form of its own in a buffer allocated here: *prepared (NULL if none),
 * to release with kann_host_arena_free once m is no longer used. KANN_E_ARGUMENT for an
 * unknown name, KANN_E_UNSUPPORTED for a level this build or CPU (or OS) lacks. */
kann_status kann_host_model_set_isa(kann_model *m, const char *name, void **prepared,
                                    kann_error *err);

/* ---- thread pool ---------------------------------------------------------------------------
 * T workers run a session's phases together (kann_session_run_phase): worker t runs streams
 * t, t + T', ... of each phase, T' = min(T, streams), then any stream of the phase no worker
 * has started (one the host delayed), and the next phase starts once all of them are done. The
 * calling thread is worker 0; T - 1 threads are started once and wait between runs (spinning
 * briefly, then sleeping). One run at a time per pool. */
typedef struct kann_host_pool kann_host_pool;

#define KANN_HOST_POOL_PIN                                                                         \
    1u /* pin the pool's thread i to CPU i (i >= 1; the caller is not                              \
          touched) */

/* n_threads >= 1. NULL on failure (err says why). */
kann_host_pool *kann_host_pool_new(uint32_t n_threads, unsigned flags, kann_error *err);
uint32_t kann_host_pool_threads(const kann_host_pool *p);
/* Runs s once on the pool; with one thread (or one stream) it is kann_session_run. */
kann_status kann_host_pool_run(kann_host_pool *p, kann_session *s, kann_error *err);
/* The free records (KANN_RECORD_FREE) that a thread done with its own segments took from
 * another thread's, since the pool started. */
uint64_t kann_host_pool_records_taken(const kann_host_pool *p);
void kann_host_pool_free(kann_host_pool *p);

/* ---- tensor files ------------------------------------------------------------------------ */

/* A tensor read from a file. dims beyond rank are 0. */
typedef struct kann_host_tensor {
    char *name;     /* malloc'd; "" when the file has none (.npy) */
    uint32_t dtype; /* kann_dtype */
    uint32_t rank;
    uint32_t dims[KANN_MAX_IO_RANK];
    void *data;  /* malloc'd, 64-byte aligned, dense C order, little-endian */
    size_t size; /* bytes */
} kann_host_tensor;

void kann_host_tensor_free(kann_host_tensor *t);

/* .npy (format versions 1, 2 and 3): dtypes '<f4' '<i8' '<i4' '|b1' '|u1' '|i1', C order.
 * what names the bytes in messages (a file name). */
kann_status kann_host_npy_parse(const void *bytes, size_t n, const char *what, kann_host_tensor *t,
                                kann_error *err);
kann_status kann_host_npy_read(const char *path, kann_host_tensor *t, kann_error *err);
/* Encodes t (dtype, rank, dims, data) as .npy; *out is malloc'd. */
kann_status kann_host_npy_encode(const kann_tensor *t, void **out, size_t *out_size,
                                 kann_error *err);
kann_status kann_host_npy_write(const char *path, const kann_tensor *t, kann_error *err);

/* ONNX TensorProto (.pb): raw_data, or float_data / int32_data / int64_data. */
kann_status kann_host_pb_parse(const void *bytes, size_t n, const char *what, kann_host_tensor *t,
                               kann_error *err);
kann_status kann_host_pb_read(const char *path, kann_host_tensor *t, kann_error *err);
/* Encodes t as a TensorProto with raw_data and t->name (may be NULL); *out is malloc'd. */
kann_status kann_host_pb_encode(const kann_tensor *t, void **out, size_t *out_size,
                                kann_error *err);
kann_status kann_host_pb_write(const char *path, const kann_tensor *t, kann_error *err);

/* Reads a .npy or a TensorProto file, told apart by content (the "\x93NUMPY" magic). */
kann_status kann_host_tensor_read(const char *path, kann_host_tensor *t, kann_error *err);

#ifdef __cplusplus
}
#endif

#endif
