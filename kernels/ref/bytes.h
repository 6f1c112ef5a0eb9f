/* Untyped element access for the kernels that move data of any dtype (strided copy, gather,
 * pad, trilu): byte addresses of kann_refs and the validation of signed strided views. */
#ifndef KANN_REF_BYTES_H
#define KANN_REF_BYTES_H

#include <stdint.h>
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

static inline const uint8_t *kann_cbytes(const kann_exec *ex, kann_ref r) {
    return (r.space == KANN_SPACE_CONST ? ex->consts : ex->arena) + r.offset;
}

static inline uint8_t *kann_mbytes(const kann_exec *ex, kann_ref r) {
    return ex->arena + r.offset;
}

/* Element sizes the data-movement kernels copy (bytes). */
static inline int kann_elem_size_ok(uint32_t es) {
    return es == 1 || es == 2 || es == 4 || es == 8;
}

/* Copies one element of es bytes (1, 2, 4 or 8; both addresses aligned to es). */
static inline void kann_copy_elem(uint8_t *dst, const uint8_t *src, uint32_t es) {
    switch (es) {
    case 1:
        *dst = *src;
        break;
    case 2:
        *(uint16_t *)(void *)dst = *(const uint16_t *)(const void *)src;
        break;
    case 4:
        *(uint32_t *)(void *)dst = *(const uint32_t *)(const void *)src;
        break;
    default:
        *(uint64_t *)(void *)dst = *(const uint64_t *)(const void *)src;
        break;
    }
}

/* Reads an int32 or int64 (size 4 or 8) index. */
static inline int64_t kann_read_index(const uint8_t *p, uint32_t size) {
    return size == 4 ? (int64_t) * (const int32_t *)(const void *)p
                     : *(const int64_t *)(const void *)p;
}

/* kann_check_ref for tensors of elements of `align` bytes: the offset must be a multiple of
 * align instead of 4. */
kann_status kann_check_bytes(const kann_bounds *b, kann_ref r, uint64_t n_bytes, uint32_t align,
                             int writable, int optional, const char *what, kann_error *err);

/* The largest element stride magnitude a signed strided view may have: with dims below 2^32,
 * every partial sum of index * stride stays far from int64 overflow. */
#define KANN_MAX_STRIDE ((int64_t)1 << 28)

/* Checks a view of es-byte elements at r: element (i_0..i_rank) at base + sum i_d * strides[d],
 * strides signed with |stride| <= KANN_MAX_STRIDE, base >= 0; every element reached must lie
 * inside r's space. Nothing is checked when some dim is 0 (no element is touched). */
kann_status kann_check_signed_view(const kann_bounds *b, kann_ref r, uint32_t es, uint32_t rank,
                                   const uint32_t *dims, int64_t base, const int64_t *strides,
                                   int writable, const char *what, kann_error *err);

#endif
