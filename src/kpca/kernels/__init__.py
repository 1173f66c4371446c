"""Kernels: objects that evaluate blocks ``k(X1, X2)`` and ``diag(X)``.

See :class:`Kernel` for the contract: :meth:`Kernel.block` evaluates NumPy arrays and,
given their namespace, PyTorch, CuPy and other Array API arrays on their device.
"""

from ._base import (
    Kernel,
    array_namespace,
    check_device_kernel,
    check_finite_kernel,
    dot_block,
    sq_euclidean_block,
)
from ._device import device_block_product
from ._explicit import explicit_features, feature_dimension
from ._features import FourierFeatures
from ._gamma import GAMMA_HEURISTICS, check_gamma, resolve_gamma
from ._standard import (
    KERNEL_PARAMETER_CONSTRAINTS,
    KERNELS,
    NATIVE_RBF_VARIANT,
    RBF,
    Anova,
    Callable,
    Cosine,
    Laplacian,
    Linear,
    Polynomial,
    Precomputed,
    RBFPrepared,
    RBFRows,
    Sigmoid,
    check_kernel_parameters,
    make_kernel,
)
from ._string import Spectrum, as_strings, pgram_counts

KERNELS["spectrum"] = Spectrum

__all__ = [
    "array_namespace",
    "check_device_kernel",
    "check_finite_kernel",
    "device_block_product",
    "explicit_features",
    "feature_dimension",
    "GAMMA_HEURISTICS",
    "KERNEL_PARAMETER_CONSTRAINTS",
    "KERNELS",
    "NATIVE_RBF_VARIANT",
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
    "RBFPrepared",
    "RBFRows",
    "Sigmoid",
    "Spectrum",
    "as_strings",
    "check_gamma",
    "check_kernel_parameters",
    "dot_block",
    "make_kernel",
    "pgram_counts",
    "resolve_gamma",
    "sq_euclidean_block",
]
