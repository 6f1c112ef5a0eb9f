/* The vector type VT of VW lanes (-D VW=1, 4, 8 or 16), its integer twin VI with the lane
 * numbers LANE_IDS, and its loads and stores, for the programs built for one vector width. */
#ifndef VW
#define VW 1
#endif
#if VW == 16
#define VT float16
#define VI int16
#define LANE_IDS ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define VLOAD vload16
#define VSTORE vstore16
#elif VW == 8
#define VT float8
#define VI int8
#define LANE_IDS ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#define VLOAD vload8
#define VSTORE vstore8
#elif VW == 4
#define VT float4
#define VI int4
#define LANE_IDS ((int4)(0, 1, 2, 3))
#define VLOAD vload4
#define VSTORE vstore4
#else
#define VT float
#define VLOAD(i, p) ((p)[i])
#define VSTORE(v, i, p) ((p)[i] = (v))
#endif

/* lanes [lo, hi) of a run starting at p, zero elsewhere; nothing outside them is read */
inline VT load_part(global const float *p, int lo, int hi) {
    float t[VW];
    if (hi <= lo) return (VT)(0.0f);
    for (int j = 0; j < VW; j++)
        t[j] = (j >= lo && j < hi) ? p[clamp(j, lo, hi - 1)] : 0.0f;
    return VLOAD(0, t);
}
