/*
 * The product of a stored kernel tile with a block, both sides in one sweep
 * (docs/math.md, "The eigenproblem"; docs/benchmarks.md, issue 17).
 *
 * A tile T = K[I, J] below the diagonal serves two products of a pass over the
 * symmetric K:   W[I] += T V[J]   and   W[J] += T^T V[I].
 * With NumPy these are two BLAS calls, each packing the tile before multiplying it,
 * with the tile read from memory between them; for the narrow blocks of block
 * Lanczos (16 columns) that ran at half of the machine's GEMM rate. Here each value
 * of T is loaded once and used by both products: for 8 rows at a time, a broadcast
 * value T[r, j] is multiplied into the row accumulators of W[I] (registers) and
 * into the row W[J][j] (one load and store per 8 rows). A row of the block is cut
 * into vectors (16 float32 values: one AVX-512 register; 8: one AVX2 register, or
 * two SSE2/NEON ones in the portable variant), so the block's width must be a
 * multiple of the variant's vector (half as many float64 values: the same kernel,
 * _tileprod_kernel.h, is compiled for each variant and type).
 *
 * Optionally the same sweep adds the tile's row sums (T 1) and column sums (T^T 1),
 * which the construction pass needs for centring.
 *
 * Sums are accumulated in the tile's precision within the tile, as a BLAS gemm does;
 * the caller adds each tile's result into float64 accumulators.
 *
 * The variants (avx512, avx2, portable: _native.h) are chosen at run time;
 * variants() lists those this CPU runs, variant(name) binds one.
 */
#include "../_native.h"

/* --- portable: 16-byte vectors (_portable.h), 4 float32 or 2 float64 values */
#define TARGET
#define ROWS 4
#define PAIRS 1
#define SCALAR float
#define VEC pf4
#define LANES 4
#define FUNC tile_product_f32_portable
#define VZERO pf4_zero
#define VLOAD pf4_load
#define VSTORE pf4_store
#define VSET1 pf4_set1
#define VFMADD pf4_fmadd
#define VMUL pf4_mul
#define VADD pf4_add
#define VREDUCE pf4_reduce
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"

#define TARGET
#define ROWS 4
#define PAIRS 1
#define SCALAR double
#define VEC pd2
#define LANES 2
#define FUNC tile_product_f64_portable
#define VZERO pd2_zero
#define VLOAD pd2_load
#define VSTORE pd2_store
#define VSET1 pd2_set1
#define VFMADD pd2_fmadd
#define VMUL pd2_mul
#define VADD pd2_add
#define VREDUCE pd2_reduce
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"

#if KPCA_X86
/* --- avx2: 256-bit registers, 8 float32 or 4 float64 values */
TARGET_AVX2 static inline float
avx2_reduce_ps(__m256 x)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

