"""The fitted KPCA subspace as pre-image algorithms see it, and their result type.

Notation of docs/math.md ("The eigenproblem", "Pre-images and denoising"): training
objects ``x_1..x_n``, centred feature map ``phi~(x) = phi(x) - phi_bar`` with
``phi_bar`` the training mean of ``phi``, dual coefficients
``A = [alpha_1 .. alpha_k]`` (``alpha_l = v_l / sqrt(mu_l)``), so the unit directions
are ``f_l = sum_i alpha_li phi~(x_i)``; training scores ``S = [y_l(x_j)] = V sqrt(mu)``.

For scores ``y`` (one row of ``Y``) the point of feature space to invert is

    P phi(t) = phi_bar + sum_l y_l f_l = sum_i gamma_i phi(x_i),
    gamma = A y + (1 - 1^T A y) / n,                 (centred KPCA)
    gamma = A y                                      (uncentred KPCA)

so ``sum_i gamma_i = 1`` with centring: the mean is added back and, for the linear
kernel with all components, ``P phi(t) = t`` exactly. ``Gamma = Y A^T + c 1^T / n``
is never formed for all training rows at once: :meth:`Subspace.coefficients`
returns one column block. Everything else a pre-image needs follows from the
scores alone:

    ||P phi(t)||^2            = ||y||^2 + g + 2 y . (A^T r - g A^T 1)
    ||P phi(t) - phi(x_j)||^2 = ||y||^2 - 2 y . s_j + K~_jj,  K~_jj = K_jj - 2 r_j + g

(``r``, ``g``: row means and grand mean of the training Gram matrix; the terms
with ``g``/``r`` vanish for uncentred KPCA).

Robust KPCA (a :class:`~kpca.operators.Centering` with ``weights`` w, the centre
``theta = sum_i w_i phi(x_i)``, and ``scale`` s, directions
``f_l = sum_i alpha_li s_i (phi(x_i) - theta)``) is covered by the same formulas
with ``A -> S A``, ``1/n -> w``, ``r -> m = K w``, ``g -> ||theta||^2`` and training
scores ``s_j -> s_j / s_jj``: ``gamma = S A y + w (1 - 1^T S A y)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..kernels import Kernel
from ..operators import Centering

#: bytes of one (test rows x training rows) float64 block evaluated at once
BLOCK_BYTES = 32 * 2**20


@dataclass(frozen=True)
class PreimageInfo:
    """How a pre-image computation went, one entry per point.

    Attributes
    ----------
    method : str
        'ridge', 'fixed_point' or 'mds'.
    converged : ndarray of bool, shape (m,)
        Fixed point: the stopping rule was met within ``max_iter`` iterations.
        Closed-form methods (ridge, mds, and fixed point with the linear kernel):
        always True.
    n_iter : ndarray of int, shape (m,)
        Fixed-point iterations run for each point (0 for ridge and mds; 1 for
        the fixed point's single closed-form step with the linear kernel).
    restarted : ndarray of bool, shape (m,)
        Fixed point: the denominator ``sum_i gamma_i k(z, x_i)`` vanished (or the
        update was not finite) and the point was restarted from the training
        point nearest to ``P phi(t)`` in feature space.
    residual : ndarray of float, shape (m,) or None
        ``||phi(z) - P phi(t)||^2``, the feature-space error of the pre-image ``z``
        (the quantity every method tries to minimise); ``None`` when not computed.
    """

    method: str
    converged: np.ndarray
    n_iter: np.ndarray
    restarted: np.ndarray
    residual: np.ndarray | None = field(default=None)

    @classmethod
    def closed_form(cls, method: str, m: int, residual: np.ndarray | None = None) -> PreimageInfo:
        return cls(method, np.ones(m, bool), np.zeros(m, np.intp), np.zeros(m, bool), residual)


@dataclass(frozen=True)
class Subspace:
    """Everything a pre-image algorithm needs from a fitted KPCA model.

    Other estimators (robust, Nystroem, ...) build one from their own fitted
    pieces to reuse :func:`fixed_point_preimage` and :func:`mds_preimage`.

    Attributes
    ----------
    kernel : Kernel
        The resolved kernel.
    X_fit : ndarray or sparse matrix of shape (n, d)
        Training inputs (the expansion points ``x_i``).
    alphas : ndarray of shape (n, k)
        Dual coefficients ``alpha_l = v_l / sqrt(mu_l)`` (0 for a zero eigenvalue).
    scores_fit : ndarray of shape (n, k)
        Training scores ``y_l(x_j) = sqrt(mu_l) v_lj``.
    centering : Centering
        Training row means ``r`` and grand mean ``g`` (identity for uncentred KPCA).
    """

    kernel: Kernel
    X_fit: Any
    alphas: np.ndarray
    scores_fit: np.ndarray
    centering: Centering

    @classmethod
    def from_estimator(cls, est: Any, n_components: int | None = None) -> Subspace:
        """The subspace of the first ``n_components`` components of a fitted KernelPCA."""
        A = np.asarray(est._scaled_alphas, dtype=np.float64)
        w = np.asarray(est.eigenvalues_, dtype=np.float64)
        S = np.asarray(est.eigenvectors_, dtype=np.float64) * np.sqrt(np.maximum(w, 0.0))
        q = A.shape[1] if n_components is None else int(n_components)
        return cls(est.kernel_, est.X_fit_, A[:, :q], S[:, :q], est._centering)

    # ------------------------------------------------------------------ sizes
    @property
    def n(self) -> int:
        return self.alphas.shape[0]

    @property
    def k(self) -> int:
        return self.alphas.shape[1]

    @property
    def n_features(self) -> int:
        return self.X_fit.shape[1]

    def truncate(self, k: int) -> Subspace:
        """The subspace of the first ``k`` components."""
        return Subspace(self.kernel, self.X_fit, self.alphas[:, :k], self.scores_fit[:, :k],
                        self.centering)

    def column_blocks(self, m: int, block_bytes: int = BLOCK_BYTES):
        """``(j0, j1)`` ranges of training rows such that an (m, j1 - j0) float64
        block, two temporaries like it and the (j1 - j0, d) training rows
        themselves stay within ``block_bytes`` (at least 64 rows per block)."""
        cols = max(64, block_bytes // (8 * (3 * max(1, m) + max(1, self.n_features))))
        for j0 in range(0, self.n, cols):
            yield j0, min(self.n, j0 + cols)

    @staticmethod
    def row_chunk(block_bytes: int = BLOCK_BYTES) -> int:
        """Points processed together so that a block of the smallest width
        :meth:`column_blocks` uses (64 training rows) and two temporaries like it
        stay within ``block_bytes``."""
        return max(1, block_bytes // (3 * 8 * 64))

    def rows(self, j0: int, j1: int) -> np.ndarray:
        """Training inputs ``x_j0 .. x_{j1-1}`` as a dense float64 array."""
        Xb = self.X_fit[j0:j1]
        Xb = Xb.toarray() if sp.issparse(Xb) else Xb
        return np.asarray(Xb, dtype=np.float64)

    def take(self, idx: np.ndarray) -> np.ndarray:
        """Training inputs at row indices ``idx`` as a dense float64 array."""
        Xb = self.X_fit[np.asarray(idx, dtype=np.intp)]
        Xb = Xb.toarray() if sp.issparse(Xb) else Xb
        return np.asarray(Xb, dtype=np.float64)

    # ------------------------------------------------------------------ expansion
    @cached_property
    def _scale(self) -> np.ndarray | None:
        s = getattr(self.centering, "scale", None)
        return None if s is None else np.asarray(s, dtype=np.float64)

    @cached_property
    def _weights(self) -> np.ndarray:
        w = getattr(self.centering, "weights", None)
        return np.full(self.n, 1.0 / self.n) if w is None else np.asarray(w, dtype=np.float64)

    @cached_property
    def _SA(self) -> np.ndarray:
        """Dual coefficients of the directions on ``phi(x_i) - theta``: ``S A``, (n, k)."""
        return self.alphas if self._scale is None else self.alphas * self._scale[:, None]

    def offsets(self, Y: np.ndarray) -> np.ndarray:
        """``c = 1 - 1^T S A y`` for each row of ``Y`` (0 without centring), shape (m,)."""
        if not self.centering.enabled:
            return np.zeros(Y.shape[0])
        return 1.0 - Y @ self._SA.sum(axis=0)

    def coefficients(self, Y: np.ndarray, c: np.ndarray, j0: int, j1: int) -> np.ndarray:
        """Block ``Gamma[:, j0:j1]`` of the expansion coefficients, shape (m, j1 - j0).

        ``P phi(t_a) = sum_i Gamma[a, i] phi(x_i)``, ``Gamma = Y (SA)^T + c w^T``;
        ``c = self.offsets(Y)``.
        """
        G = Y @ self._SA[j0:j1].T
        if self.centering.enabled:
            G += np.outer(c, self._weights[j0:j1])
        return G

    def proj_sqnorm(self, Y: np.ndarray) -> np.ndarray:
        """``||P phi(t)||^2`` for each row of scores, shape (m,)."""
        out = np.einsum("ij,ij->i", Y, Y)
        if self.centering.enabled:
            r, g = self.centering.row_means, self.centering.grand_mean
            u = self._SA.T @ (np.asarray(r, dtype=np.float64) - g)  # <f_l, theta>
            out += g + 2.0 * (Y @ u)
        return out

    @cached_property
    def _point_scores(self) -> np.ndarray:
        """``<f_l, phi(x_j) - theta>``: the training scores, unscaled, shape (n, k)."""
        if self._scale is None:
            return self.scores_fit
        s = self._scale
        out = np.zeros_like(self.scores_fit)
        np.divide(self.scores_fit, s[:, None], out=out, where=s[:, None] > 0)
        return out

    def fit_sqnorms(self) -> np.ndarray:
        """``||phi(x_j) - theta||^2 = K_jj - 2 r_j + g`` for every training row, shape (n,).

        Rows with a zero ``scale`` (robust KPCA) get ``inf``: the training scores
        do not determine their distances, so they are never chosen as neighbours.
        """
        d = self.centering.train_diag(self.kernel.diag(self.X_fit))
        if self._scale is not None:
            d = np.where(self._scale > 0, d, np.inf)
        return d

    def feature_sqdist(self, Y: np.ndarray, j0: int, j1: int, fit_sqnorms: np.ndarray
                       ) -> np.ndarray:
        """``||P phi(t_a) - phi(x_j)||^2`` for training rows ``j0..j1-1``, shape (m, j1 - j0).

        ``= ||y||^2 - 2 y . s_j + ||phi(x_j) - theta||^2``, clipped at 0 (round-off).
        """
        D = Y @ self._point_scores[j0:j1].T
        D *= -2.0
        D += np.einsum("ij,ij->i", Y, Y)[:, None]
        D += fit_sqnorms[None, j0:j1]
        np.maximum(D, 0.0, out=D)
        return D

    def nearest(self, Y: np.ndarray, k: int, block_bytes: int = BLOCK_BYTES
                ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` training points nearest to ``P phi(t)`` in feature space.

        Evaluated in column blocks with a running top-k (memory O(m k + block));
        callers with many points pass them in chunks of :meth:`row_chunk`.

        Returns
        -------
        idx : ndarray of int, shape (m, k)
            Training row indices, nearest first.
        sqdist : ndarray of shape (m, k)
            Their feature-space squared distances ``||P phi(t) - phi(x_j)||^2``.
        """
        m = Y.shape[0]
        k = min(k, self.n)
        sqn = self.fit_sqnorms()
        best_d = np.full((m, 0), np.inf)
        best_i = np.zeros((m, 0), dtype=np.intp)
        for j0, j1 in self.column_blocks(m, block_bytes):
            D = np.hstack([best_d, self.feature_sqdist(Y, j0, j1, sqn)])
            I = np.hstack([best_i, np.broadcast_to(np.arange(j0, j1), (m, j1 - j0))])
            if D.shape[1] > k:
                part = np.argpartition(D, k - 1, axis=1)[:, :k]
                D = np.take_along_axis(D, part, axis=1)
                I = np.take_along_axis(I, part, axis=1)
            best_d, best_i = D, I
        order = np.argsort(best_d, axis=1, kind="stable")
        return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(best_d, order, axis=1)

    def residual(self, Z: np.ndarray, Y: np.ndarray, block_bytes: int = BLOCK_BYTES
                 ) -> np.ndarray:
        """``||phi(z_a) - P phi(t_a)||^2`` for pre-images ``Z`` of scores ``Y``, shape (m,).

        ``= k(z, z) - 2 sum_i gamma_i k(z, x_i) + ||P phi(t)||^2``, clipped at 0.
        """
        m = Z.shape[0]
        prep = self.kernel.prepare(self.X_fit, np.float64)
        cross = np.zeros(m)
        # row chunks too: a (rows, 64)-column block and its temporaries fit block_bytes
        rows = self.row_chunk(block_bytes)
        for a0 in range(0, m, rows):
            Za, Ya = Z[a0 : a0 + rows], Y[a0 : a0 + rows]
            c = self.offsets(Ya)
            for j0, j1 in self.column_blocks(Za.shape[0], block_bytes):
                Kb = np.asarray(self.kernel.block_prepared(Za, prep[j0:j1]), dtype=np.float64)
                cross[a0 : a0 + rows] += np.einsum("ij,ij->i", Kb,
                                                   self.coefficients(Ya, c, j0, j1))
        kzz = np.asarray(self.kernel.diag(Z), dtype=np.float64)
        return np.maximum(kzz - 2.0 * cross + self.proj_sqnorm(Y), 0.0)
