/* Emission: model.bin from the schedule, the plan and the packed constants, through the
 * kbin writer; written to a temporary file and renamed, so a failure leaves nothing behind. */
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "kbin_writer.h"
#include "lower.h"

static uint64_t value_bytes(const kc_value *v) {
    int64_t n = kc_value_numel(v);
    return n > 0 ? (uint64_t)n * kc_dtype_size(v->dtype) : 0;
}

/* Adds graph input/output v as an IO descriptor. */
static int add_io(kbin_writer *w, const kc_graph *g, kann_io_kind kind, int v, kc_diag *d) {
    const kc_value *val = &g->values[v];
    if (kann_dtype_size((uint32_t)val->dtype) == 0) {
        kc_error_value(d, g, v, "%s of type %s is not supported", kind == KANN_IO_INPUT ? "input" : "output",
                       kc_dtype_name(val->dtype));
        return 1;
    }
    if (val->rank > KANN_MAX_IO_RANK) {
        kc_error_value(d, g, v, "rank %d exceeds the I/O limit of %d", val->rank, KANN_MAX_IO_RANK);
        return 1;
    }
    uint32_t dims[KANN_MAX_IO_RANK];
    for (int i = 0; i < val->rank; i++) dims[i] = (uint32_t)val->dims[i];
    int64_t off;
    int root = kc_value_root(g, v, &off);
    if (kbin_add_io(w, kind, val->name, (uint32_t)val->dtype, (uint32_t)val->rank, dims,
                    (uint64_t)(g->values[root].offset + off))) {
        kc_error_value(d, g, v, "%s", kbin_writer_error(w));
        return 1;
    }
    return 0;
}

/* Adds every constant the calls read, in the planner's order (first use), checking that the
 * writer places each where the planner said. */
static int add_consts(kbin_writer *w, const kc_graph *g, const kc_program *p, kc_diag *d) {
    char *added = calloc((size_t)g->n_values + 1, 1);
    if (!added) abort();
    int errors = 0;
    for (int ci = 0; ci < p->n_calls && !errors; ci++) {
        const kc_call *c = &p->calls[ci];
        for (int f = 0; f < c->n_fixups; f++) {
            int64_t off;
            int r = kc_value_root(g, c->fixups[f].value, &off);
            if (!kc_is_const(g, r) || added[r]) continue;
            added[r] = 1;
            uint64_t at;
            const kc_value *v = &g->values[r];
            if (kbin_add_const(w, v->data, value_bytes(v), &at) || (int64_t)at != v->offset) {
                kc_error_value(d, g, r, "cannot place constant: %s", kbin_writer_error(w));
                errors++;
                break;
            }
        }
    }
    free(added);
    return errors;
}

static const char *call_name(const kc_graph *g, const kc_call *c) {
    if (c->node < 0) return "output copy";
    const kc_node *n = &g->nodes[c->node];
    return n->name[0] ? n->name : n->op_type;
}

void kc_call_args(const kc_graph *g, const kc_call *c, const kc_tile_record *r, int st,
                  void *buf) {
    memcpy(buf, c->args, c->args_size);
    kann_tile *t = buf;
    t->axis = r->axis;
    t->begin = r->begin;
    t->end = r->end;
    for (int f = 0; f < c->n_fixups; f++) {
        int64_t off;
        int root = kc_value_root(g, c->fixups[f].value, &off);
        int copies = c->fixups[f].copies;
        if (copies > 1 && (r->axis == 0 || c->fixups[f].private_all)) /* the stream's own copy */
            off += (int64_t)(value_bytes(&g->values[c->fixups[f].value]) / (uint64_t)copies) * st;
        kann_ref ref;
        ref.space = kc_is_const(g, root) ? KANN_SPACE_CONST : KANN_SPACE_ARENA;
        ref.reserved = 0;
        ref.offset = (uint64_t)(g->values[root].offset + off + c->fixups[f].byte_offset);
        memcpy((char *)buf + c->fixups[f].field, &ref, sizeof ref);
    }
}

