"""The one block runner: work items on a thread pool, BLAS limited per thread.

Kernel blocks, tiles and transform rows are all run the same way: ``workers``
Python threads, each calling BLAS on one thread (NumPy releases the GIL in
BLAS and in the element-wise loops, so the threads run in parallel, and one
BLAS thread per worker avoids oversubscribing the cores).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController

from ._config import propagate

T = TypeVar("T")

#: a tall product is split over threads only when each gets at least this many rows
MIN_SPLIT_ROWS = 128


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    # discovering the loaded BLAS/OpenMP libraries takes ~4 ms: once per process,
    # not once per kernel pass
    return ThreadpoolController()


def blas_threads(limit: int | None) -> AbstractContextManager[Any]:
    """Context in which BLAS and OpenMP pools use at most ``limit`` threads
    (``None``: unchanged)."""
    if limit is None:
        return nullcontext()
    return _controller().limit(limits=limit)


def job_threads(n_jobs: int | None) -> AbstractContextManager[Any]:
    """BLAS threads as ``n_jobs`` asks: unchanged for ``None``, all cores for -1."""
    if n_jobs is None:
        return nullcontext()
    return blas_threads(None if n_jobs < 0 else n_jobs)


def run_blocks(work: Callable[[Any], T], items: Iterable[Any], workers: int) -> list[T]:
    """``[work(x) for x in items]`` on ``workers`` threads, one BLAS thread each.

    With ``workers <= 1`` (or a single item) the items run in this thread and BLAS
    keeps its own threads.
    """
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [work(x) for x in items]
    with blas_threads(1), ThreadPoolExecutor(min(workers, len(items))) as pool:
        return list(pool.map(propagate(work), items))


def matmul_rows(A: Any, B: Any, workers: int) -> Any:
    """``A @ B`` with the rows of ``A`` split over ``workers`` threads (one BLAS thread
    each), for a tall product next to a threaded pass: BLAS's own threads, left
    spinning after a call, would slow the pass's workers.
    """
    rows = A.shape[0]
    if workers <= 1 or rows < 2 * MIN_SPLIT_ROWS:
        return A @ B
    out = np.empty((rows, B.shape[1]), dtype=np.result_type(A.dtype, B.dtype))
    step = -(-rows // workers)

    def work(r0: int) -> None:
        np.matmul(A[r0 : r0 + step], B, out=out[r0 : r0 + step])

    run_blocks(work, range(0, rows, step), workers)
    return out


def run_stream(work: Callable[[Any], T], items: Iterable[Any], workers: int) -> Iterable[T]:
    """``(work(x) for x in items)`` in order, on ``workers`` threads (one BLAS thread
    each), reading ``items`` lazily: at most ``2 * workers`` items are held at once.

    For a stream that must not be materialised (row blocks read from a file).
    """
    if workers <= 1:
        yield from (work(x) for x in items)
        return
    pending: list[Any] = []
    work = propagate(work)  # the workers run with this call's kpca settings
    with blas_threads(1), ThreadPoolExecutor(workers) as pool:
        for x in items:
            pending.append(pool.submit(work, x))
            if len(pending) >= 2 * workers:
                yield pending.pop(0).result()
        for fut in pending:
            yield fut.result()
