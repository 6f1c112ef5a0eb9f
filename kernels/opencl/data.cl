/* The data-movement kernels over elements of any size (1, 2, 4 or 8 bytes): strided_copy,
 * gather, gather_elements, gather_nd, trilu, pad (one work-item per output element), and
 * scatter_elements, scatter_nd, whose updates apply in order (see each kernel); f32_pad2d. */

/* NDRange: (tile elements). */
kernel void strided_copy(KANN_KERNEL_ARGS) {
    ulong pos = (ulong)TILE_BEGIN + get_global_id(0);
    if (pos >= TILE_END) return;
    long xo = L(A_strided_copy_x_base), yo = L(A_strided_copy_y_base);
    ulong rest = pos;
    for (int d = (int)U(A_strided_copy_rank) - 1; d >= 0; d--) {
        uint dim = U(A_strided_copy_dims + d);
        long i = (long)(rest % dim);
        rest /= dim;
        xo += i * L(A_strided_copy_x_strides + 2 * d);
        yo += i * L(A_strided_copy_y_strides + 2 * d);
    }
    kann_copy_elem(OUT_BYTES(A_strided_copy_y), (size_t)yo, IN_BYTES(A_strided_copy_x), (size_t)xo,
                   U(A_strided_copy_elem_size));
}

/* NDRange: (inner, rows o * n_indices + k of the tile). An index out of range gives zeros. */
kernel void gather(KANN_KERNEL_ARGS) {
    const size_t inner = U(A_gather_inner), n_indices = U(A_gather_n_indices);
    ulong i = get_global_id(0), r = (ulong)TILE_BEGIN + get_global_id(1);
    if (i >= inner || r >= TILE_END) return;
    const uint es = U(A_gather_elem_size), axis_len = U(A_gather_axis_len);
    size_t o = r / n_indices, k = r % n_indices;
    long j =
        kann_wrap_index(kann_read_index(IN_BYTES(A_gather_idx), k, U(A_gather_idx_size)), axis_len);
    global uchar *y = OUT_BYTES(A_gather_y);
    if (j < 0)
        kann_store_bits(y, r * inner + i, 0, es);
    else
        kann_copy_elem(y, r * inner + i, IN_BYTES(A_gather_x),
                       (o * axis_len + (size_t)j) * inner + i, es);
}

/* NDRange: (tile elements). */
kernel void gather_elements(KANN_KERNEL_ARGS) {
    ulong e = (ulong)TILE_BEGIN + get_global_id(0);
    if (e >= TILE_END) return;
    const uint es = U(A_gather_elements_elem_size), axis = U(A_gather_elements_axis);
    long j = kann_wrap_index(
        kann_read_index(IN_BYTES(A_gather_elements_idx), e, U(A_gather_elements_idx_size)),
        U(A_gather_elements_axis_len));
    global uchar *y = OUT_BYTES(A_gather_elements_y);
    if (j < 0) {
        kann_store_bits(y, e, 0, es);
        return;
    }
    size_t off = 0;
    ulong rest = e;
    for (int d = (int)U(A_gather_elements_rank) - 1; d >= 0; d--) {
        uint dim = U(A_gather_elements_dims + d);
        size_t i = rest % dim;
        rest /= dim;
        off += (d == (int)axis ? (size_t)j : i) * U(A_gather_elements_x_strides + d);
    }
    kann_copy_elem(y, e, IN_BYTES(A_gather_elements_x), off, es);
}

/* The element offset tuple t of the index tensor names (-1: an index out of range). */
inline long kann_tuple_offset(global const uint *args, uint at, global const uchar *idx, size_t t) {
    const uint k = U(A_nd_index_k), idx_size = U(A_nd_index_idx_size);
    long off = 0;
    for (uint j = 0; j < k; j++) {
        long i = kann_wrap_index(kann_read_index(idx, t * k + j, idx_size), U(A_nd_index_dims + j));
        if (i < 0) return -1;
        off += i * (long)U(A_nd_index_strides + j);
    }
    return off;
}

