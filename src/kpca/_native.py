"""Which variant of the optional compiled kernels runs (docs/guide.md, "Compiled
kernels").

Each compiled kernel (the stored tile's product, ``operators/_tileprod.c``; the RBF
block, ``kernels/_rbfexp.c``) is built in three variants (``src/kpca/_native.h``):
``avx512`` (AVX-512F + FMA), ``avx2`` (AVX2 + FMA) and ``portable`` (plain C that
the compiler vectorises: SSE2 on x86-64, NEON on ARM). At import kpca runs the best
one this CPU runs, unless the environment variable :data:`ENV` (``KPCA_NATIVE``)
names one:

``auto`` (or unset)
    the best variant this CPU runs;
``avx512``, ``avx2``, ``portable``
    that variant. One this CPU (or build) cannot run gives a ``RuntimeWarning``
    naming the variable and the valid values, and the best variant below it runs
    instead (NumPy where there is none);
``off``
    NumPy only.

Any other value raises ``ValueError`` at import. The variable is read once, when
kpca is imported. Where the extensions could not be built (no C compiler at install)
kpca uses NumPy for the same work.
"""

from __future__ import annotations

import functools
import importlib
import os
import types
import warnings
from dataclasses import dataclass
from typing import Any

#: the environment variable that forces a variant
ENV = "KPCA_NATIVE"
#: the compiled variants, best first
VARIANTS = ("avx512", "avx2", "portable")
#: the values :data:`ENV` accepts
CHOICES = ("auto", *VARIANTS, "off")


def requested(environ: Any = None) -> str:
    """The variant :data:`ENV` asks for (``"auto"`` when unset or empty).

    Raises
    ------
    ValueError
        A value not in :data:`CHOICES` (case and surrounding spaces are ignored).
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(ENV, "")
    value = raw.strip().lower() or "auto"
    if value not in CHOICES:
        raise ValueError(
            f"environment variable {ENV}={raw!r} is not valid; valid values are "
            f"{', '.join(CHOICES)} (or unset: auto)."
        )
    return value


@dataclass(frozen=True)
class Native:
    """The variant of one compiled kernel that runs in this process.

    Attributes
    ----------
    kernel : str
        What the kernel computes (for ``kpca info``).
    variant : str or None
        The variant that runs; None: NumPy.
    reason : str
        Why that one (the best this CPU runs, forced by :data:`ENV`, not built...).
    available : tuple of str
        The variants this build has and this CPU runs, best first.
    functions : SimpleNamespace or None
        The variant's functions (``variant(name)`` of the extension), or None.
    """

    kernel: str
    variant: str | None
    reason: str
    available: tuple[str, ...]
    functions: types.SimpleNamespace | None


def optional(name: str) -> types.ModuleType | None:
    """The optional compiled extension ``name`` (a dotted module name), or None where
    it could not be built (setup.py builds it where there is a C compiler): NumPy
    then does the same work."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def bind(ext: Any, variant: str) -> types.SimpleNamespace:
    """The functions of ``ext`` bound to ``variant`` (tests use every variant), with
    ``best``: the best variant this CPU runs (:func:`sweeps_in_cache`)."""
    return types.SimpleNamespace(**ext.variant(variant), best=tuple(ext.variants())[0])


def select(ext: Any, kernel: str, request: str) -> Native:
    """The variant of the compiled kernel module ``ext`` (None: not built) to run for
    ``request`` (:func:`requested`); warns when ``request`` cannot be met."""
    if ext is None:
        reason = "not built (no C compiler at install?)"
        if request in VARIANTS:
            _warn(request, f"the compiled {kernel} is not built", "NumPy")
        return Native(kernel, None, reason, (), None)
    available = tuple(ext.variants())
    if request == "off":
        return Native(kernel, None, f"{ENV}=off", available, None)
    if request == "auto":
        return Native(kernel, available[0], "the best this CPU runs", available,
                      bind(ext, available[0]))
    if request in available:
        return Native(kernel, request, f"forced by {ENV}={request}", available,
                      bind(ext, request))
    # the best variant below the one asked for (each runs wherever the next one does)
    below = [v for v in VARIANTS[VARIANTS.index(request) + 1 :] if v in available]
    instead = below[0] if below else None
    _warn(request, f"this CPU cannot run it (it runs {', '.join(available) or 'none'})",
          instead or "NumPy")
    return Native(kernel, instead,
                  f"{ENV}={request}, which this CPU cannot run: the next below", available,
                  None if instead is None else bind(ext, instead))


