/* The OpenCL executor: device selection, sub-device partitioning, buffers, one kernel object per
 * record, and runs that enqueue every record with phase barriers as event dependencies. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_private.h"
#include "kann_format.h"
#include "kann_kernels.h"
#include "opencl_internal.h"

#define MAX_DEVICES 64
#define MAX_QUEUES 64

/* One launch of a record (a record may take two), in enqueue order. */
typedef struct ocl_op {
    cl_kernel kernel;
    uint32_t record, kernel_id, queue;
    int waits;   /* first op of its queue in its phase: waits for the other queues */
    int signals; /* last op of its queue in its phase: its event is waited for */
    size_t global[3], local[3];
    int has_local;
    cl_event event;
} ocl_op;

typedef struct ocl_program {
    kann_ocl_program_kind kind;
    char options[256];
    cl_program program;
} ocl_program;

struct kann_opencl {
    const kann_model *model;
    char name[512];
    cl_device_type type;
    cl_device_id root; /* the selected device, or the part of it this executor runs on */
    cl_device_id parts[MAX_QUEUES]; /* sub-devices from the partition cache (never released) */
    uint32_t n_parts_created;
    cl_device_id instance_parts[MAX_QUEUES];
    uint32_t n_instance_parts;
    cl_device_id queue_devices[MAX_QUEUES];
    uint32_t n_queues;
    cl_context context;
    cl_command_queue queues[MAX_QUEUES];
    cl_mem consts, args, arena;
    ocl_program *programs;
    uint32_t n_programs;
    uint32_t n_built, n_cached;
    ocl_op *ops;
    uint32_t n_ops;
    uint32_t *phase_first; /* ops of phase k: [phase_first[k], phase_first[k + 1]) */
    int profile;
    int running;
    cl_event last[MAX_QUEUES];
    kann_session *session;
};

/* ---- devices ------------------------------------------------------------------------------ */

typedef struct device_entry {
    cl_platform_id platform;
    cl_device_id device;
    char label[512]; /* "platform: device" */
    cl_device_type type;
} device_entry;

static kann_status list_all(device_entry *out, uint32_t *n, kann_error *err) {
    cl_platform_id platforms[16];
    cl_uint n_platforms = 0;
    cl_int rc = clGetPlatformIDs(16, platforms, &n_platforms);
    *n = 0;
    if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (rc == CL_SUCCESS && n_platforms == 0))
        return kann_host_fail(err, KANN_E_NOT_FOUND,
                              "no OpenCL platform: install an OpenCL driver (e.g. Debian "
                              "pocl-opencl-icd) or register one in /etc/OpenCL/vendors");
    if (rc != CL_SUCCESS) return kann_ocl_fail(err, rc, "clGetPlatformIDs");
    for (cl_uint p = 0; p < n_platforms && p < 16; p++) {
        char pname[200] = "";
        clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
        cl_device_id devices[MAX_DEVICES];
        cl_uint n_dev = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devices, &n_dev) !=
            CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n_dev && d < MAX_DEVICES && *n < MAX_DEVICES; d++) {
            device_entry *e = &out[(*n)++];
            char dname[256] = "";
            clGetDeviceInfo(devices[d], CL_DEVICE_NAME, sizeof dname - 1, dname, NULL);
            clGetDeviceInfo(devices[d], CL_DEVICE_TYPE, sizeof e->type, &e->type, NULL);
            e->platform = platforms[p];
            e->device = devices[d];
            snprintf(e->label, sizeof e->label, "%s: %s", pname, dname);
        }
    }
    if (*n == 0) return kann_host_fail(err, KANN_E_NOT_FOUND, "no OpenCL device found");
    return KANN_OK;
}

static const char *type_name(cl_device_type t) {
    return t & CL_DEVICE_TYPE_GPU ? "GPU" : t & CL_DEVICE_TYPE_CPU ? "CPU" : "accelerator";
}

