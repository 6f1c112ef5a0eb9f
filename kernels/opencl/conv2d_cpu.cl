/* f32_conv2d, f32_dwconv2d and f32_conv2d_packed for CPU devices (PoCL): each work-item (local
 * size 1) computes MB output channels x VW*NV output pixels in named vector accumulators, like a
 * CPU microkernel; no local memory. Weights are read in the layout the CPU kernels read: one
 * scalar per channel and tap, broadcast into a vector multiply-add. With PACKED the weights are
 * conv2d_packed's 12-channel panels, read channel by channel like the others.
 *
 * Build macros: FAM (conv2d or conv2d_packed: the argument struct), PACKED, KH KW SH SW DH DW
 * PT PL (window), ACT, HAS_BIAS, HAS_RES, MB (1 or 8; 8 only with group 1), VW (8 or 16
 * lanes), NV (1 or 2 vectors per channel), POINTWISE (1x1, stride 1, no padding: pixels
 * flattened), WIDE (stride 1, every window inside the input: outputs numbered in the input's
 * row pitch), DWR (1, or 4 with MB = 1: output rows per block). The record's tile is channels
 * (axis 0), output rows (axis 1 of conv2d) or output pixels (axis 1 of conv2d_packed); pixels
 * outside it are computed but not stored.
 * NDRange: (bands of pixel blocks, bands of rows (1 when POINTWISE or WIDE), batch * channel
 * blocks); a work-item loops over the blocks or rows of its band (kann_band). */

#define PIX (VW * NV)
#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define CF(field) XCAT3(A_, FAM, _##field)

#if MB == 8
#define FOR_M(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define FOR_M(X) X(0)
#endif
/* DWR output rows per block on the MB = 1 row path (1 or 4) */
#ifndef DWR
#define DWR 1
#endif
#if DWR == 4
#define FOR_R(X) X(0) X(1) X(2) X(3)
#endif
/* the input rows the window of DWR output rows covers */
#define DW_SPAN ((DWR - 1) * SH + (KH - 1) * DH + 1)
#if NV == 2
#define FOR_V(X, q) X(q, 0) X(q, 1)
#define FOR_X(X) X(0) X(1)
#else
#define FOR_V(X, q) X(q, 0)
#define FOR_X(X) X(0)
#endif

/* input row values at iw_first + j * SW for lanes j < lanes, zero where outside [0, w_in) */
inline VT gather_row(global const float *row, int iw_first, int w_in, int lanes) {
    float t[VW];
    for (int j = 0; j < VW; j++) {
        int iw = iw_first + j * SW;
        float v = row[clamp(iw, 0, w_in - 1)];
        t[j] = (j < lanes && iw >= 0 && iw < w_in) ? v : 0.0f;
    }
    return VLOAD(0, t);
}

/* input row values at p[j * SW], all inside the row */
inline VT load_row(global const float *p) {
#if SW == 1
    return VLOAD(0, p);
#elif SW == 2
    VT a = VLOAD(0, p), b = VLOAD(0, p + VW);
    return (VT)(a.even, b.even);
#else
    float t[VW];
    for (int j = 0; j < VW; j++)
        t[j] = p[j * SW];
    return VLOAD(0, t);
#endif
}

/* input row values at iw_first + j * SW for lanes j < lanes, zero where outside [0, w_in):
 * one vector load and a lane mask when the loaded span lies inside [lo, hi) (the input
 * planes: a lane outside its row reads a neighbouring row, then is masked), else a gather */
inline VT load_edge(global const float *row, int iw_first, int w_in, int lanes,
                    global const float *lo, global const float *hi) {
    global const float *p = row + iw_first;
    if (p < lo || p + VW * SW > hi) return gather_row(row, iw_first, w_in, lanes);
    VI iw = LANE_IDS * SW + iw_first;
    VI keep = (iw >= 0) & (iw < w_in) & (LANE_IDS < lanes);
    return select((VT)(0.0f), load_row(p), keep);
}

