/* The host thread pool: persistent workers that run a session's phases together. Within a
 * phase every (stream, phase) segment is claimed by one thread: each thread claims its own
 * streams first (a contiguous block; with as many streams as threads, thread t takes stream t,
 * the core whose data the compiler planned it for), then any segment of the phase nobody has
 * started. A thread the host has descheduled, or one still waking up, no longer stalls the
 * others: they take its segments. A large record of a kernel whose parts compute the bits the
 * whole does is run in parts, and a thread with nothing left in the phase runs parts of a
 * record another thread is running: a core the host slows no longer holds the phase for all of
 * its segment. A thread with nothing left also takes whole records of another thread's segment
 * that the compiler marked free (KANN_RECORD_FREE: independent of the segment's other records),
 * from the segment's end, while that thread works from its start: a phase of many small records
 * (a grouped conv's groups) no longer waits for a slow core's last ones. The next phase starts
 * when every segment of this one is done (a spin, then a futex). */
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
#include "kann_format.h"

/* Phases are often a few microseconds long: a waiter spins this many times (a pause is
 * 10-40 ns, so 0.05-0.3 ms) before sleeping, unless the pool has more threads than CPUs,
 * where spinning only delays the threads it waits for. */
#define SPIN_WAIT 4000
#define SPIN_IDLE 8000

/* The parts a shared record is cut into, and the least work (multiply-adds, or elements
 * compared) of a part: cutting a small record costs more than it saves (each part reads the
 * layer's input or weights again; mobilenet_v2 took 4 % longer with every record cut). On the
 * Intel core pair, whose host slows one core or the other in bursts, 8 parts of at least 5e5
 * against 4 of 1e6: squeezenet1_1 on two threads 0.97-0.98 of the time in three runs of 30-60
 * alternated rounds, mobilenet_v2 0.98-1.01. */
#define SHARE_PARTS 8
#define SHARE_MIN_PART 5e5

/* The record a segment's thread is running, offered in parts to threads that have run out of
 * work in the phase: a slow or preempted core's segment no longer holds the others up for
 * all of its length. `word` is id << 32 | next << 16 | end: parts [next, end) are left, the
 * owner takes them from next up, helpers from end down (a compare-and-swap on word each). Ids
 * only grow, so a word never comes back: a helper whose swap succeeds read the fields of the
 * record it takes a part of (they are written after word leaves the old id and before it takes
 * the new one, seqlock-style). Helpers count the parts they ran in `done`; the owner waits
 * for its count (`expected`, its own field) before the segment counts as finished. */
typedef struct share {
    _Atomic uint64_t word;
    _Atomic uint32_t done;
    uint32_t expected;
    kann_session *_Atomic session;
    _Atomic uint32_t record, begin, end, granule, parts;
    /* A record whose parts work in scratch copies (kann_model_record_slots): the owner's thread
     * runs in copy 0, thread t in copy (t - owner) mod threads. slots 0: none. */
    _Atomic uint32_t slots, owner, threads;
    /* Whole records of the stream's segment that other threads took (stolen_done counts those
     * they finished; stolen_expected, the owner's own field, those it found taken). */
    _Atomic uint32_t stolen_done;
    uint32_t stolen_expected;
} share;

/* The parts [*next, *end) a share's word leaves. */
static inline void share_left(uint64_t word, uint32_t *next, uint32_t *end) {
    *next = (uint32_t)(word >> 16) & 0xffff;
    *end = (uint32_t)word & 0xffff;
}

typedef struct worker {
    kann_host_pool *pool;
    uint32_t index;
} worker;

/* What the threads of one run share: a thread's copy of the published job. */
typedef struct pool_job {
    kann_session *session;
    uint32_t n_active; /* threads taking part: min(threads, streams) */
    uint32_t n_streams, n_phases;
    uint32_t ticket; /* claim value of phase 0; the run's phases take [ticket, ticket + n_phases] */
    uint32_t done_base;     /* segments_done when the run started */
    const uint32_t *starts; /* [phase * n_streams + stream]: the segment's first record */
    uint64_t mark;          /* record claim value of phase 0; phase p takes mark + p */
    const struct steal_table *tab;
} pool_job;