kann_status kann_opencl_list_devices(FILE *f, kann_error *err) {
    device_entry all[MAX_DEVICES];
    uint32_t n;
    kann_status st = list_all(all, &n, err);
    if (st != KANN_OK) return st;
    for (uint32_t i = 0; i < n; i++) {
        cl_uint units = 0;
        clGetDeviceInfo(all[i].device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
        fprintf(f, "%u: %s (%s, %u compute units)\n", i, all[i].label, type_name(all[i].type),
                units);
    }
    return KANN_OK;
}

static int contains_nocase(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n) return 1;
    }
    return n == 0;
}

static kann_status select_device(const char *selector, device_entry *out, kann_error *err) {
    device_entry all[MAX_DEVICES];
    uint32_t n;
    kann_status st = list_all(all, &n, err);
    if (st != KANN_OK) return st;
    if (!selector || !*selector) selector = getenv("KANN_OPENCL_DEVICE");
    if (!selector || !*selector) {
        for (uint32_t i = 0; i < n; i++)
            if (all[i].type & CL_DEVICE_TYPE_GPU) {
                *out = all[i];
                return KANN_OK;
            }
        *out = all[0];
        return KANN_OK;
    }
    char *end;
    unsigned long index = strtoul(selector, &end, 10);
    if (*end == '\0' && end != selector) {
        if (index < n) {
            *out = all[index];
            return KANN_OK;
        }
        return kann_host_fail(err, KANN_E_NOT_FOUND,
                              "no OpenCL device %lu: there are %u (kann-run --list-devices)", index,
                              n);
    }
    for (uint32_t i = 0; i < n; i++)
        if (contains_nocase(all[i].label, selector)) {
            *out = all[i];
            return KANN_OK;
        }
    return kann_host_fail(err, KANN_E_NOT_FOUND,
                          "no OpenCL device matches '%s' (kann-run --list-devices lists them)",
                          selector);
}

/* Creates an equal partition of dev into up to want parts; returns how many (0: it cannot be
 * split). */
static uint32_t create_partition(cl_device_id dev, uint32_t want, cl_device_id *parts) {
    if (want < 2) return 0;
    cl_device_partition_property props[8];
    size_t size = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_PARTITION_PROPERTIES, sizeof props, props, &size) !=
        CL_SUCCESS)
        return 0;
    int equally = 0;
    for (size_t i = 0; i < size / sizeof props[0]; i++)
        equally |= props[i] == CL_DEVICE_PARTITION_EQUALLY;
    cl_uint units = 0, max_sub = 0;
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_PARTITION_MAX_SUB_DEVICES, sizeof max_sub, &max_sub, NULL);
    if (!equally || units < 2 || max_sub < 2) return 0;
    if (want > max_sub) want = max_sub;
    if (want > units) want = units;
    if (want > MAX_QUEUES) want = MAX_QUEUES;
    cl_uint per_part = units / want, made = units / per_part;
    cl_device_id all[MAX_QUEUES * 2];
    if (made > MAX_QUEUES * 2) return 0;
    const cl_device_partition_property p[] = {CL_DEVICE_PARTITION_EQUALLY, per_part, 0};
    cl_uint got = 0;
    if (clCreateSubDevices(dev, p, made, all, &got) != CL_SUCCESS || got < 2) return 0;
    for (cl_uint i = want; i < got; i++)
        clReleaseDevice(all[i]);
    memcpy(parts, all, want * sizeof *parts);
    return want;
}

/* Sub-devices live as long as the process and are shared by every executor that asks for the
 * same split of the same device. Releasing them with the executor is not safe: after clFinish
 * returns, an implementation's worker thread may still be dropping its reference to the last
 * event, and PoCL reads the event's queue's device there without holding a reference to it. */
#define MAX_PARTITIONS 32

