"""Kernels: objects that evaluate blocks ``k(X1, X2)`` and ``diag(X)``.

See :mod:`kpca.kernels._base` for the contract.
"""

from ._base import Kernel, dot_block, sq_euclidean_block
from ._explicit import explicit_features, feature_dimension
from ._features import FourierFeatures
from ._gamma import GAMMA_HEURISTICS, check_gamma, resolve_gamma
from ._standard import (
    KERNELS,
    RBF,
    Anova,
    Callable,
    Cosine,
    Laplacian,
    Linear,
    Polynomial,
    Precomputed,
    Sigmoid,
    make_kernel,
)
from ._string import Spectrum, as_strings, pgram_counts

KERNELS["spectrum"] = Spectrum

__all__ = [
    "explicit_features",
    "feature_dimension",
    "GAMMA_HEURISTICS",
    "KERNELS",
    "RBF",
    "Anova",
    "Callable",
    "Cosine",
    "FourierFeatures",
    "Kernel",
    "Laplacian",
    "Linear",
    "Polynomial",
    "Precomputed",
    "Sigmoid",
    "Spectrum",
    "as_strings",
    "check_gamma",
    "dot_block",
    "make_kernel",
    "pgram_counts",
    "resolve_gamma",
    "sq_euclidean_block",
]
