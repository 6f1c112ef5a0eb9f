/* The host thread pool: persistent workers that run a session's streams together, meeting at
 * a generation-counting spin barrier that falls back to a futex after a short spin. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "host_private.h"

/* Phases are often a few microseconds long: a waiter spins this many times (a pause is
 * 10-40 ns, so 0.05-0.3 ms) before sleeping, unless the pool has more threads than CPUs,
 * where spinning only delays the threads it waits for. */
#define SPIN_BARRIER 4000
#define SPIN_IDLE 8000

typedef struct worker {
    kann_host_pool *pool;
    uint32_t index;
} worker;

struct kann_host_pool {
    uint32_t n_threads;
    uint32_t spins_barrier, spins_idle;
    pthread_t *threads; /* n_threads - 1 */
    worker *workers;

    /* The job: written by the caller before job_gen is bumped, read by workers after. */
    kann_session *_Atomic session;
    _Atomic uint32_t n_active;
    _Atomic uint32_t job_gen;
    _Atomic uint32_t job_sleepers;
    _Atomic uint32_t acks; /* workers that have read the current job */
    _Atomic int quit;

    /* The phase barrier among the n_active workers of a run. */
    _Atomic uint32_t bar_count;
    _Atomic uint32_t bar_gen;
    _Atomic uint32_t bar_sleepers;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void sleep_while_equal(_Atomic uint32_t *word, uint32_t old) {
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
#else
    (void)word;
    (void)old;
    sched_yield();
#endif
}

static void wake_all(_Atomic uint32_t *word) {
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
#endif
}

/* Waits until *word != old. The sleeper count lets the signaller skip the wake syscall when
 * everyone is still spinning; both sides use sequentially consistent operations so that either
 * the signaller sees the sleeper, or the sleeper's futex sees the new value. */
static void wait_change(_Atomic uint32_t *word, _Atomic uint32_t *sleepers, uint32_t old,
                        uint32_t spins) {
    for (uint32_t i = 0; i < spins; i++) {
        if (atomic_load_explicit(word, memory_order_acquire) != old) return;
        cpu_relax();
    }
    while (atomic_load(word) == old) {
        atomic_fetch_add(sleepers, 1);
        sleep_while_equal(word, old);
        atomic_fetch_sub(sleepers, 1);
    }
}

static void signal_change(_Atomic uint32_t *word, _Atomic uint32_t *sleepers) {
    atomic_fetch_add(word, 1);
    if (atomic_load(sleepers) != 0) wake_all(word);
}

static void pool_barrier(void *ctx) {
    kann_host_pool *p = ctx;
    uint32_t gen = atomic_load_explicit(&p->bar_gen, memory_order_acquire);
    uint32_t n = atomic_load_explicit(&p->n_active, memory_order_relaxed);
    if (atomic_fetch_add_explicit(&p->bar_count, 1, memory_order_acq_rel) + 1 == n) {
        atomic_store_explicit(&p->bar_count, 0, memory_order_relaxed);
        signal_change(&p->bar_gen, &p->bar_sleepers);
    } else {
        wait_change(&p->bar_gen, &p->bar_sleepers, gen, p->spins_barrier);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    kann_host_pool *p = w->pool;
    uint32_t seen = 0;
    for (;;) {
        wait_change(&p->job_gen, &p->job_sleepers, seen, p->spins_idle);
        seen = atomic_load(&p->job_gen);
        if (atomic_load(&p->quit)) break;
        kann_session *s = atomic_load(&p->session);
        uint32_t n_active = atomic_load(&p->n_active);
        /* After the ack the caller may start the next job: nothing of this one is read later. */
        atomic_fetch_add(&p->acks, 1);
        if (w->index < n_active) kann_session_run_streams(s, w->index, n_active, pool_barrier, p);
    }
    return NULL;
}

/* Pins thread to the index-th CPU (modulo their count) of those this process may use.
 * Pinning is a placement hint: failing to pin is not an error. */
static void pin_thread(pthread_t thread, uint32_t index) {
#ifdef __linux__
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int n = CPU_COUNT(&allowed);
    if (n <= 0) return;
    int want = (int)(index % (uint32_t)n);
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed) || want-- > 0) continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pthread_setaffinity_np(thread, sizeof one, &one);
        return;
    }
