/* f32_softmax (and log-softmax): one work-item per (outer, inner) position walks the axis:
 * the maximum, the sum of exponentials, then the outputs. In place (y == x) is fine. */

/* NDRange: (inner, outer positions of the tile). */
kernel void f32_softmax(KANN_KERNEL_ARGS) {
    const uint axis_len = U(A_softmax_axis_len), inner = U(A_softmax_inner);
    uint i = get_global_id(0), o = TILE_BEGIN + get_global_id(1);
    if (i >= inner || o >= TILE_END || axis_len == 0) return;
    size_t base = (size_t)o * axis_len * inner + i;
    global const float *x = IN_REF(A_softmax_x) + base;
    global float *y = OUT_REF(A_softmax_y) + base;
    float max = x[0];
    for (uint a = 1; a < axis_len; a++)
        max = x[(size_t)a * inner] > max ? x[(size_t)a * inner] : max;
    float sum = 0.0f;
    if (U(A_softmax_log)) {
        for (uint a = 0; a < axis_len; a++)
            sum += exp(x[(size_t)a * inner] - max);
        float shift = max + log(sum);
        for (uint a = 0; a < axis_len; a++)
            y[(size_t)a * inner] = x[(size_t)a * inner] - shift;
    } else {
        for (uint a = 0; a < axis_len; a++) {
            float e = exp(x[(size_t)a * inner] - max);
            y[(size_t)a * inner] = e;
            sum += e;
        }
        float inv = 1.0f / sum;
        for (uint a = 0; a < axis_len; a++)
            y[(size_t)a * inner] *= inv;
    }
}
