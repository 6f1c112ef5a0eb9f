/* OpenCL programs: their source (the argument struct layout as word offsets, then the embedded
 * .cl files), building them, and the on-disk cache of program binaries. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "host_private.h"
#include "kann_format.h"
#include "kann_kernels.h"
#include "opencl_internal.h"

/* ---- argument struct layout --------------------------------------------------------------
 * Kernels read their struct as 32-bit words; the offsets come from the C structs themselves. */

typedef struct field_offset {
    const char *name;
    size_t offset;
} field_offset;

#define FIELD(family, field) {#family "_" #field, offsetof(kann_##family##_args, field)},
#define ACT_FIELDS(family) FIELD(family, act.kind) FIELD(family, act.alpha) FIELD(family, act.beta)
/* A family with an activation per stage (dwblock): A_<family>_<stage>_kind and so on. */
#define STAGE_ACT_FIELDS(family, stage)                                                            \
    FIELD(family, stage.kind) FIELD(family, stage.alpha) FIELD(family, stage.beta)

static const field_offset fields[] =
    {FIELD(conv2d, x) FIELD(conv2d, w) FIELD(conv2d, bias) FIELD(conv2d, residual) FIELD(conv2d, y)
         FIELD(conv2d, n) FIELD(conv2d, c_in) FIELD(conv2d, h_in) FIELD(conv2d, w_in) FIELD(conv2d,
                                                                                            c_out)
             FIELD(conv2d, h_out) FIELD(conv2d, w_out) FIELD(conv2d, group) ACT_FIELDS(conv2d)
#ifdef KANN_CONV_PANEL
                 FIELD(conv2d_packed, x) FIELD(conv2d_packed, w) FIELD(conv2d_packed, bias)
                     FIELD(conv2d_packed, residual) FIELD(conv2d_packed, y) FIELD(
                         conv2d_packed, c_in) FIELD(conv2d_packed, h_in) FIELD(conv2d_packed, w_in)
                         FIELD(conv2d_packed, c_out) FIELD(conv2d_packed, h_out) FIELD(
                             conv2d_packed,
                             w_out) ACT_FIELDS(conv2d_packed)
#endif
                             FIELD(matmul, a) FIELD(matmul, b) FIELD(matmul, bias) FIELD(matmul, residual) FIELD(
                                 matmul,
                                 y) FIELD(matmul, m)
                                 FIELD(matmul, n) FIELD(matmul, k) FIELD(matmul, a_batch_stride) FIELD(
                                     matmul,
                                     a_row_stride) FIELD(matmul, a_col_stride)
                                     FIELD(matmul, b_batch_stride) FIELD(matmul, b_row_stride) FIELD(matmul, b_col_stride) FIELD(matmul, b_panel_stride) FIELD(
                                         matmul,
                                         bias_row_stride) FIELD(matmul, bias_col_stride)
                                         FIELD(matmul, alpha) FIELD(matmul, beta) ACT_FIELDS(matmul) FIELD(binary, a) FIELD(
                                             binary,
                                             b) FIELD(binary, y)
                                             FIELD(binary, op) FIELD(binary, rank) FIELD(binary, dims) FIELD(binary, a_strides) FIELD(
                                                 binary,
                                                 b_strides) ACT_FIELDS(binary) FIELD(act, x)
                                                 FIELD(act, y) ACT_FIELDS(act) FIELD(channel_affine, x) FIELD(
                                                     channel_affine,
                                                     scale) FIELD(channel_affine, shift)
                                                     FIELD(channel_affine, y) FIELD(channel_affine, channels) FIELD(
                                                         channel_affine,
                                                         inner) ACT_FIELDS(channel_affine) FIELD(pool2d, x)
                                                         FIELD(pool2d, y) FIELD(pool2d, kind) FIELD(pool2d, count_include_pad) FIELD(
                                                             pool2d,
                                                             h_in) FIELD(pool2d, w_in)
                                                             FIELD(pool2d, h_out) FIELD(pool2d, w_out) FIELD(
                                                                 pool2d,
                                                                 k_h) FIELD(pool2d, k_w)
                                                                 FIELD(
                                                                     pool2d,
                                                                     stride_h) FIELD(pool2d, stride_w)
                                                                     FIELD(pool2d, dil_h) FIELD(pool2d, dil_w) FIELD(
                                                                         pool2d,
                                                                         pad_top) FIELD(pool2d, pad_left)
                                                                         FIELD(pool2d, pad_bottom) FIELD(
                                                                             pool2d,
                                                                             pad_right) ACT_FIELDS(pool2d)
                                                                             FIELD(global_avgpool, x) FIELD(
                                                                                 global_avgpool,
                                                                                 y) FIELD(global_avgpool,
                                                                                          spatial) ACT_FIELDS(global_avgpool)
                                                                                 FIELD(softmax, x) FIELD(
                                                                                     softmax,
                                                                                     y) FIELD(softmax,
                                                                                              axis_len)
                                                                                     FIELD(softmax, inner) FIELD(
                                                                                         softmax,
                                                                                         log) FIELD(transpose,
                                                                                                    x) FIELD(transpose, y)
                                                                                         FIELD(transpose, rank) FIELD(
                                                                                             transpose,
                                                                                             dims) FIELD(transpose, x_strides)
                                                                                             FIELD(copy, x) FIELD(
                                                                                                 copy,
                                                                                                 y) FIELD(copy,
                                                                                                          row_len)
                                                                                                 FIELD(
                                                                                                     copy,
                                                                                                     x_stride)
                                                                                                     FIELD(
                                                                                                         copy,
                                                                                                         y_stride)};

