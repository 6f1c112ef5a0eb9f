/* kann-run: runs a compiled model.bin on .npy or TensorProto inputs, writes .npy outputs,
 * prints a summary, a JSON report or latency statistics. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kann_host.h"
#include "kann_profile.h"
#ifdef KANN_WITH_OPENCL
#include "kann_opencl.h"
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_BAD_FILE = 3 };

#define MAX_INPUT_ARGS 64

static const char usage_text[] =
    "usage: kann-run MODEL.bin [options]\n"
    "  -i [NAME=]FILE     an input tensor (.npy or ONNX TensorProto .pb); repeat for several\n"
    "                     inputs, named or in the model's input order\n"
    "  -o FILE            write the first output as .npy\n"
    "  --output-dir DIR   write every output as DIR/<output name>.npy\n"
    "  --threads T        worker threads (default: online CPUs, at most the model's streams)\n"
    "  --pin              pin worker threads to CPUs\n"
    "  --isa ISA          CPU kernels: generic, avx2, avx512 or amx (default: $KANN_ISA, else\n"
    "                     the best this CPU runs; amx: 1x1, gathered and strided convs as\n"
    "                     bf16x3 tile products, within a few 1e-6 of float)\n"
    "  --bench N          run N timed times after warm-up runs; print min/median/p90 ms\n"
    "  --warmup W         warm-up runs before --bench (default: 5, and more until 0.1 s has\n"
    "                     passed: the OS settles the threads on their CPUs meanwhile)\n"
    "  --backend B        cpu (default) or opencl\n"
    "  --device D         OpenCL device: index or name substring (default: $KANN_OPENCL_DEVICE,\n"
    "                     else the first GPU, else the first device)\n"
    "  --queues Q         OpenCL: sub-device queues for the streams (default: one per stream)\n"
    "  --list-devices     print the OpenCL devices and exit\n"
    "  --profile          per-layer times (opencl: from OpenCL profiling events; cpu: every\n"
    "                     layer alone, single-threaded, median of the --bench runs, else 10)\n"
    "  --json             print a machine-readable summary on stdout\n"
    "  --info             print the model's inputs, outputs, streams and arena size\n"
    "  -h, --help         this text\n"
    "exit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad model or tensor file\n";

__attribute__((format(printf, 1, 2))) static void error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("kann-run: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static int usage_error(const char *msg) {
    error("%s", msg);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

typedef struct options {
    const char *model;
    const char *inputs[MAX_INPUT_ARGS];
    int n_inputs;
    const char *output;
    const char *output_dir;
    long threads; /* 0: default */
    long bench;   /* 0: one run */
    long warmup;
    int warmup_set; /* --warmup given: exactly that many */
    int json, info, pin;
    const char *backend, *device; /* OpenCL: --backend opencl, --device */
    long queues;
    int profile;
    const char *isa; /* NULL: $KANN_ISA, else the best */
} options;

static int parse_count(const char *flag, const char *text, long min, long *out) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || end == text || v < min || v > 1000000) {
        error("%s needs an integer >= %ld, got '%s'", flag, min, text);
        return -1;
    }
    *out = v;
    return 0;
}

/* The OpenCL executor when --backend opencl is given (NULL: the CPU thread pool runs). */
#ifdef KANN_WITH_OPENCL
static kann_opencl *opencl_exec;
#endif

static int list_opencl_devices(void) {
#ifdef KANN_WITH_OPENCL
    kann_error err;
    if (kann_opencl_list_devices(stdout, &err) == KANN_OK) return EXIT_OK;
    error("%s", err.message);
#else
    error("this kann-run was built without OpenCL");
#endif
    return EXIT_RUNTIME;
}

static kann_status run_once(kann_host_pool *pool, kann_session *s, kann_error *err) {
#ifdef KANN_WITH_OPENCL
    if (opencl_exec) return kann_opencl_run(opencl_exec, s, err);
#endif
    return kann_host_pool_run(pool, s, err);
}

