/* The CPU backend's kernel tables, one per ISA level (cpu_dispatch.c). Core-private. */
#ifndef KANN_CPU_DISPATCH_H
#define KANN_CPU_DISPATCH_H

#include "kann.h"

/* Kernel id -> function for isa (every id filled: the reference where no variant exists), or
 * NULL when this build lacks the level. */
const kann_kernel_fn *kann_cpu_kernels(kann_isa isa);

#endif
