/* Lowering of Gemm and MatMul onto the strided matmul kernel; a constant B (B^T too) is copied
 * to panels of 64 columns, or to rows spread over the cache's sets, so the inner loop is dense
 * and B streams in order (weight_layout_of). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* Where a copy of constant B puts its elements: rows of ld floats, or panels. */
typedef struct weight_layout {
    uint32_t row_stride, panel_stride; /* the matmul's b_row_stride and b_panel_stride */
    size_t batch_stride, size;         /* floats */
} weight_layout;

/* The layout of constant B's copy ([batch][K][N]) for a product of M rows.
 * - Several rows, wider than a panel: panels of KANN_MATMUL_PANEL columns,
 *   [batch][N / 64][K][64], the last one padded. The kernels read B a column chunk at a time
 *   down all K rows; rows N floats apart put every row of a chunk on its own page, which the
 *   hardware prefetchers do not follow from memory, and two streams reading their halves of
 *   vit_b_16's weights that way read 0.71 times as fast as one: a panel is one sequential
 *   stream.
 * - Otherwise rows of N rounded up to whole cache lines, and to an odd count of them: rows a
 *   multiple of 4 KiB apart fall in one set of the L1 cache. A single row (a fully-connected
 *   layer at batch 1) reads B row after row, already one stream. */
static weight_layout weight_layout_of(uint32_t batch, uint32_t M, uint32_t K, uint32_t N) {
    weight_layout l = {0};
    uint64_t panels = (N + (uint64_t)KANN_MATMUL_PANEL - 1) / KANN_MATMUL_PANEL;
    if (M > 1 && N > KANN_MATMUL_PANEL &&
        panels * K * KANN_MATMUL_PANEL * (batch ? batch : 1) <= UINT32_MAX) {
        l.row_stride = KANN_MATMUL_PANEL;
        l.panel_stride = K * KANN_MATMUL_PANEL;
        l.batch_stride = (size_t)panels * l.panel_stride;
    } else {
        uint32_t lines = (N + 15) / 16;
        if (lines % 2 == 0) lines++;
        l.row_stride = N < 16 ? N : lines * 16;
        l.batch_stride = (size_t)K * l.row_stride;
    }
    l.size = batch * l.batch_stride;
    return l;
}

/* A copy of constant B's batches [batch][K][N] (element (b, k, j) at b * bs + k * rs + j * cs
 * of B) in the layout weight_layout_of gives for a product of M rows, the padding zero, where
 * that is not B's own rows (rs = N): *B becomes the copy and *l its layout. Returns 0 with B
 * unchanged where no copy is made. */
static int weight_copy(kc_graph *g, int *B, uint32_t batch, uint32_t M, uint32_t K, uint32_t N,
                       size_t bs, size_t rs, size_t cs, weight_layout *l) {
    const kc_value *bv = kc_val(g, *B);
    *l = weight_layout_of(batch, M, K, N);
    if (!kc_is_const(g, *B) || !bv->data || (rs == N && !l->panel_stride && l->row_stride == N))
        return 0;
    float *out = calloc(l->size + 1, sizeof(float));
    if (!out) abort();
    const float *src = bv->data;
    for (size_t b = 0; b < batch; b++)
        for (size_t k = 0; k < K; k++)
            for (size_t j = 0; j < N; j++) {
                size_t at = l->panel_stride ? j / KANN_MATMUL_PANEL * l->panel_stride +
                                                  k * l->row_stride + j % KANN_MATMUL_PANEL
                                            : k * l->row_stride + j;
                out[b * l->batch_stride + at] = src[b * bs + k * rs + j * cs];
            }
    int64_t dims[1] = {(int64_t)l->size};
    *B = kc_new_const_f32(g, kc_sprintf(g, "%s.%s", bv->name, l->panel_stride ? "panels" : "rows"),
                          1, dims, out);
    free(out);
    return 1;
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
    /* A constant B (B^T too) is copied so the kernel's inner loop over columns is dense and
     * its rows come in order (weight_layout_of). */
    uint32_t b_rs = tb ? 1 : N, b_ps = 0;
    weight_layout l;
    if (weight_copy(g, &B, 1, M, K, N, 0, tb ? 1 : N, tb ? K : 1, &l)) {
        b_rs = l.row_stride;
        b_ps = l.panel_stride;
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
    a->b_panel_stride = b_ps;
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
    kc_set_tile(c, M, 1, N, b_ps ? KANN_MATMUL_PANEL : 16); /* streams cut B's panels whole */
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
    uint32_t b_rs = N, b_ps = 0;
    size_t b_bs = (size_t)K * N;
    weight_layout l;
    if (weight_copy(g, &B, (uint32_t)batch_b, M, K, N, (size_t)K * N, N, 1, &l)) {
        b_rs = l.row_stride;
        b_ps = l.panel_stride;
        b_bs = l.batch_stride;
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
    a->b_batch_stride = batch_b == 1 ? 0 : (uint32_t)b_bs;
    a->b_row_stride = b_rs;
    a->b_col_stride = 1;
    a->b_panel_stride = b_ps;
    a->alpha = kc_attr_float(n, "alpha", 1.0f);
    kc_matmul_row_bias(n, c);
    a->act = kc_node_act(n);
    kc_bind(c, offsetof(kann_matmul_args, a), A, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, b), B, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, y), y, 0, 1);
    kc_set_tile(c, M, 1, N, b_ps ? KANN_MATMUL_PANEL : 16); /* streams cut B's panels whole */
    c->macs = (double)a->batch * M * N * K;
    return 0;
}