#else
    (void)thread;
    (void)index;
#endif
}

kann_host_pool *kann_host_pool_new(uint32_t n_threads, unsigned flags, kann_error *err) {
    if (n_threads < 1) {
        kann_host_fail(err, KANN_E_ARGUMENT, "thread pool: at least one thread is needed");
        return NULL;
    }
    kann_host_pool *p = calloc(1, sizeof *p);
    if (!p) {
        kann_host_fail(err, KANN_E_RUNTIME, "thread pool: out of memory");
        return NULL;
    }
    p->n_threads = n_threads;
    uint32_t n_cpus = kann_host_cpu_count();
    int oversubscribed = n_threads > n_cpus;
    p->spins_barrier = oversubscribed ? 0 : SPIN_BARRIER;
    p->spins_idle = oversubscribed ? 0 : SPIN_IDLE;
    if (n_threads == 1) return p;

    p->threads = calloc(n_threads - 1, sizeof *p->threads);
    p->workers = calloc(n_threads - 1, sizeof *p->workers);
    if (!p->threads || !p->workers) {
        free(p->threads);
        free(p->workers);
        free(p);
        kann_host_fail(err, KANN_E_RUNTIME, "thread pool: out of memory");
        return NULL;
    }
    for (uint32_t i = 1; i < n_threads; i++) {
        worker *w = &p->workers[i - 1];
        w->pool = p;
        w->index = i;
        int rc = pthread_create(&p->threads[i - 1], NULL, worker_main, w);
        if (rc != 0) {
            p->n_threads = i; /* free() joins the ones started */
            kann_host_pool_free(p);
            kann_host_fail(err, KANN_E_RUNTIME, "thread pool: cannot start thread %u: %s", i,
                           strerror(rc));
            return NULL;
        }
        if (flags & KANN_HOST_POOL_PIN) pin_thread(p->threads[i - 1], i);
    }
    return p;
}

uint32_t kann_host_pool_threads(const kann_host_pool *p) {
    return p ? p->n_threads : 0;
}

kann_status kann_host_pool_run(kann_host_pool *p, kann_session *s, kann_error *err) {
    if (!p || !s || !s->model)
        return kann_host_fail(err, KANN_E_ARGUMENT, "kann_host_pool_run: NULL pool or session");
    uint32_t n_streams = kann_model_n_streams(s->model);
    uint32_t n_active = p->n_threads < n_streams ? p->n_threads : n_streams;
    if (n_active <= 1) return kann_session_run(s, err);

    atomic_store(&p->session, s);
    atomic_store(&p->n_active, n_active);
    atomic_store(&p->acks, 0);
    signal_change(&p->job_gen, &p->job_sleepers);
    kann_status st = kann_session_run_streams(s, 0, n_active, pool_barrier, p);
    /* Workers past the last barrier are done with the arena, but idle ones (index >= n_active)
     * may not have read the job yet: wait for every ack before the job can change. */
    for (uint32_t i = 0; atomic_load(&p->acks) != p->n_threads - 1; i++) {
        if (i < 1000)
            cpu_relax();
        else
            sched_yield();
    }
    if (st != KANN_OK)
        return kann_host_fail(err, st, "kann_session_run_streams failed: %s", kann_status_name(st));
    if (err) {
        err->status = KANN_OK;
        err->message[0] = '\0';
    }
    return KANN_OK;
}

void kann_host_pool_free(kann_host_pool *p) {
    if (!p) return;
    if (p->n_threads > 1) {
        atomic_store(&p->quit, 1);
        signal_change(&p->job_gen, &p->job_sleepers);
        for (uint32_t i = 1; i < p->n_threads; i++)
            pthread_join(p->threads[i - 1], NULL);
    }
    free(p->threads);
    free(p->workers);
    free(p);
}
