/*
 * The RBF kernel's block in every variant (avx512, avx2, portable; _native.h): the
 * columns' panels (pack), the exponential and the block exp(A B^T), as described in
 * _rbfexp.c. Included by _rbfexp.c (the kernels' block) and by
 * ../operators/_tileprod.c (the matrix-free pass's pieces, evaluated and multiplied
 * in one compiled call): one source, compiled into each module.
 */
#ifndef KPCA_RBFBLOCK_H
#define KPCA_RBFBLOCK_H

#include "../_native.h"

/* B (c x p, row-major) as panels of 16 columns: P[q][k][0..15] = B[16 q + .., k],
   zero past column c */
static void
pack(const float *B, Py_ssize_t c, Py_ssize_t p, float *P)
{
    Py_ssize_t panels = (c + 15) / 16;
    for (Py_ssize_t q = 0; q < panels; ++q) {
        float *dst = P + q * p * 16;
        for (Py_ssize_t l = 0; l < 16; ++l) {
            Py_ssize_t j = 16 * q + l;
            for (Py_ssize_t k = 0; k < p; ++k)
                dst[k * 16 + l] = j < c ? B[j * p + k] : 0.0f;
        }
    }
}

/* The exponential's constants (the scheme above), shared by every variant */
#define EXP_LOW -104.0f     /* exp below: 0 (after gradual underflow) */
#define EXP_HIGH 88.8f      /* exp above: inf */
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f /* 9 bits: n LN2_HI is exact for |n| < 2^15 */
#define LN2_LO -2.12194440e-4f
#define P0 1.9875691500e-4f
#define P1 1.3981999507e-3f
#define P2 8.3334519073e-3f
#define P3 4.1665795894e-2f
#define P4 1.6666665459e-1f
#define P5 5.0000001201e-1f

#if KPCA_X86
/* exp(x) = 2^n p: p = exp(x - n ln 2) by the polynomial above, for the x86 variants'
   registers of type T (prefix: _mm256, _mm512), declaring p (and r) from x and the
   rounded n; one text for avx2 and avx512 */
#define EXP_POLY_X86(T, prefix, x, n)                                                   \
    T r = prefix##_fnmadd_ps(n, prefix##_set1_ps(LN2_HI), x);                           \
    r = prefix##_fnmadd_ps(n, prefix##_set1_ps(LN2_LO), r);                             \
    T p = prefix##_set1_ps(P0);                                                         \
    p = prefix##_fmadd_ps(p, r, prefix##_set1_ps(P1));                                  \
    p = prefix##_fmadd_ps(p, r, prefix##_set1_ps(P2));                                  \
    p = prefix##_fmadd_ps(p, r, prefix##_set1_ps(P3));                                  \
    p = prefix##_fmadd_ps(p, r, prefix##_set1_ps(P4));                                  \
    p = prefix##_fmadd_ps(p, r, prefix##_set1_ps(P5));                                  \
    p = prefix##_fmadd_ps(p, prefix##_mul_ps(r, r), r);                                 \
    p = prefix##_add_ps(p, prefix##_set1_ps(1.0f))
#endif

/* --- portable: 16-byte vectors (_portable.h), 4 values each, 4 a panel. n is
   rounded by adding and subtracting 1.5 * 2^23 (the integer is then in the sum's low
   mantissa bits: no float-to-int conversion, which is undefined for NaN in C), and
   2^n applied as two exact powers of two (pf4_scale: the same gradual underflow as
   scalef). */
#define ROUND_MAGIC 12582912.0f /* 1.5 * 2^23 */

/* x clamped to the exponential's range: at most 0 with clamp (then x <= 0, or NaN:
   the upper bound holds), else at most EXP_HIGH; at least EXP_LOW */
static inline pf4
exp4_range(pf4 x, int clamp)
{
    x = pf4_min_nan(x, clamp ? 0.0f : EXP_HIGH);
    return pf4_max_nan(x, EXP_LOW);
}

/* exp(x) = 2^n p for x in range: returns p, and t holding n in its low bits (t = x
   log2(e) rounded by ROUND_MAGIC), which the callers apply as 2^n their own way */
