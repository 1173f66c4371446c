"""The fit plan (kpca._plan.plan_fit, KernelPCA.fit_plan_, KernelPCA.plan, ``kpca plan``).

* a pure function: from the shape alone (a kernel that raises on any evaluation) it
  makes the choices an actual fit makes on the benchmark grid of
  benchmarks/bench_solvers.py (``eigen_solver_``), with the reason stated;
* the plan is what the fit runs: the operator built, its storage and dtype, the start
  block and the passes, checked on the operator itself;
* its peak memory is an upper bound of what tracemalloc measures, within the budget;
* ``kpca plan`` prints it without fitting.
"""

from __future__ import annotations

import json
import logging
import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

import kpca
from kpca import FitPlan, KernelPCA, cli, plan_fit
from kpca.kernels import RBF, Linear
from kpca.operators import DenseOperator, TiledKernelOperator


class Untouchable(Exception):
    pass


def _refuse(*args, **kwargs):
    raise Untouchable("evaluated")


class NoEvalRBF(RBF):
    """An RBF kernel that raises on any evaluation or look at data."""

    def _block(self, X, Y, symmetric):
        raise Untouchable("block")

    def prepare(self, Y, dtype=None):
        raise Untouchable("prepare")

    def block_prepared(self, X, prep, out=None):
        raise Untouchable("block_prepared")

    def diag(self, X):
        raise Untouchable("diag")

    def resolve(self, X, random_state=None):
        raise Untouchable("resolve")


#: what evaluates a kernel or looks at data
EVALUATION = ("block", "_block", "prepare", "block_prepared", "diag", "resolve")


@pytest.fixture
def no_evaluation(monkeypatch):
    """Every evaluation method of the Linear kernel raises (the primal route needs the
    exact type, so no subclass will do)."""
    for name in EVALUATION:
        if hasattr(Linear, name):
            monkeypatch.setattr(Linear, name, _refuse)


# ------------------------------------------------------------- the benchmark grid
#: benchmarks/bench_solvers.py's DATA: name -> (standardized, kernel, gamma)
BENCH_DATA = {
    "raw-rbf-1e-3": (False, "rbf", 1e-3),
    "raw-rbf-1e-2": (False, "rbf", 1e-2),
    "std-rbf": (True, "rbf", None),
    "std-linear": (True, "linear", None),
    "gauss-rbf": (None, "rbf", None),
}


def bench_data(n: int, standardize) -> np.ndarray:
    """bench_solvers.digits: digits, noisy copies beyond 1,797 rows, or Gaussian d=20."""
    if standardize is None:
        return np.random.default_rng(0).standard_normal((n, 20))
    X = load_digits().data
    rng = np.random.default_rng(0)
    parts = [X]
    while sum(len(p) for p in parts) < n:
        parts.append(X + rng.normal(0.0, 2.0, X.shape))
    X = np.vstack(parts)[:n]
    return StandardScaler().fit_transform(X) if standardize else X


def test_bench_data_is_the_benchmarks():
    """The grid's data and names are those of benchmarks/bench_solvers.py."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[1] / "benchmarks" / "bench_solvers.py"
    spec = importlib.util.spec_from_file_location("bench_solvers", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.DATA == BENCH_DATA
    for std, _, _ in BENCH_DATA.values():
        np.testing.assert_array_equal(bench.digits(2000, std), bench_data(2000, std))


def _stated(plan: FitPlan) -> None:
    """The reason names the rule that chose: the least modelled cost among those
    listed, a size rule, or the primal route's comparison."""
    assert plan.solver_reason
    if plan.costs:
        assert plan.costs[plan.solver] == min(plan.costs.values())
        for name, flops in plan.costs.items():
            assert f"{name} {flops:.3g}" in plan.solver_reason
        if plan.solver_reason.startswith("least modelled cost"):  # and the cache it assumed
            cache = kpca.get_config()["solver_cache_bytes"] / 2**20
            assert f"{cache:.3g} MiB of cache" in plan.solver_reason
    elif plan.solver == "primal":
        assert "p=" in plan.solver_reason and "flops" in plan.solver_reason
    else:
        assert "dense_small_rows" in plan.solver_reason or "does not fit" in \
            plan.solver_reason


