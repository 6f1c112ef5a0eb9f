/* Helpers shared by the core's files and nothing else: error formatting and the few string
 * routines a freestanding build lacks. Not part of the public API. */
#ifndef KANN_PRIVATE_H
#define KANN_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "kann.h"

/* Sets err (if not NULL) to status s and a message formatted from fmt, which understands
 * %s %c %d %u %x %llu %llx, an optional '0' flag and a width. Returns s. */
kann_status kann_rt_fail(kann_error *err, kann_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Clears err to KANN_OK and an empty message (err may be NULL). Returns KANN_OK. */
kann_status kann_rt_ok(kann_error *err);

size_t kann_rt_strlen(const char *s);
int kann_rt_streq(const char *a, const char *b);

#endif
