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
    int print; /* --print: the model as text on stdout, no compile */
    const char *save_onnx; /* --save-onnx FILE: the model as protobuf, no compile */
    int emit_c; /* --emit c */
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
            "  --list-ops                 print the supported operators and exit\n"
            "  --emit bin|c               write model.bin (default), or C source for firmware:\n"
            "                             OUT.c and OUT.h (docs/firmware.md)\n"
            "  --c-prefix NAME            prefix of the C symbols (default: OUT's base name)\n"
            "  --c-weights-blob FILE      with --emit c: the weights go to FILE, included by\n"
            "                             the assembler (.incbin), not as C arrays\n"
            "  --print                    print the model (text or .onnx) in the ONNX text syntax\n"
            "  --save-onnx FILE           write the model (text or .onnx) as a binary .onnx\n"
            "  --max-memory BYTES         refuse a model whose arena or weights exceed BYTES\n"
            "                             (suffix K, M or G: binary multiples)\n"
            "  -q, --quiet                no compile summary\n"
            "  -h, --help                 this help\n"
            "  --version                  print the version\n"
            "\n"
            "exit status: 0 compiled, 1 model rejected (invalid or unsupported), 2 usage error,\n"
            "3 input unreadable or output unwritable\n");
}

static void list_ops(void) {
    printf("%-22s %-8s %s\n", "operator", "opsets", "attributes");
    for (int i = 1; i < KC_OP_COUNT; i++)
        printf("%-22s %d-%-6d %s\n", kc_ops[i].name, kc_ops[i].min_opset, kc_ops[i].max_opset,
               kc_ops[i].attrs[0] ? kc_ops[i].attrs : "-");
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
    size_t at = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
#define TAKE(flag)                                                                                \
    (strcmp(a, flag) == 0 ? (i + 1 < argc ? (val = argv[++i], 1) : -1)                             \
                          : (strncmp(a, flag "=", sizeof(flag)) == 0 ? (val = a + sizeof(flag), 1) : 0))
        int t;
        if (i > 1 && at < sizeof o->cmdline - 1)
            at += (size_t)snprintf(o->cmdline + at, sizeof o->cmdline - at, "%s%s", at ? " " : "", a);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(EXIT_OK);
        } else if (!strcmp(a, "--version")) {
            printf("kann-c %s\n", KC_VERSION);
            exit(EXIT_OK);
        } else if (!strcmp(a, "--list-ops")) {
            list_ops();
            exit(EXIT_OK);
        } else if (!strcmp(a, "--print")) {
            o->print = 1;
        } else if ((t = TAKE("--save-onnx"))) {
            if (t < 0) goto missing;
            o->save_onnx = val;
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

int main(int argc, char **argv) {
    options o;
    if (parse_args(argc, argv, &o)) {
        fprintf(stderr, "run 'kann-c --help' for usage\n");
        return EXIT_USAGE;
    }
    kc_diag d;
    kc_diag_init(&d, o.input, stderr);
    kc_stats st = {0};
    kc_program prog = {0};
    kc_schedule sched = {0};
    kc_plan plan = {0};
    kc_graph *g = kc_graph_new();
    int code = EXIT_REJECTED;

    if (o.print || o.save_onnx) { /* conversions: no compile */
        int r = o.print ? kc_text_print_file(o.input, stdout, &d)
                        : kc_text_save_onnx_file(o.input, o.save_onnx, &d);
        code = r == 0 ? EXIT_OK : r > 0 ? EXIT_REJECTED : EXIT_IO;
        goto done;
    }
    if (kc_import_model_file(g, o.input, &d, &st)) {
        code = EXIT_IO;
        goto done;
    }
    if (after("import", g, &o, &d) || kc_check_supported(g, &d)) goto done;
    if (kc_pass_shapes_constants(g, o.bindings, o.n_bindings, &d, &st) || after("shapes", g, &o, &d))
        goto done;
    if (kc_pass_simplify(g, &d, &st) || after("simplify", g, &o, &d)) goto done;
    if (kc_pass_fold_bn(g, &d, &st) || after("fold", g, &o, &d)) goto done;
    if (kc_pass_fuse(g, &d, &st) || after("fuse", g, &o, &d)) goto done;
    if (kc_lower(g, &prog, &d)) goto done;
    if (kc_schedule_program(g, &prog, o.cores, &sched, &d)) goto done;
    if (kc_plan_memory(g, &prog, &plan, &d)) goto done;
    if (over_memory_limit(&o, "an arena", plan.arena_size, &d) |
        over_memory_limit(&o, "weights", plan.const_size, &d))
        goto done;

    char hash[32];
    hash_file(o.input, hash, sizeof hash);
    kc_emit_options eo = {o.input, hash, o.cmdline};
    kc_emit_c_options co = {o.c_prefix, o.c_weights_blob};
    if (o.emit_c ? kc_emit_c(g, &prog, &sched, &plan, o.output, &eo, &co, &d)
                 : kc_emit_model(g, &prog, &sched, &plan, o.output, &eo, &d)) {
        code = EXIT_IO;
        goto done;
    }
    if (!o.quiet) summary(&o, g, &st, &prog, &sched, &plan);
    code = EXIT_OK;
done:
    if (code != EXIT_OK)
        fprintf(stderr, "kann-c: %d error%s; no output written\n", d.n_errors, d.n_errors == 1 ? "" : "s");
    kc_schedule_free(&sched);
    kc_program_free(&prog);
    kc_graph_free(g);
    for (int i = 0; i < o.n_bindings; i++) free((void *)o.bindings[i].name);
    return code;
}
