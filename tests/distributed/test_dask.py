"""Dask input on a real LocalCluster: results equal the in-memory ones, and a fit
survives one worker being killed."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
from sklearn.datasets import make_blobs

import kpca
from kpca import (
    AnovaKernelPCA,
    KernelPCA,
    NystromKernelPCA,
    RandomFeatureKernelPCA,
    SphericalKernelPCA,
    WeightedKernelPCA,
    config_context,
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

    _no_active_client(monkeypatch)
    own = get_client(n_workers=1, processes=False, dashboard_address=":0")
    try:
        assert own is not client and isinstance(own.cluster, distributed.LocalCluster)
        assert get_client() is own
        assert own.submit(sum, [1, 2, 3]).result() == 6
    finally:
        own.close()
        own.cluster.close()


def _no_active_client(monkeypatch):
    import distributed

    import kpca.distributed._client as mod

    def no_client():
        raise ValueError("No clients found")

    monkeypatch.setattr(distributed, "get_client", no_client)
    monkeypatch.setattr(mod, "_default", None)


def test_default_cluster_in_a_spawned_process_bootstrap_is_refused(client, monkeypatch):
    """A script without the ``__main__`` guard is re-imported by every spawned worker
    of the default cluster: there, get_client must say so instead of recursing."""
    import multiprocessing

    _no_active_client(monkeypatch)
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(RuntimeError, match="__main__"):
        get_client()


def test_default_cluster_failing_to_start_is_explained(client, monkeypatch):
    import distributed

    _no_active_client(monkeypatch)

    def broken(**kwargs):
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(distributed, "LocalCluster", broken)
    with pytest.raises(RuntimeError, match="could not start its default dask LocalCluster"
                                           r"(.|\n)*__main__"):
        get_client()


DEFAULT_CLUSTER_SCRIPT = """
import json, os, sys
import numpy as np
import dask.array as da
import psutil
from kpca import NystromKernelPCA
from kpca.distributed import get_client

if __name__ == "__main__":
    X = np.random.default_rng(0).normal(size=(400, 3))
    est = NystromKernelPCA(2, n_landmarks=30, gamma=0.2, random_state=0)
    Z = est.fit(da.from_array(X, chunks=(100, 3))).transform(X)
    ref = NystromKernelPCA(2, n_landmarks=30, gamma=0.2, random_state=0).fit(X)
    c = get_client()
    print(json.dumps(dict(
        processes=sorted(set(c.run(os.getpid).values())),
        children=[p.pid for p in psutil.Process().children(recursive=True)],
        cluster=type(c.cluster).__name__,
        err=float(np.max(np.abs(Z - ref.transform(X)))))))
