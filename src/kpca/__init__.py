"""kpca: kernel principal component analysis.

A drop-in replacement for :class:`sklearn.decomposition.KernelPCA`, built as
kernel -> centred operator -> top-k eigensolver.
"""

from . import kernels, operators, solvers
from ._kernel_pca import KernelPCA
from .approx import NystromKernelPCA, RandomFeatureKernelPCA
from .robust import AnovaKernelPCA, SphericalKernelPCA, WeightedKernelPCA

__version__ = "0.1.0"

__all__ = [
    "KernelPCA", "NystromKernelPCA", "RandomFeatureKernelPCA",
    "__version__", "kernels", "operators", "solvers",
]
__all__ += ["AnovaKernelPCA", "SphericalKernelPCA", "WeightedKernelPCA", "robust"]
