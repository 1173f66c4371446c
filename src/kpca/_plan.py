"""What a kernel PCA fit will do, decided before it does it: :class:`FitPlan`.

:func:`plan_fit` is a pure function of the data's shape and dtype, the kernel, the
estimator's parameters and the configuration (``kpca.get_config()``): it evaluates no
kernel value and reads no data. It decides

* how many eigenpairs to ask for (``n_components``);
* the storage precision of the kernel matrix (``precision``;
  :func:`kpca.operators.storage_dtype`);
* the solver (``eigen_solver='auto'``: the primal route, or
  :func:`kpca.solvers.explain_choice`'s exact solver of least modelled cost; docs/math.md,
  "Choosing a solver"), and why;
* where ``K`` lives: one dense matrix, lower-triangular tiles stored or recomputed on
  every pass (matrix-free; :func:`kpca.operators.tile_layout`), a Dask cluster or a
  device; and the memory errors a fit would raise;
* the block Lanczos block and basis, its start (Nyström landmarks or random), the
  expected passes over ``K``, the modelled cost in flops and the peak memory.

``KernelPCA.fit`` builds its operator and runs its solver from the plan (the plan is
what runs), and keeps it in ``fit_plan_``; ``kpca plan DATA`` prints it without
fitting.

The module sits between the solvers (whose policy and cost model it reads) and the
estimators (which call it): it needs kernels, operators' memory sizes and the solver
policy together, which no lower layer may import, and it knows the estimator's
parameters (``n_components`` fractions, ``precision``, ``memory_limit``), which the
solvers do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    validate_parameter_constraints,
)

from . import solvers
from ._base import EXACT_FIT_CONSTRAINTS, BaseKernelPCA, kernel_parameters
from ._config import get_config
from ._memory import default_memory_limit, format_bytes, parse_memory
from .kernels import Kernel, feature_dimension, make_kernel
from .operators import DeviceKernelOperator, TileLayout, storage_dtype, tile_layout

__all__ = ["FitPlan", "on_device", "plan_fit", "requested_components"]

#: what each solver is, for people
_SOLVER_NAMES = {
    "dense": "LAPACK's dense eigendecomposition of the whole matrix",
    "arpack": "ARPACK, implicitly restarted Lanczos",
    "randomized": "randomized subspace iteration",
    "krylov": "thick-restart block Lanczos",
    "primal": "the primal route: the covariance of the explicit features (no kernel "
              "matrix)",
}


def _is_fraction(nc: Any) -> bool:
    """Whether ``n_components`` is a variance fraction (a float, not an integer; the
    estimators' ``kpca._base.is_fraction``, a layer above)."""
    return isinstance(nc, Real) and not isinstance(nc, Integral)


def requested_components(n_components: Any, n: int) -> int:
    """Eigenpairs a fit of ``n`` rows asks for: ``n`` for None, ``'auto'`` and a
    fraction (decided after the spectrum is known), else ``min(n, n_components)``."""
    if n_components is None or isinstance(n_components, str) or _is_fraction(n_components):
        return n
    return min(n, int(n_components))


@dataclass(frozen=True)
class FitPlan:
    """What one fit does: sizes, solver, storage, precision, passes and memory.

    Made by :func:`plan_fit`; the fields after ``device`` are derived from the others
    when the plan is made (``dataclasses.replace`` derives them again). Costs are
    counted in flops and passes (docs/math.md, "Choosing a solver"), never in seconds.
    """

    #: the kernel (resolved on the data in a fit; possibly not in a shape-only plan)
    kernel: Kernel
    #: rows and the eigenpairs asked for
    n: int
    k: int
    #: ``n_components`` as a variance fraction (the count is found after the spectrum)
    fraction: float | None
    #: 'dense', 'arpack', 'randomized', 'krylov' or 'primal'
    solver: str
    #: the storage dtype of the kernel matrix (float32 or float64)
    dtype: np.dtype
    #: bytes the fit may use for K and the solver's workspace (``memory_limit``)
    budget: int
    #: the training data is a dask collection: K @ V runs on the cluster
    distributed: bool = False
    #: 'auto' chose the solver: an unconverged iterative solve falls back to dense
    auto: bool = False
    #: the whole n x n kernel matrix fits the budget (the dense solver is possible)
    dense_fits: bool = True
    #: the training rows as an Array API array on their device (a fit's, not kept)
    device_X: Any = field(default=None, repr=False, compare=False)
    #: input columns (None: strings or a precomputed kernel matrix)
    n_features: int | None = None
    precomputed: bool = False
    center: bool = True
    n_jobs: int | None = None
    #: keep the tiles of K that fit when not all of them do (robust estimators)
    partial_storage: bool = False
    #: why this solver, and why this precision (sentences)
    solver_reason: str = ""
    precision_reason: str = ""
    #: the precision is not final: float32 unless the fit's check on a subsample
    #: (:func:`kpca.operators.float32_eigen_error`) finds it too inaccurate
    provisional: bool = False
    #: the device the operator and the solver run on (e.g. 'cuda:0'), or None
    device: str | None = None
    #: the modelled flops of each solver compared by 'auto' (empty: a rule decided)
    costs: dict = field(default_factory=dict, compare=False)

    # ---- derived (init=False): see _derive
    #: 'dense' (one n x n matrix), 'stored' (every tile kept), 'matrix-free' (every
    #: pass recomputes K), 'partial', 'distributed' or 'features' (primal)
    storage: str = field(init=False)
    #: the tiles of a tiled operator (None: not tiled)
    tiles: TileLayout | None = field(init=False, repr=False)
    #: bytes left for K's tiles after the solver's workspace (tiled only)
    kernel_budget: int | None = field(init=False, repr=False)
    #: a pass reads a stored K (block Lanczos then takes narrow blocks, and the start
    #: fewer landmarks): the whole n x n matrix fits the budget beside the workspace
    cheap_pass: bool = field(init=False, repr=False)
    #: block Lanczos's block width and basis size (None: another solver)
    block: int | None = field(init=False)
    basis: int | None = field(init=False)
    #: 'nystrom' (landmarks), 'random' or None (the solver draws its own start)
    start: str | None = field(init=False)
    landmarks: int | None = field(init=False)
    #: expected passes over K (the construction pass included; a conservative
    #: convergence bound) and kernel evaluations of each value; None: not known
    passes: int | None = field(init=False)
    evaluations: int | None = field(init=False)
    #: modelled cost in flops and its order (the time class)
    flops: float | None = field(init=False)
    time_class: str = field(init=False)
    #: peak bytes the fit's K, operator and solver hold (the input not counted)
    peak_bytes: int = field(init=False)
    #: why a fit cannot run this plan (the error it raises), or None
    infeasible: str | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        try:
            derived = _derive(self)
        except ValueError as exc:  # plan_fit raises it; a replace() keeps the message
            derived = dict(_UNDERIVED, infeasible=str(exc))
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    @property
    def in_process(self) -> bool:
        """K is one dense matrix in this process (precomputed kernels, the dense
        solver, ARPACK where K fits), not tiled, distributed or on a device."""
        return self.storage == "dense"

    @property
    def tiled(self) -> bool:
        return self.tiles is not None

    def describe(self) -> str:
        """The plan as a few lines of text (what ``kpca plan`` prints)."""
        dev = f" on {self.device}" if self.device else ""
        rows = (f"{self.n:,} x {self.n_features:,}" if self.n_features is not None
                else f"{self.n:,}")
        k = (f"n_components={self.fraction:g} (a variance fraction: k grows until it "
             "is reached)" if self.fraction is not None else f"k={self.k}")
        kname = getattr(self.kernel, "name", type(self.kernel).__name__)
        lines = [f"fit plan: {rows} rows, {k}, {kname} kernel{dev}"]
        how = "eigen_solver='auto'" if self.auto else f"eigen_solver={self.solver!r}"
        lines.append(f"  solver:       {self.solver} ({_SOLVER_NAMES[self.solver]}); {how}")
        if self.solver_reason:
            lines.append(f"    why:        {self.solver_reason}")
        lines.append(f"  kernel matrix: {self._storage_text()}")
        prec = f"{self.dtype.name}" + (" (provisional)" if self.provisional else "")
        lines.append(f"  precision:    {prec}")
        if self.precision_reason:
            lines.append(f"    why:        {self.precision_reason}")
        if self.block is not None:
            start = {"nystrom": f"Nystrom directions on {self.landmarks} landmarks",
                     "random": "a random block",
                     None: "drawn by the solver"}[self.start]
            lines.append(f"  block:        {self.block} columns, basis of {self.basis}; "
                         f"start: {start}")
        lines.append(f"  passes:       {self._passes_text()}")
        flops = "" if self.flops is None else f"~{self.flops:.3g} flops, "
        lines.append(f"  time class:   {flops}{self.time_class}")
        where = "device memory" if self.device else "memory"
        lines.append(f"  peak memory:  {format_bytes(self.peak_bytes)} of {where} "
                     f"(budget {format_bytes(self.budget)}; the input not counted)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()

    def decisions(self) -> dict[str, Any]:
        """What the plan decided, as plain values (JSON-ready): ``kpca plan --json``."""
        return {
            "n_samples": self.n, "n_features": self.n_features, "k": self.k,
            "fraction": self.fraction, "kernel": getattr(self.kernel, "name", None),
            "solver": self.solver, "auto": self.auto, "solver_reason": self.solver_reason,
            "storage": self.storage, "device": self.device, "dtype": self.dtype.name,
            "provisional": self.provisional, "precision_reason": self.precision_reason,
            "block": self.block, "basis": self.basis, "start": self.start,
            "landmarks": self.landmarks, "passes": self.passes,
            "evaluations": self.evaluations,
            "flops": None if self.flops is None else float(self.flops),
            "time_class": self.time_class, "peak_bytes": self.peak_bytes,
            "budget": self.budget,
        }

    def _passes_text(self) -> str:
        if self.solver == "primal":
            return "none over K (one over the data)"
        if self.passes is None:
            return "not modelled (the solver stops when its residuals meet tol)"
        if self.solver == "dense":
            return "1 (building K), then LAPACK"
        evals = ("each kernel value computed once" if self.evaluations == 1 else
                 "each kernel value computed again on each pass")
        if self.solver == "arpack":
            return (f"1 (building K), then at most ~{self.passes - 1} products with one "
                    f"vector (the cost model's conservative bound); {evals}")
        start = " (and the start's product)" if self.start else ""
        return (f"at most ~{self.passes}: 1 building the row sums{start}, then "
                f"{self.passes - 1} block Lanczos passes (the cost model's conservative "
                f"bound); {evals}")

    def _storage_text(self) -> str:
        size = format_bytes(self.n * self.n * self.dtype.itemsize)
        if self.storage == "features":
            return "none (the primal route never forms it)"
        if self.storage == "dense":
            return f"stored, one {self.n:,} x {self.n:,} matrix ({size})"
        if self.storage == "distributed":
            return "matrix-free on the Dask cluster (each pass recomputes it)"
        if self.tiles is None:  # a device
            return (f"stored in device memory ({size})" if self.storage == "stored" else
                    "matrix-free in device memory (each pass recomputes it)")
        t = self.tiles
        tiles = f"{t.n_tiles} lower-triangular tiles of {t.side} rows"
        if self.storage == "stored":
            return f"stored, {tiles} ({format_bytes(t.n_keep * t.tile_bytes)})"
        if self.storage == "partial":
            return (f"partly stored, {t.n_keep} of {tiles} kept "
                    f"({100 * t.fraction_stored:.0f} %), the others recomputed on each pass")
        return f"matrix-free, {tiles} recomputed on each pass"


def plan_fit(
    n_samples: int,
    n_features: int | None,
    kernel: Kernel,
    *,
    dtype: Any = np.float64,
    n_components: Any = None,
    k: int | None = None,
    eigen_solver: str = "auto",
    precision: str = "auto",
    memory_limit: Any = None,
    center: bool = True,
    n_jobs: int | None = None,
    precomputed: bool = False,
    sparse: bool = False,
    distributed: bool = False,
    primal: bool = True,
    partial_storage: bool = False,
    float32_error: Callable[[], float] | float | None = None,
    device: str | None = None,
    device_memory: int | None = None,
) -> FitPlan:
    """Plan a kernel PCA fit of ``n_samples`` rows (no kernel value is evaluated).

    Parameters
    ----------
    n_samples : int
    n_features : int or None
        Columns of the data; None for strings (and any non-vector input).
    kernel : Kernel, str or callable
        The kernel (its data-dependent parameters need not be resolved), or what
        :class:`kpca.KernelPCA` takes as ``kernel`` (a name, e.g. ``'rbf'``, with
        its default parameters, or a callable).
    dtype : dtype, default=float64
        The data's dtype.
    n_components, eigen_solver, precision, memory_limit, center, n_jobs
        The estimator's parameters (:class:`kpca.KernelPCA`).
    k : int, default=None
        Eigenpairs to ask for instead of ``n_components``' count (at most
        ``n_samples``).
    precomputed : bool, default=False
        The data are the ``n x n`` kernel matrix.
    sparse : bool, default=False
        The data are a sparse matrix (no primal route).
    distributed : bool, default=False
        The data are a dask collection: K @ V runs on the cluster.
    primal : bool, default=True
        Whether the estimator may take the primal route (estimators that centre or
        rescale otherwise decompose another operator: False).
    partial_storage : bool, default=False
        Keep the tiles that fit when not all of them do.
    float32_error : callable, float or None
        The eigenvalue error float32 storage would cause
        (:func:`kpca.operators.float32_eigen_error`), or a function returning it
        (called only when ``precision='auto'`` needs it). ``None``: not known; the
        plan then assumes float32 and says that it is provisional.
    device : str, default=None
        The device of Array API input (e.g. ``'cuda:0'``): the operator and the
        solver run there.
    device_memory : int, default=None
        The budget in device memory (None: ``memory_limit`` or the host's budget).

    Returns
    -------
    FitPlan

    Raises
    ------
    ValueError
        For an invalid argument (scikit-learn's ``InvalidParameterError``, naming it
        and its valid values, as :meth:`kpca.KernelPCA.plan` gives), and where the fit
        would raise for memory: the dense solver and a kernel matrix beyond
        ``memory_limit``, or a budget below the solver's workspace.
    """
    _check_arguments(locals())  # the arguments: nothing else is bound yet
    if not isinstance(kernel, Kernel):  # a name or a callable, as the estimators take
        precomputed = precomputed or (isinstance(kernel, str) and kernel == "precomputed")
        kernel = make_kernel(kernel)
    kernel.check_parameters()
    n = int(n_samples)
    fraction = float(n_components) if _is_fraction(n_components) else None
    k = requested_components(n_components, n) if k is None else min(n, int(k))
    limit = parse_memory(memory_limit)
    budget = default_memory_limit() if limit is None else limit
    auto = eigen_solver == "auto"
    common = dict(kernel=kernel, n=n, k=k, fraction=fraction, budget=budget,
                  distributed=distributed, auto=auto, n_features=n_features,
                  precomputed=precomputed, center=center, n_jobs=n_jobs,
                  partial_storage=partial_storage)
    why = _primal_pays(n, n_features, kernel, k, n_components, fraction, distributed,
                       precomputed, sparse, budget) if auto and primal else ""
    if why:
        # no kernel matrix: the features' covariance, in float64
        dt = np.dtype(np.float32 if precision == "float32" else np.float64)
        dense_fits, provisional, solver, costs = n * n * dt.itemsize <= budget, False, \
            "primal", {}
        precision_reason = ("the features' covariance is computed in float64"
                            if dt == np.float64 else "precision='float32' was given")
        reason = why  # on a device: this precision, and block Lanczos (on_device)
    else:
        dt, precision_reason, provisional = _precision(precision, dtype, n, float32_error,
                                                       precomputed)
        dense_fits = precomputed or n * n * dt.itemsize <= budget
        solver, reason, costs = _choose(n, k, n_features, kernel, eigen_solver, fraction,
                                        precomputed, dense_fits, dt.itemsize, budget)
    host = FitPlan(**common, solver=solver, dtype=dt, dense_fits=dense_fits,
                   solver_reason=reason, precision_reason=precision_reason,
                   provisional=provisional, costs=costs)
    return _feasible(host) if device is None else on_device(host, device, device_memory)


def _check_arguments(args: dict[str, Any]) -> None:
    """scikit-learn's check of :func:`plan_fit`'s arguments: those it shares with
    :class:`kpca.KernelPCA` against the same constraints (kpca._base's, which the
    estimator's ``_parameter_constraints`` hold: the checks of ``KernelPCA.plan``), the
    others against their own; a bool is not a number."""
    positive = [Interval(Integral, 1, None, closed="left")]
    constraints = {
        **{name: BaseKernelPCA._parameter_constraints[name] for name in ("precision", "n_jobs")},
        "kernel": kernel_parameters()["kernel"],
        **EXACT_FIT_CONSTRAINTS,
        "n_samples": positive,
        "n_features": [*positive, None],
        "k": [*positive, None],
        **{name: ["boolean"] for name in ("precomputed", "sparse", "distributed", "primal",
                                          "partial_storage")},
    }
    for name, value in args.items():
        if isinstance(value, (bool, np.bool_)) and "boolean" not in constraints.get(
                name, ["boolean"]):
            raise InvalidParameterError(
                f"The {name!r} parameter of plan_fit must not be a bool; got {value!r}.")
    validate_parameter_constraints(constraints, args, caller_name="plan_fit")


def on_device(plan: FitPlan, device: str, device_memory: int | None = None) -> FitPlan:
    """The host ``plan`` moved to a device (e.g. ``'cuda:0'``): the budget is device
    memory (``device_memory``; None: the plan's), of which ``K`` may take half; ARPACK
    and the randomized solver are host algorithms: block Lanczos serves them there, and
    under 'auto' also a dense solve whose ``K`` does not fit.

    Raises ValueError where the fit would (the dense solver given and ``K`` beyond
    its half of the budget).
    """
    n, itemsize = plan.n, plan.dtype.itemsize
    budget = plan.budget if device_memory is None else int(device_memory)
    dense_fits = n * n * itemsize <= budget // 2
    solver, reason = plan.solver, plan.solver_reason
    if solver not in ("dense", "krylov"):
        reason += f"; {solver} is a host algorithm: block Lanczos runs on the device"
        solver = "krylov"
    if solver == "dense" and not dense_fits and plan.auto:  # given: the plan refuses it
        reason += "; K does not fit device memory: block Lanczos"
        solver = "krylov"
    return _feasible(replace(plan, budget=budget, dense_fits=dense_fits, solver=solver,
                             solver_reason=reason, device=device))


def _feasible(plan: FitPlan) -> FitPlan:
    """The plan, or the ValueError a fit of it would raise (memory)."""
    if plan.infeasible is not None:
        raise ValueError(plan.infeasible)
    return plan


def _choose(n: int, k: int, n_features: int | None, kernel: Kernel, eigen_solver: str,
            fraction: float | None, precomputed: bool, dense_fits: bool, itemsize: int,
            budget: int) -> tuple[str, str, dict[str, float]]:
    """The solver of a dual fit, why, and the costs compared (``eigen_solver='auto'``:
    the fraction rule or :func:`kpca.solvers.explain_choice`)."""
    if eigen_solver != "auto":
        return eigen_solver, f"eigen_solver={eigen_solver!r} was given", {}
    if fraction is not None:
        return _fraction_solver(n, itemsize, dense_fits)
    # strings and precomputed kernels have no feature count
    rank = (kernel.rank_bound(n_features) if getattr(kernel, "requires_vectors", True)
            and n_features is not None and not precomputed else None)
    solver, reason, costs = solvers.explain_choice(n, k, dense_fits=dense_fits, rank=rank,
                                           itemsize=itemsize)
    if not dense_fits:
        reason = (f"the {n:,} x {n:,} kernel matrix ({format_bytes(n * n * itemsize)}) "
                  f"does not fit memory_limit ({format_bytes(budget)}): block Lanczos, "
                  "matrix-free")
    return solver, reason, costs


def _precision(precision: str, dtype: Any, n: int, float32_error: Any, precomputed: bool
               ) -> tuple[np.dtype, str, bool]:
    """:func:`kpca.operators.storage_dtype` with its reason; a precomputed matrix stays
    float64 under ``'auto'`` (the user's values are used as given)."""
    asked = {"called": False}

    def error() -> float:
        asked["called"] = True
        if precomputed:
            return math.inf
        if float32_error is None:
            return 0.0  # not known here: the fit checks (provisional)
        return float(float32_error() if callable(float32_error) else float32_error)

    dt = storage_dtype(precision, dtype, n, error)
    cfg = get_config()
    if precision != "auto":
        return dt, f"precision={precision!r} was given", False
    if np.dtype(dtype) == np.float32:
        return dt, "float32 data", False
    if n <= cfg["float64_max_rows"]:
        return dt, f"n_samples={n} <= float64_max_rows={cfg['float64_max_rows']}", False
    if precomputed:
        return dt, "a precomputed kernel matrix is used as given", False
    if float32_error is None:
        return dt, (f"n_samples={n} > float64_max_rows={cfg['float64_max_rows']}: float32 "
                    "(half the memory, passes twice as fast; products in float64) unless the "
                    "fit's check on a subsample finds an eigenvalue error above "
                    f"float32_max_error={cfg['float32_max_error']:g} (then float64)"), True
    big = dt == np.float64
    return dt, (f"n_samples={n} > float64_max_rows={cfg['float64_max_rows']} and the "
                "float32 eigenvalue error estimated on a subsample is "
                f"{'above' if big else 'within'} float32_max_error="
                f"{cfg['float32_max_error']:g}"), False


def _fraction_solver(n: int, itemsize: int, dense_fits: bool
                     ) -> tuple[str, str, dict[str, float]]:
    """'auto' with a variance fraction: the number of components is unknown: dense (the
    whole spectrum) where it costs no more than block Lanczos for 16, 32 and 64
    components (the growing k of ``KernelPCA._decompose_fraction``), block Lanczos
    beyond."""
    threads = solvers.machine_threads()
    iterative = sum(solvers.krylov_flops(n, kk, itemsize, threads=threads)
                    for kk in (16, 32, 64))
    dense = solvers.dense_flops(n, n, itemsize, threads=threads) + (
        4.0 * n**3 / solvers.dense_threads(n, threads))
    costs = {"dense": dense, "krylov": iterative}
    if not dense_fits:
        return ("krylov", "a variance fraction and K does not fit memory_limit: block "
                "Lanczos, k = 16, 32, 64, ... until the fraction is reached", costs)
    solver = "dense" if dense <= iterative else "krylov"
    return (solver, f"a variance fraction needs an unknown number of components: the whole "
            f"spectrum (dense, {dense:.3g} flops) against block Lanczos for k = 16, 32 and "
            f"64 ({iterative:.3g} flops)", costs)


def _primal_pays(n: int, d: int | None, kernel: Kernel, k: int, n_components: Any,
                 fraction: float | None, distributed: bool, precomputed: bool, sparse: bool,
                 budget: int) -> str:
    """Why the primal route (:func:`kpca.solvers.primal_eigsh`) applies and is modelled
    cheaper than building ``K`` and solving the dual problem, or '' when it is not."""
    if (fraction is not None or distributed or precomputed or sparse or d is None
            or not getattr(kernel, "requires_vectors", True)):
        return ""
    p = feature_dimension(_with_numeric_gamma(kernel), d)
    if p is None:
        return ""
    if n_components is None:
        k = min(k, p)  # zero eigenvalues are dropped: at most p components
    if p > get_config()["primal_max_features"] or k > p:
        return ""
    if 8 * (n * p + 2 * p * p) > budget:
        return ""
    degree = max(1, int(getattr(kernel, "degree", 1)))
    # the dual route builds K (n^2 / 2 kernel values) and then solves
    threads = solvers.machine_threads()
    dual = 0.5 * n * n * solvers.kernel_value_flops(kernel, d) / threads + min(
        solvers.solver_flops(n, k, threads=threads).values())
    primal = solvers.primal_flops(n, p, k, degree)
    if primal > dual:
        return ""
    return (f"an explicit feature map of dimension p={p} (<= primal_max_features): its "
            f"covariance costs {primal:.3g} flops against {dual:.3g} for K and the dual "
            "solve")


def _with_numeric_gamma(kernel: Kernel) -> Kernel:
    """The kernel with a number in place of an unresolved gamma (None or a heuristic,
    resolved on the data by the fit): the feature map's dimension does not depend on
    its value."""
    g = getattr(kernel, "gamma", 0.0)
    if g is not None and not isinstance(g, str):
        return kernel
    params = kernel.get_params(deep=False)
    params["gamma"] = 1.0
    return type(kernel)(**params)


#: the derived fields of a plan no fit can run
_UNDERIVED: dict[str, Any] = dict(
    storage="none", tiles=None, kernel_budget=None, cheap_pass=False, block=None,
    basis=None, start=None, landmarks=None, passes=None, evaluations=None, flops=None,
    time_class="none: the fit cannot run", peak_bytes=0)


def _derive(p: FitPlan) -> dict[str, Any]:
    """The fields a plan derives from its decisions: where K lives (and the memory
    errors a fit raises), the block and start, passes, cost and peak memory."""
    n, k, itemsize = p.n, p.k, p.dtype.itemsize
    out: dict[str, Any] = dict(tiles=None, kernel_budget=None, block=None, basis=None,
                               cheap_pass=False,
                               start=None, landmarks=None, passes=None, evaluations=None,
                               flops=None)
    threads = solvers.machine_threads()
    eval_flops = solvers.kernel_value_flops(p.kernel, p.n_features)
    evaluation = 0.0 if p.precomputed else 0.5 * n * n * eval_flops / threads
    K = n * n * itemsize
    vectors = p.kernel is not None and getattr(p.kernel, "requires_vectors", True) and (
        not p.precomputed)
    if p.solver == "primal":
        d = p.n_features or 1
        dim = feature_dimension(_with_numeric_gamma(p.kernel), d) or d
        degree = max(1, int(getattr(p.kernel, "degree", 1)))
        return dict(out, storage="features", passes=None, evaluations=0, infeasible=None,
                    flops=solvers.primal_flops(n, dim, k, degree),
                    time_class=f"O(n p^2): the covariance of p={dim} features",
                    # the features, their centred copy and products, the covariance
                    peak_bytes=8 * (3 * n * dim + 2 * dim * dim) + _result_bytes(n, k))

    def krylov_start(stored: bool, probe: bool = True) -> None:
        """Block, basis and start as ``KernelPCA._kernel_operator`` builds them: the
        Nystrom (or random) start rides on the construction pass when it helps (an
        operator with a construction pass: ``probe``), except in a reweighting fit
        (``partial_storage``), whose solves are of operators of its own: their solver
        draws its start."""
        out["cheap_pass"] = stored
        b = solvers.krylov_block_size(k, cheap_pass=stored,
                                      device_rows=None if p.device is None else n)
        if (probe and not p.partial_storage and p.solver == "krylov" and p.fraction is None
                and solvers.krylov_basis_size(k, b) < n // 2):
            out["start"] = "nystrom" if vectors else "random"
            if vectors:
                rank = p.kernel.rank_bound(p.n_features) if p.n_features else None
                out["landmarks"] = solvers.start_landmarks(n, stored, rank)
        else:
            b = solvers.krylov_block_size(k)  # the solver's own default block
        if p.solver == "krylov" and p.fraction is None:  # a fraction: k grows by rounds
            out["block"], out["basis"] = b, solvers.krylov_basis_size(k, b)

    if p.device is not None:
        stored = DeviceKernelOperator.stores(n, p.dtype, p.budget)
        if p.solver == "dense" and not stored:  # the device's half of its budget
            raise ValueError(_dense_refused(n, K, p.budget // 2, device=True))
        storage = "stored" if stored else "matrix-free"
        krylov_start(stored)
        solver_bytes = solvers.workspace_bytes(p.solver, n, k, cheap_pass=stored)
        peak = (K if stored else 0) + solver_bytes + _result_bytes(n, k)
    elif p.precomputed or p.solver == "dense" or (p.solver == "arpack" and p.dense_fits):
        # ARPACK's single-vector products are cheapest on one contiguous matrix
        if K > p.budget and not p.precomputed:
            raise ValueError(_dense_refused(n, K, p.budget, device=False))
        storage, stored = "dense", True
        krylov_start(True, probe=False)
        kk = n if p.fraction is not None else k
        if p.precomputed:
            K = n * n * 8
        peak = K + (arpack_bytes(n, k) if p.solver == "arpack" else
                    solvers.workspace_bytes(p.solver, n, k) if p.solver != "dense"
                    else lapack_bytes(n, kk, itemsize)) + _result_bytes(n, kk)
        if p.precomputed:
            # the user's matrix copied, beside the temporaries of its symmetry check
            # (three n x n arrays of float64 and two of booleans) and of K += K.T
            peak = max(peak, 4 * n * n * 8 + 2 * n * n)
    elif p.distributed:
        storage, stored = "distributed", False
        krylov_start(False, probe=False)
        peak = solvers.workspace_bytes(p.solver, n, k) + _result_bytes(n, k)
    else:
        # the budget covers the solver's float64 workspace too, not only K; a pass
        # over a fully stored K is cheap, so block Lanczos then takes narrow blocks
        stored = K <= p.budget - solvers.workspace_bytes(p.solver, n, k, cheap_pass=True)
        solver_bytes = solvers.workspace_bytes(p.solver, n, k, cheap_pass=stored)
        kernel_budget = p.budget - solver_bytes
        if kernel_budget < solver_bytes // 4:
            raise ValueError(
                f"memory_limit={p.budget} bytes is too small for n_samples={n}: the "
                f"{p.solver} solver alone needs about {solver_bytes} bytes; give at least "
                f"{solver_bytes + solver_bytes // 4} bytes."
            )
        krylov_start(stored)
        tiles = tile_layout(n, itemsize, kernel_budget, p.n_jobs,
                            n_temporaries=getattr(p.kernel, "n_temporaries", 0),
                            partial=p.partial_storage)
        out.update(tiles=tiles, kernel_budget=kernel_budget)
        stored = tiles.n_keep == tiles.n_tiles
        storage = ("stored" if stored else "matrix-free" if tiles.n_keep == 0
                   else "partial")
        peak = tiles.nbytes + solver_bytes + _result_bytes(n, k)
        if out["start"] is not None:
            # the start block rides on the construction pass with the row sums
            peak += 8 * n * (out["block"] + 1)
    kept = 1.0 if stored else (out["tiles"].fraction_stored if out["tiles"] else 0.0)
    out.update(_passes_and_flops(p, out, kept, eval_flops, evaluation, threads))
    out.update(storage=storage, peak_bytes=int(peak), infeasible=None)
    return out


def _passes_and_flops(p: FitPlan, out: dict, kept: float, eval_flops: float,
                      evaluation: float, threads: int) -> dict[str, Any]:
    """Expected passes, evaluations of each kernel value, modelled flops, time class."""
    n, k, itemsize = p.n, p.k, p.dtype.itemsize
    if p.solver == "dense":
        kk = n if p.fraction is not None else k
        return dict(passes=1, evaluations=1,
                    flops=evaluation + solvers.dense_flops(n, kk, itemsize, threads=threads),
                    time_class="O(n^3): a dense eigendecomposition")
    if p.fraction is not None:
        return dict(passes=None, evaluations=None, flops=None,
                    time_class="O(passes n^2 b) per k = 16, 32, 64, ... until the "
                    "variance fraction is reached")
    if p.solver == "arpack":
        products = solvers.arpack_products(k)
        evals = 1 if kept >= 1.0 else 1 + products
        return dict(passes=1 + products, evaluations=evals,
                    flops=evaluation * evals + solvers.arpack_flops(n, k, itemsize),
                    time_class=f"O(products n^2): about {products} matrix-vector products")
    if p.solver == "krylov":
        b, m = out["block"], out["basis"]
        solver_passes = solvers.krylov_passes(k, b)
        run = solvers.krylov_run_flops(n, k, b, m, solver_passes, itemsize, eval_flops,
                                       kept, threads=threads)
        evals = 1 if kept >= 1.0 else 1 + solver_passes
        return dict(passes=1 + solver_passes, evaluations=evals,
                    flops=evaluation + run,
                    time_class=f"O(passes n^2 b): {solver_passes} block Lanczos passes of "
                    f"{b} columns")
    return dict(passes=None, evaluations=None, flops=None,
                time_class="O(passes n^2 (k + oversampling)): passes until the residuals "
                "meet tol")


def lapack_bytes(n: int, k: int, itemsize: int) -> int:
    """Bytes of LAPACK's top-``k`` solve besides the matrix (decomposed in place): the
    vectors and the work arrays (all pairs, ``?syevd``: ``1 + 6 n + 2 n^2`` values; a
    subset, ``?syevr``: ``26 n`` values and ``10 n`` integers), and the saved
    diagonal (:func:`kpca.solvers.top_eigh`)."""
    if k >= n:
        return itemsize * (n * n + 1 + 6 * n + 2 * n * n)
    return itemsize * (n * k + 26 * n) + 4 * 10 * n + 8 * n


def _result_bytes(n: int, k: int) -> int:
    """The solve's result: its float64 vectors, :func:`kpca.solvers.finalize`'s
    reordered copy and the output dtype's copy."""
    return 3 * 8 * n * k


def arpack_bytes(n: int, k: int) -> int:
    """ARPACK's basis of ``ncv = max(2k + 1, 20)`` vectors and its work vectors, with
    the wrapper's copies (the budget's rule, :func:`kpca.solvers.workspace_bytes`,
    counts ``2k + 1``)."""
    return 2 * 8 * n * (max(2 * k + 1, 20) + 8)


def _dense_refused(n: int, size: int, allowed: int, device: bool) -> str:
    """The error of a dense solve whose ``n x n`` matrix (``size`` bytes) exceeds the
    ``allowed`` bytes, on the host or in device memory."""
    where, share = (" in device memory", " for it") if device else ("", "")
    return (f"eigen_solver='dense' needs the whole {n}x{n} kernel matrix{where} "
            f"({format_bytes(size)}) but memory_limit allows {format_bytes(allowed)}"
            f"{share}; use eigen_solver='krylov' (matrix-free) or raise memory_limit.")
