/* kann-c --tune: times the compiled candidates' records on this machine and keeps, per conv, the
 * lowering that measured fastest (tune.h). The candidates run interleaved, one walk of each per
 * round, so that a burst in which the host slows the core falls on all of them alike; a node's
 * time is the median over the rounds. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kann.h"
#include "kann_format.h"
#include "kann_host.h"
#include "kann_kernels.h"
#include "tune.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

const char *kc_pick_name(kc_pick k) {
    static const char *const names[KC_PICK_COUNT] = {
        "auto", "packed", "winograd-f2", "winograd-f4", "lanes", "fused", "apart"};
    return (unsigned)k < KC_PICK_COUNT ? names[k] : "?";
}

int *kc_tune_record_nodes(const kc_program *p, const kc_schedule *s, int *n_records) {
    int n = 0;
    for (int st = 0; st < s->n_streams; st++)
        n += s->counts[st];
    int *node = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!node) abort();
    int r = 0;
    for (int st = 0; st < s->n_streams; st++)
        for (int i = 0; i < s->counts[st]; i++, r++) {
            int call = s->streams[st][i].call;
            node[r] = call < 0 ? -1 : p->calls[call].node;
        }
    *n_records = n;
    return node;
}

/* One candidate, opened to run: its bytes copied to an aligned buffer, an arena, inputs filled. */
typedef struct tune_run {
    void *bytes, *arena, *prepared;
    kann_model m;
    kann_session s;
    const int *node_of_record;
    double *stream_ms; /* [stream * n_nodes + node]: this walk's sums */
} tune_run;

/* Inputs of a fixed pseudo-random pattern in [-1, 1) (floats) or zero (indices, masks): the
 * kernels' speed does not depend on the values, but denormals and NaNs would. */
static void fill_inputs(tune_run *t) {
    uint32_t state = 12345u;
    for (uint32_t i = 0; i < kann_model_n_inputs(&t->m); i++) {
        kann_tensor in;
        if (kann_session_input(&t->s, i, &in) != KANN_OK) continue;
        if (in.dtype == KANN_DTYPE_F32) {
            float *f = in.data;
            for (size_t k = 0; k < in.size / sizeof(float); k++) {
                state = state * 1664525u + 1013904223u;
                f[k] = (float)(state >> 8) / (float)(1u << 23) - 1.0f;
            }
        } else {
            memset(in.data, 0, in.size);
        }
    }
}

static int open_run(const kc_tune_candidate *c, int n_nodes, tune_run *t, kc_diag *d) {
    memset(t, 0, sizeof *t);
    kann_error err;
    t->bytes = aligned_alloc(64, (c->size + 63) / 64 * 64);
    if (!t->bytes) abort();
    memcpy(t->bytes, c->bytes, c->size);
    if (kann_model_open(&t->m, t->bytes, c->size, &err) != KANN_OK) {
        kc_error(d, "--tune: a candidate model does not open: %s", err.message);
        return 1;
    }
    /* the kernels kann-run would run: $KANN_ISA's, else the best this CPU (and OS) runs */
    const char *isa = getenv("KANN_ISA");
    if (kann_host_model_set_isa(&t->m, isa, &t->prepared, &err) != KANN_OK) {
        kc_error(d, "--tune: KANN_ISA=%s is not an ISA this CPU runs: %s", isa ? isa : "",
                 err.message);
        return 1;
    }
    if (kann_model_n_records(&t->m) != (uint32_t)c->n_records) {
        kc_error(d, "--tune: internal error: a candidate's records do not match its schedule");
        return 1;
    }
    uint64_t arena = (kann_model_arena_size(&t->m) + 63) / 64 * 64;
    t->arena = aligned_alloc(64, arena ? arena : 64);
    if (!t->arena) {
        kc_error(d, "--tune: out of memory for an arena of %llu bytes", (unsigned long long)arena);
        return 1;
    }
    memset(t->arena, 0, arena);
    if (kann_session_init(&t->s, &t->m, t->arena, arena, &err) != KANN_OK) {
        kc_error(d, "--tune: %s", err.message);
        return 1;
    }
    t->node_of_record = c->node_of_record;
    t->stream_ms = calloc((size_t)kann_model_n_streams(&t->m) * (size_t)n_nodes, sizeof(double));
    if (!t->stream_ms) abort();
    fill_inputs(t);
    return 0;
}

static void close_run(tune_run *t) {
    kann_host_arena_free(t->prepared);
    free(t->bytes);
    free(t->arena);
    free(t->stream_ms);
}

