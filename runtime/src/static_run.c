/* The walker for static models (kann-c --emit c): records that already hold kernel function
 * pointers, so running needs no loader, no kernel table and no model bytes. */
#include "kann_format.h"
#include "kann_kernels.h"

kann_status kann_static_run_streams(const kann_static_model *m, void *arena, uint32_t first,
                                    uint32_t stride, kann_barrier_fn barrier, void *ctx) {
    if (m == 0 || (arena == 0 && m->arena_size != 0) || stride == 0 || first >= stride ||
        (barrier == 0 && stride > 1) || m->n_streams > KANN_MAX_STREAMS)
        return KANN_E_ARGUMENT;
    if ((uintptr_t)arena % 64 != 0) return KANN_E_ALIGNMENT;
    const kann_exec ex = {(uint8_t *)arena, (const uint8_t *)m->consts, NULL, NULL, NULL};
    /* One position per stream: stream s's phase p may read what any stream wrote in p - 1. */
    const kann_static_record *cursor[KANN_MAX_STREAMS];
    for (uint32_t i = first; i < m->n_streams; i += stride)
        cursor[i] = m->records + m->stream_first[i];
    for (uint32_t phase = 0; phase < m->n_phases; phase++) {
        for (uint32_t i = first; i < m->n_streams; i += stride) {
            const kann_static_record *r = cursor[i];
            for (; r->fn != 0; r++)
                r->fn(r->args, &ex);
            cursor[i] = r + 1;
        }
        if (barrier) barrier(ctx);
    }
    return KANN_OK;
}

kann_status kann_static_run(const kann_static_model *m, void *arena) {
    return kann_static_run_streams(m, arena, 0, 1, 0, 0);
}

static kann_status describe(const kann_static_model *m, void *arena, uint32_t index,
                            kann_tensor *t) {
    const kann_static_io *d = &m->io[index];
    t->name = d->name;
    t->dtype = d->dtype;
    t->rank = d->rank;
    for (uint32_t k = 0; k < KANN_MAX_IO_RANK; k++)
        t->dims[k] = d->dims[k];
    t->data = arena ? (uint8_t *)arena + d->offset : 0;
    t->size = d->size;
    return KANN_OK;
}

kann_status kann_static_input(const kann_static_model *m, void *arena, uint32_t i, kann_tensor *t) {
    if (m == 0 || t == 0) return KANN_E_ARGUMENT;
    if (i >= m->n_inputs) return KANN_E_NOT_FOUND;
    return describe(m, arena, i, t);
}

kann_status kann_static_output(const kann_static_model *m, void *arena, uint32_t i,
                               kann_tensor *t) {
    if (m == 0 || t == 0) return KANN_E_ARGUMENT;
    if (i >= m->n_outputs) return KANN_E_NOT_FOUND;
    return describe(m, arena, m->n_inputs + i, t);
}
