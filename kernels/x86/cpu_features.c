/* CPUID and XGETBV: which x86 SIMD levels the processor has and the OS saves the registers of.
 * Compiler builtins only: no library calls, so the freestanding core can use it. */
#include <cpuid.h>

#include "kann_x86.h"

static unsigned long long read_xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

int kann_x86_supports(kann_x86_level level) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (!osxsave || !avx || !fma) return 0;
    unsigned long long xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) return 0; /* XMM and YMM state */
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    if (!avx2) return 0;
    if (level == KANN_X86_AVX2) return 1;
    int f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
    /* opmask, upper ZMM halves and ZMM16-31 */
    if (!(f && dq && bw && vl && (xcr0 & 0xe6) == 0xe6)) return 0;
    if (level == KANN_X86_AVX512) return 1;
    int amx_bf16 = (d >> 22) & 1, amx_tile = (d >> 24) & 1;
    __cpuid_count(7, 1, a, b, c, d);
    int avx512_bf16 = (a >> 5) & 1;
    /* XTILECFG and XTILEDATA */
    return level == KANN_X86_AMX && amx_bf16 && amx_tile && avx512_bf16 &&
           (xcr0 & 0x60000) == 0x60000;
}
