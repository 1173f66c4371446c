"""How far an approximate kernel PCA is from exact kernel PCA, estimated on a
sub-problem (docs/math.md, "How far from exact KPCA: the error estimate").

The published bounds for Nyström and random-feature KPCA hold with unknown
constants, so the estimate is computed instead: on ``s`` rows ``S`` drawn
uniformly from the data, exact KPCA of the centred kernel matrix ``K~_S``
(``s x s``, dense) is compared with PCA of the same rows' approximate features
``Phi_S`` (the fitted model's landmarks and ``K_mm^{-1/2}``, or its random
features), centred on ``S``: the same approximation, on a problem small enough
to solve exactly. Both sides see the same rows, so the comparison measures the
approximation, not the sampling of ``S``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigsh

from .._config import get_config
from .._parallel import blas_threads, call_threads
from ..solvers import top_eigh

__all__ = ["ApproximationError", "ExactReference", "compare", "exact_reference"]


@dataclass(frozen=True)
class ApproximationError:
    """The estimated distance of an approximate kernel PCA from exact kernel PCA.

    Attributes
    ----------
    n_rows : int
        Rows ``s`` of the sub-problem.
    eigenvalue_error : ndarray of shape (k,)
        ``|mu^_l - mu_l| / mu_l`` for the ``k`` leading eigenvalues: the
        approximation's relative eigenvalue errors.
    subspace_sin : ndarray of shape (k,)
        Sines of the principal angles between the approximate and the exact
        ``k``-dimensional score spaces (the training scores as functions of the
        rows), largest first: ``subspace_sin[0]`` is ``||sin Theta||_2``.
    kernel_error : float
        ``||K~_S - K^~_S||_2 / ||K~_S||_2``: the centred kernel matrix's relative
        error in the spectral norm. By Weyl's inequality every eigenvalue error is
        at most ``kernel_error * mu_1``.
    """

    n_rows: int
    eigenvalue_error: np.ndarray
    subspace_sin: np.ndarray
    kernel_error: float

    @property
    def max_eigenvalue_error(self) -> float:
        """The largest relative eigenvalue error of the ``k`` components."""
        return float(self.eigenvalue_error.max()) if self.eigenvalue_error.size else 0.0

    @property
    def max_subspace_sin(self) -> float:
        """The sine of the largest principal angle (``||sin Theta||_2``)."""
        return float(self.subspace_sin[0]) if self.subspace_sin.size else 0.0

    def as_dict(self) -> dict:
        """Plain Python values (for JSON and tables)."""
        return {"n_rows": self.n_rows,
                "eigenvalue_error": self.eigenvalue_error.tolist(),
                "subspace_sin": self.subspace_sin.tolist(),
                "kernel_error": self.kernel_error,
                "max_eigenvalue_error": self.max_eigenvalue_error,
                "max_subspace_sin": self.max_subspace_sin}


@dataclass(frozen=True)
class ExactReference:
    """Exact KPCA of the sub-problem: the rows, their centred kernel matrix and its
    ``k`` leading eigenpairs (shared by the candidates a selection compares)."""

    rows: np.ndarray
    centred: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray


def _centre(K: np.ndarray) -> np.ndarray:
    """``H K H`` with ``H = I - 11^T / s`` (docs/math.md, "Centring in feature space")."""
    col = K.mean(axis=0)
    return K - col[None, :] - col[:, None] + col.mean()


def _top_pairs(A: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` leading eigenpairs of the symmetric ``A`` (s x s), descending.

    As the feature covariance's solve (:func:`kpca.approx._feature_pca.solve`, the
    setting ``feature_lanczos_min_size``): Lanczos to full precision (``O(s^2)`` a
    product) when at most a tenth of the pairs of a large matrix are wanted, LAPACK's
    ``O(s^3)`` reduction otherwise or when ARPACK fails.
    """
    s = A.shape[0]
    if s >= get_config()["feature_lanczos_min_size"] and k <= s // 10:
        try:
            v0 = np.random.default_rng(s).standard_normal(s)
            # a product is 2 s^2 flops between two synchronisations: threads only
            # where that pays for them (the setting blas_flops_per_thread)
            with blas_threads(call_threads(2.0 * s * s)):
                w, V = eigsh(A, k=k, which="LA", v0=v0, tol=0)
            order = np.argsort(w)[::-1]
            return w[order], V[:, order]
        except (ArpackError, ArpackNoConvergence):
            pass
    w, V = top_eigh(A, k)
    return w[::-1].copy(), V[:, ::-1].copy()


