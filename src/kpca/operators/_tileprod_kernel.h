/*
 * The kernel of _tileprod.c, written once for every variant and type: _tileprod.c
 * includes this file once per (variant, type), with SCALAR, VEC, LANES (values per
 * vector), ROWS (rows of T per step), PAIRS (1: two vectors of columns per step
 * where the block has an even number of them), the vector operations (VLOAD, VSTORE, VSET1,
 * VFMADD, VMUL, VADD, VZERO, VREDUCE), TARGET (the variant's target attribute, or
 * nothing) and FUNC (the function's name) defined for it.
 */
/* W[I] (m x b) += T (m x c) V[J] (c x b); if both, W[J] (c x b) += T^T V[I] (m x b).
   All row-major and contiguous; b a multiple of LANES. rs (m) += T 1 and, if both,
   cs (c) += T^T 1, when not NULL. */
TARGET static void
FUNC(const SCALAR *T, Py_ssize_t m, Py_ssize_t c, Py_ssize_t b, const SCALAR *VJ,
     const SCALAR *VI, SCALAR *WI, SCALAR *WJ, int both, SCALAR *rs, SCALAR *cs)
{
    Py_ssize_t r = 0;
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
        for (; q + 2 * LANES <= b; q += 2 * LANES) {
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
        for (; q < b; q += LANES) {
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
    }
    for (; r < m; ++r) { /* the last m mod ROWS rows, one at a time */
        const SCALAR *t = T + r * c;
        for (Py_ssize_t q = 0; q < b; q += LANES) {
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
