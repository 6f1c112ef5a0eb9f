/* kann-c: compiles an ONNX model into a model.bin record stream. main() reads as the pipeline:
 * import, check, shapes & constants, simplify, fold, fuse, lower, schedule, plan, emit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kann_kernels.h"
#include "lower.h"
#include "passes.h"
#include "text.h"
#include "tune.h"

enum exit_code {
    EXIT_OK = 0,
    EXIT_REJECTED = 1, /* the model is invalid or uses something unsupported */
    EXIT_USAGE = 2,
    EXIT_IO = 3, /* cannot read the input or write the output */
};

typedef struct options {
    const char *input;
    const char *output;
    int cores;
    kc_shape_binding bindings[16];
    int n_bindings;
    const char *dump_after; /* pass name, or "all" */
    int quiet;
    uint64_t max_memory; /* --max-memory: largest arena and weights accepted; 0 = no limit */
    int fuse_blocks;     /* --fuse-blocks */
    const char *target;  /* --target: cpu (default) or opencl */
    int print; /* --print: the model as text on stdout, no compile */
    const char *save_onnx; /* --save-onnx FILE: the model as protobuf, no compile */
    int emit_c; /* --emit c */
    int tune;   /* --tune */
    const char *c_prefix, *c_weights_blob;
    char cmdline[1024];
} options;

static void usage(FILE *out) {
    fprintf(out,
            "usage: kann-c MODEL.onnx -o MODEL.bin [options]\n"
            "\n"
            "Compiles an ONNX model into a static record stream for the kann runtime.\n"
            "\n"
            "options:\n"
            "  -o, --output FILE          the model.bin to write (required)\n"
            "  --cores P                  record streams to schedule for (default: online CPUs)\n"
            "  --input-shape NAME=DIMS    bind an input's shape, e.g. input=1x3x224x224\n"
            "                             (repeatable; a leading unknown dim defaults to 1)\n"
            "  --dump-after PASS          print the graph after PASS (import, shapes, simplify,\n"
            "                             fold, fuse, or all)\n"
            "  --list-ops[=markdown]      print the supported operators (opsets, element types,\n"
            "                             attributes) and exit\n"
            "  --emit bin|c               write model.bin (default), or C source for firmware:\n"
            "                             OUT.c and OUT.h (docs/firmware.md)\n"
            "  --c-prefix NAME            prefix of the C symbols (default: OUT's base name)\n"
            "  --c-weights-blob FILE      with --emit c: the weights go to FILE, included by\n"
            "                             the assembler (.incbin), not as C arrays\n"
            "  --print                    print the model (text or .onnx) in the ONNX text syntax\n"
            "  --save-onnx FILE           write the model (text or .onnx) as a binary .onnx\n"
            "  --max-memory BYTES         refuse a model whose arena or weights exceed BYTES\n"
            "                             (suffix K, M or G: binary multiples)\n"
            "  --target cpu|opencl        the backend to tune for (default cpu; the model runs\n"
            "                             on either): cpu runs each inverted residual block over\n"
            "                             large maps with at most 64 input channels, and each\n"
            "                             1x1 conv with the global average pool after it, as one\n"
            "                             record (faster on a CPU, slower on OpenCL devices)\n"
            "  --fuse-blocks              run every inverted residual block over large maps as\n"
            "                             one record, band by band: a smaller arena (its inner\n"
            "                             maps never stored whole), about the same speed on a\n"
            "                             CPU, slower on OpenCL devices (docs/performance.md)\n"
            "  --tune                     measure, on this machine's CPU, the ways each conv\n"
            "                             could lower (packed GEMM, Winograd F(2x2) or F(4x4),\n"
            "                             channels in the lanes) and the fusions it could\n"
            "                             lead (fused or apart), and keep the fastest where it\n"
            "                             beats the cost model's choice by 5 %%, if the whole\n"
            "                             model then runs faster (a few seconds more;\n"
            "                             docs/performance.md)\n"
            "  -q, --quiet                no compile summary or notes\n"
            "  -h, --help                 this help\n"
            "  --version                  print the version\n"
            "\n"
            "exit status: 0 compiled, 1 model rejected (invalid or unsupported), 2 usage error,\n"
            "3 input unreadable or output unwritable\n");
}

