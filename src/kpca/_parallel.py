"""The one block runner: work items on a thread pool, BLAS limited per thread.

Kernel blocks, tiles and transform rows are all run the same way: ``workers``
Python threads, each calling BLAS on one thread (NumPy releases the GIL in
BLAS and in the element-wise loops, so the threads run in parallel, and one
BLAS thread per worker avoids oversubscribing the cores).

A large BLAS or LAPACK call made outside the workers gets its threads by its size
(:func:`call_threads`): a multi-threaded call waits for all its threads at each of
its synchronisation points, and on a busy machine a thread may wait a scheduler time
slice for a core at each, so a thread is added only per ``blas_flops_per_thread`` of
work between two of them. Small calls stay on one thread, which also leaves BLAS's
own threads asleep rather than spinning after each call.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, TypeVar

from threadpoolctl import ThreadpoolController

from ._config import get_config, propagate

T = TypeVar("T")

#: the pool of :func:`worker_pool` in force in this thread's context, and its threads
_POOL: ContextVar[tuple[ThreadPoolExecutor, int] | None] = ContextVar("kpca_pool",
                                                                      default=None)


def _controller() -> ThreadpoolController:
    """The BLAS and OpenMP libraries loaded in this process (threadpoolctl).

    Discovering them takes ~4 ms: done again only when modules were imported since
    (a module imported later, e.g. PyTorch, can load another BLAS or OpenMP), not once
    per kernel pass. Both NumPy's and SciPy's OpenBLAS are found (SciPy's wheels bundle
    their own; kpca imports ``scipy.linalg`` before any call here).
    """
    return _controller_at(len(sys.modules))


@lru_cache(maxsize=1)
def _controller_at(modules: int) -> ThreadpoolController:
    return ThreadpoolController()


def blas_threads(limit: int | None) -> AbstractContextManager[Any]:
    """Context in which BLAS and OpenMP pools use ``limit`` threads (``None``:
    unchanged)."""
    if limit is None:
        return nullcontext()
    return _controller().limit(limits=limit)


def current_blas_threads() -> int:
    """The threads BLAS calls use here now (the largest over the loaded BLAS libraries)."""
    counts = [lib.num_threads for lib in _controller().lib_controllers
              if lib.user_api == "blas"]
    return max(counts, default=1)


def call_threads(flops: float, limit: int | None = None) -> int:
    """BLAS threads for one call that does ``flops`` of work between two of its
    synchronisation points: one per ``blas_flops_per_thread`` (rounded down), at least
    one, at most ``limit`` (``None``: the threads BLAS has here now, at most the
    process's cores).

    E.g. LAPACK's symmetric eigensolvers reduce ``A`` (``n x n``) to tridiagonal form
    with one matrix-vector product, ``2 n^2`` flops, per column: at the default
    ``2**25`` flops a thread, one thread up to n = 5,792, two up to 8,192.
    """
    if limit is None:
        limit = min(current_blas_threads(), get_config()["n_cores"])
    per = get_config()["blas_flops_per_thread"]
    return int(max(1, min(max(1, limit), flops // per)))


def sized_threads(flops: float, limit: int | None = None) -> AbstractContextManager[Any]:
    """Context for a call of ``flops`` of work per synchronisation point, on
    :func:`call_threads` BLAS threads."""
    return blas_threads(call_threads(flops, limit))


def job_threads(n_jobs: int | None) -> AbstractContextManager[Any]:
    """BLAS threads as ``n_jobs`` asks: for ``None``, what the caller has set, at most
    the cores this process may use (BLAS's own default counts the CPU affinity, not a
    cgroup CPU quota); all those cores for -1, all but one for -2, ...; ``n_jobs``
    otherwise."""
    cores = get_config()["n_cores"]
    if n_jobs is None:
        return nullcontext() if current_blas_threads() <= cores else blas_threads(cores)
    # -1: all the cores, -2: all but one, ... (as n_threads counts workers)
    return blas_threads(max(1, cores + 1 + n_jobs) if n_jobs < 0 else n_jobs)


def run_blocks(work: Callable[[Any], T], items: Iterable[Any], workers: int) -> list[T]:
    """``[work(x) for x in items]`` on ``workers`` threads, one BLAS thread each.

    With ``workers <= 1`` the items run in this thread, on one BLAS thread too: they
    are pieces sized for one thread, and BLAS left at its default would wake its own
    threads for each piece's small products (``n_jobs=1`` transform of 10,000 rows
    against 20,000 on this shared 2-core machine: 6-10 s against 1 s with them held to
    one). A single item with more workers runs here with BLAS's threads as they are.
    """
    items = list(items)
    if workers <= 1:
        with blas_threads(1) if current_blas_threads() > 1 else nullcontext():
            return [work(x) for x in items]
    if len(items) <= 1:
        return [work(x) for x in items]
    kept = _POOL.get()
    with blas_threads(1):
        # the threads of worker_pool, where they run no more items at once than asked
        if kept is not None and (kept[1] == workers or len(items) <= min(workers, kept[1])):
            return list(kept[0].map(propagate(work), items))
        with ThreadPoolExecutor(min(workers, len(items))) as pool:
            return list(pool.map(propagate(work), items))


@contextmanager
def worker_pool(workers: int) -> Iterator[None]:
    """``workers`` threads kept while the block runs (a fit), for the calls of
    :func:`run_blocks` for ``workers`` threads made in it from this thread: they start
    no threads of their own. A tiled fit makes dozens of such calls (its passes, the
    sums of their accumulators, the solver's sweeps, the warm start's steps); each
    started and joined its threads, work done on the fit's one serial thread
    (~36 pools of 16 threads a 40,000-row fit on 16 cores). The threads wait on a
    queue between calls (no spinning) and end with the block. A call for fewer threads
    uses them when it has no more items than it asks threads for (the solver's sweeps
    over fewer row groups than workers). Calls from the pool's own threads, and the
    others, start their own as before.
    """
    if workers <= 1 or _POOL.get() is not None:
        yield
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="kpca")
    token = _POOL.set((pool, workers))
    try:
        yield
    finally:
        _POOL.reset(token)
        pool.shutdown(wait=True)


def run_stream(work: Callable[[Any], T], items: Iterable[Any], workers: int) -> Iterable[T]:
    """``(work(x) for x in items)`` in order, on ``workers`` threads (one BLAS thread
    each), reading ``items`` lazily: at most ``2 * workers`` items are held at once.

    For a stream that must not be materialised (row blocks read from a file).
    """
    if workers <= 1:
        with blas_threads(1) if current_blas_threads() > 1 else nullcontext():
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
