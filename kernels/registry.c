/* The kernel table, generated from kernels.def and families.def: name, argument size, tile
 * axes, reference function and validator of every kernel id. */
#include "kann_kernels.h"

#define KANN_FAMILY(family, n_axes) enum { kann_axes_##family = n_axes };
#include "families.def"
#undef KANN_FAMILY

const kann_kernel_info kann_kernels[KANN_KERNEL_COUNT] = {
    [KANN_KERNEL_BARRIER] = {"barrier", 0, 0, 0, 0},
#define KANN_KERNEL(ENUM, name, id, family)                                                      \
    [id] = {#name, sizeof(kann_##family##_args), kann_axes_##family, kann_##name##_ref,           \
            kann_##family##_validate},
#include "kernels.def"
#undef KANN_KERNEL
};

/* Every argument struct is an on-disk layout: 8-byte multiple, tile first. */
#define KANN_FAMILY(family, n_axes)                                                              \
    _Static_assert(sizeof(kann_##family##_args) % 8 == 0, #family " args size");               \
    _Static_assert(offsetof(kann_##family##_args, tile) == 0, #family " args tile first");
#include "families.def"
#undef KANN_FAMILY
