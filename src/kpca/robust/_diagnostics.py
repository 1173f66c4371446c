"""Outlier and influence diagnostics as functions of a fitted estimator.

Every kpca estimator has these as methods (``est.outlier_map(X)`` ...); the
functions below are the same thing for code that prefers functions. The
definitions (score and orthogonal distances, ROBPCA cut-offs) are in
:mod:`kpca.diagnostics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._base import BaseKernelPCA
from .._kernel_pca import KernelPCA
from ..diagnostics import QUANTILE, Influence, OutlierMap


def _check(est: Any) -> None:
    if not isinstance(est, BaseKernelPCA):
        raise TypeError(f"est must be a fitted kpca estimator; got {type(est).__name__}.")
    check_is_fitted(est)


def raw_projection(est, X=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
    """Raw scores ``<phi(t) - theta, f_l>`` and ``||phi(t) - theta||^2`` (float64)."""
    _check(est)
    return est.raw_projection(X, kernel_diag=kernel_diag)


def distances(est, X=None, *, kernel_diag=None) -> tuple[np.ndarray, np.ndarray]:
    """Score and orthogonal distances of the rows of ``X`` (training data if None)."""
    _check(est)
    return est.distances(X, kernel_diag=kernel_diag)


def score_distance(est, X=None, *, kernel_diag=None) -> np.ndarray:
    """Kernelised Mahalanobis distance inside the subspace."""
    return distances(est, X, kernel_diag=kernel_diag)[0]


def orthogonal_distance(est, X=None, *, kernel_diag=None) -> np.ndarray:
    """Feature-space distance to the fitted affine subspace."""
    return distances(est, X, kernel_diag=kernel_diag)[1]


def cutoffs(est, *, quantile: float = QUANTILE) -> tuple[float, float]:
    """``(score distance cut-off, orthogonal distance cut-off)`` of a fitted model."""
    _check(est)
    return est.cutoffs(quantile=quantile)


def outlier_map(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> OutlierMap:
    """Distances, cut-offs and flags for the rows of ``X`` (training data if None)."""
    _check(est)
    return est.outlier_map(X, quantile=quantile, kernel_diag=kernel_diag)


def outlier_scores(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> np.ndarray:
    """``max(SD / SD_cut, OD / OD_cut)`` per row: larger is more outlying, > 1 is flagged."""
    _check(est)
    return est.outlier_scores(X, quantile=quantile, kernel_diag=kernel_diag)


def outliers(est, X=None, *, quantile: float = QUANTILE, kernel_diag=None) -> np.ndarray:
    """Boolean mask: rows whose score or orthogonal distance exceeds its cut-off."""
    _check(est)
    return est.outliers(X, quantile=quantile, kernel_diag=kernel_diag)


def influence(est) -> Influence:
    """Empirical influence of every training point on eigenvalues and eigenvectors.

    For the exact estimators (:class:`kpca.KernelPCA` and its robust and ANOVA
    subclasses): O(n k^2) from the fitted eigenpairs, see
    :class:`kpca.diagnostics.Influence`.
    """
    _check(est)
    if not isinstance(est, KernelPCA):
        raise TypeError(
            f"influence needs the eigenvectors of the training kernel matrix, which "
            f"{type(est).__name__} does not compute; use KernelPCA or a robust estimator."
        )
    return est.influence()
