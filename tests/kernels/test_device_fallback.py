"""A fused device kernel that fails to build or launch under device_rbf_product='auto'
gives way with a warning naming the error; running out of memory propagates."""

from __future__ import annotations

import pytest

from kpca.kernels._device import _unless_it_fails


class _OutOfMemory(Exception):
    pass


def _raise(exc):
    def run():
        raise exc
    return run


def test_a_failed_kernel_warns_and_gives_way():
    with pytest.warns(RuntimeWarning, match=r"kpca's Triton RBF product failed "
                      r"\(ValueError: no ptxas\); attention serves instead"):
        out = _unless_it_fails(_raise(ValueError("no ptxas")), _OutOfMemory,
                               "Triton RBF product", "attention serves instead")
    assert out is None


def test_out_of_memory_propagates():
    with pytest.raises(_OutOfMemory):
        _unless_it_fails(_raise(_OutOfMemory()), _OutOfMemory, "CuPy RBF kernel", "tiles")


def test_a_working_kernel_gives_its_result():
    assert _unless_it_fails(lambda: 42, _OutOfMemory, "CuPy RBF kernel", "tiles") == 42
