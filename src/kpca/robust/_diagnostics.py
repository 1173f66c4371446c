"""Outlier and influence diagnostics for any fitted KPCA model (docs/math.md, "Robust
KPCA and diagnostics").

Every function takes a fitted :class:`kpca.KernelPCA` or one of its
subclasses (:class:`kpca.SphericalKernelPCA`, :class:`kpca.WeightedKernelPCA`,
:class:`kpca.AnovaKernelPCA`); anything else raises ``TypeError``. This API
(including :class:`OutlierMap`'s fields) is what the plotting helpers build on.

Notation: ``theta`` is the model's centre in feature space (the
training mean for KernelPCA, a robust weighted mean for the robust estimators),
``f_l`` its unit feature-space directions, and for any object ``t``

* raw scores ``y_l(t) = <phi(t) - theta, f_l>`` (for KernelPCA and
  WeightedKernelPCA these are ``transform(t)``; SphericalKernelPCA's
  ``transform`` divides them by ``||phi(t) - theta||``);
* score distance ``SD(t) = sqrt(sum_l y_l(t)^2 / lambda_l)``: the kernelised
  Mahalanobis distance inside the subspace, with ``lambda_l`` the variance of
  the scores along ``f_l`` (``score_variance_`` when the model has it, otherwise
  ``explained_variance_``);
* orthogonal distance ``OD(t) = sqrt(||phi(t) - theta||^2 - sum_l y_l(t)^2)``:
  the distance from ``phi(t)`` to the affine subspace ``theta + span(f_l)``.

Cut-offs (as in ROBPCA, Hubert, Rousseeuw and Vanden Branden 2005):

* score distance: ``sqrt(chi2_k.ppf(q))`` (``k`` components, ``q = 0.975``);
* orthogonal distance: ``OD^(2/3)`` is approximately normal (Wilson-Hilferty),
  so ``(median(OD^(2/3)) + MAD(OD^(2/3)) * z_q)^(3/2)`` over the training
  points, with the MAD scaled to be consistent at the normal (x 1.4826).

A point is flagged when either distance exceeds its cut-off; its outlier score
is ``max(SD / SD_cut, OD / OD_cut)`` (so > 1 means flagged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy import stats
from sklearn.utils.validation import check_is_fitted

#: default quantile of the cut-offs
QUANTILE = 0.975
#: MAD -> standard deviation at the normal distribution
MAD_SCALE = 1.482602218505602
#: bytes of kernel block evaluated at once
_BLOCK_BYTES = 32 * 2**20


def robust_scale(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Normal-consistent MAD of ``x`` around its median."""
    med = np.median(x, axis=axis, keepdims=True)
    return MAD_SCALE * np.median(np.abs(x - med), axis=axis)


def _check(est) -> None:
    from .._kernel_pca import KernelPCA

    if not isinstance(est, KernelPCA):
        raise TypeError(
            "est must be a kpca.KernelPCA model or a subclass (SphericalKernelPCA, "
            f"WeightedKernelPCA, AnovaKernelPCA); got {type(est).__name__}. The "
            "explicit-feature approximations (NystromKernelPCA, RandomFeatureKernelPCA) "
            "are not supported."
        )
    check_is_fitted(est, ("eigenvalues_", "eigenvectors_", "X_fit_"))
    if not hasattr(est, "_centering"):
        raise ValueError(f"{type(est).__name__} is not a fitted kpca KernelPCA model.")


