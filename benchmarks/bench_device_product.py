"""One RBF kernel product ``K @ V`` on a device: fused attention pass against tiles.

The fused product (``kernels._device._fused_rbf_product``, PyTorch's scaled-dot-product
attention with a sink key) never writes the kernel matrix; the tiled product
(``device_block_product`` without it) writes, exponentiates and multiplies row tiles of
about 2 GB. For each n and block width b the script prints both times (median of
--repeats), the fused product's arithmetic rate, and each product's error relative to a
float64 product over the first 1,000 rows.

    python benchmarks/bench_device_product.py --device cuda --n 20000 100000 1000000
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from kpca._array_api import device_namespace
from kpca.kernels import make_kernel
from kpca.kernels._device import _fused_rbf_product, device_block

D = 20


def tiled(kernel, X, V, rows: int):
    """The product without fusion: row tiles of K written, exponentiated, multiplied."""
    xp = device_namespace(X)
    return torch.cat([device_block(kernel, X[s:s + rows], X, xp) @ V
                      for s in range(0, X.shape[0], rows)])


def rel_error(out, ref) -> float:
    return float((out.double() - ref).norm() / ref.norm())


def timed(f, args: tuple, repeats: int):
    times, out = [], None
    cuda = torch.cuda.is_available()
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        out = f(*args)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, nargs="*", default=[20000, 100000])
    ap.add_argument("--b", type=int, nargs="*", default=[20, 31])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    gamma = 1.0 / D
    kernel = make_kernel("rbf", gamma=gamma)
    print(f"# device {args.device}, d={D}, float32")
    print("| n | b | fused (s) | TFLOP/s | error | tiles (s) | error | tiles / fused |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.n:
        X = torch.randn(n, D, device=args.device)
        xp = device_namespace(X)
        rows = max(1, 2**31 // (4 * n))
        for b in args.b:
            V = torch.randn(n, b, device=args.device)
            fused, tf = timed(_fused_rbf_product, (gamma, X, X, V), args.repeats)
            tiles, tt = timed(tiled, (kernel, X, V, rows),
                              1 if n > 200000 else args.repeats)
            s = slice(0, 1000)
            ref = device_block(kernel, X[s].double(), X.double(), xp) @ V.double()

            flops = 2.0 * n * n * (24 + b + 1)  # padded widths of the two products
            ef, et = rel_error(fused[s], ref), rel_error(tiles[s], ref)
            print(f"| {n} | {b} | {tf:.3f} | {flops / tf / 1e12:.1f} | {ef:.1e} | "
                  f"{tt:.3f} | {et:.1e} | {tt / tf:.1f} |", flush=True)


if __name__ == "__main__":
    main()
