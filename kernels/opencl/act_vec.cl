/* The activation epilogue on a vector type VT, with the kind fixed at build time (-D ACT=k),
 * for the specialized conv2d and matmul programs. Same semantics as kann_act (NaN stays NaN). */
#ifndef ACT
#define ACT 0
#endif

inline VT kann_clip_vec(VT v, float lo, float hi) {
    v = select(v, (VT)(lo), v < (VT)(lo));
    return select(v, (VT)(hi), v > (VT)(hi));
}

#if ACT == 14
KANN_DEFINE_ERF(kann_erf_vec, VT)
#endif

inline VT kann_act_vec(VT v, float alpha, float beta) {
#if ACT == 1
    return select(v, (VT)(0.0f), v < (VT)(0.0f));
#elif ACT == 2
    return kann_clip_vec(v, alpha, beta);
#elif ACT == 3
    return select(v, v * alpha, v < (VT)(0.0f));
#elif ACT == 4
    return (VT)(1.0f) / ((VT)(1.0f) + exp(-v));
#elif ACT == 5
    return kann_clip_vec(v * alpha + (VT)(beta), 0.0f, 1.0f);
#elif ACT == 6
    return v * kann_clip_vec(v * (1.0f / 6.0f) + (VT)(0.5f), 0.0f, 1.0f);
#elif ACT == 7
    return tanh(v);
#elif ACT == 8
    return select(v, alpha * expm1(v), v < (VT)(0.0f));
#elif ACT == 9
    return beta * select(v, alpha * expm1(v), v <= (VT)(0.0f));
#elif ACT == 10
    return select(v, alpha * expm1(v / alpha), v < (VT)(0.0f));
#elif ACT == 11
    return select(log1p(exp(v)), v + log1p(exp(-v)), v > (VT)(0.0f));
#elif ACT == 12
    return v / ((VT)(1.0f) + fabs(v));
#elif ACT == 13
    return select((VT)(0.0f), v, v > (VT)(alpha));
#elif ACT == 14
    return KANN_GELU(v, kann_erf_vec);
#elif ACT == 15
    return 0.5f * v * ((VT)(1.0f) + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
#elif ACT == 16
    return v * tanh(select(log1p(exp(v)), v + log1p(exp(-v)), v > (VT)(0.0f)));
#elif ACT == 17
    return v / ((VT)(1.0f) + exp(-v));
#else
    return v;
#endif
}
