/* The spatial kernels over 1 to 3 spatial dims (f32_conv_transpose, f32_conv_nd, f32_pool_nd)
 * and f32_resize: one work-item per output element, shapes read from the argument struct. */

/* The 3 spatial coordinates of flat position o in a [d0][d1][d2] block. */
#define SPLIT3(o, d1, d2)                                                                          \
    { (o) / ((size_t)(d1) * (d2)), (o) / (d2) % (d1), (o) % (d2) }

/* NDRange: (output elements of a plane, output planes n * c_out + m of the tile). The taps of
 * each spatial dim are visited from the last to the first, so that the input positions they
 * read come in increasing order: the reference's order of accumulation. */
kernel void f32_conv_transpose(KANN_KERNEL_ARGS) {
    const uint o_0 = U(A_conv_transpose_out), o_1 = U(A_conv_transpose_out + 1),
               o_2 = U(A_conv_transpose_out + 2);
    const size_t out_sp = (size_t)o_0 * o_1 * o_2;
    ulong o = get_global_id(0), p = (ulong)TILE_BEGIN + get_global_id(1);
    if (o >= out_sp || p >= TILE_END) return;
    uint in[3], k[3], stride[3], dil[3], pad[3];
    for (int d = 0; d < 3; d++) {
        in[d] = U(A_conv_transpose_in + d);
        k[d] = U(A_conv_transpose_k + d);
        stride[d] = U(A_conv_transpose_stride + d);
        dil[d] = U(A_conv_transpose_dil + d);
        pad[d] = U(A_conv_transpose_pad + d);
    }
    const size_t c_in = U(A_conv_transpose_c_in), c_out = U(A_conv_transpose_c_out);
    const size_t cpg = c_in / U(A_conv_transpose_group), mpg = c_out / U(A_conv_transpose_group);
    size_t n = p / c_out, m = p % c_out, g = m / mpg, mm = m % mpg;
    size_t in_sp = (size_t)in[0] * in[1] * in[2], k_sp = (size_t)k[0] * k[1] * k[2];
    long od[3] = SPLIT3(o, o_1, o_2);
    global const float *x = IN_REF(A_conv_transpose_x), *w = IN_REF(A_conv_transpose_w);
    float acc = HAS_REF(A_conv_transpose_bias) ? IN_REF(A_conv_transpose_bias)[m] : 0.0f;
    for (size_t c = 0; c < cpg; c++) {
        size_t ci = g * cpg + c;
        global const float *xp = x + (n * c_in + ci) * in_sp, *wp = w + (ci * mpg + mm) * k_sp;
        for (int k0 = (int)k[0] - 1; k0 >= 0; k0--) {
            long t0 = od[0] + pad[0] - (long)k0 * dil[0];
            if (t0 < 0 || t0 % stride[0] != 0 || t0 / stride[0] >= in[0]) continue;
            size_t i0 = (size_t)(t0 / stride[0]);
            for (int k1 = (int)k[1] - 1; k1 >= 0; k1--) {
                long t1 = od[1] + pad[1] - (long)k1 * dil[1];
                if (t1 < 0 || t1 % stride[1] != 0 || t1 / stride[1] >= in[1]) continue;
                size_t i1 = (size_t)(t1 / stride[1]);
                global const float *xr = xp + (i0 * in[1] + i1) * in[2];
                global const float *wr = wp + ((size_t)k0 * k[1] + (size_t)k1) * k[2];
                for (int k2 = (int)k[2] - 1; k2 >= 0; k2--) {
                    long t2 = od[2] + pad[2] - (long)k2 * dil[2];
                    if (t2 < 0 || t2 % stride[2] != 0 || t2 / stride[2] >= in[2]) continue;
                    acc += xr[t2 / stride[2]] * wr[k2];
                }
            }
        }
    }
    OUT_REF(A_conv_transpose_y)[p * out_sp + o] = kann_act(ACT_ARGS(conv_transpose), acc);
}

