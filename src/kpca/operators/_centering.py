"""Centring in feature space (SPEC section 2), as a wrapper around any operator.

With ``r = K 1 / n`` (row means of the training Gram matrix) and ``g = mean(r)``:

* training: ``K~ = K - 1 r^T - r 1^T + g 1 1^T``;
* new rows: ``K~_t = K_t - 1 r^T - (K_t 1 / n) 1^T + g`` -- the TRAINING mean of
  ``phi`` is subtracted, so ``transform`` of one row equals the same row of a batch.

Only ``r`` and ``g`` are stored; ``K~`` is never copied.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._base import KernelOperator
from ._dense import DenseOperator


@dataclass(frozen=True)
class Centering:
    """Statistics that centre kernel rows with respect to the training mean.

    Attributes
    ----------
    row_means : ndarray of shape (n,)
        ``r = K 1 / n`` of the training Gram matrix (float64).
    grand_mean : float
        ``g = 1^T K 1 / n^2``.
    enabled : bool
        False for uncentred KPCA: every method below is then the identity.
    """

    row_means: np.ndarray
    grand_mean: float
    enabled: bool = True

    @classmethod
    def none(cls, n: int) -> Centering:
        """The identity centring (``center=False``)."""
        return cls(np.zeros(n), 0.0, enabled=False)

    def center_block(self, Kt: np.ndarray) -> np.ndarray:
        """``K~_t`` of shape (m, n) from ``K_t`` (a new array)."""
        if not self.enabled:
            return Kt.copy()
        dt = Kt.dtype
        Kc = Kt - self.row_means.astype(dt)[None, :]
        Kc -= Kt.mean(axis=1, dtype=np.float64).astype(dt)[:, None]
        Kc += dt.type(self.grand_mean)
        return Kc

    def project(self, Kt: np.ndarray, A: np.ndarray) -> np.ndarray:
        """``K~_t @ A`` without forming ``K~_t``.

        Parameters
        ----------
        Kt : ndarray of shape (m, n)
        A : ndarray of shape (n, k)

        Returns
        -------
        ndarray of shape (m, k)
        """
        out = Kt @ A
        if not self.enabled:
            return out
        dt = out.dtype
        colsum = A.sum(axis=0, dtype=np.float64)  # 1^T A
        out -= (self.row_means @ A).astype(dt)[None, :]
        t = Kt.mean(axis=1, dtype=np.float64) - self.grand_mean
        out -= np.outer(t, colsum).astype(dt)
        return out

    def center_diag(self, diag_t: np.ndarray, Kt: np.ndarray) -> np.ndarray:
        """``||phi~(t)||^2 = k(t, t) - 2 K_t 1 / n + g`` for each row, shape (m,)."""
        d = np.asarray(diag_t, dtype=np.float64)
        if not self.enabled:
            return d
        return d - 2.0 * Kt.mean(axis=1, dtype=np.float64) + self.grand_mean


class CenteredOperator(KernelOperator):
    """``K~ = H K H`` applied through ``K``'s own ``matmat`` (no n x n copy)."""

    def __init__(self, base: KernelOperator, centering: Centering):
        self.base = base
        self.centering = centering
        self.shape = base.shape
        self.dtype = base.dtype

    def matmat(self, V):
        V = np.asarray(V)
        out = self.base.matmat(V)
        r = self.centering.row_means
        g = self.centering.grand_mean
        colsum = V.sum(axis=0, dtype=np.float64)  # 1^T V
        rV = r @ V  # r^T V
        dt = out.dtype
        out -= rV.astype(dt)[None, :]
        out -= np.outer(r, colsum).astype(dt)
        out += (g * colsum).astype(dt)[None, :]
        return out

    def diag(self):
        r = self.centering.row_means
        return (self.base.diag() - 2.0 * r + self.centering.grand_mean).astype(self.dtype)

    def row_means(self):
        return np.zeros(self.n)

    def to_dense(self):
        K = np.array(self.base.to_dense(), copy=True)
        _center_inplace(K, self.centering)
        return K

    @property
    def nbytes(self):
        return self.base.nbytes


def _center_inplace(A: np.ndarray, c: Centering) -> None:
    r = c.row_means.astype(A.dtype)
    A -= r[None, :]
    A -= r[:, None]
    A += A.dtype.type(c.grand_mean)


def center(op: KernelOperator, *, inplace: bool = False) -> tuple[KernelOperator, Centering]:
    """Centre an operator in feature space.

    Parameters
    ----------
    op : KernelOperator
        The uncentred kernel operator ``K``.
    inplace : bool, default=False
        If ``op`` is a :class:`DenseOperator` that owns its matrix, subtract the
        means from the stored matrix itself (O(n^2) once, no copy); a backend with a
        ``center_inplace`` method (the tiled one) centres its tiles. Otherwise, and
        for every other backend, ``op`` is wrapped in a :class:`CenteredOperator`.

    Returns
    -------
    centred : KernelOperator
        Operator for ``K~``.
    centering : Centering
        Statistics needed to centre new rows.
    """
    r = op.row_means()
    c = Centering(r, float(r.mean()))
    if inplace and isinstance(op, DenseOperator) and op.owned:
        _center_inplace(op.A, c)
        return DenseOperator(op.A, owned=True), c
    if inplace and hasattr(op, "center_inplace"):
        op.center_inplace(c)
        return op, c
    return CenteredOperator(op, c), c
