/* The parallel walk: a model of 4 streams and 4 phases, with data crossing streams at every
 * barrier, gives the same bits on 1, 2, 3 and 4 threads as kann_session_run, and so does
 * running it one (stream, phase) segment at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_format.h"
#include "kann_host.h"
#include "runtime_models.h"

enum { N_X = 64, N_Y = 32 };

typedef struct fixture {
    void *bin;
    kann_model model;
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    size_t n;
    void *raw = rt_model_parallel(&n);
    f->bin = rt_copy(raw, n);
    free(raw);
    kann_error e;
    if (kann_model_open(&f->model, f->bin, n, &e) != KANN_OK) {
        print_error("open: %s\n", e.message);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    free(f->bin);
    free(f);
    return 0;
}

static void fill_input(kann_session *s, unsigned seed) {
    kann_tensor in;
    assert_int_equal(kann_session_input(s, 0, &in), KANN_OK);
    float *x = in.data;
    for (int i = 0; i < N_X; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((int)(seed >> 16 & 0xff) - 128) / 64.0f;
    }
}

static const float *output(kann_session *s) {
    kann_tensor out;
    assert_int_equal(kann_session_output(s, 0, &out), KANN_OK);
    return out.data;
}

static void test_single_thread_matches_reference(void **state) {
    fixture *f = *state;
    assert_int_equal(kann_model_n_streams(&f->model), 4);
    kann_session s;
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(&f->model));
    kann_error e;
    assert_int_equal(
        kann_session_init(&s, &f->model, arena, (size_t)kann_model_arena_size(&f->model), &e),
        KANN_OK);
    fill_input(&s, 1);
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    kann_tensor in;
    kann_session_input(&s, 0, &in);
    float want[N_Y];
    rt_parallel_reference(in.data, want);
    const float *y = output(&s);
    for (int j = 0; j < N_Y; j++)
        assert_float_equal(y[j], want[j], 1e-5);
    kann_host_arena_free(arena);
}

static void test_pool_matches_single_thread(void **state) {
    fixture *f = *state;
    size_t arena_size = (size_t)kann_model_arena_size(&f->model);
    kann_error e;
    for (uint32_t threads = 1; threads <= 5; threads++) {
        kann_host_pool *pool = kann_host_pool_new(threads, 0, &e);
        assert_non_null(pool);
        assert_int_equal(kann_host_pool_threads(pool), threads);
        kann_session ref, par;
        void *ref_arena = kann_host_arena_alloc(arena_size);
        void *par_arena = kann_host_arena_alloc(arena_size);
        assert_int_equal(kann_session_init(&ref, &f->model, ref_arena, arena_size, &e), KANN_OK);
        assert_int_equal(kann_session_init(&par, &f->model, par_arena, arena_size, &e), KANN_OK);
        /* Many runs on changing inputs: a missing barrier shows up as a stale value. */
        for (unsigned run = 0; run < 300; run++) {
            fill_input(&ref, run);
            fill_input(&par, run);
            assert_int_equal(kann_session_run(&ref, &e), KANN_OK);
            assert_int_equal(kann_host_pool_run(pool, &par, &e), KANN_OK);
            if (memcmp(output(&ref), output(&par), N_Y * sizeof(float)) != 0)
                fail_msg("%u threads, run %u: output differs from one thread", threads, run);
        }
        kann_host_arena_free(ref_arena);
        kann_host_arena_free(par_arena);
        kann_host_pool_free(pool);
    }
}

/* One pool serves models of different stream counts; a pool larger than the model runs it on
 * as many threads as it has streams. */
