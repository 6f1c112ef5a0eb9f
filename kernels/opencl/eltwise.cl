/* f32_binary, f32_act, f32_channel_affine, shapes read from the argument struct at run time
 * (these kernels are memory-bound: nothing to specialize): one output element per work-item,
 * and for CPU devices (the *_rows kernels) one work-item of local size 1 per band of rows, 16
 * elements at a time, with the helpers the *_rows kernels of layout.cl share. */

/* kann_binary_op on floats (the validator admits no other float op than these): the ops that
 * are one expression for float and float16 alike, the cases of both forms below. */
#define KANN_BINARY_COMMON_CASES(a, b)                                                             \
    case 0:                                                                                        \
        return (a) + (b);                                                                          \
    case 1:                                                                                        \
        return (a) - (b);                                                                          \
    case 2:                                                                                        \
        return (a) * (b);                                                                          \
    case 3:                                                                                        \
        return (a) / (b);                                                                          \
    case 4:                                                                                        \
        return pow(a, b);                                                                          \
    case 7:                                                                                        \
        return fmod(a, b);

inline float kann_binary_f32(uint op, float a, float b) {
    switch (op) {
        KANN_BINARY_COMMON_CASES(a, b)
    case 5: /* NaN when either is NaN, as the reference */
        return isnan(a) || isnan(b) ? a + b : fmax(a, b);
    case 6:
        return isnan(a) || isnan(b) ? a + b : fmin(a, b);
    default: /* 9: PRelu */
        return a < 0.0f ? a * b : a;
    }
}

/* kann_binary_f32 on 16 lanes. */
inline float16 kann_binary16(uint op, float16 a, float16 b) {
    switch (op) {
        KANN_BINARY_COMMON_CASES(a, b)
    case 5:
        return select(fmax(a, b), a + b, isnan(a) | isnan(b));
    case 6:
        return select(fmin(a, b), a + b, isnan(a) | isnan(b));
    default:
        return select(a, a * b, a < (float16)(0.0f));
    }
}

/* NDRange: (tile elements). Multi-index of the flat output position, walked innermost first. */
kernel void f32_binary(KANN_KERNEL_ARGS) {
    uint pos = TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    const uint rank = U(A_binary_rank);
    size_t a_off = 0, b_off = 0;
    uint rest = pos;
    for (int d = (int)rank - 1; d >= 0; d--) {
        uint dim = U(A_binary_dims + d), idx = rest % dim;
        rest /= dim;
        a_off += (size_t)idx * U(A_binary_a_strides + d);
        b_off += (size_t)idx * U(A_binary_b_strides + d);
    }
    float v = kann_binary_f32(U(A_binary_op), IN_REF(A_binary_a)[a_off], IN_REF(A_binary_b)[b_off]);
    OUT_REF(A_binary_y)[pos] = kann_act(ACT_ARGS(binary), v);
}

/* CPU devices: the tile's part of output row `row` (rows of the innermost dimension, `len`
 * long) as columns [*c0, *c1); false where the row lies outside the tile. */
inline bool kann_tile_row(uint row, uint len, uint begin, uint end, uint *c0, uint *c1) {
    const size_t first = (size_t)row * len;
    *c0 = begin > first ? (uint)(begin - first) : 0u;
    *c1 = (uint)min((size_t)len, end > first ? end - first : 0);
    return *c0 < *c1;
}

/* CPU devices: the rows (of the innermost dimension, len long) that tile [begin, end) of the
 * flat elements touches: [*r0, *r1). */
inline void kann_tile_rows(uint len, uint begin, uint end, uint *r0, uint *r1) {
    *r0 = len ? begin / len : 0;
    *r1 = len && end > begin ? (end - 1) / len + 1 : *r0;
}

/* n (<= 16) values p[j * stride], zero past n: a vector load where stride is 1 and n is 16, a
 * broadcast where stride is 0 (a broadcast operand), else lane by lane. */
inline float16 kann_load16(global const float *p, uint stride, uint n) {
    if (stride == 0) return (float16)(p[0]);
    if (stride == 1 && n == 16) return vload16(0, p);
    float t[16];
    for (uint j = 0; j < 16; j++)
        t[j] = j < n ? p[(size_t)j * stride] : 0.0f;
    return vload16(0, t);
}

/* y[0..n) = v, n <= 16 */
inline void kann_store16(float16 v, global float *y, uint n) {
    if (n == 16) {
        vstore16(v, 0, y);
        return;
    }
    float t[16];
    vstore16(v, 0, t);
    for (uint j = 0; j < n; j++)
        y[j] = t[j];
}

