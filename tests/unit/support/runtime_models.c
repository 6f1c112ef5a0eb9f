/* Small model.bin files for the runtime's tests (see runtime_models.h). */
#include "runtime_models.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kbin_writer.h"

static void *finish(kbin_writer *w, size_t *size) {
    void *bin = NULL;
    if (kbin_finish(w, &bin, size) != 0) bin = NULL;
    kbin_writer_free(w);
    return bin;
}

static kann_ref arena_ref(uint64_t offset) {
    kann_ref r = {KANN_SPACE_ARENA, 0, offset};
    return r;
}

static kann_ref const_ref(uint64_t offset) {
    kann_ref r = {KANN_SPACE_CONST, 0, offset};
    return r;
}

static kbin_writer *new_writer(uint64_t arena_size) {
    kbin_writer *w = kbin_writer_new();
    kbin_set_arena_size(w, arena_size);
    kbin_add_meta(w, "producer", "runtime tests");
    return w;
}

void *rt_model_relu2(size_t *size) {
    kbin_writer *w = new_writer(128);
    uint32_t dims[2] = {1, 8};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 2, dims, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 2, dims, 64);
    for (uint32_t s = 0; s < 2; s++) {
        kann_act_args a;
        memset(&a, 0, sizeof a);
        a.tile.begin = 4 * s;
        a.tile.end = 4 * s + 4;
        a.x = arena_ref(0);
        a.y = arena_ref(64);
        a.count = 8;
        a.act.kind = KANN_ACT_RELU;
        kbin_add_call(w, s, KANN_KERNEL_F32_ACT, "relu", &a, sizeof a);
        kbin_add_barrier(w, s);
    }
    return finish(w, size);
}

void *rt_model_add(size_t *size) {
    kbin_writer *w = new_writer(128);
    uint32_t dims[2] = {2, 3};
    kbin_add_io(w, KANN_IO_INPUT, "a", KANN_DTYPE_F32, 2, dims, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 2, dims, 64);
    float b[6];
    for (int i = 0; i < 6; i++)
        b[i] = 0.5f * (float)(i + 1);
    uint64_t b_off;
    kbin_add_const(w, b, sizeof b, &b_off);
    kann_binary_args a;
    memset(&a, 0, sizeof a);
    a.tile.end = 6;
    a.a = arena_ref(0);
    a.b = const_ref(b_off);
    a.y = arena_ref(64);
    a.op = KANN_BINARY_ADD;
    a.rank = 2;
    a.dims[0] = 2;
    a.dims[1] = 3;
    a.a_strides[0] = a.b_strides[0] = 3;
    a.a_strides[1] = a.b_strides[1] = 1;
    kbin_add_call(w, 0, KANN_KERNEL_F32_BINARY, "add", &a, sizeof a);
    kbin_add_barrier(w, 0);
    return finish(w, size);
}

void *rt_model_conv(size_t *size) {
    enum { C_IN = 2, C_OUT = 4, H = 5, W = 5, K = 3 };
    uint64_t y_off = 256;
    kbin_writer *w = new_writer(y_off + C_OUT * H * W * 4);
    uint32_t xd[4] = {1, C_IN, H, W}, yd[4] = {1, C_OUT, H, W};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 4, xd, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 4, yd, y_off);
    float wt[C_OUT * C_IN * K * K], bias[C_OUT];
    for (int i = 0; i < C_OUT * C_IN * K * K; i++)
        wt[i] = (float)((i * 7) % 11 - 5) / 8.0f;
    for (int i = 0; i < C_OUT; i++)
        bias[i] = 0.25f * (float)i - 0.5f;
    uint64_t w_off, b_off;
    kbin_add_const(w, wt, sizeof wt, &w_off);
    kbin_add_const(w, bias, sizeof bias, &b_off);
    for (uint32_t s = 0; s < 2; s++) {
        kann_conv2d_args a;
        memset(&a, 0, sizeof a);
        a.tile.axis = 0;
        a.tile.begin = 2 * s;
        a.tile.end = 2 * s + 2;
        a.x = arena_ref(0);
        a.w = const_ref(w_off);
        a.bias = const_ref(b_off);
        a.y = arena_ref(y_off);
        a.n = 1;
        a.c_in = C_IN;
        a.h_in = H;
        a.w_in = W;
        a.c_out = C_OUT;
        a.h_out = H;
        a.w_out = W;
        a.group = 1;
        a.k_h = a.k_w = K;
        a.stride_h = a.stride_w = 1;
        a.dil_h = a.dil_w = 1;
        a.pad_top = a.pad_left = 1;
        a.act.kind = KANN_ACT_RELU;
        kbin_add_call(w, s, KANN_KERNEL_F32_CONV2D, "conv", &a, sizeof a);
        kbin_add_barrier(w, s);
    }
    return finish(w, size);
}

