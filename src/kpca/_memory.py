"""Memory budgets: parsing ``memory_limit`` and the default budget of a fit."""

from __future__ import annotations

import re
from numbers import Integral, Real
from typing import Any

from ._config import get_config
from ._machine import available_memory

__all__ = ["available_memory", "default_memory_limit", "format_bytes", "parse_memory",
           "stable_budget"]

_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20,
          "MIB": 2**20, "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40,
          "TIB": 2**40}


def parse_memory(value: Any, name: str = "memory_limit") -> int | None:
    """``None``, a number of bytes, or a string such as ``"2GB"``/``"512 MiB"`` -> bytes.

    Units are binary (1 GB = 2**30 bytes).
    """
    if value is None:
        return None
    if isinstance(value, (Integral, Real)) and not isinstance(value, bool):
        if value > 0:
            return int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", value)
        if m and m.group(2).upper() in _UNITS and float(m.group(1)) > 0:
            return int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    raise ValueError(
        f"{name} must be a positive number of bytes or a string such as '2GB' or '512MB'; "
        f"got {value!r}."
    )


def stable_budget(limit: int, fraction: float, available: int) -> int:
    """``fraction`` of ``limit`` bytes, halved while it exceeds ``available`` (>= 1).

    The budget follows the fixed ``limit`` (not the memory free now, which moves with
    the machine's load) and so is the same fit after fit, as long as ``available`` is
    at least that fraction; below it, it steps down by halves, never beyond what is
    available.
    """
    budget = max(1, int(fraction * limit))
    while budget > max(1, available):
        budget //= 2
    return budget


def default_memory_limit() -> int:
    """The memory budget of a fit without ``memory_limit``, in bytes.

    ``memory_budget`` where it is set (``kpca.config_context``); otherwise
    :func:`stable_budget` of ``process_memory`` (the physical memory or a cgroup
    limit), ``memory_fraction`` (one half) and the memory available now (MemAvailable,
    or the room under a cgroup limit). See docs/guide.md ("Memory").
    """
    cfg = get_config()
    if cfg["memory_budget"] is not None:
        return int(parse_memory(cfg["memory_budget"], "memory_budget"))  # type: ignore[arg-type]
    return stable_budget(cfg["process_memory"], cfg["memory_fraction"], available_memory())


def format_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (e.g. ``'1.50 MiB'``)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
