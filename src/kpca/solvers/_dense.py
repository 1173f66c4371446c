"""Dense solver: LAPACK's symmetric eigensolver for a subset of the spectrum."""

from __future__ import annotations

from scipy.linalg import eigh

from ..operators import DenseOperator, KernelOperator
from ._result import EigenResult


def dense_eigsh(op: KernelOperator, k: int, **_: object) -> EigenResult:
    """Top-``k`` eigenpairs by ``scipy.linalg.eigh`` (``subset_by_index``).

    The matrix is taken from ``op.to_dense()``; when the operator owns it, LAPACK
    is allowed to overwrite it (no extra n x n copy).
    """
    A = op.to_dense()
    n = A.shape[0]
    overwrite = isinstance(op, DenseOperator) and op.owned
    if k >= n:
        w, V = eigh(A, overwrite_a=overwrite, check_finite=False, driver="evd")
    else:
        w, V = eigh(A, subset_by_index=(n - k, n - 1), overwrite_a=overwrite, check_finite=False)
    return EigenResult(w, V, "dense")