/* Sets up the OpenCL executor for --backend opencl. */
static int open_opencl(const options *o, const kann_model *m) {
#ifdef KANN_WITH_OPENCL
    kann_error err;
    kann_opencl_options oo = {0};
    oo.device = o->device;
    oo.max_queues = (uint32_t)o->queues;
    oo.profile = o->profile;
    if (kann_opencl_open(&opencl_exec, m, &oo, &err) != KANN_OK) {
        error("%s: opencl: %s (%s)", o->model, err.message, kann_status_name(err.status));
        return err.status == KANN_E_UNSUPPORTED ? EXIT_BAD_FILE : EXIT_RUNTIME;
    }
    if (!o->json)
        fprintf(stderr, "kann-run: opencl device %s, %u queue%s\n",
                kann_opencl_device_name(opencl_exec), kann_opencl_n_queues(opencl_exec),
                kann_opencl_n_queues(opencl_exec) > 1 ? "s" : "");
    return EXIT_OK;
#else
    (void)m;
    error("%s: this kann-run was built without OpenCL", o->model);
    return EXIT_RUNTIME;
#endif
}

static int parse_args(int argc, char **argv, options *o) {
    memset(o, 0, sizeof *o);
    o->warmup = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            exit(EXIT_OK);
        } else if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
            if (!has_value) return usage_error("-i needs a file");
            if (o->n_inputs == MAX_INPUT_ARGS) return usage_error("too many -i options");
            o->inputs[o->n_inputs++] = argv[++i];
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!has_value) return usage_error("-o needs a file");
            o->output = argv[++i];
        } else if (!strcmp(a, "--output-dir")) {
            if (!has_value) return usage_error("--output-dir needs a directory");
            o->output_dir = argv[++i];
        } else if (!strcmp(a, "--threads")) {
            if (!has_value) return usage_error("--threads needs a count");
            if (parse_count(a, argv[++i], 1, &o->threads)) return EXIT_USAGE;
        } else if (!strcmp(a, "--bench")) {
            if (!has_value) return usage_error("--bench needs a count");
            if (parse_count(a, argv[++i], 1, &o->bench)) return EXIT_USAGE;
        } else if (!strcmp(a, "--warmup")) {
            if (!has_value) return usage_error("--warmup needs a count");
            if (parse_count(a, argv[++i], 0, &o->warmup)) return EXIT_USAGE;
            o->warmup_set = 1;
        } else if (!strcmp(a, "--isa")) {
            if (!has_value) return usage_error("--isa needs generic, avx2, avx512 or amx");
            o->isa = argv[++i];
        } else if (!strcmp(a, "--backend")) {
            if (!has_value) return usage_error("--backend needs cpu or opencl");
            o->backend = argv[++i];
            if (strcmp(o->backend, "cpu") && strcmp(o->backend, "opencl"))
                return usage_error("--backend is cpu or opencl");
        } else if (!strcmp(a, "--device")) {
            if (!has_value) return usage_error("--device needs an index or a name");
            o->device = argv[++i];
        } else if (!strcmp(a, "--queues")) {
            if (!has_value) return usage_error("--queues needs a count");
            if (parse_count(a, argv[++i], 1, &o->queues)) return EXIT_USAGE;
        } else if (!strcmp(a, "--profile")) {
            o->profile = 1;
        } else if (!strcmp(a, "--list-devices")) {
            exit(list_opencl_devices());
        } else if (!strcmp(a, "--pin")) {
            o->pin = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--info")) {
            o->info = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            error("unknown option '%s'", a);
            fputs(usage_text, stderr);
            return EXIT_USAGE;
        } else if (!o->model) {
            o->model = a;
        } else {
            error("unexpected argument '%s' (inputs are given with -i)", a);
            return EXIT_USAGE;
        }
    }
    if (!o->model) return usage_error("no model given");
    return EXIT_OK;
}

static const char *dtype_name(uint32_t dtype) {
    switch (dtype) {
    case KANN_DTYPE_F32:
        return "float32";
    case KANN_DTYPE_U8:
        return "uint8";
    case KANN_DTYPE_I8:
        return "int8";
    case KANN_DTYPE_I32:
        return "int32";
    case KANN_DTYPE_I64:
        return "int64";
    case KANN_DTYPE_BOOL:
        return "bool";
    default:
        return "unknown";
    }
}

