/* MatMul whose batch dims broadcast in general (numpy rules, e.g. [2,1,M,K] x [1,3,K,N]): the
 * trailing batch dims that each operand either spans densely or broadcasts whole become the
 * matmul kernel's batch; every index of the leading batch dims left becomes one more call. */
#include <string.h>

#include "kann_kernels.h"
#include "lower_internal.h"
#include "shapes.h"

/* Batch dims of v right-aligned to rank r (1 where v has none). */
static void batch_dims(const kc_value *v, int r, int64_t *dims) {
    int vb = v->rank > 2 ? v->rank - 2 : 0;
    for (int i = 0; i < r; i++) {
        int j = i - (r - vb);
        dims[i] = j >= 0 ? v->dims[j] : 1;
    }
}

/* Whether operand dims x, against output batch dims out over [from, r), are spanned densely
 * (equal) or broadcast whole (all 1): then one stride serves the flattened range. */
static int collapsible(const int64_t *x, const int64_t *out, int from, int r) {
    int all_equal = 1, all_one = 1;
    for (int i = from; i < r; i++) {
        if (out[i] == 1) continue;
        all_equal &= x[i] == out[i];
        all_one &= x[i] == 1;
    }
    return all_equal || all_one;
}

int kc_lower_matmul_broadcast(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int A = kc_input(n, 0), B = kc_input(n, 1), y = n->outputs[0];
    const kc_value *av = kc_val(g, A), *bv = kc_val(g, B);
    int ra = av->rank, rb = bv->rank;
    uint32_t M = ra == 1 ? 1 : (uint32_t)av->dims[ra - 2];
    uint32_t K = (uint32_t)av->dims[ra - 1];
    uint32_t N = rb == 1 ? 1 : (uint32_t)bv->dims[rb - 1];
    int r = ra > rb ? ra - 2 : rb - 2;
    int64_t da[KC_MAX_RANK], db[KC_MAX_RANK], out[KC_MAX_RANK];
    batch_dims(av, r, da);
    batch_dims(bv, r, db);
    for (int i = 0; i < r; i++) {
        if (da[i] != db[i] && da[i] != 1 && db[i] != 1) {
            kc_error_node(d, g, id, "batch dim %d: %lld and %lld do not broadcast", i,
                          (long long)da[i], (long long)db[i]);
            return 1;
        }
        out[i] = da[i] == 1 ? db[i] : da[i]; /* 1 broadcasts to the other, 0 included */
    }
    if (kc_value_numel(kc_val(g, y)) == 0) return 0; /* an empty product: nothing to write */
    int split = 0; /* batch dims [split, r) go to the kernel */
    while (split < r && !(collapsible(da, out, split, r) && collapsible(db, out, split, r)))
        split++;
    /* Element strides of one step along each leading dim, per operand (0: broadcast). */
    int64_t sa[KC_MAX_RANK], sb[KC_MAX_RANK], so[KC_MAX_RANK];
    int64_t ea = (int64_t)M * K, eb = (int64_t)K * N, eo = (int64_t)M * N;
    for (int i = r - 1; i >= 0; i--) {
        sa[i] = da[i] == 1 ? 0 : ea;
        sb[i] = db[i] == 1 ? 0 : eb;
        so[i] = eo;
        ea *= da[i];
        eb *= db[i];
        eo *= out[i];
    }
    int64_t inner = kc_prod(out, split, r), outer = kc_prod(out, 0, split);
    int64_t inner_a = kc_prod(da, split, r), inner_b = kc_prod(db, split, r);
    for (int64_t o = 0; o < outer; o++) {
        int64_t off_a = 0, off_b = 0, off_y = 0, rest = o;
        for (int i = split - 1; i >= 0; i--) {
            int64_t idx = rest % out[i];
            rest /= out[i];
            off_a += idx * sa[i];
            off_b += idx * sb[i];
            off_y += idx * so[i];
        }
        kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
        kann_matmul_args *a = c->args;
        a->batch = (uint32_t)inner;
        a->m = M;
        a->n = N;
        a->k = K;
        a->a_batch_stride = inner_a == 1 ? 0 : M * K;
        a->a_row_stride = K;
        a->a_col_stride = 1;
        a->b_batch_stride = inner_b == 1 ? 0 : K * N;
        a->b_row_stride = N;
        a->b_col_stride = 1;
        a->alpha = kc_attr_float(n, "alpha", 1.0f);
        kc_matmul_row_bias(n, c);
        a->act = kc_node_act(n);
        kc_bind(c, offsetof(kann_matmul_args, a), A, off_a * 4, 0);
        kc_bind(c, offsetof(kann_matmul_args, b), B, off_b * 4, 0);
        kc_bind(c, offsetof(kann_matmul_args, residual), n->epi.residual, off_y * 4, 0);
        kc_bind(c, offsetof(kann_matmul_args, y), y, off_y * 4, 1);
        kc_set_tile(c, M, 1, N, 16);
        c->macs = (double)inner * M * N * K;
    }
    return 0;
}