static int by_op_name(const void *a, const void *b) {
    return strcmp(kc_ops[*(const int *)a].name, kc_ops[*(const int *)b].name);
}

/* The op table, sorted by name: as text, or as the Markdown of docs/ops.md. */
static void list_ops(int markdown) {
    int order[KC_OP_COUNT];
    int n = 0;
    for (int i = 1; i < KC_OP_COUNT; i++) order[n++] = i;
    qsort(order, (size_t)n, sizeof order[0], by_op_name);
    if (markdown) {
        printf("# Supported operators\n\n"
               "Generated by `kann-c --list-ops=markdown` from the op table "
               "(`compiler/ops.def`); do not edit.\n"
               "All are in the default ONNX domain (`ai.onnx`). Attributes not listed for an op "
               "are refused with a diagnostic naming the node.\n\n"
               "%d operators.\n\n"
               "| operator | opsets | attributes | element types |\n|---|---|---|---|\n", n);
        for (int k = 0; k < n; k++) {
            const kc_op_info *op = &kc_ops[order[k]];
            printf("| %s | %d–%d | %s | %s |\n", op->name, op->min_opset, op->max_opset,
                   op->attrs[0] ? op->attrs : "–", op->dtypes);
        }
        return;
    }
    printf("%-26s %-8s %-36s %s\n", "operator", "opsets", "element types", "attributes");
    for (int k = 0; k < n; k++) {
        const kc_op_info *op = &kc_ops[order[k]];
        printf("%-26s %d-%-6d %-36s %s\n", op->name, op->min_opset, op->max_opset, op->dtypes,
               op->attrs[0] ? op->attrs : "-");
    }
}

/* NAME=1x3x224x224 */
static int parse_binding(const char *arg, kc_shape_binding *b) {
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg) return -1;
    b->name = strndup(arg, (size_t)(eq - arg));
    b->rank = 0;
    const char *p = eq + 1;
    if (!*p) return 0; /* a scalar */
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 0 || b->rank == KC_MAX_RANK) return -1;
        b->dims[b->rank++] = v;
        if (*end == 0) return 0;
        if (*end != 'x' && *end != 'X' && *end != ',') return -1;
        p = end + 1;
    }
}