static void format_shape(char *buf, size_t n, uint32_t rank, const uint32_t *dims) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (uint32_t k = 0; k < rank && len < n; k++)
        len += (size_t)snprintf(buf + len, n - len, "%s%u", k ? ", " : "", dims[k]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

static double element_value(const kann_tensor *t, size_t i) {
    switch (t->dtype) {
    case KANN_DTYPE_F32:
        return ((const float *)t->data)[i];
    case KANN_DTYPE_I32:
        return ((const int32_t *)t->data)[i];
    case KANN_DTYPE_I64:
        return (double)((const int64_t *)t->data)[i];
    case KANN_DTYPE_I8:
        return ((const int8_t *)t->data)[i];
    default:
        return ((const uint8_t *)t->data)[i];
    }
}

/* The k largest elements (NaN sorts last), largest first. Returns how many there are. */
static size_t top_k(const kann_tensor *t, size_t k, size_t *index, double *value) {
    size_t n = t->size / kann_dtype_size(t->dtype), found = 0;
    for (size_t i = 0; i < n; i++) {
        double v = element_value(t, i);
        size_t j;
        if (isnan(v)) continue;
        if (found < k)
            j = found++;
        else if (v > value[k - 1])
            j = k - 1;
        else
            continue;
        while (j > 0 && value[j - 1] < v) { /* ties keep the lower index first */
            value[j] = value[j - 1];
            index[j] = index[j - 1];
            j--;
        }
        value[j] = v;
        index[j] = i;
    }
    return found;
}

static void print_info(const char *path, const kann_model *m) {
    printf("model %s\n", path);
    const char *keys[] = {"producer",        "compiler_version", "source", "source_fnv1a64",
                          "source_producer", "target",           "options"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *v = kann_model_meta(m, keys[i]);
        if (v) printf("  %s: %s\n", keys[i], v);
    }
    printf("  arena: %llu bytes\n", (unsigned long long)kann_model_arena_size(m));
    printf("  streams: %u\n", kann_model_n_streams(m));
    for (int out = 0; out < 2; out++) {
        uint32_t n = out ? kann_model_n_outputs(m) : kann_model_n_inputs(m);
        printf("  %s: %u\n", out ? "outputs" : "inputs", n);
        for (uint32_t i = 0; i < n; i++) {
            kann_tensor t;
            if (out)
                kann_model_output(m, i, &t);
            else
                kann_model_input(m, i, &t);
            char shape[160];
            format_shape(shape, sizeof shape, t.rank, t.dims);
            printf("    %u: %s %s %s (%zu bytes)\n", i, t.name, dtype_name(t.dtype), shape, t.size);
        }
    }
}

/* Binds each -i argument to a model input (by NAME= prefix, else in order) and copies it in. */
static int load_inputs(const options *o, kann_session *s) {
    const kann_model *m = s->model;
    uint32_t n_in = kann_model_n_inputs(m);
    const char *files[MAX_INPUT_ARGS] = {0};
    if (n_in > MAX_INPUT_ARGS) {
        error("%s: the model has %u inputs, kann-run handles at most %d", o->model, n_in,
              MAX_INPUT_ARGS);
        return EXIT_USAGE;
    }
    uint32_t next_positional = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        const char *arg = o->inputs[i];
        const char *eq = strchr(arg, '=');
        int index = -1;
        if (eq) {
            char name[1100];
            size_t len = (size_t)(eq - arg);
            if (len < sizeof name) {
                memcpy(name, arg, len);
                name[len] = '\0';
                index = kann_model_find_input(m, name);
            }
        }
        const char *file = arg;
        if (index >= 0) {
            file = eq + 1;
        } else {
            while (next_positional < n_in && files[next_positional])
                next_positional++;
            if (next_positional == n_in) {
                error("%s: more inputs given than the model's %u", arg, n_in);
                return EXIT_USAGE;
            }
            index = (int)next_positional;
        }
        if (files[index]) {
            kann_tensor t;
            kann_model_input(m, (uint32_t)index, &t);
            error("input '%s' is given twice (%s and %s)", t.name, files[index], file);
            return EXIT_USAGE;
        }
        files[index] = file;
    }
    for (uint32_t i = 0; i < n_in; i++) {
        kann_tensor want;
        kann_session_input(s, i, &want);
        if (!files[i]) {
            if (o->bench && o->n_inputs == 0) continue; /* benchmarking on a zeroed arena */
            error("input '%s' is not given (-i %s=FILE)", want.name, want.name);
            return EXIT_USAGE;
        }
        kann_host_tensor got;
        kann_error err;
        if (kann_host_tensor_read(files[i], &got, &err) != KANN_OK) {
            error("%s", err.message);
            return EXIT_BAD_FILE;
        }
        int same = got.dtype == want.dtype && got.rank == want.rank;
        for (uint32_t k = 0; same && k < want.rank; k++)
            same = got.dims[k] == want.dims[k];
        if (!same) {
            char ws[160], gs[160];
            format_shape(ws, sizeof ws, want.rank, want.dims);
            format_shape(gs, sizeof gs, got.rank, got.dims);
            error("%s: input '%s' expects %s %s, got %s %s", files[i], want.name,
                  dtype_name(want.dtype), ws, dtype_name(got.dtype), gs);
            kann_host_tensor_free(&got);
            return EXIT_BAD_FILE;
        }
        memcpy(want.data, got.data, want.size);
        kann_host_tensor_free(&got);
    }
    return EXIT_OK;
}

