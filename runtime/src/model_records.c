/* Read-only accessors to a validated model's streams, records and sections, for backends that
 * enqueue the records elsewhere than the walker. */
#include "kann_format.h"
#include "kann_kernels.h"
#include "kann_private.h"

uint32_t kann_model_n_phases(const kann_model *m) {
    return m && m->bytes ? m->n_phases : 0;
}

uint32_t kann_model_n_records(const kann_model *m) {
    return m && m->bytes ? m->n_records : 0;
}

kann_status kann_model_stream(const kann_model *m, uint32_t s, uint32_t *first, uint32_t *count) {
    if (m == 0 || m->bytes == 0 || first == 0 || count == 0) return KANN_E_ARGUMENT;
    if (s >= m->n_streams) return KANN_E_NOT_FOUND;
    const kann_stream_desc *sd = (const kann_stream_desc *)m->streams + s;
    *first = sd->first;
    *count = sd->count;
    return KANN_OK;
}

kann_status kann_model_record(const kann_model *m, uint32_t r, uint32_t *kernel, const void **args,
                              uint32_t *args_size) {
    if (m == 0 || m->bytes == 0 || kernel == 0 || args == 0 || args_size == 0)
        return KANN_E_ARGUMENT;
    if (r >= m->n_records) return KANN_E_NOT_FOUND;
    const kann_record *rec = (const kann_record *)m->records + r;
    *kernel = rec->kernel;
    *args = rec->kernel == KANN_KERNEL_BARRIER ? 0 : m->args + rec->args_offset;
    *args_size = rec->args_size;
    return KANN_OK;
}

const void *kann_model_consts(const kann_model *m, uint64_t *size) {
    if (size) *size = m && m->bytes ? m->consts_size : 0;
    return m && m->bytes && m->consts_size ? m->consts : 0;
}

const void *kann_model_args(const kann_model *m, uint64_t *size) {
    if (size) *size = m && m->bytes ? m->args_size : 0;
    return m && m->bytes && m->args_size ? m->args : 0;
}
