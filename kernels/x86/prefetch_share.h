/* A loop's share of a region to prefetch, spread over its steps: the loop's calls together
 * ask for the lines of the next weight block or record (pointwise_gap.h, the rows path of
 * conv2d_lanes_avx512.c) a few at a time, where all of them at once from one call ran into the
 * core's few outstanding misses to L3 and stalled on them. */
#ifndef KANN_X86_PREFETCH_SHARE_H
#define KANN_X86_PREFETCH_SHARE_H

#include <immintrin.h>
#include <stddef.h>

typedef struct kann_prefetch_share {
    const char *p, *end; /* the lines left */
    size_t every;        /* steps between two prefetches */
    int two;             /* two lines a prefetch step: more lines than steps */
} kann_prefetch_share;

/* Call i of n (i < n) of a loop of `steps` steps: lines [i L / n, (i + 1) L / n) of the L lines
 * from base, one every few steps (two a step where the share has more lines than steps, the
 * rest past twice the steps left out). */
static inline kann_prefetch_share kann_prefetch_share_of(const void *base, size_t lines,
                                                         size_t i, size_t n, size_t steps) {
    size_t l0 = i * lines / n, share = (i + 1) * lines / n - l0;
    kann_prefetch_share s;
    s.p = (const char *)base + 64 * l0;
    s.end = s.p + 64 * share;
    s.two = share > steps;
    s.every = s.two || share == 0 ? 1 : steps / share;
    return s;
}

/* Step k of the loop (counting up from *at, which starts at the loop's first step). A prefetch
 * past the end of what is mapped does not fault. */
static inline __attribute__((always_inline)) void kann_prefetch_step(kann_prefetch_share *s,
                                                                     size_t k, size_t *at) {
    if (k == *at && s->p < s->end) {
        _mm_prefetch(s->p, _MM_HINT_T0);
        if (s->two) _mm_prefetch(s->p + 64, _MM_HINT_T0);
        s->p += s->two ? 128 : 64;
        *at += s->every;
    }
}

#endif
