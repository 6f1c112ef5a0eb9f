/* The IR: graph construction from a bump arena, queries over values and nodes, the verifier
 * and the dump. */
#include "ir.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

/* ---- the compile arena: big chunks, never freed one by one ---- */

typedef struct kc_chunk {
    struct kc_chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} kc_chunk;

struct kc_arena {
    kc_chunk *head;
};

#define KC_CHUNK_SIZE (1u << 20)

void *kc_alloc(kc_graph *g, size_t n) {
    kc_arena *a = g->arena;
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->size - a->head->used < n) {
        size_t size = n > KC_CHUNK_SIZE ? n : KC_CHUNK_SIZE;
        kc_chunk *c = malloc(sizeof(kc_chunk) + size);
        if (!c) {
            fprintf(stderr, "kann-c: out of memory (%zu bytes)\n", n);
            abort();
        }
        c->size = size;
        c->used = 0;
        /* A big one-off block goes behind the current chunk so the latter stays in use. */
        if (a->head && n > KC_CHUNK_SIZE) {
            c->next = a->head->next;
            a->head->next = c;
            c->used = n;
            memset(c->data, 0, n);
            return c->data;
        }
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

char *kc_strndup(kc_graph *g, const char *s, size_t n) {
    char *p = kc_alloc(g, n + 1);
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *kc_strdup(kc_graph *g, const char *s) {
    return kc_strndup(g, s ? s : "", s ? strlen(s) : 0);
}

char *kc_sprintf(kc_graph *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = kc_alloc(g, (size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

kc_graph *kc_graph_new(void) {
    kc_graph *g = calloc(1, sizeof *g);
    kc_arena *a = calloc(1, sizeof *a);
    if (!g || !a) {
        fprintf(stderr, "kann-c: out of memory\n");
        abort();
    }
    g->arena = a;
    g->name = "";
    g->producer = "";
    g->source_path = "";
    return g;
}

void kc_graph_free(kc_graph *g) {
    if (!g) return;
    for (kc_chunk *c = g->arena->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(g->arena);
    free(g->values);
    free(g->nodes);
    free(g);
}

/* ---- dtypes ---- */

size_t kc_dtype_size(int dtype) {
    switch (dtype) {
    case KC_DTYPE_FLOAT: case KC_DTYPE_INT32: case KC_DTYPE_UINT32: return 4;
    case KC_DTYPE_UINT8: case KC_DTYPE_INT8: case KC_DTYPE_BOOL: return 1;
    case KC_DTYPE_UINT16: case KC_DTYPE_INT16: case KC_DTYPE_FLOAT16: case KC_DTYPE_BFLOAT16:
        return 2;
    case KC_DTYPE_INT64: case KC_DTYPE_DOUBLE: case KC_DTYPE_UINT64: return 8;
    default: return 0;
    }
}

const char *kc_dtype_name(int dtype) {
    switch (dtype) {
    case KC_DTYPE_FLOAT: return "f32";
    case KC_DTYPE_UINT8: return "u8";
    case KC_DTYPE_INT8: return "i8";
    case KC_DTYPE_UINT16: return "u16";
    case KC_DTYPE_INT16: return "i16";
    case KC_DTYPE_INT32: return "i32";
    case KC_DTYPE_INT64: return "i64";
    case KC_DTYPE_STRING: return "string";
    case KC_DTYPE_BOOL: return "bool";
    case KC_DTYPE_FLOAT16: return "f16";
    case KC_DTYPE_DOUBLE: return "f64";
    case KC_DTYPE_UINT32: return "u32";
    case KC_DTYPE_UINT64: return "u64";
    case KC_DTYPE_BFLOAT16: return "bf16";
    default: return "?";
    }
}

int64_t kc_numel(int rank, const int64_t *dims) {
    if (rank < 0) return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        /* an unknown dim, or a count past int64 (a hostile shape): no element count */
        if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n)) return -1;
    }
    return n;
}

int64_t kc_value_numel(const kc_value *v) {
    return kc_numel(v->rank, v->dims);
}

/* ---- construction ---- */

/* Room for one more entry in a value or node table of n entries: doubles the capacity when full.
 * Adding an entry may thus move the table, and a pointer into it taken before is stale after.
 * Sanitizer builds (KC_MOVE_TABLES) move the table on every addition, so AddressSanitizer
 * reports such a stale pointer on whichever model reaches it, not only when a table happens to
 * be full. */
static void *grow_table(void *table, int n, int *cap, size_t entry) {
    int new_cap = n < *cap ? *cap : *cap ? 2 * *cap : 256;
#ifdef KC_MOVE_TABLES
    void *moved = malloc((size_t)new_cap * entry);
    if (moved && n) memcpy(moved, table, (size_t)n * entry);
    if (moved) free(table);
#else
    void *moved = new_cap == *cap ? table : realloc(table, (size_t)new_cap * entry);
#endif
    if (!moved) {
        fprintf(stderr, "kann-c: out of memory\n");
        abort();
    }
    *cap = new_cap;
    return moved;
}

int kc_add_value(kc_graph *g, const char *name) {
    g->values = grow_table(g->values, g->n_values, &g->cap_values, sizeof *g->values);
    kc_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = kc_strdup(g, name);
    v->rank = -1;
    for (int i = 0; i < KC_MAX_RANK; i++) v->dims[i] = -1;
    v->producer = -1;
    v->alias_of = -1;
    v->offset = -1;
    return g->n_values++;
}

int kc_find_value(const kc_graph *g, const char *name) {
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0) return i;
    return -1;
}

int kc_add_const(kc_graph *g, const char *name, int dtype, int rank, const int64_t *dims,
                 const void *data) {
    /* dims may point into the value table, which the addition can move: copied first (data
     * lives in the graph's arena, which does not move). */
    int64_t d[KC_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = dims[i];
    dims = d;
    int v = kc_add_value(g, name);
    kc_value *val = &g->values[v];
    val->dtype = dtype;
    val->rank = rank;
    for (int i = 0; i < rank; i++) val->dims[i] = dims[i];
    val->flags |= KC_VALUE_CONST;
    size_t n = (size_t)kc_numel(rank, dims) * kc_dtype_size(dtype);
    val->data = kc_alloc(g, n ? n : 1);
    if (n && data) memcpy(val->data, data, n);
    return v;
}

int kc_add_node(kc_graph *g, int op, const char *op_type, const char *name, int n_inputs,
                const int *inputs, int n_outputs, const int *outputs) {
    g->nodes = grow_table(g->nodes, g->n_nodes, &g->cap_nodes, sizeof *g->nodes);
    int id = g->n_nodes++;
    kc_node *n = &g->nodes[id];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->op_type = kc_strdup(g, op_type ? op_type : (op > 0 && op < KC_OP_COUNT ? kc_ops[op].name : "?"));
    n->domain = "";
    n->name = kc_strdup(g, name ? name : "");
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->inputs = kc_alloc(g, sizeof(int) * (size_t)(n_inputs ? n_inputs : 1));
    n->outputs = kc_alloc(g, sizeof(int) * (size_t)(n_outputs ? n_outputs : 1));
    for (int i = 0; i < n_inputs; i++) n->inputs[i] = inputs[i];
    for (int i = 0; i < n_outputs; i++) {
        n->outputs[i] = outputs[i];
        if (outputs[i] >= 0) g->values[outputs[i]].producer = id;
    }
    n->epi.act = 0;
    n->epi.residual = -1;
    n->fused = "";
    return id;
}

kc_attr *kc_node_add_attr(kc_graph *g, int node, const char *name, int type) {
    kc_node *n = &g->nodes[node];
    kc_attr *attrs = kc_alloc(g, sizeof(kc_attr) * (size_t)(n->n_attrs + 1));
    if (n->n_attrs) memcpy(attrs, n->attrs, sizeof(kc_attr) * (size_t)n->n_attrs);
    n->attrs = attrs;
    kc_attr *a = &attrs[n->n_attrs++];
    a->name = kc_strdup(g, name);
    a->type = type;
    return a;
}

const char *kc_unique_name(kc_graph *g, const char *base) {
    for (int i = 1;; i++) {
        const char *name = kc_sprintf(g, "%s__%d", base, i);
        if (kc_find_value(g, name) < 0) return name;
    }
}

/* ---- queries ---- */

const kc_attr *kc_attr_find(const kc_node *n, const char *name) {
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t kc_attr_int(const kc_node *n, const char *name, int64_t dflt) {
    const kc_attr *a = kc_attr_find(n, name);
    return a && a->type == KC_ATTR_INT ? a->i : dflt;
}

float kc_attr_float(const kc_node *n, const char *name, float dflt) {
    const kc_attr *a = kc_attr_find(n, name);
    if (!a) return dflt;
    if (a->type == KC_ATTR_FLOAT) return a->f;
    if (a->type == KC_ATTR_INT) return (float)a->i;
    return dflt;
}

const char *kc_attr_string(const kc_node *n, const char *name, const char *dflt) {
    const kc_attr *a = kc_attr_find(n, name);
    return a && a->type == KC_ATTR_STRING ? a->s : dflt;
}

int kc_attr_ints(const kc_node *n, const char *name, int64_t *out, int max) {
    const kc_attr *a = kc_attr_find(n, name);
    if (!a) return -1;
    if (a->type == KC_ATTR_INT) {
        if (max > 0) out[0] = a->i;
        return 1;
    }
    if (a->type != KC_ATTR_INTS) return -1;
    for (int i = 0; i < a->n && i < max; i++) out[i] = a->ints[i];
    return a->n;
}

int kc_opset_of(const kc_graph *g, const char *domain) {
    const char *d = domain ? domain : "";
    if (strcmp(d, "ai.onnx") == 0) d = "";
    for (int i = 0; i < g->n_opsets; i++) {
        const char *od = g->opsets[i].domain ? g->opsets[i].domain : "";
        if (strcmp(od, "ai.onnx") == 0) od = "";
        if (strcmp(od, d) == 0) return (int)g->opsets[i].version;
    }
    return 0;
}

int kc_is_const(const kc_graph *g, int value) {
    return value >= 0 && (g->values[value].flags & KC_VALUE_CONST) != 0;
}

/* Does some value read v's bytes through a view? */
static int has_views(const kc_graph *g, int v) {
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].alias_of == v) return 1;
    return 0;
}

int kc_value_uses(const kc_graph *g, int v) {
    int uses = 0;
    /* Reads of a view are reads of its target. */
    for (int w = 0; w < g->n_values; w++)
        if (g->values[w].alias_of == v && w != v) uses += kc_value_uses(g, w);
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_inputs; j++) uses += n->inputs[j] == v;
        uses += n->epi.residual == v;
    }
    for (int i = 0; i < g->n_outputs; i++) uses += g->outputs[i] == v;
    return uses;
}

