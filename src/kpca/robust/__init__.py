"""Robust kernel PCA, outlier and influence diagnostics, ANOVA KPCA.

See docs/math.md, "Robust KPCA and diagnostics" and "ANOVA KPCA".

Estimators (drop-in :class:`kpca.KernelPCA` subclasses):

* :class:`SphericalKernelPCA` -- kernel spatial median + PCA of the spatial signs;
* :class:`WeightedKernelPCA` -- Campbell-weighted feature-space covariance;
* :class:`KernelROBPCA` -- ROBPCA in feature space (h-subset, MCD, ROBPCA's cut-offs);
* :class:`AnovaKernelPCA` -- ANOVA kernel with learned per-variable weights ``beta_``.

Diagnostics are methods of every kpca estimator (``est.outlier_map(X)``,
``est.score_samples(X)``, ...); the functions :func:`score_distance`,
:func:`orthogonal_distance`, :func:`distances`, :func:`cutoffs`,
:func:`outlier_map`, :func:`outlier_scores`, :func:`outliers`, :func:`influence`
and :func:`raw_projection` are the same for any fitted estimator. The plot is
:func:`kpca.plotting.plot_outlier_map`.
"""

from ..diagnostics import Influence, OutlierMap
from ._anova import AnovaKernelPCA, beta_update
from ._diagnostics import (
    cutoffs,
    distances,
    influence,
    orthogonal_distance,
    outlier_map,
    outlier_scores,
    outliers,
    raw_projection,
    score_distance,
)
from ._robpca import KernelROBPCA
from ._spherical import SphericalKernelPCA
from ._weighted import WeightedKernelPCA, campbell_weights

__all__ = [
    "AnovaKernelPCA",
    "Influence",
    "KernelROBPCA",
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
    "raw_projection",
    "score_distance",
]