static void test_pool_reuse_across_models(void **state) {
    fixture *f = *state;
    kann_error e;
    kann_host_pool *pool = kann_host_pool_new(3, KANN_HOST_POOL_PIN, &e);
    assert_non_null(pool);
    size_t n;
    void *raw = rt_model_relu2(&n);
    void *bin = rt_copy(raw, n);
    free(raw);
    kann_model relu;
    assert_int_equal(kann_model_open(&relu, bin, n, &e), KANN_OK);
    kann_session a, b;
    void *arena_a = kann_host_arena_alloc((size_t)kann_model_arena_size(&relu));
    void *arena_b = kann_host_arena_alloc((size_t)kann_model_arena_size(&f->model));
    assert_int_equal(kann_session_init(&a, &relu, arena_a, kann_model_arena_size(&relu), &e),
                     KANN_OK);
    assert_int_equal(
        kann_session_init(&b, &f->model, arena_b, kann_model_arena_size(&f->model), &e), KANN_OK);
    float want[N_Y];
    for (unsigned run = 0; run < 100; run++) {
        kann_tensor in, out;
        kann_session_input(&a, 0, &in);
        for (int i = 0; i < 8; i++)
            ((float *)in.data)[i] = (float)i - 3.5f - (float)(run % 3);
        assert_int_equal(kann_host_pool_run(pool, &a, &e), KANN_OK);
        kann_session_output(&a, 0, &out);
        for (int i = 0; i < 8; i++) {
            float x = ((float *)in.data)[i];
            assert_float_equal(((float *)out.data)[i], x > 0 ? x : 0, 0);
        }
        fill_input(&b, run);
        assert_int_equal(kann_host_pool_run(pool, &b, &e), KANN_OK);
        kann_session_input(&b, 0, &in);
        rt_parallel_reference(in.data, want);
        const float *y = output(&b);
        for (int j = 0; j < N_Y; j++)
            assert_float_equal(y[j], want[j], 1e-5);
    }
    kann_host_arena_free(arena_a);
    kann_host_arena_free(arena_b);
    free(bin);
    kann_host_pool_free(pool);
}

/* Phase by phase through kann_session_run_phase, the streams of each phase in reverse order and
 * every other phase's cursor moved by kann_model_skip_phase first (as a thread that did not run
 * it does): the same bits as kann_session_run. */
static void test_run_phase_segments(void **state) {
    fixture *f = *state;
    const kann_model *m = &f->model;
    size_t arena_size = (size_t)kann_model_arena_size(m);
    kann_error e;
    kann_session ref, seg;
    void *ref_arena = kann_host_arena_alloc(arena_size);
    void *seg_arena = kann_host_arena_alloc(arena_size);
    assert_int_equal(kann_session_init(&ref, m, ref_arena, arena_size, &e), KANN_OK);
    assert_int_equal(kann_session_init(&seg, m, seg_arena, arena_size, &e), KANN_OK);
    fill_input(&ref, 7);
    fill_input(&seg, 7);
    assert_int_equal(kann_session_run(&ref, &e), KANN_OK);
    uint32_t S = kann_model_n_streams(m), cursor[4], end[4], count;
    assert_int_equal(S, 4);
    for (uint32_t i = 0; i < S; i++) {
        assert_int_equal(kann_model_stream(m, i, &cursor[i], &count), KANN_OK);
        end[i] = cursor[i] + count;
    }
    for (uint32_t phase = 0; phase < kann_model_n_phases(m); phase++)
        for (uint32_t k = 0; k < S; k++) {
            uint32_t i = S - 1 - k;
            if (phase % 2) {
                uint32_t skipped = kann_model_skip_phase(m, cursor[i]);
                assert_true(skipped > cursor[i] && skipped <= end[i]);
                uint32_t ran = cursor[i];
                assert_int_equal(kann_session_run_phase(&seg, &ran), KANN_OK);
                assert_int_equal(ran, skipped);
                cursor[i] = ran;
            } else {
                assert_int_equal(kann_session_run_phase(&seg, &cursor[i]), KANN_OK);
            }
        }
    for (uint32_t i = 0; i < S; i++)
        assert_int_equal(cursor[i], end[i]);
    assert_memory_equal(output(&ref), output(&seg), N_Y * sizeof(float));
    /* past the records: refused, and skip_phase leaves such a cursor as it is */
    uint32_t past = kann_model_n_records(m);
    assert_int_equal(kann_session_run_phase(&seg, &past), KANN_E_ARGUMENT);
    assert_int_equal(past, kann_model_n_records(m));
    assert_int_equal(kann_model_skip_phase(m, past), past);
    assert_int_equal(kann_session_run_phase(&seg, NULL), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_phase(NULL, &past), KANN_E_ARGUMENT);
    kann_host_arena_free(ref_arena);
    kann_host_arena_free(seg_arena);
}

