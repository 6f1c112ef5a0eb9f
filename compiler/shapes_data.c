/* Shape functions of the data-movement and spatial ops (Split, Expand, Tile, Pad, DepthToSpace,
 * SpaceToDepth, Trilu, Range, Size, GatherElements, GlobalMaxPool, ConvTranspose, Resize,
 * Upsample), and the geometry their lowering shares (shapes_data.h). */
#include <math.h>
#include <string.h>

#include "shapes.h"
#include "shapes_data.h"

static const char *dims_str(char *buf, size_t size, int rank, const int64_t *dims) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (at < size) snprintf(buf + at, size - at, "]");
    return buf;
}

int kc_data_ints(const kc_graph *g, int node, const char *attr, int idx, int since, int64_t *out,
                 int max, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    if (kc_node_opset(g, node) < since || idx < 0) {
        const kc_attr *a = kc_attr_find(n, attr);
        if (!a) return -1;
        int c = kc_attr_ints(n, attr, out, max);
        if (c < 0 || c > max) {
            kc_error_node(d, g, node, "attribute '%s' must be a list of at most %d ints", attr,
                          max);
            return -2;
        }
        return c;
    }
    const kc_value *v = kc_shape_input(g, node, idx);
    if (!v) return -1;
    if (!(v->flags & KC_VALUE_CONST)) {
        kc_error_node(d, g, node,
                      "input '%s' (%s) is computed at run time, but the output shape depends on "
                      "it: it must be a constant (initializer or folded)",
                      v->name, attr);
        return -2;
    }
    int c = kc_const_ints(g, n->inputs[idx], out, max);
    if (c == -1) {
        kc_error_node(d, g, node, "input '%s' (%s) must be int64 or int32, not %s", v->name, attr,
                      kc_dtype_name(v->dtype));
        return -2;
    }
    if (c == -2) {
        kc_error_node(d, g, node, "input '%s' (%s) has more than %d values", v->name, attr, max);
        return -2;
    }
    return c;
}

/* ---- Split ---- */

int kc_split_of(const kc_graph *g, int node, int64_t *axis, int64_t *sizes, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (kc_normalize_axis(kc_attr_int(n, "axis", 0), x->rank, axis)) {
        kc_error_node(d, g, node, "axis %lld is out of range for rank %d",
                      (long long)kc_attr_int(n, "axis", 0), x->rank);
        return 1;
    }
    int64_t dim = x->dims[*axis], split[KC_SHAPE_MAX_OUTPUTS + 1];
    int k = n->n_outputs;
    if (k < 1 || k > KC_SHAPE_MAX_OUTPUTS) {
        kc_error_node(d, g, node, "%d outputs; 1 to %d are supported", k, KC_SHAPE_MAX_OUTPUTS);
        return 1;
    }
    int c = kc_data_ints(g, node, "split", 1, 13, split, KC_SHAPE_MAX_OUTPUTS + 1, d);
    if (c == -2) return 1;
    if (c >= 0) {
        int64_t total = 0;
        if (c != k) {
            kc_error_node(d, g, node, "split has %d values for %d outputs", c, k);
            return 1;
        }
        for (int i = 0; i < k; i++) {
            if (split[i] < 0) {
                kc_error_node(d, g, node, "negative split size %lld", (long long)split[i]);
                return 1;
            }
            sizes[i] = split[i];
            total += split[i];
        }
        if (total != dim) {
            kc_error_node(d, g, node, "split sizes add up to %lld, not the axis size %lld",
                          (long long)total, (long long)dim);
            return 1;
        }
        return 0;
    }
    int64_t num = kc_attr_int(n, "num_outputs", k);
    if (num != k) {
        kc_error_node(d, g, node, "num_outputs %lld but %d outputs", (long long)num, k);
        return 1;
    }
    /* Equal parts; from opset 18 (num_outputs) the last part may be smaller. */
    if (kc_attr_find(n, "num_outputs")) {
        int64_t part = (dim + k - 1) / k;
        for (int i = 0; i < k; i++) {
            int64_t left = dim - part * i;
            sizes[i] = left < 0 ? 0 : left < part ? left : part;
        }
        if (part * (k - 1) >= dim && dim > 0) {
            kc_error_node(d, g, node, "axis size %lld cannot be split into %d non-empty parts",
                          (long long)dim, k);
            return 1;
        }
        return 0;
    }
    if (dim % k) {
        kc_error_node(d, g, node, "axis size %lld does not split into %d equal parts",
                      (long long)dim, k);
        return 1;
    }
    for (int i = 0; i < k; i++)
        sizes[i] = dim / k;
    return 0;
}

