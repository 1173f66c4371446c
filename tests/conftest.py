"""Shared test configuration.

``SCIPY_ARRAY_API`` is set before SciPy is first imported, so that scikit-learn's
estimator checks run ``check_array_api_input`` (array-API dispatch with NumPy
inputs must not change results) instead of skipping it. One hypothesis profile
serves the property tests; ``dask_client`` is the in-process cluster of the Dask
tests.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "kpca",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("kpca")


@pytest.fixture(scope="module")
def dask_client():
    """An in-process Dask cluster (threads): starts in about a second."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client
