/* f32_pointwise_gap and f32_pointwise_lanes written once over vec_math.h's width-neutral
 * vectors: a block's 32 output channels in the lanes of GAP_NV vectors and GAP_PX pixels at a
 * time, so that per input channel the block's weights are GAP_NV loads (its packed row) and each
 * pixel one broadcast of x. pointwise_gap adds the activated sums of a pixel group straight into
 * the block's totals (the conv's output is never stored); pointwise_lanes turns them around
 * into the output's channel rows at the store, with the bias, residual and activation.
 * pointwise_gap_avx512.c and pointwise_gap_avx2.c define KANN_VEC_BITS, GAP_ENTRY and
 * LANES_ENTRY (the entry points' names) and include this file. Other summation order than the
 * reference (kernels/ref/pointwise_gap.c): the pixels in groups, the groups' totals added;
 * pointwise_lanes sums as its reference does (kernels/ref/pointwise_lanes.c), one FMA chain per
 * output over k in order. */
#if !defined(GAP_ENTRY) || !defined(LANES_ENTRY)
#error "define KANN_VEC_BITS, GAP_ENTRY and LANES_ENTRY first"
#endif

#include "kann_x86.h"
#include "prefetch_share.h"
#include "ref/act.h"
#include "vec_math.h"
#include "simd_act.h"

/* Vectors of a block, and pixels per group at most: 24 accumulators of 16 lanes (12 pixels), 12
 * of 8 (3 pixels; AVX2's 16 registers hold them with the block's four weight vectors). A block
 * of at most half its channels (the last of 1000: 8) runs half the vectors on twice the pixels. */
#define GAP_NV (KANN_GAP_BLOCK / KANN_VL)
#define GAP_PX (KANN_VEC_BITS == 512 ? 12 : 3)
#define GAP_ACC (GAP_NV * GAP_PX)
/* Input channels ahead of the step that a pixel group's lines of x are prefetched from. The
 * group reads one or two lines per channel, a row of x (hw floats) apart: where x comes from the
 * other core's cache (a conv split along output channels reads every channel, half of them
 * written by the other stream) the hardware's stride prefetch did not keep ahead, and
 * regnet_y_800mf's 320 -> 320 convs on 14x14 took 169 us a stream on two threads against 129
 * with x local; prefetched, 132-139 (the model 7.42 -> 6.97 ms at the minima). */
#define GAP_X_AHEAD 16

