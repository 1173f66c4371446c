"""The robust estimators' strategies as pipeline steps (kpca._fit.Centring), on their
own: with the linear kernel, against the same estimates computed in input space."""

from __future__ import annotations

import numpy as np
import pytest

from kpca._fit import FitSettings, make_plan
from kpca.kernels import Linear
from kpca.operators import DenseOperator
from kpca.robust._spherical import SpatialSigns
from kpca.robust._weighted import CampbellWeights, campbell_weights


def _data(n=150, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * [3.0, 1.0, 0.5]
    X[:12] += [0.0, 15.0, 0.0]  # a cluster of outliers
    return X


def _weiszfeld(X, iters=5000):
    """The spatial median of the rows of X (plain Weiszfeld in input space)."""
    m = X.mean(axis=0)
    for _ in range(iters):
        w = 1.0 / np.maximum(np.linalg.norm(X - m, axis=1), 1e-12)
        m_new = w @ X / w.sum()
        if np.linalg.norm(m_new - m) < 1e-13:
            break
        m = m_new
    return m


def test_spatial_signs_centre_on_the_spatial_median_and_scale_rows_to_unit_length():
    X = _data()
    K = X @ X.T
    settings = FitSettings(n_components=2)
    plan = make_plan(X, Linear(), settings, reweights=True)
    op, c, fitted = SpatialSigns(robust_tol=1e-12, robust_max_iter=5000).centre(
        DenseOperator(K.copy(), owned=True), plan, settings, np.random.RandomState(0))
    m = _weiszfeld(X)
    np.testing.assert_allclose(fitted["center_weights_"] @ X, m, atol=1e-7)
    dist = np.linalg.norm(X - m, axis=1)
    np.testing.assert_allclose(fitted["distances_"], dist, rtol=1e-7)
    S = (X - m) / dist[:, None]  # the spatial signs
    np.testing.assert_allclose(op.to_dense(), S @ S.T, atol=1e-7)
    assert fitted["converged_"] and SpatialSigns.normalized


def test_campbell_weights_are_a_fixed_point_of_weighted_pca_in_input_space():
    """The weights the strategy returns reproduce themselves: Campbell's weights of the
    Mahalanobis distances of the input-space PCA weighted by them (score distance, k
    components), to the strategy's tolerance."""
    X = _data(seed=1)
    k, tol = 2, 1e-8
    settings = FitSettings(n_components=k, eigen_solver="dense")
    plan = make_plan(X, Linear(), settings, reweights=True)
    strategy = CampbellWeights(distance="score", init="uniform", robust_tol=tol,
                               robust_max_iter=200)
    _, c, fitted = strategy.centre(DenseOperator((X @ X.T).copy(), owned=True), plan,
                                   settings, np.random.RandomState(0))
    w = fitted["weights_"]
    assert fitted["converged_"]
    mean = w @ X / w.sum()
    D = (X - mean) * w[:, None]
    lam, P = np.linalg.eigh(D.T @ D / np.sum(w**2))
    lam, P = lam[::-1][:k], P[:, ::-1][:, :k]
    d = np.sqrt(np.sum(((X - mean) @ P) ** 2 / lam, axis=1))
    np.testing.assert_allclose(campbell_weights(d, k), w, atol=10 * tol)
    np.testing.assert_allclose(fitted["center_weights_"] @ X, mean, atol=1e-10)
    assert w[:12].max() < 0.5 < w[12:].min()  # the outliers are down-weighted
    assert strategy.variance_divisor(X.shape[0], fitted) == pytest.approx(np.sum(w**2))
