"""Spherical KPCA: PCA of the spatial signs around the kernel spatial median."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._base import extend_init
from .._kernel_pca import KernelPCA
from ..diagnostics import robust_scale
from ..operators import Centering
from ._base import RobustCentring, RobustKernelPCA, spatial_median


@dataclass(frozen=True)
class SpatialSigns(RobustCentring):
    """Centre on the kernel spatial median and scale each row to unit length: the
    spatial signs (docs/math.md, "Robust KPCA and diagnostics")."""

    robust_tol: float = 1e-7
    robust_max_iter: int = 500
    normalized = True

    def robust_centering(self, op, diag_k, plan, settings, rng, floor: float, noise: float
                         ) -> tuple[Centering, dict]:
        if settings.center:
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
        scale = 1.0 / np.maximum(dist, floor)
        fitted = {"n_iter_": n_iter, "converged_": ok, "center_weights_": g,
                  "distances_": dist}
        return Centering(m, c, enabled=bool(settings.center), weights=g, scale=scale), fitted

    def row_scale(self, model) -> np.ndarray:
        return 1.0 / np.maximum(model.distances_, model.subspace_.norm_floor)

    def score_variance(self, raw: np.ndarray, explained_variance: np.ndarray) -> np.ndarray:
        return robust_scale(np.asarray(raw, np.float64)) ** 2


@extend_init(KernelPCA, robust_tol=1e-7, robust_max_iter=500)
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
    remove_zero_eig, random_state, copy_X, n_jobs, center, memory_limit, precision,
    contamination
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
    >>> model = SphericalKernelPCA(n_components=2, kernel="rbf", gamma=5)
    >>> Z = model.fit_transform(X)  # projections of unit vectors (spatial signs)
    >>> Z.shape, bool((Z ** 2).sum(axis=1).max() <= 1)
    ((100, 2), True)
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _centring = SpatialSigns
