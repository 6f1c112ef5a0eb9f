/* f32_pool2d (max and average, padding, stride, dilation), f32_global_avgpool,
 * f32_pointwise_gap (a 1x1 conv, its activation and a global average pool) and
 * f32_pointwise_lanes (a 1x1 conv with its bias, residual and activation, the weights packed as
 * pointwise_gap's). */

/* Window taps along one axis counted for an output whose first tap is at `first`: those inside
 * [lower, upper). */
inline uint taps_inside(int first, int dil, int k, int lower, int upper) {
    uint n = 0;
    for (int t = 0; t < k; t++) {
        int i = first + t * dil;
        n += i >= lower && i < upper;
    }
    return n;
}

/* One output (oh, ow) of plane x: the max or the mean of its window, activated. */
inline float pool_at(global const uint *args, uint at, global const float *x, int oh, int ow) {
    const int h_in = I(A_pool2d_h_in), w_in = I(A_pool2d_w_in);
    const int k_h = I(A_pool2d_k_h), k_w = I(A_pool2d_k_w);
    const int dil_h = I(A_pool2d_dil_h), dil_w = I(A_pool2d_dil_w);
    const int ih0 = oh * I(A_pool2d_stride_h) - I(A_pool2d_pad_top);
    const int iw0 = ow * I(A_pool2d_stride_w) - I(A_pool2d_pad_left);
    const bool is_max = U(A_pool2d_kind) == 0;
    float acc = is_max ? -INFINITY : 0.0f;
    for (int kh = 0; kh < k_h; kh++) {
        int ih = ih0 + kh * dil_h;
        if (ih < 0 || ih >= h_in) continue;
        for (int kw = 0; kw < k_w; kw++) {
            int iw = iw0 + kw * dil_w;
            if (iw < 0 || iw >= w_in) continue;
            float v = x[(size_t)ih * w_in + iw];
            if (is_max)
                acc = v > acc ? v : acc;
            else
                acc += v;
        }
    }
    uint n;
    if (!is_max && U(A_pool2d_count_include_pad))
        n = taps_inside(ih0, dil_h, k_h, -I(A_pool2d_pad_top), h_in + I(A_pool2d_pad_bottom)) *
            taps_inside(iw0, dil_w, k_w, -I(A_pool2d_pad_left), w_in + I(A_pool2d_pad_right));
    else
        n = taps_inside(ih0, dil_h, k_h, 0, h_in) * taps_inside(iw0, dil_w, k_w, 0, w_in);
    if (n == 0)
        acc = 0.0f; /* a window that covers nothing */
    else if (!is_max)
        acc /= (float)n;
    return kann_act(ACT_ARGS(pool2d), acc);
}

/* f32_pool2d, GPU style. NDRange: (w_out, h_out, planes of the tile). */
kernel void f32_pool2d(KANN_KERNEL_ARGS) {
    const uint w_out = U(A_pool2d_w_out), h_out = U(A_pool2d_h_out);
    uint ow = get_global_id(0), oh = get_global_id(1), p = TILE_BEGIN + get_global_id(2);
    if (ow >= w_out || oh >= h_out || p >= TILE_END) return;
    global const float *x = IN_REF(A_pool2d_x) + (size_t)p * U(A_pool2d_h_in) * U(A_pool2d_w_in);
    OUT_REF(A_pool2d_y)[((size_t)p * h_out + oh) * w_out + ow] = pool_at(args, at, x, oh, ow);
}

/* 16 values of input row p at p[j * stride], stride 1 or 2, every one inside the row: the
 * loads read nothing past the last of them. */
inline float16 pool_load16(global const float *p, int stride) {
    if (stride == 1) return vload16(0, p);
    float16 a = vload16(0, p), b = vload16(0, p + 15);
    return (float16)(a.even, b.odd);
}

/* The lanewise max of a and b where b is not NaN (NaN inputs are skipped, as in the reference
 * kernel) */
inline float16 pool_max16(float16 a, float16 b) {
    return select(a, b, b > a);
}

/* Input row values at iw = first + j * stride for lanes j < lanes, `outside` (neutral for the
 * max or the sum) where iw lies outside [0, w_in) or the lane past `lanes`. */
inline float16 pool_gather16(global const float *row, int first, int stride, int w_in, int lanes,
                             float outside) {
    float t[16];
    if (w_in <= 0) return (float16)(outside); /* an empty row: nothing to clamp into */
    for (int j = 0; j < 16; j++) {
        int iw = first + j * stride;
        float v = row[clamp(iw, 0, w_in - 1)];
        t[j] = j < lanes && iw >= 0 && iw < w_in ? v : outside;
    }
    return vload16(0, t);
}

