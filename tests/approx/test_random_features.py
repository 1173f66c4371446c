"""RandomFeatureKernelPCA against explicit PCA of the same features and exact KPCA."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA

import kpca
from kpca import KernelPCA, RandomFeatureKernelPCA


def _data(n=150, d=3, seed=0):
    X, _ = make_blobs(n, n_features=d, centers=3, cluster_std=1.5, random_state=seed)
    return X


def _align(A, B):
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return A * s


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_equals_pca_of_the_explicit_features(kernel):
    X, T = _data(), _data(20, seed=1)
    est = RandomFeatureKernelPCA(4, n_features=50, kernel=kernel, gamma=0.2,
                                 random_state=0).fit(X)
    W, b = est.random_weights_, est.random_offset_
    Zx = np.sqrt(2 / 50) * np.cos(X @ W + b)
    Zt = np.sqrt(2 / 50) * np.cos(T @ W + b)
    pca = PCA(4, svd_solver="full").fit(Zx)
    n = X.shape[0]
    np.testing.assert_allclose(est.explained_variance_, pca.explained_variance_ * (n - 1) / n,
                               rtol=1e-8)
    np.testing.assert_allclose(est.eigenvalues_, pca.explained_variance_ * (n - 1), rtol=1e-8)
    np.testing.assert_allclose(est.explained_variance_ratio_, pca.explained_variance_ratio_,
                               rtol=1e-8)
    ref = pca.transform(Zt)
    np.testing.assert_allclose(_align(est.transform(T), ref), ref, atol=1e-8)


@pytest.mark.parametrize("kernel, gamma", [("rbf", 0.1), ("laplacian", 0.1)])
def test_many_features_approach_exact_kpca(kernel, gamma):
    X = _data(200)
    exact = KernelPCA(3, kernel=kernel, gamma=gamma).fit(X)
    rff = RandomFeatureKernelPCA(3, n_features=1000, kernel=kernel, gamma=gamma,
                                 random_state=0).fit(X)
    np.testing.assert_allclose(rff.eigenvalues_, exact.eigenvalues_, rtol=0.1)
    # the top-2 score subspaces agree: canonical correlations between them close to 1
    Ze, Zr = exact.transform(X)[:, :2], rff.transform(X)[:, :2]
    Qe, _ = np.linalg.qr(Ze - Ze.mean(0))
    Qr, _ = np.linalg.qr(Zr - Zr.mean(0))
    assert np.linalg.svd(Qe.T @ Qr, compute_uv=False).mean() > 0.95


def test_feature_map_is_unbiased_rbf_kernel():
    X = _data(30)
    from kpca.kernels import FourierFeatures

    rng = np.random.RandomState(0)
    D = 20000
    fmap = FourierFeatures(rng.normal(scale=np.sqrt(0.2), size=(3, D)),
                           rng.uniform(0, 2 * np.pi, D))
    Z = fmap(X)
    K = np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1))
    assert np.max(np.abs(Z @ Z.T - K)) < 0.05


def test_streaming_equals_one_block_and_float32():
    X = _data(300)
    a = RandomFeatureKernelPCA(3, n_features=64, gamma=0.1, random_state=1).fit(X)
    b = RandomFeatureKernelPCA(3, n_features=64, gamma=0.1, random_state=1,
                               block_size=11).fit(X)
    np.testing.assert_allclose(a.eigenvalues_, b.eigenvalues_, rtol=1e-10)
    np.testing.assert_allclose(a.transform(X), b.transform(X), atol=1e-10)
    c = RandomFeatureKernelPCA(3, n_features=64, gamma=0.1, random_state=1).fit(
        X.astype(np.float32))
    assert c.transform(X.astype(np.float32)).dtype == np.float32
    np.testing.assert_allclose(c.eigenvalues_, a.eigenvalues_, rtol=1e-3)


def test_scores_centred():
    X = _data(200)
    Z = RandomFeatureKernelPCA(3, n_features=80, gamma=0.1, random_state=0).fit_transform(X)
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-10)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_features": 0}, "n_features"),
        ({"kernel": "poly"}, "kernel"),
        ({"gamma": 0}, "gamma"),
        ({"n_components": 0}, "n_components"),
    ],
)
def test_bad_params(params, match):
    with pytest.raises(ValueError, match=match):
        RandomFeatureKernelPCA(**params).fit(_data(20))


@pytest.mark.parametrize("n_features", [10**7, 30_000])
def test_n_features_beyond_the_memory_budget_raises_before_allocating(n_features, traced_peak):
    X = _data(50, d=4)
    est = RandomFeatureKernelPCA(3, n_features=n_features, random_state=0)
    with kpca.config_context(memory_budget="32MB"):
        peak, error = traced_peak(lambda: est.fit(X))
    assert isinstance(error, ValueError)
    msg = str(error)
    assert f"n_features={n_features:,} needs about" in msg
    assert "memory_budget (32.00 MiB)" in msg and "smaller n_features" in msg
    # refused before the D x D covariance or even the d x D weights (320 MB at 10**7)
    assert peak < 4 * 2**20
    assert not hasattr(est, "components_")


def test_the_largest_n_features_the_error_names_fits_the_budget(traced_peak):
    X = _data(50, d=4)
    budget = 32 * 2**20
    with kpca.config_context(memory_budget=budget):
        with pytest.raises(ValueError, match="n_features=5,000") as info:
            RandomFeatureKernelPCA(3, n_features=5000, random_state=0).fit(X)
        D = int(re.search(r"at most ([\d,]+) fits", str(info.value)).group(1).replace(",", ""))
        assert 500 < D < 5000
        est = RandomFeatureKernelPCA(3, n_features=D, random_state=0)
        peak, error = traced_peak(lambda: est.fit(X))
        assert error is None and est.components_.shape == (3, D)
        # the estimate is not below what the fit allocates
        assert peak <= budget
        with pytest.raises(ValueError, match=f"n_features={D + 1:,}"):
            RandomFeatureKernelPCA(3, n_features=D + 1, random_state=0).fit(X)
    # without a setting, the default budget (a share of this machine's memory) applies
    with pytest.raises(ValueError, match="the default memory budget"):
        RandomFeatureKernelPCA(3, n_features=10**7, random_state=0).fit(X)
    assert RandomFeatureKernelPCA(3, n_features=1000, random_state=0).fit(X).n_components_ == 3


def _direct_kernel(kernel, X, gamma):
    if kernel == "rbf":
        return np.exp(-gamma * ((X[:, None] - X[None]) ** 2).sum(-1))
    return np.exp(-gamma * np.abs(X[:, None] - X[None]).sum(-1))


@pytest.mark.parametrize("kernel", ["rbf", "laplacian"])
def test_estimator_features_are_unbiased_for_the_kernel(kernel):
    """E[z(x).z(y)] = k(x, y) over the estimator's own draws of W and b (N(0, 2 gamma I)
    for rbf, Cauchy(0, gamma) for laplacian): the average of z(x).z(y) over 300 fits
    with different seeds (D = 64 each) matches the kernel computed directly, to the
    Monte-Carlo error (about 0.02 at most over the 25 x 25 entries)."""
    X = _data(25, d=3) / 3
    gamma, D, runs = 0.3, 64, 300
    acc = np.zeros((len(X), len(X)))
    for seed in range(runs):
        est = RandomFeatureKernelPCA(1, n_features=D, kernel=kernel, gamma=gamma,
                                     random_state=seed).fit(X)
        Z = np.sqrt(2 / D) * np.cos(X @ est.random_weights_ + est.random_offset_)
        acc += Z @ Z.T
    mean = acc / runs
    assert np.max(np.abs(mean - _direct_kernel(kernel, X, gamma))) < 0.05
    # a wrong spectral density would be caught: half the scale of gamma, or the other
    # kernel's density, are both more than 0.2 away on these data
    other = "laplacian" if kernel == "rbf" else "rbf"
    assert np.max(np.abs(mean - _direct_kernel(kernel, X, gamma / 2))) > 0.2
    assert np.max(np.abs(mean - _direct_kernel(other, X, gamma))) > 0.2


def test_random_features_that_overflow_are_an_error():
    """Rows near float64's largest value: w^T x overflows, cos(inf) is NaN."""
    X = np.random.default_rng(1).normal(size=(50, 3))
    X[7] = 1.5e308
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"\(or random features\) overflows"):
            RandomFeatureKernelPCA(2, gamma=1.0, random_state=0).fit(X)
