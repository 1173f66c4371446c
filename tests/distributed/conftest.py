"""One real ``distributed.LocalCluster`` (2 worker processes, 1 thread each) for the
module's tests; starting it is most of their run time."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="package")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit="2GB")
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
