"""NystromKernelPCA against independent computations of the Nyström kernel PCA."""

from __future__ import annotations

import re
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from kpca import KernelPCA, NystromKernelPCA, RandomFeatureKernelPCA, config_context
from kpca.kernels import RBF, Laplacian


def _data(n=120, d=3, seed=0):
    X, _ = make_blobs(n, n_features=d, centers=4, cluster_std=1.5, random_state=seed)
    return X


def _align(A, B):
    """Flip the columns of A to match the signs of B."""
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return A * s


def _explicit_nystrom(kernel, X, Z, T, k):
    """Nyström KPCA by the textbook route: form K^ = K_nm K_mm^+ K_mn, centre it with
    H (docs/math.md, "Centring in feature space"), eigh, project new rows with the
    training-mean centring."""
    n = X.shape[0]
    Knm = kernel.block(X, Z)
    Kmm_pinv = np.linalg.pinv(kernel.block(Z), rcond=1e-10, hermitian=True)
    K = Knm @ Kmm_pinv @ Knm.T
    H = np.eye(n) - 1.0 / n
    mu, V = np.linalg.eigh(H @ K @ H)
    mu, V = mu[::-1][:k], V[:, ::-1][:, :k]
    Kt = kernel.block(T, Z) @ Kmm_pinv @ Knm.T
    ones_t = np.full((T.shape[0], n), 1.0 / n)
    ones = np.full((n, n), 1.0 / n)
    Kt_c = Kt - ones_t @ K - Kt @ ones + ones_t @ K @ ones
    return mu, V * np.sqrt(mu), Kt_c @ (V / np.sqrt(mu)), np.trace(H @ K @ H)


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans", "leverage"])
@pytest.mark.parametrize("kernel", [RBF(gamma=0.1), Laplacian(gamma=0.2)])
def test_equals_explicit_nystrom(landmarks, kernel):
    X, T = _data(150), _data(20, seed=1)
    est = NystromKernelPCA(5, n_landmarks=30, landmarks=landmarks, kernel=kernel,
                           random_state=0).fit(X)
    mu, Y, Yt, tr = _explicit_nystrom(est.kernel_, X, est.landmarks_, T, 5)
    np.testing.assert_allclose(est.eigenvalues_, mu, rtol=1e-7)
    np.testing.assert_allclose(est.explained_variance_, mu / X.shape[0], rtol=1e-7)
    np.testing.assert_allclose(est.explained_variance_ratio_, mu / tr, rtol=1e-7)
    Z = est.transform(X)
    np.testing.assert_allclose(_align(Z, Y), Y, atol=1e-7 * np.abs(Y).max())
    Zt = est.transform(T)
    s = np.sign(np.sum(Z * Y, axis=0))
    np.testing.assert_allclose(Zt * s, Yt, atol=1e-7 * np.abs(Yt).max())


def test_all_rows_as_landmarks_equals_exact_kpca():
    X, T = _data(100), _data(15, seed=2)
    exact = KernelPCA(6, kernel="rbf", gamma=0.1, eigen_solver="dense").fit(X)
    nys = NystromKernelPCA(6, n_landmarks=100, kernel="rbf", gamma=0.1).fit(X)
    assert nys.n_landmarks_ == 100
    np.testing.assert_allclose(nys.eigenvalues_, exact.eigenvalues_, rtol=1e-6)
    Ze, Zn = exact.transform(T), nys.transform(T)
    np.testing.assert_allclose(_align(Zn, Ze), Ze, atol=1e-6)
    np.testing.assert_allclose(_align(nys.transform(X), exact.transform(X)),
                               exact.transform(X), atol=1e-6)


def test_streaming_equals_one_block():
    X = _data(200)
    a = NystromKernelPCA(4, n_landmarks=40, gamma=0.1, random_state=3).fit(X)
    b = NystromKernelPCA(4, n_landmarks=40, gamma=0.1, random_state=3, block_size=7).fit(X)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(a.transform(X), b.transform(X), atol=1e-10)


def test_one_row_equals_batch_row():
    X = _data(80)
    est = NystromKernelPCA(3, n_landmarks=20, gamma=0.1, random_state=0).fit(X)
    Z = est.transform(X)
    np.testing.assert_allclose(est.transform(X[5:6]), Z[5:6], atol=1e-12)


