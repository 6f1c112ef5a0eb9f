/* kann_opencl.h — the OpenCL executor: runs a validated model's record streams on an OpenCL
 * device (PoCL on a CPU, a GPU, ...), each stream on its own sub-device queue where the device
 * can be partitioned, with the phase barriers as event dependencies.
 *
 * The executor owns its OpenCL objects: the context, one buffer holding the constants (uploaded
 * once), one holding the argument structs, one for the arena, and one kernel object per record
 * with its arguments set once. A run copies the session's inputs from its host arena to the
 * device, enqueues every record without waiting, and copies the outputs back: the session's
 * host arena is only the staging area for inputs and outputs. Programs are built once per
 * executor; their binaries are cached on disk (keyed by device, driver, build options and
 * source), so a second start does not recompile.
 *
 * Errors: no OpenCL platform or no matching device (KANN_E_NOT_FOUND), a kernel this backend
 * lacks or a device it cannot use (KANN_E_UNSUPPORTED, naming the kernel), a program that
 * does not build (KANN_E_RUNTIME, with the build log), out of device memory (KANN_E_RUNTIME). */
#ifndef KANN_OPENCL_H
#define KANN_OPENCL_H

#include <stdint.h>
#include <stdio.h>

#include "kann.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kann_opencl kann_opencl;

typedef struct kann_opencl_options {
    /* "N" (the index kann_opencl_list_devices prints) or a case-insensitive substring of
     * "platform: device"; NULL: $KANN_OPENCL_DEVICE, else the first GPU, else the first device */
    const char *device;
    /* Queues for the model's P streams: 0 = one sub-device per stream, as many as the device
     * partitions into (stream s runs on queue s mod Q); 1 = one in-order queue for all. */
    uint32_t max_queues;
    /* With n_parts > 1: run on sub-device `part` of the device split equally into n_parts (to
     * run several models side by side); 0 or 1: the whole device. */
    uint32_t part, n_parts;
    int profile; /* record OpenCL profiling events for kann_opencl_print_profile */
    /* Kernel variants: "cpu" (work-items as CPU microkernels) or "gpu" (local-memory tiles);
     * NULL: $KANN_OPENCL_KERNELS, else by the device's type. */
    const char *kernels;
    /* Program binary cache directory; NULL: $KANN_OPENCL_CACHE, else $XDG_CACHE_HOME/kann, else
     * $HOME/.cache/kann. "" disables the cache. */
    const char *cache_dir;
} kann_opencl_options;

/* Prints every OpenCL device as "N: platform: device (type, compute units)". */
kann_status kann_opencl_list_devices(FILE *f, kann_error *err);

/* Sets up the executor for model m (which must outlive it). o may be NULL (defaults). */
kann_status kann_opencl_open(kann_opencl **out, const kann_model *m, const kann_opencl_options *o,
                             kann_error *err);
void kann_opencl_free(kann_opencl *x);

/* One run: inputs from s's arena, outputs back into it. Equivalent to start then wait. */
kann_status kann_opencl_run(kann_opencl *x, kann_session *s, kann_error *err);
/* Enqueues a run and returns without waiting, so that several executors (on different
 * sub-devices) run at once; kann_opencl_wait finishes it. s must stay valid until then. */
kann_status kann_opencl_start(kann_opencl *x, kann_session *s, kann_error *err);
kann_status kann_opencl_wait(kann_opencl *x, kann_error *err);

/* "platform: device" of the executor's device (a sub-device's parent). */
const char *kann_opencl_device_name(const kann_opencl *x);
/* Queues the streams run on (1 when the device cannot be partitioned). */
uint32_t kann_opencl_n_queues(const kann_opencl *x);
/* Programs built from source and loaded from the binary cache when the executor opened. */
void kann_opencl_program_counts(const kann_opencl *x, uint32_t *built, uint32_t *cached);

/* After a run of an executor opened with profile set: per layer (node) the kernel, the device
 * time and its share of the run, from OpenCL profiling events. */
kann_status kann_opencl_print_profile(const kann_opencl *x, FILE *f, kann_error *err);

#ifdef __cplusplus
}
#endif

#endif
