"""The primal route: kernels with an explicit, low-dimensional feature map.

For ``k(x, y) = <phi(x), phi(y)>`` with ``phi`` of dimension ``p`` (the linear kernel:
``p = d``; a polynomial kernel of integer degree: ``p = C(d + degree, degree)``), the
centred kernel matrix is ``K~ = F~ F~^T`` with ``F~`` the centred ``n x p`` features.
Its non-zero eigenvalues are those of the ``p x p`` scatter ``C = F~^T F~``, and with
``C u = mu u`` the unit eigenvector of ``K~`` is ``v = F~ u / sqrt(mu)`` (docs/math.md,
"The eigenproblem": the same ``mu_l`` and ``v_l``), so the scores ``sqrt(mu) v = F~ u``
come without the ``n x n`` matrix: ``O(n p^2 + p^3)`` instead of ``O(n^2 p)`` to build
``K`` and ``O(n^3)`` (or an iterative solve) to decompose it.

The fitted attributes are the dual ones (``eigenvectors_`` are the ``v_l``), so
``transform``, the pre-images and model files see a dual fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import qr

from ..kernels import check_finite_kernel
from ._dense import top_eigh
from ._result import EigenResult

__all__ = ["PrimalSolution", "primal_eigsh"]


@dataclass(frozen=True)
class PrimalSolution:
    """What the primal route gives besides the eigenpairs.

    Attributes
    ----------
    result : EigenResult
        Top pairs of ``K~`` (raw, ascending as LAPACK returns them; ``finalize`` orders
        them), with dual unit eigenvectors.
    row_means : ndarray of shape (n,)
        ``r = K 1 / n = F mu_F`` (zeros when not centred).
    grand_mean : float
        ``1^T K 1 / n^2 = ||mu_F||^2``.
    trace : float
        ``trace(K~) = ||F~||_F^2``.
    """

    result: EigenResult
    row_means: np.ndarray
    grand_mean: float
    trace: float


def primal_eigsh(F: np.ndarray, k: int, *, center: bool = True,
                 random_state: np.random.RandomState | None = None) -> PrimalSolution:
    """Top-``k`` eigenpairs of ``K~ = F~ F~^T`` from the ``p x p`` scatter of ``F``.

    Parameters
    ----------
    F : ndarray of shape (n, p)
        Explicit features of the training rows (float64; overwritten: centred).
    k : int
        Number of pairs, ``1 <= k <= n``. Pairs beyond the rank of ``F~`` get zero
        eigenvalues and orthonormal vectors orthogonal to the others.
    center : bool, default=True
        Centre ``F`` on its column means (kernel PCA centred in feature space).
    random_state : RandomState, default=None
        Draws the completion of zero-eigenvalue pairs.

    Returns
    -------
    PrimalSolution

    Raises
    ------
    ValueError
        The means or the scatter of ``F`` overflow (not finite): the kernel matrix
        ``F F^T`` overflows.
    """
    n, p = F.shape
    # finite features can still overflow in their means and products (|x|^2 > 1.8e308):
    # reported below as the dual route reports a kernel matrix that overflows, never as
    # NaN eigenvalues clipped to zero scores
    with np.errstate(over="ignore", invalid="ignore"):
        if center:
            mu = F.mean(axis=0)
            F -= mu
            row_means = (F @ mu) + float(mu @ mu)  # F mu with F uncentred
            grand = float(mu @ mu)
        else:
            row_means, grand = np.zeros(n), 0.0
        C = F.T @ F
        C += C.T
        C *= 0.5
    check_finite_kernel(row_means, "the training rows")
    check_finite_kernel(C, "the training rows")
    trace = float(np.trace(C))
    q = min(k, p)
    w, U = top_eigh(C, q, overwrite=True)  # ascending
    w = np.maximum(w, 0.0)
    Z = F @ U  # scores: sqrt(mu) v
    # a pair whose eigenvalue is round-off of C (scale: eps p mu_1) has no direction in
    # the data: its vector, and every pair beyond p, is completed orthonormally
    tiny = max(float(w.max(initial=0.0)), 0.0) * np.finfo(np.float64).eps * max(n, p) * 10
    good = w > tiny
    V = np.zeros((n, k))
    V[:, k - q:][:, good] = Z[:, good] / np.sqrt(w[good])
    values = np.zeros(k)
    values[k - q:] = np.where(good, w, 0.0)
    missing = np.flatnonzero(values == 0.0)
    if missing.size:
        rng = random_state if random_state is not None else np.random.RandomState(0)
        G = rng.standard_normal((n, missing.size))
        B = V[:, values > 0]
        for _ in range(2):
            G -= B @ (B.T @ G)
        V[:, missing] = qr(G, mode="economic")[0]
    result = EigenResult(values, V, "primal", n_matvec=0)
    return PrimalSolution(result, row_means, grand, trace)
