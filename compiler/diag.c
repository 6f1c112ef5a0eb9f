/* Diagnostics: "file: error: context: message" lines, counted per compile. */
#include "diag.h"

#include <stdarg.h>

#include "ir.h"

void kc_diag_init(kc_diag *d, const char *file, FILE *out) {
    d->out = out ? out : stderr;
    d->file = file;
    d->n_errors = 0;
    d->n_warnings = 0;
    d->quiet = 0;
    d->silent = 0;
}

static void emit(kc_diag *d, const char *kind, const char *ctx, const char *fmt, va_list ap) {
    if (d->silent) return;
    FILE *out = d->out ? d->out : stderr;
    if (d->file) fprintf(out, "%s: ", d->file);
    fprintf(out, "%s: %s", kind, ctx ? ctx : "");
    vfprintf(out, fmt, ap);
    fputc('\n', out);
}

void kc_error(kc_diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", NULL, fmt, ap);
    va_end(ap);
    d->n_errors++;
}

void kc_warning(kc_diag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emit(d, "warning", NULL, fmt, ap);
    va_end(ap);
    d->n_warnings++;
}

void kc_error_node(kc_diag *d, const kc_graph *g, int node, const char *fmt, ...) {
    char ctx[512];
    const kc_node *n = &g->nodes[node];
    const char *domain = n->domain && n->domain[0] ? n->domain : "";
    snprintf(ctx, sizeof ctx, "node '%s' (%s%s%s, opset %d): ", n->name[0] ? n->name : "<unnamed>",
             domain, domain[0] ? "." : "", n->op_type, n->opset);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", ctx, fmt, ap);
    va_end(ap);
    d->n_errors++;
}

void kc_error_value(kc_diag *d, const kc_graph *g, int value, const char *fmt, ...) {
    char ctx[512];
    snprintf(ctx, sizeof ctx, "value '%s': ", g->values[value].name);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", ctx, fmt, ap);
    va_end(ap);
    d->n_errors++;
}

void kc_note(kc_diag *d, const char *fmt, ...) {
    if (d->quiet) return;
    FILE *out = d->out ? d->out : stderr;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
}
