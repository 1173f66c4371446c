/*
 * The kernel of _tileprod.c, written once for every variant and type: _tileprod.c
 * includes this file once per (variant, type), with SCALAR, VEC, LANES (values per
 * vector), ROWS (rows of T per step), PAIRS (1: two vectors of columns per step
 * where the block has an even number of them), the vector operations (VLOAD, VSTORE, VSET1,
 * VFMADD, VMUL, VADD, VZERO, VREDUCE), TARGET (the variant's target attribute, or
 * nothing) and FUNC (the function's name) defined for it.
 */
#define TAIL KPCA_CAT(FUNC, _tail)
#define TAIL_ROWS KPCA_CAT(FUNC, _tail_rows)

/* rows at a time in the dot-product form (TAIL): each load and store of W[J]'s
   transposed columns serves 4 rows' products, each vector of V[J]'s 4 rows' sums (2
   rows took 1.1-1.35x the time of a 24-column block's products on avx512 and of 2-12
   columns on avx2; the portable variant about the same; docs/benchmarks.md, tenth
   session). The vector sums go in the same order as 2 rows a step; the scalar sums
   of a row's last c mod LANES values may round differently in the rows left over
   from whole blocks (m mod 4), as the compiler contracts them per instantiation */
#define TAIL_NR 4

/* NR (1 to TAIL_NR) rows r.. of the last columns q0, q0 + NC - 1 (NC: 1 or 2) of the
   block (W[I] += T V[J] and, if both, W^T[J] += T^T V[I]) in the dot-product form:
   vectors run along the tile's row, against the columns of V[J] transposed into
   contiguous rows (vjt: t x c) and accumulated into W[J] transposed (wjt); each
   product's sum is a vector of partial sums, reduced at the row's end. Called with
   constant NR and NC (inlined: the loops over them unroll and the sums stay in
   registers). */
TARGET static inline __attribute__((always_inline)) void
TAIL(const SCALAR *T, Py_ssize_t c, Py_ssize_t b, Py_ssize_t r, int NR, Py_ssize_t q0,
     int NC, const SCALAR *vjt, const SCALAR *VI, SCALAR *WI, SCALAR *wjt, int both)
{
    VEC a[TAIL_NR][2], s[TAIL_NR][2];
    SCALAR rest[TAIL_NR][2];
    const SCALAR *t[TAIL_NR];
    for (int i = 0; i < NR; ++i) {
        t[i] = T + (r + i) * c;
        for (int u = 0; u < NC; ++u) {
            a[i][u] = VZERO();
            s[i][u] = VSET1(VI[(r + i) * b + q0 + u]);
            rest[i][u] = 0;
        }
    }
    Py_ssize_t j = 0;
    for (; j + LANES <= c; j += LANES) {
        VEC x[TAIL_NR];
        for (int i = 0; i < NR; ++i)
            x[i] = VLOAD(t[i] + j);
        for (int u = 0; u < NC; ++u) {
            VEC v = VLOAD(vjt + u * c + j);
            for (int i = 0; i < NR; ++i)
                a[i][u] = VFMADD(x[i], v, a[i][u]);
            if (both) {
                SCALAR *w = wjt + u * c + j;
                VEC y = VFMADD(x[0], s[0][u], VLOAD(w));
                for (int i = 1; i < NR; ++i)
                    y = VFMADD(x[i], s[i][u], y);
                VSTORE(w, y);
            }
        }
    }
    for (; j < c; ++j)  /* the last c mod LANES values of the rows */
        for (int u = 0; u < NC; ++u)
            for (int i = 0; i < NR; ++i) {
                SCALAR x = t[i][j];
                rest[i][u] += x * vjt[u * c + j];
                if (both)
                    wjt[u * c + j] += x * VI[(r + i) * b + q0 + u];
            }
    for (int i = 0; i < NR; ++i)
        for (int u = 0; u < NC; ++u)
            WI[(r + i) * b + q0 + u] += VREDUCE(a[i][u]) + rest[i][u];
}

/* TAIL for the rows r:e of the columns q0:b (fewer than LANES): vjt and wjt hold
   V[J]'s and W[J]'s columns q0:b transposed (t x c each). Called for each block of
   rows right after the vectors' loop, while its rows of T are in cache. */
