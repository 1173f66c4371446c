"""Fixtures shared by the tests of the feature-map estimators."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest


def _traced_peak(fn: Callable[[], object]) -> tuple[int, ValueError | None]:
    """Peak bytes allocated while ``fn`` ran (tracemalloc: NumPy's buffers included),
    and the ``ValueError`` it raised, or None."""
    tracemalloc.start()
    try:
        fn()
        error = None
    except ValueError as exc:
        error = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, error


@pytest.fixture
def traced_peak() -> Callable[[Callable[[], object]], tuple[int, ValueError | None]]:
    """:func:`_traced_peak`: what a fit allocated before it refused (memory guards)."""
    return _traced_peak