int kc_shape_Split(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    int64_t axis, sizes[KC_SHAPE_MAX_OUTPUTS];
    if (kc_split_of(g, node, &axis, sizes, d)) return 1;
    const kc_value *x = kc_shape_input(g, node, 0);
    for (int i = 0; i < g->nodes[node].n_outputs; i++) {
        kc_shape_like(&out[i], x);
        out[i].dims[axis] = sizes[i];
    }
    return 0;
}

/* ---- Expand, Tile ---- */

int kc_shape_Expand(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x || !kc_shape_need(g, node, 1, d)) return 1;
    int64_t shape[KC_MAX_RANK];
    int r = kc_data_ints(g, node, "shape", 1, 0, shape, KC_MAX_RANK, d);
    if (r < 0) return 1;
    if (kc_broadcast_shape(x->rank, x->dims, r, shape, &out[0].rank, out[0].dims)) {
        char b1[128], b2[128];
        kc_error_node(d, g, node, "input %s does not broadcast to shape %s",
                      dims_str(b1, sizeof b1, x->rank, x->dims), dims_str(b2, sizeof b2, r, shape));
        return 1;
    }
    out[0].dtype = x->dtype;
    return 0;
}

int kc_shape_Tile(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x || !kc_shape_need(g, node, 1, d)) return 1;
    int64_t reps[KC_MAX_RANK];
    int r = kc_data_ints(g, node, "repeats", 1, 0, reps, KC_MAX_RANK, d);
    if (r < 0) return 1;
    if (r != x->rank) {
        kc_error_node(d, g, node, "repeats has %d values for rank %d", r, x->rank);
        return 1;
    }
    kc_shape_like(&out[0], x);
    for (int i = 0; i < r; i++) {
        if (reps[i] < 0) {
            kc_error_node(d, g, node, "negative repeat %lld", (long long)reps[i]);
            return 1;
        }
        out[0].dims[i] = kc_dim_mul(out[0].dims[i], reps[i]);
    }
    return 0;
}

/* ---- Pad ---- */

int kc_pad_of(const kc_graph *g, int node, int64_t *begin, int64_t *end, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    int r = x->rank;
    int64_t pads[2 * KC_MAX_RANK], axes[KC_MAX_RANK];
    int np = kc_data_ints(g, node, "pads", 1, 11, pads, 2 * KC_MAX_RANK, d);
    if (np == -2) return 1;
    if (np == -1) {
        kc_error_node(d, g, node, "pads are required");
        return 1;
    }
    int na = kc_node_opset(g, node) >= 18 ? kc_data_ints(g, node, "axes", 3, 18, axes, r, d) : -1;
    if (na == -2) return 1;
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (np != 2 * na) {
        kc_error_node(d, g, node, "%d pads for %d axes", np, na);
        return 1;
    }
    for (int i = 0; i < r; i++)
        begin[i] = end[i] = 0;
    for (int i = 0; i < na; i++) {
        int64_t ax;
        if (kc_normalize_axis(axes[i], r, &ax)) {
            kc_error_node(d, g, node, "axis %lld is out of range for rank %d", (long long)axes[i],
                          r);
            return 1;
        }
        begin[ax] = pads[i];
        end[ax] = pads[na + i];
        int64_t len;
        if (__builtin_add_overflow(x->dims[ax], begin[ax], &len) ||
            __builtin_add_overflow(len, end[ax], &len) || len < 0) {
            kc_error_node(d, g, node, "pads %lld,%lld do not fit axis %lld of length %lld",
                          (long long)begin[ax], (long long)end[ax], (long long)ax,
                          (long long)x->dims[ax]);
            return 1;
        }
    }
    return 0;
}

