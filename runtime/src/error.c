/* Error messages for the core: a tiny bounded formatter, since the core has no stdio. */
#include <stdarg.h>

#include "kann_private.h"

typedef struct msg_out {
    char *buf;
    size_t cap; /* including the NUL */
    size_t len;
} msg_out;

static void put_char(msg_out *o, char c) {
    if (o->len + 1 < o->cap) o->buf[o->len++] = c;
}

static void put_str(msg_out *o, const char *s, unsigned width) {
    size_t n = s ? kann_rt_strlen(s) : 0;
    for (size_t i = n; i < width; i++)
        put_char(o, ' ');
    for (size_t i = 0; i < n; i++)
        put_char(o, s[i]);
}

static void put_uint(msg_out *o, unsigned long long v, unsigned base, unsigned width, char pad,
                     int negative) {
    char digits[24];
    unsigned n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        digits[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v != 0);
    unsigned total = n + (negative ? 1u : 0u);
    if (negative && pad == '0') put_char(o, '-');
    for (unsigned i = total; i < width; i++)
        put_char(o, pad);
    if (negative && pad != '0') put_char(o, '-');
    while (n > 0)
        put_char(o, digits[--n]);
}

static void format(msg_out *o, const char *fmt, va_list ap) {
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put_char(o, *f);
            continue;
        }
        f++;
        char pad = ' ';
        unsigned width = 0;
        int is_long_long = 0;
        if (*f == '0') {
            pad = '0';
            f++;
        }
        while (*f >= '0' && *f <= '9')
            width = width * 10 + (unsigned)(*f++ - '0');
        if (f[0] == 'l' && f[1] == 'l') {
            is_long_long = 1;
            f += 2;
        }
        switch (*f) {
        case 's':
            put_str(o, va_arg(ap, const char *), width);
            break;
        case 'c':
            put_char(o, (char)va_arg(ap, int));
            break;
        case 'd': {
            long long v = is_long_long ? va_arg(ap, long long) : va_arg(ap, int);
            unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            put_uint(o, mag, 10, width, pad, v < 0);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v =
                is_long_long ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned);
            put_uint(o, v, *f == 'u' ? 10 : 16, width, pad, 0);
            break;
        }
        case '%':
            put_char(o, '%');
            break;
        case '\0':
            return;
        default: /* unknown conversion: shown as is, so a bad format is visible */
            put_char(o, '%');
            put_char(o, *f);
            break;
        }
    }
}

kann_status kann_rt_fail(kann_error *err, kann_status s, const char *fmt, ...) {
    if (err) {
        msg_out o = {err->message, sizeof err->message, 0};
        va_list ap;
        va_start(ap, fmt);
        format(&o, fmt, ap);
        va_end(ap);
        err->message[o.len] = '\0';
        err->status = s;
    }
    return s;
}

kann_status kann_rt_ok(kann_error *err) {
    if (err) {
        err->status = KANN_OK;
        err->message[0] = '\0';
    }
    return KANN_OK;
}

size_t kann_rt_strlen(const char *s) {
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

int kann_rt_streq(const char *a, const char *b) {
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}
