/* reduce reference kernel (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare,
 * ArgMax/ArgMin over a strided view) and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/checked.h"

/* Folds one strided row of n elements into acc. shift is the maximum for LOG_SUM_EXP. */
typedef float (*row_fn)(const float *p, size_t n, size_t stride, float acc, float shift);

/* Contiguous rows keep 8 independent partial sums: vectorizable, and less rounding. */
#define SUM_ROW(NAME, TERM)                                                                        \
    static float NAME(const float *p, size_t n, size_t stride, float acc, float shift) {           \
        (void)shift;                                                                               \
        if (stride == 1) {                                                                         \
            float s[8] = {0};                                                                      \
            size_t i = 0;                                                                          \
            for (; i + 8 <= n; i += 8)                                                             \
                for (size_t l = 0; l < 8; l++) {                                                   \
                    float v = p[i + l];                                                            \
                    s[l] += TERM;                                                                  \
                }                                                                                  \
            for (; i < n; i++) {                                                                   \
                float v = p[i];                                                                    \
                s[0] += TERM;                                                                      \
            }                                                                                      \
            return acc + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));      \
        }                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            float v = p[i * stride];                                                               \
            acc += TERM;                                                                           \
        }                                                                                          \
        return acc;                                                                                \
    }

SUM_ROW(row_sum, v)
SUM_ROW(row_abs, fabsf(v))
SUM_ROW(row_square, v *v)
SUM_ROW(row_exp, expf(v - shift))

static float row_prod(const float *p, size_t n, size_t stride, float acc, float shift) {
    (void)shift;
    for (size_t i = 0; i < n; i++)
        acc *= p[i * stride];
    return acc;
}

/* Comparisons written so that a NaN element makes the result NaN. */
static float row_max(const float *p, size_t n, size_t stride, float acc, float shift) {
    (void)shift;
    for (size_t i = 0; i < n; i++) {
        float v = p[i * stride];
        acc = (v > acc || v != v) ? v : acc;
    }
    return acc;
}

static float row_min(const float *p, size_t n, size_t stride, float acc, float shift) {
    (void)shift;
    for (size_t i = 0; i < n; i++) {
        float v = p[i * stride];
        acc = (v < acc || v != v) ? v : acc;
    }
    return acc;
}

/* Folds every element of the reduction rooted at base: the innermost reduced dim is the row. */
static float walk(const kann_reduce_args *a, const float *base, row_fn fn, float acc, float shift) {
    uint32_t r = a->red_rank;
    size_t n = a->red_dims[r - 1], stride = a->red_strides[r - 1];
    size_t rows = 1;
    for (uint32_t e = 0; e + 1 < r; e++)
        rows *= a->red_dims[e];
    if (n == 0) return acc;
    uint32_t idx[KANN_MAX_RANK] = {0};
    size_t off = 0;
    for (size_t row = 0; row < rows; row++) {
        acc = fn(base + off, n, stride, acc, shift);
        for (int e = (int)r - 2; e >= 0; e--) { /* odometer over the outer reduced dims */
            off += a->red_strides[e];
            if (++idx[e] < a->red_dims[e]) break;
            off -= (size_t)idx[e] * a->red_strides[e];
            idx[e] = 0;
        }
    }
    return acc;
}

static float reduce_one(const kann_reduce_args *a, const float *base, size_t count) {
    switch ((kann_reduce_op)a->op) {
    case KANN_REDUCE_SUM:
        return walk(a, base, row_sum, 0.0f, 0.0f);
    case KANN_REDUCE_MEAN:
        return walk(a, base, row_sum, 0.0f, 0.0f) / (float)count;
    case KANN_REDUCE_MAX:
        return walk(a, base, row_max, -INFINITY, 0.0f);
    case KANN_REDUCE_MIN:
        return walk(a, base, row_min, INFINITY, 0.0f);
    case KANN_REDUCE_PROD:
        return walk(a, base, row_prod, 1.0f, 0.0f);
    case KANN_REDUCE_L1:
        return walk(a, base, row_abs, 0.0f, 0.0f);
    case KANN_REDUCE_L2:
        return sqrtf(walk(a, base, row_square, 0.0f, 0.0f));
    case KANN_REDUCE_LOG_SUM:
        return logf(walk(a, base, row_sum, 0.0f, 0.0f));
    case KANN_REDUCE_LOG_SUM_EXP: {
        float max = walk(a, base, row_max, -INFINITY, 0.0f);
        if (isinf(max) || max != max) return max; /* empty, all -inf, any +inf, or NaN */
        return max + logf(walk(a, base, row_exp, 0.0f, max));
    }
    case KANN_REDUCE_SUM_SQUARE:
        return walk(a, base, row_square, 0.0f, 0.0f);
    default:
        return 0.0f; /* ARGMAX/ARGMIN go through reduce_arg; the validator allows nothing else */
    }
}