int kc_shape_Pad(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    int64_t begin[KC_MAX_RANK], end[KC_MAX_RANK];
    if (kc_pad_of(g, node, begin, end, d)) return 1;
    const kc_value *x = kc_shape_input(g, node, 0);
    kc_shape_like(&out[0], x);
    for (int i = 0; i < x->rank; i++)
        out[0].dims[i] = out[0].dims[i] + begin[i] + end[i]; /* kc_pad_of checked the sums */
    return 0;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static int block_of(const kc_graph *g, int node, const kc_value *x, int64_t *b, kc_diag *d) {
    *b = kc_attr_int(&g->nodes[node], "blocksize", 0);
    if (x->rank != 4) {
        kc_error_node(d, g, node, "input must have rank 4 (N, C, H, W), not %d", x->rank);
        return 1;
    }
    if (*b < 1) {
        kc_error_node(d, g, node, "attribute 'blocksize' must be positive");
        return 1;
    }
    return 0;
}

int kc_shape_DepthToSpace(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    int64_t b;
    if (!x || block_of(g, node, x, &b, d)) return 1;
    if (x->dims[1] % (b * b)) {
        kc_error_node(d, g, node, "%lld channels are not a multiple of blocksize^2 = %lld",
                      (long long)x->dims[1], (long long)(b * b));
        return 1;
    }
    const char *mode = kc_attr_string(&g->nodes[node], "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD")) {
        kc_error_node(d, g, node, "unknown mode '%s' (DCR or CRD)", mode);
        return 1;
    }
    kc_shape_like(&out[0], x);
    out[0].dims[1] /= b * b;
    out[0].dims[2] = kc_dim_mul(out[0].dims[2], b);
    out[0].dims[3] = kc_dim_mul(out[0].dims[3], b);
    return 0;
}

int kc_shape_SpaceToDepth(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    int64_t b;
    if (!x || block_of(g, node, x, &b, d)) return 1;
    if (x->dims[2] % b || x->dims[3] % b) {
        kc_error_node(d, g, node, "height %lld and width %lld must be multiples of blocksize %lld",
                      (long long)x->dims[2], (long long)x->dims[3], (long long)b);
        return 1;
    }
    kc_shape_like(&out[0], x);
    out[0].dims[1] = kc_dim_mul(out[0].dims[1], kc_dim_mul(b, b));
    out[0].dims[2] /= b;
    out[0].dims[3] /= b;
    return 0;
}

/* ---- Trilu, Range, Size, GatherElements, GlobalMaxPool ---- */

