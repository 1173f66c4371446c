/*
 * What kpca's two optional compiled kernels share (operators/_tileprod.c and
 * kernels/_rbfexp.c, each an extension module of its own; setup.py): the variants
 * each kernel is compiled in, which of them this CPU runs, and the checks of the
 * buffers they are given.
 *
 * Every kernel is compiled three times (docs/guide.md, "Compiled kernels"):
 *   avx512    AVX-512F + FMA, 512-bit registers (x86-64, GCC or Clang),
 *   avx2      AVX2 + FMA, 256-bit registers (x86-64, GCC or Clang),
 *   portable  C that the compiler vectorises for whatever the build targets (SSE2
 *             on x86-64, NEON on ARM64): generic 16-byte vectors (_portable.h), on
 *             any C compiler.
 * The x86 variants are compiled with target attributes, so one build serves every
 * x86-64 CPU; which of them runs is decided at run time (kpca_runs(), from
 * __builtin_cpu_supports, which also checks that the OS saves the registers).
 * Python picks one (src/kpca/_native.py: the best this CPU runs, or the one the
 * KPCA_NATIVE environment variable names) and calls its functions: variant(name)
 * returns them bound to that variant.
 */
#ifndef KPCA_NATIVE_H
#define KPCA_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "_portable.h"

/* (KPCA_NO_X86 builds the portable variant alone, as on other CPUs: for tests) */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(KPCA_NO_X86)
#define KPCA_X86 1
#include <immintrin.h>
#define TARGET_AVX512 __attribute__((target("avx512f,fma")))
#define TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define KPCA_X86 0
#endif

/* the variants, worst first (their index is what a bound function carries) */
enum { KPCA_PORTABLE = 0, KPCA_AVX2 = 1, KPCA_AVX512 = 2, KPCA_VARIANTS = 3 };
static const char *const kpca_variant_names[KPCA_VARIANTS] = {"portable", "avx2", "avx512"};

/* whether this build has variant v and this CPU runs it (after kpca_cpu_init) */
static int
kpca_runs(int v)
{
    if (v == KPCA_PORTABLE)
        return 1;
#if KPCA_X86
    if (v == KPCA_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (v == KPCA_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
#endif
    return 0;
}

/* once, in each module's init, before any kpca_runs */
static void
kpca_cpu_init(void)
{
#if KPCA_X86
    __builtin_cpu_init();
#endif
}

/* variants() -> tuple of str: the variants this build has and this CPU runs, best
   first */
static PyObject *
variants(PyObject *self, PyObject *noargs)
{
    (void)self;
    (void)noargs;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (int v = KPCA_VARIANTS - 1; v >= 0; --v) {
        if (!kpca_runs(v))
            continue;
        PyObject *name = PyUnicode_FromString(kpca_variant_names[v]);
        if (name == NULL || PyList_Append(out, name) < 0) {
            Py_XDECREF(name);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(name);
    }
    PyObject *t = PyList_AsTuple(out);
    Py_DECREF(out);
    return t;
}

/* the variant index a bound function carries as its `self` (variant() below) */
static int
kpca_variant_of(PyObject *self)
{
    long v = PyLong_Check(self) ? PyLong_AsLong(self) : -1;
    if (v < 0 || v >= KPCA_VARIANTS) {
        PyErr_SetString(PyExc_TypeError, "call this through variant(name)");
        return -1;
    }
    if (!kpca_runs((int)v)) { /* variant() refuses these: a second guard */
        PyErr_Format(PyExc_RuntimeError, "this CPU cannot run the %s variant",
                     kpca_variant_names[v]);
        return -1;
    }
    return (int)v;
}

/* variant(name) -> dict: the functions of `defs` (NULL-terminated) bound to variant
   `name` (each gets the variant's index as its `self`, and `module`'s name), and
   "name"; a ValueError for a variant this build lacks or this CPU cannot run */
static PyObject *
kpca_bind(PyObject *module, PyObject *args, PyMethodDef *defs)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    int v = -1;
    for (int i = 0; i < KPCA_VARIANTS; ++i)
        if (strcmp(name, kpca_variant_names[i]) == 0)
            v = i;
    if (v < 0) {
        PyErr_Format(PyExc_ValueError,
                     "unknown variant %R; the variants are 'avx512', 'avx2' and 'portable'",
                     PyTuple_GET_ITEM(args, 0));
        return NULL;
    }
    if (!kpca_runs(v)) {
        PyErr_Format(PyExc_ValueError, "this CPU (or build) cannot run the %s variant", name);
        return NULL;
    }
    PyObject *out = PyDict_New(), *self = PyLong_FromLong(v);
    PyObject *module_name = PyModule_GetNameObject(module);
    if (out == NULL || self == NULL || module_name == NULL)
        goto fail;
    PyObject *s = PyUnicode_FromString(name);
    if (s == NULL || PyDict_SetItemString(out, "name", s) < 0) {
        Py_XDECREF(s);
        goto fail;
    }
    Py_DECREF(s);
    for (PyMethodDef *d = defs; d->ml_name != NULL; ++d) {
        PyObject *f = PyCFunction_NewEx(d, self, module_name);
        if (f == NULL || PyDict_SetItemString(out, d->ml_name, f) < 0) {
            Py_XDECREF(f);
            goto fail;
        }
        Py_DECREF(f);
    }
    Py_DECREF(self);
    Py_DECREF(module_name);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(self);
    Py_XDECREF(module_name);
    return NULL;
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
