/* Scheduling: every kernel call is cut into tiles, one per stream, along one of its tile axes;
 * each call is one phase and every stream ends it with a barrier, so the P streams finish each
 * layer together and the next layer sees all of it.
 *
 * The axis of each call comes from a cost model over the whole program. A tile's time is its
 * share of the call's work (the largest tile, in granules) plus the bytes it reads that another
 * stream wrote in an earlier phase: those come from the other core's cache, and on the 2-core
 * machine a 1x1 conv over a 56x56x144 map split along channels after a depthwise layer split the
 * same way took twice as long (0.24 vs 0.10 ms) as split along pixels after pixel-split layers.
 * Splitting along pixels makes every stream read all the weights, and on small maps the pixel
 * granules balance badly, so neither axis wins everywhere: the choice starts from the best
 * balanced axis of each call and flips single calls, then runs of consecutive calls (a chain
 * only pays off once all of it changes), while the modelled total falls.
 *
 * A conv that gathers or transforms its input into a scratch (im2col, Winograd tiles) may split
 * along output channels too: every stream has its own copy of the scratch (kc_bind_scratch)
 * and gathers all of it, which the model counts (kc_call.axis0_whole). Where the pixels split
 * badly that pays: a stride-2 3x3 conv over 10x10 outputs (64 + 36 pixels) goes along
 * channels. Winograd layers stay on tiles, where a block of 17 tiles costs about what one of 32
 * does (their transforms take 16 tiles a vector). Granules go out evenly, the extra ones to the
 * last streams (kc_spread): the last granule may be short, and its stream should not also get
 * an extra whole one (resnet18's 14x14 maps: 96 + 100 pixels, not 128 + 68).
 *
 * A call lowered to run whole on one stream (kc_call.stream: a partial sum of a pointwise conv,
 * lower_conv.c) takes no tiles: its record goes to that stream alone, and the other partials,
 * on the other streams, share its phase once the barriers between them are merged away. A call
 * may also hold the axis the lowering counted on (kc_call.fixed_axis: the depthwise conv whose
 * channel tiles those partials read).
 *
 * Afterwards (kc_schedule_merge_phases) the barrier between two calls goes where neither
 * writes a byte the other touches: the two branches of a fire module run in one phase, each
 * stream doing its tiles of both, so a stream that finishes one branch early starts on the
 * other instead of waiting. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower.h"
#include "lower_internal.h"

/* Tiles of axis with extent e and granule q over P streams (kc_spread): how unbalanced is it?
 * The cost is the largest tile, in elements, or where a part of a granule costs a whole one
 * (whole), in whole granules. */
static uint32_t largest_tile(uint32_t e, uint32_t q, int P, int whole) {
    uint32_t bounds[KC_MAX_STREAMS + 1], most = 0;
    kc_spread(e, q, P, bounds);
    for (int st = 0; st < P; st++) {
        uint32_t size = bounds[st + 1] - bounds[st];
        if (whole) size = (size + q - 1) / q * q;
        if (size > most) most = size;
    }
    return most;
}

static void push(kc_schedule *s, int stream, kc_tile_record r, int *caps) {
    if (s->counts[stream] == caps[stream]) {
        caps[stream] = caps[stream] ? 2 * caps[stream] : 64;
        s->streams[stream] = realloc(s->streams[stream], sizeof(kc_tile_record) * (size_t)caps[stream]);
        if (!s->streams[stream]) abort();
    }
    s->streams[stream][s->counts[stream]++] = r;
}

/* How the tiles of a call along an axis split a value they write: in leading blocks (the
 * output channels of an NCHW map, or a flat range of it), in inner blocks (the pixels or rows of
 * every plane), or not at all (constants, graph inputs). */
enum { SPLIT_NONE, SPLIT_LEAD, SPLIT_INNER };
/* What a tile reads of a value: all of it, or the part a leading or an inner split gives it. */
enum { READ_ALL, READ_LEAD, READ_INNER };