/* pool_gather16's values with one vector load (strides 1 and 2) and a lane mask where the
 * loaded span lies inside [lo, hi) (the tile's planes: a lane outside its row reads a
 * neighbouring row, then is masked), else by pool_gather16. A row's first block with left
 * padding (resnet18's max pool: a quarter of its blocks) then costs a vector load per tap,
 * not sixteen scalar ones. */
inline float16 pool_edge16(global const float *row, int first, int stride, int w_in, int lanes,
                           float outside, global const float *lo, global const float *hi) {
    global const float *p = row + first;
    if (stride > 2 || p < lo || p + 15 * stride + 1 > hi)
        return pool_gather16(row, first, stride, w_in, lanes, outside);
    const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const int16 iw = lane * stride + first;
    const int16 keep = (iw >= 0) & (iw < w_in) & (lane < lanes);
    return select((float16)(outside), pool_load16(p, stride), keep);
}

/* f32_pool2d, CPU style: a band of output rows (plane, oh) per work-item (kann_band), 16
 * outputs at a time. Outputs whose windows lie inside the input's columns load their taps as
 * vectors (strides 1 and 2); the others (the row's edges) load them as masked vectors where
 * they can (pool_edge16), else lane by lane (other strides), with their own window counts.
 * NDRange: (bands of the tile's planes * h_out rows). */
