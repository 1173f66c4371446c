"""AnovaKernelPCA: the constrained beta step, monotone alternation, variable selection."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_circles

from kpca import AnovaKernelPCA, KernelPCA
from kpca.io import load_model, save_model
from kpca.kernels import Anova
from kpca.robust import beta_update
from kpca.solvers import EigenResult


@pytest.mark.parametrize("c", [None, 1.0, 1.3, 2.0, 2.9])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beta_update_solves_the_constrained_problem(c, seed):
    a = np.random.default_rng(seed).uniform(0, 1, size=8) ** 3
    b = beta_update(a, c)
    assert np.all(b >= 0)
    assert np.linalg.norm(b) == pytest.approx(1.0)
    if c is not None:
        assert b.sum() <= c + 1e-8
    # independent: SLSQP on the convex relaxation ||beta||_2 <= 1 (active at the optimum)
    cons = [{"type": "ineq", "fun": lambda x: 1 - x @ x}]
    if c is not None:
        cons.append({"type": "ineq", "fun": lambda x: c - x.sum()})
    best = -np.inf
    for start in (np.full(8, 0.1), np.eye(8)[np.argmax(a)] * 0.9):
        res = minimize(lambda x: -a @ x, start, bounds=[(0, None)] * 8, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-12, "maxiter": 500})
        best = max(best, -res.fun)
    assert a @ b >= best - 1e-6


def _nested_circles(n=240, seed=0):
    X2, _ = make_circles(n, factor=0.3, noise=0.05, random_state=seed)
    noise = np.random.default_rng(seed).normal(scale=3.5, size=(n, 8))
    return np.hstack([X2, noise])


def test_anova_finds_the_informative_variables():
    X = _nested_circles()
    est = AnovaKernelPCA(n_components=2, gamma=1.0).fit(X)
    assert est.converged_
    assert np.sum(est.beta_[:2] ** 2) >= 0.9  # share of ||beta||_2^2 = 1
    sparse = AnovaKernelPCA(n_components=2, gamma=1.0, c=1.5).fit(X)
    assert sparse.beta_[:2].sum() / sparse.beta_.sum() >= 0.9  # share of ||beta||_1
    assert np.linalg.norm(est.beta_) == pytest.approx(1.0)
    # the objective (variance captured by the two components) never decreases
    assert np.all(np.diff(est.objective_[1:]) >= -1e-9 * est.objective_[-1])
    assert est.objective_[-1] > est.objective_[0]
    # the fitted model is ordinary KPCA with the learned ANOVA kernel
    ref = KernelPCA(2, kernel=Anova(gamma=1.0, beta=est.beta_)).fit(X)
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(est.transform(X[:5])), np.abs(ref.transform(X[:5])),
                               atol=1e-8)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_objective_is_the_sum_of_top_eigenvalues():
    X = _nested_circles(120, seed=1)
    est = AnovaKernelPCA(n_components=2, gamma=1.0, beta_max_iter=4).fit(X)
    for beta, J in zip(est.beta_path_, est.objective_, strict=True):
        K = Anova(gamma=1.0, beta=beta)(X)
        H = np.eye(len(X)) - 1 / len(X)
        top = np.sort(np.linalg.eigvalsh(H @ K @ H))[::-1][:2]
        assert J == pytest.approx(top.sum(), rel=1e-8)


def test_c_controls_sparsity():
    X = _nested_circles(160, seed=2)
    nnz = []
    for c in (1.0, 1.2, None):
        est = AnovaKernelPCA(n_components=2, gamma=1.0, c=c).fit(X)
        if c is not None:
            assert est.beta_.sum() <= c + 1e-8
        nnz.append(np.count_nonzero(est.beta_ > 1e-12))
    assert nnz[0] == 1 and nnz[0] <= nnz[1] <= nnz[2]


def test_bad_c_is_named_and_round_trip(tmp_path):
    X = _nested_circles(60)
    with pytest.raises(ValueError, match="'c' parameter"):
        AnovaKernelPCA(c=0.5).fit(X)
    est = AnovaKernelPCA(gamma=1.0, fit_inverse_transform=True).fit(X)
    save_model(est, tmp_path / "a.kpca")
    loaded = load_model(tmp_path / "a.kpca")
    np.testing.assert_array_equal(loaded.beta_, est.beta_)
    np.testing.assert_array_equal(loaded.transform(X[:4]), est.transform(X[:4]))


def _explicit_terms(X, gamma, beta, k):
    """Dense reference of the beta step's data: a_j = tr(V^T H K_j H V), V the top-k
    eigenvectors of H K_beta H, with every per-variable kernel K_j formed explicitly."""
    n = len(X)
    H = np.eye(n) - 1.0 / n
    Kj = [np.exp(-gamma * (X[:, j, None] - X[None, :, j]) ** 2) for j in range(X.shape[1])]
    Kb = H @ sum(b * K for b, K in zip(beta, Kj, strict=True)) @ H
    V = np.linalg.eigh(Kb)[1][:, ::-1][:, :k]
    return np.array([np.trace(V.T @ H @ K @ H @ V) for K in Kj])


def _slsqp_best(a, c):
    """Best value of max a.beta, ||beta||_2 <= 1, ||beta||_1 <= c, beta >= 0 (multi-start)."""
    p = a.size
    cons = [{"type": "ineq", "fun": lambda x: 1 - x @ x},
            {"type": "ineq", "fun": lambda x: c - x.sum()}]
    best, arg = -np.inf, None
    for start in (np.full(p, 0.1), np.eye(p)[np.argmax(a)] * 0.9, np.full(p, 1 / p)):
        res = minimize(lambda x: -a @ x, start, bounds=[(0, None)] * p, constraints=cons,
                       method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
        if -res.fun > best:
            best, arg = -res.fun, res.x
    return best, arg


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_beta_steps_of_a_fit_solve_their_constrained_problem():
    """Each beta of the alternation maximises tr(V^T K~_beta V) over the constraint set
    for the V of the previous KPCA step: dense per-variable kernels + SLSQP."""
    X = _nested_circles(70, seed=3)[:, :5]
    c = 1.3
    est = AnovaKernelPCA(n_components=2, gamma=1.0, c=c, beta_max_iter=3).fit(X)
    assert len(est.beta_path_) >= 2
    for prev, new in zip(est.beta_path_[:-1], est.beta_path_[1:], strict=True):
        a = _explicit_terms(X, 1.0, prev, 2)
        best, arg = _slsqp_best(a, c)
        assert np.linalg.norm(new) == pytest.approx(1.0) and new.sum() <= c + 1e-8
        assert np.all(new >= 0)
        assert a @ new >= best - 1e-7 * best  # optimal (new is feasible, so also <= best)
        np.testing.assert_allclose(new, arg, atol=2e-3)  # unique maximiser (SLSQP accuracy)


def test_converged_beta_is_a_fixed_point_of_its_step():
    X = _nested_circles(90, seed=4)[:, :4]
    est = AnovaKernelPCA(n_components=2, gamma=1.0, beta_tol=1e-9).fit(X)
    assert est.converged_
    a = _explicit_terms(X, 1.0, est.beta_, 2)
    np.testing.assert_allclose(beta_update(a), est.beta_, atol=1e-7)
    fitted = EigenResult(est.eigenvalues_, est.eigenvectors_, solver=est.eigen_solver_)
    terms = est._variable_terms(est.X_fit_, fitted, est.gamma_)
    np.testing.assert_allclose(terms, a, rtol=1e-8)


def test_default_gamma_is_one_per_variable_term():
    # scikit-learn's 1 / n_features convention applied to each one-variable term
    X = np.random.default_rng(0).normal(0, 2.0, size=(60, 7))
    assert KernelPCA(2, kernel="anova").fit(X).gamma_ == 1.0
    assert AnovaKernelPCA(2).fit(X).gamma_ == 1.0
    assert np.isclose(KernelPCA(2, kernel="anova", gamma="scale").fit(X).gamma_, 1 / X.var())


def test_defaults_find_the_structured_variables_of_the_seed_example():
    # The ANOVA KPCA example (docs/math.md, "ANOVA KPCA"; docs/robust.md):
    # (x1, x2) two nested circles, x3..x10 ~ N(0, 3.5^2)
    X2, _ = make_circles(300, factor=0.3, noise=0.05, random_state=1)
    X = np.hstack([X2, np.random.RandomState(1).normal(0, 3.5, (300, 8))])
    beta = AnovaKernelPCA(2, random_state=0).fit(X).beta_
    assert np.sum(beta[:2] ** 2) >= 0.9
