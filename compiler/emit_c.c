/* Emission as C source (kann-c --emit c): the model.bin that the runtime's loader accepted,
 * translated into static const data for firmware: records holding kernel function pointers,
 * the argument structs, the weights, the I/O table, and a header with the API. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kann_format.h"
#include "kann_kernels.h"
#include "kbin_writer.h"
#include "lower.h"

/* Per kernel id: the registry names the generated code spells out. */
typedef struct kernel_names {
    const char *upper;  /* F32_CONV2D */
    const char *name;   /* f32_conv2d */
    const char *family; /* conv2d */
} kernel_names;

static const kernel_names kernel_table[KANN_KERNEL_COUNT] = {
#define KANN_KERNEL(ENUM, name, id, family) [id] = {#ENUM, #name, #family},
#include "kernels.def"
#undef KANN_KERNEL
};

/* ---- a growing text buffer ---------------------------------------------------------------- */

typedef struct text {
    char *data;
    size_t len, cap;
} text;

static void text_reserve(text *t, size_t more) {
    if (t->len + more + 1 <= t->cap) return;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    t->data = realloc(t->data, cap);
    if (!t->data) abort();
    t->cap = cap;
}

static void text_printf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) abort();
    text_reserve(t, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* "0x3f800000,", or "16," below 65536 (counts and offsets read better in decimal). */
static void text_word(text *t, uint32_t w) {
    static const char hex[] = "0123456789abcdef";
    text_reserve(t, 12);
    char *p = t->data + t->len;
    if (w == 0) {
        *p++ = '0';
    } else if (w < 65536) {
        char digits[8];
        int n = 0;
        for (; w; w /= 10)
            digits[n++] = (char)('0' + w % 10);
        while (n)
            *p++ = digits[--n];
    } else {
        *p++ = '0';
        *p++ = 'x';
        for (int shift = 28; shift >= 0; shift -= 4)
            *p++ = hex[(w >> shift) & 0xf];
    }
    *p++ = ',';
    t->len = (size_t)(p - t->data);
}

/* s as a C string literal: printable ASCII as is, everything else as octal escapes. */
static void text_c_string(text *t, const char *s) {
    text_printf(t, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            text_printf(t, "\\%c", *p);
        else if (*p < 0x20 || *p > 0x7e || *p == '?') /* '?' : no trigraphs */
            text_printf(t, "\\%03o", *p);
        else
            text_printf(t, "%c", *p);
    }
    text_printf(t, "\"");
}

/* s inside a comment: nothing that ends it, one line. */
static void text_comment(text *t, const char *s) {
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (c == '*' && p[1] == '/') c = '+';
        if ((unsigned char)c < 0x20 || (unsigned char)c > 0x7e) c = '?';
        text_printf(t, "%c", c);
    }
}

/* ---- names -------------------------------------------------------------------------------- */

static int is_identifier(const char *s) {
    if (!s[0] || isdigit((unsigned char)s[0])) return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_') return 0;
    return 1;
}

/* The output file's base name without its extension, made an identifier. */
static char *default_prefix(const char *out_path) {
    const char *base = strrchr(out_path, '/');
    base = base ? base + 1 : out_path;
    size_t n = strlen(base);
    const char *dot = strrchr(base, '.');
    if (dot && dot != base) n = (size_t)(dot - base);
    char *p = malloc(n + 8);
    if (!p) abort();
    size_t at = 0;
    if (n == 0 || isdigit((unsigned char)base[0])) at = (size_t)sprintf(p, "model_");
    for (size_t i = 0; i < n; i++)
        p[at++] = isalnum((unsigned char)base[i]) ? base[i] : '_';
    p[at] = 0;
    return p;
}