kernel void f32_pool2d_rows(KANN_KERNEL_ARGS) {
    const int w_out = I(A_pool2d_w_out), h_out = I(A_pool2d_h_out);
    const int h_in = I(A_pool2d_h_in), w_in = I(A_pool2d_w_in);
    const int k_h = I(A_pool2d_k_h), k_w = I(A_pool2d_k_w);
    const int dil_h = I(A_pool2d_dil_h), dil_w = I(A_pool2d_dil_w);
    const int s_h = I(A_pool2d_stride_h), s_w = I(A_pool2d_stride_w);
    const int pad_top = I(A_pool2d_pad_top), pad_left = I(A_pool2d_pad_left);
    const bool is_max = U(A_pool2d_kind) == 0, count_pad = !is_max && U(A_pool2d_count_include_pad);
    /* the rows (columns) a count includes: the input's, or the padded input's */
    const int h_lo = count_pad ? -pad_top : 0,
              h_hi = h_in + (count_pad ? I(A_pool2d_pad_bottom) : 0);
    const int w_lo = count_pad ? -pad_left : 0,
              w_hi = w_in + (count_pad ? I(A_pool2d_pad_right) : 0);
    const float outside = is_max ? -INFINITY : 0.0f;
    const bool max3s2 = is_max && k_w == 3 && s_w == 2 && dil_w == 1;
    /* outputs [ow_in, ow_end) have every column tap inside [0, w_in) */
    const int ow_in = (pad_left + s_w - 1) / s_w;
    const int last = w_in - 1 + pad_left - (k_w - 1) * dil_w;
    const int ow_end = s_w <= 2 && last >= 0 ? min(w_out, last / s_w + 1) : 0;
    global const float *x = IN_REF(A_pool2d_x);
    const size_t x_len = (size_t)TILE_END * h_in * w_in; /* x holds at least the tile's planes */
    global float *y = OUT_REF(A_pool2d_y);
    uint lo, hi;
    kann_band((TILE_END - TILE_BEGIN) * (uint)h_out, 0, &lo, &hi);
    for (uint r = lo; r < hi; r++) {
        const uint p = TILE_BEGIN + r / (uint)h_out;
        const int oh = (int)(r % (uint)h_out);
        global const float *xp = x + (size_t)p * h_in * w_in;
        global float *yr = y + ((size_t)p * h_out + oh) * w_out;
        const int ih0 = oh * s_h - pad_top;
        const uint rows = taps_inside(ih0, dil_h, k_h, h_lo, h_hi);
        const size_t x_row_end = ((size_t)p * h_in + h_in - 1) * w_in; /* its last row */
        for (int ow = 0; ow < w_out; ow += 16) {
            const int lanes = min(16, w_out - ow), iw0 = ow * s_w - pad_left;
            /* a row's last, partial block loads whole vectors too where they end inside x
             * (the lanes past the row read the next row and are not stored) */
            const bool inside =
                ow >= ow_in && ow + lanes <= ow_end &&
                (lanes == 16 || x_row_end + iw0 + (k_w - 1) * dil_w + 15 * s_w < x_len);
            float16 acc = (float16)(outside);
            /* the taps of the window rows inside the input, one way of loading them (two
             * loops, so that the vector one carries no gather) */
#define POOL_TAPS(LOAD)                                                                            \
    for (int kh = 0; kh < k_h; kh++) {                                                             \
        const int ih = ih0 + kh * dil_h;                                                           \
        if (ih < 0 || ih >= h_in) continue;                                                        \
        global const float *xr = xp + (size_t)ih * w_in;                                           \
        for (int kw = 0; kw < k_w; kw++) {                                                         \
            const int first = iw0 + kw * dil_w;                                                    \
            float16 v = LOAD;                                                                      \
            acc = is_max ? pool_max16(acc, v) : acc + v;                                           \
        }                                                                                          \
    }
            if (inside && max3s2) {
                /* 3 columns, stride 2: the max over the window rows of the 33 columns the 16
                 * outputs read, as columns 0..31 (v0, v1) and 1..32 (u0, u1), then output j
                 * takes columns 2j, 2j + 1 and 2j + 2: 4 loads a row instead of 6 */
                float16 v0 = (float16)(outside), v1 = v0, u0 = v0, u1 = v0;
                for (int kh = 0; kh < k_h; kh++) {
                    const int ih = ih0 + kh * dil_h;
                    if (ih < 0 || ih >= h_in) continue;
                    global const float *xr = xp + (size_t)ih * w_in + iw0;
                    v0 = pool_max16(v0, vload16(0, xr));
                    v1 = pool_max16(v1, vload16(0, xr + 16));
                    u0 = pool_max16(u0, vload16(0, xr + 1));
                    u1 = pool_max16(u1, vload16(0, xr + 17));
                }
                acc = pool_max16(pool_max16((float16)(v0.even, v1.even), (float16)(v0.odd, v1.odd)),
                                 (float16)(u0.odd, u1.odd));
            } else if (inside)
                POOL_TAPS(pool_load16(xr + first, s_w))
            else
                POOL_TAPS(pool_edge16(xr, first, s_w, w_in, lanes, outside, x, x + x_len))
            /* the window counts: rows times columns, the columns per lane at the edges */
            float16 n = (float16)((float)(rows * k_w));
            if (!inside) {
                float cols[16];
                for (int j = 0; j < 16; j++)
                    cols[j] = taps_inside(iw0 + j * s_w, dil_w, k_w, w_lo, w_hi);
                n = (float)rows * vload16(0, cols);
            }
            if (!is_max) acc /= n;
            acc = select(acc, (float16)(0.0f), n == (float16)(0.0f)); /* a window of nothing */
            acc = kann_act16(ACT_ARGS(pool2d), acc);
            if (lanes == 16) {
                vstore16(acc, 0, yr + ow);
            } else {
                float t[16];
                vstore16(acc, 0, t);
                for (int j = 0; j < lanes; j++)
                    yr[ow + j] = t[j];
            }
        }
    }
}

/* NDRange: (planes of the tile). Eight partial sums, combined as the reference kernel does. */
kernel void f32_global_avgpool(KANN_KERNEL_ARGS) {
    uint p = TILE_BEGIN + get_global_id(0);
    if (p >= TILE_END) return;
    const uint spatial = U(A_global_avgpool_spatial);
    global const float *x = IN_REF(A_global_avgpool_x) + (size_t)p * spatial;
    float8 s = (float8)(0.0f);
    uint i = 0;
    for (; i + 8 <= spatial; i += 8)
        s += vload8(0, x + i);
    for (; i < spatial; i++)
        s.s0 += x[i];
    float sum = ((s.s0 + s.s1) + (s.s2 + s.s3)) + ((s.s4 + s.s5) + (s.s6 + s.s7));
    OUT_REF(A_global_avgpool_y)
    [p] = kann_act(ACT_ARGS(global_avgpool), sum * (1.0f / (float)spatial));
}

/* CPU devices. NDRange: (output channels of the tile). Each work-item sums its channel over the
 * pixels, the activated 1x1 conv of each pixel (the packed weights: [block of 32][c_in][32]). */