@pytest.mark.parametrize("data", list(BENCH_DATA))
def test_plan_makes_the_fits_choice_on_the_bench_grid(data, monkeypatch):
    """From the shape alone (the kernel raises if evaluated), the plan chooses what the
    fit chooses (eigen_solver_), and is the plan the fit kept, on the grid's cells a
    test can fit (n = 500, 1,500 with k = 5-128; 3,500 with k = 5)."""
    std, kname, gamma = BENCH_DATA[data]
    cells = [(n, k) for n in (500, 1500) for k in (5, 32, 64, 128)] + [(3500, 5)]
    Xall = bench_data(3500, std)
    for n, k in cells:
        X = Xall[:n]
        est = KernelPCA(k, kernel=kname, gamma=gamma, random_state=0)
        with monkeypatch.context() as m:
            for name in EVALUATION:  # the kernels evaluate nothing while planning
                for cls in (Linear, RBF):
                    if name in vars(cls) or name in ("block", "_block", "resolve"):
                        m.setattr(cls, name, _refuse)
            pure = plan_fit(n, X.shape[1], RBF(gamma) if kname == "rbf" else Linear(),
                            n_components=k)
        fitted = est.fit(X)
        assert pure.solver == fitted.eigen_solver_, (data, n, k, pure.solver_reason)
        _stated(pure)
        assert not pure.provisional  # float64 up to 4,096 rows: nothing left to check
        got = fitted.fit_plan_.decisions()
        assert pure.decisions() == got, (data, n, k)


@pytest.mark.parametrize("n", [3500, 10000])
def test_plan_on_the_large_cells_follows_the_cost_model(n, no_evaluation):
    """The grid's cells too large to fit here: with float32 storage (float64 data
    beyond float64_max_rows) the plan's solver is the 'auto' rule's, by the model's
    own costs (kpca.solvers.choose_solver) or the primal route for the linear kernel
    on 64 features (up to 64 components); the reason says which."""
    from kpca.solvers import choose_solver

    for data, (_, kname, _) in BENCH_DATA.items():
        d = 20 if data == "gauss-rbf" else 64
        kern = NoEvalRBF(gamma=0.01) if kname == "rbf" else Linear()
        for k in (5, 32, 64, 128):
            plan = plan_fit(n, d, kern, n_components=k, float32_error=0.0)
            _stated(plan)
            if kname == "linear" and k <= d:  # the covariance of the d features
                assert plan.solver == "primal", plan.solver_reason
                continue
            assert plan.dtype == (np.float32 if n > 4096 else np.float64)
            assert plan.solver == choose_solver(n, k, itemsize=plan.dtype.itemsize,
                                                rank=kern.rank_bound(d))


# ------------------------------------------------------------- no kernel evaluation
@pytest.mark.parametrize("params", [
    dict(n_components=5),
    dict(n_components=5, memory_limit="20MB"),
    dict(n_components=0.9),
    dict(n_components=None),
    dict(n_components="auto"),
    dict(n_components=5, eigen_solver="arpack"),
    dict(n_components=5, eigen_solver="randomized", memory_limit="50MB"),
    dict(n_components=5, precision="float32"),
])
@pytest.mark.parametrize("n", [300, 5000, 200_000])
def test_planning_evaluates_no_kernel(params, n, no_evaluation):
    """Planning from the shape never evaluates the kernel nor reads data: with a kernel
    that raises on any evaluation, every plan is made; beyond float64_max_rows the
    float32 check (which evaluates on a subsample) is left to the fit and the
    precision is marked provisional."""
    est = KernelPCA(kernel=NoEvalRBF(gamma=0.1), **params)
    try:
        plan = est.plan((n, 8))
    except ValueError as exc:  # a plan no fit could run says so, as the fit would
        assert "memory_limit" in str(exc)
        return
    assert plan.n == n and plan.solver in ("dense", "arpack", "krylov", "randomized")
    assert plan.provisional == (n > kpca.get_config()["float64_max_rows"]
                                and "precision" not in params)
    assert str(plan)  # describing it evaluates nothing either
    linear = KernelPCA(kernel="linear", **params).plan((n, 8))  # the primal route too
    assert linear.solver == "primal" or params.get("n_components") in (0.9, "auto") or \
        "eigen_solver" in params, linear.solver_reason