static struct {
    cl_device_id parent;
    uint32_t want, n;
    cl_device_id parts[MAX_QUEUES];
} partitions[MAX_PARTITIONS];
static uint32_t n_partitions;
static pthread_mutex_t partitions_lock = PTHREAD_MUTEX_INITIALIZER;

/* Splits dev equally into up to want parts; returns how many (0: it cannot be split). */
static uint32_t split_device(cl_device_id dev, uint32_t want, cl_device_id *parts) {
    if (want < 2) return 0;
    uint32_t n = 0;
    pthread_mutex_lock(&partitions_lock);
    uint32_t i = 0;
    while (i < n_partitions && !(partitions[i].parent == dev && partitions[i].want == want))
        i++;
    if (i == n_partitions && n_partitions < MAX_PARTITIONS) {
        partitions[i].parent = dev;
        partitions[i].want = want;
        partitions[i].n = create_partition(dev, want, partitions[i].parts);
        n_partitions++;
    }
    if (i < n_partitions) {
        n = partitions[i].n;
        memcpy(parts, partitions[i].parts, n * sizeof *parts);
    }
    pthread_mutex_unlock(&partitions_lock);
    return n;
}

/* ---- setup -------------------------------------------------------------------------------- */

static kann_status get_program(kann_opencl *x, const kann_ocl_launch *l, const char *cache_dir,
                               cl_program *out, kann_error *err) {
    for (uint32_t i = 0; i < x->n_programs; i++)
        if (x->programs[i].kind == l->program && !strcmp(x->programs[i].options, l->options)) {
            *out = x->programs[i].program;
            return KANN_OK;
        }
    char *source = kann_ocl_program_source(l->program, err);
    if (!source) return err ? err->status : KANN_E_RUNTIME;
    char options[400];
    snprintf(options, sizeof options, "-cl-std=CL1.2 %s", l->options);
    cl_program p;
    int cached;
    kann_status st = kann_ocl_build_program(x->context, x->queue_devices, x->n_queues, source,
                                            options, cache_dir, &p, &cached, err);
    free(source);
    if (st != KANN_OK) return st;
    ocl_program *grown = realloc(x->programs, (x->n_programs + 1) * sizeof *grown);
    if (!grown) {
        clReleaseProgram(p);
        return kann_host_fail(err, KANN_E_RUNTIME, "out of memory");
    }
    x->programs = grown;
    ocl_program *e = &x->programs[x->n_programs++];
    e->kind = l->program;
    snprintf(e->options, sizeof e->options, "%s", l->options);
    e->program = p;
    if (cached)
        x->n_cached++;
    else
        x->n_built++;
    *out = p;
    return KANN_OK;
}

