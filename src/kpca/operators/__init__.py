"""Kernel matrices as linear operators (``matmat``), and centring as a wrapper."""

from ._base import KernelOperator, host_matmat
from ._centering import CenteredOperator, Centering, center
from ._dense import DenseOperator
from ._device import DeviceKernelOperator
from ._gram import (
    float32_eigen_error,
    gram_matrix,
    kernel_rows,
    n_threads,
    storage_dtype,
)
from ._growing import GrowingGram, NewColumns
from ._growing_device import DeviceCenteredGrowing, DeviceGrowingGram, DeviceNewColumns
from ._rows import compiled_rows
from ._tiled import NATIVE_VARIANT, TiledKernelOperator, TileLayout, tile_layout

__all__ = [
    "NATIVE_VARIANT",
    "CenteredOperator",
    "Centering",
    "DenseOperator",
    "DeviceCenteredGrowing",
    "DeviceGrowingGram",
    "DeviceKernelOperator",
    "DeviceNewColumns",
    "GrowingGram",
    "NewColumns",
    "KernelOperator",
    "TiledKernelOperator",
    "TileLayout",
    "tile_layout",
    "center",
    "compiled_rows",
    "float32_eigen_error",
    "storage_dtype",
    "gram_matrix",
    "host_matmat",
    "kernel_rows",
    "n_threads",
]
