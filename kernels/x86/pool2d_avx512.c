/* pool2d for AVX-512: max and average pooling with 16 output pixels of a row per vector, each
 * tap one masked load (stride 1) or two and an even-lane permute (stride 2), or for a max over 3
 * columns at stride 2 a row of outputs from 16-column blocks of the window rows' maximum, each
 * loaded once (pool3_row); padding loaded as -inf (max) or 0 (average), the column masks and an
 * average's column counts computed once per call. Other strides, windows wider than 16 columns,
 * rows wider than 1024 and huge coordinates run the reference. */
#include <math.h>

#include <immintrin.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/window.h"
#include "pool2d_vec.h"

#define KANN_VEC_BITS 512
#include "vec_math.h"
#include "simd_act.h"

/* Lanes i in [lo, hi) of 16. */
static inline __mmask16 lanes(int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > 16) hi = 16;
    if (hi <= lo) return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

/* Window width the vector path handles (its column masks live on the stack). */
#define MAX_KW KANN_POOL_VEC_MAX_KW
/* Output row width it handles, in 16-column vectors. */
#define MAX_VECS 64

/* The window rows [lo, hi) inside [0, h_in) for a window of k rows from row ih0 (dilation 1:
 * kann_window_range without its divisions, two per output row). */
static inline kann_range rows_inside(int64_t ih0, uint32_t h_in, uint32_t k) {
    int64_t lo = ih0 < 0 ? -ih0 : 0, hi = ih0 + k > h_in ? (int64_t)h_in - ih0 : (int64_t)k;
    kann_range r = {0, 0};
    if (hi > lo) {
        r.lo = (uint32_t)lo;
        r.hi = (uint32_t)hi;
    }
    return r;
}

/* Output vectors a group of average sums takes at once (independent chains). */
#define AVG_GROUP 4

/* An average's sums for nv <= AVG_GROUP vectors of outputs from vector v0: the taps column after
 * column, each over the rows [kh.lo, kh.hi) inside x, in the reference's order (so each sum is
 * the reference's to the bit; lanes outside x load 0), the group's vectors side by side. An
 * average keeps every tap column of a vector (n_kw = k_w), those outside x with empty masks. */
static inline __attribute__((always_inline)) void
avg_sums(const kann_pool2d_args *a, const float *xp, int64_t ih0, kann_range kh, uint32_t v0,
         int nv, int64_t (*first)[MAX_KW], __mmask16 (*masks)[MAX_KW][2], int stride2,
         __m512 *acc) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const size_t row_step = (size_t)a->dil_h * a->w_in;
    __m512 s[AVG_GROUP]; /* in registers (acc is the caller's memory) */
#pragma GCC unroll 4
    for (int g = 0; g < nv; g++)
        s[g] = _mm512_setzero_ps();
    /* no window row inside x: the sums stay 0 (and row kh.lo may lie above x) */
    const float *x0 = kh.hi > kh.lo ? xp + (size_t)(ih0 + (int64_t)kh.lo * a->dil_h) * a->w_in : xp;
    for (uint32_t i = 0; i < a->k_w; i++) {
        const float *xr = x0;
        for (uint32_t t = kh.lo; t < kh.hi; t++, xr += row_step) {
#pragma GCC unroll 4
            for (int g = 0; g < nv; g++) {
                const uint32_t v = v0 + (uint32_t)g;
                const float *xc = xr + first[v][i];
                __m512 e = _mm512_maskz_loadu_ps(masks[v][i][0], xc);
                if (stride2)
                    e = _mm512_permutex2var_ps(e, even,
                                               _mm512_maskz_loadu_ps(masks[v][i][1], xc + 16));
                s[g] = _mm512_add_ps(s[g], e);
            }
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < nv; g++)
        acc[g] = s[g];
}

/* Window rows pool3_row takes at once (more: the general path). */
#define POOL3_MAX_ROWS 8

