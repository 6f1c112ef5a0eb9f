/* kann_model_open: valid models open and run; every truncation, every bit flip and a catalogue
 * of structurally bad files (with their CRCs made right again) are rejected with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kann_format.h"
#include "kann_kernels.h"
#include "kbin_writer.h"
#include "runtime_models.h"

/* Opens a 64-aligned copy of bin; the copy must outlive the model, so it is returned. */
static kann_status open_copy(const void *bin, size_t n, kann_model *m, kann_error *e, void **copy) {
    *copy = rt_copy(bin, n);
    memset(e, 0, sizeof *e);
    return kann_model_open(m, *copy, n, e);
}

static void expect_ok(const void *bin, size_t n) {
    kann_model m;
    kann_error e;
    void *copy;
    kann_status st = open_copy(bin, n, &m, &e, &copy);
    if (st != KANN_OK) fail_msg("open failed: %s: %s", kann_status_name(st), e.message);
    free(copy);
}

static void expect_reject(const void *bin, size_t n, kann_status want, const char *substr) {
    kann_model m;
    kann_error e;
    void *copy;
    kann_status st = open_copy(bin, n, &m, &e, &copy);
    if (st != want || e.status != want)
        fail_msg("want %s, got %s: %s", kann_status_name(want), kann_status_name(st), e.message);
    assert_true(e.message[0] != '\0');
    if (substr && !strstr(e.message, substr))
        fail_msg("message '%s' lacks '%s'", e.message, substr);
    free(copy);
}

/* ---- CRC ---------------------------------------------------------------------------------- */

static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void test_crc32(void **state) {
    (void)state;
    assert_int_equal(kann_crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(kann_crc32(0, "", 0), 0);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 31 + 7);
    for (size_t n = 0; n + 3 <= sizeof buf; n += 37) {
        assert_int_equal(kann_crc32(0, buf + 3, n), crc_bitwise(buf + 3, n));
        uint32_t part = kann_crc32(0, buf, n / 3);
        assert_int_equal(kann_crc32(part, buf + n / 3, n - n / 3), crc_bitwise(buf, n));
    }
}

/* ---- valid models ------------------------------------------------------------------------- */

static void *arena_for(const kann_model *m, kann_session *s) {
    size_t n = (size_t)kann_model_arena_size(m);
    void *arena = aligned_alloc(64, (n + 63) / 64 * 64);
    memset(arena, 0, n);
    kann_error e;
    assert_int_equal(kann_session_init(s, m, arena, n, &e), KANN_OK);
    return arena;
}

static void test_relu_runs(void **state) {
    (void)state;
    size_t n;
    void *bin = rt_model_relu2(&n);
    assert_non_null(bin);
    kann_model m;
    kann_error e;
    void *copy;
    assert_int_equal(open_copy(bin, n, &m, &e, &copy), KANN_OK);
    assert_int_equal(kann_model_n_streams(&m), 2);
    assert_int_equal(kann_model_n_inputs(&m), 1);
    assert_int_equal(kann_model_n_outputs(&m), 1);
    assert_int_equal(kann_model_find_input(&m, "x"), 0);
    assert_int_equal(kann_model_find_output(&m, "y"), 0);
    assert_int_equal(kann_model_find_input(&m, "y"), -1);
    assert_string_equal(kann_model_record_node(&m, 0), "relu");
    assert_string_equal(kann_model_record_node(&m, 1), "");
    assert_string_equal(kann_model_record_node(&m, 99), "");
    assert_string_equal(kann_model_meta(&m, "producer"), "runtime tests");
    assert_null(kann_model_meta(&m, "produce"));

    kann_session s;
    void *arena = arena_for(&m, &s);
    kann_tensor in, out;
    assert_int_equal(kann_session_input(&s, 0, &in), KANN_OK);
    assert_int_equal(kann_session_output(&s, 0, &out), KANN_OK);
    assert_int_equal(kann_session_input(&s, 1, &in), KANN_E_NOT_FOUND);
    assert_string_equal(in.name, "x");
    assert_int_equal(in.rank, 2);
    assert_int_equal(in.dims[1], 8);
    assert_int_equal(in.size, 32);
    float *x = in.data, *y = out.data;
    for (int i = 0; i < 8; i++)
        x[i] = (float)(i - 4) * 1.5f;
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    for (int i = 0; i < 8; i++)
        assert_float_equal(y[i], x[i] > 0 ? x[i] : 0, 0);
    free(arena);
    free(copy);
    free(bin);
}

