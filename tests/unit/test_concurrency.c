/* Sessions of one model in several threads at once: the model is read-only after load and all
 * state lives in each session's arena, so concurrent runs on different inputs must each give
 * exactly the result a lone run gives. Under the sanitizer build and valgrind a stray access
 * into another session's arena is reported too. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kann_host.h"
#include "runtime_models.h"

#define N_SESSIONS 2
#define ITERATIONS 2000

typedef struct worker {
    const kann_model *model;
    kann_host_pool *pool; /* NULL: kann_session_run in this thread */
    int iterations;
    uint32_t seed;
    int mismatches;
    int failures;
} worker;

/* Input number `iteration` of worker `seed`: different for every worker and iteration. */
static void fill_input(float *x, size_t n, uint32_t seed, int iteration) {
    uint32_t s = seed * 2654435761u + (uint32_t)iteration * 40503u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
    }
}

/* The output of a lone run in a fresh arena on this input, for comparison. */
static void lone_run(const kann_model *m, uint32_t seed, int iteration, float *out, size_t out_n) {
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(m));
    assert_non_null(arena);
    kann_session s;
    kann_error e;
    assert_int_equal(kann_session_init(&s, m, arena, (size_t)kann_model_arena_size(m), &e),
                     KANN_OK);
    kann_tensor in, o;
    assert_int_equal(kann_session_input(&s, 0, &in), KANN_OK);
    fill_input(in.data, in.size / sizeof(float), seed, iteration);
    assert_int_equal(kann_session_run(&s, &e), KANN_OK);
    assert_int_equal(kann_session_output(&s, 0, &o), KANN_OK);
    assert_int_equal(o.size, out_n * sizeof(float));
    memcpy(out, o.data, o.size);
    kann_host_arena_free(arena);
}

/* Every iteration: a new input, a run, and a check against a lone run of the same input
 * (computed here, in this thread, in a second arena, so the check itself also runs
 * concurrently with the other worker). */
static void *work(void *arg) {
    worker *w = arg;
    const kann_model *m = w->model;
    void *arena = kann_host_arena_alloc((size_t)kann_model_arena_size(m));
    void *check = kann_host_arena_alloc((size_t)kann_model_arena_size(m));
    if (!arena || !check) {
        w->failures++;
        return NULL;
    }
    kann_session s, c;
    kann_error e;
    if (kann_session_init(&s, m, arena, (size_t)kann_model_arena_size(m), &e) != KANN_OK ||
        kann_session_init(&c, m, check, (size_t)kann_model_arena_size(m), &e) != KANN_OK) {
        w->failures++;
        return NULL;
    }
    kann_tensor in, out, cin, cout;
    kann_session_input(&s, 0, &in);
    kann_session_output(&s, 0, &out);
    kann_session_input(&c, 0, &cin);
    kann_session_output(&c, 0, &cout);
    for (int it = 0; it < w->iterations; it++) {
        fill_input(in.data, in.size / sizeof(float), w->seed, it);
        kann_status st = w->pool ? kann_host_pool_run(w->pool, &s, &e) : kann_session_run(&s, &e);
        if (st != KANN_OK) {
            w->failures++;
            continue;
        }
        /* the reference run only every few iterations: it is the slow half */
        if (it % 8 == 0) {
            fill_input(cin.data, cin.size / sizeof(float), w->seed, it);
            if (kann_session_run(&c, &e) != KANN_OK) w->failures++;
            if (memcmp(out.data, cout.data, out.size) != 0) w->mismatches++;
        }
        /* the input is left intact by a run */
        float *x = malloc(in.size);
        if (!x) {
            w->failures++;
            continue;
        }
        fill_input(x, in.size / sizeof(float), w->seed, it);
        if (memcmp(x, in.data, in.size) != 0) w->mismatches++;
        free(x);
    }
    kann_host_arena_free(arena);
    kann_host_arena_free(check);
    return NULL;
}

static void run_concurrently(void *(*build)(size_t *), int pool_threads, int iterations) {
    size_t n;
    void *bin = build(&n);
    void *bytes = rt_copy(bin, n);
    kann_model m;
    kann_error e;
    if (kann_model_open(&m, bytes, n, &e) != KANN_OK) fail_msg("%s", e.message);
    /* The model bytes must not change while sessions run. */
    void *saved = malloc(n);
    assert_non_null(saved);
    memcpy(saved, bytes, n);

    worker w[N_SESSIONS];
    pthread_t threads[N_SESSIONS];
    for (int i = 0; i < N_SESSIONS; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].model = &m;
        w[i].iterations = iterations;
        w[i].seed = (uint32_t)(i + 1);
        if (pool_threads > 1) {
            w[i].pool = kann_host_pool_new((uint32_t)pool_threads, 0, &e);
            assert_non_null(w[i].pool);
        }
    }
    for (int i = 0; i < N_SESSIONS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < N_SESSIONS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < N_SESSIONS; i++) {
        if (w[i].failures || w[i].mismatches)
            fail_msg("session %d: %d failed runs, %d wrong results", i, w[i].failures,
                     w[i].mismatches);
        if (w[i].pool) kann_host_pool_free(w[i].pool);
    }
    assert_memory_equal(saved, bytes, n);

    /* After the threads: the last input of each worker gives what a lone run gives. */
    kann_tensor o;
    assert_int_equal(kann_model_output(&m, 0, &o), KANN_OK);
    size_t out_n = o.size / sizeof(float);
    float *a = malloc(o.size), *b = malloc(o.size);
    assert_non_null(a);
    assert_non_null(b);
    lone_run(&m, 1, iterations - 1, a, out_n);
    lone_run(&m, 2, iterations - 1, b, out_n);
    assert_true(memcmp(a, b, o.size) != 0); /* the workers' inputs really differ */
    free(a);
    free(b);
    free(saved);
    free(bytes);
    free(bin);
}

static void test_two_sessions_two_threads(void **state) {
    (void)state;
    run_concurrently(rt_model_parallel, 1, ITERATIONS);
    run_concurrently(rt_model_conv, 1, ITERATIONS);
}

/* Each session walked by its own pool of two threads: four threads on one model. */
static void test_two_sessions_two_pools(void **state) {
    (void)state;
    run_concurrently(rt_model_parallel, 2, ITERATIONS / 4);
}

/* The parallel model's result against its double-precision reference, with both sessions
 * running at once: concurrency changes nothing numerically. */
static void test_results_match_reference(void **state) {
    (void)state;
    size_t n;
    void *bin = rt_model_parallel(&n);
    void *bytes = rt_copy(bin, n);
    kann_model m;
    kann_error e;
    assert_int_equal(kann_model_open(&m, bytes, n, &e), KANN_OK);
    kann_tensor in, out;
    assert_int_equal(kann_model_input(&m, 0, &in), KANN_OK);
    assert_int_equal(kann_model_output(&m, 0, &out), KANN_OK);
    float *x = malloc(in.size), *y = malloc(out.size), *ref = malloc(out.size);
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(ref);
    fill_input(x, in.size / sizeof(float), 1, 0);
    rt_parallel_reference(x, ref);
    lone_run(&m, 1, 0, y, out.size / sizeof(float));
    for (size_t i = 0; i < out.size / sizeof(float); i++)
        assert_float_equal(y[i], ref[i], 1e-5f);
    free(x);
    free(y);
    free(ref);
    free(bytes);
    free(bin);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_match_reference),
        cmocka_unit_test(test_two_sessions_two_threads),
        cmocka_unit_test(test_two_sessions_two_pools),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
