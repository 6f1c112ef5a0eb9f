/* Runs one kernel record on the OpenCL device (PoCL in CI) and through the reference kernel on
 * the same arena and constants, then compares the whole arenas: outputs must agree and every
 * byte outside them must be left alone. Shared by tests/unit/test_opencl_kernels_*.c. */
#ifndef TEST_OPENCL_KERNELS_HARNESS_H
#define TEST_OPENCL_KERNELS_HARNESS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "opencl_internal.h"

#define KT_CAPACITY ((size_t)1 << 20)

typedef struct kt_space {
    uint8_t *data;
    size_t used;
} kt_space;

/* One test case: an arena and a constants section filled as a kernel's arguments are
 * allocated, random garbage elsewhere. */
typedef struct kt {
    kt_space arena, consts;
    uint64_t rng;
} kt;

typedef struct kt_device {
    int ready, absent;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program programs[KANN_OCL_PROGRAM_KIND_COUNT];
    cl_program shaped; /* built with shaped_options (kt_program) */
    kann_ocl_program_kind shaped_kind;
    char shaped_options[sizeof(((kann_ocl_launch *)0)->options)];
} kt_device;

static kt_device kt_dev;

static inline uint32_t kt_rand(kt *k) {
    k->rng = k->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(k->rng >> 33);
}

/* Uniform in [lo, hi] (inclusive). */
static inline uint32_t kt_range(kt *k, uint32_t lo, uint32_t hi) {
    return lo + kt_rand(k) % (hi - lo + 1);
}

static inline float kt_float(kt *k, float lo, float hi) {
    return lo + (hi - lo) * (float)(kt_rand(k) & 0xffffff) / (float)0xffffff;
}

static inline void kt_init(kt *k, uint64_t seed) {
    memset(k, 0, sizeof *k);
    k->rng = seed * 0x9e3779b97f4a7c15ULL + 1;
    k->arena.data = malloc(KT_CAPACITY);
    k->consts.data = malloc(KT_CAPACITY);
    assert_non_null(k->arena.data);
    assert_non_null(k->consts.data);
    for (size_t i = 0; i < KT_CAPACITY; i++) {
        k->arena.data[i] = (uint8_t)kt_rand(k);
        k->consts.data[i] = (uint8_t)kt_rand(k);
    }
    k->arena.used = k->consts.used = 64;
}

static inline void kt_free(kt *k) {
    free(k->arena.data);
    free(k->consts.data);
}

/* bytes of the arena (in_consts 0) or the constants (1), 64-byte aligned plus a random
 * multiple of align, so that offsets are only as aligned as the element size requires. */
static inline kann_ref kt_alloc(kt *k, int in_consts, size_t bytes, size_t align) {
    kt_space *s = in_consts ? &k->consts : &k->arena;
    size_t at = (s->used + 63) / 64 * 64 + align * kt_range(k, 0, 3);
    assert_true(at + bytes + 64 <= KT_CAPACITY);
    s->used = at + bytes;
    kann_ref r = {in_consts ? KANN_SPACE_CONST : KANN_SPACE_ARENA, 0, at};
    return r;
}

static inline uint8_t *kt_ptr(kt *k, kann_ref r) {
    return (r.space == KANN_SPACE_CONST ? k->consts.data : k->arena.data) + r.offset;
}

/* n floats at r, uniform in [lo, hi]. */
static inline void kt_fill_f32(kt *k, kann_ref r, size_t n, float lo, float hi) {
    float *p = (float *)(void *)kt_ptr(k, r);
    for (size_t i = 0; i < n; i++)
        p[i] = kt_float(k, lo, hi);
}

/* A float input of n elements, in the arena or the constants at random. */
static inline kann_ref kt_input_f32(kt *k, size_t n, float lo, float hi) {
    kann_ref r = kt_alloc(k, (int)kt_range(k, 0, 1), n * 4, 4);
    kt_fill_f32(k, r, n, lo, hi);
    return r;
}

static inline kann_ref kt_output(kt *k, size_t bytes, size_t align) {
    return kt_alloc(k, 0, bytes, align);
}

/* For a kernel whose reference writes a scratch that an OpenCL kernel leaves alone: runs the
 * reference once, so that the scratch already holds what it writes, then puts garbage back into
 * the n floats of its output y. */
static inline void kt_preset_scratch(kt *k, uint32_t kernel, const void *args, kann_ref y,
                                     size_t n) {
    kann_exec ex = {k->arena.data, k->consts.data, NULL, NULL, NULL};
    kann_kernels[kernel].ref(args, &ex);
    kt_fill_f32(k, y, n, -9.0f, 9.0f);
}