static inline pf4
exp4_poly(pf4 x, pf4 *t)
{
    *t = pf4_fmadd(x, pf4_set1(LOG2E), pf4_set1(ROUND_MAGIC));
    pf4 n = pf4_sub(*t, pf4_set1(ROUND_MAGIC));
    pf4 r = pf4_sub(x, pf4_mul(n, pf4_set1(LN2_HI)));
    r = pf4_sub(r, pf4_mul(n, pf4_set1(LN2_LO)));
    pf4 p = pf4_set1(P0);
    p = pf4_fmadd(p, r, pf4_set1(P1));
    p = pf4_fmadd(p, r, pf4_set1(P2));
    p = pf4_fmadd(p, r, pf4_set1(P3));
    p = pf4_fmadd(p, r, pf4_set1(P4));
    p = pf4_fmadd(p, r, pf4_set1(P5));
    p = pf4_fmadd(p, pf4_mul(r, r), r);
    return pf4_add(p, pf4_set1(1.0f));
}

static inline pf4
exp4(pf4 x, int clamp)
{
    pf4 t;
    pf4 p = exp4_poly(exp4_range(x, clamp), &t);
    return pf4_scale(p, t);
}

/* exp4 where every lane's result is a normal number: 2^n applied by adding n to the
   exponent bits of p (one integer addition, not pf4_scale's two products and five
   integer operations: 1.1 against 1.4 ns a value on this project's AVX2 machine), the
   same bits as exp4 there (both scalings are exact). *fine gets all ones in the lanes
   where that holds: x, bounded, within [EXP_FAST_LOW, EXP_FAST_HIGH] (n in [-124,
   127], p in [0.7, 1.42]); a NaN fails the comparisons. */
#define EXP_FAST_LOW -86.0f
#define EXP_FAST_HIGH 88.0f

static inline pf4
exp4_fast(pf4 x, int clamp, pf4 *fine)
{
    /* exp4_range's bounds are no-ops where the lanes are fine: only the clamp at 0 is
       applied (then x <= 0, and the lower bound alone is tested) */
    if (clamp) {
        x = pf4_min_nan(x, 0.0f);
        *fine = pf4_at_least(x, EXP_FAST_LOW);
    }
    else
        *fine = pf4_within(x, EXP_FAST_LOW, EXP_FAST_HIGH);
    pf4 t;
    pf4 p = exp4_poly(x, &t);
    return pf4_add_exponent(p, t);
}

/* stores exp of the 8 exponents (e0, e1) at row[0..w) (w <= 8): by exp4_fast, or exp4
   where a value is out of its range */
static inline void
store_exp8(float *row, Py_ssize_t w, pf4 e0, pf4 e1, int clamp)
{
    pf4 f0, f1;
    pf4 v0 = exp4_fast(e0, clamp, &f0), v1 = exp4_fast(e1, clamp, &f1);
    if (!pf4_all_set(f0, f1, f0, f1)) { /* a value out of exp4_fast's range */
        v0 = exp4(e0, clamp);
        v1 = exp4(e1, clamp);
    }
    if (w == 8) {
        pf4_store(row, v0);
        pf4_store(row + 4, v1);
    }
    else { /* the last, partial half panel */
        float tmp[8];
        pf4_store(tmp, v0);
        pf4_store(tmp + 4, v1);
        memcpy(row, tmp, (size_t)w * sizeof(float));
    }
}

/* out[i, j] = exp(A[i] . B[j]) for the 4 rows from i0 and the 8 columns of half h of
   panel q (4 x 2 vectors of accumulators, named: 8 of SSE2's 16 registers) */
