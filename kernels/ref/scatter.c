/* scatter_elements, scatter_nd and gather_nd reference kernels (indices read at run time; an
 * index out of range is skipped, or gives zeros for gather_nd) and their validators. */
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

static int64_t wrap(int64_t j, uint32_t len) {
    if (j < 0) j += len;
    return j >= 0 && j < (int64_t)len ? j : -1;
}

/* dst = dst OP src for one element; reductions are float32 (the validator checks). */
static void combine(uint8_t *dst, const uint8_t *src, uint32_t es, uint32_t reduction) {
    if (reduction == KANN_SCATTER_NONE) {
        kann_copy_elem(dst, src, es);
        return;
    }
    float a, b;
    memcpy(&a, dst, 4);
    memcpy(&b, src, 4);
    switch (reduction) {
    case KANN_SCATTER_ADD:
        a += b;
        break;
    case KANN_SCATTER_MUL:
        a *= b;
        break;
    case KANN_SCATTER_MAX:
        a = b > a ? b : a;
        break;
    default:
        a = b < a ? b : a;
        break;
    }
    memcpy(dst, &a, 4);
}

static kann_status check_common(uint32_t es, uint32_t idx_size, uint32_t reduction,
                                const char *what, kann_error *err) {
    if (!kann_elem_size_ok(es) || (idx_size != 4 && idx_size != 8) ||
        reduction >= KANN_SCATTER_COUNT || (reduction != KANN_SCATTER_NONE && es != 4)) {
        kann_msg_set(err, KANN_E_CORRUPT, what);
        kann_msg_append(err, ": bad element size, index size or reduction");
        return KANN_E_CORRUPT;
    }
    return KANN_OK;
}

void kann_scatter_elements_ref(const void *args, const kann_exec *ex) {
    const kann_scatter_elements_args *a = args;
    if (a->tile.begin >= a->tile.end) return; /* one tile does it all: updates apply in order */
    const uint8_t *idx = kann_cbytes(ex, a->idx), *upd = kann_cbytes(ex, a->updates);
    uint8_t *y = kann_mbytes(ex, a->y);
    size_t count = 1;
    for (uint32_t d = 0; d < a->rank; d++)
        count *= a->dims[d];
    for (size_t e = 0; e < count; e++) {
        int64_t j = wrap(kann_read_index(idx + e * a->idx_size, a->idx_size), a->axis_len);
        if (j < 0) continue;
        size_t flat = e, off = 0;
        for (uint32_t d = a->rank; d-- > 0;) {
            size_t i = flat % a->dims[d];
            flat /= a->dims[d];
            off += (d == a->axis ? (size_t)j : i) * a->y_strides[d];
        }
        combine(y + off * a->elem_size, upd + e * a->elem_size, a->elem_size, a->reduction);
    }
}

