/* The back half of the compiler: lowering (calls and diagnostics), scheduling (tiles cover
 * each call exactly once, equal phases), planning (no two live buffers overlap) and emission
 * (the file loads and computes what a naive loop computes, on any stream count). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kann.h"
#include "kann_kernels.h"
#include "lower.h"
#include "pass_graph.h"
#include "passes.h"

static float frand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* An empty graph importing the default domain at opset 13. */
static kc_graph *graph_opset13(void) {
    kc_graph *g = kc_graph_new();
    g->opsets = kc_alloc(g, sizeof(kc_opset));
    g->opsets[0] = (kc_opset){"", 13};
    g->n_opsets = 1;
    return g;
}

/* x[1,3,6,6] -> Conv(4,3,3,3,pad 1) -> Relu -> Conv(4,4,1,1) + residual(relu out) -> Relu
 *   -> GlobalAveragePool -> Flatten -> Gemm(5, transB) = y[1,5] */
typedef struct net {
    kc_graph *g;
    float w1[4 * 3 * 3 * 3], b1[4], w2[4 * 4], fw[5 * 4], fb[5];
} net;

static void build_net(net *n, unsigned seed) {
    kc_graph *g = graph_opset13();
    n->g = g;
    for (size_t i = 0; i < sizeof n->w1 / 4; i++) n->w1[i] = frand(&seed) * 0.5f;
    for (size_t i = 0; i < 4; i++) n->b1[i] = frand(&seed);
    for (size_t i = 0; i < 16; i++) n->w2[i] = frand(&seed);
    for (size_t i = 0; i < 20; i++) n->fw[i] = frand(&seed);
    for (size_t i = 0; i < 5; i++) n->fb[i] = frand(&seed);
    int x = pg_input(g, pg_value(g, "x", 4, 1, 3, 6, 6));
    int w1 = pg_const(g, "w1", 4, (int64_t[]){4, 3, 3, 3}, n->w1);
    int b1 = pg_const(g, "b1", 1, (int64_t[]){4}, n->b1);
    int w2 = pg_const(g, "w2", 4, (int64_t[]){4, 4, 1, 1}, n->w2);
    int fw = pg_const(g, "fw", 2, (int64_t[]){5, 4}, n->fw);
    int fb = pg_const(g, "fb", 1, (int64_t[]){5}, n->fb);
    int c1 = kc_add_value(g, "c1"), r1 = kc_add_value(g, "r1"), c2 = kc_add_value(g, "c2");
    int s = kc_add_value(g, "s"), r2 = kc_add_value(g, "r2"), p = kc_add_value(g, "p");
    int f = kc_add_value(g, "f"), y = kc_add_value(g, "y");
    int conv1 = pg_node(g, KC_OP_Conv, 13, 3, (int[]){x, w1, b1}, 1, (int[]){c1});
    kc_attr *pads = kc_node_add_attr(g, conv1, "pads", KC_ATTR_INTS);
    pads->n = 4;
    pads->ints = kc_alloc(g, 4 * sizeof(int64_t));
    for (int i = 0; i < 4; i++) pads->ints[i] = 1;
    pg_node(g, KC_OP_Relu, 13, 1, (int[]){c1}, 1, (int[]){r1});
    pg_node(g, KC_OP_Conv, 13, 2, (int[]){r1, w2}, 1, (int[]){c2});
    pg_node(g, KC_OP_Add, 13, 2, (int[]){c2, r1}, 1, (int[]){s});
    pg_node(g, KC_OP_Relu, 13, 1, (int[]){s}, 1, (int[]){r2});
    pg_node(g, KC_OP_GlobalAveragePool, 13, 1, (int[]){r2}, 1, (int[]){p});
    pg_node(g, KC_OP_Flatten, 13, 1, (int[]){p}, 1, (int[]){f});
    int gemm = pg_node(g, KC_OP_Gemm, 13, 3, (int[]){f, fw, fb}, 1, (int[]){y});
    kc_node_add_attr(g, gemm, "transB", KC_ATTR_INT)->i = 1;
    pg_output(g, y);
}

static void naive_net(const net *n, const float *x, float *y) {
    float c1[4][6][6], c2[4][6][6], pooled[4];
    for (int m = 0; m < 4; m++)
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                double acc = n->b1[m];
                for (int c = 0; c < 3; c++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = i + kh - 1, iw = j + kw - 1;
                            if (ih < 0 || ih >= 6 || iw < 0 || iw >= 6) continue;
                            acc += n->w1[((m * 3 + c) * 3 + kh) * 3 + kw] * x[(c * 6 + ih) * 6 + iw];
                        }
                c1[m][i][j] = acc > 0 ? (float)acc : 0;
            }
    for (int m = 0; m < 4; m++) {
        double sum = 0;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++) {
                double acc = c1[m][i][j];
                for (int c = 0; c < 4; c++) acc += n->w2[m * 4 + c] * c1[c][i][j];
                c2[m][i][j] = acc > 0 ? (float)acc : 0;
                sum += c2[m][i][j];
            }
        pooled[m] = (float)(sum / 36);
    }
    for (int o = 0; o < 5; o++) {
        double acc = n->fb[o];
        for (int c = 0; c < 4; c++) acc += n->fw[o * 4 + c] * pooled[c];
        y[o] = (float)acc;
    }
}

/* Runs the middle of the pipeline; returns the number of errors. */
static int middle(kc_graph *g, kc_diag *d, kc_stats *st) {
    return kc_pass_shapes_constants(g, NULL, 0, d, st) + kc_pass_simplify(g, d, st) +
           kc_pass_fold_bn(g, d, st) + kc_pass_fuse(g, d, st);
}

/* The middle of the pipeline on g, then g lowered for `streams` streams into *prog (diagnostics
 * to stderr through *d). */
static void lower_for(kc_graph *g, int streams, kc_program *prog, kc_diag *d) {
    kc_diag_init(d, "net", stderr);
    kc_stats st = {0};
    memset(prog, 0, sizeof *prog);
    prog->streams = streams;
    assert_int_equal(middle(g, d, &st), 0);
    assert_int_equal(kc_lower(g, prog, d), 0);
}

/* Emits the compiled program, loads it on P streams and runs it on x (input 0) twice: the
 * same bits both times, the input intact. Output 0 goes to y; its description to *out (data
 * no longer valid). */
