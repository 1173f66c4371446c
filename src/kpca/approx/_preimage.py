"""Pre-images for Nyström kernel PCA: the fitted subspace expanded over the landmarks.

The Nyström feature map ``phi^(x) = W^T k(Z, x)`` (``W = K_mm^{-1/2}``, ``m x q``)
gives the coordinates of the orthogonal projection of ``phi(x)`` onto
``span{phi(z_1) .. phi(z_m)}`` in the orthonormal basis ``e = Phi_Z W``. So every
point Nyström KPCA works with is a combination of landmark images:

    theta  = Pi phi_bar = sum_j w_j phi(z_j),      w = W W^T mu_f
    f_l    = e U_l      = sum_j P_jl phi(z_j),     P = W U   (m x k)
    P phi(t) = theta + sum_l y_l f_l = sum_j (w + P y)_j phi(z_j)

with ``mu_f`` the training mean of ``k(Z, x)`` (``mean_``) and ``y`` the scores of
``transform``. The pre-image algorithms of :mod:`kpca.preimage` (fixed point, MDS)
only need such an expansion and a few inner products, all available in closed form:

    ||P phi(t)||^2              = mu_f.w + 2 y.(P^T mu_f) + ||y||^2
    <P phi(t) - theta, phi(z_j)> = y . s_j,    s_j = (k(z_j, Z) - mu_f) P  (= transform(z_j))
    ||phi(z_j) - theta||^2      = k(z_j, z_j) - 2 k(z_j, Z).w + mu_f.w

so :class:`LandmarkSubspace` (a :class:`kpca.preimage.Subspace` whose expansion
points are the landmarks) plugs into them unchanged.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ..kernels import RBF, Linear, Polynomial
from ..operators import Centering
from ..preimage import (
    PreimageInfo,
    Subspace,
    fixed_point_preimage,
    mds_preimage,
)
from ..preimage._fixed_point import check_fixed_point_kernel
from ..preimage._mds import check_mds_kernel

#: values of ``method`` accepted by ``NystromKernelPCA.inverse_transform`` / ``denoise``
METHODS = ("auto", "fixed_point", "mds")


@dataclass(frozen=True)
class LandmarkSubspace(Subspace):
    """The subspace of a fitted :class:`NystromKernelPCA`, expanded over its landmarks.

    The fields of :class:`kpca.preimage.Subspace` hold: ``X_fit`` the landmarks
    (m, d), ``alphas`` the coefficients ``P`` (m, k), ``scores_fit`` the landmarks'
    scores ``s_j`` (m, k), ``centering`` ``K_mm w`` and ``mu_f . w``.

    Attributes
    ----------
    mean_coef : ndarray of shape (m,)
        ``w``: the centre ``theta = sum_j w_j phi(z_j)``.
    mean_features : ndarray of shape (m,)
        ``mu_f``: training mean of ``k(Z, x)``.
    landmark_kernel : ndarray of shape (m, m)
        ``K_mm``.
    """

    mean_coef: np.ndarray = field(default=None)
    mean_features: np.ndarray = field(default=None)
    landmark_kernel: np.ndarray = field(default=None)

    @classmethod
    def from_nystrom(cls, est, n_components: int | None = None) -> LandmarkSubspace:
        """The subspace of the first ``n_components`` components of a fitted Nyström model."""
        k = est.n_components_ if n_components is None else int(n_components)
        Z = np.asarray(est.landmarks_, dtype=np.float64)
        P = np.asarray(est._projection[:, :k], dtype=np.float64)
        mu = np.asarray(est.mean_, dtype=np.float64)
        W = np.asarray(est.normalization_, dtype=np.float64)
        Kmm = np.asarray(est.kernel_.block(Z), dtype=np.float64)
        w = W @ (W.T @ mu)
        S = (Kmm - mu[None, :]) @ P
        centering = Centering(Kmm @ w, float(mu @ w), enabled=True, weights=w)
        return cls(est.kernel_, Z, P, S, centering, mean_coef=w, mean_features=mu,
                   landmark_kernel=Kmm)

    def truncate(self, k: int) -> LandmarkSubspace:
        return LandmarkSubspace(self.kernel, self.X_fit, self.alphas[:, :k],
                                self.scores_fit[:, :k], self.centering,
                                mean_coef=self.mean_coef, mean_features=self.mean_features,
                                landmark_kernel=self.landmark_kernel)

    # the expansion gamma = w + P y (no sum-to-one offset)
    def offsets(self, Y: np.ndarray) -> np.ndarray:
        return np.zeros(Y.shape[0])

    def coefficients(self, Y: np.ndarray, c: np.ndarray, j0: int, j1: int) -> np.ndarray:
        G = Y @ self.alphas[j0:j1].T
        G += self.mean_coef[None, j0:j1]
        return G

    def proj_sqnorm(self, Y: np.ndarray) -> np.ndarray:
        u = self.alphas.T @ self.mean_features  # <f_l, theta> = P_l . mu_f
        return (np.einsum("ij,ij->i", Y, Y) + 2.0 * (Y @ u)
                + float(self.mean_features @ self.mean_coef))

    def fit_sqnorms(self) -> np.ndarray:
        return self.centering.train_diag(self.kernel.diag(self.X_fit))


def _check_options(method, n_neighbors, max_iter, tol) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}.")
    for name, v, lo in (("n_neighbors", n_neighbors, 1), ("max_iter", max_iter, 1)):
        if not (isinstance(v, Integral) and not isinstance(v, bool) and v >= lo):
            raise ValueError(f"{name} must be an integer >= {lo}; got {v!r}.")
    if not (isinstance(tol, Real) and not isinstance(tol, bool) and np.isfinite(tol)
            and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0; got {tol!r}.")


def _has_preimage(est) -> bool:
    """Pre-images apply: the (fitted, else requested) kernel is rbf, poly or linear."""
    kernel = getattr(est, "kernel_", None)
    if kernel is not None:
        return isinstance(kernel, (RBF, Polynomial, Linear))
    k = getattr(est, "kernel", None)
    return isinstance(k, (RBF, Polynomial, Linear)) or (
        isinstance(k, str) and k in ("rbf", "poly", "polynomial", "linear"))


class LandmarkPreimageMixin:
    """``inverse_transform`` and ``denoise`` for :class:`NystromKernelPCA`.

    Both invert ``P phi(t) = theta + sum_l y_l f_l``, expanded over the landmarks
    (:class:`LandmarkSubspace`), with the algorithms of :mod:`kpca.preimage`: the
    fixed-point iteration (Mika et al. 1999; rbf, poly, linear kernels) or the
    distance-based closed form (Kwok & Tsang 2003; its neighbours are the
    landmarks nearest to ``P phi(t)`` in feature space). No learned ('ridge')
    pre-image: it would need an ``n x n`` regression over the training rows.
    Both methods exist only for the kernels they support (``hasattr`` is False
    otherwise).
    """

    def _method(self, method: str) -> str:
        kernel = self.kernel_
        if method == "auto":
            if isinstance(kernel, (RBF, Linear)):
                return "fixed_point"
            if isinstance(kernel, Polynomial):
                return "mds"
            name = getattr(kernel, "name", "") or type(kernel).__name__
            raise ValueError(
                f"{type(self).__name__} has pre-images for the 'rbf', 'poly' and 'linear' "
                f"kernels only (fixed point / MDS); got kernel {name!r}."
            )
        if method == "fixed_point":
            check_fixed_point_kernel(kernel)
        else:
            check_mds_kernel(kernel)
        return method

    def _check_scores(self, X) -> np.ndarray:
        Y = np.asarray(X, dtype=np.float64)
        k = self.n_components_
        if Y.ndim != 2 or not 1 <= Y.shape[1] <= k:
            raise ValueError(
                f"inverse_transform expects scores of shape (n_samples, q) with 1 <= q <= {k} "
                f"(the fitted n_components_); got shape {Y.shape}."
            )
        if not np.all(np.isfinite(Y)):
            raise ValueError("inverse_transform: the scores contain NaN or infinity.")
        return Y

    @available_if(_has_preimage)
    def inverse_transform(self, X, *, method="auto", n_neighbors=10, max_iter=100, tol=1e-4,
                          return_info=False):
        """Map scores back to input space (pre-images of ``P phi(t)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, q), 1 <= q <= n_components_
            Scores (``transform`` output); with fewer columns than components, the
            projection on the first ``q`` components is inverted.
        method : {'auto', 'fixed_point', 'mds'}, default='auto'
            'auto': 'fixed_point' for the rbf and linear kernels, 'mds' for poly.
            'fixed_point' starts from the 'mds' pre-image.
        n_neighbors : int, default=10
            Landmarks used by 'mds' (nearest to ``P phi(t)`` in feature space).
        max_iter : int, default=100
            Maximum fixed-point iterations per point.
        tol : float, default=1e-4
            Fixed-point stopping rule (relative to the RBF width / data spread).
        return_info : bool, default=False
            Also return a :class:`kpca.preimage.PreimageInfo` with the feature-space
            residual ``||phi(z) - P phi(t)||^2`` of each pre-image.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features_in_)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        check_is_fitted(self)
        _check_options(method, n_neighbors, max_iter, tol)
        method = self._method(method)
        Y = self._check_scores(X)
        space = LandmarkSubspace.from_nystrom(self, Y.shape[1])
        Z0 = mds_preimage(space, Y, n_neighbors=n_neighbors)[0] if method == "fixed_point" \
            else None
        return self._solve(space, Y, method, Z0, n_neighbors, max_iter, tol, return_info)

    @available_if(_has_preimage)
    def denoise(self, X, *, n_components=None, method="auto", n_neighbors=10, max_iter=100,
                tol=1e-4, return_info=False):
        """Project X on the first components, then take the pre-image.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features_in_)
            Noisy inputs ('fixed_point' starts from them).
        n_components : int or None, default=None
            Components to project on (``None``: all fitted ones).
        method, n_neighbors, max_iter, tol, return_info
            As in :meth:`inverse_transform`.

        Returns
        -------
        X_denoised : ndarray of shape (n_samples, n_features_in_)
        info : PreimageInfo
            Only with ``return_info=True``.
        """
        check_is_fitted(self)
        _check_options(method, n_neighbors, max_iter, tol)
        k = self.n_components_
        q = k if n_components is None else n_components
        if not (isinstance(q, Integral) and not isinstance(q, bool) and 1 <= q <= k):
            raise ValueError(
                f"n_components must be None or an integer in [1, {k}] (the fitted number "
                f"of components); got {n_components!r}."
            )
        method = self._method(method)
        Y = np.asarray(self.transform(X), dtype=np.float64)[:, : int(q)]
        space = LandmarkSubspace.from_nystrom(self, int(q))
        Z0 = None
        if method == "fixed_point":
            Z0 = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return self._solve(space, Y, method, Z0, n_neighbors, max_iter, tol, return_info)

    def _solve(self, space, Y, method, Z0, n_neighbors, max_iter, tol, return_info):
        if method == "fixed_point":
            Z, info = fixed_point_preimage(space, Y, Z0, max_iter=max_iter, tol=tol)
            bad = int((~info.converged).sum())
            if bad:
                warnings.warn(
                    f"fixed-point pre-image: {bad} of {Y.shape[0]} point(s) did not converge "
                    f"within max_iter={max_iter} iterations.", ConvergenceWarning, stacklevel=3)
        else:
            Z, info = mds_preimage(space, Y, n_neighbors=n_neighbors)
        out = Z.astype(self.components_.dtype, copy=False)
        if not return_info:
            return out
        return out, PreimageInfo(info.method, info.converged, info.n_iter, info.restarted,
                                 space.residual(Z, Y))
