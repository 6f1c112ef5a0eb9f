/* Row kernels written once over vec_math.h's width-neutral vectors: normalization (f32_norm:
 * LayerNormalization, InstanceNormalization, GroupNormalization), softmax along contiguous
 * rows (f32_softmax with inner == 1: the last axis, as in attention and classifier heads), the
 * zero borders of pad2d and the blocks of a transpose that swaps the innermost dims.
 * rowops_avx512.c and rowops_avx2.c define KANN_VEC_BITS, the entry points' names (ROWOPS_NORM,
 * ROWOPS_SOFTMAX, ROWOPS_PAD2D, ROWOPS_TRANSPOSE) and include this file. They compute what the
 * references in kernels/ref/norm.c, softmax.c, pad2d.c and transpose.c compute, with vector sums
 * (another summation order) and a polynomial exp (vec_math.h); the layouts they do not cover run
 * the reference. */
#if !defined(ROWOPS_NORM) || !defined(ROWOPS_SOFTMAX) || !defined(ROWOPS_PAD2D) ||                 \
    !defined(ROWOPS_TRANSPOSE)
#error "define KANN_VEC_BITS, ROWOPS_NORM, ROWOPS_SOFTMAX, ROWOPS_PAD2D and ROWOPS_TRANSPOSE first"
#endif

#include <math.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/pad2d.h"
#include "ref/transpose.h"
#include "vec_math.h"
#include "simd_act.h"

/* Sum of n floats, in KANN_VL lanes. */
static inline float row_sum(const float *x, size_t n) {
    vf s = vf_set1(0.0f);
    size_t j = 0;
    for (; j + KANN_VL <= n; j += KANN_VL)
        s = vf_add(s, vf_load(x + j));
    if (j < n) s = vf_add(s, vf_load_n(x + j, n - j));
    return vf_sum(s);
}

/* Sum of (x - mean)^2 over n floats (the second of two passes: no cancellation). */
static inline float row_sq_dev(const float *x, size_t n, float mean) {
    vf s = vf_set1(0.0f), m = vf_set1(mean);
    size_t j = 0;
    for (; j + KANN_VL <= n; j += KANN_VL) {
        vf d = vf_sub(vf_load(x + j), m);
        s = vf_fmadd(d, d, s);
    }
    if (j < n) { /* the missing lanes read the mean: they add nothing */
        float tail[KANN_VL];
        for (size_t l = 0; l < KANN_VL; l++)
            tail[l] = j + l < n ? x[j + l] : mean;
        vf d = vf_sub(vf_load(tail), m);
        s = vf_fmadd(d, d, s);
    }
    return vf_sum(s);
}

/* y[j] = act((x[j] - mean) * k[j] + b[j]) for j < n, with k and b per element (k_vec) or one
 * value each (k_vec == NULL: k0, b0). */
static inline void row_affine(const float *x, float *y, size_t n, float mean, float inv,
                              const float *scale, const float *bias, float k0, float b0,
                              const kann_act *act) {
    vf m = vf_set1(mean), vinv = vf_set1(inv), k = vf_set1(k0), b = vf_set1(b0);
    vf lo = vf_set1(kann_act_lo(act)), hi = vf_set1(kann_act_hi(act));
    int per_elem = scale || bias, vec_act = kann_act_vectorizes(act);
    for (size_t j = 0; j < n; j += KANN_VL) {
        size_t len = n - j < KANN_VL ? n - j : KANN_VL;
        vf v = len == KANN_VL ? vf_load(x + j) : vf_load_n(x + j, len);
        if (per_elem) {
            k = scale ? vf_mul(vinv, len == KANN_VL ? vf_load(scale + j)
                                                    : vf_load_n(scale + j, len))
                      : vinv;
            b = bias ? (len == KANN_VL ? vf_load(bias + j) : vf_load_n(bias + j, len))
                     : vf_set1(0.0f);
        }
        v = vf_fmadd(vf_sub(v, m), k, b);
        if (vec_act) v = vf_act(v, act, lo, hi);
        if (len == KANN_VL)
            vf_store(y + j, v);
        else
            vf_store_n(y + j, v, len);
    }
    if (!vec_act) kann_act_apply_row(act, y, n);
}

/* Groups whose statistics are computed, with the parameters either per element (LayerNorm:
 * param_inner 1) or constant over runs of param_inner elements (InstanceNorm, GroupNorm);
 * statistics given per element run the reference. */
