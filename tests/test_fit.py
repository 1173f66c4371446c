"""The fit pipeline (kpca._fit): each step against a dense NumPy reference, and the one
commit that writes a fit's attributes only once everything has succeeded."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

import kpca._fit as pipeline
from kpca import KernelPCA, SphericalKernelPCA, WeightedKernelPCA
from kpca._fit import (
    FitResult,
    FitSettings,
    MeanCentring,
    build_operator,
    commit,
    decompose,
    exact_result,
    make_plan,
    shape_plan,
    solve,
    solve_centred,
)
from kpca._plan import plan_fit
from kpca.kernels import RBF, Linear
from kpca.operators import Centering, DenseOperator, TiledKernelOperator


def _rows(n=300, d=4, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


def _centred(K, g=None):
    """``(I - 1 g^T) K (I - g 1^T)``: K centred on the point of weights ``g`` (mean: 1/n)."""
    n = K.shape[0]
    g = np.full(n, 1.0 / n) if g is None else g
    H = np.eye(n) - np.outer(np.ones(n), g)
    return H @ K @ H.T


def _top(M, k):
    w, V = np.linalg.eigh(M)
    return w[::-1][:k], V[:, ::-1][:, :k]


def _same_subspace(A, B, atol=1e-8):
    np.testing.assert_allclose(A @ A.T, B @ B.T, atol=atol)


# ----------------------------------------------------------------------------- plan
def test_make_plan_is_plan_fit_of_the_rows():
    X = _rows(500, 6)
    settings = FitSettings(n_components=5)
    plan = make_plan(X, RBF(gamma=0.3), settings)
    assert plan.decisions() == plan_fit(500, 6, RBF(gamma=0.3), n_components=5).decisions()


def test_a_reweighting_strategy_plans_no_primal_route_and_keeps_partial_tiles():
    """The linear kernel with few features takes the primal route, except for a
    strategy that decomposes another operator than K~ (robust KPCA)."""
    X = _rows(3000, 5)
    settings = FitSettings(n_components=3)
    assert make_plan(X, Linear(), settings).solver == "primal"
    plan = make_plan(X, Linear(), settings, reweights=True)
    assert plan.solver != "primal" and plan.partial_storage


def test_the_plan_of_a_reweighting_fit_states_the_start_it_runs():
    """A robust fit's solves are of operators it reweights itself, so no Nystrom start
    rides on its construction pass: its ``fit_plan_`` says the solver draws the start
    (and the operator the fit builds has no start block), where KernelPCA's says
    Nystrom and builds one."""
    X = _rows(3000, 10)
    settings = FitSettings(n_components=5, eigen_solver="krylov")
    mean = make_plan(X, RBF(gamma=0.05), settings)
    robust = make_plan(X, RBF(gamma=0.05), settings, reweights=True)
    assert mean.start == "nystrom" and robust.start is None
    assert "drawn by the solver" in str(robust)
    rng = np.random.RandomState(0)
    assert build_operator(X, mean, settings, rng).initial_block() is not None
    assert build_operator(X, robust, settings, rng).initial_block() is None
    for est in (SphericalKernelPCA, WeightedKernelPCA):
        fitted = est(n_components=5, kernel="rbf", gamma=0.05, eigen_solver="krylov").fit(X)
        assert fitted.fit_plan_.start is None
    assert KernelPCA(n_components=5, kernel="rbf", gamma=0.05,
                     eigen_solver="krylov").fit(X).fit_plan_.start == "nystrom"


def test_shape_plan_is_the_fits_plan_without_the_data():
    """From the shape and dtype alone: the plan make_plan gives the rows themselves (up
    to 4,096 float64 rows nothing is provisional), for the mean and a reweighting."""
    X = _rows(1500, 6)
    settings = FitSettings(n_components=8)
    for reweights in (False, True):
        pure = shape_plan(X.shape, X.dtype, RBF(gamma=0.3), settings, reweights=reweights)
        rows = make_plan(X, RBF(gamma=0.3), settings, reweights=reweights)
        assert pure.decisions() == rows.decisions()
        assert pure.partial_storage == reweights


# ----------------------------------------------------------------------------- operator
def test_build_operator_lays_out_the_plans_kernel_matrix():
    X = _rows(600)
    K = rbf_kernel(X, gamma=0.3)
    V = np.random.default_rng(1).standard_normal((600, 3))
    dense = make_plan(X, RBF(gamma=0.3), FitSettings(n_components=40))
    op = build_operator(X, dense, FitSettings(n_components=40), np.random.RandomState(0))
    assert isinstance(op, DenseOperator) and dense.storage == "dense"
    np.testing.assert_allclose(op.to_dense(), K, atol=1e-12)
    settings = FitSettings(n_components=3, eigen_solver="krylov", memory_limit="4MB",
                           precision="float64")
    tiled = make_plan(X, RBF(gamma=0.3), settings)
    op = build_operator(X, tiled, settings, np.random.RandomState(0))
    assert isinstance(op, TiledKernelOperator) and tiled.storage != "dense"
    np.testing.assert_allclose(op.matmat(V), K @ V, atol=1e-10)
    # the start block rides on the construction pass: an orthonormal (n, block) block
    Q = op.initial_block()[0]
    assert tiled.start == "nystrom" and Q.shape == (600, tiled.block)
    np.testing.assert_allclose(Q.T @ Q, np.eye(tiled.block), atol=1e-10)
    without = build_operator(X, tiled, settings, np.random.RandomState(0), start=False)
    assert without.initial_block() is None


def test_precomputed_operator_is_a_symmetrised_copy():
    K = rbf_kernel(_rows(50), gamma=0.5)
    K[0, 1] += 1e-3  # not symmetric: its symmetric part is used, K itself is untouched
    given = K.copy()
    settings = FitSettings(n_components=3, precomputed=True)
    plan = make_plan(K, RBF(), settings)
    with pytest.warns(UserWarning, match="not symmetric"):
        op = build_operator(K, plan, settings, np.random.RandomState(0))
    np.testing.assert_array_equal(K, given)
    np.testing.assert_allclose(op.to_dense(), (given + given.T) / 2, rtol=0, atol=1e-15)


# ----------------------------------------------------------------------------- centring
@pytest.mark.parametrize("center", [True, False])
def test_mean_centring(center):
    K = rbf_kernel(_rows(80), gamma=0.5)
    settings = FitSettings(center=center)
    op, c, fitted = MeanCentring().centre(DenseOperator(K.copy(), owned=True), None, settings,
                                          None)
    assert fitted == {} and c.enabled == center
    np.testing.assert_allclose(op.to_dense(), _centred(K) if center else K, atol=1e-12)
    np.testing.assert_allclose(c.row_means, K.mean(axis=1) if center else 0.0, atol=1e-14)


def test_strategy_of_an_estimator_reads_its_parameters():
    from kpca.robust._weighted import CampbellWeights

    est = WeightedKernelPCA(b1=3.0, init="uniform", robust_max_iter=7)
    s = CampbellWeights.of(est)
    assert (s.b1, s.init, s.robust_max_iter, s.b2) == (3.0, "uniform", 7, 1.25)
    assert isinstance(MeanCentring.of(KernelPCA()), MeanCentring)


# ----------------------------------------------------------------------------- solver
def test_solve_gives_the_top_eigenpairs_of_the_centred_operator():
    K = _centred(rbf_kernel(_rows(200), gamma=0.5))
    settings = FitSettings(n_components=4, eigen_solver="arpack")
    plan = make_plan(_rows(200), RBF(gamma=0.5), settings)
    res = solve(DenseOperator(K.copy(), owned=True), plan, settings, float(np.trace(K)),
                1e-12, np.random.RandomState(0))
    w, V = _top(K, 4)
    np.testing.assert_allclose(res.values, w, rtol=1e-10)
    _same_subspace(res.vectors, V)


def test_solve_a_variance_fraction_keeps_the_fewest_components_reaching_it():
    K = _centred(rbf_kernel(_rows(150), gamma=0.2))
    settings = FitSettings(n_components=0.9)
    plan = make_plan(_rows(150), RBF(gamma=0.2), settings)
    trace = float(np.trace(K))
    res = solve(DenseOperator(K.copy(), owned=True), plan, settings, trace, 1e-12,
                np.random.RandomState(0))
    w = np.linalg.eigvalsh(K)[::-1]
    m = int(np.argmax(np.cumsum(w) / trace >= 0.9)) + 1
    assert res.values.size == m
    np.testing.assert_allclose(res.values, w[:m], rtol=1e-10)


def test_solve_centred_decomposes_the_weighted_scaled_operator_and_leaves_k():
    X = _rows(120)
    K = rbf_kernel(X, gamma=0.5)
    w = np.random.default_rng(2).uniform(0.2, 1.0, 120)
    g = w / w.sum()
    m = K @ g
    c = Centering(m, float(g @ m), weights=g, scale=w)
    op = DenseOperator(K.copy(), owned=True)
    for solver in ("dense", "arpack"):
        settings = FitSettings(n_components=3, eigen_solver=solver)
        plan = make_plan(X, RBF(gamma=0.5), settings)
        res = solve_centred(op, c, plan, settings, np.random.RandomState(0))
        ref = w[:, None] * _centred(K, g) * w[None, :]
        vals, V = _top(ref, 3)
        np.testing.assert_allclose(res.values, vals, rtol=1e-9)
        _same_subspace(res.vectors, V, atol=1e-7)
        np.testing.assert_array_equal(op.to_dense(), K)  # untouched


# ----------------------------------------------------------------------------- decompose
def test_decompose_is_the_eigendecomposition_of_the_centred_kernel_matrix():
    X = _rows(250)
    K = _centred(rbf_kernel(X, gamma=0.4))
    dec = decompose(X, RBF(gamma=0.4), FitSettings(n_components=5), MeanCentring(),
                    np.random.RandomState(0))
    w, V = _top(K, 5)
    np.testing.assert_allclose(dec.result.values, w, rtol=1e-9)
    _same_subspace(dec.result.vectors, V)
    assert dec.trace == pytest.approx(np.trace(K), rel=1e-12)
    np.testing.assert_allclose(dec.centering.row_means, rbf_kernel(X, gamma=0.4).mean(axis=1),
                               atol=1e-14)


# ----------------------------------------------------------------------------- result
def test_exact_result_computes_every_attribute_and_writes_nothing():
    X = _rows(200)
    settings = FitSettings(n_components=3)
    dec = decompose(X, RBF(gamma=0.4), settings, MeanCentring(), np.random.RandomState(0))
    result = exact_result(X, RBF(gamma=0.4), 0.4, dec, settings, MeanCentring())
    a = result.attributes
    K = _centred(rbf_kernel(X, gamma=0.4))
    w, V = _top(K, 3)
    np.testing.assert_allclose(a["eigenvalues_"], w, rtol=1e-9)
    np.testing.assert_allclose(a["explained_variance_"], w / 200, rtol=1e-9)
    np.testing.assert_allclose(a["explained_variance_ratio_"], w / np.trace(K), rtol=1e-9)
    # the training scores sqrt(mu) v are the projections of the centred rows
    _same_subspace(result.output / np.sqrt(w), V)
    np.testing.assert_allclose(np.abs(result.output), np.abs(V * np.sqrt(w)), atol=1e-7)
    assert {"subspace_", "sd_cutoff_", "od_cutoff_", "offset_", "kernel_", "fit_plan_",
            "score_distances_", "orthogonal_distances_"} <= set(a)
    assert result.stale == ("dual_coef_", "X_transformed_fit_", "parallel_analysis_")


def test_commit_sets_the_attributes_and_removes_the_stale_ones():
    class Bare:
        pass

    est = Bare()
    est.dual_coef_, est.kept_ = 1, 2
    out = np.ones(3)
    assert commit(est, FitResult({"a_": 5, "b_": 6}, out, stale=("dual_coef_",))) is out
    assert vars(est) == {"kept_": 2, "a_": 5, "b_": 6}


@pytest.mark.parametrize("Est", [KernelPCA, SphericalKernelPCA])
def test_a_failed_refit_leaves_the_fitted_model_whole(Est, monkeypatch):
    """The learned pre-image is the last step of a fit: when it raises, no attribute of
    the previous fit has changed (same objects), n_features_in_ included."""
    X = _rows(120, 4)
    est = Est(n_components=3, kernel="rbf", gamma=0.3, fit_inverse_transform=True,
              random_state=0).fit(X)
    before = dict(vars(est))
    Z = est.transform(X[:5])

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("ridge failed")

    monkeypatch.setattr(pipeline, "fit_ridge_preimage", broken)
    with pytest.raises(np.linalg.LinAlgError, match="ridge failed"):
        est.fit(_rows(90, 6, seed=1))
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is v for k, v in before.items())
    np.testing.assert_array_equal(est.transform(X[:5]), Z)


def _broken_last_step(*args, **kwargs):
    raise FloatingPointError("the last step failed")


def _assert_whole(est, before, Z, X):
    """Every attribute of the previous fit is there, the same object, and no other."""
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is v for k, v in before.items())
    np.testing.assert_array_equal(est.transform(X[:5]), Z)


@pytest.mark.parametrize("Est", ["NystromKernelPCA", "RandomFeatureKernelPCA"])
def test_a_failed_approximate_refit_leaves_the_fitted_model_whole(Est, monkeypatch):
    """The approximate estimators commit through the same step: when the last step of a
    refit (the outlier cut-offs, after the subspace) raises, no attribute changed,
    n_features_in_ included (the refit's rows are wider)."""
    import kpca.approx
    import kpca.approx._base as approx_base

    X = _rows(200, 4)
    est = getattr(kpca.approx, Est)(n_components=3, gamma=0.3, random_state=0).fit(X)
    before, Z = dict(vars(est)), est.transform(X[:5])
    monkeypatch.setattr(approx_base, "outlier_statistics", _broken_last_step)
    with pytest.raises(FloatingPointError, match="last step"):
        est.fit(_rows(150, 6, seed=1))
    _assert_whole(est, before, Z, X)


@pytest.mark.parametrize("how", ["fit", "streamed fit", "partial_fit"])
def test_a_failed_incremental_update_leaves_the_fitted_model_whole(how, monkeypatch):
    """IncrementalKernelPCA commits a fit, a streamed fit and each batch through the
    same step: a fit (wider rows), a stream whose third batch's last step raises (two
    batches added), or a batch whose last step raises changes no attribute."""
    import kpca._incremental as incremental
    from kpca import IncrementalKernelPCA

    X = _rows(60, 4)
    est = IncrementalKernelPCA(n_components=3, gamma=0.3, batch_size=20).fit(X)
    before, Z = dict(vars(est)), est.transform(X[:5])
    calls = []
    statistics = incremental.outlier_statistics

    def broken_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            _broken_last_step()
        return statistics(*args, **kwargs)

    monkeypatch.setattr(incremental, "outlier_statistics",
                        broken_third if how == "streamed fit" else _broken_last_step)
    with pytest.raises(FloatingPointError, match="last step"):
        if how == "fit":
            est.fit(_rows(50, 6, seed=1))
        elif how == "streamed fit":  # beyond max_rows: fed in batches of 20
            est.set_params(max_rows=30).fit(_rows(80, 6, seed=1))
        else:
            est.partial_fit(_rows(10, 4, seed=1))
    assert how != "streamed fit" or len(calls) == 3
    if how == "streamed fit":
        est.set_params(max_rows=None)
    _assert_whole(est, before, Z, X)


def test_an_incremental_refit_drops_the_attributes_of_the_earlier_mode():
    """A bounded stream's state (its landmarks) goes when an exact fit replaces it: the
    commit's stale attributes, as a fresh exact fit has none of them."""
    from kpca import IncrementalKernelPCA

    X = _rows(60, 4)
    fresh = IncrementalKernelPCA(n_components=3, gamma=0.3, batch_size=20).fit(X)
    est = IncrementalKernelPCA(n_components=3, gamma=0.3, batch_size=20, mode="bounded",
                               max_rows=30).fit(X)
    assert set(vars(est)) != set(vars(fresh))
    est.set_params(mode="auto", max_rows=None).fit(X)
    assert set(vars(est)) == set(vars(fresh))
    np.testing.assert_array_equal(est.eigenvalues_, fresh.eigenvalues_)


# ----------------------------------------------------------------------------- inputs
def test_data_plan_reads_only_the_shape_and_dtype():
    """KernelPCA.plan's step: the same plan from the rows, from a dense or sparse copy's
    shape, and from a shape tuple with its dtype; ``'auto'`` plans parallel analysis's
    first round; no rows is an error naming X."""
    import scipy.sparse as sp

    X = _rows(1500, 6).astype(np.float32)
    settings = FitSettings(n_components=8)
    pure = shape_plan(X.shape, np.float32, RBF(gamma=0.3), settings)
    for data, dtype in [(X, None), ((1500, 6), np.float32)]:
        assert pipeline.data_plan(data, RBF(gamma=0.3), settings,
                                  dtype=dtype).decisions() == pure.decisions()
    assert pipeline.data_plan((1500, 6), RBF(gamma=0.3), settings).dtype == np.float64
    sparse = pipeline.data_plan(sp.csr_matrix(X), RBF(gamma=0.3), settings)
    assert sparse.decisions() == shape_plan(X.shape, np.float32, RBF(gamma=0.3), settings,
                                            sparse=True).decisions()
    auto = FitSettings(n_components="auto")
    assert (pipeline.data_plan(X, RBF(gamma=0.3), auto).decisions()
            == shape_plan(X.shape, np.float32, RBF(gamma=0.3), auto, auto=True).decisions())
    with pytest.raises(ValueError, match="X: expected data with at least one row"):
        pipeline.data_plan((0, 6), RBF(gamma=0.3), settings)


def test_fit_rows_validates_the_training_rows():
    """Integers become float64 (copied under copy_X, as scikit-learn), n_features_in_ is
    recorded, and a learned pre-image of a precomputed kernel is refused before anything
    else."""
    X = np.arange(24).reshape(8, 3)
    est = KernelPCA(2, random_state=4)
    rows, device, distributed, rng = pipeline.fit_rows(est, X, Linear())
    assert rows.dtype == np.float64 and device is None and not distributed
    np.testing.assert_array_equal(rows, X)
    assert est.n_features_in_ == 3
    np.testing.assert_array_equal(rng.randint(10**6, size=3),
                                  np.random.RandomState(4).randint(10**6, size=3))
    K = X @ X.T
    est = KernelPCA(2, kernel="precomputed", fit_inverse_transform=True)
    with pytest.raises(ValueError, match="Cannot fit_inverse_transform with a precomputed"):
        pipeline.fit_rows(est, K, est._make_kernel())
    assert not hasattr(est, "n_features_in_")


def test_fit_kernel_resolves_gamma_on_the_rows():
    """'scale' is 1 / (n_features Var(X)); a kernel without gamma reports scikit-learn's
    1 / n_features; the median heuristic without a random_state does not depend on the
    fit's RNG."""
    X = _rows(400, 5)
    kernel, gamma = pipeline.fit_kernel(RBF(gamma="scale"), X, "scale", FitSettings(),
                                        np.random.RandomState(0))
    assert gamma == pytest.approx(1.0 / (5 * X.var()), rel=1e-12) and kernel.gamma == gamma
    assert pipeline.fit_kernel(Linear(), X, None, FitSettings(), None)[1] == 0.2
    medians = {pipeline.fit_kernel(RBF(gamma="median"), X, "median", FitSettings(),
                                   np.random.RandomState(seed))[1] for seed in (0, 1)}
    assert len(medians) == 1
