/* Lowering of Gemm and MatMul onto the strided matmul kernel; a constant B (B^T too) is copied
 * to rows [K][ld] so the inner loop is dense and the rows spread over the cache's sets. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* The row stride (floats) for a constant B of N columns copied by weight_rows: N rounded up to
 * whole cache lines, and to an odd count of them. The matmul kernels read a column chunk of B
 * down all K rows; rows a multiple of 4 KiB apart (ConvNeXt's 768 x 3072 weights: 12 KiB) all
 * fall in one set of the L1 cache, and many in few sets of L2, so every pass over the chunk
 * missed both: convnext_tiny's 49-row layers ran at 50 GFLOPS. An odd count of lines spreads
 * consecutive rows over every set. */
static uint32_t weight_row_stride(uint32_t N) {
    uint32_t lines = (N + 15) / 16;
    if (lines % 2 == 0) lines++;
    return N < 16 ? N : lines * 16;
}

/* A copy of constant B's batches [batch][K][N] (element (b, k, j) at b * bs + k * rs + j * cs
 * of B) with rows ld = weight_row_stride(N) floats apart, the padding zero. */
static int weight_rows(kc_graph *g, int B, uint32_t batch, uint32_t K, uint32_t N, size_t bs,
                       size_t rs, size_t cs) {
    size_t ld = weight_row_stride(N);
    float *out = calloc((size_t)batch * K * ld + 1, sizeof(float));
    if (!out) abort();
    const kc_value *bv = kc_val(g, B);
    const float *src = bv->data;
    for (size_t b = 0; b < batch; b++)
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < N; j++)
                out[(b * K + k) * ld + j] = src[b * bs + k * rs + j * cs];
    int64_t dims[3] = {batch, K, (int64_t)ld};
    int v = kc_new_const_f32(g, kc_sprintf(g, "%s.rows", bv->name), 3, dims, out);
    free(out);
    return v;
}

int kc_lower_gemm(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = kc_input(n, 0), B = kc_input(n, 1), C = kc_input(n, 2), y = n->outputs[0];
    int errors = kc_need_f32(g, id, A, "A", d) + kc_need_f32(g, id, B, "B", d) +
                 kc_need_f32(g, id, C, "C", d) + kc_need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    const kc_value *av = kc_val(g, A), *bv = kc_val(g, B);
    if (av->rank != 2 || bv->rank != 2) {
        kc_error_node(d, g, id, "Gemm operands must be 2-D");
        return 1;
    }
    int ta = (int)kc_attr_int(n, "transA", 0), tb = (int)kc_attr_int(n, "transB", 0);
    uint32_t M = (uint32_t)(ta ? av->dims[1] : av->dims[0]);
    uint32_t K = (uint32_t)(ta ? av->dims[0] : av->dims[1]);
    uint32_t N = (uint32_t)(tb ? bv->dims[0] : bv->dims[1]);
    /* A constant B (B^T too) is copied to rows [K][ld] so the kernel's inner loop over
     * columns is dense and its rows spread over the cache's sets (weight_row_stride). */
    uint32_t b_rs = tb ? 1 : N;
    if (kc_is_const(g, B) && bv->data && (tb || weight_row_stride(N) != N)) {
        B = weight_rows(g, B, 1, K, N, 0, tb ? 1 : N, tb ? K : 1);
        b_rs = weight_row_stride(N);
        tb = 0;
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
    kann_matmul_args *a = c->args;
    a->batch = 1;
    a->m = M;
    a->n = N;
    a->k = K;
    a->a_row_stride = ta ? 1 : K;
    a->a_col_stride = ta ? M : 1;
    a->b_row_stride = b_rs;
    a->b_col_stride = tb ? K : 1;
    a->alpha = kc_attr_float(n, "alpha", 1.0f);
    a->beta = kc_attr_float(n, "beta", 1.0f);
    if (C >= 0) {
        const kc_value *cv = kc_val(g, C);
        uint32_t st[2];
        if (cv->rank > 2) {
            kc_error_node(d, g, id, "C must have rank <= 2");
            return 1;
        }
        kc_broadcast_strides(cv, 2, st);
        a->bias_row_stride = st[0];
        a->bias_col_stride = st[1];
    }
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_matmul_args, a), A, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, b), B, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, bias), C, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, y), y, 0, 1);
    kc_set_tile(c, M, 1, N, 16);
    c->macs = (double)M * N * K;
    return 0;
}

