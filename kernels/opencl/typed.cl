/* The elementwise kernels over several dtypes (float32, uint8, int8, int32, int64, bool): unary,
 * binary_typed, ternary and cast, one work-item per output element (float unary on CPU devices:
 * bands, unary_f32_band). Integers compute in long and wrap around at the store, as the
 * reference kernels do. */

/* Round half to even without depending on the rounding mode (-0.4 rounds to -0). */
inline float kann_round_half_even(float x) {
    float r = floor(x), diff = x - r;
    if (diff > 0.5f || (diff == 0.5f && fmod(r, 2.0f) != 0.0f)) r += 1.0f;
    return copysign(r, x);
}

/* The float unary ops (0-21) that are one OpenCL builtin for float and float16 alike: the
 * cases of kann_unary_f32 and kann_unary16, written once. */
#define KANN_UNARY_BUILTIN_CASES(v)                                                                \
    case 0:                                                                                        \
        return fabs(v);                                                                            \
    case 1:                                                                                        \
        return -(v);                                                                               \
    case 3:                                                                                        \
        return exp(v);                                                                             \
    case 4:                                                                                        \
        return log(v);                                                                             \
    case 5:                                                                                        \
        return sqrt(v);                                                                            \
    case 6:                                                                                        \
        return 1.0f / (v);                                                                         \
    case 7:                                                                                        \
        return floor(v);                                                                           \
    case 8:                                                                                        \
        return ceil(v);                                                                            \
    case 10:                                                                                       \
        return sin(v);                                                                             \
    case 11:                                                                                       \
        return cos(v);                                                                             \
    case 12:                                                                                       \
        return tan(v);                                                                             \
    case 13:                                                                                       \
        return asin(v);                                                                            \
    case 14:                                                                                       \
        return acos(v);                                                                            \
    case 15:                                                                                       \
        return atan(v);                                                                            \
    case 16:                                                                                       \
        return sinh(v);                                                                            \
    case 17:                                                                                       \
        return cosh(v);                                                                            \
    case 18:                                                                                       \
        return asinh(v);                                                                           \
    case 19:                                                                                       \
        return acosh(v);                                                                           \
    case 20:                                                                                       \
        return atanh(v);                                                                           \
    case 21:                                                                                       \
        return erf(v);

inline float kann_unary_f32(uint op, float v) {
    switch (op) {
        KANN_UNARY_BUILTIN_CASES(v)
    case 2: /* 0, -0 and NaN stay */
        return v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v;
    default: /* 9 */
        return kann_round_half_even(v);
    }
}

/* ABS, NEG, SIGN on integers (wrapping: the most negative value is its own absolute value),
 * NOT on bool. */
inline long kann_unary_int(uint op, long v) {
    switch (op) {
    case 0:
        return v < 0 ? (long)(0 - (ulong)v) : v;
    case 1:
        return (long)(0 - (ulong)v);
    case 2:
        return (v > 0) - (v < 0);
    default: /* 24: NOT */
        return v == 0;
    }
}

/* kann_unary_f32 on 16 lanes: the ops with vector builtins as vectors, the others (SIGN,
 * ROUND) lane by lane. */
inline float16 kann_unary16(uint op, float16 v) {
    switch (op) {
        KANN_UNARY_BUILTIN_CASES(v)
    default: {
        float t[16];
        vstore16(v, 0, t);
        for (int j = 0; j < 16; j++)
            t[j] = kann_unary_f32(op, t[j]);
        return vload16(0, t);
    }
    }
}

/* unary on float32 with a float32 result (ops 0-21) for CPU devices (local size 1): a band of
 * the tile's elements per work-item (kann_band), 16 at a time. One work-item per element in
 * work-groups of 64 took 47 ns per Erf on PoCL (swin_t's GELUs). NDRange: (bands). */
