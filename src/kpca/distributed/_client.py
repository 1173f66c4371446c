"""Dask input detection and the client every distributed computation runs on."""

from __future__ import annotations

import logging
import multiprocessing
import threading
from typing import Any

import numpy as np

from .._config import get_config

logger = logging.getLogger("kpca")

_lock = threading.Lock()
_default: Any = None  # the Client kpca created itself (reused; distributed closes it at exit)

_GUARD_HINT = (
    "With no active distributed.Client, kpca starts a LocalCluster of worker processes, "
    "and those re-import the main script: in a script, put the code that fits on dask "
    "data under `if __name__ == \"__main__\":`, or create a client yourself first (e.g. "
    "`distributed.Client(processes=False)` for threads, or `Client(\"tcp://host:8786\")`)."
)


def is_dask_array(X: Any) -> bool:
    """True for a ``dask.array.Array`` (without importing dask when it is not loaded)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def is_dask_collection(X: Any) -> bool:
    """True for a dask array or a dask DataFrame/Series."""
    mod = type(X).__module__
    return mod.startswith(("dask.array", "dask.dataframe", "dask_expr")) and hasattr(
        X, "__dask_graph__"
    )


def as_dask_array(X: Any) -> tuple[Any, np.ndarray | None]:
    """A 2-D dask array with known chunk sizes, and the column names of a DataFrame.

    Returns
    -------
    X : dask.array.Array
    names : ndarray of str or None
        Column names when ``X`` is a dask DataFrame whose columns are all strings.
    """
    if is_dask_array(X):
        if any(np.isnan(c).any() for c in map(np.asarray, X.chunks)):
            X = X.compute_chunk_sizes()
        return X, None
    cols = list(getattr(X, "columns", []))
    names = np.asarray(cols, dtype=object) if cols and all(isinstance(c, str) for c in cols) \
        else None
    return X.to_dask_array(lengths=True), names


def default_cluster_kwargs() -> dict:
    """Keyword arguments of the :class:`distributed.LocalCluster` created when no client
    is active: one single-threaded worker process per core this process may use (the
    ``n_cores`` setting; at most 8).

    Processes rather than threads: kernel blocks are NumPy/BLAS work, and separate
    processes also make the cluster survive one worker dying.
    """
    n = max(1, min(8, get_config()["n_cores"]))
    return {"n_workers": n, "threads_per_worker": 1, "processes": True}


def get_client(**cluster_kwargs: Any):
    """The active ``distributed.Client``, or a new one on a local cluster.

    Order: the client returned by :func:`distributed.get_client` (the one created
    most recently in this process, or the worker's client inside a task); else
    the one kpca created earlier; else a new ``Client(LocalCluster(**kwargs))``
    with :func:`default_cluster_kwargs` updated by ``cluster_kwargs``.

    To run on a real cluster, create the client yourself before fitting::

        from distributed import Client
        client = Client("tcp://scheduler-host:8786")
        KernelPCA(...).fit(dask_array)

    The default cluster's worker processes are spawned and re-import the main
    script: a script that relies on it needs the ``if __name__ == "__main__":``
    guard (as any script starting a ``LocalCluster``). Without it, the re-import
    inside a worker raises a ``RuntimeError`` saying so, and so does this call.

    Raises
    ------
    RuntimeError
        If the default ``LocalCluster`` cannot be started, or when called while a
        spawned process is importing the main module.
    """
    global _default
    import distributed

    try:
        return distributed.get_client()
    except ValueError:
        pass
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        # a spawned worker process is re-importing the main script, whose top level
        # fits on dask data: starting a cluster here would recurse (and fail)
        raise RuntimeError(_GUARD_HINT)
    with _lock:
        if _default is None or _default.status in ("closed", "closing"):
            kwargs = {**default_cluster_kwargs(), **cluster_kwargs}
            logger.info("kpca: no active dask client; starting LocalCluster(%s)", kwargs)
            try:
                cluster = distributed.LocalCluster(**kwargs)
            except Exception as exc:
                raise RuntimeError(
                    f"kpca could not start its default dask LocalCluster({kwargs}): "
                    f"{str(exc).rstrip('.')}. "
                    + _GUARD_HINT
                ) from exc
            try:
                _default = distributed.Client(cluster)
            except Exception:
                cluster.close()
                raise
        return _default


def materialize(X: Any) -> Any:
    """Compute a dask collection on the client: a numpy array (dask array) or a pandas
    DataFrame (dask DataFrame, so column names survive validation)."""
    return get_client().compute(X).result()