static void test_add_runs(void **state) {
    (void)state;
    size_t n;
    void *bin = rt_model_add(&n);
    kann_model m;
    kann_error e;
    void *copy;
    assert_int_equal(open_copy(bin, n, &m, &e, &copy), KANN_OK);
    kann_session s;
    void *arena = arena_for(&m, &s);
    kann_tensor in, out;
    kann_session_input(&s, 0, &in);
    kann_session_output(&s, 0, &out);
    float *a = in.data, *y = out.data;
    for (int i = 0; i < 6; i++)
        a[i] = (float)i * 10;
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    for (int i = 0; i < 6; i++)
        assert_float_equal(y[i], a[i] + 0.5f * (float)(i + 1), 0);
    free(arena);
    free(copy);
    free(bin);
}

static void test_conv_runs(void **state) {
    (void)state;
    size_t n;
    void *bin = rt_model_conv(&n);
    kann_model m;
    kann_error e;
    void *copy;
    assert_int_equal(open_copy(bin, n, &m, &e, &copy), KANN_OK);
    kann_session s;
    void *arena = arena_for(&m, &s);
    kann_tensor in, out;
    kann_session_input(&s, 0, &in);
    kann_session_output(&s, 0, &out);
    float *x = in.data, *y = out.data;
    for (int i = 0; i < 2 * 25; i++)
        x[i] = (float)((i * 5) % 9 - 4) / 4.0f;
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    /* The same weights the model was built with (runtime_models.c). */
    for (int mo = 0; mo < 4; mo++)
        for (int oh = 0; oh < 5; oh++)
            for (int ow = 0; ow < 5; ow++) {
                double acc = 0.25 * mo - 0.5;
                for (int c = 0; c < 2; c++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = oh - 1 + kh, iw = ow - 1 + kw;
                            if (ih < 0 || ih >= 5 || iw < 0 || iw >= 5) continue;
                            int wi = ((mo * 2 + c) * 3 + kh) * 3 + kw;
                            acc += x[(c * 5 + ih) * 5 + iw] * ((wi * 7) % 11 - 5) / 8.0;
                        }
                assert_float_equal(y[(mo * 5 + oh) * 5 + ow], acc > 0 ? acc : 0, 1e-5);
            }
    free(arena);
    free(copy);
    free(bin);
}

static void test_session_checks(void **state) {
    (void)state;
    size_t n;
    void *bin = rt_model_relu2(&n);
    kann_model m;
    kann_error e;
    void *copy;
    assert_int_equal(open_copy(bin, n, &m, &e, &copy), KANN_OK);
    kann_session s;
    uint8_t *arena = aligned_alloc(64, 256);
    assert_int_equal(kann_session_init(&s, &m, arena + 4, 200, &e), KANN_E_ALIGNMENT);
    assert_true(e.message[0] != '\0');
    assert_int_equal(kann_session_init(&s, &m, arena, 127, &e), KANN_E_ARENA);
    assert_int_equal(kann_session_init(&s, &m, NULL, 128, &e), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_init(&s, &m, arena, 128, &e), KANN_OK);
    assert_int_equal(kann_session_run_streams(&s, 2, 2, NULL, NULL), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_streams(&s, 0, 0, NULL, NULL), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_streams(&s, 0, 1, NULL, NULL), KANN_OK);
    free(arena);
    /* Misaligned model bytes and NULL arguments. */
    uint8_t *mis = rt_copy(bin, n);
    memmove(mis + 4, mis, n);
    assert_int_equal(kann_model_open(&m, mis + 4, n, &e), KANN_E_ALIGNMENT);
    assert_int_equal(kann_model_open(NULL, copy, n, &e), KANN_E_ARGUMENT);
    assert_int_equal(kann_model_open(&m, NULL, 0, &e), KANN_E_TRUNCATED);
    assert_int_equal(kann_model_open(&m, copy, n, NULL), KANN_OK); /* err is optional */
    free(mis);
    free(copy);
    free(bin);
}

/* ---- every truncation, every bit flip ----------------------------------------------------- */

static void check_truncations(void *(*build)(size_t *)) {
    size_t n;
    void *bin = build(&n);
    uint8_t *copy = rt_copy(bin, n);
    for (size_t len = 0; len < n; len++) {
        kann_model m;
        kann_error e;
        memset(&e, 0, sizeof e);
        kann_status st = kann_model_open(&m, copy, len, &e);
        if (st == KANN_OK) fail_msg("a %zu-byte prefix of %zu opened", len, n);
        assert_true(e.message[0] != '\0');
    }
    free(copy);
    free(bin);
}

static void test_every_truncation(void **state) {
    (void)state;
    check_truncations(rt_model_relu2);
    check_truncations(rt_model_add);
    check_truncations(rt_model_conv);
}

