/* f32_conv2d_winograd: Winograd F(2x2, 3x3) over the transformed weights U of the record, one
 * work-item per output 2x2 tile and block of 12 output channels: each input tile is transformed
 * once per input channel and used for the whole block (the record's scratch goes unused). */

#define WB 12 /* output channels per work-item: one weight panel */

/* NDRange: (output tiles, blocks of WB output channels), each cut to the record's tile. */
kernel void f32_conv2d_winograd(KANN_KERNEL_ARGS) {
    const uint c_in = U(A_conv2d_winograd_c_in), h_in = U(A_conv2d_winograd_h_in);
    const uint w_in = U(A_conv2d_winograd_w_in), c_out = U(A_conv2d_winograd_c_out);
    const uint h_out = U(A_conv2d_winograd_h_out), w_out = U(A_conv2d_winograd_w_out);
    const size_t tiles_w = (w_out + 1) / 2, n_tiles = (h_out + 1) / 2 * tiles_w;
    size_t t = get_global_id(0), m_begin = 0, m_end = c_out, t_end = n_tiles;
    if (TILE_AXIS == 0) {
        m_begin = TILE_BEGIN;
        m_end = TILE_END;
    } else {
        t += TILE_BEGIN;
        t_end = TILE_END;
    }
    const size_t m0 = m_begin + get_global_id(1) * WB;
    if (t >= t_end || m0 >= m_end) return;
    const uint nb = m_end - m0 < WB ? (uint)(m_end - m0) : WB;
    const size_t panels = (c_out + 11) / 12, th = t / tiles_w, i0 = 2 * th;
    const size_t j0 = 2 * (t - th * tiles_w), step = panels * c_in * 12;
    global const float *x = IN_REF(A_conv2d_winograd_x);
    global const float *u = IN_REF(A_conv2d_winograd_u);
    float acc[WB][16];
    for (uint b = 0; b < WB; b++)
        for (int p = 0; p < 16; p++)
            acc[b][p] = 0.0f;
    for (size_t c = 0; c < c_in; c++) {
        global const float *xc = x + c * h_in * w_in;
        float d[4][4], s[4][4], v[16];
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
            v[i * 4 + 0] = s[i][0] - s[i][2];
            v[i * 4 + 1] = s[i][1] + s[i][2];
            v[i * 4 + 2] = s[i][2] - s[i][1];
            v[i * 4 + 3] = s[i][1] - s[i][3];
        }
        for (uint b = 0; b < nb; b++) {
            const size_t m = m0 + b;
            global const float *um = u + ((m / 12) * c_in + c) * 12 + m % 12;
            for (int p = 0; p < 16; p++)
                acc[b][p] += um[p * step] * v[p];
        }
    }
    const size_t hw = (size_t)h_out * w_out;
    for (uint b = 0; b < nb; b++) {
        const size_t m = m0 + b;
        const float bias =
            HAS_REF(A_conv2d_winograd_bias) ? IN_REF(A_conv2d_winograd_bias)[m] : 0.0f;
        global float *y = OUT_REF(A_conv2d_winograd_y) + m * hw;
        for (int i = 0; i < 2; i++) {
            float r[4];
            for (int j = 0; j < 4; j++)
                r[j] = i == 0 ? acc[b][j] + acc[b][4 + j] + acc[b][8 + j]
                              : acc[b][4 + j] - acc[b][8 + j] - acc[b][12 + j];
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
}