_Static_assert(offsetof(kann_conv2d_args, tile) == 0 && offsetof(kann_tile, axis) == 0 &&
                   offsetof(kann_tile, begin) == 4 && offsetof(kann_tile, end) == 8,
               "common.cl reads the tile as words 0..2");
_Static_assert(offsetof(kann_ref, space) == 0 && offsetof(kann_ref, offset) == 8,
               "common.cl reads a ref as space at word 0, offset at words 2..3");

/* The families of the kernels past the first twelve (reduce, norm, data movement, spatial,
 * typed elementwise): fields the .cl files read, one family per line. */
// clang-format off
static const field_offset more_fields[] = {
    FIELD(binary_typed, a) FIELD(binary_typed, a_strides) FIELD(binary_typed, b)
    FIELD(binary_typed, b_strides) FIELD(binary_typed, dims) FIELD(binary_typed, dtype)
    FIELD(binary_typed, op) FIELD(binary_typed, rank) FIELD(binary_typed, y)
    FIELD(cast, from) FIELD(cast, to) FIELD(cast, x) FIELD(cast, y)
    FIELD(cumsum, dtype) FIELD(cumsum, exclusive) FIELD(cumsum, inner) FIELD(cumsum, len)
    FIELD(cumsum, outer) FIELD(cumsum, reverse) FIELD(cumsum, x) FIELD(cumsum, y)
    FIELD(topk, dtype) FIELD(topk, indices) FIELD(topk, inner) FIELD(topk, k) FIELD(topk, largest)
    FIELD(topk, len) FIELD(topk, outer) FIELD(topk, values) FIELD(topk, x)
    FIELD(conv_transpose, bias) FIELD(conv_transpose, c_in) FIELD(conv_transpose, c_out)
    FIELD(conv_transpose, dil) FIELD(conv_transpose, group) FIELD(conv_transpose, in)
    FIELD(conv_transpose, k) FIELD(conv_transpose, out) FIELD(conv_transpose, pad)
    FIELD(conv_transpose, stride) FIELD(conv_transpose, w) FIELD(conv_transpose, x)
    FIELD(conv_transpose, y) ACT_FIELDS(conv_transpose)
    FIELD(conv2d_maxpool, x) FIELD(conv2d_maxpool, w) FIELD(conv2d_maxpool, bias)
    FIELD(conv2d_maxpool, y) FIELD(conv2d_maxpool, c_in) FIELD(conv2d_maxpool, h_in)
    FIELD(conv2d_maxpool, w_in) FIELD(conv2d_maxpool, c_out) FIELD(conv2d_maxpool, h_conv)
    FIELD(conv2d_maxpool, w_conv) FIELD(conv2d_maxpool, k_h) FIELD(conv2d_maxpool, k_w)
    FIELD(conv2d_maxpool, stride_h) FIELD(conv2d_maxpool, stride_w) FIELD(conv2d_maxpool, dil_h)
    FIELD(conv2d_maxpool, dil_w) FIELD(conv2d_maxpool, pad_top) FIELD(conv2d_maxpool, pad_left)
    FIELD(conv2d_maxpool, pool_k_h) FIELD(conv2d_maxpool, pool_k_w)
    FIELD(conv2d_maxpool, pool_stride_h) FIELD(conv2d_maxpool, pool_stride_w)
    FIELD(conv2d_maxpool, pool_pad_top) FIELD(conv2d_maxpool, pool_pad_left)
    FIELD(conv2d_maxpool, h_out) FIELD(conv2d_maxpool, w_out) ACT_FIELDS(conv2d_maxpool)
    FIELD(dwblock, x) FIELD(dwblock, w_exp) FIELD(dwblock, b_exp) FIELD(dwblock, w_dw)
    FIELD(dwblock, b_dw) FIELD(dwblock, w_proj) FIELD(dwblock, b_proj) FIELD(dwblock, residual)
    FIELD(dwblock, y) FIELD(dwblock, expand) FIELD(dwblock, c_in) FIELD(dwblock, c_mid)
    FIELD(dwblock, c_out) FIELD(dwblock, h_in) FIELD(dwblock, w_in) FIELD(dwblock, h_out)
    FIELD(dwblock, w_out) FIELD(dwblock, k_h) FIELD(dwblock, k_w) FIELD(dwblock, stride_h)
    FIELD(dwblock, stride_w) FIELD(dwblock, dil_h) FIELD(dwblock, dil_w) FIELD(dwblock, pad_top)
    FIELD(dwblock, pad_left) STAGE_ACT_FIELDS(dwblock, act_exp) STAGE_ACT_FIELDS(dwblock, act_dw)
    STAGE_ACT_FIELDS(dwblock, act_proj)
    FIELD(pointwise_gap, x) FIELD(pointwise_gap, w) FIELD(pointwise_gap, bias)
    FIELD(pointwise_gap, y) FIELD(pointwise_gap, c_in) FIELD(pointwise_gap, hw)
    ACT_FIELDS(pointwise_gap)
    FIELD(pointwise_lanes, x) FIELD(pointwise_lanes, w) FIELD(pointwise_lanes, bias)
    FIELD(pointwise_lanes, residual) FIELD(pointwise_lanes, y) FIELD(pointwise_lanes, c_in)
    FIELD(pointwise_lanes, c_out) FIELD(pointwise_lanes, hw) ACT_FIELDS(pointwise_lanes)
    FIELD(gather, axis_len) FIELD(gather, elem_size) FIELD(gather, idx) FIELD(gather, idx_size)
    FIELD(gather, inner) FIELD(gather, n_indices) FIELD(gather, x) FIELD(gather, y)
    FIELD(gather_elements, axis) FIELD(gather_elements, axis_len) FIELD(gather_elements, dims)
    FIELD(gather_elements, elem_size) FIELD(gather_elements, idx) FIELD(gather_elements, idx_size)
    FIELD(gather_elements, rank) FIELD(gather_elements, x) FIELD(gather_elements, x_strides)
    FIELD(gather_elements, y)
    FIELD(lrn, alpha) FIELD(lrn, beta) FIELD(lrn, bias) FIELD(lrn, c) FIELD(lrn, inner)
    FIELD(lrn, size) FIELD(lrn, x) FIELD(lrn, y)
    FIELD(nd_index, batch_stride) FIELD(nd_index, batches) FIELD(nd_index, dims)
    FIELD(nd_index, dst) FIELD(nd_index, elem_size) FIELD(nd_index, idx) FIELD(nd_index, idx_size)
    FIELD(nd_index, k) FIELD(nd_index, n_tuples) FIELD(nd_index, reduction)
    FIELD(nd_index, slice_len) FIELD(nd_index, src) FIELD(nd_index, strides)
    FIELD(nll_loss, c) FIELD(nll_loss, has_ignore) FIELD(nll_loss, ignore_index)
    FIELD(nll_loss, inner) FIELD(nll_loss, n) FIELD(nll_loss, reduction) FIELD(nll_loss, target)
    FIELD(nll_loss, weight) FIELD(nll_loss, x) FIELD(nll_loss, y)
    FIELD(norm, bias) FIELD(norm, epsilon) FIELD(norm, inv_std_out) FIELD(norm, len)
    FIELD(norm, mean) FIELD(norm, mean_out) FIELD(norm, param_group_stride)
    FIELD(norm, param_groups) FIELD(norm, param_inner) FIELD(norm, scale) FIELD(norm, stats_given)
    FIELD(norm, var) FIELD(norm, x) FIELD(norm, y) ACT_FIELDS(norm)
    FIELD(pad, dims) FIELD(pad, elem_size) FIELD(pad, mode) FIELD(pad, pad_begin) FIELD(pad, rank)
    FIELD(pad, value) FIELD(pad, x) FIELD(pad, x_dims) FIELD(pad, y)
    FIELD(pad2d, x) FIELD(pad2d, y) FIELD(pad2d, h_in) FIELD(pad2d, w_in) FIELD(pad2d, h_out)
    FIELD(pad2d, w_out) FIELD(pad2d, pad_top) FIELD(pad2d, pad_left)
    FIELD(conv2d_winograd, x) FIELD(conv2d_winograd, u) FIELD(conv2d_winograd, bias)
    FIELD(conv2d_winograd, residual) FIELD(conv2d_winograd, y) FIELD(conv2d_winograd, scratch)
    FIELD(conv2d_winograd, c_in) FIELD(conv2d_winograd, h_in) FIELD(conv2d_winograd, w_in)
    FIELD(conv2d_winograd, c_out) FIELD(conv2d_winograd, h_out) FIELD(conv2d_winograd, w_out)
    FIELD(conv2d_winograd, transform) FIELD(conv2d_winograd, pad) ACT_FIELDS(conv2d_winograd)
    FIELD(pool_nd, count_include_pad) FIELD(pool_nd, dil) FIELD(pool_nd, in)
    FIELD(pool_nd, indices) FIELD(pool_nd, k) FIELD(pool_nd, kind) FIELD(pool_nd, out)
    FIELD(pool_nd, pad_begin) FIELD(pool_nd, pad_end) FIELD(pool_nd, storage_order)
    FIELD(pool_nd, stride) FIELD(pool_nd, x) FIELD(pool_nd, y) ACT_FIELDS(pool_nd)
    FIELD(reduce, op) FIELD(reduce, out_dims) FIELD(reduce, out_rank) FIELD(reduce, out_strides)
    FIELD(reduce, red_dims) FIELD(reduce, red_rank) FIELD(reduce, red_strides)
    FIELD(reduce, select_last) FIELD(reduce, x) FIELD(reduce, y)
    FIELD(resize, extrapolation) FIELD(resize, h_in) FIELD(resize, h_out) FIELD(resize, table_h)
    FIELD(resize, table_w) FIELD(resize, taps_h) FIELD(resize, taps_w) FIELD(resize, w_in)
    FIELD(resize, w_out) FIELD(resize, x) FIELD(resize, y)
    FIELD(scatter_elements, axis) FIELD(scatter_elements, axis_len) FIELD(scatter_elements, dims)
    FIELD(scatter_elements, elem_size) FIELD(scatter_elements, idx)
    FIELD(scatter_elements, idx_size) FIELD(scatter_elements, rank)
    FIELD(scatter_elements, reduction) FIELD(scatter_elements, updates) FIELD(scatter_elements, y)
    FIELD(scatter_elements, y_strides)
    FIELD(strided_copy, dims) FIELD(strided_copy, elem_size) FIELD(strided_copy, rank)
    FIELD(strided_copy, x) FIELD(strided_copy, x_base) FIELD(strided_copy, x_strides)
    FIELD(strided_copy, y) FIELD(strided_copy, y_base) FIELD(strided_copy, y_strides)
    FIELD(ternary, a) FIELD(ternary, a_strides) FIELD(ternary, b) FIELD(ternary, b_strides)
    FIELD(ternary, c) FIELD(ternary, c_strides) FIELD(ternary, dims) FIELD(ternary, dtype)
    FIELD(ternary, op) FIELD(ternary, rank) FIELD(ternary, y)
    FIELD(trilu, cols) FIELD(trilu, elem_size) FIELD(trilu, k) FIELD(trilu, k_ref)
    FIELD(trilu, rows) FIELD(trilu, upper) FIELD(trilu, x) FIELD(trilu, y)
    FIELD(unary, dtype) FIELD(unary, flags) FIELD(unary, op) FIELD(unary, x) FIELD(unary, y)
};
// clang-format on