static void check_bit_flips(void *(*build)(size_t *)) {
    size_t n;
    void *bin = build(&n);
    uint8_t *copy = rt_copy(bin, n);
    for (size_t i = 0; i < n; i++)
        for (int bit = 0; bit < 8; bit++) {
            copy[i] ^= (uint8_t)(1u << bit);
            kann_model m;
            kann_error e;
            memset(&e, 0, sizeof e);
            kann_status st = kann_model_open(&m, copy, n, &e);
            if (st == KANN_OK) fail_msg("flipping bit %d of byte %zu went unnoticed", bit, i);
            if (e.message[0] == '\0') fail_msg("no message for bit %d of byte %zu", bit, i);
            copy[i] ^= (uint8_t)(1u << bit);
        }
    expect_ok(copy, n);
    free(copy);
    free(bin);
}

static void test_every_bit_flip(void **state) {
    (void)state;
    check_bit_flips(rt_model_relu2);
    check_bit_flips(rt_model_add);
    check_bit_flips(rt_model_conv);
}

/* ---- structural corruption with correct CRCs --------------------------------------------- */

typedef struct bad_case {
    const char *what;
    void *(*build)(size_t *);
    void (*mutate)(uint8_t *bin);
    kann_status want;
    const char *substr;
} bad_case;

static kann_file_header *hdr(uint8_t *b) {
    return (kann_file_header *)b;
}

static kann_record *rec0(uint8_t *b) {
    return rt_records(b, NULL);
}

