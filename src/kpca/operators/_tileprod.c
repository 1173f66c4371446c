/*
 * The product of a stored float32 kernel tile with a block, both sides in one sweep
 * (docs/math.md, "The eigenproblem"; docs/benchmarks.md, issue 17).
 *
 * A tile T = K[I, J] below the diagonal serves two products of a pass over the
 * symmetric K:   W[I] += T V[J]   and   W[J] += T^T V[I].
 * With NumPy these are two BLAS calls, each packing the tile before multiplying it,
 * with the tile read from memory between them; for the narrow blocks of block
 * Lanczos (16 columns) that ran at half of the machine's GEMM rate. Here each value
 * of T is loaded once and used by both products: for 8 rows at a time, a broadcast
 * value T[r, j] is multiplied into the row accumulators of W[I] (registers) and
 * into the row W[J][j] (one load and store per 8 rows). A row of the block is 16
 * floats, one AVX-512 register, so the block's width must be a multiple of 16.
 *
 * Optionally the same sweep adds the tile's row sums (T 1) and column sums (T^T 1),
 * which the construction pass needs for centring.
 *
 * Sums are accumulated in float32 within the tile, as a BLAS sgemm does; the caller
 * adds each tile's result into float64 accumulators.
 *
 * Only x86-64 with GCC or Clang gets the AVX-512 kernel (chosen at run time:
 * supported() tells whether this CPU has it); elsewhere supported() is false and
 * kpca uses NumPy.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define KPCA_AVX512 1
#include <immintrin.h>
#else
#define KPCA_AVX512 0
#endif

#if KPCA_AVX512
#define TARGET __attribute__((target("avx512f,fma")))

/* W[I] (m x b) += T (m x c) V[J] (c x b); if both, W[J] (c x b) += T^T V[I] (m x b).
   All row-major and contiguous; b a multiple of 16. rs (m) += T 1 and, if both,
   cs (c) += T^T 1, when not NULL. */
TARGET static void
tile_product(const float *T, Py_ssize_t m, Py_ssize_t c, Py_ssize_t b,
             const float *VJ, const float *VI, float *WI, float *WJ, int both,
             float *rs, float *cs)
{
    Py_ssize_t r = 0;
    for (; r + 8 <= m; r += 8) {
        const float *t = T + r * c;
        for (Py_ssize_t q = 0; q < b; q += 16) {
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            __m512 a4 = a0, a5 = a0, a6 = a0, a7 = a0;
            const float *vi = VI + r * b + q;
            __m512 v0 = _mm512_loadu_ps(vi), v1 = _mm512_loadu_ps(vi + b);
            __m512 v2 = _mm512_loadu_ps(vi + 2 * b), v3 = _mm512_loadu_ps(vi + 3 * b);
            __m512 v4 = _mm512_loadu_ps(vi + 4 * b), v5 = _mm512_loadu_ps(vi + 5 * b);
            __m512 v6 = _mm512_loadu_ps(vi + 6 * b), v7 = _mm512_loadu_ps(vi + 7 * b);
            for (Py_ssize_t j = 0; j < c; ++j) {
                __m512 vj = _mm512_loadu_ps(VJ + j * b + q);
                __m512 s0 = _mm512_set1_ps(t[j]), s1 = _mm512_set1_ps(t[c + j]);
                __m512 s2 = _mm512_set1_ps(t[2 * c + j]), s3 = _mm512_set1_ps(t[3 * c + j]);
                __m512 s4 = _mm512_set1_ps(t[4 * c + j]), s5 = _mm512_set1_ps(t[5 * c + j]);
                __m512 s6 = _mm512_set1_ps(t[6 * c + j]), s7 = _mm512_set1_ps(t[7 * c + j]);
                a0 = _mm512_fmadd_ps(s0, vj, a0);
                a1 = _mm512_fmadd_ps(s1, vj, a1);
                a2 = _mm512_fmadd_ps(s2, vj, a2);
                a3 = _mm512_fmadd_ps(s3, vj, a3);
                a4 = _mm512_fmadd_ps(s4, vj, a4);
                a5 = _mm512_fmadd_ps(s5, vj, a5);
                a6 = _mm512_fmadd_ps(s6, vj, a6);
                a7 = _mm512_fmadd_ps(s7, vj, a7);
                if (both) {
                    /* two partial sums: a chain of 8 dependent FMAs would stall */
                    __m512 p = _mm512_mul_ps(s0, v0), u = _mm512_mul_ps(s1, v1);
                    p = _mm512_fmadd_ps(s2, v2, p);
                    u = _mm512_fmadd_ps(s3, v3, u);
                    p = _mm512_fmadd_ps(s4, v4, p);
                    u = _mm512_fmadd_ps(s5, v5, u);
                    p = _mm512_fmadd_ps(s6, v6, p);
                    u = _mm512_fmadd_ps(s7, v7, u);
                    float *wj = WJ + j * b + q;
                    _mm512_storeu_ps(wj, _mm512_add_ps(_mm512_loadu_ps(wj),
                                                       _mm512_add_ps(p, u)));
                }
            }
            float *wi = WI + r * b + q;
            _mm512_storeu_ps(wi, _mm512_add_ps(_mm512_loadu_ps(wi), a0));
            _mm512_storeu_ps(wi + b, _mm512_add_ps(_mm512_loadu_ps(wi + b), a1));
            _mm512_storeu_ps(wi + 2 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 2 * b), a2));
            _mm512_storeu_ps(wi + 3 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 3 * b), a3));
            _mm512_storeu_ps(wi + 4 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 4 * b), a4));
            _mm512_storeu_ps(wi + 5 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 5 * b), a5));
            _mm512_storeu_ps(wi + 6 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 6 * b), a6));
            _mm512_storeu_ps(wi + 7 * b, _mm512_add_ps(_mm512_loadu_ps(wi + 7 * b), a7));
        }
    }
    for (; r < m; ++r) { /* the last m mod 8 rows, one at a time */
        const float *t = T + r * c;
        for (Py_ssize_t q = 0; q < b; q += 16) {
            __m512 a = _mm512_setzero_ps(), v = _mm512_loadu_ps(VI + r * b + q);
            for (Py_ssize_t j = 0; j < c; ++j) {
                __m512 s = _mm512_set1_ps(t[j]);
                a = _mm512_fmadd_ps(s, _mm512_loadu_ps(VJ + j * b + q), a);
                if (both) {
                    float *wj = WJ + j * b + q;
                    _mm512_storeu_ps(wj, _mm512_fmadd_ps(s, v, _mm512_loadu_ps(wj)));
                }
            }
            float *wi = WI + r * b + q;
            _mm512_storeu_ps(wi, _mm512_add_ps(_mm512_loadu_ps(wi), a));
        }
    }
    if (rs == NULL && cs == NULL)
        return;
    /* the sums: a second sweep over each row, from cache when the tile is small */
    for (r = 0; r < m; ++r) {
        const float *t = T + r * c;
        __m512 acc = _mm512_setzero_ps();
        Py_ssize_t j = 0;
        for (; j + 16 <= c; j += 16) {
            __m512 x = _mm512_loadu_ps(t + j);
            acc = _mm512_add_ps(acc, x);
            if (both && cs != NULL)
                _mm512_storeu_ps(cs + j, _mm512_add_ps(_mm512_loadu_ps(cs + j), x));
        }
        float s = _mm512_reduce_add_ps(acc);
        for (; j < c; ++j) {
            s += t[j];
            if (both && cs != NULL)
                cs[j] += t[j];
        }
        if (rs != NULL)
            rs[r] += s;
    }
}
#endif

