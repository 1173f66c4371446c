"""IncrementalKernelPCA updates on a device against NumPy, side by side (issue 35, item 4).

Two streams of the same rows (RBF, d = 20, k = 10, 20 Gaussian blobs, gamma =
1 / (d Var X) of the first rows) are fitted by ``IncrementalKernelPCA``, one from NumPy
arrays (the host path) and one from PyTorch tensors on ``--device`` (or CuPy arrays,
``--xp cupy``), batch for batch, alternating which goes first:

1. **exact mode**: ``fit`` on ``--n`` rows, then ``--updates`` ``partial_fit`` batches of
   ``--batch`` rows; each side's wall time per call, the median over the updates, their
   ratio (NumPy / device), the passes of each update and the largest eigenvalue
   difference of the two models relative to the largest eigenvalue.
2. **bounded mode** (``--landmarks`` landmarks; skipped with ``--skip-bounded``): a
   model of ``--n`` rows, then ``--updates`` batches of ``--bounded-batch`` rows, timed
   the same way.

Wall-clock times (the device calls return after their results reach the host, which
waits for the device). One warm-up fit on each side first (CUDA context, kernels).
Runs in well under a minute on one H100 with the defaults.

Usage (from the repository root, kpca built there):
    PYTHONPATH=src python3 benchmarks/bench_gpu_incremental.py [--device cuda] [--xp torch|cupy]
        [--n 20000] [--batch 1000] [--updates 5] [--landmarks 1000]
        [--bounded-batch 5000] [--dtype float32|float64] [--skip-bounded]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from sklearn.datasets import make_blobs

from kpca import IncrementalKernelPCA

D, K = 20, 10


def to_device(A: np.ndarray, xp: str, device: str):
    if xp == "cupy":
        import cupy

        return cupy.asarray(A)
    import torch

    return torch.asarray(np.ascontiguousarray(A), device=device)


def sync(xp: str) -> None:
    if xp == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()
        return
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(f, xp: str) -> float:
    sync(xp)
    t = time.perf_counter()
    f()
    sync(xp)
    return time.perf_counter() - t


def describe(xp: str, device: str) -> str:
    parts = [f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"]
    if xp == "cupy":
        import cupy

        parts.append(f"cupy {cupy.__version__}, "
                     f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    else:
        import torch

        parts.append(f"torch {torch.__version__}")
        if device.startswith("cuda"):
            parts.append(torch.cuda.get_device_name(torch.device(device)))
    return "; ".join(parts)


def stream(label: str, make, X: np.ndarray, n: int, batch: int, updates: int, xp: str,
           device: str) -> None:
    """Fit ``n`` rows on each side, then ``updates`` batches; print the table."""
    host, dev = make(), make()
    # the fit (NumPy first: the device fit's rows are copied to the device before)
    t_fit_h = timed(lambda: host.fit(X[:n]), xp)
    Xd = to_device(X[:n], xp, device)
    t_fit_d = timed(lambda: dev.fit(Xd), xp)
    print(f"\n{label}: fit of {n} rows: NumPy {t_fit_h:.3f} s, device {t_fit_d:.3f} s, "
          f"NumPy / device {t_fit_h / t_fit_d:.2f}")
    print(f"{'rows seen':>10} {'NumPy s':>9} {'device s':>9} {'ratio':>7} {'passes':>7} "
          f"{'eig diff':>9}")
    th, td = [], []
    for i in range(updates):
        s, e = n + i * batch, n + (i + 1) * batch
        Bd = to_device(X[s:e], xp, device)
        sync(xp)
        if i % 2:  # alternate which side goes first
            td.append(timed(lambda Bd=Bd: dev.partial_fit(Bd), xp))
            th.append(timed(lambda s=s, e=e: host.partial_fit(X[s:e]), xp))
        else:
            th.append(timed(lambda s=s, e=e: host.partial_fit(X[s:e]), xp))
            td.append(timed(lambda Bd=Bd: dev.partial_fit(Bd), xp))
        diff = float(np.max(np.abs(np.asarray(host.eigenvalues_, np.float64)
                                   - np.asarray(dev.eigenvalues_, np.float64)))
                     / float(host.eigenvalues_[0]))
        passes = f"{host.n_passes_}/{dev.n_passes_}"
        print(f"{e:>10} {th[-1]:>9.4f} {td[-1]:>9.4f} {th[-1] / td[-1]:>7.2f} {passes:>7} "
              f"{diff:>9.1e}")
    mh, md = statistics.median(th), statistics.median(td)
    print(f"{label}: median update of {batch} rows: NumPy {mh:.4f} s, device {md:.4f} s, "
          f"NumPy / device {mh / md:.2f} (mode {dev.mode_})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda")
    p.add_argument("--xp", choices=["torch", "cupy"], default="torch")
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--updates", type=int, default=5)
    p.add_argument("--landmarks", type=int, default=1000)
    p.add_argument("--bounded-batch", type=int, default=5000)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--skip-bounded", action="store_true")
    args = p.parse_args()
    total = args.n + args.updates * max(args.batch, args.bounded_batch)
    X, _ = make_blobs(total, n_features=D, centers=20, cluster_std=3.0, random_state=0)
    X = X.astype(args.dtype)
    gamma = 1.0 / (D * float(X[:500].var()))
    print(describe(args.xp, args.device))
    print(f"RBF, d = {D}, k = {K}, gamma = {gamma:.4g}, {args.dtype} rows; wall-clock seconds")
    # warm-up: CUDA context, kernels, BLAS threads
    warm = X[:2000]
    IncrementalKernelPCA(K, gamma=gamma).fit(warm).partial_fit(X[2000:2200])
    IncrementalKernelPCA(K, gamma=gamma).fit(to_device(warm, args.xp, args.device)).partial_fit(
        to_device(X[2000:2200], args.xp, args.device))
    stream("exact", lambda: IncrementalKernelPCA(K, gamma=gamma), X, args.n, args.batch,
           args.updates, args.xp, args.device)
    if not args.skip_bounded:
        stream(f"bounded ({args.landmarks} landmarks)",
               lambda: IncrementalKernelPCA(K, gamma=gamma, mode="bounded",
                                            max_rows=args.landmarks, random_state=0,
                                            batch_size=args.bounded_batch),
               X, args.n, args.bounded_batch, args.updates, args.xp, args.device)


if __name__ == "__main__":
    main()
