"""The robust estimators on a GPU (PyTorch tensors) against the same fits on NumPy.

SphericalKernelPCA, WeightedKernelPCA and KernelROBPCA (issue 35, item 4): RBF kernel,
d = 20 Gaussian features in float32 with 5 % outliers (a cluster shifted by 8 along
the last feature), k = 10, gamma = 1/d, default robust parameters, random_state 0.
For each n, each estimator is fitted on a tensor of --device (the kernel matrix
stored on the device when it takes at most a quarter of its free memory, else
recomputed in every pass) and the script prints the fit time (median of --repeats),
the kernel passes (kpca's 'pass' log events) and the peak device memory. Up to
--compare-max rows it also fits the same float32 values as NumPy arrays (the host
path, every core) once, and prints that time, the device's speed-up, the largest
eigenvalue difference relative to the largest eigenvalue and whether the training
outlier flags agree.

    python benchmarks/bench_gpu_robust.py --device cuda --n 20000 100000 --compare-max 20000
    python benchmarks/bench_gpu_robust.py --device cpu --n 2000 --compare-max 2000  # CI-sized
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
from bench_gpu import as_input, sync, timed

import kpca

D, K = 20, 10
ESTIMATORS = {
    "SphericalKernelPCA": kpca.SphericalKernelPCA,
    "WeightedKernelPCA": kpca.WeightedKernelPCA,
    "KernelROBPCA": kpca.KernelROBPCA,
}


def data(n: int, seed: int = 0) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32)
    X[: n // 20, -1] += 8.0  # 5 % outliers: a cluster away from the bulk
    return X


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:1 or cpu (torch)")
    ap.add_argument("--n", type=int, nargs="*", default=[20000, 100000])
    ap.add_argument("--estimators", nargs="*", default=list(ESTIMATORS),
                    choices=list(ESTIMATORS))
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--compare-max", type=int, default=20000,
                    help="largest n also fitted on NumPy arrays (the host path)")
    ap.add_argument("--memory-limit", default=None, help="e.g. 40GB (default: half free)")
    ap.add_argument("--json", help="also write the rows to this JSON-lines file")
    args = ap.parse_args()
    print(f"# kpca {kpca.__version__}, {platform.machine()}, device {args.device}")
    print("| estimator | n | device fit (s) | passes | peak device memory (GB) | "
          "NumPy fit (s) | speed-up | eigenvalue difference | same outlier flags |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for n in args.n:
        X = data(n)
        Xd = as_input(X, args.device)
        for name in args.estimators:
            kw = dict(n_components=K, kernel="rbf", gamma=1.0 / D, random_state=0,
                      memory_limit=args.memory_limit)
            make = lambda kw=kw, cls=ESTIMATORS[name]: cls(**kw)  # noqa: E731
            model, t, mem, widths = timed(make, Xd, args.device, args.repeats)
            row = dict(estimator=name, n=n, seconds=t, passes=len(widths), peak_bytes=mem,
                       device=args.device)
            host, ratio, diff, same = "-", "-", "-", "-"
            if n <= args.compare_max:
                sync(args.device)
                t0 = time.perf_counter()
                ref = make().fit(X)
                t_host = time.perf_counter() - t0
                d = float(np.max(np.abs(model.eigenvalues_.astype(np.float64)
                                        - ref.eigenvalues_)) / ref.eigenvalues_[0])
                flags = bool(np.array_equal(model.outliers(), ref.outliers()))
                row.update(numpy_seconds=t_host, eigenvalue_difference=d, same_flags=flags)
                host, ratio = f"{t_host:.2f}", f"{t_host / t:.1f}x"
                diff, same = f"{d:.1e}", "yes" if flags else "no"
            rows.append(row)
            print(f"| {name} | {n} | {t:.2f} | {len(widths)} | {mem / 1e9:.2f} | {host} | "
                  f"{ratio} | {diff} | {same} |", flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
