"""Dask: the same fits on a LocalCluster of 1 and 2 worker processes vs in-process.

* exact ``KernelPCA`` (block Krylov, matrix-free ``K~ @ V`` distributed over row
  blocks by :class:`kpca.distributed.DaskKernelOperator`), n = 6,000, d = 20, k = 10;
* ``NystromKernelPCA`` (m = 500) fit + transform of n = 200,000 rows in 8 chunks.

Reports wall times and the largest difference from the in-process result (1 thread
per worker; the in-process fit uses all cores). The Nyström input is persisted on the
workers before timing (data live on the cluster); the exact fit gathers X (n x d) to
the client and scatters it to every worker inside the timed fit.

Usage: python benchmarks/bench_dask.py [--n-exact 6000] [--n-nystrom 200000]
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time

import numpy as np
from sklearn.datasets import make_blobs

from kpca import KernelPCA, NystromKernelPCA


def main() -> None:
    import dask.array as da
    import distributed
    from distributed import Client, LocalCluster

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-exact", type=int, default=6000)
    p.add_argument("--n-nystrom", type=int, default=200_000)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    X, _ = make_blobs(a.n_nystrom, n_features=20, centers=20, cluster_std=3.0, random_state=0)
    Xe = X[: a.n_exact]
    exact = dict(n_components=10, kernel="rbf", gamma="scale", eigen_solver="krylov",
                 random_state=0)
    nys = dict(n_components=10, n_landmarks=500, gamma="scale", random_state=0)

    rows = []
    t0 = time.perf_counter()
    ref_e = KernelPCA(**exact).fit(Xe)
    rows.append(("in-process", "KernelPCA exact", a.n_exact, time.perf_counter() - t0, 0.0))
    t0 = time.perf_counter()
    ref_n = NystromKernelPCA(**nys).fit(X)
    Zn = ref_n.transform(X)
    rows.append(("in-process", "NystromKernelPCA fit+transform", a.n_nystrom,
                 time.perf_counter() - t0, 0.0))
    for w in a.workers:
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.run(lambda: __import__("kpca"))  # warm the workers' imports
            Xd = da.from_array(Xe, chunks=(a.n_exact // 4, 20))
            t0 = time.perf_counter()
            est = KernelPCA(**exact).fit(Xd)
            dt = time.perf_counter() - t0
            err = float(np.max(np.abs(est.eigenvalues_ - ref_e.eigenvalues_))
                        / ref_e.eigenvalues_[0])
            rows.append((f"LocalCluster {w} worker(s)", "KernelPCA exact", a.n_exact, dt, err))
            # the data live on the workers before the clock starts (as on a real cluster)
            Xd = client.persist(da.from_array(X, chunks=(a.n_nystrom // 8, 20)))
            client.wait_for_workers(w)
            distributed.wait(Xd)
            t0 = time.perf_counter()
            est = NystromKernelPCA(**nys).fit(Xd)
            Z = est.transform(Xd).compute()
            dt = time.perf_counter() - t0
            err = float(np.max(np.abs(Z - Zn)) / np.max(np.abs(Zn)))
            rows.append((f"LocalCluster {w} worker(s)", "NystromKernelPCA fit+transform",
                         a.n_nystrom, dt, err))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; load average at end "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| where | what | n | wall time (s) | max rel. difference from in-process |")
    print("|---|---|---:|---:|---:|")
    for where, what, n, dt, err in rows:
        print(f"| {where} | {what} | {n} | {dt:.1f} | {err:.1e} |")


if __name__ == "__main__":
    main()
