/* Validation helpers shared by the kernel families' validators, and the message builder
 * (kann_msg.h) they report with. No stdio: the runtime core is freestanding. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

static size_t message_length(const kann_error *err) {
    size_t n = 0;
    while (n < sizeof err->message && err->message[n] != '\0')
        n++;
    return n;
}

kann_status kann_msg_set(kann_error *err, kann_status s, const char *text) {
    if (err) {
        err->status = s;
        err->message[0] = '\0';
        kann_msg_append(err, text);
    }
    return s;
}

void kann_msg_append(kann_error *err, const char *text) {
    if (!err || !text) return;
    size_t n = message_length(err);
    if (n >= sizeof err->message) { /* not terminated: repair rather than run off the end */
        err->message[sizeof err->message - 1] = '\0';
        return;
    }
    while (n + 1 < sizeof err->message && *text != '\0')
        err->message[n++] = *text++;
    err->message[n] = '\0';
}

void kann_msg_append_u64(kann_error *err, uint64_t value) {
    char digits[21];
    size_t i = sizeof digits - 1;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + value % 10);
        value /= 10;
    } while (value != 0);
    kann_msg_append(err, digits + i);
}

static const char *const space_names[KANN_SPACE_COUNT] = {"none", "arena", "constants"};

kann_status kann_check_ref(const kann_bounds *b, kann_ref r, uint64_t n_bytes, int writable,
                           int optional, const char *what, kann_error *err) {
    if (r.space >= KANN_SPACE_COUNT) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": unknown memory space ");
        kann_msg_append_u64(err, r.space);
        return KANN_E_CORRUPT;
    }
    if (r.space == KANN_SPACE_NONE) {
        if (optional) return KANN_OK;
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": required argument is absent (space none)");
        return KANN_E_CORRUPT;
    }
    if (writable && r.space != KANN_SPACE_ARENA) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": an output must be in the arena, not in ");
        kann_msg_append(err, space_names[r.space]);
        return KANN_E_CORRUPT;
    }
    /* Kernels access these bytes as float32. */
    if (r.offset % sizeof(float) != 0) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": offset ");
        kann_msg_append_u64(err, r.offset);
        kann_msg_append(err, " is not 4-byte aligned");
        return KANN_E_CORRUPT;
    }
    uint64_t size = r.space == KANN_SPACE_ARENA ? b->arena_size : b->const_size;
    if (r.offset > size || n_bytes > size - r.offset) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": bytes [");
        kann_msg_append_u64(err, r.offset);
        kann_msg_append(err, ", +");
        kann_msg_append_u64(err, n_bytes);
        kann_msg_append(err, ") exceed the ");
        kann_msg_append(err, space_names[r.space]);
        kann_msg_append(err, " size ");
        kann_msg_append_u64(err, size);
        return KANN_E_CORRUPT;
    }
    return KANN_OK;
}

kann_status kann_check_tile(const kann_tile *t, uint32_t n_axes, const uint32_t *extents,
                            kann_error *err) {
    if (t->axis >= n_axes) {
        kann_msg_set(err, KANN_E_CORRUPT, "tile axis ");
        kann_msg_append_u64(err, t->axis);
        kann_msg_append(err, " out of range: the kernel has ");
        kann_msg_append_u64(err, n_axes);
        kann_msg_append(err, " tile axes");
        return KANN_E_CORRUPT;
    }
    if (t->begin > t->end || t->end > extents[t->axis]) {
        kann_msg_set(err, KANN_E_CORRUPT, "tile [");
        kann_msg_append_u64(err, t->begin);
        kann_msg_append(err, ", ");
        kann_msg_append_u64(err, t->end);
        kann_msg_append(err, ") on axis ");
        kann_msg_append_u64(err, t->axis);
        kann_msg_append(err, " is not inside [0, ");
        kann_msg_append_u64(err, extents[t->axis]);
        kann_msg_append(err, ")");
        return KANN_E_CORRUPT;
    }
    return KANN_OK;
}

kann_status kann_check_act(const kann_act *a, kann_error *err) {
    if (a->kind >= KANN_ACT_COUNT) {
        kann_msg_set(err, KANN_E_CORRUPT, "unknown activation kind ");
        kann_msg_append_u64(err, a->kind);
        return KANN_E_CORRUPT;
    }
    return KANN_OK;
}

uint64_t kann_strided_bytes(uint32_t rank, const uint32_t *dims, const uint32_t *strides,
                            int *overflow) {
    int ignored;
    if (!overflow) overflow = &ignored;
    *overflow = 0;
    uint64_t max_index = 0;
    for (uint32_t d = 0; d < rank; d++) {
        if (dims[d] == 0) return 0; /* no element: nothing is touched */
        /* (2^32 - 1)^2 fits in uint64; only the sum can overflow. */
        uint64_t reach = (uint64_t)(dims[d] - 1) * strides[d];
        if (!kann_add_u64(&max_index, reach)) {
            *overflow = 1;
            return 0;
        }
    }
    uint64_t bytes = max_index;
    if (!kann_add_u64(&bytes, 1) || !kann_mul_u64(&bytes, sizeof(float))) {
        *overflow = 1;
        return 0;
    }
    return bytes;
}
