"""Building the Gram matrix: threaded, in cache-sized row blocks, fused with row sums."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from ..kernels import Kernel

#: target bytes of one row block: small enough to stay in cache while the
#: element-wise steps (clip, exp, row sum) run over it
BLOCK_BYTES = 2 * 2**20


def n_threads(n_jobs: int | None) -> int:
    """Worker threads for ``n_jobs`` (None or -1: all cores)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    if n_jobs is None or n_jobs < 0:
        return max(1, cores + 1 + n_jobs) if n_jobs is not None and n_jobs < -1 else cores
    return max(1, min(cores, n_jobs))


def gram_matrix(
    kernel: Kernel, X: Any, *, dtype: Any, n_jobs: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The training Gram matrix ``K = k(X, X)`` and its row means.

    Row blocks are evaluated by ``n_jobs`` threads (NumPy's element-wise loops and
    BLAS release the GIL), each block sized to stay in cache, with BLAS limited to
    one thread per worker to avoid oversubscription.

    Parameters
    ----------
    kernel : Kernel
        A resolved kernel.
    X : array-like or sparse matrix of shape (n, d)
    dtype : float32 or float64
        Storage precision of ``K``.

    Returns
    -------
    K : ndarray of shape (n, n), dtype ``dtype``
    row_means : ndarray of shape (n,), float64
    """
    n = X.shape[0]
    dtype = np.dtype(dtype)
    K = np.empty((n, n), dtype=dtype)
    prep = kernel.prepare(X, dtype)
    rows = int(max(8, min(n, BLOCK_BYTES // max(1, n * dtype.itemsize))))
    sums = np.empty(n, dtype=np.float64)
    diag_value = kernel.constant_diag

    def work(start: int) -> None:
        stop = min(n, start + rows)
        blk = K[start:stop]
        kernel.block_prepared(X[start:stop], prep, out=blk)
        if diag_value is not None:  # exact diagonal, whatever the round-off
            idx = np.arange(start, stop)
            blk[idx - start, idx] = diag_value
        # pairwise summation in the storage dtype (a float64 accumulator would force a
        # slow casting loop); its error, ~eps*log2(n), is below the storage round-off
        sums[start:stop] = blk.sum(axis=1)

    starts = range(0, n, rows)
    workers = n_threads(n_jobs) if len(starts) > 1 else 1
    if workers == 1:
        for s in starts:
            work(s)
    else:
        with threadpool_limits(limits=1), ThreadPoolExecutor(workers) as pool:
            list(pool.map(work, starts))
    return K, sums / n