/* The published job: the fields of pool_job, written by the caller while the job sequence is
 * odd and copied by the workers (relaxed atomics: the sequence orders them). */
typedef struct pool_job_slot {
    kann_session *_Atomic session;
    _Atomic uint32_t n_active, n_streams, n_phases, ticket, done_base;
    const uint32_t *_Atomic starts;
    _Atomic uint64_t mark;
    const struct steal_table *_Atomic tab;
} pool_job_slot;

/* The free records a thread out of work may take whole, segment by segment, and the claim of
 * every record; the caller fills it at each run's start. One the pool outgrows is kept (in
 * `retired`) until the pool is freed: a thread still holding an old job may read it. Its
 * entries are relaxed atomics for the same reason. */
typedef struct steal_table {
    struct steal_table *retired;
    uint32_t records, segments; /* capacities */
    /* taken[r]: the claim value (job mark + phase) record r was last taken with, by the thread
     * running its segment or by one that took it; marks only grow (64 bits: never wrap), and a
     * claim only raises a value. */
    _Atomic uint64_t *taken;
    /* seg[2 s], seg[2 s + 1]: the bounds in cand of segment s's (phase * streams + stream)
     * records to take */
    _Atomic uint32_t *seg;
    _Atomic uint32_t *cand;
} steal_table;

struct kann_host_pool {
    uint32_t n_threads;
    uint32_t spins_wait, spins_idle;
    pthread_t *threads; /* n_threads - 1 */
    worker *workers;

    /* The job, published seqlock-style: job_seq is odd while the caller writes `job`, even
     * (and bumped, waking sleepers) once it is complete. A worker that read it torn or late
     * holds stale tickets, which no claim accepts: it touches neither session nor model. */
    _Atomic uint32_t job_seq;
    _Atomic uint32_t job_sleepers;
    _Atomic int quit;
    pool_job_slot job;
    uint32_t *starts; /* the caller's table behind job.starts */
    size_t starts_cap;
    uint32_t next_ticket; /* the caller's: tickets only grow, so no two runs share one */
    steal_table *tab;
    uint64_t next_mark; /* the caller's */
    _Atomic uint64_t records_taken;

    /* claims[s]: the ticket of the first phase of stream s nobody has claimed; a claim moves it
     * from ticket + p to ticket + p + 1. segments_done counts finished segments, for ever
     * (wrapping); a phase is over when it reaches the run's base + (p + 1) * streams. */
    _Atomic uint32_t claims[KANN_MAX_STREAMS];
    _Atomic uint32_t segments_done;
    _Atomic uint32_t done_sleepers;

