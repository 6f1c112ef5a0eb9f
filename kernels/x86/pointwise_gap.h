/* f32_pointwise_gap written once over vec_math.h's width-neutral vectors: a block's 32 output
 * channels in the lanes of GAP_NV vectors and GAP_PX pixels at a time, so that per input channel
 * the block's weights are GAP_NV loads (its packed row) and each pixel one broadcast of x, and
 * the activated sums of a pixel group go straight into the block's totals: the conv's output
 * is never stored. pointwise_gap_avx512.c and pointwise_gap_avx2.c define KANN_VEC_BITS and
 * GAP_ENTRY (the entry point's name) and include this file. Other summation order than the
 * reference (kernels/ref/pointwise_gap.c): the pixels in groups, the groups' totals added. */
#ifndef GAP_ENTRY
#error "define KANN_VEC_BITS and GAP_ENTRY first"
#endif

#include "kann_x86.h"
#include "ref/act.h"
#include "vec_math.h"
#include "simd_act.h"

/* Vectors of a block, and pixels per group at most: 24 accumulators of 16 lanes (12 pixels), 12
 * of 8 (3 pixels; AVX2's 16 registers hold them with the block's four weight vectors). A block
 * of at most half its channels (the last of 1000: 8) runs half the vectors on twice the pixels. */
#define GAP_NV (KANN_GAP_BLOCK / KANN_VL)
#define GAP_PX (KANN_VEC_BITS == 512 ? 12 : 3)
#define GAP_ACC (GAP_NV * GAP_PX)

/* What a block's pixel groups share. */
typedef struct gap_block {
    const float *w;  /* the block's packed weights, [c_in][32] */
    /* The next block's, prefetched by a block's first group (NULL in the others and the last
     * block): inside a network the weights come from L3 or memory, and the hardware's
     * prefetcher, starting again at each 4 KiB page, left the loop waiting on them
     * (squeezenet1_1's head 0.705 -> 0.655 ms, mobilenet_v2's 0.22 -> 0.165). */
    const float *pf;
    size_t c_in, hw;
    vf bias[GAP_NV], lo, hi; /* hi and lo (the clamp's with clamp): vf_act's bounds */
    const kann_act *act;
    int vec_act, clamp;
} gap_block;

/* t activated: in the vector, or lane by lane through the scalar form. */
static inline vf gap_act(const gap_block *b, vf t) {
    if (b->vec_act) return vf_act(t, b->act, b->lo, b->hi);
    float l[KANN_VL];
    vf_store(l, t);
    for (int i = 0; i < KANN_VL; i++)
        l[i] = kann_act_apply(b->act, l[i]);
    return vf_load(l);
}

/* The np pixels' sums c ([np][nv]) activated and added to total: a call of its own (inlined,
 * the activation's registers pushed the accumulators of the loop before it onto the stack). */
static __attribute__((noinline)) void gap_store(const gap_block *b, const vf *c, int np, int nv,
                                                vf total[GAP_NV]) {
    if (b->clamp) { /* none, relu, clip: a max and a min */
        for (int r = 0; r < np; r++)
            for (int v = 0; v < nv; v++)
                total[v] = vf_add(total[v], vf_min(b->hi, vf_max(b->lo, vf_add(c[r * nv + v],
                                                                               b->bias[v]))));
        return;
    }
    for (int r = 0; r < np; r++)
        for (int v = 0; v < nv; v++)
            total[v] = vf_add(total[v], gap_act(b, vf_add(c[r * nv + v], b->bias[v])));
}

/* NP pixels of the block's first NV vectors (NP * NV <= GAP_ACC): their sums over the input
 * channels, activated and added to total. */
