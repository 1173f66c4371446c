"""The exact fit as a pipeline of small steps: plan -> operator -> centring -> solver
-> result -> commit.

Every step is a function of values (the data, the kernel, :class:`FitSettings`, the
plan), never of the estimator, but for the validation of its input:

0. the inputs: :func:`fit_rows` validates the training rows (:func:`validate_rows`:
   scikit-learn's ``validate_data``, which records ``n_features_in_`` on the
   estimator, so these two take it) and finds their device; :func:`fit_kernel` resolves
   the kernel on them; :func:`data_plan` is the plan of data not read
   (``KernelPCA.plan``);
1. :func:`make_plan`: the :class:`kpca.FitPlan` (:func:`kpca._plan.plan_fit`: solver,
   storage, precision, block and start);
2. :func:`build_operator`: the uncentred kernel operator the plan lays out (dense,
   tiled, distributed or on a device), with the start block riding on its
   construction pass;
3. a :class:`Centring` strategy: the mean (:class:`MeanCentring`), or a robust centre
   and row weights (``kpca.robust``: the spatial median, Campbell's weights), gives the
   operator to decompose and the :class:`kpca.operators.Centering` that maps new rows;
4. :func:`solve`: the top eigenpairs (and the loop of a variance fraction);
5. :func:`exact_result`: every fitted attribute, computed into a :class:`FitResult`
   (nothing written yet);
6. :func:`commit`: the one step that writes them on the estimator, all at once, after
   everything else has succeeded (a failed refit leaves the previous model whole); the
   approximate (``kpca.approx``) and incremental estimators commit their own
   :class:`FitResult` through it too.

:func:`decompose` chains 1-4; :func:`parallel_analysis` runs it on permuted copies
(``n_components='auto'``). The estimators (``KernelPCA`` and the robust ones) are
compositions of these steps. Notation: docs/math.md, "The eigenproblem" and "Centring
in feature space".
"""

from __future__ import annotations

import logging
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields, replace
from numbers import Integral, Real
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from ._array_api import device_memory_limit, device_namespace, from_host, refuse_device, to_host
from ._base import outlier_statistics
from ._config import get_config
from ._memory import parse_memory
from ._parallel import blas_threads, call_threads, worker_pool
from ._parallel_analysis import (
    ParallelAnalysis,
    check_parallel_analysis,
    leading_above,
    null_threshold,
    permutation_rng,
    permute_columns,
)
from ._plan import FitPlan, on_device, plan_fit, requested_components
from .diagnostics import norm_floor, od_noise
from .kernels import (
    Kernel,
    Precomputed,
    as_strings,
    check_device_kernel,
    explicit_features,
    resolve_gamma,
)
from .operators import (
    Centering,
    DenseOperator,
    DeviceKernelOperator,
    KernelOperator,
    TiledKernelOperator,
    center,
    float32_eigen_error,
    gram_matrix,
    n_threads,
)
from .preimage import fit_ridge_preimage, score_space_kernel
from .solvers import (
    EigenResult,
    device_nystrom_start,
    eigsh_top,
    finalize,
    krylov_start,
    nystrom_start,
    primal_eigsh,
    start_landmarks,
)
from .subspace import FittedSubspace

logger = logging.getLogger("kpca")

__all__ = [
    "Centring", "Decomposition", "FitResult", "FitSettings", "MeanCentring", "build_operator",
    "commit", "data_plan", "decompose", "device_plan", "exact_result", "fit_kernel",
    "fit_rows", "is_precomputed", "make_plan", "parallel_analysis", "resolved_gamma",
    "shape_plan", "solve", "solve_centred", "validate_rows",
]


# ----------------------------------------------------------------------------- settings
def is_precomputed(kernel: Any) -> bool:
    """Whether the ``kernel`` parameter asks for a precomputed kernel matrix."""
    return (isinstance(kernel, str) and kernel == "precomputed") or isinstance(kernel,
                                                                               Precomputed)


@dataclass(frozen=True)
class FitSettings:
    """The estimator's parameters that the pipeline reads (as given, validated)."""

    n_components: Any = None
    eigen_solver: str = "auto"
    tol: float = 0.0
    max_iter: int | None = None
    iterated_power: Any = "auto"
    remove_zero_eig: bool = False
    random_state: Any = None
    center: bool = True
    n_jobs: int | None = None
    memory_limit: Any = None
    precision: str = "auto"
    alpha: float = 1.0
    fit_inverse_transform: bool = False
    contamination: Any = "auto"
    #: the data are the n x n kernel matrix (``kernel='precomputed'``)
    precomputed: bool = False

    @classmethod
    def of(cls, est: Any) -> FitSettings:
        """The settings of estimator ``est`` (a parameter it lacks keeps its default)."""
        values = {f.name: getattr(est, f.name, f.default) for f in fields(cls)
                  if f.name != "precomputed"}
        return cls(**values, precomputed=is_precomputed(getattr(est, "kernel", None)))