void *rt_model_pointwise(size_t *size) {
    enum { C_IN = RT_PW_C_IN, C_OUT = RT_PW_C_OUT, HW = RT_PW_HW, BLOCK = KANN_GAP_BLOCK };
    uint64_t y_off = (uint64_t)C_IN * HW * 4;
    kbin_writer *w = new_writer(y_off + (uint64_t)C_OUT * HW * 4);
    uint32_t xd[4] = {1, C_IN, HW, 1}, yd[4] = {1, C_OUT, HW, 1};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 4, xd, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 4, yd, y_off);
    enum { BLOCKS = (C_OUT + BLOCK - 1) / BLOCK };
    static float wt[BLOCKS * C_IN * BLOCK];
    float bias[C_OUT];
    memset(wt, 0, sizeof wt);
    for (int m = 0; m < C_OUT; m++) /* [block][c_in][32] */
        for (int k = 0; k < C_IN; k++)
            wt[(m / BLOCK) * C_IN * BLOCK + k * BLOCK + m % BLOCK] =
                (float)((m * 7 + k * 13) % 23 - 11) / 16.0f;
    for (int m = 0; m < C_OUT; m++)
        bias[m] = 0.125f * (float)(m % 9) - 0.5f;
    uint64_t w_off, b_off;
    kbin_add_const(w, wt, sizeof wt, &w_off);
    kbin_add_const(w, bias, sizeof bias, &b_off);
    uint32_t cut[3] = {0, 64, C_OUT};
    for (uint32_t s = 0; s < 2; s++) {
        kann_pointwise_lanes_args a;
        memset(&a, 0, sizeof a);
        a.tile.axis = 0;
        a.tile.begin = cut[s];
        a.tile.end = cut[s + 1];
        a.x = arena_ref(0);
        a.w = const_ref(w_off);
        a.bias = const_ref(b_off);
        a.y = arena_ref(y_off);
        a.c_in = C_IN;
        a.c_out = C_OUT;
        a.hw = HW;
        a.act.kind = KANN_ACT_RELU;
        kbin_add_call(w, s, KANN_KERNEL_F32_POINTWISE_LANES, "pointwise", &a, sizeof a);
        kbin_add_barrier(w, s);
    }
    return finish(w, size);
}

enum { PX = 64, PZ = 32, PS = 4 };
#define OFF_X 0
#define OFF_H 256
#define OFF_Z 512
#define OFF_U 640
#define OFF_Y 768

static float par_w(int k, int j) {
    return (float)(((k * 13 + j * 7) % 17) - 8) / 16.0f;
}

static float par_bias(int j) {
    return 0.125f * (float)(j % 5) - 0.25f;
}

