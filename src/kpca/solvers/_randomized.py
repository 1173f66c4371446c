"""Randomized subspace iteration with Rayleigh-Ritz (Halko, Martinsson & Tropp 2011)."""

from __future__ import annotations

import logging

import numpy as np
from scipy.linalg import eigh, qr
from sklearn.utils import check_random_state

from .._config import get_config
from .._parallel import blas_threads
from ..operators import KernelOperator
from ._result import EigenResult

logger = logging.getLogger("kpca")


def default_rtol(tol: float, dtype) -> float:
    """Residual target ``||K v - mu v|| / |mu_1|`` of the iterative solvers.

    ``tol=0`` (scikit-learn's default, "machine precision" for ARPACK) means 1e-8
    in float64 and 1e-5 in float32, the levels each precision reaches reliably; a
    positive ``tol`` is used as given (below what the storage precision can reach,
    the solver reports that it has not converged).
    """
    floor = 1e-5 if np.dtype(dtype) == np.float32 else 1e-8
    return float(tol) if tol else floor


def randomized_eigsh(
    op: KernelOperator,
    k: int,
    *,
    iterated_power: int | str = "auto",
    n_oversamples: int = 10,
    tol: float = 0.0,
    max_iter: int | None = None,
    random_state=None,
    **_: object,
) -> EigenResult:
    """Top-``k`` eigenpairs by magnitude from randomized subspace iteration.

    Each step applies the operator to an ``n x (k + n_oversamples)`` block,
    re-orthonormalises it by QR and extracts Ritz pairs (Rayleigh-Ritz).

    Stopping rule: with ``iterated_power='auto'``, iterate until every one of the
    ``k`` wanted pairs has ``||K v - mu v|| <= rtol |mu_1|`` (see
    :func:`default_rtol`), or ``max_iter`` steps (default 200); an integer
    ``iterated_power`` runs exactly that many power steps (scikit-learn's meaning).
    The ``k`` largest-algebraic pairs are returned, as by the other solvers: when the
    pairs of largest magnitude include significant negative eigenvalues (a non-PSD
    kernel), the iteration is repeated on ``K + s I`` with
    ``s`` just above the most negative Ritz value, so that the top of the spectrum
    dominates; a significant negative eigenvalue among the top ``k`` is still
    reported by :func:`finalize`.
    """
    rng = check_random_state(random_state)
    l = min(op.n, k + n_oversamples)
    # the block algebra (QR, Rayleigh-Ritz) on one BLAS thread where it is small, as
    # block Lanczos's (threads woken between passes would spin against the next
    # pass's workers), on the operator's threads from n l^2 = small_algebra_flops on
    small = op.n * l * l < get_config()["small_algebra_flops"]
    with blas_threads(1 if small else op.threads):
        return _randomized_eigsh(op, k, iterated_power, n_oversamples, tol, max_iter, rng)


def _randomized_eigsh(op, k, iterated_power, n_oversamples, tol, max_iter, rng
                      ) -> EigenResult:
    result = _subspace_iteration(op, k, 0.0, iterated_power, n_oversamples, tol, max_iter, rng)
    w = result.values
    neg_ratio = 5e-3 if np.dtype(op.dtype) == np.float32 else 1e-5
    if w.size and np.any(w < -neg_ratio * np.max(np.abs(w))):
        # the largest-magnitude pairs include significant negative eigenvalues of a
        # non-PSD kernel: the top-k largest-algebraic pairs may lie elsewhere. Shift K
        # by the most negative Ritz value (with a margin) so that they become the
        # largest in magnitude, and iterate again.
        shift = 1.1 * float(-np.min(w))
        logger.info("randomized: shifting by %.3g to find the largest-algebraic pairs", shift)
        result = _subspace_iteration(op, k, shift, iterated_power, n_oversamples, tol,
                                     max_iter, rng)
    return result


def _subspace_iteration(op, k, shift, iterated_power, n_oversamples, tol, max_iter, rng
                        ) -> EigenResult:
    """Subspace iteration on ``K + shift I``; Ritz values are returned unshifted."""
    n = op.n
    fixed = iterated_power != "auto"
    limit = int(iterated_power) if fixed else (max_iter or 200)
    rtol = default_rtol(tol, op.dtype)
    l = min(n, k + n_oversamples)
    Q, _r = qr(rng.standard_normal((n, l)).astype(op.dtype, copy=False), mode="economic")
    n_matvec = 0
    it = 0
    while True:
        Y = op.matmat(Q)
        if shift:
            Y = Y + shift * Q
        n_matvec += l
        B = Q.T @ Y
        w, U = eigh((B + B.T) / 2)
        order = np.argsort(-np.abs(w), kind="stable")
        w, U = w[order], U[:, order]
        V, AV = Q @ U[:, :k], Y @ U[:, :k]
        scale = max(float(np.abs(w[0])), np.finfo(np.float64).tiny)
        res = np.linalg.norm(AV - V * w[:k], axis=0) / scale
        converged = bool(np.all(res <= rtol))
        if it >= limit or (not fixed and converged):
            break
        Q, _r = qr(Y, mode="economic", overwrite_a=True, check_finite=False)
        it += 1
    return EigenResult(w[:k] - shift, V, "randomized", n_iter=it, n_matvec=n_matvec,
                       residuals=res, converged=converged or fixed)
