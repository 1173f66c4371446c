"""One real ``distributed.LocalCluster`` (2 worker processes, 1 thread each) for the
module's tests; starting it is most of their run time.

Robustness: every port is chosen by the OS (scheduler, its HTTP server and the
workers listen on port 0: no clash with other clusters on the machine), the cluster
is closed at the end of the package even on failure, and every test is bounded in
time (a hang dumps all tracebacks and ends the run instead of blocking CI)."""

from __future__ import annotations

import faulthandler
import sys

import pytest

#: seconds any one test of this package may take before the run is aborted
TEST_TIMEOUT = 240


@pytest.fixture(scope="package")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           scheduler_port=0, dashboard_address=":0", memory_limit="2GB")
    try:
        c = Client(cluster)
        try:
            c.wait_for_workers(2, timeout=120)
            yield c
        finally:
            c.close()
    finally:
        cluster.close()


@pytest.fixture(autouse=True)
def _bounded_time():
    faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
