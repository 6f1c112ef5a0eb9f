/* The lexer of the ONNX text syntax: whitespace and '#' comments skipped, identifiers, numbers,
 * strings, "=>" and one-character punctuation; errors with file:line:col and a caret. */
#include "text_lexer.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void kc_text_lexer_init(kc_text_lexer *lx, const char *src, size_t len, const char *path,
                        kc_diag *d) {
    memset(lx, 0, sizeof *lx);
    lx->src = lx->p = lx->line_start = src;
    lx->end = src + len;
    lx->line = 1;
    lx->path = path ? path : "<text>";
    lx->d = d;
}

/* The line containing line number `line`, found by scanning: errors are rare, so the lexer
 * keeps no line table. */
static void source_line(const kc_text_lexer *lx, int line, const char **start, size_t *len) {
    const char *p = lx->src;
    for (int l = 1; l < line && p < lx->end; p++)
        if (*p == '\n') l++;
    const char *e = p;
    while (e < lx->end && *e != '\n' && *e != '\r')
        e++;
    *start = p;
    *len = (size_t)(e - p);
}

void kc_text_error_at(kc_text_lexer *lx, int line, int col, const char *fmt, ...) {
    if (lx->failed) return;
    lx->failed = 1;
    if (lx->d) lx->d->n_errors++;
    if (lx->d && lx->d->silent) return;
    FILE *out = lx->d && lx->d->out ? lx->d->out : stderr;
    fprintf(out, "%s:%d:%d: error: ", lx->path, line, col);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    const char *s;
    size_t n;
    source_line(lx, line, &s, &n);
    fprintf(out, "%5d | ", line);
    for (size_t i = 0; i < n; i++)
        fputc(isprint((unsigned char)s[i]) || s[i] == '\t' ? s[i] : '?', out);
    fputs("\n      | ", out);
    /* The caret line repeats the source's tabs so that the caret lines up in any terminal. */
    for (int i = 0; i + 1 < col && (size_t)i < n; i++)
        fputc(s[i] == '\t' ? '\t' : ' ', out);
    fputs("^\n", out);
}

void kc_text_describe(const kc_text_token *t, char *buf, size_t size) {
    int n = t->len > 40 ? 40 : (int)t->len;
    switch (t->kind) {
    case KC_TOK_EOF:
        snprintf(buf, size, "end of input");
        break;
    case KC_TOK_ID:
        snprintf(buf, size, "identifier '%.*s'", n, t->start);
        break;
    case KC_TOK_INT:
    case KC_TOK_FLOAT:
        snprintf(buf, size, "number %.*s", n, t->start);
        break;
    case KC_TOK_STRING:
        snprintf(buf, size, "string %.*s%s", n, t->start, t->len > 40 ? "...\"" : "");
        break;
    case KC_TOK_ARROW:
        snprintf(buf, size, "'=>'");
        break;
    case KC_TOK_PUNCT:
        snprintf(buf, size, "'%c'", t->punct);
        break;
    case KC_TOK_ERROR:
        snprintf(buf, size, "an invalid token");
        break;
    }
}