# ----------------------------------------------------------------------------- centring
class Centring(ABC):
    """How a fit centres (and weights) the kernel operator before the solver.

    :meth:`centre` returns the operator to decompose, the :class:`Centering` that maps
    new rows the same way, and the fitted attributes it found (set by :func:`commit`
    with the others, once the whole fit has succeeded). A strategy whose fields are
    named as the estimator's parameters is made from the estimator by :meth:`of`.
    """

    #: the operator decomposed is ``S K~ S`` for scales found by solves of its own
    #: (robust KPCA): no start block rides on the construction pass (it would be
    #: wasted columns), the tiles that fit are kept for the many passes (the
    #: plan's ``partial_storage``), and there is no primal route
    reweights: bool = False
    #: ``transform`` divides the scores by ``||phi(t) - theta||`` (spherical KPCA)
    normalized: bool = False

    @classmethod
    def of(cls, est: Any) -> Centring:
        """The strategy with the fields of ``est``'s parameters of the same names."""
        names = [f.name for f in fields(cls)] if hasattr(cls, "__dataclass_fields__") else []
        return cls(**{name: getattr(est, name) for name in names})

    @abstractmethod
    def centre(self, op: KernelOperator, plan: FitPlan, settings: FitSettings, rng: Any
               ) -> tuple[KernelOperator, Centering, dict]:
        """The operator to decompose, its centring, and the fitted attributes found."""

    def variance_divisor(self, n: int, fitted: dict) -> float:
        """``explained_variance_ = eigenvalues_ / this`` (``fitted``: :meth:`centre`'s)."""
        return n

    def score_variance(self, raw: np.ndarray, explained_variance: np.ndarray) -> np.ndarray:
        """Variance of the training scores along each direction (score-distance scale)."""
        return np.asarray(explained_variance, dtype=np.float64)

    def row_scale(self, model: Any) -> np.ndarray | None:
        """Scales ``s`` of the decomposed ``S K~ S``, from a fitted model (None: none)."""
        return None


class MeanCentring(Centring):
    """Centre in feature space on the mean (docs/math.md, "Centring in feature space"),
    or not at all (``center=False``)."""

    def centre(self, op, plan, settings, rng):
        if settings.center:
            return (*center(op, inplace=True), {})
        return op, Centering.none(op.n), {}


# ----------------------------------------------------------------------------- kernel
__all__ += ["FixedKernel", "KernelStrategy", "alternate"]


class KernelStrategy(ABC):
    """Which kernel a fit decomposes, and whether the fit learns it from its own
    eigenvectors (ANOVA KPCA's weights, ``kpca.robust``).

    :func:`alternate` runs it: :meth:`start` once, then the kernel of the current state
    (:meth:`kernel`) -> :func:`decompose` -> :meth:`update` from the fitted eigenvectors,
    until :meth:`update` says the fit is done; the last decomposition is the fit's.
    :meth:`fitted` gives the attributes learned on the way (set by :func:`commit` with
    the others, once the whole fit has succeeded).
    """

    # a hook, not abstract: a fixed kernel has nothing to resolve
    def start(self, X: Any, settings: FitSettings, rng: Any) -> None:  # noqa: B027
        """Resolve, once, what depends on the data (the same for every decomposition)."""

    @abstractmethod
    def kernel(self, X: Any, rng: Any) -> Kernel:
        """The kernel of the current state (resolved on ``X``)."""

    @abstractmethod
    def update(self, X: Any, kernel: Kernel, dec: Decomposition, settings: FitSettings
               ) -> bool:
        """Learn from ``dec``, the decomposition of ``kernel`` on ``X`` (its plan holds
        the device rows, ``dec.plan.device_X``, of a device fit); True when the fit is
        done (``dec`` is its decomposition)."""

    def fitted(self) -> dict:
        """The fitted attributes the strategy learned (name -> value)."""
        return {}


@dataclass(frozen=True)
class FixedKernel(KernelStrategy):
    """One kernel, decomposed once (what :class:`kpca.KernelPCA` does)."""

    fixed: Kernel

    def kernel(self, X, rng):
        return self.fixed

    def update(self, X, kernel, dec, settings):
        return True


def alternate(X: Any, strategy: KernelStrategy, settings: FitSettings, centring: Centring,
              rng: Any, *, distributed: bool = False, device: Any = None,
              primal: bool = True) -> tuple[Kernel, Decomposition]:
    """Run ``strategy``: kernel -> :func:`decompose` -> update, until it is done.

    Returns the last kernel and its decomposition (the fit's); the arguments after
    ``strategy`` are :func:`decompose`'s, the same for every decomposition.
    """
    strategy.start(X, settings, rng)
    while True:
        kernel = strategy.kernel(X, rng)
        dec = decompose(X, kernel, settings, centring, rng, distributed=distributed,
                        device=device, primal=primal)
        if strategy.update(X, kernel, dec, settings):
            return kernel, dec


# ----------------------------------------------------------------------------- plan
def make_plan(X: Any, kernel: Kernel, settings: FitSettings, *, reweights: bool = False,
              distributed: bool = False, k: int | None = None, device: Any = None,
              primal: bool = True) -> FitPlan:
    """The fit's plan (:func:`kpca._plan.plan_fit`) for the rows ``X``.

    Under ``eigen_solver='auto'`` the solver is the one of least modelled cost
    (docs/math.md, "Choosing a solver"): a function of the data's shape, the
    parameters, the kernel and the configuration only, never of time or load. The only
    look at the data is the float32 accuracy check of ``precision='auto'``
    (:func:`kpca.operators.float32_eigen_error`, on a subsample, when needed). ``k``:
    the number of eigenpairs instead of ``n_components``' (parallel analysis, ROBPCA).
    ``device``: the rows as an Array API array (``X`` their host copy): the plan is for
    its device and memory. ``reweights``: the fit decomposes an operator it reweights
    by solves of its own (:attr:`Centring.reweights`: partial storage, no primal
    route). ``primal=False``: no primal route either.
    """
    n = X.shape[0]
    vectors = getattr(X, "ndim", 2) == 2 and getattr(kernel, "requires_vectors", True)

    def float32_error() -> float:
        return float32_eigen_error(kernel, X, center=settings.center, random_state=0)

    dev, dev_memory = None, None
    if device is not None:
        dev = str(getattr(device, "device", "device"))
        if parse_memory(settings.memory_limit) is None:
            dev_memory = device_memory_limit(device)
    return plan_fit(
        n, X.shape[1] if vectors and not settings.precomputed else None, kernel,
        dtype=X.dtype, n_components=settings.n_components,
        k=requested_components(settings.n_components, n) if k is None else k,
        eigen_solver=settings.eigen_solver, precision=settings.precision,
        memory_limit=settings.memory_limit, center=settings.center, n_jobs=settings.n_jobs,
        precomputed=settings.precomputed, sparse=not isinstance(X, np.ndarray),
        distributed=distributed, primal=primal and not reweights,
        partial_storage=reweights, float32_error=float32_error, device=dev,
        device_memory=dev_memory)


