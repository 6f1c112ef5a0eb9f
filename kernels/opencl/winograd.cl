/* f32_conv2d_winograd: Winograd F(2x2, 3x3) over the transformed weights U of the record, one
 * work-item per output 2x2 tile and output channel; the input tiles are transformed on the fly
 * (the record's scratch goes unused). */

/* NDRange: (output tiles, output channels), each cut to the record's tile. */
kernel void f32_conv2d_winograd(KANN_KERNEL_ARGS) {
    const uint c_in = U(A_conv2d_winograd_c_in), h_in = U(A_conv2d_winograd_h_in);
    const uint w_in = U(A_conv2d_winograd_w_in), c_out = U(A_conv2d_winograd_c_out);
    const uint h_out = U(A_conv2d_winograd_h_out), w_out = U(A_conv2d_winograd_w_out);
    const size_t tiles_w = (w_out + 1) / 2, n_tiles = (h_out + 1) / 2 * tiles_w;
    size_t t = get_global_id(0), m = get_global_id(1);
    size_t t_end = n_tiles, m_end = c_out;
    if (TILE_AXIS == 0) {
        m += TILE_BEGIN;
        m_end = TILE_END;
    } else {
        t += TILE_BEGIN;
        t_end = TILE_END;
    }
    if (t >= t_end || m >= m_end) return;
    const size_t panels = (c_out + 11) / 12, th = t / tiles_w, i0 = 2 * th;
    const size_t j0 = 2 * (t - th * tiles_w);
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *u = IN_REF(A_conv2d_winograd_u) + (m / 12) * c_in * 12 + m % 12;
    float acc[16];
    for (int p = 0; p < 16; p++)
        acc[p] = 0.0f;
    for (size_t c = 0; c < c_in; c++) {
        global const float *xc = x + c * h_in * w_in;
        float d[4][4], s[4][4];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                d[i][j] = i0 + i < h_in && j0 + j < w_in ? xc[(i0 + i) * w_in + j0 + j] : 0.0f;
        for (int j = 0; j < 4; j++) {
            s[0][j] = d[0][j] - d[2][j];
            s[1][j] = d[1][j] + d[2][j];
            s[2][j] = d[2][j] - d[1][j];
            s[3][j] = d[1][j] - d[3][j];
        }
        for (int i = 0; i < 4; i++) {
            global const float *ui = u + ((size_t)(i * 4) * panels * c_in + c) * 12;
            const size_t step = panels * c_in * 12;
            acc[i * 4 + 0] += ui[0] * (s[i][0] - s[i][2]);
            acc[i * 4 + 1] += ui[step] * (s[i][1] + s[i][2]);
            acc[i * 4 + 2] += ui[2 * step] * (s[i][2] - s[i][1]);
            acc[i * 4 + 3] += ui[3 * step] * (s[i][1] - s[i][3]);
        }
    }
    const float bias = HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
    const size_t hw = (size_t)h_out * w_out;
    global float *y = OUT_REF(A_conv2d_winograd_y) + m * hw;
    for (int i = 0; i < 2; i++) {
        float r[4];
        for (int j = 0; j < 4; j++)
            r[j] =
                i == 0 ? acc[j] + acc[4 + j] + acc[8 + j] : acc[4 + j] - acc[8 + j] - acc[12 + j];
        for (int j = 0; j < 2; j++) {
            if (i0 + i >= h_out || j0 + j >= w_out) continue;
            size_t o = (i0 + i) * w_out + j0 + j;
            float val = (j == 0 ? r[0] + r[1] + r[2] : r[1] - r[2] - r[3]) + bias;
            if (HAS_REF(A_conv2d_winograd_residual))
                val += IN_REF(A_conv2d_winograd_residual)[m * hw + o];
            y[o] = kann_act(ACT_ARGS(conv2d_winograd), val);
        }
    }
}
