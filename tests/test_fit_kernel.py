"""The pipeline's kernel strategies (kpca._fit): ``alternate`` runs start -> (kernel ->
decompose -> update)* in that order and returns the last decomposition; ``FixedKernel``
is one decomposition of one kernel, checked against the dense eigendecomposition of the
centred kernel matrix."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

from kpca._fit import FitSettings, FixedKernel, KernelStrategy, MeanCentring, alternate, decompose
from kpca.kernels import RBF


def _rows(n=80, d=3, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _dense_top(X, gamma, k):
    n = len(X)
    H = np.eye(n) - 1.0 / n
    return np.sort(np.linalg.eigvalsh(H @ rbf_kernel(X, gamma=gamma) @ H))[::-1][:k]


def test_fixed_kernel_is_one_decomposition_of_its_kernel():
    X = _rows()
    settings = FitSettings(n_components=4, eigen_solver="dense")
    kernel = RBF(gamma=0.4)
    got_kernel, dec = alternate(X, FixedKernel(kernel), settings, MeanCentring(),
                                np.random.RandomState(0))
    assert got_kernel is kernel
    np.testing.assert_allclose(dec.result.values, _dense_top(X, 0.4, 4), rtol=1e-10)
    ref = decompose(X, kernel, settings, MeanCentring(), np.random.RandomState(0))
    np.testing.assert_array_equal(dec.result.values, ref.result.values)
    np.testing.assert_array_equal(dec.result.vectors, ref.result.vectors)
    assert FixedKernel(kernel).fitted() == {}


class _Halving(KernelStrategy):
    """A toy learned kernel: gamma halves after each decomposition, three times; it
    records every call so the order of the steps can be read back."""

    def __init__(self):
        self.calls, self.gamma, self.seen = [], None, []

    def start(self, X, settings, rng):
        self.calls.append("start")
        self.gamma = 1.0 / X.shape[1]

    def kernel(self, X, rng):
        self.calls.append("kernel")
        return RBF(gamma=self.gamma)

    def update(self, X, kernel, dec, settings):
        self.calls.append("update")
        assert kernel.gamma == self.gamma  # the decomposition of the kernel just made
        self.seen.append((kernel.gamma, dec.result.values.copy()))
        self.gamma /= 2
        return len(self.seen) == 3

    def fitted(self):
        return {"gammas_": [g for g, _ in self.seen]}


def test_alternate_runs_start_then_kernel_decompose_update_until_done():
    X = _rows(60, 4, seed=1)
    strategy = _Halving()
    settings = FitSettings(n_components=3, eigen_solver="dense")
    kernel, dec = alternate(X, strategy, settings, MeanCentring(), np.random.RandomState(0))
    assert strategy.calls == ["start"] + ["kernel", "update"] * 3
    assert [g for g, _ in strategy.seen] == [0.25, 0.125, 0.0625]
    # each update saw its own kernel's decomposition; the last one is returned
    for g, values in strategy.seen:
        np.testing.assert_allclose(values, _dense_top(X, g, 3), rtol=1e-10)
    assert kernel.gamma == 0.0625
    np.testing.assert_array_equal(dec.result.values, strategy.seen[-1][1])
    assert strategy.fitted() == {"gammas_": [0.25, 0.125, 0.0625]}


def test_a_strategy_must_give_its_kernel_and_update():
    class Incomplete(KernelStrategy):
        def kernel(self, X, rng):
            return RBF(gamma=1.0)

    with pytest.raises(TypeError, match="update"):
        Incomplete()