/* NDRange: (output elements of a plane, output planes n * c_out + m of the tile). */
kernel void f32_conv_nd(KANN_KERNEL_ARGS) {
    const uint o_0 = U(A_conv_transpose_out), o_1 = U(A_conv_transpose_out + 1),
               o_2 = U(A_conv_transpose_out + 2);
    const size_t out_sp = (size_t)o_0 * o_1 * o_2;
    ulong o = get_global_id(0), p = (ulong)TILE_BEGIN + get_global_id(1);
    if (o >= out_sp || p >= TILE_END) return;
    uint in[3], k[3], dil[3];
    long od[3] = SPLIT3(o, o_1, o_2), first[3];
    for (int d = 0; d < 3; d++) {
        in[d] = U(A_conv_transpose_in + d);
        k[d] = U(A_conv_transpose_k + d);
        dil[d] = U(A_conv_transpose_dil + d);
        first[d] = od[d] * U(A_conv_transpose_stride + d) - (long)U(A_conv_transpose_pad + d);
    }
    const size_t c_in = U(A_conv_transpose_c_in), c_out = U(A_conv_transpose_c_out);
    const size_t cpg = c_in / U(A_conv_transpose_group), mpg = c_out / U(A_conv_transpose_group);
    size_t n = p / c_out, m = p % c_out, g = m / mpg;
    size_t in_sp = (size_t)in[0] * in[1] * in[2], k_sp = (size_t)k[0] * k[1] * k[2];
    global const float *x = IN_REF(A_conv_transpose_x);
    global const float *wm = IN_REF(A_conv_transpose_w) + m * cpg * k_sp;
    float acc = HAS_REF(A_conv_transpose_bias) ? IN_REF(A_conv_transpose_bias)[m] : 0.0f;
    for (size_t c = 0; c < cpg; c++) {
        global const float *xc = x + (n * c_in + g * cpg + c) * in_sp, *wc = wm + c * k_sp;
        for (uint k0 = 0; k0 < k[0]; k0++) {
            long i0 = first[0] + (long)k0 * dil[0];
            if (i0 < 0 || i0 >= in[0]) continue;
            for (uint k1 = 0; k1 < k[1]; k1++) {
                long i1 = first[1] + (long)k1 * dil[1];
                if (i1 < 0 || i1 >= in[1]) continue;
                global const float *xr = xc + ((size_t)i0 * in[1] + (size_t)i1) * in[2];
                global const float *wr = wc + ((size_t)k0 * k[1] + k1) * k[2];
                for (uint k2 = 0; k2 < k[2]; k2++) {
                    long i2 = first[2] + (long)k2 * dil[2];
                    if (i2 >= 0 && i2 < in[2]) acc += xr[i2] * wr[k2];
                }
            }
        }
    }
    OUT_REF(A_conv_transpose_y)[p * out_sp + o] = kann_act(ACT_ARGS(conv_transpose), acc);
}

/* Taps t of one axis whose coordinate first + t * dil lies in [lo, hi): [*t0, *t1), in closed
 * form as kernels/ref/pool_nd.c computes it (dil >= 1, validated): nothing bounds k, so stepping
 * through the window could take 2^32 steps per output. */
inline void kann_tap_range(long first, uint dil, uint k, long lo, long hi, uint *t0, uint *t1) {
    /* the first t with first + t * dil >= lo, and the count of t with first + t * dil < hi */
    long a = first >= lo ? 0 : (lo - first + (long)dil - 1) / (long)dil;
    long b = first >= hi ? 0 : (hi - first + (long)dil - 1) / (long)dil;
    if (a > (long)k) a = k;
    if (b > (long)k) b = k;
    if (b < a) b = a;
    *t0 = (uint)a;
    *t1 = (uint)b;
}

/* NDRange: (output elements of a plane, planes of the tile). The average divides by the taps
 * inside x, or inside the padded extent with count_include_pad; MaxPool's optional int64
 * indices name the first maximum (row-major, or column-major with storage_order 1). */
