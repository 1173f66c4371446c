"""Dask input on a real LocalCluster: results equal the in-memory ones, and a fit
survives one worker being killed."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from kpca import (
    AnovaKernelPCA,
    KernelPCA,
    NystromKernelPCA,
    RandomFeatureKernelPCA,
    SphericalKernelPCA,
    WeightedKernelPCA,
)
from kpca.distributed import DaskKernelOperator, get_client
from kpca.kernels import RBF

da = pytest.importorskip("dask.array")


def _data(n=600, d=4, seed=0):
    X, _ = make_blobs(n, n_features=d, centers=4, cluster_std=1.5, random_state=seed)
    return X


def _align(A, B):
    s = np.sign(np.sum(A * B, axis=0))
    s[s == 0] = 1
    return A * s


def test_get_client_returns_the_active_client(client):
    assert get_client() is client


def test_without_a_client_a_local_cluster_is_started_once(client, monkeypatch):
    """No active client: kpca starts its own LocalCluster (here a small in-process one)
    and reuses it."""
    import distributed

    import kpca.distributed._client as mod

    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "get_client", no_client)
    monkeypatch.setattr(mod, "_default", None)
    own = get_client(n_workers=1, processes=False, dashboard_address=":0")
    try:
        assert own is not client and isinstance(own.cluster, distributed.LocalCluster)
        assert get_client() is own
        assert own.submit(sum, [1, 2, 3]).result() == 6
    finally:
        own.close()
        own.cluster.close()


def test_operator_matmat_equals_dense_product(client):
    X = _data(300)
    kernel = RBF(gamma=0.1)
    op = DaskKernelOperator(kernel, X, client=client, block_rows=70)
    assert len(op.blocks) == 5
    V = np.random.default_rng(0).normal(size=(300, 3))
    K = np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1))  # independent K
    np.testing.assert_allclose(op.matmat(V), K @ V, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.diag(), 1.0)


def test_exact_kpca_on_dask_equals_in_memory(client):
    X, T = _data(700), _data(50, seed=1)
    params = dict(n_components=4, kernel="rbf", gamma=0.1, eigen_solver="krylov",
                  random_state=0)
    mem = KernelPCA(**params).fit(X)
    dsk = KernelPCA(**params).fit(da.from_array(X, chunks=(200, 4)))
    np.testing.assert_allclose(dsk.eigenvalues_, mem.eigenvalues_, rtol=1e-8)
    Zd = dsk.transform(da.from_array(T, chunks=(20, 4)))
    assert isinstance(Zd, da.Array) and Zd.chunks[0] == (20, 20, 10)
    Zm = mem.transform(T)
    np.testing.assert_allclose(_align(Zd.compute(), Zm), Zm, atol=1e-6)


def test_dask_dataframe_input_keeps_feature_names(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X = _data(400)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    ddf = dd.from_pandas(df, npartitions=3)
    est = NystromKernelPCA(3, n_landmarks=40, gamma=0.1, random_state=0).fit(ddf)
    assert list(est.feature_names_in_) == ["a", "b", "c", "d"]
    mem = NystromKernelPCA(3, n_landmarks=40, gamma=0.1, random_state=0).fit(df)
    np.testing.assert_allclose(est.eigenvalues_, mem.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(est.transform(ddf).compute(), mem.transform(df), atol=1e-9)


@pytest.mark.parametrize("make", [
    lambda: NystromKernelPCA(3, n_landmarks=50, landmarks="kmeans", gamma=0.1, random_state=0),
    lambda: RandomFeatureKernelPCA(3, n_features=60, gamma=0.1, random_state=0),
])
def test_approx_on_dask_equals_in_memory(client, make):
    X = _data(900)
    mem = make().fit(X)
    dsk = make().fit(da.from_array(X, chunks=(250, 4)))
    np.testing.assert_allclose(dsk.eigenvalues_, mem.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(dsk.mean_, mem.mean_, rtol=1e-12)
    Z = dsk.transform(da.from_array(X, chunks=(300, 4)))
    assert isinstance(Z, da.Array)
    np.testing.assert_allclose(Z.compute(), mem.transform(X), atol=1e-9)


@pytest.mark.parametrize("make, n", [
    # krylov: the robust centring's and the solver's K @ V run on the cluster
    (lambda: SphericalKernelPCA(3, kernel="rbf", gamma=0.1, eigen_solver="krylov",
                                random_state=0), 600),
    (lambda: WeightedKernelPCA(3, kernel="rbf", gamma=0.1), 120),
    (lambda: AnovaKernelPCA(3, gamma=0.1), 120),
])
def test_robust_estimators_on_dask_equal_in_memory(client, make, n):
    X = _data(n)
    mem = make().fit(X)
    dsk = make().fit(da.from_array(X, chunks=(100, 4)))
    np.testing.assert_allclose(dsk.eigenvalues_, mem.eigenvalues_, rtol=1e-9)
    Z = dsk.transform(da.from_array(X, chunks=(n // 2 + 1, 4)))
    assert isinstance(Z, da.Array)
    Zm = mem.transform(X)
    np.testing.assert_allclose(_align(Z.compute(), Zm), Zm, atol=1e-8)


class SlowRBF(RBF):
    """The RBF kernel, 20 ms slower per block: passes last long enough to kill a
    worker in the middle of one."""

    def block_prepared(self, X, prep, out=None):
        time.sleep(0.02)
        return super().block_prepared(X, prep, out)


def test_fit_survives_a_killed_worker(client, monkeypatch):
    """Kill one worker process at the start of the second pass: Dask reschedules its
    tasks (the scattered inputs have replicas on the other worker) and the fit ends
    with the in-memory answer."""
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers lack this module
    X = _data(800)
    params = dict(n_components=3, kernel=SlowRBF(gamma=0.1),
                  eigen_solver="krylov", random_state=0)
    # reference: the same kernel, in memory (the fast built-in RBF)
    mem = KernelPCA(**{**params, "kernel": RBF(gamma=0.1)}).fit(X)

    pids_before = set(client.run(os.getpid).values())
    victim = min(pids_before)
    killed = threading.Event()
    original = DaskKernelOperator.matmat

    def matmat(self, V):
        if self.n_passes == 1 and not killed.is_set():
            killed.set()
            threading.Timer(0.1, os.kill, (victim, signal.SIGKILL)).start()
        return original(self, V)

    monkeypatch.setattr(DaskKernelOperator, "matmat", matmat)
    monkeypatch.setattr("kpca.distributed._operator.TASK_BLOCK_BYTES", 800 * 8 * 50)
    dsk = KernelPCA(**params).fit(da.from_array(X, chunks=(400, 4)))
    assert killed.is_set()
    np.testing.assert_allclose(dsk.eigenvalues_, mem.eigenvalues_, rtol=1e-8)
    np.testing.assert_allclose(_align(dsk.eigenvectors_, mem.eigenvectors_),
                               mem.eigenvectors_, atol=1e-6)
    client.wait_for_workers(2, timeout=60)
    assert victim not in set(client.run(os.getpid).values())
