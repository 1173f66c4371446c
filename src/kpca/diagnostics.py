"""Outlier and influence diagnostics of a fitted subspace (docs/math.md, "Robust KPCA
and diagnostics").

Notation: ``theta`` is the model's centre in feature space, ``f_l`` its unit
directions, ``y_l(t) = <phi(t) - theta, f_l>`` the raw scores of an object ``t``:

* score distance ``SD(t) = sqrt(sum_l y_l(t)^2 / lambda_l)``: the kernelised
  Mahalanobis distance inside the subspace (``lambda_l`` the variance of the
  training scores along ``f_l``);
* orthogonal distance ``OD(t) = sqrt(||phi(t) - theta||^2 - sum_l y_l(t)^2)``: the
  distance from ``phi(t)`` to the affine subspace ``theta + span(f_l)``.

Cut-offs (as in ROBPCA, Hubert, Rousseeuw and Vanden Branden 2005): ``SD`` at
``sqrt(chi2_k.ppf(q))``; ``OD^(2/3)`` is about normal (Wilson-Hilferty), so
``(median + MAD z_q)^(3/2)`` of the training ``OD^(2/3)`` (MAD scaled to be
consistent at the normal). A point beyond either cut-off is flagged; its outlier
score is ``max(SD / SD_cut, OD / OD_cut)``. Every estimator exposes these as
methods (``distances``, ``outlier_map``, ``outlier_scores``, ``score_samples``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

#: default quantile of the cut-offs
QUANTILE = 0.975
#: MAD -> standard deviation at the normal distribution
MAD_SCALE = 1.482602218505602


def robust_scale(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Normal-consistent MAD of ``x`` around its median."""
    med = np.median(x, axis=axis, keepdims=True)
    return MAD_SCALE * np.median(np.abs(x - med), axis=axis)


def od_cutoff(od: np.ndarray, quantile: float = QUANTILE) -> float:
    """ROBPCA cut-off of orthogonal distances (Wilson-Hilferty, median/MAD)."""
    t = np.asarray(od, dtype=np.float64) ** (2.0 / 3.0)
    cut = np.median(t) + robust_scale(t) * special.ndtri(quantile)  # the normal quantile
    return float(max(cut, 0.0) ** 1.5)


def sd_cutoff(k: int, quantile: float = QUANTILE) -> float:
    """``sqrt(chi2_k.ppf(quantile))``: cut-off of the score distance with ``k`` components."""
    # chdtri: the chi-square quantile as a ufunc (scipy.stats' machinery costs ~1 ms)
    return float(np.sqrt(special.chdtri(max(1, k), 1.0 - quantile)))


def ratio(x: np.ndarray, cut: float) -> np.ndarray:
    """``x / cut``; with a zero cut-off (all training points in the subspace) any
    positive distance is infinitely unusual."""
    if cut <= 0:
        return np.where(x > 0, np.inf, 0.0)
    return x / cut


def od_noise(diag_k: np.ndarray, dtype) -> float:
    """Round-off level of a squared orthogonal distance ``||phi - theta||^2 - sum_l y_l^2``.

    Both terms are of the size of the kernel diagonal, so their difference is
    known to about ``eps * max_i k(x_i, x_i)`` (``eps`` of the precision the kernel
    matrix was decomposed in). Squared distances up to 1000 times that are 0: a
    subspace holding the data (e.g. the linear kernel with ``n_components >=
    n_features``) then has no orthogonal outliers decided by round-off.
    """
    d = np.asarray(diag_k, dtype=np.float64)
    return float(1e3 * np.finfo(np.dtype(dtype)).eps * max(float(np.max(np.abs(d), initial=0.0)),
                                                            0.0))