int kc_single_consumer(const kc_graph *g, int v) {
    if (has_views(g, v)) return -1;
    int found = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        int uses = n->epi.residual == v;
        for (int j = 0; j < n->n_inputs; j++) uses += n->inputs[j] == v;
        if (!uses) continue;
        if (found >= 0 || uses > 1) return -1;
        found = i;
    }
    return found;
}

int kc_live_producer(const kc_graph *g, int x) {
    int p = x >= 0 ? g->values[x].producer : -1;
    if (p < 0 || g->nodes[p].dead || g->nodes[p].n_outputs < 1 || g->nodes[p].outputs[0] != x)
        return -1;
    return p;
}

void kc_note_fused(kc_graph *g, int ni, const char *what) {
    kc_node *n = &g->nodes[ni];
    n->fused = n->fused && n->fused[0] ? kc_sprintf(g, "%s, %s", n->fused, what) : what;
}

void kc_absorb_node(kc_graph *g, int p, int f, const char *what) {
    int x = g->nodes[p].outputs[0];
    int y = g->nodes[f].outputs[0];
    g->nodes[p].outputs[0] = y;
    g->values[y].producer = p;
    g->values[x].producer = -1;
    g->nodes[f].dead = 1;
    kc_note_fused(g, p, what);
}

void kc_replace_uses(kc_graph *g, int from, int to) {
    for (int i = 0; i < g->n_nodes; i++) {
        kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == from) n->inputs[j] = to;
        if (n->epi.residual == from) n->epi.residual = to;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == from) g->outputs[i] = to;
}