/* 65536, 512K, 64M, 2G (binary multiples); at least 1. */
static int parse_bytes(const char *arg, uint64_t *bytes) {
    char *end;
    errno = 0;
    if (*arg < '0' || *arg > '9') return -1;
    unsigned long long v = strtoull(arg, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k') shift = 10;
    else if (*end == 'M' || *end == 'm') shift = 20;
    else if (*end == 'G' || *end == 'g') shift = 30;
    if (shift) end++;
    if (errno || *end || v == 0 || v > (UINT64_MAX >> shift)) return -1;
    *bytes = (uint64_t)v << shift;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->cores = n > 0 ? (int)n : 1;
    o->target = "cpu";
    size_t at = 0;
    /* The command line, recorded in the model's metadata (truncated if very long). */
    for (int i = 1; i < argc && at < sizeof o->cmdline - 1; i++)
        at += (size_t)snprintf(o->cmdline + at, sizeof o->cmdline - at, "%s%s", i > 1 ? " " : "",
                               argv[i]);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
#define TAKE(flag)                                                                                \
    (strcmp(a, flag) == 0 ? (i + 1 < argc ? (val = argv[++i], 1) : -1)                             \
                          : (strncmp(a, flag "=", sizeof(flag)) == 0 ? (val = a + sizeof(flag), 1) : 0))
        int t;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(EXIT_OK);
        } else if (!strcmp(a, "--version")) {
            printf("kann-c %s\n", KC_VERSION);
            exit(EXIT_OK);
        } else if (!strcmp(a, "--list-ops") || !strcmp(a, "--list-ops=markdown")) {
            list_ops(a[10] == '=');
            exit(EXIT_OK);
        } else if (!strcmp(a, "--print")) {
            o->print = 1;
        } else if ((t = TAKE("--save-onnx"))) {
            if (t < 0) goto missing;
            o->save_onnx = val;
        } else if (!strcmp(a, "--tune")) {
            o->tune = 1;
        } else if (!strcmp(a, "--fuse-blocks")) {
            o->fuse_blocks = 1;
        } else if ((t = TAKE("--target"))) {
            if (t < 0) goto missing;
            if (strcmp(val, "cpu") && strcmp(val, "opencl")) {
                fprintf(stderr, "kann-c: error: --target takes cpu or opencl, not '%s'\n", val);
                return -1;
            }
            o->target = val;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if ((t = TAKE("-o")) || (t = TAKE("--output"))) {
            if (t < 0) goto missing;
            o->output = val;
        } else if ((t = TAKE("--cores"))) {
            char *end;
            if (t < 0) goto missing;
            long p = strtol(val, &end, 10);
            if (*end || p < 1 || p > 256) {
                fprintf(stderr, "kann-c: error: --cores takes a number from 1 to 256, not '%s'\n", val);
                return -1;
            }
            o->cores = (int)p;
        } else if ((t = TAKE("--input-shape"))) {
            if (t < 0) goto missing;
            if (o->n_bindings == (int)(sizeof o->bindings / sizeof o->bindings[0]) ||
                parse_binding(val, &o->bindings[o->n_bindings])) {
                fprintf(stderr, "kann-c: error: bad --input-shape '%s' (expected NAME=1x3x224x224)\n", val);
                return -1;
            }
            o->n_bindings++;
        } else if ((t = TAKE("--emit"))) {
            if (t < 0) goto missing;
            if (strcmp(val, "bin") && strcmp(val, "c")) {
                fprintf(stderr, "kann-c: error: --emit takes bin or c, not '%s'\n", val);
                return -1;
            }
            o->emit_c = !strcmp(val, "c");
        } else if ((t = TAKE("--c-prefix"))) {
            if (t < 0) goto missing;
            static const char ident[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
                                        "0123456789";
            if (!*val || strspn(val, ident) != strlen(val) || (*val >= '0' && *val <= '9')) {
                fprintf(stderr, "kann-c: error: --c-prefix '%s' is not a C identifier\n", val);
                return -1;
            }
            o->c_prefix = val;
        } else if ((t = TAKE("--c-weights-blob"))) {
            if (t < 0) goto missing;
            o->c_weights_blob = val;
        } else if ((t = TAKE("--max-memory"))) {
            if (t < 0) goto missing;
            if (parse_bytes(val, &o->max_memory)) {
                fprintf(stderr, "kann-c: error: --max-memory takes a size such as 65536, 512K, 64M "
                                "or 2G, not '%s'\n", val);
                return -1;
            }
        } else if ((t = TAKE("--dump-after"))) {
            if (t < 0) goto missing;
            o->dump_after = val;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "kann-c: error: unknown option '%s'\n", a);
            return -1;
        } else if (!o->input) {
            o->input = a;
        } else {
            fprintf(stderr, "kann-c: error: more than one input model ('%s', '%s')\n", o->input, a);
            return -1;
        }
        continue;
    missing:
        fprintf(stderr, "kann-c: error: option '%s' needs a value\n", a);
        return -1;
#undef TAKE
    }
    if (o->tune && !strcmp(o->target, "opencl")) {
        fprintf(stderr, "kann-c: error: --tune measures this machine's CPU kernels; it does not "
                        "tune for --target opencl\n");
        return -1;
    }
    if ((o->c_prefix || o->c_weights_blob) && !o->emit_c) {
        fprintf(stderr, "kann-c: error: --c-prefix and --c-weights-blob need --emit c\n");
        return -1;
    }
    if (!o->input || (!o->output && !o->print && !o->save_onnx)) {
        fprintf(stderr, "kann-c: error: %s\n", !o->input ? "no input model given" : "no output file given (-o)");
        return -1;
    }
    return 0;
}