void kc_matmul_row_bias(const kc_node *n, kc_call *c) {
    kann_matmul_args *a = c->args;
    int bias = kc_input(n, 2);
    a->beta = bias >= 0 ? 1.0f : 0.0f;
    a->bias_row_stride = 0;
    a->bias_col_stride = 1;
    kc_bind(c, offsetof(kann_matmul_args, bias), bias, 0, 0);
}

int kc_lower_matmul(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = kc_input(n, 0), B = kc_input(n, 1), y = n->outputs[0];
    int errors = kc_need_f32(g, id, A, "A", d) + kc_need_f32(g, id, B, "B", d) +
                 kc_need_f32(g, id, kc_input(n, 2), "bias", d) +
                 kc_need_f32(g, id, n->epi.residual, "residual", d);
    if (errors) return errors;
    const kc_value *av = kc_val(g, A), *bv = kc_val(g, B);
    int ra = av->rank, rb = bv->rank;
    if (ra < 1 || rb < 1) {
        kc_error_node(d, g, id, "MatMul operands must have rank >= 1");
        return 1;
    }
    uint32_t M = ra == 1 ? 1 : (uint32_t)av->dims[ra - 2];
    uint32_t K = (uint32_t)av->dims[ra - 1];
    uint32_t N = rb == 1 ? 1 : (uint32_t)bv->dims[rb - 1];
    /* Batch dims: equal on both sides, or absent / all ones on one side (stride 0). */
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    int64_t batch_a = kc_prod(av->dims, 0, ba), batch_b = kc_prod(bv->dims, 0, bb);
    int same = ba == bb && memcmp(av->dims, bv->dims, sizeof(int64_t) * (size_t)ba) == 0;
    if (!same && batch_a != 1 && batch_b != 1) return kc_lower_matmul_broadcast(g, p, id, d);
    if (kc_value_numel(kc_val(g, y)) == 0) return 0; /* an empty product: nothing to write */
    /* B shared by every batch of A: A's batches are one matrix of batch_a * M rows (rows
     * contiguous in A and y), so each weight panel is read once for all of them rather than
     * once per batch (ConvNeXt's [1, 7, 7, 768] x [768, 3072]: 7 batches of 7 rows). */
    if (batch_b == 1 && batch_a > 1 && (uint64_t)batch_a * M <= UINT32_MAX) {
        M = (uint32_t)(batch_a * M);
        batch_a = 1;
    }
    uint32_t b_rs = N;
    if (kc_is_const(g, B) && bv->data && weight_row_stride(N) != N) {
        B = weight_rows(g, B, (uint32_t)batch_b, K, N, (size_t)K * N, N, 1);
        b_rs = weight_row_stride(N);
    }
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
    kann_matmul_args *a = c->args;
    /* a side with one batch broadcasts to the other's count, 0 included */
    a->batch = (uint32_t)(batch_a == 1 ? batch_b : batch_a);
    a->m = M;
    a->n = N;
    a->k = K;
    a->a_batch_stride = batch_a == 1 ? 0 : M * K;
    a->a_row_stride = K;
    a->a_col_stride = 1;
    a->b_batch_stride = batch_b == 1 ? 0 : K * b_rs;
    a->b_row_stride = b_rs;
    a->b_col_stride = 1;
    a->alpha = kc_attr_float(n, "alpha", 1.0f);
    kc_matmul_row_bias(n, c);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_matmul_args, a), A, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, b), B, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, y), y, 0, 1);
    kc_set_tile(c, M, 1, N, 16);
    c->macs = (double)a->batch * M * N * K;
    return 0;
}