static void emit_load_run(kc_graph *g, kc_program *prog, kc_schedule *sched, kc_plan *plan,
                          int P, const float *x, size_t x_bytes, float *y, size_t y_bytes,
                          kann_tensor *out) {
    kc_diag d;
    kc_diag_init(&d, "net", stderr);
    char path[] = "/tmp/kann_backend_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(kc_emit_model(g, prog, sched, plan, path, NULL, &d), 0);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *bytes = aligned_alloc(64, ((size_t)size + 63) & ~(size_t)63);
    assert_int_equal(fread(bytes, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    unlink(path);
    kann_model m;
    kann_error err;
    assert_int_equal(kann_model_open(&m, bytes, (size_t)size, &err), KANN_OK);
    assert_int_equal(kann_model_n_streams(&m), P);
    size_t need = kann_model_arena_size(&m);
    void *arena = aligned_alloc(64, (need + 63) & ~(size_t)63);
    kann_session s;
    assert_int_equal(kann_session_init(&s, &m, arena, need, &err), KANN_OK);
    kann_tensor in;
    assert_int_equal(kann_session_input(&s, 0, &in), KANN_OK);
    assert_int_equal(in.size, x_bytes);
    memcpy(in.data, x, x_bytes);
    assert_int_equal(kann_session_run(&s, &err), KANN_OK);
    assert_int_equal(kann_session_output(&s, 0, out), KANN_OK);
    assert_int_equal(out->size, y_bytes);
    memcpy(y, out->data, y_bytes);
    /* Inputs survive a run: running again gives the same bits. */
    assert_int_equal(kann_session_run(&s, &err), KANN_OK);
    assert_memory_equal(y, out->data, y_bytes);
    assert_memory_equal(in.data, x, x_bytes);
    free(arena);
    free(bytes);
}

static void test_compile_load_run_any_stream_count(void **state) {
    (void)state;
    float x[3 * 6 * 6], want[5], first[5];
    unsigned seed = 7;
    for (int i = 0; i < 3 * 36; i++) x[i] = frand(&seed);
    for (int P = 1; P <= 4; P++) {
        net n;
        build_net(&n, 99);
        if (P == 1) naive_net(&n, x, want);
        kc_diag d;
        kc_diag_init(&d, "net", stderr);
        kc_stats st = {0};
        kc_program prog = {0};
        kc_schedule sched = {0};
        kc_plan plan = {0};
        assert_int_equal(middle(n.g, &d, &st), 0);
        assert_int_equal(st.residuals_fused, 1);
        assert_int_equal(st.activations_fused, 2);
        assert_int_equal(kc_lower(n.g, &prog, &d), 0);
        /* pad2d + the 3x3 conv read in place, conv+add+relu, pool, gemm */
        assert_int_equal(prog.n_calls, 5);
        assert_int_equal(kc_schedule_program(n.g, &prog, P, &sched, &d), 0);
        /* a chain: every call reads what the one before wrote, so every barrier stays */
        assert_int_equal(kc_schedule_merge_phases(n.g, &prog, &sched), 0);
        assert_int_equal(kc_plan_memory(n.g, &prog, &plan, &d), 0);
        float y[5];
        kann_tensor out;
        emit_load_run(n.g, &prog, &sched, &plan, P, x, sizeof x, y, sizeof y, &out);
        assert_int_equal(out.rank, 2);
        assert_int_equal(out.dims[1], 5);
        for (int i = 0; i < 5; i++) {
            assert_true(fabsf(y[i] - want[i]) <= 1e-4f * (1 + fabsf(want[i])));
            if (P == 1) first[i] = y[i];
            /* Tiles only split work: every stream count computes the same bits. */
            else assert_true(memcmp(&y[i], &first[i], sizeof(float)) == 0);
        }
        kc_schedule_free(&sched);
        kc_program_free(&prog);
        kc_graph_free(n.g);
    }
}

/* Every call's tiles, over all streams, cover its extent on one axis exactly once; streams have
 * equal phase counts and end with a barrier. */
static void test_schedule_tiles_partition_each_call(void **state) {
    (void)state;
    net n;
    build_net(&n, 3);
    kc_diag d;
    kc_diag_init(&d, "net", stderr);
    kc_stats st = {0};
    kc_program prog = {0};
    assert_int_equal(middle(n.g, &d, &st), 0);
    assert_int_equal(kc_lower(n.g, &prog, &d), 0);
    for (int P = 1; P <= 7; P++) {
        kc_schedule s = {0};
        assert_int_equal(kc_schedule_program(n.g, &prog, P, &s, &d), 0);
        for (int ci = 0; ci < prog.n_calls; ci++) {
            uint32_t covered = 0;
            int axis = -1;
            for (int st_i = 0; st_i < P; st_i++)
                for (int r = 0; r < s.counts[st_i]; r++) {
                    const kc_tile_record *t = &s.streams[st_i][r];
                    if (t->call != ci) continue;
                    if (axis < 0) axis = (int)t->axis;
                    assert_int_equal(t->axis, (uint32_t)axis);
                    assert_true(t->begin <= t->end);
                    assert_true(t->end <= prog.calls[ci].extents[axis]);
                    covered += t->end - t->begin;
                }
            assert_true(axis >= 0);
            assert_int_equal(covered, prog.calls[ci].extents[axis]);
        }
        for (int st_i = 0; st_i < P; st_i++) {
            int barriers = 0;
            for (int r = 0; r < s.counts[st_i]; r++) barriers += s.streams[st_i][r].call < 0;
            assert_int_equal(barriers, s.n_phases);
            assert_true(s.streams[st_i][s.counts[st_i] - 1].call < 0);
        }
        kc_schedule_free(&s);
    }
    kc_program_free(&prog);
    kc_graph_free(n.g);
}

/* A long chain with fan-out: buffers whose lifetimes intersect never share bytes, offsets are
 * 64-aligned, and reuse keeps the arena well below the sum of all buffers. */
/* A Conv node x -> out with weights [m, c / group, k, k], padding k / 2, stride 1. */
/* Attribute name of node, two ints of value v (a 2-D window's strides or kernel shape). */
static void add_pair_attr(kc_graph *g, int node, const char *name, int64_t v) {
    kc_attr *a = kc_node_add_attr(g, node, name, KC_ATTR_INTS);
    a->n = 2;
    a->ints = kc_alloc(g, 2 * sizeof(int64_t));
    a->ints[0] = a->ints[1] = v;
}

static void add_conv(kc_graph *g, int x, int out, int m, int c, int k, int group, float *wbuf) {
    for (int i = 0; i < m * (c / group) * k * k; i++) wbuf[i] = 0.01f * (float)(i % 7);
    int w = pg_const(g, kc_sprintf(g, "w%d", out), 4, (int64_t[]){m, c / group, k, k}, wbuf);
    int node = pg_node(g, KC_OP_Conv, 13, 2, (int[]){x, w}, 1, (int[]){out});
    kc_attr *pads = kc_node_add_attr(g, node, "pads", KC_ATTR_INTS);
    pads->n = 4;
    pads->ints = kc_alloc(g, 4 * sizeof(int64_t));
    for (int i = 0; i < 4; i++) pads->ints[i] = k / 2;
    if (group > 1) kc_node_add_attr(g, node, "group", KC_ATTR_INT)->i = group;
}

/* The axis of call ci's tiles in s. */
static uint32_t tile_axis(const kc_schedule *s, int ci) {
    for (int st = 0; st < s->n_streams; st++)
        for (int r = 0; r < s->counts[st]; r++)
            if (s->streams[st][r].call == ci) return s->streams[st][r].axis;
    return 0;
}

/* The schedule's cost model on two streams: an inverted-residual block over a 56x56 map (1x1
 * 24 -> 144, depthwise 3x3, 1x1 144 -> 24) keeps every core on its own pixels, so the last 1x1
 * conv reads the depthwise output where it was written (split along channels, as the balance
 * alone chose, it read half of 1.8 MB from the other core); depthwise tiles (a 28x28 map too)
 * meet on cache lines; a batch-1 Gemm splits its output columns (one row) even though each
 * stream then reads only part of the weights; 1x1 convs over 7x7 maps (f32_pointwise_lanes) split
 * along channels. */
static void test_schedule_cost_model(void **state) {
    (void)state;
    kc_graph *g = graph_opset13();
    static float w_expand[144 * 24], w_dw[144 * 9], w_project[24 * 144];
    static float w_small[2][256 * 256], fc_w[1000 * 24];
    int x = pg_input(g, pg_value(g, "x", 4, 1, 24, 56, 56));
    int e = kc_add_value(g, "e"), d = kc_add_value(g, "d"), pr = kc_add_value(g, "pr");
    add_conv(g, x, e, 144, 24, 1, 1, w_expand);
    add_conv(g, e, d, 144, 144, 3, 144, w_dw);
    add_conv(g, d, pr, 24, 144, 1, 1, w_project);
    int pool = kc_add_value(g, "pool"), flat = kc_add_value(g, "flat"), y = kc_add_value(g, "y");
    pg_node(g, KC_OP_GlobalAveragePool, 13, 1, (int[]){pr}, 1, (int[]){pool});
    pg_output(g, pr); /* read by more than the pool: the projection stays a conv of its own */
    pg_node(g, KC_OP_Flatten, 13, 1, (int[]){pool}, 1, (int[]){flat});
    int fw = pg_const(g, "fw", 2, (int64_t[]){1000, 24}, fc_w);
    int gemm = pg_node(g, KC_OP_Gemm, 13, 2, (int[]){flat, fw}, 1, (int[]){y});
    kc_node_add_attr(g, gemm, "transB", KC_ATTR_INT)->i = 1;
    pg_output(g, y);
    int sx = pg_input(g, pg_value(g, "sx", 4, 1, 256, 7, 7));
    int s1 = kc_add_value(g, "s1"), s2 = kc_add_value(g, "s2");
    add_conv(g, sx, s1, 256, 256, 1, 1, w_small[0]);
    add_conv(g, s1, s2, 256, 256, 1, 1, w_small[1]);
    pg_output(g, s2);
    static float w_dw28[32 * 9];
    int mx = pg_input(g, pg_value(g, "mx", 4, 1, 32, 28, 28)), md = kc_add_value(g, "md");
    add_conv(g, mx, md, 32, 32, 3, 32, w_dw28);
    pg_output(g, md);

    kc_diag dg;
    kc_diag_init(&dg, "net", stderr);
    kc_stats st = {0};
    kc_program prog = {0};
    prog.streams = 2;
    kc_schedule s = {0};
    assert_int_equal(middle(g, &dg, &st), 0);
    assert_int_equal(kc_lower(g, &prog, &dg), 0);
    assert_int_equal(kc_schedule_program(g, &prog, 2, &s, &dg), 0);
    int seen_project = 0, seen_dw = 0, seen_gemm = 0, seen_small = 0;
    for (int ci = 0; ci < prog.n_calls; ci++) {
        const kc_call *c = &prog.calls[ci];
        uint32_t axis = tile_axis(&s, ci);
        if (c->kernel == KANN_KERNEL_F32_CONV2D_PACKED) {
            const kann_conv2d_packed_args *a = c->args;
            if (a->c_in == 144) {
                assert_int_equal(axis, 1);
                seen_project = 1;
            } else if (a->h_out == 7) {
                assert_int_equal(axis, 0);
                seen_small++;
            }
        } else if (c->kernel == KANN_KERNEL_F32_POINTWISE_LANES) {
            const kann_pointwise_lanes_args *a = c->args;
            assert_int_equal(a->hw, 49);
            assert_int_equal(axis, 0);
            seen_small++;
        } else if (c->kernel == KANN_KERNEL_F32_DWCONV2D) {
            const kann_conv2d_args *a = c->args;
            /* rows of the tile and whole planes: 16 floats to a line */
            assert_int_equal((uint64_t)c->granules[1] * a->w_out % 16, 0);
            assert_int_equal((uint64_t)c->granules[0] * a->h_out * a->w_out % 16, 0);
            seen_dw++;
        } else if (c->kernel == KANN_KERNEL_F32_MATMUL) {
            assert_int_equal(axis, 1);
            seen_gemm = 1;
        }
    }
    assert_true(seen_project && seen_dw == 2 && seen_gemm && seen_small == 2);
    kc_schedule_free(&s);
    kc_program_free(&prog);
    kc_graph_free(g);
}

/* Two stride-2 3x3 convs that gather their windows into a scratch: 128 -> 256 channels over
 * 10x10 outputs (100 pixels: 64 + 36 along pixels, 132 + 124 channels along channels), then
 * 256 -> 8 over 5x5 (one panel of channels). */
static kc_graph *strided_graph(void) {
    static float w_deep[256 * 128 * 9], w_narrow[8 * 256 * 9];
    kc_graph *g = graph_opset13();
    int x = pg_input(g, pg_value(g, "x", 4, 1, 128, 20, 20));
    int deep = kc_add_value(g, "deep"), y = kc_add_value(g, "y");
    add_conv(g, x, deep, 256, 128, 3, 1, w_deep);
    add_conv(g, deep, y, 8, 256, 3, 1, w_narrow);
    for (int i = 0; i < g->n_nodes; i++)
        add_pair_attr(g, i, "strides", 2);
    pg_output(g, y);
    return g;
}

/* A conv's gathered windows are a scratch each tile along output channels writes whole: lowered
 * for two streams, every stream has a copy, and the deep conv splits along channels (its
 * pixels balance badly) on the copies; the narrow conv's tiles stay on pixels, writing parts of
 * one copy, and the other is dropped. Lowered for one stream, no call may split along channels
 * on two. Every such program computes what one stream does. */
static void test_schedule_private_scratch(void **state) {
    (void)state;
    enum { X = 128 * 20 * 20, Y = 8 * 5 * 5 };
    static float x[X], y[3][Y];
    unsigned seed = 5;
    for (int i = 0; i < X; i++) x[i] = frand(&seed);
    for (int variant = 0; variant < 3; variant++) {
        /* 0: one stream; 1: lowered and scheduled for two; 2: lowered for one, two streams */
        int P = variant ? 2 : 1;
        kc_graph *g = strided_graph();
        kc_diag d;
        kc_program prog;
        kc_schedule sched = {0};
        kc_plan plan = {0};
        lower_for(g, variant == 1 ? 2 : 1, &prog, &d);
        assert_int_equal(prog.n_calls, 2);
        assert_int_equal(kc_schedule_program(g, &prog, P, &sched, &d), 0);
        kc_schedule_merge_phases(g, &prog, &sched);
        int64_t one_copy[2];
        for (int ci = 0; ci < 2; ci++) {
            const kc_fixup *f = &prog.calls[ci].fixups[prog.calls[ci].n_fixups - 1];
            assert_int_equal(f->copies, prog.streams);
            one_copy[ci] = g->values[f->value].dims[0] / f->copies;
        }
        int64_t saved = kc_schedule_trim_scratch(g, &prog, &sched);
        for (int ci = 0; ci < 2; ci++) {
            const kc_call *c = &prog.calls[ci];
            const kann_conv2d_packed_args *a = c->args;
            const kc_fixup *f = &c->fixups[c->n_fixups - 1];
            uint32_t axis = tile_axis(&sched, ci);
            if (variant == 1 && a->c_out == 256) {
                assert_int_equal(axis, 0);
                assert_int_equal(f->copies, 2);
                assert_int_equal(g->values[f->value].dims[0], 2 * one_copy[ci]);
            } else {
                if (P == 2) assert_int_equal(axis, 1);
                assert_int_equal(f->copies, 1);
                assert_int_equal(g->values[f->value].dims[0], one_copy[ci]);
            }
        }
        assert_int_equal(saved, variant == 1 ? one_copy[1] * 4 : 0);
        assert_int_equal(kc_plan_memory(g, &prog, &plan, &d), 0);
        kann_tensor out;
        emit_load_run(g, &prog, &sched, &plan, P, x, sizeof x, y[variant], sizeof y[variant], &out);
        for (int i = 0; i < Y; i++)
            assert_true(fabsf(y[variant][i] - y[0][i]) <= 1e-5f * (1 + fabsf(y[0][i])));
        kc_schedule_free(&sched);
        kc_program_free(&prog);
        kc_graph_free(g);
    }
}

/* A fire module: squeeze 1x1 (16 channels, 12x12); a 1x1 and a 3x3 branch into one Concat;
 * a 1x1 after it. */
static kc_graph *fire_graph(void) {
    enum { C = 16, H = 12 };
    static float w_sq[C * C], w_e1[16 * C], w_e3[16 * C * 9], w_out[8 * 32];
    kc_graph *g = graph_opset13();
    int in = pg_input(g, pg_value(g, "x", 4, 1, C, H, H));
    int sq = kc_add_value(g, "sq"), e1 = kc_add_value(g, "e1"), e3 = kc_add_value(g, "e3");
    int cat = kc_add_value(g, "cat"), out = kc_add_value(g, "y");
    add_conv(g, in, sq, C, C, 1, 1, w_sq);
    add_conv(g, sq, e1, 16, C, 1, 1, w_e1);
    add_conv(g, sq, e3, 16, C, 3, 1, w_e3);
    int concat = pg_node(g, KC_OP_Concat, 13, 2, (int[]){e1, e3}, 1, (int[]){cat});
    kc_node_add_attr(g, concat, "axis", KC_ATTR_INT)->i = 1;
    add_conv(g, cat, out, 8, 32, 1, 1, w_out);
    pg_output(g, out);
    return g;
}

/* The arena bytes [*lo, *hi) fixup f of a call touches, after the memory plan: a slice's own
 * (kc_bind_slice), else the value's from the binding's offset on. */
static void fixup_bytes(const kc_graph *g, const kc_fixup *f, uint64_t *lo, uint64_t *hi) {
    int64_t off;
    int root = kc_value_root(g, f->value, &off);
    *lo = (uint64_t)(g->values[root].offset + off + f->byte_offset);
    *hi = *lo + (f->byte_len > 0 ? (uint64_t)f->byte_len
                                 : (uint64_t)kc_value_numel(&g->values[f->value]) * 4);
}

/* Within every phase of a planned program, no call writes an arena byte another touches, but
 * for calls that both run whole on one stream (in order: a stream's partial sums). */
static void expect_phases_independent(const kc_graph *g, const kc_program *prog) {
    for (int a = 0; a < prog->n_calls; a++)
        for (int b = a + 1; b <= prog->phase_last[a]; b++) {
            assert_int_equal(prog->phase_first[b], prog->phase_first[a]);
            const kc_call *ca = &prog->calls[a], *cb = &prog->calls[b];
            if (ca->stream >= 0 && ca->stream == cb->stream) continue;
            for (int i = 0; i < ca->n_fixups; i++)
                for (int j = 0; j < cb->n_fixups; j++) {
                    const kc_fixup *fa = &ca->fixups[i], *fb = &cb->fixups[j];
                    if (!(fa->write || fb->write) || kc_is_const(g, fa->value) ||
                        kc_is_const(g, fb->value))
                        continue;
                    uint64_t alo, ahi, blo, bhi;
                    fixup_bytes(g, fa, &alo, &ahi);
                    fixup_bytes(g, fb, &blo, &bhi);
                    assert_false(alo < bhi && blo < ahi);
                }
        }
}

/* Within a phase of every stream, the records the pool may cut into parts (a granule and more
 * than one of them in the tile: the 1x1 branch, read in place) come after those it runs whole
 * (the 3x3 branch, which gathers or transforms its input into a scratch: its 12x12 map is one
 * block of Winograd tiles): a thread done early can then help with the rest. */
static void expect_shared_records_last(const kc_graph *g, const kc_program *prog,
                                       const kc_schedule *s) {
    int checked = 0;
    for (int st = 0; st < s->n_streams; st++) {
        int seen_shared = 0;
        for (int r = 0; r < s->counts[st]; r++) {
            const kc_tile_record *t = &s->streams[st][r];
            if (t->call < 0) {
                seen_shared = 0;
                continue;
            }
            const kc_call *c = &prog->calls[t->call];
            _Alignas(8) unsigned char args[KC_MAX_ARGS_BYTES];
            kc_call_args(g, c, t, st, args);
            double work;
            uint32_t granule = kann_kernel_part_granule((uint32_t)c->kernel, args, &work);
            if (granule != 0 && t->end - t->begin > granule) {
                seen_shared = 1;
            } else {
                assert_false(seen_shared);
                checked++;
            }
        }
    }
    assert_true(checked > 0);
}

/* The fire module's branches read the same input and write their own slices of the Concat, so
 * on 2 and 3 streams they share a phase, and the 1x1 after the Concat waits for both. Every
 * merged phase is independent in the planned arena (the plan keeps values alive through their
 * phases); the merged program computes the same bits as the same tiles with every barrier
 * (a race would not), and what one stream computes up to rounding (tiles along pixels or
 * channels may sum in another order). */
static void test_schedule_merges_independent_phases(void **state) {
    (void)state;
    float x[16 * 12 * 12], y1[8 * 12 * 12], y[2][8 * 12 * 12];
    unsigned seed = 5;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++) x[i] = frand(&seed);
    for (int P = 1; P <= 3; P++) {
        for (int merge = 0; merge <= 1; merge++) {
            kc_graph *g = fire_graph();
            kc_diag d;
            kc_diag_init(&d, "net", stderr);
            kc_stats st = {0};
            kc_program prog = {0};
            prog.streams = P;
            kc_schedule sched = {0};
            kc_plan plan = {0};
            assert_int_equal(middle(g, &d, &st), 0);
            assert_int_equal(st.views, 2); /* the branches write their slices of the Concat */
            assert_int_equal(kc_lower(g, &prog, &d), 0);
            assert_int_equal(kc_schedule_program(g, &prog, P, &sched, &d), 0);
            if (merge) {
                int phases = sched.n_phases, merged = kc_schedule_merge_phases(g, &prog, &sched);
                assert_int_equal(sched.n_phases, phases - merged);
                if (P > 1)
                    assert_true(merged >= 1 && sched.n_phases >= 3);
                else /* one stream: one phase, each value alive over its own calls */
                    assert_true(merged == 0 && !prog.phase_first && !prog.phase_last);
            }
            assert_int_equal(kc_plan_memory(g, &prog, &plan, &d), 0);
            if (merge && P > 1) {
                expect_phases_independent(g, &prog);
                expect_shared_records_last(g, &prog, &sched);
            }
            for (int st_i = 0; st_i < P; st_i++) {
                int barriers = 0;
                for (int r = 0; r < sched.counts[st_i]; r++)
                    barriers += sched.streams[st_i][r].call < 0;
                assert_int_equal(barriers, sched.n_phases);
            }
            kann_tensor meta;
            float *out = P == 1 ? y1 : y[merge];
            emit_load_run(g, &prog, &sched, &plan, P, x, sizeof x, out, sizeof y1, &meta);
            kc_schedule_free(&sched);
            kc_program_free(&prog);
            kc_graph_free(g);
        }
        if (P > 1) {
            assert_memory_equal(y[0], y[1], sizeof y1);
            for (size_t i = 0; i < sizeof y1 / sizeof y1[0]; i++)
                assert_true(fabsf(y[1][i] - y1[i]) <= 1e-5f * (1 + fabsf(y1[i])));
        }
    }
}

/* kc_schedule_free_records on stream s of sched, in a malloc'd array (free it). */
static uint8_t *free_flags(const kc_graph *g, const kc_program *prog, const kc_schedule *sched,
                           int s) {
    uint8_t *is_free = malloc((size_t)sched->counts[s] + 1);
    assert_non_null(is_free);
    kc_schedule_free_records(g, prog, sched, s, is_free);
    return is_free;
}

/* KANN_RECORD_FREE on the records of every stream of sched (kc_schedule_free_records):
 * none on one stream, none on a barrier, and wherever a phase of a stream holds a free
 * record, no other record of that phase is of its call. Returns the count. */
static int count_free_records(const kc_graph *g, const kc_program *prog, const kc_schedule *sched) {
    int n = 0;
    for (int s = 0; s < sched->n_streams; s++) {
        uint8_t *is_free = free_flags(g, prog, sched, s);
        for (int r0 = 0; r0 < sched->counts[s];) {
            int r1 = r0;
            while (r1 < sched->counts[s] && sched->streams[s][r1].call >= 0)
                r1++;
            for (int i = r0; i < r1; i++) {
                n += is_free[i];
                if (sched->n_streams < 2) assert_false(is_free[i]);
                for (int j = r0; j < r1 && is_free[i]; j++)
                    if (j != i)
                        assert_int_not_equal(sched->streams[s][j].call, sched->streams[s][i].call);
            }
            if (r1 < sched->counts[s]) assert_false(is_free[r1]);
            r0 = r1 + 1;
        }
        free(is_free);
    }
    return n;
}

/* g, lowered, scheduled on P streams, its phases merged. */
static void schedule_lowered(kc_graph *g, int P, kc_program *prog, kc_schedule *sched,
                             kc_diag *d) {
    assert_int_equal(kc_schedule_program(g, prog, P, sched, d), 0);
    kc_schedule_merge_phases(g, prog, sched);
}

/* g lowered for P streams, scheduled, its phases merged. */
static void schedule_merged(kc_graph *g, int P, kc_program *prog, kc_schedule *sched, kc_diag *d) {
    lower_for(g, P, prog, d);
    schedule_lowered(g, P, prog, sched, d);
}

/* The program of g on P streams planned (its phases independent), run on x into y (n floats),
 * checked against ref (one stream's output; NULL: none yet) and freed with g. */
static void plan_run_check(kc_graph *g, kc_program *prog, kc_schedule *sched, kc_diag *d, int P,
                           const float *x, size_t x_bytes, float *y, size_t n, const float *ref) {
    kc_plan plan = {0};
    assert_int_equal(kc_plan_memory(g, prog, &plan, d), 0);
    if (P > 1 && prog->phase_last) expect_phases_independent(g, prog); /* NULL: one call */
    kann_tensor meta;
    emit_load_run(g, prog, sched, &plan, P, x, x_bytes, y, n * sizeof(float), &meta);
    for (size_t i = 0; ref && i < n; i++)
        assert_true(fabsf(y[i] - ref[i]) <= 1e-5f * (1 + fabsf(ref[i])));
    kc_schedule_free(sched);
    kc_program_free(prog);
    kc_graph_free(g);
}

/* An inverted-residual block over a 14x14 map: 1x1 32 -> 192, depthwise 3x3, 1x1 192 -> 32 plus
 * the block's input. Lowered for P >= 2 streams, the last 1x1 becomes P partial sums, one per
 * stream over the channels that stream's depthwise tile wrote (the depthwise conv held to its
 * channel tiles), all in one phase, then P - 1 adds; it computes what one stream does. */
static void test_schedule_summed_pointwise(void **state) {
    (void)state;
    enum { C = 32, E = 192, H = 14 };
    static float w_e[E * C], w_d[E * 9], w_p[C * E], x[C * H * H], y[4][C * H * H];
    unsigned seed = 9;
    for (int i = 0; i < C * H * H; i++) x[i] = frand(&seed);
    for (int P = 1; P <= 3; P++) {
        kc_graph *g = graph_opset13();
        int in = pg_input(g, pg_value(g, "x", 4, 1, C, H, H));
        int e = kc_add_value(g, "e"), dv = kc_add_value(g, "d"), pr = kc_add_value(g, "pr");
        int out = kc_add_value(g, "y");
        add_conv(g, in, e, E, C, 1, 1, w_e);
        add_conv(g, e, dv, E, E, 3, E, w_d);
        add_conv(g, dv, pr, C, E, 1, 1, w_p);
        pg_node(g, KC_OP_Add, 13, 2, (int[]){pr, in}, 1, (int[]){out});
        pg_output(g, out);
        kc_diag d;
        kc_program prog;
        kc_schedule sched = {0};
        schedule_merged(g, P, &prog, &sched, &d);
        int dw = -1, parts = 0, adds = 0, first_part = -1;
        uint32_t k_next = 0;
        for (int ci = 0; ci < prog.n_calls; ci++) {
            const kc_call *c = &prog.calls[ci];
            if (c->kernel == KANN_KERNEL_F32_DWCONV2D) dw = ci;
            if (c->kernel == KANN_KERNEL_F32_BINARY) {
                assert_int_equal(c->stream, -1);
                adds++;
            }
            if (c->stream < 0) continue;
            /* a partial sum: whole on its stream, over the channels its depthwise tile wrote */
            const kann_conv2d_packed_args *a = c->args;
            assert_int_equal(c->kernel, KANN_KERNEL_F32_CONV2D_PACKED);
            assert_int_equal(c->stream, parts);
            assert_int_equal(c->fixups[0].byte_offset, (int64_t)k_next * H * H * 4);
            int records = 0;
            for (int s = 0; s < P; s++)
                for (int r = 0; r < sched.counts[s]; r++)
                    if (sched.streams[s][r].call == ci) {
                        assert_int_equal(s, c->stream);
                        assert_int_equal(sched.streams[s][r].end, C);
                        records++;
                    }
            assert_int_equal(records, 1);
            int found = 0;
            for (int r = 0; r < sched.counts[c->stream]; r++) {
                const kc_tile_record *t = &sched.streams[c->stream][r];
                if (t->call != dw) continue;
                assert_int_equal(t->axis, 0);
                assert_int_equal(t->begin, k_next);
                assert_int_equal(t->end, k_next + a->c_in);
                found = 1;
            }
            assert_true(found);
            if (first_part < 0) first_part = ci;
            assert_int_equal(prog.phase_first[ci], first_part);
            k_next += a->c_in;
            parts++;
        }
        assert_int_equal(parts, P > 1 ? P : 0);
        assert_int_equal(adds, P > 1 ? P - 1 : 0);
        if (P > 1) assert_int_equal(k_next, E);
        plan_run_check(g, &prog, &sched, &d, P, x, sizeof x, y[P], C * H * H, P > 1 ? y[1] : NULL);
    }
}

/* The fire module's 1x1 after the Concat (32 -> 8 channels on 12x12), on P >= 2 streams: its
 * 3x3 branch is a single block of Winograd tiles, split along channels, so the 1x1 is summed
 * across the streams, each stream over the channels its tiles of both branches wrote (one
 * partial call a branch, the second adding the first), all in one phase, then P - 1 adds. With
 * a second reader of the Concat (a max pool) it is not. Both compute what one stream does. */
static void test_schedule_summed_concat(void **state) {
    (void)state;
    float x[16 * 12 * 12], y1[8 * 12 * 12], y[8 * 12 * 12];
    unsigned seed = 13;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = frand(&seed);
    for (int other_reader = 0; other_reader <= 1; other_reader++)
        for (int P = 1; P <= 3; P++) {
            kc_graph *g = fire_graph();
            if (other_reader) {
                int cat = -1, pooled = kc_add_value(g, "pooled");
                for (int v = 0; v < g->n_values; v++)
                    if (!strcmp(g->values[v].name, "cat")) cat = v;
                int mp = pg_node(g, KC_OP_MaxPool, 13, 1, (int[]){cat}, 1, (int[]){pooled});
                add_pair_attr(g, mp, "kernel_shape", 2);
                pg_output(g, pooled);
            }
            kc_diag d;
            kc_program prog;
            kc_schedule sched = {0};
            schedule_merged(g, P, &prog, &sched, &d);
            int adds = 0, first_part = -1, writers[2] = {-1, -1};
            uint32_t summed_channels = 0;
            for (int ci = 0; ci < prog.n_calls; ci++) {
                const kc_call *c = &prog.calls[ci];
                if (c->kernel == KANN_KERNEL_F32_BINARY) adds++;
                for (int w = 0; w < 2 && c->node >= 0; w++)
                    if (!strcmp(g->values[g->nodes[c->node].outputs[0]].name, w ? "e3" : "e1"))
                        writers[w] = ci;
                if (c->stream < 0) continue;
                /* a partial sum: its stream's channel tile of one branch */
                const kann_conv2d_packed_args *a = c->args;
                uint32_t channel = (uint32_t)(c->fixups[0].byte_offset / (12 * 12 * 4));
                int w = channel >= 16, found = 0;
                for (int r = 0; r < sched.counts[c->stream]; r++) {
                    const kc_tile_record *t = &sched.streams[c->stream][r];
                    if (t->call != writers[w]) continue;
                    assert_int_equal(t->axis, 0);
                    assert_int_equal(t->begin, channel - 16 * (uint32_t)w);
                    assert_int_equal(t->end - t->begin, a->c_in);
                    found = 1;
                }
                assert_true(found);
                if (first_part < 0) first_part = ci;
                assert_int_equal(prog.phase_first[ci], first_part);
                summed_channels += a->c_in;
            }
            int summed = P > 1 && !other_reader;
            assert_int_equal(summed_channels, summed ? 32 : 0);
            /* a stream's two partial sums, the second adding to the first's, never run apart */
            for (int s = 0; s < P; s++) {
                uint8_t *is_free = free_flags(g, &prog, &sched, s);
                int pinned = 0;
                for (int r = 0; r < sched.counts[s]; r++)
                    pinned += sched.streams[s][r].call >= 0 &&
                              prog.calls[sched.streams[s][r].call].stream == s;
                for (int r = 0; r < sched.counts[s] && pinned > 1; r++)
                    if (sched.streams[s][r].call >= 0 &&
                        prog.calls[sched.streams[s][r].call].stream == s)
                        assert_false(is_free[r]);
                free(is_free);
            }
            int n_free = count_free_records(g, &prog, &sched);
            assert_true(P > 1 ? n_free > 0 : n_free == 0);
            assert_int_equal(adds, summed ? P - 1 : 0);
            plan_run_check(g, &prog, &sched, &d, P, x, sizeof x, P > 1 ? y : y1, 8 * 12 * 12,
                           P > 1 ? y1 : NULL);
        }
}

/* A grouped 3x3 conv of G groups of 16 channels over a 7x7 map, as in a RegNet block, then a
 * 1x1 conv. On P >= 2 streams each group's call runs whole on one stream, consecutive groups on
 * each, all G in one phase after the input's padding and before the 1x1 conv; with under 8 a
 * stream the last G mod P (9 groups on 2 streams: the ninth) go in tiles over every stream in
 * that phase; with 3 groups on 2 streams (neither a multiple of P nor 4 a stream) all are cut
 * into tiles as before. At stride 2 (a RegNet stage's first block) every group
 * gathers its windows into a scratch of its own, one copy once trimmed. Every case computes
 * what one stream does. */
static void test_schedule_whole_groups(void **state) {
    (void)state;
    enum { H = 7, MAXG = 9 };
    static float w_g[MAXG * 16 * 16 * 9], w_p[16 * MAXG * 16], x[MAXG * 16 * H * H];
    static float y[4][16 * H * H];
    unsigned seed = 11;
    for (int i = 0; i < MAXG * 16 * H * H; i++)
        x[i] = frand(&seed);
    const int Gs[2] = {9, 3};
    for (int stride = 1; stride <= 2; stride++)
        for (int gi = 0; gi < 2; gi++) {
            int G = Gs[gi], C = G * 16, h_out = (H - 1) / stride + 1;
            for (int P = 1; P <= 3; P++) {
                kc_graph *g = graph_opset13();
                int in = pg_input(g, pg_value(g, "x", 4, 1, C, H, H));
                int gv = kc_add_value(g, "g"), out = kc_add_value(g, "y");
                add_conv(g, in, gv, C, C, 3, G, w_g);
                if (stride > 1) add_pair_attr(g, g->n_nodes - 1, "strides", stride);
                add_conv(g, gv, out, 16, C, 1, 1, w_p);
                pg_output(g, out);
                kc_diag d;
                kc_program prog;
                kc_schedule sched = {0};
                schedule_merged(g, P, &prog, &sched, &d);
                kc_schedule_trim_scratch(g, &prog, &sched);
                int whole = P > 1 && (G % P == 0 || G >= 4 * P);
                /* with few a stream, the last G mod P in tiles over all streams, in the phase */
                int n_whole = !whole ? 0 : G / P < 8 ? G - G % P : G;
                int groups = 0, first = -1, last_stream = 0, per_stream[3] = {0};
                int scratch[MAXG];
                for (int ci = 0; ci < prog.n_calls; ci++) {
                    const kc_call *c = &prog.calls[ci];
                    const kann_conv2d_packed_args *a = c->args;
                    if (c->kernel != KANN_KERNEL_F32_CONV2D_PACKED || a->k_h != 3) continue;
                    assert_int_equal(a->stride_h, stride);
                    const kc_fixup *f = &c->fixups[c->n_fixups - 1];
                    if (stride > 1) { /* the gathered windows: a value of the group's own */
                        assert_int_equal(f->field, offsetof(kann_conv2d_packed_args, scratch));
                        for (int k = 0; k < groups; k++)
                            assert_int_not_equal(scratch[k], f->value);
                        scratch[groups] = f->value;
                        if (whole) assert_int_equal(f->copies, 1);
                    }
                    if (groups++ >= n_whole) {
                        assert_int_equal(c->stream, -1);
                        if (whole) assert_int_equal(prog.phase_first[ci], first);
                        continue;
                    }
                    assert_true(c->stream >= last_stream && c->stream < P);
                    last_stream = c->stream;
                    per_stream[c->stream]++;
                    int records = 0;
                    for (int s = 0; s < P; s++)
                        for (int r = 0; r < sched.counts[s]; r++)
                            if (sched.streams[s][r].call == ci) {
                                assert_int_equal(s, c->stream);
                                records++;
                            }
                    assert_int_equal(records, 1);
                    if (first < 0) first = ci;
                    /* one phase for all groups, none of the calls before or after in it */
                    assert_int_equal(prog.phase_first[ci], first);
                }
                assert_int_equal(groups, G);
                /* the groups' records may run on any thread: calls of their own, each writing
                 * its own channels (and gathering into a scratch of its own) */
                for (int s = 0; s < P; s++) {
                    uint8_t *is_free = free_flags(g, &prog, &sched, s);
                    for (int r = 0; r < sched.counts[s]; r++) {
                        int ci = sched.streams[s][r].call;
                        const kann_conv2d_packed_args *a = ci < 0 ? NULL : prog.calls[ci].args;
                        if (ci >= 0 && prog.calls[ci].kernel == KANN_KERNEL_F32_CONV2D_PACKED &&
                            a->k_h == 3)
                            assert_int_equal(is_free[r], P > 1);
                    }
                    free(is_free);
                }
                count_free_records(g, &prog, &sched);
                if (whole) {
                    assert_int_equal(prog.phase_last[first], first + G - 1);
                    for (int s = 0; s < P; s++) /* n / P each, the extra ones on the last */
                        assert_int_equal(per_stream[s], n_whole / P + (s >= P - n_whole % P));
                }
                plan_run_check(g, &prog, &sched, &d, P, x, sizeof(float) * C * H * H, y[P],
                               16 * h_out * h_out, P > 1 ? y[1] : NULL);
            }
        }
}

/* A constant B of a MatMul (also batched) or a Gemm (also transposed) is copied: up to a panel
 * wide (64 columns), to rows an odd count of cache lines apart, the padding never read (N below
 * a line, on a whole odd count, on an even one); wider, to panels of 64 columns (N = 3072, 100
 * and 130: whole panels and a ragged last one). The product is what a naive loop computes, on
 * one and two streams. */
static void test_lower_weight_layout(void **state) {
    (void)state;
    enum { M = 5, K = 7, NMAX = 3072, BATCH = 2, FORMS = 6 };
    static float x[BATCH * M * K], w[BATCH * K * NMAX], y[BATCH * M * NMAX];
    static double want[BATCH * M * NMAX];
    unsigned seed = 3;
    for (int i = 0; i < BATCH * M * K; i++)
        x[i] = frand(&seed);
    for (int i = 0; i < BATCH * K * NMAX; i++)
        w[i] = frand(&seed);
    const uint32_t Ns[FORMS] = {3, 48, 64, NMAX, 100, 130};
    const uint32_t ld[FORMS] = {3, 48, 80, 64, 64, 64};
    const uint32_t panels[FORMS] = {0, 0, 0, NMAX / 64, 2, 3};
    for (int ni = 0; ni < FORMS; ni++)
        for (int form = 0; form < 4; form++) { /* MatMul, batched MatMul, Gemm, Gemm transB */
            uint32_t N = Ns[ni];
            int batch = form == 1 ? BATCH : 1, gemm = form >= 2, tb = form == 3;
            for (int P = 1; P <= 2; P++) {
                kc_graph *g = graph_opset13();
                int64_t wd[3] = {batch, tb ? N : K, tb ? K : N};
                int xi = pg_input(g, gemm ? pg_value(g, "x", 2, M, K)
                                          : pg_value(g, "x", 3, batch, M, K));
                int wi = pg_const(g, "w", gemm ? 2 : 3, gemm ? wd + 1 : wd, w);
                int out = kc_add_value(g, "y");
                int node = pg_node(g, gemm ? KC_OP_Gemm : KC_OP_MatMul, 13, 2, (int[]){xi, wi}, 1,
                                   (int[]){out});
                if (tb) kc_node_add_attr(g, node, "transB", KC_ATTR_INT)->i = 1;
                pg_output(g, out);
                kc_diag d;
                kc_program prog;
                kc_schedule sched = {0};
                schedule_merged(g, P, &prog, &sched, &d);
                assert_int_equal(prog.n_calls, 1);
                const kann_matmul_args *a = prog.calls[0].args;
                uint32_t panel = panels[ni] ? K * 64 : 0;
                assert_int_equal(a->b_row_stride, ld[ni]);
                assert_int_equal(a->b_col_stride, 1);
                assert_int_equal(a->b_panel_stride, panel);
                assert_int_equal(a->b_batch_stride, batch == 1 ? 0
                                                    : panel    ? panels[ni] * panel
                                                               : K * ld[ni]);
                for (int b = 0; b < batch; b++)
                    for (int i = 0; i < M; i++)
                        for (uint32_t j = 0; j < N; j++) {
                            double acc = 0;
                            for (int k = 0; k < K; k++)
                                acc += (double)x[(b * M + i) * K + k] *
                                       w[tb ? j * K + k : ((size_t)b * K + k) * N + j];
                            want[((size_t)b * M + i) * N + j] = acc;
                        }
                size_t n = (size_t)batch * M * N;
                kc_plan plan = {0};
                assert_int_equal(kc_plan_memory(g, &prog, &plan, &d), 0);
                kann_tensor meta;
                emit_load_run(g, &prog, &sched, &plan, P, x, sizeof(float) * batch * M * K, y,
                              n * sizeof(float), &meta);
                for (size_t i = 0; i < n; i++)
                    assert_true(fabs(y[i] - want[i]) <= 1e-5 * (1 + fabs(want[i])));
                kc_schedule_free(&sched);
                kc_program_free(&prog);
                kc_graph_free(g);
            }
        }
}

static void test_plan_never_overlaps_live_buffers(void **state) {
    (void)state;
    kc_graph *g = graph_opset13();
    int prev = pg_input(g, pg_value(g, "x", 2, 8, 100));
    int older = prev;
    unsigned seed = 5;
    for (int i = 0; i < 40; i++) {
        int y = pg_value(g, kc_sprintf(g, "v%d", i), 2, 8, 100);
        if (frand(&seed) > 0) pg_node(g, KC_OP_Add, 13, 2, (int[]){prev, older}, 1, (int[]){y});
        else pg_node(g, KC_OP_Mul, 13, 2, (int[]){prev, prev}, 1, (int[]){y});
        if (i % 3 == 0) older = prev;
        prev = y;
    }
    pg_output(g, prev);
    kc_diag d;
    kc_diag_init(&d, "chain", stderr);
    kc_program prog = {0};
    kc_plan plan = {0};
    assert_int_equal(kc_lower(g, &prog, &d), 0);
    assert_int_equal(kc_plan_memory(g, &prog, &plan, &d), 0);
    int first[64], last[64];
    for (int v = 0; v < g->n_values; v++) {
        first[v] = INT32_MAX;
        last[v] = -1;
    }
    for (int c = 0; c < prog.n_calls; c++)
        for (int f = 0; f < prog.calls[c].n_fixups; f++) {
            int v = prog.calls[c].fixups[f].value;
            if (c < first[v]) first[v] = c;
            if (c > last[v]) last[v] = c;
        }
    first[g->inputs[0]] = -1; /* inputs stay intact through the run */
    last[g->inputs[0]] = prog.n_calls;
    last[g->outputs[0]] = prog.n_calls;
    uint64_t total = 0;
    for (int a = 0; a < g->n_values; a++) {
        if (first[a] == INT32_MAX) continue;
        assert_true(g->values[a].offset >= 0);
        assert_int_equal(g->values[a].offset % 64, 0);
        assert_true((uint64_t)g->values[a].offset + 3200 <= plan.arena_size);
        total += 3200;
        for (int b = a + 1; b < g->n_values; b++) {
            if (first[b] == INT32_MAX || last[a] < first[b] || last[b] < first[a]) continue;
            int64_t oa = g->values[a].offset, ob = g->values[b].offset;
            assert_true(oa + 3200 <= ob || ob + 3200 <= oa);
        }
    }
    assert_true(plan.arena_size * 4 < total);
    kc_program_free(&prog);
    kc_graph_free(g);
}

/* Lowering reports every node it cannot run, each by name, in one run. */
/* The kernel of node id's calls, pad2d left out: all of one kernel (else -1). */
static int node_kernel(const kc_program *p, int id) {
    int kernel = -1;
    for (int i = 0; i < p->n_calls; i++)
        if (p->calls[i].node == id && p->calls[i].kernel != KANN_KERNEL_F32_PAD2D) {
            if (kernel >= 0 && p->calls[i].kernel != kernel) return -1;
            kernel = p->calls[i].kernel;
        }
    return kernel;
}

/* What --tune's bookkeeping notes of a lowering (kc_program.pick_options, picked, pick_leader),
 * and what it asked. */
typedef struct picks_run {
    kc_node_picks *ask, *took;
    uint16_t *ways;
    int *leader;
} picks_run;

/* g lowered on P streams (the cost model's fusions: KC_FUSE_LANES) into *prog, every node asked
 * ask; the notes into *r, freed by picks_free. */
static void lower_picked(kc_graph *g, int P, kc_node_picks ask, kc_program *prog, kc_diag *d,
                         picks_run *r) {
    size_t n = (size_t)g->n_nodes;
    r->ask = calloc(n, sizeof *r->ask);
    r->took = calloc(n, sizeof *r->took);
    r->ways = calloc(n, sizeof *r->ways);
    r->leader = calloc(n, sizeof *r->leader);
    assert_true(r->ask && r->took && r->ways && r->leader);
    for (size_t i = 0; i < n; i++)
        r->ask[i] = ask;
    kc_diag_init(d, "net", stderr);
    kc_stats st = {0};
    memset(prog, 0, sizeof *prog);
    prog->streams = P;
    prog->fuse_blocks = KC_FUSE_LANES;
    prog->picks = r->ask;
    prog->n_pick_nodes = g->n_nodes;
    prog->pick_options = r->ways;
    prog->picked = r->took;
    prog->pick_leader = r->leader;
    assert_int_equal(middle(g, d, &st), 0);
    assert_int_equal(kc_lower(g, prog, d), 0);
}

static void picks_free(picks_run *r) {
    free(r->ask);
    free(r->took);
    free(r->ways);
    free(r->leader);
}

/* kann-c --tune's picks (kc_program.picks): a 3x3 conv over a 7x7 map (the cost model: Winograd
 * F(2x2)) and the 1x1 conv after it (32 channels: conv2d_packed) each lower as asked where the
 * pick applies to them, the cost model choosing where it does not; the lowering notes what each
 * could take and what it took; every way computes what the cost model's does, on one stream
 * and on two. */
static void test_lower_picks(void **state) {
    (void)state;
    enum { C = 32, N = 7 };
    static float w1[C * C * 9], w2[C * C], x[C * N * N], y[KC_PICK_LANES + 1][2][C * N * N];
    unsigned seed = 13;
    for (int i = 0; i < C * N * N; i++)
        x[i] = frand(&seed);
    /* per pick asked of every conv: what the 3x3 conv and the 1x1 conv take */
    static const kc_pick took3[KC_PICK_LANES + 1] = {
        KC_PICK_WINO_F2, KC_PICK_PACKED, KC_PICK_WINO_F2, KC_PICK_WINO_F4, KC_PICK_WINO_F2};
    static const kc_pick took1[KC_PICK_LANES + 1] = {KC_PICK_PACKED, KC_PICK_PACKED, KC_PICK_PACKED,
                                                     KC_PICK_PACKED, KC_PICK_LANES};
    for (int k = 0; k <= KC_PICK_LANES; k++)
        for (int P = 1; P <= 2; P++) {
            kc_graph *g = graph_opset13();
            int in = pg_input(g, pg_value(g, "x", 4, 1, C, N, N)), mid = kc_add_value(g, "mid"),
                out = kc_add_value(g, "y");
            add_conv(g, in, mid, C, C, 3, 1, w1);
            int conv3 = g->n_nodes - 1;
            add_conv(g, mid, out, C, C, 1, 1, w2);
            int conv1 = g->n_nodes - 1;
            pg_output(g, out);
            kc_diag d;
            kc_program prog;
            picks_run r;
            lower_picked(g, P, (kc_node_picks){(uint8_t)k, 0}, &prog, &d, &r);
            const uint16_t *ways = r.ways;
            const kc_node_picks *took = r.took;
            assert_int_equal(ways[conv3],
                             1u << KC_PICK_PACKED | 1u << KC_PICK_WINO_F2 | 1u << KC_PICK_WINO_F4);
            assert_int_equal(ways[conv1], 1u << KC_PICK_PACKED | 1u << KC_PICK_LANES);
            assert_int_equal(took[conv3].way, took3[k]);
            assert_int_equal(node_kernel(&prog, conv3), took3[k] == KC_PICK_PACKED
                                                            ? KANN_KERNEL_F32_CONV2D_PACKED
                                                            : KANN_KERNEL_F32_CONV2D_WINOGRAD);
            for (int i = 0; i < prog.n_calls; i++)
                if (prog.calls[i].kernel == KANN_KERNEL_F32_CONV2D_WINOGRAD)
                    assert_int_equal(
                        ((const kann_conv2d_winograd_args *)prog.calls[i].args)->transform,
                        took3[k] == KC_PICK_WINO_F4 ? KANN_WINO_F4X4 : KANN_WINO_F2X2);
            if (P == 1) { /* on two streams the 1x1 conv may run as partial sums */
                assert_int_equal(took[conv1].way, took1[k]);
                assert_int_equal(node_kernel(&prog, conv1), took1[k] == KC_PICK_LANES
                                                                ? KANN_KERNEL_F32_POINTWISE_LANES
                                                                : KANN_KERNEL_F32_CONV2D_PACKED);
            }
            kc_schedule sched = {0};
            schedule_lowered(g, P, &prog, &sched, &d);
            kc_schedule_trim_scratch(g, &prog, &sched);
            plan_run_check(g, &prog, &sched, &d, P, x, sizeof x, y[k][P - 1], C * N * N,
                           k == 0 && P == 1 ? NULL : y[0][0]);
            picks_free(&r);
        }
}

/* The fusions --tune weighs (kc_node_picks.fusion): an inverted residual block over a 56x56 map
 * (1x1 16 -> 96, depthwise 3x3, 1x1 96 -> 16), which the cost model runs as one f32_dwblock
 * record, lowers so when asked FUSED and as three calls when asked APART; its expansion is
 * noted as leading the other two (apart, the depthwise conv leads the projection); every way
 * computes what the fused one does, on one stream and on two. */
static void test_lower_fusion_picks(void **state) {
    (void)state;
    enum { C = 16, E = 96, H = 56 };
    static float w_e[E * C], w_d[E * 9], w_p[C * E], x[C * H * H], y[3][2][C * H * H];
    unsigned seed = 17;
    for (int i = 0; i < C * H * H; i++)
        x[i] = frand(&seed);
    static const kc_pick asks[3] = {KC_PICK_AUTO, KC_PICK_FUSED, KC_PICK_APART};
    for (int k = 0; k < 3; k++)
        for (int P = 1; P <= 2; P++) {
            kc_graph *g = graph_opset13();
            int in = pg_input(g, pg_value(g, "x", 4, 1, C, H, H)), e = kc_add_value(g, "e"),
                dwv = kc_add_value(g, "d"), out = kc_add_value(g, "y");
            add_conv(g, in, e, E, C, 1, 1, w_e);
            int expand = g->n_nodes - 1;
            add_conv(g, e, dwv, E, E, 3, E, w_d);
            int dw = g->n_nodes - 1;
            add_conv(g, dwv, out, C, E, 1, 1, w_p);
            int project = g->n_nodes - 1;
            pg_output(g, out);
            kc_diag d;
            kc_program prog;
            picks_run r;
            lower_picked(g, P, (kc_node_picks){0, (uint8_t)asks[k]}, &prog, &d, &r);
            const uint16_t *ways = r.ways;
            const kc_node_picks *took = r.took;
            const int *leader = r.leader;
            int fused = asks[k] != KC_PICK_APART;
            assert_int_equal(ways[expand] & (1u << KC_PICK_FUSED | 1u << KC_PICK_APART),
                             1u << KC_PICK_FUSED | 1u << KC_PICK_APART);
            assert_int_equal(took[expand].fusion, fused ? KC_PICK_FUSED : KC_PICK_APART);
            assert_int_equal(leader[dw], expand + 1);
            assert_int_equal(leader[expand], 0);
            /* apart, the depthwise conv and the projection are a block of their own, asked
             * apart too */
            assert_int_equal(leader[project], fused ? expand + 1 : dw + 1);
            if (!fused) assert_int_equal(took[dw].fusion, KC_PICK_APART);
            assert_int_equal(node_kernel(&prog, expand),
                             fused ? KANN_KERNEL_F32_DWBLOCK : KANN_KERNEL_F32_CONV2D_PACKED);
            assert_int_equal(node_kernel(&prog, dw), fused ? -1 : KANN_KERNEL_F32_DWCONV2D);
            if (P == 1)
                assert_int_equal(node_kernel(&prog, project),
                                 fused ? -1 : KANN_KERNEL_F32_CONV2D_PACKED);
            kc_schedule sched = {0};
            schedule_lowered(g, P, &prog, &sched, &d);
            kc_schedule_trim_scratch(g, &prog, &sched);
            plan_run_check(g, &prog, &sched, &d, P, x, sizeof x, y[k][P - 1], C * H * H,
                           k == 0 && P == 1 ? NULL : y[0][0]);
            picks_free(&r);
        }
}

/* A 3x3 stride-1 conv of 32 channels (padding 1) goes through Winograd from one full vector of
 * F(2x2) tiles (16: a 7x7 map) and stays direct below (a 6x6 map's 9); F(4x4) only from 32
 * F(2x2) tiles (an 11x11 map's 36; a 10x10 map's 9 tiles of F(4x4) would fill half a vector).
 * The 7x7 one computes the conv on one stream and on two (split along output channels: its 16
 * tiles are one block). */
static void test_lower_winograd_tiles(void **state) {
    (void)state;
    enum { C = 32 };
    static const struct {
        int map, kernel, transform;
    } cases[] = {{6, KANN_KERNEL_F32_CONV2D_PACKED, -1},
                 {7, KANN_KERNEL_F32_CONV2D_WINOGRAD, KANN_WINO_F2X2},
                 {10, KANN_KERNEL_F32_CONV2D_WINOGRAD, KANN_WINO_F2X2},
                 {11, KANN_KERNEL_F32_CONV2D_WINOGRAD, KANN_WINO_F4X4}};
    static float w[C * C * 9], x[C * 7 * 7], y[2][C * 7 * 7];
    unsigned seed = 11;
    for (int i = 0; i < C * 7 * 7; i++) x[i] = frand(&seed);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int P = 1; P <= 2; P++) {
            int n = cases[k].map;
            kc_graph *g = graph_opset13();
            int in = pg_input(g, pg_value(g, "x", 4, 1, C, n, n)), out = kc_add_value(g, "y");
            add_conv(g, in, out, C, C, 3, 1, w);
            pg_output(g, out);
            kc_diag d;
            kc_program prog;
            kc_schedule sched = {0};
            kc_plan plan = {0};
            lower_for(g, P, &prog, &d);
            /* Winograd reads its padding in place; the direct conv may pad x first */
            const kc_call *conv = &prog.calls[prog.n_calls - 1];
            assert_int_equal(conv->kernel, cases[k].kernel);
            if (cases[k].transform >= 0) {
                assert_int_equal(prog.n_calls, 1);
                assert_int_equal(((const kann_conv2d_winograd_args *)conv->args)->transform,
                                 cases[k].transform);
            }
            if (n == 7) {
                assert_int_equal(kc_schedule_program(g, &prog, P, &sched, &d), 0);
                kc_schedule_merge_phases(g, &prog, &sched);
                kc_schedule_trim_scratch(g, &prog, &sched);
                if (P == 2) assert_int_equal(tile_axis(&sched, 0), 0);
                assert_int_equal(kc_plan_memory(g, &prog, &plan, &d), 0);
                kann_tensor t;
                float *got = y[P - 1];
                emit_load_run(g, &prog, &sched, &plan, P, x, sizeof x, got, sizeof y[0], &t);
                for (int m = 0; m < C; m++)
                    for (int i = 0; i < n; i++)
                        for (int j = 0; j < n; j++) {
                            double ref = 0;
                            for (int c = 0; c < C; c++)
                                for (int a = 0; a < 3; a++)
                                    for (int b = 0; b < 3; b++) {
                                        int r = i + a - 1, q = j + b - 1;
                                        if (r >= 0 && r < n && q >= 0 && q < n)
                                            ref += (double)w[((m * C + c) * 3 + a) * 3 + b] *
                                                   x[(c * n + r) * n + q];
                                    }
                            double out = got[(m * n + i) * n + j];
                            assert_true(fabs(out - ref) <= 1e-5 * (1 + fabs(ref)));
                        }
                kc_schedule_free(&sched);
            }
            kc_program_free(&prog);
            kc_graph_free(g);
        }
}

