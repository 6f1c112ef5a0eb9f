/* kann_profile_run: times every record of a model, single-threaded, walking the streams phase
 * by phase through the model's read-only accessors, and groups the records of one call. A row's
 * time is the median over the runs of its records' sum in each run: on a shared host a few runs
 * that lose the core for a while move a mean far more than a median. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_private.h"
#include "kann_kernels.h"
#include "kann_profile.h"

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

kann_status kann_profile_run(kann_session *s, uint32_t runs, kann_profile_row **rows,
                             uint32_t *n_rows, kann_error *err) {
    if (!s || !s->model || !rows || !n_rows || runs == 0)
        return kann_host_fail(err, KANN_E_ARGUMENT, "kann_profile_run: bad arguments");
    const kann_model *m = s->model;
    uint32_t n_streams = kann_model_n_streams(m), n_phases = kann_model_n_phases(m);
    uint32_t n_records = kann_model_n_records(m);
    /* row_of[r]: the row record r adds to, filled on the first run */
    uint32_t *row_of = malloc(sizeof(uint32_t) * (n_records ? n_records : 1));
    uint32_t *cursor = malloc(sizeof(uint32_t) * n_streams);
    kann_profile_row *out = calloc(n_records ? n_records : 1, sizeof *out);
    /* per_run[row * runs + run]: the row's time in that run (ms), allocated once the first run
     * has found the rows; that run's times wait in out[row].ms */
    float *per_run = NULL;
    if (!row_of || !cursor || !out) goto out_of_memory;
    uint32_t n = 0;
    for (uint32_t run = 0; run < runs; run++) {
        if (run == 1) {
            per_run = calloc((size_t)(n ? n : 1) * runs, sizeof *per_run);
            if (!per_run) goto out_of_memory;
            for (uint32_t i = 0; i < n; i++)
                per_run[(size_t)i * runs] = (float)out[i].ms;
        }
        for (uint32_t st = 0; st < n_streams; st++) {
            uint32_t count;
            kann_model_stream(m, st, &cursor[st], &count);
        }
        for (uint32_t phase = 0; phase < n_phases; phase++) {
            uint32_t phase_first_row = n;
            for (uint32_t st = 0; st < n_streams; st++) {
                for (;;) {
                    uint32_t r = cursor[st]++, kernel, size;
                    const void *args;
                    kann_model_record(m, r, &kernel, &args, &size);
                    if (kernel == KANN_KERNEL_BARRIER) break;
                    const kann_tile *tile = args; /* the whole record, as the walker runs it */
                    double t0 = now_ms();
                    kann_session_run_part(s, r, tile->begin, tile->end);
                    double dt = now_ms() - t0;
                    if (run == 0) {
                        const char *node = kann_model_record_node(m, r);
                        const char *name = kann_kernels[kernel].name;
                        uint32_t row = n;
                        for (uint32_t i = phase_first_row; i < n; i++)
                            if (!strcmp(out[i].node, node) && !strcmp(out[i].kernel, name)) row = i;
                        if (row == n) {
                            out[n].node = node;
                            out[n].kernel = name;
                            n++;
                        }
                        out[row].n_records++;
                        out[row].macs += kann_record_macs(kernel, args);
                        row_of[r] = row;
                        out[row].ms += dt;
                    } else {
                        per_run[(size_t)row_of[r] * runs + run] += (float)dt;
                    }
                }
            }
        }
    }
    for (uint32_t i = 0; per_run && i < n; i++) {
        float *t = per_run + (size_t)i * runs;
        qsort(t, runs, sizeof *t, cmp_float);
        out[i].ms = runs % 2 ? t[runs / 2] : 0.5 * ((double)t[runs / 2 - 1] + t[runs / 2]);
    }
    free(per_run);
    free(row_of);
    free(cursor);
    *rows = out;
    *n_rows = n;
    if (err) {
        err->status = KANN_OK;
        err->message[0] = '\0';
    }
    return KANN_OK;
out_of_memory:
    free(row_of);
    free(cursor);
    free(out);
    return kann_host_fail(err, KANN_E_RUNTIME, "kann_profile_run: out of memory");
}
