/* f32_reduce, f32_norm, f32_hardmax, f32_lrn and f32_nll_loss: one work-item per output
 * element (reduce, lrn, hardmax columns) or per normalized group, walking its reduction in the
 * order of the reference kernels (8 partial sums over contiguous rows), shapes read from the
 * argument struct at run time. */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define KANN_WIDE double
#else
#define KANN_WIDE float
#endif

/* How a row of the reduction folds into the accumulator. */
#define ROW_SUM 0
#define ROW_ABS 1
#define ROW_SQUARE 2
#define ROW_EXP 3 /* exp(v - shift) */
#define ROW_PROD 4
#define ROW_MAX 5
#define ROW_MIN 6

inline float kann_reduce_term(uint kind, float v, float shift) {
    switch (kind) {
    case ROW_ABS:
        return fabs(v);
    case ROW_SQUARE:
        return v * v;
    case ROW_EXP:
        return exp(v - shift);
    default:
        return v;
    }
}

inline float kann_reduce_row(uint kind, global const float *p, size_t n, size_t stride, float acc,
                             float shift) {
    if (kind <= ROW_EXP) {
        if (stride == 1) { /* as the reference: 8 partial sums, added pairwise */
            float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
            size_t i = 0;
            for (; i + 8 <= n; i += 8)
                for (int l = 0; l < 8; l++)
                    s[l] += kann_reduce_term(kind, p[i + l], shift);
            for (; i < n; i++)
                s[0] += kann_reduce_term(kind, p[i], shift);
            return acc + (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
        }
        for (size_t i = 0; i < n; i++)
            acc += kann_reduce_term(kind, p[i * stride], shift);
        return acc;
    }
    for (size_t i = 0; i < n; i++) {
        float v = p[i * stride];
        if (kind == ROW_PROD)
            acc *= v;
        else if (kind == ROW_MAX) /* a NaN element makes the result NaN */
            acc = (v > acc || v != v) ? v : acc;
        else
            acc = (v < acc || v != v) ? v : acc;
    }
    return acc;
}

/* Folds every element of the reduction rooted at base: the innermost reduced dim is the row,
 * an odometer walks the others. */
inline float kann_reduce_walk(global const uint *args, uint at, global const float *base, uint kind,
                              float acc, float shift) {
    const uint r = U(A_reduce_red_rank);
    size_t n = U(A_reduce_red_dims + r - 1), stride = U(A_reduce_red_strides + r - 1), rows = 1;
    for (uint e = 0; e + 1 < r; e++)
        rows *= U(A_reduce_red_dims + e);
    if (n == 0) return acc;
    uint idx[6] = {0, 0, 0, 0, 0, 0};
    size_t off = 0;
    for (size_t row = 0; row < rows; row++) {
        acc = kann_reduce_row(kind, base + off, n, stride, acc, shift);
        for (int e = (int)r - 2; e >= 0; e--) {
            off += U(A_reduce_red_strides + e);
            if (++idx[e] < U(A_reduce_red_dims + e)) break;
            off -= (size_t)idx[e] * U(A_reduce_red_strides + e);
            idx[e] = 0;
        }
    }
    return acc;
}

/* NDRange: (tile elements). y is float32, or int64 for ARGMAX (10) and ARGMIN (11). */
kernel void f32_reduce(KANN_KERNEL_ARGS) {
    ulong o = (ulong)TILE_BEGIN + get_global_id(0);
    if (o >= TILE_END) return;
    const uint op = U(A_reduce_op);
    size_t off = 0, rest = o;
    for (int d = (int)U(A_reduce_out_rank) - 1; d >= 0; d--) {
        uint dim = U(A_reduce_out_dims + d);
        off += (size_t)(rest % dim) * U(A_reduce_out_strides + d);
        rest /= dim;
    }
    global const float *base = IN_REF(A_reduce_x) + off;
    if (op == 10 || op == 11) { /* along the single reduced axis; ties: first, or last */
        size_t n = U(A_reduce_red_dims), stride = U(A_reduce_red_strides), best_at = 0;
        int last = U(A_reduce_select_last) != 0;
        if (n > 0) {
            float best = base[0];
            for (size_t i = 1; i < n; i++) {
                float v = base[i * stride];
                int better = op == 10 ? (v > best || (last && v == best))
                                      : (v < best || (last && v == best));
                if (better) {
                    best = v;
                    best_at = i;
                }
            }
        }
        ((global long *)OUT_BYTES(A_reduce_y))[o] = (long)best_at;
        return;
    }
    float v;
    switch (op) {
    case 0: /* SUM */
        v = kann_reduce_walk(args, at, base, ROW_SUM, 0.0f, 0.0f);
        break;
    case 1: { /* MEAN: NaN when empty */
        size_t count = 1;
        for (uint e = 0; e < U(A_reduce_red_rank); e++)
            count *= U(A_reduce_red_dims + e);
        v = kann_reduce_walk(args, at, base, ROW_SUM, 0.0f, 0.0f) / (float)count;
        break;
    }
    case 2:
        v = kann_reduce_walk(args, at, base, ROW_MAX, -INFINITY, 0.0f);
        break;
    case 3:
        v = kann_reduce_walk(args, at, base, ROW_MIN, INFINITY, 0.0f);
        break;
    case 4:
        v = kann_reduce_walk(args, at, base, ROW_PROD, 1.0f, 0.0f);
        break;
    case 5:
        v = kann_reduce_walk(args, at, base, ROW_ABS, 0.0f, 0.0f);
        break;
    case 6:
        v = sqrt(kann_reduce_walk(args, at, base, ROW_SQUARE, 0.0f, 0.0f));
        break;
    case 7:
        v = log(kann_reduce_walk(args, at, base, ROW_SUM, 0.0f, 0.0f));
        break;
    case 8: { /* LOG_SUM_EXP: empty, all -inf, any +inf or NaN give the maximum itself */
        float max = kann_reduce_walk(args, at, base, ROW_MAX, -INFINITY, 0.0f);
        v = isinf(max) || max != max
                ? max
                : max + log(kann_reduce_walk(args, at, base, ROW_EXP, 0.0f, max));
        break;
    }
    default: /* 9: SUM_SQUARE */
        v = kann_reduce_walk(args, at, base, ROW_SQUARE, 0.0f, 0.0f);
        break;
    }
    OUT_REF(A_reduce_y)[o] = v;
}

/* NDRange: (groups of the tile). Mean and biased variance in two passes (8 partial sums each,
 * as the reference), or the given statistics; parameters change every param_inner elements. */
kernel void f32_norm(KANN_KERNEL_ARGS) {
    ulong g = (ulong)TILE_BEGIN + get_global_id(0);
    const size_t len = U(A_norm_len);
    if (g >= TILE_END || len == 0) return;
    global const float *x = IN_REF(A_norm_x) + g * len;
    global float *y = OUT_REF(A_norm_y) + g * len;
    const int has_scale = HAS_REF(A_norm_scale), has_bias = HAS_REF(A_norm_bias);
    const int given = U(A_norm_stats_given) != 0;
    const float eps = F(A_norm_epsilon);
    const size_t inner = U(A_norm_param_inner);
    size_t p0 = (size_t)(g % U(A_norm_param_groups)) * U(A_norm_param_group_stride);
    float mean = 0.0f, inv = 0.0f;
    if (!given) {
        float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        size_t i = 0;
        for (; i + 8 <= len; i += 8)
            for (int l = 0; l < 8; l++)
                s[l] += x[i + l];
        for (; i < len; i++)
            s[0] += x[i];
        mean = (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) / (float)len;
        float q[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (i = 0; i + 8 <= len; i += 8)
            for (int l = 0; l < 8; l++) {
                float dv = x[i + l] - mean;
                q[l] += dv * dv;
            }
        for (; i < len; i++) {
            float dv = x[i] - mean;
            q[0] += dv * dv;
        }
        float var =
            (((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]))) / (float)len;
        inv = 1.0f / sqrt(var + eps);
        if (HAS_REF(A_norm_mean_out)) OUT_REF(A_norm_mean_out)[g] = mean;
        if (HAS_REF(A_norm_inv_std_out)) OUT_REF(A_norm_inv_std_out)[g] = inv;
    }
    for (size_t j0 = 0; j0 < len; j0 += inner) {
        size_t p = p0 + j0 / inner, end = j0 + inner < len ? j0 + inner : len;
        if (given) {
            mean = IN_REF(A_norm_mean)[p];
            inv = 1.0f / sqrt(IN_REF(A_norm_var)[p] + eps);
        }
        float k = inv * (has_scale ? IN_REF(A_norm_scale)[p] : 1.0f);
        float b = has_bias ? IN_REF(A_norm_bias)[p] : 0.0f;
        for (size_t j = j0; j < end; j++)
            y[j] = kann_act(ACT_ARGS(norm), (x[j] - mean) * k + b);
    }
}

/* NDRange: (inner, outer positions of the tile). 1 at the first maximum of the column, 0
 * elsewhere; the column is read before it is written (y may be x). */
kernel void f32_hardmax(KANN_KERNEL_ARGS) {
    const size_t axis_len = U(A_softmax_axis_len), inner = U(A_softmax_inner);
    ulong i = get_global_id(0), o = (ulong)TILE_BEGIN + get_global_id(1);
    if (i >= inner || o >= TILE_END || axis_len == 0) return;
    size_t base = o * axis_len * inner + i;
    global const float *x = IN_REF(A_softmax_x) + base;
    global float *y = OUT_REF(A_softmax_y) + base;
    size_t best_at = 0;
    float best = x[0];
    for (size_t k = 1; k < axis_len; k++)
        if (x[k * inner] > best) {
            best = x[k * inner];
            best_at = k;
        }
    for (size_t k = 0; k < axis_len; k++)
        y[k * inner] = k == best_at ? 1.0f : 0.0f;
}

/* NDRange: (inner, planes of the tile). */
kernel void f32_lrn(KANN_KERNEL_ARGS) {
    const size_t c = U(A_lrn_c), inner = U(A_lrn_inner), size = U(A_lrn_size);
    ulong i = get_global_id(0), p = (ulong)TILE_BEGIN + get_global_id(1);
    if (i >= inner || p >= TILE_END) return;
    size_t b = p / c, ch = p % c, before = (size - 1) / 2, after = size / 2;
    size_t lo = ch >= before ? ch - before : 0, hi = ch + after < c ? ch + after : c - 1;
    global const float *xb = IN_REF(A_lrn_x) + b * c * inner;
    float k = F(A_lrn_alpha) / (float)size, sum = 0.0f;
    for (size_t q = lo; q <= hi; q++) {
        float v = xb[q * inner + i];
        sum += v * v;
    }
    OUT_REF(A_lrn_y)
    [p * inner + i] = xb[ch * inner + i] / pow(F(A_lrn_bias) + k * sum, F(A_lrn_beta));
}

/* The loss at flat position e (= b * inner + i) and the weight it carries. */
inline float kann_nll_at(global const uint *args, uint at, global const float *x,
                         global const long *t, global const float *w, size_t e, float *weight) {
    long cls = t[e];
    const size_t c = U(A_nll_loss_c), inner = U(A_nll_loss_inner);
    *weight = 0.0f;
    if ((U(A_nll_loss_has_ignore) && cls == L(A_nll_loss_ignore_index)) || cls < 0 ||
        cls >= (long)c)
        return 0.0f;
    *weight = w ? w[cls] : 1.0f;
    return -x[((e / inner) * c + (size_t)cls) * inner + e % inner] * *weight;
}

/* NDRange: (tile elements) without reduction; (1) for SUM and MEAN, which one work-item sums in
 * order (in double where the device has it, as the reference). */
kernel void f32_nll_loss(KANN_KERNEL_ARGS) {
    global const float *x = IN_REF(A_nll_loss_x);
    global const long *t = (global const long *)IN_BYTES(A_nll_loss_target);
    global const float *w = HAS_REF(A_nll_loss_weight) ? IN_REF(A_nll_loss_weight) : 0;
    global float *y = OUT_REF(A_nll_loss_y);
    const uint reduction = U(A_nll_loss_reduction);
    float weight;
    if (reduction == 0) {
        ulong e = (ulong)TILE_BEGIN + get_global_id(0);
        if (e < TILE_END) y[e] = kann_nll_at(args, at, x, t, w, e, &weight);
        return;
    }
    if (get_global_id(0) != 0 || TILE_BEGIN >= TILE_END) return;
    KANN_WIDE sum = 0, total_weight = 0;
    size_t count = (size_t)U(A_nll_loss_n) * U(A_nll_loss_inner);
    for (size_t e = 0; e < count; e++) {
        sum += kann_nll_at(args, at, x, t, w, e, &weight);
        total_weight += weight;
    }
    y[0] = (float)(reduction == 2 ? sum / total_weight : sum);
}
