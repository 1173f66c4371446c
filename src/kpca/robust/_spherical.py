"""Spherical KPCA: PCA of the spatial signs around the kernel spatial median."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ..operators import Centering
from . import _diagnostics as diag
from ._base import RobustKernelPCA, spatial_median


class SphericalKernelPCA(RobustKernelPCA):
    """Spherical kernel PCA (docs/math.md, "Robust KPCA and diagnostics").

    The centre is the kernel spatial median ``theta = sum_i g_i phi(x_i)``
    (Weiszfeld's iteration in feature space); the components are those of the
    normalised kernel
    ``K*_ij = <phi_i - theta, phi_j - theta> / (||phi_i - theta|| ||phi_j - theta||)``,
    i.e. PCA of the spatial signs (Locantore et al. 1999). Every training point
    contributes a unit vector, so one point's influence is bounded whatever the
    kernel.

    New objects are treated as the training points are: ``transform(t)`` is the
    projection of ``(phi(t) - theta) / ||phi(t) - theta||`` (so ``transform`` of the
    training data equals ``fit_transform``). Distances to the centre are floored
    at ``sqrt(eps) * max_i sqrt(k(x_i, x_i))``. With ``kernel='precomputed'``
    ``transform`` needs ``k(t, t)``, which ``K_t`` does not hold, and raises;
    use :func:`kpca.robust.raw_projection` with ``kernel_diag``.

    Pre-images: ``inverse_transform(Y)`` with the learned map ('ridge',
    ``fit_inverse_transform=True``) takes ``transform``'s normalised scores;
    'fixed_point' and 'mds' take raw coordinates ``<phi(t) - theta, f_l>``
    (``kpca.robust.raw_projection(model, X)[0]``: the normalised scores have lost
    the distance to the centre). ``denoise`` passes each method what it needs.

    Parameters
    ----------
    n_components, kernel, gamma, degree, coef0, kernel_params, alpha,
    fit_inverse_transform, eigen_solver, tol, max_iter, iterated_power,
    remove_zero_eig, random_state, copy_X, n_jobs, center, memory_limit, precision
        As in :class:`kpca.KernelPCA` (the solvers, the tiled/matrix-free
        operator under ``memory_limit`` and the learned pre-image are shared).
        ``center=False`` uses ``theta = 0`` instead of a robust centre.
    robust_tol : float, default=1e-7
        Weiszfeld stops when the centre moves by at most ``robust_tol`` times the
        mean distance to it (in feature space).
    robust_max_iter : int, default=500
        Maximum Weiszfeld iterations (a ``ConvergenceWarning`` is issued if reached).

    Attributes
    ----------
    center_weights_ : ndarray of shape (n_samples,)
        ``g``: the spatial median is ``sum_i g_i phi(x_i)``.
    distances_ : ndarray of shape (n_samples,)
        ``||phi(x_i) - theta||``.
    score_variance_ : ndarray of shape (n_components,)
        Robust variance (squared normal-consistent MAD) of the raw training
        scores ``<phi(x_i) - theta, f_l>`` along each component: the scale of the
        score distance (:mod:`kpca.robust`).
    sd_cutoff_, od_cutoff_ : float
        Cut-offs of the score and orthogonal distances (97.5 %).
    n_iter_ : int
    converged_ : bool
    Also every attribute of :class:`kpca.KernelPCA` (``explained_variance_`` is
    ``eigenvalues_ / n``, the variance of the normalised training scores).

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from kpca import SphericalKernelPCA
    >>> X, _ = make_circles(100, factor=0.3, noise=0.05, random_state=0)
    >>> SphericalKernelPCA(n_components=2, kernel="rbf", gamma=5).fit_transform(X).shape
    (100, 2)
    """

    def __init__(
        self,
        n_components=None,
        *,
        kernel="linear",
        gamma=None,
        degree=3,
        coef0=1,
        kernel_params=None,
        alpha=1.0,
        fit_inverse_transform=False,
        eigen_solver="auto",
        tol=0,
        max_iter=None,
        iterated_power="auto",
        remove_zero_eig=False,
        random_state=None,
        copy_X=True,
        n_jobs=None,
        center=True,
        memory_limit=None,
        precision="auto",
        robust_tol=1e-7,
        robust_max_iter=500,
    ):
        super().__init__(
            n_components, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0,
            kernel_params=kernel_params, alpha=alpha,
            fit_inverse_transform=fit_inverse_transform, eigen_solver=eigen_solver, tol=tol,
            max_iter=max_iter, iterated_power=iterated_power, remove_zero_eig=remove_zero_eig,
            random_state=random_state, copy_X=copy_X, n_jobs=n_jobs, center=center,
            memory_limit=memory_limit, precision=precision,
        )
        self.robust_tol = robust_tol
        self.robust_max_iter = robust_max_iter

    def _robust_centering(self, op, diag_k, plan, rng) -> Centering:
        floor = self._dist_floor
        if self.center:
            g, m, c, dist, n_iter, ok = spatial_median(
                op, diag_k, tol=self.robust_tol, max_iter=self.robust_max_iter, floor=floor
            )
            if not ok:
                warnings.warn(
                    f"the kernel spatial median did not converge in {n_iter} iterations; "
                    "raise robust_max_iter or robust_tol.",
                    ConvergenceWarning,
                    stacklevel=6,
                )
        else:
            n = op.n
            g, m, c, n_iter, ok = None, np.zeros(n), 0.0, 0, True
            dist = np.sqrt(np.maximum(diag_k, 0.0))
        self.n_iter_, self.converged_ = n_iter, ok
        self.center_weights_ = g
        self.distances_ = dist
        scale = 1.0 / np.maximum(dist, floor)
        return Centering(m, c, enabled=bool(self.center), weights=g, scale=scale)

    def _fit(self, X) -> np.ndarray:
        Z = super()._fit(X)
        dist = np.maximum(self.distances_, self._dist_floor)
        raw = np.asarray(Z, np.float64) * dist[:, None]
        mad = diag.robust_scale(raw)
        self.score_variance_ = mad**2
        self._robust_statistics(raw, self.distances_**2)
        return Z

    def _project(self, X, A: np.ndarray) -> np.ndarray:
        """Projection of the normalised new points ``(phi(t) - theta) / ||phi(t) - theta||``."""
        if self._is_precomputed():
            raise ValueError(
                "SphericalKernelPCA.transform with kernel='precomputed' needs k(t, t) to "
                "normalise new objects; use kpca.robust.raw_projection(model, K_t, "
                "kernel_diag=...) and divide by the square root of its second output."
            )
        # X was validated by transform; raw_projection validates again (cheap)
        Y, sq = diag.raw_projection(self, X, A)
        Y /= np.maximum(np.sqrt(sq), self._dist_floor)[:, None]
        return Y.astype(A.dtype, copy=False)

    # ------------------------------------------------------------------ pre-images
    def _preimage_scores(self, X, A: np.ndarray) -> np.ndarray:
        """Coordinates ``<phi(t) - theta, f_l>`` of new points (not normalised).

        ``denoise`` with 'fixed_point' / 'mds' inverts ``theta + sum_l y_l f_l``, the
        projection of ``phi(t)`` itself on the spherical subspace; the learned
        ('ridge') map was fitted on ``transform``'s normalised scores and gets those.
        """
        if getattr(self, "_ridge_denoise", False):
            return self._project(X, A)
        Y, _ = diag.raw_projection(self, X, A)
        return Y.astype(A.dtype, copy=False)

    def denoise(self, X, **params):
        """Project X on the first spherical components, then take the pre-image.

        As :meth:`kpca.KernelPCA.denoise`. 'fixed_point' and 'mds' invert the
        projection ``theta + sum_l <phi(t) - theta, f_l> f_l`` of ``phi(t)`` on the
        affine subspace through the spatial median; 'ridge' applies the learned map
        to ``transform(X)``.
        """
        method = params.get("method", "auto")
        if method == "auto":
            check_is_fitted(self)
            method = self._auto_method()
        self._ridge_denoise = method == "ridge"
        try:
            return super().denoise(X, **params)
        finally:
            self.__dict__.pop("_ridge_denoise", None)