/* f32_binary for CPU devices (local size 1): a band of output rows (the innermost dimension)
 * per work-item (kann_band), the multi-index computed once per row and the row 16 elements at a
 * time. One work-item per element, two divisions per dimension each, took 25-50x the device
 * time on swin_t's 90 broadcast adds and multiplies. NDRange: (bands of rows). */
kernel void f32_binary_rows(KANN_KERNEL_ARGS) {
    const uint rank = U(A_binary_rank), op = U(A_binary_op), len = U(A_binary_dims + rank - 1);
    const uint sa = U(A_binary_a_strides + rank - 1), sb = U(A_binary_b_strides + rank - 1);
    const uint act = U(A_binary_act_kind);
    const float alpha = F(A_binary_act_alpha), beta = F(A_binary_act_beta);
    global const float *a = IN_REF(A_binary_a), *b = IN_REF(A_binary_b);
    global float *y = OUT_REF(A_binary_y);
    uint r0, r1, lo, hi;
    kann_tile_rows(len, TILE_BEGIN, TILE_END, &r0, &r1);
    kann_band(r1 - r0, 0, &lo, &hi);
    for (uint row = r0 + lo; row < r0 + hi; row++) {
        uint c0, c1;
        if (!kann_tile_row(row, len, TILE_BEGIN, TILE_END, &c0, &c1)) continue;
        size_t a_off = 0, b_off = 0;
        uint rest = row;
        for (int d = (int)rank - 2; d >= 0; d--) {
            uint dim = U(A_binary_dims + d), idx = rest % dim;
            rest /= dim;
            a_off += (size_t)idx * U(A_binary_a_strides + d);
            b_off += (size_t)idx * U(A_binary_b_strides + d);
        }
        global float *yr = y + (size_t)row * len;
        for (uint c = c0; c < c1; c += 16) {
            const uint n = min(16u, c1 - c);
            float16 v = kann_binary16(op, kann_load16(a + a_off + (size_t)c * sa, sa, n),
                                      kann_load16(b + b_off + (size_t)c * sb, sb, n));
            kann_store16(kann_act16(act, alpha, beta, v), yr + c, n);
        }
    }
}

/* NDRange: (tile elements). In place (x == y) is fine: each element is read then written by
 * the same work-item. */
kernel void f32_act(KANN_KERNEL_ARGS) {
    uint i = TILE_BEGIN + get_global_id(0);
    if (i >= TILE_END) return;
    OUT_REF(A_act_y)[i] = kann_act(ACT_ARGS(act), IN_REF(A_act_x)[i]);
}

/* NDRange: (inner, planes of the tile). */
kernel void f32_channel_affine(KANN_KERNEL_ARGS) {
    uint i = get_global_id(0), p = TILE_BEGIN + get_global_id(1);
    const uint inner = U(A_channel_affine_inner);
    if (i >= inner || p >= TILE_END) return;
    uint c = p % U(A_channel_affine_channels);
    size_t e = (size_t)p * inner + i;
    float v = IN_REF(A_channel_affine_x)[e] * IN_REF(A_channel_affine_scale)[c] +
              IN_REF(A_channel_affine_shift)[c];
    OUT_REF(A_channel_affine_y)[e] = kann_act(ACT_ARGS(channel_affine), v);
}

/* f32_channel_affine for CPU devices (local size 1): a band of the tile's planes per work-item
 * (kann_band), each plane 16 elements at a time (densenet121's 62 unfolded batch norms ran one
 * work-item per element). NDRange: (bands of planes). In place is fine, as above. */
kernel void f32_channel_affine_rows(KANN_KERNEL_ARGS) {
    const uint inner = U(A_channel_affine_inner), channels = U(A_channel_affine_channels);
    const uint act = U(A_channel_affine_act_kind);
    const float alpha = F(A_channel_affine_act_alpha), beta = F(A_channel_affine_act_beta);
    global const float *x = IN_REF(A_channel_affine_x);
    global const float *scale = IN_REF(A_channel_affine_scale);
    global const float *shift = IN_REF(A_channel_affine_shift);
    global float *y = OUT_REF(A_channel_affine_y);
    uint lo, hi;
    kann_band(TILE_END - TILE_BEGIN, 0, &lo, &hi);
    for (uint p = TILE_BEGIN + lo; p < TILE_BEGIN + hi; p++) {
        const float s = scale[p % channels], t = shift[p % channels];
        global const float *xp = x + (size_t)p * inner;
        global float *yp = y + (size_t)p * inner;
        for (uint i = 0; i < inner; i += 16) {
            const uint n = min(16u, inner - i);
            const float16 v = kann_load16(xp + i, 1, n) * s + t;
            kann_store16(kann_act16(act, alpha, beta, v), yp + i, n);
        }
    }
}