def shape_plan(shape: tuple[int, ...], dtype: Any, kernel: Kernel, settings: FitSettings, *,
               reweights: bool = False, auto: bool = False, sparse: bool = False,
               distributed: bool = False, device: str | None = None,
               device_memory: int | None = None) -> FitPlan:
    """The plan of a fit of data of this shape and dtype (``KernelPCA.plan``): no data
    read, no kernel value evaluated. ``auto``: ``n_components='auto'``'s first round
    of parallel analysis. The other arguments are :func:`make_plan`'s and
    :func:`kpca._plan.plan_fit`'s."""
    n = shape[0]
    vectors = (len(shape) == 2 and getattr(kernel, "requires_vectors", True)
               and not settings.precomputed)
    k = requested_components(settings.n_components, n)
    if auto:
        rank = kernel.rank_bound(shape[1]) if vectors else None
        k_max = max(1, min(n - 1 if settings.center else n, rank if rank else n))
        k = min(k_max, get_config()["parallel_analysis_start_components"])
    return plan_fit(
        n, shape[1] if vectors else None, kernel, dtype=dtype,
        n_components=settings.n_components, k=k, eigen_solver=settings.eigen_solver,
        precision=settings.precision, memory_limit=settings.memory_limit,
        center=settings.center, n_jobs=settings.n_jobs, precomputed=settings.precomputed,
        sparse=sparse, distributed=distributed, primal=not reweights,
        partial_storage=reweights, device=device, device_memory=device_memory)


def device_plan(plan: FitPlan, device: Any, settings: FitSettings) -> FitPlan:
    """``plan`` for the rows ``device`` (an Array API array): the operator and the
    solver run on its device (:func:`kpca._plan.on_device`)."""
    memory = (device_memory_limit(device) if parse_memory(settings.memory_limit) is None
              else None)
    return replace(on_device(plan, str(getattr(device, "device", "device")), memory),
                   device_X=device)


# ----------------------------------------------------------------------------- operator
def build_operator(X: Any, plan: FitPlan, settings: FitSettings, rng: Any, *,
                   start: bool = True) -> KernelOperator:
    """The uncentred kernel matrix of the training data as the plan lays it out.

    Dense (stored, owned by the fit) for precomputed kernels and the dense solver; on a
    device, or tiled (stored or matrix-free under the memory budget) otherwise. The
    plan has already refused a budget they cannot run in. ``start``: compute the
    plan's start block on the construction pass (the row sums for centring), so the
    solver does not spend a pass on it.
    """
    probe = None
    if plan.start is not None and start:
        probe = start_block(X, plan.kernel, plan.block, rng, settings,
                            cheap_pass=plan.cheap_pass, device_X=plan.device_X)
    if plan.device_X is not None:
        return DeviceKernelOperator(plan.kernel, plan.device_X,
                                    device_namespace(plan.device_X), dtype=plan.dtype,
                                    memory_limit=plan.budget, probe=probe)
    if plan.in_process:
        return dense_operator(X, plan, settings)
    if plan.distributed:
        from .distributed import DaskKernelOperator

        return DaskKernelOperator(plan.kernel, X, dtype=plan.dtype)
    return TiledKernelOperator(
        plan.kernel, X, dtype=plan.dtype, memory_limit=plan.kernel_budget,
        n_jobs=plan.n_jobs, probe=probe, partial=plan.partial_storage,
    )


def start_block(X: Any, kernel: Kernel, b: int, rng: Any, settings: FitSettings, *,
                cheap_pass: bool, device_X: Any = None) -> Any:
    """Start block of the block Lanczos solver, shape (n, b), orthonormal.

    For vector kernels, the top Nyström directions (:func:`kpca.solvers.nystrom_start`),
    on as many landmarks as :func:`kpca.solvers.start_landmarks` gives for passes that
    read a stored ``K`` (``cheap_pass``) or recompute it: the solver then needs a pass
    or two over ``K~`` fewer than from a random block. With ``device_X`` (the rows on
    their device, ``X`` their host copy), the same block computed there
    (:func:`kpca.solvers.device_nystrom_start`: the same landmarks).
    """
    if getattr(kernel, "requires_vectors", True) and not settings.precomputed:
        m = start_landmarks(X.shape[0], cheap_pass, kernel.rank_bound(X.shape[1]))
        if device_X is not None:
            return device_nystrom_start(kernel, device_X, device_namespace(device_X), b,
                                        center=settings.center, n_landmarks=m,
                                        random_state=rng)
        return nystrom_start(kernel, X, b, center=settings.center, random_state=rng,
                             n_landmarks=m, n_jobs=settings.n_jobs)
    Q = krylov_start(X.shape[0], b, rng)
    if device_X is not None:
        return from_host(Q, device_namespace(device_X), device_X.device)
    return Q


