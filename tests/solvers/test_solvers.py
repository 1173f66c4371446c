"""Eigensolvers against numpy.linalg.eigh, and the shared post-processing."""

import numpy as np
import pytest

from kpca.operators import DenseOperator
from kpca.solvers import SOLVERS, EigenResult, choose_solver, eigsh_top, finalize


def _spd_with_spectrum(n, spectrum, seed=0):
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (Q * spectrum) @ Q.T


@pytest.mark.parametrize("solver", list(SOLVERS))
def test_known_spectrum(solver):
    n = 120
    spectrum = np.concatenate([[100.0, 50, 20, 10, 5], np.linspace(1, 0.01, n - 5)])
    A = _spd_with_spectrum(n, spectrum)
    res = finalize(eigsh_top(DenseOperator(A.copy(), owned=True), 5, solver=solver,
                             random_state=0, iterated_power=10))
    np.testing.assert_allclose(res.values, [100, 50, 20, 10, 5], rtol=1e-8)
    # eigenvectors: A v = mu v
    np.testing.assert_allclose(A @ res.vectors, res.vectors * res.values, atol=1e-6)
    np.testing.assert_allclose(res.vectors.T @ res.vectors, np.eye(5), atol=1e-8)


@pytest.mark.parametrize("solver", ["arpack", "randomized"])
def test_iterative_solvers_report_residuals(solver):
    A = _spd_with_spectrum(80, np.geomspace(10, 1e-3, 80))
    res = eigsh_top(DenseOperator(A), 4, solver=solver, random_state=0)
    assert res.residuals is not None and res.residuals.shape == (4,)
    assert np.all(res.residuals < 1e-6)
    assert res.n_matvec > 0


def test_finalize_sorts_flips_signs_and_clears_roundoff():
    V = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 3)))[0]
    V[:, 1] *= -1
    raw = EigenResult(np.array([1.0, 5.0, -1e-14]), V, "test")
    out = finalize(raw)
    np.testing.assert_array_equal(out.values, [5.0, 1.0, 0.0])
    rows = np.argmax(np.abs(out.vectors), axis=0)
    assert np.all(out.vectors[rows, range(3)] > 0)
    assert finalize(raw, remove_zero=True).values.tolist() == [5.0, 1.0]


def test_finalize_negative_eigenvalues():
    V = np.eye(3)
    raw = EigenResult(np.array([5.0, 1.0, -2.0]), V, "test")
    with pytest.raises(ValueError, match="significant negative eigenvalues"):
        finalize(raw)
    with pytest.warns(UserWarning, match="dropped"):
        out = finalize(raw, drop_negative=True)
    assert out.values.tolist() == [5.0, 1.0]
    with pytest.raises(ValueError, match="All eigenvalues are negative"):
        finalize(EigenResult(np.array([-1.0, -2.0]), V[:, :2], "test"))
    with pytest.raises(ValueError, match="non-finite"):
        finalize(EigenResult(np.array([np.nan, 1.0]), V[:, :2], "test"))


def test_solvers_agree_with_each_other():
    A = _spd_with_spectrum(300, np.geomspace(50, 1e-4, 300), seed=3)
    results = {
        s: finalize(eigsh_top(DenseOperator(A.copy(), owned=True), 6, solver=s, random_state=1))
        for s in SOLVERS
    }
    ref = results["dense"]
    for r in results.values():
        np.testing.assert_allclose(r.values, ref.values, rtol=1e-7)
        # same sign rule => same vectors, not just up to sign
        np.testing.assert_allclose(r.vectors, ref.vectors, atol=1e-5)


def test_auto_rule_and_unknown_solver():
    assert choose_solver(5000, 10, dense_fits=False) == "krylov"
    assert choose_solver(5000, 2000) == "dense"  # 40 % of the spectrum
    assert choose_solver(500, 128) == "dense"
    with pytest.raises(ValueError, match="eigen_solver must be one of"):
        eigsh_top(DenseOperator(np.eye(3)), 1, solver="magic")


def test_krylov_meets_its_stopping_rule_on_clustered_spectrum():
    # clustered top eigenvalues and a slow tail: the case where plain power
    # iteration stalls; the block Krylov residual test must still be met
    n = 600
    spectrum = np.concatenate([100 - 0.5 * np.arange(12), np.geomspace(40, 1e-3, n - 12)])
    A = _spd_with_spectrum(n, spectrum, seed=5)
    res = eigsh_top(DenseOperator(A), 8, solver="krylov", random_state=0)
    assert res.converged and np.all(res.residuals <= 1e-8)
    out = finalize(res)
    np.testing.assert_allclose(out.values, spectrum[:8], rtol=1e-10)
    # the reported residuals are the true ones
    true = np.linalg.norm(A @ out.vectors - out.vectors * out.values, axis=0) / out.values[0]
    np.testing.assert_allclose(np.sort(res.residuals), np.sort(true), rtol=1e-3, atol=1e-14)


def test_krylov_respects_max_iter_and_reports_non_convergence():
    A = _spd_with_spectrum(400, np.concatenate([np.ones(30), np.geomspace(1, 1e-3, 370)]))
    res = eigsh_top(DenseOperator(A), 10, solver="krylov", random_state=0, max_iter=2,
                    block_size=11, depth=2)
    assert res.n_matvec <= 2 * 11 + 11
    assert not res.converged


