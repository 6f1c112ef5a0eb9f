/* Elements of any kann_dtype for the elementwise kernels (unary, binary_typed, ternary, cast):
 * sizes, loads and stores through int64 or float, and the validation of typed views. */
#ifndef KANN_REF_TYPED_H
#define KANN_REF_TYPED_H

#include <stdint.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

/* Bytes per element of the dtypes these kernels compute on, 0 for any other value. */
static inline uint32_t kann_typed_size(uint32_t dtype) {
    switch (dtype) {
    case KANN_DTYPE_F32:
    case KANN_DTYPE_I32:
        return 4;
    case KANN_DTYPE_U8:
    case KANN_DTYPE_I8:
    case KANN_DTYPE_BOOL:
        return 1;
    case KANN_DTYPE_I64:
        return 8;
    default:
        return 0;
    }
}

static inline int kann_typed_is_int(uint32_t dtype) {
    return dtype == KANN_DTYPE_U8 || dtype == KANN_DTYPE_I8 || dtype == KANN_DTYPE_I32 ||
           dtype == KANN_DTYPE_I64;
}

/* Element i of an integer or bool tensor (aligned to its size), widened to int64. */
static inline int64_t kann_load_int(const uint8_t *p, uint32_t dtype, size_t i) {
    switch (dtype) {
    case KANN_DTYPE_I8:
        return ((const int8_t *)p)[i];
    case KANN_DTYPE_I32:
        return ((const int32_t *)(const void *)p)[i];
    case KANN_DTYPE_I64:
        return ((const int64_t *)(const void *)p)[i];
    default: /* U8, BOOL */
        return p[i];
    }
}

/* Stores the low bits of v (two's complement wrap-around, as C's unsigned conversions do). */
static inline void kann_store_int(uint8_t *p, uint32_t dtype, size_t i, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (dtype) {
    case KANN_DTYPE_I8:
        ((int8_t *)p)[i] = (int8_t)(uint8_t)u;
        break;
    case KANN_DTYPE_I32:
        ((int32_t *)(void *)p)[i] = (int32_t)(uint32_t)u;
        break;
    case KANN_DTYPE_I64:
        ((int64_t *)(void *)p)[i] = (int64_t)u;
        break;
    case KANN_DTYPE_BOOL:
        p[i] = u != 0;
        break;
    default: /* U8 */
        p[i] = (uint8_t)u;
        break;
    }
}

/* Checks a dense tensor of count elements of dtype at r (see kann_check_bytes). */
static inline kann_status kann_check_typed_dense(const kann_bounds *b, kann_ref r, uint32_t dtype,
                                                 uint32_t count, int writable, const char *what,
                                                 kann_error *err) {
    uint32_t es = kann_typed_size(dtype);
    return kann_check_bytes(b, r, (uint64_t)count * es, es, writable, 0, what, err);
}

/* Checks a strided view of rank dims of dtype at r: element strides, zero to broadcast. */
static inline kann_status kann_check_typed_strided(const kann_bounds *b, kann_ref r, uint32_t dtype,
                                                   uint32_t rank, const uint32_t *dims,
                                                   const uint32_t *strides, const char *what,
                                                   kann_error *err) {
    int overflow;
    /* kann_strided_bytes counts float32 elements: 4 bytes each. */
    uint64_t elems = kann_strided_bytes(rank, dims, strides, &overflow) / sizeof(float);
    uint64_t bytes = elems;
    if (overflow || !kann_mul_u64(&bytes, kann_typed_size(dtype))) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": strided extent overflows");
        return KANN_E_CORRUPT;
    }
    return kann_check_bytes(b, r, bytes, kann_typed_size(dtype), 0, 0, what, err);
}

/* Checks rank (1..KANN_MAX_RANK) and that the element count fits the tile's uint32 bounds. */
static inline kann_status kann_check_typed_space(const char *family, uint32_t rank,
                                                 const uint32_t *dims, uint32_t *count,
                                                 kann_error *err) {
    if (rank < 1 || rank > KANN_MAX_RANK) {
        kann_msg_set(err, KANN_E_CORRUPT, family);
        kann_msg_append(err, ": rank ");
        kann_msg_append_u64(err, rank);
        kann_msg_append(err, " not in 1..6");
        return KANN_E_CORRUPT;
    }
    if (!kann_count_fits_u32(dims, rank, count)) {
        kann_msg_set(err, KANN_E_CORRUPT, family);
        kann_msg_append(err, ": more than 2^32-1 output elements");
        return KANN_E_CORRUPT;
    }
    return KANN_OK;
}

#endif
