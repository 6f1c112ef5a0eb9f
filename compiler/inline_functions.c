/* Inlines model-local functions (ModelProto.functions) into the graph before import: each call
 * becomes a copy of the function body with its formal inputs and outputs bound to the call's
 * values, attribute references (@name) resolved from the call or the function's defaults, and
 * every internal value and node renamed to a name unused in the model. */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "passes.h"

/* Functions calling functions; a recursive function would otherwise expand forever. */
#define MAX_CALL_DEPTH 32

/* The set of every name in the model, so that a renamed value never collides. */
typedef struct name_set {
    char **slots;
    size_t cap, count;
} name_set;

typedef struct inliner {
    Onnx__ModelProto *m;
    kc_diag *d;
    name_set names;
    int errors;
    unsigned char *checked; /* per function: its opsets were checked against the model's */
} inliner;

/* One expansion's renaming: formal or internal name -> name in the graph. */
typedef struct rename_map {
    char **from;
    char **to;
    size_t n, cap;
} rename_map;

static size_t hash_str(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int set_contains(const name_set *s, const char *name) {
    if (!s->cap) return 0;
    for (size_t h = hash_str(name) & (s->cap - 1); s->slots[h]; h = (h + 1) & (s->cap - 1))
        if (!strcmp(s->slots[h], name)) return 1;
    return 0;
}

static int set_add(name_set *s, const char *name) {
    if (!name || !name[0] || set_contains(s, name)) return 0;
    if ((s->count + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        char **slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->slots[i]) continue;
            size_t h = hash_str(s->slots[i]) & (cap - 1);
            while (slots[h])
                h = (h + 1) & (cap - 1);
            slots[h] = s->slots[i];
        }
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy) return -1;
    size_t h = hash_str(name) & (s->cap - 1);
    while (s->slots[h])
        h = (h + 1) & (s->cap - 1);
    s->slots[h] = copy;
    s->count++;
    return 0;
}

static void set_free(name_set *s) {
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i]);
    free(s->slots);
}

static void collect_graph_names(inliner *in, const Onnx__GraphProto *g);

static void collect_node_names(inliner *in, const Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_input; i++)
        set_add(&in->names, n->input[i]);
    for (size_t i = 0; i < n->n_output; i++)
        set_add(&in->names, n->output[i]);
    set_add(&in->names, n->name);
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        if (a->g) collect_graph_names(in, a->g);
        for (size_t j = 0; j < a->n_graphs; j++)
            collect_graph_names(in, a->graphs[j]);
    }
}

static void collect_graph_names(inliner *in, const Onnx__GraphProto *g) {
    for (size_t i = 0; i < g->n_input; i++)
        set_add(&in->names, g->input[i]->name);
    for (size_t i = 0; i < g->n_output; i++)
        set_add(&in->names, g->output[i]->name);
    for (size_t i = 0; i < g->n_value_info; i++)
        set_add(&in->names, g->value_info[i]->name);
    for (size_t i = 0; i < g->n_initializer; i++)
        set_add(&in->names, g->initializer[i]->name);
    for (size_t i = 0; i < g->n_node; i++)
        collect_node_names(in, g->node[i]);
}

