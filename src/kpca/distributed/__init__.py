"""Dask support: every estimator's ``fit``/``transform`` accepts a dask array or
DataFrame and runs on the active ``distributed.Client`` (a local cluster by default).

* :func:`get_client` -- the active client, or a new ``LocalCluster``;
* :class:`DaskKernelOperator` -- exact ``K @ V`` distributed over row blocks (used by
  :class:`kpca.KernelPCA` when fitted on a dask collection);
* :func:`transform_dask` -- lazy transform of a dask collection, chunk by chunk.

See ``docs/scaling.md``.
"""

from ._client import (
    as_dask_array,
    default_cluster_kwargs,
    get_client,
    is_dask_array,
    is_dask_collection,
    materialize,
)
from ._operator import DaskKernelOperator
from ._transform import transform_dask

__all__ = [
    "DaskKernelOperator",
    "as_dask_array",
    "default_cluster_kwargs",
    "get_client",
    "is_dask_array",
    "is_dask_collection",
    "materialize",
    "transform_dask",
]
