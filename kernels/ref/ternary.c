/* ternary reference kernel (Where, and Clip with bounds computed at run time, broadcasting
 * through strides) and its validator. */
#include "kann_kernels.h"
#include "kann_msg.h"
#include "ref/act.h"
#include "ref/nd.h"
#include "ref/typed.h"

static void where_row(const uint8_t *cond, size_t cs, const uint8_t *b, size_t bs, const uint8_t *c,
                      size_t ss, uint8_t *y, size_t n, uint32_t es) {
    for (size_t i = 0; i < n; i++) {
        const uint8_t *src = cond[i * cs] ? b + i * bs * es : c + i * ss * es;
        kann_copy_elem(y + i * es, src, es);
    }
}

static void clip_row(uint32_t dtype, const uint8_t *x, size_t xs, const uint8_t *lo, size_t ls,
                     const uint8_t *hi, size_t hs, uint8_t *y, size_t n) {
    if (dtype == KANN_DTYPE_F32) {
        const float *xf = (const float *)(const void *)x, *lf = (const float *)(const void *)lo,
                    *hf = (const float *)(const void *)hi;
        float *yf = (float *)(void *)y;
        for (size_t i = 0; i < n; i++)
            yf[i] = kann_act_clip(xf[i * xs], lf[i * ls], hf[i * hs]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = kann_load_int(x, dtype, i * xs), l = kann_load_int(lo, dtype, i * ls),
                h = kann_load_int(hi, dtype, i * hs);
        v = v < l ? l : v;
        kann_store_int(y, dtype, i, v > h ? h : v);
    }
}

void kann_ternary_ref(const void *args, const kann_exec *ex) {
    const kann_ternary_args *p = args;
    size_t begin = p->tile.begin, end = p->tile.end;
    if (begin >= end) return;
    uint32_t es = kann_typed_size(p->dtype);
    size_t a_es = p->op == KANN_TERNARY_WHERE ? 1 : es;
    const uint8_t *a = kann_cbytes(ex, p->a), *b = kann_cbytes(ex, p->b),
                  *c = kann_cbytes(ex, p->c);
    uint8_t *y = kann_mbytes(ex, p->y);
    const uint32_t *strides[3] = {p->a_strides, p->b_strides, p->c_strides};
    kann_nd nd;
    kann_nd_init(&nd, p->rank, p->dims, strides, 3);
    kann_nd_seek(&nd, begin);
    size_t as = nd.strides[0][nd.rank - 1], bs = nd.strides[1][nd.rank - 1],
           cs = nd.strides[2][nd.rank - 1];
    for (size_t pos = begin;;) {
        size_t n = kann_nd_row_left(&nd);
        if (n > end - pos) n = end - pos;
        const uint8_t *ar = a + nd.offsets[0] * a_es, *br = b + nd.offsets[1] * es,
                      *cr = c + nd.offsets[2] * es;
        if (p->op == KANN_TERNARY_WHERE)
            where_row(ar, as, br, bs, cr, cs, y + pos * es, n, es);
        else
            clip_row(p->dtype, ar, as, br, bs, cr, cs, y + pos * es, n);
        pos += n;
        if (pos == end) break;
        kann_nd_next_row(&nd);
    }
}

kann_status kann_ternary_validate(const void *args, const kann_bounds *b, kann_error *err) {
    const kann_ternary_args *a = args;
    kann_status s;
    int ok = kann_typed_size(a->dtype) != 0 &&
             (a->op == KANN_TERNARY_WHERE ||
              (a->op == KANN_TERNARY_CLIP && a->dtype != KANN_DTYPE_BOOL));
    if (!ok) {
        kann_msg_set(err, KANN_E_CORRUPT, "ternary: op ");
        kann_msg_append_u64(err, a->op);
        kann_msg_append(err, " on dtype ");
        kann_msg_append_u64(err, a->dtype);
        kann_msg_append(err, " is not supported");
        return KANN_E_CORRUPT;
    }
    uint32_t count;
    if ((s = kann_check_typed_space("ternary", a->rank, a->dims, &count, err)) != KANN_OK) return s;
    uint32_t a_dtype = a->op == KANN_TERNARY_WHERE ? KANN_DTYPE_BOOL : a->dtype;
    if ((s = kann_check_tile(&a->tile, 1, &count, err)) != KANN_OK ||
        (s = kann_check_typed_strided(b, a->a, a_dtype, a->rank, a->dims, a->a_strides, "ternary a",
                                      err)) != KANN_OK ||
        (s = kann_check_typed_strided(b, a->b, a->dtype, a->rank, a->dims, a->b_strides,
                                      "ternary b", err)) != KANN_OK ||
        (s = kann_check_typed_strided(b, a->c, a->dtype, a->rank, a->dims, a->c_strides,
                                      "ternary c", err)) != KANN_OK ||
        (s = kann_check_typed_dense(b, a->y, a->dtype, count, 1, "ternary y", err)) != KANN_OK)
        return s;
    return KANN_OK;
}
