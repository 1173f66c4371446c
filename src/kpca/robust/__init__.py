"""Robust kernel PCA, outlier and influence diagnostics, ANOVA KPCA.

See docs/math.md, "Robust KPCA and diagnostics" and "ANOVA KPCA".

Estimators (drop-in :class:`kpca.KernelPCA` subclasses):

* :class:`SphericalKernelPCA` -- kernel spatial median + PCA of the spatial signs;
* :class:`WeightedKernelPCA` -- Campbell-weighted feature-space covariance;
* :class:`AnovaKernelPCA` -- ANOVA kernel with learned per-variable weights ``beta_``.

Diagnostics (functions of any fitted KPCA model, also methods of the estimators
above): :func:`score_distance`, :func:`orthogonal_distance`, :func:`distances`,
:func:`cutoffs`, :func:`outlier_map`, :func:`outlier_scores`, :func:`outliers`,
:func:`plot_outlier_map`, :func:`influence`.
"""

from ._anova import AnovaKernelPCA, beta_update
from ._base import DiagnosticsMixin
from ._diagnostics import (
    Influence,
    OutlierMap,
    cutoffs,
    distances,
    influence,
    orthogonal_distance,
    outlier_map,
    outlier_scores,
    outliers,
    plot_outlier_map,
    raw_projection,
    score_distance,
)
from ._spherical import SphericalKernelPCA
from ._weighted import WeightedKernelPCA, campbell_weights

__all__ = [
    "AnovaKernelPCA",
    "DiagnosticsMixin",
    "Influence",
    "OutlierMap",
    "SphericalKernelPCA",
    "WeightedKernelPCA",
    "beta_update",
    "campbell_weights",
    "cutoffs",
    "distances",
    "influence",
    "orthogonal_distance",
    "outlier_map",
    "outlier_scores",
    "outliers",
    "plot_outlier_map",
    "raw_projection",
    "score_distance",
]