static const struct {
    const field_offset *fields;
    size_t n;
} field_tables[] = {{fields, sizeof fields / sizeof fields[0]},
                    {more_fields, sizeof more_fields / sizeof more_fields[0]}};

static const char *const program_files[KANN_OCL_PROGRAM_KIND_COUNT][6] = {
    [KANN_OCL_PROGRAM_GENERIC] = {"common.cl", "eltwise.cl", "pool.cl", "softmax.cl", "layout.cl",
                                  NULL},
    [KANN_OCL_PROGRAM_MATMUL] = {"common.cl", "vector.cl", "act_vec.cl", "matmul.cl", NULL},
    [KANN_OCL_PROGRAM_CONV_CPU] = {"common.cl", "vector.cl", "act_vec.cl", "conv2d_cpu.cl", NULL},
    [KANN_OCL_PROGRAM_CONV_LANES] = {"common.cl", "vector.cl", "act_vec.cl", "conv2d_lanes.cl",
                                     NULL},
    [KANN_OCL_PROGRAM_CONV_GPU] = {"common.cl", "vector.cl", "act_vec.cl", "conv2d_gpu.cl", NULL},
    [KANN_OCL_PROGRAM_REDUCE] = {"common.cl", "bytes.cl", "reduce.cl", NULL},
    [KANN_OCL_PROGRAM_DATA] = {"common.cl", "bytes.cl", "data.cl", NULL},
    [KANN_OCL_PROGRAM_SPATIAL] = {"common.cl", "bytes.cl", "spatial.cl", "winograd.cl", NULL},
    [KANN_OCL_PROGRAM_TYPED] = {"common.cl", "bytes.cl", "typed.cl", NULL},
};