TARGET_AVX2 static inline double
avx2_reduce_pd(__m256d x)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(x), _mm256_extractf128_pd(x, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

#define TARGET TARGET_AVX2
#define ROWS 4
#define PAIRS 1
#define SCALAR float
#define VEC __m256
#define LANES 8
#define FUNC tile_product_f32_avx2
#define VZERO _mm256_setzero_ps
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VFMADD _mm256_fmadd_ps
#define VMUL _mm256_mul_ps
#define VADD _mm256_add_ps
#define VREDUCE avx2_reduce_ps
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"

#define TARGET TARGET_AVX2
#define ROWS 4
#define PAIRS 1
#define SCALAR double
#define VEC __m256d
#define LANES 4
#define FUNC tile_product_f64_avx2
#define VZERO _mm256_setzero_pd
#define VLOAD _mm256_loadu_pd
#define VSTORE _mm256_storeu_pd
#define VSET1 _mm256_set1_pd
#define VFMADD _mm256_fmadd_pd
#define VMUL _mm256_mul_pd
#define VADD _mm256_add_pd
#define VREDUCE avx2_reduce_pd
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"

/* --- avx512: 512-bit registers, 16 float32 or 8 float64 values */
#define TARGET TARGET_AVX512
#define ROWS 8
#define PAIRS 0
#define SCALAR float
#define VEC __m512
#define LANES 16
#define FUNC tile_product_f32_avx512
#define VZERO _mm512_setzero_ps
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VFMADD _mm512_fmadd_ps
#define VMUL _mm512_mul_ps
#define VADD _mm512_add_ps
#define VREDUCE _mm512_reduce_add_ps
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"

#define TARGET TARGET_AVX512
#define ROWS 8
#define PAIRS 0
#define SCALAR double
#define VEC __m512d
#define LANES 8
#define FUNC tile_product_f64_avx512
#define VZERO _mm512_setzero_pd
#define VLOAD _mm512_loadu_pd
#define VSTORE _mm512_storeu_pd
#define VSET1 _mm512_set1_pd
#define VFMADD _mm512_fmadd_pd
#define VMUL _mm512_mul_pd
#define VADD _mm512_add_pd
#define VREDUCE _mm512_reduce_add_pd
#include "_tileprod_kernel.h"
#include "_tileprod_undef.h"
#endif

typedef void (*product_f32)(const float *, Py_ssize_t, Py_ssize_t, Py_ssize_t, const float *,
                            const float *, float *, float *, int, float *, float *);
typedef void (*product_f64)(const double *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                            const double *, const double *, double *, double *, int, double *,
                            double *);

/* each variant's functions and its values per vector, by variant index */
static const struct {
    product_f32 f32;
    product_f64 f64;
    int lanes_f32, lanes_f64;
} kernels[KPCA_VARIANTS] = {
    {tile_product_f32_portable, tile_product_f64_portable, 4, 2},
#if KPCA_X86
    {tile_product_f32_avx2, tile_product_f64_avx2, 8, 4},
    {tile_product_f32_avx512, tile_product_f64_avx512, 16, 8},
#endif
};

/* `obj` as a C-contiguous buffer of `ndim` dimensions (1 or 2) and the shape
   (`rows`[, `cols`]), of type `type` ('f', 'd'; 0: either), writable if asked; -1
   with an exception set otherwise */
static int
get(PyObject *obj, Py_buffer *buf, int writable, int ndim, Py_ssize_t rows,
    Py_ssize_t cols, const char *name, char type)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, buf, flags) < 0)
        return -1;
    char k = kind(buf);
    if (k == 0 || (type != 0 && k != type)) {
        PyErr_Format(PyExc_TypeError, "%s must be a %s array", name,
                     type == 0 ? "float32 or float64" : (type == 'f' ? "float32" : "float64"));
        return -1;
    }
    if (buf->ndim != ndim || buf->shape[0] != rows || (ndim == 2 && buf->shape[1] != cols)) {
        if (ndim == 2)
            PyErr_Format(PyExc_ValueError, "%s must have shape (%zd, %zd)", name, rows, cols);
        else
            PyErr_Format(PyExc_ValueError, "%s must have shape (%zd,)", name, rows);
        return -1;
    }
    return 0;
}