int kc_shape_Trilu(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *k = kc_shape_input(g, node, 1);
    if (!x) return 1;
    if (x->rank < 2) {
        kc_error_node(d, g, node, "input must have rank 2 or more, not %d", x->rank);
        return 1;
    }
    if (k && (k->dtype != KC_DTYPE_INT64 || kc_value_numel(k) != 1)) {
        kc_error_node(d, g, node, "k '%s' must be an int64 scalar", k->name);
        return 1;
    }
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_range_count(const kc_graph *g, int node, int64_t *count, kc_diag *d) {
    double v[3];
    for (int i = 0; i < 3; i++) {
        const kc_value *s = kc_shape_need(g, node, i, d);
        if (!s) return 1;
        if (!(s->flags & KC_VALUE_CONST) || kc_value_numel(s) != 1 || !s->data) {
            kc_error_node(d, g, node,
                          "input '%s' is computed at run time, but the output length depends on "
                          "it: start, limit and delta must be constant scalars",
                          s->name);
            return 1;
        }
        switch (s->dtype) {
        case KC_DTYPE_FLOAT:
            v[i] = *(const float *)s->data;
            break;
        case KC_DTYPE_DOUBLE:
            v[i] = *(const double *)s->data;
            break;
        case KC_DTYPE_INT16:
            v[i] = *(const int16_t *)s->data;
            break;
        case KC_DTYPE_INT32:
            v[i] = *(const int32_t *)s->data;
            break;
        case KC_DTYPE_INT64:
            v[i] = (double)*(const int64_t *)s->data;
            break;
        default:
            kc_error_node(d, g, node,
                          "'%s' has type %s; Range takes float, double, int16, "
                          "int32 or int64",
                          s->name, kc_dtype_name(s->dtype));
            return 1;
        }
    }
    if (v[2] == 0) {
        kc_error_node(d, g, node, "delta is zero");
        return 1;
    }
    double c = ceil((v[1] - v[0]) / v[2]);
    if (!(c < 1e9)) {
        kc_error_node(d, g, node, "the range is too long");
        return 1;
    }
    *count = c > 0 ? (int64_t)c : 0;
    return 0;
}

int kc_shape_Range(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    int64_t count;
    if (kc_range_count(g, node, &count, d)) return 1;
    out[0].dtype = kc_shape_input(g, node, 0)->dtype;
    out[0].rank = 1;
    out[0].dims[0] = count;
    return 0;
}

int kc_shape_Size(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    if (!kc_shape_need(g, node, 0, d)) return 1;
    out[0].dtype = KC_DTYPE_INT64;
    out[0].rank = 0;
    return 0;
}

int kc_shape_GatherElements(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *idx = kc_shape_need(g, node, 1, d);
    if (!x || !idx) return 1;
    int64_t axis;
    if (kc_normalize_axis(kc_attr_int(&g->nodes[node], "axis", 0), x->rank, &axis)) {
        kc_error_node(d, g, node, "axis is out of range for rank %d", x->rank);
        return 1;
    }
    if (idx->dtype != KC_DTYPE_INT64 && idx->dtype != KC_DTYPE_INT32) {
        kc_error_node(d, g, node, "indices must be int64 or int32, not %s",
                      kc_dtype_name(idx->dtype));
        return 1;
    }
    if (idx->rank != x->rank) {
        kc_error_node(d, g, node, "indices rank %d differs from data rank %d", idx->rank, x->rank);
        return 1;
    }
    for (int i = 0; i < x->rank; i++) {
        if (i != axis && idx->dims[i] > x->dims[i]) {
            kc_error_node(d, g, node, "indices dim %d (%lld) exceeds the data's (%lld)", i,
                          (long long)idx->dims[i], (long long)x->dims[i]);
            return 1;
        }
    }
    kc_shape_like(&out[0], idx);
    out[0].dtype = x->dtype;
    return 0;
}

int kc_shape_GlobalMaxPool(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    if (x->rank < 3) {
        kc_error_node(d, g, node, "input rank %d, expected at least 3 (N, C, spatial...)", x->rank);
        return 1;
    }
    kc_shape_like(&out[0], x);
    for (int i = 2; i < x->rank; i++)
        out[0].dims[i] = 1;
    return 0;
}

/* ---- ConvTranspose ---- */

int kc_conv_transpose_of(const kc_graph *g, int node, kc_conv_transpose *ct, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *x = kc_shape_need(g, node, 0, d), *w = kc_shape_need(g, node, 1, d);
    if (!x || !w) return 1;
    memset(ct, 0, sizeof *ct);
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank) {
        kc_error_node(d, g, node, "input rank %d and weight rank %d: need equal ranks 3 to 5",
                      x->rank, w->rank);
        return 1;
    }
    int ns = x->rank - 2;
    ct->n_spatial = ns;
    ct->group = kc_attr_int(n, "group", 1);
    if (ct->group < 1 || x->dims[1] != w->dims[0] || x->dims[1] % ct->group) {
        kc_error_node(d, g, node,
                      "input has %lld channels, weight '%s' %lld, group %lld: the weight's first "
                      "dim must equal the channels, a multiple of group",
                      (long long)x->dims[1], w->name, (long long)w->dims[0], (long long)ct->group);
        return 1;
    }
    ct->c_out = w->dims[1] * ct->group;
    int64_t k[3], v[2 * 3 + 2];
    int nk = kc_attr_ints(n, "kernel_shape", k, 3);
    for (int i = 0; i < ns; i++) {
        if (nk >= 0 && (nk != ns || k[i] != w->dims[2 + i])) {
            kc_error_node(d, g, node, "kernel_shape does not match the weight's spatial dims");
            return 1;
        }
        ct->kernel[i] = w->dims[2 + i];
    }
    struct {
        const char *name;
        int count;
        int64_t dflt, *dst;
    } lists[] = {{"strides", ns, 1, ct->stride},
                 {"dilations", ns, 1, ct->dilation},
                 {"output_padding", ns, 0, ct->output_padding}};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        int c = kc_attr_ints(n, lists[l].name, v, 2 * 3 + 2);
        if (c >= 0 && c != lists[l].count) {
            kc_error_node(d, g, node, "attribute '%s' has %d values for %d spatial dims",
                          lists[l].name, c, ns);
            return 1;
        }
        for (int i = 0; i < ns; i++)
            lists[l].dst[i] = c >= 0 ? v[i] : lists[l].dflt;
    }
    int64_t pads[6] = {0};
    int np = kc_attr_ints(n, "pads", pads, 6);
    if (np >= 0 && np != 2 * ns) {
        kc_error_node(d, g, node, "attribute 'pads' has %d values for %d spatial dims", np, ns);
        return 1;
    }
    int64_t oshape[KC_MAX_RANK];
    int no = kc_attr_ints(n, "output_shape", oshape, KC_MAX_RANK);
    if (no >= 0 && no != ns && no != ns + 2) {
        kc_error_node(d, g, node, "attribute 'output_shape' has %d values for %d spatial dims", no,
                      ns);
        return 1;
    }
    const char *ap = kc_attr_string(n, "auto_pad", "NOTSET");
    int same_upper = !strcmp(ap, "SAME_UPPER"), same_lower = !strcmp(ap, "SAME_LOWER");
    int valid = !strcmp(ap, "VALID");
    if (!same_upper && !same_lower && !valid && strcmp(ap, "NOTSET") && ap[0]) {
        kc_error_node(d, g, node, "unknown auto_pad '%s'", ap);
        return 1;
    }
    for (int i = 0; i < ns; i++) {
        int64_t in = x->dims[2 + i], s = ct->stride[i], dil = ct->dilation[i];
        int64_t op = ct->output_padding[i];
        if (s < 1 || dil < 1 || op < 0 || (op >= s && op >= dil)) {
            kc_error_node(d, g, node,
                          "spatial dim %d: stride %lld and dilation %lld must be positive, "
                          "output_padding %lld smaller than one of them",
                          i, (long long)s, (long long)dil, (long long)op);
            return 1;
        }
        int64_t full = s * (in - 1) + op + (ct->kernel[i] - 1) * dil + 1; /* unpadded length */
        ct->in[i] = in;
        if (no >= 0 || same_upper || same_lower) {
            /* The output length is given (or in * stride): the padding is what removes the rest,
             * the odd one at the end except for SAME_LOWER. */
            int64_t out = no >= 0 ? oshape[no - ns + i] : in * s;
            int64_t total = full - out;
            /* A longer output than the taps reach: the extra end holds the bias alone. */
            ct->pad_begin[i] = total < 0 ? 0 : same_lower ? total - total / 2 : total / 2;
            ct->pad_end[i] = total - ct->pad_begin[i];
        } else if (!valid) {
            ct->pad_begin[i] = pads[i];
            ct->pad_end[i] = pads[ns + i];
        }
        if (ct->pad_begin[i] < 0 || (ct->pad_end[i] < 0 && no < 0)) {
            kc_error_node(d, g, node, "negative pads");
            return 1;
        }
        ct->out[i] = full - ct->pad_begin[i] - ct->pad_end[i];
        if (ct->out[i] < 1) {
            kc_error_node(d, g, node, "spatial dim %d: the output would be empty", i);
            return 1;
        }
    }
    return 0;
}