static const char *embedded_source(const char *name) {
    for (unsigned i = 0; i < kann_opencl_n_sources; i++)
        if (!strcmp(kann_opencl_source_names[i], name)) return kann_opencl_source_texts[i];
    return NULL;
}

char *kann_ocl_program_source(kann_ocl_program_kind kind, kann_error *err) {
    size_t n = 64;
    for (size_t t = 0; t < sizeof field_tables / sizeof field_tables[0]; t++)
        for (size_t i = 0; i < field_tables[t].n; i++)
            n += strlen(field_tables[t].fields[i].name) + 32;
    for (const char *const *f = program_files[kind]; *f; f++) {
        const char *text = embedded_source(*f);
        if (!text) {
            kann_host_fail(err, KANN_E_UNSUPPORTED, "OpenCL source %s is not built in", *f);
            return NULL;
        }
        n += strlen(text) + 1;
    }
    char *src = malloc(n), *p = src;
    if (!src) {
        kann_host_fail(err, KANN_E_RUNTIME, "out of memory");
        return NULL;
    }
    p += sprintf(p, "/* argument struct layout: word offsets */\n");
    for (size_t t = 0; t < sizeof field_tables / sizeof field_tables[0]; t++)
        for (size_t i = 0; i < field_tables[t].n; i++) {
            const field_offset *f = &field_tables[t].fields[i];
            p += sprintf(p, "#define A_");
            for (const char *c = f->name; *c; c++)
                *p++ = *c == '.' ? '_' : *c;
            p += sprintf(p, " %zu\n", f->offset / 4);
        }
    for (const char *const *f = program_files[kind]; *f; f++)
        p += sprintf(p, "%s\n", embedded_source(*f));
    return src;
}