def dense_operator(X: Any, plan: FitPlan, settings: FitSettings) -> DenseOperator:
    """``K`` as one stored matrix owned by the fit (the user's, for 'precomputed')."""
    if settings.precomputed:
        return DenseOperator(precomputed_gram(X), owned=True)
    K, _ = gram_matrix(plan.kernel, X, dtype=plan.dtype, n_jobs=settings.n_jobs)
    return DenseOperator(K, owned=True)


def check_precomputed_shape(shape: tuple) -> None:
    """A precomputed kernel's training input must be the square (n, n) matrix: the
    fit's check, which its plan (:func:`data_plan`) makes too."""
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(
            "kernel='precomputed' needs the square (n_samples, n_samples) kernel "
            f"matrix; got shape {tuple(shape)}."
        )


def precomputed_gram(X: Any) -> np.ndarray:
    """The user's precomputed Gram matrix, copied and symmetrised (owned by the fit)."""
    check_precomputed_shape(X.shape)
    K = X.toarray() if sp.issparse(X) else np.array(X, copy=True)
    if not np.allclose(K, K.T, rtol=1e-7, atol=1e-12 * max(1.0, np.abs(K).max())):
        warnings.warn(
            "the precomputed kernel matrix is not symmetric; its symmetric part "
            "(K + K.T) / 2 is used.",
            UserWarning,
            stacklevel=7,
        )
    K += K.T
    K *= 0.5
    return K


# ----------------------------------------------------------------------------- solver
def _drops(settings: FitSettings) -> dict:
    """:func:`kpca.solvers.finalize`'s rules for these settings."""
    return dict(remove_zero=bool(settings.remove_zero_eig or settings.n_components is None),
                drop_negative=settings.n_components is None)


def solve(op: KernelOperator, plan: FitPlan, settings: FitSettings, trace: float,
          noise: float, rng: Any) -> EigenResult:
    """Top eigenpairs of the centred operator, post-processed
    (:func:`kpca.solvers.finalize`); the fewest that reach a variance fraction."""
    options = dict(
        tol=settings.tol,
        max_iter=settings.max_iter,
        iterated_power=settings.iterated_power,
        random_state=rng,
        fallback=plan.auto and plan.dense_fits,
    )
    start = op.initial_block() if hasattr(op, "initial_block") else None
    if start is not None:
        options["start"] = start
    if plan.fraction is not None:
        return solve_fraction(op, plan.solver, plan.fraction, trace, options, noise)
    result = eigsh_top(op, plan.k, solver=plan.solver, **options)
    if not result.converged:
        warnings.warn(
            f"eigen_solver={result.solver!r} stopped after {result.n_iter} iterations "
            f"with residuals up to {np.max(result.residuals):.2e} (relative to the "
            "largest eigenvalue) above its target; raise max_iter or tol.",
            ConvergenceWarning,
            stacklevel=6,
        )
    return finalize(result, noise_floor=noise, **_drops(settings))


def solve_fraction(op: KernelOperator, solver: str, fraction: float, trace: float,
                   options: dict, noise: float) -> EigenResult:
    """Fewest components whose eigenvalues sum to ``fraction * trace(K~)``."""
    n = op.n
    k = n if solver == "dense" else min(n, 16)
    # the loop may solve again: no solve may decompose the stored matrix in place
    view = DenseOperator(op.A, owned=False) if isinstance(op, DenseOperator) else op
    while True:
        result = finalize(
            eigsh_top(view, k, solver=solver, **options),
            remove_zero=True,
            drop_negative=True,
            noise_floor=noise,
        )
        cum = np.cumsum(result.values, dtype=np.float64) / trace if trace > 0 else None
        if cum is not None and cum.size and cum[-1] >= fraction - 1e-12:
            m = int(np.searchsorted(cum, fraction - 1e-12) + 1)
            break
        if k >= n:
            m = result.values.size
            break
        k = min(n, 2 * k)
    return replace(
        result,
        values=result.values[:m],
        vectors=result.vectors[:, :m],
        residuals=None if result.residuals is None else result.residuals[:m],
    )


def solve_centred(op: KernelOperator, c: Centering, plan: FitPlan, settings: FitSettings,
                  rng: Any) -> EigenResult:
    """Top eigenpairs of ``S K~ S`` for centring ``c``, leaving ``op`` untouched (the
    solves of a robust centring step).

    Iterative solvers see a centred wrapper (no copy; on a device operator, its
    ``centered_view``); the dense solver works on one temporary copy that LAPACK may
    overwrite (on a device, the view's centred copy of the stored ``K``).
    """
    wrapped = center(op, centering=c)[0]
    if plan.solver == "dense" and not getattr(wrapped, "device", False):
        wrapped = DenseOperator(wrapped.to_dense(), owned=True)
    diag_w = np.asarray(wrapped.diag(), dtype=np.float64)
    noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag_w), initial=0.0))
    trace = float(diag_w.sum())
    return solve(wrapped, plan, settings, trace if trace > noise else 0.0, noise, rng)


# ----------------------------------------------------------------------------- decompose
@dataclass(frozen=True)
class Decomposition:
    """What one eigendecomposition of a fit produced."""

    result: EigenResult
    trace: float
    centering: Centering
    plan: FitPlan
    #: fitted attributes the centring step found (robust KPCA: weights, distances),
    #: set on the estimator only once the whole fit has succeeded
    fitted: dict = field(default_factory=dict)