static kann_status make_buffer(kann_opencl *x, cl_mem_flags flags, uint64_t size, const void *host,
                               const char *what, cl_mem *out, kann_error *err) {
    cl_ulong max_alloc = 0, global = 0;
    clGetDeviceInfo(x->root, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(x->root, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    if ((max_alloc && size > max_alloc) || (global && size > global))
        return kann_host_fail(err, KANN_E_RUNTIME,
                              "out of device memory: the %s need %llu bytes, %s allocates at "
                              "most %llu",
                              what, (unsigned long long)size, x->name,
                              (unsigned long long)max_alloc);
    cl_int rc;
    size_t bytes = size ? (size_t)size : 64; /* OpenCL has no empty buffers */
    *out = clCreateBuffer(x->context, flags | (size && host ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                          size ? (void *)host : NULL, &rc);
    if (!*out) {
        char msg[96];
        snprintf(msg, sizeof msg, "allocating the %s (%llu bytes)", what, (unsigned long long)size);
        return kann_ocl_fail(err, rc, msg);
    }
    return KANN_OK;
}

/* Appends an op launching entry of program over global (the local size of l) for the record
 * whose struct is at word at. */
static kann_status add_op(kann_opencl *x, cl_program program, const char *entry,
                          const size_t global[3], const kann_ocl_launch *l, cl_uint at,
                          kann_error *err) {
    ocl_op *op = &x->ops[x->n_ops];
    cl_int rc;
    op->kernel = clCreateKernel(program, entry, &rc);
    if (!op->kernel) return kann_ocl_fail(err, rc, "clCreateKernel");
    x->n_ops++; /* counted once it holds a kernel, which kann_opencl_free then releases */
    rc = clSetKernelArg(op->kernel, 0, sizeof(cl_mem), &x->args);
    rc |= clSetKernelArg(op->kernel, 1, sizeof at, &at);
    rc |= clSetKernelArg(op->kernel, 2, sizeof(cl_mem), &x->arena);
    rc |= clSetKernelArg(op->kernel, 3, sizeof(cl_mem), &x->consts);
    if (rc != CL_SUCCESS) return kann_ocl_fail(err, rc, "clSetKernelArg");
    memcpy(op->global, global, sizeof op->global);
    memcpy(op->local, l->local, sizeof op->local);
    op->has_local = l->has_local;
    return KANN_OK;
}

/* Plans the ops in enqueue order: phase by phase, stream by stream (a record of two launches
 * makes two ops: the first waits for the other queues, the second follows it in its queue). */
static kann_status plan_ops(kann_opencl *x, const char *cache_dir, kann_error *err) {
    const kann_model *m = x->model;
    uint32_t n_streams = kann_model_n_streams(m), n_phases = kann_model_n_phases(m);
    uint32_t n_records = kann_model_n_records(m);
    uint32_t cursor[KANN_MAX_STREAMS], end[KANN_MAX_STREAMS];
    x->ops = calloc(n_records ? 2 * (size_t)n_records : 1, sizeof *x->ops);
    x->phase_first = calloc(n_phases + 1, sizeof *x->phase_first);
    if (!x->ops || !x->phase_first) return kann_host_fail(err, KANN_E_RUNTIME, "out of memory");
    for (uint32_t s = 0; s < n_streams; s++) {
        kann_model_stream(m, s, &cursor[s], &end[s]);
        end[s] += cursor[s];
    }
    for (uint32_t phase = 0; phase < n_phases; phase++) {
        x->phase_first[phase] = x->n_ops;
        int seen[MAX_QUEUES] = {0};
        for (uint32_t s = 0; s < n_streams; s++) {
            uint32_t q = s % x->n_queues;
            for (;;) {
                uint32_t r = cursor[s]++, kid, size;
                const void *args;
                kann_model_record(m, r, &kid, &args, &size);
                if (kid == KANN_KERNEL_BARRIER) break;
                kann_ocl_launch l;
                kann_status st = kann_ocl_plan_launch(kid, args, x->type, &l, err);
                if (st != KANN_OK) {
                    char msg[256];
                    snprintf(msg, sizeof msg, "%s", err ? err->message : "");
                    return kann_host_fail(err, st, "record %u (node '%s'): %s", r,
                                          kann_model_record_node(m, r), msg);
                }
                if (l.global[0] == 0 || l.global[1] == 0 || l.global[2] == 0) continue;
                cl_program program = NULL;
                if ((st = get_program(x, &l, cache_dir, &program, err)) != KANN_OK) return st;
                const char *arena_base = (const char *)kann_model_args(m, NULL);
                cl_uint at = (cl_uint)(((const char *)args - arena_base) / 4);
                uint32_t first = x->n_ops;
                if ((st = add_op(x, program, l.entry, l.global, &l, at, err)) != KANN_OK ||
                    (l.then_entry && (st = add_op(x, program, l.then_entry, l.then_global, &l, at,
                                                  err)) != KANN_OK))
                    return st;
                for (uint32_t i = first; i < x->n_ops; i++) {
                    x->ops[i].record = r;
                    x->ops[i].kernel_id = kid;
                    x->ops[i].queue = q;
                }
                x->ops[first].waits = !seen[q];
                seen[q] = 1;
            }
        }
        /* the last op of each queue in the phase signals the next phase */
        int marked[MAX_QUEUES] = {0};
        for (uint32_t i = x->n_ops; i-- > x->phase_first[phase];) {
            ocl_op *op = &x->ops[i];
            if (!marked[op->queue]) op->signals = marked[op->queue] = 1;
        }
    }
    x->phase_first[n_phases] = x->n_ops;
    return KANN_OK;
}

kann_status kann_opencl_open(kann_opencl **out, const kann_model *m, const kann_opencl_options *o,
                             kann_error *err) {
    kann_opencl_options defaults = {0};
    if (!o) o = &defaults;
    *out = NULL;
    if (!m || !m->bytes) return kann_host_fail(err, KANN_E_ARGUMENT, "kann_opencl_open: no model");
    /* every record's kernel first: a model this backend cannot run is refused before any
     * device work */
    for (uint32_t r = 0; r < kann_model_n_records(m); r++) {
        uint32_t kid, size;
        const void *args;
        kann_model_record(m, r, &kid, &args, &size);
        kann_ocl_launch l;
        if (kid != KANN_KERNEL_BARRIER &&
            kann_ocl_plan_launch(kid, args, CL_DEVICE_TYPE_CPU, &l, err) != KANN_OK) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            return kann_host_fail(err, KANN_E_UNSUPPORTED, "record %u (node '%s'): %s", r,
                                  kann_model_record_node(m, r), msg);
        }
    }
    device_entry dev;
    kann_status st = select_device(o->device, &dev, err);
    if (st != KANN_OK) return st;
    cl_bool little = CL_TRUE;
    clGetDeviceInfo(dev.device, CL_DEVICE_ENDIAN_LITTLE, sizeof little, &little, NULL);
    if (!little)
        return kann_host_fail(err, KANN_E_UNSUPPORTED, "%s is big-endian: model.bin is not",
                              dev.label);
    kann_opencl *x = calloc(1, sizeof *x);
    if (!x) return kann_host_fail(err, KANN_E_RUNTIME, "out of memory");
    x->model = m;
    x->type = dev.type;
    x->root = dev.device;
    x->profile = o->profile;
    const char *style = o->kernels ? o->kernels : getenv("KANN_OPENCL_KERNELS");
    if (style && !strcmp(style, "gpu"))
        x->type = CL_DEVICE_TYPE_GPU;
    else if (style && !strcmp(style, "cpu"))
        x->type = CL_DEVICE_TYPE_CPU;
    snprintf(x->name, sizeof x->name, "%s", dev.label);
    if (o->n_parts > 1) {
        x->n_instance_parts = split_device(dev.device, o->n_parts, x->instance_parts);
        if (x->n_instance_parts < o->n_parts || o->part >= o->n_parts) {
            st = kann_host_fail(err, KANN_E_UNSUPPORTED,
                                "%s cannot be split into %u sub-devices (part %u)", dev.label,
                                o->n_parts, o->part);
            goto fail;
        }
        x->root = x->instance_parts[o->part];
    }
    uint32_t streams = kann_model_n_streams(m);
    uint32_t want = o->max_queues ? o->max_queues : streams;
    if (want > streams) want = streams;
    x->n_parts_created = split_device(x->root, want, x->parts);
    if (x->n_parts_created) {
        x->n_queues = x->n_parts_created;
        memcpy(x->queue_devices, x->parts, x->n_queues * sizeof *x->parts);
    } else {
        x->n_queues = 1;
        x->queue_devices[0] = x->root;
    }
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)dev.platform, 0};
    x->context = clCreateContext(props, x->n_queues, x->queue_devices, NULL, NULL, &rc);
    if (!x->context) {
        st = kann_ocl_fail(err, rc, "clCreateContext");
        goto fail;
    }
    for (uint32_t q = 0; q < x->n_queues; q++) {
        x->queues[q] = clCreateCommandQueue(x->context, x->queue_devices[q],
                                            o->profile ? CL_QUEUE_PROFILING_ENABLE : 0, &rc);
        if (!x->queues[q]) {
            st = kann_ocl_fail(err, rc, "clCreateCommandQueue");
            goto fail;
        }
    }
    uint64_t consts_size, args_size;
    const void *consts = kann_model_consts(m, &consts_size), *args = kann_model_args(m, &args_size);
    if ((st = make_buffer(x, CL_MEM_READ_ONLY, consts_size, consts, "constants", &x->consts,
                          err)) != KANN_OK ||
        (st = make_buffer(x, CL_MEM_READ_ONLY, args_size, args, "argument structs", &x->args,
                          err)) != KANN_OK ||
        (st = make_buffer(x, CL_MEM_READ_WRITE, kann_model_arena_size(m), NULL, "arena", &x->arena,
                          err)) != KANN_OK)
        goto fail;
    /* a zeroed arena, as the host layer's: also makes the device commit the memory now */
    float zero = 0.0f;
    size_t arena_bytes = kann_model_arena_size(m) ? (size_t)kann_model_arena_size(m) : 64;
    rc = clEnqueueFillBuffer(x->queues[0], x->arena, &zero, sizeof zero, 0, arena_bytes / 4 * 4, 0,
                             NULL, NULL);
    if (rc == CL_SUCCESS) rc = clFinish(x->queues[0]);
    if (rc != CL_SUCCESS) {
        st = kann_ocl_fail(err, rc, "initializing the arena");
        goto fail;
    }
    char cache_buf[1024];
    const char *cache_dir = kann_ocl_cache_dir(o->cache_dir, cache_buf, sizeof cache_buf);
    if ((st = plan_ops(x, cache_dir, err)) != KANN_OK) goto fail;
    *out = x;
    return KANN_OK;
fail:
    kann_opencl_free(x);
    return st;
}