/* ---- errors ------------------------------------------------------------------------------ */

const char *kann_ocl_error_name(cl_int code) {
    switch (code) {
#define NAME(c)                                                                                    \
    case c:                                                                                        \
        return #c;
        NAME(CL_SUCCESS)
        NAME(CL_DEVICE_NOT_FOUND) NAME(CL_DEVICE_NOT_AVAILABLE) NAME(CL_COMPILER_NOT_AVAILABLE)
            NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE) NAME(CL_OUT_OF_RESOURCES) NAME(
                CL_OUT_OF_HOST_MEMORY) NAME(CL_BUILD_PROGRAM_FAILURE) NAME(CL_INVALID_VALUE)
                NAME(CL_INVALID_DEVICE) NAME(CL_INVALID_BINARY) NAME(CL_INVALID_BUILD_OPTIONS) NAME(
                    CL_INVALID_PROGRAM) NAME(CL_INVALID_KERNEL_NAME) NAME(CL_INVALID_KERNEL_ARGS)
                    NAME(CL_INVALID_WORK_DIMENSION) NAME(CL_INVALID_WORK_GROUP_SIZE)
                        NAME(CL_INVALID_WORK_ITEM_SIZE) NAME(CL_INVALID_GLOBAL_WORK_SIZE)
                            NAME(CL_INVALID_BUFFER_SIZE) NAME(CL_INVALID_EVENT_WAIT_LIST)
                                NAME(CL_INVALID_OPERATION) NAME(CL_DEVICE_PARTITION_FAILED)
                                    NAME(CL_INVALID_DEVICE_PARTITION_COUNT)
                                        NAME(CL_INVALID_ARG_INDEX) NAME(CL_INVALID_ARG_VALUE)
                                            NAME(CL_INVALID_ARG_SIZE) NAME(CL_INVALID_MEM_OBJECT)
                                                NAME(CL_INVALID_COMMAND_QUEUE)
                                                    NAME(CL_INVALID_CONTEXT)
                                                        NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
                                                            NAME(CL_INVALID_PLATFORM)
#undef NAME
                                                                case -1001
            : return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        return "an OpenCL error";
    }
}

