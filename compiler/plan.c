/* Memory planning: every value a kernel touches is resolved to its root (views share their
 * target's bytes); each arena root lives from the first call that touches it to the last
 * (graph inputs from the start, outputs to the end) and gets a 64-byte aligned offset that no
 * root alive at the same time overlaps. Largest first, lowest fitting offset. */
#include <stdlib.h>

#include "lower.h"

#define KC_ALIGN 64

int kc_value_root(const kc_graph *g, int v, int64_t *offset) {
    int64_t off = 0;
    int steps = 0;
    while (g->values[v].alias_of >= 0 && steps++ < g->n_values) {
        off += g->values[v].alias_offset;
        v = g->values[v].alias_of;
    }
    *offset = off;
    return v;
}

typedef struct live {
    int root;
    int first, last; /* call indices, inclusive */
    uint64_t size;
} live;

static int by_size_desc(const void *a, const void *b) {
    const live *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->first - y->first;
}

static uint64_t align_up(uint64_t x) {
    return (x + KC_ALIGN - 1) & ~(uint64_t)(KC_ALIGN - 1);
}

static uint64_t value_bytes(const kc_value *v) {
    int64_t n = kc_value_numel(v);
    return n > 0 ? (uint64_t)n * kc_dtype_size(v->dtype) : 0;
}

int kc_plan_memory(kc_graph *g, const kc_program *p, kc_plan *plan, kc_diag *d) {
    int nv = g->n_values;
    int *first = malloc(sizeof(int) * (size_t)nv), *last = malloc(sizeof(int) * (size_t)nv);
    if (!first || !last) abort();
    /* first = INT32_MAX: never touched; -1: alive before the first call (inputs). */
    for (int v = 0; v < nv; v++) {
        first[v] = INT32_MAX;
        last[v] = -2;
    }
    const int end = p->n_calls; /* "after every call": outputs stay to the end */
    plan->const_size = 0;
    plan->n_consts = 0;
    for (int ci = 0; ci < p->n_calls; ci++) {
        const kc_call *c = &p->calls[ci];
        for (int f = 0; f < c->n_fixups; f++) {
            int64_t off;
            int r = kc_value_root(g, c->fixups[f].value, &off);
            if (kc_is_const(g, r)) {
                if (first[r] == INT32_MAX) {
                    first[r] = ci;
                    g->values[r].offset = (int64_t)plan->const_size;
                    plan->const_size = align_up(plan->const_size + value_bytes(&g->values[r]));
                    plan->n_consts++;
                }
                continue;
            }
            /* alive through the whole phase: its calls run at once on the streams */
            int lo = p->phase_first ? p->phase_first[ci] : ci;
            int hi = p->phase_last ? p->phase_last[ci] : ci;
            if (lo < first[r]) first[r] = lo;
            if (hi > last[r]) last[r] = hi;
        }
    }
    /* Graph inputs are written before the run and stay intact through it, so a session can
     * run again on the same inputs; outputs are read after it. */
    for (int i = 0; i < g->n_inputs; i++) {
        int64_t off;
        int r = kc_value_root(g, g->inputs[i], &off);
        first[r] = -1;
        last[r] = end;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int64_t off;
        int r = kc_value_root(g, g->outputs[i], &off);
        if (kc_is_const(g, r)) {
            kc_error_value(d, g, g->outputs[i], "output still refers to a constant after lowering");
            continue;
        }
        if (first[r] == INT32_MAX) first[r] = -1;
        last[r] = end;
    }
    live *roots = malloc(sizeof(live) * (size_t)(nv ? nv : 1));
    if (!roots) abort();
    int n = 0;
    for (int v = 0; v < nv; v++) {
        int is_root = g->values[v].alias_of < 0 && !kc_is_const(g, v);
        if (!is_root || first[v] == INT32_MAX) continue;
        roots[n++] = (live){v, first[v], last[v], align_up(value_bytes(&g->values[v]))};
    }
    qsort(roots, (size_t)n, sizeof *roots, by_size_desc);
    uint64_t *offsets = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    if (!offsets) abort();
    uint64_t arena = 0;
    for (int i = 0; i < n; i++) {
        /* Lowest offset that clears every placed root whose lifetime intersects this one.
         * Candidates: 0 and the end of each conflicting root. */
        uint64_t best = UINT64_MAX;
        for (int k = -1; k < i; k++) {
            uint64_t cand = k < 0 ? 0 : offsets[k] + roots[k].size;
            if (k >= 0 && (roots[k].last < roots[i].first || roots[i].last < roots[k].first))
                continue;
            if (cand >= best) continue;
            int ok = 1;
            for (int j = 0; j < i && ok; j++) {
                if (roots[j].last < roots[i].first || roots[i].last < roots[j].first) continue;
                if (cand < offsets[j] + roots[j].size && offsets[j] < cand + roots[i].size) ok = 0;
            }
            if (ok) best = cand;
        }
        offsets[i] = best;
        g->values[roots[i].root].offset = (int64_t)best;
        if (best + roots[i].size > arena) arena = best + roots[i].size;
    }
    plan->arena_size = arena ? arena : KC_ALIGN;
    free(offsets);
    free(roots);
    free(first);
    free(last);
    return d->n_errors ? 1 : 0;
}