/* What pool3_row needs of the call. */
typedef struct pool3_ctx {
    const __mmask16 *blocks, *has_cols;
    uint32_t n_vecs, w_out;
    ptrdiff_t col0; /* -pad_left: block b's first column is col0 + 16 b */
    const kann_act *act;
    int vec_act;
    __m512 lo, hi;
} pool3_ctx;

/* The n rows' maximum of block b (lanes outside x: -inf; NaN inputs skipped, as in the
 * reference: each load is the first operand of its max). */
static inline __attribute__((always_inline)) __m512
pool3_block(const pool3_ctx *c, const float *const *rows, int n, uint32_t b) {
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    ptrdiff_t off = c->col0 + 16 * (ptrdiff_t)b;
    __m512 t = neg_inf;
    for (int r = 0; r < n; r++)
        t = _mm512_max_ps(_mm512_mask_loadu_ps(neg_inf, c->blocks[b], rows[r] + off), t);
    return t;
}

/* One output row of a 3-column, stride-2 max pool over the window rows rows[0..n). The 33
 * columns that 16 outputs read are three 16-column blocks of the rows' maximum, the third the
 * first block of the next 16 outputs, so each block is loaded once per row: columns 1..16 and
 * 17..32 come from the blocks by alignr, and output j takes columns 2j, 2j + 1 and 2j + 2 by
 * three permutes. squeezenet1_1's three max pools alone (one core, input in L2): 6.4, 7.7 and
 * 10.5 ns per 16 outputs, where four masked loads per vector and window row (columns 0, 16, 1,
 * 17 on) took 10.0, 10.5 and 11.8; in the network 149 -> 96, 74 -> 54 and 40 -> 35 µs. */
static inline __attribute__((always_inline)) void pool3_row(const pool3_ctx *c,
                                                            const float *const *rows, int n,
                                                            float *yr, int no_act, const int NV) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512 b0 = pool3_block(c, rows, n, 0);
    const uint32_t n_vecs = NV ? (uint32_t)NV : c->n_vecs; /* NV: a constant count, 0: any */
#pragma GCC unroll 4
    for (uint32_t v = 0; v < n_vecs; v++) {
        __m512 b1 = pool3_block(c, rows, n, 2 * v + 1), b2 = pool3_block(c, rows, n, 2 * v + 2);
        __m512i i0 = _mm512_castps_si512(b0), i1 = _mm512_castps_si512(b1);
        __m512 c1 = _mm512_castsi512_ps(_mm512_alignr_epi32(i1, i0, 1));
        __m512 c17 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b2), i1, 1));
        __m512 acc = _mm512_max_ps(_mm512_max_ps(_mm512_permutex2var_ps(b0, even, b1),
                                                 _mm512_permutex2var_ps(b0, odd, b1)),
                                   _mm512_permutex2var_ps(c1, odd, c17));
        /* outputs without a window column inside x, or rows without one, give 0 */
        acc = _mm512_maskz_mov_ps(n > 0 ? c->has_cols[v] : 0, acc);
        if (!no_act && c->vec_act) acc = vf_act(acc, c->act, c->lo, c->hi);
        uint32_t len = c->w_out - 16 * v < 16 ? c->w_out - 16 * v : 16;
        _mm512_mask_storeu_ps(yr + 16 * v, lanes(0, len), acc);
        if (!no_act && !c->vec_act)
            for (uint32_t j = 0; j < len; j++)
                yr[16 * v + j] = kann_act_apply(c->act, yr[16 * v + j]);
        b0 = b2;
    }
}

/* The window rows row i + 1 adds (rows 3 and 4 from row i's first) are prefetched while row i
 * runs: a pool's input comes mostly from L3 (squeezenet1_1's 256 x 55 x 55 map is 3 MB), and
 * the hardware prefetcher, one 12 KB plane at a time, left the loop waiting (in the network,
 * one thread: 34 -> 28 µs and 19.4 -> 16 µs; 5 or 7 rows ahead no better). */