/* y[lo..hi) = act(acc + (bias + residual)) */
inline void store_run(VT acc, float bias, global const float *res, global float *y, int lo, int hi,
                      float alpha, float beta) {
    if (hi <= lo) return;
    const bool whole = lo == 0 && hi == VW;
    VT add = (VT)(bias);
#if HAS_RES
    add += whole ? VLOAD(0, res) : load_part(res, lo, hi);
#endif
    VT v = kann_act_vec(acc + add, alpha, beta);
    if (whole) {
        VSTORE(v, 0, y);
    } else {
        float t[VW];
        VSTORE(v, 0, t);
        for (int j = lo; j < hi; j++)
            y[j] = t[j];
    }
}

#if WIDE
/* The lanes of a run of VW outputs at q = qv + j in the input's row pitch (q = oh * w_in + ow)
 * that are outputs of the tile's pixels [p_b, p_e), stored row by row: lane j of row oh is
 * output pixel oh * w_out + qv + j - oh * w_in. */
inline void store_wide(VT acc, float bias, global const float *res, global float *y, int qv,
                       int w_in, int w_out, int h_out, int p_b, int p_e, float alpha, float beta) {
    const int last = min(h_out - 1, (qv + VW - 1) / w_in);
    for (int oh = qv / w_in; oh <= last; oh++) {
        const int shift = oh * (w_out - w_in) + qv; /* lane j is output pixel shift + j */
        const int lo = max(oh * w_in - qv, p_b - shift);
        const int hi = min(oh * w_in + w_out - qv, p_e - shift);
        if (hi <= max(lo, 0)) continue;
        store_run(acc, bias, res + shift, y + shift, max(lo, 0), min(hi, VW), alpha, beta);
    }
}
#endif

#define DECL_ACC2(q, v) VT acc##q##_##v = (VT)(0.0f);
#define DECL_ACC(q) FOR_V(DECL_ACC2, q)
#if PACKED
/* panel layout w[(m / 12) * K * 12 + k * 12 + m % 12]; channels up to the panel end exist */
#define W_STEP 12
#define DECL_W(q)                                                                                  \
    global const float *w##q =                                                                     \
        w + (size_t)(min(m0 + q, m_pad) / 12) * wf * 12 + min(m0 + q, m_pad) % 12;
#else
#define W_STEP 1
#define DECL_W(q) global const float *w##q = w + (size_t)min(m0 + q, m_last) * wf;
#endif
#define FMA2(q, v) acc##q##_##v = fma((VT)(wv##q), xv##v, acc##q##_##v);
#define FMA(q)                                                                                     \
    {                                                                                              \
        float wv##q = w##q[tap * W_STEP];                                                          \
        FOR_V(FMA2, q)                                                                             \
    }
#define STORE2(q, v)                                                                               \
    store_run(acc##q##_##v, bias_##q, res_base + out_off(q, v), y + out_off(q, v), lo##v, hi##v,   \
              alpha, beta);
#if HAS_BIAS
#define LOAD_BIAS(q) float bias_##q = bias[min(m0 + q, m_last)];
#else
#define LOAD_BIAS(q) float bias_##q = 0.0f;
#endif
#define STORE(q)                                                                                   \
    if (q < nb) {                                                                                  \
        LOAD_BIAS(q)                                                                               \
        FOR_V(STORE2, q)                                                                           \
    }

