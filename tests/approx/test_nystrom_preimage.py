"""Pre-images of NystromKernelPCA (expanded over the landmarks) against independent
computations: exact recovery for the linear kernel, exact KPCA when every row is a
landmark, and the explicit feature map of the degree-2 polynomial kernel."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA

from kpca import KernelPCA, NystromKernelPCA


def _data(n=150, d=3, seed=0):
    X, _ = make_blobs(n, n_features=d, centers=3, cluster_std=1.5, random_state=seed)
    return X


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_linear_kernel_all_components_recovers_inputs(method):
    X = _data()
    est = NystromKernelPCA(3, n_landmarks=10, kernel="linear", random_state=0).fit(X)
    Z = est.inverse_transform(est.transform(X), method=method, n_neighbors=10)
    np.testing.assert_allclose(Z, X, atol=1e-8)


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_all_rows_as_landmarks_equals_exact_kpca_preimages(method):
    X, T = _data(120), _data(15, seed=3) * 0.8
    nys = NystromKernelPCA(4, n_landmarks=120, gamma=0.2).fit(X)
    exact = KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    Yn, Ye = nys.transform(T), exact.transform(T)
    sign = np.sign(np.sum(Yn * Ye, axis=0))
    Zn, info_n = nys.inverse_transform(Yn, method=method, return_info=True)
    Ze, info_e = exact.inverse_transform(Yn * sign, method=method, return_info=True)
    np.testing.assert_allclose(Zn, Ze, atol=1e-6)
    np.testing.assert_allclose(info_n.residual, info_e.residual, atol=1e-8)


def _poly2_features(X, gamma, coef0):
    """Explicit map of (gamma x.y + coef0)^2 for d = 2: 6 features."""
    x1, x2 = X[:, 0], X[:, 1]
    r = np.sqrt(2 * gamma * coef0)
    return np.column_stack([np.full(len(X), coef0), r * x1, r * x2, gamma * x1**2,
                            gamma * x2**2, np.sqrt(2) * gamma * x1 * x2])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("q", [2, 4])
def test_residual_equals_explicit_feature_space_distance(q):
    """m = 12 landmarks span the 6-dimensional feature space of the quadratic kernel,
    so Nyström KPCA is PCA of the explicit features: the projection P phi(t) and the
    residual ||phi(z) - P phi(t)||^2 of any pre-image z can be computed directly."""
    X = _data(200, d=2)
    g, c = 0.3, 1.0
    T = X[:20] + np.random.default_rng(0).normal(scale=0.5, size=(20, 2))
    est = NystromKernelPCA(5, n_landmarks=12, kernel="poly", degree=2, gamma=g, coef0=c,
                           random_state=0).fit(X)
    Z, info = est.denoise(T, n_components=q, method="mds", return_info=True)
    F = _poly2_features(X, g, c)
    pca = PCA(q, svd_solver="full").fit(F)
    proj = pca.inverse_transform(pca.transform(_poly2_features(T, g, c)))
    expected = np.sum((_poly2_features(Z, g, c) - proj) ** 2, axis=1)
    np.testing.assert_allclose(info.residual, expected, atol=1e-8 * np.abs(F).max() ** 2)
    # the fixed point improves on its MDS start (it minimises the same residual)
    Zf, info_f = est.inverse_transform(est.transform(T)[:, :q], method="fixed_point",
                                       return_info=True)
    assert np.all(info_f.residual <= info.residual + 1e-9)


def test_denoise_pulls_points_back_to_the_circle():
    """Points on the unit circle pushed 20 % off it radially: denoising with 8
    components brings them back to within a few % (as exact KPCA does)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(0, 2 * np.pi, 400)
    X = np.c_[np.cos(a), np.sin(a)]
    b = rng.uniform(0, 2 * np.pi, 40)
    T = np.c_[np.cos(b), np.sin(b)] * (1 + rng.choice([-1, 1], 40) * 0.2)[:, None]
    est = NystromKernelPCA(8, n_landmarks=50, landmarks="kmeans", gamma=2.0,
                           random_state=0).fit(X)
    Z = est.denoise(T)
    assert Z.shape == T.shape and np.all(np.isfinite(Z))
    assert np.mean(np.abs(np.linalg.norm(Z, axis=1) - 1)) < 0.05
    exact = KernelPCA(8, kernel="rbf", gamma=2.0).fit(X).denoise(T)
    assert np.max(np.abs(Z - exact)) < 0.02


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"method": "ridge"}, "method"),
        ({"n_neighbors": 0}, "n_neighbors"),
        ({"max_iter": 0}, "max_iter"),
        ({"tol": -1.0}, "tol"),
    ],
)
def test_bad_preimage_options(kwargs, match):
    X = _data(60)
    est = NystromKernelPCA(2, n_landmarks=20, gamma=0.1, random_state=0).fit(X)
    with pytest.raises(ValueError, match=match):
        est.inverse_transform(est.transform(X[:3]), **kwargs)


def test_preimage_errors():
    X = _data(60)
    est = NystromKernelPCA(2, n_landmarks=20, gamma=0.1, random_state=0).fit(X)
    with pytest.raises(ValueError, match="shape"):
        est.inverse_transform(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="n_components"):
        est.denoise(X[:3], n_components=3)
    # no pre-image for the laplacian kernel: the error names the kernels that have one
    lap = NystromKernelPCA(2, n_landmarks=20, kernel="laplacian", random_state=0).fit(X)
    for call in (lambda: lap.inverse_transform(lap.transform(X[:3])),
                 lambda: lap.denoise(X[:3])):
        with pytest.raises(ValueError, match="'rbf', 'poly' and 'linear'"):
            call()
