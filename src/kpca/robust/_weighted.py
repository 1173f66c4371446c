"""Weighted KPCA: Campbell-type M-estimation of the feature-space covariance."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .._base import extend_init
from .._fit import solve_centred
from .._kernel_pca import KernelPCA
from ..diagnostics import MAD_SCALE, robust_scale
from ..operators import Centering, center, host_matmat
from ._base import RobustCentring, RobustKernelPCA, spatial_median

INITS = ("spherical", "uniform")
DISTANCES = ("full", "score")


def _od_term(od2: np.ndarray, noise: float) -> np.ndarray | None:
    """Squared positive robust z-score of ``OD^(2/3)`` (Wilson-Hilferty, as in ROBPCA).

    Median and MAD are taken over all training points (both have a 50 % breakdown
    point). Squared orthogonal distances at or below ``noise`` (the round-off level
    of ``||phi - theta||^2 - sum_l y_l^2``) are treated as 0, and a MAD at the
    round-off level gives no orthogonal term at all (``None``): otherwise, when the subspace
    holds the whole data (e.g. a linear kernel with ``n_components >= n_features``),
    the z-scores of pure round-off would decide the weights.
    """
    od2 = np.where(od2 > noise, od2, 0.0)
    t = od2 ** (1.0 / 3.0)
    med = np.median(t)
    mad = MAD_SCALE * np.median(np.abs(t - med))
    if not mad > noise ** (1.0 / 3.0):
        return None  # no orthogonal variation beyond round-off: no extra dimension
    return np.maximum((t - med) / mad, 0.0) ** 2


def _sq_norms(c: Centering, diag_k: np.ndarray) -> np.ndarray:
    """``||phi(x_i) - theta||^2`` of the training points."""
    return np.maximum(c.train_diag(diag_k), 0.0)


def campbell_weights(d: np.ndarray, k: int, b1: float = 2.0, b2: float = 1.25) -> np.ndarray:
    """Campbell's (1980) weight function.

    ``w(d) = 1`` for ``d <= d0``, else ``(d0 / d) exp(-(d - d0)^2 / (2 b2^2))``, with
    ``d0 = sqrt(k) + b1 / sqrt(2)``.
    """
    d = np.asarray(d, dtype=np.float64)
    d0 = np.sqrt(k) + b1 / np.sqrt(2.0)
    w = np.ones_like(d)
    hi = d > d0
    w[hi] = (d0 / d[hi]) * np.exp(-((d[hi] - d0) ** 2) / (2.0 * b2**2))
    return w


@dataclass(frozen=True)
class CampbellWeights(RobustCentring):
    """Campbell's reweighting of the centred kernel matrix until the weights are a
    fixed point (:class:`WeightedKernelPCA`; docs/math.md, "Robust KPCA and
    diagnostics")."""

    b1: float = 2.0
    b2: float = 1.25
    distance: str = "full"
    init: str = "spherical"
    robust_tol: float = 1e-3
    robust_max_iter: int = 30

    def _centering_for(self, op, w: np.ndarray, settings) -> Centering:
        if not settings.center:
            return Centering(np.zeros(op.n), 0.0, enabled=False, scale=w)
        g = w / w.sum()
        m = host_matmat(op, g[:, None]).ravel()
        return Centering(m, float(g @ m), weights=g, scale=w)

    def _raw_scores(self, op, c: Centering, A: np.ndarray) -> np.ndarray:
        """``K~ S A``: raw scores of the training points (one pass over K)."""
        unscaled = Centering(c.row_means, c.grand_mean, enabled=c.enabled, weights=c.weights)
        SA = A * c.scale[:, None]
        return host_matmat(center(op, centering=unscaled)[0], SA)

    def _initial_distances(self, op, diag_k, plan, settings, rng, floor: float, noise: float
                           ) -> tuple[np.ndarray, int] | None:
        """Mahalanobis-type distances (and their degrees of freedom) from the spherical
        KPCA fit: a robust start."""
        if settings.center:
            g, m, c, dist, _, _ = spatial_median(
                op, diag_k, tol=1e-6, max_iter=200, floor=floor
            )
            cs = Centering(m, c, weights=g, scale=1.0 / np.maximum(dist, floor))
        else:
            dist = np.sqrt(np.maximum(diag_k, 0.0))
            cs = Centering(np.zeros(op.n), 0.0, enabled=False,
                           scale=1.0 / np.maximum(dist, floor))
        res = solve_centred(op, cs, plan, settings, rng)
        keep = res.values > 0
        if not np.any(keep):
            return None
        A = res.vectors[:, keep] / np.sqrt(res.values[keep])
        raw = self._raw_scores(op, cs, np.asarray(A, np.float64))
        lam = robust_scale(raw) ** 2
        ok = lam > 0
        if not np.any(ok):
            return None
        d2 = np.sum(raw[:, ok] ** 2 / lam[ok], axis=1)
        dof = int(np.count_nonzero(ok))
        if self.distance == "full":
            od2 = np.maximum(_sq_norms(cs, diag_k) - np.sum(raw**2, axis=1), 0.0)
            term = _od_term(od2, noise)
            if term is not None:
                d2, dof = d2 + term, dof + 1
        return np.sqrt(d2), dof

    def robust_centering(self, op, diag_k, plan, settings, rng, floor: float, noise: float
                         ) -> tuple[Centering, dict]:
        n = op.n
        w = np.ones(n)
        if self.init == "spherical":
            start = self._initial_distances(op, diag_k, plan, settings, rng, floor, noise)
            if start is not None:
                w = campbell_weights(*start, self.b1, self.b2)
        d = np.zeros(n)
        converged, it = False, 0
        rho, previous = 1.0, np.inf
        for it in range(1, self.robust_max_iter + 1):  # noqa: B007 (read after the loop)
            if not np.any(w > 0):
                raise ValueError(
                    "WeightedKernelPCA: every Campbell weight underflowed to 0; increase "
                    "b2 or n_components."
                )
            c = self._centering_for(op, w, settings)
            res = solve_centred(op, c, plan, settings, rng)
            keep = res.values > 0
            if not np.any(keep):  # no variance left: nothing to reweight
                converged = True
                break
            mu = np.asarray(res.values[keep], np.float64)
            A = np.asarray(res.vectors[:, keep], np.float64) / np.sqrt(mu)
            raw = self._raw_scores(op, c, A)
            lam = mu / np.sum(w**2)
            d2 = np.sum(raw**2 / lam, axis=1)
            dof = mu.size
            if self.distance == "full":  # plus the orthogonal part, one more dimension
                od2 = np.maximum(_sq_norms(c, diag_k) - np.sum(raw**2, axis=1), 0.0)
                term = _od_term(od2, noise)
                if term is not None:
                    d2, dof = d2 + term, dof + 1
            d = np.sqrt(d2)
            w_new = campbell_weights(d, dof, self.b1, self.b2)
            change = float(np.max(np.abs(w_new - w)))
            if change <= self.robust_tol:
                w = w_new
                converged = True
                break
            # a redescending weight function can make the iteration cycle: when the
            # change stops shrinking, damp the update (w += rho (w_new - w))
            if change >= 0.9 * previous:
                rho = max(rho / 2.0, 1.0 / 64.0)
            else:
                rho = min(1.0, 1.5 * rho)
            previous = change
            w = w + rho * (w_new - w)
        if not converged:
            warnings.warn(
                f"WeightedKernelPCA: the weights did not converge in {it} iterations; "
                "raise robust_max_iter or robust_tol.",
                ConvergenceWarning,
                stacklevel=6,
            )
        # a weight below sqrt(eps) contributes w^2 < eps to the covariance: make it an
        # exact 0, so that no later step divides a training score by it
        w = np.where(w >= np.sqrt(np.finfo(op.dtype).eps), w, 0.0)
        c = self._centering_for(op, w, settings)
        fitted = {"n_iter_": it, "converged_": converged, "weights_": w, "distances_": d,
                  "center_weights_": c.weights if c.weights is not None else np.zeros(n)}
        return c, fitted

    def row_scale(self, model) -> np.ndarray:
        return model.weights_

    def variance_divisor(self, n: int, fitted: dict) -> float:
        # eigenvalues of the weighted covariance C_w = K* / sum w^2
        return float(np.sum(fitted["weights_"] ** 2))


@extend_init(KernelPCA, b1=2.0, b2=1.25, distance="full", init="spherical",
             robust_tol=1e-3, robust_max_iter=30)
class WeightedKernelPCA(RobustKernelPCA):
    """Weighted kernel PCA: KPCA with Campbell's robust weighted covariance.

    See docs/math.md, "Robust KPCA and diagnostics".

    Iterates, from initial weights ``w``:

    1. centre ``theta = sum_i w_i phi(x_i) / sum_i w_i`` and decompose
       ``K* = W (K - 1_w W K - K W 1_w + 1_w W K W 1_w) W`` (``W = diag(w)``,
       ``1_w = 11^T / sum w``), i.e. the feature-space covariance
       ``C_w = sum_i w_i^2 (phi_i - theta)(phi_i - theta)^T / sum_i w_i^2``;
    2. kernelised Mahalanobis distances inside the subspace,
       ``d_i^2 = sum_l y_l(x_i)^2 / lambda_l`` with raw scores
       ``y_l(x_i) = <phi(x_i) - theta, f_l>`` and ``lambda_l = mu_l / sum w^2``;
       With ``distance='full'`` (default) the orthogonal part is added as one more
       degree of freedom, ``d_i^2 += max(0, z_i)^2`` with the robust z-score
       ``z_i = (OD_i^(2/3) - median) / MAD`` of ``OD_i^2 = ||phi(x_i) - theta||^2 -
       sum_l y_l(x_i)^2`` (Wilson-Hilferty, as ROBPCA's cut-off; median and MAD over
       all training points; round-off-level ``OD`` counts as 0): points far from
       the subspace -- orthogonal outliers, e.g. an isolated cluster in an RBF
       feature space -- are invisible to the score distance alone, and an
       iteration on it can cycle between including and excluding them;
    3. Campbell's weights ``w_i = w(d_i)`` (:func:`campbell_weights`,
       ``d0 = sqrt(k) + b1 / sqrt(2)``, k the degrees of freedom of ``d``);

    until the weights change by less than ``robust_tol`` (when the changes stop
    shrinking -- a redescending weight function can cycle -- the update is damped,
    ``w <- w + rho (w_new - w)`` with ``rho`` halved down to 1/64, and grown back by
    half while they shrink). At convergence the weights are a fixed point of steps
    1-3. With a linear kernel this is exactly Campbell's weighted PCA in input space.

    ``transform(t)`` gives the raw scores ``<phi(t) - theta, f_l>`` (new points are
    centred by the robust centre and not down-weighted); ``fit_transform`` gives the
    same for the training points, outliers included.

    Parameters
    ----------
    n_components : int, float in (0, 1) or None, default=None
        As in :class:`kpca.KernelPCA`. The weights use the components being fitted;
        with ``None`` every component is used, which makes the weights nearly
        uniform: give an integer.
    kernel, gamma, degree, coef0, kernel_params, alpha, fit_inverse_transform,
    eigen_solver, tol, max_iter, iterated_power, remove_zero_eig, random_state,
    copy_X, n_jobs, center, memory_limit, precision, contamination
        As in :class:`kpca.KernelPCA` (the solvers, the tiled/matrix-free
        operator under ``memory_limit`` and the learned pre-image are shared).
        ``center=False`` uses ``theta = 0`` (only the covariance is weighted).
    b1, b2 : float, default=2, 1.25
        Campbell's constants.
    distance : {'full', 'score'}, default='full'
        'score': the kernelised Mahalanobis distance inside the subspace alone;
        'full': plus the scaled orthogonal distance (see above; docs/math.md,
        "Robust KPCA and diagnostics").
    init : {'spherical', 'uniform'}, default='spherical'
        Start of the iteration. 'uniform': all weights 1 (standard KPCA), which a
        large fraction of outliers can mask. 'spherical': distances from the
        spherical KPCA fit (kernel spatial median, spatial-sign components, MAD
        scales of the scores), a robust start.
    robust_tol : float, default=1e-3
        Stop when ``max_i |w_i - w_i_previous| <= robust_tol``.
    robust_max_iter : int, default=30
        Maximum reweighting iterations (each one is an eigendecomposition);
        a ``ConvergenceWarning`` is issued if reached. Near a fixed point the
        weights of points close to ``d0`` can drift slowly (linear convergence
        with a rate close to 1, seen with polynomial kernels): the weights
        are then usable but not converged to ``robust_tol``.

    Attributes
    ----------
    weights_ : ndarray of shape (n_samples,)
        Campbell weights ``w_i`` of the training points (those below
        ``sqrt(eps)`` of the kernel matrix's precision are set to exactly 0).
    center_weights_ : ndarray of shape (n_samples,)
        ``w / sum(w)``: the centre is ``sum_i center_weights_[i] phi(x_i)``.
    distances_ : ndarray of shape (n_samples,)
        Kernelised Mahalanobis distances of the last iteration.
    explained_variance_ : ndarray of shape (n_components,)
        ``mu_l / sum w^2``: eigenvalues of the weighted covariance ``C_w``.
    score_variance_ : ndarray of shape (n_components,)
        Equal to ``explained_variance_`` (the scale of the score distance).
    sd_cutoff_, od_cutoff_ : float
        Cut-offs of the score and orthogonal distances (97.5 %).
    n_iter_ : int
    converged_ : bool
    Also every attribute of :class:`kpca.KernelPCA`.

    Examples
    --------
    >>> import numpy as np
    >>> from kpca import WeightedKernelPCA
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> X[:5] += 8  # five outliers
    >>> model = WeightedKernelPCA(n_components=2, kernel="rbf", gamma=0.1).fit(X)
    >>> model.weights_[:7].round(2)  # the outliers are down-weighted
    array([0.63, 0.63, 0.62, 0.63, 0.62, 1.  , 1.  ])
    """

    if TYPE_CHECKING:  # the signature extend_init generates at run time (see help())
        def __init__(self, *args: Any, **params: Any) -> None: ...

    _parameter_constraints: dict = {
        **RobustKernelPCA._parameter_constraints,
        "b1": [Interval(Real, 0, np.inf, closed="neither")],
        "b2": [Interval(Real, 0, np.inf, closed="neither")],
        "distance": [StrOptions(set(DISTANCES))],
        "init": [StrOptions(set(INITS))],
    }
    _centring = CampbellWeights