_OVERFLOW = ("the kernel matrix has non-finite values on its diagonal (overflow): check "
             "the kernel parameters (e.g. degree, gamma, coef0) or scale the data.")


def _in_dtype(result: EigenResult, X: Any) -> EigenResult:
    """The eigenpairs in the data's float dtype (float64 for other data)."""
    out = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    return replace(result, values=result.values.astype(out, copy=False),
                   vectors=result.vectors.astype(out, copy=False))


def decompose(X: Any, kernel: Kernel, settings: FitSettings, centring: Centring, rng: Any,
              *, distributed: bool = False, device: Any = None, plan: FitPlan | None = None,
              primal: bool = True) -> Decomposition:
    """kernel -> plan -> operator -> centring -> solver.

    ``device``: the training rows as an Array API array (``X`` their host copy); the
    operator and the solver then run on its device. ``plan``: one made for other rows
    of the same shape and kernel (the null copies of ``n_components='auto'``),
    instead of planning again.
    """
    if plan is None:
        plan = make_plan(X, kernel, settings, reweights=centring.reweights,
                         distributed=distributed, device=device, primal=primal)
    if device is not None:
        return decompose_planned(X, replace(plan, device_X=device), settings, centring, rng)
    # a tiled operator's passes run on worker threads (one BLAS thread each); the
    # small products and factorizations between them stay on this thread's one
    # BLAS thread too: OpenBLAS threads woken for them spin for ~0.1 s after each
    # call (its thread timeout) against the next pass's workers (measured at
    # n = 20,000, k = 10 on 2 cores: the fit 0.74 -> 0.66 s, the Nystrom start
    # 80 -> 50 ms). The iterative solvers' large block algebra and a dense fallback ask
    # for the operator's threads explicitly (KernelOperator.threads); the Nystrom
    # start's large products run on its worker threads. Those threads are kept for the
    # whole fit (kpca._parallel.worker_pool), not started again for each of its steps.
    tiled = not (plan.distributed or plan.in_process)
    # in this process, K's largest BLAS calls (LAPACK's tridiagonal reduction,
    # ARPACK's products) synchronise BLAS's threads once per 2 n^2 flops: threads
    # by that size (kpca._parallel.call_threads), not every core whatever the size;
    # the same rule keeps ARPACK's thousands of matrix-vector products on a small
    # matrix (2 n^2 flops each, microseconds) on one thread: one up to 5,792 rows
    # (measured: n = 500-1,500, 1.4-2.4x faster fits on one thread than two)
    local = None if plan.distributed else call_threads(2.0 * plan.n * plan.n)
    with blas_threads(1 if tiled else local), worker_pool(
            n_threads(settings.n_jobs) if tiled else 1):
        return decompose_planned(X, plan, settings, centring, rng)


def decompose_planned(X: Any, plan: FitPlan, settings: FitSettings, centring: Centring,
                      rng: Any) -> Decomposition:
    """The steps after the plan: operator, centring, solver."""
    if plan.solver == "primal":
        return decompose_primal(X, plan, settings, rng)
    op = build_operator(X, plan, settings, rng, start=not centring.reweights)
    diag = op.diag()
    if not np.all(np.isfinite(diag)):
        raise ValueError(_OVERFLOW)
    # eigenvalues below n * eps * max K_ii are indistinguishable from the
    # round-off of K itself (and of the centring that subtracts its means)
    noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag), initial=0.0))
    op, centering, fitted = centring.centre(op, plan, settings, rng)
    trace = op.trace()
    if not (np.isfinite(trace) and np.all(np.isfinite(centering.row_means))):
        raise ValueError(
            "the kernel matrix overflows: its row sums or trace are not finite (the "
            f"largest diagonal entry is {float(np.max(diag)):.3g}). Scale the data or "
            "change the kernel parameters (degree, gamma, coef0)."
        )
    if trace <= noise:
        trace = 0.0
    final = solve(op, plan, settings, trace, noise, rng)
    return Decomposition(_in_dtype(final, X), trace, centering, plan, fitted)


def decompose_primal(X: Any, plan: FitPlan, settings: FitSettings, rng: Any
                     ) -> Decomposition:
    """The primal route: the covariance of the explicit features (no ``K``).

    The same eigenvalues, dual eigenvectors, trace and centring statistics as the dual
    route (:func:`kpca.solvers.primal_eigsh`), and the same post-processing.
    """
    F = explicit_features(plan.kernel, X)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below
        diag = np.einsum("ij,ij->i", F, F)
    # K_ii = |phi(x_i)|^2: the dual route's check of K's diagonal, with its message
    if not (np.all(np.isfinite(F)) and np.all(np.isfinite(diag))):
        raise ValueError(_OVERFLOW)
    noise = plan.n * np.finfo(plan.dtype).eps * float(np.max(np.abs(diag), initial=0.0))
    # n_components=None keeps the non-zero eigenvalues: at most p of them
    k = min(plan.k, F.shape[1]) if settings.n_components is None else plan.k
    sol = primal_eigsh(F, k, center=settings.center, random_state=rng)
    del F
    centering = (Centering(sol.row_means, sol.grand_mean) if settings.center
                 else Centering.none(plan.n))
    trace = sol.trace if sol.trace > noise else 0.0
    final = finalize(sol.result, noise_floor=noise, **_drops(settings))
    return Decomposition(_in_dtype(final, X), trace, centering, plan)