static PyObject *
supported(PyObject *self, PyObject *noargs)
{
#if KPCA_AVX512
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        Py_RETURN_TRUE;
#endif
    Py_RETURN_FALSE;
}

/* `obj` as a C-contiguous float32 buffer of exactly `count` values, writable if asked;
   -1 with an exception set otherwise */
static int
get(PyObject *obj, Py_buffer *buf, int writable, Py_ssize_t count, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, buf, flags) < 0)
        return -1;
    if (buf->itemsize != 4 || buf->format == NULL || strcmp(buf->format, "f") != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be a float32 array", name);
        return -1;
    }
    if (buf->len != count * 4) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd values, expected %zd", name,
                     buf->len / 4, count);
        return -1;
    }
    return 0;
}

static PyObject *
product(PyObject *self, PyObject *args)
{
    Py_buffer T = {0}, VJ = {0}, VI = {0}, WI = {0}, WJ = {0}, RS = {0}, CS = {0};
    Py_ssize_t m, c, b;
    int both;
    PyObject *t, *vj, *vi, *wi, *wj, *rs, *cs, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOnnnpOO", &t, &vj, &vi, &wi, &wj, &m, &c, &b, &both,
                          &rs, &cs))
        return NULL;
    if (m < 0 || c < 0 || b < 0 || b % 16 != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "m and c must be >= 0 and b a non-negative multiple of 16");
        return NULL;
    }
    if (get(t, &T, 0, m * c, "T") || get(vj, &VJ, 0, c * b, "VJ") ||
        get(vi, &VI, 0, m * b, "VI") || get(wi, &WI, 1, m * b, "WI") ||
        get(wj, &WJ, 1, c * b, "WJ") || (rs != Py_None && get(rs, &RS, 1, m, "rs")) ||
        (cs != Py_None && get(cs, &CS, 1, c, "cs")))
        goto done;
#if KPCA_AVX512
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))) {
        PyErr_SetString(PyExc_RuntimeError, "this CPU has no AVX-512 (see supported())");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    tile_product((const float *)T.buf, m, c, b, (const float *)VJ.buf, (const float *)VI.buf,
                 (float *)WI.buf, (float *)WJ.buf, both, (float *)RS.buf, (float *)CS.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
#else
    PyErr_SetString(PyExc_RuntimeError, "built without the AVX-512 kernel (see supported())");
#endif
done:
    /* a buffer never filled has obj NULL: releasing it does nothing */
    PyBuffer_Release(&T);
    PyBuffer_Release(&VJ);
    PyBuffer_Release(&VI);
    PyBuffer_Release(&WI);
    PyBuffer_Release(&WJ);
    PyBuffer_Release(&RS);
    PyBuffer_Release(&CS);
    return result;
}

static PyMethodDef methods[] = {
    {"supported", supported, METH_NOARGS,
     "supported() -> bool: whether this build and CPU have the AVX-512 kernel."},
    {"product", product, METH_VARARGS,
     "product(T, VJ, VI, WI, WJ, m, c, b, both, rs, cs): WI += T @ VJ and, if both,\n"
     "WJ += T.T @ VI; rs += T.sum(1), and if both cs += T.sum(0), unless None.\n"
     "Contiguous float32 row-major buffers; T (m, c), VJ and WJ (c, b), VI and WI\n"
     "(m, b); b a multiple of 16. Releases the GIL."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tileprod",
    "The stored kernel tile's two products in one sweep (AVX-512).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__tileprod(void)
{
    return PyModule_Create(&module);
}