    share shares[KANN_MAX_STREAMS];
    _Atomic uint32_t next_share_id;
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

/* Whether wrapping counter v has reached target. */
static inline int reached(uint32_t v, uint32_t target) {
    return (int32_t)(v - target) >= 0;
}

/* Part i of the n a share's tile [begin, end) is cut into: whole granules, the last up to
 * end. */
static void part_range(uint32_t begin, uint32_t end, uint32_t granule, uint32_t n, uint32_t i,
                       uint32_t *lo, uint32_t *hi) {
    uint32_t units = (end - begin + granule - 1) / granule;
    *lo = begin + (uint32_t)((uint64_t)units * i / n) * granule;
    *hi = i + 1 == n ? end : begin + (uint32_t)((uint64_t)units * (i + 1) / n) * granule;
}

/* Runs one part of stream i's shared record on thread t, if one is left; 1 if it did. */
static int help(kann_host_pool *p, uint32_t i, uint32_t t) {
    share *sh = &p->shares[i];
    uint64_t w = atomic_load_explicit(&sh->word, memory_order_acquire);
    uint32_t next, end_part;
    share_left(w, &next, &end_part);
    if (next >= end_part) return 0;
    kann_session *session = atomic_load_explicit(&sh->session, memory_order_relaxed);
    uint32_t record = atomic_load_explicit(&sh->record, memory_order_relaxed);
    uint32_t begin = atomic_load_explicit(&sh->begin, memory_order_relaxed);
    uint32_t end = atomic_load_explicit(&sh->end, memory_order_relaxed);
    uint32_t granule = atomic_load_explicit(&sh->granule, memory_order_relaxed);
    uint32_t n = atomic_load_explicit(&sh->parts, memory_order_relaxed);
    uint32_t slots = atomic_load_explicit(&sh->slots, memory_order_relaxed);
    uint32_t owner = atomic_load_explicit(&sh->owner, memory_order_relaxed);
    uint32_t threads = atomic_load_explicit(&sh->threads, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (slots && (t >= threads || owner >= threads)) return 0;
    uint64_t taken = (w & ~(uint64_t)0xffff) | (end_part - 1);
    if (!atomic_compare_exchange_strong(&sh->word, &w, taken)) return 0;
    uint32_t lo, hi;
    part_range(begin, end, granule, n, end_part - 1, &lo, &hi);
    kann_session_run_part_in(session, record, lo, hi, slots ? (t + threads - owner) % threads : 0,
                             NULL, NULL);
    atomic_fetch_add_explicit(&sh->done, 1, memory_order_release);
    return 1;
}

/* Runs a part of any stream's shared record on thread t; 1 if it did. */
static int help_any(kann_host_pool *p, uint32_t n_streams, uint32_t t) {
    for (uint32_t i = 0; i < n_streams; i++)
        if (help(p, i, t)) return 1;
    return 0;
}

/* Takes record r for claim value `mark`: 1 if this call raised it to mark, 0 if it already was
 * there (another thread took it in this phase) or past it (the caller's job is over). */
static int take_record(_Atomic uint64_t *taken, uint32_t r, uint64_t mark) {
    uint64_t v = atomic_load_explicit(&taken[r], memory_order_relaxed);
    while (v < mark)
        if (atomic_compare_exchange_weak_explicit(&taken[r], &v, mark, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return 1;
    return 0;
}

/* The parts record r would be cut into on n_active threads (run_segment's rule), and its tile,
 * granule, scratch copies and whether its kernel claims parts as it goes; below 2: run whole. */
static uint32_t record_cut(const kann_model *m, uint32_t r, uint32_t n_active, uint32_t *begin,
                           uint32_t *end, uint32_t *granule, uint32_t *slots, int *claims) {
    double work;
    *granule = kann_model_record_parts(m, r, begin, end, &work);
    uint32_t n = 0;
    *slots = 0;
    *claims = 0;
    if (*granule) {
        uint32_t units = (*end - *begin + *granule - 1) / *granule;
        n = units < SHARE_PARTS ? units : SHARE_PARTS;
        if (work < n * SHARE_MIN_PART) n = (uint32_t)(work / SHARE_MIN_PART);
        *slots = kann_model_record_slots(m, r, claims);
        if (*slots && *slots < n_active) n = 0;
    }
    return n;
}

/* Runs a free record of another thread's segment of this phase that its owner has not reached,
 * and that it would run whole (a record it cuts into parts is helped with those); 1 if it did.
 * From the segment's end back: the owner works from its start. Until a record is taken, only
 * the pool's own tables are read: the job may be over and its session gone. */
static int steal(kann_host_pool *p, const pool_job *j, uint32_t phase) {
    const steal_table *tab = j->tab;
    uint64_t mark = j->mark + phase;
    uint32_t target = j->done_base + (phase + 1) * j->n_streams;
    for (uint32_t i = 0; i < j->n_streams; i++) {
        /* only a segment its owner is running: claimed for this phase, not the next */
        if (atomic_load_explicit(&p->claims[i], memory_order_acquire) != j->ticket + phase + 1)
            continue;
        size_t sg = (size_t)phase * j->n_streams + i;
        if (sg >= tab->segments) continue;
        uint32_t lo = atomic_load_explicit(&tab->seg[2 * sg], memory_order_relaxed);
        uint32_t hi = atomic_load_explicit(&tab->seg[2 * sg + 1], memory_order_relaxed);
        for (uint32_t k = hi < tab->records ? hi : tab->records; k-- > lo;) {
            uint32_t r = atomic_load_explicit(&tab->cand[k], memory_order_relaxed);
            if (r >= tab->records ||
                atomic_load_explicit(&tab->taken[r], memory_order_relaxed) >= mark ||
                !take_record(tab->taken, r, mark))
                continue;
            /* A job this thread holds from a run long over (its mark lower than the record's
             * was) takes nothing, and its phase is over: it runs nothing. Else the owner will
             * find the record taken and wait for it: the phase, and the session, last. */
            if (reached(atomic_load(&p->segments_done), target)) return 0;
            uint32_t begin, end;
            kann_model_record_parts(j->session->model, r, &begin, &end, NULL);
            kann_session_run_part(j->session, r, begin, end);
            atomic_fetch_add_explicit(&p->records_taken, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&p->shares[i].stolen_done, 1, memory_order_release);
            return 1;
        }
    }
    return 0;
}

/* Waits until phase `phase` of job j is done, meanwhile running parts of the records other
 * threads share and free records of their segments (t: the calling thread); the same sleeper
 * protocol as wait_change. */
static void wait_done(kann_host_pool *p, const pool_job *j, uint32_t phase, uint32_t t) {
    uint32_t target = j->done_base + (phase + 1) * j->n_streams, n_streams = j->n_streams;
    for (uint32_t i = 0; i < p->spins_wait; i++) {
        if (reached(atomic_load_explicit(&p->segments_done, memory_order_acquire), target)) return;
        if (help_any(p, n_streams, t) || steal(p, j, phase))
            i = 0;
        else
            cpu_relax();
    }
    for (;;) {
        uint32_t v = atomic_load(&p->segments_done);
        if (reached(v, target)) return;
        atomic_fetch_add(&p->done_sleepers, 1);
        sleep_while_equal(&p->segments_done, v);
        atomic_fetch_sub(&p->done_sleepers, 1);
    }
}

/* The owner's side of a shared record whose kernel claims its parts as it goes: the parts
 * [next, end) of the share's word are left; the owner holds up to `hi`. */
typedef struct owner_claim {
    share *sh;
    uint32_t begin, end, granule, n;
    uint32_t lo, hi, own; /* the part held, and the parts taken */
} owner_claim;

/* kann_exec.claim for the owner: 1 while `at` lies in the part it holds, else it takes the
 * next part left (asked at that part's first index), 0 once helpers took the rest. */
static int claim_next(void *ctx, uint32_t at) {
    owner_claim *o = ctx;
    if (at < o->hi) return 1;
    for (;;) {
        uint64_t w = atomic_load_explicit(&o->sh->word, memory_order_relaxed);
        uint32_t next, end_part;
        share_left(w, &next, &end_part);
        if (next >= end_part) return 0;
        uint64_t taken = (w >> 32) << 32 | (uint64_t)(next + 1) << 16 | end_part;
        if (!atomic_compare_exchange_weak(&o->sh->word, &w, taken)) continue;
        part_range(o->begin, o->end, o->granule, o->n, next, &o->lo, &o->hi);
        o->own++;
        return 1;
    }
}

/* Runs stream i's records from cursor up to the phase's barrier on thread t, offering each
 * record that may be cut into parts (kann_model_record_parts) to the other threads, and returns
 * once the parts they took are done. A record whose parts need scratch copies is cut only where
 * it has one for each thread. */
static void run_segment(kann_host_pool *p, const pool_job *j, uint32_t i, uint32_t phase,
                        uint32_t cursor, uint32_t t) {
    const kann_model *m = j->session->model;
    share *sh = &p->shares[i];
    uint64_t mark = j->mark + phase;
    for (;; cursor++) {
        uint32_t kernel, args_size;
        const void *args;
        if (kann_model_record(m, cursor, &kernel, &args, &args_size) != KANN_OK ||
            kernel == 0) /* the barrier ending the phase */
            break;
        uint32_t begin, end, granule, slots;
        int claims;
        uint32_t n = record_cut(m, cursor, j->n_active, &begin, &end, &granule, &slots, &claims);
        if (kann_model_record_free(m, cursor) && !take_record(j->tab->taken, cursor, mark)) {
            sh->stolen_expected++; /* another thread runs it */
            continue;
        }
        if (n < 2) {
            kann_session_run_part(j->session, cursor, begin, end);
            continue;
        }
        uint64_t id = atomic_fetch_add_explicit(&p->next_share_id, 1, memory_order_relaxed) + 1u;
        /* closed (no part left) while the fields change, then open with its new id */
        atomic_store_explicit(&sh->word, id << 32, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&sh->session, j->session, memory_order_relaxed);
        atomic_store_explicit(&sh->record, cursor, memory_order_relaxed);
        atomic_store_explicit(&sh->begin, begin, memory_order_relaxed);
        atomic_store_explicit(&sh->end, end, memory_order_relaxed);
        atomic_store_explicit(&sh->granule, granule, memory_order_relaxed);
        atomic_store_explicit(&sh->parts, n, memory_order_relaxed);
        atomic_store_explicit(&sh->slots, slots, memory_order_relaxed);
        atomic_store_explicit(&sh->owner, t, memory_order_relaxed);
        atomic_store_explicit(&sh->threads, j->n_active, memory_order_relaxed);
        atomic_store_explicit(&sh->word, id << 32 | n, memory_order_release);
        owner_claim o = {sh, begin, end, granule, n, begin, begin, 0};
        if (claims) /* one call, which takes the parts as it reaches them */
            kann_session_run_part_in(j->session, cursor, begin, end, 0, claim_next, &o);
        else
            while (claim_next(&o, o.hi))
                kann_session_run_part(j->session, cursor, o.lo, o.hi);
        sh->expected += n - o.own;
    }
    while (atomic_load_explicit(&sh->done, memory_order_acquire) != sh->expected ||
           atomic_load_explicit(&sh->stolen_done, memory_order_acquire) != sh->stolen_expected)
        cpu_relax();
}

/* Claims segment (stream, phase) of job j and runs it; 0 if another thread had claimed it or
 * j is a finished run (a stale copy). */
static int claim_and_run(kann_host_pool *p, const pool_job *j, uint32_t stream, uint32_t phase,
                         uint32_t t) {
    uint32_t want = j->ticket + phase;
    if (atomic_load_explicit(&p->claims[stream], memory_order_relaxed) != want ||
        !atomic_compare_exchange_strong(&p->claims[stream], &want, want + 1))
        return 0;
    /* A claim only succeeds during its own run: the job and the session are live. */
    run_segment(p, j, stream, phase, j->starts[(size_t)phase * j->n_streams + stream], t);
    uint32_t target = j->done_base + (phase + 1) * j->n_streams;
    if (atomic_fetch_add(&p->segments_done, 1) + 1 == target && atomic_load(&p->done_sleepers))
        wake_all(&p->segments_done);
    return 1;
}

/* Thread t's part of run j: phase by phase, its own streams (a contiguous block of them, in
 * order), then those left, from the last back (the ends of the other blocks, which their owners
 * reach last); the caller (t = 0) returns once every segment is done, a worker once nothing of
 * the last phase is left to claim. */
static void pool_walk(kann_host_pool *p, const pool_job *j, uint32_t t) {
    uint32_t S = j->n_streams, T = j->n_active;
    uint32_t own_begin = (uint32_t)((uint64_t)t * S / T),
             own_end = (uint32_t)((uint64_t)(t + 1) * S / T);
    for (uint32_t phase = 0; phase < j->n_phases; phase++) {
        for (uint32_t i = own_begin; i < own_end; i++)
            claim_and_run(p, j, i, phase, t);
        for (uint32_t i = S; i-- > 0;)
            if (i < own_begin || i >= own_end) claim_and_run(p, j, i, phase, t);
        if (t == 0 || phase + 1 < j->n_phases) wait_done(p, j, phase, t);
    }
}

/* Writes job j into the slot, field by field (the caller holds the sequence odd). */
static void publish_job(pool_job_slot *q, const pool_job *j) {
    atomic_store_explicit(&q->session, j->session, memory_order_relaxed);
    atomic_store_explicit(&q->n_active, j->n_active, memory_order_relaxed);
    atomic_store_explicit(&q->n_streams, j->n_streams, memory_order_relaxed);
    atomic_store_explicit(&q->n_phases, j->n_phases, memory_order_relaxed);
    atomic_store_explicit(&q->ticket, j->ticket, memory_order_relaxed);
    atomic_store_explicit(&q->done_base, j->done_base, memory_order_relaxed);
    atomic_store_explicit(&q->starts, j->starts, memory_order_relaxed);
    atomic_store_explicit(&q->mark, j->mark, memory_order_relaxed);
    atomic_store_explicit(&q->tab, j->tab, memory_order_relaxed);
}

/* The job as published: 0 if it changed while being read (the caller is writing the next). */
static int read_job(kann_host_pool *p, uint32_t seq, pool_job *j) {
    const pool_job_slot *q = &p->job;
    j->session = atomic_load_explicit(&q->session, memory_order_relaxed);
    j->n_active = atomic_load_explicit(&q->n_active, memory_order_relaxed);
    j->n_streams = atomic_load_explicit(&q->n_streams, memory_order_relaxed);
    j->n_phases = atomic_load_explicit(&q->n_phases, memory_order_relaxed);
    j->ticket = atomic_load_explicit(&q->ticket, memory_order_relaxed);
    j->done_base = atomic_load_explicit(&q->done_base, memory_order_relaxed);
    j->starts = atomic_load_explicit(&q->starts, memory_order_relaxed);
    j->mark = atomic_load_explicit(&q->mark, memory_order_relaxed);
    j->tab = atomic_load_explicit(&q->tab, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&p->job_seq, memory_order_relaxed) == seq;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    kann_host_pool *p = w->pool;
    uint32_t seen = 0;
    for (;;) {
        wait_change(&p->job_seq, &p->job_sleepers, seen, p->spins_idle);
        seen = atomic_load(&p->job_seq);
        if (atomic_load(&p->quit)) break;
        pool_job j;
        if (seen % 2 || !read_job(p, seen, &j)) continue;
        if (w->index < j.n_active) pool_walk(p, &j, w->index);
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
    p->spins_wait = oversubscribed ? 0 : SPIN_WAIT;
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

uint64_t kann_host_pool_records_taken(const kann_host_pool *p) {
    return p ? atomic_load_explicit(&p->records_taken, memory_order_relaxed) : 0;
}

/* The tables of a run of model m on n_active threads, in one walk of the records: every
 * segment's first record (p->starts) and the free records a thread may take whole (the steal
 * table, in place or in a larger one: the old one retired, a new one's claims at zero, below
 * every mark); 0: out of memory. */
static int plan_run(kann_host_pool *p, const kann_model *m, uint32_t n_active) {
    uint32_t n_records = kann_model_n_records(m), n_streams = kann_model_n_streams(m);
    uint32_t n_phases = kann_model_n_phases(m);
    size_t n_segments = (size_t)n_streams * n_phases;
    if (n_segments >= UINT32_MAX / 2) return 0;
    if (n_segments > p->starts_cap) {
        uint32_t *grown = realloc(p->starts, n_segments * sizeof *grown);
        if (!grown) return 0;
        p->starts = grown;
        p->starts_cap = n_segments;
    }
    steal_table *t = p->tab;
    if (!t || n_records > t->records || n_segments > t->segments) {
        uint32_t records = t && t->records > n_records ? t->records : n_records;
        size_t segments = t && t->segments > n_segments ? t->segments : n_segments;
        size_t bytes = sizeof *t + sizeof(uint64_t) * records + sizeof(uint32_t) * 2 * segments +
                       sizeof(uint32_t) * (records + 1);
        steal_table *grown = calloc(1, bytes);
        if (!grown) return 0;
        grown->retired = t;
        grown->records = records;
        grown->segments = (uint32_t)segments;
        grown->taken = (_Atomic uint64_t *)(grown + 1);
        grown->seg = (_Atomic uint32_t *)(grown->taken + records);
        grown->cand = grown->seg + 2 * segments;
        p->tab = t = grown;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_streams; i++) {
        uint32_t r, count;
        kann_model_stream(m, i, &r, &count);
        for (uint32_t ph = 0; ph < n_phases; ph++, r++) { /* r++: past the phase's barrier */
            size_t sg = (size_t)ph * n_streams + i;
            p->starts[sg] = r;
            atomic_store_explicit(&t->seg[2 * sg], n, memory_order_relaxed);
            for (;; r++) {
                uint32_t kernel, size, begin, end, granule, slots;
                const void *args;
                int claims;
                if (kann_model_record(m, r, &kernel, &args, &size) != KANN_OK || kernel == 0) break;
                if (kann_model_record_free(m, r) &&
                    record_cut(m, r, n_active, &begin, &end, &granule, &slots, &claims) < 2)
                    atomic_store_explicit(&t->cand[n++], r, memory_order_relaxed);
            }
            atomic_store_explicit(&t->seg[2 * sg + 1], n, memory_order_relaxed);
        }
    }
    return 1;
}

kann_status kann_host_pool_run(kann_host_pool *p, kann_session *s, kann_error *err) {
    if (!p || !s || !s->model)
        return kann_host_fail(err, KANN_E_ARGUMENT, "kann_host_pool_run: NULL pool or session");
    const kann_model *m = s->model;
    uint32_t n_streams = kann_model_n_streams(m), n_phases = kann_model_n_phases(m);
    uint32_t n_active = p->n_threads < n_streams ? p->n_threads : n_streams;
    if (n_active <= 1 || n_phases == 0) return kann_session_run(s, err);

    /* every segment's first record and its free records, walked once per run */
    if (!plan_run(p, m, n_active))
        return kann_host_fail(err, KANN_E_RUNTIME, "thread pool: out of memory");

    /* Publish: odd while writing, then even. Stale workers hold tickets below next_ticket. */
    atomic_fetch_add(&p->job_seq, 1);
    atomic_thread_fence(memory_order_release);
    pool_job mine = {s,         n_active,         n_streams,
                     n_phases,  p->next_ticket,   atomic_load(&p->segments_done),
                     p->starts, p->next_mark + 1, p->tab};
    publish_job(&p->job, &mine);
    p->next_ticket += n_phases + 1;
    p->next_mark += n_phases;
    for (uint32_t i = 0; i < n_streams; i++)
        atomic_store(&p->claims[i], mine.ticket);
    signal_change(&p->job_seq, &p->job_sleepers);

    pool_walk(p, &mine, 0);
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
        signal_change(&p->job_seq, &p->job_sleepers);
        for (uint32_t i = 1; i < p->n_threads; i++)
            pthread_join(p->threads[i - 1], NULL);
    }
    free(p->threads);
    free(p->workers);
    free(p->starts);
    while (p->tab) {
        steal_table *older = p->tab->retired;
        free(p->tab);
        p->tab = older;
    }
    free(p);
}
