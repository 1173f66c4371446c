/*
 * The RBF kernel's block, exponent and exponential in one sweep (docs/math.md,
 * "Kernels"; docs/benchmarks.md, issue 17).
 *
 * With the rows prepared as a = [x', 1, |x'|^2] and the columns as
 * b = [2 g y', -g |y'|^2, -g] (x', y': shifted by a common centre), the exponent of
 * the RBF kernel is one dot product, a . b = -g |x - y|^2, and the block is
 * K = exp(A B^T). NumPy makes it in two sweeps over the block: a BLAS product (whose
 * inner dimension, d + 2, is too small for BLAS to run near its peak) writes the
 * exponents, and np.exp reads and rewrites them. Here each register of 16 kernel
 * values is computed, exponentiated and stored once: for 4 rows and 64 columns at a
 * time, the d + 2 products accumulate in 16 registers (B packed in panels of 16
 * columns, so that each step loads 4 registers of B and broadcasts 4 values of A),
 * then each register goes through exp and is stored.
 *
 * exp is the classic float32 scheme: n = round(x / ln 2), r = x - n ln 2 (ln 2 in two
 * parts: the first product n ln2_hi is exact, so r keeps full accuracy), exp(r) by a
 * degree-7 polynomial on |r| <= ln(2) / 2 (Cephes' coefficients for expf; measured
 * relative error below 2^-23, i.e. within 2 ulp), and 2^n applied by scalef, which
 * also gives the gradual underflow to 0 of very negative exponents. NaN propagates;
 * exponents are clamped at 0 when asked (round-off can lift -g |x - y|^2 above 0 for
 * nearly equal rows, where the kernel is 1).
 *
 * Only float32, and only where the AVX-512 code is built and runs (_native.h);
 * elsewhere kpca uses NumPy.
 */
#include "../_native.h"
#include <stdlib.h>

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

#if KPCA_AVX512
/* exp of 16 floats; exponents clamped at 0 first when clamp */
TARGET static inline __m512
exp16(__m512 x, int clamp)
{
    if (clamp)
        x = _mm512_min_ps(_mm512_setzero_ps(), x); /* NaN: the second operand */
    /* below -104 the result is 0 and above 88.8 inf either way; the bounds keep n
       finite (NaN passes both: the second operand is returned) */
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* out[i, j] = exp(A[i] . B[j]) for rows i0 <= i < i0 + R (R <= 4) and the columns of
   panels q0 <= q < q0 + Q (Q <= 4); a partial last panel is stored masked. Always
   inlined: with R and Q constant the 16 accumulators stay in registers */
TARGET static inline __attribute__((always_inline)) void
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

TARGET static void
rbf_block(const float *A, Py_ssize_t m, Py_ssize_t p, const float *P, Py_ssize_t c,
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

static PyObject *
pack_panels(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer B = {0}, P = {0};
    PyObject *b, *q, *result = NULL;
    if (!PyArg_ParseTuple(args, "OO", &b, &q))
        return NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(b, &B, flags) < 0 ||
        PyObject_GetBuffer(q, &P, flags | PyBUF_WRITABLE) < 0)
        goto done;
    if (kind(&B) != 'f' || kind(&P) != 'f' || B.ndim != 2 || P.ndim != 3) {
        PyErr_SetString(PyExc_TypeError, "B must be a 2-D and P a 3-D float32 array");
        goto done;
    }
    Py_ssize_t c = B.shape[0], p = B.shape[1];
    if (P.shape[0] != (c + 15) / 16 || P.shape[1] != p || P.shape[2] != 16) {
        PyErr_Format(PyExc_ValueError, "P must have shape (%zd, %zd, 16)", (c + 15) / 16, p);
        goto done;
    }
    if (overlap(&B, &P)) {
        PyErr_SetString(PyExc_ValueError, "P shares memory with B");
        goto done;
    }
    pack((const float *)B.buf, c, p, (float *)P.buf);
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&B);
    PyBuffer_Release(&P);
    return result;
}