static void release_events(kann_opencl *x) {
    for (uint32_t i = 0; i < x->n_ops; i++)
        if (x->ops[i].event) {
            clReleaseEvent(x->ops[i].event);
            x->ops[i].event = NULL;
        }
    for (uint32_t q = 0; q < MAX_QUEUES; q++)
        if (x->last[q]) {
            clReleaseEvent(x->last[q]);
            x->last[q] = NULL;
        }
}

void kann_opencl_free(kann_opencl *x) {
    if (!x) return;
    if (x->running && x->queues[0]) clFinish(x->queues[0]);
    release_events(x);
    for (uint32_t i = 0; i < x->n_ops; i++)
        if (x->ops[i].kernel) clReleaseKernel(x->ops[i].kernel);
    for (uint32_t i = 0; i < x->n_programs; i++)
        clReleaseProgram(x->programs[i].program);
    if (x->arena) clReleaseMemObject(x->arena);
    if (x->args) clReleaseMemObject(x->args);
    if (x->consts) clReleaseMemObject(x->consts);
    for (uint32_t q = 0; q < x->n_queues; q++)
        if (x->queues[q]) clReleaseCommandQueue(x->queues[q]);
    if (x->context) clReleaseContext(x->context);
    free(x->ops);
    free(x->phase_first);
    free(x->programs);
    free(x);
}

