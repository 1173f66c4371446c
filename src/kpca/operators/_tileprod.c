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
 * two SSE2/NEON ones in the portable variant; half as many float64 values: the same
 * kernel, _tileprod_kernel.h, is compiled for each variant and type). The last
 * b mod LANES columns, too few for a vector, go in a dot-product form instead:
 * vectors along the tile's rows, against those columns of V[J] transposed, for each
 * block of rows while it is in cache; so a block of any width is taken, and 10
 * columns cost about 10 columns' work rather than the 16 of two vectors.
 *
 * Optionally the same sweep adds the tile's row sums (T 1) and column sums (T^T 1),
 * which the construction pass needs for centring.
 *
 * Sums are accumulated in the tile's precision within the tile, as a BLAS gemm does;
 * the caller adds each tile's result into float64 accumulators.
 *
 * The variants (avx512, avx2, portable: _native.h) are chosen at run time;
 * variants() lists those this CPU runs, variant(name) binds one. The portable
 * variant's float32 products are BLAS's where the caller hands over its sgemm
 * (blas_slice), which kpca does where the CPU runs a wider variant
 * (kpca._native.blas_products): there, with 4 lanes and no fused multiply-add, its
 * one-sweep product ran at 0.7x NumPy's two BLAS products; where it is the best
 * variant, BLAS's kernels are no wider and the one sweep wins.
 */
#include "../_native.h"
#include "../kernels/_rbfblock.h"
#include <math.h>
#include <stdlib.h>

#define KPCA_CAT_(a, b) a##b
#define KPCA_CAT(a, b) KPCA_CAT_(a, b)

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

/* The products of a slice S = T[a:a+s] (s x c, row-major, rows ld_s apart) of a
   float32 tile by BLAS (sgemm, beta 1): WI[a:a+s] += S VJ and, if both,
   WJ += S^T VI[a:a+s] (VJ, WJ: c x b; VI, WI: the slice's s x b); then, if asked, its
   row sums (rs[a:a+s]) and column sums (cs) in the variant's vectors. The portable
   variant's products where the caller hands over sgemm: BLAS's kernels are the
   widest this CPU runs, where the portable one-sweep product (4 lanes, no fused
   multiply-add) ran at 0.7x NumPy's two BLAS products on a stored tile; the slice,
   read from memory once, serves both products from cache. s, c and b must fit
   BLAS's int. */
static void
blas_slice(int v, sgemm_fn sgemm, const float *S, Py_ssize_t s, Py_ssize_t c, Py_ssize_t b,
           const float *VJ, const float *VI, float *WI, float *WJ, int both, float *rs,
           float *cs)
{
    if (s == 0 || c == 0)
        return;
    if (b > 0) {
        /* row-major X (rows x b) += Y Z is column-major X^T += Z^T Y^T */
        int M = (int)b, N = (int)s, K = (int)c, ldt = (int)c;
        float one = 1.0f;
        char nn = 'N', tt = 'T';
        sgemm(&nn, &nn, &M, &N, &K, &one, (float *)VJ, &M, (float *)S, &ldt, &one, WI, &M);
        if (both) {
            N = (int)c;
            K = (int)s;
            sgemm(&nn, &tt, &M, &N, &K, &one, (float *)VI, &M, (float *)S, &ldt, &one, WJ, &M);
        }
    }
    if (rs != NULL || cs != NULL) /* the kernel with no columns: the sums alone */
        kernels[v].f32(S, s, c, 0, NULL, NULL, NULL, NULL, both, rs, cs);
}

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

/* `q` (None, or B's packed panels) into `Q`: None leaves Q unfilled; otherwise a
   C-contiguous float32 array of shape (>= ceil(c / 16), p, 16), the layout
   pack_panels writes; -1 with an exception set if not */
