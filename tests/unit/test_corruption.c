/* Corruption tests for the loader: every byte of small models set to each of its 8 single-bit
 * flips, its complement, 0x00 and 0xff; every truncation; every 32- and 64-bit field set to
 * oversized counts and offsets. Each corrupted file is opened as it is (the CRCs must catch it)
 * and again with its CRCs recomputed (only the structural checks stand between it and the
 * kernels): it must be rejected with a status and a message, or, if accepted, run without a
 * single access outside its arena, its constants or its I/O buffers. Accepted files run in
 * exact-size buffers (so ASan and valgrind see any stray access) and between guard bands (so a
 * plain build sees a stray write). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kann_format.h"
#include "kann_kernels.h"
#include "kann_host.h"
#include "kbin_writer.h"
#include "lower.h"
#include "passes.h"
#include "runtime_models.h"

/* ---- a model that uses every kernel family ------------------------------------------------ */

static kann_ref arena_at(uint64_t offset) {
    kann_ref r = {KANN_SPACE_ARENA, 0, offset};
    return r;
}

static kann_ref const_at(uint64_t offset) {
    kann_ref r = {KANN_SPACE_CONST, 0, offset};
    return r;
}

/* Arena layout (bytes) of the all-families model. */
enum {
    AF_X = 0,   /* input x [1, 2, 4, 4] */
    AF_C = 128, /* conv output [1, 2, 4, 4] */
    AF_P = 256, /* max pool 2x2 [1, 2, 2, 2] */
    AF_A = 320, /* channel affine [1, 2, 2, 2] */
    AF_G = 384, /* global average [1, 2] */
    AF_M = 448, /* matmul [1, 3] */
    AF_B = 512, /* add, then sigmoid in place [1, 3] */
    AF_S = 576, /* softmax [1, 3] */
    AF_Y = 640, /* output y: copy of the softmax [1, 3] */
    AF_T = 704, /* output t: the affine output [2, 4] transposed to [4, 2] */
    AF_ARENA = 768,
};

/* x -> conv3x3(relu) -> maxpool2x2 -> channel affine -> global avgpool -> matmul(+bias) ->
 * add -> sigmoid -> softmax -> copy = y, and the affine output transposed = t. Two streams:
 * the conv is split by output channel in phase 0, the rest runs in stream 0 in phase 1. */