kernel void f32_conv(KANN_KERNEL_ARGS) {
    const uint c_in = U(CF(c_in)), h_in = U(CF(h_in)), w_in = U(CF(w_in));
    const uint c_out = U(CF(c_out)), h_out = U(CF(h_out)), w_out = U(CF(w_out));
#if PACKED
    const uint group = 1;
#else
    const uint group = U(A_conv2d_group);
#endif
    const float alpha = F(CF(act_alpha)), beta = F(CF(act_beta));
    /* the tile as channels [m_b, m_e) and flat output pixels [p_b, p_e) */
    uint m_b = 0, m_e = c_out, p_b = 0, p_e = h_out * w_out;
    if (TILE_AXIS == 0) {
        m_b = TILE_BEGIN;
        m_e = TILE_END;
    } else {
#if PACKED
        p_b = TILE_BEGIN;
        p_e = TILE_END;
#else
        p_b = TILE_BEGIN * w_out;
        p_e = TILE_END * w_out;
#endif
    }
    const uint n_blocks = (m_e - m_b + MB - 1) / MB;
    const uint img = get_global_id(2) / n_blocks;
    const uint m0 = m_b + (get_global_id(2) % n_blocks) * MB;
    const uint m_last = m_e - 1, m_pad = (c_out + 11) / 12 * 12 - 1;
    const int nb = (int)min((uint)MB, m_e - m0);
    const uint cpg = c_in / group, mpg = c_out / group, g = m0 / mpg;
    const uint wf = cpg * KH * KW;
    global const float *x = IN_REF(CF(x)) + ((size_t)img * c_in + (size_t)g * cpg) * h_in * w_in;
    global const float *w = IN_REF(CF(w));
#if HAS_BIAS
    global const float *bias = IN_REF(CF(bias));
#endif
    global float *y = OUT_REF(CF(y));
#if HAS_RES
    global const float *res_base = IN_REF(CF(residual));
#else
    global const float *res_base = y;
#endif
    FOR_M(DECL_W)
    /* A work-item takes a band of pixel blocks (or rows) along axis 0 (or 1), kann_band: few
     * enough work-items that PoCL's cost per work-group stays small beside the work. */
    uint band_lo, band_hi;
#if POINTWISE
    const size_t plane = (size_t)h_out * w_out;
    kann_band((p_e - p_b + PIX - 1) / PIX, 0, &band_lo, &band_hi);
    for (uint blk = band_lo; blk < band_hi; blk++) {
        FOR_M(DECL_ACC)
        const int p0 = (int)(p_b + blk * PIX);
#define LANES(v) const int lo##v = 0, hi##v = clamp((int)p_e - p0 - (v)*VW, 0, VW);
        FOR_X(LANES)
        global const float *xp = x + p0;
        /* A block that ends past the tile (the plane's last, ragged one) still loads whole
         * vectors while they end inside x: the lanes past the plane read the next channel's
         * plane and are not stored. Only channels whose vectors would run past x's last plane
         * load lane by lane, from c_fast on (none unless the block is the last plane's). */
        const long past = (long)cpg * (long)plane - p0 - PIX;
        const uint c_fast = past >= 0 ? min(cpg, (uint)(past / (long)plane) + 1) : 0;
#define POINTWISE_LOOP(LOADX, c_begin, c_end)                                                      \
    for (uint c = c_begin; c < c_end; c++) {                                                       \
        const uint tap = c;                                                                        \
        global const float *xc = xp + c * plane;                                                   \
        FOR_X(LOADX)                                                                               \
        FOR_M(FMA)                                                                                 \
    }
#define LOADF(v) VT xv##v = VLOAD(0, xc + (v)*VW);
#define LOADP(v) VT xv##v = load_part(xc + (v)*VW, 0, hi##v);
        if (p0 + PIX <= (int)p_e) {
            POINTWISE_LOOP(LOADF, 0, cpg)
        } else {
            POINTWISE_LOOP(LOADF, 0, c_fast)
            POINTWISE_LOOP(LOADP, c_fast, cpg)
        }
#define out_off(q, v) (((size_t)img * c_out + m0 + (q)) * plane + p0 + (v)*VW)
        FOR_M(STORE)
    }
#elif WIDE
    /* Stride 1, every window inside x (an input f32_pad2d padded): outputs numbered in x's
     * row pitch, q = oh * w_in + ow, read x[q + kh * DH * w_in + kw * DW] for tap (kh, kw), so
     * a run of PIX of them is PIX contiguous inputs per tap, whatever w_out. The lanes at
     * ow >= w_out compute garbage that is not stored (w_in - w_out of every w_in). */
    const uint x_plane = h_in * w_in;
    global const float *x_end = x + (size_t)cpg * x_plane;
    const size_t plane = (size_t)h_out * w_out;
    const uint r0 = p_b / w_out, r1 = (p_e - 1) / w_out + 1;
    kann_band(((r1 - r0 - 1) * w_in + w_out + PIX - 1) / PIX, 0, &band_lo, &band_hi);
    for (uint blk = band_lo; blk < band_hi; blk++) {
        FOR_M(DECL_ACC)
        const int q0 = (int)(r0 * w_in + blk * PIX);
        const int span = PIX + (KH - 1) * DH * (int)w_in + (KW - 1) * DW;
        /* the loop over channels and taps, with one way of loading the input vectors */
#define WIDE_LOOP(LOADX, c_begin, c_end)                                                           \
    for (uint c = c_begin; c < c_end; c++) {                                                       \
        global const float *xc = x + c * x_plane + q0;                                             \
        for (int kh = 0; kh < KH; kh++) {                                                          \
            for (int kw = 0; kw < KW; kw++) {                                                      \
                const uint tap = (c * KH + kh) * KW + kw;                                          \
                global const float *xt = xc + kh * DH * (int)w_in + kw * DW;                       \
                FOR_X(LOADX)                                                                       \
                FOR_M(FMA)                                                                         \
            }                                                                                      \
        }                                                                                          \
    }
#define LOAD_WIDE(v) VT xv##v = VLOAD(0, xt + (v)*VW);
        /* The lanes past the end of a plane read the next plane (not stored); past the last
         * plane's end they load zero. Channels [0, c_fast) read nothing past it. */
#define LOAD_WIDE_END(v)                                                                           \
    VT xv##v = load_part(xt + (v)*VW, 0, clamp((int)(x_end - xt) - (v)*VW, 0, VW));
        const int past = (int)(cpg * x_plane) - q0 - span;
        const uint c_fast = past >= 0 ? min(cpg, (uint)past / x_plane + 1) : 0;
        WIDE_LOOP(LOAD_WIDE, 0, c_fast)
        WIDE_LOOP(LOAD_WIDE_END, c_fast, cpg)
#define STORE_WIDE2(q, v)                                                                          \
    store_wide(acc##q##_##v, bias_##q, res_base + out_off(q), y + out_off(q), q0 + (v)*VW,         \
               (int)w_in, (int)w_out, (int)h_out, (int)p_b, (int)p_e, alpha, beta);
#define out_off(q) (((size_t)img * c_out + m0 + (q)) * plane)
#define STORE_WIDE(q)                                                                              \
    if (q < nb) {                                                                                  \
        LOAD_BIAS(q)                                                                               \
        FOR_V(STORE_WIDE2, q)                                                                      \
    }
        FOR_M(STORE_WIDE)
    }
#elif DWR > 1
    /* One channel per work-item (MB 1: depthwise and grouped convs, whose tile is whole output
     * rows), DWR output rows of one block of PIX columns at once: input row j of the block's
     * window is loaded once per column tap and feeds every output row q that reads it, with
     * kernel row kh = (j - q * SH) / DH. A 3x3 window with stride 1 takes 6 loads for 4 rows
     * instead of 12, and the masking of the padded columns is paid once per load. The loops
     * over j and kw unroll, so that the test of which rows a load feeds is resolved at build
     * time. Rows past the tile are computed and not stored. */
    const uint x_plane = h_in * w_in;
    global const float *x_end = x + (size_t)cpg * x_plane;
    const uint r0 = p_b / w_out, r1 = (p_e - 1) / w_out + 1;
    const int ow0 = (int)(get_global_id(0) * PIX), iw0 = ow0 * SW - PL;
#define LANES(v) const int lanes##v = clamp((int)w_out - ow0 - (v)*VW, 0, VW);
    FOR_X(LANES)
    const bool full =
        ow0 + PIX <= (int)w_out && iw0 >= 0 && iw0 + PIX * SW + (KW - 1) * DW <= (int)w_in;
    global const float *wm = w + (size_t)min(m0, m_last) * wf;
    LOAD_BIAS(0)
    kann_band((r1 - r0 + DWR - 1) / DWR, 1, &band_lo, &band_hi);
    for (uint rb = band_lo; rb < band_hi; rb++) {
        FOR_R(DECL_ACC)
        const int oh0 = (int)(r0 + rb * DWR), ih0 = oh0 * SH - PT;
#define DW_FMA2(q, v) acc##q##_##v = fma((VT)(wq), xv##v, acc##q##_##v);
#define DW_FMA(q)                                                                                  \
    if (j >= (q)*SH && (j - (q)*SH) % DH == 0 && (j - (q)*SH) / DH < KH) {                         \
        const float wq = wc[(j - (q)*SH) / DH * KW + kw];                                          \
        FOR_V(DW_FMA2, q)                                                                          \
    }
#define DW_LOOP(LOADX)                                                                             \
    for (uint c = 0; c < cpg; c++) {                                                               \
        global const float *xc = x + c * x_plane, *wc = wm + c * KH * KW;                          \
        _Pragma("unroll") for (int j = 0; j < DW_SPAN; j++) {                                      \
            const int ih = ih0 + j;                                                                \
            if (ih < 0 || ih >= (int)h_in) continue;                                               \
            global const float *xr = xc + ih * w_in;                                               \
            _Pragma("unroll") for (int kw = 0; kw < KW; kw++) {                                    \
                FOR_X(LOADX)                                                                       \
                FOR_R(DW_FMA)                                                                      \
            }                                                                                      \
        }                                                                                          \
    }
#define DW_LOAD_FULL(v) VT xv##v = load_row(xr + iw0 + kw * DW + (v)*VW * SW);
#define DW_LOAD_EDGE(v)                                                                            \
    VT xv##v = load_edge(xr, iw0 + kw * DW + (v)*VW * SW, (int)w_in, lanes##v, x, x_end);
        if (full) {
            DW_LOOP(DW_LOAD_FULL)
        } else {
            DW_LOOP(DW_LOAD_EDGE)
        }
#define dw_off(q, v) ((((size_t)img * c_out + m0) * h_out + oh0 + (q)) * w_out + ow0 + (v)*VW)
#define DW_STORE2(q, v)                                                                            \
    store_run(acc##q##_##v, bias_0, res_base + dw_off(q, v), y + dw_off(q, v), 0, lanes##v, alpha, \
              beta);
#define DW_STORE(q)                                                                                \
    if (oh0 + (q) < (int)r1) {                                                                     \
        FOR_V(DW_STORE2, q)                                                                        \
    }
        FOR_R(DW_STORE)
    }
#else
    const uint x_plane = h_in * w_in;
    global const float *x_end = x + (size_t)cpg * x_plane;
    const uint r0 = p_b / w_out, r1 = (p_e - 1) / w_out + 1;
    kann_band(r1 - r0, 1, &band_lo, &band_hi);
    for (uint row = band_lo; row < band_hi; row++) {
        FOR_M(DECL_ACC)
        const int oh = (int)(r0 + row);
        const int ow0 = (int)(get_global_id(0) * PIX);
        const int ih0 = oh * SH - PT, iw0 = ow0 * SW - PL;
        /* lanes of this row's block that lie inside the tile's pixels */
        const int row_lo = (int)p_b - oh * (int)w_out - ow0,
                  row_hi = (int)p_e - oh * (int)w_out - ow0;
#define LANES(v)                                                                                   \
    const int lanes##v = clamp((int)w_out - ow0 - (v)*VW, 0, VW);                                  \
    const int lo##v = clamp(row_lo - (v)*VW, 0, lanes##v);                                         \
    const int hi##v = clamp(row_hi - (v)*VW, lo##v, lanes##v);
        FOR_X(LANES)
        const bool full =
            ow0 + PIX <= (int)w_out && iw0 >= 0 && iw0 + PIX * SW + (KW - 1) * DW <= (int)w_in;
        /* the loop over channels and taps, with one way of loading the input vectors */
#define CONV_LOOP(LOADX)                                                                           \
    for (uint c = 0; c < cpg; c++) {                                                               \
        global const float *xc = x + c * x_plane;                                                  \
        for (int kh = 0; kh < KH; kh++) {                                                          \
            const int ih = ih0 + kh * DH;                                                          \
            if (ih < 0 || ih >= (int)h_in) continue;                                               \
            global const float *xr = xc + ih * w_in;                                               \
            for (int kw = 0; kw < KW; kw++) {                                                      \
                const uint tap = (c * KH + kh) * KW + kw;                                          \
                FOR_X(LOADX)                                                                       \
                FOR_M(FMA)                                                                         \
            }                                                                                      \
        }                                                                                          \
    }
#define LOAD_FULL(v) VT xv##v = load_row(xr + iw0 + kw * DW + (v)*VW * SW);
#define LOAD_EDGE(v)                                                                               \
    VT xv##v = load_edge(xr, iw0 + kw * DW + (v)*VW * SW, (int)w_in, lanes##v, x, x_end);
        if (full) {
            CONV_LOOP(LOAD_FULL)
        } else {
            CONV_LOOP(LOAD_EDGE)
        }
#define out_off(q, v) ((((size_t)img * c_out + m0 + (q)) * h_out + oh) * w_out + ow0 + (v)*VW)
        FOR_M(STORE)
    }
#endif
}
