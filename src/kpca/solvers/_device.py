"""Top eigenpairs of a device operator (Array API): dense ``eigh`` or block Lanczos.

The algorithm is the thick-restart block Lanczos of :mod:`kpca.solvers._krylov`
(docs/math.md, "The eigenproblem"); here the basis, its products and the QR of each new
block stay on the arrays' device, and only the small projected problem (the basis
size squared) and the coupling blocks go to the host, where the host loop's
:class:`~kpca.solvers._krylov.ProjectedProblem` keeps them and applies the same
stopping rules. Like the host solver it starts from the operator's start block and its
image (``start``: the Nyström directions, multiplied in the operator's construction
pass) where it has one. The result is a host :class:`EigenResult`, post-processed like
every other solver's.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from sklearn.utils import check_random_state

from .._array_api import from_host, to_host
from ._krylov import ProjectedProblem, krylov_basis_size, krylov_block_size
from ._randomized import default_rtol
from ._result import EigenResult

logger = logging.getLogger("kpca")


def device_eigsh(op: Any, k: int, *, solver: str = "krylov", tol: float = 0.0,
                 max_iter: int | None = None, random_state: Any = None,
                 start: tuple[Any, Any] | None = None, **_: object) -> EigenResult:
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
    start : (Q0, K Q0), default=None
        An orthonormal start block and its image, arrays on the operator's device
        (``op.initial_block()``); without it, a Gaussian block and a pass.

    Returns
    -------
    EigenResult
        On the host: values float64, vectors (n, k) in float64.
    """
    n = op.n
    b = start[0].shape[1] if start is not None else krylov_block_size(
        k, cheap_pass=op.stored, n=n)
    if solver == "dense" or krylov_basis_size(k, b) >= n // 2 or k >= n:
        return _dense(op, k)
    return _lanczos(op, k, b, tol=tol, max_iter=max_iter,
                    rng=check_random_state(random_state), start=start)


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
             rng: np.random.RandomState, start: tuple[Any, Any] | None = None
             ) -> EigenResult:
    xp, n = op.xp, op.n
    dev = op.X.device
    mmax = krylov_basis_size(k, b)

    def to_dev(A: np.ndarray) -> Any:
        return from_host(np.asarray(A, dtype=np.float64), xp, dev)

    def product(V: Any) -> Any:
        return xp.astype(op.matmat(V), xp.float64)

    # the basis (float64) on the device; T = Q^T K Q and the stopping rules on the host
    Q = xp.zeros((n, mmax), dtype=xp.float64, device=dev)
    if start is not None:
        Q[:, :b] = xp.astype(start[0], xp.float64)
        W = xp.astype(start[1], xp.float64)
        n_pass = 0
    else:
        Q[:, :b] = xp.linalg.qr(to_dev(rng.standard_normal((n, b))))[0]
        W = product(Q[:, :b])
        n_pass = 1
    proj = ProjectedProblem(k, b, mmax, default_rtol(tol, op.dtype), max_iter or 300,
                            n_pass=n_pass, name="device krylov")
    while True:
        m = proj.m
        Qm = Q[:, :m]
        Qt = xp.matrix_transpose(Qm)
        C = Qt @ W
        W = W - Qm @ C
        C2 = Qt @ W  # twice: orthogonal to round-off
        W = W - Qm @ C2
        t_scale = proj.couple(to_host(C + C2, np.float64))
        Qn, R = xp.linalg.qr(W)
        Rh = to_host(R, np.float64)
        # directions the block lost (an invariant subspace was found): their R rows
        # are negligible; they are replaced by random ones below, not coupled (R = 0)
        lost = np.abs(np.diag(Rh)) <= 1e-12 * max(float(np.abs(Rh).max(initial=0.0)), t_scale)
        Rh[lost] = 0
        Y = proj.ritz(Rh)
        if proj.stop():
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
        p = proj.restart()  # thick restart from the best Ritz vectors
        if p:
            Q[:, :p] = Qm @ to_dev(np.ascontiguousarray(Y[:, :p]))
        j = proj.grow()
        Q[:, j : j + b] = Qn
        W = product(Q[:, j : j + b])
    return proj.result(to_host(V, np.float64))