static void *model_all_families(size_t *size) {
    kbin_writer *w = kbin_writer_new();
    kbin_set_arena_size(w, AF_ARENA);
    kbin_add_meta(w, "producer", "corruption tests");
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 4, (uint32_t[]){1, 2, 4, 4}, AF_X);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 2, (uint32_t[]){1, 3}, AF_Y);
    kbin_add_io(w, KANN_IO_OUTPUT, "t", KANN_DTYPE_F32, 2, (uint32_t[]){4, 2}, AF_T);

    float conv_w[2 * 2 * 3 * 3], conv_b[2] = {0.1f, -0.2f}, scale[2] = {2.0f, 0.5f};
    float shift[2] = {-1.0f, 1.0f}, mm_w[2 * 3], mm_b[3] = {0.5f, 0.0f, -0.5f};
    float add_c[3] = {1.0f, 2.0f, 3.0f};
    for (int i = 0; i < 36; i++)
        conv_w[i] = (float)((i * 5) % 7 - 3) / 4.0f;
    for (int i = 0; i < 6; i++)
        mm_w[i] = (float)(i - 2) / 3.0f;
    uint64_t o_cw, o_cb, o_sc, o_sh, o_mw, o_mb, o_ad;
    kbin_add_const(w, conv_w, sizeof conv_w, &o_cw);
    kbin_add_const(w, conv_b, sizeof conv_b, &o_cb);
    kbin_add_const(w, scale, sizeof scale, &o_sc);
    kbin_add_const(w, shift, sizeof shift, &o_sh);
    kbin_add_const(w, mm_w, sizeof mm_w, &o_mw);
    kbin_add_const(w, mm_b, sizeof mm_b, &o_mb);
    kbin_add_const(w, add_c, sizeof add_c, &o_ad);

    for (uint32_t s = 0; s < 2; s++) {
        kann_conv2d_args c;
        memset(&c, 0, sizeof c);
        c.tile.begin = s;
        c.tile.end = s + 1;
        c.x = arena_at(AF_X);
        c.w = const_at(o_cw);
        c.bias = const_at(o_cb);
        c.y = arena_at(AF_C);
        c.n = 1;
        c.c_in = c.c_out = 2;
        c.h_in = c.w_in = c.h_out = c.w_out = 4;
        c.group = 1;
        c.k_h = c.k_w = 3;
        c.stride_h = c.stride_w = c.dil_h = c.dil_w = 1;
        c.pad_top = c.pad_left = 1;
        c.act.kind = KANN_ACT_RELU;
        kbin_add_call(w, s, KANN_KERNEL_F32_CONV2D, "conv", &c, sizeof c);
        kbin_add_barrier(w, s);
    }

    kann_pool2d_args p;
    memset(&p, 0, sizeof p);
    p.tile.end = 2;
    p.x = arena_at(AF_C);
    p.y = arena_at(AF_P);
    p.kind = KANN_POOL_MAX;
    p.planes = 2;
    p.h_in = p.w_in = 4;
    p.h_out = p.w_out = 2;
    p.k_h = p.k_w = p.stride_h = p.stride_w = 2;
    p.dil_h = p.dil_w = 1;
    kbin_add_call(w, 0, KANN_KERNEL_F32_POOL2D, "pool", &p, sizeof p);

    kann_channel_affine_args a;
    memset(&a, 0, sizeof a);
    a.tile.end = 2;
    a.x = arena_at(AF_P);
    a.scale = const_at(o_sc);
    a.shift = const_at(o_sh);
    a.y = arena_at(AF_A);
    a.planes = a.channels = 2;
    a.inner = 4;
    kbin_add_call(w, 0, KANN_KERNEL_F32_CHANNEL_AFFINE, "affine", &a, sizeof a);

    kann_global_avgpool_args g;
    memset(&g, 0, sizeof g);
    g.tile.end = 2;
    g.x = arena_at(AF_A);
    g.y = arena_at(AF_G);
    g.planes = 2;
    g.spatial = 4;
    kbin_add_call(w, 0, KANN_KERNEL_F32_GLOBAL_AVGPOOL, "gap", &g, sizeof g);

    kann_matmul_args m;
    memset(&m, 0, sizeof m);
    m.tile.end = 1;
    m.a = arena_at(AF_G);
    m.b = const_at(o_mw);
    m.bias = const_at(o_mb);
    m.y = arena_at(AF_M);
    m.batch = m.m = 1;
    m.n = 3;
    m.k = 2;
    m.a_row_stride = 2;
    m.a_col_stride = 1;
    m.b_row_stride = 3;
    m.b_col_stride = 1;
    m.bias_col_stride = 1;
    m.alpha = m.beta = 1.0f;
    kbin_add_call(w, 0, KANN_KERNEL_F32_MATMUL, "gemm", &m, sizeof m);

    kann_binary_args b;
    memset(&b, 0, sizeof b);
    b.tile.end = 3;
    b.a = arena_at(AF_M);
    b.b = const_at(o_ad);
    b.y = arena_at(AF_B);
    b.op = KANN_BINARY_ADD;
    b.rank = 1;
    b.dims[0] = 3;
    b.a_strides[0] = b.b_strides[0] = 1;
    kbin_add_call(w, 0, KANN_KERNEL_F32_BINARY, "add", &b, sizeof b);

    kann_act_args act;
    memset(&act, 0, sizeof act);
    act.tile.end = 3;
    act.x = act.y = arena_at(AF_B);
    act.count = 3;
    act.act.kind = KANN_ACT_SIGMOID;
    kbin_add_call(w, 0, KANN_KERNEL_F32_ACT, "sigmoid", &act, sizeof act);

    kann_softmax_args sm;
    memset(&sm, 0, sizeof sm);
    sm.tile.end = 1;
    sm.x = arena_at(AF_B);
    sm.y = arena_at(AF_S);
    sm.outer = sm.inner = 1;
    sm.axis_len = 3;
    kbin_add_call(w, 0, KANN_KERNEL_F32_SOFTMAX, "softmax", &sm, sizeof sm);

    kann_copy_args cp;
    memset(&cp, 0, sizeof cp);
    cp.tile.end = 1;
    cp.x = arena_at(AF_S);
    cp.y = arena_at(AF_Y);
    cp.rows = 1;
    cp.row_len = cp.x_stride = cp.y_stride = 3;
    kbin_add_call(w, 0, KANN_KERNEL_F32_COPY, "copy", &cp, sizeof cp);

    kann_transpose_args t;
    memset(&t, 0, sizeof t);
    t.tile.end = 8;
    t.x = arena_at(AF_A);
    t.y = arena_at(AF_T);
    t.rank = 2;
    t.dims[0] = 4;
    t.dims[1] = 2;
    t.x_strides[0] = 1;
    t.x_strides[1] = 4;
    kbin_add_call(w, 0, KANN_KERNEL_F32_TRANSPOSE, "transpose", &t, sizeof t);

    kbin_add_barrier(w, 0);
    kbin_add_barrier(w, 1);
    void *bin = NULL;
    if (kbin_finish(w, &bin, size) != 0) bin = NULL;
    kbin_writer_free(w);
    return bin;
}