int kc_count_live_nodes(const kc_graph *g) {
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].dead;
    return n;
}

/* ---- verifier ---- */

int kc_verify(const kc_graph *g, kc_diag *d) {
    int problems = 0;
    /* defined_at[v]: the node index that defines v (-1: before any node, i.e. input or const). */
    int *defined_at = malloc(sizeof(int) * (size_t)(g->n_values ? g->n_values : 1));
    if (!defined_at) return 1;
    for (int v = 0; v < g->n_values; v++) {
        const kc_value *val = &g->values[v];
        defined_at[v] = (val->flags & (KC_VALUE_INPUT | KC_VALUE_CONST)) ? -1 : INT32_MAX;
        if (val->rank > KC_MAX_RANK) {
            kc_error_value(d, g, v, "rank %d exceeds the limit of %d", val->rank, KC_MAX_RANK);
            problems++;
        }
        if (val->alias_of >= g->n_values || val->alias_of == v) {
            kc_error_value(d, g, v, "bad view target %d", val->alias_of);
            problems++;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j < n->n_outputs; j++) {
            int v = n->outputs[j];
            if (v < -1 || v >= g->n_values) {
                kc_error_node(d, g, i, "output %d refers to value %d of %d", j, v, g->n_values);
                problems++;
                continue;
            }
            if (v < 0) continue;
            if (defined_at[v] != INT32_MAX) {
                kc_error_node(d, g, i, "value '%s' is defined twice", g->values[v].name);
                problems++;
            }
            defined_at[v] = i;
        }
    }
    /* A value no live node writes but whose views are written (a Concat output assembled in
     * place by its inputs' producers) is defined once its last piece is. */
    for (int v = 0; v < g->n_values; v++) {
        if (g->values[v].alias_of < 0 || defined_at[v] < 0 || defined_at[v] == INT32_MAX) continue;
        int r = v, steps = 0;
        while (g->values[r].alias_of >= 0 && steps++ < g->n_values) r = g->values[r].alias_of;
        if (g->values[r].producer >= 0 && g->nodes[g->values[r].producer].dead &&
            (defined_at[r] == INT32_MAX || defined_at[r] < defined_at[v]))
            defined_at[r] = defined_at[v];
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        for (int j = 0; j <= n->n_inputs; j++) {
            int v = j < n->n_inputs ? n->inputs[j] : n->epi.residual;
            if (v == -1) continue;
            if (v < -1 || v >= g->n_values) {
                kc_error_node(d, g, i, "input %d refers to value %d of %d", j, v, g->n_values);
                problems++;
                continue;
            }
            int at = defined_at[v];
            /* A view reads through to its target: the target's definition is what counts. */
            if (at == INT32_MAX && g->values[v].alias_of >= 0) at = -1;
            if (at >= i) {
                kc_error_node(d, g, i, "reads value '%s' before it is defined", g->values[v].name);
                problems++;
            }
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int v = g->outputs[i];
        if (v < 0 || v >= g->n_values) {
            kc_error(d, "graph output %d refers to value %d of %d", i, v, g->n_values);
            problems++;
        } else if (defined_at[v] == INT32_MAX && g->values[v].alias_of < 0) {
            kc_error_value(d, g, v, "graph output is never computed");
            problems++;
        }
    }
    free(defined_at);
    return problems;
}

/* ---- printing ---- */

void kc_format_shape(const kc_value *v, char *buf, size_t n) {
    size_t at = (size_t)snprintf(buf, n, "%s", kc_dtype_name(v->dtype));
    if (v->rank < 0) {
        if (at < n) snprintf(buf + at, n - at, "[?]");
        return;
    }
    for (int i = 0; i < v->rank && at < n; i++) {
        if (v->dims[i] >= 0)
            at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "," : "[", (long long)v->dims[i]);
        else
            at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? "," : "[",
                                   v->dim_params[i] ? v->dim_params[i] : "?");
    }
    if (at < n) snprintf(buf + at, n - at, v->rank ? "]" : "[]");
}