static PyObject *
product(PyObject *self, PyObject *args)
{
    int v = kpca_variant_of(self);
    if (v < 0)
        return NULL;
    Py_buffer T = {0}, VJ = {0}, VI = {0}, WI = {0}, WJ = {0}, RS = {0}, CS = {0};
    Py_ssize_t m, c, b;
    int both;
    PyObject *t, *vj, *vi, *wi, *wj, *rs, *cs, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOpOO", &t, &vj, &vi, &wi, &wj, &both, &rs, &cs))
        return NULL;
    /* T gives m, c and the type; VJ gives b; every other shape must match them */
    if (PyObject_GetBuffer(t, &T, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    char type = kind(&T);
    if (type == 0 || T.ndim != 2) {
        PyErr_SetString(PyExc_TypeError, "T must be a 2-D float32 or float64 array");
        goto done;
    }
    m = T.shape[0];
    c = T.shape[1];
    if (PyObject_GetBuffer(vj, &VJ, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    if (kind(&VJ) != type || VJ.ndim != 2 || VJ.shape[0] != c) {
        PyErr_Format(PyExc_ValueError, "VJ must be a 2-D array of T's type with %zd rows", c);
        goto done;
    }
    b = VJ.shape[1];
    Py_ssize_t lanes = type == 'f' ? kernels[v].lanes_f32 : kernels[v].lanes_f64;
    if (b % lanes != 0) {
        PyErr_Format(PyExc_ValueError, "b must be a multiple of %zd for %s tiles", lanes,
                     type == 'f' ? "float32" : "float64");
        goto done;
    }
    if (get(vi, &VI, 0, 2, m, b, "VI", type) || get(wi, &WI, 1, 2, m, b, "WI", type) ||
        get(wj, &WJ, 1, 2, c, b, "WJ", type) ||
        (rs != Py_None && get(rs, &RS, 1, 1, m, 0, "rs", type)) ||
        (cs != Py_None && get(cs, &CS, 1, 1, c, 0, "cs", type)))
        goto done;
    /* the outputs are written while the inputs are read: no output may share memory
       with an input or another output (WI and WJ may be one array when only WI is
       written) */
    {
        const Py_buffer *in[] = {&T, &VJ, &VI}, *out[] = {&WI, &WJ, &RS, &CS};
        for (int i = 0; i < 4; ++i) {
            for (int j = 0; j < 3; ++j)
                if (overlap(out[i], in[j]))
                    goto aliased;
            for (int j = i + 1; j < 4; ++j)
                if (overlap(out[i], out[j]) && !(i == 0 && j == 1 && !both))
                    goto aliased;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    if (T.itemsize == 4)
        kernels[v].f32((const float *)T.buf, m, c, b, (const float *)VJ.buf,
                       (const float *)VI.buf, (float *)WI.buf, (float *)WJ.buf, both,
                       (float *)RS.buf, (float *)CS.buf);
    else
        kernels[v].f64((const double *)T.buf, m, c, b, (const double *)VJ.buf,
                       (const double *)VI.buf, (double *)WI.buf, (double *)WJ.buf, both,
                       (double *)RS.buf, (double *)CS.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
    goto done;
aliased:
    PyErr_SetString(PyExc_ValueError, "an output shares memory with an input or another output");
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

/* the functions variant() binds to a variant */
static PyMethodDef bound[] = {
    {"product", product, METH_VARARGS,
     "product(T, VJ, VI, WI, WJ, both, rs, cs): WI += T @ VJ and, if both,\n"
     "WJ += T.T @ VI; rs += T.sum(1), and if both cs += T.sum(0), unless None.\n"
     "C-contiguous arrays, all float32 or all float64; T (m, c), VJ and WJ (c, b),\n"
     "VI and WI (m, b), rs (m,), cs (c,); b a multiple of the variant's width\n"
     "(widths: float32, float64). No output may share memory with an input or\n"
     "another output. Releases the GIL."},
    {NULL, NULL, 0, NULL},
};

static PyObject *
variant(PyObject *module, PyObject *args)
{
    PyObject *name = PyModule_GetNameObject(module);
    if (name == NULL)
        return NULL;
    PyObject *out = kpca_bind(args, bound, name);
    Py_DECREF(name);
    if (out == NULL)
        return NULL;
    int v = (int)PyLong_AsLong(PyCFunction_GET_SELF(PyDict_GetItemString(out, "product")));
    PyObject *widths = Py_BuildValue("(ii)", kernels[v].lanes_f32, kernels[v].lanes_f64);
    if (widths == NULL || PyDict_SetItemString(out, "widths", widths) < 0) {
        Py_XDECREF(widths);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(widths);
    return out;
}

static PyMethodDef methods[] = {
    {"variants", variants, METH_NOARGS,
     "variants() -> tuple of str: the variants this build has and this CPU runs\n"
     "('avx512', 'avx2', 'portable'), best first."},
    {"variant", variant, METH_VARARGS,
     "variant(name) -> dict: 'product' bound to that variant, its 'name', and\n"
     "'widths' (float32, float64): the block widths must be multiples of these.\n"
     "ValueError for a variant this build or CPU cannot run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tileprod",
    "The stored kernel tile's two products in one sweep (AVX-512, AVX2, portable).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__tileprod(void)
{
    kpca_cpu_init(); /* before any kpca_runs */
    return PyModule_Create(&module);
}