static void args_past_end(uint8_t *b) {
    rec0(b)->args_offset = (uint32_t)rt_section(b, KANN_SECTION_ARGS)->size;
}
static void args_misaligned(uint8_t *b) {
    rec0(b)->args_offset += 4;
}
static void args_wrong_size(uint8_t *b) {
    rec0(b)->args_size -= 8;
}
static void kernel_unknown(uint8_t *b) {
    rec0(b)->kernel = 999;
}
static void kernel_past_registry(uint8_t *b) {
    rec0(b)->kernel = KANN_KERNEL_COUNT;
}
static void record_flags(uint8_t *b) {
    rec0(b)->flags = 2; /* a bit past KANN_RECORD_FREE */
}
static void barrier_free(uint8_t *b) {
    rec0(b)[1].flags = KANN_RECORD_FREE;
}
static void node_name_outside(uint8_t *b) {
    rec0(b)->node = (uint32_t)rt_section(b, KANN_SECTION_NAMES)->size + 3;
}
static void barrier_with_args(uint8_t *b) {
    rec0(b)[1].args_size = 8;
}
static void last_record_not_barrier(uint8_t *b) {
    /* Stream 0's barrier becomes a second relu call. */
    rec0(b)[1] = rec0(b)[0];
}
static void stream_descs_gap(uint8_t *b) {
    rt_stream_descs(b)[1].first = 0;
}
static void stream_count_huge(uint8_t *b) {
    rt_stream_descs(b)[1].count = 0xffffffffu;
}
static void records_count_huge(uint8_t *b) {
    ((kann_streams_header *)rt_section_bytes(b, KANN_SECTION_STREAMS))->n_records = 0x7fffffffu;
}
static void streams_header_mismatch(uint8_t *b) {
    ((kann_streams_header *)rt_section_bytes(b, KANN_SECTION_STREAMS))->n_phases = 2;
}
static void header_streams_zero(uint8_t *b) {
    hdr(b)->n_streams = 0;
}
static void header_streams_huge(uint8_t *b) {
    hdr(b)->n_streams = KANN_MAX_STREAMS + 1;
}
static void header_phases_zero(uint8_t *b) {
    hdr(b)->n_phases = 0;
}
static void io_outside_arena(uint8_t *b) {
    rt_io_desc(b, 1)->offset = hdr(b)->arena_size - 16;
}
static void io_offset_overflow(uint8_t *b) {
    rt_io_desc(b, 0)->offset = UINT64_MAX - 15; /* aligned, so only the range check sees it */
}
static void io_size_mismatch(uint8_t *b) {
    rt_io_desc(b, 0)->size += 4;
}
static void io_dims_overflow(uint8_t *b) {
    kann_io_desc *d = rt_io_desc(b, 0);
    d->rank = 8;
    for (int k = 0; k < 8; k++)
        d->dims[k] = 0xffffffffu;
}
static void io_dtype_unknown(uint8_t *b) {
    rt_io_desc(b, 0)->dtype = 5;
}
static void io_rank_huge(uint8_t *b) {
    rt_io_desc(b, 0)->rank = 9;
}
static void io_name_outside(uint8_t *b) {
    rt_io_desc(b, 0)->name = 0x10000000u;
}
static void io_name_empty(uint8_t *b) {
    rt_io_desc(b, 0)->name = 0;
}
static void io_duplicate_names(uint8_t *b) {
    /* Two outputs cannot be told apart: make the input an output named like the other. */
    kann_io_header *ioh = (kann_io_header *)rt_section_bytes(b, KANN_SECTION_IO);
    ioh->n_inputs = 0;
    ioh->n_outputs = 2;
    rt_io_desc(b, 0)->name = rt_io_desc(b, 1)->name;
}
static void io_count_huge(uint8_t *b) {
    ((kann_io_header *)rt_section_bytes(b, KANN_SECTION_IO))->n_inputs = 0xffffffffu;
}
static void io_count_short(uint8_t *b) {
    ((kann_io_header *)rt_section_bytes(b, KANN_SECTION_IO))->n_outputs = 2;
}
static void sections_overlap(uint8_t *b) {
    rt_section(b, KANN_SECTION_IO)->offset = rt_section(b, KANN_SECTION_META)->offset;
}
static void section_outside(uint8_t *b) {
    rt_section(b, KANN_SECTION_NAMES)->size = hdr(b)->file_size;
}
static void section_misaligned(uint8_t *b) {
    rt_section(b, KANN_SECTION_NAMES)->offset += 8;
}
static void section_kind_unknown(uint8_t *b) {
    rt_section(b, KANN_SECTION_CONST)->kind = 42;
}
static void section_duplicate(uint8_t *b) {
    rt_section(b, KANN_SECTION_CONST)->kind = KANN_SECTION_META;
}
static void section_missing(uint8_t *b) {
    rt_section(b, KANN_SECTION_STREAMS)->kind = KANN_SECTION_OPENCL;
}
static void section_flags(uint8_t *b) {
    rt_section(b, KANN_SECTION_META)->flags = 4;
}
static void sections_huge(uint8_t *b) {
    hdr(b)->n_sections = 100000;
}
static void sections_past_file(uint8_t *b) {
    hdr(b)->n_sections = KANN_MAX_SECTIONS;
    hdr(b)->file_size = 64 + 32 * 8;
}
static void padding_nonzero(uint8_t *b) {
    kann_section *s = rt_section(b, KANN_SECTION_META);
    b[s->offset + s->size] = 1; /* META is short: the byte after it is padding */
}
static void header_size_wrong(uint8_t *b) {
    hdr(b)->header_size = 128;
}
static void header_flags(uint8_t *b) {
    hdr(b)->flags = 1;
}
static void probe_big_endian(uint8_t *b) {
    hdr(b)->probe_u32 = 0x04030201u;
}
static void probe_float(uint8_t *b) {
    hdr(b)->probe_f32 = 1.5f;
}
static void major_newer(uint8_t *b) {
    hdr(b)->major = KANN_FORMAT_MAJOR + 1;
}
static void major_zero(uint8_t *b) {
    hdr(b)->major = 0;
}
static void file_size_huge(uint8_t *b) {
    hdr(b)->file_size = UINT64_MAX;
}
static void names_no_leading_nul(uint8_t *b) {
    rt_section_bytes(b, KANN_SECTION_NAMES)[0] = 'x';
}
static void names_unterminated(uint8_t *b) {
    kann_section *s = rt_section(b, KANN_SECTION_NAMES);
    b[s->offset + s->size - 1] = 'x';
}
static void meta_not_key_value(uint8_t *b) {
    uint8_t *p = rt_section_bytes(b, KANN_SECTION_META);
    p[strlen("producer")] = '_';
}
static void meta_empty_key(uint8_t *b) {
    rt_section_bytes(b, KANN_SECTION_META)[0] = '=';
}
static void tile_axis_bad(uint8_t *b) {
    kann_tile *t = (kann_tile *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    t->axis = 1;
}
static void tile_past_extent(uint8_t *b) {
    kann_act_args *a =
        (kann_act_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->tile.end = 9;
}
static void act_output_in_const(uint8_t *b) {
    kann_act_args *a =
        (kann_act_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->y.space = KANN_SPACE_CONST;
}
static void conv_output_outside_arena(uint8_t *b) {
    kann_conv2d_args *a =
        (kann_conv2d_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->y.offset = hdr(b)->arena_size - 64;
}
static void conv_weights_outside_consts(uint8_t *b) {
    kann_conv2d_args *a =
        (kann_conv2d_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->w.offset = 0xffffffff00ull;
}
static void conv_group_zero(uint8_t *b) {
    kann_conv2d_args *a =
        (kann_conv2d_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->group = 0;
}
static void binary_const_b_outside(uint8_t *b) {
    kann_binary_args *a =
        (kann_binary_args *)(rt_section_bytes(b, KANN_SECTION_ARGS) + rec0(b)->args_offset);
    a->b.offset = rt_section(b, KANN_SECTION_CONST)->size - 8;
}

static const bad_case bad_cases[] = {
    {"args past ARGS", rt_model_relu2, args_past_end, KANN_E_CORRUPT, "inside ARGS"},
    {"args misaligned", rt_model_relu2, args_misaligned, KANN_E_CORRUPT, "aligned"},
    {"args_size wrong", rt_model_relu2, args_wrong_size, KANN_E_CORRUPT, "args_size"},
    {"kernel id unknown", rt_model_relu2, kernel_unknown, KANN_E_UNSUPPORTED, "kernel id 999"},
    {"kernel id = count", rt_model_relu2, kernel_past_registry, KANN_E_UNSUPPORTED, "kernel id"},
    {"record flags", rt_model_relu2, record_flags, KANN_E_CORRUPT, "flags"},
    {"free barrier", rt_model_relu2, barrier_free, KANN_E_CORRUPT, "flags"},
    {"node name outside", rt_model_relu2, node_name_outside, KANN_E_CORRUPT, "node name"},
    {"barrier with args", rt_model_relu2, barrier_with_args, KANN_E_CORRUPT, "barrier"},
    {"stream without final barrier", rt_model_relu2, last_record_not_barrier, KANN_E_CORRUPT,
     "stream 0 does not end with a barrier"},
    {"stream descs overlap", rt_model_relu2, stream_descs_gap, KANN_E_CORRUPT, "stream 1"},
    {"stream count huge", rt_model_relu2, stream_count_huge, KANN_E_CORRUPT, "stream 1"},
    {"record count huge", rt_model_relu2, records_count_huge, KANN_E_CORRUPT, "STREAMS"},
    {"STREAMS vs header", rt_model_relu2, streams_header_mismatch, KANN_E_CORRUPT, "phases"},
    {"no streams", rt_model_relu2, header_streams_zero, KANN_E_CORRUPT, "n_streams"},
    {"too many streams", rt_model_relu2, header_streams_huge, KANN_E_CORRUPT, "n_streams"},
    {"no phases", rt_model_relu2, header_phases_zero, KANN_E_CORRUPT, "n_phases"},
    {"output outside arena", rt_model_relu2, io_outside_arena, KANN_E_CORRUPT, "output 'y': bytes"},
    {"io offset overflow", rt_model_relu2, io_offset_overflow, KANN_E_CORRUPT, "input 'x'"},
    {"io size mismatch", rt_model_relu2, io_size_mismatch, KANN_E_CORRUPT, "size"},
    {"io dims overflow", rt_model_relu2, io_dims_overflow, KANN_E_CORRUPT, "overflow"},
    {"io dtype unknown", rt_model_relu2, io_dtype_unknown, KANN_E_UNSUPPORTED, "dtype 5"},
    {"io rank huge", rt_model_relu2, io_rank_huge, KANN_E_CORRUPT, "rank 9"},
    {"io name outside", rt_model_relu2, io_name_outside, KANN_E_CORRUPT, "name offset"},
    {"io name empty", rt_model_relu2, io_name_empty, KANN_E_CORRUPT, "empty name"},
    {"io names repeated", rt_model_relu2, io_duplicate_names, KANN_E_CORRUPT, "two outputs"},
    {"io count huge", rt_model_relu2, io_count_huge, KANN_E_CORRUPT, "at most"},
    {"io count wrong", rt_model_relu2, io_count_short, KANN_E_CORRUPT, "IO section"},
    {"sections overlap", rt_model_relu2, sections_overlap, KANN_E_CORRUPT, "overlap"},
    {"section past file", rt_model_relu2, section_outside, KANN_E_CORRUPT, "not inside"},
    {"section misaligned", rt_model_relu2, section_misaligned, KANN_E_CORRUPT, "aligned"},
    {"section kind unknown", rt_model_add, section_kind_unknown, KANN_E_CORRUPT, "unknown kind"},
    {"section repeated", rt_model_add, section_duplicate, KANN_E_CORRUPT, "second META"},
    {"section missing", rt_model_relu2, section_missing, KANN_E_CORRUPT, "STREAMS"},
    {"section flags", rt_model_relu2, section_flags, KANN_E_CORRUPT, "flags"},
    {"sections huge", rt_model_relu2, sections_huge, KANN_E_CORRUPT, "sections"},
    {"table past file", rt_model_relu2, sections_past_file, KANN_E_CORRUPT, "section table"},
    {"padding not zero", rt_model_relu2, padding_nonzero, KANN_E_CORRUPT, "padding"},
    {"header_size", rt_model_relu2, header_size_wrong, KANN_E_CORRUPT, "header_size"},
    {"header flags", rt_model_relu2, header_flags, KANN_E_UNSUPPORTED, "flags"},
    {"big-endian probe", rt_model_relu2, probe_big_endian, KANN_E_PROBE, "byte order"},
    {"float probe", rt_model_relu2, probe_float, KANN_E_PROBE, "float"},
    {"newer major", rt_model_relu2, major_newer, KANN_E_VERSION, "newer"},
    {"major 0", rt_model_relu2, major_zero, KANN_E_VERSION, "0."},
    {"file_size huge", rt_model_relu2, file_size_huge, KANN_E_TRUNCATED, "truncated"},
    {"NAMES lead", rt_model_relu2, names_no_leading_nul, KANN_E_CORRUPT, "NAMES"},
    {"NAMES end", rt_model_relu2, names_unterminated, KANN_E_CORRUPT, "NAMES"},
    {"META entry", rt_model_relu2, meta_not_key_value, KANN_E_CORRUPT, "key=value"},
    {"META empty key", rt_model_relu2, meta_empty_key, KANN_E_CORRUPT, "key=value"},
    {"tile axis", rt_model_relu2, tile_axis_bad, KANN_E_CORRUPT, "tile"},
    {"tile past extent", rt_model_relu2, tile_past_extent, KANN_E_CORRUPT,
     "stream 0 record 0 (f32_act, node 'relu')"},
    {"act output in constants", rt_model_relu2, act_output_in_const, KANN_E_CORRUPT, "act y"},
    {"conv y outside arena", rt_model_conv, conv_output_outside_arena, KANN_E_CORRUPT,
     "stream 0 record 0 (f32_conv2d, node 'conv'): conv2d y"},
    {"conv w outside constants", rt_model_conv, conv_weights_outside_consts, KANN_E_CORRUPT,
     "conv2d w"},
    {"conv group 0", rt_model_conv, conv_group_zero, KANN_E_CORRUPT, "group"},
    {"binary b outside constants", rt_model_add, binary_const_b_outside, KANN_E_CORRUPT,
     "binary b"},
};

static void test_structural_rejects(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        size_t n;
        uint8_t *bin = c->build(&n);
        uint8_t *copy = rt_copy(bin, n);
        c->mutate(copy);
        kbin_fix_crcs(copy, n);
        kann_model m;
        kann_error e;
        memset(&e, 0, sizeof e);
        kann_status st = kann_model_open(&m, copy, n, &e);
        print_message("  %-30s -> %s: %s\n", c->what, kann_status_name(st), e.message);
        if (st != c->want)
            fail_msg("%s: want %s, got %s: %s", c->what, kann_status_name(c->want),
                     kann_status_name(st), e.message);
        if (!strstr(e.message, c->substr))
            fail_msg("%s: message '%s' lacks '%s'", c->what, e.message, c->substr);
        /* Without fixing the CRCs the same file is rejected too (by a CRC if nothing else). */
        c->mutate(memcpy(copy, bin, n));
        assert_int_not_equal(kann_model_open(&m, copy, n, &e), KANN_OK);
        free(copy);
        free(bin);
    }
}

static void test_magic_and_crc_errors(void **state) {
    (void)state;
    size_t n;
    uint8_t *bin = rt_model_relu2(&n);
    uint8_t *copy = rt_copy(bin, n);
    copy[5] = '\n'; /* a text-mode transfer turned CR LF into LF */
    expect_reject(copy, n, KANN_E_MAGIC, "magic");
    memcpy(copy, bin, n);
    rt_section_bytes(copy, KANN_SECTION_NAMES)[1] ^= 0x20;
    expect_reject(copy, n, KANN_E_CRC, "NAMES");
    memcpy(copy, bin, n);
    rt_section(copy, KANN_SECTION_ARGS)->crc ^= 1;
    expect_reject(copy, n, KANN_E_CRC, "section table");
    memcpy(copy, bin, n);
    hdr(copy)->arena_size++;
    expect_reject(copy, n, KANN_E_CRC, "header");
    /* A longer buffer than the file (padding in flash) is fine. */
    uint8_t *longer = rt_copy(bin, n);
    memset(longer + n, 0xaa, 64);
    expect_ok(longer, n + 64);
    free(longer);
    free(copy);
    free(bin);
}

/* ---- models built differently by the writer --------------------------------------------- */

static kann_act_args relu_args(void) {
    kann_act_args a;
    memset(&a, 0, sizeof a);
    a.tile.end = 8;
    a.x.space = a.y.space = KANN_SPACE_ARENA;
    a.count = 8;
    a.act.kind = KANN_ACT_RELU;
    return a;
}

static kbin_writer *relu_writer(void) {
    kbin_writer *w = kbin_writer_new();
    kbin_set_arena_size(w, 64);
    kbin_add_meta(w, "producer", "test");
    uint32_t dims[1] = {8};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 1, dims, 0);
    return w;
}

static void finish_and_expect(kbin_writer *w, kann_status want, const char *substr) {
    void *bin;
    size_t n;
    assert_int_equal(kbin_finish(w, &bin, &n), 0);
    kbin_writer_free(w);
    if (want == KANN_OK)
        expect_ok(bin, n);
    else
        expect_reject(bin, n, want, substr);
    free(bin);
}

static void test_writer_built_rejects(void **state) {
    (void)state;
    kann_act_args a = relu_args();

    /* Unequal phase counts: stream 0 has two barriers, stream 1 one. */
    kbin_writer *w = relu_writer();
    kbin_add_call(w, 0, KANN_KERNEL_F32_ACT, "r", &a, sizeof a);
    kbin_add_barrier(w, 0);
    kbin_add_barrier(w, 0);
    kbin_add_call(w, 1, KANN_KERNEL_F32_ACT, "r", &a, sizeof a);
    kbin_add_barrier(w, 1);
    finish_and_expect(w, KANN_E_CORRUPT, "stream 1 has 1 barriers");

    /* A stream that is empty. */
    w = relu_writer();
    kbin_add_barrier(w, 0);
    kbin_add_record(w, 2, &(kann_record){0});
    kbin_add_barrier(w, 2);
    kbin_set_streams(w, 3, 1);
    finish_and_expect(w, KANN_E_CORRUPT, "stream 1 does not end with a barrier");

    /* An unknown section kind is refused in a file of this minor version... */
    w = relu_writer();
    kbin_add_barrier(w, 0);
    kbin_add_section(w, 99, "future", 6);
    finish_and_expect(w, KANN_E_CORRUPT, "unknown kind 99");
    /* ...and skipped in a file of a newer minor version. */
    w = relu_writer();
    kbin_add_barrier(w, 0);
    kbin_add_section(w, 99, "future", 6);
    kbin_set_version(w, KANN_FORMAT_MAJOR, KANN_FORMAT_MINOR + 1);
    finish_and_expect(w, KANN_OK, NULL);

    /* A record flag past KANN_RECORD_FREE is refused in a file of this minor version and
     * ignored in a newer one; KANN_RECORD_FREE itself is a kernel record's. */
    for (int newer = 0; newer <= 1; newer++) {
        w = relu_writer();
        kbin_add_call_flags(w, 0, KANN_KERNEL_F32_ACT, "r", &a, sizeof a, KANN_RECORD_FREE | 0x8);
        kbin_add_barrier(w, 0);
        if (newer) kbin_set_version(w, KANN_FORMAT_MAJOR, KANN_FORMAT_MINOR + 1);
        finish_and_expect(w, newer ? KANN_OK : KANN_E_CORRUPT, newer ? NULL : "flags 0x9");
    }
    w = relu_writer();
    kbin_add_call_flags(w, 0, KANN_KERNEL_F32_ACT, "r", &a, sizeof a, KANN_RECORD_FREE);
    kbin_add_barrier(w, 0);
    finish_and_expect(w, KANN_OK, NULL);

    /* A second META section. */
    w = relu_writer();
    kbin_add_barrier(w, 0);
    kbin_add_section(w, KANN_SECTION_META, "a=b", 4);
    finish_and_expect(w, KANN_E_CORRUPT, "second META");

    /* An optional OPENCL section is accepted (and ignored by the CPU backend). */
    w = relu_writer();
    kbin_add_call(w, 0, KANN_KERNEL_F32_ACT, "r", &a, sizeof a);
    kbin_add_barrier(w, 0);
    kbin_add_section(w, KANN_SECTION_OPENCL, "__kernel void k() {}", 21);
    finish_and_expect(w, KANN_OK, NULL);

    /* Two inputs with one name. */
    w = relu_writer();
    uint32_t dims[1] = {8};
    kbin_add_io(w, KANN_IO_INPUT, "x", KANN_DTYPE_F32, 1, dims, 32);
    kbin_add_barrier(w, 0);
    finish_and_expect(w, KANN_E_CORRUPT, "two inputs are named 'x'");

    /* IO descriptors beyond KANN_MAX_IO. */
    w = relu_writer();
    for (int i = 0; i < KANN_MAX_IO; i++) {
        char name[16];
        snprintf(name, sizeof name, "o%d", i);
        kbin_add_io(w, KANN_IO_OUTPUT, name, KANN_DTYPE_F32, 1, dims, 0);
    }
    kbin_add_barrier(w, 0);
    finish_and_expect(w, KANN_E_CORRUPT, "at most");

    /* A name longer than KANN_MAX_NAME in NAMES (the writer refuses to add one). */
    w = relu_writer();
    char long_name[KANN_MAX_NAME + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    uint32_t off;
    assert_int_equal(kbin_add_name(w, long_name, &off), -1);
    assert_true(strstr(kbin_writer_error(w), "longer") != NULL);
    kbin_writer_free(w);
}

static void test_writer_layout(void **state) {
    (void)state;
    kbin_writer *w = kbin_writer_new();
    uint32_t a, b, c;
    assert_int_equal(kbin_add_name(w, "conv1", &a), 0);
    assert_int_equal(kbin_add_name(w, "conv2", &b), 0);
    assert_int_equal(kbin_add_name(w, "conv1", &c), 0);
    assert_int_equal(a, c);
    assert_int_not_equal(a, b);
    assert_int_equal(kbin_add_name(w, "", &c), 0);
    assert_int_equal(c, 0);
    uint64_t k1, k2;
    kbin_add_const(w, "abc", 3, &k1);
    kbin_add_const(w, "defg", 4, &k2);
    assert_int_equal(k1, 0);
    assert_int_equal(k2, 64);
    uint32_t g1, g2;
    kbin_add_args(w, "xyz", 3, &g1);
    kbin_add_args(w, "uvw", 3, &g2);
    assert_int_equal(g2 % KANN_ARGS_ALIGN, 0);
    assert_int_equal(g2, 8);
    assert_int_equal(kbin_add_meta(w, "a=b", "c"), -1);
    kbin_add_barrier(w, 0);
    void *bin;
    size_t n;
    assert_int_equal(kbin_finish(w, &bin, &n), 0);
    kbin_writer_free(w);
    kann_file_header *h = bin;
    assert_memory_equal(h->magic, KANN_MAGIC, KANN_MAGIC_SIZE);
    assert_int_equal(h->file_size, n);
    assert_int_equal(h->n_streams, 1);
    assert_int_equal(h->n_phases, 1);
    kann_section *t = (kann_section *)(h + 1);
    for (uint32_t i = 0; i < h->n_sections; i++) {
        assert_int_equal(t[i].offset % KANN_SECTION_ALIGN, 0);
        assert_int_equal(t[i].crc, kann_crc32(0, (uint8_t *)bin + t[i].offset, t[i].size));
    }
    assert_memory_equal(rt_section_bytes(bin, KANN_SECTION_CONST) + 64, "defg", 4);
    free(bin);
    assert_int_equal(kbin_fix_crcs(bin = calloc(1, 16), 16), -1);
    free(bin);
}

static void test_write_file_atomic(void **state) {
    (void)state;
    char dir[] = "/tmp/kann_loader_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/model.bin", dir);
    assert_int_equal(kbin_write_file_atomic(path, "first", 5, err, sizeof err), 0);
    assert_int_equal(kbin_write_file_atomic(path, "second!", 7, err, sizeof err), 0);
    FILE *f = fopen(path, "rb");
    char buf[16] = {0};
    assert_int_equal(fread(buf, 1, sizeof buf, f), 7);
    fclose(f);
    assert_memory_equal(buf, "second!", 7);
    /* A directory that does not exist: an error naming the path, and nothing left behind. */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/missing/model.bin", dir);
    assert_int_equal(kbin_write_file_atomic(bad, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, bad));
    /* Only model.bin is in the directory: no temporary files remain. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A %s)\" = model.bin", dir);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_relu_runs),
        cmocka_unit_test(test_add_runs),
        cmocka_unit_test(test_conv_runs),
        cmocka_unit_test(test_session_checks),
        cmocka_unit_test(test_every_truncation),
        cmocka_unit_test(test_every_bit_flip),
        cmocka_unit_test(test_structural_rejects),
        cmocka_unit_test(test_magic_and_crc_errors),
        cmocka_unit_test(test_writer_built_rejects),
        cmocka_unit_test(test_writer_layout),
        cmocka_unit_test(test_write_file_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