int kc_shape_ConvTranspose(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_conv_transpose ct;
    if (kc_conv_transpose_of(g, node, &ct, d)) return 1;
    const kc_value *x = kc_shape_input(g, node, 0), *w = kc_shape_input(g, node, 1),
                   *b = kc_shape_input(g, node, 2);
    if (x->dtype != w->dtype) {
        kc_error_node(d, g, node, "input is %s but weight '%s' is %s", kc_dtype_name(x->dtype),
                      w->name, kc_dtype_name(w->dtype));
        return 1;
    }
    if (b && (b->rank != 1 || b->dims[0] != ct.c_out)) {
        kc_error_node(d, g, node, "bias '%s' must be [%lld]", b->name, (long long)ct.c_out);
        return 1;
    }
    kc_shape_like(&out[0], x);
    out[0].dims[1] = ct.c_out;
    for (int i = 0; i < ct.n_spatial; i++)
        out[0].dims[2 + i] = ct.out[i];
    return 0;
}

/* ---- Resize, Upsample ---- */

/* Reads a constant float tensor (float32 or float64) into out; -1 absent or empty, -2 error. */
static int const_floats(const kc_graph *g, int node, int idx, const char *what, double *out,
                        int max, kc_diag *d) {
    const kc_value *v = kc_shape_input(g, node, idx);
    if (!v || kc_value_numel(v) == 0) return -1;
    if (!(v->flags & KC_VALUE_CONST)) {
        kc_error_node(d, g, node,
                      "input '%s' (%s) is computed at run time, but the output shape depends on "
                      "it: it must be a constant (initializer or folded)",
                      v->name, what);
        return -2;
    }
    int64_t count = kc_value_numel(v);
    if ((v->dtype != KC_DTYPE_FLOAT && v->dtype != KC_DTYPE_DOUBLE) || count > max) {
        kc_error_node(d, g, node, "input '%s' (%s) must hold at most %d floats", v->name, what,
                      max);
        return -2;
    }
    for (int64_t i = 0; i < count; i++)
        out[i] =
            v->dtype == KC_DTYPE_FLOAT ? ((const float *)v->data)[i] : ((const double *)v->data)[i];
    return (int)count;
}