kernel void f32_pool_nd(KANN_KERNEL_ARGS) {
    const uint o_1 = U(A_pool_nd_out + 1), o_2 = U(A_pool_nd_out + 2);
    const size_t out_sp = (size_t)U(A_pool_nd_out) * o_1 * o_2;
    ulong o = get_global_id(0), p = (ulong)TILE_BEGIN + get_global_id(1);
    if (o >= out_sp || p >= TILE_END) return;
    uint in[3], dil[3], t0[3], t1[3];
    long od[3] = SPLIT3(o, o_1, o_2), first[3];
    ulong counted = 1;
    const int include_pad = U(A_pool_nd_count_include_pad) != 0;
    for (int d = 0; d < 3; d++) {
        in[d] = U(A_pool_nd_in + d);
        dil[d] = U(A_pool_nd_dil + d);
        uint k = U(A_pool_nd_k + d), pad_begin = U(A_pool_nd_pad_begin + d), c0, c1;
        first[d] = od[d] * U(A_pool_nd_stride + d) - (long)pad_begin;
        kann_tap_range(first[d], dil[d], k, 0, in[d], &t0[d], &t1[d]);
        c0 = t0[d];
        c1 = t1[d];
        if (include_pad)
            kann_tap_range(first[d], dil[d], k, -(long)pad_begin,
                           (long)in[d] + U(A_pool_nd_pad_end + d), &c0, &c1);
        counted *= c1 - c0;
    }
    const int is_max = U(A_pool_nd_kind) == 0, row_major = U(A_pool_nd_storage_order) == 0;
    size_t in_sp = (size_t)in[0] * in[1] * in[2];
    global const float *xp = IN_REF(A_pool_nd_x) + p * in_sp;
    float acc = is_max ? -INFINITY : 0.0f;
    long best = -1;
    for (uint k0 = t0[0]; k0 < t1[0]; k0++)
        for (uint k1 = t0[1]; k1 < t1[1]; k1++)
            for (uint k2 = t0[2]; k2 < t1[2]; k2++) {
                size_t i0 = (size_t)(first[0] + (long)k0 * dil[0]);
                size_t i1 = (size_t)(first[1] + (long)k1 * dil[1]);
                size_t i2 = (size_t)(first[2] + (long)k2 * dil[2]);
                float v = xp[(i0 * in[1] + i1) * in[2] + i2];
                if (!is_max) {
                    acc += v;
                } else if (v > acc || best < 0) {
                    acc = v;
                    best = (long)(row_major ? (i0 * in[1] + i1) * in[2] + i2
                                            : i0 + in[0] * (i1 + (size_t)in[1] * i2));
                }
            }
    if (!is_max) acc = counted ? acc / (float)counted : NAN;
    OUT_REF(A_pool_nd_y)[p * out_sp + o] = kann_act(ACT_ARGS(pool_nd), acc);
    if (HAS_REF(A_pool_nd_indices))
        ((global long *)OUT_BYTES(A_pool_nd_indices))[p * out_sp + o] =
            best < 0 ? 0 : (long)(p * in_sp) + best;
}

/* NDRange: (w_out, h_out, planes of the tile). Taps are (int32 index, float weight) pairs; an
 * output with a tap outside the input is the extrapolation value. */
kernel void f32_resize(KANN_KERNEL_ARGS) {
    const uint h_in = U(A_resize_h_in), w_in = U(A_resize_w_in);
    const uint h_out = U(A_resize_h_out), w_out = U(A_resize_w_out);
    const uint taps_h = U(A_resize_taps_h), taps_w = U(A_resize_taps_w);
    ulong ow = get_global_id(0), oh = get_global_id(1), p = (ulong)TILE_BEGIN + get_global_id(2);
    if (ow >= w_out || oh >= h_out || p >= TILE_END) return;
    global const float *xp = IN_REF(A_resize_x) + p * h_in * (size_t)w_in;
    global const float *th = IN_REF(A_resize_table_h) + oh * taps_h * 2;
    global const float *tw = IN_REF(A_resize_table_w) + ow * taps_w * 2;
    float acc = 0.0f;
    int outside = 0;
    for (uint i = 0; i < taps_h && !outside; i++) {
        int ih = as_int(th[2 * i]);
        if (ih < 0 || (uint)ih >= h_in) {
            outside = 1;
            break;
        }
        float row = 0.0f;
        for (uint j = 0; j < taps_w; j++) {
            int iw = as_int(tw[2 * j]);
            if (iw < 0 || (uint)iw >= w_in) {
                outside = 1;
                break;
            }
            row += tw[2 * j + 1] * xp[(size_t)ih * w_in + (size_t)iw];
        }
        acc += th[2 * i + 1] * row;
    }
    OUT_REF(A_resize_y)[(p * h_out + oh) * w_out + ow] = outside ? F(A_resize_extrapolation) : acc;
}

