/* Pass 4, fold: an inference BatchNormalization, or a per-channel constant Mul/Add, that follows
 * a Conv/ConvTranspose/Gemm/MatMul is an affine map per output feature, so it folds into that
 * node's weights and bias and costs nothing at run time. */
#include <math.h>
#include <string.h>

#include "kann_kernels.h"
#include "passes.h"

/* A float32 constant with data, -1 if v is not one; otherwise its element count. */
static int64_t f32_const_numel(const kc_graph *g, int v) {
    if (v < 0) return -1;
    const kc_value *val = &g->values[v];
    if (!(val->flags & KC_VALUE_CONST) || val->dtype != KC_DTYPE_FLOAT) return -1;
    int64_t n = kc_value_numel(val);
    return n > 0 && val->data ? n : -1;
}

static const float *f32_data(const kc_graph *g, int v) {
    return (const float *)g->values[v].data;
}

static int value_is_aliased(const kc_graph *g, int v) {
    for (int i = 0; i < g->n_values; i++)
        if (g->values[i].alias_of == v) return 1;
    return 0;
}

/* Whether x, the output of the candidate producer, may disappear into it: read only by the
 * folding node, not requested by the caller, and not read through a view. */
static int private_intermediate(const kc_graph *g, int x) {
    return !(g->values[x].flags & KC_VALUE_OUTPUT) && kc_value_uses(g, x) == 1 &&
           !value_is_aliased(g, x);
}

/* The live node producing x as its first output with no epilogue yet, or -1. */
static int foldable_producer(const kc_graph *g, int x) {
    int p = g->values[x].producer;
    if (p < 0) return -1;
    const kc_node *n = &g->nodes[p];
    if (n->dead || n->n_outputs < 1 || n->outputs[0] != x) return -1;
    if (n->epi.act != KANN_ACT_NONE || n->epi.residual >= 0) return -1;
    return p;
}

static int node_input(const kc_node *n, int i) {
    return i < n->n_inputs ? n->inputs[i] : -1;
}

static void set_node_input(kc_graph *g, int ni, int i, int v) {
    kc_node *n = &g->nodes[ni];
    if (i >= n->n_inputs) {
        int *ins = kc_alloc(g, sizeof(int) * (size_t)(i + 1));
        for (int j = 0; j <= i; j++)
            ins[j] = j < n->n_inputs ? n->inputs[j] : -1;
        n->inputs = ins;
        n->n_inputs = i + 1;
    }
    n->inputs[i] = v;
}

static int new_f32_const(kc_graph *g, const char *base, int rank, const int64_t *dims,
                         const float *data) {
    return kc_add_const(g, kc_unique_name(g, base), KC_DTYPE_FLOAT, rank, dims, data);
}

/* ---- the per-channel affine map y = x * scale[c] + shift[c] ---- */

typedef struct affine {
    int64_t channels;
    double *scale; /* NULL: 1 */
    double *shift; /* NULL: 0 */
} affine;

/* The output channel that weight element i of Conv or ConvTranspose node n scales: a Conv's
 * weights are [M][C/group][k...], a ConvTranspose's [C][M/group][k...] (channel c's group
 * c / (C/group) writes outputs group * M/group on). */
static int64_t weight_channel(const kc_node *n, int64_t group, const kc_value *wv, int64_t i) {
    int64_t rows = wv->dims[0], per = kc_value_numel(wv) / rows;
    if (n->op == KC_OP_Conv) return i / per;
    int64_t cols = wv->dims[1], taps = per / cols;
    int64_t c = i / per, j = i % per / taps;
    return c / (rows / group) * cols + j;
}

