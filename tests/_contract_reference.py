"""Independent NumPy references for the estimator contract (tests/test_contract.py).

Nothing here imports kpca. Every model is written out in feature space from its
definition (docs/math.md, "Robust KPCA and diagnostics"; issue 13):

* ``theta`` the model's centre, ``theta = sum_i g_i phi(x_i)``;
* the decomposed operator ``K* = S K~ S`` with ``K~`` the Gram matrix centred on
  ``theta`` and ``S = diag(s)`` a row scale (1 for exact KPCA, the Campbell
  weights for weighted KPCA, ``1 / ||phi(x_i) - theta||`` for spherical KPCA);
* unit directions ``f_l = sum_i s_i v_il (phi(x_i) - theta) / sqrt(mu_l)`` for the
  top eigenpairs ``(mu_l, v_l)`` of ``K*``;
* raw scores ``y_l(t) = <phi(t) - theta, f_l>``,
  ``SD(t) = sqrt(sum_l y_l^2 / lambda_l)``,
  ``OD(t) = sqrt(max(||phi(t) - theta||^2 - sum_l y_l^2, 0))``;
* cut-offs ``sqrt(chi2.ppf(0.975, k))`` and
  ``(median(OD^(2/3)) + 1.4826 MAD(OD^(2/3)) norm.ppf(0.975))^(3/2)`` over the
  training rows; ``score_samples = -max(SD / sd_cut, OD / od_cut)``.

The random-feature model has an explicit feature map and is written as plain PCA
of the centred features.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

QUANTILE = 0.975
#: the 1.4826 of the normal-consistent MAD, to full precision: 1 / Phi^-1(3/4)
MAD_SCALE = 1.0 / stats.norm.ppf(0.75)


# ----------------------------------------------------------------------------- kernels
def rbf(A: np.ndarray, B: np.ndarray, gamma: float) -> np.ndarray:
    """``exp(-gamma ||a - b||^2)``."""
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=-1)
    return np.exp(-gamma * d2)


def linear(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return A @ B.T


def anova(A: np.ndarray, B: np.ndarray, gamma: float, beta: np.ndarray) -> np.ndarray:
    """``sum_j beta_j exp(-gamma (a_j - b_j)^2)``."""
    return np.einsum("j,jik->ik", beta,
                     np.exp(-gamma * (A.T[:, :, None] - B.T[:, None, :]) ** 2))


# ----------------------------------------------------------------------------- cut-offs
def mad(x: np.ndarray, axis: int = 0) -> np.ndarray:
    """Normal-consistent median absolute deviation."""
    med = np.median(x, axis=axis, keepdims=True)
    return MAD_SCALE * np.median(np.abs(x - med), axis=axis)


def sd_cutoff(k: int) -> float:
    return float(np.sqrt(stats.chi2.ppf(QUANTILE, k)))


def od_cutoff(od: np.ndarray) -> float:
    t = np.asarray(od, dtype=np.float64) ** (2.0 / 3.0)
    return float((np.median(t) + mad(t) * stats.norm.ppf(QUANTILE)) ** 1.5)


# ----------------------------------------------------------------------------- models
@dataclass
class Reference:
    """A fitted reference model: raw scores, distances, cut-offs, ``score_samples``."""

    project: Callable[[np.ndarray], np.ndarray]  # raw scores y(t), (m, k)
    sqdist: Callable[[np.ndarray], np.ndarray]  # ||phi(t) - theta||^2, (m,)
    lam: np.ndarray  # variances of the score distance, (k,)
    X_train: np.ndarray
    explained_variance: np.ndarray | None = None
    sd_cut: float = np.nan
    od_cut: float = np.nan

    def __post_init__(self) -> None:
        self.k = self.lam.shape[0]
        self.sd_cut = sd_cutoff(self.k)
        self.od_cut = od_cutoff(self.orthogonal_distance(self.X_train))

    def score_distance(self, T: np.ndarray) -> np.ndarray:
        Y = self.project(T)
        return np.sqrt(np.sum(Y**2 / self.lam, axis=1))

    def orthogonal_distance(self, T: np.ndarray) -> np.ndarray:
        Y = self.project(T)
        return np.sqrt(np.maximum(self.sqdist(T) - np.sum(Y**2, axis=1), 0.0))

    def outlier_scores(self, T: np.ndarray) -> np.ndarray:
        return np.maximum(self.score_distance(T) / self.sd_cut,
                          self.orthogonal_distance(T) / self.od_cut)

    def score_samples(self, T: np.ndarray) -> np.ndarray:
        return -self.outlier_scores(T)

    def offset(self, contamination: float) -> float:
        return float(np.percentile(self.score_samples(self.X_train), 100.0 * contamination))


def kernel_model(kernel: Callable[[np.ndarray, np.ndarray], np.ndarray], X: np.ndarray,
                 k: int, *, g: np.ndarray | None = None, s: np.ndarray | None = None
                 ) -> tuple[Callable, Callable, np.ndarray, np.ndarray]:
    """Centre ``theta = sum_i g_i phi(x_i)``, row scale ``s``, top ``k`` components.

    Returns ``(project, sqdist, mu, V)``: raw scores and squared distances to the
    centre of new rows, and the top eigenpairs of ``K* = S K~ S``.
    """
    n = X.shape[0]
    g = np.full(n, 1.0 / n) if g is None else np.asarray(g, dtype=np.float64)
    s = np.ones(n) if s is None else np.asarray(s, dtype=np.float64)
    K = kernel(X, X)
    Kg = K @ g
    c = float(g @ Kg)
    Kc = K - Kg[:, None] - Kg[None, :] + c
    mu, V = np.linalg.eigh(s[:, None] * Kc * s[None, :])
    mu, V = mu[::-1][:k], V[:, ::-1][:, :k]
    A = s[:, None] * V / np.sqrt(mu)  # f_l = sum_i A_il (phi(x_i) - theta)

    def centred(T: np.ndarray) -> np.ndarray:
        Kt = kernel(T, X)
        return Kt - (Kt @ g)[:, None] - Kg[None, :] + c

    def project(T: np.ndarray) -> np.ndarray:
        return centred(T) @ A

    def sqdist(T: np.ndarray) -> np.ndarray:
        diag = np.array([kernel(t[None, :], t[None, :])[0, 0] for t in T])
        return np.maximum(diag - 2.0 * kernel(T, X) @ g + c, 0.0)

    return project, sqdist, mu, V


def expansion(kernel, X: np.ndarray, g: np.ndarray, C: np.ndarray, lam: np.ndarray
              ) -> Reference:
    """A model given by its centre ``theta = sum_i g_i phi(x_i)`` and directions
    ``f_l = sum_i C_il phi(x_i)`` (how ROBPCA's are found is checked against rrcov
    elsewhere): raw scores and distances from the full kernel matrix."""
    K = kernel(X, X)
    Kg = K @ g
    c = float(g @ Kg)

    def project(T: np.ndarray) -> np.ndarray:
        return (kernel(T, X) - Kg[None, :]) @ C

    def sqdist(T: np.ndarray) -> np.ndarray:
        diag = np.array([kernel(t[None, :], t[None, :])[0, 0] for t in T])
        return np.maximum(diag - 2.0 * kernel(T, X) @ g + c, 0.0)

    return Reference(project, sqdist, np.asarray(lam, dtype=np.float64), X,
                     explained_variance=np.asarray(lam, dtype=np.float64))


def exact(kernel, X: np.ndarray, k: int) -> Reference:
    """Kernel PCA: centre the training mean, ``lambda_l = mu_l / n``."""
    project, sqdist, mu, _ = kernel_model(kernel, X, k)
    lam = mu / X.shape[0]
    return Reference(project, sqdist, lam, X, explained_variance=lam)


def weighted(kernel, X: np.ndarray, k: int, w: np.ndarray) -> Reference:
    """Weighted KPCA for given weights ``w``: ``theta = sum w_i phi_i / sum w``, covariance
    ``sum w_i^2 (phi_i - theta)(phi_i - theta)^T / sum w^2`` (``lambda_l = mu_l / sum w^2``)."""
    w = np.asarray(w, dtype=np.float64)
    project, sqdist, mu, _ = kernel_model(kernel, X, k, g=w / w.sum(), s=w)
    lam = mu / np.sum(w**2)
    return Reference(project, sqdist, lam, X, explained_variance=lam)


def spatial_median(K: np.ndarray, *, tol: float = 1e-14, max_iter: int = 100_000
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Weiszfeld's iteration in feature space: weights ``g`` of the kernel spatial median
    and the distances ``||phi(x_i) - theta||``."""
    n = K.shape[0]
    d = np.diag(K)
    g = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        Kg = K @ g
        dist = np.sqrt(np.maximum(d - 2.0 * Kg + g @ Kg, 0.0))
        w = 1.0 / np.maximum(dist, 1e-12)
        g_new = w / w.sum()
        dg = g_new - g
        g = g_new
        if np.sqrt(max(dg @ K @ dg, 0.0)) <= tol * dist.mean():
            break
    Kg = K @ g
    return g, np.sqrt(np.maximum(d - 2.0 * Kg + g @ Kg, 0.0))


