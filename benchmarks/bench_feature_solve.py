"""Fit time of the feature-map estimators over a grid (the covariance eigensolve of
``kpca.approx._feature_pca.solve``), for before/after comparisons of that step.

Times ``NystromKernelPCA`` (uniform landmarks) and ``RandomFeatureKernelPCA`` fits on
make_blobs data (d = 20, RBF) for every (n, m or D, k) of the grid; prints the median
of ``--repeats`` fits and the top eigenvalue, one row per cell, as a markdown table.
Run it from two trees (e.g. ``PYTHONPATH=<old checkout>/src``) to compare.

Usage: python benchmarks/bench_feature_solve.py [--n 2000 20000] [--m 250 500 1000 2000]
       [--k 10 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from sklearn.datasets import make_blobs

import kpca
from kpca import NystromKernelPCA, RandomFeatureKernelPCA


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[2000, 20000])
    p.add_argument("--m", type=int, nargs="+", default=[250, 500, 1000, 2000])
    p.add_argument("--k", type=int, nargs="+", default=[10, 64])
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    print(f"kpca from {os.path.dirname(kpca.__file__)}; machine {platform.machine()}, "
          f"{os.cpu_count()} cpus; load average {os.getloadavg()[0]:.2f}\n")
    print("| estimator | n | m or D | k | fit (s), median | top eigenvalue |")
    print("|---|---|---|---|---|---|")
    for n in a.n:
        X, _ = make_blobs(n, n_features=20, centers=20, cluster_std=3.0, random_state=0)
        gamma = 1.0 / (20 * X.var())
        for m in a.m:
            for k in a.k:
                for name, est in [
                    ("nystrom", NystromKernelPCA(k, n_landmarks=m, gamma=gamma,
                                                 random_state=0)),
                    ("random-features", RandomFeatureKernelPCA(k, n_features=m, gamma=gamma,
                                                               random_state=0)),
                ]:
                    times = []
                    for _ in range(a.repeats):
                        t = time.perf_counter()
                        est.fit(X)
                        times.append(time.perf_counter() - t)
                    print(f"| {name} | {n} | {m} | {k} | {np.median(times):.3f} | "
                          f"{est.eigenvalues_[0]:.10g} |")


if __name__ == "__main__":
    main()
