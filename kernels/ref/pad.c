/* pad reference kernel (constant, edge, reflect and wrap padding of any element type; negative
 * pads crop) and its validator. */
#include <string.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/bytes.h"
#include "ref/checked.h"

/* The input coordinate that output coordinate i (shifted by the leading pad) reads along a dim
 * of length n, or -1 for the constant. n > 0 for every mode but constant. */
static int64_t source_coord(int64_t c, uint32_t n, uint32_t mode) {
    if (c >= 0 && c < (int64_t)n) return c;
    switch (mode) {
    case KANN_PAD_EDGE:
        return c < 0 ? 0 : (int64_t)n - 1;
    case KANN_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t period = 2 * ((int64_t)n - 1);
        c %= period;
        if (c < 0) c += period;
        return c < (int64_t)n ? c : period - c;
    }
    case KANN_PAD_WRAP:
        c %= (int64_t)n;
        return c < 0 ? c + n : c;
    default:
        return -1;
    }
}

void kann_pad_ref(const void *args, const kann_exec *ex) {
    const kann_pad_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *y = kann_mbytes(ex, a->y);
    uint32_t rank = a->rank, last = rank - 1, es = a->elem_size;
    uint32_t n_out = a->dims[last], n_in = a->x_dims[last];
    uint8_t value[8];
    memcpy(value, &a->value, sizeof value); /* little-endian: the low bytes first */
    for (size_t r = a->tile.begin; r < a->tile.end; r++) {
        /* The input row this output row reads, or none (a row of constants). */
        size_t flat = r, x_row = 0, x_row_stride = 1;
        int outside = 0;
        for (uint32_t d = last; d-- > 0;) {
            int64_t i = (int64_t)(flat % a->dims[d]);
            flat /= a->dims[d];
            int64_t c = source_coord(i - a->pad_begin[d], a->x_dims[d], a->mode);
            if (c < 0) outside = 1;
            x_row += (size_t)(c < 0 ? 0 : c) * x_row_stride;
            x_row_stride *= a->x_dims[d];
        }
        uint8_t *yr = y + r * (size_t)n_out * es;
        const uint8_t *xr = x + x_row * (size_t)n_in * es;
        /* the outputs [j0, j1) that read x's row in order: one copy (memmove: the validator
         * checks each buffer's bounds, not that x and y lie apart, and a corrupt record may
         * overlap them; fuzz_model_bin, regress_pad_overlapping_rows) */
        int64_t pad = a->pad_begin[last], j0 = pad < 0 ? 0 : pad, j1 = pad + (int64_t)n_in;
        if (j1 > (int64_t)n_out) j1 = n_out;
        if (outside || j0 >= j1) j0 = j1 = n_out;
        if (j0 < j1)
            memmove(yr + (size_t)j0 * es, xr + (size_t)(j0 - pad) * es, (size_t)(j1 - j0) * es);
        for (uint32_t j = 0; j < n_out; j++) {
            if ((int64_t)j == j0) j = (uint32_t)j1;
            if (j >= n_out) break;
            int64_t c = outside ? -1 : source_coord((int64_t)j - pad, n_in, a->mode);
            kann_copy_elem(yr + (size_t)j * es, c < 0 ? value : xr + (size_t)c * es, es);
        }
    }
}

kann_status kann_pad_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_pad_args *a = args;
    kann_status s;
    if (!kann_elem_size_ok(a->elem_size))
        return kann_msg_set(err, KANN_E_CORRUPT, "pad: element size not 1, 2, 4 or 8");
    if (a->rank < 1 || a->rank > KANN_MAX_RANK || a->mode >= KANN_PAD_COUNT)
        return kann_msg_set(err, KANN_E_CORRUPT, "pad: bad rank or mode");
    uint32_t rows, count, x_count;
    if (!kann_count_fits_u32(a->dims, a->rank, &count) ||
        !kann_count_fits_u32(a->x_dims, a->rank, &x_count))
        return kann_msg_set(err, KANN_E_CORRUPT, "pad: more than 2^32-1 elements");
    if (!kann_count_fits_u32(a->dims, a->rank - 1, &rows))
        return kann_msg_set(err, KANN_E_CORRUPT, "pad: more than 2^32-1 rows");
    if ((s = kann_check_tile(&a->tile, 1, &rows, err)) != KANN_OK) return s;
    for (uint32_t d = 0; d < a->rank; d++) {
        if (a->pad_begin[d] > ((int64_t)1 << 40) || a->pad_begin[d] < -((int64_t)1 << 40))
            return kann_msg_set(err, KANN_E_CORRUPT, "pad: a pad exceeds 2^40");
        /* Every mode but constant reads the input for any output, and maps the coordinates of
         * every row it visits into the input's dims (wrap divides by them). */
        if (a->x_dims[d] == 0 && a->mode != KANN_PAD_CONSTANT &&
            (count || a->tile.begin < a->tile.end))
            return kann_msg_set(err, KANN_E_CORRUPT, "pad: an empty input cannot be extended");
    }
    if ((s = kann_check_bytes(b, a->x, (uint64_t)x_count * a->elem_size, a->elem_size, 0, 0,
                              "pad x", err)) != KANN_OK ||
        (s = kann_check_bytes(b, a->y, (uint64_t)count * a->elem_size, a->elem_size, 1, 0, "pad y",
                              err)) != KANN_OK)
        return s;
    return KANN_OK;
}