def test_float32_operator_residual_floor():
    A = _spd_with_spectrum(700, np.geomspace(10, 1e-4, 700), seed=2).astype(np.float32)
    for s in ("krylov", "randomized"):
        res = eigsh_top(DenseOperator(A), 5, solver=s, random_state=0)
        assert res.converged and np.all(res.residuals <= 1e-5)


@pytest.mark.parametrize("solver, scale", [(s, c) for s in SOLVERS for c in (1e-20, 1e-7, 1e7)])
def test_solvers_are_scale_invariant(solver, scale):
    """Scaling the operator by c scales the eigenvalues by c and leaves the
    eigenvectors alone: no solver may use an absolute threshold (kernel values of
    data measured in small units are tiny)."""
    n = 300
    A = _spd_with_spectrum(n, np.concatenate([[50.0, 20, 10], np.geomspace(5, 1e-4, n - 3)]),
                           seed=4)
    ref = finalize(eigsh_top(DenseOperator(A), 3, solver="dense"))
    res = finalize(eigsh_top(DenseOperator(A * scale), 3, solver=solver, random_state=0))
    np.testing.assert_allclose(res.values, ref.values * scale, rtol=1e-8)
    np.testing.assert_allclose(res.vectors, ref.vectors, atol=1e-6)


def test_long_fits_log_their_progress(caplog):
    """Progress of a fit is reported through the "kpca" logger (library code never
    prints): one record per kernel pass and per solver iteration."""
    import logging

    from kpca import KernelPCA

    X = np.random.default_rng(0).normal(size=(600, 4))
    with caplog.at_level(logging.INFO, logger="kpca"):
        KernelPCA(3, kernel="rbf", gamma=0.5, eigen_solver="krylov", memory_limit="3.3MB",
                  random_state=0).fit(X)
    msgs = [r.getMessage() for r in caplog.records if r.name == "kpca"]
    passes = [m for m in msgs if m.startswith("kernel pass")]
    residuals = [m for m in msgs if m.startswith("krylov:") and "residual" in m]
    assert len(passes) >= 2 and residuals, msgs
    # the last residual record shows the stopping rule met
    last = float(residuals[-1].split("max residual ")[1].split()[0])
    assert last <= 1e-5


def test_no_positive_eigenvalue_and_significant_negative_ones_is_a_clear_error():
    # a maximum of exactly 0 (not a ratio to divide by): found by hypothesis in
    # tests/test_edge_cases.py on constant rows with a huge gamma
    from kpca.solvers import EigenResult, finalize

    res = EigenResult(np.array([0.0, -3.0]), np.eye(2), "dense")
    with pytest.raises(ValueError, match="All eigenvalues are negative or zero"):
        finalize(res)


def test_finalize_clears_roundoff_at_sqrt_n_u():
    """Values below sqrt(n) u mu_1 are round-off of the solve (Weyl), whatever solver
    returned them; values above it are kept."""
    n = 58
    V = np.linalg.qr(np.random.default_rng(1).normal(size=(n, 3)))[0].astype(np.float32)
    u = float(np.finfo(np.float32).eps)
    mu1 = 57.93
    below, above = 3.4 * u * mu1, 1.2 * np.sqrt(n) * u * mu1  # sqrt(58) = 7.6
    out = finalize(EigenResult(np.array([mu1, above, below], dtype=np.float32), V, "test"))
    assert out.values[1] > 0 and out.values[2] == 0
    # float64: the same rule with float64's u, under scikit-learn's ratio 1e-12
    V64 = V.astype(np.float64)
    out = finalize(EigenResult(np.array([1.0, 1e-11, 1e-13]), V64, "test"))
    assert out.values.tolist() == [1.0, 1e-11, 0.0]


@pytest.mark.parametrize("solver", ["dense", "arpack", "randomized", "krylov"])
def test_float32_duplicated_rows_give_zero_roundoff_eigenvalues(solver):
    """Issue 33: float32 rows of one feature, each repeated twice, cosine kernel: the
    centred kernel matrix has rank 1 (a float64 eigendecomposition says so), so every
    eigenvalue after the first is 0. The randomized solver used to keep 2.3e-5
    (4e-7 mu_1), and transform(X) then differed from fit_transform(X) by 1.5e-3."""
    import kpca

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(29, 1)).astype(np.float32)] * 2)
    Xn = X.astype(np.float64) / np.abs(X.astype(np.float64))
    K = Xn @ Xn.T
    J = np.eye(len(X)) - 1.0 / len(X)
    ref = np.linalg.eigvalsh(J @ K @ J)[::-1]
    assert np.sum(ref > 1e-9 * ref[0]) == 1
    est = kpca.KernelPCA(32, kernel="cosine", eigen_solver=solver, random_state=0)
    Z = est.fit_transform(X)
    assert est.eigenvalues_.dtype == np.float32
    np.testing.assert_allclose(est.eigenvalues_[0], ref[0], rtol=1e-5)
    np.testing.assert_array_equal(est.eigenvalues_[1:], 0)
    np.testing.assert_allclose(est.transform(X), Z, atol=1e-5 * np.abs(Z).max())
