"""Pre-images on a device (PyTorch tensors) against the NumPy path, side by side.

Two measurements for each n (RBF, d = 20, k = 10, gamma = 1/d, float32 unless
--dtype float64), each the median of --repeats runs, device and host alternating:

* **ridge fit**: ``kpca.preimage.fit_ridge_preimage`` on n training scores, the n x n
  kernel on the scores formed and solved by Cholesky (the work of
  ``fit_inverse_transform=True`` beyond the fit): on --device tensors against NumPy/SciPy.
  Beside the times, the relative residual ``||(K_Y + alpha I) C - X|| / ||X||`` of both
  solutions, evaluated in float64.
* **denoise**: ``denoise(method=...)`` of --points noisy rows with a model fitted on
  the n rows (one fit on the device, one on the host; not timed), for 'fixed_point'
  and 'mds', and the largest difference between the two results relative to the data's
  largest value.

    python benchmarks/bench_preimage_device.py --device cuda --n 20000     # ~30 s on an H100
    python benchmarks/bench_preimage_device.py --device cpu --n 2000       # torch CPU tensors
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import kpca
from kpca._array_api import to_host
from kpca.kernels import make_kernel
from kpca.preimage import fit_ridge_preimage

D, K = 20, 10


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def timed(device: str, fn, *args, **kwargs) -> tuple[float, object]:
    sync(device)
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    sync(device)
    return time.perf_counter() - t0, out


def residual(Y: np.ndarray, X: np.ndarray, C: np.ndarray, gamma: float, alpha: float,
             dev) -> float:
    """``||(K_Y + alpha I) C - X|| / ||X||`` in float64 (on the device: an n x n
    float64 product is slow on a CPU)."""
    import torch

    Yt, Xt, Ct = (torch.asarray(A.astype(np.float64), device=dev) for A in (Y, X, C))
    Kt = torch.exp(-gamma * torch.cdist(Yt, Yt) ** 2)
    R = Kt @ Ct + alpha * Ct - Xt
    return float(torch.linalg.norm(R) / torch.linalg.norm(Xt))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="torch device of the tensors")
    ap.add_argument("--n", type=int, nargs="+", default=[20000])
    ap.add_argument("--points", type=int, default=2000, help="rows to denoise")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--alpha", type=float, default=1.0)
    args = ap.parse_args()
    import torch

    dt = np.dtype(args.dtype)
    dev = torch.device(args.device)
    print(f"torch {torch.__version__}, device {args.device}"
          + (f" ({torch.cuda.get_device_name(dev)})" if dev.type == "cuda" else "")
          + f", {args.dtype}, repeats {args.repeats} (medians)")
    rng = np.random.default_rng(0)
    for n in args.n:
        X = rng.normal(size=(n, D)).astype(dt)
        # the training scores' scale of an RBF KPCA (sqrt of eigenvalues / n ~ 0.1 - 1)
        Y = (rng.normal(size=(n, K)) * np.linspace(0.8, 0.1, K)).astype(dt)
        kernel = make_kernel("rbf", gamma=1.0 / K)
        Yd, Xd = torch.asarray(Y, device=dev), torch.asarray(X, device=dev)
        t_dev, t_host = [], []
        for _ in range(args.repeats):  # alternating
            t, Cd = timed(args.device, fit_ridge_preimage, kernel, Yd, Xd, args.alpha)
            t_dev.append(t)
            t, Ch = timed("numpy", fit_ridge_preimage, kernel, Y, X, args.alpha)
            t_host.append(t)
        Cd = to_host(Cd)
        res_dev = residual(Y, X, Cd, 1.0 / K, args.alpha, dev)
        res_host = residual(Y, X, Ch, 1.0 / K, args.alpha, dev)
        md, mh = statistics.median(t_dev), statistics.median(t_host)
        print(f"ridge fit n={n}: device {md:.3f} s, NumPy {mh:.3f} s, NumPy/device "
              f"{mh / md:.1f}x; residual device {res_dev:.1e}, NumPy {res_host:.1e}")

        T = (X[: args.points] + 0.3 * rng.normal(size=(args.points, D))).astype(dt)
        kw = dict(n_components=K, kernel="rbf", gamma=1.0 / D, random_state=0)
        est = kpca.KernelPCA(**kw).fit(Xd)
        ref = kpca.KernelPCA(**kw).fit(X)
        Td = torch.asarray(T, device=dev)
        for method in ("fixed_point", "mds"):
            t_dev, t_host = [], []
            for _ in range(args.repeats):
                t, Zd = timed(args.device, est.denoise, Td, method=method)
                t_dev.append(t)
                t, Zh = timed("numpy", ref.denoise, T, method=method)
                t_host.append(t)
            diff = np.abs(to_host(Zd, np.float64) - Zh).max() / np.abs(T).max()
            md, mh = statistics.median(t_dev), statistics.median(t_host)
            print(f"denoise {method} n={n}, {args.points} points: device {md:.3f} s, "
                  f"NumPy {mh:.3f} s, NumPy/device {mh / md:.1f}x; max difference "
                  f"{diff:.1e} (relative)")


if __name__ == "__main__":
    main()
