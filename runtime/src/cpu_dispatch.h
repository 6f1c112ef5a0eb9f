/* The CPU backend's kernel tables, one per ISA level (cpu_dispatch.c). Core-private. */
#ifndef KANN_CPU_DISPATCH_H
#define KANN_CPU_DISPATCH_H

#include "kann.h"

/* Kernel id -> function for isa (every id filled: the reference where no variant exists), or
 * NULL when this build lacks the level. */
const kann_kernel_fn *kann_cpu_kernels(kann_isa isa);

/* 0 where m's kernels would redo work in each part of record (kernel, args) cut along its tile
 * axis: AMX splits a 1x1 conv's whole input into bf16 pairs for any of its output channels, so
 * parts along them would each split it again. 1 otherwise. */
int kann_cpu_parts_pay(const kann_model *m, uint32_t kernel, const void *args);

#endif