kernel void unary_f32_band(KANN_KERNEL_ARGS) {
    const uint op = U(A_unary_op), begin = TILE_BEGIN;
    global const float *x = (global const float *)IN_BYTES(A_unary_x);
    global float *y = (global float *)OUT_BYTES(A_unary_y);
    uint lo, hi;
    kann_band(TILE_END - begin, 0, &lo, &hi);
    for (uint i = begin + lo; i < begin + hi; i += 16) {
        const uint n = min(16u, begin + hi - i);
        if (n == 16) {
            vstore16(kann_unary16(op, vload16(0, x + i)), 0, y + i);
        } else {
            for (uint j = 0; j < n; j++)
                y[i + j] = kann_unary_f32(op, x[i + j]);
        }
    }
}

/* NDRange: (tile elements). */
kernel void unary(KANN_KERNEL_ARGS) {
    ulong i = (ulong)TILE_BEGIN + get_global_id(0);
    if (i >= TILE_END) return;
    const uint op = U(A_unary_op), dtype = U(A_unary_dtype);
    global const uchar *x = IN_BYTES(A_unary_x);
    global uchar *y = OUT_BYTES(A_unary_y);
    if (dtype != DT_F32) {
        kann_store_int(y, dtype, i, kann_unary_int(op, kann_load_int(x, dtype, i)));
        return;
    }
    float v = ((global const float *)x)[i];
    if (op == 22) { /* IS_NAN */
        y[i] = v != v;
    } else if (op == 23) { /* IS_INF: +inf with flags bit 0, -inf with bit 1 */
        uint flags = U(A_unary_flags);
        y[i] = ((flags & 1u) && v == INFINITY) || ((flags & 2u) && v == -INFINITY);
    } else {
        ((global float *)y)[i] = kann_unary_f32(op, v);
    }
}

