/* f32_conv2d_packed for CPU devices (PoCL) when the conv strides or pads inside the kernel:
 * output channels in the lanes. A work-item (local size 1) computes one 12-channel panel of
 * the packed weights (lanes 0..11 of a float16; lanes 12..15 read the next reduction step's
 * first weights and are never stored) over NP output pixels of one row: per reduction step
 * k = (c, kh, kw), one weight vector and NP multiply-adds, each with one input value as the
 * broadcast operand (a memory operand of the multiply-add on AVX-512). Stride and padding only
 * change which input value a pixel reads, so 7-wide rows and stride 2 use the lanes as fully
 * as a 1x1 conv; the pixels-in-lanes kernel of conv2d_cpu.cl used 7 of 8 lanes on 7x7 maps and
 * two loads and a shuffle per stride-2 input vector.
 *
 * A row's W_OUT pixels are NB blocks of NP (host: NP = ceil(W_OUT / NB), NB = ceil(W_OUT /
 * 16)). The first and last blocks are compiled with their column as a constant, so that the
 * test of each (pixel, kw) against the left and right padding folds at build time; the host
 * takes this kernel only where every block in between reads inside the row.
 *
 * Build macros: KH KW SH SW DH DW PT PL (window), W_IN, W_OUT, NP, NB, ACT, HAS_BIAS,
 * HAS_RES. NDRange: (NB, bands of output rows (kann_band), panels of the tile). The record's
 * tile is channels (axis 0, begin a multiple of 12) or output pixels (axis 1); a work-item
 * computes whole rows and stores only the pixels of the tile. */

#define CF(field) A_conv2d_packed_##field
#define FOR_J(X)                                                                                   \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* the input column pixel ow reads at window column kw */
#define IW(ow, kw) ((ow)*SW - PL + (kw)*DW)

/* 12 weights of step k of a panel and 4 of step k + 1 (one load) */
inline float16 panel_weights(global const float *wk) {
    return vload16(0, wk);
}

/* 12 weights of step k of a panel, zero past them: nothing after the panel's step is read
 * (the tensor's last step) */
inline float16 panel_weights_last(global const float *wk) {
    return (float16)(vload8(0, wk), vload4(0, wk + 8), (float4)(0.0f));
}

/* The conv of the panel at w_panel (channels m0 ..) over pixels ow0 .. ow0 + NP - 1 of output
 * row oh, stored where the channel is below m_end and the pixel in [p_b, p_e). check: test
 * each (pixel, kw) against the row; ow0 is a build-time constant where it is set, so the
 * tests fold. */