kann_status kann_ocl_fail(kann_error *err, cl_int code, const char *what) {
    if (code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_RESOURCES ||
        code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE)
        return kann_host_fail(err, KANN_E_RUNTIME, "%s: out of device memory (%s, %d)", what,
                              kann_ocl_error_name(code), (int)code);
    return kann_host_fail(err, KANN_E_RUNTIME, "%s failed: %s (%d)", what,
                          kann_ocl_error_name(code), (int)code);
}

/* ---- the binary cache ---------------------------------------------------------------------
 * One file per program: "KANNCLB1", the binary's size (u64) and CRC-32 (u32), the binary. */

#define CACHE_MAGIC "KANNCLB1"
#define CACHE_HEADER 20

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fnv1a_str(uint64_t h, const char *s) {
    return fnv1a(h, s, strlen(s) + 1); /* the NUL separates the fields */
}

const char *kann_ocl_cache_dir(const char *requested, char *buf, size_t n) {
    const char *env;
    if (requested) {
        if (!*requested) return NULL;
        snprintf(buf, n, "%s", requested);
    } else if ((env = getenv("KANN_OPENCL_CACHE")) != NULL) {
        if (!*env) return NULL;
        snprintf(buf, n, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) != NULL && *env) {
        snprintf(buf, n, "%s/kann", env);
    } else if ((env = getenv("HOME")) != NULL && *env) {
        snprintf(buf, n, "%s/.cache/kann", env);
    } else {
        return NULL;
    }
    return buf;
}

void kann_ocl_cache_path(cl_device_id device, const char *source, const char *options,
                         const char *cache_dir, char *path, size_t n) {
    path[0] = '\0';
    if (!cache_dir || !*cache_dir) return;
    char name[256] = "", driver[256] = "", version[256] = "";
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name - 1, name, NULL);
    clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof driver - 1, driver, NULL);
    clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof version - 1, version, NULL);
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv1a_str(h, name);
    h = fnv1a_str(h, driver);
    h = fnv1a_str(h, version);
    h = fnv1a_str(h, options);
    h = fnv1a_str(h, source);
    snprintf(path, n, "%s/%016llx.clbin", cache_dir, (unsigned long long)h);
}

/* mkdir -p; failures show up when the file is written. */
static void make_dirs(const char *dir) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        mkdir(buf, 0777);
        *p = '/';
    }
    mkdir(buf, 0777);
}