def spherical(kernel, X: np.ndarray, k: int) -> Reference:
    """Spherical KPCA: centre the kernel spatial median, PCA of the spatial signs,
    ``lambda_l`` = squared MAD of the raw training scores."""
    g, dist = spatial_median(kernel(X, X))
    project, sqdist, _, _ = kernel_model(kernel, X, k, g=g, s=1.0 / dist)
    lam = mad(project(X)) ** 2
    return Reference(project, sqdist, lam, X)


def random_features(X: np.ndarray, k: int, W: np.ndarray, b: np.ndarray) -> Reference:
    """PCA of ``z(x) = sqrt(2/D) cos(x W + b)`` centred on the training mean of ``z``."""
    D = W.shape[1]

    def z(T: np.ndarray) -> np.ndarray:
        return np.sqrt(2.0 / D) * np.cos(T @ W + b)

    Z = z(X)
    theta = Z.mean(axis=0)
    lam, U = np.linalg.eigh((Z - theta).T @ (Z - theta) / X.shape[0])
    lam, U = lam[::-1][:k], U[:, ::-1][:, :k]

    def project(T: np.ndarray) -> np.ndarray:
        return (z(T) - theta) @ U

    def sqdist(T: np.ndarray) -> np.ndarray:
        return np.sum((z(T) - theta) ** 2, axis=1)

    return Reference(project, sqdist, lam, X, explained_variance=lam)


def align_signs(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """``ref`` with each column's sign flipped to agree with ``got`` (eigenvector signs)."""
    signs = np.sign(np.sum(got * ref, axis=0))
    signs[signs == 0] = 1.0
    return ref * signs