static void
block_portable_4(const float *A, Py_ssize_t p, const float *P, float *out, Py_ssize_t c,
                 Py_ssize_t i0, Py_ssize_t q, int h, int clamp)
{
    Py_ssize_t j = 16 * q + 8 * h;
    if (j >= c)
        return;
    pf4 a00 = pf4_zero(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
        a31 = a00;
    const float *panel = P + q * p * 16 + 8 * h, *x = A + i0 * p;
    for (Py_ssize_t k = 0; k < p; ++k) {
        pf4 b0 = pf4_load(panel + k * 16), b1 = pf4_load(panel + k * 16 + 4);
        pf4 s = pf4_set1(x[k]);
        a00 = pf4_fmadd(s, b0, a00);
        a01 = pf4_fmadd(s, b1, a01);
        s = pf4_set1(x[p + k]);
        a10 = pf4_fmadd(s, b0, a10);
        a11 = pf4_fmadd(s, b1, a11);
        s = pf4_set1(x[2 * p + k]);
        a20 = pf4_fmadd(s, b0, a20);
        a21 = pf4_fmadd(s, b1, a21);
        s = pf4_set1(x[3 * p + k]);
        a30 = pf4_fmadd(s, b0, a30);
        a31 = pf4_fmadd(s, b1, a31);
    }
    Py_ssize_t w = c - j < 8 ? c - j : 8;
    float *row = out + i0 * c + j;
    store_exp8(row, w, a00, a01, clamp);
    store_exp8(row + c, w, a10, a11, clamp);
    store_exp8(row + 2 * c, w, a20, a21, clamp);
    store_exp8(row + 3 * c, w, a30, a31, clamp);
}

/* the same for one row (the last m mod 4) */
static void
block_portable_1(const float *A, Py_ssize_t p, const float *P, float *out, Py_ssize_t c,
                 Py_ssize_t i, Py_ssize_t q, int h, int clamp)
{
    Py_ssize_t j = 16 * q + 8 * h;
    if (j >= c)
        return;
    pf4 a0 = pf4_zero(), a1 = a0;
    const float *panel = P + q * p * 16 + 8 * h, *x = A + i * p;
    for (Py_ssize_t k = 0; k < p; ++k) {
        pf4 s = pf4_set1(x[k]);
        a0 = pf4_fmadd(s, pf4_load(panel + k * 16), a0);
        a1 = pf4_fmadd(s, pf4_load(panel + k * 16 + 4), a1);
    }
    store_exp8(out + i * c + j, c - j < 8 ? c - j : 8, a0, a1, clamp);
}

/* exp of the block out (m x c, rows ld apart) in place, 16 values a step: four
   independent exponentials in flight, which a CPU without fused multiply-adds needs
   to fill its pipelines (one at a time, each waited on its ~30 dependent operations);
   by exp4_fast, and by exp4 for a step where a value is out of its range (gradual
   underflow, overflow, NaN) */
static void
exp_rows_portable(float *out, Py_ssize_t m, Py_ssize_t c, Py_ssize_t ld, int clamp)
{
    for (Py_ssize_t i = 0; i < m; ++i) {
        float *row = out + i * ld;
        Py_ssize_t j = 0;
        for (; j + 16 <= c; j += 16) {
            pf4 x0 = pf4_load(row + j), x1 = pf4_load(row + j + 4), x2 = pf4_load(row + j + 8),
                x3 = pf4_load(row + j + 12), f0, f1, f2, f3;
            pf4 v0 = exp4_fast(x0, clamp, &f0), v1 = exp4_fast(x1, clamp, &f1);
            pf4 v2 = exp4_fast(x2, clamp, &f2), v3 = exp4_fast(x3, clamp, &f3);
            if (!pf4_all_set(f0, f1, f2, f3)) {
                v0 = exp4(x0, clamp);
                v1 = exp4(x1, clamp);
                v2 = exp4(x2, clamp);
                v3 = exp4(x3, clamp);
            }
            pf4_store(row + j, v0);
            pf4_store(row + j + 4, v1);
            pf4_store(row + j + 8, v2);
            pf4_store(row + j + 12, v3);
        }
        for (; j + 4 <= c; j += 4)
            pf4_store(row + j, exp4(pf4_load(row + j), clamp));
        if (j < c) { /* the last c mod 4 values */
            float tmp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            memcpy(tmp, row + j, (size_t)(c - j) * sizeof(float));
            pf4_store(tmp, exp4(pf4_load(tmp), clamp));
            memcpy(row + j, tmp, (size_t)(c - j) * sizeof(float));
        }
    }
}

/* the Fortran BLAS sgemm (SciPy's cython_blas signature), handed over by the caller */
typedef void (*sgemm_fn)(char *, char *, int *, int *, int *, float *, float *, int *,
                         float *, int *, float *, float *, int *);

/* the portable variant's block where the caller hands over BLAS: out = exp(A B^T)
   (A m x p, B c x p, out m x c, row-major and contiguous), the exponents by sgemm,
   then the exponential in place while they are in cache (the callers' pieces and
   slices are sized for it). BLAS's kernels are the widest this CPU runs; the
   portable dot products, without fused multiply-adds and with 4 lanes, ran at half
   its rate (a 2,048 x 2,048 block at d = 20: 2.1 against 1.1 ns a value on this
   project's AVX2 machine). m, c and p must fit BLAS's int. */
static void
rbf_block_blas(sgemm_fn sgemm, const float *A, Py_ssize_t m, Py_ssize_t p, const float *B,
               Py_ssize_t c, float *out, int clamp)
{
    if (m == 0 || c == 0)
        return;
    /* row-major out = A B^T is column-major out^T (c x m) = B (c x p) A^T: B's
       row-major storage read transposed, A's as it is */
    int M = (int)c, N = (int)m, K = (int)p, ld = p > 0 ? (int)p : 1, ldo = (int)c;
    float one = 1.0f, zero = 0.0f;
    char tt = 'T', nn = 'N';
    sgemm(&tt, &nn, &M, &N, &K, &one, (float *)B, &ld, (float *)A, &ld, &zero, out, &ldo);
    exp_rows_portable(out, m, c, c, clamp);
}

static void
rbf_block_portable(const float *A, Py_ssize_t m, Py_ssize_t p, const float *P, Py_ssize_t c,
                   float *out, int clamp)
{
    Py_ssize_t panels = (c + 15) / 16, i = 0;
    for (; i + 4 <= m; i += 4)
        for (Py_ssize_t q = 0; q < panels; ++q) {
            block_portable_4(A, p, P, out, c, i, q, 0, clamp);
            block_portable_4(A, p, P, out, c, i, q, 1, clamp);
        }
    for (; i < m; ++i)
        for (Py_ssize_t q = 0; q < panels; ++q) {
            block_portable_1(A, p, P, out, c, i, q, 0, clamp);
            block_portable_1(A, p, P, out, c, i, q, 1, clamp);
        }
}

#if KPCA_X86
/* --- avx2: a panel is two 256-bit registers; 4 rows x 1 panel of accumulators (8
   of the 16 registers) */
/* x clamped to the exponential's range, as exp4_range */
TARGET_AVX2 static inline __m256
exp8_range(__m256 x, int clamp)
{
    if (clamp) /* then x <= 0 (or NaN): the upper bound holds */
        x = _mm256_min_ps(_mm256_setzero_ps(), x); /* NaN: the second operand */
    else
        x = _mm256_min_ps(_mm256_set1_ps(EXP_HIGH), x);
    return _mm256_max_ps(_mm256_set1_ps(EXP_LOW), x);
}

/* exp(x) = 2^n p for x in range (exp8_range): returns p, and t holding n in its low
   bits. n rounded as in exp4 (in t's low mantissa bits, read as an integer by the
   callers): one FMA and one subtraction, where a product, vroundps (two operations on
   Intel) and vcvtps2dq took four; the same n */
TARGET_AVX2 static inline __m256
exp8_poly(__m256 x, __m256 *t)
{
    *t = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2E), _mm256_set1_ps(ROUND_MAGIC));
    __m256 n = _mm256_sub_ps(*t, _mm256_set1_ps(ROUND_MAGIC));
    EXP_POLY_X86(__m256, _mm256, x, n);
    return p;
}