#define POOL3_PREFETCH_ROWS 3
/* The rows [0, rows) of a plane's outputs whose three window rows all lie inside x, no
 * activation, rows of NV vectors (a constant: the blocks' masks stay in mask registers): row i's
 * window rows start at x0 + i * step. As pool3_row, without its set-up per row (the window's
 * rows inside x, their pointers, the copy's dispatch), which took about as long as the row's
 * loads, maxes and permutes on rows of one or two vectors. */
static inline __attribute__((always_inline)) void pool3_rows(const pool3_ctx *c, const float *x0,
                                                             size_t step, size_t ld, float *y,
                                                             size_t rows, const int NV) {
    for (size_t i = 0; i < rows; i++, x0 += step, y += c->w_out) {
        const float *r[3] = {x0, x0 + ld, x0 + 2 * ld};
        for (size_t b = 0; b < 2 * ld; b += 16)
            _mm_prefetch((const char *)(x0 + POOL3_PREFETCH_ROWS * ld + b), _MM_HINT_T0);
        pool3_row(c, r, 3, y, 1, NV);
    }
}

/* pool3_rows for the row width of c. */
static __attribute__((noinline)) void pool3_rows_any(const pool3_ctx *c, const float *x0,
                                                     size_t step, size_t ld, float *y, size_t rows) {
    switch (c->n_vecs) {
    case 1: pool3_rows(c, x0, step, ld, y, rows, 1); break;
    case 2: pool3_rows(c, x0, step, ld, y, rows, 2); break;
    case 3: pool3_rows(c, x0, step, ld, y, rows, 3); break;
    case 4: pool3_rows(c, x0, step, ld, y, rows, 4); break;
    default: pool3_rows(c, x0, step, ld, y, rows, 0); break;
    }
}

/* Output vector v of the row at yr, its activation applied (vec_act: in the vector). */
static inline __attribute__((always_inline)) void store_row_vector(const kann_pool2d_args *a,
                                                                   float *yr, uint32_t v,
                                                                   __m512 acc, int vec_act,
                                                                   __m512 lo, __m512 hi) {
    if (vec_act) acc = vf_act(acc, &a->act, lo, hi);
    uint32_t len = a->w_out - 16 * v < 16 ? a->w_out - 16 * v : 16;
    _mm512_mask_storeu_ps(yr + 16 * v, lanes(0, len), acc);
    if (!vec_act)
        for (uint32_t j = 0; j < len; j++)
            yr[16 * v + j] = kann_act_apply(&a->act, yr[16 * v + j]);
}

