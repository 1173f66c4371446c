"""Dense backend: the kernel matrix is stored."""

from __future__ import annotations

import numpy as np
from scipy.linalg import get_blas_funcs

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
        if np.ndim(V) == 1:
            return self.matvec(V)
        V = np.ascontiguousarray(V, dtype=self.dtype)
        out = np.empty((self.n, V.shape[1]), dtype=self.dtype)
        # row blocks: OpenBLAS is ~3x faster on (4096 x n) @ (n x b) pieces than on
        # one tall-skinny product (measured on 2 cores, n=20k, b=20)
        step = 4096
        for i in range(0, self.n, step):
            np.matmul(self.A[i : i + step], V, out=out[i : i + step])
        return out

    def matvec(self, v):
        v = np.asarray(v, dtype=self.dtype)
        A = self.A
        # a matrix-vector product is bound by reading the matrix; BLAS's symmetric
        # product (symv) reads one triangle, half of what gemv reads: 2-3x faster on
        # one thread at n = 1,800-3,000 (ARPACK's products, docs/math.md, "Choosing a
        # solver"). A C-ordered symmetric A is its own transpose in Fortran order: no
        # copy. Its other triangle is not read (K is symmetric by contract).
        if v.ndim == 1 and A.dtype in (np.float32, np.float64) and (
                A.flags.c_contiguous or A.flags.f_contiguous):
            F = A if A.flags.f_contiguous else A.T
            symv = get_blas_funcs("symv", (F,))
            return symv(1.0, F, v, lower=1)
        return A @ v

    def diag(self):
        return self.A.diagonal().copy()

    def row_means(self):
        return self.A.mean(axis=1, dtype=np.float64)

    def to_dense(self):
        return self.A

    @property
    def nbytes(self):
        return self.A.nbytes