def _padded(values: np.ndarray, k: int) -> np.ndarray:
    """``values`` as float64 of length ``k`` (zeros after those a solve returned)."""
    out = np.zeros(k)
    v = np.asarray(values, dtype=np.float64)[:k]
    out[: v.size] = v
    return out


def parallel_analysis(X: Any, kernel: Kernel, settings: FitSettings, rng: Any,
                      distributed: bool, gamma: float) -> Decomposition:
    """``n_components='auto'``: parallel analysis (docs/math.md, "Parallel analysis").

    The top ``k`` eigenvalues of X and of each column-permuted copy, under one plan
    (solver, storage precision, budget) and the kernel resolved on X; ``k`` doubles
    while all ``k`` are above the null threshold. Returns the data's decomposition cut
    to the components kept, the comparison (:class:`ParallelAnalysis`) among its
    fitted attributes (``parallel_analysis_``).
    """
    if settings.precomputed or not getattr(kernel, "requires_vectors", True):
        raise ValueError(
            "n_components='auto' permutes the columns of X (parallel analysis): it "
            "needs feature vectors, not a precomputed kernel matrix or strings; give "
            "an integer n_components.")
    cfg = get_config()
    B, q = check_parallel_analysis(cfg["parallel_analysis_permutations"],
                                   cfg["parallel_analysis_quantile"])
    rs = settings.random_state
    # the permutations' own streams: the same copies whatever the solver draws
    seed = (int(rs) if isinstance(rs, Integral) and not isinstance(rs, bool)
            else int(rng.randint(np.iinfo(np.int32).max)))
    n = X.shape[0]
    rank = kernel.rank_bound(X.shape[1])
    # centring removes one dimension: at most n - 1 (and rank) non-zero eigenvalues
    k_max = max(1, min(n - 1 if settings.center else n, rank if rank else n))
    k = min(k_max, cfg["parallel_analysis_start_components"])
    mean = MeanCentring()
    while True:
        plan = make_plan(X, kernel, settings, distributed=distributed, k=k)
        dec = decompose(X, kernel, settings, mean, rng, distributed=distributed, plan=plan)
        values = _padded(dec.result.values, k)
        null = np.zeros((B, k))
        for b in range(B):
            Xb = permute_columns(X, permutation_rng(seed, b))
            null[b] = _padded(decompose(Xb, kernel, settings, mean, rng,
                                        distributed=distributed, plan=plan).result.values, k)
            logger.debug("n_components='auto': null copy %d of %d", b + 1, B)
        threshold = null_threshold(null, q)
        m = leading_above(values, threshold)
        if m < k or k >= k_max:
            break
        k = min(k_max, 2 * k)  # every candidate kept: look further
    logger.info("n_components='auto': %d of %d components above the null's %g "
                "quantile (%d permutations)", m, k, q, B)
    if m == 0:
        warnings.warn(
            f"n_components='auto': no eigenvalue is above the {q:g} quantile of the "
            f"column-permuted null ({B} permutations); keeping 1 component. The "
            "columns look independent under this kernel (docs/math.md, 'Parallel "
            "analysis').", UserWarning, stacklevel=5)
    kept = max(1, m)
    r = dec.result
    cut = replace(r, values=r.values[:kept], vectors=r.vectors[:, :kept],
                  residuals=None if r.residuals is None else r.residuals[:kept])
    found = ParallelAnalysis(
        eigenvalues=values, null_eigenvalues=null, threshold=threshold, quantile=q,
        n_permutations=B, n_components=m, trace=float(dec.trace), gamma=float(gamma))
    return replace(dec, result=cut, fitted={**dec.fitted, "parallel_analysis_": found})


def resolved_gamma(kernel: Kernel, X: Any, gamma: Any, rng: Any) -> float:
    """The ``gamma_`` a fit reports: the kernel's, else ``gamma`` (the parameter)
    resolved on ``X`` as scikit-learn reports it."""
    g = getattr(kernel, "gamma", None)
    if g is not None and not isinstance(g, str):
        return float(g)
    if getattr(X, "ndim", 2) == 1:
        # non-vector objects (strings): there is no n_features and no distance
        # heuristic; a numeric gamma is reported as given, otherwise NaN
        return float(gamma) if isinstance(gamma, Real) else float("nan")
    if gamma is None or isinstance(gamma, str):
        # kernels without gamma report what scikit-learn reports (1/n_features);
        # heuristics are resolved on squared distances
        return resolve_gamma(gamma, X, random_state=rng) if gamma else 1.0 / X.shape[1]
    return float(gamma)


# ----------------------------------------------------------------------------- result
@dataclass(frozen=True)
class FitResult:
    """Every fitted attribute of a fit, computed and not yet set (:func:`commit`).

    Every estimator family builds one: the exact and robust fits (:func:`exact_result`),
    the approximate ones (``kpca.approx``'s feature-map fit) and the incremental one
    (each batch's new state).
    """

    #: name -> value of each fitted attribute
    attributes: dict
    #: ``fit_transform``'s output (NumPy); None where the fit computes none (an
    #: approximate or incremental fit, whose ``fit_transform`` is ``fit`` then
    #: ``transform``)
    output: np.ndarray | None = None
    #: attributes an earlier fit may have set that this one does not have
    stale: tuple[str, ...] = ()