/* ---- opening and running a possibly corrupted file ---------------------------------------- */

/* n bytes (at least 1), 64-byte aligned, exactly: no slack for a stray access to hide in. */
static void *alloc_exact(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) fail_msg("out of memory for %zu bytes", n);
    return p;
}

#define GUARD 64
#define GUARD_BYTE 0xa5

typedef struct outcome {
    kann_status status;
    int ran;
} outcome;

/* A rejection must say what is wrong: a known non-OK status, the same status in the error,
 * and a NUL-terminated, non-empty message. */
static void check_rejection(kann_status st, const kann_error *e, const char *what, size_t at) {
    if (st == KANN_OK || (unsigned)st >= KANN_STATUS_COUNT || e->status != st)
        fail_msg("%s at byte %zu: status %d, error status %d", what, at, (int)st, (int)e->status);
    if (memchr(e->message, '\0', sizeof e->message) == NULL || e->message[0] == '\0')
        fail_msg("%s at byte %zu: %s without a message", what, at, kann_status_name(st));
}

/* Runs an opened model once with its arena between guard bands; the guards and the model
 * bytes must come out unchanged. */
static void run_guarded(const kann_model *m, const uint8_t *bytes, size_t n, const char *what,
                        size_t at) {
    uint64_t need = kann_model_arena_size(m);
    if (need > (1u << 24)) return; /* a corrupted size; the loader checked the kernels fit it */
    uint8_t *saved = malloc(n);
    assert_non_null(saved);
    memcpy(saved, bytes, n);
    uint8_t *block = alloc_exact(GUARD + need + GUARD);
    memset(block, GUARD_BYTE, GUARD + need + GUARD);
    memset(block + GUARD, 0, need);
    kann_session s;
    kann_error e;
    if (kann_session_init(&s, m, block + GUARD, need, &e) != KANN_OK)
        fail_msg("%s at byte %zu: session: %s", what, at, e.message);
    for (uint32_t i = 0; i < kann_model_n_inputs(m); i++) {
        kann_tensor t;
        assert_int_equal(kann_session_input(&s, i, &t), KANN_OK);
        assert_true((uint8_t *)t.data >= block + GUARD &&
                    (uint8_t *)t.data + t.size <= block + GUARD + need);
        memset(t.data, 0x3f, t.size); /* 0x3f3f3f3f = 0.747f */
    }
    for (uint32_t i = 0; i < kann_model_n_outputs(m); i++) {
        kann_tensor t;
        assert_int_equal(kann_session_output(&s, i, &t), KANN_OK);
        assert_true((uint8_t *)t.data >= block + GUARD &&
                    (uint8_t *)t.data + t.size <= block + GUARD + need);
    }
    if (kann_session_run(&s, &e) != KANN_OK)
        fail_msg("%s at byte %zu: run: %s", what, at, e.message);
    for (size_t i = 0; i < GUARD; i++)
        if (block[i] != GUARD_BYTE || block[GUARD + need + i] != GUARD_BYTE)
            fail_msg("%s at byte %zu: a kernel wrote outside the arena", what, at);
    if (memcmp(saved, bytes, n) != 0)
        fail_msg("%s at byte %zu: a kernel wrote into the model bytes", what, at);
    free(block);
    free(saved);
}