/* What a block's pixel groups share. */
typedef struct gap_block {
    const float *w;  /* the block's packed weights, [c_in][32] */
    /* The next block's weights, prefetched while this block runs: inside a network they come
     * from L3 or memory, and the hardware's prefetcher, starting again at each 4 KiB page, left
     * the loop waiting on them (squeezenet1_1's head 0.705 -> 0.655 ms, mobilenet_v2's 0.22 ->
     * 0.165). After the tile's last block, a block's worth of what follows its weights: the
     * other stream's blocks, or the next record's weights (the memory plan lays the constants
     * out in the order the records first use them; regnet_x_400mf's 7x7 stage, one 400 -> 400
     * conv after another: the model 0.97-0.99 of its time). Each pixel group takes its share of the
     * next block's lines (prefetch_share.h): the first group prefetching all of them, two lines
     * a step, ran into the core's few outstanding misses to L3 and stalled on them. On the Intel
     * core pair mobilenet_v2's 7x7 convs then ran 1.2-1.35 x as long as with their weights
     * already in L2; spread, 1.03-1.15 x (160 -> 960 0.138 -> 0.113 ms, its head 0.31 -> 0.267). */
    kann_prefetch_share pf;
    size_t c_in, hw;
    vf bias[GAP_NV], lo, hi; /* hi and lo (the clamp's with clamp): vf_act's bounds */
    /* pointwise_lanes: the bias of each channel (NULL: none), the block's first channel's row
     * of y and of the residual (NULL: none), and the block's channel count */
    const float *bias_m, *res;
    float *y;
    size_t n;
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

/* t + bias, residual and activation of pointwise_lanes: n lanes of channel row row (its pixels
 * from p0) of the block. */
static inline vf lanes_epilogue(const gap_block *b, vf t, size_t row, size_t p0, size_t n) {
    if (b->bias_m) t = vf_add(t, vf_set1(b->bias_m[row]));
    if (b->res) t = vf_add(t, vf_load_n(b->res + row * b->hw + p0, n));
    return b->clamp ? vf_min(b->hi, vf_max(b->lo, t)) : gap_act(b, t);
}

/* The np pixels' sums c ([np][nv]) of pointwise_lanes, the first at pixel p0, turned into the
 * block's channel rows of y: a call of its own, as gap_store. 16 (AVX2: 8) pixels by as many
 * channels at a time turned around in registers (AVX2 staged them through memory before: 0.20
 * -> 0.13 ms on 160 -> 960 over 7x7). */
static __attribute__((noinline)) void lanes_store(const gap_block *b, const vf *c, int np, int nv,
                                                  size_t p0) {
    for (int q0 = 0; q0 < np; q0 += KANN_VL) {
        int nq = np - q0 < KANN_VL ? np - q0 : KANN_VL;
        for (int v = 0; v < nv && (size_t)v * KANN_VL < b->n; v++) {
            vf r[KANN_VL];
            for (int q = 0; q < KANN_VL; q++)
                r[q] = q < nq ? c[(q0 + q) * nv + v] : vf_set1(0.0f);
            vf_transpose(r);
            size_t first = (size_t)v * KANN_VL, at = p0 + (size_t)q0;
            size_t rows = b->n - first < KANN_VL ? b->n - first : KANN_VL;
            for (size_t j = 0; j < rows; j++)
                vf_store_n(b->y + (first + j) * b->hw + at,
                           lanes_epilogue(b, r[j], first + j, at, (size_t)nq), (size_t)nq);
        }
    }
}

/* NP pixels of the block's first NV vectors (NP * NV <= GAP_ACC), the first at pixel p0: their
 * sums over the input channels, activated and added to total (GAP) or stored (pointwise_lanes). */
static inline __attribute__((always_inline)) void gap_pixels(const gap_block *b, const float *x,
                                                             vf total[GAP_NV], int NP, int NV,
                                                             int GAP, size_t p0) {
    vf c[GAP_ACC];
#pragma GCC unroll 24
    for (int i = 0; i < NP * NV; i++)
        c[i] = vf_set1(0.0f);
    const float *w = b->w;
    kann_prefetch_share pf = b->pf;
    size_t pf_at = 0;
    for (size_t k = 0; k < b->c_in; k++, x += b->hw, w += KANN_GAP_BLOCK) {
        kann_prefetch_step(&pf, k, &pf_at);
        _mm_prefetch((const char *)(x + GAP_X_AHEAD * b->hw), _MM_HINT_T0);
        _mm_prefetch((const char *)(x + GAP_X_AHEAD * b->hw + NP - 1), _MM_HINT_T0);
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
    /* the stores take a copy: with c's own address passed on, GCC stored every accumulator to
     * the stack at each step of some of AVX2's loops (twice the time of mobilenet_v2's 7x7
     * convs on --isa avx2) */
    vf out[GAP_ACC];
#pragma GCC unroll 24
    for (int i = 0; i < NP * NV; i++)
        out[i] = c[i];
    if (GAP)
        gap_store(b, out, NP, NV, total);
    else
        lanes_store(b, out, NP, NV, p0);
}

/* A group of np pixels (1 to GAP_PX) over the whole block, or (half) of 1 to 2 GAP_PX pixels
 * over the first half of its vectors; each count a copy of its own. */
#define GAP_CASE(N, NV) \
    case N: gap_pixels(b, x, total, N, NV, GAP, p0); break;
#if GAP_PX == 12
#define GAP_CASES_4_TO_12(NV) GAP_CASE(12, NV) GAP_CASE(11, NV) GAP_CASE(10, NV) GAP_CASE(9, NV) \
    GAP_CASE(8, NV) GAP_CASE(7, NV) GAP_CASE(6, NV) GAP_CASE(5, NV) GAP_CASE(4, NV)
#define GAP_CASES_13_TO_24(NV) GAP_CASE(24, NV) GAP_CASE(23, NV) GAP_CASE(22, NV) \
    GAP_CASE(21, NV) GAP_CASE(20, NV) GAP_CASE(19, NV) GAP_CASE(18, NV) GAP_CASE(17, NV) \
    GAP_CASE(16, NV) GAP_CASE(15, NV) GAP_CASE(14, NV) GAP_CASE(13, NV)
#define GAP_CASES_FULL GAP_CASES_4_TO_12(GAP_NV) GAP_CASE(3, GAP_NV) GAP_CASE(2, GAP_NV)
#define GAP_CASES_HALF GAP_CASES_13_TO_24(GAP_NV / 2) GAP_CASES_4_TO_12(GAP_NV / 2) \
    GAP_CASE(3, GAP_NV / 2) GAP_CASE(2, GAP_NV / 2)
#else
#define GAP_CASES_FULL GAP_CASE(3, GAP_NV) GAP_CASE(2, GAP_NV)
#define GAP_CASES_HALF GAP_CASE(6, GAP_NV / 2) GAP_CASE(5, GAP_NV / 2) GAP_CASE(4, GAP_NV / 2) \
    GAP_CASE(3, GAP_NV / 2) GAP_CASE(2, GAP_NV / 2)
#endif

static inline __attribute__((always_inline)) void gap_group(const gap_block *b, const float *x,
                                                            vf total[GAP_NV], size_t np, int half,
                                                            const int GAP, size_t p0) {
    if (half) {
        switch (np) {
            GAP_CASES_HALF
        default: gap_pixels(b, x, total, 1, GAP_NV / 2, GAP, p0); break;
        }
    } else {
        switch (np) {
            GAP_CASES_FULL
        default: gap_pixels(b, x, total, 1, GAP_NV, GAP, p0); break;
        }
    }
}

/* gap_group's copies for each kernel: with the kernel a constant of the copy, GCC keeps the
 * accumulators in registers (one copy for both stored them to the stack at every step of AVX2's
 * loops, 0.36 -> 0.63 ms on mobilenet_v2's head). */
static __attribute__((noinline)) void gap_sum_group(const gap_block *b, const float *x,
                                                    vf total[GAP_NV], size_t np, int half) {
    gap_group(b, x, total, np, half, 1, 0);
}

static __attribute__((noinline)) void lanes_group(const gap_block *b, const float *x, size_t np,
                                                  int half, size_t p0) {
    gap_group(b, x, NULL, np, half, 0, p0);
}

/* The pixels [p_begin, p_end) of a block in groups as even as the most a group holds allows:
 * a last group of one pixel ran at a quarter of the FMA rate (two chains of dependent FMAs).
 * The next block's weights, 2 c_in lines of 16 floats, are prefetched in shares: group g of G
 * the lines [g L / G, (g + 1) L / G), spread over its steps. */
static void gap_block_pixels(gap_block *b, const float *x, size_t p_begin, size_t p_end,
                             vf total[GAP_NV]) {
    int half = b->n <= KANN_GAP_BLOCK / 2;
    size_t most = half ? 2 * GAP_PX : GAP_PX, count = p_end - p_begin;
    size_t groups = (count + most - 1) / most, size = count / groups, more = count % groups;
    size_t lines = b->c_in * (KANN_GAP_BLOCK / 16);
    for (size_t g = 0, p0 = p_begin; g < groups; g++) {
        size_t np = size + (g < more);
        b->pf = kann_prefetch_share_of(b->w + KANN_GAP_BLOCK * b->c_in, lines, g, groups, b->c_in);
        if (total)
            gap_sum_group(b, x + p0, total, np, half);
        else
            lanes_group(b, x + p0, np, half, p0);
        p0 += np;
    }
}

/* What both kernels set up alike. */
static void gap_block_init(gap_block *b, uint32_t c_in, uint32_t hw, const kann_act *act) {
    b->c_in = c_in;
    b->hw = hw;
    b->act = act;
    b->vec_act = kann_act_vectorizes(act);
    b->clamp = kann_act_is_clamp(act);
    b->lo = vf_set1(kann_act_store_lo(act, b->clamp));
    b->hi = vf_set1(kann_act_hi(act));
    b->bias_m = b->res = NULL;
    b->y = NULL;
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
    gap_block_init(&b, a->c_in, a->hw, &a->act);
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
        b.n = n;
        gap_block_pixels(&b, x, 0, b.hw, total);
        for (int v = 0; v < GAP_NV; v++) {
            size_t lanes = gap_lanes(n, v);
            if (lanes) vf_store_n(y + m0 + (size_t)v * KANN_VL, vf_mul(total[v], inv), lanes);
        }
    }
}

void LANES_ENTRY(const void *args, const kann_exec *ex) {
    const kann_pointwise_lanes_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    const float *x = kann_cref(ex, a->x), *w = kann_cref(ex, a->w);
    gap_block b;
    gap_block_init(&b, a->c_in, a->hw, &a->act);
    size_t m_begin, m_end, p_begin, p_end;
    kann_pointwise_lanes_tile(a, &m_begin, &m_end, &p_begin, &p_end);
    const float *bias = a->bias.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->bias);
    const float *res = a->residual.space == KANN_SPACE_NONE ? NULL : kann_cref(ex, a->residual);
    float *y = kann_mref(ex, a->y);
    for (size_t m0 = m_begin; m0 < m_end; m0 += KANN_GAP_BLOCK) {
        b.n = m_end - m0 < KANN_GAP_BLOCK ? m_end - m0 : KANN_GAP_BLOCK;
        b.w = w + m0 * b.c_in;
        b.bias_m = bias ? bias + m0 : NULL;
        b.res = res ? res + m0 * b.hw : NULL;
        b.y = y + m0 * b.hw;
        gap_block_pixels(&b, x, p_begin, p_end, NULL);
    }
}
