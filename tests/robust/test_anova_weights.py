"""ANOVA KPCA's kernel strategy (kpca.robust._anova.AnovaWeights), step by step.

``start`` resolves gamma once; ``kernel`` is the Anova kernel of the current weights
(equal ones first); ``update`` records the objective (the sum of the positive
eigenvalues, against a dense ``eigvalsh`` of the centred kernel matrix) and the weights,
and moves to ``beta_update`` of the terms ``a_j = trace(V^T H K_j H V)`` (from the
explicit per-variable matrices); it stops on a step within ``tol`` (converged) or after
``max_iter`` decompositions. AnovaKernelPCA is the composition of the strategy with the
pipeline: its fitted attributes equal those of ``alternate`` run by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_circles

from kpca import AnovaKernelPCA
from kpca._fit import FitSettings, MeanCentring, alternate, decompose
from kpca.kernels import Anova
from kpca.robust import beta_update
from kpca.robust._anova import AnovaWeights


def _data(n=80, seed=0):
    X2, _ = make_circles(n, factor=0.3, noise=0.05, random_state=seed)
    return np.hstack([X2, np.random.default_rng(seed).normal(scale=3.5, size=(n, 3))])


def _dense(X, gamma, beta, k, center=True):
    """Top-k eigenpairs of H K_beta H and the terms tr(V^T H K_j H V) (H = I without
    centring), every K_j formed explicitly."""
    n = len(X)
    H = np.eye(n) - 1.0 / n if center else np.eye(n)
    Kj = [np.exp(-gamma * np.subtract.outer(X[:, j], X[:, j]) ** 2) for j in range(X.shape[1])]
    w, V = np.linalg.eigh(H @ sum(b * K for b, K in zip(beta, Kj, strict=True)) @ H)
    w, V = w[::-1][:k], V[:, ::-1][:, :k]
    return w, np.array([np.trace(V.T @ H @ K @ H @ V) for K in Kj])


SETTINGS = FitSettings(n_components=2, eigen_solver="dense", random_state=0)


def _step(strategy, X, settings=SETTINGS):
    kernel = strategy.kernel(X, np.random.RandomState(0))
    dec = decompose(X, kernel, settings, MeanCentring(), np.random.RandomState(0),
                    primal=False)
    return kernel, dec, strategy.update(X, kernel, dec, settings)


@pytest.mark.parametrize("gamma", [0.7, None, "median"])
def test_start_resolves_gamma_once(gamma):
    X = _data()
    strategy = AnovaWeights(gamma=gamma)
    strategy.start(X, SETTINGS, np.random.RandomState(5))
    expected = Anova(gamma=gamma).resolve(X, random_state=np.random.RandomState(5)).gamma
    assert strategy.gamma_value == expected
    assert strategy.gamma == gamma  # the parameter is kept as given
    assert strategy.kernel(X, None).gamma == expected


def test_the_first_kernel_has_equal_weights_and_update_takes_the_weight_step():
    X = _data()
    strategy = AnovaWeights(gamma=1.0, c=1.4, tol=1e-12, max_iter=10)
    strategy.start(X, SETTINGS, None)
    kernel, dec, done = _step(strategy, X)
    p = X.shape[1]
    np.testing.assert_array_equal(kernel.weights(p), np.full(p, 1 / np.sqrt(p)))
    assert not done and not strategy.converged
    values, a = _dense(X, 1.0, kernel.weights(p), 2)
    assert strategy.objective == [pytest.approx(values.sum(), rel=1e-10)]
    np.testing.assert_array_equal(strategy.path[0], kernel.weights(p))
    np.testing.assert_allclose(strategy.beta, beta_update(a, 1.4), atol=1e-9)
    # the next kernel carries the new weights
    np.testing.assert_array_equal(strategy.kernel(X, None).weights(p), strategy.beta)


@pytest.mark.parametrize("center", [True, False])
def test_terms_are_the_dense_quadratic_forms(center):
    X = _data(60, seed=1)
    beta = np.array([0.6, 0.5, 0.1, 0.3, 0.2])
    settings = FitSettings(n_components=2, eigen_solver="dense", center=center)
    kernel = Anova(gamma=0.9, beta=beta)
    dec = decompose(X, kernel, settings, MeanCentring(), np.random.RandomState(0),
                    primal=False)
    _, a = _dense(X, 0.9, beta, 2, center=center)
    got = AnovaWeights.terms(kernel, X, dec.result, center)
    np.testing.assert_allclose(got, a, rtol=1e-8)


def test_update_stops_on_a_small_step_or_after_max_iter():
    X = _data(70, seed=2)
    converging = AnovaWeights(gamma=1.0, tol=10.0)  # any step is within tol
    converging.start(X, SETTINGS, None)
    assert _step(converging, X)[2] is True
    assert converging.converged and converging.beta is None  # no step taken
    fitted = converging.fitted()
    assert fitted["n_iter_"] == 1 and fitted["converged_"] is True
    np.testing.assert_array_equal(fitted["beta_"], converging.path[0])

    capped = AnovaWeights(gamma=1.0, tol=1e-15, max_iter=2)
    capped.start(X, SETTINGS, None)
    assert _step(capped, X)[2] is False
    assert _step(capped, X)[2] is True
    fitted = capped.fitted()
    assert fitted["n_iter_"] == 2 and fitted["converged_"] is False
    # beta_ is the weights of the last kernel decomposed, not the step after it
    np.testing.assert_array_equal(fitted["beta_"], capped.path[1])
    assert fitted["beta_path_"].shape == (2, X.shape[1])
    np.testing.assert_array_equal(fitted["objective_"], capped.objective)


def test_the_estimator_is_the_strategy_run_by_alternate():
    X = _data(90, seed=3)
    est = AnovaKernelPCA(n_components=2, gamma=1.0, c=1.6, random_state=0).fit(X)
    strategy = AnovaWeights(gamma=1.0, c=1.6, tol=est.beta_tol, max_iter=est.beta_max_iter)
    settings = FitSettings.of(est)
    kernel, dec = alternate(X, strategy, settings, MeanCentring(),
                            np.random.RandomState(0), primal=False)
    fitted = strategy.fitted()
    for name in ("beta_", "objective_", "beta_path_"):
        np.testing.assert_array_equal(getattr(est, name), fitted[name])
    assert (est.n_iter_, est.converged_) == (fitted["n_iter_"], fitted["converged_"])
    np.testing.assert_array_equal(est.eigenvalues_, dec.result.values)
    np.testing.assert_array_equal(est.kernel_.beta, kernel.beta)
