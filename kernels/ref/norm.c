/* norm reference kernel (LayerNormalization, InstanceNormalization, GroupNormalization, and
 * BatchNormalization with statistics known only at run time) and its validator. */
#include <math.h>

#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Mean and biased variance of n contiguous floats, two passes (no cancellation), with 8
 * independent partial sums per pass. */
static void moments(const float *x, size_t n, float *mean_out, float *var_out) {
    float s[8] = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; l++)
            s[l] += x[i + l];
    for (; i < n; i++)
        s[0] += x[i];
    float mean = (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) / (float)n;
    float q[8] = {0};
    for (i = 0; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; l++) {
            float dv = x[i + l] - mean;
            q[l] += dv * dv;
        }
    for (; i < n; i++) {
        float dv = x[i] - mean;
        q[0] += dv * dv;
    }
    *mean_out = mean;
    *var_out = (((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]))) / (float)n;
}

void kann_f32_norm_ref(const void *args, const kann_exec *ex) {
    const kann_norm_args *a = args;
    if (a->tile.begin >= a->tile.end || a->len == 0) return;
    size_t len = a->len;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    const float *scale = a->scale.space != KANN_SPACE_NONE ? kann_cref(ex, a->scale) : 0;
    const float *bias = a->bias.space != KANN_SPACE_NONE ? kann_cref(ex, a->bias) : 0;
    const float *given_mean = a->stats_given ? kann_cref(ex, a->mean) : 0;
    const float *given_var = a->stats_given ? kann_cref(ex, a->var) : 0;
    float *mean_out = a->mean_out.space != KANN_SPACE_NONE ? kann_mref(ex, a->mean_out) : 0;
    float *inv_out = a->inv_std_out.space != KANN_SPACE_NONE ? kann_mref(ex, a->inv_std_out) : 0;
    for (size_t g = a->tile.begin; g < a->tile.end; g++) {
        const float *xg = x + g * len;
        float *yg = y + g * len;
        size_t p0 = (g % a->param_groups) * a->param_group_stride;
        float mean = 0.0f, inv = 0.0f;
        if (!a->stats_given) {
            float var;
            moments(xg, len, &mean, &var);
            inv = 1.0f / sqrtf(var + a->epsilon);
            if (mean_out) mean_out[g] = mean;
            if (inv_out) inv_out[g] = inv;
        }
        /* Parameters change every param_inner elements: one run of each at a time. */
        for (size_t j0 = 0; j0 < len; j0 += a->param_inner) {
            size_t p = p0 + j0 / a->param_inner;
            size_t end = j0 + a->param_inner < len ? j0 + a->param_inner : len;
            if (a->stats_given) {
                mean = given_mean[p];
                inv = 1.0f / sqrtf(given_var[p] + a->epsilon);
            }
            float k = inv * (scale ? scale[p] : 1.0f);
            float b = bias ? bias[p] : 0.0f;
            for (size_t j = j0; j < end; j++)
                yg[j] = kann_act_apply(&a->act, (xg[j] - mean) * k + b);
        }
    }
}

kann_status kann_norm_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_norm_args *a = args;
    kann_status s;
    if (a->param_groups == 0 || a->param_inner == 0 || a->stats_given > 1 || a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "norm: bad parameter layout or flags");
    uint32_t dims[2] = {a->groups, a->len};
    if ((s = kann_check_tile(&a->tile, 1, &a->groups, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, dims, 2, 0, 0, "norm x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, dims, 2, 1, 0, "norm y", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->mean_out, &a->groups, 1, 1, 1, "norm mean", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->inv_std_out, &a->groups, 1, 1, 1, "norm inv_std", err)) !=
            KANN_OK)
        return s;
    /* The largest parameter index any group reads. */
    uint32_t n_params = 0;
    if (a->groups > 0 && a->len > 0) {
        uint32_t g_max = (a->groups < a->param_groups ? a->groups : a->param_groups) - 1;
        uint64_t last = (uint64_t)g_max * a->param_group_stride; /* < 2^64: two uint32 */
        if (!kann_add_u64(&last, (a->len - 1) / a->param_inner) || last >= UINT32_MAX)
            return kann_msg_set(err, KANN_E_CORRUPT, "norm: parameter index overflows");
        n_params = (uint32_t)last + 1;
    }
    int given = a->stats_given != 0;
    if ((s = kann_check_dense(b, a->scale, &n_params, 1, 0, 1, "norm scale", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->bias, &n_params, 1, 0, 1, "norm bias", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->mean, &n_params, 1, 0, !given, "norm mean", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->var, &n_params, 1, 0, !given, "norm var", err)) != KANN_OK)
        return s;
    return KANN_OK;
}

void kann_f32_lrn_ref(const void *args, const kann_exec *ex) {
    const kann_lrn_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t c = a->c, inner = a->inner;
    size_t before = (a->size - 1) / 2, after = a->size / 2;
    float k = a->alpha / (float)a->size;
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        size_t b = p / c, ch = p % c;
        size_t lo = ch >= before ? ch - before : 0, hi = ch + after < c ? ch + after : c - 1;
        const float *xb = x + b * c * inner;
        for (size_t i = 0; i < inner; i++) {
            float sum = 0.0f;
            for (size_t q = lo; q <= hi; q++) {
                float v = xb[q * inner + i];
                sum += v * v;
            }
            y[p * inner + i] = xb[ch * inner + i] / powf(a->bias + k * sum, a->beta);
        }
    }
}

kann_status kann_lrn_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_lrn_args *a = args;
    kann_status s;
    if (a->size == 0 || a->reserved != 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "lrn: size 0 or reserved field set");
    uint32_t dims[3] = {a->n, a->c, a->inner}, planes;
    if (!kann_count_fits_u32(dims, 2, &planes))
        return kann_msg_set(err, KANN_E_CORRUPT, "lrn: plane count overflows");
    if ((s = kann_check_tile(&a->tile, 1, &planes, err)) != KANN_OK ||
        (s = kann_check_dense(b, a->x, dims, 3, 0, 0, "lrn x", err)) != KANN_OK ||
        (s = kann_check_dense(b, a->y, dims, 3, 1, 0, "lrn y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