def raw_projection(est, X=None, A=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores and squared feature-space distances to the centre, in one pass.

    Parameters
    ----------
    est : fitted KernelPCA (or subclass)
    X : array-like of shape (m, n_features), default=None
        Objects to project; ``None`` means the training data. For
        ``kernel='precomputed'``, the kernel between them and the training data.
    A : ndarray of shape (n_train, k), default=None
        Dual coefficients; default ``est._scaled_alphas``.
    kernel_diag : array-like of shape (m,), default=None
        ``k(t, t)`` for each row. Needed for a precomputed kernel with new
        objects (the kernel diagonal is not part of ``K_t``).

    Returns
    -------
    Y : ndarray of shape (m, k)
        ``y_l(t) = <phi(t) - theta, f_l>`` (float64).
    sqnorm : ndarray of shape (m,)
        ``||phi(t) - theta||^2`` (float64, clipped at 0).
    """
    _check(est)
    if A is None:
        A = est._scaled_alphas
    A = np.asarray(A, dtype=np.float64)
    precomputed = est._is_precomputed()
    if X is None:
        X = est.X_fit_
        if precomputed and kernel_diag is None:
            kernel_diag = np.asarray(est.X_fit_.diagonal(), dtype=np.float64)
    else:
        X = est._validate_X(X, reset=False, kernel=est.kernel_)
    m = X.shape[0]
    if kernel_diag is None:
        if precomputed:
            raise ValueError(
                "kernel_diag: with kernel='precomputed', pass k(t, t) for each new object "
                "(the kernel diagonal is not part of the cross-kernel matrix)."
            )
        kernel_diag = est.kernel_.diag(X)
    kernel_diag = np.asarray(kernel_diag, dtype=np.float64).ravel()
    if kernel_diag.shape != (m,):
        raise ValueError(f"kernel_diag must have shape ({m},); got {kernel_diag.shape}.")
    n_train = est.X_fit_.shape[0]
    rows = max(1, _BLOCK_BYTES // max(1, 8 * n_train))
    c = est._centering
    prep = None if precomputed else est.kernel_.prepare(est.X_fit_, np.float64)
    Y = np.empty((m, A.shape[1]))
    sq = np.empty(m)
    for start in range(0, m, rows):
        Xb = X[start : start + rows]
        if precomputed:
            Kt = Xb.toarray() if sp.issparse(Xb) else np.asarray(Xb)
        else:
            Kt = est.kernel_.block_prepared(Xb, prep)
        Kt = np.asarray(Kt, dtype=np.float64)
        Y[start : start + rows] = c.project(Kt, A)
        sq[start : start + rows] = c.center_diag(kernel_diag[start : start + rows], Kt)
    return Y, np.maximum(sq, 0.0)


def _score_variance(est) -> np.ndarray:
    lam = getattr(est, "score_variance_", None)
    if lam is None:
        lam = est.explained_variance_
    return np.asarray(lam, dtype=np.float64)


def od_noise(diag_k: np.ndarray, dtype) -> float:
    """Round-off level of a squared orthogonal distance ``||phi - theta||^2 - sum_l y_l^2``.

    Both terms are of the size of the kernel diagonal; their difference is known
    only to about ``eps * max_i k(x_i, x_i)`` (``eps`` of the precision the kernel
    matrix was decomposed in). Squared orthogonal distances up to ``1000`` times
    that are reported as 0: a model whose subspace holds the data (e.g. the
    linear kernel with ``n_components >= n_features``) then has no orthogonal
    outliers, instead of flags decided by round-off.
    """
    d = np.asarray(diag_k, dtype=np.float64)
    return float(1e3 * np.finfo(np.dtype(dtype)).eps * max(float(np.max(np.abs(d), initial=0.0)),
                                                            0.0))


def _model_od_noise(est) -> float:
    noise = getattr(est, "_od_noise", None)
    if noise is not None:
        return float(noise)
    if est._is_precomputed():
        d = np.asarray(est.X_fit_.diagonal(), dtype=np.float64)
    else:
        d = np.asarray(est.kernel_.diag(est.X_fit_), dtype=np.float64)
    return od_noise(d, getattr(est, "_gram_dtype", "float64"))


def _distances_from(est, Y: np.ndarray, sq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lam = _score_variance(est)
    keep = lam > 0
    sd = np.sqrt(np.sum(Y[:, keep] ** 2 / lam[keep], axis=1))
    od2 = sq - np.sum(Y**2, axis=1)
    od = np.sqrt(np.where(od2 > _model_od_noise(est), od2, 0.0))
    return sd, od


def distances(est, X=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
    """Score and orthogonal distances of the rows of ``X`` (training data if None).

    Returns
    -------
    score_distance, orthogonal_distance : ndarray of shape (m,)
    """
    Y, sq = raw_projection(est, X, kernel_diag=kernel_diag)
    return _distances_from(est, Y, sq)


def score_distance(est, X=None, *, kernel_diag=None) -> np.ndarray:
    """Kernelised Mahalanobis distance inside the subspace, ``sqrt(sum y_l^2 / lambda_l)``."""
    return distances(est, X, kernel_diag=kernel_diag)[0]


def orthogonal_distance(est, X=None, *, kernel_diag=None) -> np.ndarray:
    """Feature-space distance to the subspace, ``sqrt(||phi~(t)||^2 - sum_l y_l(t)^2)``."""
    return distances(est, X, kernel_diag=kernel_diag)[1]


def od_cutoff(od: np.ndarray, quantile: float = QUANTILE) -> float:
    """ROBPCA cut-off of orthogonal distances (Wilson-Hilferty, median/MAD)."""
    t = np.asarray(od, dtype=np.float64) ** (2.0 / 3.0)
    cut = np.median(t) + robust_scale(t) * stats.norm.ppf(quantile)
    return float(max(cut, 0.0) ** 1.5)


def sd_cutoff(k: int, quantile: float = QUANTILE) -> float:
    """``sqrt(chi2_k.ppf(quantile))``."""
    return float(np.sqrt(stats.chi2.ppf(quantile, max(1, k))))


def _check_quantile(quantile: float) -> None:
    if not (0 < quantile < 1):
        raise ValueError(f"quantile must be in (0, 1); got {quantile!r}.")


def cutoffs(est, *, quantile: float = QUANTILE) -> tuple[float, float]:
    """``(score distance cut-off, orthogonal distance cut-off)`` of a fitted model.

    The orthogonal cut-off is estimated from the training points' orthogonal
    distances (one projection of the training data).
    """
    _check(est)
    _check_quantile(quantile)
    if quantile == QUANTILE and hasattr(est, "od_cutoff_"):  # computed by the fit
        return float(est.sd_cutoff_), float(est.od_cutoff_)
    k = int(np.count_nonzero(_score_variance(est) > 0))
    _, od = distances(est)
    return sd_cutoff(k, quantile), od_cutoff(od, quantile)


@dataclass(frozen=True)
class OutlierMap:
    """Data of the outlier map (score distance vs orthogonal distance).

    Attributes
    ----------
    score_distance, orthogonal_distance : ndarray of shape (m,)
    sd_cutoff, od_cutoff : float
    outlier : ndarray of bool, shape (m,)
        Either distance above its cut-off.
    category : ndarray of str, shape (m,)
        'regular', 'good leverage' (SD only), 'orthogonal' (OD only) or 'bad
        leverage' (both), as in Hubert et al. (2005).
    """

    score_distance: np.ndarray
    orthogonal_distance: np.ndarray
    sd_cutoff: float
    od_cutoff: float
    outlier: np.ndarray
    category: np.ndarray


def _ratio(x: np.ndarray, cut: float) -> np.ndarray:
    if cut <= 0:  # all training points in the subspace: any distance is unusual
        return np.where(x > 0, np.inf, 0.0)
    return x / cut


def outlier_map(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> OutlierMap:
    """Distances, cut-offs and flags for the rows of ``X`` (training data if None)."""
    sd_cut, od_cut = cutoffs(est, quantile=quantile)
    sd, od = distances(est, X, kernel_diag=kernel_diag)
    hi_sd, hi_od = sd > sd_cut, _ratio(od, od_cut) > 1
    cat = np.full(sd.shape, "regular", dtype=object)
    cat[hi_sd & ~hi_od] = "good leverage"
    cat[~hi_sd & hi_od] = "orthogonal"
    cat[hi_sd & hi_od] = "bad leverage"
    return OutlierMap(sd, od, sd_cut, od_cut, hi_sd | hi_od, cat)


def outlier_scores(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> np.ndarray:
    """``max(SD / SD_cut, OD / OD_cut)`` per row: larger is more outlying, > 1 is flagged."""
    om = outlier_map(est, X, quantile=quantile, kernel_diag=kernel_diag)
    return np.maximum(om.score_distance / om.sd_cutoff, _ratio(om.orthogonal_distance,
                                                               om.od_cutoff))


def outliers(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> np.ndarray:
    """Boolean mask: rows whose score or orthogonal distance exceeds its cut-off."""
    return outlier_map(est, X, quantile=quantile, kernel_diag=kernel_diag).outlier


def plot_outlier_map(est, X=None, *, ax: Any = None, quantile: float = QUANTILE, **scatter):
    """Scatter plot of score distance vs orthogonal distance with the cut-off lines.

    Returns the matplotlib axes.
    """
    import matplotlib.pyplot as plt

    om = outlier_map(est, X, quantile=quantile)
    if ax is None:
        _, ax = plt.subplots()
    ax.scatter(om.score_distance, om.orthogonal_distance, c=om.outlier, cmap="coolwarm",
               **scatter)
    ax.axvline(om.sd_cutoff, color="grey", lw=1)
    ax.axhline(om.od_cutoff, color="grey", lw=1)
    ax.set_xlabel("score distance")
    ax.set_ylabel("orthogonal distance")
    return ax


# ----------------------------------------------------------------------------- influence
@dataclass(frozen=True)
class Influence:
    """Empirical influence of each training point on the components.

    For the decomposed operator ``K* = sum_i z_i z_i^T`` (feature-space vectors
    ``z_i``: ``phi(x_i) - mean`` for KernelPCA, ``s_i (phi(x_i) - theta)`` for the
    robust estimators, whose centre and weights are held fixed), with
    covariance eigenvalues ``lambda_l = mu_l / n``, scores ``y_il = <z_i, f_l>`` and
    residual ``r_i = ||z_i||^2 - sum_l y_il^2`` outside the fitted components:

    * ``eigenvalues[i, l] = y_il^2 - lambda_l``: influence function of ``lambda_l``;
    * ``components[i, l] = ||IF(x_i; f_l)|| = |y_il| sqrt(sum_{m != l}
      y_im^2 / (lambda_l - lambda_m)^2 + r_i / lambda_l^2)``: feature-space norm
      of the first-order change of the eigenvector (Critchley 1985); exact when
      the model keeps every non-zero component (``r_i = 0``), otherwise the
      discarded eigenvalues are treated as 0;
    * ``loo_eigenvalues[i, l] = mu_l - n / (n - 1) y_il^2``: first-order
      eigenvalue of the centred Gram matrix without point i (for KernelPCA the
      leave-one-out scatter is an exact rank-one downdate, so this is exact to
      first order); the leave-one-out change of ``f_l`` has norm
      ``~ components[i, l] / (n - 1)``;
    * ``total[i] = sqrt(sum_l components[i, l]^2)``.
    """

    eigenvalues: np.ndarray
    components: np.ndarray
    loo_eigenvalues: np.ndarray
    total: np.ndarray


def _operator_diag(est) -> np.ndarray:
    """``K*_ii`` of the decomposed training operator (float64)."""
    c = est._centering
    if est._is_precomputed():
        d = np.asarray(est.X_fit_.diagonal(), dtype=np.float64)
    else:
        d = np.asarray(est.kernel_.diag(est.X_fit_), dtype=np.float64)
    return c.train_diag(d, scaled=True)


def influence(est) -> Influence:
    """Empirical influence of every training point on eigenvalues and eigenvectors.

    O(n k^2) from the fitted eigenpairs (no refit): see :class:`Influence`.
    Validated against brute-force leave-one-out refits in the tests.
    """
    _check(est)
    mu = np.asarray(est.eigenvalues_, dtype=np.float64)
    V = np.asarray(est.eigenvectors_, dtype=np.float64)
    keep = mu > 0
    mu, V = mu[keep], V[:, keep]
    n = V.shape[0]
    Z = V * np.sqrt(mu)
    lam = mu / n
    resid = np.maximum(_operator_diag(est) - np.sum(Z**2, axis=1), 0.0)
    gap = lam[:, None] - lam[None, :]  # (l, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv2 = np.where(np.eye(lam.size, dtype=bool), 0.0, 1.0 / gap**2)
        inner = (Z**2) @ inv2.T + resid[:, None] / lam[None, :] ** 2
        comp = np.abs(Z) * np.sqrt(inner)
    ev = Z**2 - lam[None, :]
    loo = mu[None, :] - (n / max(n - 1, 1)) * Z**2
    return Influence(ev, comp, loo, np.sqrt(np.sum(comp**2, axis=1)))
