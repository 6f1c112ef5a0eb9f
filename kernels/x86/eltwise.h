/* Elementwise kernels written once over vec_math.h's width-neutral vectors: f32_binary (the
 * arithmetic ops with broadcasting) and f32_act (a standalone activation).
 * eltwise_avx512.c and eltwise_avx2.c define KANN_VEC_BITS, the two entry points' names
 * (ELTWISE_BINARY, ELTWISE_ACT) and include this file.
 *
 * Binary rows whose operands are contiguous or one broadcast scalar ((a, b) strides (1, 1),
 * (1, 0), (0, 1)) run in vectors for ADD, SUB, MUL, DIV, MAX, MIN, PRELU and POW by the
 * constant exponent 2 or 3: the same IEEE operations as the reference (kernels/ref/binary.h),
 * so the same results, NaNs included. Every other row runs the reference's row function. The
 * activation follows on each block of a row while the block is in L1: in vectors where
 * simd_act.h has the kind (its approximations, within a few ulp of libm's), else by the
 * reference's scalar pass. f32_act is that activation pass over its whole tile. */
#ifndef ELTWISE_BINARY
#error "define KANN_VEC_BITS, ELTWISE_BINARY and ELTWISE_ACT first"
#endif

#include <stdint.h>

#include "kann_x86.h"
#include "ref/act.h"
#include "ref/binary.h"
#include "vec_math.h"
#include "simd_act.h"

/* Inlined into each loop that passes a constant operation, so that the switch folds away. */
#define ELT_INLINE static inline __attribute__((always_inline))

/* The operations of the vector rows: the binary ops and the two constant powers. */
typedef enum elt_op {
    ELT_ADD,
    ELT_SUB,
    ELT_MUL,
    ELT_DIV,
    ELT_MAX,
    ELT_MIN,
    ELT_PRELU,
    ELT_SQUARE,
    ELT_CUBE,
    ELT_REFERENCE, /* none: the reference's row */
} elt_op;

/* r in the lanes where x and z are both numbers, x + z (a NaN, as the reference's max and min
 * give) where either is NaN. */
ELT_INLINE vf elt_nan_wins(vf r, vf x, vf z) {
#if KANN_VEC_BITS == 512
    return _mm512_mask_add_ps(r, _mm512_cmp_ps_mask(x, z, _CMP_UNORD_Q), x, z);
#else
    return _mm256_blendv_ps(r, _mm256_add_ps(x, z), _mm256_cmp_ps(x, z, _CMP_UNORD_Q));
#endif
}

/* x < 0 ? x * slope : x, lane by lane (a blend rather than arithmetic on both sides, so that
 * an infinite or NaN slope reaches only the negative lanes, as in the reference). */
ELT_INLINE vf elt_prelu(vf x, vf slope) {
    const vf zero = vf_set1(0.0f);
#if KANN_VEC_BITS == 512
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x, slope);
#else
    return _mm256_blendv_ps(x, _mm256_mul_ps(x, slope), _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
#endif
}

ELT_INLINE vf elt_apply(elt_op op, vf x, vf z) {
    switch (op) {
    case ELT_ADD:
        return vf_add(x, z);
    case ELT_SUB:
        return vf_sub(x, z);
    case ELT_MUL:
        return vf_mul(x, z);
    case ELT_DIV:
        return vf_div(x, z);
    case ELT_MAX: /* x > z ? x : z where both are numbers, as MAXPS */
        return elt_nan_wins(vf_max(x, z), x, z);
    case ELT_MIN:
        return elt_nan_wins(vf_min(x, z), x, z);
    case ELT_PRELU:
        return elt_prelu(x, z);
    case ELT_SQUARE:
        return vf_mul(x, x);
    case ELT_CUBE: /* (x * x) * x, the reference's order */
        return vf_mul(vf_mul(x, x), x);
    case ELT_REFERENCE:
        break;
    }
    return x; /* not reached: ELT_REFERENCE rows do not come here */
}

/* p[j .. j + len) (len in 1..KANN_VL), or p[0] in every lane when the operand does not
 * advance: broadcast from memory at each use rather than set up in a register per row, which
 * kept a vector live across the activation's call and measured a little slower on rows of one
 * vector. */
ELT_INLINE vf elt_load(const float *p, int advances, size_t j, size_t len) {
    if (!advances) return vf_set1(p[0]);
    return len == KANN_VL ? vf_load(p + j) : vf_load_n(p + j, len);
}

ELT_INLINE void elt_store(float *p, vf v, size_t len) {
    if (len == KANN_VL)
        vf_store(p, v);
    else
        vf_store_n(p, v, len);
}

