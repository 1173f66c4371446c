"""Approximate kernel PCA for large ``n``: Nyström and random Fourier features, both
PCA on an explicit feature map streamed over row blocks (docs/math.md, "Large n:
Nyström and random features")."""

from ._base import FeatureKernelPCA, FeatureMap, inverse_sqrt, landmark_subspace, row_blocks
from ._error import ApproximationError, ExactReference
from ._feature_pca import FeaturePCA, FeatureStats, accumulate, solve
from ._nystrom import LANDMARKS, NystromKernelPCA, NystromMap
from ._random_features import RandomFeatureKernelPCA

__all__ = [
    "LANDMARKS",
    "ApproximationError",
    "ExactReference",
    "FeatureKernelPCA",
    "FeatureMap",
    "FeaturePCA",
    "FeatureStats",
    "NystromKernelPCA",
    "NystromMap",
    "RandomFeatureKernelPCA",
    "accumulate",
    "inverse_sqrt",
    "landmark_subspace",
    "row_blocks",
    "solve",
]
