/* Tokens of the ONNX text syntax, and the error reporter that shows file:line:col, the source
 * line and a caret. Used by text_parser.c only. */
#ifndef KC_TEXT_LEXER_H
#define KC_TEXT_LEXER_H

#include <stddef.h>

#include "diag.h"

typedef enum kc_text_tok {
    KC_TOK_EOF,
    KC_TOK_ID,     /* letter or _, then letters, digits, _ */
    KC_TOK_INT,    /* [-]digits */
    KC_TOK_FLOAT,  /* [-]digits.digits[exp], [-]digits exp, -inf, -nan, -infinity */
    KC_TOK_STRING, /* "..." with \ escaping the next character */
    KC_TOK_ARROW,  /* "=>", the two characters adjacent */
    KC_TOK_PUNCT,  /* one of ( ) [ ] { } < > , : = @ . ? */
    KC_TOK_ERROR,  /* the lexer reported an error */
} kc_text_tok;

typedef struct kc_text_token {
    kc_text_tok kind;
    char punct; /* for KC_TOK_PUNCT */
    const char *start;
    size_t len;
    int line, col; /* 1-based; col counts bytes */
} kc_text_token;

typedef struct kc_text_lexer {
    const char *src, *end, *p;
    int line;
    const char *line_start;
    const char *path;
    kc_diag *d;
    int failed; /* an error was reported; later ones are suppressed */
} kc_text_lexer;

void kc_text_lexer_init(kc_text_lexer *lx, const char *src, size_t len, const char *path,
                        kc_diag *d);

/* The next token; KC_TOK_ERROR after reporting a lexical error. */
kc_text_token kc_text_lex(kc_text_lexer *lx);

/* A string token's value without quotes and escapes, malloc'ed and NUL-terminated; *len gets
 * its length. NULL when out of memory. */
char *kc_text_unquote(const kc_text_token *t, size_t *len);

/* Reports "path:line:col: error: message", the source line and a caret under col, once: later
 * reports are dropped so that one mistake gives one message. */
void kc_text_error_at(kc_text_lexer *lx, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A short description of a token for messages: "'('", "identifier 'x'", "end of input". */
void kc_text_describe(const kc_text_token *t, char *buf, size_t size);

#endif
