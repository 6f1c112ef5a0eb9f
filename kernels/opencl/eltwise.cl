/* f32_binary, f32_act, f32_channel_affine: one output element per work-item, shapes read from
 * the argument struct at run time (these kernels are memory-bound: nothing to specialize). */

/* NDRange: (tile elements). Multi-index of the flat output position, walked innermost first. */
kernel void f32_binary(KANN_KERNEL_ARGS) {
    uint pos = TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    const uint rank = U(A_binary_rank), op = U(A_binary_op);
    size_t a_off = 0, b_off = 0;
    uint rest = pos;
    for (int d = (int)rank - 1; d >= 0; d--) {
        uint dim = U(A_binary_dims + d), idx = rest % dim;
        rest /= dim;
        a_off += (size_t)idx * U(A_binary_a_strides + d);
        b_off += (size_t)idx * U(A_binary_b_strides + d);
    }
    float a = IN_REF(A_binary_a)[a_off], b = IN_REF(A_binary_b)[b_off], v;
    switch (op) {
    case 0:
        v = a + b;
        break;
    case 1:
        v = a - b;
        break;
    case 2:
        v = a * b;
        break;
    case 3:
        v = a / b;
        break;
    case 4:
        v = pow(a, b);
        break;
    case 5: /* NaN when either is NaN, as the reference */
        v = isnan(a) || isnan(b) ? a + b : fmax(a, b);
        break;
    case 6:
        v = isnan(a) || isnan(b) ? a + b : fmin(a, b);
        break;
    case 7:
        v = fmod(a, b);
        break;
    default: /* 9: PRelu; the validator admits no other float op */
        v = a < 0.0f ? a * b : a;
        break;
    }
    OUT_REF(A_binary_y)[pos] = kann_act(ACT_ARGS(binary), v);
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
