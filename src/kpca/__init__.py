"""kpca: kernel principal component analysis.

A drop-in replacement for :class:`sklearn.decomposition.KernelPCA`, built as
kernel -> centred operator -> top-k eigensolver -> fitted subspace. Every
estimator produces a :class:`FittedSubspace` (``subspace_``) and follows one
contract: ``transform``, pre-images, outlier detection, :func:`save` / :func:`load`.
"""

from . import kernels, operators, solvers
from ._incremental import IncrementalKernelPCA
from ._kernel_pca import KernelPCA
from ._rows import RowSource
from ._version import __version__
from .approx import NystromKernelPCA, RandomFeatureKernelPCA
from .io import load, save
from .robust import AnovaKernelPCA, KernelROBPCA, SphericalKernelPCA, WeightedKernelPCA
from .subspace import FittedSubspace

#: every estimator, by its command-line name
ESTIMATORS = {
    "exact": KernelPCA,
    "nystrom": NystromKernelPCA,
    "random-features": RandomFeatureKernelPCA,
    "weighted": WeightedKernelPCA,
    "spherical": SphericalKernelPCA,
    "anova": AnovaKernelPCA,
    "robpca": KernelROBPCA,
    "incremental": IncrementalKernelPCA,
}

__all__ = [
    "ESTIMATORS",
    "AnovaKernelPCA",
    "FittedSubspace",
    "IncrementalKernelPCA",
    "KernelPCA",
    "KernelROBPCA",
    "NystromKernelPCA",
    "RandomFeatureKernelPCA",
    "RowSource",
    "SphericalKernelPCA",
    "WeightedKernelPCA",
    "__version__",
    "kernels",
    "load",
    "operators",
    "robust",
    "save",
    "solvers",
]
