"""The value :class:`FittedSubspace` and its algebra (docs/math.md, "The fitted subspace").

The closed forms read from the value (offsets, squared norms, score and orthogonal
distances, the expansion of a projection) are its methods; the engines that evaluate
it on rows (NumPy in cache-sized pieces, a device, float64 row blocks) are in
:mod:`._engines`, and the pre-image geometry (neighbour search, residuals) is the
pre-image layer's (:class:`kpca.preimage.HostSpace`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..kernels import FourierFeatures, Kernel, Precomputed
from ..operators import Centering
from . import _engines


@dataclass(frozen=True, eq=False)
class FittedSubspace:
    """Centre and unit directions of a fitted model, expanded over ``m`` points.

    Attributes
    ----------
    kernel : Kernel
        The resolved kernel (for random features, the kernel they approximate).
    basis : ndarray, sparse matrix, 1-D object array or None
        The expansion points ``z_j``, shape (m, d): training rows (exact and
        robust KPCA; for ``kernel='precomputed'`` the training kernel matrix),
        landmarks (Nyström), or ``None`` for an explicit feature map.
    coef : ndarray of shape (m, k)
        ``C``: ``f_l = sum_j C_jl phi(z_j)`` (float64).
    center : ndarray of shape (m,) or None
        ``g``: ``theta = sum_j g_j phi(z_j)``; ``None`` for ``theta = 0`` (uncentred).
    center_products : ndarray of shape (m,)
        ``K_ZZ g`` (``<phi(z_j), theta>``).
    center_sqnorm : float
        ``||theta||^2 = g^T K_ZZ g``.
    score_variance : ndarray of shape (k,)
        Variance ``lambda_l`` of the training scores along ``f_l``: the scale of the
        score distance.
    basis_scores : ndarray of shape (m, k) or None
        ``<phi(z_j) - theta, f_l>``: the raw scores of the expansion points (the
        pre-images' neighbour search); ``None`` for an explicit feature map.
    features : FourierFeatures or None
        The explicit feature map ``z(t)`` (random features), else ``None``.
    normalize : bool, default=False
        ``transform`` divides the scores by ``||phi(t) - theta||`` (spherical KPCA).
    norm_floor : float, default=0.0
        Floor of ``||phi(t) - theta||`` when normalising.
    od_noise : float, default=0.0
        Squared orthogonal distances at or below this round-off level are 0.
    rows_dtype : str, default='float64'
        Dtype in which kernel rows ``k(t, Z)`` are evaluated.
    """

    kernel: Kernel
    basis: Any
    coef: np.ndarray
    center: np.ndarray | None
    center_products: np.ndarray
    center_sqnorm: float
    score_variance: np.ndarray
    basis_scores: np.ndarray | None = None
    features: FourierFeatures | None = None
    normalize: bool = False
    norm_floor: float = 0.0
    od_noise: float = 0.0
    rows_dtype: str = "float64"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dual(
        cls,
        kernel: Kernel,
        basis: Any,
        alphas: np.ndarray,
        centering: Centering,
        *,
        basis_scores: np.ndarray,
        score_variance: np.ndarray,
        **options: Any,
    ) -> FittedSubspace:
        """From dual coefficients ``A`` (n, k) on the centred, scaled training rows.

        ``f_l = sum_i A_il s_i (phi(x_i) - theta)`` with the centring's weights ``g``
        and scales ``s``, i.e. ``C = S A - g (1^T S A)``.
        """
        A = np.asarray(alphas, dtype=np.float64)
        if centering.scale is not None:
            A = A * np.asarray(centering.scale, dtype=np.float64)[:, None]
        n = A.shape[0]
        if centering.enabled:
            g = (np.full(n, 1.0 / n) if centering.weights is None
                 else np.asarray(centering.weights, dtype=np.float64))
            C = A - np.outer(g, A.sum(axis=0))
            m = np.asarray(centering.row_means, dtype=np.float64)
            c = float(centering.grand_mean)
        else:
            C, g, m, c = A, None, np.zeros(n), 0.0
        return cls(kernel, basis, C, g, m, c, np.asarray(score_variance, dtype=np.float64),
                   basis_scores=np.asarray(basis_scores, dtype=np.float64), **options)

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        """Number of expansion points ``m``."""
        return self.coef.shape[0]

    @property
    def k(self) -> int:
        """Number of directions."""
        return self.coef.shape[1]

    @property
    def n_features(self) -> int:
        """Input dimension of the expansion points."""
        return self.basis.shape[1]

    @property
    def precomputed(self) -> bool:
        return isinstance(self.kernel, Precomputed)

    @property
    def offset(self) -> np.ndarray:
        """``b = <theta, f_l> = C^T K_ZZ g``, shape (k,)."""
        return self.coef.T @ self.center_products

    def truncate(self, q: int) -> FittedSubspace:
        """The subspace of the first ``q`` directions."""
        scores = None if self.basis_scores is None else self.basis_scores[:, :q]
        return replace(self, coef=self.coef[:, :q], score_variance=self.score_variance[:q],
                       basis_scores=scores)

    # ------------------------------------------------------------------ kernel rows
    def prepare(self, dtype: Any = None) -> Any:
        """The kernel's column-side state of the expansion points (see ``Kernel.prepare``)."""
        if self.features is not None or self.precomputed:
            return None
        return self.kernel.prepare(self.basis, np.dtype(dtype or self.rows_dtype))

    def kernel_rows(self, Xb: Any, prep: Any = None) -> np.ndarray:
        """``k(t, z_j)`` for a block of rows, shape (b, m), in :attr:`rows_dtype`."""
        if self.features is not None:
            return self.features(Xb)
        if self.precomputed:
            return Xb.toarray() if sp.issparse(Xb) else np.asarray(Xb)
        if sp.issparse(Xb) and sp.issparse(self.basis) and Xb.dtype != self.basis.dtype:
            Xb = Xb.astype(self.basis.dtype)  # the kernel's blocks need one dtype
        if sp.issparse(Xb) and not sp.issparse(self.basis):
            # prepared states are for rows of the basis' kind (dense landmarks)
            return np.asarray(self.kernel.block(Xb, self.basis.astype(Xb.dtype)))
        if prep is None:
            prep = self.prepare()
        return np.asarray(self.kernel.block_prepared(Xb, prep))

    def kernel_diag(self, X: Any) -> np.ndarray:
        """``k(t, t)`` per row (float64); needs vectors (not a precomputed kernel)."""
        if self.features is not None:
            F = np.asarray(self.features(X), dtype=np.float64)
            return np.einsum("ij,ij->i", F, F)
        if self.precomputed:
            raise ValueError(
                "kernel_diag: with kernel='precomputed', pass k(t, t) for each new object "
                "(the kernel diagonal is not part of the cross-kernel matrix)."
            )
        return np.asarray(self.kernel.diag(X), dtype=np.float64)

    def sqnorms(self, Kt: np.ndarray, diag_t: np.ndarray) -> np.ndarray:
        """``||phi(t) - theta||^2`` from kernel rows and ``k(t, t)``, clipped at 0."""
        d = np.asarray(diag_t, dtype=np.float64)
        if self.center is not None:
            d = d - 2.0 * np.asarray(Kt @ self.center.astype(Kt.dtype), dtype=np.float64)
            d += self.center_sqnorm
        return np.maximum(d, 0.0)

    def basis_sqnorms(self, diag: np.ndarray | None = None) -> np.ndarray:
        """``||phi(z_j) - theta||^2`` of the expansion points, shape (m,), from their
        kernel diagonal ``k(z_j, z_j)`` (computed when not given)."""
        if diag is not None:
            d = np.asarray(diag, dtype=np.float64)
        elif self.precomputed:
            d = np.asarray(self.basis.diagonal(), dtype=np.float64)
        else:
            d = self.kernel_diag(self.basis)
        if self.center is not None:
            d = d - 2.0 * self.center_products + self.center_sqnorm
        return np.maximum(d, 0.0)

    # ------------------------------------------------------------------ projections
    def transform(self, X: Any, *, n_jobs: int | None = None, dtype: Any = None,
                  block_bytes: int | None = None) -> np.ndarray:
        """Scores of the rows of ``X`` (validated), shape (m, k), in ``dtype`` (default:
        X's float dtype).

        Raw scores ``y_l(t)``, divided by ``||phi(t) - theta||`` when
        :attr:`normalize`. Dense rows of a vector kernel are evaluated and multiplied
        in cache-sized pieces (``fused_rows x fused_cols``, settings), each piece's product in
        the precision of the kernel values (:attr:`rows_dtype`) and summed in
        ``dtype``; other inputs in row blocks of at most ``block_bytes`` of kernel
        rows (default: the setting ``transform_block_bytes``). Either way on ``n_jobs``
        threads (one BLAS thread each).
        """
        return _engines.transform(self, X, n_jobs=n_jobs, dtype=dtype, block_bytes=block_bytes)

    def transform_device(self, X: Any, xp: Any, *, dtype: Any,
                         block_bytes: int | None = None, raw: bool = False) -> Any:
        """Scores of the rows of an Array API array ``X``, computed on its device.

        The expansion points, coefficients and offset go to the device once per call;
        kernel rows are evaluated (in :attr:`rows_dtype`) and multiplied in row blocks
        of at most ``block_bytes`` (default: the setting ``transform_block_bytes``).
        Raw scores, divided by ``||phi(t) - theta||`` when :attr:`normalize` and not
        ``raw`` (``k(t, Z) g`` rides on the same product as one more column), of a vector
        kernel whose :meth:`~kpca.kernels.Kernel.block` takes ``xp``; the caller checks
        that. ``raw=True``: the raw scores ``<phi(t) - theta, f_l>`` whatever
        :attr:`normalize` (the pre-images' coordinates).

        Returns
        -------
        array of shape (m, k), namespace ``xp``, in ``dtype`` (a NumPy float dtype)
        """
        return _engines.transform_device(self, X, xp, dtype=dtype, block_bytes=block_bytes,
                                         raw=raw)

    def raw_projection(self, X: Any, *, kernel_diag: Any = None,
                       block_bytes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Raw scores and squared distances to the centre, in float64, in one pass.

        Parameters
        ----------
        X : validated array of shape (m, d)
            For a precomputed kernel, the kernel against the training objects.
        kernel_diag : array-like of shape (m,), default=None
            ``k(t, t)``; needed for a precomputed kernel.
        block_bytes : int, default=None
            Kernel rows (float64) evaluated at once (default: the setting
            ``preimage_block_bytes``).

        Returns
        -------
        Y : ndarray of shape (m, k)
            ``y_l(t) = <phi(t) - theta, f_l>``.
        sqnorm : ndarray of shape (m,)
            ``||phi(t) - theta||^2`` (clipped at 0).
        """
        return _engines.raw_projection(self, X, kernel_diag=kernel_diag,
                                       block_bytes=block_bytes)

    def distances(self, Y: np.ndarray, sqnorm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score and orthogonal distances from raw scores and squared norms.

        ``SD = sqrt(sum_l y_l^2 / lambda_l)`` over the directions with
        ``lambda_l > 0``; ``OD = sqrt(||phi - theta||^2 - sum_l y_l^2)``, 0 at the
        round-off level :attr:`od_noise`.
        """
        lam = self.score_variance
        keep = lam > 0
        sd = np.sqrt(np.sum(Y[:, keep] ** 2 / lam[keep], axis=1))
        od2 = sqnorm - np.sum(Y**2, axis=1)
        od = np.sqrt(np.where(od2 > self.od_noise, od2, 0.0))
        return sd, od

    # ------------------------------------------------------------------ the projection's expansion
    # closed forms of P phi(t) = theta + sum_l y_l f_l from its scores alone: what the
    # pre-images read (their search and residuals: kpca.preimage.HostSpace)
    def coefficients(self, Y: np.ndarray, j0: int, j1: int) -> np.ndarray:
        """Block ``G[:, j0:j1]`` of ``theta + sum_l y_l f_l = sum_j G_j phi(z_j)``."""
        G = Y @ self.coef[j0:j1].T
        if self.center is not None:
            G += self.center[None, j0:j1]
        return G

    def proj_sqnorm(self, Y: np.ndarray) -> np.ndarray:
        """``||theta + sum_l y_l f_l||^2`` per row of scores, shape (m,)."""
        out = np.einsum("ij,ij->i", Y, Y)
        if self.center is not None:
            out += self.center_sqnorm + 2.0 * (Y @ self.offset)
        return out

    def feature_sqdist(self, Y: np.ndarray, j0: int, j1: int, sqnorms: np.ndarray) -> np.ndarray:
        """``||P phi(t_a) - phi(z_j)||^2`` for points ``j0..j1-1``, shape (m, j1 - j0).

        ``= ||y||^2 - 2 y . s_j + ||phi(z_j) - theta||^2`` (``s_j`` the points' raw
        scores), clipped at 0 (round-off).
        """
        D = Y @ self.basis_scores[j0:j1].T
        D *= -2.0
        D += np.einsum("ij,ij->i", Y, Y)[:, None]
        D += sqnorms[None, j0:j1]
        np.maximum(D, 0.0, out=D)
        return D