def test_a_fit_with_that_kernel_does_evaluate_it(no_evaluation):
    """The test above can fail: the same kernels raise as soon as a fit looks."""
    with pytest.raises(Untouchable):
        KernelPCA(2, kernel=NoEvalRBF(gamma=0.1)).fit(np.ones((20, 3)))
    with pytest.raises(Untouchable):
        KernelPCA(2, kernel="linear", eigen_solver="dense").fit(np.ones((20, 3)))


# ------------------------------------------------------------- the plan is what runs
@pytest.fixture
def built(monkeypatch):
    """The operators the fits build (the pipeline's kpca._fit.build_operator), with
    their start blocks."""
    import kpca._fit as pipeline

    seen = []
    real = pipeline.build_operator

    def spy(*args, **kwargs):
        op = real(*args, **kwargs)
        seen.append((op, op.initial_block() if hasattr(op, "initial_block") else None))
        return op

    monkeypatch.setattr(pipeline, "build_operator", spy)
    return seen


class Passes(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.count = 0

    def emit(self, record):
        self.count += getattr(record, "kpca_event", None) == "pass"


def _rows(n, d=5, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


@pytest.mark.parametrize("name, X, params", [
    ("dense", _rows(400), dict(n_components=64, kernel="rbf", gamma=0.2)),
    ("arpack", _rows(2000), dict(n_components=5, kernel="rbf", gamma=0.2)),
    ("stored", _rows(3000), dict(n_components=5, kernel="rbf", gamma=0.2,
                                 eigen_solver="krylov", memory_limit="80MB")),
    ("matrix-free", _rows(3000), dict(n_components=5, kernel="rbf", gamma=0.2,
                                      precision="float64", memory_limit="18MB")),
    ("float32 data", _rows(3000).astype(np.float32),
     dict(n_components=5, kernel="rbf", gamma=0.2, eigen_solver="krylov")),
    ("float32 check", _rows(5000, 3), dict(n_components=5, kernel="rbf", gamma=0.5,
                                           eigen_solver="krylov", memory_limit="60MB")),
    ("precomputed", None, dict(n_components=5, kernel="precomputed")),
])
def test_the_operator_is_the_plans(name, X, params, built):
    """The operator the fit builds has the plan's storage, dtype, tiles and start
    block, and the fit makes no more passes than the plan's bound."""
    if X is None:
        Y = _rows(600)
        X = Y @ Y.T
    est = KernelPCA(random_state=0, **params)
    counter = Passes()
    log = logging.getLogger("kpca")
    old = log.level
    log.setLevel(logging.INFO)
    log.addHandler(counter)
    try:
        est.fit(X)
    finally:
        log.removeHandler(counter)
        log.setLevel(old)
    plan, (op, initial) = est.fit_plan_, built[-1]
    assert plan.solver == est.eigen_solver_
    assert np.dtype(op.dtype) == plan.dtype
    assert not plan.provisional  # the fit ran the float32 check where it was needed
    if plan.storage == "dense":
        assert isinstance(op, DenseOperator) and plan.tiles is None
    else:
        assert isinstance(op, TiledKernelOperator)
        assert len(op.tiles) == plan.tiles.n_tiles
        assert op.fraction_stored == {"stored": 1.0, "matrix-free": 0.0}[plan.storage]
        assert op.nbytes == plan.tiles.stored_bytes  # the kept tiles, to the byte
    if plan.start is None:
        assert initial is None
    else:
        assert initial[0].shape == (plan.n, plan.block)
    if plan.passes is not None and plan.storage != "dense":
        assert 1 <= counter.count <= plan.passes
    if name == "float32 check":  # float64 data beyond float64_max_rows: checked
        assert plan.dtype == np.float32 and "estimated on a subsample" in \
            plan.precision_reason


def test_primal_route_builds_no_operator(built):
    X = _rows(3000, 10)
    est = KernelPCA(5, kernel="linear").fit(X)
    assert est.fit_plan_.solver == est.eigen_solver_ == "primal"
    assert est.fit_plan_.storage == "features" and not built


def test_shape_plan_and_fit_plan_agree_beyond_float64_rows():
    """Beyond float64_max_rows the shape-only plan assumes float32; where the fit's
    check confirms it, everything else agrees; where it refuses (a linear-like kernel
    far from the origin, centring cancels K), the fit's plan says float64 and why."""
    X = _rows(5000, 3)
    est = KernelPCA(5, kernel="rbf", gamma=0.5, eigen_solver="krylov", memory_limit="60MB",
                    random_state=0)
    before = est.plan(X.shape)
    after = est.fit(X).fit_plan_
    assert before.provisional and not after.provisional
    a, b = before.decisions(), after.decisions()
    for key in ("provisional", "precision_reason"):
        a.pop(key), b.pop(key)
    assert a == b
    far = KernelPCA(3, kernel="poly", degree=2.5, gamma=0.1, eigen_solver="krylov",
                    random_state=0).fit(_rows(5000, 5) + 100)
    assert far.fit_plan_.dtype == np.float64
    assert "above float32_max_error" in far.fit_plan_.precision_reason


def test_device_plan_on_torch_cpu():
    """Array API input: the plan is for its device (block Lanczos where 'auto' chose
    ARPACK on the host), and plan(X) reads the tensor's shape only."""
    torch = pytest.importorskip("torch")
    X = torch.as_tensor(_rows(2000))
    est = KernelPCA(5, kernel="rbf", gamma=0.2, random_state=0)
    planned = est.plan(X)
    model = est.fit(X)
    assert planned.device == model.fit_plan_.device == "cpu"
    assert model.fit_plan_.solver == model.eigen_solver_ == "krylov"
    assert "block Lanczos runs on the device" in model.fit_plan_.solver_reason
    assert planned.decisions() == model.fit_plan_.decisions()
    assert model.fit_plan_.device_X is None  # the fitted plan keeps no device array


@pytest.mark.parametrize("args,kwargs,valid", [
    ((-5, 5), {}, r"'n_samples' parameter of plan_fit must be an int in the range \[1, inf\)"),
    ((1.5, 5), {}, r"'n_samples' parameter of plan_fit must be an int in the range \[1, inf\)"),
    ((True, 5), {}, "'n_samples' parameter of plan_fit must not be a bool"),
    ((100, 0), {}, r"'n_features' parameter of plan_fit must be an int in the range \[1, inf\) "
                   "or None"),
    ((100, 5), {"n_components": 0}, r"'n_components' parameter of plan_fit must be an int in "
                                     r"the range \[1, inf\)"),
    ((100, 5), {"k": -1}, r"'k' parameter of plan_fit must be an int in the range \[1, inf\)"),
    ((100, 5), {"eigen_solver": "foo"}, "'eigen_solver' parameter of plan_fit must be a str "
                                        "among .*'dense'"),
    ((100, 5), {"precision": "float16"}, "'precision' parameter of plan_fit must be a str among"),
    ((100, 5), {"memory_limit": 0.5}, "'memory_limit' parameter of plan_fit"),
    ((100, 5), {"n_jobs": 0}, "'n_jobs' parameter of plan_fit"),
])
def test_plan_fit_checks_its_arguments(args, kwargs, valid):
    """Each argument checked as KernelPCA.plan checks the estimator's (it gave plans of
    -5 x -5 matrices, a bare KeyError for an unknown solver)."""
    with pytest.raises(ValueError, match=valid):
        plan_fit(*args, RBF(gamma=0.1), **kwargs)
    if "n_components" in kwargs or "eigen_solver" in kwargs:  # the estimator: the same rule
        with pytest.raises(ValueError, match=valid.replace("plan_fit", "KernelPCA")):
            KernelPCA(kernel="rbf", **kwargs).plan((100, 5))


def test_plan_fit_takes_a_kernel_name_as_the_estimators_do():
    """A name (or a callable) is resolved as KernelPCA resolves it; anything else, or a
    kernel object with an invalid parameter, is a ValueError naming the kernel."""
    by_name = plan_fit(200, 5, "rbf", n_components=3)
    by_object = plan_fit(200, 5, RBF(), n_components=3)
    assert by_name.decisions() == by_object.decisions()
    assert by_name.decisions() == KernelPCA(3, kernel="rbf").plan((200, 5)).decisions()
    pre = plan_fit(200, None, "precomputed", n_components=3)
    assert pre.precomputed
    assert pre.decisions() == KernelPCA(3, kernel="precomputed").plan((200, 200)).decisions()
    with pytest.raises(ValueError, match="'kernel' parameter of plan_fit must be a str among"):
        plan_fit(200, 5, "gaussian-ish")
    with pytest.raises(ValueError, match="'kernel' parameter of plan_fit"):
        plan_fit(200, 5, 3)
    with pytest.raises(ValueError, match=r"'degree' parameter of Polynomial must be a float in "
                       r"the range \[0\.0, inf\)"):
        plan_fit(200, 5, kpca.kernels.Polynomial(degree=float("nan")))


def test_memory_errors_come_from_the_plan():
    X = _rows(3000)
    for params, match in [(dict(eigen_solver="dense", memory_limit="1MB"), "whole 3000x3000"),
                          (dict(eigen_solver="krylov", memory_limit="2MB"), "too small")]:
        est = KernelPCA(5, kernel="rbf", **params)
        with pytest.raises(ValueError, match=match) as planned:
            est.plan(X.shape)
        with pytest.raises(ValueError, match=match) as fitted:
            est.fit(X)
        assert str(planned.value) == str(fitted.value)


def test_device_memory_errors_come_from_the_plan():
    """On a device the dense solver gets half the budget: the same check, one message
    for the plan and the fit."""
    torch = pytest.importorskip("torch")
    X = torch.as_tensor(_rows(1000, 3))
    est = KernelPCA(5, kernel="rbf", eigen_solver="dense", memory_limit="4MB")
    with pytest.raises(ValueError, match="in device memory") as planned:
        est.plan(X)
    with pytest.raises(ValueError, match="in device memory") as fitted:
        est.fit(X)
    assert str(planned.value) == str(fitted.value)
    # under 'auto' the same budget gives block Lanczos instead
    auto = KernelPCA(5, kernel="rbf", memory_limit="4MB").plan(X)
    assert auto.solver == "krylov" and auto.storage == "matrix-free"


# ------------------------------------------------------------- peak memory
@pytest.mark.parametrize("X, params", [
    (_rows(1500), dict(n_components=64, kernel="rbf", gamma=0.2)),
    (_rows(800), dict(kernel="rbf", gamma=0.2)),
    (_rows(2000), dict(n_components=5, kernel="rbf", gamma=0.2)),
    (_rows(3000), dict(n_components=5, kernel="rbf", gamma=0.2, precision="float64",
                       memory_limit="18MB")),
    (_rows(3000), dict(n_components=5, kernel="rbf", gamma=0.2, eigen_solver="krylov",
                       memory_limit="80MB")),
    (_rows(3000, 10), dict(n_components=5, kernel="linear")),
    (_rows(800), dict(n_components=0.5, kernel="rbf", gamma=0.2)),
    (_rows(2000), dict(n_components=5, kernel="rbf", gamma=0.2, eigen_solver="arpack",
                       memory_limit="20MB")),
])
def test_peak_memory_bounds_the_fit_and_fits_the_budget(X, params):
    """tracemalloc (which sees NumPy's buffers) measures the fit's peak: at most the
    plan's estimate (the input copy X_fit_ and 1 MiB of Python objects aside), at
    least 40 % of it (the estimate is not a vacuous bound), and the estimate within
    the budget where the budget decides the storage (tiled fits)."""
    est = KernelPCA(random_state=0, **params)
    planned = est.plan(X.shape)
    tracemalloc.start()
    try:
        est.fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    plan = est.fit_plan_
    assert plan.peak_bytes == planned.peak_bytes
    used = peak - X.nbytes
    assert used <= plan.peak_bytes + 2**20, (used, plan.peak_bytes)
    assert used >= 0.4 * plan.peak_bytes, (used, plan.peak_bytes)
    if plan.tiled:
        assert plan.peak_bytes <= plan.budget


# ------------------------------------------------------------- fit_plan_ and text
def test_fit_plan_describes_the_fit(tmp_path):
    X = _rows(3000)
    est = KernelPCA(5, kernel="rbf", gamma=0.2, memory_limit="18MB",
                    precision="float64").fit(X)
    text = str(est.fit_plan_)
    assert text == est.fit_plan_.describe()
    for fragment in ("solver:       krylov", "why:", "matrix-free", "precision:    float64",
                     "passes:", "time class:", "peak memory:", "Nystrom directions on"):
        assert fragment in text, fragment
    # not kept in model files (it describes a fit on this machine)
    from kpca.io import load_model, save_model

    save_model(est, tmp_path / "m.kpca")
    assert not hasattr(load_model(tmp_path / "m.kpca"), "fit_plan_")


def test_refit_replaces_the_plan():
    est = KernelPCA(3, kernel="rbf", gamma=0.2)
    assert est.fit(_rows(300)).fit_plan_.n == 300
    assert est.fit(_rows(500)).fit_plan_.n == 500


def test_robpca_has_no_single_plan():
    with pytest.raises(ValueError, match="own algorithm"):
        kpca.KernelROBPCA(2).plan((100, 3))


# ------------------------------------------------------------- kpca plan
def _run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_plan_prints_the_plan_without_fitting(capsys, tmp_path):
    """200,000 rows: a fit would take minutes; the plan reads the .npy header and
    prints at once what the fit would do."""
    path = tmp_path / "big.npy"
    np.save(path, np.zeros((200_000, 3)))
    code, out, err = _run(capsys, "plan", path, "-k", "5", "--kernel", "rbf",
                          "--gamma", "0.5", "--memory-limit", "1GB")
    assert code == 0, err
    for fragment in ("solver:       krylov", "why:", "does not fit memory_limit",
                     "matrix-free", "precision:    float32 (provisional)", "passes:",
                     "time class:", "peak memory:"):
        assert fragment in out, fragment
    code, out, _ = _run(capsys, "plan", path, "-k", "5", "--kernel", "rbf", "--gamma",
                        "0.5", "--memory-limit", "1GB", "--json")
    got = json.loads(out)
    want = KernelPCA(5, kernel="rbf", gamma=0.5, memory_limit="1GB").plan(
        (200_000, 3)).decisions()
    assert got == json.loads(json.dumps(want))


def test_cli_plan_matches_the_fit(capsys, tmp_path):
    X = _rows(1500, 4)
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",")
    code, out, err = _run(capsys, "plan", path, "-k", "3", "--kernel", "rbf", "--gamma",
                          "0.3", "--json")
    assert code == 0, err
    fitted = KernelPCA(3, kernel="rbf", gamma=0.3).fit(np.loadtxt(path, delimiter=","))
    assert json.loads(out)["solver"] == fitted.eigen_solver_
    assert json.loads(out)["storage"] == fitted.fit_plan_.storage


@pytest.mark.parametrize("argv, fragment", [
    (["--estimator", "robpca"], "own algorithm"),
    (["--estimator", "nystrom"], "no fit plan"),
    (["--eigen-solver", "dense", "--memory-limit", "100KB"], "memory_limit allows"),
])
def test_cli_plan_errors(capsys, tmp_path, argv, fragment):
    path = tmp_path / "x.npy"
    np.save(path, _rows(300))
    code, out, err = _run(capsys, "plan", path, *argv)
    assert code == 2 and fragment in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("shape", [(200, 4), (4, 200)])
def test_plan_refuses_a_precomputed_kernel_that_is_not_square(capsys, tmp_path, shape):
    """plan and 'kpca plan' planned a 200 x 200 kernel matrix from a 200 x 4 table,
    which fit refuses: now both refuse it, with the fit's message."""
    X = _rows(*shape)
    est = KernelPCA(2, kernel="precomputed")
    with pytest.raises(ValueError, match=r"needs the square \(n_samples, n_samples\)") as fit:
        est.fit(X)
    for planned in (X, X.shape):
        with pytest.raises(ValueError) as plan:
            est.plan(planned)
        assert str(plan.value) == str(fit.value)
    assert est.plan((200, 200)).precomputed  # a square one is planned
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",")
    code, out, plan_err = _run(capsys, "plan", path, "--kernel", "precomputed")
    assert (code, out) == (2, "")
    code, _, fit_err = _run(capsys, "fit", path, "--kernel", "precomputed", "--save",
                            tmp_path / "m.kpca")
    assert code == 2 and plan_err == fit_err
    assert plan_err == f"kpca: error: {fit.value} (--kernel)\n"