/* One walk of the model, phase by phase, each record timed alone; into round[node] the node's
 * largest sum over the streams. Returns the walk's seconds. */
static double walk(tune_run *t, int n_nodes, double *round) {
    uint32_t P = kann_model_n_streams(&t->m), n_phases = kann_model_n_phases(&t->m);
    uint32_t cursor[KANN_MAX_STREAMS], end[KANN_MAX_STREAMS];
    for (uint32_t st = 0; st < P; st++) {
        uint32_t count;
        kann_model_stream(&t->m, st, &cursor[st], &count);
        end[st] = cursor[st] + count;
    }
    memset(t->stream_ms, 0, sizeof(double) * P * (size_t)n_nodes);
    double start = now_s();
    for (uint32_t phase = 0; phase < n_phases; phase++)
        for (uint32_t st = 0; st < P; st++)
            while (cursor[st] < end[st]) {
                uint32_t r = cursor[st]++, kernel, size;
                const void *args;
                kann_model_record(&t->m, r, &kernel, &args, &size);
                if (kernel == KANN_KERNEL_BARRIER) break;
                const kann_tile *tile = args; /* the whole record, as the walker runs it */
                double t0 = now_s();
                kann_session_run_part(&t->s, r, tile->begin, tile->end);
                int node = t->node_of_record[r];
                if (node >= 0 && node < n_nodes)
                    t->stream_ms[(size_t)st * n_nodes + node] += (now_s() - t0) * 1e3;
            }
    double seconds = now_s() - start;
    for (int node = 0; node < n_nodes; node++) {
        double most = 0.0;
        for (uint32_t st = 0; st < P; st++)
            if (t->stream_ms[(size_t)st * n_nodes + node] > most)
                most = t->stream_ms[(size_t)st * n_nodes + node];
        round[node] = most;
    }
    return seconds;
}

/* Warm-up rounds before the timed ones: the first run of a model faults its arena in. */
#define TUNE_WARMUP 2

int kc_tune_measure(const kc_tune_candidate *c, int n_candidates, int n_nodes, double budget_s,
                    double *ms, double *total_ms, kc_diag *d) {
    tune_run *runs = calloc((size_t)n_candidates, sizeof *runs);
    double *round = malloc(sizeof(double) * (size_t)(n_nodes ? n_nodes : 1));
    /* times[(c * (n_nodes + 1) + node) * KC_TUNE_MAX_RUNS + run], node n_nodes the total */
    size_t rows = (size_t)n_nodes + 1;
    double *times = malloc(sizeof(double) * (size_t)n_candidates * rows * KC_TUNE_MAX_RUNS);
    if (!runs || !round || !times) abort();
    int opened = 0, n_runs = 0;
    for (; opened < n_candidates; opened++)
        if (open_run(&c[opened], n_nodes, &runs[opened], d)) {
            opened++;
            goto done;
        }
    double round_s = 0.0;
    for (int w = 0; w < TUNE_WARMUP; w++) {
        round_s = 0.0;
        for (int i = 0; i < n_candidates; i++)
            round_s += walk(&runs[i], n_nodes, round);
    }
    int want = round_s > 0.0 ? (int)(budget_s / round_s) : KC_TUNE_MAX_RUNS;
    want = want < KC_TUNE_MIN_RUNS   ? KC_TUNE_MIN_RUNS
           : want > KC_TUNE_MAX_RUNS ? KC_TUNE_MAX_RUNS
                                     : want;
    for (; n_runs < want; n_runs++)
        for (int i = 0; i < n_candidates; i++) {
            walk(&runs[i], n_nodes, round);
            double total = 0.0;
            for (int node = 0; node < n_nodes; node++) {
                times[((size_t)i * rows + node) * KC_TUNE_MAX_RUNS + n_runs] = round[node];
                total += round[node];
            }
            times[((size_t)i * rows + n_nodes) * KC_TUNE_MAX_RUNS + n_runs] = total;
        }
    for (int i = 0; i < n_candidates; i++)
        for (int node = 0; node <= n_nodes; node++) {
            double *t = &times[((size_t)i * rows + node) * KC_TUNE_MAX_RUNS];
            qsort(t, (size_t)n_runs, sizeof *t, cmp_double);
            double median = t[n_runs / 2];
            if (node < n_nodes)
                ms[(size_t)i * n_nodes + node] = median > 0.0 ? median : -1.0;
            else if (total_ms)
                total_ms[i] = median;
        }
done:
    for (int i = 0; i < opened; i++)
        close_run(&runs[i]);
    free(runs);
    free(round);
    free(times);
    return opened == n_candidates ? n_runs : 0;
}