static inline int kt_have_device(void) {
    if (kt_dev.ready) return !kt_dev.absent;
    kt_dev.ready = 1;
    cl_platform_id platform;
    cl_uint n = 0;
    cl_int rc;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0 ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &kt_dev.device, &n) != CL_SUCCESS ||
        n == 0) {
        kt_dev.absent = 1;
        return 0;
    }
    kt_dev.context = clCreateContext(NULL, 1, &kt_dev.device, NULL, NULL, &rc);
    assert_non_null(kt_dev.context);
    kt_dev.queue = clCreateCommandQueue(kt_dev.context, kt_dev.device, 0, &rc);
    assert_non_null(kt_dev.queue);
    return 1;
}

#define KT_NEED_DEVICE()                                                                           \
    do {                                                                                           \
        if (!kt_have_device()) skip();                                                             \
    } while (0)

/* The launch's program: the generic ones built once; one built with macros (a conv's shape
 * class) kept until a launch asks for other macros. */
static inline cl_program kt_program(const kann_ocl_launch *l) {
    cl_program *slot = &kt_dev.programs[l->program];
    if (l->options[0]) {
        slot = &kt_dev.shaped;
        if (kt_dev.shaped && kt_dev.shaped_kind == l->program &&
            !strcmp(kt_dev.shaped_options, l->options))
            return kt_dev.shaped;
        if (kt_dev.shaped) clReleaseProgram(kt_dev.shaped);
        kt_dev.shaped = NULL;
        kt_dev.shaped_kind = l->program;
        snprintf(kt_dev.shaped_options, sizeof kt_dev.shaped_options, "%s", l->options);
    }
    if (*slot) return *slot;
    kann_error e;
    char *source = kann_ocl_program_source(l->program, &e);
    if (!source) fail_msg("source: %s", e.message);
    char options[sizeof l->options + 16];
    snprintf(options, sizeof options, "-cl-std=CL1.2 %s", l->options);
    int cached;
    if (kann_ocl_build_program(kt_dev.context, &kt_dev.device, 1, source, options, NULL, slot,
                               &cached, &e) != KANN_OK)
        fail_msg("build: %s", e.message);
    free(source);
    return *slot;
}

static inline cl_mem kt_buffer(cl_mem_flags flags, size_t size, const void *host) {
    cl_int rc;
    cl_mem m =
        clCreateBuffer(kt_dev.context, flags | CL_MEM_COPY_HOST_PTR, size, (void *)host, &rc);
    if (!m) fail_msg("clCreateBuffer: %d", (int)rc);
    return m;
}

/* Floats agree when their bits do, or within 1e-4 relative (1e-4 absolute near zero); exact
 * compares bytes. Returns the first differing byte offset, or -1. */
static inline long kt_compare(const uint8_t *want, const uint8_t *got, size_t n, int exact) {
    for (size_t i = 0; i < n; i += 4) {
        size_t len = n - i < 4 ? n - i : 4;
        if (!memcmp(want + i, got + i, len)) continue;
        if (exact || len < 4) return (long)i;
        float u, v;
        memcpy(&u, want + i, 4);
        memcpy(&v, got + i, 4);
        if (isnan(u) && isnan(v)) continue;
        if (!(fabsf(u - v) <= 1e-4f * (1.0f + fabsf(u)))) return (long)i;
    }
    return -1;
}

/* Enqueues one launch of a record (entry over global, l's program and local size). */
static inline void kt_enqueue(const kann_ocl_launch *l, const char *entry, const size_t *global,
                              cl_mem args, cl_mem arena, cl_mem consts) {
    cl_int rc;
    cl_kernel kern = clCreateKernel(kt_program(l), entry, &rc);
    if (!kern) fail_msg("clCreateKernel %s: %d", entry, (int)rc);
    cl_uint at = 0;
    rc = clSetKernelArg(kern, 0, sizeof args, &args);
    rc |= clSetKernelArg(kern, 1, sizeof at, &at);
    rc |= clSetKernelArg(kern, 2, sizeof arena, &arena);
    rc |= clSetKernelArg(kern, 3, sizeof consts, &consts);
    assert_int_equal(rc, CL_SUCCESS);
    rc = clEnqueueNDRangeKernel(kt_dev.queue, kern, 3, NULL, global, l->has_local ? l->local : NULL,
                                0, NULL, NULL);
    if (rc != CL_SUCCESS) fail_msg("enqueue %s: %d", entry, (int)rc);
    clReleaseKernel(kern);
}

/* The kernel style kt_run plans for: CL_DEVICE_TYPE_CPU (work-items of local size 1) or
 * CL_DEVICE_TYPE_GPU (work-groups); both run on any device. */