/* a^b with wrap-around; a negative b gives the truncated 1 / a^-b. */
inline long kann_int_pow(long a, long b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    ulong base = (ulong)a, r = 1;
    for (ulong e = (ulong)b; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return (long)r;
}

/* Integer arithmetic with wrap-around. A zero divisor gives 0, LONG_MIN / -1 wraps. */
inline long kann_int_arith(uint op, long x, long z) {
    ulong ux = (ulong)x, uz = (ulong)z;
    switch (op) {
    case 0:
        return (long)(ux + uz);
    case 1:
        return (long)(ux - uz);
    case 2:
        return (long)(ux * uz);
    case 3:
        return z == 0 ? 0 : z == -1 ? (long)(0 - ux) : x / z;
    case 4:
        return kann_int_pow(x, z);
    case 5:
        return x > z ? x : z;
    case 6:
        return x < z ? x : z;
    case 7: /* FMOD: the sign of x */
        return z == 0 || z == -1 ? 0 : x % z;
    case 8: { /* MOD: the sign of z */
        if (z == 0 || z == -1) return 0;
        long r = x % z;
        return r != 0 && ((r < 0) != (z < 0)) ? r + z : r;
    }
    case 18: /* SHIFT_LEFT, uint8 only */
        return z >= 8 ? 0 : (long)((ux << z) & 0xffu);
    case 19:
        return z >= 8 ? 0 : (long)(ux >> z);
    default:
        return 0;
    }
}

/* EQUAL .. GREATER_OR_EQUAL from the three outcomes (all false for a NaN operand). */
inline uchar kann_compare(uint op, int less, int equal, int greater) {
    switch (op) {
    case 10:
        return equal;
    case 11:
        return less;
    case 12:
        return less || equal;
    case 13:
        return greater;
    default: /* 14 */
        return greater || equal;
    }
}

/* NDRange: (tile elements). y is of dtype, or bool for the comparisons and the bool ops. */
kernel void binary_typed(KANN_KERNEL_ARGS) {
    ulong pos = (ulong)TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    const uint op = U(A_binary_typed_op), dtype = U(A_binary_typed_dtype);
    size_t a_off = 0, b_off = 0;
    ulong rest = pos;
    for (int d = (int)U(A_binary_typed_rank) - 1; d >= 0; d--) {
        uint dim = U(A_binary_typed_dims + d);
        size_t idx = rest % dim;
        rest /= dim;
        a_off += idx * U(A_binary_typed_a_strides + d);
        b_off += idx * U(A_binary_typed_b_strides + d);
    }
    global const uchar *a = IN_BYTES(A_binary_typed_a), *b = IN_BYTES(A_binary_typed_b);
    global uchar *y = OUT_BYTES(A_binary_typed_y);
    const int comparison = op >= 10 && op <= 14;
    if (dtype == DT_F32) { /* comparisons only */
        float x = ((global const float *)a)[a_off], z = ((global const float *)b)[b_off];
        y[pos] = kann_compare(op, x<z, x == z, x> z);
    } else if (dtype == DT_BOOL) {
        int x = a[a_off] != 0, z = b[b_off] != 0;
        int v = op == 15 ? x && z : op == 16 ? x || z : x != z;
        y[pos] = (uchar)(v ^ (op == 10)); /* EQUAL is the negated XOR */
    } else {
        long x = kann_load_int(a, dtype, a_off), z = kann_load_int(b, dtype, b_off);
        if (comparison)
            y[pos] = kann_compare(op, x<z, x == z, x> z);
        else
            kann_store_int(y, dtype, pos, kann_int_arith(op, x, z));
    }
}

/* NDRange: (tile elements). WHERE: y = a ? b : c (a bool, any element size); CLIP: y =
 * min(max(a, b), c), a NaN a staying NaN. */
kernel void ternary(KANN_KERNEL_ARGS) {
    ulong pos = (ulong)TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    const uint dtype = U(A_ternary_dtype);
    size_t a_off = 0, b_off = 0, c_off = 0;
    ulong rest = pos;
    for (int d = (int)U(A_ternary_rank) - 1; d >= 0; d--) {
        uint dim = U(A_ternary_dims + d);
        size_t idx = rest % dim;
        rest /= dim;
        a_off += idx * U(A_ternary_a_strides + d);
        b_off += idx * U(A_ternary_b_strides + d);
        c_off += idx * U(A_ternary_c_strides + d);
    }
    global const uchar *a = IN_BYTES(A_ternary_a), *b = IN_BYTES(A_ternary_b),
                       *c = IN_BYTES(A_ternary_c);
    global uchar *y = OUT_BYTES(A_ternary_y);
    if (U(A_ternary_op) == 0) {
        if (a[a_off])
            kann_copy_elem(y, pos, b, b_off, kann_dtype_size(dtype));
        else
            kann_copy_elem(y, pos, c, c_off, kann_dtype_size(dtype));
    } else if (dtype == DT_F32) {
        ((global float *)y)[pos] =
            kann_clip(((global const float *)a)[a_off], ((global const float *)b)[b_off],
                      ((global const float *)c)[c_off]);
    } else {
        long v = kann_load_int(a, dtype, a_off), lo = kann_load_int(b, dtype, b_off),
             hi = kann_load_int(c, dtype, c_off);
        v = v < lo ? lo : v;
        kann_store_int(y, dtype, pos, v > hi ? hi : v);
    }
}

/* Float to integer: truncation toward zero, saturation at the type's range, NaN to 0. Every
 * bound below is exact in float, and clamping before truncating gives what the reference's
 * clamp in double gives. */
inline long kann_float_to_int(float v, uint to) {
    if (v != v) return 0;
    switch (to) {
    case DT_U8:
        return (long)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    case DT_I8:
        return (long)(v < -128.0f ? -128.0f : v > 127.0f ? 127.0f : v);
    case DT_I32:
        return v >= 2147483648.0f ? 2147483647L : v <= -2147483648.0f ? -2147483648L : (long)v;
    default: /* I64: the largest float below 2^63 converts exactly */
        return v >= 9223372036854775808.0f    ? LONG_MAX
               : v <= -9223372036854775808.0f ? LONG_MIN
                                              : (long)v;
    }
}

/* NDRange: (tile elements). Anything to bool is x != 0 (NaN is true). */
kernel void cast(KANN_KERNEL_ARGS) {
    ulong i = (ulong)TILE_BEGIN + get_global_id(0);
    if (i >= TILE_END) return;
    const uint from = U(A_cast_from), to = U(A_cast_to);
    global const uchar *x = IN_BYTES(A_cast_x);
    global uchar *y = OUT_BYTES(A_cast_y);
    if (from == DT_F32) {
        float v = ((global const float *)x)[i];
        if (to == DT_F32)
            ((global float *)y)[i] = v;
        else if (to == DT_BOOL)
            y[i] = v != 0.0f;
        else
            kann_store_int(y, to, i, kann_float_to_int(v, to));
        return;
    }
    long v = kann_load_int(x, from, i);
    if (from == DT_BOOL) v = v != 0;
    if (to == DT_F32)
        ((global float *)y)[i] = (float)v;
    else
        kann_store_int(y, to, i, v);
}

/* NDRange: (tile lines). cumsum: the running sum of line (o, i) along the middle axis, as the
 * reference walks it (forward or reverse, inclusive or exclusive); integers wrap around. */
kernel void cumsum(KANN_KERNEL_ARGS) {
    ulong line = (ulong)TILE_BEGIN + get_global_id(0);
    if (line >= TILE_END) return;
    const ulong len = U(A_cumsum_len), inner = U(A_cumsum_inner);
    const uint dtype = U(A_cumsum_dtype);
    const int exclusive = U(A_cumsum_exclusive) != 0, reverse = U(A_cumsum_reverse) != 0;
    const ulong o = line / inner, i = line % inner;
    global const uchar *x = IN_BYTES(A_cumsum_x);
    global uchar *y = OUT_BYTES(A_cumsum_y);
    float fsum = 0.0f;
    ulong isum = 0;
    for (ulong t = 0; t < len; t++) {
        ulong e = (o * len + (reverse ? len - 1 - t : t)) * inner + i;
        if (dtype == DT_F32) {
            float v = ((global const float *)x)[e];
            ((global float *)y)[e] = exclusive ? fsum : fsum + v;
            fsum += v;
        } else {
            ulong v = (ulong)kann_load_int(x, dtype, e);
            kann_store_int(y, dtype, e, (long)(exclusive ? isum : isum + v));
            isum += v;
        }
    }
}

/* topk: whether a ranks strictly before b (kernels/ref/topk.c): larger (or smaller) first, a
 * NaN after every number, equal values never. */
inline int kann_topk_before_f32(float a, float b, int largest) {
    if (isnan(a)) return 0;
    if (isnan(b)) return 1;
    return largest ? a > b : a < b;
}

/* NDRange: (tile lines). The k best of line (o, i), kept sorted in the outputs as they are
 * found, as the reference does. */
kernel void topk(KANN_KERNEL_ARGS) {
    ulong line = (ulong)TILE_BEGIN + get_global_id(0);
    if (line >= TILE_END) return;
    const ulong len = U(A_topk_len), inner = U(A_topk_inner), k = U(A_topk_k);
    const uint dtype = U(A_topk_dtype);
    const int largest = U(A_topk_largest) != 0, is_f32 = dtype == DT_F32;
    const ulong o = line / inner, i = line % inner, base = o * k * inner + i;
    global const uchar *x = IN_BYTES(A_topk_x);
    global uchar *vals = OUT_BYTES(A_topk_values);
    global long *idx = (global long *)OUT_BYTES(A_topk_indices);
    global float *vf_out = (global float *)vals;
    ulong count = 0;
    for (ulong j = 0; j < len; j++) {
        ulong e = (o * len + j) * inner + i;
        float vf = is_f32 ? ((global const float *)x)[e] : 0.0f;
        long vi = is_f32 ? 0 : kann_load_int(x, dtype, e);
        ulong r = count < k ? count : k;
        while (r > 0) {
            ulong prev = base + (r - 1) * inner;
            int before = is_f32 ? kann_topk_before_f32(vf, vf_out[prev], largest)
                                : (largest ? vi > kann_load_int(vals, dtype, prev)
                                           : vi < kann_load_int(vals, dtype, prev));
            if (!before) break;
            if (r < k) {
                ulong at = base + r * inner;
                if (is_f32)
                    vf_out[at] = vf_out[prev];
                else
                    kann_store_int(vals, dtype, at, kann_load_int(vals, dtype, prev));
                idx[at] = idx[prev];
            }
            r--;
        }
        if (r < k) {
            ulong at = base + r * inner;
            if (is_f32)
                vf_out[at] = vf;
            else
                kann_store_int(vals, dtype, at, vi);
            idx[at] = (long)j;
            if (count < k) count++;
        }
    }
}