static int
get_panels(PyObject *q, Py_buffer *Q, Py_ssize_t c, Py_ssize_t p)
{
    if (q == Py_None)
        return 0;
    if (PyObject_GetBuffer(q, Q, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (kind(Q) != 'f' || Q->ndim != 3 || Q->shape[0] < (c + 15) / 16 || Q->shape[1] != p ||
        Q->shape[2] != 16) {
        PyErr_Format(PyExc_ValueError, "panels must have shape (>= %zd, %zd, 16), float32",
                     (c + 15) / 16, p);
        return -1;
    }
    return 0;
}

/* the sgemm of a PyCapsule (scipy.linalg.cython_blas.__pyx_capi__["sgemm"]) into
   *out; -1 with an exception set if `capsule` is not one */
static int
get_sgemm(PyObject *capsule, sgemm_fn *out)
{
    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_SetString(PyExc_TypeError, "sgemm must be a PyCapsule of BLAS's sgemm "
                                         "(scipy.linalg.cython_blas) or None");
        return -1;
    }
    const char *name = PyCapsule_GetName(capsule);
    if (name == NULL && PyErr_Occurred())
        return -1;
    *out = (sgemm_fn)PyCapsule_GetPointer(capsule, name);
    return *out == NULL ? -1 : 0;
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
    PyObject *t, *vj, *vi, *wi, *wj, *rs, *cs, *blas = Py_None, *result = NULL;
    Py_ssize_t slice = 128;
    sgemm_fn sgemm = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOpOO|On", &t, &vj, &vi, &wi, &wj, &both, &rs, &cs, &blas,
                          &slice))
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
    if (blas != Py_None && type == 'f') { /* float32 products by BLAS (blas_slice) */
        if (get_sgemm(blas, &sgemm) < 0)
            goto done;
        if (m > INT32_MAX || c > INT32_MAX || b > INT32_MAX || slice < 1) {
            PyErr_SetString(PyExc_ValueError, "too large for BLAS's int arguments, or "
                                              "slice_rows below 1");
            goto done;
        }
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
    if (sgemm != NULL)
        for (Py_ssize_t a = 0; a < m; a += slice) {
            Py_ssize_t e = a + slice < m ? a + slice : m;
            blas_slice(v, sgemm, (const float *)T.buf + a * c, e - a, c, b,
                       (const float *)VJ.buf, (const float *)VI.buf + a * b,
                       (float *)WI.buf + a * b, (float *)WJ.buf, both,
                       RS.obj ? (float *)RS.buf + a : NULL, CS.obj ? (float *)CS.buf : NULL);
        }
    else if (T.itemsize == 4)
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

/* --- a matrix-free pass's tile of the RBF kernel, all its pieces in one call (docs/
   math.md, "The eigenproblem"; the loop of TiledKernelOperator._fused_tile in C): each
   piece K[a0:a1, e0:e1] is evaluated into a buffer (the compiled RBF block, its
   diagonal set on the tile's diagonal), then W[a0:a1] += P V[e0:e1] and, off the
   diagonal, W[e0:e1] += P^T V[a0:a1]: two BLAS products (sgemm, a pointer the caller
   hands over from SciPy's cython_blas) or the one-sweep product above; each piece's
   product is summed in float32 and added to W (float64), as NumPy's path does. The
   GIL is released for the whole tile. */

/* (sgemm_fn, the Fortran BLAS sgemm: _rbfblock.h) */

/* W[r:r+m, ld-b:ld] += T[0:m] (float32, b columns each; W's rows ld values apart) */
static void
add_rows(double *W, const float *T, Py_ssize_t m, Py_ssize_t b, Py_ssize_t ld)
{
    for (Py_ssize_t i = 0; i < m; ++i)
        for (Py_ssize_t k = 0; k < b; ++k)
            W[i * ld + ld - b + k] += (double)T[i * b + k];
}

/* W[r0:r0+m, 0] += s[0:m] (float32 sums; W's rows ld values apart) */
static void
add_lead(double *W, const float *s, Py_ssize_t r0, Py_ssize_t m, Py_ssize_t ld)
{
    for (Py_ssize_t i = 0; i < m; ++i)
        W[(r0 + i) * ld] += (double)s[i];
}

typedef struct {
    int v;                      /* variant */
    const float *A, *B, *panels; /* rows (m_t x p), columns (c_t x p), their panels */
    Py_ssize_t p, r0, r1, c0, c1, b, rows, cols, ld; /* ld: W's row length, lead + b */
    int clamp, diagonal, has_diag, lead;
    float diag;
    const float *V;
    double *W;
    sgemm_fn sgemm;
    float *P, *TI, *TJ, *pack, *rs, *cs; /* workspace */
} fused_args;

/* one piece: rows a0:a1, columns e0:e1 of K (absolute indices) */
static void
fused_piece(const fused_args *f, Py_ssize_t a0, Py_ssize_t a1, Py_ssize_t e0, Py_ssize_t e1)
{
    Py_ssize_t pr = a1 - a0, pc = e1 - e0, p = f->p, b = f->b;
    float *P = f->P;
    if (f->v == KPCA_PORTABLE && f->sgemm != NULL) /* rbf_block_blas */
        rbf_block_blas(f->sgemm, f->A + (a0 - f->r0) * p, pr, p, f->B + (e0 - f->c0) * p, pc,
                       P, f->clamp);
    else {
        const float *panels;
        if (f->panels != NULL && (e0 - f->c0) % 16 == 0)
            panels = f->panels + ((e0 - f->c0) / 16) * p * 16;
        else { /* a piece that does not start on a panel: its columns packed now */
            pack(f->B + (e0 - f->c0) * p, pc, p, f->pack);
            panels = f->pack;
        }
        rbf_block[f->v](f->A + (a0 - f->r0) * p, pr, p, panels, pc, P, f->clamp);
    }
    int on_diagonal = f->diagonal && a0 == e0; /* a square piece across the diagonal */
    if (on_diagonal && f->has_diag)
        for (Py_ssize_t i = 0; i < pr; ++i)
            P[i * pc + i] = f->diag;
    /* the piece's row (and column) sums, each piece's in float32 as its products: by
       the variant's kernel, in its vectors (a second sweep over the piece in cache;
       with the one-sweep product, in the same call) */
    float *rs = f->lead ? f->rs : NULL, *cs = f->lead && !on_diagonal ? f->cs : NULL;
    if (rs != NULL)
        memset(rs, 0, (size_t)pr * sizeof(float));
    if (cs != NULL)
        memset(cs, 0, (size_t)pc * sizeof(float));
    const float *VJ = f->V + e0 * b, *VI = f->V + a0 * b;
    if (b == 0 || f->sgemm != NULL) {
        if (f->lead) /* the kernel with no columns: the sums alone */
            kernels[f->v].f32(P, pr, pc, 0, NULL, NULL, NULL, NULL, !on_diagonal, rs, cs);
    }
    else {
        memset(f->TI, 0, (size_t)(pr * b) * sizeof(float));
        if (!on_diagonal)
            memset(f->TJ, 0, (size_t)(pc * b) * sizeof(float));
        kernels[f->v].f32(P, pr, pc, b, VJ, VI, f->TI, on_diagonal ? f->TI : f->TJ,
                          !on_diagonal, rs, cs);
    }
    if (rs != NULL)
        add_lead(f->W, rs, a0, pr, f->ld);
    if (cs != NULL)
        add_lead(f->W, cs, e0, pc, f->ld);
    if (b == 0)
        return;
    if (f->sgemm != NULL) {
        /* row-major X = Y Z is column-major X^T = Z^T Y^T */
        int M = (int)b, N = (int)pr, K = (int)pc, ldp = (int)pc;
        float one = 1.0f, zero = 0.0f;
        char nn = 'N', tt = 'T';
        f->sgemm(&nn, &nn, &M, &N, &K, &one, (float *)VJ, &M, P, &ldp, &zero, f->TI, &M);
        if (!on_diagonal) {
            N = (int)pc;
            K = (int)pr;
            f->sgemm(&nn, &tt, &M, &N, &K, &one, (float *)VI, &M, P, &ldp, &zero, f->TJ, &M);
        }
    }
    /* the piece's float32 products into W (rows a0:a1 and e0:e1: apart off the diagonal) */
    add_rows(f->W + a0 * f->ld, f->TI, pr, b, f->ld);
    if (!on_diagonal)
        add_rows(f->W + e0 * f->ld, f->TJ, pc, b, f->ld);
}

/* every piece of the tile, in the order of TiledKernelOperator._fused_tile */
static void
fused_tile(const fused_args *f)
{
    for (Py_ssize_t a0 = f->r0; a0 < f->r1; a0 += f->rows) {
        Py_ssize_t a1 = a0 + f->rows < f->r1 ? a0 + f->rows : f->r1;
        if (!f->diagonal)
            for (Py_ssize_t e0 = f->c0; e0 < f->c1; e0 += f->cols)
                fused_piece(f, a0, a1, e0, e0 + f->cols < f->c1 ? e0 + f->cols : f->c1);
        else /* square pieces of `rows`, below the diagonal and across it */
            for (Py_ssize_t e0 = f->r0; e0 <= a0; e0 += f->rows)
                fused_piece(f, a0, a1, e0, e0 + f->rows < f->r1 ? e0 + f->rows : f->r1);
    }
}

static PyObject *
fused_rbf(PyObject *self, PyObject *args)
{
    int v = kpca_variant_of(self);
    if (v < 0)
        return NULL;
    Py_buffer A = {0}, B = {0}, Q = {0}, V = {0}, W = {0};
    PyObject *a, *bb, *q, *vv, *w, *d, *blas, *result = NULL;
    fused_args f = {0};
    Py_ssize_t r0, c0, rows, cols;
    int clamp, diagonal, lead = 0;
    void *work = NULL;
    if (!PyArg_ParseTuple(args, "OOOpOOnnpnnOO|p", &a, &bb, &q, &clamp, &vv, &w, &r0, &c0,
                          &diagonal, &rows, &cols, &d, &blas, &lead))
        return NULL;
    if (PyObject_GetBuffer(a, &A, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0 ||
        PyObject_GetBuffer(bb, &B, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    if (kind(&A) != 'f' || kind(&B) != 'f' || A.ndim != 2 || B.ndim != 2 ||
        A.shape[1] != B.shape[1]) {
        PyErr_SetString(PyExc_TypeError, "A and B must be 2-D float32 arrays of as many columns");
        goto done;
    }
    f.p = A.shape[1];
    Py_ssize_t m_t = A.shape[0], c_t = B.shape[0], n;
    if (PyObject_GetBuffer(vv, &V, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        goto done;
    if (kind(&V) != 'f' || V.ndim != 2) {
        PyErr_SetString(PyExc_TypeError, "V must be a 2-D float32 array");
        goto done;
    }
    n = V.shape[0];
    f.b = V.shape[1];
    f.lead = lead;
    f.ld = f.b + (lead ? 1 : 0);
    if (get(w, &W, 1, 2, n, f.ld, "W", 'd') < 0)
        goto done;
    if (get_panels(q, &Q, c_t, f.p) < 0)
        goto done;
    if (r0 < 0 || c0 < 0 || r0 + m_t > n || c0 + c_t > n || rows < 1 || cols < 1 ||
        (diagonal && (r0 != c0 || m_t != c_t))) {
        PyErr_SetString(PyExc_ValueError, "the tile (r0, c0, A's and B's rows) must lie in V's "
                                          "rows, a diagonal tile square on the diagonal, and "
                                          "the pieces at least 1 x 1");
        goto done;
    }
    if (overlap(&W, &A) || overlap(&W, &B) || overlap(&W, &Q) || overlap(&W, &V)) {
        PyErr_SetString(PyExc_ValueError, "W shares memory with an input");
        goto done;
    }
    if (d != Py_None) {
        f.diag = (float)PyFloat_AsDouble(d);
        if (f.diag == -1.0f && PyErr_Occurred())
            goto done;
        f.has_diag = 1;
    }
    if (blas != Py_None) {
        if (get_sgemm(blas, &f.sgemm) < 0)
            goto done;
        if (f.b > INT32_MAX || rows > INT32_MAX || cols > INT32_MAX || f.p > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "too large for BLAS's int arguments");
            goto done;
        }
    }
    f.v = v;
    f.A = (const float *)A.buf;
    f.B = (const float *)B.buf;
    f.panels = Q.obj != NULL ? (const float *)Q.buf : NULL;
    f.r0 = r0;
    f.r1 = r0 + m_t;
    f.c0 = c0;
    f.c1 = c0 + c_t;
    f.rows = rows;
    f.cols = diagonal ? rows : cols;
    f.clamp = clamp;
    f.diagonal = diagonal;
    f.V = (const float *)V.buf;
    f.W = (double *)W.buf;
    if (m_t > 0 && c_t > 0) {
        /* the piece, the two products' float32 results and one piece's panels */
        Py_ssize_t pr = rows < m_t ? rows : m_t, wc = diagonal ? pr : (cols < c_t ? cols : c_t);
        Py_ssize_t mx = pr > wc ? pr : wc;
        size_t size = (size_t)(pr * wc + 2 * mx * f.b + ((mx + 15) / 16) * 16 * f.p + 2 * mx) *
                      sizeof(float);
        work = malloc(size ? size : 1);
        if (work == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        f.P = (float *)work;
        f.TI = f.P + pr * wc;
        f.TJ = f.TI + mx * f.b;
        f.pack = f.TJ + mx * f.b;
        f.rs = f.pack + ((mx + 15) / 16) * 16 * f.p;
        f.cs = f.rs + mx;
        Py_BEGIN_ALLOW_THREADS
        fused_tile(&f);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    free(work);
    PyBuffer_Release(&A);
    PyBuffer_Release(&B);
    PyBuffer_Release(&Q);
    PyBuffer_Release(&V);
    PyBuffer_Release(&W);
    return result;
}

/* --- the construction pass's kept tile of the RBF kernel, in one call (the loop of
   native_tile_product(fill=...) in C): the tile T = K[r0:r0+m, c0:c0+c] is evaluated
   slice_rows rows at a time into its storage, each slice multiplied by the one-sweep
   product while it is in cache, with the row and column sums (the first column of W
   when lead) */
static PyObject *
build_rbf(PyObject *self, PyObject *args)
{
    int v = kpca_variant_of(self);
    if (v < 0)
        return NULL;
    Py_buffer A = {0}, B = {0}, Q = {0}, T = {0}, V = {0}, W = {0};
    PyObject *a, *bb, *q, *tt, *vv, *w, *d, *blas = Py_None, *result = NULL;
    Py_ssize_t r0, c0, slice;
    int clamp, diagonal, lead, has_diag = 0;
    float diag = 0.0f;
    float *work = NULL;
    sgemm_fn sgemm = NULL;
    if (!PyArg_ParseTuple(args, "OOOpOOOnnpnOp|O", &a, &bb, &q, &clamp, &tt, &vv, &w, &r0, &c0,
                          &diagonal, &slice, &d, &lead, &blas))
        return NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(a, &A, flags) < 0 || PyObject_GetBuffer(bb, &B, flags) < 0 ||
        PyObject_GetBuffer(vv, &V, flags) < 0)
        goto done;
    if (kind(&A) != 'f' || kind(&B) != 'f' || A.ndim != 2 || B.ndim != 2 ||
        A.shape[1] != B.shape[1] || kind(&V) != 'f' || V.ndim != 2) {
        PyErr_SetString(PyExc_TypeError, "A, B (as many columns) and V must be 2-D float32 "
                                         "arrays");
        goto done;
    }
    Py_ssize_t p = A.shape[1], m = A.shape[0], c = B.shape[0], n = V.shape[0], b = V.shape[1];
    if (get(tt, &T, 1, 2, m, c, "T", 'f') < 0 || get(w, &W, 1, 2, n, b + (lead ? 1 : 0), "W",
                                                     'd') < 0)
        goto done;
    if (get_panels(q, &Q, c, p) < 0)
        goto done;
    if (blas != Py_None) {
        if (get_sgemm(blas, &sgemm) < 0)
            goto done;
        if (m > INT32_MAX || c > INT32_MAX || b > INT32_MAX || p > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "too large for BLAS's int arguments");
            goto done;
        }
    }
    if (r0 < 0 || c0 < 0 || r0 + m > n || c0 + c > n || slice < 1 ||
        (diagonal && (r0 != c0 || m != c))) {
        PyErr_SetString(PyExc_ValueError, "the tile (r0, c0, A's and B's rows) must lie in V's "
                                          "rows, a diagonal tile square on the diagonal, and "
                                          "slice_rows at least 1");
        goto done;
    }
    {
        const Py_buffer *in[] = {&A, &B, &Q, &V}, *out[] = {&T, &W};
        for (int i = 0; i < 4; ++i)
            if (overlap(out[0], in[i]) || overlap(out[1], in[i]))
                goto aliased;
        if (overlap(&T, &W))
            goto aliased;
    }
    if (d != Py_None) {
        diag = (float)PyFloat_AsDouble(d);
        if (diag == -1.0f && PyErr_Occurred())
            goto done;
        has_diag = 1;
    }
    if (m > 0 && c > 0) {
        /* float32 sums of the tile's products (WI, WJ), its row and column sums, and the
           columns' panels where they are not given */
        size_t size = (size_t)(m * b + c * b + m + c + (Q.obj ? 0 : ((c + 15) / 16) * 16 * p));
        work = (float *)calloc(size ? size : 1, sizeof(float));
        if (work == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        float *WI = work, *WJ = WI + m * b, *rs = WJ + c * b, *cs = rs + m;
        float *panels = Q.obj ? (float *)Q.buf : cs + c;
        const float *Af = (const float *)A.buf, *Vf = (const float *)V.buf;
        float *Tf = (float *)T.buf;
        double *Wd = (double *)W.buf;
        Py_ssize_t ld = b + (lead ? 1 : 0);
        /* the portable variant with BLAS: the block by rbf_block_blas (no panels) */
        int blas_block = sgemm != NULL && v == KPCA_PORTABLE;
        Py_BEGIN_ALLOW_THREADS
        if (!Q.obj && !blas_block)
            pack((const float *)B.buf, c, p, panels);
        for (Py_ssize_t a0 = 0; a0 < m; a0 += slice) {
            Py_ssize_t a1 = a0 + slice < m ? a0 + slice : m;
            float *S = Tf + a0 * c;
            if (blas_block)
                rbf_block_blas(sgemm, Af + a0 * p, a1 - a0, p, (const float *)B.buf, c, S,
                               clamp);
            else
                rbf_block[v](Af + a0 * p, a1 - a0, p, panels, c, S, clamp);
            if (diagonal && has_diag)
                for (Py_ssize_t i = a0; i < a1; ++i)
                    Tf[i * c + i] = diag;
            if (sgemm != NULL)
                blas_slice(v, sgemm, S, a1 - a0, c, b, Vf + c0 * b, Vf + (r0 + a0) * b,
                           WI + a0 * b, diagonal ? WI : WJ, !diagonal, lead ? rs + a0 : NULL,
                           lead && !diagonal ? cs : NULL);
            else
                kernels[v].f32(S, a1 - a0, c, b, Vf + c0 * b, Vf + (r0 + a0) * b, WI + a0 * b,
                               diagonal ? WI : WJ, !diagonal, lead ? rs + a0 : NULL,
                               lead && !diagonal ? cs : NULL);
        }
        for (Py_ssize_t i = 0; i < m; ++i) {
            double *row = Wd + (r0 + i) * ld;
            if (lead)
                row[0] += (double)rs[i];
            for (Py_ssize_t k = 0; k < b; ++k)
                row[ld - b + k] += (double)WI[i * b + k];
        }
        if (!diagonal)
            for (Py_ssize_t j = 0; j < c; ++j) {
                double *row = Wd + (c0 + j) * ld;
                if (lead)
                    row[0] += (double)cs[j];
                for (Py_ssize_t k = 0; k < b; ++k)
                    row[ld - b + k] += (double)WJ[j * b + k];
            }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
    goto done;
aliased:
    PyErr_SetString(PyExc_ValueError, "T or W shares memory with an input or each other");
done:
    free(work);
    PyBuffer_Release(&A);
    PyBuffer_Release(&B);
    PyBuffer_Release(&Q);
    PyBuffer_Release(&T);
    PyBuffer_Release(&V);
    PyBuffer_Release(&W);
    return result;
}

/* --- transform's block of rows of the RBF kernel, all its pieces in one call (the
   loop of kpca.subspace._engines.transform_fused in C, bound by
   kpca.operators.compiled_rows): acc += sum over the column pieces of
   exp(A B[e0:e1]^T) C[e0:e1], each piece evaluated into a buffer and multiplied by
   BLAS's sgemm while it is in cache, its float32 product added to acc (float32 or
   float64) */
static PyObject *
rows_rbf(PyObject *self, PyObject *args)
{
    int v = kpca_variant_of(self);
    if (v < 0)
        return NULL;
    Py_buffer A = {0}, B = {0}, Q = {0}, C = {0}, O = {0};
    PyObject *a, *bb, *q, *cc, *o, *blas, *result = NULL;
    Py_ssize_t cols;
    int clamp, blas_block = 1;
    float *work = NULL;
    sgemm_fn sgemm = NULL;
    if (!PyArg_ParseTuple(args, "OOOpOOnO|p", &a, &bb, &q, &clamp, &cc, &o, &cols, &blas,
                          &blas_block))
        return NULL;
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(a, &A, flags) < 0 || PyObject_GetBuffer(bb, &B, flags) < 0 ||
        PyObject_GetBuffer(cc, &C, flags) < 0 ||
        PyObject_GetBuffer(o, &O, flags | PyBUF_WRITABLE) < 0)
        goto done;
    if (kind(&A) != 'f' || kind(&B) != 'f' || kind(&C) != 'f' || A.ndim != 2 || B.ndim != 2 ||
        C.ndim != 2 || A.shape[1] != B.shape[1] || (kind(&O) != 'f' && kind(&O) != 'd') ||
        O.ndim != 2) {
        PyErr_SetString(PyExc_TypeError, "A, B (as many columns) and C must be 2-D float32 "
                                         "arrays, acc a 2-D float32 or float64 one");
        goto done;
    }
    Py_ssize_t m = A.shape[0], p = A.shape[1], c = B.shape[0], k = C.shape[1];
    if (C.shape[0] != c || O.shape[0] != m || O.shape[1] != k || cols < 1) {
        PyErr_Format(PyExc_ValueError, "C must have shape (%zd, k) and acc (%zd, k), and cols "
                                       "be at least 1", c, m);
        goto done;
    }
    if (get_panels(q, &Q, c, p) < 0)
        goto done;
    if (overlap(&O, &A) || overlap(&O, &B) || overlap(&O, &Q) || overlap(&O, &C)) {
        PyErr_SetString(PyExc_ValueError, "acc shares memory with an input");
        goto done;
    }
    if (get_sgemm(blas, &sgemm) < 0)
        goto done;
    if (k > INT32_MAX || cols > INT32_MAX || m > INT32_MAX || p > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too large for BLAS's int arguments");
        goto done;
    }
    if (m > 0 && c > 0 && k > 0) {
        Py_ssize_t pc = cols < c ? cols : c;
        /* the piece, its product, and its panels (a piece that does not start on a
           panel is packed even when the panels are given) */
        size_t size = (size_t)(m * pc + m * k + ((pc + 15) / 16) * 16 * p);
        work = (float *)malloc(size * sizeof(float));
        if (work == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        float *P = work, *tmp = P + m * pc, *pk = tmp + m * k;
        const float *Af = (const float *)A.buf, *Bf = (const float *)B.buf,
                    *Cf = (const float *)C.buf, *Qf = Q.obj ? (const float *)Q.buf : NULL;
        int is_double = kind(&O) == 'd';
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t e0 = 0; e0 < c; e0 += cols) {
            Py_ssize_t e1 = e0 + cols < c ? e0 + cols : c, w = e1 - e0;
            if (v == KPCA_PORTABLE && blas_block) /* the portable block by BLAS */
                rbf_block_blas(sgemm, Af, m, p, Bf + e0 * p, w, P, clamp);
            else {
                const float *panels;
                if (Qf != NULL && e0 % 16 == 0)
                    panels = Qf + (e0 / 16) * p * 16;
                else {
                    pack(Bf + e0 * p, w, p, pk);
                    panels = pk;
                }
                rbf_block[v](Af, m, p, panels, w, P, clamp);
            }
            /* row-major tmp (m x k) = P (m x w) C[e0:e1] (w x k) */
            int M = (int)k, N = (int)m, K = (int)w;
            float one = 1.0f, zero = 0.0f;
            char nn = 'N';
            sgemm(&nn, &nn, &M, &N, &K, &one, (float *)(Cf + e0 * k), &M, P, &K, &zero, tmp,
                  &M);
            if (is_double)
                add_rows((double *)O.buf, tmp, m, k, k);
            else {
                float *out = (float *)O.buf;
                for (Py_ssize_t i = 0; i < m * k; ++i)
                    out[i] += tmp[i];
            }
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    free(work);
    PyBuffer_Release(&A);
    PyBuffer_Release(&B);
    PyBuffer_Release(&Q);
    PyBuffer_Release(&C);
    PyBuffer_Release(&O);
    return result;
}

/* the functions variant() binds to a variant */
static PyMethodDef bound[] = {
    {"product", product, METH_VARARGS,
     "product(T, VJ, VI, WI, WJ, both, rs, cs[, sgemm, slice_rows]): WI += T @ VJ and,\n"
     "if both, WJ += T.T @ VI; rs += T.sum(1), and if both cs += T.sum(0), unless None.\n"
     "C-contiguous arrays, all float32 or all float64; T (m, c), VJ and WJ (c, b),\n"
     "VI and WI (m, b), rs (m,), cs (c,); any b: whole vectors of the variant's width\n"
     "(widths: float32, float64), the rest in a dot-product form. sgemm: None, or a\n"
     "PyCapsule of BLAS's sgemm (scipy.linalg.cython_blas), with which float32 products\n"
     "are BLAS's, slice_rows (default 128) rows of T at a time. No output may share\n"
     "memory with an input or another output. Releases the GIL."},
    {"fused_rbf", fused_rbf, METH_VARARGS,
     "fused_rbf(A, B, panels, clamp, V, W, r0, c0, diagonal, rows, cols, diag, sgemm,\n"
     "lead=False): W[:, lead:] += K V over the tile K[r0:r0+m, c0:c0+c] of the RBF kernel\n"
     "(and its mirror below the diagonal), K = exp(A B^T) (clamped at 0 if clamp)\n"
     "evaluated in pieces of rows x cols (rows x rows on a diagonal tile) with `diag` (a\n"
     "float, or None) set on the diagonal; with lead, W[:, 0] gets the row (and column)\n"
     "sums, each piece's in float32. A (m, p), B (c, p): the tile's rows and columns\n"
     "prepared, float32; panels: B's panels (pack_panels) or None; V (n, b) float32,\n"
     "W (n, lead + b) float64 (accumulated).\n"
     "sgemm: a PyCapsule of the Fortran BLAS sgemm (scipy.linalg.cython_blas), or None for\n"
     "the one-sweep product (any b, as product()); with it the portable variant's\n"
     "exponents are BLAS's too. Releases the GIL throughout."},
    {"build_rbf", build_rbf, METH_VARARGS,
     "build_rbf(A, B, panels, clamp, T, V, W, r0, c0, diagonal, slice_rows, diag, lead):\n"
     "T = exp(A B^T) (clamped at 0 if clamp; `diag`, a float or None, on a diagonal\n"
     "tile's diagonal), evaluated slice_rows rows at a time, each slice multiplied while\n"
     "in cache: W[r0:r0+m, lead:] += T V[c0:c0+c] and, unless diagonal,\n"
     "W[c0:c0+c, lead:] += T^T V[r0:r0+m]; with lead, W[:, 0] gets the row (and column)\n"
     "sums. A (m, p), B (c, p), T (m, c), V (n, b) float32 (any b, as product()),\n"
     "W (n, lead + b) float64. Each tile's sums in float32, as product(). sgemm (optional):\n"
     "None, or a PyCapsule of BLAS's sgemm, with which the products are BLAS's (any b)\n"
     "and the portable variant's exponents too. Releases the GIL."},
    {"rows_rbf", rows_rbf, METH_VARARGS,
     "rows_rbf(A, B, panels, clamp, C, acc, cols, sgemm, blas_block=True): acc +=\n"
     "exp(A B^T) C (clamped at 0 if clamp), in pieces of cols columns, each multiplied by\n"
     "sgemm (a PyCapsule of the Fortran BLAS sgemm) while in cache; with blas_block the\n"
     "portable variant's exponents are sgemm's too (else its own block, from the panels).\n"
     "A (m, p), B (c, p), C (c, k) float32; panels: B's panels or None; acc (m, k)\n"
     "float32 or float64. Releases the GIL."},
    {NULL, NULL, 0, NULL},
};

static PyObject *
variant(PyObject *module, PyObject *args)
{
    PyObject *out = kpca_bind(module, args, bound);
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
     "'widths' (float32, float64): the columns of its vectors; the columns of a block\n"
     "past a multiple of these go in a slower dot-product form.\n"
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
