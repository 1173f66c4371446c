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