/* A file-system-safe form of an output name: [A-Za-z0-9._-] kept, the rest '_'. */
static void sanitize(const char *name, char *out, size_t n) {
    size_t len = 0;
    for (const char *p = name; *p && len + 1 < n; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[len++] = ok ? c : '_';
    }
    out[len] = '\0';
    /* No empty, hidden or directory-walking ("..") names. */
    if (len == 0) snprintf(out, n, "_");
    if (out[0] == '.') out[0] = '_';
}

static int write_outputs(const options *o, const kann_session *s) {
    kann_error err;
    uint32_t n_out = kann_model_n_outputs(s->model);
    if (o->output && n_out > 0) {
        kann_tensor t;
        kann_session_output(s, 0, &t);
        if (kann_host_npy_write(o->output, &t, &err) != KANN_OK) {
            error("%s", err.message);
            return EXIT_RUNTIME;
        }
    }
    if (!o->output_dir) return EXIT_OK;
    if (mkdir(o->output_dir, 0777) != 0 && errno != EEXIST) {
        error("%s: cannot create the directory: %s", o->output_dir, strerror(errno));
        return EXIT_RUNTIME;
    }
    char(*used)[256] = calloc(n_out ? n_out : 1, sizeof *used);
    if (!used) {
        error("out of memory");
        return EXIT_RUNTIME;
    }
    int rc = EXIT_OK;
    for (uint32_t i = 0; i < n_out && rc == EXIT_OK; i++) {
        kann_tensor t;
        kann_session_output(s, i, &t);
        char base[200];
        sanitize(t.name, base, sizeof base);
        snprintf(used[i], sizeof used[i], "%s", base);
        /* Two names may sanitize alike ("a/b", "a:b"): later ones get their index. */
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(used[j], used[i])) snprintf(used[i], sizeof used[i], "%s_%u", base, i);
        size_t plen = strlen(o->output_dir) + strlen(used[i]) + 8;
        char *path = malloc(plen);
        if (!path) {
            error("out of memory");
            rc = EXIT_RUNTIME;
            break;
        }
        snprintf(path, plen, "%s/%s.npy", o->output_dir, used[i]);
        if (kann_host_npy_write(path, &t, &err) != KANN_OK) {
            error("%s", err.message);
            rc = EXIT_RUNTIME;
        }
        free(path);
    }
    free(used);
    return rc;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define WARMUP_MS 100.0
#define WARMUP_MAX_RUNS 100000

typedef struct latency {
    long runs;
    double min, median, p90;
} latency;