static inline __attribute__((always_inline)) void gap_pixels(const gap_block *b, const float *x,
                                                             vf total[GAP_NV], int NP, int NV) {
    vf c[GAP_ACC];
#pragma GCC unroll 24
    for (int i = 0; i < NP * NV; i++)
        c[i] = vf_set1(0.0f);
    const float *w = b->w;
    const float *pf = b->pf;
    for (size_t k = 0; k < b->c_in; k++, x += b->hw, w += KANN_GAP_BLOCK) {
        if (pf) {
            _mm_prefetch((const char *)pf, _MM_HINT_T0);
            _mm_prefetch((const char *)(pf + 16), _MM_HINT_T0);
            pf += KANN_GAP_BLOCK;
        }
        vf wv[GAP_NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            wv[v] = vf_load(w + v * KANN_VL);
#pragma GCC unroll 24
        for (int r = 0; r < NP; r++) {
            vf xv = vf_set1(x[r]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                c[r * NV + v] = vf_fmadd(xv, wv[v], c[r * NV + v]);
        }
    }
    gap_store(b, c, NP, NV, total);
}

/* A group of np pixels (1 to GAP_PX) over the whole block. */
static __attribute__((noinline)) void gap_group(const gap_block *b, const float *x,
                                                vf total[GAP_NV], size_t np) {
    switch (np) {
#if GAP_PX == 12
    case 12: gap_pixels(b, x, total, 12, GAP_NV); break;
    case 11: gap_pixels(b, x, total, 11, GAP_NV); break;
    case 10: gap_pixels(b, x, total, 10, GAP_NV); break;
    case 9: gap_pixels(b, x, total, 9, GAP_NV); break;
    case 8: gap_pixels(b, x, total, 8, GAP_NV); break;
    case 7: gap_pixels(b, x, total, 7, GAP_NV); break;
    case 6: gap_pixels(b, x, total, 6, GAP_NV); break;
    case 5: gap_pixels(b, x, total, 5, GAP_NV); break;
    case 4: gap_pixels(b, x, total, 4, GAP_NV); break;
#endif
    case 3: gap_pixels(b, x, total, 3, GAP_NV); break;
    case 2: gap_pixels(b, x, total, 2, GAP_NV); break;
    default: gap_pixels(b, x, total, 1, GAP_NV); break;
    }
}

/* A group of np pixels (1 to 2 GAP_PX) over the first half of the block's vectors. */
static __attribute__((noinline)) void gap_half_group(const gap_block *b, const float *x,
                                                     vf total[GAP_NV], size_t np) {
    enum { H = GAP_NV / 2 };
    switch (np) {
#if GAP_PX == 12
    case 24: gap_pixels(b, x, total, 24, H); break;
    case 23: gap_pixels(b, x, total, 23, H); break;
    case 22: gap_pixels(b, x, total, 22, H); break;
    case 21: gap_pixels(b, x, total, 21, H); break;
    case 20: gap_pixels(b, x, total, 20, H); break;
    case 19: gap_pixels(b, x, total, 19, H); break;
    case 18: gap_pixels(b, x, total, 18, H); break;
    case 17: gap_pixels(b, x, total, 17, H); break;
    case 16: gap_pixels(b, x, total, 16, H); break;
    case 15: gap_pixels(b, x, total, 15, H); break;
    case 14: gap_pixels(b, x, total, 14, H); break;
    case 13: gap_pixels(b, x, total, 13, H); break;
    case 12: gap_pixels(b, x, total, 12, H); break;
    case 11: gap_pixels(b, x, total, 11, H); break;
    case 10: gap_pixels(b, x, total, 10, H); break;
    case 9: gap_pixels(b, x, total, 9, H); break;
    case 8: gap_pixels(b, x, total, 8, H); break;
    case 7: gap_pixels(b, x, total, 7, H); break;
#endif
    case 6: gap_pixels(b, x, total, 6, H); break;
    case 5: gap_pixels(b, x, total, 5, H); break;
    case 4: gap_pixels(b, x, total, 4, H); break;
    case 3: gap_pixels(b, x, total, 3, H); break;
    case 2: gap_pixels(b, x, total, 2, H); break;
    default: gap_pixels(b, x, total, 1, H); break;
    }
}

/* Lanes of vector v of a block holding n channels. */
static inline size_t gap_lanes(size_t n, int v) {
    size_t first = (size_t)v * KANN_VL;
    return n <= first ? 0 : n - first < KANN_VL ? n - first : KANN_VL;
}

void GAP_ENTRY(const void *args, const kann_exec *ex) {
    const kann_pointwise_gap_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    float *y = kann_mref(ex, a->y);
    gap_block b;
    b.c_in = a->c_in;
    b.hw = a->hw;
    b.act = &a->act;
    b.vec_act = kann_act_vectorizes(&a->act);
    b.clamp = kann_act_is_clamp(&a->act);
    b.lo = vf_set1(kann_act_store_lo(&a->act, b.clamp));
    b.hi = vf_set1(kann_act_hi(&a->act));
    vf inv = vf_set1(1.0f / (float)a->hw);
    for (size_t m0 = a->tile.begin; m0 < a->tile.end; m0 += KANN_GAP_BLOCK) {
        size_t n = a->tile.end - m0 < KANN_GAP_BLOCK ? a->tile.end - m0 : KANN_GAP_BLOCK;
        b.w = w + m0 * b.c_in;
        vf total[GAP_NV];
        for (int v = 0; v < GAP_NV; v++) {
            size_t lanes = gap_lanes(n, v);
            b.bias[v] = bias && lanes ? vf_load_n(bias + m0 + (size_t)v * KANN_VL, lanes)
                                      : vf_set1(0.0f);
            total[v] = vf_set1(0.0f);
        }
        /* The pixels in groups as even as the most a group holds allows: a last group of
         * one pixel ran at a quarter of the FMA rate (two chains of dependent FMAs). */
        int half = n <= KANN_GAP_BLOCK / 2;
        size_t most = half ? 2 * GAP_PX : GAP_PX;
        size_t groups = (b.hw + most - 1) / most, size = b.hw / groups, more = b.hw % groups;
        for (size_t g = 0, p0 = 0; g < groups; g++) {
            size_t np = size + (g < more);
            int next = g == 0 && m0 + KANN_GAP_BLOCK < a->tile.end;
            b.pf = next ? b.w + KANN_GAP_BLOCK * b.c_in : NULL;
            if (half)
                gap_half_group(&b, x + p0, total, np);
            else
                gap_group(&b, x + p0, total, np);
            p0 += np;
        }
        for (int v = 0; v < GAP_NV; v++) {
            size_t lanes = gap_lanes(n, v);
            if (lanes) vf_store_n(y + m0 + (size_t)v * KANN_VL, vf_mul(total[v], inv), lanes);
        }
    }
}