def test_training_scores_are_centred_with_right_variance():
    X = _data(150)
    est = NystromKernelPCA(4, n_landmarks=50, gamma=0.1, random_state=0)
    Z = est.fit_transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-10)
    np.testing.assert_allclose((Z**2).sum(axis=0), est.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(Z.T @ Z, np.diag(est.eigenvalues_), atol=1e-8 * Z.size)


def test_more_landmarks_closer_to_exact():
    X = _data(400, d=5)
    exact = KernelPCA(5, kernel="rbf", gamma=0.05).fit(X).eigenvalues_
    errs = [
        np.max(np.abs(NystromKernelPCA(5, n_landmarks=m, gamma=0.05, landmarks="kmeans",
                                       random_state=0).fit(X).eigenvalues_ - exact) / exact)
        for m in (10, 40, 160)
    ]
    assert errs[2] < errs[0]
    assert errs[2] < 1e-2


def test_float32_in_float32_out_and_close_to_float64():
    X = _data(200)
    e64 = NystromKernelPCA(3, n_landmarks=40, gamma=0.1, random_state=0).fit(X)
    e32 = NystromKernelPCA(3, n_landmarks=40, gamma=0.1, random_state=0).fit(
        X.astype(np.float32))
    Z32 = e32.transform(X.astype(np.float32))
    assert Z32.dtype == np.float32 and e32.eigenvalues_.dtype == np.float32
    np.testing.assert_allclose(e32.eigenvalues_, e64.eigenvalues_, rtol=1e-3)
    Z64 = e64.transform(X)
    np.testing.assert_allclose(_align(Z32, Z64), Z64, atol=2e-3 * np.abs(Z64).max())


def test_n_components_fraction_and_none():
    X = _data(150)
    full = NystromKernelPCA(None, n_landmarks=30, gamma=0.1, random_state=0).fit(X)
    assert full.n_components_ <= 30
    np.testing.assert_allclose(full.explained_variance_ratio_.sum(), 1.0, rtol=1e-8)
    part = NystromKernelPCA(0.8, n_landmarks=30, gamma=0.1, random_state=0).fit(X)
    cum = np.cumsum(full.explained_variance_ratio_)
    assert part.n_components_ == int(np.searchsorted(cum, 0.8) + 1)
    assert part.explained_variance_ratio_.sum() >= 0.8


def test_gamma_heuristic_and_names():
    X = _data(100)
    est = NystromKernelPCA(2, n_landmarks=10, gamma="median", random_state=0).fit(X)
    assert est.gamma_ > 0
    assert list(est.get_feature_names_out()) == ["nystromkernelpca0", "nystromkernelpca1"]


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_landmarks": 0}, "n_landmarks"),
        ({"landmarks": "random"}, "landmarks"),
        ({"kernel": "precomputed"}, "precomputed"),
        ({"n_components": 1.5}, "n_components"),
        ({"gamma": -1.0}, "gamma"),
        ({"rcond": 2.0}, "rcond"),
        ({"block_size": 0}, "block_size"),
    ],
)
def test_bad_params(params, match):
    with pytest.raises(ValueError, match=match):
        NystromKernelPCA(**params).fit(_data(20))


def test_float32_precision_on_float64_data():
    X = _data(300)
    a = NystromKernelPCA(4, n_landmarks=60, gamma=0.1, random_state=0).fit(X)
    b = NystromKernelPCA(4, n_landmarks=60, gamma=0.1, random_state=0,
                         precision="float32").fit(X)
    Zb = b.transform(X)
    assert Zb.dtype == np.float64 and b.eigenvalues_.dtype == np.float64
    np.testing.assert_allclose(b.eigenvalues_, a.eigenvalues_, rtol=1e-3)
    Za = a.transform(X)
    np.testing.assert_allclose(_align(Zb, Za), Za, atol=1e-3 * np.abs(Za).max())
    with pytest.raises(ValueError, match="precision"):
        NystromKernelPCA(precision="half").fit(X)