/* Model constants (ns): a byte another core wrote, a weight byte read from the shared cache,
 * and a multiply-add of each kernel family one core runs alone. */
#define NS_PER_REMOTE_BYTE 0.1
#define NS_PER_WEIGHT_BYTE 0.03
/* a byte another core wrote, to a kernel that streams it in order (remote_ns_per_byte) */
#define REMOTE_STREAMED 0.25
/* an element every tile along axis 0 gathers or transforms whole (kc_call.axis0_whole) */
#define NS_PER_WHOLE_ELEMENT 0.5

static double ns_per_mac(int kernel) {
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D_PACKED:
    case KANN_KERNEL_F32_CONV2D_MAXPOOL:
    case KANN_KERNEL_F32_DWBLOCK:
    case KANN_KERNEL_F32_MATMUL:
    case KANN_KERNEL_F32_POINTWISE_GAP:
    case KANN_KERNEL_F32_POINTWISE_LANES:
        return 0.02;
    case KANN_KERNEL_F32_CONV2D_WINOGRAD:
        return 0.01;
    case KANN_KERNEL_F32_DWCONV2D:
        return 0.06;
    default:
        return 0.005; /* data movement: macs counts elements */
    }
}

/* The convs: the input x is read whole by an output-channel tile and by its pixels (rows) by a
 * pixel tile; a depthwise tile reads only its own channels. */
static int conv_input_field(int kernel, uint32_t *field) {
    switch (kernel) {
    case KANN_KERNEL_F32_CONV2D_PACKED:
        *field = offsetof(kann_conv2d_packed_args, x);
        return 1;
    case KANN_KERNEL_F32_CONV2D_MAXPOOL:
        *field = offsetof(kann_conv2d_maxpool_args, x);
        return 1;
    case KANN_KERNEL_F32_CONV2D_WINOGRAD:
        *field = offsetof(kann_conv2d_winograd_args, x);
        return 1;
    case KANN_KERNEL_F32_POINTWISE_LANES:
        *field = offsetof(kann_pointwise_lanes_args, x);
        return 1;
    case KANN_KERNEL_F32_CONV2D:
    case KANN_KERNEL_F32_DWCONV2D:
        *field = offsetof(kann_conv2d_args, x);
        return 1;
    default:
        return 0;
    }
}

/* The tile axis that splits a kernel's weights: a conv's output channels, a matmul's columns. */
static int weight_axis(int kernel) {
    uint32_t field;
    return conv_input_field(kernel, &field) ? 0 : 1;
}

static int read_pattern(const kc_call *c, const kc_fixup *f, uint32_t axis) {
    uint32_t x_field;
    if (kann_kernels[c->kernel].n_tile_axes < 2) return READ_LEAD; /* flat ranges, planes */
    if (!conv_input_field(c->kernel, &x_field)) return READ_ALL;   /* matmul and the like */
    if (f->field == x_field && c->kernel != KANN_KERNEL_F32_DWCONV2D && axis == 0)
        return READ_ALL;
    return axis == 0 ? READ_LEAD : READ_INNER;
}

static double value_bytes(const kc_graph *g, int v) {
    const kc_value *val = kc_val(g, v);
    double n = (double)kc_dtype_size(val->dtype);
    for (int i = 0; i < val->rank; i++)
        n *= val->dims[i] > 0 ? (double)val->dims[i] : 1.0;
    return n;
}

static int root_of(const kc_graph *g, int v) {
    int64_t off;
    int r = kc_value_root(g, v, &off);
    return r >= 0 ? r : v;
}

/* The share of a call's work the busiest stream gets along axis. */
static double busiest_share(const kc_call *c, uint32_t axis, int P) {
    uint32_t e = c->extents[axis], q = c->granules[axis];
    if (e == 0) return 1.0;
    double whole = c->whole_granules & (1u << axis) ? (double)((e + q - 1) / q) * q : e;
    return (double)largest_tile(e, q, P, c->whole_granules & (1u << axis) ? 1 : 0) / whole;
}