kernel void f32_pointwise_gap(KANN_KERNEL_ARGS) {
    uint m = TILE_BEGIN + get_global_id(0);
    if (m >= TILE_END) return;
    const uint c_in = U(A_pointwise_gap_c_in), hw = U(A_pointwise_gap_hw);
    global const float *x = IN_REF(A_pointwise_gap_x);
    global const float *w = IN_REF(A_pointwise_gap_w) + (size_t)(m / 32) * c_in * 32 + m % 32;
    global const float *bias = IN_REF(A_pointwise_gap_bias);
    const float b = REF_SPACE(A_pointwise_gap_bias) != 0 ? bias[m] : 0.0f;
    float total = 0.0f;
    for (uint p = 0; p < hw; p++) {
        float acc = 0.0f;
        for (uint k = 0; k < c_in; k++)
            acc = fma(w[(size_t)k * 32], x[(size_t)k * hw + p], acc);
        total += kann_act(ACT_ARGS(pointwise_gap), acc + b);
    }
    OUT_REF(A_pointwise_gap_y)[m] = total * (1.0f / (float)hw);
}

/* GPUs: a work-group of GAP_GROUP work-items per output channel. NDRange: (GAP_GROUP, output
 * channels of the tile), local (GAP_GROUP, 1): item i takes pixels i, i + GAP_GROUP, ... (the
 * group's loads of x coalesced), then the group adds its partial sums in local memory. */
#define GAP_GROUP 64
kernel void f32_pointwise_gap_groups(KANN_KERNEL_ARGS) {
    local float part[GAP_GROUP];
    const uint lane = get_local_id(0), m = TILE_BEGIN + get_global_id(1);
    const uint c_in = U(A_pointwise_gap_c_in), hw = U(A_pointwise_gap_hw);
    float total = 0.0f;
    if (m < TILE_END) {
        global const float *x = IN_REF(A_pointwise_gap_x);
        global const float *w = IN_REF(A_pointwise_gap_w) + (size_t)(m / 32) * c_in * 32 + m % 32;
        global const float *bias = IN_REF(A_pointwise_gap_bias);
        const float b = REF_SPACE(A_pointwise_gap_bias) != 0 ? bias[m] : 0.0f;
        for (uint p = lane; p < hw; p += GAP_GROUP) {
            float acc = 0.0f;
            for (uint k = 0; k < c_in; k++)
                acc = fma(w[(size_t)k * 32], x[(size_t)k * hw + p], acc);
            total += kann_act(ACT_ARGS(pointwise_gap), acc + b);
        }
    }
    part[lane] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = GAP_GROUP / 2; step > 0; step /= 2) {
        if (lane < step) part[lane] += part[lane + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lane == 0 && m < TILE_END) OUT_REF(A_pointwise_gap_y)[m] = part[0] * (1.0f / (float)hw);
}

/* Both kernel styles. NDRange: (pixels, output channels) of the tile, one work-item per output
 * y[m][p]: tile axis 0 is channels [begin, end) over every pixel, axis 1 pixels [begin, end) over
 * every channel. Consecutive work-items take consecutive pixels (x and y contiguous). Each
 * output is one sum over the input channels in order (the packed weights: [block of 32][c_in]
 * [32]), then the bias, the residual and the activation, as the reference adds them. */
kernel void f32_pointwise_lanes(KANN_KERNEL_ARGS) {
    const uint c_in = U(A_pointwise_lanes_c_in), hw = U(A_pointwise_lanes_hw);
    uint m_b = 0, m_e = U(A_pointwise_lanes_c_out), p_b = 0, p_e = hw;
    KANN_TILE_RANGES(m_b, m_e, p_b, p_e);
    const uint p = p_b + get_global_id(0), m = m_b + get_global_id(1);
    if (p >= p_e || m >= m_e) return;
    global const float *x = IN_REF(A_pointwise_lanes_x) + p;
    global const float *w = IN_REF(A_pointwise_lanes_w) + (size_t)(m / 32) * c_in * 32 + m % 32;
    float acc = 0.0f;
    for (uint k = 0; k < c_in; k++)
        acc = fma(w[(size_t)k * 32], x[(size_t)k * hw], acc);
    if (REF_SPACE(A_pointwise_lanes_bias) != 0) acc += IN_REF(A_pointwise_lanes_bias)[m];
    const size_t out = (size_t)m * hw + p;
    if (REF_SPACE(A_pointwise_lanes_residual) != 0) acc += IN_REF(A_pointwise_lanes_residual)[out];
    OUT_REF(A_pointwise_lanes_y)[out] = kann_act(ACT_ARGS(pointwise_lanes), acc);
}