/* f32_conv2d_maxpool. NDRange: (pooled columns, pooled rows, output channels) of the record's
 * tile. Each pooled output evaluates the conv (weights in conv2d_packed's 12-channel panels) at
 * every position of its window inside the conv's output, bias and activation after the sum,
 * and keeps the largest, NaNs skipped as the reference pool does. */
#define MP(f) A_conv2d_maxpool_##f
kernel void f32_conv2d_maxpool(KANN_KERNEL_ARGS) {
    const uint w_out = U(MP(w_out)), h_out = U(MP(h_out)), c_out = U(MP(c_out));
    uint m_b = 0, q_b = 0, m_e = c_out, q_e = h_out;
    KANN_TILE_RANGES(m_b, m_e, q_b, q_e);
    const uint r = get_global_id(0), q = q_b + get_global_id(1), m = m_b + get_global_id(2);
    if (r >= w_out || q >= q_e || m >= m_e) return;
    const int c_in = I(MP(c_in)), h_in = I(MP(h_in)), w_in = I(MP(w_in));
    const int h_conv = I(MP(h_conv)), w_conv = I(MP(w_conv)), k_h = I(MP(k_h)), k_w = I(MP(k_w));
    const int s_h = I(MP(stride_h)), s_w = I(MP(stride_w)), d_h = I(MP(dil_h)), d_w = I(MP(dil_w));
    const int pad_t = I(MP(pad_top)), pad_l = I(MP(pad_left));
    const int pk_h = I(MP(pool_k_h)), pk_w = I(MP(pool_k_w));
    const int i0 = (int)q * I(MP(pool_stride_h)) - I(MP(pool_pad_top));
    const int j0 = (int)r * I(MP(pool_stride_w)) - I(MP(pool_pad_left));
    const size_t K = (size_t)c_in * k_h * k_w;
    global const float *x = IN_REF(MP(x));
    global const float *w = IN_REF(MP(w)) + (size_t)(m / 12) * K * 12 + m % 12;
    const float bias = HAS_REF(MP(bias)) ? IN_REF(MP(bias))[m] : 0.0f;
    float best = -INFINITY;
    for (int i = max(i0, 0); i < min(i0 + pk_h, h_conv); i++)
        for (int j = max(j0, 0); j < min(j0 + pk_w, w_conv); j++) {
            float acc = 0.0f;
            for (int c = 0; c < c_in; c++)
                for (int kh = 0; kh < k_h; kh++) {
                    int ih = i * s_h - pad_t + kh * d_h;
                    if (ih < 0 || ih >= h_in) continue;
                    global const float *xr = x + ((size_t)c * h_in + ih) * w_in;
                    global const float *wr = w + (size_t)((c * k_h + kh) * k_w) * 12;
                    for (int kw = 0; kw < k_w; kw++) {
                        int iw = j * s_w - pad_l + kw * d_w;
                        if (iw >= 0 && iw < w_in) acc += wr[kw * 12] * xr[iw];
                    }
                }
            float v = kann_act(ACT_ARGS(conv2d_maxpool), acc + bias);
            best = v > best ? v : best;
        }
    OUT_REF(MP(y))[((size_t)m * h_out + q) * w_out + r] = best;
}
#undef MP