TARGET_AVX2 static inline __m256
exp8(__m256 x, int clamp)
{
    __m256 t;
    __m256 p = exp8_poly(exp8_range(x, clamp), &t);
    __m256i k = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000));
    /* 2^n as 2^h 2^(n - h) (see pf4_scale, _portable.h); NaN gives some integer, and p is NaN */
    __m256i h = _mm256_srai_epi32(k, 1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(k, h), bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

/* exp8 where every lane's result is a normal number (as exp4_fast: x, bounded, within
   [EXP_FAST_LOW, EXP_FAST_HIGH]): 2^n added to p's exponent bits, n << 23 being t's
   bits << 23 (ROUND_MAGIC's low 9 bits are 0). Two integer operations where exp8's
   scaling takes seven and two products (on Intel the shifts and products share the
   FMA ports), and exp8_range's two bounds, which are no-ops there, skipped; the same
   bits as exp8 (both scalings are exact). *fine gets all ones in the lanes where that
   holds (with clamp, x <= 0 after it: the lower bound alone; a NaN fails it). */
TARGET_AVX2 static inline __m256
exp8_fast(__m256 x, int clamp, __m256 *fine)
{
    /* exp8_range's bounds are no-ops where the lanes are fine: only the clamp at 0 */
    if (clamp)
        x = _mm256_min_ps(_mm256_setzero_ps(), x);
    *fine = _mm256_cmp_ps(x, _mm256_set1_ps(EXP_FAST_LOW), _CMP_GE_OQ);
    if (!clamp)
        *fine = _mm256_and_ps(*fine, _mm256_cmp_ps(x, _mm256_set1_ps(EXP_FAST_HIGH),
                                                   _CMP_LE_OQ));
    __m256 t;
    __m256 p = exp8_poly(x, &t);
    return _mm256_castsi256_ps(_mm256_add_epi32(
        _mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(t), 23)));
}