static int run_model(const options *o, kann_host_pool *pool, kann_session *s, latency *lat) {
    kann_error err;
    long warmup = o->bench ? o->warmup : 0, runs = o->bench ? o->bench : 1;
    double *times = malloc((size_t)runs * sizeof *times);
    if (!times) {
        error("out of memory");
        return EXIT_RUNTIME;
    }
    /* Without --warmup, warm up for at least WARMUP_MS too: the first milliseconds of a
     * process run its threads wherever they were created until the OS spreads them (a 0.4 ms
     * model measured 0.66 ms medians over 40 runs after 5 warm-up runs, 0.43 after 20). */
    double warm_until = now_ms() + (o->bench && !o->warmup_set ? WARMUP_MS : 0.0);
    for (long i = 0; i < warmup + runs; i++) {
        double t0 = now_ms();
        if (run_once(pool, s, &err) != KANN_OK) {
            error("%s: run failed: %s", o->model, err.message);
            free(times);
            return EXIT_RUNTIME;
        }
        double t1 = now_ms();
        if (i + 1 == warmup && t1 < warm_until && warmup < WARMUP_MAX_RUNS) warmup++;
        if (i >= warmup) times[i - warmup] = t1 - t0;
    }
    qsort(times, (size_t)runs, sizeof *times, cmp_double);
    lat->runs = runs;
    lat->min = times[0];
    lat->median = runs % 2 ? times[runs / 2] : (times[runs / 2 - 1] + times[runs / 2]) / 2;
    long p90 = (long)ceil(0.9 * (double)runs) - 1;
    lat->p90 = times[p90 < 0 ? 0 : p90];
    free(times);
    return EXIT_OK;
}

static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void json_number(double v) {
    if (isfinite(v))
        printf("%.9g", v);
    else
        fputs("null", stdout);
}

static void print_json(const options *o, const kann_session *s, uint32_t threads,
                       const latency *lat) {
    const kann_model *m = s->model;
    printf("{\"model\": ");
    json_string(o->model);
    printf(", \"threads\": %u, \"streams\": %u, \"isa\": \"%s\", \"outputs\": [", threads,
           kann_model_n_streams(m), kann_isa_name(kann_model_isa(m)));
    uint32_t n_out = kann_model_n_outputs(m);
    for (uint32_t i = 0; i < n_out; i++) {
        kann_tensor t;
        kann_session_output(s, i, &t);
        printf("%s{\"name\": ", i ? ", " : "");
        json_string(t.name);
        printf(", \"dtype\": \"%s\", \"shape\": [", dtype_name(t.dtype));
        for (uint32_t k = 0; k < t.rank; k++)
            printf("%s%u", k ? ", " : "", t.dims[k]);
        printf("]}");
    }
    printf("], \"top5\": [");
    if (n_out > 0) {
        kann_tensor t;
        kann_session_output(s, 0, &t);
        size_t index[5];
        double value[5];
        size_t n = top_k(&t, 5, index, value);
        for (size_t i = 0; i < n; i++) {
            printf("%s{\"index\": %zu, \"value\": ", i ? ", " : "", index[i]);
            json_number(value[i]);
            printf("}");
        }
    }
    printf("], \"latency_ms\": {\"runs\": %ld, \"min\": ", lat->runs);
    json_number(lat->min);
    printf(", \"median\": ");
    json_number(lat->median);
    printf(", \"p90\": ");
    json_number(lat->p90);
    printf("}}\n");
}

static void print_summary(const kann_session *s) {
    uint32_t n_out = kann_model_n_outputs(s->model);
    for (uint32_t i = 0; i < n_out; i++) {
        kann_tensor t;
        kann_session_output(s, i, &t);
        char shape[160];
        format_shape(shape, sizeof shape, t.rank, t.dims);
        printf("output %u: %s %s %s\n", i, t.name, dtype_name(t.dtype), shape);
    }
    if (n_out == 0) return;
    kann_tensor t;
    kann_session_output(s, 0, &t);
    size_t index[5];
    double value[5];
    size_t n = top_k(&t, 5, index, value);
    printf("top-%zu of %s:\n", n, t.name);
    for (size_t i = 0; i < n; i++)
        printf("  %8zu  %.6g\n", index[i], value[i]);
}

/* The per-layer table of --profile, on stderr when --json owns stdout. */
static int print_profile(const options *o, kann_session *s) {
    kann_profile_row *rows;
    uint32_t n;
    kann_error err;
    uint32_t runs = o->bench ? (uint32_t)o->bench : 10;
    if (kann_profile_run(s, runs, &rows, &n, &err) != KANN_OK) {
        error("%s", err.message);
        return EXIT_RUNTIME;
    }
    FILE *out = o->json ? stderr : stdout;
    double total = 0, macs = 0;
    for (uint32_t i = 0; i < n; i++) {
        total += rows[i].ms;
        macs += rows[i].macs;
    }
    fprintf(out, "profile (%s kernels, median of %u single-threaded runs):\n",
            kann_isa_name(kann_model_isa(s->model)), runs);
    fprintf(out, "%-36s %-20s %10s %9s %8s %6s\n", "node", "kernel", "MMAC", "ms", "GFLOPS", "%");
    for (uint32_t i = 0; i < n; i++) {
        const kann_profile_row *r = &rows[i];
        fprintf(out, "%-36.36s %-20s %10.2f %9.4f %8.1f %6.2f\n", r->node[0] ? r->node : "-",
                r->kernel, r->macs / 1e6, r->ms, r->ms > 0 ? 2 * r->macs / (r->ms * 1e6) : 0.0,
                total > 0 ? 100 * r->ms / total : 0);
    }
    fprintf(out, "%-36s %-20s %10.2f %9.4f %8.1f %6.2f\n", "total", "", macs / 1e6, total,
            total > 0 ? 2 * macs / (total * 1e6) : 0.0, 100.0);
    free(rows);
    return EXIT_OK;
}