/* Runs an opened model once in an arena of exactly its size (ASan and valgrind catch any
 * access past it). */
static void run_exact(const kann_model *m, const char *what, size_t at) {
    uint64_t need = kann_model_arena_size(m);
    if (need > (1u << 24)) return;
    void *arena = alloc_exact(need);
    memset(arena, 0, need ? need : 1);
    kann_session s;
    kann_error e;
    if (kann_session_init(&s, m, arena, need, &e) != KANN_OK || kann_session_run(&s, &e) != KANN_OK)
        fail_msg("%s at byte %zu: %s", what, at, e.message);
    free(arena);
}

/* Opens n bytes (copied into an exact-size buffer) and, if the loader accepts them, runs the
 * model both ways. */
/* The kernels open_and_run's models run: the best this CPU has, or this ISA (< KANN_ISA_COUNT). */
static kann_isa run_isa = KANN_ISA_COUNT;

static outcome open_and_run(const uint8_t *bin, size_t n, const char *what, size_t at) {
    outcome o = {KANN_OK, 0};
    uint8_t *bytes = alloc_exact(n);
    memcpy(bytes, bin, n);
    kann_model m;
    kann_error e;
    memset(&e, 0, sizeof e);
    o.status = kann_model_open(&m, bytes, n, &e);
    void *prepared = NULL; /* the weights AMX reads as bf16 pairs */
    if (o.status == KANN_OK && run_isa < KANN_ISA_COUNT)
        assert_int_equal(kann_host_model_set_isa(&m, kann_isa_name(run_isa), &prepared, &e),
                         KANN_OK);
    if (o.status != KANN_OK) {
        check_rejection(o.status, &e, what, at);
    } else {
        for (uint32_t i = 0; i < kann_model_n_inputs(&m) + kann_model_n_outputs(&m); i++) {
            kann_tensor t;
            kann_status st = i < kann_model_n_inputs(&m)
                                 ? kann_model_input(&m, i, &t)
                                 : kann_model_output(&m, i - kann_model_n_inputs(&m), &t);
            assert_int_equal(st, KANN_OK);
            assert_true(strlen(t.name) <= KANN_MAX_NAME);
        }
        run_exact(&m, what, at);
        run_guarded(&m, bytes, n, what, at);
        o.ran = 1;
    }
    kann_host_arena_free(prepared);
    free(bytes);
    return o;
}

/* ---- the corruption sweeps ------------------------------------------------------------------ */

typedef void *(*model_builder)(size_t *size);

static const struct {
    const char *name;
    model_builder build;
} models[] = {
    {"relu2", rt_model_relu2},
    {"add", rt_model_add},
    {"conv", rt_model_conv},
    {"parallel", rt_model_parallel},
    {"all families", model_all_families},
};
#define N_MODELS (sizeof models / sizeof models[0])

typedef struct sweep_counts {
    size_t rejected, ran;
} sweep_counts;