/* The cached binary at path, malloc'd, or NULL when absent or damaged. */
static unsigned char *cache_read(const char *path, size_t *size) {
    void *data;
    size_t n;
    if (kann_host_read_all(path, &data, &n, NULL) != KANN_OK) return NULL;
    unsigned char *bytes = data;
    uint64_t len;
    uint32_t crc;
    if (n < CACHE_HEADER || memcmp(bytes, CACHE_MAGIC, 8) != 0) goto bad;
    memcpy(&len, bytes + 8, 8);
    memcpy(&crc, bytes + 16, 4);
    if (len != n - CACHE_HEADER || len == 0 || kann_crc32(0, bytes + CACHE_HEADER, len) != crc)
        goto bad;
    memmove(bytes, bytes + CACHE_HEADER, len);
    *size = len;
    return bytes;
bad:
    free(data);
    return NULL;
}

static void cache_write(const char *path, const char *dir, cl_program program) {
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
            CL_SUCCESS ||
        size == 0)
        return;
    /* CL_PROGRAM_BINARIES fills one pointer per device of the program: ask for the first. */
    cl_uint n_devices = 0;
    clGetProgramInfo(program, CL_PROGRAM_NUM_DEVICES, sizeof n_devices, &n_devices, NULL);
    if (n_devices == 0) return;
    unsigned char *file = malloc(CACHE_HEADER + size);
    unsigned char **binaries = calloc(n_devices, sizeof *binaries);
    if (file && binaries) {
        binaries[0] = file + CACHE_HEADER;
        if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, n_devices * sizeof *binaries, binaries,
                             NULL) == CL_SUCCESS) {
            uint64_t len = size;
            uint32_t crc = kann_crc32(0, file + CACHE_HEADER, size);
            memcpy(file, CACHE_MAGIC, 8);
            memcpy(file + 8, &len, 8);
            memcpy(file + 16, &crc, 4);
            make_dirs(dir);
            kann_host_write_file_atomic(path, file, CACHE_HEADER + size, NULL);
        }
    }
    free(binaries);
    free(file);
}

static kann_status build_log_error(cl_program program, cl_device_id device, cl_int code,
                                   const char *options, kann_error *err) {
    char log[200] = "";
    size_t n = 0;
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n);
    char *full = n ? malloc(n + 1) : NULL;
    if (full &&
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, full, NULL) == CL_SUCCESS) {
        full[n] = '\0';
        /* the first lines that say something go into the message, the whole log to stderr */
        const char *p = full;
        while (*p == '\n' || *p == ' ')
            p++;
        snprintf(log, sizeof log, "%s", p);
        fprintf(stderr, "kann: OpenCL build log (options '%s'):\n%s\n", options, full);
    }
    free(full);
    return kann_host_fail(err, KANN_E_RUNTIME, "OpenCL program build failed (%s): %s",
                          kann_ocl_error_name(code), log[0] ? log : "no build log");
}

kann_status kann_ocl_build_program(cl_context ctx, const cl_device_id *devices, uint32_t n_devices,
                                   const char *source, const char *options, const char *cache_dir,
                                   cl_program *out, int *from_cache, kann_error *err) {
    char path[1200];
    cl_int rc;
    *out = NULL;
    *from_cache = 0;
    kann_ocl_cache_path(devices[0], source, options, cache_dir, path, sizeof path);
    if (path[0]) {
        size_t size;
        unsigned char *binary = cache_read(path, &size);
        if (binary) {
            const unsigned char **bins = calloc(n_devices, sizeof *bins);
            size_t *sizes = calloc(n_devices, sizeof *sizes);
            cl_program p = NULL;
            if (bins && sizes) {
                for (uint32_t i = 0; i < n_devices; i++) {
                    bins[i] = binary;
                    sizes[i] = size;
                }
                p = clCreateProgramWithBinary(ctx, n_devices, devices, sizes, bins, NULL, &rc);
                if (p && clBuildProgram(p, n_devices, devices, options, NULL, NULL) != CL_SUCCESS) {
                    clReleaseProgram(p);
                    p = NULL;
                }
            }
            free(bins);
            free(sizes);
            free(binary);
            if (p) {
                *out = p;
                *from_cache = 1;
                return KANN_OK;
            }
            /* a stale or foreign binary: build from source and replace it */
        }
    }
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &rc);
    if (!p) return kann_ocl_fail(err, rc, "clCreateProgramWithSource");
    rc = clBuildProgram(p, n_devices, devices, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        kann_status st = build_log_error(p, devices[0], rc, options, err);
        clReleaseProgram(p);
        return st;
    }
    if (path[0]) cache_write(path, cache_dir, p);
    *out = p;
    return KANN_OK;
}