static cl_device_type kt_style = CL_DEVICE_TYPE_CPU;

/* The arena and constants bounds of k, the record validated against them (the test must build
 * legal arguments). */
static inline kann_bounds kt_bounds(kt *k, uint32_t kernel, const void *args) {
    kann_bounds b = {(k->arena.used + 63) / 64 * 64, (k->consts.used + 63) / 64 * 64};
    kann_error e;
    if (kann_kernels[kernel].validate(args, &b, &e) != KANN_OK)
        fail_msg("the test built invalid %s arguments: %s", kann_kernels[kernel].name, e.message);
    return b;
}

/* The record run on the device (kt_style) over a copy of k's arena and constants (bounds b):
 * got (b.arena_size bytes) receives the arena as the run left it. */
static inline void kt_device_run(kt *k, uint32_t kernel, const void *args, size_t args_size,
                                 kann_bounds b, uint8_t *got) {
    size_t arena_size = (size_t)b.arena_size, const_size = (size_t)b.const_size;
    kann_ocl_launch l;
    kann_error e;
    if (kann_ocl_plan_launch(kernel, args, kt_style, &l, &e) != KANN_OK)
        fail_msg("plan: %s", e.message);
    memcpy(got, k->arena.data, arena_size);
    if (l.global[0] && l.global[1] && l.global[2]) {
        size_t words = (args_size + 3) / 4;
        uint32_t *arg_words = calloc(words, 4);
        assert_non_null(arg_words);
        memcpy(arg_words, args, args_size);
        cl_mem a = kt_buffer(CL_MEM_READ_ONLY, words * 4, arg_words);
        cl_mem arena = kt_buffer(CL_MEM_READ_WRITE, arena_size, k->arena.data);
        cl_mem consts = kt_buffer(CL_MEM_READ_ONLY, const_size, k->consts.data);
        kt_enqueue(&l, l.entry, l.global, a, arena, consts);
        if (l.then_entry) kt_enqueue(&l, l.then_entry, l.then_global, a, arena, consts);
        cl_int rc =
            clEnqueueReadBuffer(kt_dev.queue, arena, CL_TRUE, 0, arena_size, got, 0, NULL, NULL);
        assert_int_equal(rc, CL_SUCCESS);
        clReleaseMemObject(a);
        clReleaseMemObject(arena);
        clReleaseMemObject(consts);
        free(arg_words);
    }
}

/* Validates the record (the test must build legal arguments), runs it both ways and compares.
 * exact: compare bytes (data movement, integers); else floats within 1e-4. */
static inline void kt_run(kt *k, uint32_t kernel, const void *args, size_t args_size, int exact) {
    kann_bounds b = kt_bounds(k, kernel, args);
    size_t arena_size = (size_t)b.arena_size;
    uint8_t *want = malloc(arena_size), *got = malloc(arena_size);
    assert_non_null(want);
    assert_non_null(got);
    memcpy(want, k->arena.data, arena_size);
    kann_exec ex = {want, k->consts.data, NULL, NULL, NULL};
    kann_kernels[kernel].ref(args, &ex);
    kt_device_run(k, kernel, args, args_size, b, got);
    long bad = kt_compare(want, got, arena_size, exact);
    if (bad >= 0) {
        float u, v;
        memcpy(&u, want + bad, 4);
        memcpy(&v, got + bad, 4);
        fail_msg("%s: arena byte %ld: reference %02x%02x%02x%02x (%g), opencl %02x%02x%02x%02x "
                 "(%g)",
                 kann_kernels[kernel].name, bad, want[bad], want[bad + 1], want[bad + 2],
                 want[bad + 3], (double)u, got[bad], got[bad + 1], got[bad + 2], got[bad + 3],
                 (double)v);
    }
    free(want);
    free(got);
}

/* A random tile of axis `axis` with begin a multiple of align: the whole axis half of the
 * time. */
static inline kann_tile kt_aligned_tile(kt *k, uint32_t axis, uint32_t n, uint32_t align) {
    kann_tile t = {axis, 0, n, 0};
    if (n > 0 && kt_range(k, 0, 1)) {
        t.begin = kt_range(k, 0, (n - 1) / align) * align;
        t.end = kt_range(k, t.begin, n);
    }
    return t;
}

/* A random tile [begin, end) of an axis of extent n: the whole axis half of the time. */
static inline kann_tile kt_tile(kt *k, uint32_t n) {
    kann_tile t = {0, 0, n, 0};
    if (n > 0 && kt_range(k, 0, 1)) {
        t.begin = kt_range(k, 0, n - 1);
        t.end = kt_range(k, t.begin, n);
    }
    return t;
}

#endif