/* f32_dwblock. NDRange: (output columns, output rows of the tile, panels of 12 output
 * channels). A work-item takes its pixel's d one mid channel at a time and adds that channel's
 * share to its panel's 12 sums: W_proj's panel row of a mid channel is 12 consecutive floats
 * (the last panel's padding channels are summed and not stored). e is never stored: each tap's
 * input pixel goes through the expansion again, k_h * k_w times per mid channel and once more
 * for every panel, so the record's scratch, where the CPU kernels keep bands of e and d, is
 * left alone. A tap outside x reads e = 0, not act_exp(b_exp): the depthwise conv pads e, not
 * x. Sums run in the reference's order (input and mid channels increasing, the taps column by
 * column, bias and residual after the sum). */
#define DB(f) A_dwblock_##f
#define DB_ACT(stage) U(DB(stage##_kind)), F(DB(stage##_alpha)), F(DB(stage##_beta))
kernel void f32_dwblock(KANN_KERNEL_ARGS) {
    const uint w_out = U(DB(w_out)), h_out = U(DB(h_out)), c_out = U(DB(c_out));
    const uint ow = get_global_id(0), oh = TILE_BEGIN + get_global_id(1);
    const uint m0 = get_global_id(2) * 12;
    if (ow >= w_out || oh >= TILE_END || m0 >= c_out) return;
    const int expand = U(DB(expand)) != 0;
    const int c_in = I(DB(c_in)), c_mid = I(DB(c_mid)), h_in = I(DB(h_in)), w_in = I(DB(w_in));
    const int k_h = I(DB(k_h)), k_w = I(DB(k_w)), d_h = I(DB(dil_h)), d_w = I(DB(dil_w));
    const int ih0 = (int)oh * I(DB(stride_h)) - I(DB(pad_top));
    const int iw0 = (int)ow * I(DB(stride_w)) - I(DB(pad_left));
    const size_t in_plane = (size_t)h_in * w_in;
    global const float *x = IN_REF(DB(x)), *w_dw = IN_REF(DB(w_dw));
    global const float *w_exp = expand ? IN_REF(DB(w_exp)) : x;
    global const float *w_proj = IN_REF(DB(w_proj)) + (size_t)(m0 / 12) * c_mid * 12;
    const int has_b_exp = expand && HAS_REF(DB(b_exp)), has_b_dw = HAS_REF(DB(b_dw));
    float acc[12];
    for (int j = 0; j < 12; j++)
        acc[j] = 0.0f;
    for (int c = 0; c < c_mid; c++) {
        global const float *wd = w_dw + (size_t)c * k_h * k_w;
        global const float *we = w_exp + (size_t)(c / 12) * c_in * 12 + c % 12;
        const float b_e = has_b_exp ? IN_REF(DB(b_exp))[c] : 0.0f;
        float sum = 0.0f;
        for (int kw = 0; kw < k_w; kw++) {
            const int iw = iw0 + kw * d_w;
            if (iw < 0 || iw >= w_in) continue;
            for (int kh = 0; kh < k_h; kh++) {
                const int ih = ih0 + kh * d_h;
                if (ih < 0 || ih >= h_in) continue;
                global const float *xp = x + (size_t)ih * w_in + iw;
                float e;
                if (expand) {
                    float s = 0.0f;
                    for (int k = 0; k < c_in; k++)
                        s += we[k * 12] * xp[k * in_plane];
                    e = kann_act(DB_ACT(act_exp), s + b_e);
                } else {
                    e = xp[c * in_plane];
                }
                sum += wd[kh * k_w + kw] * e;
            }
        }
        const float d = kann_act(DB_ACT(act_dw), sum + (has_b_dw ? IN_REF(DB(b_dw))[c] : 0.0f));
        global const float *wp = w_proj + (size_t)c * 12;
        for (int j = 0; j < 12; j++)
            acc[j] += wp[j] * d;
    }
    /* a loop of constant length, so that acc stays in registers */
    for (uint j = 0; j < 12; j++) {
        if (m0 + j >= c_out) break;
        const size_t m = m0 + j, o = (m * h_out + oh) * w_out + ow;
        float v = acc[j] + (HAS_REF(DB(b_proj)) ? IN_REF(DB(b_proj))[m] : 0.0f);
        if (HAS_REF(DB(residual))) v += IN_REF(DB(residual))[o];
        OUT_REF(DB(y))[o] = kann_act(DB_ACT(act_proj), v);
    }
}

