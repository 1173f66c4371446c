"""kpca's one configuration: every tuning value, each with the rule it comes from.

Modelled on scikit-learn's ``get_config`` / ``set_config`` / ``config_context``:

    import kpca
    with kpca.config_context(dense_max_rows=1000):   # LAPACK's dense solver up to 1,000 rows
        model = kpca.KernelPCA(10).fit(X)

A value is read where it is used (``get_config()["name"]``), never copied into a
module global, so that a ``config_context`` reaches it. Settings live in a
:class:`contextvars.ContextVar`: a ``config_context`` in one thread does not leak into
another, and kpca's worker threads (:mod:`kpca._parallel`) run with the settings of
the call that started them (:func:`propagate`).

Every value is declared once in :data:`SETTINGS` with its meaning and the rule it
comes from (a cache size, the core count, a cost model, a numerical bound), never a
timing of one machine. Values that follow a machine fact (``None`` as the default)
are resolved by that rule when read; setting them overrides the rule. docs/guide.md
("Tuning") lists them all.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

__all__ = ["SETTINGS", "Setting", "config_context", "get_config", "propagate", "set_config"]


@dataclass(frozen=True)
class Setting:
    """One tuning value.

    Attributes
    ----------
    default : object
        The value; ``None`` where ``rule`` derives it from the machine.
    doc : str
        What it controls and the rule it comes from (docs/guide.md shows it).
    kind : type or tuple of types
        Accepted types (``int`` accepts any integral, ``float`` any real).
    low : float, optional
        Smallest valid value (inclusive), for numbers.
    rule : callable, optional
        ``rule() -> value`` for a ``None`` default: the machine fact it follows.
    """

    default: Any
    doc: str
    kind: Any = int
    low: float | None = None
    rule: Callable[[], Any] | None = None


#: every tuning value: name -> Setting (append new ones here, in their layer's section)
SETTINGS: dict[str, Setting] = {}


def _register(name: str, setting: Setting) -> None:
    if name in SETTINGS:  # pragma: no cover - a programming error caught at import
        raise RuntimeError(f"setting {name!r} declared twice")
    SETTINGS[name] = setting


# ------------------------------------------------------------------------- declarations
# (each layer's values, in the order of the architecture: kernels -> operators ->
# solvers -> estimators; the rule is stated in ``doc``)

# -- solvers: the 'auto' policy (kpca.solvers._cost; docs/math.md, "Choosing a solver").
# Costs are counted in flops of a cache-blocked matrix product (BLAS-3); a flop of a
# memory-bound step is weighted by what it costs relative to one of those. Nothing
# here is a time: the choice depends on the data's shape, the parameters, the kernel
# and these values only.


def _last_level_cache() -> int:
    """Bytes of the largest CPU cache (Linux sysfs), 32 MiB where it cannot be read."""
    import glob

    best = 0
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(path) as f:
                text = f.read().strip().upper()
        except OSError:
            continue
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 32 * 2**20


_register("blas2_flop_cost", Setting(
    5.0,
    "Cost of one flop of a matrix-vector product (BLAS-2: ARPACK's products, half of "
    "LAPACK's tridiagonal reduction) relative to one of a cache-blocked matrix product, "
    "when the matrix does not fit the last-level cache. Roofline rule: a matrix-vector "
    "product does 2 flops per 8-byte element read (0.25 flop/byte), so at the 10-20 "
    "GB/s one core streams it runs at 2.5-5 GFLOP/s, against 20-50 GFLOP/s for a "
    "blocked product near the FMA peak (16 float64 flops/cycle with AVX2, 32 with "
    "AVX-512): a factor 4-20 in principle, 4-6 in practice with hardware prefetch; 5. "
    "Half of it applies while the matrix fits the cache (solver_cache_bytes).",
    kind=float, low=1.0))
_register("solver_cache_bytes", Setting(
    None,
    "A matrix of at most this many bytes stays in cache between two products, and its "
    "matrix-vector products cost blas2_flop_cost / 2 per flop. Rule: the size of the "
    "CPU's last-level cache (sysfs; 32 MiB where it cannot be read).",
    kind=int, low=0, rule=_last_level_cache))
_register("dense_column_flops", Setting(
    6e5,
    "Fixed cost, in flops, of each of the n columns of LAPACK's tridiagonal reduction "
    "(a Householder vector, a level-2 call and its share of a 32-column panel's "
    "bookkeeping, which do not scale with n): it makes the dense solver's cost per n^3 "
    "higher at small n. Rule: the per-column overhead of ~30 us (a few library calls "
    "of microseconds each), ~6e5 flops of a core's blocked-product rate.",
    kind=float, low=0.0))
_register("arpack_products_per_ncv", Setting(
    2.0,
    "The 'auto' policy's estimate of ARPACK's matrix-vector products: "
    "arpack_products_per_ncv * ncv + arpack_products_offset, ncv = max(2k + 1, 20) "
    "(ARPACK's basis): about two restarts after the first basis, plus a constant. "
    "Rule: a convergence bound read from ARPACK's product counts, which depend on the "
    "spectrum only (not the machine), on digits (RBF gamma 1e-3 and 1e-2, "
    "standardised RBF and linear) and Gaussian data, n = 500-2,500, k = 5-128: "
    "~1.6 ncv + 20 on smooth spectra, ~1.8 ncv + 80 on Gaussian data (both below "
    "the estimate), up to 2.5 ncv + 90 on the flat, clustered one (RBF gamma = 1e-2, "
    "up to 30 % above: the fallback budget, auto_fallback_ratio, covers it).",
    kind=float, low=1.0))
_register("arpack_products_offset", Setting(
    60, "See arpack_products_per_ncv.", kind=int, low=0))
_register("arpack_step_flops", Setting(
    2e5,
    "Fixed cost, in flops, of one ARPACK step: SciPy's reverse-communication loop "
    "returns to Python for every product (~10 us of interpreter work, ~2e5 flops of a "
    "core's blocked-product rate).",
    kind=float, low=0.0))
_register("krylov_columns_per_k", Setting(
    7.0,
    "The 'auto' policy's estimate of block Lanczos's operator columns: "
    "krylov_columns_per_k * k + krylov_columns_offset (passes: that over the block "
    "width). Rule: a convergence bound read from the solver's pass counts (spectrum "
    "only, not the machine) on the same spectra as arpack_products_per_ncv: 190-610 "
    "columns on smooth spectra and 190-800 on Gaussian data (below the estimate), "
    "340-1,190 on the flat one for k = 5-128.",
    kind=float, low=0.0))
_register("krylov_columns_offset", Setting(
    450, "See krylov_columns_per_k.", kind=int, low=0))
_register("auto_fallback_ratio", Setting(
    1.0,
    "Under eigen_solver='auto', an iterative solve that has not converged after "
    "spending this multiple of the dense solve's modelled flops (block Lanczos: in "
    "passes; ARPACK: in restarts) stops and the dense solver runs instead, when the "
    "matrix fits. Rule: the ski-rental bound: with 1, a wrong choice costs at most "
    "twice the dense solve.",
    kind=float, low=0.0))
_register("arpack_serial_rows", Setting(
    1500,
    "ARPACK fits (n_jobs=None) up to this many rows run their BLAS on one thread. Rule: "
    "a product then has 2 n^2 <= 4.5e6 flops (~0.2 ms on one core) on a matrix of at "
    "most 18 MB that stays in cache; a second BLAS thread woken for each of its "
    "hundreds of products costs more in wake-up and spinning (tens of us a call) than "
    "it saves.",
    kind=int, low=0))
_register("primal_max_features", Setting(
    4096,
    "Kernels with an explicit feature map (linear; polynomial of integer degree) are "
    "solved in the primal (the p x p feature covariance) only when its dimension p is "
    "at most this: the covariance takes 8 p^2 bytes (128 MB at 4,096) besides the "
    "n x p features, and the cost model compares the two routes below it.",
    kind=int, low=0))


_OVERRIDES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "kpca_config", default=MappingProxyType({})
)


@functools.cache
def _derived(name: str) -> Any:
    # a machine fact, read once per process (cores, caches and memory limits do not
    # change under a running process in any way kpca could follow mid-fit)
    return SETTINGS[name].rule()  # type: ignore[misc]


def _resolve(name: str, overrides: Mapping[str, Any]) -> Any:
    if name in overrides:
        return overrides[name]
    s = SETTINGS[name]
    if s.default is None and s.rule is not None:
        return _derived(name)
    return s.default


def get_config() -> dict[str, Any]:
    """Every tuning value in force here: ``{name: value}`` (a fresh dict).

    See :data:`SETTINGS` (or docs/guide.md, "Tuning") for what each one means.
    """
    overrides = _OVERRIDES.get()
    return {name: _resolve(name, overrides) for name in SETTINGS}


def _check(name: str, value: Any) -> None:
    if name not in SETTINGS:
        raise ValueError(
            f"unknown kpca setting {name!r}; valid settings are {sorted(SETTINGS)}."
        )
    s = SETTINGS[name]
    if value is None and s.rule is not None:
        return  # back to the rule
    kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
    abstract = tuple({int: Integral, float: Real}.get(k, k) for k in kinds)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, abstract):
        names = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"kpca setting {name!r} must be {names}; got {value!r}.")
    if s.low is not None and isinstance(value, Real) and value < s.low:
        raise ValueError(f"kpca setting {name!r} must be >= {s.low}; got {value!r}.")


def set_config(**settings: Any) -> None:
    """Set tuning values for the rest of this context (thread or task).

    ``None`` for a machine-derived value returns it to its rule. Unknown names and
    values of the wrong type or range raise ``ValueError``.
    """
    for name, value in settings.items():
        _check(name, value)
    merged = dict(_OVERRIDES.get())
    for name, value in settings.items():
        if value is None and SETTINGS[name].rule is not None:
            merged.pop(name, None)
        else:
            merged[name] = value
    _OVERRIDES.set(MappingProxyType(merged))


@contextmanager
def config_context(**settings: Any) -> Iterator[None]:
    """Tuning values set inside a ``with`` block and restored after it."""
    for name, value in settings.items():
        _check(name, value)
    token = _OVERRIDES.set(_OVERRIDES.get())
    try:
        set_config(**settings)
        yield
    finally:
        _OVERRIDES.reset(token)


def propagate(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped to run with the settings in force where it was wrapped: for work
    handed to another thread (a new thread starts with the defaults)."""
    overrides = _OVERRIDES.get()

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = _OVERRIDES.set(overrides)
        try:
            return fn(*args, **kwargs)
        finally:
            _OVERRIDES.reset(token)

    return run
