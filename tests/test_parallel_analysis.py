"""Parallel analysis (``n_components='auto'``, :func:`kpca.parallel_analysis`).

Checked against a dense NumPy/SciPy implementation of the same procedure (the same
permutations from the same seed, the documented contract), against classical PCA's
parallel analysis on data with a planted number of factors, on planted clusters,
and for determinism and bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.spatial.distance import cdist, pdist
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA
from sklearn.utils._param_validation import InvalidParameterError

import kpca
from kpca import KernelPCA, WeightedKernelPCA, config_context, parallel_analysis


# --------------------------------------------------------------------------- reference
def _permuted(X, seed, b):
    """Copy b of the documented contract: column j gets X[g.permutation(n), j], in
    order of j, with g = numpy.random.default_rng([seed, b])."""
    g = np.random.default_rng([seed, b])
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        out[:, j] = X[g.permutation(X.shape[0]), j]
    return out


def _top_centred(K, k):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    return eigh(H @ K @ H, eigvals_only=True)[::-1][:k]


def _dense_parallel_analysis(X, kernel, B, q, seed, k):
    """Horn's procedure with dense matrices: real and null spectra, the
    ceil(q (B + 1))-th order statistic of the null, the leading count above it."""
    real = _top_centred(kernel(X), k)
    null = np.array([_top_centred(kernel(_permuted(X, seed, b)), k) for b in range(B)])
    r = min(B, math.ceil(q * (B + 1) - 1e-9))
    thr = np.sort(null, axis=0)[r - 1]
    above = real > thr
    m = int(k if above.all() else np.argmin(above))
    return real, null, thr, m


def _structured(n=60, seed=3):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=(n, 2))
    return np.column_stack([f[:, 0], f[:, 0] + 0.3 * rng.normal(size=n),
                            f[:, 0] - 0.3 * rng.normal(size=n),
                            np.sin(2 * f[:, 1]), f[:, 1] + 0.5 * rng.normal(size=n),
                            rng.normal(size=n)])


@pytest.mark.parametrize("case", ["linear", "rbf-median", "poly"])
def test_matches_a_dense_implementation_of_the_same_procedure(case):
    X = _structured()
    B, q, seed = 9, 0.9, 7
    if case == "linear":
        params, kern = {"kernel": "linear"}, lambda A: A @ A.T
    elif case == "poly":
        params = {"kernel": "poly", "gamma": 0.2, "degree": 2, "coef0": 1.0}
        kern = lambda A: (0.2 * A @ A.T + 1.0) ** 2  # noqa: E731
    else:
        # the median heuristic resolved ONCE, on the data (not on each copy)
        g = 1.0 / (2.0 * np.median(pdist(X)) ** 2)
        params = {"kernel": "rbf", "gamma": "median"}
        kern = lambda A: np.exp(-g * cdist(A, A, "sqeuclidean"))  # noqa: E731
    pa = parallel_analysis(X, n_permutations=B, quantile=q, random_state=seed, **params)
    k = pa.eigenvalues.size
    real, null, thr, m = _dense_parallel_analysis(X, kern, B, q, seed, k)
    scale = real[0]
    np.testing.assert_allclose(pa.eigenvalues, real, rtol=1e-7, atol=1e-9 * scale)
    np.testing.assert_allclose(pa.null_eigenvalues, null, rtol=1e-7, atol=1e-9 * scale)
    np.testing.assert_allclose(pa.threshold, thr, rtol=1e-7, atol=1e-9 * scale)
    assert pa.n_components == m >= 1
    assert pa.null_eigenvalues.shape == (B, k) and pa.quantile == q and pa.n_permutations == B
    if case == "rbf-median":
        assert pa.gamma == pytest.approx(1.0 / (2.0 * np.median(pdist(X)) ** 2), rel=1e-12)
        # re-resolving on a copy would have given another gamma: the choice matters
        Xb = _permuted(X, seed, 0)
        assert abs(1.0 / (2.0 * np.median(pdist(Xb)) ** 2) - pa.gamma) > 1e-6 * pa.gamma


def _factors(n, loadings, noise_cols, seed):
    """Column groups driven by independent factors, plus pure-noise columns."""
    rng = np.random.default_rng(seed)
    cols = []
    for size in loadings:
        f = rng.normal(size=n)
        cols += [f + 0.6 * rng.normal(size=n) for _ in range(size)]
    cols += [rng.normal(size=n) for _ in range(noise_cols)]
    return np.column_stack(cols)


def _classical_parallel_analysis(X, B, q, seed):
    """PCA parallel analysis with scikit-learn's PCA on the same permuted copies."""
    ev = PCA().fit(X).explained_variance_
    null = np.array([PCA().fit(_permuted(X, seed, b)).explained_variance_
                     for b in range(B)])
    thr = np.sort(null, axis=0)[min(B, math.ceil(q * (B + 1) - 1e-9)) - 1]
    above = ev > thr
    return int(above.size if above.all() else np.argmin(above))


@pytest.mark.parametrize("groups, seed", [((4, 4, 4), 0), ((5, 3), 1), ((3, 3, 3, 3), 2)])
def test_linear_kernel_finds_the_planted_factors_as_classical_pca(groups, seed):
    X = _factors(400, groups, noise_cols=6, seed=seed)
    pa = parallel_analysis(X, random_state=seed)
    assert pa.n_components == len(groups)
    assert _classical_parallel_analysis(X, 19, 0.95, seed) == len(groups)
    # the linear kernel's eigenvalues are (n - 1) times PCA's explained variances
    ev = PCA().fit(X).explained_variance_[: pa.eigenvalues.size]
    np.testing.assert_allclose(pa.eigenvalues, (X.shape[0] - 1) * ev, rtol=1e-9)