def test_threads_give_the_one_thread_answer():
    X = _data(3000, d=4)
    one = NystromKernelPCA(4, n_landmarks=50, gamma=0.1, random_state=0, block_size=256,
                           n_jobs=1).fit(X)
    two = NystromKernelPCA(4, n_landmarks=50, gamma=0.1, random_state=0, block_size=256,
                           n_jobs=2).fit(X)
    np.testing.assert_allclose(two.eigenvalues_, one.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(two.transform(X), one.transform(X), atol=1e-10)
    with pytest.raises(ValueError, match="n_jobs"):
        NystromKernelPCA(n_jobs=0).fit(X)


def test_auto_precision_is_float32_blocks_beyond_4096_rows():
    """'auto' = float32 feature blocks for large float64 inputs (as KernelPCA): the
    same result as precision='float32', within 1e-5 of float64 blocks, float64 out."""
    X = _data(5000, d=4)
    params = dict(n_components=3, n_landmarks=40, gamma=0.1, random_state=0)
    auto = NystromKernelPCA(**params).fit(X)
    f32 = NystromKernelPCA(**params, precision="float32").fit(X)
    f64 = NystromKernelPCA(**params, precision="float64").fit(X)
    np.testing.assert_array_equal(auto.eigenvalues_, f32.eigenvalues_)
    assert not np.array_equal(auto.eigenvalues_, f64.eigenvalues_)
    np.testing.assert_allclose(auto.eigenvalues_, f64.eigenvalues_, rtol=1e-5)
    assert auto.transform(X[:5]).dtype == np.float64


@pytest.mark.parametrize("make", [
    lambda **kw: NystromKernelPCA(3, n_landmarks=50, gamma=0.2, random_state=0, n_jobs=1, **kw),
    lambda **kw: RandomFeatureKernelPCA(3, n_features=50, gamma=0.2, random_state=0, n_jobs=1,
                                        **kw),
])
def test_fit_and_transform_memory_is_bounded_by_the_block(make):
    """Streaming: with small blocks, the memory fit and transform allocate (traced by
    tracemalloc, which sees NumPy's buffers) stays far below the n x 50 feature matrix
    (19 MB in float32 here) -- the same code with one block of all rows does allocate
    it, so the measurement would see a non-streamed implementation."""

    X = np.random.default_rng(0).normal(size=(100_000, 4))  # 3 MB, outside the trace
    features = X.shape[0] * 50 * 4

    def peaks(est):
        tracemalloc.start()
        try:
            est.fit(X)
            fit_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            Z = est.transform(X)
            return fit_peak, tracemalloc.get_traced_memory()[1] - Z.nbytes
        finally:
            tracemalloc.stop()

    fit_peak, transform_extra = peaks(make(block_size=500))
    assert fit_peak < features / 8 and transform_extra < features / 8
    # the default block size follows the byte budget of a block
    with config_context(feature_block_bytes=256 * 2**10):
        fit_peak, transform_extra = peaks(make())
    assert fit_peak < features / 8 and transform_extra < features / 8
    fit_peak, _ = peaks(make(block_size=X.shape[0]))
    assert fit_peak > features


def test_auto_precision_keeps_float64_where_float32_would_cost_accuracy():
    # linear kernel on data far from the origin: centring cancels most of K, so float32
    # kernel values would cost the eigenvalues ~1e-4; 'auto' must see it (as KernelPCA)
    rng = np.random.default_rng(0)
    X = 1000.0 + rng.standard_normal((5000, 4)) @ np.diag([3.0, 2.0, 1.0, 0.5])
    auto = NystromKernelPCA(3, n_landmarks=50, kernel="linear", random_state=0).fit(X)
    f64 = NystromKernelPCA(3, n_landmarks=50, kernel="linear", random_state=0,
                           precision="float64").fit(X)
    assert auto.subspace_.rows_dtype == "float64"
    np.testing.assert_allclose(auto.eigenvalues_, f64.eigenvalues_, rtol=1e-9)
    # well-scaled RBF data keep the fast float32 blocks
    Y = rng.standard_normal((5000, 4))
    rbf = NystromKernelPCA(3, n_landmarks=50, kernel="rbf", gamma=0.25, random_state=0).fit(Y)
    assert rbf.subspace_.rows_dtype == "float32"


def test_features_that_overflow_are_an_error_before_the_eigensolver():
    """rbf rows at +-1e200: the landmark kernel K_mm is finite (exact differences), but
    the streamed blocks' expansion |x|^2 + |z|^2 - 2<x, z> gives NaN; the covariance was
    handed to LAPACK ("The algorithm failed to compute an eigenvalue ...")."""
    X = np.array([[1e200, 5.0], [-1e200, 6.0], [3.0, 5.0], [4.0, 5.0]])
    est = NystromKernelPCA(1, gamma=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"kernel between the training rows and the "
                           r"landmarks .*overflows .*scale the data"):
            est.fit(X)
    assert not hasattr(est, "eigenvalues_")
    # the same rows moved into range fit, and match exact kernel PCA (all rows landmarks)
    ok = X / np.array([1e200, 1.0])
    Z = NystromKernelPCA(1, gamma=0.5, random_state=0).fit_transform(ok)
    Ze = KernelPCA(1, kernel="rbf", gamma=0.5).fit_transform(ok)
    np.testing.assert_allclose(np.abs(Z), np.abs(Ze), atol=1e-8)


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans", "leverage"])
@pytest.mark.parametrize("n_landmarks", [2500, 10**9])
def test_n_landmarks_beyond_the_memory_budget_raises_before_allocating(landmarks, n_landmarks,
                                                                       traced_peak):
    X = _data(3000, d=4)
    m = min(n_landmarks, 3000)  # clipped to the rows
    est = NystromKernelPCA(3, n_landmarks=n_landmarks, landmarks=landmarks, random_state=0)
    with config_context(memory_budget="32MB"):
        peak, error = traced_peak(lambda: est.fit(X))
    assert isinstance(error, ValueError)
    msg = str(error)
    assert f"n_landmarks={m:,} needs about" in msg
    assert f"a {m:,} x {m:,} float64 kernel matrix of the landmarks" in msg
    assert "memory_budget (32.00 MiB)" in msg and "memory_budget=...)" in msg
    if landmarks == "leverage":
        # its pool of min(n, max(2 m, 1000)) rows alone is beyond 32 MB (48 p^2 bytes)
        assert "landmarks='uniform' or 'kmeans'" in msg
        assert ("the 3,000 x 3,000 kernel matrix of its pool" in msg) == (m < 3000)
    else:
        assert "smaller n_landmarks (at most" in msg
    assert ("n_landmarks=1,000,000,000 is clipped to the 3,000 rows" in msg) == (m == 3000)
    # refused before K_mm (72 MB at 3,000 landmarks) or the pool's kernel matrix
    assert peak < 4 * 2**20
    assert not hasattr(est, "components_")


@pytest.mark.parametrize("landmarks", ["uniform", "kmeans", "leverage"])
def test_the_largest_n_landmarks_the_error_names_fits_the_budget(landmarks, traced_peak):
    X = _data(3000, d=4)
    budget = 64 * 2**20
    # the lazy imports (scikit-learn's k-means) done before the traced fit
    NystromKernelPCA(3, n_landmarks=20, landmarks=landmarks, random_state=0).fit(X)
    with config_context(memory_budget=budget):
        with pytest.raises(ValueError, match="n_landmarks=3,000") as info:
            NystromKernelPCA(3, n_landmarks=3000, landmarks=landmarks, random_state=0).fit(X)
        m = int(re.search(r"at most ([\d,]+) fits", str(info.value)).group(1).replace(",", ""))
        assert 300 < m < 3000
        est = NystromKernelPCA(3, n_landmarks=m, landmarks=landmarks, random_state=0)
        peak, error = traced_peak(lambda: est.fit(X))
        assert error is None and est.n_landmarks_ == m and est.n_components_ == 3
        # the estimate is not below what the fit allocates
        assert peak <= budget
        with pytest.raises(ValueError, match=f"n_landmarks={m + 1:,} needs"):
            NystromKernelPCA(3, n_landmarks=m + 1, landmarks=landmarks, random_state=0).fit(X)


def test_the_default_memory_budget_refuses_and_normal_sizes_fit():
    X = _data(3000, d=2)
    # the default budget: half of process_memory (a machine of 64 MiB here)
    with config_context(process_memory=2**26), pytest.raises(
            ValueError, match=r"n_landmarks=3,000 needs about .* above the default memory "
                              r"budget, a share of this machine's .*\(32.00 MiB\)"):
        NystromKernelPCA(3, n_landmarks=10**9).fit(X)
    # and the machine's own budget fits the usual sizes
    est = NystromKernelPCA(3, n_landmarks=500, random_state=0).fit(X)
    assert est.n_landmarks_ == 500 and est.n_components_ == 3