/* The model build writes, copied to aligned bytes (free them) and opened into m. */
static void *open_built(void *(*build)(size_t *), kann_model *m) {
    size_t n;
    void *raw = build(&n);
    void *bin = rt_copy(raw, n);
    free(raw);
    kann_error e;
    if (kann_model_open(m, bin, n, &e) != KANN_OK) fail_msg("%s", e.message);
    return bin;
}

/* Free records (KANN_RECORD_FREE): stream 1's twelve take three times stream 0's work, so the
 * thread done with stream 0 takes some of them from stream 1's end; run after run, the pool's
 * result is the bits one thread gives. The model and its records pass the loader, which also
 * reports the flag. */
static void test_pool_takes_free_records(void **state) {
    (void)state;
    kann_model m;
    kann_error e;
    void *bin = open_built(rt_model_free_records, &m);
    uint32_t first, count;
    assert_int_equal(kann_model_stream(&m, 1, &first, &count), KANN_OK);
    assert_int_equal(count, RT_FREE_RECORDS + 1);
    for (uint32_t r = first; r < first + count; r++)
        assert_int_equal(kann_model_record_free(&m, r), r + 1 < first + count);
    size_t arena_size = (size_t)kann_model_arena_size(&m);
    kann_session ref, par;
    void *ref_arena = kann_host_arena_alloc(arena_size);
    void *par_arena = kann_host_arena_alloc(arena_size);
    assert_int_equal(kann_session_init(&ref, &m, ref_arena, arena_size, &e), KANN_OK);
    assert_int_equal(kann_session_init(&par, &m, par_arena, arena_size, &e), KANN_OK);
    enum { X = RT_POOL_PLANES * RT_POOL_IN * RT_POOL_IN };
    const size_t y_bytes = (size_t)RT_POOL_PLANES * (RT_POOL_IN - 2) * (RT_POOL_IN - 2) * 4;
    kann_tensor in[2], out[2];
    kann_session *ss[2] = {&ref, &par};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(kann_session_input(ss[i], 0, &in[i]), KANN_OK);
        assert_int_equal(kann_session_output(ss[i], 0, &out[i]), KANN_OK);
    }
    kann_host_pool *pool = kann_host_pool_new(2, 0, &e);
    assert_non_null(pool);
    /* 40 runs at least, until a record was taken (a loaded host may keep the threads in step
     * for a while) */
    for (unsigned run = 0; run < 40 || (run < 4000 && !kann_host_pool_records_taken(pool)); run++) {
        unsigned seed = run;
        for (int k = 0; k < X; k++) {
            seed = seed * 1103515245u + 12345u;
            float v = (float)((int)(seed >> 16 & 0xffff) - 32768) / 1024.0f;
            ((float *)in[0].data)[k] = ((float *)in[1].data)[k] = v;
        }
        assert_int_equal(kann_session_run(&ref, &e), KANN_OK);
        memset(out[1].data, 0, y_bytes);
        assert_int_equal(kann_host_pool_run(pool, &par, &e), KANN_OK);
        if (memcmp(out[0].data, out[1].data, y_bytes) != 0)
            fail_msg("run %u: 2 threads differ from one", run);
    }
    assert_true(kann_host_pool_records_taken(pool) > 0);
    kann_host_pool_free(pool);
    kann_host_arena_free(ref_arena);
    kann_host_arena_free(par_arena);
    free(bin);
}

/* Records the pool shares among threads in parts (kann_model_record_parts): pooling over 64
 * planes a stream, run on 2 threads, gives the bits one thread does, run after run; the same
 * record run as parts through kann_session_run_part too; parts off the granule are refused. */