@pytest.mark.parametrize("centers, seed", [(3, 0), (4, 1), (5, 2)])
def test_rbf_finds_planted_clusters(centers, seed):
    """c separated clusters: c - 1 between-cluster directions in feature space."""
    X, _ = make_blobs(300, n_features=6, centers=centers, cluster_std=1.0,
                      center_box=(-10, 10), random_state=seed)
    model = KernelPCA(n_components="auto", kernel="rbf", gamma="scale",
                      random_state=0).fit(X)
    assert model.n_components_ == centers - 1
    assert model.parallel_analysis_.n_components == centers - 1


def test_auto_model_is_the_model_with_that_many_components():
    X = _factors(300, (4, 4), noise_cols=4, seed=5)
    auto = KernelPCA(n_components="auto", kernel="rbf", gamma="scale", random_state=0).fit(X)
    k = auto.n_components_
    fixed = KernelPCA(n_components=k, kernel="rbf", gamma="scale", random_state=0).fit(X)
    np.testing.assert_allclose(auto.eigenvalues_, fixed.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(auto.transform(X[:20])), np.abs(fixed.transform(X[:20])),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(auto.eigenvalues_, auto.parallel_analysis_.eigenvalues[:k])
    ratio = auto.parallel_analysis_.eigenvalues[:k] / auto.parallel_analysis_.trace
    np.testing.assert_allclose(auto.explained_variance_ratio_, ratio, rtol=1e-10)


def test_candidates_double_while_all_are_kept():
    X = _factors(300, (4, 4, 4, 4, 4), noise_cols=3, seed=4)
    with config_context(parallel_analysis_start_components=2):
        pa = parallel_analysis(X, random_state=0)
    assert pa.n_components == 5 and pa.eigenvalues.size >= 6


def test_deterministic_and_seeded():
    X = _structured(80)
    a = parallel_analysis(X, kernel="rbf", gamma=0.3, random_state=11)
    b = parallel_analysis(X, kernel="rbf", gamma=0.3, random_state=11)
    c = parallel_analysis(X, kernel="rbf", gamma=0.3, random_state=12)
    np.testing.assert_array_equal(a.null_eigenvalues, b.null_eigenvalues)
    assert a.n_components == b.n_components
    assert not np.allclose(a.null_eigenvalues, c.null_eigenvalues)
    # the input is not modified
    assert np.array_equal(X, _structured(80))


def test_sparse_input_gives_the_dense_result():
    X = _structured(50)
    X[np.abs(X) < 0.5] = 0.0
    dense = parallel_analysis(X, kernel="rbf", gamma=0.2, n_permutations=5, random_state=1)
    sparse = parallel_analysis(sp.csr_matrix(X), kernel="rbf", gamma=0.2, n_permutations=5,
                               random_state=1)
    np.testing.assert_allclose(sparse.null_eigenvalues, dense.null_eigenvalues, rtol=1e-9)
    assert sparse.n_components == dense.n_components


def test_settings_reach_the_estimator_and_the_model_file(tmp_path):
    X = _factors(200, (4, 4), noise_cols=2, seed=6)
    with config_context(parallel_analysis_permutations=4, parallel_analysis_quantile=0.5):
        model = KernelPCA(n_components="auto", random_state=0).fit(X)
    pa = model.parallel_analysis_
    assert pa.n_permutations == 4 and pa.quantile == 0.5
    # ceil(0.5 * 5) = 3rd smallest of 4
    np.testing.assert_allclose(pa.threshold, np.sort(pa.null_eigenvalues, axis=0)[2])
    kpca.save(model, tmp_path / "m.kpca")
    back = kpca.load(tmp_path / "m.kpca").parallel_analysis_
    np.testing.assert_array_equal(back.null_eigenvalues, pa.null_eigenvalues)
    assert back.n_components == pa.n_components and back.trace == pa.trace
    # a later fit with a number forgets the analysis
    assert not hasattr(model.set_params(n_components=2).fit(X), "parallel_analysis_")


def test_nothing_above_the_null_keeps_one_component_and_warns():
    X = np.random.default_rng(0).normal(size=(200, 5))  # independent columns
    with pytest.warns(UserWarning, match="no eigenvalue is above"):
        model = KernelPCA(n_components="auto", random_state=0).fit(X)
    assert model.parallel_analysis_.n_components == 0 and model.n_components_ == 1


@pytest.mark.parametrize("kw, message", [
    ({"quantile": 0.0}, "quantile must be a number in \\(0, 1\\)"),
    ({"quantile": 1.0}, "quantile must be a number in \\(0, 1\\)"),
    ({"quantile": 1.5}, "quantile must be a number in \\(0, 1\\)"),
    ({"quantile": True}, "quantile must be a number"),
    ({"n_permutations": 0}, "n_permutations must be an integer >= 1"),
    ({"n_permutations": 2.5}, "n_permutations must be an integer >= 1"),
])
def test_bad_arguments_are_named(kw, message):
    with pytest.raises(ValueError, match=message):
        parallel_analysis(_structured(), **kw)


def test_bad_settings_and_inputs_are_refused():
    X = _structured()
    with config_context(parallel_analysis_quantile=1.0), \
            pytest.raises(ValueError, match="quantile must be a number in"):
        KernelPCA(n_components="auto").fit(X)
    with pytest.raises(ValueError, match="needs feature vectors"):
        KernelPCA(n_components="auto", kernel="precomputed").fit(X @ X.T)
    with pytest.raises(InvalidParameterError, match="n_components"):
        KernelPCA(n_components="automatic").fit(X)
    with pytest.raises(InvalidParameterError, match="n_components"):
        WeightedKernelPCA(n_components="auto").fit(X)