void *rt_model_parallel(size_t *size) {
    kbin_writer *w = new_writer(OFF_Y + PZ * 4);
    uint32_t xd[2] = {1, PX}, yd[2] = {1, PZ};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 2, xd, OFF_X);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 2, yd, OFF_Y);
    static float wt[PX * PZ], bias[PZ];
    for (int k = 0; k < PX; k++)
        for (int j = 0; j < PZ; j++)
            wt[k * PZ + j] = par_w(k, j);
    for (int j = 0; j < PZ; j++)
        bias[j] = par_bias(j);
    uint64_t w_off, b_off;
    kbin_add_const(w, wt, sizeof wt, &w_off);
    kbin_add_const(w, bias, sizeof bias, &b_off);
    for (uint32_t s = 0; s < PS; s++) {
        kann_act_args h;
        memset(&h, 0, sizeof h);
        h.tile.begin = s * (PX / PS);
        h.tile.end = (s + 1) * (PX / PS);
        h.x = arena_ref(OFF_X);
        h.y = arena_ref(OFF_H);
        h.count = PX;
        h.act.kind = KANN_ACT_RELU;
        kbin_add_call(w, s, KANN_KERNEL_F32_ACT, "h", &h, sizeof h);
        kbin_add_barrier(w, s);

        kann_matmul_args z;
        memset(&z, 0, sizeof z);
        z.tile.axis = 1;
        z.tile.begin = s * (PZ / PS);
        z.tile.end = (s + 1) * (PZ / PS);
        z.a = arena_ref(OFF_H);
        z.b = const_ref(w_off);
        z.bias = const_ref(b_off);
        z.y = arena_ref(OFF_Z);
        z.batch = 1;
        z.m = 1;
        z.n = PZ;
        z.k = PX;
        z.a_row_stride = PX;
        z.a_col_stride = 1;
        z.b_row_stride = PZ;
        z.b_col_stride = 1;
        z.bias_row_stride = 0;
        z.bias_col_stride = 1;
        z.alpha = 1.0f;
        z.beta = 1.0f;
        kbin_add_call(w, s, KANN_KERNEL_F32_MATMUL, "z", &z, sizeof z);
        kbin_add_barrier(w, s);

        kann_binary_args u;
        memset(&u, 0, sizeof u);
        u.tile.begin = s * (PZ / PS);
        u.tile.end = (s + 1) * (PZ / PS);
        u.a = arena_ref(OFF_Z);
        u.b = arena_ref(OFF_H);
        u.y = arena_ref(OFF_U);
        u.op = KANN_BINARY_ADD;
        u.rank = 1;
        u.dims[0] = PZ;
        u.a_strides[0] = u.b_strides[0] = 1;
        kbin_add_call(w, s, KANN_KERNEL_F32_BINARY, "u", &u, sizeof u);
        kbin_add_barrier(w, s);

        if (s == 0) {
            kann_softmax_args y;
            memset(&y, 0, sizeof y);
            y.tile.end = 1;
            y.x = arena_ref(OFF_U);
            y.y = arena_ref(OFF_Y);
            y.outer = 1;
            y.axis_len = PZ;
            y.inner = 1;
            kbin_add_call(w, s, KANN_KERNEL_F32_SOFTMAX, "y", &y, sizeof y);
        }
        kbin_add_barrier(w, s);
    }
    return finish(w, size);
}

void rt_parallel_reference(const float *x, float *y) {
    double h[PX], u[PZ], mx = -INFINITY, sum = 0;
    for (int k = 0; k < PX; k++)
        h[k] = x[k] > 0 ? x[k] : 0;
    for (int j = 0; j < PZ; j++) {
        double z = par_bias(j);
        for (int k = 0; k < PX; k++)
            z += h[k] * par_w(k, j);
        u[j] = z + h[j];
        if (u[j] > mx) mx = u[j];
    }
    for (int j = 0; j < PZ; j++)
        sum += exp(u[j] - mx);
    for (int j = 0; j < PZ; j++)
        y[j] = (float)(exp(u[j] - mx) / sum);
}