def norm_floor(diag_k: np.ndarray, dtype) -> float:
    """Smallest feature-space distance treated as non-zero (protects ``1 / ||.||``)."""
    scale = float(np.sqrt(max(float(np.max(np.abs(diag_k), initial=0.0)), 0.0)))
    return max(np.sqrt(np.finfo(dtype).eps) * scale, np.finfo(np.float64).tiny)


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

    @classmethod
    def from_distances(cls, sd: np.ndarray, od: np.ndarray, sd_cut: float, od_cut: float
                       ) -> OutlierMap:
        hi_sd, hi_od = ratio(sd, sd_cut) > 1, ratio(od, od_cut) > 1
        cat = np.full(sd.shape, "regular", dtype=object)
        cat[hi_sd & ~hi_od] = "good leverage"
        cat[~hi_sd & hi_od] = "orthogonal"
        cat[hi_sd & hi_od] = "bad leverage"
        return cls(sd, od, sd_cut, od_cut, hi_sd | hi_od, cat)


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
      discarded eigenvalues are treated as 0. For a repeated eigenvalue (equal to
      1e-10 relative in float64, 1e3 eps in float32) the sum leaves out the other
      members of its cluster: it is the influence on the eigenspace, which is
      finite (a single eigenvector of a repeated eigenvalue is not defined);
    * ``loo_eigenvalues[i, l] = mu_l - n / (n - 1) y_il^2``: first-order
      eigenvalue of the centred Gram matrix without point i; the leave-one-out
      change of ``f_l`` has norm ``~ components[i, l] / (n - 1)``;
    * ``total[i] = sqrt(sum_l components[i, l]^2)``.
    """

    eigenvalues: np.ndarray
    components: np.ndarray
    loo_eigenvalues: np.ndarray
    total: np.ndarray

    @classmethod
    def from_eigenpairs(cls, mu: np.ndarray, V: np.ndarray, operator_diag: np.ndarray
                        ) -> Influence:
        """From the eigenpairs ``(mu, V)`` of ``K*`` and its diagonal ``K*_ii``.

        O(n k^2), no refit (validated against leave-one-out refits in the tests).
        """
        dtype = np.result_type(mu, np.float32)  # the precision the eigenpairs have
        mu = np.asarray(mu, dtype=np.float64)
        V = np.asarray(V, dtype=np.float64)
        keep = mu > 0
        mu, V = mu[keep], V[:, keep]
        n = V.shape[0]
        Z = V * np.sqrt(mu)
        lam = mu / n
        resid = np.maximum(np.asarray(operator_diag, np.float64) - np.sum(Z**2, axis=1), 0.0)
        gap = lam[:, None] - lam[None, :]  # (l, m)
        # a repeated eigenvalue has no single eigenvector, only an eigenspace: the
        # rotation within it is left out (its influence on the eigenspace is finite)
        # equal to the eigenvalues' precision (1e-10 in float64, ~1e-4 in float32)
        tie = max(1e-10, 1e3 * float(np.finfo(dtype).eps))
        same = np.abs(gap) <= tie * float(lam.max(initial=0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            inv2 = np.where(same, 0.0, 1.0 / np.where(same, 1.0, gap) ** 2)
            inner = (Z**2) @ inv2.T + resid[:, None] / lam[None, :] ** 2
            comp = np.abs(Z) * np.sqrt(inner)
        ev = Z**2 - lam[None, :]
        loo = mu[None, :] - (n / max(n - 1, 1)) * Z**2
        return cls(ev, comp, loo, np.sqrt(np.sum(comp**2, axis=1)))

    @classmethod
    def from_subspace(cls, space: Any, mu: np.ndarray, V: np.ndarray,
                      row_scale: np.ndarray | None = None) -> Influence:
        """From a fitted model: its eigenpairs ``(mu, V)`` and its subspace
        (:class:`kpca.subspace.FittedSubspace`, expanded over the training rows), whose
        squared distances ``||phi(x_i) - theta||^2`` give ``K*_ii``, times ``s_i^2``
        for the row scales ``row_scale`` of a robust fit (None: ``K* = K~``)."""
        diag = space.basis_sqnorms()
        if row_scale is not None:
            diag = diag * np.asarray(row_scale, np.float64) ** 2
        return cls.from_eigenpairs(mu, V, diag)