def commit(est: Any, result: FitResult, *, device_X: Any = None) -> Any:
    """Set every fitted attribute of ``result`` on ``est`` at once (the only step of a
    fit that writes on the estimator); returns ``fit_transform``'s output, on the
    device of ``device_X`` (the training rows as an Array API array) where given.

    Called once everything else has succeeded: a fit that raises before it leaves the
    previous model whole (every attribute the same object)."""
    for name in result.stale:
        est.__dict__.pop(name, None)
    est.__dict__.update(result.attributes)
    out = result.output
    if device_X is None or out is None:
        return out
    return from_host(out, device_namespace(device_X), device_X.device)


def exact_result(X: Any, kernel: Kernel, gamma: float, dec: Decomposition,
                 settings: FitSettings, centring: Centring, *, device_X: Any = None
                 ) -> FitResult:
    """The fitted attributes of an eigendecomposition (KernelPCA and the robust
    estimators that decompose a centred, scaled ``K``).

    ``device_X``: the training rows as an Array API array (``X`` their host copy), where
    the learned pre-image (``fit_inverse_transform``) is then fitted.
    """
    values, vectors = dec.result.values, dec.result.vectors
    n = X.shape[0]
    attrs: dict[str, Any] = dict(dec.fitted)
    explained = (values / centring.variance_divisor(n, dec.fitted)).astype(values.dtype)
    ratio = values / dec.trace if dec.trace > 0 else np.zeros_like(values)
    attrs.update(
        kernel_=kernel, gamma_=gamma, X_fit_=X, eigenvalues_=values, eigenvectors_=vectors,
        eigen_solver_=dec.result.solver,
        # the plan that ran, without the device array it held
        fit_plan_=(dec.plan if dec.plan.device_X is None
                   else replace(dec.plan, device_X=None)),
        n_components_=values.shape[0], explained_variance_=explained,
        explained_variance_ratio_=ratio.astype(values.dtype, copy=False))
    Z = vectors * np.sqrt(values)  # scores of the decomposed operator
    raw = raw_training_scores(Z, values, vectors, X, kernel, dec.centering,
                              dec.plan.device_X)
    diag_k = (np.asarray(X.diagonal(), np.float64) if settings.precomputed
              else np.asarray(kernel.diag(X), np.float64))
    nz = np.flatnonzero(values)
    A = np.zeros(vectors.shape)
    A[:, nz] = vectors[:, nz] / np.sqrt(values[nz].astype(np.float64))
    space = FittedSubspace.from_dual(
        kernel, X, A, dec.centering, basis_scores=raw,
        score_variance=centring.score_variance(raw, explained),
        normalize=centring.normalized, norm_floor=norm_floor(diag_k, dec.plan.dtype),
        od_noise=od_noise(diag_k, dec.plan.dtype), rows_dtype=dec.plan.dtype.name,
    )
    attrs["subspace_"] = space
    sd, od = space.distances(raw, space.basis_sqnorms(diag_k))
    attrs.update(outlier_statistics(space, sd, od, settings.contamination))
    out = Z if centring.normalized else raw.astype(values.dtype, copy=False)
    if settings.fit_inverse_transform:
        attrs["dual_coef_"] = fit_ridge(score_space_kernel(kernel), out, X, device_X,
                                        settings.alpha)
        attrs["X_transformed_fit_"] = out
    # the optional attributes this fit has not set: an earlier fit's are stale
    stale = tuple(name for name in ("dual_coef_", "X_transformed_fit_", "parallel_analysis_")
                  if name not in attrs)
    return FitResult(attrs, out, stale)


def fit_ridge(kernel: Kernel, Y: np.ndarray, X: Any, device_X: Any, alpha: float
              ) -> np.ndarray:
    """The learned pre-image's dual coefficients (NumPy, as every fitted attribute):
    with ``device_X``, the n x n solve runs on its device and only the (n, d)
    coefficients come back (docs/preimages.md)."""
    if device_X is None:
        return fit_ridge_preimage(kernel, Y, X, alpha)
    xp = device_namespace(device_X)
    Yd = xp.astype(from_host(Y, xp, device_X.device), device_X.dtype)
    C = fit_ridge_preimage(kernel, Yd, device_X, alpha)
    return to_host(C, np.result_type(Y.dtype, X.dtype))


def raw_training_scores(Z: np.ndarray, values: np.ndarray, vectors: np.ndarray, X: Any,
                        kernel: Kernel, c: Centering, device_X: Any = None) -> np.ndarray:
    """``<phi(x_i) - theta, f_l>`` from the operator scores ``Z = sqrt(mu) v``.

    ``Z`` itself without row scales; with scales ``s`` (robust KPCA) ``Z / s``, or --
    where ``s`` is tiny and dividing would amplify round-off -- the projection of those
    rows (their kernel rows evaluated on the device of ``device_X``, the training rows
    as an Array API array, where given).
    """
    s = c.scale
    if s is None:
        return Z
    out = np.asarray(Z, dtype=np.float64).copy()
    ok = s >= 0.01 * np.max(s)
    out[ok] /= s[ok, None]
    bad = np.flatnonzero(~ok)
    if bad.size:
        nz = Z.any(axis=0)
        A = np.zeros(Z.shape)
        A[:, nz] = vectors[:, nz] / np.sqrt(values[nz].astype(np.float64))
        space = FittedSubspace.from_dual(kernel, X, A, c, basis_scores=Z,
                                         score_variance=np.ones(Z.shape[1]))
        if device_X is not None:  # bad rows x n kernel values: on the device
            xp = device_namespace(device_X)
            rows = xp.take(device_X, from_host(bad, xp, device_X.device), axis=0)
            out[bad] = to_host(space.transform_device(rows, xp, dtype=np.float64, raw=True),
                               np.float64)
        else:
            kd = np.zeros(bad.size)  # norms unused
            out[bad] = space.raw_projection(X[bad], kernel_diag=kd)[0]
    return out