void *rt_copy(const void *bytes, size_t n) {
    void *p = aligned_alloc(64, (n + 63) / 64 * 64 + 64);
    if (p && n) memcpy(p, bytes, n);
    return p;
}

kann_section *rt_section(void *bin, uint32_t kind) {
    kann_file_header *h = bin;
    kann_section *t = (kann_section *)((uint8_t *)bin + sizeof *h);
    for (uint32_t i = 0; i < h->n_sections; i++)
        if (t[i].kind == kind) return &t[i];
    return NULL;
}

uint8_t *rt_section_bytes(void *bin, uint32_t kind) {
    kann_section *s = rt_section(bin, kind);
    return s ? (uint8_t *)bin + s->offset : NULL;
}

kann_stream_desc *rt_stream_descs(void *bin) {
    return (kann_stream_desc *)(rt_section_bytes(bin, KANN_SECTION_STREAMS) +
                                sizeof(kann_streams_header));
}

kann_record *rt_records(void *bin, uint32_t *n) {
    kann_streams_header *sh = (kann_streams_header *)rt_section_bytes(bin, KANN_SECTION_STREAMS);
    if (n) *n = sh->n_records;
    return (kann_record *)(rt_stream_descs(bin) + sh->n_streams);
}

kann_io_desc *rt_io_desc(void *bin, uint32_t i) {
    return (kann_io_desc *)(rt_section_bytes(bin, KANN_SECTION_IO) + sizeof(kann_io_header)) + i;
}

/* The 3x3 max pool (stride 1) over planes [begin, end) of x [1, RT_POOL_PLANES, RT_POOL_IN,
 * RT_POOL_IN] at arena offset 0 into y right after it. */
static kann_pool2d_args pool_planes(uint64_t x_bytes, uint32_t begin, uint32_t end) {
    kann_pool2d_args a;
    memset(&a, 0, sizeof a);
    a.tile.begin = begin;
    a.tile.end = end;
    a.x = arena_ref(0);
    a.y = arena_ref(x_bytes);
    a.kind = KANN_POOL_MAX;
    a.planes = RT_POOL_PLANES;
    a.h_in = a.w_in = RT_POOL_IN;
    a.h_out = a.w_out = RT_POOL_IN - 2;
    a.k_h = a.k_w = 3;
    a.stride_h = a.stride_w = a.dil_h = a.dil_w = 1;
    return a;
}

/* The pool model: stream 0 planes [0, split), stream 1 the rest, each in `records` records
 * with these flags, one phase. */
static void *pool_model(size_t *size, uint32_t split, uint32_t records, uint16_t flags) {
    enum { C = RT_POOL_PLANES, H = RT_POOL_IN, HO = RT_POOL_IN - 2 };
    uint64_t x_bytes = (uint64_t)C * H * H * 4;
    kbin_writer *w = new_writer(x_bytes + (uint64_t)C * HO * HO * 4);
    uint32_t xd[4] = {1, C, H, H}, yd[4] = {1, C, HO, HO};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 4, xd, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 4, yd, x_bytes);
    for (uint32_t s = 0; s < 2; s++) {
        uint32_t lo = s ? split : 0, hi = s ? C : split;
        for (uint32_t r = 0; r < records; r++) {
            kann_pool2d_args a = pool_planes(x_bytes, lo + (hi - lo) * r / records,
                                             lo + (hi - lo) * (r + 1) / records);
            kbin_add_call_flags(w, s, KANN_KERNEL_F32_POOL2D, "pool", &a, sizeof a, flags);
        }
        kbin_add_barrier(w, s);
    }
    return finish(w, size);
}

void *rt_model_maxpool2(size_t *size) {
    return pool_model(size, RT_POOL_PLANES / 2, 1, 0);
}

void *rt_model_free_records(size_t *size) {
    return pool_model(size, RT_FREE_PLANES0, RT_FREE_RECORDS, KANN_RECORD_FREE);
}
