/* Helpers shared by the host layer's files only. */
#ifndef KANN_HOST_PRIVATE_H
#define KANN_HOST_PRIVATE_H

#include "kann_host.h"

/* Sets err (if not NULL) to s and a printf-formatted message; returns s. */
kann_status kann_host_fail(kann_error *err, kann_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reads a whole file into a malloc'd buffer (for tensor files, which are parsed, not mapped). */
kann_status kann_host_read_all(const char *path, void **data, size_t *size, kann_error *err);

#endif