/* FNV-1a 64 of a file, as hex, to record which source a model.bin came from. */
static void hash_file(const char *path, char *hex, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    FILE *f = fopen(path, "rb");
    if (f) {
        unsigned char buf[65536];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0)
            for (size_t i = 0; i < got; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
        fclose(f);
    }
    snprintf(hex, n, "%016llx", (unsigned long long)h);
}

/* Verifies the graph after a pass (every pass in debug builds) and dumps it when asked. */
static int after(const char *pass, kc_graph *g, const options *o, kc_diag *d) {
    if (o->dump_after && (!strcmp(o->dump_after, pass) || !strcmp(o->dump_after, "all"))) {
        printf("=== after %s ===\n", pass);
        kc_dump(g, stdout);
    }
#ifndef NDEBUG
    if (kc_verify(g, d)) {
        kc_error(d, "internal error: the graph is inconsistent after %s", pass);
        return 1;
    }
#else
    (void)d;
#endif
    return 0;
}

static void human_bytes(uint64_t n, char *buf, size_t size) {
    if (n >= 1 << 20)
        snprintf(buf, size, "%.2f MiB", (double)n / (1 << 20));
    else if (n >= 1 << 10)
        snprintf(buf, size, "%.1f KiB", (double)n / (1 << 10));
    else
        snprintf(buf, size, "%llu B", (unsigned long long)n);
}

/* --max-memory: the arena and the weights must each fit in the limit. */
static int over_memory_limit(const options *o, const char *what, uint64_t bytes, kc_diag *d) {
    if (!o->max_memory || bytes <= o->max_memory) return 0;
    char need[32], limit[32];
    human_bytes(bytes, need, sizeof need);
    human_bytes(o->max_memory, limit, sizeof limit);
    kc_error(d, "the model needs %s of %llu bytes (%s), more than --max-memory %llu (%s)", what,
             (unsigned long long)bytes, need, (unsigned long long)o->max_memory, limit);
    return 1;
}

static void summary(const options *o, const kc_graph *g, const kc_stats *st, const kc_program *p,
                    const kc_schedule *s, const kc_plan *plan) {
    int per_kernel[KANN_KERNEL_COUNT] = {0};
    double macs = 0;
    int records = 0;
    for (int i = 0; i < p->n_calls; i++) {
        per_kernel[p->calls[i].kernel]++;
        macs += p->calls[i].macs;
    }
    for (int i = 0; i < s->n_streams; i++) records += s->counts[i];
    char arena[32], weights[32];
    human_bytes(plan->arena_size, arena, sizeof arena);
    human_bytes(plan->const_size, weights, sizeof weights);
    printf("kann-c: %s -> %s\n", o->input, o->output);
    printf("  nodes:    %d imported, %d after optimization\n", st->nodes_imported,
           kc_count_live_nodes(g));
    printf("  folded:   %d constant nodes, %d batch-norms into conv/gemm, %d per-channel mul/add\n",
           st->constants_folded, st->batchnorms_folded, st->affines_folded);
    printf("  fused:    %d activations, %d residual adds; %d identities removed, %d views "
           "(no copy)\n", st->activations_fused, st->residuals_fused, st->identities_removed,
           st->views);
    if (st->batchnorms_standalone)
        printf("  kept:     %d batch-norms as a per-channel multiply-add\n", st->batchnorms_standalone);
    printf("  kernels: ");
    for (int k = 1; k < KANN_KERNEL_COUNT; k++)
        if (per_kernel[k]) printf(" %s x%d", kann_kernels[k].name, per_kernel[k]);
    printf("\n  schedule: %d calls, %.3f GMAC, %d streams x %d phases, %d records\n", p->n_calls,
           macs / 1e9, s->n_streams, s->n_phases, records);
    printf("  memory:   arena %s, weights %s (%d tensors)\n", arena, weights, plan->n_consts);
}