int kc_build_model(const kc_graph *g, const kc_program *p, const kc_schedule *s,
                   const kc_plan *plan, const kc_emit_options *o, void **out, size_t *out_size,
                   kc_diag *d) {
    kbin_writer *w = kbin_writer_new();
    if (!w) abort();
    int errors = 0;
    kbin_set_arena_size(w, plan->arena_size);
    kbin_set_streams(w, (uint32_t)s->n_streams, (uint32_t)s->n_phases);
    kbin_add_meta(w, "producer", "kann-c");
    kbin_add_meta(w, "compiler_version", KC_VERSION);
    kbin_add_meta(w, "source", o && o->source_path ? o->source_path : g->source_path);
    if (o && o->source_hash) kbin_add_meta(w, "source_fnv1a64", o->source_hash);
    kbin_add_meta(w, "source_producer", g->producer);
    kbin_add_meta(w, "target", o && o->target ? o->target : "cpu");
    kbin_add_meta(w, "options", o && o->options ? o->options : "");
    for (int i = 0; i < g->n_inputs; i++) errors += add_io(w, g, KANN_IO_INPUT, g->inputs[i], d);
    for (int i = 0; i < g->n_outputs; i++) errors += add_io(w, g, KANN_IO_OUTPUT, g->outputs[i], d);
    if (!errors) errors += add_consts(w, g, p, d);
    _Alignas(8) unsigned char buf[KC_MAX_ARGS_BYTES];
    for (int st = 0; st < s->n_streams && !errors; st++) {
        uint8_t *is_free = malloc((size_t)s->counts[st] + 1);
        if (!is_free) abort();
        kc_schedule_free_records(g, p, s, st, is_free);
        for (int i = 0; i < s->counts[st]; i++) {
            const kc_tile_record *r = &s->streams[st][i];
            if (r->call < 0) {
                errors += kbin_add_barrier(w, (uint32_t)st) != 0;
                continue;
            }
            const kc_call *c = &p->calls[r->call];
            if (c->args_size > sizeof buf) abort();
            kc_call_args(g, c, r, st, buf);
            if (kbin_add_call_flags(w, (uint32_t)st, (uint32_t)c->kernel, call_name(g, c), buf,
                                    c->args_size, is_free[i] ? KANN_RECORD_FREE : 0)) {
                kc_error(d, "cannot emit call %d: %s", r->call, kbin_writer_error(w));
                errors++;
            }
        }
        free(is_free);
    }
    void *bin = NULL;
    size_t n = 0;
    if (!errors && kbin_finish(w, &bin, &n)) {
        kc_error(d, "cannot lay out the model: %s", kbin_writer_error(w));
        errors++;
    }
    kbin_writer_free(w);
    if (!errors) {
        /* The runtime's loader is the judge: never write a file it would refuse. */
        kann_model m;
        kann_error err;
        if (kann_model_open(&m, bin, n, &err) != KANN_OK) {
            kc_error(d, "internal error: the emitted model does not validate: %s", err.message);
            errors++;
        }
    }
    if (errors) {
        free(bin);
        return errors;
    }
    *out = bin;
    *out_size = n;
    return 0;
}

int kc_emit_model(const kc_graph *g, const kc_program *p, const kc_schedule *s,
                  const kc_plan *plan, const char *out_path, const kc_emit_options *o,
                  kc_diag *d) {
    void *bin = NULL;
    size_t n = 0;
    int errors = kc_build_model(g, p, s, plan, o, &bin, &n, d);
    if (!errors) {
        char msg[512];
        if (kbin_write_file_atomic(out_path, bin, n, msg, sizeof msg)) {
            kc_error(d, "%s", msg);
            errors = -1;
        }
    }
    free(bin);
    return errors;
}
