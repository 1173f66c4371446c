"""Edge cases of the estimator contract found in review: precomputed kernels in the
outlier API, bounded streaming of wide tables, output precision, row sources, failed
fits that leave the model as it was, and the CLI's ``-k all``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics.pairwise import rbf_kernel

import kpca
from kpca import AnovaKernelPCA, KernelPCA, NystromKernelPCA, RandomFeatureKernelPCA, cli
from kpca.approx import _feature_pca as fp
from kpca.io import open_rows, write_table


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(80, 4)), rng.normal(size=(6, 4)) * 3


def test_outlier_api_with_a_precomputed_kernel(data):
    """score_samples / decision_function / predict take k(t, t) as kernel_diag and give
    what the same model on vectors gives."""
    X, T = data
    vec = KernelPCA(3, kernel="rbf", gamma=0.3, contamination=0.1).fit(X)
    pre = KernelPCA(3, kernel="precomputed", contamination=0.1).fit(rbf_kernel(X, gamma=0.3))
    Kt, diag = rbf_kernel(T, X, gamma=0.3), np.ones(len(T))
    for method in ("score_samples", "decision_function", "predict"):
        np.testing.assert_allclose(getattr(pre, method)(Kt, kernel_diag=diag),
                                   getattr(vec, method)(T), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="kernel_diag"):
        pre.predict(Kt)


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_kernel_diag_must_be_finite_and_non_negative(data, bad):
    X, T = data
    pre = KernelPCA(3, kernel="precomputed").fit(rbf_kernel(X, gamma=0.3))
    diag = np.ones(len(T))
    diag[1] = bad
    with pytest.raises(ValueError, match="kernel_diag must hold finite values >= 0"):
        pre.outliers(rbf_kernel(T, X, gamma=0.3), kernel_diag=diag)


def test_preimage_errors_name_the_missing_input_vectors(data):
    X, _ = data
    pre = KernelPCA(2, kernel="precomputed").fit(rbf_kernel(X))
    for call in (lambda: pre.denoise(rbf_kernel(X[:2], X)),
                 lambda: pre.inverse_transform(np.zeros((2, 2)), method="mds")):
        with pytest.raises(ValueError, match="pre-images need input vectors"):
            call()


def test_stream_blocks_account_for_the_input_width_and_the_threads():
    wide = fp.block_rows(100, 4, d=5000, workers=4)
    assert wide * 4 * (5000 * 8 + 2 * 100 * 4) <= kpca.get_config()["feature_block_bytes"]
    with kpca.config_context(feature_block_bytes=2**20):  # the budget is a setting
        assert fp.block_rows(100, 4, d=5000, workers=4) == 64  # (at least 64 rows)
        assert fp.block_rows(100, 4) * 2 * 100 * 4 <= 2**20
    assert fp.block_rows(100, 4, d=5000, workers=4) < fp.block_rows(100, 4)
    assert fp.block_rows(100, 4, block_size=7, d=5000, workers=4) == 7


@pytest.mark.parametrize("Est", [KernelPCA, NystromKernelPCA, RandomFeatureKernelPCA])
def test_scores_come_in_the_models_precision(data, Est):
    X, T = data
    est = Est(2, kernel="rbf", gamma=0.3, random_state=0).fit(X.astype(np.float32))
    assert est.transform(T).dtype == np.float32  # float64 rows, float32 model
    est64 = Est(2, kernel="rbf", gamma=0.3, random_state=0).fit(X)
    assert est64.transform(T.astype(np.float32)).dtype == np.float64


def test_sparse_rows_of_another_dtype(data):
    X, T = data
    est = KernelPCA(3, kernel="rbf", gamma=0.3).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(est.transform(sp.csr_matrix(T.astype(np.float32))),
                               est.transform(T), rtol=1e-5, atol=1e-6)


def test_row_sources_check_names_and_refuse_other_methods(tmp_path, data):
    X, T = data
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write_table(a, X, columns=["a", "b", "c", "d"])
    write_table(b, T, columns=["d", "c", "b", "a"])
    est = NystromKernelPCA(2, n_landmarks=20, random_state=0).fit(open_rows(a))
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        plain = est.transform(X)  # an array without the file's column names
    np.testing.assert_allclose(est.transform(open_rows(a)), plain, rtol=1e-6)
    with pytest.raises(ValueError, match="feature names should match"):
        est.transform(open_rows(b))
    with pytest.raises(ValueError, match="RowSource in fit and transform"):
        est.score_samples(open_rows(a))


class _FailingRows(kpca.RowSource):
    """Rows whose samples read fine but whose stream fails in its last block (a bad
    cell deep in a file): the fit fails after the feature map was built."""

    def __init__(self, X):
        self.X, self.shape, self.dtype = X, X.shape, X.dtype

    def blocks(self, rows):
        for start in range(0, self.shape[0], rows):
            if start + rows >= self.shape[0]:
                raise ValueError("bad cell in the last block")
            yield self.X[start:start + rows]

    def take(self, indices):
        return self.X[indices]


@pytest.mark.parametrize("Est, kw", [
    (NystromKernelPCA, {"n_landmarks": 20}),
    (RandomFeatureKernelPCA, {"n_features": 30}),
])
def test_a_failed_fit_leaves_the_model_as_it_was(data, Est, kw):
    X, _ = data
    est = Est(2, gamma="median", block_size=16, random_state=0, **kw).fit(X)
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    with pytest.raises(ValueError, match="bad cell"):
        est.fit(_FailingRows(X * 5))
    for name, value in before.items():
        now = getattr(est, name)
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(now, value)
        elif isinstance(value, (int, float, str)):
            assert now == value, name


def test_anova_with_a_gamma_heuristic_converges_monotonically():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 4))
    X[:, 0] *= 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = AnovaKernelPCA(2, gamma="median", random_state=0, beta_max_iter=30).fit(X)
    assert est.converged_ and est.n_iter_ < 30
    assert np.all(np.diff(est.objective_[1:]) >= -1e-9 * est.objective_[-1])


def test_memory_limit_may_be_a_float(data):
    X, _ = data
    est = KernelPCA(2, kernel="rbf", memory_limit=2e9).fit(X)
    assert est.n_components_ == 2


def test_cli_k_all_is_every_component_for_every_estimator(tmp_path, data, capsys):
    X, _ = data
    path = tmp_path / "x.csv"
    write_table(path, X)
    assert cli.main(["fit", str(path), "--estimator", "anova", "-k", "all",
                     "--save", str(tmp_path / "m.kpca")]) == 0
    assert kpca.load(tmp_path / "m.kpca").n_components is None


def test_cli_outlier_plot_of_a_streamed_model_without_data(tmp_path, data, capsys):
    pytest.importorskip("matplotlib")
    X, _ = data
    path = tmp_path / "x.csv"
    write_table(path, X)
    model, fig = tmp_path / "m.kpca", tmp_path / "o.png"
    assert cli.main(["fit", str(path), "--estimator", "nystrom", "--n-landmarks", "20",
                     "--save", str(model)]) == 0
    assert cli.main(["plot", "outliers", "--model", str(model), "-o", str(fig)]) == 0
    assert fig.stat().st_size > 0
    est = kpca.load(model)
    np.testing.assert_allclose(est.distances()[1], est.orthogonal_distances_)


# ------------------------------------------------------------------ second review
@pytest.mark.parametrize("solver", ["dense", "arpack", "krylov", "randomized"])
def test_variance_fraction_of_a_precomputed_kernel_with_every_solver(solver):
    """The fraction loop solves the stored matrix more than once: no solve may have
    decomposed it in place before (reference: eigvalsh of the centred matrix)."""
    K = rbf_kernel(np.random.default_rng(0).normal(size=(100, 20)), gamma=0.01)
    H = np.eye(100) - 1.0 / 100
    mu = np.sort(np.linalg.eigvalsh(H @ K @ H))[::-1]
    m = int(np.searchsorted(np.cumsum(mu) / mu.sum(), 0.95) + 1)
    est = KernelPCA(0.95, kernel="precomputed", eigen_solver=solver, random_state=0).fit(K)
    assert est.n_components_ == m
    np.testing.assert_allclose(est.eigenvalues_, mu[:m], rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: KernelPCA(2, kernel="poly", degree=3),
    lambda: kpca.KernelROBPCA(2, kernel="poly", degree=3),
    lambda: NystromKernelPCA(2, kernel="poly", degree=3, n_landmarks=10, random_state=0),
])
def test_a_failed_refit_keeps_the_input_width(make):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    est = make().fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="overflow|non-finite"):
            est.fit(rng.normal(size=(40, 5)) * 1e200)
    assert est.n_features_in_ == 3
    assert est.transform(X[:2]).shape == (2, 2)


def test_robpca_refuses_a_non_psd_precomputed_kernel():
    X = np.random.default_rng(0).normal(size=(60, 3))
    K = rbf_kernel(X)
    w, V = np.linalg.eigh(K)
    w[0] = -0.03 * w.max()  # diagonal still positive
    bad = (V * w) @ V.T
    assert np.all(np.diag(bad) > 0)
    with pytest.raises(ValueError, match="not positive semi-definite"):
        kpca.KernelROBPCA(2, kernel="precomputed").fit(bad)
    assert kpca.KernelROBPCA(2, kernel="precomputed").fit(K).n_components_ == 2


def test_influence_of_a_cluster_is_bounded_in_float32():
    X = np.random.default_rng(0).normal(size=(50, 3))
    big = [KernelPCA(5, kernel="rbf", gamma=1e4).fit(X.astype(p)).influence().components.max()
           for p in (np.float64, np.float32)]
    assert np.isfinite(big).all()
    np.testing.assert_allclose(big[1], big[0], rtol=0.1)  # float32: no 1/eps blow-up


def test_robpca_h_caps_its_own_number_of_components():
    X = np.random.default_rng(0).normal(size=(100, 4))
    est = kpca.KernelROBPCA(h=8, kernel="linear").fit(X)
    assert 1 <= est.n_components_ <= 4


def test_robpca_refuses_influence_and_names_who_has_it(data):
    X, _ = data
    est = kpca.KernelROBPCA(2, kernel="rbf", gamma=0.3).fit(X)
    with pytest.raises(TypeError, match="eigenvectors of the training kernel matrix"):
        kpca.robust.influence(est)