/* Sets byte i of a copy of bin to v; with fix_crcs the CRCs are made right again. */
static outcome try_byte(const uint8_t *bin, size_t n, size_t i, uint8_t v, int fix_crcs,
                        uint8_t *scratch) {
    memcpy(scratch, bin, n);
    scratch[i] = v;
    if (fix_crcs) kbin_fix_crcs(scratch, n);
    return open_and_run(scratch, n, fix_crcs ? "byte changed, CRCs fixed" : "byte changed", i);
}

/* Every byte, every value in {8 single-bit flips, ~b, 0x00, 0xff} that changes it. */
static void sweep_bytes(const uint8_t *bin, size_t n, int fix_crcs, sweep_counts *c) {
    uint8_t *scratch = malloc(n);
    assert_non_null(scratch);
    for (size_t i = 0; i < n; i++) {
        uint8_t b = bin[i], values[11];
        for (int k = 0; k < 8; k++)
            values[k] = (uint8_t)(b ^ (1u << k));
        values[8] = (uint8_t)~b;
        values[9] = 0x00;
        values[10] = 0xff;
        for (int k = 0; k < 11; k++) {
            int seen = values[k] == b;
            for (int j = 0; j < k && !seen; j++)
                seen = values[j] == values[k];
            if (seen) continue;
            outcome o = try_byte(bin, n, i, values[k], fix_crcs, scratch);
            if (!fix_crcs && o.status == KANN_OK)
                fail_msg("setting byte %zu from 0x%02x to 0x%02x went unnoticed", i, b, values[k]);
            if (o.status == KANN_OK)
                c->ran++;
            else
                c->rejected++;
        }
    }
    free(scratch);
}

static void test_every_byte_crcs_intact(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *bin = models[k].build(&n);
        assert_non_null(bin);
        sweep_counts c = {0, 0};
        sweep_bytes(bin, n, 0, &c);
        assert_int_equal(c.ran, 0);
        assert_true(c.rejected >= 8 * n);
        free(bin);
    }
}

static void test_every_byte_crcs_fixed(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *bin = models[k].build(&n);
        assert_non_null(bin);
        sweep_counts c = {0, 0};
        sweep_bytes(bin, n, 1, &c);
        /* Flips in weights, names and metadata leave a valid model; flips in the structure
         * are refused. Both kinds must occur, or the sweep is not doing what it says. */
        if (c.ran == 0 || c.rejected == 0)
            fail_msg("%s: %zu accepted, %zu rejected", models[k].name, c.ran, c.rejected);
        free(bin);
    }
}

static void test_every_truncation(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *bin = models[k].build(&n);
        assert_non_null(bin);
        for (size_t len = 0; len < n; len++) {
            outcome o = open_and_run(bin, len, "truncated", len);
            if (o.status == KANN_OK) fail_msg("%s: a %zu-byte prefix opened", models[k].name, len);
        }
        /* The same file with its header's size and CRCs rewritten to the cut: the sections
         * that no longer fit must be noticed without the help of file_size. */
        uint8_t *cut = malloc(n);
        assert_non_null(cut);
        for (size_t len = sizeof(kann_file_header); len < n; len += 8) {
            memcpy(cut, bin, len);
            ((kann_file_header *)cut)->file_size = len;
            kbin_fix_crcs(cut, len);
            outcome o = open_and_run(cut, len, "truncated, header rewritten", len);
            if (o.status == KANN_OK) fail_msg("%s: a %zu-byte prefix opened", models[k].name, len);
        }
        free(cut);
        free(bin);
    }
}

/* Every aligned 32-bit and 64-bit field of the file set to values that overflow sizes, counts
 * and offsets, with the CRCs made right: rejected, or (a weight, a name) run safely. */
