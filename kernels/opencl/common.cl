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
/* A kernel of two tile axes: the range of the axis its tile runs along, [b0, e0) for axis 0 or
 * [b1, e1) for axis 1, narrowed to the tile; the other keeps the whole extent it holds. */
#define KANN_TILE_RANGES(b0, e0, b1, e1)                                                           \
    do {                                                                                           \
        if (TILE_AXIS == 0) {                                                                      \
            b0 = TILE_BEGIN;                                                                       \
            e0 = TILE_END;                                                                         \
        } else {                                                                                   \
            b1 = TILE_BEGIN;                                                                       \
            e1 = TILE_END;                                                                         \
        }                                                                                          \
    } while (0)

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

/* erf as a rational function on [-4, 4] (where float erf reaches +-1), the CPU kernels'
 * vf_erf (kernels/x86/vec_math.h): absolute error below 5e-7. PoCL's erf is a library call
 * per lane (about 6 ns per element); this is a dozen vector multiply-adds and one division.
 * KANN_DEFINE_ERF(name, T) defines it on a float type T (act_vec.cl: the vector type VT). */
#define KANN_DEFINE_ERF(name, T)                                                                   \
    inline T name(T x) {                                                                           \
        x = clamp(x, -4.0f, 4.0f);                                                                 \
        const T x2 = x * x;                                                                        \
        T p = (T)(-2.72614225801306e-10f);                                                         \
        p = fma(p, x2, (T)(2.77068142495902e-08f));                                                \
        p = fma(p, x2, (T)(-2.10102402082508e-06f));                                               \
        p = fma(p, x2, (T)(-5.69250639462346e-05f));                                               \
        p = fma(p, x2, (T)(-7.34990630326855e-04f));                                               \
        p = fma(p, x2, (T)(-2.95459980854025e-03f));                                               \
        p = fma(p, x2, (T)(-1.60960333262415e-02f));                                               \
        T q = (T)(-1.45660718464996e-05f);                                                         \
        q = fma(q, x2, (T)(-2.13374055278905e-04f));                                               \
        q = fma(q, x2, (T)(-1.68282697438203e-03f));                                               \
        q = fma(q, x2, (T)(-7.37332916720468e-03f));                                               \
        q = fma(q, x2, (T)(-1.42647390514189e-02f));                                               \
        return p * x / q;                                                                          \
    }
KANN_DEFINE_ERF(kann_erf, float)

/* GELU, x / 2 * (1 + erf(x / sqrt(2))), with the rational erf: a NaN x stays NaN through x / 2
 * (the clamp may turn erf's argument into +-4). */
#define KANN_GELU(x, erf_fn) fma(0.5f * (x), erf_fn((x)*0.70710678118654752f), 0.5f * (x))

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
        return KANN_GELU(x, kann_erf);
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
    if (kind == 2) { /* kann_clip's comparisons: NaN stays NaN */
        v = select(v, (float16)(alpha), v < (float16)(alpha));
        return select(v, (float16)(beta), v > (float16)(beta));
    }
    float t[16];
    vstore16(v, 0, t);
    for (int j = 0; j < 16; j++)
        t[j] = kann_act(kind, alpha, beta, t[j]);
    return vload16(0, t);
}

#define ACT_ARGS(family)                                                                           \
    U(A_##family##_act_kind), F(A_##family##_act_alpha), F(A_##family##_act_beta)
