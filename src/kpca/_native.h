/*
 * What kpca's two optional compiled kernels share (operators/_tileprod.c and
 * kernels/_rbfexp.c, each an extension module of its own; setup.py): whether this
 * build has the AVX-512 code and this CPU runs it, and the checks of the buffers
 * they are given.
 */
#ifndef KPCA_NATIVE_H
#define KPCA_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Only x86-64 with GCC or Clang gets the AVX-512 kernels, chosen at run time
   (supported()); elsewhere supported() is false and kpca uses NumPy. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define KPCA_AVX512 1
#include <immintrin.h>
#define TARGET __attribute__((target("avx512f,fma")))
#else
#define KPCA_AVX512 0
#endif

/* whether this CPU runs the AVX-512 code (after __builtin_cpu_init, which each
   module's init calls) */
static int
kpca_cpu_ok(void)
{
#if KPCA_AVX512
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

static PyObject *
supported(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    return PyBool_FromLong(kpca_cpu_ok());
}

/* the type of a buffer's items: 'f' (float32), 'd' (float64) or 0 (anything else);
   NumPy gives "f" for an aligned native array, "=f" or "<f" otherwise */
static char
kind(const Py_buffer *buf)
{
    const char *f = buf->format;
    if (f == NULL)
        return 0;
    if (f[0] == '@' || f[0] == '=' || f[0] == '<')
        ++f;
    if (f[0] != 0 && f[1] == 0 && ((f[0] == 'f' && buf->itemsize == 4) ||
                                   (f[0] == 'd' && buf->itemsize == 8)))
        return f[0];
    return 0;
}

/* whether two buffers share any byte (a buffer never filled, obj NULL, shares none) */
static int
overlap(const Py_buffer *x, const Py_buffer *y)
{
    if (x->obj == NULL || y->obj == NULL || x->len == 0 || y->len == 0)
        return 0;
    const char *a = (const char *)x->buf, *b = (const char *)y->buf;
    return a < b + y->len && b < a + x->len;
}

#endif