/* One compile of the model, import to memory plan. */
typedef struct build {
    kc_graph *g;
    kc_stats st;
    kc_program prog;
    kc_schedule sched;
    kc_plan plan;
    /* with --tune's bookkeeping: per node, the ways its conv could lower, the one it took and
     * the node leading a fusion it would join (kc_program) */
    uint16_t *pick_options;
    kc_node_picks *picked;
    int *pick_leader;
} build;

static void build_free(build *b) {
    kc_schedule_free(&b->sched);
    kc_program_free(&b->prog);
    kc_graph_free(b->g);
    free(b->pick_options);
    free(b->picked);
    free(b->pick_leader);
    memset(b, 0, sizeof *b);
}

/* Compiles o->input into b, the convs lowered as picks asks (n_picks entries, one per node;
 * NULL: the cost model's choices), noting the choices made where note_picks. Returns an exit
 * code; b is freed by the caller either way. */
static int compile(const options *o, build *b, const kc_node_picks *picks, int n_picks,
                   int note_picks, kc_diag *d) {
    memset(b, 0, sizeof *b);
    b->g = kc_graph_new();
    kc_graph *g = b->g;
    kc_program *prog = &b->prog;
    if (kc_import_model_file(g, o->input, d, &b->st)) return EXIT_IO;
    if (after("import", g, o, d) || kc_check_supported(g, d)) return EXIT_REJECTED;
    if (kc_pass_shapes_constants(g, o->bindings, o->n_bindings, d, &b->st) ||
        after("shapes", g, o, d))
        return EXIT_REJECTED;
    if (kc_pass_simplify(g, d, &b->st) || after("simplify", g, o, d)) return EXIT_REJECTED;
    if (kc_pass_fold_bn(g, d, &b->st) || after("fold", g, o, d)) return EXIT_REJECTED;
    if (kc_pass_fuse(g, d, &b->st) || after("fuse", g, o, d)) return EXIT_REJECTED;
    prog->streams = o->cores;
    prog->fuse_blocks = o->fuse_blocks                 ? KC_FUSE_ALL
                        : !strcmp(o->target, "opencl") ? KC_FUSE_NONE
                                                       : KC_FUSE_LANES;
    prog->keep_heads = !strcmp(o->target, "opencl");
    prog->keep_pointwise = prog->keep_heads;
    if (picks && n_picks != g->n_nodes) {
        kc_error(d, "internal error: --tune's choices are for another graph");
        return EXIT_REJECTED;
    }
    prog->picks = picks;
    prog->n_pick_nodes = g->n_nodes;
    if (note_picks) {
        b->pick_options = calloc((size_t)g->n_nodes + 1, sizeof *b->pick_options);
        b->picked = calloc((size_t)g->n_nodes + 1, sizeof *b->picked);
        b->pick_leader = calloc((size_t)g->n_nodes + 1, sizeof *b->pick_leader);
        if (!b->pick_options || !b->picked || !b->pick_leader) abort();
        prog->pick_options = b->pick_options;
        prog->picked = b->picked;
        prog->pick_leader = b->pick_leader;
    }
    if (kc_lower(g, prog, d)) return EXIT_REJECTED;
    if (kc_schedule_program(g, prog, o->cores, &b->sched, d)) return EXIT_REJECTED;
    kc_schedule_merge_phases(g, prog, &b->sched);
    kc_schedule_trim_scratch(g, prog, &b->sched);
    if (kc_plan_memory(g, prog, &b->plan, d)) return EXIT_REJECTED;
    if (over_memory_limit(o, "an arena", b->plan.arena_size, d) |
        over_memory_limit(o, "weights", b->plan.const_size, d))
        return EXIT_REJECTED;
    return EXIT_OK;
}

/* Seconds --tune spends timing the candidates, and then the whole model tuned against the cost
 * model's (their compiles come on top). */
#define TUNE_BUDGET_S 3.0
#define TUNE_CHECK_S 1.5

