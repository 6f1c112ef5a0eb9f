/* cumsum reference kernel (running sums along one axis, float32, int32 or int64, forward or
 * reverse, inclusive or exclusive) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"
#include "ref/typed.h"

/* The element of line (o, i) at step t along the axis: walking forward or backward. */
static size_t at(const kann_cumsum_args *a, size_t o, size_t i, size_t t) {
    size_t j = a->reverse ? a->len - 1 - t : t;
    return (o * a->len + j) * a->inner + i;
}

void kann_cumsum_ref(const void *args, const kann_exec *ex) {
    const kann_cumsum_args *a = args;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *y = kann_mbytes(ex, a->y);
    for (size_t line = a->tile.begin; line < a->tile.end; line++) {
        size_t o = line / a->inner, i = line % a->inner;
        /* each element is read before its own sum is stored, so y may be x */
        if (a->dtype == KANN_DTYPE_F32) {
            const float *xf = (const float *)(const void *)x;
            float *yf = (float *)(void *)y, sum = 0.0f;
            for (size_t t = 0; t < a->len; t++) {
                size_t e = at(a, o, i, t);
                float v = xf[e];
                yf[e] = a->exclusive ? sum : sum + v;
                sum += v;
            }
        } else {
            uint64_t sum = 0; /* unsigned: integer sums wrap around, as ONNX Runtime's do */
            for (size_t t = 0; t < a->len; t++) {
                size_t e = at(a, o, i, t);
                uint64_t v = (uint64_t)kann_load_int(x, a->dtype, e);
                kann_store_int(y, a->dtype, e, (int64_t)(a->exclusive ? sum : sum + v));
                sum += v;
            }
        }
    }
}

kann_status kann_cumsum_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_cumsum_args *a = args;
    kann_status s;
    if (a->dtype != KANN_DTYPE_F32 && a->dtype != KANN_DTYPE_I32 && a->dtype != KANN_DTYPE_I64)
        return kann_msg_set(err, KANN_E_CORRUPT, "cumsum: dtype not float32, int32 or int64");
    if (a->exclusive > 1 || a->reverse > 1)
        return kann_msg_set(err, KANN_E_CORRUPT, "cumsum: unknown flags");
    uint32_t line_dims[2] = {a->outer, a->inner}, lines, count;
    uint32_t dims[3] = {a->outer, a->len, a->inner};
    if (!kann_count_fits_u32(line_dims, 2, &lines) || !kann_count_fits_u32(dims, 3, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "cumsum: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &lines, err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->x, a->dtype, count, 0, "cumsum x", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->y, a->dtype, count, 1, "cumsum y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