TARGET static inline void
TAIL_ROWS(const SCALAR *T, Py_ssize_t r, Py_ssize_t e, Py_ssize_t c, Py_ssize_t b,
          Py_ssize_t q0, const SCALAR *vjt, const SCALAR *VI, SCALAR *WI, SCALAR *wjt,
          int both)
{
    for (Py_ssize_t q = q0; q < b; q += 2) {
        const SCALAR *v = vjt + (q - q0) * c;
        SCALAR *w = wjt + (q - q0) * c;
        Py_ssize_t i = r;
        if (q + 1 < b) {
            for (; i + TAIL_NR <= e; i += TAIL_NR)
                TAIL(T, c, b, i, TAIL_NR, q, 2, v, VI, WI, w, both);
            for (; i < e; ++i)
                TAIL(T, c, b, i, 1, q, 2, v, VI, WI, w, both);
        }
        else {
            for (; i + TAIL_NR <= e; i += TAIL_NR)
                TAIL(T, c, b, i, TAIL_NR, q, 1, v, VI, WI, w, both);
            for (; i < e; ++i)
                TAIL(T, c, b, i, 1, q, 1, v, VI, WI, w, both);
        }
    }
}

/* W[I] (m x b) += T (m x c) V[J] (c x b); if both, W[J] (c x b) += T^T V[I] (m x b).
   All row-major and contiguous. rs (m) += T 1 and, if both, cs (c) += T^T 1, when not
   NULL. The columns go by vectors (LANES of them) and the last b mod LANES by TAIL_ROWS
   (a block of 10 columns costs 10 columns' work, not 16); a block narrower than LANES
   goes there whole (the caller pads a block where whole vectors are cheaper:
   kpca.operators._tiled.native_columns). */