/* A call's read or write of an arena value, as the model sees it. */
typedef struct sched_access {
    int root;         /* the value owning the bytes */
    int write;
    double bytes;
    uint8_t read[2];  /* READ_* along axis 0 and 1 */
} sched_access;

/* What does not change while the search flips axes, computed once: per call and axis its work
 * share and the weights every stream reads; its accesses [first[ci], first[ci + 1]). */
typedef struct sched_model {
    const kc_program *p;
    int P;
    double (*own_cost)[2];
    sched_access *acc;
    int *first;
    uint8_t *split; /* per value: SPLIT_* of its last writer, during an evaluation */
} sched_model;

static int model_init(sched_model *m, const kc_graph *g, const kc_program *p, int P) {
    int n = p->n_calls > 0 ? p->n_calls : 0, n_acc = 0;
    for (int ci = 0; ci < n; ci++)
        n_acc += p->calls[ci].n_fixups > 0 ? p->calls[ci].n_fixups : 0;
    m->p = p;
    m->P = P;
    m->own_cost = malloc(sizeof *m->own_cost * ((size_t)n + 1));
    m->acc = malloc(sizeof *m->acc * ((size_t)n_acc + 1));
    m->first = malloc(sizeof *m->first * ((size_t)n + 1));
    m->split = calloc((size_t)g->n_values, 1);
    if (!m->own_cost || !m->acc || !m->first || !m->split) abort();
    double fP = P;
    int k_acc = 0;
    for (int ci = 0; ci < n; ci++) {
        const kc_call *c = &p->calls[ci];
        int two = kann_kernels[c->kernel].n_tile_axes > 1;
        m->first[ci] = k_acc;
        for (uint32_t a = 0; a < 2; a++) {
            /* a call on one stream runs beside the others of its phase: its work over P */
            double share = c->stream >= 0 ? 1.0 / fP : busiest_share(c, a, P);
            double t = share * c->macs * ns_per_mac(c->kernel);
            /* row tiles of a depthwise conv refill their window rows for every channel group
             * and pay it per row: on one thread two row tiles of a 28x28x192 layer (14 rows
             * each) took 1.25x its two channel tiles, those of a 56x56 one about the same */
            if (c->kernel == KANN_KERNEL_F32_DWCONV2D && a == 1)
                t *= 1.0 + 3.5 * fP / (c->extents[1] > 0 ? c->extents[1] : 1);
            m->own_cost[ci][a] = t;
        }
        /* a tile along axis 0 does all of that work where one along axis 1 does its share */
        m->own_cost[ci][0] += NS_PER_WHOLE_ELEMENT * c->axis0_whole * (fP - 1) / fP;
        for (int k = 0; k < c->n_fixups; k++) {
            const kc_fixup *f = &c->fixups[k];
            if (f->value < 0) continue;
            double bytes = value_bytes(g, f->value);
            if (!f->write && kc_is_const(g, f->value)) {
                /* weights: a tile along the axis that splits them reads its part, any other
                 * tile all of them */
                for (uint32_t a = 0; a < 2; a++)
                    if (two && (int)a != weight_axis(c->kernel))
                        m->own_cost[ci][a] += NS_PER_WEIGHT_BYTE * bytes * (fP - 1) / fP;
                continue;
            }
            sched_access *x = &m->acc[k_acc++];
            x->root = root_of(g, f->value);
            x->write = f->write;
            x->bytes = bytes;
            x->read[0] = (uint8_t)read_pattern(c, f, 0);
            x->read[1] = (uint8_t)read_pattern(c, f, 1);
        }
    }
    m->first[n] = k_acc;
    return k_acc;
}

static void model_free(sched_model *m) {
    free(m->own_cost);
    free(m->acc);
    free(m->first);
    free(m->split);
}