@functools.cache
def sgemm() -> Any:
    """SciPy's Fortran BLAS ``sgemm``, as the PyCapsule the compiled kernels call
    (``scipy.linalg.cython_blas``: the BLAS SciPy itself uses, held to one thread per
    worker like NumPy's by :func:`kpca._parallel.run_blocks`)."""
    from scipy.linalg import cython_blas

    return cython_blas.__pyx_capi__["sgemm"]


def blas_products(functions: Any) -> bool:
    """Whether the variant bound in ``functions`` hands its float32 products (and its
    RBF exponents) to BLAS (:func:`sgemm`): the portable variant where this CPU runs a
    wider variant (``KPCA_NATIVE=portable`` on an AVX2 or AVX-512 CPU).

    The cost argument is the width of the arithmetic. BLAS dispatches to the widest
    kernels the CPU runs; the portable variant's own products and dot products are
    16-byte vectors (SSE2 on x86-64: a multiply and an add where AVX2 has one fused
    multiply-add on twice the lanes). Where the CPU runs AVX2, BLAS's products are the
    faster, even with their packing (the portable one-sweep product ran at 0.7x
    NumPy's two BLAS products on a stored tile, docs/benchmarks.md, issue 31). Where
    the portable variant is the best the CPU runs (x86-64 without AVX2; ARM, whose
    NEON is 16 bytes too), BLAS's kernels are no wider than its own, and its own code
    does less: the one-sweep product reads a tile once for both products and packs
    nothing, and the block's exponents never leave registers (on a CPU without AVX2,
    emulated: 1.32x NumPy's CPU time for a 20,000-row fit and 1.48x for a matrix-free
    pass, against 1.06x and 1.30x with BLAS's products; docs/benchmarks.md). The
    element-wise work (the exponential, the sums) is portable C either way.
    """
    return (getattr(functions, "name", None) == "portable"
            and getattr(functions, "best", "portable") != "portable")


def tail_is_cheap(width: int, lanes: int) -> bool:
    """Whether a block of ``width`` columns is multiplied as it is by the compiled
    one-sweep product, whose vectors hold ``lanes`` columns: its last ``width mod
    lanes`` columns go in the kernel's dot-product form (``_tileprod_kernel.h``), which
    costs about half a vector per two columns, so up to half a vector of them is
    cheaper than the zero columns that would complete it, more is not
    (benchmarks/bench_update_passes.py, the avx2 variant, 10,500 rows, one thread: 10
    columns 51.9 ms against 71.0 padded to 16; 12: 66.9 against 71.8 for 16)."""
    return width % lanes <= lanes // 2


def sweeps_in_cache(functions: Any, width: int) -> bool:
    """Whether a matrix-free piece (evaluated into cache, then multiplied) is
    multiplied by the variant's one-sweep product rather than by BLAS: where the
    block's ``width`` fills the variant's vectors but for a cheap tail
    (:func:`tail_is_cheap`) and the variant is the widest this CPU runs (so that
    BLAS's kernels are no wider than its own).

    A piece is read from cache, so the one sweep saves no memory traffic there, only
    BLAS's packing: it wins where its vectors are as wide as BLAS's (on this project's
    AVX2 machine, 2.77 against 2.95 CPU-s a 40,000-row pass; on a 2-core AVX-512 Xeon,
    a 30,000-row pass of 24 columns, 16 in a vector and 8 in the dot-product form: 0.72x
    BLAS's time on one thread, 0.81x on two), and loses where a narrower variant is
    forced on a wider CPU (``KPCA_NATIVE=avx2`` on AVX-512, where BLAS runs AVX-512
    kernels: the AVX2 pass took 1.48x the AVX-512 one's time; ``KPCA_NATIVE=portable``
    on AVX2: :func:`blas_products`).
    """
    name = getattr(functions, "name", None)
    return (name in VARIANTS and tail_is_cheap(width, functions.widths[0])
            and name == getattr(functions, "best", name))


def _warn(request: str, why: str, instead: str) -> None:
    warnings.warn(
        f"{ENV}={request}: {why}; using {instead}. Valid values of {ENV}: "
        f"{', '.join(CHOICES)}.", RuntimeWarning, stacklevel=2)


#: what :data:`ENV` asked for when kpca was imported
REQUEST = requested()
