"""``transform`` of a dask collection: the in-memory transform mapped over row chunks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._client import as_dask_array


def _transform_chunk(block: np.ndarray, estimator: Any) -> np.ndarray:
    return estimator.transform(block)


def transform_dask(estimator: Any, X: Any, n_out: int, dtype: Any):
    """Lazy ``estimator.transform`` of a dask array/DataFrame, chunk by chunk.

    Parameters
    ----------
    estimator : fitted estimator
        Its in-memory ``transform`` runs on each row chunk (on the workers); the
        estimator is put in the graph once (a single ``dask.delayed`` object).
    X : dask array or DataFrame of shape (n, d)
    n_out : int
        Output columns.
    dtype : numpy dtype of the output

    Returns
    -------
    dask.array.Array of shape (n, n_out), with X's row chunks.
    """
    import dask

    X, _ = as_dask_array(X)
    n_in = getattr(estimator, "n_features_in_", X.shape[1])
    if X.ndim != 2 or X.shape[1] != n_in:
        raise ValueError(
            f"X has shape {X.shape}, but {type(estimator).__name__} is expecting "
            f"{n_in} features as input."
        )
    X = X.rechunk({1: -1})
    est = dask.delayed(estimator, pure=True)
    dtype = np.dtype(dtype)
    return X.map_blocks(_transform_chunk, est, dtype=dtype, meta=np.empty((0, 0), dtype),
                        chunks=(X.chunks[0], (n_out,)))