/* What a byte another core wrote costs a kernel's reads. A pool walks each plane's rows once,
 * in order, and the hardware's prefetchers fetch ahead of it: squeezenet1_1's first max pool
 * took 15 us a stream on two threads whether the fire4 convs before it were split along
 * channels (its planes local) or along tiles (half of its 1.5 MB from the other core). At the
 * full cost the model kept that Winograd conv on channels, each stream transforming all of its
 * input: 91 / 97 us a stream against 74 / 85 on tiles, the whole model 1.266 -> 1.24 ms (medians
 * of alternated runs, the host's quiet state). */
static double remote_ns_per_byte(int kernel) {
    return kernel == KANN_KERNEL_F32_POOL2D ? NS_PER_REMOTE_BYTE * REMOTE_STREAMED
                                            : NS_PER_REMOTE_BYTE;
}

/* The modelled time (ns) of the program with call i split along axis[i]. */
static double program_cost(sched_model *m, const uint8_t *axis) {
    const kc_program *p = m->p;
    double P = m->P, total = 0.0;
    for (int k = 0; k < m->first[p->n_calls]; k++)
        m->split[m->acc[k].root] = SPLIT_NONE;
    for (int ci = 0; ci < p->n_calls; ci++) {
        uint32_t a = axis[ci];
        int two = kann_kernels[p->calls[ci].kernel].n_tile_axes > 1;
        double t = m->own_cost[ci][a], remote = remote_ns_per_byte(p->calls[ci].kernel);
        for (int k = m->first[ci]; k < m->first[ci + 1]; k++) {
            const sched_access *x = &m->acc[k];
            if (x->write) continue;
            int own = m->split[x->root], rd = x->read[a];
            if (own == SPLIT_NONE) continue;
            if (rd == READ_ALL)
                t += remote * x->bytes * (P - 1) / P;
            else if ((rd == READ_LEAD) != (own == SPLIT_LEAD))
                t += remote * x->bytes / P * (P - 1) / P;
        }
        for (int k = m->first[ci]; k < m->first[ci + 1]; k++)
            if (m->acc[k].write)
                m->split[m->acc[k].root] = p->calls[ci].stream >= 0 ? SPLIT_NONE
                                           : (!two || a == 0)       ? SPLIT_LEAD
                                                                    : SPLIT_INNER;
        total += t;
    }
    return total;
}

/* Whether call c's tiles along axis 0 may run on P streams at once: every scratch they each
 * write whole has a copy for every stream. */
static int axis0_fits(const kc_call *c, int P) {
    for (int k = 0; k < c->n_fixups; k++)
        if (c->fixups[k].copies > 0 && c->fixups[k].copies < P) return 0;
    return 1;
}

/* Whether call c may take either axis. */
static int has_choice(const kc_call *c, int P) {
    return c->fixed_axis < 0 && c->stream < 0 && kann_kernels[c->kernel].n_tile_axes > 1 &&
           c->extents[0] > 0 && c->extents[1] > 0 && axis0_fits(c, P);
}

/* Longest run of consecutive calls the search sets to one axis at once, and the work (calls
 * and accesses walked, over all evaluations) after which it stops: about 0.3 s. */
#define MAX_RUN 6
#define SEARCH_BUDGET 3e8

