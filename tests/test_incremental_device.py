"""IncrementalKernelPCA on device arrays (PyTorch tensors, CuPy arrays): issue 35, item 4.

``fit`` and ``partial_fit`` take them alike: the rows are copied to the host, where the
model keeps them and their kernel values and updates its eigenpairs (docs/scaling.md,
"GPU and the Array API"); ``transform`` answers in the arrays' namespace and device.
Every model is compared with the one NumPy arrays of the same values give (the same
code after the copy: equal bit for bit) and, independently, with the dense float64
eigendecomposition of the centred kernel matrix of the rows seen (NumPy, scikit-learn's
pairwise kernels). The tensors are CPU tensors in CI; ``KPCA_TEST_TORCH_DEVICE=cuda``
puts them on a GPU and ``KPCA_TEST_CUPY=1`` adds CuPy arrays (how the suite runs on a
GPU machine), as in tests/test_array_api.py.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import pytest
from scipy.linalg import eigh
from sklearn.metrics.pairwise import pairwise_kernels
from threadpoolctl import threadpool_limits

import kpca
from kpca import IncrementalKernelPCA
from kpca._array_api import to_host

NAMESPACES = ((["torch"] if importlib.util.find_spec("torch") else [])
              + (["cupy"] if os.environ.get("KPCA_TEST_CUPY") else []))
pytestmark = pytest.mark.skipif(not NAMESPACES, reason="needs PyTorch (or KPCA_TEST_CUPY=1)")

#: the solvers' residual target by storage precision (kpca.solvers.default_rtol)
RTOL = {np.float64: 1e-8, np.float32: 1e-5}
#: the update path at these sizes: block Lanczos for the fit, extend_eigenpairs for each
#: batch (as at the benchmark's 6,000-10,000 rows; KernelPCA's cost model would solve
#: 600-800 rows with ARPACK, which the estimator then applies to the stored matrix)
UPDATE_PATH = dict(blas2_flop_cost=1e3)


def asarray(name, A):
    if name == "torch":
        import torch

        return torch.asarray(np.ascontiguousarray(A),
                             device=os.environ.get("KPCA_TEST_TORCH_DEVICE", "cpu"))
    import cupy

    return cupy.asarray(A)


def namespace_of(A) -> str:
    return type(A).__module__.partition(".")[0]


def device_of(A) -> str:
    return str(getattr(A, "device", "cpu"))


def _rows(n, seed=0):
    """20 Gaussian blobs in 20 dimensions (the benchmark's blobs), gamma = 1/(d Var X)."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=20, centers=20, cluster_std=3.0, random_state=seed)
    return X, 1.0 / (20 * X.var())


@functools.lru_cache(maxsize=8)
def _reference(n: int) -> tuple[np.ndarray, np.ndarray]:
    """H K H of the first ``n`` rows of ``_rows`` and its top eigenvalues (float64 LAPACK,
    descending; only those the tests compare, so the reference stays cheap)."""
    X, gamma = _rows(800)
    K = pairwise_kernels(X[:n], metric="rbf", gamma=gamma)
    Kc = K - K.mean(axis=0)[None, :] - K.mean(axis=1)[:, None] + K.mean()
    # one BLAS thread: threaded LAPACK on a machine whose cores are busy waits on its
    # own threads (an 800 x 800 solve took 8 s against 0.2 s on one thread)
    with threadpool_limits(1):
        w = eigh(Kc, eigvals_only=True, subset_by_index=[n - 12, n - 1])[::-1]
    return Kc, w


def assert_batch_kpca(model, X):
    """The model's pairs against the dense float64 eigendecomposition of H K H: residuals
    within the solvers' target, eigenvalues within what it implies."""
    Kc, w = _reference(X.shape[0])
    np.testing.assert_array_equal(X, _rows(800)[0][: X.shape[0]].astype(X.dtype))
    mu = np.asarray(model.eigenvalues_, dtype=np.float64)
    V = np.asarray(model.eigenvectors_, dtype=np.float64)
    tol = RTOL[model.gram_.dtype.type]
    res = np.linalg.norm(Kc @ V - V * mu, axis=0) / w[0]
    assert res.max() <= 1.5 * tol, res
    assert np.max(np.abs(mu - w[: mu.shape[0]])) / w[0] <= 1e3 * tol**2 + 1e-6


def assert_same_model(a, b):
    """Two models fitted on the same values: the same code after the host copy."""
    assert a.n_samples_seen_ == b.n_samples_seen_ and a.mode_ == b.mode_
    np.testing.assert_array_equal(a.eigenvalues_, b.eigenvalues_)
    if a.mode_ == "exact":
        np.testing.assert_array_equal(a.eigenvectors_, b.eigenvectors_)
    np.testing.assert_array_equal(a.X_fit_, b.X_fit_)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_and_partial_fit_take_device_arrays_and_give_the_numpy_model(name, dtype):
    X, gamma = _rows(800)
    X = X.astype(dtype)
    T, _ = _rows(15, seed=1)
    T = T.astype(dtype)
    kw = dict(n_components=10, gamma=gamma)
    with kpca.config_context(**UPDATE_PATH):
        ref = IncrementalKernelPCA(**kw).fit(X[:600])
        dev = IncrementalKernelPCA(**kw).fit(asarray(name, X[:600]))
        assert dev.n_passes_ >= 1  # block Lanczos, not a dense solve
        assert_same_model(dev, ref)
        assert_batch_kpca(dev, X[:600])
        for s, e in [(600, 700), (700, 800)]:
            ref.partial_fit(X[s:e])
            dev.partial_fit(asarray(name, X[s:e]))
            assert_same_model(dev, ref)
            assert_batch_kpca(dev, X[:e])
    assert dev.n_passes_ >= 1  # the last batch was an update with a refinement pass
    # the model lives on the host, in the input's precision
    assert isinstance(dev.X_fit_, np.ndarray) and dev.X_fit_.dtype == dtype
    # transform answers on the input's device, as the NumPy model does
    Td = asarray(name, T)
    Y = dev.transform(Td)
    assert namespace_of(Y) == name and device_of(Y) == device_of(Td)
    Yr = ref.transform(T)
    np.testing.assert_allclose(to_host(Y), Yr, rtol=0,
                               atol={np.float64: 1e-10, np.float32: 1e-5}[dtype]
                               * np.abs(Yr).max())


@pytest.mark.parametrize("name", NAMESPACES)
def test_a_stream_of_device_batches_equals_the_numpy_stream(name):
    """partial_fit from the first batch on (the first is a batch fit, then updates),
    and the two kinds of arrays mixed in one stream, in either order."""
    X, gamma = _rows(800)
    X = X[:750]
    cuts = [0, 450, 600, 750]
    with kpca.config_context(**UPDATE_PATH):
        ref, dev, mixed = (IncrementalKernelPCA(10, gamma=gamma) for _ in range(3))
        for i, (s, e) in enumerate(zip(cuts, cuts[1:], strict=False)):
            ref.partial_fit(X[s:e])
            dev.partial_fit(asarray(name, X[s:e]))
            mixed.partial_fit(X[s:e] if i % 2 else asarray(name, X[s:e]))
            assert_same_model(dev, ref)
            assert_same_model(mixed, ref)
    assert_batch_kpca(dev, X)


@pytest.mark.parametrize("name", NAMESPACES)
def test_bounded_mode_takes_device_arrays_alike(name):
    X, gamma = _rows(900)
    kw = dict(n_components=5, gamma=gamma, mode="bounded", max_rows=120, random_state=0,
              batch_size=300)
    ref = IncrementalKernelPCA(**kw).fit(X)
    dev = IncrementalKernelPCA(**kw).fit(asarray(name, X))
    assert_same_model(dev, ref)
    ref.partial_fit(X[:200])
    dev.partial_fit(asarray(name, X[:200]))
    assert_same_model(dev, ref)


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_inputs_are_not_modified(name):
    X, gamma = _rows(500)
    Xd = asarray(name, X)
    before = to_host(Xd)
    model = IncrementalKernelPCA(4, gamma=gamma).fit(Xd)
    model.partial_fit(Xd[:50])
    np.testing.assert_array_equal(to_host(Xd), before)
    # the model keeps its own rows: changing the input afterwards changes nothing
    Xd[0, 0] = 1e6
    assert model.X_fit_[0, 0] == before[0, 0] != 1e6


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_bad_device_rows_are_refused_alike_and_leave_the_model_unchanged(name, method):
    X, gamma = _rows(500)
    model = IncrementalKernelPCA(4, gamma=gamma).fit(X[:400])
    saved = model.eigenvalues_.copy()
    bad = X[400:].copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        getattr(model, method)(asarray(name, bad))
    with pytest.raises(ValueError, match="X has 19 features, but IncrementalKernelPCA is "
                                         "expecting 20"):
        model.partial_fit(asarray(name, X[400:, :19]))
    np.testing.assert_array_equal(model.eigenvalues_, saved)
    assert model.n_samples_seen_ == 400
