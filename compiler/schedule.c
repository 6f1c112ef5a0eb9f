/* Scheduling: every kernel call is cut into tiles, one per stream, along the tile axis that
 * splits most evenly; each call is one phase and every stream ends it with a barrier, so
 * the P streams finish each layer together and the next layer sees all of it. */
#include <stdlib.h>

#include "kann_kernels.h"
#include "lower.h"

/* Tiles of axis with extent e and granule q over P streams: how unbalanced is it? The cost
 * is the largest tile, in granules. */
static uint32_t largest_tile(uint32_t e, uint32_t q, int P) {
    uint32_t granules = (e + q - 1) / q;
    return (granules + (uint32_t)P - 1) / (uint32_t)P * q;
}

static void push(kc_schedule *s, int stream, kc_tile_record r, int *caps) {
    if (s->counts[stream] == caps[stream]) {
        caps[stream] = caps[stream] ? 2 * caps[stream] : 64;
        s->streams[stream] = realloc(s->streams[stream], sizeof(kc_tile_record) * (size_t)caps[stream]);
        if (!s->streams[stream]) abort();
    }
    s->streams[stream][s->counts[stream]++] = r;
}

int kc_schedule_program(const kc_graph *g, const kc_program *p, int n_streams, kc_schedule *s,
                        kc_diag *d) {
    (void)g;
    if (n_streams < 1 || n_streams > 256) {
        kc_error(d, "the number of streams must be in 1..256, not %d", n_streams);
        return 1;
    }
    s->n_streams = n_streams;
    s->n_phases = 0;
    s->streams = calloc((size_t)n_streams, sizeof *s->streams);
    s->counts = calloc((size_t)n_streams, sizeof *s->counts);
    int *caps = calloc((size_t)n_streams, sizeof *caps);
    if (!s->streams || !s->counts || !caps) abort();
    const kc_tile_record barrier = {-1, 0, 0, 0};
    for (int ci = 0; ci < p->n_calls; ci++) {
        const kc_call *c = &p->calls[ci];
        /* Pick the axis whose largest tile is smallest relative to its extent. */
        int axis = 0;
        if (kann_kernels[c->kernel].n_tile_axes > 1 && c->extents[1] > 0) {
            double r0 = (double)largest_tile(c->extents[0], c->granules[0], n_streams) / c->extents[0];
            double r1 = (double)largest_tile(c->extents[1], c->granules[1], n_streams) / c->extents[1];
            if (c->extents[0] == 0 || r1 < r0) axis = 1;
        }
        uint32_t e = c->extents[axis], q = c->granules[axis];
        uint32_t granules = (e + q - 1) / q;
        uint32_t begin = 0;
        for (int st = 0; st < n_streams; st++) {
            /* Spread the granules: the first (granules % P) streams get one more. */
            uint32_t share = granules / (uint32_t)n_streams + ((uint32_t)st < granules % (uint32_t)n_streams);
            uint32_t end = begin + share * q;
            if (end > e) end = e;
            if (end > begin || (st == 0 && e == 0)) {
                kc_tile_record r = {ci, (uint32_t)axis, begin, end};
                push(s, st, r, caps);
            }
            begin = end;
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
    return 0;
}

void kc_schedule_free(kc_schedule *s) {
    for (int i = 0; s->streams && i < s->n_streams; i++) free(s->streams[i]);
    free(s->streams);
    free(s->counts);
    s->streams = NULL;
    s->counts = NULL;
}