/* axis[i] for every call: the best balanced axis, then flips that lower program_cost. */
static void choose_axes(const kc_graph *g, const kc_program *p, int P, uint8_t *axis) {
    for (int ci = 0; ci < p->n_calls; ci++) {
        const kc_call *c = &p->calls[ci];
        axis[ci] = 0;
        if (c->fixed_axis >= 0 || c->stream >= 0) {
            axis[ci] = c->fixed_axis > 0 ? 1 : 0;
        } else if (kann_kernels[c->kernel].n_tile_axes > 1 && c->extents[1] > 0) {
            double r0 = busiest_share(c, 0, P), r1 = busiest_share(c, 1, P);
            if (c->extents[0] == 0 || r1 < r0 || !axis0_fits(c, P)) axis[ci] = 1;
        }
    }
    if (P < 2 || !g || g->n_values == 0 || p->n_calls == 0) return;
    sched_model m;
    int n_acc = model_init(&m, g, p, P);
    uint8_t *trial = malloc((size_t)p->n_calls);
    if (!trial) abort();
    double best = program_cost(&m, axis);
    double per_eval = (double)p->n_calls + n_acc, spent = per_eval;
    for (int round = 0; round < 4 && spent < SEARCH_BUDGET; round++) {
        int improved = 0;
        for (int i = 0; i < p->n_calls; i++) {
            if (!has_choice(&p->calls[i], P)) continue;
            for (int len = 1; len <= MAX_RUN && i + len <= p->n_calls; len++) {
                for (uint8_t to = 0; to < 2; to++) {
                    memcpy(trial, axis, (size_t)p->n_calls);
                    int changed = 0;
                    for (int j = i; j < i + len; j++)
                        if (has_choice(&p->calls[j], P) && trial[j] != to) {
                            trial[j] = to;
                            changed = 1;
                        }
                    if (!changed || spent >= SEARCH_BUDGET) continue;
                    double cost = program_cost(&m, trial);
                    spent += per_eval;
                    if (cost < best * (1.0 - 1e-9)) {
                        best = cost;
                        memcpy(axis, trial, (size_t)p->n_calls);
                        improved = 1;
                    }
                }
            }
        }
        if (!improved) break;
    }
    free(trial);
    model_free(&m);
}

void kc_spread(uint32_t e, uint32_t q, int P, uint32_t *bounds) {
    uint32_t granules = (e + q - 1) / q, begin = 0;
    bounds[0] = 0;
    for (int st = 0; st < P; st++) {
        uint32_t share = granules / (uint32_t)P +
                         ((uint32_t)st >= (uint32_t)P - granules % (uint32_t)P);
        uint32_t end = begin + share * q;
        if (end > e) end = e;
        bounds[st + 1] = begin = end;
    }
}

int kc_schedule_program(const kc_graph *g, const kc_program *p, int n_streams, kc_schedule *s,
                        kc_diag *d) {
    if (n_streams < 1 || n_streams > KC_MAX_STREAMS) {
        kc_error(d, "the number of streams must be in 1..%d, not %d", KC_MAX_STREAMS, n_streams);
        return 1;
    }
    s->n_streams = n_streams;
    s->n_phases = 0;
    s->streams = calloc((size_t)n_streams, sizeof *s->streams);
    s->counts = calloc((size_t)n_streams, sizeof *s->counts);
    int *caps = calloc((size_t)n_streams, sizeof *caps);
    if (!s->streams || !s->counts || !caps) abort();
    const kc_tile_record barrier = {-1, 0, 0, 0};
    uint8_t *axes = malloc((size_t)p->n_calls + 1);
    uint32_t *bounds = malloc(sizeof(uint32_t) * ((size_t)n_streams + 1));
    if (!axes || !bounds) abort();
    choose_axes(g, p, n_streams, axes);
    for (int ci = 0; ci < p->n_calls; ci++) {
        const kc_call *c = &p->calls[ci];
        int axis = axes[ci];
        uint32_t e = c->extents[axis], q = c->granules[axis];
        if (c->stream >= 0) { /* whole, on its stream */
            kc_tile_record r = {ci, (uint32_t)axis, 0, e};
            push(s, c->stream % n_streams, r, caps);
        } else {
            kc_spread(e, q, n_streams, bounds);
            for (int st = 0; st < n_streams; st++)
                if (bounds[st + 1] > bounds[st] || (st == 0 && e == 0)) {
                    kc_tile_record r = {ci, (uint32_t)axis, bounds[st], bounds[st + 1]};
                    push(s, st, r, caps);
                }
        }
        /* With one stream no barrier is needed between calls: one phase in all. */
        if (n_streams > 1) {
            for (int st = 0; st < n_streams; st++) push(s, st, barrier, caps);
            s->n_phases++;
        }
    }
    if (n_streams == 1 || s->n_phases == 0) {
        for (int st = 0; st < n_streams; st++) push(s, st, barrier, caps);
        s->n_phases = 1;
    }
    free(caps);
    free(axes);
    free(bounds);
    return 0;
}