TARGET_AVX2 static inline __attribute__((always_inline)) void
block_avx2_r(const float *A, Py_ssize_t p, const float *P, float *out, Py_ssize_t c,
             Py_ssize_t i0, int R, Py_ssize_t q, int clamp)
{
    __m256 acc[4][2];
    for (int i = 0; i < 4; ++i)
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    const float *panel = P + q * p * 16;
    for (Py_ssize_t k = 0; k < p; ++k) {
        __m256 b0 = _mm256_loadu_ps(panel + k * 16), b1 = _mm256_loadu_ps(panel + k * 16 + 8);
        for (int i = 0; i < R; ++i) {
            __m256 a = _mm256_broadcast_ss(A + (i0 + i) * p + k);
            acc[i][0] = _mm256_fmadd_ps(a, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(a, b1, acc[i][1]);
        }
    }
    Py_ssize_t j = 16 * q;
    /* the tile's exponentials by exp8_fast, one test for all of them; by exp8 where a
       value is out of its range (gradual underflow, overflow, NaN) */
    __m256 v[4][2], fine = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    for (int i = 0; i < R; ++i)
        for (int h = 0; h < 2; ++h) {
            __m256 f;
            v[i][h] = exp8_fast(acc[i][h], clamp, &f);
            fine = _mm256_and_ps(fine, f);
        }
    if (_mm256_movemask_ps(fine) != 0xFF)
        for (int i = 0; i < R; ++i)
            for (int h = 0; h < 2; ++h)
                v[i][h] = exp8(acc[i][h], clamp);
    for (int i = 0; i < R; ++i) {
        float *row = out + (i0 + i) * c + j;
        __m256 v0 = v[i][0], v1 = v[i][1];
        if (j + 16 <= c) {
            _mm256_storeu_ps(row, v0);
            _mm256_storeu_ps(row + 8, v1);
        }
        else { /* the last, partial panel */
            float tmp[16];
            _mm256_storeu_ps(tmp, v0);
            _mm256_storeu_ps(tmp + 8, v1);
            memcpy(row, tmp, (size_t)(c - j) * sizeof(float));
        }
    }
}

TARGET_AVX2 static void
rbf_block_avx2(const float *A, Py_ssize_t m, Py_ssize_t p, const float *P, Py_ssize_t c,
               float *out, int clamp)
{
    Py_ssize_t panels = (c + 15) / 16;
    for (Py_ssize_t i = 0; i < m; i += 4) {
        if (m - i >= 4) /* the full register tile, spelled out: kept in registers */
            for (Py_ssize_t q = 0; q < panels; ++q)
                block_avx2_r(A, p, P, out, c, i, 4, q, clamp);
        else
            for (Py_ssize_t q = 0; q < panels; ++q)
                block_avx2_r(A, p, P, out, c, i, (int)(m - i), q, clamp);
    }
}

/* --- avx512: a panel is one 512-bit register; 4 rows x 4 panels of accumulators */
TARGET_AVX512 static inline __m512
exp16(__m512 x, int clamp)
{
    if (clamp)
        x = _mm512_min_ps(_mm512_setzero_ps(), x); /* NaN: the second operand */
    /* below EXP_LOW the result is 0 and above EXP_HIGH inf either way; the bounds keep
       n finite (NaN passes both: the second operand is returned) */
    x = _mm512_max_ps(_mm512_set1_ps(EXP_LOW), x);
    x = _mm512_min_ps(_mm512_set1_ps(EXP_HIGH), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    EXP_POLY_X86(__m512, _mm512, x, n);
    return _mm512_scalef_ps(p, n);
}

/* out[i, j] = exp(A[i] . B[j]) for rows i0 <= i < i0 + R (R <= 4) and the columns of
   panels q0 <= q < q0 + Q (Q <= 4); a partial last panel is stored masked. Always
   inlined: with R and Q constant the 16 accumulators stay in registers */
TARGET_AVX512 static inline __attribute__((always_inline)) void
block_rq(const float *A, Py_ssize_t p, const float *P, float *out, Py_ssize_t c,
         Py_ssize_t i0, int R, Py_ssize_t q0, int Q, int clamp)
{
    __m512 acc[4][4];
    for (int i = 0; i < 4; ++i)
        for (int q = 0; q < 4; ++q)
            acc[i][q] = _mm512_setzero_ps();
    for (Py_ssize_t k = 0; k < p; ++k) {
        __m512 b[4];
        for (int q = 0; q < Q; ++q)
            b[q] = _mm512_loadu_ps(P + ((q0 + q) * p + k) * 16);
        for (int i = 0; i < R; ++i) {
            __m512 a = _mm512_set1_ps(A[(i0 + i) * p + k]);
            for (int q = 0; q < Q; ++q)
                acc[i][q] = _mm512_fmadd_ps(a, b[q], acc[i][q]);
        }
    }
    for (int i = 0; i < R; ++i) {
        float *row = out + (i0 + i) * c;
        for (int q = 0; q < Q; ++q) {
            Py_ssize_t j = 16 * (q0 + q);
            __m512 v = exp16(acc[i][q], clamp);
            if (j + 16 <= c)
                _mm512_storeu_ps(row + j, v);
            else
                _mm512_mask_storeu_ps(row + j, (__mmask16)((1u << (c - j)) - 1u), v);
        }
    }
}

TARGET_AVX512 static void
rbf_block_avx512(const float *A, Py_ssize_t m, Py_ssize_t p, const float *P, Py_ssize_t c,
                 float *out, int clamp)
{
    Py_ssize_t panels = (c + 15) / 16;
    for (Py_ssize_t i = 0; i < m; i += 4) {
        int R = m - i >= 4 ? 4 : (int)(m - i);
        Py_ssize_t q = 0;
        /* the full register tile, 4 x 4, spelled out so the compiler keeps it in
           registers; the edges with the general one */
        if (R == 4)
            for (; q + 4 <= panels; q += 4)
                block_rq(A, p, P, out, c, i, 4, q, 4, clamp);
        for (; q < panels; q += 4)
            block_rq(A, p, P, out, c, i, R, q, panels - q >= 4 ? 4 : (int)(panels - q),
                     clamp);
    }
}
#endif

typedef void (*rbf_block_fn)(const float *, Py_ssize_t, Py_ssize_t, const float *,
                             Py_ssize_t, float *, int);

/* each variant's block, by variant index */
static const rbf_block_fn rbf_block[KPCA_VARIANTS] = {
    rbf_block_portable,
#if KPCA_X86
    rbf_block_avx2,
    rbf_block_avx512,
#endif
};

#endif
