/*
 * The kernel of _tileprod.c, written once for float32 and float64: _tileprod.c
 * includes this file twice, with SCALAR, VEC, LANES (values per register), the
 * AVX-512 operations (VLOAD, VSTORE, VSET1, VFMADD, VMUL, VADD, VZERO, VREDUCE) and
 * FUNC (the function's name) defined for each type.
 */
/* W[I] (m x b) += T (m x c) V[J] (c x b); if both, W[J] (c x b) += T^T V[I] (m x b).
   All row-major and contiguous; b a multiple of LANES. rs (m) += T 1 and, if both,
   cs (c) += T^T 1, when not NULL. */
TARGET static void
FUNC(const SCALAR *T, Py_ssize_t m, Py_ssize_t c, Py_ssize_t b, const SCALAR *VJ,
     const SCALAR *VI, SCALAR *WI, SCALAR *WJ, int both, SCALAR *rs, SCALAR *cs)
{
    Py_ssize_t r = 0;
    for (; r + 8 <= m; r += 8) {
        const SCALAR *t = T + r * c;
        for (Py_ssize_t q = 0; q < b; q += LANES) {
            VEC a0 = VZERO(), a1 = a0, a2 = a0, a3 = a0;
            VEC a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            const SCALAR *vi = VI + r * b + q;
            VEC v0 = VLOAD(vi), v1 = VLOAD(vi + b);
            VEC v2 = VLOAD(vi + 2 * b), v3 = VLOAD(vi + 3 * b);
            VEC v4 = VLOAD(vi + 4 * b), v5 = VLOAD(vi + 5 * b);
            VEC v6 = VLOAD(vi + 6 * b), v7 = VLOAD(vi + 7 * b);
            for (Py_ssize_t j = 0; j < c; ++j) {
                VEC vj = VLOAD(VJ + j * b + q);
                VEC s0 = VSET1(t[j]), s1 = VSET1(t[c + j]);
                VEC s2 = VSET1(t[2 * c + j]), s3 = VSET1(t[3 * c + j]);
                VEC s4 = VSET1(t[4 * c + j]), s5 = VSET1(t[5 * c + j]);
                VEC s6 = VSET1(t[6 * c + j]), s7 = VSET1(t[7 * c + j]);
                a0 = VFMADD(s0, vj, a0);
                a1 = VFMADD(s1, vj, a1);
                a2 = VFMADD(s2, vj, a2);
                a3 = VFMADD(s3, vj, a3);
                a4 = VFMADD(s4, vj, a4);
                a5 = VFMADD(s5, vj, a5);
                a6 = VFMADD(s6, vj, a6);
                a7 = VFMADD(s7, vj, a7);
                if (both) {
                    /* two partial sums: a chain of 8 dependent FMAs would stall */
                    VEC p = VMUL(s0, v0), u = VMUL(s1, v1);
                    p = VFMADD(s2, v2, p);
                    u = VFMADD(s3, v3, u);
                    p = VFMADD(s4, v4, p);
                    u = VFMADD(s5, v5, u);
                    p = VFMADD(s6, v6, p);
                    u = VFMADD(s7, v7, u);
                    SCALAR *wj = WJ + j * b + q;
                    VSTORE(wj, VADD(VLOAD(wj),
                                                       VADD(p, u)));
                }
            }
            SCALAR *wi = WI + r * b + q;
            VSTORE(wi, VADD(VLOAD(wi), a0));
            VSTORE(wi + b, VADD(VLOAD(wi + b), a1));
            VSTORE(wi + 2 * b, VADD(VLOAD(wi + 2 * b), a2));
            VSTORE(wi + 3 * b, VADD(VLOAD(wi + 3 * b), a3));
            VSTORE(wi + 4 * b, VADD(VLOAD(wi + 4 * b), a4));
            VSTORE(wi + 5 * b, VADD(VLOAD(wi + 5 * b), a5));
            VSTORE(wi + 6 * b, VADD(VLOAD(wi + 6 * b), a6));
            VSTORE(wi + 7 * b, VADD(VLOAD(wi + 7 * b), a7));
        }
    }
    for (; r < m; ++r) { /* the last m mod 8 rows, one at a time */
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