/* NDRange: (slice_len, tuples of the tile). Tuples of batch b read the b-th block of data. */
kernel void gather_nd(KANN_KERNEL_ARGS) {
    const size_t slice_len = U(A_nd_index_slice_len);
    ulong i = get_global_id(0), t = (ulong)TILE_BEGIN + get_global_id(1);
    if (i >= slice_len || t >= TILE_END) return;
    const uint es = U(A_nd_index_elem_size), batches = U(A_nd_index_batches);
    size_t per_batch = U(A_nd_index_n_tuples) / (batches ? batches : 1);
    long off = kann_tuple_offset(args, at, IN_BYTES(A_nd_index_idx), t);
    global uchar *y = OUT_BYTES(A_nd_index_dst);
    if (off < 0)
        kann_store_bits(y, t * slice_len + i, 0, es);
    else
        kann_copy_elem(y, t * slice_len + i, IN_BYTES(A_nd_index_src),
                       (t / per_batch) * U(A_nd_index_batch_stride) + (size_t)off + i, es);
}

/* dst[j] = dst[j] OP src[i]: assignment for any element size, float32 for the reductions. */
inline void kann_scatter_combine(global uchar *dst, size_t j, global const uchar *src, size_t i,
                                 uint es, uint reduction) {
    if (reduction == 0) {
        kann_copy_elem(dst, j, src, i, es);
        return;
    }
    global float *d = (global float *)dst;
    float a = d[j], b = ((global const float *)src)[i];
    switch (reduction) {
    case 1:
        a += b;
        break;
    case 2:
        a *= b;
        break;
    case 3:
        a = b > a ? b : a;
        break;
    default:
        a = b < a ? b : a;
        break;
    }
    d[j] = a;
}

/* NDRange: (1): two updates may hit one element, so one work-item applies them in order. */
kernel void scatter_elements(KANN_KERNEL_ARGS) {
    if (get_global_id(0) != 0 || TILE_BEGIN >= TILE_END) return;
    const uint rank = U(A_scatter_elements_rank), axis = U(A_scatter_elements_axis);
    const uint es = U(A_scatter_elements_elem_size), idx_size = U(A_scatter_elements_idx_size);
    const uint reduction = U(A_scatter_elements_reduction);
    global const uchar *idx = IN_BYTES(A_scatter_elements_idx);
    global const uchar *upd = IN_BYTES(A_scatter_elements_updates);
    global uchar *y = OUT_BYTES(A_scatter_elements_y);
    size_t count = 1;
    for (uint d = 0; d < rank; d++)
        count *= U(A_scatter_elements_dims + d);
    for (size_t e = 0; e < count; e++) {
        long j = kann_wrap_index(kann_read_index(idx, e, idx_size), U(A_scatter_elements_axis_len));
        if (j < 0) continue;
        size_t off = 0, rest = e;
        for (int d = (int)rank - 1; d >= 0; d--) {
            uint dim = U(A_scatter_elements_dims + d);
            size_t i = rest % dim;
            rest /= dim;
            off += (d == (int)axis ? (size_t)j : i) * U(A_scatter_elements_y_strides + d);
        }
        kann_scatter_combine(y, off, upd, e, es, reduction);
    }
}

/* NDRange: (1), tuples in order then slice elements, as the reference; or (slice_len) when
 * every tuple offset is a multiple of slice_len (every index stride is): then slice element i of
 * any tuple lands on elements no other slice element reaches, and work-item i applies the
 * tuples in order. The host launches the width this test gives. */