/* Folds the affine map into a Conv or ConvTranspose: weights scale per output channel m. */
static void fold_into_conv(kc_graph *g, int p, const affine *a) {
    const kc_node *n = &g->nodes[p];
    int w = n->inputs[1], b = node_input(n, 2);
    const kc_value *wv = &g->values[w];
    int64_t m_count = a->channels, numel = kc_value_numel(wv);
    const float *wd = f32_data(g, w), *bd = b >= 0 ? f32_data(g, b) : NULL;
    if (a->scale) {
        int64_t group = kc_attr_int(n, "group", 1);
        float *nw = kc_alloc(g, sizeof(float) * (size_t)numel);
        for (int64_t i = 0; i < numel; i++)
            nw[i] = (float)((double)wd[i] * a->scale[weight_channel(n, group, wv, i)]);
        int64_t dims[KC_MAX_RANK];
        memcpy(dims, wv->dims, sizeof dims);
        int rank = wv->rank;
        set_node_input(g, p, 1, new_f32_const(g, g->values[w].name, rank, dims, nw));
    }
    if (bd || a->shift) {
        float *nb = kc_alloc(g, sizeof(float) * (size_t)m_count);
        for (int64_t m = 0; m < m_count; m++) {
            double v = bd ? bd[m] : 0.0;
            if (a->scale) v *= a->scale[m];
            if (a->shift) v += a->shift[m];
            nb[m] = (float)v;
        }
        const char *base = b >= 0 ? g->values[b].name : g->values[w].name;
        set_node_input(g, p, 2, new_f32_const(g, base, 1, &m_count, nb));
    }
}

static int conv_foldable(const kc_graph *g, int p, int64_t channels) {
    const kc_node *n = &g->nodes[p];
    if ((n->op != KC_OP_Conv && n->op != KC_OP_ConvTranspose) || n->n_inputs < 2) return 0;
    int w = n->inputs[1], b = node_input(n, 2);
    if (f32_const_numel(g, w) < 0 || g->values[w].rank < 3) return 0;
    const kc_value *wv = &g->values[w];
    int64_t group = kc_attr_int(n, "group", 1);
    int64_t outs = n->op == KC_OP_Conv ? wv->dims[0] : wv->dims[1] * group;
    if (outs != channels || (n->op == KC_OP_ConvTranspose && (group < 1 || wv->dims[0] % group)))
        return 0;
    return b < 0 || f32_const_numel(g, b) == channels;
}

