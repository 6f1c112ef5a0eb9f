/* The walker: runs a validated model's record streams phase by phase. kann_model_open proved
 * every record safe, so these loops do no checks at all. */
#include <string.h>

#include "kann_format.h"
#include "kann_kernels.h"
#include "cpu_dispatch.h"
#include "kann_private.h"

/* Runs records from *cursor up to and including the next barrier. */
static inline void run_phase(const kann_model *m, const kann_exec *ex, uint32_t *cursor) {
    const kann_record *r = (const kann_record *)m->records + *cursor;
    while (r->kernel != KANN_KERNEL_BARRIER) {
        m->kernels[r->kernel](m->args + r->args_offset, ex);
        r++;
    }
    *cursor = (uint32_t)(r - (const kann_record *)m->records) + 1;
}

kann_status kann_session_run(kann_session *s, kann_error *err) {
    if (s == 0 || s->model == 0 || s->model->bytes == 0)
        return kann_rt_fail(err, KANN_E_ARGUMENT, "kann_session_run: session not initialized");
    const kann_model *m = s->model;
    const kann_stream_desc *sd = (const kann_stream_desc *)m->streams;
    const kann_exec ex = {s->arena, m->consts, NULL, NULL, m->prepared};
    /* One position per stream: stream s's phase p may read what any stream wrote in p - 1. */
    uint32_t cursor[KANN_MAX_STREAMS];
    for (uint32_t i = 0; i < m->n_streams; i++)
        cursor[i] = sd[i].first;
    for (uint32_t phase = 0; phase < m->n_phases; phase++)
        for (uint32_t i = 0; i < m->n_streams; i++)
            run_phase(m, &ex, &cursor[i]);
    return kann_rt_ok(err);
}

kann_status kann_session_run_streams(kann_session *s, uint32_t first, uint32_t stride,
                                     kann_barrier_fn barrier, void *ctx) {
    if (s == 0 || s->model == 0 || s->model->bytes == 0 || stride == 0 || first >= stride ||
        (barrier == 0 && stride > 1))
        return KANN_E_ARGUMENT;
    const kann_model *m = s->model;
    const kann_stream_desc *sd = (const kann_stream_desc *)m->streams;
    const kann_exec ex = {s->arena, m->consts, NULL, NULL, m->prepared};
    uint32_t cursor[KANN_MAX_STREAMS];
    for (uint32_t i = first; i < m->n_streams; i += stride)
        cursor[i] = sd[i].first;
    for (uint32_t phase = 0; phase < m->n_phases; phase++) {
        for (uint32_t i = first; i < m->n_streams; i += stride)
            run_phase(m, &ex, &cursor[i]);
        if (barrier) barrier(ctx);
    }
    return KANN_OK;
}

kann_status kann_session_run_phase(kann_session *s, uint32_t *cursor) {
    if (s == 0 || s->model == 0 || s->model->bytes == 0 || cursor == 0 ||
        *cursor >= s->model->n_records)
        return KANN_E_ARGUMENT;
    const kann_exec ex = {s->arena, s->model->consts, NULL, NULL, s->model->prepared};
    run_phase(s->model, &ex, cursor);
    return KANN_OK;
}

uint32_t kann_model_skip_phase(const kann_model *m, uint32_t cursor) {
    if (m == 0 || m->bytes == 0 || cursor >= m->n_records) return cursor;
    const kann_record *r = (const kann_record *)m->records + cursor;
    while (r->kernel != KANN_KERNEL_BARRIER)
        r++;
    return (uint32_t)(r - (const kann_record *)m->records) + 1;
}

uint32_t kann_model_record_parts(const kann_model *m, uint32_t r, uint32_t *begin, uint32_t *end,
                                 double *work) {
    double w = 0.0;
    if (begin) *begin = 0;
    if (end) *end = 0;
    if (work) *work = 0.0;
    if (m == 0 || m->bytes == 0 || r >= m->n_records) return 0;
    const kann_record *rec = (const kann_record *)m->records + r;
    if (rec->kernel == KANN_KERNEL_BARRIER) return 0;
    const void *args = m->args + rec->args_offset;
    const kann_tile *t = args;
    if (begin) *begin = t->begin;
    if (end) *end = t->end;
    uint32_t g = kann_kernel_part_granule(rec->kernel, args, &w);
    if (g && !kann_cpu_parts_pay(m, rec->kernel, args)) g = 0, w = 0.0;
    if (work) *work = w;
    return g;
}

uint32_t kann_model_record_slots(const kann_model *m, uint32_t r, int *claims) {
    if (claims) *claims = 0;
    if (m == 0 || m->bytes == 0 || r >= m->n_records) return 0;
    const kann_record *rec = (const kann_record *)m->records + r;
    if (rec->kernel == KANN_KERNEL_BARRIER) return 0;
    const void *args = m->args + rec->args_offset;
    double work;
    if (kann_kernel_part_granule(rec->kernel, args, &work) == 0) return 0;
    if (claims) *claims = kann_kernel_part_claims(rec->kernel);
    return kann_kernel_part_slots(rec->kernel, args);
}

int kann_model_record_free(const kann_model *m, uint32_t r) {
    if (m == 0 || m->bytes == 0 || r >= m->n_records) return 0;
    return (((const kann_record *)m->records)[r].flags & KANN_RECORD_FREE) != 0;
}

kann_status kann_session_run_part(kann_session *s, uint32_t r, uint32_t begin, uint32_t end) {
    return kann_session_run_part_in(s, r, begin, end, 0, 0, 0);
}

kann_status kann_session_run_part_in(kann_session *s, uint32_t r, uint32_t begin, uint32_t end,
                                     uint32_t slot, int (*claim)(void *ctx, uint32_t at),
                                     void *claim_ctx) {
    if (s == 0 || s->model == 0 || s->model->bytes == 0 || r >= s->model->n_records)
        return KANN_E_ARGUMENT;
    const kann_model *m = s->model;
    const kann_record *rec = (const kann_record *)m->records + r;
    if (rec->kernel == KANN_KERNEL_BARRIER) return KANN_E_ARGUMENT;
    const void *args = m->args + rec->args_offset;
    const kann_exec ex = {s->arena, m->consts, claim, claim_ctx, m->prepared};
    const kann_tile *tile = args;
    uint32_t lo = tile->begin, hi = tile->end;
    if (begin == lo && end == hi && slot == 0) { /* the whole record */
        m->kernels[rec->kernel](args, &ex);
        return KANN_OK;
    }
    double work;
    uint32_t g = kann_kernel_part_granule(rec->kernel, args, &work);
    if (g == 0 || rec->args_size > KANN_PART_ARGS_MAX || begin < lo || begin >= end || end > hi ||
        (begin - lo) % g != 0 || (end != hi && (end - lo) % g != 0) ||
        (slot != 0 && slot >= kann_kernel_part_slots(rec->kernel, args)))
        return KANN_E_ARGUMENT;
    _Alignas(8) unsigned char a[KANN_PART_ARGS_MAX];
    memcpy(a, args, rec->args_size);
    kann_kernel_part_args(rec->kernel, a, begin, end, slot);
    m->kernels[rec->kernel](a, &ex);
    return KANN_OK;
}