int kc_resize_of(const kc_graph *g, int node, kc_resize *rs, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    const kc_value *x = kc_shape_need(g, node, 0, d);
    if (!x) return 1;
    memset(rs, 0, sizeof *rs);
    int r = x->rank, opset = kc_node_opset(g, node);
    int upsample = n->op == KC_OP_Upsample;
    rs->rank = r;
    for (int i = 0; i < r; i++) {
        rs->scale[i] = 1;
        rs->out[i] = x->dims[i];
        rs->roi_start[i] = 0;
        rs->roi_end[i] = 1;
    }
    const char *mode = kc_attr_string(n, "mode", "nearest");
    if (!strcmp(mode, "nearest"))
        rs->mode = KC_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear") || (upsample && !strcmp(mode, "bilinear")))
        rs->mode = KC_RESIZE_LINEAR;
    else if (!strcmp(mode, "cubic") && !upsample)
        rs->mode = KC_RESIZE_CUBIC;
    else {
        kc_error_node(d, g, node, "unsupported mode '%s'", mode);
        return 1;
    }
    /* Before Resize-11 (and for Upsample) the mapping is asymmetric and nearest is 'simple'. */
    rs->legacy = upsample || opset < 11;
    const char *ctm = rs->legacy
                          ? "asymmetric"
                          : kc_attr_string(n, "coordinate_transformation_mode", "half_pixel");
    static const char *const ctms[KC_RESIZE_CTM_COUNT] = {
        "half_pixel",    "asymmetric",         "pytorch_half_pixel",  "tf_half_pixel_for_nn",
        "align_corners", "tf_crop_and_resize", "half_pixel_symmetric"};
    rs->ctm = -1;
    for (int i = 0; i < KC_RESIZE_CTM_COUNT; i++)
        if (!strcmp(ctm, ctms[i])) rs->ctm = i;
    if (rs->ctm < 0) {
        kc_error_node(d, g, node, "unsupported coordinate_transformation_mode '%s'", ctm);
        return 1;
    }
    static const char *const nms[KC_RESIZE_NEAREST_COUNT] = {"round_prefer_floor",
                                                             "round_prefer_ceil", "floor", "ceil"};
    const char *nm = kc_attr_string(n, "nearest_mode", "round_prefer_floor");
    rs->nearest_mode = -1;
    for (int i = 0; i < KC_RESIZE_NEAREST_COUNT; i++)
        if (!strcmp(nm, nms[i])) rs->nearest_mode = i;
    if (rs->nearest_mode < 0) {
        kc_error_node(d, g, node, "unsupported nearest_mode '%s'", nm);
        return 1;
    }
    rs->cubic_a = kc_attr_float(n, "cubic_coeff_a", -0.75f);
    rs->exclude_outside = (int)kc_attr_int(n, "exclude_outside", 0);
    rs->extrapolation = kc_attr_float(n, "extrapolation_value", 0.0f);
    if (kc_attr_int(n, "antialias", 0)) {
        kc_error_node(d, g, node, "antialias is not supported");
        return 1;
    }
    if (strcmp(kc_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch")) {
        kc_error_node(d, g, node, "keep_aspect_ratio_policy other than 'stretch' is not supported");
        return 1;
    }
    if (kc_attr_find(n, "axes")) {
        kc_error_node(d, g, node, "attribute 'axes' is not supported");
        return 1;
    }
    double scales[KC_MAX_RANK], roi[2 * KC_MAX_RANK];
    int ns = -1, nz = -1, nr = -1;
    int64_t sizes[KC_MAX_RANK];
    if (upsample && opset < 9) {
        const kc_attr *a = kc_attr_find(n, "scales");
        if (!a || a->type != KC_ATTR_FLOATS || a->n > KC_MAX_RANK) {
            kc_error_node(d, g, node, "attribute 'scales' is required");
            return 1;
        }
        ns = a->n;
        for (int i = 0; i < ns; i++)
            scales[i] = a->floats[i];
    } else if (rs->legacy) {
        ns = const_floats(g, node, 1, "scales", scales, KC_MAX_RANK, d);
    } else {
        /* Only tf_crop_and_resize reads the roi. */
        if (rs->ctm == KC_RESIZE_TF_CROP_AND_RESIZE)
            nr = const_floats(g, node, 1, "roi", roi, 2 * KC_MAX_RANK, d);
        ns = const_floats(g, node, 2, "scales", scales, KC_MAX_RANK, d);
        if (ns == -1) nz = kc_data_ints(g, node, "sizes", 3, 0, sizes, KC_MAX_RANK, d);
    }
    if (ns == -2 || nz == -2 || nr == -2) return 1;
    if ((ns >= 0 && ns != r) || (nz >= 0 && nz != r) || (ns < 0 && nz < 0)) {
        kc_error_node(d, g, node, "need %d scales or sizes", r);
        return 1;
    }
    if (rs->ctm == KC_RESIZE_TF_CROP_AND_RESIZE) {
        if (nr != 2 * r) {
            kc_error_node(d, g, node, "tf_crop_and_resize needs a constant roi of %d values",
                          2 * r);
            return 1;
        }
        for (int i = 0; i < r; i++) {
            rs->roi_start[i] = (float)roi[i];
            rs->roi_end[i] = (float)roi[r + i];
        }
    }
    for (int i = 0; i < r; i++) {
        if (ns >= 0) {
            if (!(scales[i] > 0)) {
                kc_error_node(d, g, node, "scale %g must be positive", scales[i]);
                return 1;
            }
            rs->scale[i] = (float)scales[i];
            rs->out[i] = (int64_t)((float)scales[i] * (float)x->dims[i]); /* as ONNX Runtime */
        } else {
            if (sizes[i] < 1 || x->dims[i] < 1) {
                kc_error_node(d, g, node, "sizes must be positive");
                return 1;
            }
            rs->out[i] = sizes[i];
            rs->scale[i] = (float)sizes[i] / (float)x->dims[i];
        }
        if (rs->out[i] < 1) {
            kc_error_node(d, g, node, "dim %d would be empty", i);
            return 1;
        }
    }
    return 0;
}

static int resize_shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_resize rs;
    if (kc_resize_of(g, node, &rs, d)) return 1;
    kc_shape_like(&out[0], kc_shape_input(g, node, 0));
    for (int i = 0; i < rs.rank; i++)
        out[0].dims[i] = rs.out[i];
    return 0;
}

