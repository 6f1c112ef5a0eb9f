/* Fixed-seed random numbers for the kernel tests (splitmix64): the same cases on every run and
 * machine. A test sets rng_state to pick its sequence. */
#ifndef KANN_TEST_RNG_H
#define KANN_TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline uint32_t rng_range(uint32_t lo, uint32_t hi) {
    return lo + (uint32_t)(rng_next() % ((uint64_t)hi - lo + 1));
}

/* Uniform in [lo, hi), on a grid of 2^-24 of the range. */
static inline float rng_float(float lo, float hi) {
    return lo + (hi - lo) * (float)((rng_next() >> 40) * (1.0 / (1u << 24)));
}

#endif
