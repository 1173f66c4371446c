"""The array namespaces the device tests run on, and how they make their arrays.

array-api-strict (the standard's reference: only the standard's operations, installed
with the test extra), PyTorch CPU tensors where PyTorch is installed, and CuPy arrays
with ``KPCA_TEST_CUPY=1``. ``KPCA_TEST_TORCH_DEVICE=cuda`` puts the PyTorch tensors on a
GPU: how the suite runs on a GPU machine (benchmarks/device_check.sh); CI has none.
"""

from __future__ import annotations

import importlib.util
import logging
import os

import numpy as np

NAMESPACES = (["array_api_strict"] + (["torch"] if importlib.util.find_spec("torch") else [])
              + (["cupy"] if os.environ.get("KPCA_TEST_CUPY") else []))
TORCH_DEVICE = os.environ.get("KPCA_TEST_TORCH_DEVICE", "cpu")


def asarray(name: str, A):
    """``A`` (NumPy) as an array of namespace ``name`` ('torch', 'cupy' or
    'array_api_strict'), on the test device."""
    if name == "torch":
        import torch

        return torch.asarray(np.ascontiguousarray(A), device=TORCH_DEVICE)
    if name == "cupy":
        import cupy

        return cupy.asarray(A)
    import array_api_strict

    return array_api_strict.asarray(A)


#: the robust device tests' storage cases: stored K (dense eigh on the device),
#: matrix-free K (block Lanczos; 2 MB holds the host's tiles but not the device's stored
#: 400 x 400 float64 matrix), the 'auto' plan
STORAGE = {
    "stored": dict(eigen_solver="dense"),
    "matrix-free": dict(eigen_solver="krylov", memory_limit="2MB", tol=1e-12),
    # the solver 'auto' picks, asked for residuals the comparisons' 1e-9 can rest on:
    # its default (1e-8 in float64) leaves a block Lanczos solve's vectors ~1e-8 from
    # ARPACK's or LAPACK's on the other path
    "auto": dict(tol=1e-12),
}


def same_namespace(out, name: str) -> None:
    """``out`` is an array of namespace ``name`` (its type's top-level module)."""
    mod = type(out).__module__.partition(".")[0]
    assert mod == name, (mod, name)


class KpcaEvents(logging.Handler):
    """A handler of kpca's INFO log records for a ``with`` block (attached to the
    'kpca' logger at INFO on entry, the logger's level restored on exit); subclasses
    read the events they need in ``emit``."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)

    def __enter__(self):
        log = logging.getLogger("kpca")
        self._level = log.level
        log.addHandler(self)
        log.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc) -> None:
        log = logging.getLogger("kpca")
        log.removeHandler(self)
        log.setLevel(self._level)
