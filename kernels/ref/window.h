/* Index ranges of sliding windows (conv2d, pool2d): which outputs of a tap, or which taps of an
 * output, land inside a bound. Computed once per row or tap, so inner loops need no checks. */
#ifndef KANN_REF_WINDOW_H
#define KANN_REF_WINDOW_H

#include <stdint.h>

typedef struct kann_range {
    uint32_t lo, hi; /* [lo, hi), lo <= hi */
} kann_range;

static inline int64_t kann_floor_div(int64_t a, int64_t d) {
    return a >= 0 ? a / d : -((-a + d - 1) / d);
}

/* The i in [0, n) with lower <= base + i * step < upper (step > 0). With i an output index
 * and step the stride it gives the outputs a tap reaches; with i a tap index and step the
 * dilation it gives the taps of one output that land inside the input. */
static inline kann_range kann_window_range(int64_t base, int64_t step, int64_t lower, int64_t upper,
                                           uint32_t n) {
    kann_range r = {0, 0};
    if (upper <= lower || n == 0) return r;
    int64_t lo = -kann_floor_div(base - lower, step); /* ceil((lower - base) / step) */
    int64_t hi = kann_floor_div(upper - 1 - base, step) + 1;
    if (lo < 0) lo = 0;
    if (hi > (int64_t)n) hi = (int64_t)n;
    if (hi <= lo) return r;
    r.lo = (uint32_t)lo;
    r.hi = (uint32_t)hi;
    return r;
}

/* Window taps along one axis that a pool's average counts for an output whose first tap is at
 * `first`: those inside the input (n_in), or inside the padded input when the average counts
 * padding (count_pad). */
static inline uint32_t kann_pool_taps_counted(int64_t first, uint32_t dil, uint32_t k,
                                              uint32_t n_in, uint32_t pad_begin, uint32_t pad_end,
                                              int count_pad) {
    kann_range r =
        count_pad ? kann_window_range(first, dil, -(int64_t)pad_begin, (int64_t)n_in + pad_end, k)
                  : kann_window_range(first, dil, 0, n_in, k);
    return r.hi - r.lo;
}

#endif