/* OUT.c -> OUT.h; any other name gets ".h" appended. */
static char *header_path(const char *out_path) {
    size_t n = strlen(out_path);
    if (n > 2 && !strcmp(out_path + n - 2, ".c")) n -= 2;
    char *h = malloc(n + 3);
    if (!h) abort();
    memcpy(h, out_path, n);
    memcpy(h + n, ".h", 3);
    return h;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *upper(const char *s) {
    char *u = strdup(s);
    if (!u) abort();
    for (char *p = u; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    return u;
}

static const char *dtype_c_name(uint32_t dtype) {
    switch (dtype) {
    case KANN_DTYPE_F32:
        return "float";
    case KANN_DTYPE_U8:
        return "uint8";
    case KANN_DTYPE_I8:
        return "int8";
    case KANN_DTYPE_I32:
        return "int32";
    case KANN_DTYPE_I64:
        return "int64";
    case KANN_DTYPE_BOOL:
        return "bool";
    default:
        return "?";
    }
}

/* ---- the two files ------------------------------------------------------------------------ */

typedef struct emit_ctx {
    const kann_model *m;
    const char *prefix; /* sample_cnn */
    const char *upper;  /* SAMPLE_CNN */
    const char *source; /* the ONNX file */
    const char *options;
    const char *blob; /* weights blob path, or NULL */
    uint32_t weights_crc;
} emit_ctx;

static void first_line(text *t, const emit_ctx *c, const char *file) {
    text_printf(t, "/* %s: generated by kann-c %s (kann-c --emit c) from ", file, KC_VERSION);
    text_comment(t, c->source);
    text_printf(t, ". Do not edit. */\n");
}

static void emit_header(text *t, const emit_ctx *c, const char *file) {
    const kann_model *m = c->m;
    const char *P = c->upper, *p = c->prefix;
    first_line(t, c, file);
    text_printf(t, "/* kann-c options: ");
    text_comment(t, c->options);
    text_printf(t,
                " */\n"
                "#ifndef %s_KANN_MODEL_H\n#define %s_KANN_MODEL_H\n\n"
                "#include \"kann.h\"\n\n"
                "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                P, P);
    text_printf(
        t,
        "/* Bytes of the arena %s_run needs: caller-owned, 64-byte aligned. */\n"
        "#define %s_ARENA_SIZE %lluu\n"
        "/* Bytes of weights (read-only) and their CRC-32 (kann_crc32), to check flash. */\n"
        "#define %s_WEIGHTS_SIZE %lluu\n#define %s_WEIGHTS_CRC32 0x%08xu\n"
        "#define %s_N_STREAMS %uu\n#define %s_N_INPUTS %uu\n#define %s_N_OUTPUTS %uu\n\n",
        p, P, (unsigned long long)m->arena_size, P, (unsigned long long)m->consts_size, P,
        c->weights_crc, P, m->n_streams, P, m->n_inputs, P, m->n_outputs);
    const kann_io_desc *io = m->io;
    for (uint32_t i = 0; i < m->n_inputs + m->n_outputs; i++) {
        int in = i < m->n_inputs;
        uint32_t k = in ? i : i - m->n_inputs;
        text_printf(t, "/* %s %u: '", in ? "input" : "output", k);
        text_comment(t, m->names + io[i].name);
        text_printf(t, "', %s[", dtype_c_name(io[i].dtype));
        for (uint32_t d = 0; d < io[i].rank; d++)
            text_printf(t, "%s%u", d ? "x" : "", io[i].dims[d]);
        text_printf(t, "] */\n#define %s_%s_%u_OFFSET %lluu\n#define %s_%s_%u_SIZE %lluu\n", P,
                    in ? "INPUT" : "OUTPUT", k, (unsigned long long)io[i].offset, P,
                    in ? "INPUT" : "OUTPUT", k, (unsigned long long)io[i].size);
    }
    text_printf(t,
                "\n/* The model, for the kann_static_* calls of kann.h. */\n"
                "extern const kann_static_model %s_model;\n\n"
                "/* Runs the model on arena (%s_ARENA_SIZE bytes, 64-byte aligned), in this\n"
                " * thread: write the inputs, run, read the outputs, all inside the arena. */\n"
                "kann_status %s_run(void *arena);\n"
                "/* Where input/output i lies in arena; NULL for an index out of range. */\n"
                "void *%s_input(void *arena, unsigned i);\n"
                "void *%s_output(void *arena, unsigned i);\n\n"
                "#ifdef __cplusplus\n}\n#endif\n\n#endif\n",
                p, P, p, p, p);
}

/* bytes as one string literal per line of about STRING_LINE columns, without the terminating
 * NUL (the array has exactly n elements), as dense as C allows: printable characters as
 * themselves (a quote or backslash after a backslash), the rest as octal escapes, the shortest
 * one unless the next byte is an octal digit (an escape takes up to three digits: padded to
 * three it cannot swallow the digit, which then stays one character), and a '?' after a '?'
 * escaped (no trigraphs under -std=c11). Long lines (within C's 4095-column minimum) without
 * indentation keep the line breaks under 1% of the text: about 2.7 bytes of source per byte of
 * float weights. */
enum { STRING_LINE = 1000 };

static void emit_string_bytes(text *t, const uint8_t *bytes, uint64_t n) {
    size_t line = t->len;
    text_printf(t, "\"");
    for (uint64_t i = 0; i < n; i++) {
        /* Room for the longest step: an escape, a line break and the next line's quote. */
        text_reserve(t, 8);
        char *p = t->data + t->len; /* p[-1] is at least the opening quote */
        unsigned c = bytes[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c >= 0x20 && c <= 0x7e && !(c == '?' && p[-1] == '?')) {
            *p++ = (char)c;
        } else {
            int pad = i + 1 < n && bytes[i + 1] >= '0' && bytes[i + 1] <= '7';
            *p++ = '\\';
            if (c >= 0100 || pad) *p++ = (char)('0' + (c >> 6));
            if (c >= 010 || pad) *p++ = (char)('0' + ((c >> 3) & 7));
            *p++ = (char)('0' + (c & 7));
        }
        t->len = (size_t)(p - t->data);
        if (t->len - line >= STRING_LINE && i + 1 < n) {
            memcpy(p, "\"\n\"", 3);
            line = t->len + 2;
            t->len += 3;
        }
    }
    text_printf(t, "\"");
}

/* The weights: a string literal of under three bytes of source per byte, or a blob file. */
static void emit_weights(text *t, const emit_ctx *c) {
    const kann_model *m = c->m;
    const char *P = c->upper, *p = c->prefix;
    if (c->blob) {
        /* .incbin keeps megabytes of weights out of the C compiler; the symbol is global
         * so a linker script or objcopy can provide it instead. */
        text_printf(t, "/* The weights, %llu bytes, are the file '",
                    (unsigned long long)m->consts_size);
        text_comment(t, c->blob);
        text_printf(t,
                    "', included by the assembler (the path as\n"
                    " * given to kann-c). Define %s_WEIGHTS_EXTERN to link them yourself as the "
                    "symbol\n * %s_weights (64-byte aligned, e.g. from objcopy -I binary). */\n"
                    "#ifndef %s_WEIGHTS_EXTERN\n"
                    "__asm__(\".section .rodata.%s_weights,\\\"a\\\",%%progbits\\n\"\n"
                    "        \".balign 64\\n\"\n"
                    "        \".global %s_weights\\n\"\n"
                    "        \".type %s_weights, %%object\\n\"\n"
                    "        \"%s_weights:\\n\"\n"
                    "        \".incbin \\\"",
                    P, p, P, p, p, p, p);
        for (const char *s = c->blob; *s; s++) {
            if (*s == '"' || *s == '\\')
                text_printf(t, "\\\\\\%c", *s);
            else
                text_printf(t, "%c", *s);
        }
        text_printf(t,
                    "\\\"\\n\"\n"
                    "        \".size %s_weights, . - %s_weights\\n\"\n"
                    "        \".previous\\n\");\n#endif\n"
                    "extern const uint8_t %s_weights[%llu];\n\n",
                    p, p, p, (unsigned long long)m->consts_size);
        return;
    }
    text_printf(t,
                "/* Place the weights: e.g. -D%s_WEIGHTS_ATTRIBUTE='__attribute__((section("
                "\".ext_flash\")))'. */\n"
                "#ifndef %s_WEIGHTS_ATTRIBUTE\n#define %s_WEIGHTS_ATTRIBUTE\n#endif\n\n",
                P, P, P);
    text_printf(t,
                "/* The weights (the CONST section), %llu bytes, as one string literal: GCC and\n"
                " * Clang read megabytes of it far faster than an initializer list. */\n"
                "#if defined(__GNUC__)\n#pragma GCC diagnostic push\n"
                "#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n"
                "%s_WEIGHTS_ATTRIBUTE static const _Alignas(64) uint8_t %s_weights[%llu] =\n",
                (unsigned long long)m->consts_size, P, p, (unsigned long long)m->consts_size);
    emit_string_bytes(t, m->consts, m->consts_size);
    text_printf(t, ";\n#if defined(__GNUC__)\n#pragma GCC diagnostic pop\n#endif\n\n");
}

static const kann_record *records(const kann_model *m) {
    return (const kann_record *)m->records;
}

/* The ARGS section as words, each struct under a comment naming its kernel, node and tile. */
static void emit_args(text *t, const emit_ctx *c) {
    const kann_model *m = c->m;
    uint64_t n_words = m->args_size / 4;
    /* first[slot] = 1 + the first record whose struct starts at byte 8 * slot. */
    uint32_t *first = calloc((size_t)(m->args_size / 8) + 1, sizeof *first);
    if (!first) abort();
    for (uint32_t r = 0; r < m->n_records; r++) {
        const kann_record *rec = &records(m)[r];
        if (rec->kernel != KANN_KERNEL_BARRIER && !first[rec->args_offset / 8])
            first[rec->args_offset / 8] = r + 1;
    }
    text_printf(t,
                "/* The argument structs (the ARGS section), one per record, 8-byte aligned. */\n"
                "static const _Alignas(8) uint32_t %s_args[%llu] = {\n",
                c->prefix, (unsigned long long)n_words);
    uint64_t in_line = 0;
    for (uint64_t w = 0; w < n_words; w++) {
        uint32_t r = w % 2 == 0 ? first[w / 2] : 0;
        if (r) {
            const kann_record *rec = &records(m)[r - 1];
            const kann_tile *tile = (const kann_tile *)(m->args + rec->args_offset);
            if (in_line) text_printf(t, "\n");
            text_printf(t, "    /* [%llu] %s, node '", (unsigned long long)w,
                        kernel_table[rec->kernel].name);
            text_comment(t, m->names + rec->node);
            text_printf(t, "', tile axis %u [%u, %u) */\n", tile->axis, tile->begin, tile->end);
            in_line = 0;
        }
        uint32_t word;
        memcpy(&word, m->args + w * 4, 4);
        text_printf(t, in_line ? " " : "    ");
        text_word(t, word);
        if (++in_line == 8) {
            text_printf(t, "\n");
            in_line = 0;
        }
    }
    if (in_line) text_printf(t, "\n");
    text_printf(t, "};\n\n");
    free(first);
}

static void emit_source(text *t, const emit_ctx *c, const char *file, const char *header) {
    const kann_model *m = c->m;
    const char *P = c->upper, *p = c->prefix;
    first_line(t, c, file);
    text_printf(t, "#include <stdint.h>\n\n#include \"%s\"\n#include \"kann_kernels.h\"\n\n",
                header);

    int used[KANN_KERNEL_COUNT] = {0};
    for (uint32_t r = 0; r < m->n_records; r++)
        used[records(m)[r].kernel] = 1;
    text_printf(t, "/* The layouts this file was written for: kann_kernels.h must match. */\n");
    for (int k = 1; k < KANN_KERNEL_COUNT; k++)
        if (used[k])
            text_printf(t,
                        "_Static_assert(sizeof(kann_%s_args) == %u,\n"
                        "               \"kann_%s_args differs from the kann-c that wrote this "
                        "file\");\n",
                        kernel_table[k].family, kann_kernels[k].args_size, kernel_table[k].family);
    text_printf(t,
                "_Static_assert((uint64_t)%s_ARENA_SIZE <= (size_t)-1,\n"
                "               \"the arena is too large for this target\");\n\n",
                P);
    text_printf(t, "/* The kernels each record calls; define one to substitute your own. */\n");
    for (int k = 1; k < KANN_KERNEL_COUNT; k++)
        if (used[k])
            text_printf(t, "#ifndef KANN_FN_%s\n#define KANN_FN_%s kann_%s_ref\n#endif\n",
                        kernel_table[k].upper, kernel_table[k].upper, kernel_table[k].name);
    text_printf(t, "\n");

    if (m->consts_size) emit_weights(t, c);
    if (m->args_size) emit_args(t, c);

    text_printf(t,
                "/* The record streams: {kernel, arguments}, {0, 0} ends a phase. */\n"
                "static const kann_static_record %s_records[%u] = {\n",
                p, m->n_records);
    const kann_stream_desc *sd = m->streams;
    for (uint32_t s = 0; s < m->n_streams; s++) {
        text_printf(t, "    /* stream %u */\n", s);
        uint32_t phase = 0;
        for (uint32_t i = 0; i < sd[s].count; i++) {
            const kann_record *rec = &records(m)[sd[s].first + i];
            if (rec->kernel == KANN_KERNEL_BARRIER) {
                text_printf(t, "    {0, 0}, /* end of phase %u */\n", phase++);
                continue;
            }
            text_printf(t, "    {KANN_FN_%s, %s_args + %u}, /* ", kernel_table[rec->kernel].upper,
                        p, rec->args_offset / 4);
            text_comment(t, m->names + rec->node);
            text_printf(t, " */\n");
        }
    }
    text_printf(t, "};\n\nstatic const uint32_t %s_stream_first[%u] = {", p, m->n_streams);
    for (uint32_t s = 0; s < m->n_streams; s++)
        text_printf(t, "%s%u", s ? ", " : "", sd[s].first);
    text_printf(t, "};\n\n");

    uint32_t n_io = m->n_inputs + m->n_outputs;
    if (n_io) {
        text_printf(t, "static const kann_static_io %s_io[%u] = {\n", p, n_io);
        const kann_io_desc *io = m->io;
        for (uint32_t i = 0; i < n_io; i++) {
            text_printf(t, "    {");
            text_c_string(t, m->names + io[i].name);
            text_printf(t, ", %u, %u, {", io[i].dtype, io[i].rank);
            for (uint32_t d = 0; d < KANN_MAX_IO_RANK; d++)
                text_printf(t, "%s%u", d ? ", " : "", io[i].dims[d]);
            text_printf(t, "}, %lluu, %lluu},\n", (unsigned long long)io[i].offset,
                        (unsigned long long)io[i].size);
        }
        text_printf(t, "};\n\n");
    }

    text_printf(t, "const kann_static_model %s_model = {\n", p);
    text_printf(t, "    %s_ARENA_SIZE, %uu, %uu, %s_records, %s_stream_first,\n", P, m->n_streams,
                m->n_phases, p, p);
    if (m->consts_size)
        text_printf(t, "    %s_weights,\n", p);
    else
        text_printf(t, "    0, /* no weights */\n");
    text_printf(t, "    %uu, %uu, ", m->n_inputs, m->n_outputs);
    if (n_io)
        text_printf(t, "%s_io,\n};\n\n", p);
    else
        text_printf(t, "0,\n};\n\n");
    text_printf(t,
                "kann_status %s_run(void *arena) {\n"
                "    return kann_static_run(&%s_model, arena);\n}\n\n"
                "void *%s_input(void *arena, unsigned i) {\n"
                "    kann_tensor t;\n"
                "    return kann_static_input(&%s_model, arena, i, &t) == KANN_OK ? t.data : 0;\n"
                "}\n\n"
                "void *%s_output(void *arena, unsigned i) {\n"
                "    kann_tensor t;\n"
                "    return kann_static_output(&%s_model, arena, i, &t) == KANN_OK ? t.data : 0;\n"
                "}\n",
                p, p, p, p, p, p);
}

/* Weights from which kc_emit_c suggests --c-weights-blob: 64 MiB, about 180 MB of C. */
#define INLINE_WEIGHTS_NOTE (64ull << 20)

int kc_emit_c(const kc_graph *g, const kc_program *p, const kc_schedule *s, const kc_plan *plan,
              const char *out_path, const kc_emit_options *o, const kc_emit_c_options *co,
              kc_diag *d) {
    void *bin = NULL;
    size_t n = 0;
    if (kc_build_model(g, p, s, plan, o, &bin, &n, d)) return 1;
    kann_model m;
    kann_error err;
    if (kann_model_open(&m, bin, n, &err) != KANN_OK) {
        kc_error(d, "internal error: the model does not validate: %s", err.message);
        free(bin);
        return 1;
    }
    char *prefix = co && co->prefix ? strdup(co->prefix) : default_prefix(out_path);
    char *hpath = header_path(out_path);
    if (!prefix) abort();
    int errors = 0;
    if (!is_identifier(prefix)) {
        kc_error(d, "the C prefix '%s' is not a C identifier (use --c-prefix)", prefix);
        errors++;
    }
    emit_ctx c = {&m, prefix, NULL, "", "", co ? co->weights_blob : NULL, 0};
    char *up = upper(prefix);
    c.upper = up;
    const char *source = kann_model_meta(&m, "source");
    const char *options = kann_model_meta(&m, "options");
    c.source = source ? source : "";
    c.options = options ? options : "";
    c.weights_crc = kann_crc32(0, m.consts, (size_t)m.consts_size);

    text src = {0}, hdr = {0};
    char msg[512];
    int write_failed = 0;
    if (!errors) {
        emit_header(&hdr, &c, base_name(hpath));
        emit_source(&src, &c, base_name(out_path), base_name(hpath));
    }
    if (!errors && c.blob && m.consts_size &&
        kbin_write_file_atomic(c.blob, m.consts, (size_t)m.consts_size, msg, sizeof msg)) {
        kc_error(d, "%s", msg);
        errors++;
        write_failed = 1;
    }
    if (!errors && kbin_write_file_atomic(hpath, hdr.data, hdr.len, msg, sizeof msg)) {
        kc_error(d, "%s", msg);
        errors++;
        write_failed = 1;
    }
    if (!errors && kbin_write_file_atomic(out_path, src.data, src.len, msg, sizeof msg)) {
        kc_error(d, "%s", msg);
        errors++;
        write_failed = 1;
    }
    /* Past this, inline weights make a C file of hundreds of MB that the C compiler holds in
     * about four times its size of memory: point at the blob, which costs it nothing. */
    if (!errors && !c.blob && m.consts_size >= INLINE_WEIGHTS_NOTE)
        kc_note(d,
                "kann-c: %llu MiB of weights written inline as %llu MiB of C; "
                "--c-weights-blob FILE keeps them out of the C compiler",
                (unsigned long long)(m.consts_size >> 20), (unsigned long long)(src.len >> 20));
    free(src.data);
    free(hdr.data);
    free(up);
    free(hpath);
    free(prefix);
    free(bin);
    return write_failed ? -1 : errors;
}