static void test_oversized_fields(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *bin = models[k].build(&n);
        assert_non_null(bin);
        uint8_t *scratch = malloc(n);
        assert_non_null(scratch);
        const uint32_t v32[] = {0xffffffffu, 0x80000000u, 0x7fffffffu,     0x40000000u,
                                0x10000u,    (uint32_t)n, (uint32_t)n + 64};
        const uint64_t v64[] = {UINT64_MAX,      (uint64_t)1 << 63, (uint64_t)1 << 32,
                                UINT64_MAX - 63, (uint64_t)n,       (uint64_t)n + 64};
        size_t rejected = 0;
        for (size_t at = 0; at + 4 <= n; at += 4)
            for (size_t i = 0; i < sizeof v32 / sizeof v32[0]; i++) {
                memcpy(scratch, bin, n);
                memcpy(scratch + at, &v32[i], 4);
                kbin_fix_crcs(scratch, n);
                rejected += open_and_run(scratch, n, "oversized u32", at).status != KANN_OK;
            }
        for (size_t at = 0; at + 8 <= n; at += 8)
            for (size_t i = 0; i < sizeof v64 / sizeof v64[0]; i++) {
                memcpy(scratch, bin, n);
                memcpy(scratch + at, &v64[i], 8);
                kbin_fix_crcs(scratch, n);
                rejected += open_and_run(scratch, n, "oversized u64", at).status != KANN_OK;
            }
        assert_true(rejected > 0);
        free(scratch);
        free(bin);
    }
}

/* The all-families model itself opens and computes what its records say. */
static void test_all_families_model_runs(void **state) {
    (void)state;
    size_t n;
    void *bin = model_all_families(&n);
    void *bytes = rt_copy(bin, n);
    kann_model m;
    kann_error e;
    if (kann_model_open(&m, bytes, n, &e) != KANN_OK) fail_msg("%s", e.message);
    void *arena = alloc_exact(AF_ARENA);
    memset(arena, 0, AF_ARENA);
    kann_session s;
    assert_int_equal(kann_session_init(&s, &m, arena, AF_ARENA, &e), KANN_OK);
    kann_tensor x, y, t;
    assert_int_equal(kann_session_input(&s, 0, &x), KANN_OK);
    for (int i = 0; i < 32; i++)
        ((float *)x.data)[i] = (float)((i * 3) % 8) / 4.0f - 0.5f;
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    assert_int_equal(kann_session_output(&s, 0, &y), KANN_OK);
    assert_int_equal(kann_session_output(&s, 1, &t), KANN_OK);
    const float *yv = y.data, *tv = t.data, *av = (const float *)((uint8_t *)arena + AF_A);
    /* softmax then copy: positive, sums to 1 */
    assert_true(yv[0] > 0 && yv[1] > 0 && yv[2] > 0);
    assert_float_equal(yv[0] + yv[1] + yv[2], 1.0f, 1e-5f);
    /* the transpose of the affine output viewed as [2, 4] */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            assert_float_equal(tv[i * 2 + j], av[j * 4 + i], 0.0f);
    /* the affine output is scale * maxpool + shift, and a max of ReLUs is >= 0 */
    for (int i = 0; i < 4; i++) {
        assert_true(av[i] >= -1.0f);
        assert_true(av[4 + i] >= 1.0f);
    }
    free(arena);
    free(bytes);
    free(bin);
}

/* ---- records the validators must refuse although every byte is in bounds ---------------- */

/* A one-record model around args; the loader's verdict on it. */
static kann_status open_one_record(uint32_t kernel, const void *args, size_t args_size,
                                   kann_error *e) {
    kbin_writer *w = kbin_writer_new();
    kbin_set_arena_size(w, 1024);
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 1, (uint32_t[]){4}, 0);
    kbin_add_io(w, KANN_IO_OUTPUT, "y", KANN_DTYPE_F32, 1, (uint32_t[]){4}, 512);
    kbin_add_call(w, 0, kernel, "node", args, args_size);
    kbin_add_barrier(w, 0);
    void *bin = NULL;
    size_t n;
    assert_int_equal(kbin_finish(w, &bin, &n), 0);
    kbin_writer_free(w);
    kann_model m;
    memset(e, 0, sizeof *e);
    kann_status st = kann_model_open(&m, bin, n, e);
    free(bin);
    return st;
}