/* ---- runs --------------------------------------------------------------------------------- */

static void set_last(kann_opencl *x, uint32_t q, cl_event e) {
    if (x->last[q]) clReleaseEvent(x->last[q]);
    x->last[q] = e;
}

kann_status kann_opencl_start(kann_opencl *x, kann_session *s, kann_error *err) {
    if (!x || !s || s->model != x->model)
        return kann_host_fail(err, KANN_E_ARGUMENT, "kann_opencl_start: session of another model");
    if (x->running) return kann_host_fail(err, KANN_E_ARGUMENT, "kann_opencl_start: run pending");
    const kann_model *m = x->model;
    release_events(x);
    cl_int rc = CL_SUCCESS;
    /* inputs, on queue 0: the first phase's ops on other queues wait for the last write */
    for (uint32_t i = 0; i < kann_model_n_inputs(m) && rc == CL_SUCCESS; i++) {
        kann_tensor t;
        kann_session_input(s, i, &t);
        size_t off = (size_t)((uint8_t *)t.data - s->arena);
        cl_event e = NULL;
        if (t.size)
            rc = clEnqueueWriteBuffer(x->queues[0], x->arena, CL_FALSE, off, t.size, t.data, 0,
                                      NULL, x->n_queues > 1 ? &e : NULL);
        if (e) set_last(x, 0, e);
    }
    if (rc != CL_SUCCESS) return kann_ocl_fail(err, rc, "writing the inputs");
    int want_all_events = x->profile;
    uint32_t n_phases = kann_model_n_phases(m);
    for (uint32_t phase = 0; phase < n_phases; phase++) {
        cl_event before[MAX_QUEUES];
        memcpy(before, x->last, sizeof before);
        for (uint32_t q = 0; q < x->n_queues; q++)
            if (before[q]) clRetainEvent(before[q]);
        for (uint32_t i = x->phase_first[phase]; i < x->phase_first[phase + 1]; i++) {
            ocl_op *op = &x->ops[i];
            cl_event wait[MAX_QUEUES];
            cl_uint n_wait = 0;
            if (op->waits)
                for (uint32_t q = 0; q < x->n_queues; q++)
                    if (q != op->queue && before[q]) wait[n_wait++] = before[q];
            int signal = x->n_queues > 1 && op->signals;
            cl_event e = NULL;
            rc =
                clEnqueueNDRangeKernel(x->queues[op->queue], op->kernel, 3, NULL, op->global,
                                       op->has_local ? op->local : NULL, n_wait,
                                       n_wait ? wait : NULL, signal || want_all_events ? &e : NULL);
            if (rc != CL_SUCCESS) {
                for (uint32_t q = 0; q < x->n_queues; q++)
                    if (before[q]) clReleaseEvent(before[q]);
                clFinish(x->queues[0]);
                char what[300];
                snprintf(what, sizeof what, "enqueueing record %u (%s, node '%s')", op->record,
                         kann_kernels[op->kernel_id].name, kann_model_record_node(m, op->record));
                return kann_ocl_fail(err, rc, what);
            }
            if (e && want_all_events) {
                op->event = e;
                if (signal) clRetainEvent(e);
            }
            if (e && signal) set_last(x, op->queue, e);
        }
        for (uint32_t q = 0; q < x->n_queues; q++)
            if (before[q]) clReleaseEvent(before[q]);
    }
    /* outputs, on queue 0 after every queue's last op */
    cl_event wait[MAX_QUEUES];
    cl_uint n_wait = 0;
    for (uint32_t q = 1; q < x->n_queues; q++)
        if (x->last[q]) wait[n_wait++] = x->last[q];
    for (uint32_t i = 0; i < kann_model_n_outputs(m) && rc == CL_SUCCESS; i++) {
        kann_tensor t;
        kann_session_output(s, i, &t);
        size_t off = (size_t)((uint8_t *)t.data - s->arena);
        if (t.size)
            rc = clEnqueueReadBuffer(x->queues[0], x->arena, CL_FALSE, off, t.size, t.data, n_wait,
                                     n_wait ? wait : NULL, NULL);
    }
    if (rc != CL_SUCCESS) {
        clFinish(x->queues[0]);
        return kann_ocl_fail(err, rc, "reading the outputs");
    }
    for (uint32_t q = 0; q < x->n_queues; q++)
        clFlush(x->queues[q]);
    x->running = 1;
    x->session = s;
    return KANN_OK;
}

