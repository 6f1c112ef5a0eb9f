/* Overflow-checked size arithmetic for the validators: a hostile file must not make a size
 * computation wrap around and pass a bounds check. */
#ifndef KANN_REF_CHECKED_H
#define KANN_REF_CHECKED_H

#include <stdint.h>

#include "kann_kernels.h"
#include "kann_msg.h"

/* *acc = *acc * v; returns 0 (and leaves *acc unspecified) on overflow. */
static inline int kann_mul_u64(uint64_t *acc, uint64_t v) {
    if (v != 0 && *acc > UINT64_MAX / v) return 0;
    *acc *= v;
    return 1;
}

/* *acc = *acc + v; returns 0 on overflow. */
static inline int kann_add_u64(uint64_t *acc, uint64_t v) {
    if (*acc > UINT64_MAX - v) return 0;
    *acc += v;
    return 1;
}

/* Bytes of a dense float32 tensor with n_dims dimensions; 0 and *overflow = 1 on overflow. */
static inline uint64_t kann_dense_bytes(const uint32_t *dims, unsigned n_dims, int *overflow) {
    uint64_t bytes = sizeof(float);
    for (unsigned d = 0; d < n_dims; d++) {
        if (!kann_mul_u64(&bytes, dims[d])) {
            *overflow = 1;
            return 0;
        }
    }
    *overflow = 0;
    return bytes;
}

/* Sliding-window coordinates (o * stride + k * dilation, minus padding) are computed in int64
 * by the kernels; validators keep every such sum below this limit so that none can wrap. */
#define KANN_MAX_COORD ((uint64_t)1 << 60)

/* One spatial axis of a sliding window: outputs n_out with stride, taps k with dilation, the
 * padding on both sides and the input length n_in. Every coordinate a kernel forms from them
 * stays below KANN_MAX_COORD in magnitude. */
static inline int kann_window_fits(uint32_t n_out, uint32_t stride, uint32_t k, uint32_t dilation,
                                   uint32_t pad_begin, uint32_t pad_end, uint32_t n_in) {
    uint64_t reach = (uint64_t)n_out * stride; /* products of two uint32 never overflow */
    return kann_add_u64(&reach, (uint64_t)k * dilation) && kann_add_u64(&reach, pad_begin) &&
           kann_add_u64(&reach, pad_end) && kann_add_u64(&reach, n_in) && reach < KANN_MAX_COORD;
}

/* A tile whose kernel needs it to begin on a multiple of align (a panel or block of channels,
 * a granule of pixels): KANN_E_CORRUPT naming the kernel (what) otherwise; an empty tile does no
 * work and may begin anywhere. */
static inline kann_status kann_check_tile_begin(const kann_tile *t, uint32_t align,
                                                const char *what, kann_error *err) {
    if (t->begin % align == 0 || t->begin == t->end) return KANN_OK;
    kann_msg_set(err, KANN_E_CORRUPT, what);
    kann_msg_append(err, ": tile begin ");
    kann_msg_append_u64(err, t->begin);
    kann_msg_append(err, " is not a multiple of ");
    kann_msg_append_u64(err, align);
    return KANN_E_CORRUPT;
}

/* Checks a dense float32 tensor of n_dims dimensions at r (see kann_check_ref). */
static inline kann_status kann_check_dense(const kann_bounds *b, kann_ref r, const uint32_t *dims,
                                           unsigned n_dims, int writable, int optional,
                                           const char *what, kann_error *err) {
    int overflow;
    uint64_t bytes = kann_dense_bytes(dims, n_dims, &overflow);
    if (overflow) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": size overflows");
        return KANN_E_CORRUPT;
    }
    return kann_check_ref(b, r, bytes, writable, optional, what, err);
}

/* Checks a strided float32 view of rank dimensions at r (see kann_strided_bytes). */
static inline kann_status kann_check_strided(const kann_bounds *b, kann_ref r, uint32_t rank,
                                             const uint32_t *dims, const uint32_t *strides,
                                             int writable, int optional, const char *what,
                                             kann_error *err) {
    int overflow;
    uint64_t bytes = kann_strided_bytes(rank, dims, strides, &overflow);
    if (overflow) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": strided extent overflows");
        return KANN_E_CORRUPT;
    }
    return kann_check_ref(b, r, bytes, writable, optional, what, err);
}

/* The element count of a flat tile axis must fit the tile's uint32 bounds. */
static inline int kann_count_fits_u32(const uint32_t *dims, unsigned n_dims, uint32_t *count) {
    uint64_t total = 1;
    for (unsigned d = 0; d < n_dims; d++)
        if (!kann_mul_u64(&total, dims[d]) || total > UINT32_MAX) return 0;
    *count = (uint32_t)total;
    return 1;
}

#endif
