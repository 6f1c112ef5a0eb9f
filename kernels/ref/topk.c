/* topk reference kernel (the k best elements of each line along an axis, with their indices,
 * float32, int32 or int64) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"
#include "ref/typed.h"

/* Whether a ranks strictly before b: larger (or smaller) numbers first, a NaN after every
 * number (as in ONNX Runtime), equal values never (so the earlier index stays first). */
static int f32_before(float a, float b, int largest) {
    if (a != a) return 0;
    if (b != b) return 1;
    return largest ? a > b : a < b;
}

static int int_before(int64_t a, int64_t b, int largest) {
    return largest ? a > b : a < b;
}

void kann_topk_ref(const void *args, const kann_exec *ex) {
    const kann_topk_args *a = args;
    const uint8_t *x = kann_cbytes(ex, a->x);
    uint8_t *vals = kann_mbytes(ex, a->values);
    int64_t *idx = (int64_t *)(void *)kann_mbytes(ex, a->indices);
    int largest = a->largest != 0, is_f32 = a->dtype == KANN_DTYPE_F32;
    for (size_t line = a->tile.begin; line < a->tile.end; line++) {
        size_t o = line / a->inner, i = line % a->inner, count = 0;
        /* the best `count` so far, sorted, kept in the outputs: slot r at (o * k + r) * inner + i */
        size_t base = o * a->k * a->inner + i, step = a->inner;
        for (size_t j = 0; j < a->len; j++) {
            size_t e = (o * a->len + j) * a->inner + i;
            float vf = is_f32 ? ((const float *)(const void *)x)[e] : 0.0f;
            int64_t vi = is_f32 ? 0 : kann_load_int(x, a->dtype, e);
            size_t r = count < a->k ? count : a->k; /* where j would go, moving up */
            while (r > 0) {
                size_t prev = base + (r - 1) * step;
                int before = is_f32 ? f32_before(vf, ((const float *)(const void *)vals)[prev],
                                                 largest)
                                    : int_before(vi, kann_load_int(vals, a->dtype, prev), largest);
                if (!before) break;
                if (r < a->k) { /* slot r - 1 moves down one; the last one falls off */
                    size_t at = base + r * step;
                    if (is_f32)
                        ((float *)(void *)vals)[at] = ((const float *)(const void *)vals)[prev];
                    else
                        kann_store_int(vals, a->dtype, at, kann_load_int(vals, a->dtype, prev));
                    idx[at] = idx[prev];
                }
                r--;
            }
            if (r < a->k) {
                size_t at = base + r * step;
                if (is_f32)
                    ((float *)(void *)vals)[at] = vf;
                else
                    kann_store_int(vals, a->dtype, at, vi);
                idx[at] = (int64_t)j;
                if (count < a->k) count++;
            }
        }
    }
}

kann_status kann_topk_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_topk_args *a = args;
    kann_status s;
    if (a->dtype != KANN_DTYPE_F32 && a->dtype != KANN_DTYPE_I32 && a->dtype != KANN_DTYPE_I64)
        return kann_msg_set(err, KANN_E_CORRUPT, "topk: dtype not float32, int32 or int64");
    if (a->largest > 1) return kann_msg_set(err, KANN_E_CORRUPT, "topk: unknown flags");
    if (a->k > a->len) return kann_msg_set(err, KANN_E_CORRUPT, "topk: k larger than the axis");
    uint32_t line_dims[2] = {a->outer, a->inner}, lines, x_count, y_count;
    uint32_t x_dims[3] = {a->outer, a->len, a->inner}, y_dims[3] = {a->outer, a->k, a->inner};
    if (!kann_count_fits_u32(line_dims, 2, &lines) || !kann_count_fits_u32(x_dims, 3, &x_count) ||
        !kann_count_fits_u32(y_dims, 3, &y_count))
        return kann_msg_set(err, KANN_E_CORRUPT, "topk: more than 2^32-1 elements");
    if ((s = kann_check_tile(&a->tile, 1, &lines, err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->x, a->dtype, x_count, 0, "topk x", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->values, a->dtype, y_count, 1, "topk values", err)) !=
            KANN_OK ||
        (s = kann_check_typed_dense(b, a->indices, KANN_DTYPE_I64, y_count, 1, "topk indices",
                                    err)) != KANN_OK)
        return s;
    return KANN_OK;
}