/* Index of the maximum (or minimum) along the single reduced axis. */
static int64_t reduce_arg(const kann_reduce_args *a, const float *base) {
    size_t n = a->red_dims[0], stride = a->red_strides[0];
    int is_max = a->op == KANN_REDUCE_ARGMAX, last = a->select_last != 0;
    if (n == 0) return 0;
    float best = base[0];
    size_t at = 0;
    for (size_t i = 1; i < n; i++) {
        float v = base[i * stride];
        int better = is_max ? (v > best || (last && v == best)) : (v < best || (last && v == best));
        if (better) {
            best = v;
            at = i;
        }
    }
    return (int64_t)at;
}

/* Outputs reduced side by side (reduce_run) at most. */
#define RUN 64

/* Whether outputs consecutive in x go side by side, each step of the one reduced dim a pass
 * over the run: a reduction across rows or planes (ArgMax over a segmentation map's classes),
 * whose strided walk one output at a time reads a line per element. */
static int reduce_across(const kann_reduce_args *a) {
    kann_reduce_op op = (kann_reduce_op)a->op;
    return a->red_rank == 1 && a->red_strides[0] != 1 && a->red_dims[0] <= INT32_MAX &&
           a->out_strides[a->out_rank - 1] == 1 &&
           (op == KANN_REDUCE_ARGMAX || op == KANN_REDUCE_ARGMIN || op == KANN_REDUCE_SUM ||
            op == KANN_REDUCE_MEAN || op == KANN_REDUCE_MAX || op == KANN_REDUCE_MIN);
}

/* reduce_one or reduce_arg of the n <= RUN outputs rooted at base, base + 1, ..., into y (or
 * the indices into yi), with the same comparisons and order of sums as one at a time. */
static void reduce_run(const kann_reduce_args *a, const float *base, size_t n, float *y,
                       int64_t *yi) {
    size_t len = a->red_dims[0], stride = a->red_strides[0];
    kann_reduce_op op = (kann_reduce_op)a->op;
    float acc[RUN];
    if (op == KANN_REDUCE_ARGMAX || op == KANN_REDUCE_ARGMIN) {
        /* branch-free selects, so that the compiler can vectorize the run */
        float sign = op == KANN_REDUCE_ARGMAX ? 1.0f : -1.0f;
        int last = a->select_last != 0;
        int32_t at[RUN] = {0};
        for (size_t j = 0; j < n; j++)
            acc[j] = len ? sign * base[j] : 0.0f;
        for (size_t i = 1; i < len; i++) {
            const float *r = base + i * stride;
            int32_t step = (int32_t)i;
            if (last)
                for (size_t j = 0; j < n; j++) {
                    float v = sign * r[j];
                    int32_t better = -(int32_t)(v >= acc[j]);
                    at[j] = (at[j] & ~better) | (step & better);
                    acc[j] = v >= acc[j] ? v : acc[j];
                }
            else
                for (size_t j = 0; j < n; j++) {
                    float v = sign * r[j];
                    int32_t better = -(int32_t)(v > acc[j]);
                    at[j] = (at[j] & ~better) | (step & better);
                    acc[j] = v > acc[j] ? v : acc[j];
                }
        }
        for (size_t j = 0; j < n; j++)
            yi[j] = at[j];
        return;
    }
    float init = op == KANN_REDUCE_MAX ? -INFINITY : op == KANN_REDUCE_MIN ? INFINITY : 0.0f;
    for (size_t j = 0; j < n; j++)
        acc[j] = init;
    for (size_t i = 0; i < len; i++) {
        const float *r = base + i * stride;
        if (op == KANN_REDUCE_MAX)
            for (size_t j = 0; j < n; j++)
                acc[j] = (r[j] > acc[j] || r[j] != r[j]) ? r[j] : acc[j];
        else if (op == KANN_REDUCE_MIN)
            for (size_t j = 0; j < n; j++)
                acc[j] = (r[j] < acc[j] || r[j] != r[j]) ? r[j] : acc[j];
        else
            for (size_t j = 0; j < n; j++)
                acc[j] += r[j];
    }
    for (size_t j = 0; j < n; j++)
        y[j] = op == KANN_REDUCE_MEAN ? acc[j] / (float)len : acc[j];
}

