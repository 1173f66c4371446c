"""``transform`` evaluated in cache-sized pieces of kernel rows (FittedSubspace), against
the dense formula ``K~_t V / sqrt(mu)`` and against the unpieced path."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

import kpca
from kpca.robust import SphericalKernelPCA
from kpca.subspace import _engines

GAMMA = 0.3


@pytest.fixture
def tiny_pieces():
    # 8 x 7 pieces on 60 expansion points and 37 new rows: ragged in both directions
    with kpca.config_context(fused_rows=8, fused_cols=7):
        yield


def _data(dtype):
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 4)).astype(dtype), rng.normal(size=(37, 4)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_transform_in_pieces_equals_the_centred_kernel_formula(dtype, precision, tiny_pieces):
    X, T = _data(dtype)
    model = kpca.KernelPCA(5, kernel="rbf", gamma=GAMMA, precision=precision).fit(X)
    K = rbf_kernel(X.astype(np.float64), gamma=GAMMA)
    Kt = rbf_kernel(T.astype(np.float64), X.astype(np.float64), gamma=GAMMA)
    Kt_c = Kt - Kt.mean(axis=1, keepdims=True) - K.mean(axis=0)[None, :] + K.mean()
    ref = Kt_c @ (model.eigenvectors_ / np.sqrt(model.eigenvalues_))
    Z = model.transform(T)
    assert Z.dtype == dtype and Z.shape == (37, 5)
    tol = 1e-10 if (dtype, precision) == (np.float64, "float64") else 2e-5
    np.testing.assert_allclose(Z, ref, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("estimator", [
    lambda: kpca.KernelPCA(4, kernel="rbf", gamma=GAMMA),
    lambda: SphericalKernelPCA(4, kernel="rbf", gamma=GAMMA),  # normalised scores
    lambda: kpca.NystromKernelPCA(4, kernel="rbf", gamma=GAMMA, n_landmarks=20,
                                  random_state=0),
])
def test_pieces_and_whole_rows_give_the_same_scores(estimator, tiny_pieces, monkeypatch):
    X, T = _data(np.float64)
    model = estimator().fit(X)
    calls = []
    fused = _engines.transform_fused
    monkeypatch.setattr(_engines, "transform_fused",
                        lambda space, *a: calls.append(1) or fused(space, *a))
    pieces = model.transform(T)
    assert calls, "the pieced path was not taken"
    monkeypatch.setattr(_engines, "fusable", lambda space, X: False)
    whole = model.transform(T)
    np.testing.assert_allclose(pieces, whole, rtol=1e-10, atol=1e-12)
