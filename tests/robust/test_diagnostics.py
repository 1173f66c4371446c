"""Outlier diagnostics and influence against explicit computations and leave-one-out refits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score

from kpca import KernelPCA, SphericalKernelPCA, WeightedKernelPCA, robust


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 4)) * np.array([3.0, 2.0, 0.2, 0.2])
    T = rng.normal(size=(6, 4)) * np.array([1.0, 1.0, 0.2, 0.2])
    T[-2:] = [[0.5, 0.5, 6.0, 0.0], [-0.5, 0.0, 0.0, -6.0]]  # orthogonal outliers
    T[-3] = [25.0, 0.0, 0.0, 0.0]  # a leverage point, inside the subspace
    return X, T


def test_distances_of_linear_kpca_equal_pca_distances(data):
    X, T = data
    est = KernelPCA(n_components=2).fit(X)
    mean = X.mean(0)
    lam, E = np.linalg.eigh(np.cov(X.T, bias=True))
    lam, E = lam[::-1][:2], E[:, ::-1][:, :2]
    S = (T - mean) @ E
    sd = np.sqrt(np.sum(S**2 / lam, axis=1))
    od = np.linalg.norm(T - mean - S @ E.T, axis=1)
    got_sd, got_od = robust.distances(est, T)
    np.testing.assert_allclose(got_sd, sd, rtol=1e-8)
    np.testing.assert_allclose(got_od, od, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(robust.score_distance(est, T), sd, rtol=1e-8)
    np.testing.assert_allclose(robust.orthogonal_distance(est, T), od, rtol=1e-6, atol=1e-8)


def test_distances_of_weighted_linear_model_use_the_robust_centre(data):
    X, T = data
    Xo = np.vstack([X, T[-2:] + [0, 0, 0, 30.0]])
    est = WeightedKernelPCA(n_components=2, robust_tol=1e-10, robust_max_iter=300).fit(Xo)
    w = est.weights_
    mu = w @ Xo / w.sum()
    C = ((Xo - mu) * w[:, None] ** 2).T @ (Xo - mu) / np.sum(w**2)
    lam, E = np.linalg.eigh(C)
    lam, E = lam[::-1][:2], E[:, ::-1][:, :2]
    S = (T - mu) @ E
    sd, od = est.score_distance(T), est.orthogonal_distance(T)
    np.testing.assert_allclose(sd, np.sqrt(np.sum(S**2 / lam, axis=1)), rtol=1e-7)
    np.testing.assert_allclose(od, np.linalg.norm(T - mu - S @ E.T, axis=1), rtol=1e-6)


def test_cutoffs_follow_the_documented_rules(data):
    X, _ = data
    est = KernelPCA(n_components=2).fit(X)
    sd_cut, od_cut = robust.cutoffs(est)
    assert sd_cut == pytest.approx(np.sqrt(stats.chi2.ppf(0.975, 2)))
    od = robust.orthogonal_distance(est)
    t = od ** (2 / 3)
    mad = 1.4826 * np.median(np.abs(t - np.median(t)))
    assert od_cut == pytest.approx((np.median(t) + mad * stats.norm.ppf(0.975)) ** 1.5, rel=1e-4)


def test_outlier_map_categories_and_flags(data):
    X, T = data
    for est in (KernelPCA(n_components=2).fit(X), WeightedKernelPCA(n_components=2).fit(X)):
        om = robust.outlier_map(est, T)
        assert list(om.category[-2:]) == ["orthogonal", "orthogonal"]
        assert om.category[-3] == "good leverage"
        assert om.outlier[-3:].all() and not om.outlier[:3].any()
        scores = robust.outlier_scores(est, T)
        np.testing.assert_array_equal(scores > 1, robust.outliers(est, T))


def test_outlier_scores_find_planted_outliers_in_feature_space():
    from sklearn.datasets import make_circles

    X, _ = make_circles(270, factor=0.3, noise=0.05, random_state=0)
    rng = np.random.default_rng(0)
    angle, radius = rng.uniform(0, 2 * np.pi, 30), rng.uniform(2.5, 4.0, 30)
    Xa = np.vstack([X, np.c_[radius * np.cos(angle), radius * np.sin(angle)]])
    y = np.r_[np.zeros(len(X)), np.ones(30)]
    params = dict(n_components=3, kernel="poly", degree=2, gamma=1.0, coef0=1)
    sph = SphericalKernelPCA(**params).fit(Xa)
    assert roc_auc_score(y, sph.outlier_scores()) > 0.95
    # the weights drift slowly near d0 here; 8 iterations have settled the outliers
    with pytest.warns(ConvergenceWarning):
        wkp = WeightedKernelPCA(robust_max_iter=8, **params).fit(Xa)
    assert roc_auc_score(y, wkp.outlier_scores()) > 0.95
    # the robust weights are (close to) zero exactly on the outliers
    w = wkp.weights_
    assert w[y == 1].max() < 0.05 and np.median(w[y == 0]) == 1.0


def test_precomputed_needs_the_kernel_diagonal(data):
    X, T = data
    est = KernelPCA(n_components=2, kernel="precomputed").fit(X @ X.T)
    ref = KernelPCA(n_components=2).fit(X)
    with pytest.raises(ValueError, match="kernel_diag"):
        robust.distances(est, T @ X.T)
    got = robust.distances(est, T @ X.T, kernel_diag=np.sum(T * T, axis=1))
    np.testing.assert_allclose(got, robust.distances(ref, T), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="quantile"):
        robust.cutoffs(ref, quantile=1.5)


def test_plot_outlier_map_draws_every_point(data):
    import matplotlib

    matplotlib.use("Agg")
    X, T = data
    from kpca import plotting

    fig, ax = plotting.plot_outlier_map(KernelPCA(n_components=2).fit(X), X=T)
    assert sum(c.get_offsets().shape[0] for c in ax.collections) == len(T)


# --------------------------------------------------------------------------- influence
def test_influence_from_a_fitted_subspace_is_that_of_the_centred_kernel_diagonal():
    """Influence.from_subspace reads K~_ii from the model's subspace (times s_i^2 for row
    scales s): the closed form from_eigenpairs on the dense centred kernel matrix."""
    from sklearn.metrics.pairwise import rbf_kernel

    from kpca.diagnostics import Influence

    X = np.random.default_rng(5).normal(size=(50, 3))
    est = KernelPCA(4, kernel="rbf", gamma=0.4).fit(X)
    H = np.eye(50) - 1.0 / 50
    diag = np.diag(H @ rbf_kernel(X, gamma=0.4) @ H)
    mu, V = est.eigenvalues_, est.eigenvectors_
    s = np.linspace(0.5, 1.5, 50)
    for scale, want in [(None, diag), (s, diag * s**2)]:
        got = Influence.from_subspace(est.subspace_, mu, V, scale)
        ref = Influence.from_eigenpairs(mu, V, want)
        for name in ("eigenvalues", "components", "loo_eigenvalues", "total"):
            np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-9,
                                       atol=1e-12)
    np.testing.assert_allclose(est.influence().total, Influence.from_eigenpairs(
        mu, V, diag).total, rtol=1e-9)


def _coef(est):
    """Coefficients b with f_l = sum_j b_jl phi(x_j) (centred, uncentred expansion)."""
    V, mu = est.eigenvectors_, est.eigenvalues_
    A = V / np.sqrt(mu)
    return A - A.mean(axis=0)


@pytest.mark.parametrize("n_components", [None, 3])
def test_influence_matches_leave_one_out_refits(n_components):
    rng = np.random.default_rng(7)
    X = rng.normal(size=(70, 2)) * [1.0, 0.6]
    X[0] = [3.5, 2.0]  # one influential point
    gamma = 0.3
    est = KernelPCA(n_components=n_components, kernel="rbf", gamma=gamma).fit(X)
    k = 3
    inf = robust.influence(est)
    K = est.kernel_(X)
    b = _coef(est)[:, :k]
    pred_ev, pred_f, loo_ev, loo_f = [], [], [], []
    for i in range(len(X)):
        keep = np.arange(len(X)) != i
        m = KernelPCA(n_components=k, kernel="rbf", gamma=gamma).fit(X[keep])
        bi = np.zeros((len(X), k))
        bi[keep] = _coef(m)
        D = b - bi * np.sign(np.sum(b * (K @ bi), axis=0))  # align signs
        loo_f.append(np.sqrt(np.einsum("il,ij,jl->l", D, K, D)))
        loo_ev.append(m.eigenvalues_[:k])
        pred_ev.append(inf.loo_eigenvalues[i, :k])
        pred_f.append(inf.components[i, :k] / (len(X) - 1))
    pred_ev, loo_ev = np.array(pred_ev), np.array(loo_ev)
    pred_f, loo_f = np.array(pred_f), np.array(loo_f)
    # eigenvalues: first order in 1/n, relative to the change itself
    change = est.eigenvalues_[:k] - loo_ev
    err = np.abs(pred_ev - loo_ev)
    assert np.median(err / np.abs(change)) < 0.1
    # eigenvector changes: exact first order with every component, a close
    # approximation (discarded eigenvalues treated as 0) with three
    tol = 0.08 if n_components is None else 0.25
    assert np.median(np.abs(pred_f - loo_f) / loo_f) < tol
    assert np.corrcoef(pred_f[:, 0], loo_f[:, 0])[0, 1] > 0.95
    # the same point is predicted and found most influential on each component
    m = 2 if n_components is None else 1
    assert np.all(np.argmax(pred_f[:, :m], axis=0) == np.argmax(loo_f[:, :m], axis=0))


def test_influence_is_bounded_for_spherical_kpca():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    far = np.vstack([X, [[30.0, 30.0, 0.0]]])
    plain = robust.influence(KernelPCA(n_components=2).fit(far))
    sph = robust.influence(SphericalKernelPCA(n_components=2).fit(far))
    # unbounded kernel, unbounded influence: the far point dominates
    assert plain.eigenvalues[-1, 0] > 20 * np.median(np.abs(plain.eigenvalues[:, 0]))
    # spatial signs: every point contributes a unit vector
    assert np.abs(sph.eigenvalues[-1, 0]) < 5 * np.median(np.abs(sph.eigenvalues[:, 0]))
    assert sph.total[-1] < 5 * np.median(sph.total)


def test_unsupported_or_unfitted_models_are_refused(data):
    from sklearn.exceptions import NotFittedError

    from kpca import NystromKernelPCA

    X, T = data
    with pytest.raises(TypeError, match="est must be a fitted kpca estimator"):
        robust.outliers(object(), T)
    with pytest.raises(TypeError, match="eigenvectors"):
        robust.influence(NystromKernelPCA(2, n_landmarks=20, random_state=0).fit(X))
    with pytest.raises(NotFittedError):
        robust.outlier_map(KernelPCA(2), T)
