/* f32_pool2d (max and average, padding, stride, dilation) and f32_global_avgpool. */

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

/* NDRange: (w_out, h_out, planes of the tile). */
kernel void f32_pool2d(KANN_KERNEL_ARGS) {
    const uint w_out = U(A_pool2d_w_out), h_out = U(A_pool2d_h_out);
    uint ow = get_global_id(0), oh = get_global_id(1), p = TILE_BEGIN + get_global_id(2);
    if (ow >= w_out || oh >= h_out || p >= TILE_END) return;
    const int h_in = I(A_pool2d_h_in), w_in = I(A_pool2d_w_in);
    const int k_h = I(A_pool2d_k_h), k_w = I(A_pool2d_k_w);
    const int dil_h = I(A_pool2d_dil_h), dil_w = I(A_pool2d_dil_w);
    const int ih0 = (int)oh * I(A_pool2d_stride_h) - I(A_pool2d_pad_top);
    const int iw0 = (int)ow * I(A_pool2d_stride_w) - I(A_pool2d_pad_left);
    const bool is_max = U(A_pool2d_kind) == 0;
    global const float *x = IN_REF(A_pool2d_x) + (size_t)p * h_in * w_in;
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
    OUT_REF(A_pool2d_y)[((size_t)p * h_out + oh) * w_out + ow] = kann_act(ACT_ARGS(pool2d), acc);
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
    OUT_REF(A_global_avgpool_y)[p] =
        kann_act(ACT_ARGS(global_avgpool), sum * (1.0f / (float)spatial));
}