static void test_pool_shares_records(void **state) {
    (void)state;
    kann_model m;
    kann_error e;
    void *bin = open_built(rt_model_maxpool2, &m);
    size_t arena_size = (size_t)kann_model_arena_size(&m);
    kann_session ref, par, cut;
    void *ref_arena = kann_host_arena_alloc(arena_size);
    void *par_arena = kann_host_arena_alloc(arena_size);
    void *cut_arena = kann_host_arena_alloc(arena_size);
    assert_int_equal(kann_session_init(&ref, &m, ref_arena, arena_size, &e), KANN_OK);
    assert_int_equal(kann_session_init(&par, &m, par_arena, arena_size, &e), KANN_OK);
    assert_int_equal(kann_session_init(&cut, &m, cut_arena, arena_size, &e), KANN_OK);
    enum { X = RT_POOL_PLANES * RT_POOL_IN * RT_POOL_IN };
    const size_t y_bytes = (size_t)RT_POOL_PLANES * (RT_POOL_IN - 2) * (RT_POOL_IN - 2) * 4;
    kann_tensor in[3], out[3];
    kann_session *ss[3] = {&ref, &par, &cut};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kann_session_input(ss[i], 0, &in[i]), KANN_OK);
        assert_int_equal(kann_session_output(ss[i], 0, &out[i]), KANN_OK);
    }
    /* stream 0's record: 64 planes, granule 1, 64 * 62 * 62 * 9 compared elements */
    uint32_t first, count, begin, end;
    double work;
    assert_int_equal(kann_model_stream(&m, 0, &first, &count), KANN_OK);
    assert_int_equal(kann_model_record_parts(&m, first, &begin, &end, &work), 1);
    assert_int_equal(begin, 0);
    assert_int_equal(end, RT_POOL_PLANES / 2);
    assert_true(work == 64.0 * 62 * 62 * 9);
    assert_int_equal(kann_model_record_parts(&m, first + 1, &begin, &end, &work), 0); /* barrier */
    kann_host_pool *pool = kann_host_pool_new(2, 0, &e);
    assert_non_null(pool);
    for (unsigned run = 0; run < 40; run++) {
        unsigned seed = run;
        for (int k = 0; k < X; k++) {
            seed = seed * 1103515245u + 12345u;
            float v = (float)((int)(seed >> 16 & 0xffff) - 32768) / 1024.0f;
            ((float *)in[0].data)[k] = ((float *)in[1].data)[k] = ((float *)in[2].data)[k] = v;
        }
        assert_int_equal(kann_session_run(&ref, &e), KANN_OK);
        assert_int_equal(kann_host_pool_run(pool, &par, &e), KANN_OK);
        if (memcmp(out[0].data, out[1].data, y_bytes) != 0)
            fail_msg("run %u: 2 threads differ from one", run);
        if (run % 8 == 0) {
            /* each stream's record as parts of 1 to 5 planes */
            for (uint32_t st = 0; st < 2; st++) {
                assert_int_equal(kann_model_stream(&m, st, &first, &count), KANN_OK);
                assert_int_equal(kann_model_record_parts(&m, first, &begin, &end, &work), 1);
                for (uint32_t lo = begin, hi; lo < end; lo = hi) {
                    hi = lo + 1 + (lo + run) % 5;
                    if (hi > end) hi = end;
                    assert_int_equal(kann_session_run_part(&cut, first, lo, hi), KANN_OK);
                }
            }
            assert_memory_equal(out[0].data, out[2].data, y_bytes);
        }
    }
    /* whole tiles only where the tile is not the record's, past it, empty, or a barrier */
    assert_int_equal(kann_model_stream(&m, 1, &first, &count), KANN_OK);
    assert_int_equal(kann_session_run_part(&cut, first, 0, 64), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_part(&cut, first, 64, 129), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_part(&cut, first, 70, 70), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_part(&cut, first + 1, 0, 0), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_part(&cut, 1000, 0, 1), KANN_E_ARGUMENT);
    assert_int_equal(kann_session_run_part(NULL, first, 64, 128), KANN_E_ARGUMENT);
    assert_int_equal(kann_model_record_parts(&m, 1000, &begin, &end, NULL), 0);
    kann_host_pool_free(pool);
    kann_host_arena_free(ref_arena);
    kann_host_arena_free(par_arena);
    kann_host_arena_free(cut_arena);
    free(bin);
}

static void test_pool_arguments(void **state) {
    (void)state;
    kann_error e;
    assert_null(kann_host_pool_new(0, 0, &e));
    assert_int_equal(e.status, KANN_E_ARGUMENT);
    kann_host_pool *pool = kann_host_pool_new(2, 0, &e);
    assert_int_equal(kann_host_pool_run(pool, NULL, &e), KANN_E_ARGUMENT);
    kann_host_pool_free(pool);
    kann_host_pool_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_single_thread_matches_reference, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_matches_single_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_reuse_across_models, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_phase_segments, setup, teardown),
        cmocka_unit_test(test_pool_shares_records),
        cmocka_unit_test(test_pool_takes_free_records),
        cmocka_unit_test(test_pool_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