/* Compiles the candidate that asks picks of its nodes (NULL: the cost model's choices) into c,
 * printing nothing; the build itself into *keep where keep is non-NULL, else freed. Returns 0,
 * or 1 where the model does not compile. */
static int tune_candidate(const options *o, const kc_node_picks *picks, int n_picks, kc_pick ask,
                          kc_tune_candidate *c, build *keep) {
    options quiet = *o;
    quiet.dump_after = NULL;
    kc_diag silent;
    kc_diag_init(&silent, o->input, stderr);
    silent.silent = 1;
    build b;
    kc_emit_options eo = {o->input, "", o->cmdline, o->target};
    int failed =
        compile(&quiet, &b, picks, n_picks, 1, &silent) != EXIT_OK ||
        kc_build_model(b.g, &b.prog, &b.sched, &b.plan, &eo, &c->bytes, &c->size, &silent) != 0;
    if (!failed) {
        c->node_of_record = kc_tune_record_nodes(&b.prog, &b.sched, &c->n_records);
        c->ask = ask;
        c->picked = b.picked;
        c->leader = b.pick_leader;
        b.picked = NULL;
        b.pick_leader = NULL;
    }
    if (keep && !failed)
        *keep = b;
    else
        build_free(&b);
    return failed;
}

static void tune_candidate_free(kc_tune_candidate *c) {
    free(c->bytes);
    free(c->node_of_record);
    free(c->picked);
    free(c->leader);
}

/* The tuned picks against the cost model's choices (candidate auto), the whole model timed as
 * the nodes were: they stand where it measures faster, else *picks is cleared. */
static int tune_check(const options *o, const kc_tune_candidate *auto_c, kc_node_picks *picks,
                      int n_nodes, kc_diag *d) {
    size_t count = n_nodes > 0 ? (size_t)n_nodes : 0;
    kc_tune_candidate c[2] = {*auto_c, {0}};
    if (tune_candidate(o, picks, n_nodes, KC_PICK_AUTO, &c[1], NULL)) {
        memset(picks, 0, count * sizeof *picks);
        return EXIT_OK;
    }
    double *ms = malloc(sizeof(double) * 2 * count + 1), total[2];
    if (!ms) abort();
    int runs = kc_tune_measure(c, 2, n_nodes, TUNE_CHECK_S, ms, total, d);
    free(ms);
    tune_candidate_free(&c[1]);
    if (runs == 0) return EXIT_REJECTED;
    int keep = total[1] < total[0];
    if (!keep) memset(picks, 0, count * sizeof *picks);
    if (!o->quiet)
        printf("  the whole model, %d runs: %.3f ms as the cost model chose, %.3f tuned: %s\n",
               runs, total[0], total[1], keep ? "tuned" : "the cost model's kept");
    return EXIT_OK;
}

/* --tune: *picks (one per node, or NULL where nothing was measured) from the candidates'
 * times (tune.h). The compiles it makes print nothing: the final compile reports the model's
 * errors and notes once. */