TARGET static void
FUNC(const SCALAR *T, Py_ssize_t m, Py_ssize_t c, Py_ssize_t b, const SCALAR *VJ,
     const SCALAR *VI, SCALAR *WI, SCALAR *WJ, int both, SCALAR *rs, SCALAR *cs)
{
    Py_ssize_t r = 0;
    const Py_ssize_t bv = b - b % LANES; /* the columns that fill vectors */
    const Py_ssize_t nt = b - bv;
    SCALAR *vjt = NULL, *wjt = NULL;
    if (nt > 0) {
        vjt = malloc(sizeof(SCALAR) * (size_t)(2 * nt * c + 1));
        if (vjt == NULL) { /* no buffer: scalar sums, then the vectors alone */
            for (Py_ssize_t i = 0; i < m; ++i)
                for (Py_ssize_t u = bv; u < b; ++u) {
                    SCALAR acc = 0;
                    for (Py_ssize_t j = 0; j < c; ++j) {
                        acc += T[i * c + j] * VJ[j * b + u];
                        if (both)
                            WJ[j * b + u] += T[i * c + j] * VI[i * b + u];
                    }
                    WI[i * b + u] += acc;
                }
        }
        else {
            wjt = vjt + nt * c;
            for (Py_ssize_t j = 0; j < c; ++j)
                for (Py_ssize_t u = 0; u < nt; ++u) {
                    vjt[u * c + j] = VJ[j * b + bv + u];
                    wjt[u * c + j] = 0;
                }
        }
    }
    /* ROWS rows at a time; the compiler unrolls the loops over i and keeps a, v and
       s in registers */
    for (; r + ROWS <= m; r += ROWS) {
        const SCALAR *t = T + r * c;
        Py_ssize_t q = 0;
#if PAIRS
        /* two vectors of columns at a time: each broadcast of T serves twice as many
           FMAs, and 2 ROWS independent accumulators hide the FMAs' latency where there
           are too few registers for 8 rows (AVX2, SSE2: 16); the rows of V[I] are read
           from L1 rather than held */
        for (; q + 2 * LANES <= bv; q += 2 * LANES) {
            VEC a[ROWS][2];
            for (int i = 0; i < ROWS; ++i)
                a[i][0] = a[i][1] = VZERO();
            for (Py_ssize_t j = 0; j < c; ++j) {
                VEC vj0 = VLOAD(VJ + j * b + q), vj1 = VLOAD(VJ + j * b + q + LANES);
                if (both) {
                    VEC p0, p1, u0, u1;
                    for (int i = 0; i < ROWS; i += 2) {
                        VEC s = VSET1(t[i * c + j]), z = VSET1(t[(i + 1) * c + j]);
                        const SCALAR *vi = VI + (r + i) * b + q;
                        a[i][0] = VFMADD(s, vj0, a[i][0]);
                        a[i][1] = VFMADD(s, vj1, a[i][1]);
                        a[i + 1][0] = VFMADD(z, vj0, a[i + 1][0]);
                        a[i + 1][1] = VFMADD(z, vj1, a[i + 1][1]);
                        /* the first rows' products start the sums: an addition of 0
                           is not dropped by the compiler (-0 + 0 is +0), and without
                           fused multiply-adds (portable) it cost 4 of 71 instructions
                           a step */
                        if (i == 0) {
                            p0 = VMUL(s, VLOAD(vi));
                            p1 = VMUL(s, VLOAD(vi + LANES));
                            u0 = VMUL(z, VLOAD(vi + b));
                            u1 = VMUL(z, VLOAD(vi + b + LANES));
                        }
                        else {
                            p0 = VFMADD(s, VLOAD(vi), p0);
                            p1 = VFMADD(s, VLOAD(vi + LANES), p1);
                            u0 = VFMADD(z, VLOAD(vi + b), u0);
                            u1 = VFMADD(z, VLOAD(vi + b + LANES), u1);
                        }
                    }
                    SCALAR *wj = WJ + j * b + q;
                    VSTORE(wj, VADD(VLOAD(wj), VADD(p0, u0)));
                    VSTORE(wj + LANES, VADD(VLOAD(wj + LANES), VADD(p1, u1)));
                }
                else
                    for (int i = 0; i < ROWS; ++i) {
                        VEC s = VSET1(t[i * c + j]);
                        a[i][0] = VFMADD(s, vj0, a[i][0]);
                        a[i][1] = VFMADD(s, vj1, a[i][1]);
                    }
            }
            for (int i = 0; i < ROWS; ++i) {
                SCALAR *wi = WI + (r + i) * b + q;
                VSTORE(wi, VADD(VLOAD(wi), a[i][0]));
                VSTORE(wi + LANES, VADD(VLOAD(wi + LANES), a[i][1]));
            }
        }
#endif
        for (; q < bv; q += LANES) {
            VEC a[ROWS], v[ROWS], s[ROWS];
            for (int i = 0; i < ROWS; ++i) {
                a[i] = VZERO();
                v[i] = VLOAD(VI + (r + i) * b + q);
            }
            for (Py_ssize_t j = 0; j < c; ++j) {
                VEC vj = VLOAD(VJ + j * b + q);
                for (int i = 0; i < ROWS; ++i) {
                    s[i] = VSET1(t[i * c + j]);
                    a[i] = VFMADD(s[i], vj, a[i]);
                }
                if (both) {
                    /* two partial sums: one chain of ROWS dependent FMAs would stall */
                    VEC p = VMUL(s[0], v[0]), u = VMUL(s[1], v[1]);
                    for (int i = 2; i < ROWS; i += 2) {
                        p = VFMADD(s[i], v[i], p);
                        u = VFMADD(s[i + 1], v[i + 1], u);
                    }
                    SCALAR *wj = WJ + j * b + q;
                    VSTORE(wj, VADD(VLOAD(wj), VADD(p, u)));
                }
            }
            for (int i = 0; i < ROWS; ++i) {
                SCALAR *wi = WI + (r + i) * b + q;
                VSTORE(wi, VADD(VLOAD(wi), a[i]));
            }
        }
        if (wjt != NULL) /* the last columns of these rows, from cache */
            TAIL_ROWS(T, r, r + ROWS, c, b, bv, vjt, VI, WI, wjt, both);
    }
    if (wjt != NULL && r < m)
        TAIL_ROWS(T, r, m, c, b, bv, vjt, VI, WI, wjt, both);
    for (; r < m; ++r) { /* the last m mod ROWS rows, one at a time */
        const SCALAR *t = T + r * c;
        for (Py_ssize_t q = 0; q < bv; q += LANES) {
            VEC a = VZERO(), v = VLOAD(VI + r * b + q);
            for (Py_ssize_t j = 0; j < c; ++j) {
                VEC s = VSET1(t[j]);
                a = VFMADD(s, VLOAD(VJ + j * b + q), a);
                if (both) {
                    SCALAR *wj = WJ + j * b + q;
                    VSTORE(wj, VFMADD(s, v, VLOAD(wj)));
                }
            }
            SCALAR *wi = WI + r * b + q;
            VSTORE(wi, VADD(VLOAD(wi), a));
        }
    }
    if (wjt != NULL && both)
        for (Py_ssize_t j = 0; j < c; ++j)
            for (Py_ssize_t u = 0; u < nt; ++u)
                WJ[j * b + bv + u] += wjt[u * c + j];
    free(vjt);
    if (rs == NULL && cs == NULL)
        return;
    /* the sums: a second sweep over each row, from cache when the tile is small */
    for (r = 0; r < m; ++r) {
        const SCALAR *t = T + r * c;
        VEC acc = VZERO();
        Py_ssize_t j = 0;
        for (; j + LANES <= c; j += LANES) {
            VEC x = VLOAD(t + j);
            acc = VADD(acc, x);
            if (both && cs != NULL)
                VSTORE(cs + j, VADD(VLOAD(cs + j), x));
        }
        SCALAR s = VREDUCE(acc);
        for (; j < c; ++j) {
            s += t[j];
            if (both && cs != NULL)
                cs[j] += t[j];
        }
        if (rs != NULL)
            rs[r] += s;
    }
}
#undef TAIL
#undef TAIL_ROWS
#undef TAIL_NR
