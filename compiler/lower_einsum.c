/* Einsum as one batched matmul: each operand is copied (only when its layout differs) to
 * [batch][rows][contracted] / [batch][contracted][cols] by a strided copy, the matmul kernel
 * multiplies, and the product is copied to the output's label order if that differs.
 *   batch:       labels of both operands kept in the output
 *   rows (M):    labels of the first operand only, kept
 *   cols (N):    labels of the second operand only, kept
 *   contracted:  labels not in the output; a label of one operand only is contracted against
 *                the other operand broadcast along it (stride 0), which sums it.
 * One operand is multiplied by a vector of ones over its contracted labels. */
#include <stdlib.h>

#include "einsum.h"
#include "kann_kernels.h"
#include "lower_internal.h"

enum { GROUP_BATCH, GROUP_ROWS, GROUP_COLS, GROUP_CONTRACTED, GROUPS };

typedef struct label_list {
    int n;
    int l[KC_MAX_RANK];
} label_list;

static int has_label(const int *labels, int n, int l) {
    for (int i = 0; i < n; i++)
        if (labels[i] == l) return 1;
    return 0;
}

/* Appends the labels of a group to a layout; their extents multiply into *extent. */
static void append(label_list *layout, const label_list *group, const kc_einsum *e,
                   int64_t *extent) {
    *extent = 1;
    for (int i = 0; i < group->n; i++) {
        layout->l[layout->n++] = group->l[i];
        *extent *= e->size[group->l[i]];
    }
}

static int same_layout(const label_list *a, const int *labels, int rank) {
    if (a->n != rank) return 0;
    for (int i = 0; i < rank; i++)
        if (a->l[i] != labels[i]) return 0;
    return 1;
}

/* Element strides of operand k per label: 0 for labels it lacks or holds with extent 1. */
static void label_strides(const kc_graph *g, const kc_einsum *e, int x, int k, int64_t *st) {
    const kc_value *v = kc_val(g, x);
    for (int l = 0; l < KC_EINSUM_LABELS; l++)
        st[l] = 0;
    int64_t s = 1;
    for (int i = e->rank[k] - 1; i >= 0; i--) {
        if (v->dims[i] != 1) st[e->labels[k][i]] = s;
        s *= v->dims[i];
    }
}

/* Operand k (value x) as a dense value in the layout's label order: x itself when
 * it already is, else a strided copy into a new scratch value. */
static int arrange(kc_graph *g, kc_program *p, int id, const kc_einsum *e, int x, int k,
                   const label_list *layout, const char *what) {
    const kc_value *v = kc_val(g, x);
    int dense = same_layout(layout, e->labels[k], e->rank[k]);
    for (int i = 0; dense && i < e->rank[k]; i++)
        dense = v->dims[i] == e->size[e->labels[k][i]];
    if (dense) return x;
    int64_t xs_all[KC_EINSUM_LABELS], dims[KC_MAX_RANK], xs[KC_MAX_RANK], ys[KC_MAX_RANK];
    label_strides(g, e, x, k, xs_all);
    int64_t s = 1;
    for (int i = layout->n - 1; i >= 0; i--) {
        dims[i] = e->size[layout->l[i]];
        xs[i] = xs_all[layout->l[i]];
        ys[i] = s;
        s *= dims[i];
    }
    int y = kc_new_scratch(g, kc_sprintf(g, "%s.%s", g->nodes[id].name, what), s);
    kc_emit_strided_copy(g, p, id, x, 0, y, 0, layout->n, dims, xs, ys);
    return y;
}

