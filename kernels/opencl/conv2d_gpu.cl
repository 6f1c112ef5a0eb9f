/* f32_conv2d for GPUs. f32_conv_gemm (group 1): an implicit GEMM, output channels x output
 * pixels, with weight and input tiles staged in local memory; work-groups of 16 x 16 threads,
 * each thread RT x RT outputs (RT = 4, 2 or 1: the host takes smaller tiles when 64 x 64 ones
 * would leave most of the device's compute units idle, as batch-1 layers on small maps do). f32_conv_direct (unpacked, any group, depthwise): one output per thread.
 * Weights in the reference layout [c_out][c_in/group][k_h][k_w], which is already the GEMM's
 * row-major A [c_out][c_in/group * k_h * k_w].
 *
 * Build macros: FAM (conv2d or conv2d_packed), PACKED, KH KW SH SW DH DW PT PL, ACT, HAS_BIAS, HAS_RES (and VW=1 for the epilogue).
 * NDRange of both: (pixels of the tile, channels of the tile, batch), rounded up to the
 * work-group for the GEMM. */

#define CAT3(a, b, c) a##b##c
#define XCAT3(a, b, c) CAT3(a, b, c)
#define CF(field) XCAT3(A_, FAM, _##field)
#if PACKED
#define CONV_GROUP const uint group = 1;
#define TILE_PIXEL_SCALE 1
/* conv2d_packed's 12-channel panels: W[m][k] at (m / 12) * K * 12 + k * 12 + m % 12 */
#define W_AT(m, k) (((size_t)(m) / 12 * k_len + (k)) * 12 + (m) % 12)
#else
#define CONV_GROUP const uint group = U(A_conv2d_group);
#define TILE_PIXEL_SCALE w_out
#define W_AT(m, k) ((size_t)(m) * k_len + (k))
#endif
#ifndef RT
#define RT 4
#endif
#define TM (16 * RT)
#define TN (16 * RT)
#define TK 16

/* the output ranges of the record's tile: channels [m_b, m_e), pixels [p_b, p_e) */
#define CONV_TILE_RANGES                                                                           \
    uint m_b = 0, m_e = c_out, p_b = 0, p_e = h_out * w_out;                                       \
    if (TILE_AXIS == 0) {                                                                          \
        m_b = TILE_BEGIN;                                                                          \
        m_e = TILE_END;                                                                            \
    } else {                                                                                       \
        p_b = TILE_BEGIN * TILE_PIXEL_SCALE;                                                       \
        p_e = TILE_END * TILE_PIXEL_SCALE;                                                         \
    }

#define CONV_SHAPE                                                                                 \
    const uint c_in = U(CF(c_in)), h_in = U(CF(h_in)), w_in = U(CF(w_in));         \
    const uint c_out = U(CF(c_out)), h_out = U(CF(h_out)), w_out = U(CF(w_out));   \
    CONV_GROUP                                                                                     \
    const float alpha = F(CF(act_alpha)), beta = F(CF(act_beta));

inline void conv_store(KANN_KERNEL_ARGS, size_t out, uint m, float acc, float alpha, float beta) {
#if HAS_BIAS
    acc += IN_REF(CF(bias))[m];
#endif
#if HAS_RES
    acc += IN_REF(CF(residual))[out];
#endif
    OUT_REF(CF(y))[out] = kann_act_vec(acc, alpha, beta);
}

