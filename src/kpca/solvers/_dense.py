"""Dense solver: LAPACK's symmetric eigensolver for a subset of the spectrum."""

from __future__ import annotations

import logging

import numpy as np
from scipy.linalg import eigh

from .._parallel import sized_threads
from ..operators import DenseOperator, KernelOperator
from ._result import EigenResult

logger = logging.getLogger("kpca")


def dense_eigsh(op: KernelOperator, k: int, **_: object) -> EigenResult:
    """Top-``k`` eigenpairs by ``scipy.linalg.eigh`` (``subset_by_index``).

    The matrix is taken from ``op.to_dense()``; when the operator owns it, LAPACK
    works in place (no extra n x n copy). See :func:`top_eigh`.
    """
    overwrite = isinstance(op, DenseOperator) and op.owned
    n = op.n
    # LAPACK's reduction to tridiagonal form makes one matrix-vector product (2 n^2
    # flops) per column, each a synchronisation point of BLAS's threads: threads by that
    # size (kpca._parallel.call_threads; on a busy machine, two threads on 1,000 rows
    # made this solve several times slower than one), at most the operator's
    # (KernelOperator.threads: a tiled fit that falls back to this solver holds BLAS to
    # one thread between its passes) or else the caller's
    with sized_threads(2.0 * n * n, op.threads):
        w, V = top_eigh(op.to_dense(), k, overwrite=overwrite)
    return EigenResult(w, V, "dense")


def top_eigh(A: np.ndarray, k: int, *, overwrite: bool = False, driver: str | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """The ``min(k, n)`` largest eigenpairs of the symmetric ``A``, ascending.

    A C-ordered ``A`` is passed to LAPACK as its Fortran-ordered transpose (the same
    matrix), so with ``overwrite`` it is decomposed in place. LAPACK's subset drivers
    can return fewer pairs than asked when the wanted eigenvalues form an exact
    cluster (e.g. ``K~ = I - 11^T / n``, the centred kernel of points all far
    apart); the full decomposition is then computed instead, so exactly
    ``min(k, n)`` pairs are always returned.
    """
    n = A.shape[0]
    if A.flags.c_contiguous and not A.flags.f_contiguous:
        A = A.T
    if k >= n:
        return eigh(A, overwrite_a=overwrite, check_finite=False, driver="evd")
    diag = np.array(A.diagonal()) if overwrite else None
    w, V = eigh(A, subset_by_index=(n - k, n - 1), overwrite_a=overwrite, check_finite=False,
                driver=driver)
    if w.shape[0] != k:
        logger.info("dense: the subset solver returned %d of %d pairs (a cluster of equal "
                    "eigenvalues); computing the full decomposition", w.shape[0], k)
        # in place, LAPACK overwrote the lower triangle and the diagonal; the upper
        # triangle and the saved diagonal are still the matrix
        if diag is not None:
            np.fill_diagonal(A, diag)
        w, V = eigh(A, lower=False, overwrite_a=overwrite, check_finite=False, driver="evd")
        w, V = w[n - k:], V[:, n - k:]
    return w, V
