"""Top eigenpairs of a device operator (Array API): dense ``eigh`` or block Lanczos.

The algorithm is the host's: the one thick-restart block Lanczos loop of
:mod:`kpca.solvers._krylov` (docs/math.md, "The eigenproblem"), given the Array API
block algebra (:class:`~kpca.solvers._krylov.BlockAlgebra`): the basis, its products
and the QR of each new block stay on the arrays' device, and only the small projected
problem (the basis size squared) and the coupling blocks go to the host, where the
:class:`~kpca.solvers._krylov.ProjectedProblem` keeps them and applies the host's
stopping rules. Like the host solver it starts from the operator's start block and its
image (``start``: the Nyström directions, multiplied in the operator's construction
pass) where it has one. The result is a host :class:`EigenResult`, post-processed like
every other solver's.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .._array_api import device_of, to_host
from ._krylov import BlockAlgebra, krylov_block_size, krylov_eigsh
from ._result import EigenResult

logger = logging.getLogger("kpca")


class DeviceAlgebra(BlockAlgebra):
    """The block algebra of :func:`~kpca.solvers._krylov.block_lanczos` on a device
    operator's namespace and device, with its dense solver."""

    def __init__(self, op: Any):
        super().__init__(op.xp, device_of(op.X), "device krylov")

    def dense(self, op: Any, k: int) -> EigenResult:
        return _dense(op, k)


def device_eigsh(op: Any, k: int, *, solver: str = "krylov",
                 block_size: int | None = None, **options: Any) -> EigenResult:
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
    block_size : int, default=None
        Columns per pass; default :func:`~kpca.solvers.krylov_block_size` for the
        operator's passes (cheap when ``K`` is stored).
    **options
        As :func:`kpca.solvers.krylov_eigsh` (``tol``, ``max_iter``,
        ``random_state``, ``depth``, ``max_basis``, ``callback``, ``time_limit``);
        ``start`` (Q0, K Q0): an orthonormal start block and its image, arrays on the
        operator's device (``op.initial_block()``); without it, a Gaussian block and
        a pass.

    Returns
    -------
    EigenResult
        On the host: values float64, vectors (n, k) in float64.
    """
    if solver == "dense":
        return _dense(op, k)
    if block_size is None and options.get("start") is None:
        block_size = krylov_block_size(k, cheap_pass=op.stored, device_rows=op.n)
    return krylov_eigsh(op, k, block_size=block_size, algebra=DeviceAlgebra(op), **options)


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
