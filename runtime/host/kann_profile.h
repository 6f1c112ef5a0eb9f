/* kann_profile.h — per-layer timing of a model on the CPU: every record run alone in one
 * thread, phase by phase as the walker does, with a clock around it. */
#ifndef KANN_PROFILE_H
#define KANN_PROFILE_H

#include <stdint.h>

#include "kann.h"

typedef struct kann_profile_row {
    const char *node;   /* the source node ("" if none); points into the model */
    const char *kernel; /* kernel name */
    uint32_t n_records; /* tiles of this call (across streams) */
    double macs;        /* multiply-adds per run */
    double ms;          /* median time per run */
} kann_profile_row;

/* Runs the session runs times record by record; one row per call (the consecutive records of
 * one node and kernel in a phase), in run order. *rows is malloc'd (free it). */
kann_status kann_profile_run(kann_session *s, uint32_t runs, kann_profile_row **rows,
                             uint32_t *n_rows, kann_error *err);

#endif