kann_status kann_opencl_wait(kann_opencl *x, kann_error *err) {
    if (!x || !x->running) return kann_host_fail(err, KANN_E_ARGUMENT, "kann_opencl_wait: no run");
    x->running = 0;
    /* queue 0's output reads waited for every other queue's last op */
    cl_int rc = clFinish(x->queues[0]);
    if (rc != CL_SUCCESS) return kann_ocl_fail(err, rc, "running the model");
    for (uint32_t q = 1; q < x->n_queues; q++)
        if ((rc = clFinish(x->queues[q])) != CL_SUCCESS)
            return kann_ocl_fail(err, rc, "running the model");
    return KANN_OK;
}

kann_status kann_opencl_run(kann_opencl *x, kann_session *s, kann_error *err) {
    kann_status st = kann_opencl_start(x, s, err);
    return st == KANN_OK ? kann_opencl_wait(x, err) : st;
}

const char *kann_opencl_device_name(const kann_opencl *x) {
    return x ? x->name : "";
}

uint32_t kann_opencl_n_queues(const kann_opencl *x) {
    return x ? x->n_queues : 0;
}

void kann_opencl_program_counts(const kann_opencl *x, uint32_t *built, uint32_t *cached) {
    if (built) *built = x ? x->n_built : 0;
    if (cached) *cached = x ? x->n_cached : 0;
}

