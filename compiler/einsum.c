/* Einsum equation parsing (einsum.h). */
#include "einsum.h"

#include <ctype.h>
#include <string.h>

#include "shapes.h"

/* One term of the equation (between separators) as labels; the ellipsis as -1. Returns the
 * number of entries, or -1 after an error. */
static int parse_term(const kc_graph *g, int node, const char *s, size_t len, int *out, int cap,
                      kc_diag *d) {
    int n = 0, ellipsis = 0;
    for (size_t i = 0; i < len;) {
        if (isspace((unsigned char)s[i])) {
            i++;
            continue;
        }
        if (n == cap) {
            kc_error_node(d, g, node, "Einsum term '%.*s' has more than %d dims", (int)len, s,
                          KC_MAX_RANK);
            return -1;
        }
        if (len - i >= 3 && memcmp(s + i, "...", 3) == 0 && !ellipsis) {
            ellipsis = 1;
            out[n++] = -1;
            i += 3;
        } else if (isalpha((unsigned char)s[i])) {
            out[n++] = (unsigned char)s[i++];
        } else {
            kc_error_node(d, g, node, "Einsum equation: unexpected '%c' in term '%.*s'", s[i],
                          (int)len, s);
            return -1;
        }
    }
    return n;
}

/* Expands a parsed term's ellipsis to dims labels for an operand of rank r (or, for the output,
 * to all e_max of them when r < 0). Returns the rank, or -1 after an error. */
static int expand(const kc_graph *g, int node, const int *t, int n, int r, int e_max, int *labels,
                  kc_diag *d) {
    int has = 0;
    for (int i = 0; i < n; i++)
        has |= t[i] < 0;
    int e = r < 0 ? e_max : r - (n - has);
    if (r >= 0 && (e < 0 || (!has && e != 0))) {
        kc_error_node(d, g, node, "Einsum term has %d labels for an operand of rank %d", n - has,
                      r);
        return -1;
    }
    if (!has) e = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (t[i] >= 0) {
            labels[k++] = t[i];
            continue;
        }
        for (int j = 0; j < e; j++)
            labels[k++] = KC_EINSUM_ELLIPSIS + e_max - e + j;
    }
    if (k > KC_MAX_RANK) {
        kc_error_node(d, g, node, "Einsum output rank %d is over %d", k, KC_MAX_RANK);
        return -1;
    }
    return k;
}

/* A label as the equation writes it: its letter, or the ellipsis it is a dim of. */
static const char *label_name(int l, char *buf) {
    if (l >= KC_EINSUM_ELLIPSIS) return "...";
    buf[0] = (char)l;
    buf[1] = 0;
    return buf;
}

int kc_einsum_of(const kc_graph *g, int node, kc_einsum *e, kc_diag *d) {
    const kc_node *n = &g->nodes[node];
    memset(e, 0, sizeof *e);
    const char *eq = kc_attr_string(n, "equation", NULL);
    if (!eq) {
        kc_error_node(d, g, node, "Einsum needs its 'equation' attribute");
        return 1;
    }
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    int terms[KC_EINSUM_MAX_OPERANDS][KC_MAX_RANK + 1], term_n[KC_EINSUM_MAX_OPERANDS];
    int count = 0;
    for (size_t at = 0;;) {
        const char *comma = memchr(eq + at, ',', lhs_len - at);
        size_t end = comma ? (size_t)(comma - eq) : lhs_len;
        if (count == KC_EINSUM_MAX_OPERANDS) {
            kc_error_node(d, g, node, "Einsum of more than %d operands is not supported",
                          KC_EINSUM_MAX_OPERANDS);
            return 1;
        }
        term_n[count] = parse_term(g, node, eq + at, end - at, terms[count], KC_MAX_RANK + 1, d);
        if (term_n[count] < 0) return 1;
        count++;
        if (!comma) break;
        at = end + 1;
    }
    if (count != n->n_inputs) {
        kc_error_node(d, g, node, "Einsum equation has %d terms for %d inputs", count, n->n_inputs);
        return 1;
    }
    e->n_operands = count;
    int e_max = 0;
    for (int k = 0; k < count; k++) {
        const kc_value *x = kc_shape_need(g, node, k, d);
        if (!x) return 1;
        e->rank[k] = x->rank;
        int letters = 0;
        for (int i = 0; i < term_n[k]; i++)
            letters += terms[k][i] >= 0;
        if (x->rank - letters > e_max) e_max = x->rank - letters;
    }
    int uses[KC_EINSUM_LABELS] = {0};
    char buf[2];
    for (int k = 0; k < count; k++) {
        const kc_value *x = &g->values[n->inputs[k]];
        if (expand(g, node, terms[k], term_n[k], x->rank, e_max, e->labels[k], d) < 0) return 1;
        for (int i = 0; i < x->rank; i++) {
            int l = e->labels[k][i];
            for (int j = 0; j < i; j++)
                if (e->labels[k][j] == l) {
                    kc_error_node(d, g, node,
                                  "Einsum label '%s' repeated in one operand (a diagonal) is not "
                                  "supported",
                                  label_name(l, buf));
                    return 1;
                }
            int64_t s = x->dims[i];
            if (e->size[l] > 1 && s != 1 && s != e->size[l]) {
                kc_error_node(d, g, node, "Einsum label '%s' has extents %lld and %lld",
                              label_name(l, buf), (long long)e->size[l], (long long)s);
                return 1;
            }
            if (uses[l] == 0 || e->size[l] == 1) e->size[l] = s;
            uses[l]++;
        }
    }
    if (arrow) {
        int t[KC_MAX_RANK + 1];
        const char *rhs = arrow + 2;
        int tn = parse_term(g, node, rhs, strlen(rhs), t, KC_MAX_RANK + 1, d);
        if (tn < 0) return 1;
        e->out_rank = expand(g, node, t, tn, -1, e_max, e->out_labels, d);
        if (e->out_rank < 0) return 1;
        for (int i = 0; i < e->out_rank; i++) {
            int l = e->out_labels[i];
            if (!uses[l] && l < KC_EINSUM_ELLIPSIS) {
                kc_error_node(d, g, node, "Einsum output label '%c' is in no input", l);
                return 1;
            }
            for (int j = 0; j < i; j++)
                if (e->out_labels[j] == l) {
                    kc_error_node(d, g, node, "Einsum output label '%c' repeated", l);
                    return 1;
                }
        }
    } else { /* implicit: the ellipsis dims, then the labels used once, alphabetically */
        for (int j = 0; j < e_max; j++)
            e->out_labels[e->out_rank++] = KC_EINSUM_ELLIPSIS + j;
        for (int l = 0; l < KC_EINSUM_ELLIPSIS; l++)
            if (uses[l] == 1) {
                if (e->out_rank == KC_MAX_RANK) {
                    kc_error_node(d, g, node, "Einsum output rank is over %d", KC_MAX_RANK);
                    return 1;
                }
                e->out_labels[e->out_rank++] = l;
            }
    }
    return 0;
}

int kc_shape_Einsum(const kc_graph *g, int node, kc_shape *out, kc_diag *d) {
    kc_einsum e;
    if (kc_einsum_of(g, node, &e, d)) return 1;
    const kc_value *x = &g->values[g->nodes[node].inputs[0]];
    out[0].dtype = x->dtype;
    out[0].rank = e.out_rank;
    for (int i = 0; i < e.out_rank; i++)
        out[0].dims[i] = e.size[e.out_labels[i]];
    return 0;
}
