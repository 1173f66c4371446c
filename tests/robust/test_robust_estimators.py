"""SphericalKernelPCA and WeightedKernelPCA against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_circles

from kpca import KernelPCA, SphericalKernelPCA, WeightedKernelPCA
from kpca.io import load_model, save_model
from kpca.robust import campbell_weights


def _align(A, B):
    """B with column signs matched to A."""
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return B * s


@pytest.fixture(scope="module")
def contaminated():
    rng = np.random.default_rng(0)
    n, d = 60, 3
    X = rng.normal(size=(n, d)) * np.array([3.0, 2.0, 0.3])
    out = rng.normal(size=(6, d)) * 0.3 + np.array([0.0, 0.0, 25.0])  # far along axis 3
    return X, np.vstack([X, out]), rng.normal(size=(7, d))


# --------------------------------------------------------------------------- spherical
def test_spatial_median_of_linear_kernel_is_the_geometric_median(contaminated):
    _, X, _ = contaminated
    est = SphericalKernelPCA(n_components=2, robust_tol=1e-12, robust_max_iter=5000).fit(X)
    theta = est.center_weights_ @ X
    res = minimize(lambda z: np.sum(np.linalg.norm(X - z, axis=1)), np.median(X, axis=0),
                   method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12,
                                                  "maxiter": 20000})
    np.testing.assert_allclose(theta, res.x, atol=1e-5)
    np.testing.assert_allclose(est.distances_, np.linalg.norm(X - theta, axis=1), atol=1e-8)
    assert est.converged_


def test_spherical_linear_equals_pca_of_spatial_signs(contaminated):
    _, X, T = contaminated
    est = SphericalKernelPCA(n_components=2, robust_tol=1e-12, robust_max_iter=5000).fit(X)
    theta = est.center_weights_ @ X
    U = (X - theta) / np.linalg.norm(X - theta, axis=1, keepdims=True)
    w, E = np.linalg.eigh(U.T @ U)
    E = E[:, ::-1][:, :2]
    np.testing.assert_allclose(est.eigenvalues_, w[::-1][:2], rtol=1e-8)
    Tn = (T - theta) / np.linalg.norm(T - theta, axis=1, keepdims=True)
    np.testing.assert_allclose(est.transform(T), _align(est.transform(T), Tn @ E), atol=1e-8)
    np.testing.assert_allclose(est.fit_transform(X), _align(est.fit_transform(X), U @ E),
                               atol=1e-8)


# --------------------------------------------------------------------------- weighted
def test_weighted_linear_equals_campbell_weighted_pca(contaminated):
    _, X, T = contaminated
    est = WeightedKernelPCA(n_components=2, robust_tol=1e-10, robust_max_iter=500).fit(X)
    w = est.weights_
    assert est.converged_
    mu = w @ X / w.sum()
    C = ((X - mu) * w[:, None] ** 2).T @ (X - mu) / np.sum(w**2)
    lam, E = np.linalg.eigh(C)
    lam, E = lam[::-1][:2], E[:, ::-1][:, :2]
    np.testing.assert_allclose(est.explained_variance_, lam, rtol=1e-8)
    np.testing.assert_allclose(est.explained_variance_ratio_, lam / np.trace(C), rtol=1e-8)
    np.testing.assert_allclose(est.transform(T), _align(est.transform(T), (T - mu) @ E),
                               atol=1e-8)
    np.testing.assert_allclose(est.fit_transform(X), _align(est.fit_transform(X), (X - mu) @ E),
                               atol=1e-8)
    # the weights are a fixed point: Campbell's weights of the explicit Mahalanobis distances
    # (distance='full': score distance plus the robust z-score of OD^(2/3) over all
    # points, one more degree of freedom)
    S = (X - mu) @ E
    t = (np.sum((X - mu) ** 2, axis=1) - np.sum(S**2, axis=1)) ** (1 / 3)
    z = (t - np.median(t)) / (1.482602218505602 * np.median(np.abs(t - np.median(t))))
    d = np.sqrt(np.sum(S**2 / lam, axis=1) + np.maximum(z, 0) ** 2)
    np.testing.assert_allclose(w, campbell_weights(d, 3), atol=1e-8)
    np.testing.assert_allclose(est.distances_, d, rtol=1e-6)
    # the planted outliers are down-weighted, the clean points are not
    assert np.all(w[-6:] < 0.01) and np.median(w[:-6]) == 1.0


def test_campbell_weight_function():
    d0 = np.sqrt(2) + 2 / np.sqrt(2)
    d = np.array([0.0, d0, d0 + 1.0, 10.0])
    expected = [1.0, 1.0, d0 / (d0 + 1) * np.exp(-1 / (2 * 1.25**2)),
                d0 / 10 * np.exp(-((10 - d0) ** 2) / (2 * 1.25**2))]
    np.testing.assert_allclose(campbell_weights(d, 2), expected, rtol=1e-12)


@pytest.mark.parametrize("Est", [SphericalKernelPCA, WeightedKernelPCA])
def test_robust_components_resist_outliers(contaminated, Est):
    clean, X, T = contaminated
    ref = KernelPCA(n_components=2).fit(clean)
    plain = KernelPCA(n_components=2).fit(X)
    rob = Est(n_components=2).fit(X)

    # principal directions in input space: f_l = sum_j C_jl x_j (linear kernel)
    def directions(est):
        return np.linalg.qr(est.X_fit_.T @ est.subspace_.coef)[0]

    def gap(a, b):
        return np.linalg.norm(directions(a) @ directions(a).T - directions(b) @ directions(b).T)

    assert gap(plain, ref) > 0.9  # the outliers take over a component
    assert gap(rob, ref) < 0.1


@pytest.mark.parametrize("Est", [SphericalKernelPCA, WeightedKernelPCA])
def test_solvers_and_matrix_free_path_agree(Est, monkeypatch):
    import kpca._fit as core

    made = []

    class Recording(core.TiledKernelOperator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(core, "TiledKernelOperator", Recording)
    X, _ = make_circles(240, factor=0.3, noise=0.05, random_state=1)
    T = X[:7] + 0.05
    kw = dict(n_components=3, kernel="rbf", gamma=4.0, random_state=0)
    ref = Est(eigen_solver="dense", **kw).fit(X)
    for solver, limit in [("arpack", None), ("krylov", 1_150_000)]:
        est = Est(eigen_solver=solver, memory_limit=limit, **kw).fit(X)
        if limit is not None:  # part of the tiles are recomputed on every pass
            assert 0 < made[-1].fraction_stored < 1
        np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-6)
        np.testing.assert_allclose(est.center_weights_, ref.center_weights_, atol=1e-8)
        np.testing.assert_allclose(est.transform(T), _align(est.transform(T), ref.transform(T)),
                                   atol=1e-6)


@pytest.mark.parametrize("Est", [SphericalKernelPCA, WeightedKernelPCA])
def test_persistence_round_trip(Est, tmp_path, contaminated):
    _, X, T = contaminated
    est = Est(n_components=2, kernel="rbf", gamma=0.1, fit_inverse_transform=True).fit(X)
    save_model(est, tmp_path / "m.kpca")
    loaded = load_model(tmp_path / "m.kpca")
    assert type(loaded) is Est
    np.testing.assert_array_equal(loaded.transform(T), est.transform(T))
    np.testing.assert_array_equal(loaded.inverse_transform(est.transform(T)),
                                  est.inverse_transform(est.transform(T)))
    np.testing.assert_array_equal(loaded.subspace_.center, est.subspace_.center)
    np.testing.assert_array_equal(loaded.outlier_scores(T), est.outlier_scores(T))


def test_transform_is_batch_independent_and_training_consistent(contaminated):
    _, X, T = contaminated
    for est in (SphericalKernelPCA(2, kernel="rbf", gamma=0.2),
                WeightedKernelPCA(2, kernel="rbf", gamma=0.2)):
        Z = est.fit_transform(X)
        np.testing.assert_allclose(est.transform(X), Z, atol=1e-9)
        np.testing.assert_allclose(est.transform(T[:1]), est.transform(T)[:1], atol=1e-12)


def test_uncentred_variants(contaminated):
    _, X, T = contaminated
    est = SphericalKernelPCA(2, center=False).fit(X)
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(est.eigenvalues_, np.linalg.eigvalsh(U.T @ U)[::-1][:2],
                               rtol=1e-8)
    w = WeightedKernelPCA(2, center=False).fit(X)
    Xw = X * w.weights_[:, None]
    np.testing.assert_allclose(w.eigenvalues_, np.linalg.eigvalsh(Xw.T @ Xw)[::-1][:2],
                               rtol=1e-8)


@pytest.mark.parametrize("kw, msg", [
    (dict(robust_tol=0), "robust_tol"), (dict(robust_max_iter=0), "robust_max_iter"),
    (dict(b1=-1), "b1"), (dict(init="x"), "init"),
])
def test_bad_parameters_are_named(kw, msg):
    with pytest.raises(ValueError, match=msg):
        WeightedKernelPCA(2, **kw).fit(np.random.default_rng(0).normal(size=(10, 2)))


def test_precomputed_spherical_transform_explains_itself(contaminated):
    _, X, _ = contaminated
    K = X @ X.T
    est = SphericalKernelPCA(2, kernel="precomputed").fit(K)
    ref = SphericalKernelPCA(2).fit(X)
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    with pytest.raises(ValueError, match="k\\(t, t\\)"):
        est.transform(K[:3])


# --------------------------------------------------------------------------- pre-images
@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_denoise_is_the_projection_on_the_robust_affine_subspace(contaminated, method):
    """Linear kernel: the pre-image of the projection is theta + (t - theta) E E^T."""
    _, X, T = contaminated
    sph = SphericalKernelPCA(2, robust_tol=1e-12, robust_max_iter=5000).fit(X)
    theta = sph.center_weights_ @ X
    U = (X - theta) / np.linalg.norm(X - theta, axis=1, keepdims=True)
    E = np.linalg.eigh(U.T @ U)[1][:, ::-1][:, :2]
    np.testing.assert_allclose(sph.denoise(T, method=method), theta + (T - theta) @ E @ E.T,
                               atol=1e-8)
    wkp = WeightedKernelPCA(2, robust_tol=1e-10, robust_max_iter=500).fit(X)
    w = wkp.weights_
    assert np.all(w[-6:] == 0)  # negligible weights are exact zeros
    mu = w @ X / w.sum()
    E = np.linalg.eigh(((X - mu) * w[:, None] ** 2).T @ (X - mu))[1][:, ::-1][:, :2]
    np.testing.assert_allclose(wkp.denoise(T, method=method), mu + (T - mu) @ E @ E.T,
                               atol=1e-8)


def test_spherical_ridge_denoise_uses_the_normalised_scores(contaminated):
    _, X, T = contaminated
    est = SphericalKernelPCA(2, kernel="rbf", gamma=0.1, fit_inverse_transform=True).fit(X)
    np.testing.assert_allclose(est.denoise(T, method="ridge"),
                               est.inverse_transform(est.transform(T)), atol=1e-12)


def test_subspace_holding_the_data_has_no_orthogonal_outliers():
    """Linear kernel, n_components = n_features: every OD is round-off, reported as 0,
    and the weights converge (no z-scores of round-off)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = np.random.default_rng(5).normal(size=(40, 2)) * [2.0, 1.0]
    X[:3] += [[9.0, 0.0], [0.0, 7.0], [-8.0, -6.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = WeightedKernelPCA(2, distance="full", robust_max_iter=50).fit(X)
    np.testing.assert_array_equal(est.orthogonal_distance(), 0.0)
    # with no orthogonal part the 'full' distance is the score distance (2 dof)
    ref = WeightedKernelPCA(2, distance="score", robust_max_iter=50).fit(X)
    np.testing.assert_allclose(est.weights_, ref.weights_, atol=1e-12)
    assert np.all(est.weights_[:3] < 0.5) and np.median(est.weights_[3:]) == 1.0


def test_kernel_spatial_median_satisfies_its_optimality_condition():
    """RBF kernel: at the spatial median the feature-space gradient of sum_i ||phi_i - theta||,
    -sum_i (phi_i - theta) / ||phi_i - theta|| = sum_i u_i phi_i, vanishes (u^T K u ~ 0)."""
    X, _ = make_circles(120, factor=0.3, noise=0.05, random_state=2)
    est = SphericalKernelPCA(2, kernel="rbf", gamma=3.0, robust_tol=1e-10,
                             robust_max_iter=5000).fit(X)
    assert est.converged_ and est.n_iter_ > 1
    K = est.kernel_(X)
    g = est.center_weights_
    d = np.sqrt(np.diag(K) - 2 * K @ g + g @ K @ g)  # explicit distances to the centre
    np.testing.assert_allclose(est.distances_, d, atol=1e-10)
    u = 1 / d - np.sum(1 / d) * g
    assert np.sqrt(u @ K @ u) < 1e-6 * np.sum(1 / d)
    # and theta is a minimum: moving it towards any training point increases the sum
    for j in (0, 50, 100):
        h = -0.01 * g
        h[j] += 0.01
        gh = g + h
        assert np.sum(np.sqrt(np.diag(K) - 2 * K @ gh + gh @ K @ gh)) > d.sum()


def test_robust_iterations_report_non_convergence(contaminated):
    from sklearn.exceptions import ConvergenceWarning

    _, X, _ = contaminated
    with pytest.warns(ConvergenceWarning, match="spatial median did not converge"):
        est = SphericalKernelPCA(2, robust_max_iter=2).fit(X)
    assert not est.converged_ and est.n_iter_ == 2
    with pytest.warns(ConvergenceWarning, match="weights did not converge"):
        est = WeightedKernelPCA(2, init="uniform", robust_max_iter=1).fit(X)
    assert not est.converged_ and est.n_iter_ == 1