void kann_f32_pool2d_avx512(const void *args, const kann_exec *ex) {
    const kann_pool2d_args *a = args;
    if (!kann_pool2d_vector_path(a, 16 * MAX_VECS)) {
        kann_f32_pool2d_ref(args, ex);
        return;
    }
    if (a->tile.begin >= a->tile.end || a->h_out == 0 || a->w_out == 0) return;
    const float *x = kann_cref(ex, a->x);
    float *y = kann_mref(ex, a->y);
    size_t x_plane = (size_t)a->h_in * a->w_in, y_plane = (size_t)a->h_out * a->w_out;
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    const kann_act *act = &a->act;
    int vec_act = kann_act_vectorizes(act);
    __m512 lo = _mm512_set1_ps(kann_act_lo(act)), hi = _mm512_set1_ps(kann_act_hi(act));
    int64_t w_in = a->w_in;
    int stride2 = a->stride_w == 2;
    /* per 16-column vector of a row: which outputs have a window column inside x (the others
     * give 0, as in the reference) and the taps' column masks, the same for every row and
     * plane */
    uint32_t n_vecs = (a->w_out + 15) / 16;
    __mmask16 has_cols[MAX_VECS], masks[MAX_VECS][MAX_KW][2];
    int64_t first[MAX_VECS][MAX_KW];
    uint32_t n_kw[MAX_VECS];
    /* an average's divisor: the rows counted times cols_counted, per output column */
    int avg = a->kind == KANN_POOL_AVG, count_pad = avg && a->count_include_pad;
    __m512 cols_counted[MAX_VECS];
    for (uint32_t v = 0; v < n_vecs; v++) {
        int64_t len = a->w_out - 16 * v < 16 ? a->w_out - 16 * v : 16;
        int64_t iw_base = (int64_t)v * 16 * a->stride_w - a->pad_left;
        has_cols[v] = 0;
        float cols[16] = {0};
        for (int64_t j = 0; j < len; j++) {
            kann_range r = kann_window_range(iw_base + j * a->stride_w, a->dil_w, 0, w_in, a->k_w);
            if (r.hi > r.lo) has_cols[v] |= (__mmask16)(1u << j);
            cols[j] = (float)kann_pool_taps_counted(iw_base + j * a->stride_w, a->dil_w, a->k_w,
                                                    a->w_in, a->pad_left, a->pad_right, count_pad);
        }
        cols_counted[v] = _mm512_loadu_ps(cols);
        n_kw[v] = 0;
        for (uint32_t kw = 0; kw < a->k_w; kw++) {
            int64_t iw0 = iw_base + (int64_t)kw * a->dil_w;
            __mmask16 m0, m1 = 0;
            if (!stride2) {
                m0 = lanes(-iw0, w_in - iw0) & lanes(0, len);
            } else {
                int64_t end = 2 * len - 1;
                m0 = lanes(-iw0, w_in - iw0) & lanes(0, end);
                m1 = lanes(-iw0 - 16, w_in - iw0 - 16) & lanes(0, end - 16);
            }
            if (!m0 && !m1 && !avg) continue;
            masks[v][n_kw[v]][0] = m0;
            masks[v][n_kw[v]][1] = m1;
            first[v][n_kw[v]++] = iw0;
        }
    }
    /* 3 columns, stride 2, dilation 1 (resnet18's and squeezenet1_1's max pools): a row of
     * outputs at a time (pool3_row); blocks[b]: the lanes of columns 16 b - pad_left + [0, 16)
     * inside x */
    int shared3 = !avg && stride2 && a->k_w == 3 && a->dil_w == 1;
    __mmask16 blocks[2 * MAX_VECS + 1];
    for (uint32_t b = 0; shared3 && b <= 2 * n_vecs; b++) {
        int64_t c = (int64_t)b * 16 - a->pad_left;
        blocks[b] = lanes(-c, w_in - c);
    }
    pool3_ctx p3 = {.blocks = blocks,
                    .has_cols = has_cols,
                    .n_vecs = n_vecs,
                    .w_out = a->w_out,
                    .col0 = -(ptrdiff_t)a->pad_left,
                    .act = act,
                    .vec_act = vec_act,
                    .lo = lo,
                    .hi = hi};
    int no_act = act->kind == KANN_ACT_NONE;
    /* the output rows [in_lo, in_hi) whose three window rows all lie inside x: pool3_rows */
    uint32_t in_lo = 0, in_hi = 0;
    if (shared3 && no_act && a->k_h == 3 && a->dil_h == 1 && a->h_in >= 3) {
        /* 64 bits: the padding may come near 2^32 */
        uint64_t row0 = ((uint64_t)a->pad_top + a->stride_h - 1) / a->stride_h;
        uint64_t end = ((uint64_t)a->h_in - 3 + a->pad_top) / a->stride_h + 1;
        if (end > a->h_out) end = a->h_out;
        if (row0 < end) in_lo = (uint32_t)row0, in_hi = (uint32_t)end;
    }
    for (size_t p = a->tile.begin; p < a->tile.end; p++) {
        const float *xp = x + p * x_plane;
        for (uint32_t oh = 0; oh < a->h_out; oh++) {
            if (oh == in_lo && in_hi > in_lo) {
                pool3_rows_any(&p3, xp + ((size_t)oh * a->stride_h - a->pad_top) * a->w_in,
                               (size_t)a->stride_h * a->w_in, a->w_in,
                               y + p * y_plane + (size_t)oh * a->w_out, in_hi - in_lo);
                oh = in_hi - 1;
                continue;
            }
            int64_t ih0 = (int64_t)oh * a->stride_h - a->pad_top;
            kann_range kh = a->dil_h == 1 ? rows_inside(ih0, a->h_in, a->k_h)
                                          : kann_window_range(ih0, a->dil_h, 0, a->h_in, a->k_h);
            float *yr = y + p * y_plane + (size_t)oh * a->w_out;
            if (avg) {
                __m512 rows_counted = _mm512_set1_ps((float)kann_pool_taps_counted(
                    ih0, a->dil_h, a->k_h, a->h_in, a->pad_top, a->pad_bottom, count_pad));
                for (uint32_t v0 = 0; v0 < n_vecs; v0 += AVG_GROUP) {
                    int nv = n_vecs - v0 < AVG_GROUP ? (int)(n_vecs - v0) : AVG_GROUP;
                    __m512 sum[AVG_GROUP];
                    if (nv == 4) /* constant counts: the sums stay in registers */
                        avg_sums(a, xp, ih0, kh, v0, 4, first, masks, stride2, sum);
                    else if (nv == 3)
                        avg_sums(a, xp, ih0, kh, v0, 3, first, masks, stride2, sum);
                    else if (nv == 2)
                        avg_sums(a, xp, ih0, kh, v0, 2, first, masks, stride2, sum);
                    else
                        avg_sums(a, xp, ih0, kh, v0, 1, first, masks, stride2, sum);
                    for (int g = 0; g < nv; g++) {
                        /* a window that counts nothing gives 0, as in the reference */
                        __m512 n = _mm512_mul_ps(rows_counted, cols_counted[v0 + (uint32_t)g]);
                        __m512 acc = _mm512_maskz_div_ps(
                            _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_NEQ_UQ), sum[g], n);
                        store_row_vector(a, yr, v0 + (uint32_t)g, acc, vec_act, lo, hi);
                    }
                }
                continue;
            }
            if (shared3 && kh.hi - kh.lo <= POOL3_MAX_ROWS) {
                const float *rows[POOL3_MAX_ROWS];
                int n = (int)(kh.hi - kh.lo);
                for (int t = 0; t < n; t++)
                    rows[t] =
                        xp + (size_t)(ih0 + (int64_t)(kh.lo + (uint32_t)t) * a->dil_h) * a->w_in;
                if (n == 3 && no_act)
                    pool3_row(&p3, rows, 3, yr, 1, 0);
                else if (n == 3)
                    pool3_row(&p3, rows, 3, yr, 0, 0);
                else
                    pool3_row(&p3, rows, n, yr, 0, 0);
                continue;
            }
            for (uint32_t v = 0; v < n_vecs; v++) {
                /* one running max per other tap column: independent chains */
                __m512 acc = neg_inf, acc1 = neg_inf;
                /* no tap column inside x: no row to visit (the outputs are 0) */
                for (uint32_t t = n_kw[v] ? kh.lo : kh.hi; t < kh.hi; t++) {
                    const float *xr = xp + (size_t)(ih0 + (int64_t)t * a->dil_h) * a->w_in;
                    for (uint32_t i = 0; i < n_kw[v]; i++) {
                        const float *xc = xr + first[v][i];
                        __m512 e = _mm512_mask_loadu_ps(neg_inf, masks[v][i][0], xc);
                        if (stride2)
                            e = _mm512_permutex2var_ps(
                                e, even, _mm512_mask_loadu_ps(neg_inf, masks[v][i][1], xc + 16));
                        /* NaN inputs are skipped, as in the reference */
                        if (i & 1)
                            acc1 = _mm512_max_ps(e, acc1);
                        else
                            acc = _mm512_max_ps(e, acc);
                    }
                }
                acc =
                    _mm512_maskz_mov_ps(kh.hi > kh.lo ? has_cols[v] : 0, _mm512_max_ps(acc1, acc));
                store_row_vector(a, yr, v, acc, vec_act, lo, hi);
            }
        }
    }
}