/* Both matmul operands broadcast along k: 2^32 - 1 multiply-adds over two floats. */
static void test_matmul_broadcast_k_refused(void **state) {
    (void)state;
    kann_matmul_args m;
    memset(&m, 0, sizeof m);
    m.tile.end = 1;
    m.a = arena_at(0);
    m.b = arena_at(0);
    m.y = arena_at(512);
    m.batch = m.m = m.n = 1;
    m.k = UINT32_MAX;
    m.alpha = 1.0f;
    kann_error e;
    assert_int_equal(open_one_record(KANN_KERNEL_F32_MATMUL, &m, sizeof m, &e), KANN_E_CORRUPT);
    assert_non_null(strstr(e.message, "broadcast along k"));
    m.a_col_stride = 1; /* a spans k: now k must fit the arena */
    assert_int_equal(open_one_record(KANN_KERNEL_F32_MATMUL, &m, sizeof m, &e), KANN_E_CORRUPT);
    assert_non_null(strstr(e.message, "matmul a"));
    m.k = 4; /* a legitimate broadcast of b along k */
    assert_int_equal(open_one_record(KANN_KERNEL_F32_MATMUL, &m, sizeof m, &e), KANN_OK);
}

/* Copy rows that overlap in y: 2^32 - 1 rows written over one row of the arena. */
static void test_copy_overlapping_rows_refused(void **state) {
    (void)state;
    kann_copy_args c;
    memset(&c, 0, sizeof c);
    c.x = arena_at(0);
    c.y = arena_at(512);
    c.rows = UINT32_MAX;
    c.tile.end = UINT32_MAX;
    c.row_len = 4;
    kann_error e;
    assert_int_equal(open_one_record(KANN_KERNEL_F32_COPY, &c, sizeof c, &e), KANN_E_CORRUPT);
    assert_non_null(strstr(e.message, "overlap"));
    c.rows = c.tile.end = 2; /* two rows in place over each other: still refused */
    assert_int_equal(open_one_record(KANN_KERNEL_F32_COPY, &c, sizeof c, &e), KANN_E_CORRUPT);
    c.y_stride = 4; /* rows side by side */
    c.x_stride = 4;
    assert_int_equal(open_one_record(KANN_KERNEL_F32_COPY, &c, sizeof c, &e), KANN_OK);
}

/* ---- the fuzzers' regression inputs, replayed without a fuzzing build -------------------- */

/* Calls fn on every fuzz/corpus/<dir>/regress_* file; returns how many there were. */
static int for_each_regression(const char *dir, void (*fn)(const uint8_t *, size_t, const char *)) {
    const char *src = getenv("KANN_SOURCE_DIR");
    if (!src) src = ".";
    char path[4096];
    snprintf(path, sizeof path, "%s/fuzz/corpus/%s", src, dir);
    DIR *d = opendir(path);
    if (!d) fail_msg("cannot open %s (KANN_SOURCE_DIR=%s)", path, src);
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strncmp(ent->d_name, "regress_", 8) != 0) continue;
        char file[4400];
        snprintf(file, sizeof file, "%s/%s", path, ent->d_name);
        FILE *f = fopen(file, "rb");
        assert_non_null(f);
        static uint8_t buf[1 << 20];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        fn(buf, n, ent->d_name);
        count++;
    }
    closedir(d);
    return count;
}

static void replay_model_bin(const uint8_t *bytes, size_t n, const char *name) {
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, bytes, n);
    if (open_and_run(copy, n, name, 0).status == KANN_E_CRC) {
        kbin_fix_crcs(copy, n);
        open_and_run(copy, n, name, 0);
    }
    free(copy);
}

/* An ONNX regression input compiles, or some pass refuses it with a message (and none finds
 * an internal inconsistency). */