#define FUSION_BITS (1u << KC_PICK_FUSED | 1u << KC_PICK_APART)
#define WAY_BITS ((1u << KC_PICK_FUSED) - 2u) /* KC_PICK_PACKED .. KC_PICK_LANES */

int kc_tune_decides(unsigned options, int fusion) {
    return fusion ? (options & FUSION_BITS) == FUSION_BITS
                  : __builtin_popcount(options & WAY_BITS) > 1;
}

/* Node's time in candidate i: its own, or with fusion that of every node it leads too. */
static double node_ms(const kc_tune_candidate *c, int i, int n_nodes, const double *ms, int node,
                      int fusion) {
    double t = ms[(size_t)i * n_nodes + node];
    if (!fusion || t <= 0.0) return t;
    for (int m = 0; m < n_nodes; m++) {
        double tm = ms[(size_t)i * n_nodes + m];
        if (c[0].leader[m] == node + 1 && tm > 0.0) t += tm;
    }
    return t;
}

static int took(const kc_tune_candidate *c, int node, int fusion) {
    return fusion ? c->picked[node].fusion : c->picked[node].way;
}

/* The time of pick k of node (a way, or with fusion fused or apart) in the candidate that asked
 * for it, or the cost model's pick in candidate 0; negative where not measured. */
static double pick_ms(const kc_tune_candidate *c, int n_candidates, int n_nodes, const double *ms,
                      int node, int k, int fusion) {
    for (int i = 0; i < n_candidates; i++)
        if ((i == 0 || (int)c[i].ask == k) && took(&c[i], node, fusion) == k)
            return node_ms(c, i, n_nodes, ms, node, fusion);
    return -1.0;
}

/* One choice of node: the fastest pick past the margin into *pick (else left), the line. */
static int choose(const kc_graph *g, const kc_tune_candidate *c, int n_candidates, unsigned options,
                  int n_nodes, const double *ms, int node, int fusion, int width, uint8_t *pick,
                  FILE *out) {
    int own = took(&c[0], node, fusion), best = own;
    double base = node_ms(c, 0, n_nodes, ms, node, fusion), t[KC_PICK_COUNT];
    if (base <= 0.0) return 0;
    for (int k = KC_PICK_AUTO + 1; k < KC_PICK_COUNT; k++) {
        int of_kind = (fusion ? FUSION_BITS : WAY_BITS) >> k & 1;
        t[k] = of_kind && options >> k & 1 ? pick_ms(c, n_candidates, n_nodes, ms, node, k, fusion)
                                           : -1.0;
        if (k != own && t[k] > 0.0 && t[k] < base * (1.0 - KC_TUNE_MARGIN) &&
            (best == own || t[k] < t[best]))
            best = k;
    }
    if (best != own) *pick = (uint8_t)best;
    if (out) {
        const kc_node *n = &g->nodes[node];
        fprintf(out, "    %-*s", width, n->name[0] ? n->name : n->op_type);
        for (int k = KC_PICK_AUTO + 1; k < KC_PICK_COUNT; k++)
            if (t[k] > 0.0)
                fprintf(out, "  %s %.4f%s%s", kc_pick_name((kc_pick)k), t[k], k == own ? "'" : "",
                        k == best ? "*" : "");
        fprintf(out, "\n");
    }
    return best != own;
}

int kc_tune_choose(const kc_graph *g, const kc_tune_candidate *c, int n_candidates,
                   const uint16_t *options, int n_nodes, const double *ms, kc_node_picks *picks,
                   FILE *out) {
    int changed = 0, width = 0;
    for (int node = 0; node < n_nodes; node++) {
        const kc_node *n = &g->nodes[node];
        int len = (int)strlen(n->name[0] ? n->name : n->op_type);
        if (options[node] && len > width) width = len < 48 ? len : 48;
    }
    for (int node = 0; node < n_nodes; node++) {
        if (kc_tune_decides(options[node], 0))
            changed += choose(g, c, n_candidates, options[node], n_nodes, ms, node, 0, width,
                              &picks[node].way, out);
        if (kc_tune_decides(options[node], 1))
            changed += choose(g, c, n_candidates, options[node], n_nodes, ms, node, 1, width,
                              &picks[node].fusion, out);
    }
    return changed;
}