int kc_lower_einsum(kc_graph *g, kc_program *p, int id, kc_diag *d) {
    const kc_node *n = &g->nodes[id];
    int y = n->outputs[0], errors = 0;
    for (int k = 0; k < n->n_inputs; k++)
        errors += kc_need_f32(g, id, kc_input(n, k), "operand", d);
    if (errors) return errors;
    kc_einsum e;
    if (kc_einsum_of(g, id, &e, d)) return 1;
    if (kc_value_numel(kc_val(g, y)) == 0) return 0;
    /* Groups, each in a fixed order: output order for the kept labels, first-operand order
     * (then the second's) for the contracted ones. */
    label_list group[GROUPS] = {0};
    int two = e.n_operands == 2;
    for (int i = 0; i < e.out_rank; i++) {
        int l = e.out_labels[i];
        int in_a = has_label(e.labels[0], e.rank[0], l);
        int in_b = two && has_label(e.labels[1], e.rank[1], l);
        int gi = in_a && in_b ? GROUP_BATCH : in_a ? GROUP_ROWS : GROUP_COLS;
        group[gi].l[group[gi].n++] = l;
    }
    for (int k = 0; k < e.n_operands; k++)
        for (int i = 0; i < e.rank[k]; i++) {
            int l = e.labels[k][i];
            label_list *c = &group[GROUP_CONTRACTED];
            if (!has_label(e.out_labels, e.out_rank, l) && !has_label(c->l, c->n, l))
                c->l[c->n++] = l;
        }
    int64_t batch, m, nn, kk;
    label_list la = {0}, lb = {0}, lc = {0};
    append(&la, &group[GROUP_BATCH], &e, &batch);
    append(&la, &group[GROUP_ROWS], &e, &m);
    append(&la, &group[GROUP_CONTRACTED], &e, &kk);
    append(&lb, &group[GROUP_BATCH], &e, &batch);
    append(&lb, &group[GROUP_CONTRACTED], &e, &kk);
    append(&lb, &group[GROUP_COLS], &e, &nn);
    append(&lc, &group[GROUP_BATCH], &e, &batch);
    append(&lc, &group[GROUP_ROWS], &e, &m);
    append(&lc, &group[GROUP_COLS], &e, &nn);
    if (kk == 0) {
        kc_error_node(d, g, id, "Einsum contracting an empty dimension is not supported");
        return 1;
    }
    int a = arrange(g, p, id, &e, kc_input(n, 0), 0, &la, "a");
    int b;
    if (two) {
        b = arrange(g, p, id, &e, kc_input(n, 1), 1, &lb, "b");
    } else { /* sums over the contracted labels: times a column of ones */
        float *ones = malloc(sizeof(float) * (size_t)kk);
        if (!ones) abort();
        for (int64_t i = 0; i < kk; i++)
            ones[i] = 1.0f;
        b = kc_new_const_f32(g, kc_sprintf(g, "%s.ones", n->name), 1, &kk, ones);
        free(ones);
    }
    int direct = same_layout(&lc, e.out_labels, e.out_rank);
    int prod = direct ? y : kc_new_scratch(g, kc_sprintf(g, "%s.product", n->name), batch * m * nn);
    kc_call *c = kc_new_call(g, p, KANN_KERNEL_F32_MATMUL, id);
    kann_matmul_args *ma = c->args;
    ma->batch = (uint32_t)batch;
    ma->m = (uint32_t)m;
    ma->n = (uint32_t)nn;
    ma->k = (uint32_t)kk;
    ma->a_batch_stride = (uint32_t)(m * kk);
    ma->a_row_stride = (uint32_t)kk;
    ma->a_col_stride = 1;
    ma->b_batch_stride = two ? (uint32_t)(kk * nn) : 0;
    ma->b_row_stride = (uint32_t)nn;
    ma->b_col_stride = 1;
    ma->alpha = 1.0f;
    ma->beta = 0.0f;
    kc_bind(c, offsetof(kann_matmul_args, a), a, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, b), b, 0, 0);
    kc_bind(c, offsetof(kann_matmul_args, y), prod, 0, 1);
    kc_set_tile(c, (uint32_t)m, 1, (uint32_t)nn, 16);
    c->macs = (double)batch * m * nn * kk;
    if (!direct) {
        /* the product [batch][rows][cols] read in the output's label order */
        int64_t pst[KC_EINSUM_LABELS] = {0}, dims[KC_MAX_RANK], xs[KC_MAX_RANK], ys[KC_MAX_RANK];
        int64_t s = 1;
        for (int i = lc.n - 1; i >= 0; i--) {
            pst[lc.l[i]] = s;
            s *= e.size[lc.l[i]];
        }
        s = 1;
        for (int i = e.out_rank - 1; i >= 0; i--) {
            dims[i] = e.size[e.out_labels[i]];
            xs[i] = pst[e.out_labels[i]];
            ys[i] = s;
            s *= dims[i];
        }
        kc_emit_strided_copy(g, p, id, prod, 0, y, 0, e.out_rank, dims, xs, ys);
    }
    return 0;
}
