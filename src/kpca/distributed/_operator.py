"""The exact kernel matrix as an operator whose ``K @ V`` runs on a Dask cluster."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from .._config import get_config
from ..kernels import Kernel
from ..operators import KernelOperator
from ._client import get_client

logger = logging.getLogger("kpca")

# the settings dask_task_block_bytes (one block row ``K[rows, :]`` a task evaluates)
# and dask_inline_bytes (a ``V`` up to this size travels inside each task instead of
# being scattered), kpca._config, are read in this process: tasks run with defaults


def _identity(x: Any) -> Any:
    return x


def _block_matmat(kernel: Kernel, X, prep, i0: int, i1: int, V: np.ndarray) -> np.ndarray:
    """``K[i0:i1, :] @ V`` on a worker: one kernel block row, then one product (float64)."""
    Kb = kernel.block_prepared(X[i0:i1], prep)
    return np.asarray(Kb @ V, dtype=np.float64)


class DaskKernelOperator(KernelOperator):
    """``K = k(X, X)`` whose ``matmat`` is distributed over row blocks on a Dask cluster.

    ``X`` and the kernel's column-side state (:meth:`Kernel.prepare`) are sent once,
    as two tasks that return them (recomputable: a lost worker loses no data for
    good), and replicated to every worker. Each ``matmat(V)`` ships ``V`` (n x k),
    submits one task per block of rows computing ``K[block, :] @ V`` and gathers
    the (block x k) results: per pass, ``n k`` floats go to each worker (inside
    the tasks when ``V`` is under 1 MiB) and ``n k`` come back; the ``O(n^2 d)``
    kernel work is split evenly. Nothing of ``K`` is stored (matrix-free, like the
    tiled backend without kept tiles; the symmetry saving of the tiled backend is
    not used: each block row is computed whole).

    Fault tolerance is Dask's: tasks are submitted with ``retries`` (recomputed
    after an exception), and the scheduler reschedules the tasks of a worker that
    dies on the others, recomputing the inputs it held from their lineage. If a
    whole pass still fails (e.g. ``KilledWorker`` after repeated deaths), the inputs
    are sent again and the pass repeated, up to ``attempts`` times.

    Centring: wrap with :func:`kpca.operators.center` (a
    :class:`~kpca.operators.CenteredOperator`; row means cost one extra pass).

    Parameters
    ----------
    kernel : Kernel
        Resolved kernel.
    X : ndarray or sparse matrix of shape (n, d)
        Training rows (in memory on the client: ``n d`` values, not ``n^2``).
    dtype : float32 or float64, default=float64
        Precision of the kernel blocks (products are accumulated in float64).
    client : distributed.Client or None
        ``None``: :func:`kpca.distributed.get_client`.
    block_rows : int or None
        Rows per task (``None``: blocks of about 64 MB, at least 2 per worker).
    retries : int, default=3
        ``retries`` of every submitted task.
    attempts : int, default=3
        Times a failed pass is repeated.
    """

    def __init__(
        self,
        kernel: Kernel,
        X: Any,
        *,
        dtype: Any = np.float64,
        client: Any = None,
        block_rows: int | None = None,
        retries: int = 3,
        attempts: int = 3,
    ):
        self.kernel = kernel
        self.X = X
        self.dtype = np.dtype(dtype)
        n = X.shape[0]
        self.shape = (n, n)
        self.client = client if client is not None else get_client()
        self.retries = int(retries)
        self.attempts = int(attempts)
        if block_rows is None:
            workers = max(1, len(self.client.scheduler_info().get("workers", {})))
            task_bytes = get_config()["dask_task_block_bytes"]
            block_rows = max(1, min(task_bytes // max(1, n * self.dtype.itemsize),
                                    -(-n // (2 * workers))))
        self.block_rows = int(block_rows)
        self.blocks = [(i, min(n, i + self.block_rows)) for i in range(0, n, self.block_rows)]
        self.n_passes = 0
        self._scatter()

    def _scatter(self) -> None:
        """Put X and the prepared state on the workers, as recomputable tasks.

        Not ``client.scatter``: scattered data have no lineage, and Dask's Active
        Memory Manager drops the extra replicas of a broadcast between passes, so
        the death of the worker holding the last copy would lose them for good.
        A task that returns its (embedded) argument can be recomputed by the
        scheduler on another worker, so a dead worker costs only its own tasks.
        """
        import dask

        Xd = self.X if not hasattr(self.X, "astype") else self.X.astype(self.dtype, copy=False)
        prep = self.kernel.prepare(self.X, self.dtype)
        # the data travel once inside these two tasks, deliberately (see above)
        with dask.config.set({"distributed.admin.large-graph-warning-threshold": "1TB"}):
            self._X = self.client.submit(_identity, Xd, pure=False, retries=self.retries)
            self._prep = self.client.submit(_identity, prep, pure=False, retries=self.retries)
        # one copy per worker up front, so the first pass does not fan out from one
        self.client.replicate([self._X, self._prep])

    def matmat(self, V):
        V = np.ascontiguousarray(V, dtype=np.float64)
        t0 = time.perf_counter()
        error: Exception | None = None
        inline = get_config()["dask_inline_bytes"]
        for attempt in range(self.attempts):
            try:
                # a small V travels inside the tasks; a large one is broadcast once
                Vf = V if V.nbytes <= inline else self.client.scatter(
                    V, broadcast=True, hash=False)
                futures = [
                    self.client.submit(_block_matmat, self.kernel, self._X, self._prep, i0, i1,
                                       Vf, retries=self.retries, pure=False)
                    for i0, i1 in self.blocks
                ]
                out = np.vstack(self.client.gather(futures))
                break
            except Exception as exc:  # lost data / killed workers: re-scatter and repeat
                error = exc
                logger.warning("DaskKernelOperator: pass failed (%s: %s), attempt %d/%d",
                               type(exc).__name__, exc, attempt + 1, self.attempts)
                self._scatter()
        else:
            raise RuntimeError(
                f"DaskKernelOperator: K @ V failed {self.attempts} times on the cluster"
            ) from error
        self.n_passes += 1
        logger.debug("DaskKernelOperator pass %d: %d blocks, %.3fs", self.n_passes,
                     len(self.blocks), time.perf_counter() - t0)
        return out

    def diag(self):
        return np.asarray(self.kernel.diag(self.X), dtype=np.float64)

    def to_dense(self):
        return self.matmat(np.eye(self.n))
