/*
 * The vectors of the portable variant of kpca's compiled kernels (_native.h): 16
 * bytes (4 float32 or 2 float64 values), one register of SSE2 (x86-64), NEON (ARM64)
 * and most other SIMD sets, so no target attribute is needed.
 *
 * With GCC or Clang they are the compilers' generic vector types
 * (__attribute__((vector_size))), which the compiler maps onto whatever SIMD
 * instructions the build targets: no intrinsics, nothing specific to a CPU. Their
 * plain-C loops alone were not vectorised (GCC 12 left the tile product and the
 * exponential scalar: 5-30x slower). Other compilers get the same operations as
 * small structs and loops, which they may vectorise themselves (defining
 * KPCA_PLAIN_C gives these to GCC too: tests/test_native_build.py builds them).
 */
#ifndef KPCA_PORTABLE_H
#define KPCA_PORTABLE_H

#include <stdint.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && !defined(KPCA_PLAIN_C)
#define PV_GNU 1
#else
#define PV_GNU 0
#endif

#if PV_GNU
typedef float pf4 __attribute__((vector_size(16)));
typedef double pd2 __attribute__((vector_size(16)));
typedef int32_t pi4 __attribute__((vector_size(16)));
typedef uint32_t pu4 __attribute__((vector_size(16)));
#define PV_GET(x, l) ((x)[l])
/* inlined into its caller even where large: with its loop bounds constant there the
   accumulators stay in registers */
#define PV_INLINE static inline __attribute__((always_inline))
#define PV_OP(T, name, op)                                                              \
    static inline T name(T a, T b) { return a op b; }
static inline pf4 pf4_set1(float s) { return (pf4){s, s, s, s}; }
static inline pd2 pd2_set1(double s) { return (pd2){s, s}; }
#else
typedef struct {
    float v[4];
} pf4;
typedef struct {
    double v[2];
} pd2;
#define PV_GET(x, l) ((x).v[l])
#define PV_INLINE static inline
#define PV_OP(T, name, op)                                                              \
    static inline T name(T a, T b)                                                      \
    {                                                                                   \
        for (int l = 0; l < (int)(sizeof a.v / sizeof a.v[0]); ++l)                     \
            a.v[l] = a.v[l] op b.v[l];                                                  \
        return a;                                                                       \
    }
static inline pf4
pf4_set1(float s)
{
    pf4 r = {{s, s, s, s}};
    return r;
}
static inline pd2
pd2_set1(double s)
{
    pd2 r = {{s, s}};
    return r;
}
#endif

