/* Shared by the OpenCL executor's files (opencl*.c) and their unit tests only: program building
 * with the binary cache, and the per-kernel launch table. */
#ifndef KANN_OPENCL_INTERNAL_H
#define KANN_OPENCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stddef.h>
#include <stdint.h>

#include "kann_opencl.h"

/* The embedded .cl files of kernels/opencl (generated at build time). */
extern const char *const kann_opencl_source_names[];
extern const char *const kann_opencl_source_texts[];
extern const unsigned kann_opencl_n_sources;

/* Which .cl files make up a program. */
typedef enum kann_ocl_program_kind {
    KANN_OCL_PROGRAM_GENERIC, /* eltwise, pool, softmax, layout: no build macros */
    KANN_OCL_PROGRAM_MATMUL,
    KANN_OCL_PROGRAM_CONV_CPU,
    KANN_OCL_PROGRAM_CONV_LANES, /* conv2d_packed with output channels in the lanes (CPU devices) */
    KANN_OCL_PROGRAM_CONV_GPU,
    KANN_OCL_PROGRAM_REDUCE,  /* reduce, norm, hardmax, lrn, nll_loss */
    KANN_OCL_PROGRAM_DATA,    /* data movement of any element size, gathers, scatters, pad2d */
    KANN_OCL_PROGRAM_SPATIAL, /* conv_transpose, conv_nd, pool_nd, resize */
    KANN_OCL_PROGRAM_TYPED,   /* unary, binary_typed, ternary, cast */
    KANN_OCL_PROGRAM_KIND_COUNT
} kann_ocl_program_kind;

/* How one record is launched: its program (kind + build options), entry point and NDRange. */
typedef struct kann_ocl_launch {
    kann_ocl_program_kind program;
    char options[256]; /* -D macros */
    const char *entry;
    size_t global[3];
    size_t local[3];
    int has_local; /* 0: the implementation picks the work-group size */
    /* A record run as two launches (f32_conv2d_winograd on CPU devices: the input transform,
     * then the GEMMs that read what it wrote) names the second here: the same program,
     * arguments and local size, enqueued right after the first on the same in-order queue.
     * NULL: one launch. */
    const char *then_entry;
    size_t then_global[3];
} kann_ocl_launch;

/* Fills l for a record of kernel id on a device of the given type (CL_DEVICE_TYPE_CPU gets
 * CPU-style kernels). KANN_E_UNSUPPORTED, naming the kernel, when this backend lacks it. A
 * record with no work gets global[0] == 0. */
kann_status kann_ocl_plan_launch(uint32_t kernel_id, const void *args, cl_device_type type,
                                 kann_ocl_launch *l, kann_error *err);

/* The complete source text of a program kind (field offsets, then its .cl files); malloc'd. */
char *kann_ocl_program_source(kann_ocl_program_kind kind, kann_error *err);

/* Builds (or loads from the cache directory, when not NULL) a program for devices of ctx.
 * *from_cache says which. A build failure is KANN_E_RUNTIME with the build log. */
kann_status kann_ocl_build_program(cl_context ctx, const cl_device_id *devices, uint32_t n_devices,
                                   const char *source, const char *options, const char *cache_dir,
                                   cl_program *out, int *from_cache, kann_error *err);

/* The cache file a program would use ("" when cache_dir is NULL or empty). */
void kann_ocl_cache_path(cl_device_id device, const char *source, const char *options,
                         const char *cache_dir, char *path, size_t n);

/* The cache directory options and the environment give (NULL: none). Writes into buf. */
const char *kann_ocl_cache_dir(const char *requested, char *buf, size_t n);

/* A short name for an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char *kann_ocl_error_name(cl_int code);
/* Sets err for a failed OpenCL call: allocation failures read "out of device memory". */
kann_status kann_ocl_fail(kann_error *err, cl_int code, const char *what);

#endif