static int is_id_start(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_id_char(int c) {
    return is_id_start(c) || (c >= '0' && c <= '9');
}

static int is_digit(int c) {
    return c >= '0' && c <= '9';
}

static void skip_space(kc_text_lexer *lx) {
    while (lx->p < lx->end) {
        char c = *lx->p;
        if (c == '\n') {
            lx->line++;
            lx->line_start = ++lx->p;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '#') {
            while (lx->p < lx->end && *lx->p != '\n')
                lx->p++;
        } else {
            return;
        }
    }
}

static int lower_equals(const char *s, size_t n, const char *word) {
    if (strlen(word) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != word[i]) return 0;
    return 1;
}

/* number = ["-"] digits ["." {digit}] [("e"|"E") ["+"|"-"] digits] | "-" (inf|infinity|nan) */
static kc_text_token lex_number(kc_text_lexer *lx, kc_text_token t) {
    const char *p = lx->p;
    if (*p == '-') p++;
    if (p < lx->end && is_id_start(*p)) {
        const char *w = p;
        while (p < lx->end && is_id_char(*p))
            p++;
        if (lower_equals(w, (size_t)(p - w), "inf") || lower_equals(w, (size_t)(p - w), "nan") ||
            lower_equals(w, (size_t)(p - w), "infinity")) {
            t.kind = KC_TOK_FLOAT;
            t.len = (size_t)(p - t.start);
            lx->p = p;
            return t;
        }
    }
    if (p >= lx->end || !is_digit(*p)) {
        kc_text_error_at(lx, t.line, t.col, "expected a number after '-'");
        t.kind = KC_TOK_ERROR;
        return t;
    }
    t.kind = KC_TOK_INT;
    while (p < lx->end && is_digit(*p))
        p++;
    if (p < lx->end && *p == '.') {
        t.kind = KC_TOK_FLOAT;
        p++;
        while (p < lx->end && is_digit(*p))
            p++;
    }
    if (p < lx->end && (*p == 'e' || *p == 'E')) {
        t.kind = KC_TOK_FLOAT;
        p++;
        if (p < lx->end && (*p == '+' || *p == '-')) p++;
        if (p >= lx->end || !is_digit(*p)) {
            kc_text_error_at(lx, t.line, t.col + (int)(p - t.start),
                             "expected the digits of an exponent");
            t.kind = KC_TOK_ERROR;
            return t;
        }
        while (p < lx->end && is_digit(*p))
            p++;
    }
    t.len = (size_t)(p - t.start);
    lx->p = p;
    return t;
}

kc_text_token kc_text_lex(kc_text_lexer *lx) {
    kc_text_token t;
    memset(&t, 0, sizeof t);
    skip_space(lx);
    t.start = lx->p;
    t.line = lx->line;
    t.col = (int)(lx->p - lx->line_start) + 1;
    if (lx->p >= lx->end) {
        t.kind = KC_TOK_EOF;
        return t;
    }
    unsigned char c = (unsigned char)*lx->p;
    if (is_id_start(c)) {
        const char *p = lx->p;
        while (p < lx->end && is_id_char(*p))
            p++;
        t.kind = KC_TOK_ID;
        t.len = (size_t)(p - lx->p);
        lx->p = p;
        return t;
    }
    if (is_digit(c) || c == '-') return lex_number(lx, t);
    if (c == '"') {
        const char *p = lx->p + 1;
        int line = lx->line;
        const char *line_start = lx->line_start;
        while (p < lx->end && *p != '"') {
            if (*p == '\\') p++;
            if (p < lx->end && *p == '\n') {
                line++;
                line_start = p + 1;
            }
            if (p < lx->end) p++;
        }
        if (p >= lx->end) {
            kc_text_error_at(lx, t.line, t.col, "unterminated string: expected a closing '\"'");
            t.kind = KC_TOK_ERROR;
            return t;
        }
        t.kind = KC_TOK_STRING;
        t.len = (size_t)(p + 1 - lx->p);
        lx->p = p + 1;
        lx->line = line;
        lx->line_start = line_start;
        return t;
    }
    if (c == '=' && lx->p + 1 < lx->end && lx->p[1] == '>') {
        t.kind = KC_TOK_ARROW;
        t.len = 2;
        lx->p += 2;
        return t;
    }
    if (strchr("()[]{}<>,:=@.?", c) && c) {
        t.kind = KC_TOK_PUNCT;
        t.punct = (char)c;
        t.len = 1;
        lx->p++;
        return t;
    }
    if (isprint(c))
        kc_text_error_at(lx, t.line, t.col, "unexpected character '%c'", c);
    else
        kc_text_error_at(lx, t.line, t.col, "unexpected byte 0x%02x", c);
    t.kind = KC_TOK_ERROR;
    return t;
}

char *kc_text_unquote(const kc_text_token *t, size_t *len) {
    char *s = malloc(t->len);
    if (!s) return NULL;
    size_t n = 0;
    for (size_t i = 1; i + 1 < t->len; i++) {
        if (t->start[i] == '\\' && i + 2 < t->len) i++;
        s[n++] = t->start[i];
    }
    s[n] = 0;
    *len = n;
    return s;
}
