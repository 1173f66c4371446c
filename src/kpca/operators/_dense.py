"""Dense backend: the kernel matrix is stored."""

from __future__ import annotations

import numpy as np

from ._base import KernelOperator


class DenseOperator(KernelOperator):
    """Operator backed by a stored symmetric matrix.

    Parameters
    ----------
    A : ndarray of shape (n, n)
        Symmetric matrix; float32 or float64.
    owned : bool, default=False
        True when ``A`` belongs to the operator (it was computed for it), so that
        in-place centring and destructive eigensolvers may overwrite it.
    """

    def __init__(self, A: np.ndarray, *, owned: bool = False):
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"a kernel matrix must be square; got shape {A.shape}.")
        self.A = A
        self.owned = owned
        self.shape = A.shape
        self.dtype = A.dtype

    def matmat(self, V):
        return self.A @ V.astype(self.dtype, copy=False)

    def diag(self):
        return self.A.diagonal().copy()

    def row_means(self):
        return self.A.mean(axis=1, dtype=np.float64)

    def to_dense(self):
        return self.A

    @property
    def nbytes(self):
        return self.A.nbytes
