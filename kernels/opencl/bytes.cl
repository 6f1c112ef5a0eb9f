/* Byte addressing for the kernels over any element type (data movement, typed elementwise, int64
 * outputs): (space, offset) refs as byte pointers, int64 struct fields, elements of 1, 2, 4 or 8
 * bytes, and the integer dtypes widened to long. Offsets are aligned to their element size
 * (validated at load), so the typed pointers below are aligned. */

#define REF_BYTE(f) ((size_t)((((ulong)U((f) + 3)) << 32) | (ulong)U((f) + 2)))
#define HAS_REF(f) (REF_SPACE(f) != 0)
#define IN_BYTES(f)                                                                                \
    (REF_SPACE(f) == 2 ? (global const uchar *)consts + REF_BYTE(f)                                \
                       : (global const uchar *)arena + REF_BYTE(f))
#define OUT_BYTES(f) ((global uchar *)arena + REF_BYTE(f))
/* An int64 field of the argument struct (little-endian words). */
#define L(f) ((long)((((ulong)U((f) + 1)) << 32) | (ulong)U(f)))

/* kann_dtype values (ONNX TensorProto.DataType). */
#define DT_F32 1
#define DT_U8 2
#define DT_I8 3
#define DT_I32 6
#define DT_I64 7
#define DT_BOOL 9

inline uint kann_dtype_size(uint dtype) {
    return dtype == DT_F32 || dtype == DT_I32 ? 4 : dtype == DT_I64 ? 8 : 1;
}

/* Element i of es bytes (1, 2, 4 or 8) from src to element j of dst. */
inline void kann_copy_elem(global uchar *dst, size_t j, global const uchar *src, size_t i,
                           uint es) {
    switch (es) {
    case 1:
        dst[j] = src[i];
        break;
    case 2:
        ((global ushort *)dst)[j] = ((global const ushort *)src)[i];
        break;
    case 4:
        ((global uint *)dst)[j] = ((global const uint *)src)[i];
        break;
    default:
        ((global ulong *)dst)[j] = ((global const ulong *)src)[i];
        break;
    }
}

/* Writes the low es bytes of value (little-endian) to element j of dst. */
inline void kann_store_bits(global uchar *dst, size_t j, ulong value, uint es) {
    switch (es) {
    case 1:
        dst[j] = (uchar)value;
        break;
    case 2:
        ((global ushort *)dst)[j] = (ushort)value;
        break;
    case 4:
        ((global uint *)dst)[j] = (uint)value;
        break;
    default:
        ((global ulong *)dst)[j] = value;
        break;
    }
}

/* Index k of an int32 (size 4) or int64 (size 8) index tensor. */
inline long kann_read_index(global const uchar *p, size_t k, uint size) {
    return size == 4 ? (long)((global const int *)p)[k] : ((global const long *)p)[k];
}

/* j (negative: from the end) on an axis of length len, or -1 when out of range. */
inline long kann_wrap_index(long j, uint len) {
    if (j < 0) j += (long)len;
    return j >= 0 && j < (long)len ? j : -1;
}

/* Element i of an integer or bool tensor, widened. */
inline long kann_load_int(global const uchar *p, uint dtype, size_t i) {
    switch (dtype) {
    case DT_I8:
        return ((global const char *)p)[i];
    case DT_I32:
        return ((global const int *)p)[i];
    case DT_I64:
        return ((global const long *)p)[i];
    default: /* U8, BOOL */
        return p[i];
    }
}

/* Stores the low bits of v (two's complement wrap-around); bool stores v != 0. */
inline void kann_store_int(global uchar *p, uint dtype, size_t i, long v) {
    switch (dtype) {
    case DT_I32:
        ((global uint *)p)[i] = (uint)v; /* unsigned narrowing: modulo 2^32 */
        break;
    case DT_I64:
        ((global long *)p)[i] = v;
        break;
    case DT_BOOL:
        p[i] = v != 0;
        break;
    default: /* U8, I8 */
        p[i] = (uchar)v;
        break;
    }
}