kernel __attribute__((reqd_work_group_size(16, 16, 1))) void f32_conv_gemm(KANN_KERNEL_ARGS) {
    CONV_SHAPE
    CONV_TILE_RANGES
    local float a_tile[TK][TM + 4];
    local float b_tile[TK][TN];
    const uint lx = get_local_id(0), ly = get_local_id(1), tid = ly * 16 + lx;
    const uint p_base = p_b + get_group_id(0) * TN, m_base = m_b + get_group_id(1) * TM;
    const uint img = get_group_id(2);
    const uint k_len = c_in * KH * KW;
    const size_t x_plane = (size_t)h_in * w_in;
    global const float *x = IN_REF(CF(x)) + (size_t)img * c_in * x_plane;
    global const float *w = IN_REF(CF(w));
    float acc[RT][RT];
    for (int i = 0; i < RT; i++)
        for (int j = 0; j < RT; j++)
            acc[i][j] = 0.0f;
    for (uint k0 = 0; k0 < k_len; k0 += TK) {
        for (uint r = 0; r < RT; r++) { /* TK x TM = 256 RT elements */
            uint e = tid + 256 * r, mm = e / TK, kk = e % TK;
            uint m = m_base + mm, k = k0 + kk;
            a_tile[kk][mm] = (m < m_e && k < k_len) ? w[W_AT(m, k)] : 0.0f;
        }
        for (uint r = 0; r < RT; r++) {
            uint e = tid + 256 * r, kk = e / TN, pp = e % TN;
            uint k = k0 + kk, p = p_base + pp;
            float v = 0.0f;
            if (k < k_len && p < p_e) {
                uint c = k / (KH * KW), t = k % (KH * KW), kh = t / KW, kw = t % KW;
                int ih = (int)(p / w_out) * SH - PT + (int)kh * DH;
                int iw = (int)(p % w_out) * SW - PL + (int)kw * DW;
                if (ih >= 0 && ih < (int)h_in && iw >= 0 && iw < (int)w_in)
                    v = x[c * x_plane + (size_t)ih * w_in + iw];
            }
            b_tile[kk][pp] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint kk = 0; kk < TK; kk++) {
            float a[RT], b[RT];
            for (int i = 0; i < RT; i++)
                a[i] = a_tile[kk][ly + 16 * i];
            for (int j = 0; j < RT; j++)
                b[j] = b_tile[kk][lx + 16 * j];
            for (int i = 0; i < RT; i++)
                for (int j = 0; j < RT; j++)
                    acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const size_t plane = (size_t)h_out * w_out;
    for (int i = 0; i < RT; i++) {
        uint m = m_base + ly + 16 * i;
        if (m >= m_e) continue;
        for (int j = 0; j < RT; j++) {
            uint p = p_base + lx + 16 * j;
            if (p < p_e)
                conv_store(args, at, arena, consts, ((size_t)img * c_out + m) * plane + p, m,
                           acc[i][j], alpha, beta);
        }
    }
}

kernel void f32_conv_direct(KANN_KERNEL_ARGS) {
    CONV_SHAPE
    CONV_TILE_RANGES
    const uint p = p_b + get_global_id(0), m = m_b + get_global_id(1), img = get_global_id(2);
    if (p >= p_e || m >= m_e) return;
    const uint cpg = c_in / group, g = m / (c_out / group);
    const size_t x_plane = (size_t)h_in * w_in;
    global const float *x = IN_REF(CF(x)) + ((size_t)img * c_in + g * cpg) * x_plane;
    global const float *w = IN_REF(CF(w)) + (size_t)m * cpg * KH * KW;
    const int ih0 = (int)(p / w_out) * SH - PT, iw0 = (int)(p % w_out) * SW - PL;
    float acc = 0.0f;
    for (uint c = 0; c < cpg; c++) {
        for (int kh = 0; kh < KH; kh++) {
            int ih = ih0 + kh * DH;
            if (ih < 0 || ih >= (int)h_in) continue;
            for (int kw = 0; kw < KW; kw++) {
                int iw = iw0 + kw * DW;
                if (iw >= 0 && iw < (int)w_in)
                    acc = fma(w[(c * KH + kh) * KW + kw], x[c * x_plane + (size_t)ih * w_in + iw],
                              acc);
            }
        }
    }
    conv_store(args, at, arena, consts, ((size_t)img * c_out + m) * h_out * w_out + p, m, acc,
               alpha, beta);
}