static void test_lower_reports_every_problem(void **state) {
    (void)state;
    kc_graph *g = kc_graph_new();
    int x = pg_input(g, pg_value(g, "x", 4, 1, 2, 4, 4));
    int w = pg_input(g, pg_value(g, "w_int64", 4, 2, 2, 1, 1));
    g->values[w].dtype = KC_DTYPE_INT64;
    int y1 = pg_value(g, "y1", 4, 1, 2, 4, 4);
    int x3 = pg_input(g, pg_value(g, "x3", 6, 1, 2, 4, 4, 4, 4));
    float wdata[2 * 2 * 1 * 1 * 1 * 1] = {1, 2, 3, 4};
    int w3 = pg_const(g, "w3", 6, (int64_t[]){2, 2, 1, 1, 1, 1}, wdata);
    int y2 = pg_value(g, "y2", 6, 1, 2, 4, 4, 4, 4);
    pg_node(g, KC_OP_Conv, 13, 2, (int[]){x, w}, 1, (int[]){y1});
    pg_node(g, KC_OP_Conv, 13, 2, (int[]){x3, w3}, 1, (int[]){y2});
    pg_output(g, y1);
    pg_output(g, y2);
    char buf[4096] = {0};
    FILE *mem = fmemopen(buf, sizeof buf - 1, "w");
    kc_diag d;
    kc_diag_init(&d, "bad", mem);
    kc_program prog = {0};
    assert_int_equal(kc_lower(g, &prog, &d), 2);
    fclose(mem);
    assert_non_null(strstr(buf, "w_int64"));
    assert_non_null(strstr(buf, "only float32"));
    assert_non_null(strstr(buf, "rank 3 to 5"));
    kc_program_free(&prog);
    kc_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compile_load_run_any_stream_count),
        cmocka_unit_test(test_schedule_tiles_partition_each_call),
        cmocka_unit_test(test_schedule_cost_model),
        cmocka_unit_test(test_schedule_merges_independent_phases),
        cmocka_unit_test(test_schedule_private_scratch),
        cmocka_unit_test(test_schedule_summed_pointwise),
        cmocka_unit_test(test_schedule_summed_concat),
        cmocka_unit_test(test_schedule_whole_groups),
        cmocka_unit_test(test_lower_weight_layout),
        cmocka_unit_test(test_plan_never_overlaps_live_buffers),
        cmocka_unit_test(test_lower_winograd_tiles),
        cmocka_unit_test(test_lower_picks),
        cmocka_unit_test(test_lower_fusion_picks),
        cmocka_unit_test(test_lower_reports_every_problem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