/* Whether call c has a scratch that its tiles along either axis write whole. */
static int calls_private(const kc_call *c) {
    for (int k = 0; k < c->n_fixups; k++)
        if (c->fixups[k].private_all) return 1;
    return 0;
}

int64_t kc_schedule_trim_scratch(kc_graph *g, kc_program *p, const kc_schedule *s) {
    /* per call: the streams holding a tile of it along axis 0 (or along either axis, where
     * its scratch is private to each stream whatever the axis) */
    int *along0 = calloc((size_t)p->n_calls + 1, sizeof(int));
    if (!along0) abort();
    for (int st = 0; st < s->n_streams; st++)
        for (int r = 0; r < s->counts[st]; r++) {
            const kc_tile_record *t = &s->streams[st][r];
            if (t->call >= 0 && t->end > t->begin &&
                (t->axis == 0 || calls_private(&p->calls[t->call])))
                along0[t->call]++;
        }
    int64_t saved = 0;
    for (int ci = 0; ci < p->n_calls; ci++) {
        if (along0[ci] > 1) continue;
        for (int k = 0; k < p->calls[ci].n_fixups; k++) {
            kc_fixup *f = &p->calls[ci].fixups[k];
            if (f->copies <= 1) continue;
            kc_value *v = &g->values[f->value];
            int64_t one = v->dims[0] / f->copies;
            saved += (v->dims[0] - one) * (int64_t)kc_dtype_size(v->dtype);
            v->dims[0] = one;
            f->copies = 1;
        }
    }
    free(along0);
    return saved;
}

void kc_schedule_free(kc_schedule *s) {
    for (int i = 0; s->streams && i < s->n_streams; i++) free(s->streams[i]);
    free(s->streams);
    free(s->counts);
    s->streams = NULL;
    s->counts = NULL;
}

/* ---- phases merged where no barrier is needed ---------------------------------------------- */

/* Bytes [lo, hi) of one root value that a call reads or writes; stream: the one stream the
 * call runs whole on (kc_call.stream), else -1. */
typedef struct span {
    int root;
    uint64_t lo, hi;
    int write;
    int stream;
} span;

/* lo + bytes, saturated: a value the memory plan will refuse as too large (dims of a corrupt
 * model) may well have more bytes than a uint64_t holds. */
static uint64_t span_end(uint64_t lo, double bytes) {
    if (!(bytes < 18446744073709551616.0)) return UINT64_MAX; /* 2^64, and NaN */
    uint64_t b = (uint64_t)bytes;
    return b > UINT64_MAX - lo ? UINT64_MAX : lo + b;
}

/* The bytes call c touches through its fixups: a value's own bytes (a view's inside its root),
 * a slice's bytes where the binding gives their length (kc_bind_slice), else the whole root
 * where the binding adds an offset of its own. Constants are never written and take no part.
 * Returns the count. */
static int call_spans(const kc_graph *g, const kc_call *c, span *out) {
    int n = 0;
    for (int k = 0; k < c->n_fixups; k++) {
        const kc_fixup *f = &c->fixups[k];
        if (f->value < 0 || kc_is_const(g, f->value)) continue;
        int64_t off;
        int root = kc_value_root(g, f->value, &off);
        out[n].root = root;
        if (f->byte_len > 0) {
            out[n].lo = (uint64_t)(off + f->byte_offset);
            out[n].hi = span_end(out[n].lo, (double)f->byte_len);
        } else {
            int whole = f->byte_offset != 0;
            out[n].lo = whole ? 0 : (uint64_t)off;
            out[n].hi = span_end(out[n].lo, value_bytes(g, whole ? root : f->value));
        }
        out[n].write = f->write;
        out[n].stream = c->stream;
        n++;
    }
    return n;
}