void ROWOPS_NORM(const void *args, const kann_exec *ex) {
    const kann_norm_args *a = args;
    if (a->stats_given) {
        kann_f32_norm_ref(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end || a->len == 0) return;
    size_t len = a->len;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    const float *scale = a->scale.space != KANN_SPACE_NONE ? kann_cref(ex, a->scale) : 0;
    const float *bias = a->bias.space != KANN_SPACE_NONE ? kann_cref(ex, a->bias) : 0;
    float *mean_out = a->mean_out.space != KANN_SPACE_NONE ? kann_mref(ex, a->mean_out) : 0;
    float *inv_out = a->inv_std_out.space != KANN_SPACE_NONE ? kann_mref(ex, a->inv_std_out) : 0;
    for (size_t g = a->tile.begin; g < a->tile.end; g++) {
        const float *xg = x + g * len;
        float *yg = y + g * len;
        size_t p0 = (g % a->param_groups) * a->param_group_stride;
        float mean = row_sum(xg, len) / (float)len;
        float inv = 1.0f / sqrtf(row_sq_dev(xg, len, mean) / (float)len + a->epsilon);
        if (mean_out) mean_out[g] = mean;
        if (inv_out) inv_out[g] = inv;
        if (a->param_inner == 1) {
            row_affine(xg, yg, len, mean, inv, scale ? scale + p0 : 0, bias ? bias + p0 : 0,
                       inv, 0.0f, &a->act);
            continue;
        }
        for (size_t j0 = 0; j0 < len; j0 += a->param_inner) {
            size_t p = p0 + j0 / a->param_inner;
            size_t n = len - j0 < a->param_inner ? len - j0 : a->param_inner;
            row_affine(xg + j0, yg + j0, n, mean, inv, 0, 0, inv * (scale ? scale[p] : 1.0f),
                       bias ? bias[p] : 0.0f, &a->act);
        }
    }
}

/* Softmax or log-softmax of one contiguous row of n > 0 floats; y may equal x. */
static inline void softmax_row(const float *x, float *y, size_t n, int log_softmax) {
    vf vmax = vf_set1(-__builtin_inff());
    size_t j = 0;
    for (; j + KANN_VL <= n; j += KANN_VL)
        vmax = vf_max(vf_load(x + j), vmax);
    float max = vf_hmax(vmax);
    for (; j < n; j++)
        max = x[j] > max ? x[j] : max;
    vf m = vf_set1(max), sum = vf_set1(0.0f);
    for (j = 0; j < n; j += KANN_VL) {
        size_t len = n - j < KANN_VL ? n - j : KANN_VL;
        if (len == KANN_VL) {
            vf e = vf_exp(vf_sub(vf_load(x + j), m));
            sum = vf_add(sum, e);
            if (!log_softmax) vf_store(y + j, e);
        } else { /* the tail's missing lanes are not summed: exp(0 - max) is not 0 */
            float e[KANN_VL];
            vf_store(e, vf_exp(vf_sub(vf_load_n(x + j, len), m)));
            for (size_t l = len; l < KANN_VL; l++)
                e[l] = 0.0f;
            sum = vf_add(sum, vf_load(e));
            if (!log_softmax) vf_store_n(y + j, vf_load(e), len);
        }
    }
    float total = vf_sum(sum);
    /* softmax: y *= 1 / sum; log-softmax: y = x - (max + log(sum)) */
    vf f = vf_set1(log_softmax ? max + logf(total) : 1.0f / total);
    for (j = 0; j < n; j += KANN_VL) {
        size_t len = n - j < KANN_VL ? n - j : KANN_VL;
        vf v = log_softmax ? vf_sub(vf_load_n(x + j, len), f) : vf_mul(vf_load_n(y + j, len), f);
        vf_store_n(y + j, v, len);
    }
}

/* Rows along the last axis (inner == 1); a strided axis runs the reference. */
void ROWOPS_SOFTMAX(const void *args, const kann_exec *ex) {
    const kann_softmax_args *a = args;
    if (a->inner != 1) {
        kann_f32_softmax_ref(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end || a->axis_len == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    for (size_t o = a->tile.begin; o < a->tile.end; o++)
        softmax_row(x + o * a->axis_len, y + o * a->axis_len, a->axis_len, a->log != 0);
}

/* d[0, n) = 0, by masked stores only (a loop of plain ones becomes a memset call). */
static inline void row_zero(float *d, size_t n) {
    vf z = vf_set1(0.0f);
    for (size_t j = 0; j < n; j += KANN_VL)
        vf_store_n(d + j, z, n - j < KANN_VL ? n - j : KANN_VL);
}

/* d[0, n) = s[0, n). */
static inline void row_copy(float *d, const float *s, size_t n) {
    size_t j = 0;
    for (; j + KANN_VL <= n; j += KANN_VL)
        vf_store(d + j, vf_load(s + j));
    if (j < n) vf_store_n(d + j, vf_load_n(s + j, n - j), n - j);
}

/* A row of pad2d: its borders zeroed around the copy. */
static inline void pad_row(float *yr, const float *xr, size_t lo, size_t hi, size_t w) {
    if (!xr) {
        row_zero(yr, w);
        return;
    }
    row_zero(yr, lo);
    row_copy(yr + lo, xr, hi - lo);
    row_zero(yr + hi, w - hi);
}

/* d[0, n) = v[0, n) over two vectors, n <= 2 * KANN_VL (v[1] used where n > KANN_VL). */
static inline void store_short(float *d, const vf *v, size_t n) {
    if (n <= KANN_VL) {
        vf_store_n(d, v[0], n);
        return;
    }
    vf_store(d, v[0]);
    vf_store_n(d + KANN_VL, v[1], n - KANN_VL);
}

/* A row of at most two vectors (a 7x7 or 14x14 map padded by one): zeroed whole, then the
 * columns from x stored over it; one store for both borders. */
static inline void pad_row_short(float *yr, const float *xr, size_t lo, size_t hi, size_t w) {
    vf v[2] = {vf_set1(0.0f), vf_set1(0.0f)};
    store_short(yr, v, w);
    if (!xr) return;
    size_t n = hi - lo;
    v[0] = vf_load_n(xr, n < KANN_VL ? n : KANN_VL);
    if (n > KANN_VL) v[1] = vf_load_n(xr + KANN_VL, n - KANN_VL);
    store_short(yr + lo, v, n);
}

/* The reference's rows with vector stores instead of three library calls per row: the rows of
 * a conv's padded input are short (9 floats for a 7x7 map), so the calls cost more than the
 * copy; rows of at most two vectors are zeroed whole first (400 channels of 7x7 to 9x9,
 * AVX-512: 13.8 -> 5.8 us a call, warm). */
void ROWOPS_PAD2D(const void *args, const kann_exec *ex) {
    const kann_pad2d_args *a = args;
    if (a->w_out <= 2 * KANN_VL)
        kann_pad2d_rows(a, ex, pad_row_short);
    else
        kann_pad2d_rows(a, ex, pad_row);
}

/* A transpose block (ref/transpose.h) a tile of KANN_VL x KANN_VL at a time: each x line's
 * KANN_VL floats one load, the tile turned in registers, each y row's one store; the ragged
 * edges masked. Rows of two columns (DepthToSpace and PixelShuffle of block 2) interleave two
 * x lines a vector at a time; other rows of fewer than half a vector of columns would fill
 * too few lanes of the tile: they go element by element. */
static void transpose_block(const float *x, size_t x_col_stride, float *y, size_t rows, size_t n) {
    if (n == 2) {
        const float *x1 = x + x_col_stride;
        size_t i = 0;
        for (; i + KANN_VL <= rows; i += KANN_VL) {
            vf lo, hi;
            vf_zip(vf_load(x + i), vf_load(x1 + i), &lo, &hi);
            vf_store(y + 2 * i, lo);
            vf_store(y + 2 * i + KANN_VL, hi);
        }
        for (; i < rows; i++) {
            y[2 * i] = x[i];
            y[2 * i + 1] = x1[i];
        }
        return;
    }
    if (n < KANN_VL / 2) {
        kann_transpose_block_scalar(x, x_col_stride, y, rows, n);
        return;
    }
    for (size_t i0 = 0; i0 < rows; i0 += KANN_VL) {
        size_t ri = rows - i0 < KANN_VL ? rows - i0 : KANN_VL;
        for (size_t j0 = 0; j0 < n; j0 += KANN_VL) {
            size_t cj = n - j0 < KANN_VL ? n - j0 : KANN_VL;
            const float *xt = x + j0 * x_col_stride + i0;
            float *yt = y + i0 * n + j0;
            vf r[KANN_VL];
            if (ri == KANN_VL && cj == KANN_VL) {
#pragma GCC unroll 16
                for (size_t l = 0; l < KANN_VL; l++)
                    r[l] = vf_load(xt + l * x_col_stride);
                vf_transpose(r);
#pragma GCC unroll 16
                for (size_t l = 0; l < KANN_VL; l++)
                    vf_store(yt + l * n, r[l]);
                continue;
            }
            for (size_t l = 0; l < KANN_VL; l++)
                r[l] = l < cj ? vf_load_n(xt + l * x_col_stride, ri) : vf_set1(0.0f);
            vf_transpose(r);
            for (size_t l = 0; l < ri; l++)
                vf_store_n(yt + l * n, r[l], cj);
        }
    }
}

void ROWOPS_TRANSPOSE(const void *args, const kann_exec *ex) {
    kann_transpose_drive(args, ex, transpose_block);
}