/* The bias c(i, j) of a Gemm, broadcast to [rows][cols] (ONNX unidirectional broadcasting). */
static double gemm_bias_at(const kc_value *c, int64_t i, int64_t j) {
    if (!c) return 0.0;
    const float *d = c->data;
    int64_t rows = c->rank >= 2 ? c->dims[c->rank - 2] : 1;
    int64_t cols = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
    return d[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
}

/* A Gemm y = alpha * A' B' + beta * C whose output features are the columns of B'. */
static int gemm_foldable(const kc_graph *g, int p, int64_t channels) {
    const kc_node *n = &g->nodes[p];
    if (n->op != KC_OP_Gemm || n->n_inputs < 2) return 0;
    int b = n->inputs[1], c = node_input(n, 2);
    const kc_value *bv = &g->values[b], *y = &g->values[n->outputs[0]];
    if (f32_const_numel(g, b) < 0 || bv->rank != 2 || y->rank != 2 || y->dims[1] != channels)
        return 0;
    int64_t cols = kc_attr_int(n, "transB", 0) ? bv->dims[0] : bv->dims[1];
    if (cols != channels) return 0;
    if (c < 0) return 1;
    const kc_value *cv = &g->values[c];
    if (f32_const_numel(g, c) < 0 || cv->rank > 2) return 0;
    int64_t c_rows = cv->rank >= 2 ? cv->dims[0] : 1,
            c_cols = cv->rank >= 1 ? cv->dims[cv->rank - 1] : 1;
    return (c_rows == 1 || c_rows == y->dims[0]) && (c_cols == 1 || c_cols == channels);
}

/* A 2-D MatMul with a constant right operand is a Gemm without bias. */
static int matmul_foldable(const kc_graph *g, int p, int64_t channels) {
    const kc_node *n = &g->nodes[p];
    if (n->op != KC_OP_MatMul || n->n_inputs != 2) return 0;
    int a = n->inputs[0], b = n->inputs[1];
    const kc_value *bv = &g->values[b];
    return g->values[a].rank == 2 && f32_const_numel(g, b) >= 0 && bv->rank == 2 &&
           bv->dims[1] == channels && g->values[n->outputs[0]].rank == 2;
}

static void matmul_to_gemm(kc_graph *g, int p) {
    kc_node *n = &g->nodes[p];
    n->op = KC_OP_Gemm;
    n->op_type = "Gemm";
}

static void fold_into_gemm(kc_graph *g, int p, const affine *a) {
    const kc_node *n = &g->nodes[p];
    int b = n->inputs[1], c = node_input(n, 2);
    int trans_b = (int)kc_attr_int(n, "transB", 0);
    int64_t rows = g->values[n->outputs[0]].dims[0], cols = a->channels;
    const kc_value *bv = &g->values[b];
    int64_t b_dims[2] = {bv->dims[0], bv->dims[1]};
    int64_t b_numel = b_dims[0] * b_dims[1];
    const float *bd = f32_data(g, b);
    float *nb = kc_alloc(g, sizeof(float) * (size_t)b_numel);
    for (int64_t r = 0; r < b_dims[0]; r++) {
        for (int64_t k = 0; k < b_dims[1]; k++) {
            int64_t col = trans_b ? r : k;
            nb[r * b_dims[1] + k] = (float)((double)bd[r * b_dims[1] + k] * a->scale[col]);
        }
    }

    /* beta * C becomes part of the new bias, so beta is 1 from now on. */
    double beta = kc_attr_float(n, "beta", 1.0f);
    const kc_value *cv = c >= 0 ? &g->values[c] : NULL;
    int full = cv && cv->rank == 2 && cv->dims[0] != 1;
    int64_t c_rows = full ? rows : 1;
    float *nc = kc_alloc(g, sizeof(float) * (size_t)(c_rows * cols));
    for (int64_t i = 0; i < c_rows; i++)
        for (int64_t j = 0; j < cols; j++)
            nc[i * cols + j] = (float)(beta * gemm_bias_at(cv, i, j) * a->scale[j] + a->shift[j]);

    const char *b_name = bv->name;
    const char *c_name = cv ? cv->name : kc_sprintf(g, "%s_bias", b_name);
    int nbv = new_f32_const(g, b_name, 2, b_dims, nb);
    int64_t c_dims[2] = {rows, cols};
    int ncv =
        full ? new_f32_const(g, c_name, 2, c_dims, nc) : new_f32_const(g, c_name, 1, &cols, nc);
    set_node_input(g, p, 1, nbv);
    set_node_input(g, p, 2, ncv);
    kc_node *gn = &g->nodes[p];
    for (int i = 0; i < gn->n_attrs; i++)
        if (strcmp(gn->attrs[i].name, "beta") == 0) {
            gn->attrs[i].type = KC_ATTR_FLOAT;
            gn->attrs[i].f = 1.0f;
        }
}

/* ---- BatchNormalization ---- */

/* BN in inference form: training_mode 0 and its statistics outputs unread. */
static int bn_inference_form(const kc_graph *g, const kc_node *n) {
    if (kc_attr_int(n, "training_mode", 0) != 0) return 0;
    /* Before opset 7, is_test (default 0: training) chose the mode. */
    if (n->opset > 0 && n->opset < 7 && kc_attr_int(n, "is_test", 0) == 0) return 0;
    for (int j = 1; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && kc_value_uses(g, n->outputs[j]) > 0) return 0;
    return n->n_inputs == 5 && n->n_outputs >= 1;
}

/* s = scale / sqrt(var + eps), shift = bias - mean * s, or 0 if the parameters are not
 * constant per-channel float32 vectors of length channels. */
static int bn_affine(kc_graph *g, const kc_node *n, int64_t channels, affine *a) {
    for (int i = 1; i < 5; i++)
        if (f32_const_numel(g, n->inputs[i]) != channels) return 0;
    const float *scale = f32_data(g, n->inputs[1]), *bias = f32_data(g, n->inputs[2]);
    const float *mean = f32_data(g, n->inputs[3]), *var = f32_data(g, n->inputs[4]);
    double eps = kc_attr_float(n, "epsilon", 1e-5f);
    a->channels = channels;
    a->scale = kc_alloc(g, sizeof(double) * (size_t)channels);
    a->shift = kc_alloc(g, sizeof(double) * (size_t)channels);
    for (int64_t c = 0; c < channels; c++) {
        a->scale[c] = scale[c] / sqrt((double)var[c] + eps);
        a->shift[c] = bias[c] - mean[c] * a->scale[c];
    }
    return 1;
}

static int fold_batchnorm(kc_graph *g, int bi, kc_diag *d, kc_stats *st) {
    const kc_node *bn = &g->nodes[bi];
    if (!bn_inference_form(g, bn)) {
        kc_error_node(d, g, bi,
                      "only inference BatchNormalization is supported "
                      "(training_mode 0 or is_test 1, statistics outputs unused)");
        return 1;
    }
    int x = bn->inputs[0];
    const kc_value *xv = &g->values[x];
    int p = foldable_producer(g, x);
    int64_t channels = xv->rank >= 2 ? xv->dims[1] : -1;
    affine a;
    if (p < 0 || channels <= 0 || xv->dtype != KC_DTYPE_FLOAT || !private_intermediate(g, x) ||
        !bn_affine(g, bn, channels, &a)) {
        st->batchnorms_standalone++;
        return 0;
    }
    if (conv_foldable(g, p, channels)) {
        fold_into_conv(g, p, &a);
    } else if (gemm_foldable(g, p, channels)) {
        fold_into_gemm(g, p, &a);
    } else if (matmul_foldable(g, p, channels)) {
        matmul_to_gemm(g, p);
        fold_into_gemm(g, p, &a);
    } else {
        st->batchnorms_standalone++;
        return 0;
    }
    kc_absorb_node(g, p, bi, "BatchNormalization");
    st->batchnorms_folded++;
    return 0;
}

/* ---- per-channel constant Mul / Add after a Conv ---- */

/* Whether constant k broadcasts against x [N][C][...] as one number per channel (C or 1 along
 * axis 1, 1 elsewhere, rank not above x's) without growing the result. */
static int per_channel_const(const kc_graph *g, int k, const kc_value *x) {
    int64_t numel = f32_const_numel(g, k);
    if (numel < 0) return 0;
    const kc_value *kv = &g->values[k];
    if (kv->rank > x->rank) return 0;
    for (int i = 0; i < kv->rank; i++) {
        int axis = i + x->rank - kv->rank;
        if (kv->dims[i] != 1 && !(axis == 1 && kv->dims[i] == x->dims[1])) return 0;
    }
    return 1;
}

static int fold_affine(kc_graph *g, int ni, kc_stats *st) {
    const kc_node *n = &g->nodes[ni];
    if (n->n_inputs != 2 || n->n_outputs != 1) return 0;
    for (int side = 0; side < 2; side++) {
        int x = n->inputs[side], k = n->inputs[1 - side];
        if (x < 0 || k < 0) return 0;
        const kc_value *xv = &g->values[x];
        int p = foldable_producer(g, x);
        if (p < 0 || xv->dtype != KC_DTYPE_FLOAT || xv->rank < 2) continue;
        int64_t channels = xv->dims[1];
        if (!conv_foldable(g, p, channels) || !private_intermediate(g, x) ||
            !per_channel_const(g, k, xv))
            continue;
        const kc_value *yv = &g->values[n->outputs[0]];
        if (yv->rank != xv->rank || memcmp(yv->dims, xv->dims, sizeof(int64_t) * (size_t)xv->rank))
            continue;
        int64_t numel = f32_const_numel(g, k);
        const float *kd = f32_data(g, k);
        double *per = kc_alloc(g, sizeof(double) * (size_t)channels);
        for (int64_t c = 0; c < channels; c++)
            per[c] = kd[numel == 1 ? 0 : c];
        affine a = {channels, NULL, NULL};
        if (n->op == KC_OP_Mul)
            a.scale = per;
        else
            a.shift = per;
        fold_into_conv(g, p, &a);
        kc_absorb_node(g, p, ni, n->op == KC_OP_Mul ? "Mul" : "Add");
        st->affines_folded++;
        return 0;
    }
    return 0;
}

int kc_pass_fold_bn(kc_graph *g, kc_diag *d, kc_stats *st) {
    int errors = 0;
    /* Folding rewires the producer to the folded node's output, so a chain Conv -> BN -> Mul ->
     * Add collapses in one forward sweep. */
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        switch (g->nodes[i].op) {
        case KC_OP_BatchNormalization:
            errors += fold_batchnorm(g, i, d, st);
            break;
        case KC_OP_Mul:
        case KC_OP_Add:
            errors += fold_affine(g, i, st);
            break;
        default:
            break;
        }
    }
    return errors;
}
