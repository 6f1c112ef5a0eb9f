/* Validation of byte-addressed tensors for the data-movement kernels (ref/bytes.h). */
#include "ref/bytes.h"

kann_status kann_check_bytes(const kann_bounds *b, kann_ref r, uint64_t n_bytes, uint32_t align,
                             int writable, int optional, const char *what, kann_error *err) {
    if (r.space != KANN_SPACE_NONE && r.space < KANN_SPACE_COUNT && align > 1 &&
        r.offset % align != 0) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": offset ");
        kann_msg_append_u64(err, r.offset);
        kann_msg_append(err, " is not aligned to its ");
        kann_msg_append_u64(err, align);
        kann_msg_append(err, "-byte elements");
        return KANN_E_CORRUPT;
    }
    /* kann_check_ref wants 4-byte aligned offsets: check the enclosing aligned range, which
     * lies inside the space exactly when this one does (spaces start 64-byte aligned). */
    uint64_t lead = r.offset % 4;
    kann_ref aligned = r;
    aligned.offset -= lead;
    uint64_t n = n_bytes;
    if (!kann_add_u64(&n, lead)) return kann_msg_set(err, KANN_E_CORRUPT, what);
    return kann_check_ref(b, aligned, n, writable, optional, what, err);
}

kann_status kann_check_signed_view(const kann_bounds *b, kann_ref r, uint32_t es, uint32_t rank,
                                   const uint32_t *dims, int64_t base, const int64_t *strides,
                                   int writable, const char *what, kann_error *err) {
    uint64_t up = 0, down = 0; /* the farthest reach above and below base, in elements */
    for (uint32_t d = 0; d < rank; d++) {
        if (dims[d] == 0) return kann_check_bytes(b, r, 0, es, writable, 0, what, err);
        if (strides[d] > KANN_MAX_STRIDE || strides[d] < -KANN_MAX_STRIDE) {
            kann_msg_set(err, KANN_E_CORRUPT, what);
            kann_msg_append(err, ": a stride exceeds 2^28 elements");
            return KANN_E_CORRUPT;
        }
        uint64_t mag = (uint64_t)(strides[d] < 0 ? -strides[d] : strides[d]);
        uint64_t reach = (uint64_t)(dims[d] - 1) * mag; /* < 2^60 */
        if (!kann_add_u64(strides[d] < 0 ? &down : &up, reach)) {
            kann_msg_set(err, KANN_E_CORRUPT, what);
            kann_msg_append(err, ": strided extent overflows");
            return KANN_E_CORRUPT;
        }
    }
    if (base < 0 || (uint64_t)base < down) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": the view reaches before its start");
        return KANN_E_CORRUPT;
    }
    uint64_t last = (uint64_t)base, bytes;
    if (!kann_add_u64(&last, up) || (bytes = last, !kann_add_u64(&bytes, 1)) ||
        !kann_mul_u64(&bytes, es)) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": strided extent overflows");
        return KANN_E_CORRUPT;
    }
    return kann_check_bytes(b, r, bytes, es, writable, 0, what, err);
}
