"""The kernel matrix as a symmetric linear operator.

Solvers only ever call :meth:`KernelOperator.matmat` (and, for the dense solver,
:meth:`KernelOperator.to_dense`). Backends differ in how they produce ``K @ V``:
a stored matrix, blocks computed on the fly under a memory budget, a low-rank
factorisation, or a Dask cluster.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.sparse.linalg import LinearOperator


class KernelOperator(ABC):
    """A symmetric ``n x n`` operator.

    Attributes
    ----------
    shape : tuple (n, n)
    dtype : numpy dtype of the results of :meth:`matmat`
    threads : int or None
        BLAS threads for the large products a solver makes with this operator's
        results between its passes (the fit's ``n_jobs``), or None: the caller's
        setting. A tiled fit holds BLAS to one thread between passes
        (``KernelPCA._decompose``), so its large products ask for these explicitly.
    """

    shape: tuple[int, int]
    dtype: np.dtype
    threads: int | None = None

    @property
    def n(self) -> int:
        return self.shape[0]

    @abstractmethod
    def matmat(self, V: np.ndarray) -> np.ndarray:
        """``K @ V`` for ``V`` of shape (n, k); returns shape (n, k)."""

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``K @ v`` for ``v`` of shape (n,)."""
        return self.matmat(np.asarray(v).reshape(-1, 1)).ravel()

    @abstractmethod
    def diag(self) -> np.ndarray:
        """Diagonal of ``K``, shape (n,)."""

    def trace(self) -> float:
        return float(np.sum(self.diag(), dtype=np.float64))

    def row_means(self) -> np.ndarray:
        """``K @ 1 / n``, shape (n,), accumulated in float64."""
        ones = np.ones((self.n, 1), dtype=self.dtype)
        return self.matmat(ones).ravel().astype(np.float64) / self.n

    def to_dense(self) -> np.ndarray:
        """The full matrix; only for backends that can afford it."""
        return self.matmat(np.eye(self.n, dtype=self.dtype))

    @property
    def nbytes(self) -> int:
        """Bytes this operator holds (0 for matrix-free backends)."""
        return 0

    def aslinearoperator(self) -> LinearOperator:
        """A :class:`scipy.sparse.linalg.LinearOperator` view (symmetric)."""
        return LinearOperator(
            self.shape,
            matvec=self.matvec,
            matmat=self.matmat,
            rmatvec=self.matvec,
            rmatmat=self.matmat,
            dtype=self.dtype,
        )


def host_matmat(op: KernelOperator, M: np.ndarray) -> np.ndarray:
    """``op @ M`` for a host block ``M`` (n, b), as a float64 NumPy array.

    On a device operator (PyTorch, CuPy: ``op.device``) the product runs there and only
    the n x b blocks cross (``matmat_host``); otherwise ``M`` in the operator's dtype.
    The robust estimators' reweighting steps use it: their O(n b) algebra stays in
    NumPy, their passes over ``K`` on the operator's device.
    """
    if getattr(op, "device", False):
        return op.matmat_host(M)
    return np.asarray(op.matmat(np.asarray(M, dtype=op.dtype)), dtype=np.float64)