void kann_f32_reduce_ref(const void *args, const kann_exec *ex) {
    const kann_reduce_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    int arg = a->op == KANN_REDUCE_ARGMAX || a->op == KANN_REDUCE_ARGMIN;
    size_t count = 1;
    for (uint32_t e = 0; e < a->red_rank; e++)
        count *= a->red_dims[e];
    /* The multi-index of the tile's first output element, then an odometer. */
    uint32_t rank = a->out_rank, idx[KANN_MAX_RANK];
    size_t rest = a->tile.begin, off = 0;
    for (int d = (int)rank - 1; d >= 0; d--) {
        idx[d] = (uint32_t)(rest % a->out_dims[d]);
        rest /= a->out_dims[d];
        off += (size_t)idx[d] * a->out_strides[d];
    }
    if (reduce_across(a)) {
        float *y = arg ? NULL : kann_mref(ex, a->y);
        int64_t *yi = arg ? (int64_t *)(void *)(ex->arena + a->y.offset) : NULL;
        uint32_t last = rank - 1;
        for (size_t o = a->tile.begin; o < a->tile.end;) {
            size_t n = a->out_dims[last] - idx[last];
            if (n > a->tile.end - o) n = a->tile.end - o;
            if (n > RUN) n = RUN;
            reduce_run(a, x + off, n, y ? y + o : NULL, yi ? yi + o : NULL);
            o += n;
            off += n;
            idx[last] += (uint32_t)n;
            for (int d = (int)last; d >= 0 && idx[d] == a->out_dims[d]; d--) {
                off -= (size_t)idx[d] * a->out_strides[d];
                idx[d] = 0;
                if (d > 0) {
                    off += a->out_strides[d - 1];
                    idx[d - 1]++;
                }
            }
        }
        return;
    }
    for (size_t o = a->tile.begin; o < a->tile.end; o++) {
        if (arg)
            ((int64_t *)(void *)(ex->arena + a->y.offset))[o] = reduce_arg(a, x + off);
        else
            kann_mref(ex, a->y)[o] = reduce_one(a, x + off, count);
        for (int d = (int)rank - 1; d >= 0; d--) {
            off += a->out_strides[d];
            if (++idx[d] < a->out_dims[d]) break;
            off -= (size_t)idx[d] * a->out_strides[d];
            idx[d] = 0;
        }
    }
}

kann_status kann_reduce_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_reduce_args *a = args;
    kann_status s;
    if (a->op >= KANN_REDUCE_COUNT) {
        kann_msg_set(err, KANN_E_CORRUPT, "reduce: unknown op ");
        kann_msg_append_u64(err, a->op);
        return KANN_E_CORRUPT;
    }
    int arg = a->op == KANN_REDUCE_ARGMAX || a->op == KANN_REDUCE_ARGMIN;
    if (a->out_rank < 1 || a->out_rank > KANN_MAX_RANK || a->red_rank < 1 ||
        a->red_rank > KANN_MAX_RANK || (arg && a->red_rank != 1) || a->select_last > 1)
        return kann_msg_set(err, KANN_E_CORRUPT, "reduce: bad rank or flags");
    uint32_t count;
    if (!kann_count_fits_u32(a->out_dims, a->out_rank, &count))
        return kann_msg_set(err, KANN_E_CORRUPT, "reduce: output count overflows");
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK) return s;
    /* x spans every (output, reduction) index pair: one strided view of both index spaces. */
    uint32_t dims[2 * KANN_MAX_RANK], strides[2 * KANN_MAX_RANK];
    uint32_t rank = 0;
    for (uint32_t d = 0; d < a->out_rank; d++, rank++) {
        dims[rank] = a->out_dims[d];
        strides[rank] = a->out_strides[d];
    }
    for (uint32_t e = 0; e < a->red_rank; e++, rank++) {
        dims[rank] = a->red_dims[e];
        strides[rank] = a->red_strides[e];
    }
    if ((s = kann_check_strided(b, a->x, rank, dims, strides, 0, 0, "reduce x", err)) != KANN_OK)
        return s;
    if (!arg) return kann_check_dense(b, a->y, &count, 1, 1, 0, "reduce y", err);
    if (a->y.offset % sizeof(int64_t) != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "reduce y: int64 output not 8-byte aligned");
    return kann_check_ref(b, a->y, (uint64_t)count * sizeof(int64_t), 1, 0, "reduce y", err);
}