kann_status kann_scatter_elements_validate(const void *args, const kann_bounds *b,
                                           kann_error *err) {
    const kann_scatter_elements_args *a = args;
    kann_status s;
    if ((s = check_common(a->elem_size, a->idx_size, a->reduction, "scatter_elements", err)) !=
        KANN_OK)
        return s;
    if (a->rank < 1 || a->rank > KANN_MAX_RANK || a->axis >= a->rank)
        return kann_msg_set(err, KANN_E_CORRUPT, "scatter_elements: bad rank or axis");
    uint32_t count, one = 1;
    if (!kann_count_fits_u32(a->dims, a->rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "scatter_elements: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &one, err)) != KANN_OK) return s;
    /* count 0: the views below are empty but their references are still checked. */
    uint32_t y_dims[KANN_MAX_RANK];
    int64_t y_strides[KANN_MAX_RANK];
    for (uint32_t d = 0; d < a->rank; d++) {
        y_dims[d] = d == a->axis ? (a->axis_len ? a->axis_len : 1) : a->dims[d];
        y_strides[d] = a->y_strides[d];
    }
    if ((s = kann_check_signed_view(b, a->y, a->elem_size, a->rank, y_dims, 0, y_strides, 1,
                                    "scatter_elements y", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->idx, (uint64_t)count * a->idx_size, a->idx_size, 0, 0,
                              "scatter_elements indices", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->updates, (uint64_t)count * a->elem_size, a->elem_size, 0, 0,
                              "scatter_elements updates", err)) != KANN_OK)
        return s;
    return KANN_OK;
}

/* The element offset tuple t of idx names in data (dims, strides of its first k dims), or -1. */
static int64_t tuple_offset(const uint8_t *idx, uint32_t idx_size, size_t t, uint32_t k,
                            const uint32_t *dims, const uint32_t *strides) {
    int64_t off = 0;
    for (uint32_t j = 0; j < k; j++) {
        int64_t i = wrap(kann_read_index(idx + (t * k + j) * idx_size, idx_size), dims[j]);
        if (i < 0) return -1;
        off += i * (int64_t)strides[j];
    }
    return off;
}

void kann_scatter_nd_ref(const void *args, const kann_exec *ex) {
    const kann_scatter_nd_args *a = args;
    if (a->tile.begin >= a->tile.end) return; /* one tile: updates apply in order */
    const uint8_t *idx = kann_cbytes(ex, a->idx), *upd = kann_cbytes(ex, a->src);
    uint8_t *y = kann_mbytes(ex, a->dst);
    size_t es = a->elem_size;
    for (size_t t = 0; t < a->n_tuples; t++) {
        int64_t off = tuple_offset(idx, a->idx_size, t, a->k, a->dims, a->strides);
        if (off < 0) continue;
        for (size_t i = 0; i < a->slice_len; i++)
            combine(y + ((size_t)off + i) * es, upd + (t * a->slice_len + i) * es, a->elem_size,
                    a->reduction);
    }
}

void kann_gather_nd_ref(const void *args, const kann_exec *ex) {
    const kann_gather_nd_args *a = args;
    const uint8_t *idx = kann_cbytes(ex, a->idx), *x = kann_cbytes(ex, a->src);
    uint8_t *y = kann_mbytes(ex, a->dst);
    size_t row = (size_t)a->slice_len * a->elem_size;
    /* Tuples of batch b index the b-th block of data (batch_dims). */
    size_t per_batch = a->n_tuples / (a->batches ? a->batches : 1);
    for (size_t t = a->tile.begin; t < a->tile.end; t++) {
        int64_t off = tuple_offset(idx, a->idx_size, t, a->k, a->dims, a->strides);
        if (off < 0)
            memset(y + t * row, 0, row);
        else /* memmove: a file may make data and y overlap */
            memmove(y + t * row,
                   x + ((t / per_batch) * a->batch_stride + (size_t)off) * a->elem_size, row);
    }
}

/* Shared by scatter_nd and gather_nd: the data tensor (dst for scatter, src for gather) spans
 * batches blocks of batch_stride elements, each reached as sum_j i_j * strides[j] + slice. */
static kann_status nd_validate(const kann_nd_index_args *a, const kann_bounds *b, int scatter,
                               kann_error *err) {
    const char *what = scatter ? "scatter_nd" : "gather_nd";
    kann_status s;
    if ((s = check_common(a->elem_size, a->idx_size, a->reduction, what, err)) != KANN_OK) return s;
    if (a->k > KANN_MAX_RANK || (!scatter && a->reduction != KANN_SCATTER_NONE) ||
        a->batches == 0 || a->n_tuples % a->batches)
        return kann_msg_set(err, KANN_E_CORRUPT, "nd index: bad tuple length or batches");
    uint32_t one = 1;
    if ((s = kann_check_tile(&a->tile, 1, scatter ? &one : &a->n_tuples, err)) != KANN_OK) return s;
    /* the data: batches blocks; inside one, the farthest tuple plus a slice */
    uint64_t reach = 0;
    for (uint32_t j = 0; j < a->k; j++) {
        if (a->dims[j] == 0) return kann_msg_set(err, KANN_E_CORRUPT, "nd index: empty dim");
        if (!kann_add_u64(&reach, (uint64_t)(a->dims[j] - 1) * a->strides[j]))
            return kann_msg_set(err, KANN_E_CORRUPT, "nd index: size overflows");
    }
    uint64_t data = (uint64_t)(a->batches - 1) * a->batch_stride, tuples = a->n_tuples;
    uint64_t other = tuples * a->slice_len;
    if (!kann_add_u64(&data, reach) || !kann_add_u64(&data, a->slice_len) ||
        !kann_mul_u64(&data, a->elem_size) || !kann_mul_u64(&other, a->elem_size) ||
        !kann_mul_u64(&tuples, a->k) || !kann_mul_u64(&tuples, a->idx_size))
        return kann_msg_set(err, KANN_E_CORRUPT, "nd index: size overflows");
    if ((s = kann_check_bytes(b, scatter ? a->dst : a->src, data, a->elem_size, scatter, 0,
                              scatter ? "scatter_nd y" : "gather_nd x", err)) != KANN_OK ||
        (s = kann_check_bytes(b, scatter ? a->src : a->dst, other, a->elem_size, !scatter, 0,
                              scatter ? "scatter_nd updates" : "gather_nd y", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->idx, tuples, a->idx_size, 0, 0, "nd indices", err)) != KANN_OK)
        return s;
    return KANN_OK;
}

kann_status kann_scatter_nd_validate(const void *args, const kann_bounds *b, kann_error *err) {
    return nd_validate(args, b, 1, err);
}

kann_status kann_gather_nd_validate(const void *args, const kann_bounds *b, kann_error *err) {
    return nd_validate(args, b, 0, err);
}
