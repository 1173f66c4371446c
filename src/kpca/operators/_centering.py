"""Centring in feature space (docs/math.md, "Centring in feature space"), as a wrapper
around any operator.

With ``r = K 1 / n`` (row means of the training Gram matrix) and ``g = mean(r)``:

* training: ``K~ = K - 1 r^T - r 1^T + g 1 1^T``;
* new rows: ``K~_t = K_t - 1 r^T - (K_t 1 / n) 1^T + g`` -- the TRAINING mean of
  ``phi`` is subtracted, so ``transform`` of one row equals the same row of a batch.

Only ``r`` and ``g`` are stored; ``K~`` is never copied.

Generalisation (robust KPCA: docs/math.md, "Robust KPCA and diagnostics"). The
centre may be any weighted mean ``theta = sum_i g_i phi(x_i)`` (``sum g = 1``;
``weights=None`` is ``g = 1/n``), and the training rows may be rescaled by ``s``
(``scale``). With ``m = K g`` (stored as ``row_means``) and ``c = g^T K g`` (stored
as ``grand_mean``):

* training operator: ``K* = S (K - 1 m^T - m 1^T + c 1 1^T) S``, ``S = diag(s)``;
  ``K*_ij = <s_i (phi_i - theta), s_j (phi_j - theta)>``;
* new rows (not rescaled themselves; the columns are the rescaled training rows):
  ``K~_t = (K_t - 1 m^T - (K_t g) 1^T + c) S``, since
  ``<phi(t) - theta, phi(x_j) - theta> = K_t[t, j] - (K_t g)_t - m_j + c``;
* ``||phi(t) - theta||^2 = k(t, t) - 2 K_t g + c``.

With ``g = 1/n`` and ``s = 1`` these are exactly the formulas above. New rows are
projected by the fitted model's :class:`kpca.subspace.FittedSubspace`, which folds
these statistics into its coefficients (docs/math.md, "The fitted subspace").
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
        ``r = K 1 / n`` of the training Gram matrix (float64); with ``weights``,
        the weighted row means ``m = K g`` (``m_i = <phi(x_i), theta>``).
    grand_mean : float
        ``g = 1^T K 1 / n^2``; with ``weights``, ``g^T K g = ||theta||^2``.
    enabled : bool
        False for uncentred KPCA: no centre is subtracted (``theta = 0``); every
        method below is then the identity, up to ``scale``.
    weights : ndarray of shape (n,) or None, default=None
        Expansion ``g`` of the centre ``theta = sum_i g_i phi(x_i)`` (sums to 1).
        ``None``: the training mean, ``g = 1/n``.
    scale : ndarray of shape (n,) or None, default=None
        Per-training-row factors ``s`` of the operator ``S K~ S`` (robust KPCA:
        ``1 / ||phi(x_i) - theta||`` for spherical KPCA, the weights ``w_i`` for
        weighted KPCA). ``None``: no rescaling.
    """

    row_means: np.ndarray
    grand_mean: float
    enabled: bool = True
    weights: np.ndarray | None = None
    scale: np.ndarray | None = None

    @classmethod
    def none(cls, n: int) -> Centering:
        """The identity centring (``center=False``)."""
        return cls(np.zeros(n), 0.0, enabled=False)

    def train_diag(self, diag_k: np.ndarray, *, scaled: bool = False) -> np.ndarray:
        """Diagonal of the centred training operator from ``k(x_i, x_i)``, shape (n,).

        ``||phi(x_i) - theta||^2 = k(x_i, x_i) - 2 m_i + ||theta||^2`` (float64), times
        ``s_i^2`` when ``scaled`` (the diagonal of ``S K~ S``).
        """
        d = np.asarray(diag_k, dtype=np.float64)
        if self.enabled:
            d = d - 2.0 * self.row_means + self.grand_mean
        if scaled and self.scale is not None:
            d = d * self.scale**2
        return d



class CenteredOperator(KernelOperator):
    """``K~ = H K H`` applied through ``K``'s own ``matmat`` (no n x n copy)."""

    def __init__(self, base: KernelOperator, centering: Centering):
        self.base = base
        self.centering = centering
        self.shape = base.shape
        self.dtype = base.dtype

    @property
    def threads(self) -> int | None:  # type: ignore[override]
        return self.base.threads

    def matmat(self, V):
        V = np.asarray(V)
        s = self.centering.scale
        if s is not None:
            V = V * s.astype(V.dtype).reshape((-1,) + (1,) * (V.ndim - 1))
        out = self.base.matmat(V)
        if self.centering.enabled:
            r = self.centering.row_means
            g = self.centering.grand_mean
            colsum = V.sum(axis=0, dtype=np.float64)  # 1^T V
            rV = r @ V  # r^T V
            dt = out.dtype
            out -= rV.astype(dt)[None, :]
            out -= np.outer(r, colsum).astype(dt)
            out += (g * colsum).astype(dt)[None, :]
        if s is not None:
            out *= s.astype(out.dtype).reshape((-1,) + (1,) * (out.ndim - 1))
        return out

    def diag(self):
        return self.centering.train_diag(self.base.diag(), scaled=True).astype(self.dtype)

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
    if c.enabled:
        r = c.row_means.astype(A.dtype)
        A -= r[None, :]
        A -= r[:, None]
        A += A.dtype.type(c.grand_mean)
    if c.scale is not None:
        s = c.scale.astype(A.dtype)
        A *= s[None, :]
        A *= s[:, None]


def center(
    op: KernelOperator, *, inplace: bool = False, centering: Centering | None = None
) -> tuple[KernelOperator, Centering]:
    """Centre an operator in feature space.

    Parameters
    ----------
    op : KernelOperator
        The uncentred kernel operator ``K``.
    inplace : bool, default=False
        If ``op`` is a :class:`DenseOperator` that owns its matrix, subtract the
        means from the stored matrix itself (O(n^2) once, no copy); a backend with a
        ``center_inplace`` method (the tiled one) centres its tiles. Otherwise, and
        for every other backend, ``op`` is wrapped in a :class:`CenteredOperator` (a
        device operator gives its own ``centered_view``, products on its device).
    centering : Centering, default=None
        Apply this centring (e.g. a weighted centre and row scaling, robust KPCA)
        instead of computing the one of the training mean from ``op``.

    Returns
    -------
    centred : KernelOperator
        Operator for ``K~``.
    centering : Centering
        Statistics needed to centre new rows.
    """
    if centering is None:
        r = op.row_means()
        c = Centering(r, float(r.mean()))
    else:
        c = centering
    if inplace and isinstance(op, DenseOperator) and op.owned:
        _center_inplace(op.A, c)
        return DenseOperator(op.A, owned=True), c
    if inplace and hasattr(op, "center_inplace"):
        op.center_inplace(c)
        return op, c
    if hasattr(op, "centered_view"):  # a device operator: its products stay there
        return op.centered_view(c), c
    return CenteredOperator(op, c), c