int kc_shape_Resize(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return resize_shape(g, node, out, d);
}

int kc_shape_Upsample(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return resize_shape(g, node, out, d);
}

/* ---- ScatterElements, Scatter, ScatterND, GatherND ---- */

static int scatter_elements_shape(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *idx = kc_shape_need(g, node, 1, d);
    const kc_value *upd = kc_shape_need(g, node, 2, d);
    if (!x || !idx || !upd) return 1;
    int64_t axis;
    if (kc_normalize_axis(kc_attr_int(&g->nodes[node], "axis", 0), x->rank, &axis)) {
        kc_error_node(d, g, node, "axis is out of range for rank %d", x->rank);
        return 1;
    }
    int bad = idx->rank != x->rank || upd->rank != idx->rank || upd->dtype != x->dtype ||
              (idx->dtype != KC_DTYPE_INT64 && idx->dtype != KC_DTYPE_INT32);
    for (int i = 0; i < idx->rank && !bad; i++)
        bad = upd->dims[i] != idx->dims[i] || (i != axis && idx->dims[i] > x->dims[i]);
    if (bad) {
        kc_error_node(d, g, node,
                      "indices (int32/int64) and updates must have the same shape, of the data's "
                      "rank, and no larger than the data off the axis");
        return 1;
    }
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_shape_ScatterElements(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return scatter_elements_shape(g, node, out, d);
}

int kc_shape_Scatter(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    return scatter_elements_shape(g, node, out, d);
}

int kc_shape_ScatterND(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *idx = kc_shape_need(g, node, 1, d);
    const kc_value *upd = kc_shape_need(g, node, 2, d);
    if (!x || !idx || !upd) return 1;
    int64_t k = idx->rank ? idx->dims[idx->rank - 1] : 0;
    int bad = idx->rank < 1 || k < 1 || k > x->rank || upd->dtype != x->dtype ||
              (idx->dtype != KC_DTYPE_INT64 && idx->dtype != KC_DTYPE_INT32) ||
              upd->rank != idx->rank - 1 + x->rank - (int)k;
    for (int i = 0; i < upd->rank && !bad; i++)
        bad = upd->dims[i] != (i < idx->rank - 1 ? idx->dims[i] : x->dims[k + i - (idx->rank - 1)]);
    if (bad) {
        kc_error_node(d, g, node,
                      "updates must have shape indices.shape[:-1] + data.shape[k:] with k = "
                      "indices.shape[-1] in 1..rank");
        return 1;
    }
    kc_shape_like(&out[0], x);
    return 0;
}

int kc_shape_GatherND(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    const kc_value *x = kc_shape_need(g, node, 0, d), *idx = kc_shape_need(g, node, 1, d);
    if (!x || !idx) return 1;
    int64_t b = kc_attr_int(&g->nodes[node], "batch_dims", 0);
    int64_t k = idx->rank ? idx->dims[idx->rank - 1] : 0;
    int bad = b < 0 || b >= idx->rank || k < 1 || b + k > x->rank ||
              (idx->dtype != KC_DTYPE_INT64 && idx->dtype != KC_DTYPE_INT32);
    for (int i = 0; i < b && !bad; i++)
        bad = idx->dims[i] != x->dims[i];
    int r = idx->rank - 1 + x->rank - (int)(b + k);
    if (bad || r > KC_MAX_RANK) {
        kc_error_node(d, g, node,
                      "indices (int32/int64) must end in k = 1..rank - batch_dims and share the "
                      "data's batch dims");
        return 1;
    }
    out[0].dtype = x->dtype;
    out[0].rank = r;
    for (int i = 0; i < idx->rank - 1; i++)
        out[0].dims[i] = idx->dims[i];
    for (int i = (int)(b + k); i < x->rank; i++)
        out[0].dims[idx->rank - 1 + i - (b + k)] = x->dims[i];
    return 0;
}