static int tune(const options *o, kc_node_picks **picks, int *n_picks, kc_diag *d) {
    *picks = NULL;
    *n_picks = 0;
    kc_tune_candidate c[KC_PICK_COUNT];
    memset(c, 0, sizeof c);
    build first; /* the cost model's compile: its nodes' names, the ways each conv could take */
    if (tune_candidate(o, NULL, 0, KC_PICK_AUTO, &c[0], &first))
        return EXIT_OK; /* the model does not compile: the final compile says why */
    int n = 1, n_nodes = first.g->n_nodes > 0 ? first.g->n_nodes : 0, code = EXIT_OK;
    size_t count = (size_t)n_nodes;
    const uint16_t *ways = first.pick_options;
    kc_node_picks *ask = calloc(count + 1, sizeof *ask);
    if (!ask) abort();
    /* every other way some conv could take, or fusion, asked of every conv */
    for (int k = KC_PICK_AUTO + 1; k < KC_PICK_COUNT; k++) {
        int fusion = k == KC_PICK_FUSED || k == KC_PICK_APART, useful = 0;
        for (int node = 0; node < n_nodes && !useful; node++)
            useful = kc_tune_decides(ways[node], fusion) && (ways[node] >> k & 1) &&
                     (fusion ? c[0].picked[node].fusion : c[0].picked[node].way) != k;
        if (!useful) continue;
        for (size_t node = 0; node < count; node++)
            ask[node] = fusion ? (kc_node_picks){0, (uint8_t)k} : (kc_node_picks){(uint8_t)k, 0};
        if (!tune_candidate(o, ask, n_nodes, (kc_pick)k, &c[n], NULL)) n++;
    }
    free(ask);
    if (n > 1) {
        double *ms = malloc(sizeof(double) * (size_t)n * count + 1);
        *picks = calloc(count + 1, sizeof **picks);
        if (!ms || !*picks) abort();
        if (!o->quiet) printf("kann-c: --tune: timing the model lowered %d ways\n", n);
        int runs = kc_tune_measure(c, n, n_nodes, TUNE_BUDGET_S, ms, NULL, d);
        if (runs == 0) {
            code = EXIT_REJECTED;
        } else {
            if (!o->quiet)
                printf(
                    "  medians of %d runs, one thread, ms (' the cost model's choice, * kept):\n",
                    runs);
            int changed =
                kc_tune_choose(first.g, c, n, ways, n_nodes, ms, *picks, o->quiet ? NULL : stdout);
            if (!o->quiet) printf("  %d choice%s changed\n", changed, changed == 1 ? "" : "s");
            if (changed) code = tune_check(o, &c[0], *picks, n_nodes, d);
        }
        *n_picks = n_nodes;
        free(ms);
    } else if (!o->quiet) {
        printf("kann-c: --tune: no conv here has more than one way to lower\n");
    }
    for (int i = 0; i < n; i++)
        tune_candidate_free(&c[i]);
    build_free(&first);
    return code;
}

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "run 'kann-c --help' for usage\n");
        return EXIT_USAGE;
    }
    kc_diag d;
    kc_diag_init(&d, o.input, stderr);
    d.quiet = o.quiet; /* -q: no summary and no notes; warnings and errors stay */
    build b = {0};
    kc_node_picks *picks = NULL;
    int n_picks = 0, code = EXIT_REJECTED;

    if (o.print || o.save_onnx) { /* conversions: no compile */
        int r = o.print ? kc_text_print_file(o.input, stdout, &d)
                        : kc_text_save_onnx_file(o.input, o.save_onnx, &d);
        code = r == 0 ? EXIT_OK : r > 0 ? EXIT_REJECTED : EXIT_IO;
        goto done;
    }
    if (o.tune && (code = tune(&o, &picks, &n_picks, &d)) != EXIT_OK) goto done;
    if ((code = compile(&o, &b, picks, n_picks, 0, &d)) != EXIT_OK) goto done;

    char hash[32];
    hash_file(o.input, hash, sizeof hash);
    kc_emit_options eo = {o.input, hash, o.cmdline, o.target};
    kc_emit_c_options co = {o.c_prefix, o.c_weights_blob};
    int emitted = o.emit_c ? kc_emit_c(b.g, &b.prog, &b.sched, &b.plan, o.output, &eo, &co, &d)
                           : kc_emit_model(b.g, &b.prog, &b.sched, &b.plan, o.output, &eo, &d);
    if (emitted) {
        code = emitted < 0 ? EXIT_IO : EXIT_REJECTED;
        goto done;
    }
    if (!o.quiet) summary(&o, b.g, &b.st, &b.prog, &b.sched, &b.plan);
    code = EXIT_OK;
done:
    if (code != EXIT_OK)
        fprintf(stderr, "kann-c: %d error%s; no output written\n", d.n_errors, d.n_errors == 1 ? "" : "s");
    build_free(&b);
    free(picks);
    for (int i = 0; i < o.n_bindings; i++) free((void *)o.bindings[i].name);
    return code;
}