/* Whether two sets of spans share a byte that one of them writes; in_order: but for calls that
 * both run whole on one stream, whose records run in order (a stream's partial sums,
 * lower_conv.c). */
static int spans_conflict(const span *a, int na, const span *b, int nb, int in_order) {
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if ((a[i].write || b[j].write) && a[i].root == b[j].root && a[i].lo < b[j].hi &&
                b[j].lo < a[i].hi && (!in_order || a[i].stream < 0 || a[i].stream != b[j].stream))
                return 1;
    return 0;
}

void kc_schedule_free_records(const kc_graph *g, const kc_program *p, const kc_schedule *s, int st,
                              uint8_t *is_free) {
    int n = s->counts[st];
    const kc_tile_record *recs = s->streams[st];
    for (int i = 0; i < n; i++)
        is_free[i] = s->n_streams > 1 && recs[i].call >= 0;
    if (s->n_streams < 2) return;
    /* each record's spans, once: sp[i * KC_MAX_FIXUPS ...], n_sp[i] of them */
    span *sp = malloc(sizeof(span) * KC_MAX_FIXUPS * ((size_t)n + 1));
    int *n_sp = malloc(sizeof(int) * ((size_t)n + 1));
    if (!sp || !n_sp) abort();
    for (int i = 0; i < n; i++)
        n_sp[i] =
            recs[i].call < 0 ? 0 : call_spans(g, &p->calls[recs[i].call], sp + i * KC_MAX_FIXUPS);
    /* each phase's records pairwise: a few dozen at most */
    for (int r0 = 0; r0 < n;) {
        int r1 = r0;
        while (r1 < n && recs[r1].call >= 0)
            r1++;
        for (int i = r0; i < r1; i++)
            for (int j = i + 1; j < r1; j++)
                if (recs[i].call == recs[j].call ||
                    spans_conflict(sp + i * KC_MAX_FIXUPS, n_sp[i], sp + j * KC_MAX_FIXUPS, n_sp[j],
                                   0))
                    is_free[i] = is_free[j] = 0;
        r0 = r1 + 1;
    }
    free(sp);
    free(n_sp);
}

/* Calls [first, end) make one phase. */
static void set_phase(kc_program *p, int first, int end) {
    for (int k = first; k < end; k++) {
        p->phase_first[k] = first;
        p->phase_last[k] = end - 1;
    }
}

/* Whether the host pool may cut record t of call c into parts that other threads run: a
 * granule (kann_kernel_part_granule, on the arguments as they will be emitted) and more than
 * one of them in the tile. */
static int record_shares(const kc_graph *g, const kc_call *c, const kc_tile_record *t, int st) {
    _Alignas(8) unsigned char args[KC_MAX_ARGS_BYTES];
    if (c->args_size > sizeof args) abort();
    kc_call_args(g, c, t, st, args);
    double work;
    uint32_t granule = kann_kernel_part_granule((uint32_t)c->kernel, args, &work);
    return granule != 0 && t->end - t->begin > granule;
}

/* Within each phase of stream st's records (independent calls, any order), those the pool may
 * share go last: a thread that has finished its own records can take parts of them, but not of
 * a record that only runs whole (a fire module's 3x3 branch on Winograd beside its shared 1x1
 * branch: run first, it no longer leaves the other thread waiting at the end of the phase).
 * A stable partition through tmp and shares (n entries each). */
