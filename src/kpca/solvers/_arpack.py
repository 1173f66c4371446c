"""Implicitly restarted Lanczos (ARPACK) through the operator's ``matvec``."""

from __future__ import annotations

import logging

import numpy as np
from scipy.linalg import qr
from scipy.sparse.linalg import ArpackError, eigsh
from scipy.sparse.linalg import ArpackNoConvergence as _ScipyNoConvergence
from sklearn.utils import check_random_state

from ..operators import KernelOperator
from ._dense import dense_eigsh
from ._result import EigenResult, relative_residuals

logger = logging.getLogger("kpca")


class ArpackNoConvergence(ValueError):
    """ARPACK stopped at ``max_iter`` before every wanted pair converged."""


class _Counting:
    """Wrap an operator to count operator applications."""

    def __init__(self, op: KernelOperator):
        self.op = op
        self.count = 0

    def matmat(self, V):
        V = np.asarray(V)
        if V.ndim == 1:
            self.count += 1
            return self.op.matvec(V)
        self.count += V.shape[1]
        return self.op.matmat(V)


def arpack_eigsh(
    op: KernelOperator,
    k: int,
    *,
    tol: float = 0.0,
    max_iter: int | None = None,
    random_state=None,
    **_: object,
) -> EigenResult:
    """Largest-algebraic ``k`` eigenpairs by ARPACK.

    Stopping rule: ARPACK's own, ``||K v - mu v|| <= tol * |mu|`` (``tol=0`` means
    machine precision). ARPACK needs ``k < n``; for ``k >= n`` the dense solver is
    used instead. A zero operator (constant data) gives zero eigenvalues with
    orthonormal vectors, as the other solvers do (ARPACK itself stops on it).
    """
    n = op.n
    if k >= n:
        logger.info("arpack needs k < n (k=%d, n=%d); using the dense solver", k, n)
        return dense_eigsh(op, k)
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1, 1, n)  # the same start scikit-learn draws
    counting = _Counting(op)
    from scipy.sparse.linalg import LinearOperator

    lin = LinearOperator(
        op.shape, matvec=counting.matmat, matmat=counting.matmat, dtype=op.dtype
    )
    try:
        w, V = eigsh(lin, k, which="LA", tol=tol, maxiter=max_iter, v0=v0.astype(op.dtype))
        converged = True
    except _ScipyNoConvergence as exc:
        raise ArpackNoConvergence(
            f"ARPACK did not converge in max_iter={max_iter} iterations "
            f"({len(exc.eigenvalues)} of {k} eigenpairs converged); raise max_iter or tol, "
            "or use eigen_solver='dense'."
        ) from None
    except ArpackError as exc:
        # ARPACK stops when K~ maps its start vector to 0. If K~ is zero (constant
        # data, or every point the same), the top eigenpairs are 0 with any
        # orthonormal vectors -- what the other solvers return; otherwise say so.
        Q = qr(rng.standard_normal((n, k + 1)), mode="economic")[0]
        KQ = np.asarray(counting.matmat(Q.astype(op.dtype)), dtype=np.float64)
        if np.linalg.norm(KQ) <= np.finfo(op.dtype).eps * max(1.0, float(np.abs(op.diag()).max(
                initial=0.0))) * n:
            return EigenResult(np.zeros(k), Q[:, :k].astype(op.dtype), "arpack", n_iter=0,
                               n_matvec=counting.count, residuals=np.zeros(k))
        raise ValueError(
            f"ARPACK failed ({exc}); use eigen_solver='dense' or 'krylov'."
        ) from None
    res = relative_residuals(op, w, V)
    return EigenResult(w, V, "arpack", n_iter=0, n_matvec=counting.count + k,
                       residuals=res, converged=converged)