/* y[j .. j + len) = a OP b there, len in 1..KANN_VL (the constant KANN_VL: full vectors). */
ELT_INLINE void elt_op_step(elt_op op, const float *a, int a_adv, const float *b, int b_adv,
                            float *y, size_t j, size_t len) {
    elt_store(y + j, elt_apply(op, elt_load(a, a_adv, j, len), elt_load(b, b_adv, j, len)), len);
}

/* y[0..n) = a OP b for n > 0, a and b contiguous (*_adv) or one scalar each. With op, a_adv
 * and b_adv constants this is a loop of a load or two, the operation and a store. On rows of
 * 8 vectors or more a masked head first brings the stores to a vector boundary: rows of a plane
 * (196 floats for 14x14) start anywhere, and full-width stores across cache lines made a
 * per-channel multiply 10 % slower than the reference's 16-byte vectors. Shorter rows (an
 * attention mask's 32) would pay more for the extra step than they save. */
ELT_INLINE void elt_op_row(elt_op op, const float *a, int a_adv, const float *b, int b_adv,
                           float *y, size_t n) {
    size_t j = 0;
    if (n >= 8 * KANN_VL) {
        j = ((0 - (uintptr_t)y) & (KANN_VL * sizeof(float) - 1)) / sizeof(float);
        if (j > 0) elt_op_step(op, a, a_adv, b, b_adv, y, 0, j);
    }
    for (; j + KANN_VL <= n; j += KANN_VL)
        elt_op_step(op, a, a_adv, b, b_adv, y, j, KANN_VL);
    if (j < n) elt_op_step(op, a, a_adv, b, b_adv, y, j, n - j);
}

/* The same for one of the three stride patterns, each a loop of its own. */
ELT_INLINE void elt_op_row_strided(elt_op op, const float *a, int a_adv, const float *b, int b_adv,
                                   float *y, size_t n) {
    if (a_adv && b_adv)
        elt_op_row(op, a, 1, b, 1, y, n);
    else if (a_adv)
        elt_op_row(op, a, 1, b, 0, y, n);
    else
        elt_op_row(op, a, 0, b, 1, y, n);
}

/* y[0..n) = act(x[0..n)) for n > 0 and a kind kann_act_vectorizes accepts; in place allowed.
 * act is a copy: a pointer into the arguments would be read again after every store (a vector
 * store may alias anything), and the kind's dispatch with it. */
static void elt_act_vec(kann_act act, const float *x, float *y, size_t n) {
    const vf lo = vf_set1(kann_act_lo(&act)), hi = vf_set1(kann_act_hi(&act));
    size_t j = 0;
    for (; j + KANN_VL <= n; j += KANN_VL)
        vf_store(y + j, vf_act(vf_load(x + j), &act, lo, hi));
    if (j < n) vf_store_n(y + j, vf_act(vf_load_n(x + j, n - j), &act, lo, hi), n - j);
}

/* y[0..n) = act(x[0..n)) for n > 0, in vectors where simd_act.h has the kind, else a copy and
 * the reference's scalar pass; in place allowed. Out of line: the binary rows, inlined into the
 * walk of the tile, call it only when there is an activation and stay small. */
static __attribute__((noinline)) void elt_act_row(const kann_act *act, const float *x, float *y,
                                                  size_t n) {
    if (kann_act_vectorizes(act)) {
        if (act->kind != KANN_ACT_NONE || x != y) elt_act_vec(*act, x, y, n);
        return;
    }
    if (x != y) elt_act_vec((kann_act){.kind = KANN_ACT_NONE}, x, y, n);
    kann_act_apply_row(act, y, n);
}

/* Floats per block of a row: the operation's output is still in L1 when the activation's pass
 * reads it back. */
#define ELT_BLOCK 1024

/* A row the vectors do not cover: the reference's row function, then the activation. Not
 * inlined either: the walk of the tile, into which the vector rows are inlined, stays small. */
static __attribute__((noinline)) void elt_reference_row(const kann_binary_args *p, const float *a,
                                                        size_t a_stride, const float *b,
                                                        size_t b_stride, float *y, size_t n) {
    kann_binary_row((kann_binary_op)p->op, a, a_stride, b, b_stride, y, n);
    if (p->act.kind != KANN_ACT_NONE) elt_act_row(&p->act, y, y, n);
}

/* One row of a binary tile: the vector operation op (ELT_REFERENCE: none) where both operands
 * are contiguous or one is a broadcast scalar, a block at a time, each followed by the
 * activation; else the reference's row. Inlined with a constant op into one row function per
 * operation, so that the per-row work (a row can be as short as a 4x4 plane) is a few tests. */
