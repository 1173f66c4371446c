"""Memory budgets: parsing ``memory_limit`` and reading what the machine has."""

from __future__ import annotations

import os
import re
from numbers import Integral, Real
from typing import Any

_UNITS = {"": 1, "B": 1, "K": 2**10, "KB": 2**10, "KIB": 2**10, "M": 2**20, "MB": 2**20,
          "MIB": 2**20, "G": 2**30, "GB": 2**30, "GIB": 2**30, "T": 2**40, "TB": 2**40,
          "TIB": 2**40}


def available_memory() -> int:
    """Bytes of memory available to new allocations (MemAvailable), or 4 GiB if unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


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


def default_memory_limit() -> int:
    """Half of the memory available now: room for the data, the caller and the OS."""
    return available_memory() // 2


def format_bytes(n: float) -> str:
    """``n`` bytes in the largest binary unit that keeps it >= 1 (e.g. ``'1.50 MiB'``)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