"""


def test_default_local_cluster_runs_and_leaves_no_process(client, tmp_path):
    """What really happens with no client (a fresh interpreter, nothing patched): kpca
    starts a LocalCluster of worker processes, the fit equals the in-memory one, and
    when the script ends every process of that cluster is gone."""
    import json
    import subprocess
    import sys

    import psutil

    script = tmp_path / "fit_without_client.py"
    script.write_text(DEFAULT_CLUSTER_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cluster"] == "LocalCluster" and out["err"] < 1e-10
    assert set(out["processes"]) <= set(out["children"])  # workers ran in child processes
    assert len(out["processes"]) == min(8, kpca.get_config()["n_cores"])
    deadline = time.monotonic() + 30
    while any(psutil.pid_exists(p) for p in out["children"]):
        assert time.monotonic() < deadline, "processes of the default cluster leaked"
        time.sleep(0.2)


@pytest.mark.parametrize("make", [
    lambda: NystromKernelPCA(2, n_landmarks=20, gamma=0.1, random_state=0),
    lambda: RandomFeatureKernelPCA(2, n_features=20, gamma=0.1, random_state=0),
])
def test_approx_dask_input_is_validated(client, make):
    """Chunks are checked on the workers: NaN gives the error, not NaN scores."""
    X = _data(3000)
    bad = X.copy()
    bad[2500, 1] = np.nan  # outside the 2000-row sample the fit draws
    est = make()
    with pytest.raises(ValueError, match="NaN"):
        est.fit(da.from_array(bad, chunks=(500, 4)))
    est.fit(X[:400])
    with pytest.raises(ValueError, match="NaN"):
        est.transform(da.from_array(bad, chunks=(500, 4))).compute()
    with pytest.raises(ValueError, match="minimum of 1 sample"):
        make().fit(da.zeros((0, 4), chunks=(10, 4)))
    with pytest.raises(ValueError, match="2-D"):
        make().fit(da.from_array(X[:, 0], chunks=100))


def test_operator_matmat_equals_dense_product(client, monkeypatch):
    X = _data(300)
    kernel = RBF(gamma=0.1)
    op = DaskKernelOperator(kernel, X, client=client, block_rows=70)
    assert len(op.blocks) == 5
    V = np.random.default_rng(0).normal(size=(300, 3))
    K = np.exp(-0.1 * ((X[:, None] - X[None]) ** 2).sum(-1))  # independent K
    np.testing.assert_allclose(op.matmat(V), K @ V, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.diag(), 1.0)
    # a large V (here: any, under dask_inline_bytes=0) is broadcast once per pass
    # instead of travelling inside every task
    scattered = []
    real_scatter = client.scatter

    def scatter(data, **kwargs):
        scattered.append(kwargs.get("broadcast"))
        return real_scatter(data, **kwargs)

    monkeypatch.setattr(client, "scatter", scatter)
    np.testing.assert_allclose(op.matmat(V), K @ V, rtol=1e-10, atol=1e-10)
    assert scattered == []
    with config_context(dask_inline_bytes=0):
        np.testing.assert_allclose(op.matmat(V), K @ V, rtol=1e-10, atol=1e-10)
    assert scattered == [True]
    assert op.n_passes == 3


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


def _in_worker() -> bool:
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


class KillOnceRBF(RBF):
    """The RBF kernel, except that the first block evaluated by any Dask worker kills
    that worker's process (SIGKILL, in the middle of its task). An exclusively created
    flag file makes it happen exactly once and records the victim's pid; the client
    process (no worker) is never touched."""

    def __init__(self, gamma=None, flag=None):
        super().__init__(gamma=gamma)
        self.flag = flag

    def block_prepared(self, X, prep, out=None):
        if self.flag is not None and _in_worker():
            try:
                fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        return super().block_prepared(X, prep, out)


@pytest.mark.parametrize("case", ["exact", "nystrom"])
def test_fit_survives_a_killed_worker(client, tmp_path, case):
    """A worker process is killed while it computes its first block of the fit (exact
    KPCA: a K @ V task of the first pass; Nyström: a chunk's statistics): Dask
    reschedules the lost task on the other worker (the scattered inputs have a replica
    there; the chunks are recomputed) and the fit ends with the in-memory answer."""
    import sys

    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers lack this module
    flag = tmp_path / "victim.pid"
    X = _data(800)
    if case == "exact":
        def make(kernel):
            return KernelPCA(3, kernel=kernel, eigen_solver="krylov", random_state=0)
        chunks = (400, 4)
    else:
        def make(kernel):
            return NystromKernelPCA(3, n_landmarks=60, kernel=kernel, random_state=0)
        chunks = (100, 4)
    pids_before = _worker_pids(client, 2)
    mem = make(RBF(gamma=0.1)).fit(X)
    dsk = make(KillOnceRBF(gamma=0.1, flag=str(flag))).fit(da.from_array(X, chunks=chunks))
    victim = int(flag.read_text())  # the kill did happen, inside a worker of the cluster
    assert victim in pids_before
    np.testing.assert_allclose(dsk.eigenvalues_, mem.eigenvalues_, rtol=1e-8)
    Zm = mem.transform(X)
    np.testing.assert_allclose(_align(dsk.transform(X), Zm), Zm, atol=1e-6 * np.abs(Zm).max())
    # the nanny restarts the victim: later tests get 2 workers again
    assert victim not in _worker_pids(client, 2)


def _worker_pids(client, n: int, timeout: float = 120.0) -> set[int]:
    """Process ids of the workers, once ``n`` of them answer (a restarted worker may
    still be registering, or a dead one not yet removed, right after a kill)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pids = set(client.run(os.getpid, on_error="ignore").values())
        except OSError:  # a worker closing while being asked
            pids = set()
        if len(pids) >= n:
            return pids
        assert time.monotonic() < deadline, f"only {len(pids)} of {n} workers came back"
        time.sleep(0.2)
