/* One heap arena of floats for a kernel test: the test allocates `arena` (64-byte aligned) and
 * resets `arena_used`, then hands out 16-float-aligned pieces of it as kann_refs. */
#ifndef KANN_TEST_ARENA_H
#define KANN_TEST_ARENA_H

#include <stddef.h>

#include "kann_kernels.h"

static float *arena;
static size_t arena_used;

static inline kann_ref alloc_floats(size_t n) {
    kann_ref r = {KANN_SPACE_ARENA, 0, arena_used * sizeof(float)};
    arena_used += (n + 15) / 16 * 16;
    return r;
}

#endif