/* Columns first + j * step (j < 16) of the row at `row`, lane by lane, 0 outside [0, w_in). */
inline float16 kann_dwblock_gather16(global const float *row, int first, int step, int w_in) {
    float t[16];
    for (int j = 0; j < 16; j++) {
        const int iw = first + j * step;
        t[j] = iw >= 0 && iw < w_in ? row[iw] : 0.0f;
    }
    return vload16(0, t);
}

/* p[0], p[step], ..., p[15 * step] (step 1 or 2): one vector load, or two. */
inline float16 kann_dwblock_load16(global const float *p, int step) {
    if (step == 1) return vload16(0, p);
    return (float16)(vload16(0, p).even, vload16(1, p).even);
}

#define DB_FOR4(X) X(0) X(1) X(2) X(3)
#define DB_FOR12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* f32_dwblock on CPU devices (local size 1). NDRange: (blocks of 16 output columns, output
 * rows of the tile, panels of 12 output channels). The 16 columns of a block are the lanes of
 * every vector and the panel's sums are 12 named vectors. Mid channels go 4 at a time, so that
 * each input vector the expansion loads feeds 4 multiply-adds (their weights are 4 consecutive
 * floats of a panel row, as 4 divides 12); the expansion is still recomputed at each tap. Where
 * a tap's 16 columns lie inside the plane they are one vector load (two at stride 2), lanes
 * outside the row reading its neighbours, masked to 0 after the activation; elsewhere they are
 * gathered. Lanes past w_out, and channels past c_mid (copies of the last one), are computed
 * and not used. Sums run in f32_dwblock's order. */