ELT_INLINE void elt_binary_row(elt_op op, const kann_binary_args *p, const float *a,
                               size_t a_stride, const float *b, size_t b_stride, float *y,
                               size_t n) {
    int a_adv = a_stride == 1, b_adv = b_stride == 1;
    if (op == ELT_REFERENCE || a_stride > 1 || b_stride > 1 || !(a_adv || b_adv)) {
        elt_reference_row(p, a, a_stride, b, b_stride, y, n);
        return;
    }
    for (size_t j = 0; j < n; j += ELT_BLOCK) {
        size_t len = n - j < ELT_BLOCK ? n - j : ELT_BLOCK;
        elt_op_row_strided(op, a + j * a_stride, a_adv, b + j * b_stride, b_adv, y + j, len);
        if (p->act.kind != KANN_ACT_NONE) elt_act_row(&p->act, y + j, y + j, len);
    }
}

/* The row functions (kann_binary_row_fn) of the ops, inlined into the walk of the tile: as
 * calls, each row paid a call and a prologue that realigned the stack to 64 bytes, and rows of
 * a 4x4 plane (a squeeze-excitation multiply at the end of a network) ran 20 % slower than the
 * reference's. */
#define ELT_ROW_FN(NAME, OP)                                                                       \
    ELT_INLINE void NAME(const kann_binary_args *p, const float *a, size_t a_stride,               \
                         const float *b, size_t b_stride, float *y, size_t n) {                    \
        elt_binary_row(OP, p, a, a_stride, b, b_stride, y, n);                                     \
    }
ELT_ROW_FN(elt_row_add, ELT_ADD)
ELT_ROW_FN(elt_row_sub, ELT_SUB)
ELT_ROW_FN(elt_row_mul, ELT_MUL)
ELT_ROW_FN(elt_row_div, ELT_DIV)
ELT_ROW_FN(elt_row_max, ELT_MAX)
ELT_ROW_FN(elt_row_min, ELT_MIN)
ELT_ROW_FN(elt_row_prelu, ELT_PRELU)
ELT_ROW_FN(elt_row_square, ELT_SQUARE)
ELT_ROW_FN(elt_row_cube, ELT_CUBE)
ELT_ROW_FN(elt_row_reference, ELT_REFERENCE)
#undef ELT_ROW_FN

/* POW: the exponent (b) can differ from row to row; 2 and 3 broadcast along the row multiply. */
static void elt_row_pow(const kann_binary_args *p, const float *a, size_t a_stride, const float *b,
                        size_t b_stride, float *y, size_t n) {
    switch (kann_binary_small_power(b, b_stride)) {
    case 2:
        elt_row_square(p, a, a_stride, b, b_stride, y, n);
        break;
    case 3:
        elt_row_cube(p, a, a_stride, b, b_stride, y, n);
        break;
    default:
        elt_row_reference(p, a, a_stride, b, b_stride, y, n);
        break;
    }
}

/* Each case walks the tile with its row function inlined (no call, no dispatch per row). */
void ELTWISE_BINARY(const void *args, const kann_exec *ex) {
    const kann_binary_args *p = args;
#define ELT_CASE(OP, ROW)                                                                          \
    case OP:                                                                                       \
        kann_binary_rows(p, ex, ROW);                                                              \
        break
    switch ((kann_binary_op)p->op) {
        ELT_CASE(KANN_BINARY_ADD, elt_row_add);
        ELT_CASE(KANN_BINARY_SUB, elt_row_sub);
        ELT_CASE(KANN_BINARY_MUL, elt_row_mul);
        ELT_CASE(KANN_BINARY_DIV, elt_row_div);
        ELT_CASE(KANN_BINARY_POW, elt_row_pow);
        ELT_CASE(KANN_BINARY_MAX, elt_row_max);
        ELT_CASE(KANN_BINARY_MIN, elt_row_min);
        ELT_CASE(KANN_BINARY_PRELU, elt_row_prelu);
    default: /* FMOD; the validator refuses the others */
        kann_binary_rows(p, ex, elt_row_reference);
        break;
    }
#undef ELT_CASE
}

void ELTWISE_ACT(const void *args, const kann_exec *ex) {
    const kann_act_args *a = args;
    if (a->tile.begin >= a->tile.end) return;
    size_t begin = a->tile.begin, n = (size_t)a->tile.end - begin;
    elt_act_row(&a->act, kann_cref(ex, a->x) + begin, kann_mref(ex, a->y) + begin, n);
}
