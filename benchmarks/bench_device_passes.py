"""Passes of a device fit against the host fit of the same problem (issues 32 and 35).

The device fit runs the host's block Lanczos loop (``kpca.solvers._krylov.block_lanczos``
with the namespace's block algebra) from the host's Nyström start, so it should make no
more passes over the kernel matrix than the host fit. For each n this fits
``kpca.KernelPCA`` (RBF, d = 20 Gaussian features, gamma = 1/d, k = 10, float32, as
bench_gpu.py) on NumPy arrays and on PyTorch tensors of --device, alternating
(host, device, host, ...) --repeats times, both under the same memory budget
(--memory-limit; default: 1,000 float64 columns of n rows, room for the solver and its
tiles but not for the kernel matrix, so both fits are matrix-free), and prints per n:
the passes of each (from kpca's 'pass' log events, the construction pass included) with
their widths, the median fit times and their ratio, and the largest eigenvalue
difference relative to the largest eigenvalue. Exits with status 1 if a device fit made
more passes (or columns) than the host fit.

    python benchmarks/bench_device_passes.py --device cuda --n 100000 1000000   # GPU machine
    python benchmarks/bench_device_passes.py --device cpu --n 20000             # torch CPU
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

import numpy as np
from bench_gpu import PassCounter

import kpca

D, K = 20, 10


def fit(X, device: str, memory_limit):
    """One fit: the model, its seconds and its pass widths."""
    import torch

    log = logging.getLogger("kpca")
    passes = PassCounter()
    log.addHandler(passes)
    try:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        model = kpca.KernelPCA(K, kernel="rbf", gamma=1.0 / D, random_state=0,
                               memory_limit=memory_limit).fit(X)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return model, time.perf_counter() - t, passes.widths
    finally:
        log.removeHandler(passes)


def main() -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="torch device: cuda, cuda:1 or cpu")
    ap.add_argument("--n", type=int, nargs="*", default=[100000])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--memory-limit", default=None,
                    help="both fits' budget, e.g. 2GB (default: 1,000 float64 columns of n rows)")
    args = ap.parse_args()
    logging.getLogger("kpca").setLevel(logging.INFO)
    print(f"# kpca {kpca.__version__}, torch {torch.__version__}, device {args.device}")
    print("| n | memory_limit | host passes | device passes | host fit (s) | device fit (s) "
          "| host/device | eigenvalue difference |")
    print("|---|---|---|---|---|---|---|---|")
    worse = False
    for n in args.n:
        X = np.random.default_rng(0).normal(size=(n, D)).astype(np.float32)
        Xd = torch.asarray(X, device=args.device)
        limit = args.memory_limit or max(1000 * 8 * n, 2**26)
        host_t, dev_t = [], []
        for _ in range(args.repeats):
            ref, t, host_w = fit(X, "numpy", limit)
            host_t.append(t)
            est, t, dev_w = fit(Xd, args.device, limit)
            dev_t.append(t)
        th, td = statistics.median(host_t), statistics.median(dev_t)
        diff = float(np.max(np.abs(est.eigenvalues_ - ref.eigenvalues_)) / ref.eigenvalues_[0])
        worse |= len(dev_w) > len(host_w) or sum(dev_w) > sum(host_w)
        print(f"| {n} | {limit} | {len(host_w)} {host_w} | {len(dev_w)} {dev_w} | {th:.2f} "
              f"| {td:.2f} | {th / td:.2f} | {diff:.1e} |", flush=True)
    if worse:
        print("# the device fit made more passes than the host fit", file=sys.stderr)
    return int(worse)


if __name__ == "__main__":
    sys.exit(main())
