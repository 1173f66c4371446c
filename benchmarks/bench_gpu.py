"""Exact and Nyström kernel PCA on a GPU (PyTorch tensors) against the CPU (NumPy).

RBF kernel, d = 20 Gaussian features, k = 10, gamma = 1/d. For each n the script fits
``kpca.KernelPCA`` on a tensor of --device (matrix-free when the kernel matrix does not
fit the device budget) and reports the fit time (median of --repeats), the peak device
memory (``torch.cuda.max_memory_allocated``; peak RSS growth on the CPU), the kernel
passes the fit made (from kpca's 'pass' log events; the construction pass, which
makes the row sums and the start block's product, included) and the
eigenvalue error relative to the largest, against a float64 fit with tol=1e-12 on the
same device (for n up to --ref-max). Above --ref-max the reference is one float64
product ``K V`` with the fitted eigenvectors: the error is the largest difference
between an eigenvalue and its float64 Rayleigh quotient, with the largest float64
residual ``||K~ v - rho v||`` (both relative to the largest eigenvalue) beside it.
--nystrom adds ``NystromKernelPCA`` fits (1,000 landmarks) of that many rows.
``--device numpy`` runs the same fits on NumPy arrays: the CPU comparison column.

    python benchmarks/bench_gpu.py --device cuda --n 20000 100000 1000000 --nystrom 10000000
    python benchmarks/bench_gpu.py --device numpy --n 20000 100000      # CPU column
    python benchmarks/bench_gpu.py --device cpu --n 5000                # torch CPU tensors
    python benchmarks/bench_gpu.py --device cuda --n 100000 1000000 --ref-max 0 \
        --check-max 100000                                              # issue 35, ~1 min
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import resource
import statistics
import time

import numpy as np

import kpca

D, K = 20, 10


def data(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, D)).astype(np.float32)


def as_input(X: np.ndarray, device: str):
    if device == "numpy":
        return X
    import torch

    return torch.asarray(X, device=device)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def reset_peak(device: str) -> float:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats()
        return 0.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0


def peak(device: str, base: float) -> float:
    if device.startswith("cuda"):
        import torch

        return float(torch.cuda.max_memory_allocated())
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0 - base


class PassCounter(logging.Handler):
    """The widths (columns) of kpca's kernel passes, from its 'pass' log events."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.widths: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "kpca_event", None) == "pass":
            self.widths.append(int(record.args[1]))


def timed(make, X, device: str, repeats: int):
    """The last fit, the median fit time, the peak memory and the last fit's pass
    widths."""
    times, model, mem = [], None, 0.0
    log = logging.getLogger("kpca")
    level = log.level
    log.setLevel(logging.INFO)
    try:
        for _ in range(repeats):
            passes = PassCounter()
            log.addHandler(passes)
            base = reset_peak(device)
            sync(device)
            t = time.perf_counter()
            model = make().fit(X)
            sync(device)
            times.append(time.perf_counter() - t)
            log.removeHandler(passes)
            mem = max(mem, peak(device, base))
    finally:
        log.setLevel(level)
    return model, statistics.median(times), mem, passes.widths


def rayleigh_check(model, X: np.ndarray, device: str) -> tuple[float, float]:
    """Largest |eigenvalue - float64 Rayleigh quotient| and float64 residual, relative to
    the largest eigenvalue, from one float64 product ``K V`` on the device.

    The product runs through the tiles (float64 kernel values written and multiplied),
    whatever ``device_rbf_product`` the fit used. For a unit ``v`` orthogonal to the
    ones vector (every centred eigenvector is), ``K~ v = H K v`` with ``H`` the
    centring projection: so one uncentred product serves.
    """
    from kpca._array_api import device_namespace
    from kpca.kernels import device_block_product

    Xd = as_input(X.astype(np.float64), device)
    xp = device_namespace(Xd)
    V = model.eigenvectors_.astype(np.float64)
    V = V - V.mean(axis=0)
    V /= np.linalg.norm(V, axis=0)
    n = X.shape[0]
    rows = max(1, 2**30 // (8 * n))  # float64 tiles of about 1 GB (plus temporaries)
    with kpca.config_context(device_rbf_product="tiles"):  # independent of the fused paths
        W = np.asarray(device_block_product(model.kernel_, Xd, Xd, as_input(V, device), xp,
                                            rows).cpu(), dtype=np.float64)
    W -= W.mean(axis=0)
    rho = np.sum(V * W, axis=0)
    res = np.linalg.norm(W - V * rho, axis=0)
    lam = model.eigenvalues_.astype(np.float64)
    return float(np.max(np.abs(lam - rho)) / lam[0]), float(np.max(res) / lam[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda, cuda:1, cpu (torch) or numpy")
    ap.add_argument("--n", type=int, nargs="*", default=[20000, 100000, 1000000])
    ap.add_argument("--nystrom", type=int, nargs="*", default=[])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-max", type=int, default=100000,
                    help="largest n with a float64 reference fit")
    ap.add_argument("--check-max", type=int, default=None,
                    help="largest n with the float64 Rayleigh-quotient check above --ref-max "
                         "(default: every n; at 1,000,000 rows it takes about as long as "
                         "the fit)")
    ap.add_argument("--memory-limit", default=None, help="e.g. 40GB (default: half free)")
    ap.add_argument("--json", help="also write the rows to this JSON-lines file")
    args = ap.parse_args()
    print(f"# kpca {kpca.__version__}, {platform.machine()}, device {args.device}")
    print("| estimator | n | fit (s) | peak memory (GB) | eigenvalue error | solver | passes |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for n in args.n:
        X = as_input(data(n), args.device)
        kw = dict(n_components=K, kernel="rbf", gamma=1.0 / D, random_state=0,
                  memory_limit=args.memory_limit)
        model, t, mem, widths = timed(lambda kw=kw: kpca.KernelPCA(**kw), X, args.device,
                                      args.repeats if n <= 100000 else 1)
        err = float("nan")
        if n <= args.ref_max:
            ref = kpca.KernelPCA(**kw, precision="float64", eigen_solver="krylov",
                                 tol=1e-12).fit(as_input(data(n).astype(np.float64),
                                                         args.device))
            err = float(np.max(np.abs(model.eigenvalues_ - ref.eigenvalues_))
                        / ref.eigenvalues_[0])
        elif args.device != "numpy" and (args.check_max is None or n <= args.check_max):
            err, res = rayleigh_check(model, data(n), args.device)
            print(f"# n={n}: float64 Rayleigh quotients within {err:.1e}, residuals "
                  f"{res:.1e} (relative to the largest eigenvalue)", flush=True)
        rows.append(dict(estimator="KernelPCA", n=n, seconds=t, peak_bytes=mem, error=err,
                         solver=model.eigen_solver_, device=args.device, pass_widths=widths))
        print(f"| KernelPCA | {n} | {t:.2f} | {mem / 1e9:.2f} | {err:.1e} | "
              f"{model.eigen_solver_} | {len(widths)} {widths} |", flush=True)
    for n in args.nystrom:
        X = as_input(data(n), args.device)
        make = lambda: kpca.NystromKernelPCA(K, n_landmarks=1000, gamma=1.0 / D,  # noqa: E731
                                             random_state=0)
        model, t, mem, widths = timed(make, X, args.device, 1)
        rows.append(dict(estimator="NystromKernelPCA", n=n, seconds=t, peak_bytes=mem,
                         device=args.device))
        print(f"| NystromKernelPCA (1,000 landmarks) | {n} | {t:.2f} | {mem / 1e9:.2f} | - "
              "| - | - |", flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