int main(int argc, char **argv) {
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != EXIT_OK) return rc;

    kann_error err;
    kann_host_file file;
    if (kann_host_file_load(o.model, &file, &err) != KANN_OK) {
        error("%s", err.message);
        return EXIT_BAD_FILE;
    }
    kann_model model;
    if (kann_model_open(&model, file.data, file.size, &err) != KANN_OK) {
        error("%s: %s (%s)", o.model, err.message, kann_status_name(err.status));
        kann_host_file_free(&file);
        return EXIT_BAD_FILE;
    }
    const char *isa = o.isa ? o.isa : getenv("KANN_ISA");
    void *prepared = NULL;
    if (kann_host_model_set_isa(&model, isa, &prepared, &err) != KANN_OK) {
        error("%s", err.message);
        kann_host_file_free(&file);
        return err.status == KANN_E_ARGUMENT ? EXIT_USAGE : EXIT_RUNTIME;
    }
    if (o.info) {
        print_info(o.model, &model);
        kann_host_arena_free(prepared);
        kann_host_file_free(&file);
        return EXIT_OK;
    }

    uint32_t n_streams = kann_model_n_streams(&model);
    uint32_t threads = o.threads ? (uint32_t)o.threads : kann_host_cpu_count();
    if (threads > n_streams) threads = n_streams;
    kann_host_pool *pool = NULL;
    kann_session session;
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(&model));
    rc = EXIT_RUNTIME;
    if (!arena) {
        error("%s: cannot allocate a %llu-byte arena", o.model,
              (unsigned long long)kann_model_arena_size(&model));
        goto done;
    }
    if (kann_session_init(&session, &model, arena, (size_t)kann_model_arena_size(&model), &err) !=
        KANN_OK) {
        error("%s: %s", o.model, err.message);
        goto done;
    }
    pool = kann_host_pool_new(threads, o.pin ? KANN_HOST_POOL_PIN : 0, &err);
    if (!pool) {
        error("%s", err.message);
        goto done;
    }
    if (o.backend && !strcmp(o.backend, "opencl") && (rc = open_opencl(&o, &model)) != EXIT_OK)
        goto done;
    rc = load_inputs(&o, &session);
    if (rc != EXIT_OK) goto done;
    latency lat;
    rc = run_model(&o, pool, &session, &lat);
    if (rc != EXIT_OK) goto done;
    rc = write_outputs(&o, &session);
    if (rc != EXIT_OK) goto done;
    if (o.profile && (!o.backend || !strcmp(o.backend, "cpu")) &&
        (rc = print_profile(&o, &session)) != EXIT_OK)
        goto done;
    if (o.json) {
        print_json(&o, &session, threads, &lat);
    } else {
        if (!o.output) print_summary(&session);
        if (o.bench)
            printf("latency over %ld runs, %u threads: min %.3f ms, median %.3f ms, p90 %.3f ms\n",
                   lat.runs, threads, lat.min, lat.median, lat.p90);
    }
#ifdef KANN_WITH_OPENCL
    if (opencl_exec && o.profile && kann_opencl_print_profile(opencl_exec, stdout, &err) != KANN_OK)
        error("%s", err.message);
#endif
done:
#ifdef KANN_WITH_OPENCL
    kann_opencl_free(opencl_exec);
#endif
    kann_host_pool_free(pool);
    kann_host_arena_free(arena);
    kann_host_arena_free(prepared);
    kann_host_file_free(&file);
    return rc;
}