kernel void f32_dwblock_rows(KANN_KERNEL_ARGS) {
    const uint w_out = U(DB(w_out)), h_out = U(DB(h_out)), c_out = U(DB(c_out));
    const uint ow0 = get_global_id(0) * 16, oh = TILE_BEGIN + get_global_id(1);
    const uint m0 = get_global_id(2) * 12;
    if (ow0 >= w_out || oh >= TILE_END || m0 >= c_out) return;
    const int expand = U(DB(expand)) != 0;
    const int c_in = I(DB(c_in)), c_mid = I(DB(c_mid)), h_in = I(DB(h_in)), w_in = I(DB(w_in));
    const int k_h = I(DB(k_h)), k_w = I(DB(k_w)), d_h = I(DB(dil_h)), d_w = I(DB(dil_w));
    const int s_w = I(DB(stride_w));
    const int ih0 = (int)oh * I(DB(stride_h)) - I(DB(pad_top));
    const int iw0 = (int)ow0 * s_w - I(DB(pad_left));
    const long in_plane = (long)h_in * w_in;
    const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    global const float *x = IN_REF(DB(x)), *w_dw = IN_REF(DB(w_dw));
    global const float *w_exp = expand ? IN_REF(DB(w_exp)) : x;
    global const float *b_exp = expand && HAS_REF(DB(b_exp)) ? IN_REF(DB(b_exp)) : 0;
    global const float *b_dw = HAS_REF(DB(b_dw)) ? IN_REF(DB(b_dw)) : 0;
    global const float *w_proj = IN_REF(DB(w_proj)) + (size_t)(m0 / 12) * c_mid * 12;
#define DB_ZERO(m) float16 acc##m = (float16)(0.0f);
    DB_FOR12(DB_ZERO)
#undef DB_ZERO
    for (int cb = 0; cb < c_mid; cb += 4) {
#define DB_CHANNEL(j)                                                                              \
    const int c##j = min(cb + j, c_mid - 1);                                                       \
    global const float *wd##j = w_dw + (size_t)c##j * k_h * k_w;                                   \
    const float be##j = b_exp ? b_exp[c##j] : 0.0f;                                                \
    float16 sum##j = (float16)(0.0f), e##j;
        DB_FOR4(DB_CHANNEL)
#undef DB_CHANNEL
        global const float *we = w_exp + (size_t)(cb / 12) * c_in * 12 + cb % 12;
        for (int kw = 0; kw < k_w; kw++) {
            const int first = iw0 + kw * d_w;
            const int16 iw = first + lane * s_w;
            const int16 inside = (iw >= 0) & (iw < w_in);
            if (!any(inside)) continue;
            for (int kh = 0; kh < k_h; kh++) {
                const int ih = ih0 + kh * d_h;
                if (ih < 0 || ih >= h_in) continue;
                /* (not named `at`: U() and F() read the struct through the argument `at`) */
                const long pos = (long)ih * w_in + first;
                const int whole = s_w <= 2 && pos >= 0 && pos + 16 * s_w <= in_plane;
                global const float *row = x + (long)ih * w_in;
                if (expand) {
                    e0 = e1 = e2 = e3 = (float16)(0.0f);
                    for (int k = 0; k < c_in; k++) {
                        global const float *r = row + k * in_plane;
                        const float16 v = whole ? kann_dwblock_load16(r + first, s_w)
                                                : kann_dwblock_gather16(r, first, s_w, w_in);
                        const float4 w4 = vload4(0, we + k * 12);
                        e0 += w4.s0 * v;
                        e1 += w4.s1 * v;
                        e2 += w4.s2 * v;
                        e3 += w4.s3 * v;
                    }
#define DB_EXPAND(j) e##j = kann_act16(DB_ACT(act_exp), e##j + be##j);
                    DB_FOR4(DB_EXPAND)
#undef DB_EXPAND
                } else {
#define DB_COPY(j)                                                                                 \
    e##j = whole ? kann_dwblock_load16(row + c##j * in_plane + first, s_w)                         \
                 : kann_dwblock_gather16(row + c##j * in_plane, first, s_w, w_in);
                    DB_FOR4(DB_COPY)
#undef DB_COPY
                }
#define DB_TAP(j) sum##j += wd##j[kh * k_w + kw] * select((float16)(0.0f), e##j, inside);
                DB_FOR4(DB_TAP)
#undef DB_TAP
            }
        }
        /* the projection of the channels below c_mid, in order */
#define DB_PROJECT_ONE(m) acc##m += wp[m] * d;
#define DB_PROJECT(j)                                                                              \
    if (cb + j < c_mid) {                                                                          \
        const float16 d = kann_act16(DB_ACT(act_dw), sum##j + (b_dw ? b_dw[c##j] : 0.0f));         \
        global const float *wp = w_proj + (size_t)c##j * 12;                                       \
        DB_FOR12(DB_PROJECT_ONE)                                                                   \
    }
        DB_FOR4(DB_PROJECT)
#undef DB_PROJECT
#undef DB_PROJECT_ONE
    }
    const uint lanes = min(16u, w_out - ow0);
    global const float *b_proj = HAS_REF(DB(b_proj)) ? IN_REF(DB(b_proj)) : 0;
    global const float *res = HAS_REF(DB(residual)) ? IN_REF(DB(residual)) : 0;
    global float *y = OUT_REF(DB(y));
    float t[16];
#define DB_STORE(m)                                                                                \
    if (m0 + m < c_out) {                                                                          \
        const size_t o = ((m0 + m) * (size_t)h_out + oh) * w_out + ow0;                            \
        float16 v = acc##m + (b_proj ? b_proj[m0 + m] : 0.0f);                                     \
        if (res) {                                                                                 \
            for (uint i = 0; i < 16; i++)                                                          \
                t[i] = i < lanes ? res[o + i] : 0.0f;                                              \
            v += vload16(0, t);                                                                    \
        }                                                                                          \
        vstore16(kann_act16(DB_ACT(act_proj), v), 0, t);                                           \
        for (uint i = 0; i < lanes; i++)                                                           \
            y[o + i] = t[i];                                                                       \
    }
    DB_FOR12(DB_STORE)
#undef DB_STORE
}
#undef DB_FOR12
#undef DB_FOR4
#undef DB_ACT
#undef DB
