"""Kernel matrices as linear operators (``matmat``), and centring as a wrapper."""

from ._base import KernelOperator
from ._centering import CenteredOperator, Centering, center
from ._dense import DenseOperator
from ._gram import float32_eigen_error, gram_matrix, n_threads
from ._tiled import TiledKernelOperator

__all__ = [
    "CenteredOperator",
    "Centering",
    "DenseOperator",
    "KernelOperator",
    "TiledKernelOperator",
    "center",
    "float32_eigen_error",
    "gram_matrix",
    "n_threads",
]
