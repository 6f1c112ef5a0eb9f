/* libFuzzer target: the ONNX protobuf importer and the whole compile pipeline behind it, in
 * kann-c's order (compiler/main.c): import, check, shapes & constants, simplify, fold, fuse,
 * lower, schedule, plan, emit. A model that compiles is then loaded and run once. Findings:
 * any crash or sanitizer report, a graph the verifier rejects after a pass that succeeded, an
 * emitted model.bin that the loader refuses or that fails to run, and a refusal without a
 * message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kann_host.h"
#include "lower.h"
#include "passes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Compiled models are emitted and run only up to this much memory: the fuzzer's memory limit
 * is about the fuzzer, not the model. */
#define FUZZ_MAX_MODEL_BYTES ((uint64_t)64 << 20)

static FILE *diag_sink;
static char out_path[512];

static void init_once(void) {
    if (diag_sink) return;
    /* KANN_FUZZ_VERBOSE=1 shows the compiler's messages when reproducing a finding. */
    const char *verbose = getenv("KANN_FUZZ_VERBOSE");
    diag_sink = verbose && *verbose == '1' ? stderr : fopen("/dev/null", "w");
    if (!diag_sink) abort();
    const char *dir = getenv("TMPDIR");
    snprintf(out_path, sizeof out_path, "%s/fuzz_onnx_import.%ld.bin", dir && *dir ? dir : "/tmp",
             (long)getpid());
}

/* The graph must stay consistent after every pass that reported no error. */
static void verify_or_trap(const kc_graph *g, kc_diag *d) {
    if (kc_verify(g, d)) __builtin_trap();
}

/* An emitted model must open and run. */
static void load_and_run(const char *path) {
    kann_host_file f;
    kann_error e;
    if (kann_host_file_load(path, &f, &e) != KANN_OK) __builtin_trap();
    kann_model m;
    if (kann_model_open(&m, f.data, f.size, &e) != KANN_OK) __builtin_trap();
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(&m));
    if (!arena) __builtin_trap();
    kann_session s;
    if (kann_session_init(&s, &m, arena, (size_t)kann_model_arena_size(&m), &e) != KANN_OK)
        __builtin_trap();
    for (uint32_t i = 0; i < kann_model_n_inputs(&m); i++) {
        kann_tensor t;
        if (kann_session_input(&s, i, &t) == KANN_OK) memset(t.data, 0x3e, t.size);
    }
    if (kann_session_run(&s, &e) != KANN_OK) __builtin_trap();
    kann_host_arena_free(arena);
    kann_host_file_free(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    init_once();
    kc_diag d;
    kc_diag_init(&d, "fuzz.onnx", diag_sink);
    kc_stats st = {0};
    kc_program prog = {0};
    kc_schedule sched = {0};
    kc_plan plan = {0};
    kc_graph *g = kc_graph_new();
    int cores = 1 + (int)(size % 3); /* vary the schedule without spending input bytes */

    /* No path: external data cannot name files on this machine. */
    if (kc_import_onnx_bytes(g, data, size, NULL, &d, &st)) goto done;
    verify_or_trap(g, &d);
    if (kc_check_supported(g, &d)) goto done;
    if (kc_pass_shapes_constants(g, NULL, 0, &d, &st)) goto done;
    verify_or_trap(g, &d);
    if (kc_pass_simplify(g, &d, &st)) goto done;
    verify_or_trap(g, &d);
    if (kc_pass_fold_bn(g, &d, &st)) goto done;
    verify_or_trap(g, &d);
    if (kc_pass_fuse(g, &d, &st)) goto done;
    verify_or_trap(g, &d);
    if (kc_lower(g, &prog, &d)) goto done;
    if (kc_schedule_program(g, &prog, cores, &sched, &d)) goto done;
    kc_schedule_merge_phases(g, &prog, &sched);
    kc_schedule_trim_scratch(g, &prog, &sched);
    if (kc_plan_memory(g, &prog, &plan, &d)) goto done;
    if (plan.arena_size > FUZZ_MAX_MODEL_BYTES || plan.const_size > FUZZ_MAX_MODEL_BYTES) goto done;
    kc_emit_options eo = {"fuzz.onnx", "0", "", "cpu"};
    /* The emitter refuses what model.bin cannot describe (an input dtype, a rank), and checks
     * its output with the loader: a refusal of the latter kind is an internal error, which
     * the fuzzer makes a finding. */
    char *messages = NULL;
    size_t messages_size = 0;
    FILE *emit_diag = open_memstream(&messages, &messages_size);
    if (!emit_diag) abort();
    d.out = emit_diag;
    int emit_errors = kc_emit_model(g, &prog, &sched, &plan, out_path, &eo, &d);
    fclose(emit_diag);
    d.out = diag_sink;
    if (diag_sink == stderr && messages_size) fputs(messages, stderr);
    if (emit_errors && (!messages_size || strstr(messages, "internal error"))) __builtin_trap();
    free(messages);
    if (!emit_errors) {
        load_and_run(out_path);
        unlink(out_path);
    }
done:
    kc_schedule_free(&sched);
    kc_program_free(&prog);
    kc_graph_free(g);
    return 0;
}