/* prefix/base, or prefix/base_2, _3 ... : the first that no value or node uses yet. */
static char *fresh_name(inliner *in, const char *prefix, const char *base) {
    size_t len = strlen(prefix) + strlen(base) + 24;
    char *s = malloc(len);
    if (!s) return NULL;
    snprintf(s, len, "%s/%s", prefix, base);
    for (unsigned k = 2; set_contains(&in->names, s); k++)
        snprintf(s, len, "%s/%s_%u", prefix, base, k);
    if (set_add(&in->names, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

static void map_free(rename_map *map) {
    for (size_t i = 0; i < map->n; i++) {
        free(map->from[i]);
        free(map->to[i]);
    }
    free(map->from);
    free(map->to);
}

static int map_put(rename_map *map, const char *from, const char *to) {
    if (map->n == map->cap) {
        size_t cap = map->cap ? map->cap * 2 : 16;
        char **f = realloc(map->from, cap * sizeof *f);
        if (!f) return -1;
        map->from = f;
        char **t = realloc(map->to, cap * sizeof *t);
        if (!t) return -1;
        map->to = t;
        map->cap = cap;
    }
    char *from_copy = strdup(from), *to_copy = strdup(to);
    if (!from_copy || !to_copy) {
        free(from_copy);
        free(to_copy);
        return -1;
    }
    map->from[map->n] = from_copy;
    map->to[map->n++] = to_copy;
    return 0;
}

static const char *map_get(const rename_map *map, const char *from) {
    for (size_t i = 0; i < map->n; i++)
        if (!strcmp(map->from[i], from)) return map->to[i];
    return NULL;
}

static const char *or_empty(const char *s) {
    return s ? s : "";
}

static const char *normal_domain(const char *domain) {
    return !domain || !strcmp(domain, "ai.onnx") ? "" : domain;
}

static const Onnx__FunctionProto *find_function(const Onnx__ModelProto *m, const Onnx__NodeProto *n,
                                                size_t *index) {
    for (size_t i = 0; i < m->n_functions; i++) {
        const Onnx__FunctionProto *f = m->functions[i];
        if (!strcmp(or_empty(f->name), or_empty(n->op_type)) &&
            !strcmp(or_empty(f->domain), or_empty(n->domain)) &&
            !strcmp(or_empty(f->overload), or_empty(n->overload))) {
            *index = i;
            return f;
        }
    }
    return NULL;
}

/* The function body must run under the model's opsets: one version per domain in the IR. A
 * domain the model does not import is added to it. */
static void check_opsets(inliner *in, const Onnx__FunctionProto *f) {
    Onnx__ModelProto *m = in->m;
    for (size_t i = 0; i < f->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *fo = f->opset_import[i];
        const char *domain = normal_domain(fo->domain);
        size_t j = 0;
        while (j < m->n_opset_import && strcmp(normal_domain(m->opset_import[j]->domain), domain))
            j++;
        if (j < m->n_opset_import) {
            if (m->opset_import[j]->version != fo->version) {
                kc_error(in->d,
                         "function '%s' imports opset %lld of domain '%s' but the model imports "
                         "%lld; a domain can have only one version",
                         or_empty(f->name), (long long)fo->version, domain[0] ? domain : "ai.onnx",
                         (long long)m->opset_import[j]->version);
                in->errors++;
            }
            continue;
        }
        Onnx__OperatorSetIdProto **grown =
            realloc(m->opset_import, (m->n_opset_import + 1) * sizeof *grown);
        if (grown) m->opset_import = grown;
        Onnx__OperatorSetIdProto *o = grown ? malloc(sizeof *o) : NULL;
        if (o) {
            Onnx__OperatorSetIdProto init = ONNX__OPERATOR_SET_ID_PROTO__INIT;
            *o = init;
            o->domain = strdup(domain);
        }
        if (!o || !o->domain) {
            free(o);
            kc_error(in->d, "out of memory inlining function '%s'", or_empty(f->name));
            in->errors++;
            return;
        }
        o->has_version = 1;
        o->version = fo->version;
        m->opset_import[m->n_opset_import++] = o;
    }
}

/* Deep copies through the wire format: every part of the copy is malloc'ed, as protobuf-c
 * unpacking makes it, so the model can still be freed with free_unpacked. */
static Onnx__NodeProto *copy_node(const Onnx__NodeProto *n) {
    size_t size = onnx__node_proto__get_packed_size(n);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return NULL;
    onnx__node_proto__pack(n, buf);
    Onnx__NodeProto *copy = onnx__node_proto__unpack(NULL, size, buf);
    free(buf);
    return copy;
}

static Onnx__AttributeProto *copy_attr(const Onnx__AttributeProto *a, const char *name) {
    size_t size = onnx__attribute_proto__get_packed_size(a);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return NULL;
    onnx__attribute_proto__pack(a, buf);
    Onnx__AttributeProto *copy = onnx__attribute_proto__unpack(NULL, size, buf);
    free(buf);
    if (copy) {
        char *n = strdup(name);
        if (!n) {
            onnx__attribute_proto__free_unpacked(copy, NULL);
            return NULL;
        }
        free(copy->name);
        copy->name = n;
    }
    return copy;
}

static Onnx__ValueInfoProto *copy_value_info(const Onnx__ValueInfoProto *vi) {
    size_t size = onnx__value_info_proto__get_packed_size(vi);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return NULL;
    onnx__value_info_proto__pack(vi, buf);
    Onnx__ValueInfoProto *copy = onnx__value_info_proto__unpack(NULL, size, buf);
    free(buf);
    return copy;
}

typedef struct expansion {
    const Onnx__FunctionProto *f;
    const Onnx__NodeProto *call;
    const char *prefix;
    rename_map map;
} expansion;

/* The graph name for a body name: formals map to the call's values (set up front); anything
 * else is internal to the body and gets a fresh name on first sight. */
static int rename_value(inliner *in, expansion *x, char **name) {
    if (!*name || !(*name)[0]) return 0;
    const char *to = map_get(&x->map, *name);
    char *fresh = NULL;
    if (!to) {
        fresh = fresh_name(in, x->prefix, *name);
        if (!fresh || map_put(&x->map, *name, fresh) != 0) {
            free(fresh);
            return -1;
        }
        to = map_get(&x->map, *name);
        free(fresh);
    }
    char *copy = strdup(to);
    if (!copy) return -1;
    free(*name);
    *name = copy;
    return 0;
}

static int bind_graph(inliner *in, expansion *x, Onnx__GraphProto *g);

/* Resolves @references in a node's attributes (dropping those the call leaves unset and the
 * function gives no default), renames its values, and recurses into its subgraphs. */
static int bind_node(inliner *in, expansion *x, Onnx__NodeProto *n) {
    for (size_t i = 0; i < n->n_input; i++)
        if (rename_value(in, x, &n->input[i])) return -1;
    for (size_t i = 0; i < n->n_output; i++)
        if (rename_value(in, x, &n->output[i])) return -1;
    size_t kept = 0;
    for (size_t i = 0; i < n->n_attribute; i++) {
        Onnx__AttributeProto *a = n->attribute[i];
        if (a->ref_attr_name && a->ref_attr_name[0]) {
            const Onnx__AttributeProto *value = NULL;
            for (size_t j = 0; j < x->call->n_attribute && !value; j++)
                if (!strcmp(or_empty(x->call->attribute[j]->name), a->ref_attr_name))
                    value = x->call->attribute[j];
            for (size_t j = 0; j < x->f->n_attribute_proto && !value; j++)
                if (!strcmp(or_empty(x->f->attribute_proto[j]->name), a->ref_attr_name))
                    value = x->f->attribute_proto[j];
            Onnx__AttributeProto *bound = value ? copy_attr(value, or_empty(a->name)) : NULL;
            if (value && !bound) return -1;
            onnx__attribute_proto__free_unpacked(a, NULL);
            if (!bound) continue;
            a = bound;
        }
        n->attribute[kept++] = a;
        if (a->g && bind_graph(in, x, a->g)) return -1;
        for (size_t j = 0; j < a->n_graphs; j++)
            if (bind_graph(in, x, a->graphs[j])) return -1;
    }
    n->n_attribute = kept;
    return 0;
}

static int bind_graph(inliner *in, expansion *x, Onnx__GraphProto *g) {
    for (size_t i = 0; i < g->n_input; i++)
        if (rename_value(in, x, &g->input[i]->name)) return -1;
    for (size_t i = 0; i < g->n_output; i++)
        if (rename_value(in, x, &g->output[i]->name)) return -1;
    for (size_t i = 0; i < g->n_value_info; i++)
        if (rename_value(in, x, &g->value_info[i]->name)) return -1;
    for (size_t i = 0; i < g->n_initializer; i++)
        if (rename_value(in, x, &g->initializer[i]->name)) return -1;
    for (size_t i = 0; i < g->n_node; i++)
        if (bind_node(in, x, g->node[i])) return -1;
    return 0;
}

/* A growing list of nodes, the new contents of a graph. */
typedef struct node_list {
    Onnx__NodeProto **nodes;
    size_t n, cap;
} node_list;

static int push_node(node_list *l, Onnx__NodeProto *n) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        Onnx__NodeProto **a = realloc(l->nodes, cap * sizeof *a);
        if (!a) return -1;
        l->nodes = a;
        l->cap = cap;
    }
    l->nodes[l->n++] = n;
    return 0;
}

static int inline_graph(inliner *in, Onnx__GraphProto *g, int depth);
static int emit_node(inliner *in, Onnx__GraphProto *g, node_list *out, Onnx__NodeProto *n,
                     int depth);

/* Appends the body of function f, bound to call, to out. */
static int expand(inliner *in, Onnx__GraphProto *g, node_list *out, const Onnx__FunctionProto *f,
                  size_t index, const Onnx__NodeProto *call, int depth) {
    if (depth > MAX_CALL_DEPTH) {
        kc_error(in->d, "function '%s' calls functions more than %d deep (is it recursive?)",
                 or_empty(f->name), MAX_CALL_DEPTH);
        in->errors++;
        return -1;
    }
    if (!in->checked[index]) {
        in->checked[index] = 1;
        check_opsets(in, f);
    }
    expansion x;
    memset(&x, 0, sizeof x);
    x.f = f;
    x.call = call;
    x.prefix = call->name && call->name[0] ? call->name : or_empty(f->name);
    int failed = 0;
    for (size_t i = 0; i < f->n_input && !failed; i++)
        failed = map_put(&x.map, or_empty(f->input[i]),
                         i < call->n_input ? or_empty(call->input[i]) : "");
    for (size_t i = 0; i < f->n_output && !failed; i++) {
        if (i < call->n_output && call->output[i] && call->output[i][0]) {
            failed = map_put(&x.map, or_empty(f->output[i]), call->output[i]);
        } else { /* an output the call does not use still needs a name of its own */
            char *fresh = fresh_name(in, x.prefix, or_empty(f->output[i]));
            failed = !fresh || map_put(&x.map, or_empty(f->output[i]), fresh);
            free(fresh);
        }
    }
    for (size_t i = 0; i < f->n_node && !failed; i++) {
        Onnx__NodeProto *n = copy_node(f->node[i]);
        if (!n) {
            failed = 1;
            break;
        }
        if (bind_node(&*in, &x, n) != 0) {
            onnx__node_proto__free_unpacked(n, NULL);
            failed = 1;
            break;
        }
        if (n->name && n->name[0]) {
            char *name = fresh_name(in, x.prefix, n->name);
            if (!name) {
                onnx__node_proto__free_unpacked(n, NULL);
                failed = 1;
                break;
            }
            free(n->name);
            n->name = name;
        }
        if (emit_node(in, g, out, n, depth) != 0) {
            map_free(&x.map);
            return -1; /* already reported */
        }
    }
    /* The function's declared types of internal values become hints in the graph. */
    for (size_t i = 0; i < f->n_value_info && !failed; i++) {
        const char *to = map_get(&x.map, or_empty(f->value_info[i]->name));
        if (!to) continue;
        Onnx__ValueInfoProto *vi = copy_value_info(f->value_info[i]);
        Onnx__ValueInfoProto **grown =
            vi ? realloc(g->value_info, (g->n_value_info + 1) * sizeof *grown) : NULL;
        char *name = grown ? strdup(to) : NULL;
        if (grown) g->value_info = grown;
        if (!name) {
            if (vi) onnx__value_info_proto__free_unpacked(vi, NULL);
            failed = 1;
            break;
        }
        free(vi->name);
        vi->name = name;
        g->value_info[g->n_value_info++] = vi;
    }
    map_free(&x.map);
    if (failed) {
        kc_error(in->d, "out of memory inlining function '%s'", or_empty(f->name));
        in->errors++;
        return -1;
    }
    return 0;
}

/* Appends n to out, or the expansion of n when it calls a model-local function; takes n. */
static int emit_node(inliner *in, Onnx__GraphProto *g, node_list *out, Onnx__NodeProto *n,
                     int depth) {
    for (size_t i = 0; i < n->n_attribute; i++) {
        Onnx__AttributeProto *a = n->attribute[i];
        if (a->g && inline_graph(in, a->g, depth)) goto fail;
        for (size_t j = 0; j < a->n_graphs; j++)
            if (inline_graph(in, a->graphs[j], depth)) goto fail;
    }
    size_t index;
    const Onnx__FunctionProto *f = find_function(in->m, n, &index);
    if (!f) {
        if (push_node(out, n) == 0) return 0;
        kc_error(in->d, "out of memory inlining functions");
        in->errors++;
        goto fail;
    }
    int r = expand(in, g, out, f, index, n, depth + 1);
    onnx__node_proto__free_unpacked(n, NULL);
    return r;
fail:
    onnx__node_proto__free_unpacked(n, NULL);
    return -1;
}

static int inline_graph(inliner *in, Onnx__GraphProto *g, int depth) {
    node_list out = {NULL, 0, 0};
    size_t n_old = g->n_node;
    Onnx__NodeProto **old = g->node;
    g->node = NULL;
    g->n_node = 0;
    int r = 0;
    size_t i = 0;
    for (; i < n_old && r == 0; i++)
        r = emit_node(in, g, &out, old[i], depth);
    for (; i < n_old; i++)
        onnx__node_proto__free_unpacked(old[i], NULL);
    free(old);
    g->node = out.nodes;
    g->n_node = out.n;
    return r;
}

int kc_inline_functions(Onnx__ModelProto *m, kc_diag *d) {
    if (!m->n_functions || !m->graph) return 0;
    inliner in;
    memset(&in, 0, sizeof in);
    in.m = m;
    in.d = d;
    in.checked = calloc(m->n_functions, 1);
    if (!in.checked) {
        kc_error(d, "out of memory inlining functions");
        return 1;
    }
    collect_graph_names(&in, m->graph);
    inline_graph(&in, m->graph, 0);
    set_free(&in.names);
    free(in.checked);
    return in.errors;
}
