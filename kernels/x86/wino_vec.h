/* The F(4x4, 3x3) Winograd transforms of six values on vectors of vec_math.h (KANN_VEC_BITS
 * set by the including variant), shared by the AVX2 and AVX-512 conv2d_winograd variants; the
 * same arithmetic as kann_wino4_bt and kann_wino4_at of ref/conv2d_winograd.h. */
#ifndef KANN_X86_WINO_VEC_H
#define KANN_X86_WINO_VEC_H

/* o = B^T d. */
static inline __attribute__((always_inline)) void wino_bt4(const vf d[6], vf o[6]) {
    const vf four = vf_set1(4.0f), minus4 = vf_set1(-4.0f), minus5 = vf_set1(-5.0f);
    vf a = vf_fmadd(minus4, d[2], d[4]), b = vf_fmadd(minus4, d[1], d[3]);
    vf c = vf_sub(d[4], d[2]), e = vf_sub(d[3], d[1]);
    e = vf_add(e, e);
    o[0] = vf_add(vf_fmadd(minus5, d[2], vf_mul(four, d[0])), d[4]);
    o[1] = vf_add(a, b);
    o[2] = vf_sub(a, b);
    o[3] = vf_add(c, e);
    o[4] = vf_sub(c, e);
    o[5] = vf_add(vf_fmadd(minus5, d[3], vf_mul(four, d[1])), d[5]);
}

/* o = A^T m. */
static inline __attribute__((always_inline)) void wino_at4(const vf m[6], vf o[4]) {
    vf a = vf_add(m[1], m[2]), b = vf_sub(m[1], m[2]);
    vf c = vf_add(m[3], m[4]), d = vf_sub(m[3], m[4]);
    o[0] = vf_add(vf_add(m[0], a), c);
    o[1] = vf_fmadd(vf_set1(2.0f), d, b);
    o[2] = vf_fmadd(vf_set1(4.0f), c, a);
    o[3] = vf_add(vf_fmadd(vf_set1(8.0f), d, b), m[5]);
}

#endif
