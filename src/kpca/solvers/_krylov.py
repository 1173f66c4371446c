"""Block Krylov eigensolver with thick restarts (kpca's own, ``eigen_solver='krylov'``).

Why a block method: a pass over the kernel matrix (stored or recomputed) is the
dominant cost, and applying it to a block of ``b`` vectors costs little more than
to one. Each cycle grows an orthonormal block Krylov basis
``[Q0, K Q0, K^2 Q0, ...]`` (``depth`` blocks, full re-orthogonalisation), extracts
Ritz pairs by Rayleigh-Ritz after every pass (stopping as soon as the residual
test is met), and restarts from the best ``b`` Ritz vectors, whose images ``K V``
are already known (no extra pass).

Precision: the basis, the projections and the Rayleigh-Ritz problem are float64;
only the operator product runs in the operator's dtype (float32 storage is fine).
"""

from __future__ import annotations

import logging

import numpy as np
from scipy.linalg import eigh, qr
from sklearn.utils import check_random_state
from threadpoolctl import ThreadpoolController

from ..operators import KernelOperator
from ._dense import dense_eigsh
from ._randomized import default_rtol
from ._result import EigenResult

logger = logging.getLogger("kpca")


def krylov_block_size(k: int) -> int:
    """Default block: ``k + 20`` columns rounded to the nearest multiple of 8 (32 for k = 10).

    A pass costs about the same for 10 or 40 columns, and a wider block needs fewer
    passes. The multiple of 8 matters: OpenBLAS's single-precision kernels work on
    column panels of 8 or 16, and a 32-column product with a tile runs ~25 % faster
    per column than a 30- or 31-column one (measured on this project's 2-core
    x86-64 machine).
    """
    return 8 * ((k + 24) // 8)


def krylov_start(n: int, b: int, random_state=None) -> np.ndarray:
    """Orthonormal Gaussian start block of shape (n, b)."""
    rng = check_random_state(random_state)
    return qr(rng.standard_normal((n, b)), mode="economic")[0]


def krylov_eigsh(
    op: KernelOperator,
    k: int,
    *,
    tol: float = 0.0,
    max_iter: int | None = None,
    random_state=None,
    block_size: int | None = None,
    depth: int = 3,
    callback=None,
    start: tuple[np.ndarray, np.ndarray] | None = None,
    **_: object,
) -> EigenResult:
    """Largest-algebraic ``k`` eigenpairs by restarted block Krylov iteration.

    Parameters
    ----------
    op : KernelOperator
    k : int
    tol : float
        Stopping rule: every wanted pair has ``||K v - mu v|| <= rtol * |mu_1|``
        with ``rtol = max(tol, floor)`` (floor 1e-8 for float64 operators, 1e-5
        for float32; see :func:`kpca.solvers.default_rtol`).
    max_iter : int, default=None
        Maximum number of operator passes (default 300).
    block_size : int, default=None
        Columns per pass; default :func:`krylov_block_size`.
    depth : int, default=3
        Blocks in the Krylov basis of one cycle (measured best for RBF at n=20k:
        5 passes to a 1e-5 residual with k=10).
    callback : callable, default=None
        Called as ``callback(n_pass, residuals)`` after each cycle (progress).
    start : (Q0, K Q0), default=None
        An orthonormal start block and its known image (e.g. computed during the
        operator's construction pass); saves the first pass.
    """
    n = op.n
    b = start[0].shape[1] if start is not None else (block_size or krylov_block_size(k))
    if b * depth >= n // 2 or k >= n:
        logger.info("krylov: basis would cover half the space (n=%d); using dense", n)
        return dense_eigsh(op, k)
    rtol = default_rtol(tol, op.dtype)
    max_pass = max_iter or 300
    if start is not None:
        Q0, AQ0 = (np.asarray(a, dtype=np.float64) for a in start)
    else:
        Q0, AQ0 = krylov_start(n, b, random_state), None
    n_pass = 0
    cycle = 0
    # preallocated basis and images (float64): n x (b * depth) each, filled block by
    # block, so the solver's memory is fixed up front (see workspace_bytes)
    Qb = np.empty((n, b * depth))
    Wb = np.empty((n, b * depth))
    Qb[:, :b] = Q0
    if AQ0 is None:
        Wb[:, :b] = op.matmat(Q0)
        n_pass += 1
    else:
        Wb[:, :b] = AQ0
    del Q0, AQ0
    m, blocks = b, 1
    invariant = False
    # the solver's own algebra is on n x (b * depth) blocks: one thread does it as fast,
    # and waking BLAS threads between kernel passes (which run their own threads)
    # costs more than the work (measured: QR of 20000 x 32 blocks 8x slower)
    blas = ThreadpoolController()
    while True:
        with blas.limit(limits=1):
            # Rayleigh-Ritz on the whole basis after every pass (O(n m^2), cheap next to
            # a pass), so the solver stops as soon as the residual target is met
            Q, W = Qb[:, :m], Wb[:, :m]
            T = Q.T @ W
            theta, Y = eigh((T + T.T) / 2)
            top = np.argsort(-theta, kind="stable")[:b]
            theta, Y = theta[top], Y[:, top]
            V, AV = Q @ Y, W @ Y
            scale = max(float(np.max(np.abs(theta))), np.finfo(np.float64).tiny)
            res = np.linalg.norm(AV[:, :k] - V[:, :k] * theta[None, :k], axis=0) / scale
            converged = bool(np.all(res <= rtol))
            logger.info(
                "krylov: %d passes, max residual %.2e (target %.0e)",
                n_pass, res.max(), rtol,
                extra={"kpca_event": "residual", "kpca_residual": float(res.max())},
            )
            if callback is not None:
                callback(n_pass, res)
            if converged or invariant or n_pass >= max_pass:
                break
            if blocks == depth:
                # thick restart from the b best Ritz vectors, whose images are known
                cycle += 1
                Qr, R = qr(V, mode="economic", overwrite_a=True)  # re-orthonormalise
                Qb[:, :b] = Qr
                Wb[:, :b] = np.linalg.solve(R.T, AV.T).T  # keep W = A Q for the new Q
                m, blocks = b, 1
                Q = Qb[:, :m]
            del V, AV
            # next block: the newest image, orthogonalised against the basis
            Z = Wb[:, m - b : m] - Q @ (Q.T @ Wb[:, m - b : m])
            Z -= Q @ (Q.T @ Z)  # second Gram-Schmidt pass: orthogonality to round-off
            Qn, R = qr(Z, mode="economic", overwrite_a=True)
            # relative to the operator's scale (|theta| ~ ||K||), not to 1: a kernel
            # matrix with tiny entries must not look rank-deficient
            keep = np.abs(np.diag(R)) > 1e-10 * max(scale, float(np.abs(R).max()))
            if not keep.any():
                # the basis spans an invariant subspace: its Ritz pairs (recomputed by
                # the Rayleigh-Ritz step at the top of the loop) are exact
                invariant = converged = True
                continue
            if not keep.all():
                Qn = Qn[:, keep]
            w = Qn.shape[1]
            Qb[:, m : m + w] = Qn
        Wb[:, m : m + w] = op.matmat(Qn)
        n_pass += 1
        m += w
        blocks += 1
        if w < b:  # a rank-deficient block ends this cycle's growth
            blocks = depth
    return EigenResult(theta[:k], V[:, :k], "krylov", n_iter=cycle, n_matvec=n_pass * b,
                       residuals=res, converged=converged)