/* ---- profile ------------------------------------------------------------------------------ */

kann_status kann_opencl_print_profile(const kann_opencl *x, FILE *f, kann_error *err) {
    if (!x || !x->profile)
        return kann_host_fail(err, KANN_E_ARGUMENT, "the executor was opened without profiling");
    const kann_model *m = x->model;
    cl_ulong *start = calloc(x->n_ops + 1, sizeof *start), *end = calloc(x->n_ops + 1, sizeof *end);
    char *done = calloc(x->n_ops + 1, 1);
    if (!start || !end || !done) {
        free(start);
        free(end);
        free(done);
        return kann_host_fail(err, KANN_E_RUNTIME, "out of memory");
    }
    cl_ulong first = ~(cl_ulong)0, last = 0;
    for (uint32_t i = 0; i < x->n_ops; i++) {
        cl_event e = x->ops[i].event;
        if (!e ||
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start[i], &start[i],
                                    NULL) != CL_SUCCESS ||
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end[i], &end[i], NULL) !=
                CL_SUCCESS) {
            free(start);
            free(end);
            free(done);
            return kann_host_fail(err, KANN_E_RUNTIME, "no profiling data: run the model first");
        }
        if (start[i] < first) first = start[i];
        if (end[i] > last) last = end[i];
    }
    double total = last > first ? (double)(last - first) : 1.0;
    fprintf(f,
            "profile on %s, %u queue%s: %.3f ms from the first kernel's start to the last's "
            "end\n",
            x->name, x->n_queues, x->n_queues > 1 ? "s" : "", total * 1e-6);
    fprintf(f, "  %-40s %-20s %10s %7s\n", "node", "kernel", "ms", "%");
    /* one line per node: the span of its records (tiles on several queues overlap) */
    for (uint32_t i = 0; i < x->n_ops; i++) {
        if (done[i]) continue;
        const char *node = kann_model_record_node(m, x->ops[i].record);
        cl_ulong s0 = start[i], e0 = end[i];
        for (uint32_t j = i; j < x->n_ops; j++) {
            if (done[j] || x->ops[j].kernel_id != x->ops[i].kernel_id ||
                strcmp(kann_model_record_node(m, x->ops[j].record), node) != 0)
                continue;
            done[j] = 1;
            if (start[j] < s0) s0 = start[j];
            if (end[j] > e0) e0 = end[j];
        }
        double t = (double)(e0 - s0);
        fprintf(f, "  %-40.40s %-20s %10.3f %6.1f%%\n", node[0] ? node : "(unnamed)",
                kann_kernels[x->ops[i].kernel_id].name, t * 1e-6, 100.0 * t / total);
    }
    free(start);
    free(end);
    free(done);
    return KANN_OK;
}