static void shared_last(const kc_graph *g, const kc_program *p, int st, kc_tile_record *recs,
                        int n, kc_tile_record *tmp, uint8_t *shares) {
    for (int i = 0; i < n; i++)
        shares[i] = recs[i].call >= 0 && record_shares(g, &p->calls[recs[i].call], &recs[i], st);
    for (int r0 = 0; r0 < n;) {
        int r1 = r0, w = 0;
        while (r1 < n && recs[r1].call >= 0) r1++;
        for (int pass = 0; pass < 2; pass++)
            for (int i = r0; i < r1; i++)
                if (shares[i] == pass) tmp[w++] = recs[i];
        memcpy(recs + r0, tmp, sizeof *tmp * (size_t)w);
        r0 = r1 + 1;
    }
}

int kc_schedule_merge_phases(const kc_graph *g, kc_program *p, kc_schedule *s) {
    int n_ph = s->n_phases, n = p->n_calls;
    free(p->phase_first);
    free(p->phase_last);
    p->phase_first = p->phase_last = NULL;
    /* one stream runs its calls in order: no barriers, and each value's calls suffice */
    if (n < 1 || n_ph < 2 || s->n_streams < 2) return 0;
    int *phase_of = malloc(sizeof(int) * (size_t)n);
    uint8_t *keep = malloc((size_t)n_ph);
    span *cur = malloc(sizeof(span) * ((size_t)n * KC_MAX_FIXUPS + 1));
    span *next = malloc(sizeof(span) * ((size_t)n * KC_MAX_FIXUPS + 1));
    p->phase_first = malloc(sizeof(int) * (size_t)n);
    p->phase_last = malloc(sizeof(int) * (size_t)n);
    if (!phase_of || !keep || !cur || !next || !p->phase_first || !p->phase_last) abort();
    /* the phase of each call, from the streams' records (a call's tiles share one phase) */
    for (int ci = 0; ci < n; ci++)
        phase_of[ci] = 0;
    for (int st = 0; st < s->n_streams; st++)
        for (int r = 0, ph = 0; r < s->counts[st]; r++) {
            if (s->streams[st][r].call < 0)
                ph++;
            else
                phase_of[s->streams[st][r].call] = ph;
        }
    memset(keep, 1, (size_t)n_ph);
    /* Calls keep their order, so a phase is a run of them. Walk the runs: each run's spans
     * (next) against those of the calls since the last kept barrier (cur, from call start);
     * the barrier before the run stays where they conflict, ending the merged phase
     * [start, ci). */
    int n_cur = 0, merged = 0, start = 0;
    for (int ci = 0; ci < n;) {
        int end = ci + 1, n_next = 0;
        while (end < n && phase_of[end] == phase_of[ci]) end++;
        for (int k = ci; k < end; k++)
            n_next += call_spans(g, &p->calls[k], next + n_next);
        if (ci > 0 && !spans_conflict(cur, n_cur, next, n_next, 1)) {
            keep[phase_of[ci - 1]] = 0;
            merged++;
        } else if (ci > 0) {
            set_phase(p, start, ci);
            start = ci;
            n_cur = 0;
        }
        memcpy(cur + n_cur, next, sizeof(span) * (size_t)n_next);
        n_cur += n_next;
        ci = end;
    }
    set_phase(p, start, n);
    for (int st = 0; st < s->n_streams; st++) {
        int w = 0;
        for (int r = 0, ph = 0; r < s->counts[st]; r++) {
            kc_tile_record t = s->streams[st][r];
            if (t.call < 0 && !keep[ph++]) continue;
            s->streams[st][w++] = t;
        }
        s->counts[st] = w;
        kc_tile_record *tmp = malloc(sizeof *tmp * ((size_t)w + 1));
        uint8_t *shares = malloc((size_t)w + 1);
        if (!tmp || !shares) abort();
        shared_last(g, p, st, s->streams[st], w, tmp, shares);
        free(tmp);
        free(shares);
    }
    s->n_phases -= merged;
    free(phase_of);
    free(keep);
    free(cur);
    free(next);
    return merged;
}
