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
 * The AVX2 variant is the same with two 256-bit registers a panel (4 rows x 1 panel
 * of accumulators: 8 of its 16 registers) and 2^n applied as two exact powers of two
 * (no scalef), or, where every result of a register tile is a normal number, added to
 * the exponent bits (exp8_fast: the same bits, fewer operations); the portable variant is plain C over a panel's 16 values, vectorised
 * by the compiler, with the same rounding of n and the same two powers of two (see
 * pf4_scale). All three give the same clamp, NaN, inf and underflow behaviour. Where
 * the caller hands over BLAS's sgemm (block()'s optional last argument), the portable
 * variant takes the exponents from it and exponentiates them in place
 * (rbf_block_blas, _rbfblock.h): its own dot products, 4 lanes without fused
 * multiply-adds, ran at half of sgemm's rate.
 * Only float32; the variants are chosen at run time (_native.h).
 */
#include "_rbfblock.h"
#include <stdlib.h>

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
    int v = kpca_variant_of(self);
    if (v < 0)
        return NULL;
    Py_buffer A = {0}, B = {0}, O = {0};
    PyObject *a, *b, *o, *blas = Py_None, *result = NULL;
    int clamp;
    sgemm_fn sgemm = NULL;
    if (!PyArg_ParseTuple(args, "OOpO|O", &a, &b, &clamp, &o, &blas))
        return NULL;
    if (blas != Py_None) {
        if (!PyCapsule_CheckExact(blas)) {
            PyErr_SetString(PyExc_TypeError, "sgemm must be a PyCapsule of BLAS's sgemm "
                                             "(scipy.linalg.cython_blas) or None");
            return NULL;
        }
        const char *name = PyCapsule_GetName(blas);
        if (name == NULL && PyErr_Occurred())
            return NULL;
        sgemm = (sgemm_fn)PyCapsule_GetPointer(blas, name);
        if (sgemm == NULL)
            return NULL;
    }
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
    if (m > 0 && c > 0 && !packed && sgemm != NULL && v == KPCA_PORTABLE) {
        if (m > INT32_MAX || c > INT32_MAX || p > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "too large for BLAS's int arguments");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        rbf_block_blas(sgemm, (const float *)A.buf, m, p, (const float *)B.buf, c,
                       (float *)O.buf, clamp);
        Py_END_ALLOW_THREADS
    }
    else if (m > 0 && c > 0 && packed) {
        Py_BEGIN_ALLOW_THREADS
        rbf_block[v]((const float *)A.buf, m, p, (const float *)B.buf, c, (float *)O.buf,
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
        rbf_block[v]((const float *)A.buf, m, p, P, c, (float *)O.buf, clamp);
        Py_END_ALLOW_THREADS
        free(P);
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&A);
    PyBuffer_Release(&B);
    PyBuffer_Release(&O);
    return result;
}

/* the functions variant() binds to a variant */
static PyMethodDef bound[] = {
    {"block", block, METH_VARARGS,
     "block(A, B, clamp, out[, sgemm]): out = exp(min(A @ B.T, 0) if clamp else A @ B.T).\n"
     "C-contiguous float32 arrays: A (m, p), B (c, p) or B's panels (pack_panels;\n"
     "at least ceil(c / 16) of them), out (m, c), which may not share memory with A\n"
     "or B. sgemm: None, or a PyCapsule of BLAS's sgemm (scipy.linalg.cython_blas),\n"
     "with which the portable variant makes the exponents of a 2-D B by BLAS (the\n"
     "other variants and packed B ignore it). Releases the GIL."},
    {"pack_panels", pack_panels, METH_VARARGS,
     "pack_panels(B, P): P[q, k, l] = B[16 q + l, k] (0 past B's rows), the layout\n"
     "block() reads (the same in every variant). C-contiguous float32 arrays: B (c, p),\n"
     "P (ceil(c / 16), p, 16)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *
variant(PyObject *module, PyObject *args)
{
    return kpca_bind(module, args, bound);
}

static PyMethodDef methods[] = {
    {"variants", variants, METH_NOARGS,
     "variants() -> tuple of str: the variants this build has and this CPU runs\n"
     "('avx512', 'avx2', 'portable'), best first."},
    {"variant", variant, METH_VARARGS,
     "variant(name) -> dict: 'block' and 'pack_panels' bound to that variant, and its\n"
     "'name'. ValueError for a variant this build or CPU cannot run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rbfexp",
    "The RBF kernel's block, product and exponential in one sweep (AVX-512, AVX2,\n"
    "portable).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__rbfexp(void)
{
    kpca_cpu_init(); /* before any kpca_runs */
    return PyModule_Create(&module);
}
