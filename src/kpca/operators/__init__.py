"""Kernel matrices as linear operators (``matmat``), and centring as a wrapper."""

from ._base import KernelOperator
from ._centering import CenteredOperator, Centering, center
from ._dense import DenseOperator

__all__ = ["CenteredOperator", "Centering", "DenseOperator", "KernelOperator", "center"]
