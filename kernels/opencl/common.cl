/* Shared by every OpenCL kernel: how a kernel reads its record's argument struct, and the
 * activation epilogues. The host prepends the A_<family>_<field> word offsets, generated from
 * the C structs of kernels/kann_kernels.h with offsetof, so the two layouts cannot drift.
 *
 * Every kernel takes the same four arguments: the ARGS section as 32-bit words, the word index
 * of its record's struct, the arena and the constants. A (space, offset) reference in the
 * struct becomes a pointer into the arena or the constants buffer. */

#define KANN_KERNEL_ARGS                                                                           \
    global const uint *args, uint at, global float *arena, global const float *consts

#define U(f) (args[at + (f)])
#define F(f) as_float(args[at + (f)])
#define I(f) ((int)args[at + (f)])
/* kann_ref: u32 space, u32 reserved, u64 byte offset (4-byte aligned: validated at load) */
#define REF_SPACE(f) U(f)
#define REF_INDEX(f) ((size_t)(((((ulong)U((f) + 3)) << 32) | (ulong)U((f) + 2)) >> 2))
#define IN_REF(f)                                                                                  \
    (REF_SPACE(f) == 2 ? consts + REF_INDEX(f) : (global const float *)arena + REF_INDEX(f))
#define OUT_REF(f) (arena + REF_INDEX(f))

/* kann_tile is the first member of every argument struct. */
#define TILE_AXIS U(0)
#define TILE_BEGIN U(1)
#define TILE_END U(2)

/* CPU-style kernels (local size 1) walk rows or blocks in bands, a few large work-items rather
 * than one per element: PoCL spends microseconds on each work-group. The n units are split
 * evenly over the global size of `axis`; work-item i along it takes units [*lo, *hi). */
inline void kann_band(uint n, uint axis, uint *lo, uint *hi) {
    uint items = (uint)get_global_size(axis), per = (n + items - 1) / items;
    *lo = min(n, (uint)get_global_id(axis) * per);
    *hi = min(n, *lo + per);
}

/* kann_act_kind, applied one value at a time (the kind known only at run time). Comparisons
 * are written so that NaN stays NaN, as in the reference kernels. */
inline float kann_clip(float x, float lo, float hi) {
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

/* log(1 + exp(x)) without overflow for large x. */
inline float kann_softplus(float x) {
    return x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x));
}

/* tanh saturated to exactly +-1 where float tanh is (|x| >= 10), as C's tanhf: some device
 * libraries return 1 - ulp there, which turns GELU_TANH(-inf) into -inf instead of NaN. */
inline float kann_tanh(float x) {
    return fabs(x) >= 10.0f ? copysign(1.0f, x) : tanh(x);
}

inline float kann_act(uint kind, float alpha, float beta, float x) {
    switch (kind) {
    case 1:
        return x < 0.0f ? 0.0f : x;
    case 2:
        return kann_clip(x, alpha, beta);
    case 3:
        return x < 0.0f ? alpha * x : x;
    case 4:
        return 1.0f / (1.0f + exp(-x));
    case 5:
        return kann_clip(alpha * x + beta, 0.0f, 1.0f);
    case 6:
        return x * kann_clip(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f);
    case 7:
        return kann_tanh(x);
    case 8:
        return x < 0.0f ? alpha * expm1(x) : x;
    case 9:
        return beta * (x <= 0.0f ? alpha * expm1(x) : x);
    case 10:
        return x < 0.0f ? alpha * expm1(x / alpha) : x;
    case 11:
        return kann_softplus(x);
    case 12:
        return x / (1.0f + fabs(x));
    case 13:
        return x > alpha ? x : 0.0f;
    case 14:
        return 0.5f * x * (1.0f + erf(x * 0.70710678118654752f));
    case 15:
        return 0.5f * x * (1.0f + kann_tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case 16:
        return x * kann_tanh(kann_softplus(x));
    case 17:
        return x / (1.0f + exp(-x));
    default:
        return x;
    }
}

/* kann_act on 16 lanes: identity and ReLU as vector selects, the others lane by lane. */
inline float16 kann_act16(uint kind, float alpha, float beta, float16 v) {
    if (kind == 0) return v;
    if (kind == 1) return select(v, (float16)(0.0f), v < (float16)(0.0f));
    float t[16];
    vstore16(v, 0, t);
    for (int j = 0; j < 16; j++)
        t[j] = kann_act(kind, alpha, beta, t[j]);
    return vload16(0, t);
}

#define ACT_ARGS(family)                                                                           \
    U(A_##family##_act_kind), F(A_##family##_act_alpha), F(A_##family##_act_beta)
