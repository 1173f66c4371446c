"""Accuracy vs cost of the approximate kernel PCAs against exact KPCA.

n = 20,000 training rows (RBF, d = 20, k = 10) and 2,000 held-out rows. For
m landmarks / D features in {250, 500, 1000, 2000}, reports the top-10
eigenvalue error (max relative error against exact KPCA's ``eigenvalues_``)
and the alignment of the held-out scores with exact KPCA's (mean canonical
correlation between the two 10-dimensional score spaces), plus fit+transform
time, for kpca's Nyström (uniform, k-means, leverage landmarks) and random
features, and scikit-learn's Nystroem+PCA and RBFSampler+PCA pipelines
(eigenvalues of those: ``PCA.explained_variance_ * (n - 1)``).

With ``--error-table``: the error estimate of the approximate models
(``estimate_error``, on the default 1,000-row exact sub-problem) against the true
error, from a dense exact kernel PCA of all the rows (SciPy ``eigh`` of H K H), on
three datasets (8 Gaussian blobs in 10-d, n = 3,000; digits, n = 1,797; noisy
circles, n = 3,000) and three landmark counts each, for Nyström (uniform landmarks)
and random features; k = 5. Columns: max relative eigenvalue error and sine of the
largest principal angle between the score spaces, estimated / true, and the
medians of 3 timings of the fit and of the estimate.

Usage: python benchmarks/bench_approx.py [--n 20000] [--sizes 250 500 1000 2000]
       python benchmarks/bench_approx.py --error-table
Prints markdown tables.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.decomposition import PCA
from sklearn.kernel_approximation import Nystroem, RBFSampler
from sklearn.pipeline import make_pipeline

from kpca import KernelPCA, NystromKernelPCA, RandomFeatureKernelPCA
from kpca.kernels import resolve_gamma

logger = logging.getLogger("bench_approx")


def alignment(A: np.ndarray, B: np.ndarray) -> float:
    """Mean canonical correlation between the column spaces of two score matrices."""
    Qa, _ = np.linalg.qr(A - A.mean(0))
    Qb, _ = np.linalg.qr(B - B.mean(0))
    return float(np.linalg.svd(Qa.T @ Qb, compute_uv=False).mean())


def data(n: int, n_test: int, d: int, seed: int = 0):
    X, _ = make_blobs(n + n_test, n_features=d, centers=20, cluster_std=3.0, random_state=seed)
    return X[:n], X[n:]


def run(n: int, n_test: int, d: int, k: int, sizes: list[int]) -> None:
    X, T = data(n, n_test, d)
    gamma = resolve_gamma("scale", X)
    t0 = time.perf_counter()
    exact = KernelPCA(k, kernel="rbf", gamma=gamma, random_state=0).fit(X)
    Te = exact.transform(T)
    t_exact = time.perf_counter() - t0
    mu = exact.eigenvalues_
    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, load average at start "
          f"{os.getloadavg()[0]:.1f}")
    print(f"n={n}, held-out={n_test}, d={d}, k={k}, RBF gamma={gamma:.4g} (1 / (d Var X))")
    print(f"exact KernelPCA (solver {exact.eigen_solver_}): fit+transform {t_exact:.1f} s; "
          f"top-{k} eigenvalues {np.round(mu, 1).tolist()}\n")

    methods = {
        "kpca Nystrom uniform": lambda m: NystromKernelPCA(
            k, n_landmarks=m, landmarks="uniform", gamma=gamma, random_state=0),
        "kpca Nystrom kmeans": lambda m: NystromKernelPCA(
            k, n_landmarks=m, landmarks="kmeans", gamma=gamma, random_state=0),
        "kpca Nystrom leverage": lambda m: NystromKernelPCA(
            k, n_landmarks=m, landmarks="leverage", gamma=gamma, random_state=0),
        "kpca RandomFeature": lambda m: RandomFeatureKernelPCA(
            k, n_features=m, gamma=gamma, random_state=0),
        "sklearn Nystroem+PCA": lambda m: make_pipeline(
            Nystroem(gamma=gamma, n_components=m, random_state=0), PCA(k, random_state=0)),
        "sklearn RBFSampler+PCA": lambda m: make_pipeline(
            RBFSampler(gamma=gamma, n_components=m, random_state=0), PCA(k, random_state=0)),
    }
    print("| method | m or D | max rel. eigenvalue error (top-10) | held-out alignment "
          "(mean canon. corr.) | fit+transform (s) |")
    print("|---|---:|---:|---:|---:|")
    for name, make in methods.items():
        for m in sizes:
            est = make(m)
            t0 = time.perf_counter()
            est.fit(X)
            Ta = est.transform(T)
            dt = time.perf_counter() - t0
            if hasattr(est, "eigenvalues_"):
                ev = est.eigenvalues_
            else:
                ev = est[-1].explained_variance_ * (n - 1)
            err = float(np.max(np.abs(ev[:k] - mu) / mu))
            print(f"| {name} | {m} | {err:.2%} | {alignment(Ta, Te):.4f} | {dt:.2f} |",
                  flush=True)


def _error_data(name: str):
    from sklearn.datasets import load_digits, make_circles

    if name == "blobs":
        X, _ = make_blobs(3000, n_features=10, centers=8, cluster_std=2.0, random_state=0)
        return X, 1.0 / (X.shape[1] * X.var()), (25, 50, 100)
    if name == "digits":
        X = load_digits().data / 16.0
        return X, 1.0 / (X.shape[1] * X.var()), (50, 100, 200)
    X, _ = make_circles(3000, factor=0.3, noise=0.1, random_state=0)
    return X, 2.0, (20, 50, 100)


def _median_time(fn, repeat: int = 3):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def error_table(k: int = 5) -> None:
    """Estimated vs true distance from exact KPCA (see the module docstring)."""
    from scipy.linalg import eigh, subspace_angles
    from sklearn.metrics.pairwise import rbf_kernel

    print(f"\nmachine: {platform.machine()}, {os.cpu_count()} cores, load average at start "
          f"{os.getloadavg()[0]:.1f}; k={k}, estimate on 1,000 rows (approx_error_rows)\n")
    print("| data (n) | method | m or D | eigenvalue error: est. | true | est./true "
          "| subspace sin: est. | true | est./true | fit (s) | estimate (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("blobs", "digits", "circles"):
        X, gamma, counts = _error_data(name)
        n = X.shape[0]
        H = np.eye(n) - 1.0 / n
        mu, V = eigh(H @ rbf_kernel(X, gamma=gamma) @ H, subset_by_index=[n - k, n - 1])
        mu, V = mu[::-1], V[:, ::-1]
        for method, sizes in (("Nystrom", counts), ("RandomFeature", (50, 200, 800))):
            for m in sizes:
                if method == "Nystrom":
                    est = NystromKernelPCA(k, n_landmarks=m, gamma=gamma, random_state=0)
                else:
                    est = RandomFeatureKernelPCA(k, n_features=m, gamma=gamma, random_state=0)
                _, t_fit = _median_time(lambda est=est, X=X: est.fit(X))
                e, t_est = _median_time(lambda est=est, X=X: est.estimate_error(X))
                te = float(np.max(np.abs(est.eigenvalues_ - mu) / mu))
                ts = float(np.sin(subspace_angles(est.transform(X), V)).max())
                print(f"| {name} ({n}) | {method} | {m} | {e.max_eigenvalue_error:.2e} | "
                      f"{te:.2e} | {e.max_eigenvalue_error / te:.2f} | "
                      f"{e.max_subspace_sin:.2e} | {ts:.2e} | {e.max_subspace_sin / ts:.2f} | "
                      f"{t_fit:.2f} | {t_est:.2f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--n-test", type=int, default=2000)
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    p.add_argument("--error-table", action="store_true",
                   help="the error estimate against exact KPCA (3 datasets x 3 counts)")
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if a.error_table:
        error_table()
        return
    run(a.n, a.n_test, a.d, a.k, a.sizes)


if __name__ == "__main__":
    main()