kernel void scatter_nd(KANN_KERNEL_ARGS) {
    const size_t slice_len = U(A_nd_index_slice_len);
    if (TILE_BEGIN >= TILE_END || slice_len == 0) return;
    int parallel = 1;
    for (uint j = 0; j < U(A_nd_index_k); j++)
        parallel &= U(A_nd_index_strides + j) % slice_len == 0;
    size_t i0 = get_global_id(0), i1 = i0 + 1;
    if (!parallel) {
        if (i0 != 0) return;
        i1 = slice_len;
    } else if (i0 >= slice_len) {
        return;
    }
    const uint es = U(A_nd_index_elem_size), reduction = U(A_nd_index_reduction);
    global const uchar *idx = IN_BYTES(A_nd_index_idx), *upd = IN_BYTES(A_nd_index_src);
    global uchar *y = OUT_BYTES(A_nd_index_dst);
    for (size_t t = 0; t < U(A_nd_index_n_tuples); t++) {
        long off = kann_tuple_offset(args, at, idx, t);
        if (off < 0) continue;
        for (size_t i = i0; i < i1; i++)
            kann_scatter_combine(y, (size_t)off + i, upd, t * slice_len + i, es, reduction);
    }
}

/* NDRange: (cols, rows b * rows + i of the tile). Columns j >= i + k (upper) or j <= i + k
 * (lower) are kept, the others zeroed. */
kernel void trilu(KANN_KERNEL_ARGS) {
    const size_t cols = U(A_trilu_cols), rows = U(A_trilu_rows);
    ulong j = get_global_id(0), r = (ulong)TILE_BEGIN + get_global_id(1);
    if (j >= cols || r >= TILE_END) return;
    long k =
        HAS_REF(A_trilu_k_ref) ? ((global const long *)IN_BYTES(A_trilu_k_ref))[0] : L(A_trilu_k);
    long limit = (long)cols + (long)rows + 1; /* any |k| past it keeps all or nothing */
    k = k < -limit ? -limit : k > limit ? limit : k;
    const int upper = U(A_trilu_upper) != 0;
    long i = (long)(r % rows), edge = upper ? i + k : i + k + 1;
    int keep = upper ? (long)j >= edge : (long)j < edge;
    const uint es = U(A_trilu_elem_size);
    if (keep)
        kann_copy_elem(OUT_BYTES(A_trilu_y), r * cols + j, IN_BYTES(A_trilu_x), r * cols + j, es);
    else
        kann_store_bits(OUT_BYTES(A_trilu_y), r * cols + j, 0, es);
}

/* The input coordinate output coordinate c (shifted by the leading pad) reads along a dim of
 * length n, or -1 for the constant. */
inline long kann_pad_source(long c, uint n, uint mode) {
    if (c >= 0 && c < (long)n) return c;
    switch (mode) {
    case 2: /* EDGE */
        return c < 0 ? 0 : (long)n - 1;
    case 1: { /* REFLECT */
        if (n == 1) return 0;
        long period = 2 * ((long)n - 1);
        c %= period;
        if (c < 0) c += period;
        return c < (long)n ? c : period - c;
    }
    case 3: /* WRAP */
        c %= (long)n;
        return c < 0 ? c + n : c;
    default:
        return -1;
    }
}

/* NDRange: (dims[rank - 1], output rows of the tile). */
kernel void pad(KANN_KERNEL_ARGS) {
    const uint rank = U(A_pad_rank), last = rank - 1, mode = U(A_pad_mode);
    const size_t n_out = U(A_pad_dims + last), n_in = U(A_pad_x_dims + last);
    ulong j = get_global_id(0), r = (ulong)TILE_BEGIN + get_global_id(1);
    if (j >= n_out || r >= TILE_END) return;
    size_t x_row = 0, x_row_stride = 1, rest = r;
    int outside = 0;
    for (int d = (int)last - 1; d >= 0; d--) {
        uint dim = U(A_pad_dims + d);
        long i = (long)(rest % dim);
        rest /= dim;
        long c = kann_pad_source(i - L(A_pad_pad_begin + 2 * d), U(A_pad_x_dims + d), mode);
        if (c < 0) outside = 1;
        x_row += (size_t)(c < 0 ? 0 : c) * x_row_stride;
        x_row_stride *= U(A_pad_x_dims + d);
    }
    long c = outside ? -1 : kann_pad_source((long)j - L(A_pad_pad_begin + 2 * last), n_in, mode);
    const uint es = U(A_pad_elem_size);
    if (c < 0)
        kann_store_bits(OUT_BYTES(A_pad_y), r * n_out + j, (ulong)L(A_pad_value), es);
    else
        kann_copy_elem(OUT_BYTES(A_pad_y), r * n_out + j, IN_BYTES(A_pad_x),
                       x_row * n_in + (size_t)c, es);
}