# ----------------------------------------------------------------------------- inputs
def data_plan(X: Any, kernel: Kernel, settings: FitSettings, *, dtype: Any = None,
              reweights: bool = False) -> FitPlan:
    """The plan of a fit of ``X`` (``KernelPCA.plan``), read from its shape and dtype
    alone (:func:`shape_plan`): no data, no kernel value.

    ``X``: the training data (an array, sparse matrix, dask or Array API array, a
    RowSource), or its shape ``(n_samples, n_features)``, whose dtype is then ``dtype``
    (default float64). ``reweights``: :attr:`Centring.reweights` of the fit's centring.
    """
    from .distributed import is_dask_collection

    if isinstance(X, tuple):
        shape, dtype = tuple(int(s) for s in X), np.dtype(dtype or np.float64)
    else:
        shape, dtype = tuple(getattr(X, "shape", np.shape(X))), getattr(X, "dtype", None)
        dtype = np.dtype(dtype if dtype in (np.float32, np.float64) else np.float64)
    if not shape or shape[0] < 1:
        raise ValueError(f"X: expected data with at least one row; got shape {shape}.")
    if isinstance(kernel, Precomputed):  # what the fit refuses, the plan refuses
        check_precomputed_shape(shape)
    xp = device_namespace(X)
    return shape_plan(
        shape, dtype, kernel, settings, reweights=reweights,
        auto=isinstance(settings.n_components, str) and settings.n_components == "auto",
        sparse=sp.issparse(X), distributed=is_dask_collection(X),
        device=None if xp is None else str(X.device),
        device_memory=None if xp is None or parse_memory(settings.memory_limit) is not None
        else device_memory_limit(X))


def validate_rows(est: Any, X: Any, *, reset: bool, kernel: Kernel) -> Any:
    """``est``'s input validation (``reset``: of training rows): strings for a string
    kernel, otherwise scikit-learn's ``validate_data`` (float64 or float32 rows, CSR
    sparse matrices; ``est.copy_X`` copies training rows)."""
    if not getattr(kernel, "requires_vectors", True) and not isinstance(kernel, Precomputed):
        # objects that are not feature vectors (e.g. strings for kernel='spectrum'):
        # a 1-D object array, sliceable by rows like a matrix
        if reset and est.fit_inverse_transform:
            raise ValueError(
                f"fit_inverse_transform=True needs vector inputs; the {kernel.name!r} "
                "kernel works on strings, which have no pre-image map.")
        X = as_strings(X)
        if reset:
            X = X.copy() if est.copy_X else X
            for attr in ("n_features_in_", "feature_names_in_"):
                est.__dict__.pop(attr, None)
        kernel.check_input(X)
        return X
    X = validate_data(est, X, accept_sparse="csr", dtype=[np.float64, np.float32],
                      copy=est.copy_X if reset else False, reset=reset,
                      ensure_min_samples=1)
    kernel.check_input(X)
    return X


def fit_rows(est: Any, X: Any, kernel: Kernel, refuse: str | None = None
             ) -> tuple[Any, Any, bool, Any]:
    """The training rows of ``est``'s fit with the (unresolved) ``kernel``: the
    validated host rows (:func:`validate_rows`), the rows on their device (Array API
    input, in the host copy's float dtype; else None), whether they came as a dask
    collection, and the RNG of ``est.random_state``.

    On a device (docs/scaling.md, "GPU and the Array API") the operator and the
    solver's block algebra run there; the host copy gets the shared post-processing,
    so the fitted attributes are those (NumPy) of a NumPy fit. ``refuse``: what
    cannot run on a device (it raises there). A learned pre-image needs input rows:
    ``fit_inverse_transform`` with a precomputed kernel raises first."""
    from .distributed import is_dask_collection, materialize

    if getattr(est, "fit_inverse_transform", False) and isinstance(kernel, Precomputed):
        raise ValueError("Cannot fit_inverse_transform with a precomputed kernel.")
    rng = check_random_state(est.random_state)
    xp = device_namespace(X)
    if xp is not None:
        if refuse:
            refuse_device(X, refuse)
        check_device_kernel(kernel)
        host = validate_rows(est, to_host(X), reset=True, kernel=kernel)
        dt = xp.float32 if host.dtype == np.float32 else xp.float64
        return host, xp.astype(X, dt), False, rng
    distributed = is_dask_collection(X)
    if distributed:  # gather X (n x d); K @ V then runs on the cluster
        X = materialize(X)
    return validate_rows(est, X, reset=True, kernel=kernel), None, distributed, rng


def fit_kernel(kernel: Kernel, X: Any, gamma: Any, settings: FitSettings, rng: Any
               ) -> tuple[Kernel, float]:
    """``kernel`` resolved on the training rows ``X``, and the ``gamma_`` reported
    (:func:`resolved_gamma`; ``gamma``: the estimator's parameter). Without a
    ``random_state`` the median heuristic still gives the same value for the same data
    (its own fixed subsample, kernels._gamma), so ``rng`` only seeds it with one."""
    heuristic_rng = None if settings.random_state is None else rng
    kernel = kernel.resolve(X, random_state=heuristic_rng)
    return kernel, resolved_gamma(kernel, X, gamma, heuristic_rng)
