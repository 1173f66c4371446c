"""IncrementalKernelPCA on device arrays (PyTorch tensors, CuPy arrays, array-api-strict
arrays): issue 35, item 4.

``fit`` and ``partial_fit`` compute on the arrays' device: the exact mode's kernel
values are stored there (:class:`kpca.operators.DeviceGrowingGram`), and the centring,
the batch fit's block Lanczos and each update's Rayleigh-Ritz and refinement run there;
the bounded mode evaluates the batch's kernel values against the landmarks, their
scatter and the swap residuals there. The fitted attributes are NumPy (as KernelPCA's on
such arrays); ``transform`` answers in the arrays' namespace and device.

Every device model is compared with the NumPy model of the same values and parameters
(itself tested against independent computations in tests/test_incremental.py):
eigenvalues, scores of new rows up to sign, and the same number of passes over the
stored matrix; and, independently, with the dense float64 eigendecomposition of the
centred kernel matrix of the rows seen (NumPy, scikit-learn's pairwise kernels). The
namespaces are those of tests/_device.py: array-api-strict (always: CI runs this file
without PyTorch), PyTorch CPU tensors where PyTorch is installed,
``KPCA_TEST_TORCH_DEVICE=cuda`` for CUDA tensors and ``KPCA_TEST_CUPY=1`` for CuPy arrays.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from _device import NAMESPACES, TORCH_DEVICE, asarray
from scipy.linalg import eigh
from sklearn.metrics.pairwise import pairwise_kernels
from threadpoolctl import threadpool_limits

import kpca
from kpca import IncrementalKernelPCA
from kpca._array_api import to_host
from kpca.operators import DeviceGrowingGram

pytest.importorskip("array_api_strict")

#: the solvers' residual target by storage precision (kpca.solvers.default_rtol)
RTOL = {np.float64: 1e-8, np.float32: 1e-5}
#: device model against NumPy model, relative to the largest value: eigenvalues agree to
#: about the square of the residual target, scores to the residual target over the gap
#: (measured on torch CPU: 4e-15 and 5e-8 eigenvalues in float64 and float32)
VALUE_TOL = {np.float64: 1e-10, np.float32: 1e-6}
SCORE_TOL = {np.float64: 1e-6, np.float32: 1e-3}
#: the update path at these sizes: block Lanczos for the fit, extend_eigenpairs for each
#: batch (as at the benchmark's 6,000-10,000 rows; KernelPCA's cost model would solve
#: 600-800 rows with ARPACK, which the estimator then applies to the stored matrix)
UPDATE_PATH = dict(blas2_flop_cost=1e3)


def namespace_of(A) -> str:
    return type(A).__module__.partition(".")[0]


def _rows(n, seed=0):
    """20 Gaussian blobs in 20 dimensions (the benchmark's blobs), gamma = 1/(d Var X)."""
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(n, n_features=20, centers=20, cluster_std=3.0, random_state=seed)
    return X, 1.0 / (20 * X.var())


@functools.lru_cache(maxsize=8)
def _reference(n: int, metric: str = "rbf") -> tuple[np.ndarray, np.ndarray]:
    """H K H of the first ``n`` rows of ``_rows`` and its top eigenvalues (float64 LAPACK,
    descending; only those the tests compare, so the reference stays cheap)."""
    X, gamma = _rows(800)
    params = dict(gamma=gamma) if metric == "rbf" else dict(gamma=gamma, degree=2, coef0=1)
    K = pairwise_kernels(X[:n], metric=metric, **params)
    Kc = K - K.mean(axis=0)[None, :] - K.mean(axis=1)[:, None] + K.mean()
    # one BLAS thread: threaded LAPACK on a machine whose cores are busy waits on its
    # own threads (an 800 x 800 solve took 8 s against 0.2 s on one thread)
    with threadpool_limits(1):
        w = eigh(Kc, eigvals_only=True, subset_by_index=[n - 12, n - 1])[::-1]
    return Kc, w


def assert_batch_kpca(model, X, metric="rbf"):
    """The model's pairs against the dense float64 eigendecomposition of H K H: residuals
    within the solvers' target, eigenvalues within what it implies."""
    Kc, w = _reference(X.shape[0], metric)
    np.testing.assert_array_equal(X, _rows(800)[0][: X.shape[0]].astype(X.dtype))
    mu = np.asarray(model.eigenvalues_, dtype=np.float64)
    V = np.asarray(model.eigenvectors_, dtype=np.float64)
    tol = RTOL[model.gram_.dtype.type]
    res = np.linalg.norm(Kc @ V - V * mu, axis=0) / w[0]
    assert res.max() <= 1.5 * tol, res
    assert np.max(np.abs(mu - w[: mu.shape[0]])) / w[0] <= 1e3 * tol**2 + 1e-6


def assert_close_model(dev, ref, T, dtype=np.float64, passes=True):
    """The device model against the NumPy model of the same values."""
    assert dev.n_samples_seen_ == ref.n_samples_seen_ and dev.mode_ == ref.mode_
    assert dev.n_components_ == ref.n_components_
    if passes:
        assert dev.n_passes_ == ref.n_passes_
    # the fitted attributes are NumPy, as KernelPCA's on device arrays
    for name in ("X_fit_", "eigenvalues_", "explained_variance_"):
        assert isinstance(getattr(dev, name), np.ndarray), name
    np.testing.assert_array_equal(dev.X_fit_, ref.X_fit_)
    top = float(ref.eigenvalues_[0])
    np.testing.assert_allclose(dev.eigenvalues_, ref.eigenvalues_, rtol=0,
                               atol=VALUE_TOL[dtype] * top)
    np.testing.assert_allclose(dev.explained_variance_ratio_, ref.explained_variance_ratio_,
                               rtol=0, atol=VALUE_TOL[dtype])
    Yr = ref.transform(T)
    Y = dev.transform(T)
    sign = np.where(np.sum(Y * Yr, axis=0) < 0, -1.0, 1.0)
    np.testing.assert_allclose(Y * sign, Yr, rtol=0,
                               atol=SCORE_TOL[dtype] * np.abs(Yr).max())


def assert_on_device(model, name):
    """The exact mode's stored kernel values live on the input's device."""
    gram = model.gram_
    assert isinstance(gram, DeviceGrowingGram)
    assert namespace_of(gram.K) == name
    if name == "torch":
        assert gram.K.device.type == TORCH_DEVICE.partition(":")[0]
    V, KV = gram.ritz
    assert namespace_of(V) == name and V.shape == model.ritz_vectors_.shape
    np.testing.assert_array_equal(to_host(V), model.ritz_vectors_)


@pytest.mark.filterwarnings("error::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_and_partial_fit_run_on_the_device_and_give_the_numpy_model(name, dtype):
    X, gamma = _rows(800)
    X = X.astype(dtype)
    T = _rows(15, seed=1)[0].astype(dtype)
    kw = dict(n_components=10, gamma=gamma)
    with kpca.config_context(**UPDATE_PATH):
        ref = IncrementalKernelPCA(**kw).fit(X[:600])
        dev = IncrementalKernelPCA(**kw).fit(asarray(name, X[:600]))
        assert dev.n_passes_ >= 1  # block Lanczos, not a dense solve
        assert_on_device(dev, name)
        assert_close_model(dev, ref, T, dtype)
        assert_batch_kpca(dev, X[:600])
        for s, e in [(600, 700), (700, 800)]:
            ref.partial_fit(X[s:e])
            dev.partial_fit(asarray(name, X[s:e]))
            assert_on_device(dev, name)
            assert_close_model(dev, ref, T, dtype)
            assert_batch_kpca(dev, X[:e])
    assert dev.n_passes_ >= 1  # the last batch was an update with a refinement pass
    assert dev.X_fit_.dtype == dtype and dev.eigenvalues_.dtype == dtype
    # transform answers on the input's device, as the NumPy model does
    Td = asarray(name, T)
    Y = dev.transform(Td)
    assert namespace_of(Y) == name and str(getattr(Y, "device", "")) == str(Td.device)


@pytest.mark.parametrize("name", NAMESPACES)
def test_a_stream_of_device_batches_equals_the_numpy_stream(name):
    """partial_fit from the first batch on (a batch fit, then updates); the two kinds of
    arrays mixed in one stream (the stored values move to where the batch is)."""
    X, gamma = _rows(800)
    X = X[:750]
    T = _rows(15, seed=1)[0]
    cuts = [0, 450, 600, 750]
    with kpca.config_context(**UPDATE_PATH):
        ref, dev, mixed = (IncrementalKernelPCA(10, gamma=gamma) for _ in range(3))
        for i, (s, e) in enumerate(zip(cuts, cuts[1:], strict=False)):
            ref.partial_fit(X[s:e])
            dev.partial_fit(asarray(name, X[s:e]))
            mixed.partial_fit(X[s:e] if i % 2 else asarray(name, X[s:e]))
            assert_close_model(dev, ref, T)
            assert_close_model(mixed, ref, T, passes=False)
            assert isinstance(mixed.gram_, DeviceGrowingGram) == (i % 2 == 0)
    assert_on_device(dev, name)
    assert_batch_kpca(dev, X)
    assert_batch_kpca(mixed, X)


@pytest.mark.parametrize("name", NAMESPACES)
def test_small_streams_on_the_device(name):
    """Up to ``dense_small_rows`` (200) both sides decompose the stored matrix (LAPACK;
    ``eigh`` on the device), with no pass. At ARPACK's sizes (300 rows here) the host
    re-solves the stored matrix; ARPACK is a host algorithm, so the device takes block
    Lanczos's path there (as KernelPCA's device solver does), i.e. updates: the same
    model to the solvers' tolerance, with passes of its own."""
    X, gamma = _rows(800)
    X = X[:360]
    T = _rows(15, seed=1)[0]
    ref, dev = IncrementalKernelPCA(6, gamma=gamma), IncrementalKernelPCA(6, gamma=gamma)
    for s, e in [(0, 150), (150, 180), (180, 200)]:
        ref.partial_fit(X[s:e])
        dev.partial_fit(asarray(name, X[s:e]))
        assert dev.n_passes_ == ref.n_passes_ == 0
        assert_close_model(dev, ref, T)
    assert_on_device(dev, name)
    assert_batch_kpca(dev, X[:200])
    for s, e in [(200, 300), (300, 330), (330, 360)]:
        ref.partial_fit(X[s:e])
        dev.partial_fit(asarray(name, X[s:e]))
        assert ref.n_passes_ == 0  # (ARPACK on the stored matrix: no counted pass)
        assert_close_model(dev, ref, T, passes=False)
        assert_batch_kpca(dev, X[:e])
    assert dev.n_passes_ >= 1
    assert_on_device(dev, name)


@pytest.mark.parametrize("name", NAMESPACES)
def test_a_kernel_with_a_large_constant_part_and_float32_storage(name):
    """A polynomial kernel (its values far from their centred ones: the stored values'
    shift matters in float32) stored in float32 from float64 rows."""
    X, gamma = _rows(800)
    X = X[:700]
    T = _rows(15, seed=1)[0]
    kw = dict(n_components=8, kernel="poly", gamma=gamma, degree=2, coef0=1,
              precision="float32")
    with kpca.config_context(**UPDATE_PATH):
        ref = IncrementalKernelPCA(**kw).fit(X[:600])
        dev = IncrementalKernelPCA(**kw).fit(asarray(name, X[:600]))
        ref.partial_fit(X[600:])
        dev.partial_fit(asarray(name, X[600:]))
    assert dev.gram_.dtype == np.float32
    assert_on_device(dev, name)
    assert_close_model(dev, ref, T, np.float32)
    assert_batch_kpca(dev, X, metric="poly")


@pytest.mark.parametrize("name", NAMESPACES)
def test_a_loaded_model_is_updated_on_the_device(name, tmp_path):
    """A saved model keeps no kernel values: the first device batch after loading
    evaluates the kept rows' on the device, then updates as the NumPy model does."""
    X, gamma = _rows(800)
    T = _rows(15, seed=1)[0]
    with kpca.config_context(**UPDATE_PATH):
        ref = IncrementalKernelPCA(10, gamma=gamma).fit(asarray(name, X[:600]))
        path = tmp_path / "model.kpca"
        kpca.save(ref, path)
        loaded = kpca.load(path)
        loaded.partial_fit(asarray(name, X[600:700]))
        ref.partial_fit(X[600:700])
    assert_on_device(loaded, name)
    assert_close_model(loaded, ref, T, passes=False)
    assert_batch_kpca(loaded, X[:700])


@pytest.mark.parametrize("name", NAMESPACES)
def test_a_kernel_of_numpy_arrays_only_runs_on_the_host_copy(name):
    """A Python callable kernel cannot evaluate device arrays: the model is the NumPy one,
    bit for bit (computed on the host copy of the rows)."""
    X, gamma = _rows(300)

    def kernel(a, b):
        return np.exp(-gamma * np.sum((a - b) ** 2))

    kw = dict(n_components=3, kernel=kernel)
    ref = IncrementalKernelPCA(**kw).fit(X[:60]).partial_fit(X[60:70])
    dev = IncrementalKernelPCA(**kw).fit(asarray(name, X[:60])).partial_fit(
        asarray(name, X[60:70]))
    assert not isinstance(dev.gram_, DeviceGrowingGram)
    np.testing.assert_array_equal(dev.eigenvalues_, ref.eigenvalues_)
    np.testing.assert_array_equal(dev.eigenvectors_, ref.eigenvectors_)


@pytest.mark.parametrize("name", NAMESPACES)
def test_bounded_mode_runs_on_the_device_and_gives_the_numpy_model(name):
    X, gamma = _rows(900)
    T = _rows(15, seed=1)[0]
    kw = dict(n_components=5, gamma=gamma, mode="bounded", max_rows=120, random_state=0,
              batch_size=300)
    ref = IncrementalKernelPCA(**kw).fit(X)
    dev = IncrementalKernelPCA(**kw).fit(asarray(name, X))
    assert_close_model(dev, ref, T)
    ref.partial_fit(X[:200])
    dev.partial_fit(asarray(name, X[:200]))
    assert_close_model(dev, ref, T)


@pytest.mark.parametrize("name", NAMESPACES)
def test_bounded_mode_swaps_the_same_landmarks_on_a_drifting_stream(name):
    """A stream whose centre moves by batches: landmarks are swapped in every batch (the
    residuals, computed on the device, pick the same rows as NumPy's)."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(150, 4)) + 3 * i for i in range(5)])
    T = rng.normal(size=(20, 4)) + 6
    kw = dict(n_components=4, gamma=0.3, mode="bounded", max_rows=60, random_state=0)
    ref, dev = IncrementalKernelPCA(**kw), IncrementalKernelPCA(**kw)
    for s in range(0, X.shape[0], 150):
        ref.partial_fit(X[s : s + 150])
        dev.partial_fit(asarray(name, X[s : s + 150]))
        assert dev.n_swaps_ == ref.n_swaps_
        assert_close_model(dev, ref, T)
    assert ref.n_swaps_ >= 8
    np.testing.assert_allclose(dev.feature_scatter_, ref.feature_scatter_, rtol=0,
                               atol=1e-10 * np.abs(ref.feature_scatter_).max())


@pytest.mark.parametrize("name", NAMESPACES)
def test_auto_mode_switches_to_bounded_on_device_batches(name):
    X, gamma = _rows(800)
    T = _rows(15, seed=1)[0]
    kw = dict(n_components=5, gamma=gamma, max_rows=300, random_state=0)
    ref, dev = IncrementalKernelPCA(**kw), IncrementalKernelPCA(**kw)
    for s, e in [(0, 250), (250, 400), (400, 500)]:
        ref.partial_fit(X[s:e])
        dev.partial_fit(asarray(name, X[s:e]))
        assert_close_model(dev, ref, T)
    assert dev.mode_ == "bounded" and "gram_" not in dev.__dict__


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_inputs_are_not_modified(name):
    X, gamma = _rows(500)
    Xd = asarray(name, X)
    before = to_host(Xd)
    model = IncrementalKernelPCA(4, gamma=gamma).fit(Xd)
    model.partial_fit(Xd[:50, ...])
    np.testing.assert_array_equal(to_host(Xd), before)
    # the model keeps its own rows: changing the input afterwards changes nothing
    Xd[0, 0] = 1e6
    assert model.X_fit_[0, 0] == before[0, 0] != 1e6
    assert float(to_host(model.gram_.X)[0, 0]) == before[0, 0]


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_bad_device_rows_are_refused_alike_and_leave_the_model_unchanged(name, method):
    X, gamma = _rows(800)
    X = X[:500]
    model = IncrementalKernelPCA(4, gamma=gamma).fit(asarray(name, X[:400]))
    saved = model.eigenvalues_.copy()
    bad = X[400:].copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        getattr(model, method)(asarray(name, bad))
    with pytest.raises(ValueError, match="X has 19 features, but IncrementalKernelPCA is "
                                         "expecting 20"):
        model.partial_fit(asarray(name, X[400:, :19]))
    np.testing.assert_array_equal(model.eigenvalues_, saved)
    assert model.n_samples_seen_ == 400 and model.gram_.n == 400
    # the failed batches left the stored values as they were: the next update is exact
    model.partial_fit(asarray(name, X[400:]))
    assert_batch_kpca(model, X)
