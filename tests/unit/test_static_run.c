/* The static-model walker (runtime/src/static_run.c): phase-by-phase order over streams, in one
 * thread and in two meeting at barriers, the exec context kernels get, argument checks, I/O. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kann_kernels.h"

typedef struct call_args {
    uint32_t stream, phase, index;
} call_args;

#define MAX_LOG 64
static call_args call_log[MAX_LOG];
static int n_logged;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static const kann_exec *seen_exec[MAX_LOG];
static uint8_t seen_arena_ok[MAX_LOG];

static _Alignas(64) uint8_t arena[256];
static const uint32_t weights[4] = {1, 2, 3, 4};

static void log_call(const void *args, const kann_exec *ex) {
    pthread_mutex_lock(&log_lock);
    if (n_logged < MAX_LOG) {
        call_log[n_logged] = *(const call_args *)args;
        seen_exec[n_logged] = ex;
        seen_arena_ok[n_logged] = ex->arena == arena && ex->consts == (const uint8_t *)weights;
        n_logged++;
    }
    pthread_mutex_unlock(&log_lock);
}

/* 2 streams x 3 phases; stream 0 has two calls in phase 1, stream 1 none in phase 2. */
static const call_args a[] = {
    {0, 0, 0}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0}, {1, 0, 0}, {1, 1, 0},
};
static const kann_static_record records[] = {
    {log_call, &a[0]},
    {0, 0},
    {log_call, &a[1]},
    {log_call, &a[2]},
    {0, 0},
    {log_call, &a[3]},
    {0, 0},
    {log_call, &a[4]},
    {0, 0},
    {log_call, &a[5]},
    {0, 0},
    {0, 0},
};
static const uint32_t stream_first[] = {0, 7};
static const kann_static_io io[] = {
    {"x", KANN_DTYPE_F32, 2, {1, 4}, 64, 16},
    {"y", KANN_DTYPE_F32, 1, {3}, 128, 12},
};
static const kann_static_model model = {
    sizeof arena, 2, 3, records, stream_first, weights, 1, 1, io,
};

static int reset(void **state) {
    (void)state;
    n_logged = 0;
    return 0;
}

static void test_single_thread_runs_phase_by_phase(void **state) {
    (void)state;
    assert_int_equal(kann_static_run(&model, arena), KANN_OK);
    /* Phase p of every stream before phase p + 1 of any; streams in order within a phase. */
    static const call_args want[] = {
        {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 1, 1}, {1, 1, 0}, {0, 2, 0},
    };
    assert_int_equal(n_logged, 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(call_log[i].stream, want[i].stream);
        assert_int_equal(call_log[i].phase, want[i].phase);
        assert_int_equal(call_log[i].index, want[i].index);
        assert_true(seen_arena_ok[i]);
    }
}

static pthread_barrier_t barrier;

static void wait_barrier(void *ctx) {
    pthread_barrier_wait(ctx);
}

static void *worker(void *arg) {
    uint32_t first = (uint32_t)(uintptr_t)arg;
    return (void *)(uintptr_t)kann_static_run_streams(&model, arena, first, 2, wait_barrier,
                                                      &barrier);
}

static void test_two_threads_meet_at_barriers(void **state) {
    (void)state;
    for (int round = 0; round < 20; round++) {
        n_logged = 0;
        pthread_barrier_init(&barrier, NULL, 2);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, worker, (void *)(uintptr_t)1), 0);
        uintptr_t mine = (uintptr_t)worker((void *)(uintptr_t)0);
        void *theirs;
        pthread_join(t, &theirs);
        pthread_barrier_destroy(&barrier);
        assert_int_equal(mine, KANN_OK);
        assert_int_equal((uintptr_t)theirs, KANN_OK);
        assert_int_equal(n_logged, 6);
        for (int i = 1; i < 6; i++)
            assert_true(call_log[i - 1].phase <= call_log[i].phase);
    }
}

static void test_bad_arguments(void **state) {
    (void)state;
    assert_int_equal(kann_static_run(NULL, arena), KANN_E_ARGUMENT);
    assert_int_equal(kann_static_run(&model, NULL), KANN_E_ARGUMENT);
    assert_int_equal(kann_static_run(&model, arena + 8), KANN_E_ALIGNMENT);
    assert_int_equal(kann_static_run_streams(&model, arena, 2, 2, wait_barrier, &barrier),
                     KANN_E_ARGUMENT);
    assert_int_equal(kann_static_run_streams(&model, arena, 0, 2, NULL, NULL), KANN_E_ARGUMENT);
    assert_int_equal(kann_static_run_streams(&model, arena, 0, 0, NULL, NULL), KANN_E_ARGUMENT);
    assert_int_equal(n_logged, 0);
}

static void test_inputs_and_outputs(void **state) {
    (void)state;
    kann_tensor t;
    assert_int_equal(kann_static_input(&model, arena, 0, &t), KANN_OK);
    assert_string_equal(t.name, "x");
    assert_ptr_equal(t.data, arena + 64);
    assert_int_equal(t.size, 16);
    assert_int_equal(t.rank, 2);
    assert_int_equal(t.dims[1], 4);
    assert_int_equal(kann_static_output(&model, arena, 0, &t), KANN_OK);
    assert_string_equal(t.name, "y");
    assert_ptr_equal(t.data, arena + 128);
    assert_int_equal(t.dims[0], 3);
    assert_int_equal(kann_static_output(&model, NULL, 0, &t), KANN_OK);
    assert_null(t.data);
    assert_int_equal(kann_static_input(&model, arena, 1, &t), KANN_E_NOT_FOUND);
    assert_int_equal(kann_static_output(&model, arena, 1, &t), KANN_E_NOT_FOUND);
    assert_int_equal(kann_static_input(NULL, arena, 0, &t), KANN_E_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_single_thread_runs_phase_by_phase, reset),
        cmocka_unit_test_setup(test_two_threads_meet_at_barriers, reset),
        cmocka_unit_test_setup(test_bad_arguments, reset),
        cmocka_unit_test_setup(test_inputs_and_outputs, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
