"""Top eigenpairs of a device operator (Array API): dense ``eigh`` or block Lanczos.

The algorithm is the thick-restart block Lanczos of :mod:`kpca.solvers._krylov`
(docs/math.md, "The eigenproblem"); here the basis, its products and the QR of each new
block stay on the arrays' device, and only the small projected problem (the basis
size squared) and the coupling blocks go to the host. The result is a host
:class:`EigenResult`, post-processed like every other solver's.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from scipy.linalg import eigh
from sklearn.utils import check_random_state

from .._array_api import from_host, to_host
from ._krylov import _keep, krylov_basis_size, krylov_block_size
from ._randomized import default_rtol
from ._result import EigenResult

logger = logging.getLogger("kpca")


def device_eigsh(op: Any, k: int, *, solver: str = "krylov", tol: float = 0.0,
                 max_iter: int | None = None, random_state: Any = None,
                 **_: object) -> EigenResult:
    """Largest ``k`` eigenpairs of a :class:`~kpca.operators._device.DeviceKernelOperator`.

    Parameters
    ----------
    op : DeviceKernelOperator
    k : int
    solver : str
        'dense': ``eigh`` (in float64) of the stored matrix on the device (needs
        ``op.stored``).
        Any other name: block Lanczos on the device (ARPACK and the randomized solver
        are host algorithms; on the device their requests run block Lanczos).
    tol, max_iter, random_state
        As :func:`kpca.solvers.krylov_eigsh`.

    Returns
    -------
    EigenResult
        On the host: values float64, vectors (n, k) in float64.
    """
    n = op.n
    b = krylov_block_size(k, cheap_pass=op.stored, n=n)
    if solver == "dense" or krylov_basis_size(k, b) >= n // 2 or k >= n:
        return _dense(op, k)
    return _lanczos(op, k, b, tol=tol, max_iter=max_iter, rng=check_random_state(random_state))


def _dense(op: Any, k: int) -> EigenResult:
    K = op.stored_matrix()
    if K is None:
        raise ValueError(
            f"eigen_solver='dense' needs the whole {op.n}x{op.n} kernel matrix in device "
            "memory, which memory_limit does not allow; use eigen_solver='krylov' "
            "(matrix-free) or raise memory_limit."
        )
    xp = op.xp
    # in float64: PyTorch's float32 eigh on CUDA was seen 1e-4 (relative) off on a
    # 240 x 240 kernel matrix where LAPACK's float32 was 2e-8 off. The float64 copy and
    # eigh's workspace take about 12 times a float32 K on CUDA (5 times in float32):
    # within the budget where the dense solver is chosen for small n; an explicit
    # eigen_solver='dense' near the budget's limit may need more device memory
    w, V = xp.linalg.eigh(K if K.dtype == xp.float64 else xp.astype(K, xp.float64))
    n = op.n
    idx = xp.flip(xp.arange(n - k, n, device=K.device))  # largest first
    values = to_host(xp.take(w, idx), np.float64)
    vectors = to_host(xp.take(V, idx, axis=1), np.float64)
    return EigenResult(values, vectors, "dense", n_iter=1, n_matvec=n,
                       residuals=np.zeros(k), converged=True)


def _orthonormal(xp: Any, G: Any, *bases: Any) -> Any:
    """Columns of ``G`` made orthogonal to every basis (twice), then orthonormal."""
    for _ in range(2):
        for B in bases:
            if B.shape[1]:
                G = G - B @ (xp.matrix_transpose(B) @ G)
    return xp.linalg.qr(G)[0]


def _lanczos(op: Any, k: int, b: int, *, tol: float, max_iter: int | None,
             rng: np.random.RandomState) -> EigenResult:
    xp, n = op.xp, op.n
    dev = op.X.device
    mmax = krylov_basis_size(k, b)
    p_keep = _keep(k, b, mmax)
    rtol = default_rtol(tol, op.dtype)
    max_pass = max_iter or 300

    def to_dev(A: np.ndarray) -> Any:
        return from_host(np.asarray(A, dtype=np.float64), xp, dev)

    def product(V: Any) -> Any:
        return xp.astype(op.matmat(V), xp.float64)

    # the basis (float64) on the device; T = Q^T K Q on the host
    Q = xp.zeros((n, mmax), dtype=xp.float64, device=dev)
    T = np.zeros((mmax, mmax))
    Q[:, :b] = xp.linalg.qr(to_dev(rng.standard_normal((n, b))))[0]
    W = product(Q[:, :b])
    n_pass, m, restarts = 1, b, 0
    while True:
        Qm = Q[:, :m]
        Qt = xp.matrix_transpose(Qm)
        C = Qt @ W
        W = W - Qm @ C
        C2 = Qt @ W  # twice: orthogonal to round-off
        W = W - Qm @ C2
        Ch = to_host(C + C2, np.float64)
        T[:m, m - b : m] = Ch
        T[m - b : m, :m] = Ch.T
        Qn, R = xp.linalg.qr(W)
        Rh = to_host(R, np.float64)
        # directions the block lost (an invariant subspace was found): their R rows
        # are negligible; they are replaced by random ones below, not coupled (R = 0)
        lost = np.abs(np.diag(Rh)) <= 1e-12 * max(float(np.abs(Rh).max(initial=0.0)),
                                                   float(np.abs(T[:m, :m]).max()))
        Rh[lost] = 0
        theta, Y = eigh(T[:m, :m], check_finite=False)
        theta, Y = theta[::-1], Y[:, ::-1]
        scale = max(float(np.max(np.abs(theta))), np.finfo(np.float64).tiny)
        res = np.linalg.norm(Rh @ Y[m - b : m, :k], axis=0) / scale
        full = m >= k
        converged = full and bool(np.all(res <= rtol))
        logger.info("device krylov: %d passes, basis %d, max residual %.2e (target %.0e)",
                    n_pass, m, res.max(), rtol,
                    extra={"kpca_event": "residual", "kpca_residual": float(res.max())})
        if converged or (full and n_pass >= max_pass):
            V = Qm @ to_dev(np.ascontiguousarray(Y[:, :k]))
            break
        if lost.any():
            keep = np.flatnonzero(~lost)
            kept = xp.take(Qn, xp.asarray(keep, device=dev), axis=1)
            G = to_dev(rng.standard_normal((n, int(lost.sum()))))
            fresh = _orthonormal(xp, G, Qm, kept)
            cols = [None] * b
            for j, i in enumerate(keep):
                cols[i] = kept[:, j : j + 1]
            for j, i in enumerate(np.flatnonzero(lost)):
                cols[i] = fresh[:, j : j + 1]
            Qn = xp.concat(cols, axis=1)
        if m + b > mmax:  # thick restart from the best Ritz vectors
            p = min(p_keep, m - b)
            Q[:, :p] = Qm @ to_dev(np.ascontiguousarray(Y[:, :p]))
            T[:p, :p] = np.diag(theta[:p])
            T[:p, p:] = 0
            T[p:, :p] = 0
            m, restarts = p, restarts + 1
        Q[:, m : m + b] = Qn
        m += b
        W = product(Q[:, m - b : m])
        n_pass += 1
    return EigenResult(theta[:k].copy(), to_host(V, np.float64), "krylov", n_iter=restarts,
                       n_matvec=n_pass * b, residuals=res, converged=converged)
