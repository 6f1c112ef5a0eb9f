/* Diagnostics: errors and notes with context, counted so a pass can report every problem in
 * one run and the driver can stop before writing anything. */
#ifndef KC_DIAG_H
#define KC_DIAG_H

#include <stdio.h>

typedef struct kc_graph kc_graph;

typedef struct kc_diag {
    FILE *out; /* where messages go (stderr by default) */
    const char *file; /* the input file, prefixed to messages */
    int n_errors;
    int n_warnings;
    int quiet; /* suppress notes */
    int silent; /* print nothing, only count (a probe of whether something would pass) */
} kc_diag;

void kc_diag_init(kc_diag *d, const char *file, FILE *out);
/* "file: error: message" */
void kc_error(kc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kc_warning(kc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "file: error: node 'name' (Conv, opset 13): message" */
void kc_error_node(kc_diag *d, const kc_graph *g, int node, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "file: error: value 'name': message" */
void kc_error_value(kc_diag *d, const kc_graph *g, int value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Informational line, unless quiet. */
void kc_note(kc_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