static void dump_value_ref(const kc_graph *g, int v, FILE *out) {
    if (v < 0) {
        fputs("_", out);
        return;
    }
    char shape[128];
    kc_format_shape(&g->values[v], shape, sizeof shape);
    fprintf(out, "%%%s:%s", g->values[v].name, shape);
    if (g->values[v].alias_of >= 0)
        fprintf(out, "@%s+%lld", g->values[g->values[v].alias_of].name,
                (long long)g->values[v].alias_offset);
}

void kc_dump(const kc_graph *g, FILE *out) {
    fprintf(out, "graph %s (%d values, %d live nodes)\n", g->name, g->n_values,
            kc_count_live_nodes(g));
    for (int i = 0; i < g->n_inputs; i++) {
        fputs("  input ", out);
        dump_value_ref(g, g->inputs[i], out);
        fputc('\n', out);
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const kc_node *n = &g->nodes[i];
        if (n->dead) continue;
        fprintf(out, "  [%d] ", i);
        for (int j = 0; j < n->n_outputs; j++) {
            if (j) fputs(", ", out);
            dump_value_ref(g, n->outputs[j], out);
        }
        fprintf(out, " = %s%s%s(", n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
                n->op_type);
        for (int j = 0; j < n->n_inputs; j++) {
            if (j) fputs(", ", out);
            dump_value_ref(g, n->inputs[j], out);
        }
        fputc(')', out);
        if (n->epi.residual >= 0) {
            fputs(" +residual ", out);
            dump_value_ref(g, n->epi.residual, out);
        }
        if (n->epi.act) fprintf(out, " act=%d(%g,%g)", n->epi.act, n->epi.alpha, n->epi.beta);
        if (n->fused && n->fused[0]) fprintf(out, " fused={%s}", n->fused);
        if (n->name[0]) fprintf(out, "  # %s", n->name);
        fputc('\n', out);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        fputs("  output ", out);
        dump_value_ref(g, g->outputs[i], out);
        fputc('\n', out);
    }
}