__attribute__((always_inline)) inline void
lanes_block(global const float *x, global const float *w_panel, float16 bias,
            global const float *res, global float *y, uint c_in, uint h_in, uint h_out, int oh,
            const int ow0, const bool check, uint m0, uint m_end, uint p_b, uint p_e, float alpha,
            float beta) {
#define DECL(j) float16 acc##j = (float16)(0.0f);
    FOR_J(DECL)
    const uint x_plane = h_in * W_IN;
    const int ih0 = oh * SH - PT;
    /* the reduction over channels [c_lo, c_hi) with one way of loading the weights */
#define FMA_J(j)                                                                                   \
    if ((j) < NP && ow0 + (j) < W_OUT &&                                                           \
        (!check || (IW(ow0 + (j), kw) >= 0 && IW(ow0 + (j), kw) < W_IN)))                          \
        acc##j = fma((float16)(xk[(j)*SW]), wv, acc##j);
#define LANES_LOOP(WLOAD, c_lo, c_hi)                                                              \
    for (uint c = c_lo; c < c_hi; c++) {                                                           \
        for (int kh = 0; kh < KH; kh++) {                                                          \
            const int ih = ih0 + kh * DH;                                                          \
            if (ih < 0 || ih >= (int)h_in) continue;                                               \
            global const float *xr = x + c * x_plane + ih * W_IN + IW(ow0, 0);                     \
            global const float *wr = w_panel + ((c * KH + kh) * KW) * 12;                          \
            _Pragma("unroll") for (int kw = 0; kw < KW; kw++) {                                    \
                const float16 wv = WLOAD(wr + kw * 12);                                            \
                global const float *xk = xr + kw * DW;                                             \
                FOR_J(FMA_J)                                                                       \
            }                                                                                      \
        }                                                                                          \
    }
    LANES_LOOP(panel_weights, 0, c_in - 1)
    LANES_LOOP(panel_weights_last, c_in - 1, c_in)
    const uint plane = h_out * W_OUT;
    const int lanes = (int)min(12u, m_end - m0);
#define STORE_J(j)                                                                                 \
    if ((j) < NP && ow0 + (j) < W_OUT) {                                                           \
        const uint p = (uint)(oh * W_OUT + ow0 + (j));                                             \
        if (p >= p_b && p < p_e) {                                                                 \
            float t[16];                                                                           \
            float16 v = acc##j + bias;                                                             \
            if (HAS_RES) {                                                                         \
                for (int l = 0; l < 16; l++)                                                       \
                    t[l] = l < lanes ? res[(m0 + l) * plane + p] : 0.0f;                           \
                v += vload16(0, t);                                                                \
            }                                                                                      \
            vstore16(kann_act_vec(v, alpha, beta), 0, t);                                          \
            for (int l = 0; l < lanes; l++)                                                        \
                y[(m0 + l) * plane + p] = t[l];                                                    \
        }                                                                                          \
    }
    FOR_J(STORE_J)
}

kernel void f32_conv_lanes(KANN_KERNEL_ARGS) {
    const uint c_in = U(CF(c_in)), h_in = U(CF(h_in));
    const uint c_out = U(CF(c_out)), h_out = U(CF(h_out));
    const float alpha = F(CF(act_alpha)), beta = F(CF(act_beta));
    uint m_b = 0, m_e = c_out, p_b = 0, p_e = h_out * W_OUT;
    KANN_TILE_RANGES(m_b, m_e, p_b, p_e);
    const uint m0 = m_b + (uint)get_global_id(2) * 12;
    const uint K = c_in * KH * KW;
    global const float *x = IN_REF(CF(x));
    global const float *w_panel = IN_REF(CF(w)) + (size_t)(m0 / 12) * K * 12;
    global float *y = OUT_REF(CF(y));
#if HAS_RES
    global const float *res = IN_REF(CF(residual));
#else
    global const float *res = y;
#endif
    float16 bias = (float16)(0.0f);
#if HAS_BIAS
    {
        global const float *b = IN_REF(CF(bias));
        float t[16];
        for (int l = 0; l < 16; l++)
            t[l] = l < 12 && m0 + l < m_e ? b[m0 + l] : 0.0f;
        bias = vload16(0, t);
    }
#endif
    const uint r0 = p_b / W_OUT, r1 = (p_e - 1) / W_OUT + 1;
    const uint blk = (uint)get_global_id(0);
    uint band_lo, band_hi;
    kann_band(r1 - r0, 1, &band_lo, &band_hi);
    for (uint row = band_lo; row < band_hi; row++) {
        const int oh = (int)(r0 + row);
        if (blk == 0)
            lanes_block(x, w_panel, bias, res, y, c_in, h_in, h_out, oh, 0, true, m0, m_e, p_b, p_e,
                        alpha, beta);
        else if (blk == NB - 1)
            lanes_block(x, w_panel, bias, res, y, c_in, h_in, h_out, oh, (NB - 1) * NP, true, m0,
                        m_e, p_b, p_e, alpha, beta);
        else
            lanes_block(x, w_panel, bias, res, y, c_in, h_in, h_out, oh, (int)blk * NP, false, m0,
                        m_e, p_b, p_e, alpha, beta);
    }
}