/* loads, stores and arithmetic of T (L lanes of S) */
#define PV_BASICS(T, S, L, prefix)                                                      \
    static inline T prefix##_load(const S *p)                                           \
    {                                                                                   \
        T r;                                                                            \
        memcpy(&r, p, sizeof r);                                                        \
        return r;                                                                       \
    }                                                                                   \
    static inline void prefix##_store(S *p, T x) { memcpy(p, &x, sizeof x); }           \
    static inline T prefix##_zero(void) { return prefix##_set1(0); }                    \
    PV_OP(T, prefix##_add, +)                                                           \
    PV_OP(T, prefix##_sub, -)                                                           \
    PV_OP(T, prefix##_mul, *)                                                           \
    static inline T prefix##_fmadd(T a, T b, T c)                                       \
    {                                                                                   \
        return prefix##_add(prefix##_mul(a, b), c);                                     \
    }                                                                                   \
    static inline S prefix##_reduce(T x)                                                \
    {                                                                                   \
        S s = 0;                                                                        \
        for (int l = 0; l < L; ++l)                                                     \
            s += PV_GET(x, l);                                                          \
        return s;                                                                       \
    }

PV_BASICS(pf4, float, 4, pf4)
PV_BASICS(pd2, double, 2, pd2)

/* x where x <= c (and where x is NaN), else c: min(x, c) keeping NaN. On x86-64 and
   ARM64 one instruction of the baseline SIMD set, which every CPU of that architecture
   has (SSE2's minps returns its second operand, x, where either is NaN; NEON's fmin
   returns NaN where either is): the compare-and-select of generic vectors took four
   (GCC 12), and the exponential's three bounds were a fifth of its instructions.
   Elsewhere, the lanes' "c < x ? c : x". */
#if PV_GNU && defined(__SSE2__)
#include <emmintrin.h>
#define PV_MINMAX 1
static inline pf4 pf4_min_nan(pf4 x, float c) { return (pf4)_mm_min_ps(_mm_set1_ps(c), (__m128)x); }
static inline pf4 pf4_max_nan(pf4 x, float c) { return (pf4)_mm_max_ps(_mm_set1_ps(c), (__m128)x); }
#elif PV_GNU && defined(__ARM_NEON)
#include <arm_neon.h>
#define PV_MINMAX 1
static inline pf4 pf4_min_nan(pf4 x, float c) { return (pf4)vminq_f32((float32x4_t)x, vdupq_n_f32(c)); }
static inline pf4 pf4_max_nan(pf4 x, float c) { return (pf4)vmaxq_f32((float32x4_t)x, vdupq_n_f32(c)); }
#else
static inline pf4
pf4_min_nan(pf4 x, float c)
{
    pf4 r;
    for (int l = 0; l < 4; ++l)
        PV_GET(r, l) = c < PV_GET(x, l) ? c : PV_GET(x, l);
    return r;
}

/* max(x, c) keeping NaN */
static inline pf4
pf4_max_nan(pf4 x, float c)
{
    pf4 r;
    for (int l = 0; l < 4; ++l)
        PV_GET(r, l) = c > PV_GET(x, l) ? c : PV_GET(x, l);
    return r;
}
#endif

/* p 2^n, for t = n + 1.5 * 2^23 (n an integer in [-150, 128], held in t's low
   mantissa bits), as p 2^h 2^(n - h) with h = floor(n / 2): both factors are normal,
   so the first product is exact and the second rounds once (the gradual underflow of
   an exact scaling). For NaN t the factors are some numbers, and p is NaN. */
static inline pf4
pf4_scale(pf4 p, pf4 t)
{
#if PV_GNU
    pi4 n = (pi4)((pu4)t - 0x4B400000u); /* unsigned: wraps, never undefined */
    pi4 h = n >> 1;
    pf4 s1 = (pf4)((pu4)(h + 127) << 23), s2 = (pf4)((pu4)(n - h + 127) << 23);
    return pf4_mul(pf4_mul(p, s1), s2);
#else
    for (int l = 0; l < 4; ++l) {
        uint32_t bits;
        memcpy(&bits, &t.v[l], sizeof bits);
        int32_t n = (int32_t)(bits - 0x4B400000u);
        int32_t h = n >= 0 ? n / 2 : -((1 - n) / 2); /* floor(n / 2) */
        uint32_t e1 = (uint32_t)(h + 127) << 23, e2 = (uint32_t)(n - h + 127) << 23;
        float s1, s2;
        memcpy(&s1, &e1, sizeof s1);
        memcpy(&s2, &e2, sizeof s2);
        p.v[l] = p.v[l] * s1 * s2;
    }
    return p;
#endif
}

/* all ones in the lanes where lo <= x <= hi (not where x is NaN), zeros elsewhere,
   as the bits of a pf4 */
static inline pf4
pf4_within(pf4 x, float lo, float hi)
{
#if PV_GNU
    pi4 in = (x >= pf4_set1(lo)) & (x <= pf4_set1(hi));
    return (pf4)in;
#else
    pf4 r;
    for (int l = 0; l < 4; ++l) {
        uint32_t bits = x.v[l] >= lo && x.v[l] <= hi ? 0xFFFFFFFFu : 0u;
        memcpy(&r.v[l], &bits, sizeof bits);
    }
    return r;
#endif
}

/* all ones in the lanes where x >= lo (not where x is NaN), zeros elsewhere */
static inline pf4
pf4_at_least(pf4 x, float lo)
{
#if PV_GNU
    return (pf4)(x >= pf4_set1(lo));
#else
    pf4 r;
    for (int l = 0; l < 4; ++l) {
        uint32_t bits = x.v[l] >= lo ? 0xFFFFFFFFu : 0u;
        memcpy(&r.v[l], &bits, sizeof bits);
    }
    return r;
#endif
}

/* whether every lane of the four masks (pf4_within) is all ones: on x86-64 the masks
   ANDed and one test of their sign bits (SSE2's movmskps: through memory, GCC 12
   spilled four vectors and loaded eight words, more than the exponent's addition
   saved on one vector); elsewhere their bits through memory (an AArch64 vminvq would
   do as movmskps; not written, as no ARM compiler was at hand to build it) */
static inline int
pf4_all_set(pf4 a, pf4 b, pf4 c, pf4 d)
{
#if PV_GNU && defined(__SSE2__)
    __m128 x = _mm_and_ps(_mm_and_ps((__m128)a, (__m128)b), _mm_and_ps((__m128)c, (__m128)d));
    return _mm_movemask_ps(x) == 0xF;
#else
    uint64_t w[8];
    memcpy(w, &a, 16);
    memcpy(w + 2, &b, 16);
    memcpy(w + 4, &c, 16);
    memcpy(w + 6, &d, 16);
    return (w[0] & w[1] & w[2] & w[3] & w[4] & w[5] & w[6] & w[7]) == ~(uint64_t)0;
#endif
}

/* p 2^n for t as in pf4_scale, where p 2^n is a normal number: n added to p's
   exponent bits */
static inline pf4
pf4_add_exponent(pf4 p, pf4 t)
{
#if PV_GNU
    /* n << 23 is t's bits << 23: the magic's low 9 bits are 0 (unsigned: wraps, never
       undefined) */
    return (pf4)((pu4)p + ((pu4)t << 23));
#else
    for (int l = 0; l < 4; ++l) {
        uint32_t bits, pb;
        memcpy(&bits, &t.v[l], sizeof bits);
        memcpy(&pb, &p.v[l], sizeof pb);
        pb += (bits - 0x4B400000u) << 23;
        memcpy(&p.v[l], &pb, sizeof pb);
    }
    return p;
#endif
}

#endif
