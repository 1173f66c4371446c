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

AnovaKernelPCA (``--estimators AnovaKernelPCA``, not in the default list) is fitted on
its own data, the seed example of docs/robust.md widened to d = 20 (x1, x2 two nested
circles, the other 18 variables N(0, 3.5^2) noise; float32), gamma = 1, k = 10 and a
fixed number of weight updates (--beta-iter, default 5: the time of a fit is that of
its iterations, each a decomposition and the p per-variable terms); after its row a
comment line gives the iterations and the largest difference between the device's and
the NumPy fit's kernel weights ``beta_``.

    python benchmarks/bench_gpu_robust.py --device cuda --n 20000 100000 --compare-max 20000
    python benchmarks/bench_gpu_robust.py --device cpu --n 2000 --compare-max 2000  # CI-sized
    python benchmarks/bench_gpu_robust.py --device cuda --estimators AnovaKernelPCA \
        --n 5000 20000 --compare-max 5000                                 # ANOVA, < 60 s
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings

import numpy as np
from bench_gpu import as_input, sync, timed
from sklearn.datasets import make_circles
from sklearn.exceptions import ConvergenceWarning

import kpca

D, K = 20, 10
ESTIMATORS = {
    "SphericalKernelPCA": kpca.SphericalKernelPCA,
    "WeightedKernelPCA": kpca.WeightedKernelPCA,
    "KernelROBPCA": kpca.KernelROBPCA,
    "AnovaKernelPCA": kpca.AnovaKernelPCA,
}
DEFAULT = ["SphericalKernelPCA", "WeightedKernelPCA", "KernelROBPCA"]


def data(n: int, seed: int = 0) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32)
    X[: n // 20, -1] += 8.0  # 5 % outliers: a cluster away from the bulk
    return X


def anova_data(n: int, seed: int = 0) -> np.ndarray:
    """x1, x2 two nested circles, x3..x20 N(0, 3.5^2) noise (docs/robust.md)."""
    X2, _ = make_circles(n, factor=0.3, noise=0.05, random_state=seed)
    noise = np.random.default_rng(seed).normal(scale=3.5, size=(n, D - 2))
    return np.hstack([X2, noise]).astype(np.float32)


def params(name: str, args: argparse.Namespace) -> dict:
    if name == "AnovaKernelPCA":  # its own kernel: per-variable RBF terms, gamma 1
        return dict(n_components=K, gamma=1.0, beta_max_iter=args.beta_iter,
                    random_state=0, memory_limit=args.memory_limit)
    return dict(n_components=K, kernel="rbf", gamma=1.0 / D, random_state=0,
                memory_limit=args.memory_limit)


def time_terms(model, Xd, device: str) -> float:
    """Seconds of one evaluation of the weight update's per-variable terms (the fitted
    eigenvectors, the fit's budget) on the arrays' device."""
    from kpca._array_api import device_namespace
    from kpca.robust._anova import device_variable_terms

    if device_namespace(Xd) is None:
        return float("nan")
    V = np.asarray(model.eigenvectors_, dtype=np.float64)
    V = V - V.mean(axis=0)
    sync(device)
    t0 = time.perf_counter()
    device_variable_terms(Xd, V, model.gamma_, device_namespace(Xd), model.fit_plan_.budget)
    sync(device)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:1 or cpu (torch)")
    ap.add_argument("--n", type=int, nargs="*", default=[20000, 100000])
    ap.add_argument("--estimators", nargs="*", default=DEFAULT, choices=list(ESTIMATORS))
    ap.add_argument("--beta-iter", type=int, default=5,
                    help="AnovaKernelPCA's weight updates (beta_max_iter)")
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
    # AnovaKernelPCA runs a fixed number of weight updates: not converging is expected
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    for n in args.n:
        for name in args.estimators:
            X = (anova_data if name == "AnovaKernelPCA" else data)(n)
            Xd = as_input(X, args.device)
            kw = params(name, args)
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
            if name == "AnovaKernelPCA":
                beta = "" if n > args.compare_max else (
                    f", largest |beta_ difference| "
                    f"{float(np.max(np.abs(model.beta_ - ref.beta_))):.1e}")
                terms = time_terms(model, Xd, args.device)
                row.update(n_iter=model.n_iter_, beta=model.beta_.tolist(),
                           terms_seconds=terms)
                print(f"# AnovaKernelPCA n={n}: {model.n_iter_} weight updates, "
                      f"{t / model.n_iter_:.3f} s each on the device, of which the "
                      f"per-variable terms {terms:.3f} s; share of beta^2 on x1, x2 "
                      f"{float(np.sum(model.beta_[:2] ** 2)):.3f}{beta}", flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
