"""Dense solver: time and peak memory of a dense fit, kpca against scikit-learn.

kpca's dense solver hands LAPACK the (owned) centred kernel matrix in Fortran order,
so it is decomposed in place; a C-ordered matrix would be copied. Each library runs in
its own process (peak RSS of the process is the measure); digits stacked with a
jittered copy to 3,000 rows, RBF gamma = 1e-3, three fits, median time.

    python benchmarks/bench_dense_memory.py --k 64 --which kpca
    python benchmarks/bench_dense_memory.py --k 64 --which sklearn
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SkKernelPCA

import kpca


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--which", choices=["kpca", "sklearn"], default="kpca")
    args = p.parse_args()
    X = load_digits().data
    X = np.vstack([X, X + 0.01 * np.random.default_rng(0).normal(size=X.shape)])[: args.n]
    cls = kpca.KernelPCA if args.which == "kpca" else SkKernelPCA
    times = []
    for _ in range(3):
        t = time.perf_counter()
        cls(args.k, kernel="rbf", gamma=1e-3, eigen_solver="dense").fit(X)
        times.append(time.perf_counter() - t)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{args.which} n={args.n} k={args.k}: median {statistics.median(times):.3f} s, "
          f"peak RSS {peak} MB")


if __name__ == "__main__":
    main()