static PyObject *
block(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer A = {0}, B = {0}, O = {0};
    PyObject *a, *b, *o, *result = NULL;
    int clamp;
    if (!PyArg_ParseTuple(args, "OOpO", &a, &b, &clamp, &o))
        return NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(a, &A, flags) < 0 || PyObject_GetBuffer(b, &B, flags) < 0 ||
        PyObject_GetBuffer(o, &O, flags | PyBUF_WRITABLE) < 0)
        goto done;
    if (kind(&A) != 'f' || kind(&B) != 'f' || kind(&O) != 'f' || A.ndim != 2 ||
        (B.ndim != 2 && B.ndim != 3) || O.ndim != 2) {
        PyErr_SetString(PyExc_TypeError,
                        "A and out must be 2-D float32 arrays, B a 2-D or 3-D (packed) one");
        goto done;
    }
    /* B is the columns (c, p), or their panels (pack_panels: at least ceil(c / 16),
       with c the columns of out; columns past c are not stored) */
    int packed = B.ndim == 3;
    Py_ssize_t m = A.shape[0], p = A.shape[1], c = packed ? O.shape[1] : B.shape[0];
    if (B.shape[1] != p || (packed && (B.shape[2] != 16 || B.shape[0] < (c + 15) / 16))) {
        PyErr_Format(PyExc_ValueError,
                     packed ? "B must have shape (>= %zd, %zd, 16) (panels of out's columns)"
                            : "B must have %zd columns (as A)",
                     packed ? (c + 15) / 16 : p, p);
        goto done;
    }
    if (O.shape[0] != m || O.shape[1] != c) {
        PyErr_Format(PyExc_ValueError, "out must have shape (%zd, %zd)", m, c);
        goto done;
    }
    if (overlap(&O, &A) || overlap(&O, &B)) {
        PyErr_SetString(PyExc_ValueError, "out shares memory with A or B");
        goto done;
    }
#if KPCA_AVX512
    if (!kpca_cpu_ok()) {
        PyErr_SetString(PyExc_RuntimeError, "this CPU has no AVX-512 (see supported())");
        goto done;
    }
    if (m > 0 && c > 0 && packed) {
        Py_BEGIN_ALLOW_THREADS
        rbf_block((const float *)A.buf, m, p, (const float *)B.buf, c, (float *)O.buf,
                  clamp);
        Py_END_ALLOW_THREADS
    }
    else if (m > 0 && c > 0) {
        size_t size = (size_t)((c + 15) / 16) * (size_t)(p > 0 ? p : 1) * 16 * sizeof(float);
        float *P = (float *)malloc(size);
        if (P == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        pack((const float *)B.buf, c, p, P);
        rbf_block((const float *)A.buf, m, p, P, c, (float *)O.buf, clamp);
        Py_END_ALLOW_THREADS
        free(P);
    }
    result = Py_NewRef(Py_None);
#else
    PyErr_SetString(PyExc_RuntimeError, "built without the AVX-512 kernel (see supported())");
#endif
done:
    PyBuffer_Release(&A);
    PyBuffer_Release(&B);
    PyBuffer_Release(&O);
    return result;
}

static PyMethodDef methods[] = {
    {"supported", supported, METH_NOARGS,
     "supported() -> bool: whether this build and CPU have the AVX-512 kernel."},
    {"block", block, METH_VARARGS,
     "block(A, B, clamp, out): out = exp(min(A @ B.T, 0) if clamp else A @ B.T).\n"
     "C-contiguous float32 arrays: A (m, p), B (c, p) or B's panels (pack_panels;\n"
     "at least ceil(c / 16) of them), out (m, c), which may not share memory with A\n"
     "or B. Releases the GIL."},
    {"pack_panels", pack_panels, METH_VARARGS,
     "pack_panels(B, P): P[q, k, l] = B[16 q + l, k] (0 past B's rows), the layout\n"
     "block() reads. C-contiguous float32 arrays: B (c, p), P (ceil(c / 16), p, 16)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rbfexp",
    "The RBF kernel's block, product and exponential in one sweep (AVX-512).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__rbfexp(void)
{
#if KPCA_AVX512
    __builtin_cpu_init(); /* before any __builtin_cpu_supports */
#endif
    return PyModule_Create(&module);
}