/* f32_pad2d, GPU style. NDRange: (w_out, rows c * h_out + i of the tile). Zero outside x (a
 * conv's padding). */
kernel void f32_pad2d(KANN_KERNEL_ARGS) {
    const size_t w_out = U(A_pad2d_w_out), h_out = U(A_pad2d_h_out);
    const uint h_in = U(A_pad2d_h_in), w_in = U(A_pad2d_w_in);
    ulong j = get_global_id(0), r = (ulong)TILE_BEGIN + get_global_id(1);
    if (j >= w_out || r >= TILE_END) return;
    size_t c = r / h_out;
    long i = (long)(r - c * h_out) - (long)U(A_pad2d_pad_top);
    long jx = (long)j - (long)U(A_pad2d_pad_left);
    float v = 0.0f;
    if (i >= 0 && i < h_in && jx >= 0 && jx < w_in)
        v = IN_REF(A_pad2d_x)[(c * h_in + (size_t)i) * w_in + (size_t)jx];
    OUT_REF(A_pad2d_y)[r * w_out + j] = v;
}

/* y[0, n) = 0 */
inline void zero_run(global float *y, uint n) {
    uint j = 0;
    for (; j + 16 <= n; j += 16)
        vstore16((float16)(0.0f), 0, y + j);
    for (; j < n; j++)
        y[j] = 0.0f;
}

/* y[0, n) = x[0, n) */
inline void copy_run(global float *y, global const float *x, uint n) {
    uint j = 0;
    for (; j + 16 <= n; j += 16)
        vstore16(vload16(0, x + j), 0, y + j);
    for (; j < n; j++)
        y[j] = x[j];
}

/* f32_pad2d, CPU style: a band of output rows per work-item (kann_band), each row its left
 * padding, the copied run and its right padding, 16 floats at a time.
 * NDRange: (bands of the tile's rows). */
kernel void f32_pad2d_rows(KANN_KERNEL_ARGS) {
    const uint w_out = U(A_pad2d_w_out), h_out = U(A_pad2d_h_out);
    const uint h_in = U(A_pad2d_h_in), w_in = U(A_pad2d_w_in);
    const uint pad_top = U(A_pad2d_pad_top), left = min(U(A_pad2d_pad_left), w_out);
    /* the columns copied from x: [left, left + run); a crop leaves some of x out */
    const uint run = min(w_in, w_out - left);
    global const float *x = IN_REF(A_pad2d_x);
    global float *y = OUT_REF(A_pad2d_y);
    uint lo, hi;
    kann_band(TILE_END - TILE_BEGIN, 0, &lo, &hi);
    for (uint r = TILE_BEGIN + lo; r < TILE_BEGIN + hi; r++) {
        global float *yr = y + (size_t)r * w_out;
        uint c = r / h_out, i = r - c * h_out;
        if (i < pad_top || i - pad_top >= h_in) {
            zero_run(yr, w_out);
            continue;
        }
        zero_run(yr, left);
        copy_run(yr + left, x + ((size_t)c * h_in + (i - pad_top)) * w_in, run);
        zero_run(yr + left + run, w_out - left - run);
    }
}