static void replay_onnx(const uint8_t *bytes, size_t n, const char *name) {
    char *messages = NULL;
    size_t messages_size = 0;
    FILE *out = open_memstream(&messages, &messages_size);
    assert_non_null(out);
    kc_diag d;
    kc_diag_init(&d, name, out);
    kc_stats st = {0};
    kc_program prog = {0};
    kc_schedule sched = {0};
    kc_plan plan = {0};
    kc_graph *g = kc_graph_new();
    int refused = kc_import_onnx_bytes(g, bytes, n, NULL, &d, &st) || kc_check_supported(g, &d) ||
                  kc_pass_shapes_constants(g, NULL, 0, &d, &st) || kc_pass_simplify(g, &d, &st) ||
                  kc_pass_fold_bn(g, &d, &st) || kc_pass_fuse(g, &d, &st) ||
                  kc_lower(g, &prog, &d) || kc_schedule_program(g, &prog, 2, &sched, &d) ||
                  kc_plan_memory(g, &prog, &plan, &d);
    if (!refused) { /* the emitter has the loader check its output: refusal is internal */
        char path[512];
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/kann_regress_%ld.bin", tmp && *tmp ? tmp : "/tmp",
                 (long)getpid());
        kc_emit_options eo = {name, "0", "", "cpu"};
        if (kc_emit_model(g, &prog, &sched, &plan, path, &eo, &d) == 0) {
            kann_host_file f;
            kann_error e;
            assert_int_equal(kann_host_file_load(path, &f, &e), KANN_OK);
            assert_int_equal(open_and_run(f.data, f.size, name, 0).status, KANN_OK);
            kann_host_file_free(&f);
            unlink(path);
        }
    }
    fclose(out);
    if (refused && (messages_size == 0 || strstr(messages, "error") == NULL))
        fail_msg("%s refused without a message", name);
    if (strstr(messages, "internal error")) fail_msg("%s: %s", name, messages);
    free(messages);
    kc_schedule_free(&sched);
    kc_program_free(&prog);
    kc_graph_free(g);
}

static void replay_tensor(const uint8_t *bytes, size_t n, const char *name) {
    kann_host_tensor t;
    kann_error e;
    kann_status st = n >= 6 && memcmp(bytes, "\x93NUMPY", 6) == 0
                         ? kann_host_npy_parse(bytes, n, name, &t, &e)
                         : kann_host_pb_parse(bytes, n, name, &t, &e);
    if (st == KANN_OK) {
        kann_host_tensor_free(&t);
        return;
    }
    /* Malformed, not out of memory: a shape is not allocated before its data is seen. */
    if (st == KANN_E_IO || e.status != st || e.message[0] == '\0')
        fail_msg("%s: %s: %s", name, kann_status_name(st), e.message);
}

static void test_fuzz_regressions(void **state) {
    (void)state;
    /* every kernel variant this CPU runs: a variant must not take the reference's shortcuts
     * away (an AVX2 max pool that visited the rows of outputs without a column inside x took
     * seconds on regress_pool_no_columns, the others microseconds) */
    for (int isa = 0; isa < KANN_ISA_COUNT; isa++) {
        if (!kann_isa_supported((kann_isa)isa) || (isa == KANN_ISA_AMX && !kann_host_amx_permit()))
            continue;
        run_isa = (kann_isa)isa;
        assert_true(for_each_regression("model_bin", replay_model_bin) >= 1);
    }
    run_isa = KANN_ISA_COUNT;
    assert_true(for_each_regression("onnx_import", replay_onnx) >= 1);
    assert_true(for_each_regression("tensor_readers", replay_tensor) >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_families_model_runs),
        cmocka_unit_test(test_every_byte_crcs_intact),
        cmocka_unit_test(test_every_byte_crcs_fixed),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_oversized_fields),
        cmocka_unit_test(test_matmul_broadcast_k_refused),
        cmocka_unit_test(test_copy_overlapping_rows_refused),
        cmocka_unit_test(test_fuzz_regressions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