def exact_reference(kernel, rows: np.ndarray, k: int) -> ExactReference:
    """Exact KPCA of ``rows``: ``K~_S`` and its ``k`` leading eigenpairs.

    Parameters
    ----------
    kernel : Kernel
        The resolved kernel (the approximate model's ``kernel_``).
    rows : ndarray of shape (s, d)
    k : int
        Leading eigenpairs wanted (clipped to ``s - 1``, the rank of ``K~_S``).

    Cost: ``O(s^2 d)`` for the kernel, and ``O(s^2)`` a Lanczos product (at most
    ``4 s^3 / 3`` flops for LAPACK's reduction) for the ``k`` eigenpairs.
    """
    rows = np.asarray(rows, dtype=np.float64)
    s = rows.shape[0]
    K = np.asarray(kernel.block(rows), dtype=np.float64)
    Kc = _centre(0.5 * (K + K.T))
    k = max(1, min(int(k), s - 1))
    mu, V = _top_pairs(Kc, k)
    return ExactReference(rows, Kc, mu, V)


def compare(ref: ExactReference, features: np.ndarray, rng: np.random.RandomState
            ) -> ApproximationError:
    """The approximation's error on the sub-problem ``ref``.

    Parameters
    ----------
    ref : ExactReference
    features : ndarray of shape (s, q)
        The approximate features ``Phi_S`` of ``ref.rows``: ``Phi_S Phi_S^T`` is the
        approximate kernel matrix of the rows.
    rng : RandomState
        The start vector of the Lanczos iteration for ``kernel_error``.

    Cost: ``O(s^2 q)`` for the approximate kernel matrix, then as
    :func:`exact_reference` for its ``k`` eigenpairs, and a Lanczos run for
    ``kernel_error``.
    """
    F = np.asarray(features, dtype=np.float64)
    F = F - F.mean(axis=0)
    s, q = F.shape
    k = ref.eigenvalues.shape[0]
    # PCA of the approximate features on S: the eigenpairs of the centred approximate
    # kernel matrix F~ F~^T (the left singular pairs of F~)
    G = F @ F.T
    mu_hat, U = _top_pairs(G, k)
    mu_hat = np.maximum(mu_hat, 0.0)
    mu = ref.eigenvalues
    top = max(float(mu[0]), np.finfo(np.float64).tiny)
    # relative to mu_l; eigenvalues at rounding level of mu_1 are compared with mu_1
    denom = np.maximum(mu, top * 1e3 * np.finfo(np.float64).eps)
    mu_hat = np.concatenate([mu_hat, np.zeros(k - mu_hat.shape[0])])
    eig = np.abs(mu_hat - mu) / denom
    # sines of the principal angles: the singular values of (I - V V^T) U, accurate
    # for small angles (where sqrt(1 - cos^2) loses them)
    V = ref.eigenvectors
    U = np.column_stack([U, np.zeros((s, k - U.shape[1]))]) if U.shape[1] < k else U
    R = U - V @ (V.T @ U)
    sines = np.clip(np.linalg.svd(R, compute_uv=False), 0.0, 1.0)
    E = ref.centred - G
    v0 = rng.uniform(-1.0, 1.0, size=s)
    # ||E||_2: E is symmetric (PSD for Nyström, indefinite for random features)
    if s > 2:
        with blas_threads(call_threads(2.0 * s * s)):
            norm = float(abs(eigsh(E, k=1, which="LM", v0=v0, tol=1e-3,
                                   return_eigenvectors=False)[0]))
    else:
        norm = float(np.abs(np.linalg.eigvalsh(E)).max())
    return ApproximationError(s, eig, np.sort(sines)[::-1], norm / top)
