/* matmul reference kernel (batched, strided operands: Gemm and MatMul) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/checked.h"

/* Output columns accumulated at once on the stack. */
#define MATMUL_CHUNK 64

/* sum_k a[k * a_stride] * b[k * b_stride]; partial sums let the contiguous case vectorize. */
static float dot(const float *a, size_t a_stride, const float *b, size_t b_stride, size_t k) {
    float sums[8] = {0};
    size_t i = 0;
    if (a_stride == 1 && b_stride == 1) {
        for (; i + 8 <= k; i += 8)
            for (size_t l = 0; l < 8; l++)
                sums[l] += a[i + l] * b[i + l];
    }
    for (; i < k; i++)
        sums[0] += a[i * a_stride] * b[i * b_stride];
    return ((sums[0] + sums[1]) + (sums[2] + sums[3])) +
           ((sums[4] + sums[5]) + (sums[6] + sums[7]));
}

void kann_f32_matmul_ref(const void *args, const kann_exec *ex) {
    const kann_matmul_args *a = args;
    uint32_t i_begin = 0, i_end = a->m, j_begin = 0, j_end = a->n;
    if (a->tile.axis == 0) {
        i_begin = a->tile.begin;
        i_end = a->tile.end;
    } else {
        j_begin = a->tile.begin;
        j_end = a->tile.end;
    }
    /* Nothing to write: do not spin through a batch count that no output bounds. */
    if (i_begin >= i_end || j_begin >= j_end) return;
    const float *am = kann_cref(ex, a->a);
    const float *bm = kann_cref(ex, a->b);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *residual =
        a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    size_t k = a->k, a_cs = a->a_col_stride, b_rs = a->b_row_stride;
    /* Rows of B contiguous: broadcast a[i][k] along a row of B (i-k-j order), a run of
     * side-by-side columns at a time. Otherwise (typically B transposed, k contiguous) one dot
     * product per output. */
    int axpy = a->b_col_stride == 1;
    float acc[MATMUL_CHUNK];
    for (size_t bt = 0; bt < a->batch; bt++) {
        for (size_t i = i_begin; i < i_end; i++) {
            size_t y_row = (bt * a->m + i) * a->n;
            for (size_t j0 = j_begin; j0 < j_end; j0 += MATMUL_CHUNK) {
                size_t len = j_end - j0 < MATMUL_CHUNK ? j_end - j0 : MATMUL_CHUNK;
                if (k == 0) { /* the operands are empty: do not form addresses into them */
                    for (size_t j = 0; j < len; j++)
                        acc[j] = 0.0f;
                } else if (axpy) {
                    const float *a_row = am + bt * a->a_batch_stride + i * a->a_row_stride;
                    const float *b_batch = bm + bt * a->b_batch_stride;
                    for (size_t j = 0; j < len; j++)
                        acc[j] = 0.0f;
                    for (size_t j = 0, run; j < len; j += run) { /* columns side by side */
                        run = kann_matmul_b_run(a, j0 + j, len - j);
                        const float *b_base = b_batch + kann_matmul_b_col(a, j0 + j);
                        for (size_t kk = 0; kk < k; kk++) {
                            float av = a_row[kk * a_cs];
                            const float *br = b_base + kk * b_rs;
                            for (size_t t = 0; t < run; t++)
                                acc[j + t] += av * br[t];
                        }
                    }
                } else {
                    const float *a_row = am + bt * a->a_batch_stride + i * a->a_row_stride;
                    const float *b_base = bm + bt * a->b_batch_stride;
                    for (size_t j = 0; j < len; j++)
                        acc[j] = dot(a_row, a_cs, b_base + kann_matmul_b_col(a, j0 + j), b_rs, k);
                }
                float alpha = a->alpha, beta = a->beta;
                for (size_t j = 0; j < len; j++)
                    acc[j] *= alpha;
                if (bias) {
                    const float *bias_row = bias + i * a->bias_row_stride;
                    size_t bias_cs = a->bias_col_stride;
                    for (size_t j = 0; j < len; j++)
                        acc[j] += beta * bias_row[(j0 + j) * bias_cs];
                }
                if (residual) {
                    const float *res = residual + y_row + j0;
                    for (size_t j = 0; j < len; j++)
                        acc[j] += res[j];
                }
                kann_act_apply_row(&a->act, acc, len);
                float *out = y + y_row + j0;
                for (size_t j = 0; j < len; j++)
                    out[j] = acc[j];
            }
        }
    }
}

kann_status kann_matmul_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_matmul_args *a = args;
    kann_status s;
    uint32_t extents[2] = {a->m, a->n};
    if ((s = kann_check_tile(&a->tile, 2, extents, err)) != KANN_OK ||
        (s = kann_check_act(&a->act, err)) != KANN_OK)
        return s;
    uint32_t a_dims[3] = {a->batch, a->m, a->k};
    uint32_t a_strides[3] = {a->a_batch_stride, a->a_row_stride, a->a_col_stride};
    /* B in panels: every panel counts whole, the last one's padding included */
    uint32_t panels = a->b_panel_stride ? (a->n + KANN_MATMUL_PANEL - 1) / KANN_MATMUL_PANEL : 1;
    uint32_t b_dims[4] = {a->batch, a->k, panels, panels > 1 ? KANN_MATMUL_PANEL : a->n};
    uint32_t b_strides[4] = {a->b_batch_stride, a->b_row_stride, a->b_panel_stride,
                             a->b_col_stride};
    uint32_t bias_dims[2] = {a->m, a->n};
    uint32_t bias_strides[2] = {a->bias_row_stride, a->bias_col_stride};
    uint32_t y_dims[3] = {a->batch, a->m, a->n};
    /* With both operands broadcast along k the sum would repeat one product k times: no
     * model does that, and it would let 2^32 steps hide behind two floats. Otherwise k is
     * bounded by the operand that spans it. */
    if (a->k > 1 && a->a_col_stride == 0 && a->b_row_stride == 0)
        return kann_msg_set(err, KANN_E_CORRUPT, "matmul: both operands broadcast along k");
    if ((s = kann_check_strided(b, a->a, 3, a_dims, a_strides, 0, 0, "matmul a", err)) != KANN_OK ||
        (s = kann_check_strided(b, a->b, 4, b_dims, b_strides, 0, 0, "matmul b", err)) != KANN_OK ||
        (s = kann_check_strided(b, a->bias, 2, bias_dims, bias_strides, 0, 1, "matmul bias",
                                err)) != KANN_OK ||
        (s = kann_check_dense(b, a->residual, y_dims, 3, 0, 1, "matmul residual", err)) !=
            KANN_OK ||
        (s = kann_check_dense(b, a->y, y_dims, 3, 1, 0, "matmul y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
