"""The RBF product ``K @ V`` on a device, each path side by side, then a fit through the
best accurate one.

For each n (d = 20 Gaussian features, gamma = 1/d, --b columns, float32) the script
times one product ``k(X, X) @ V`` through each path of the setting
``device_rbf_product`` (PyTorch's attention with a sink key; kpca's Triton kernel with
'ieee' and with 'tf32x3' products; the tiles up to --tiles-max rows; on a CUDA device,
the same values as CuPy arrays through kpca's CUDA kernel and the tiles): the median of
--repeats calls after one warm-up call (the first Triton call compiles its program;
that call's time is printed apart; above 200,000 rows --large-repeats calls and no
warm-up, the programs being built at the first n), the rate in TFLOP/s-equivalent, counting the
2 n^2 (d + b) flops of the two products (no padding, no exponentials), and the
error against a float64 product (tiles, float64) on --sample rows spread over X: the
relative Frobenius error and the largest relative error of a row.

Then ``KernelPCA`` (k = 10) fits at each --fit size through the fastest Triton path
whose product error is at most --max-error or twice attention's (else attention),
with the eigenvalue error against float64 Rayleigh quotients and the float64
residuals (relative to the largest eigenvalue, as ``bench_gpu.rayleigh_check``; the
float64 product ``K V`` through kpca's CUDA kernel on CuPy arrays where CuPy runs,
else through the tiles: code apart from the float32 paths under test). --sweep then
times the Triton kernel at the first n for other block sizes (the settings
``triton_block_rows`` and ``triton_block_cols``).

Every step is guarded: an error is printed and the script goes on; once --budget
seconds have passed since the start, the steps left are skipped (a deadline on the
benchmark, not on kpca). One command on a GPU machine (about 100 s on one H200):

    python benchmarks/bench_device_product.py --device cuda --n 100000 1000000 \\
        --fit 100000 1000000

On a CPU (the Triton program interpreted; a check of this script, not a timing):

    TRITON_INTERPRET=1 python benchmarks/bench_device_product.py --device cpu --n 2000 \\
        --fit 3000 --repeats 1
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import time
import traceback

import numpy as np
import torch

import kpca
from kpca._array_api import device_namespace
from kpca.kernels import device_block_product, make_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import PassCounter, rayleigh_check  # noqa: E402

D, K = 20, 10
#: (label, device_rbf_product, device_rbf_precision)
PATHS = [("attention", "attention", None), ("triton ieee", "triton", "ieee"),
         ("triton tf32x3", "triton", "tf32x3"), ("tiles", "tiles", None)]
SWEEP = [(64, 64), (128, 32), (64, 128), (128, 128), (256, 64)]


def out(*args) -> None:
    print(*args, flush=True)


def failed(what: str, exc: BaseException) -> None:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    out(f"# {what} FAILED: {type(exc).__name__}: {exc}")
    out("#   " + "".join(lines[-4:]).replace("\n", "\n#   "))


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def product(X, V, path: str, precision: str | None, kernel):
    """One ``k(X, X) @ V`` through ``path``: the dispatch of the operator's product."""
    cfg = dict(device_rbf_product=path)
    if precision is not None:
        cfg["device_rbf_precision"] = precision
    rows = max(1, 2**31 // (4 * X.shape[0]))  # tiles of about 2 GB, as the operator's
    with kpca.config_context(**cfg):
        return device_block_product(kernel, X, X, V, device_namespace(X), rows)


def timed(f, device: str, repeats: int):
    times, res = [], None
    for _ in range(repeats):
        sync(device)
        t = time.perf_counter()
        res = f()
        sync(device)
        times.append(time.perf_counter() - t)
    return res, statistics.median(times)


def reference(kernel, X, V, sample, device: str):
    """float64 ``k(X[sample], X) @ V`` through tiles (chunks of about 1 GB)."""
    xp = device_namespace(X)
    X64, V64 = X.double(), V.double()
    step = max(1, 2**27 // X.shape[0])
    with kpca.config_context(device_rbf_product="tiles"):
        parts = [kernel.block(X64[sample[s:s + step]], X64, xp=xp) @ V64
                 for s in range(0, len(sample), step)]
    sync(device)
    return torch.cat(parts)


def errors(got, ref) -> tuple[float, float]:
    diff = got.double() - ref
    frob = float(diff.norm() / ref.norm())
    rows = float((diff.norm(dim=1) / ref.norm(dim=1).clamp_min(1e-300)).max())
    return frob, rows


def cupy_rows(X, V, n, sample, ref, kernel, dev, flops, repeats, args, time_left) -> None:
    """The same product on CuPy arrays (the same values, shared through DLPack): kpca's
    CUDA kernel, and the tiles up to --tiles-max rows."""
    try:
        import cupy

        Xc, Vc = cupy.from_dlpack(X), cupy.from_dlpack(V)
    except Exception as exc:  # noqa: BLE001 - report and go on
        failed(f"n={n}, CuPy set-up", exc)
        return
    for label, path in (("cupy kernel", "cupy"), ("cupy tiles", "tiles")):
        if path == "tiles" and n > args.tiles_max:
            continue
        if not time_left(f"n={n}, {label}"):
            return
        try:
            f = lambda p=path: product(Xc, Vc, p, None, kernel)  # noqa: E731
            first = timed(f, dev, 1)[1] if n <= 200000 else float("nan")
            res, t = timed(f, dev, repeats)
            frob, rows = errors(torch.from_dlpack(res)[sample], ref)
            out(f"| {n:,} | {label} | {first:.3f} | {t:.3f} | {flops / t / 1e12:.1f} | "
                f"{frob:.1e} | {rows:.1e} |")
            del res
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed(f"n={n}, {label}", exc)


def float64_check(est, Xh: np.ndarray, dev: str) -> tuple[float, float, str]:
    """``bench_gpu.rayleigh_check``'s eigenvalue and residual errors, its float64 product
    ``K V`` through kpca's CUDA kernel on CuPy arrays where CuPy runs (float64 fused
    multiply-adds: a few seconds at a million rows, where float64 tiles take about as
    long as the fit; code apart from the float32 paths under test), else the tiles."""
    if dev.startswith("cuda"):
        try:
            import cupy

            from kpca.kernels import device_block_product as product64

            Xd = cupy.asarray(Xh.astype(np.float64))
            V = est.eigenvectors_.astype(np.float64)
            V = V - V.mean(axis=0)
            V /= np.linalg.norm(V, axis=0)
            with kpca.config_context(device_rbf_product="cupy"):
                rows = max(1, 2**30 // (8 * len(Xh)))  # the tiles', should CuPy refuse
                W = cupy.asnumpy(product64(est.kernel_, Xd, Xd, cupy.asarray(V),
                                           device_namespace(Xd), rows))
            W -= W.mean(axis=0)
            rho = np.sum(V * W, axis=0)
            res = np.linalg.norm(W - V * rho, axis=0)
            lam = est.eigenvalues_.astype(np.float64)
            return (float(np.max(np.abs(lam - rho)) / lam[0]), float(np.max(res) / lam[0]),
                    "CuPy kernel, float64")
        except Exception as exc:  # noqa: BLE001 - report and use the tiles
            failed("float64 check through CuPy (the tiles instead)", exc)
    err, res = rayleigh_check(est, Xh, dev)
    return err, res, "tiles, float64"


def main() -> None:
    start = time.perf_counter()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, nargs="*", default=[100000, 1000000])
    ap.add_argument("--b", type=int, default=24, help="columns of V")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--large-repeats", type=int, default=2,
                    help="repeats above 200,000 rows")
    ap.add_argument("--tiles-max", type=int, default=100000)
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--fit", type=int, nargs="*", default=[100000, 1000000])
    ap.add_argument("--max-error", type=float, default=1e-6,
                    help="relative Frobenius error of an accurate path (or twice "
                    "attention's, if larger)")
    ap.add_argument("--sweep", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--cupy", action=argparse.BooleanOptionalAction, default=True,
                    help="also CuPy arrays (CUDA only)")
    ap.add_argument("--budget", type=float, default=100.0, help="seconds")
    args = ap.parse_args()
    dev = args.device

    def time_left(step: str) -> bool:
        spent = time.perf_counter() - start
        if spent > args.budget:
            out(f"# skipped ({step}): {spent:.0f} s spent, budget {args.budget:.0f} s")
            return False
        return True

    try:
        import triton
        tv = triton.__version__
    except ImportError:
        tv = "not installed"
    gpu = (f"{torch.cuda.get_device_name(dev)}, CUDA {torch.version.cuda}"
           if dev.startswith("cuda") else f"{platform.processor() or platform.machine()}")
    out(f"# kpca {kpca.__version__}, torch {torch.__version__}, triton {tv}, numpy "
        f"{np.__version__}; device {dev}: {gpu}; TRITON_INTERPRET="
        f"{os.environ.get('TRITON_INTERPRET', '0')}")
    out(f"# d={D}, gamma=1/d, b={args.b} columns, float32; TFLOP/s counts "
        f"2 n^2 (d + b) flops; errors against float64 tiles on {args.sample} rows")
    kernel = make_kernel("rbf", gamma=1.0 / D)
    gen = torch.Generator(device=dev).manual_seed(0)
    out("| n | path | first call (s) | median (s) | TFLOP/s | rel. error (Frobenius) | "
        "max row error |")
    out("|---|---|---|---|---|---|---|")
    measured: dict[tuple[int, str], tuple[float, float]] = {}
    for n in args.n:
        if not time_left(f"n={n}"):
            break
        try:
            X = torch.randn(n, D, device=dev, generator=gen)
            V = torch.randn(n, args.b, device=dev, generator=gen)
            sample = torch.linspace(0, n - 1, min(n, args.sample), device=dev).long()
            ref = reference(kernel, X, V, sample, dev)
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed(f"n={n} set-up", exc)
            continue
        flops = 2.0 * n * n * (D + args.b)
        repeats = args.repeats if n <= 200000 else args.large_repeats
        for label, path, precision in PATHS:
            if path == "tiles" and n > args.tiles_max:
                continue
            if not time_left(f"n={n}, {label}"):
                break
            try:
                f = lambda p=path, q=precision, X=X, V=V: product(X, V, p, q, kernel)  # noqa: E731
                first = timed(f, dev, 1)[1] if n <= 200000 else float("nan")
                res, t = timed(f, dev, repeats)
                frob, rows = errors(res[sample], ref)
                measured[(n, label)] = (t, frob)
                out(f"| {n:,} | {label} | {first:.3f} | {t:.3f} | {flops / t / 1e12:.1f} | "
                    f"{frob:.1e} | {rows:.1e} |")
                del res
            except Exception as exc:  # noqa: BLE001 - report and go on
                failed(f"n={n}, {label}", exc)
        if dev.startswith("cuda") and args.cupy:
            cupy_rows(X, V, n, sample, ref, kernel, dev, flops, repeats, args, time_left)
        del X, V, ref
        if dev.startswith("cuda"):
            torch.cuda.empty_cache()

    # the fastest accurate path at the largest n measured: error within --max-error, or
    # within twice attention's (the float32 accuracy the fits had before)
    best, bound = ("attention", "attention", None), args.max_error
    for n in sorted({n for n, _ in measured}, reverse=True)[:1]:
        if (n, "attention") in measured:
            bound = max(bound, 2 * measured[(n, "attention")][1])
        ok = [(measured[(n, label)][0], (label, path, prec)) for label, path, prec in PATHS
              if path == "triton" and (n, label) in measured
              and measured[(n, label)][1] <= bound]
        if ok:
            best = min(ok)[1]
    out(f"# fits through: {best[0]} (the fastest Triton path with product error <= "
        f"{bound:.1e}, else attention)")
    cfg = dict(device_rbf_product=best[1])
    if best[2] is not None:
        cfg["device_rbf_precision"] = best[2]
    if args.fit and time_left("warm-up fit"):
        try:  # compiles the program's variants a fit uses (row means: one column)
            t = time.perf_counter()
            nw = min(20000, *args.fit)
            Xw = torch.randn(nw, D, device=dev, generator=gen)
            with kpca.config_context(**cfg):  # a budget below K's 4 n^2 bytes: matrix-free
                kpca.KernelPCA(K, kernel="rbf", gamma=1.0 / D, memory_limit=nw * nw).fit(Xw)
            out(f"# warm-up fit ({nw:,} rows, matrix-free): {time.perf_counter() - t:.1f} s")
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed("warm-up fit", exc)
    out("| fit | n | fit (s) | passes | eigenvalue error (Rayleigh) | residual | "
        "peak memory (GB) |")
    out("|---|---|---|---|---|---|---|")
    for n in args.fit:
        if not time_left(f"fit n={n}"):
            break
        try:
            Xh = np.random.default_rng(0).normal(size=(n, D)).astype(np.float32)
            X = torch.asarray(Xh, device=dev)
            if dev.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats()
            log = logging.getLogger("kpca")
            log.setLevel(logging.INFO)
            with kpca.config_context(**cfg):
                est = kpca.KernelPCA(K, kernel="rbf", gamma=1.0 / D, random_state=0)
                fit_times = []
                for _ in range(args.repeats if n <= 200000 else 1):
                    counter = PassCounter()  # the last fit's passes (bench_gpu.py)
                    log.addHandler(counter)
                    sync(dev)
                    t = time.perf_counter()
                    est.fit(X)
                    sync(dev)
                    fit_times.append(time.perf_counter() - t)
                    log.removeHandler(counter)
            t = statistics.median(fit_times)
            peak = (torch.cuda.max_memory_allocated() / 1e9 if dev.startswith("cuda")
                    else float("nan"))
            passes = f"{len(counter.widths)} {counter.widths}"
            t_check = time.perf_counter()
            err, res, how = float64_check(est, Xh, dev)
            out(f"| KernelPCA ({best[0]}, {est.eigen_solver_}) | {n:,} | {t:.2f} | {passes} | "
                f"{err:.1e} | {res:.1e} | {peak:.2f} |")
            out(f"#   float64 check: {how}, {time.perf_counter() - t_check:.1f} s")
            del X, est
        except Exception as exc:  # noqa: BLE001 - report and go on
            failed(f"fit n={n}", exc)

    if args.sweep and args.n:
        n = args.n[0]
        out(f"# block sizes of the Triton kernel at n={n:,} (rows x cols of a program's "
            "score tile)")
        out("| precision | block rows | block cols | median (s) | TFLOP/s | rel. error |")
        out("|---|---|---|---|---|---|")
        X = torch.randn(n, D, device=dev, generator=gen)
        V = torch.randn(n, args.b, device=dev, generator=gen)
        sample = torch.linspace(0, n - 1, min(n, args.sample), device=dev).long()
        ref = reference(kernel, X, V, sample, dev)
        for precision in ("tf32x3", "ieee"):
            for bm, bn in SWEEP:
                if not time_left(f"sweep {precision} {bm}x{bn}"):
                    break
                try:
                    with kpca.config_context(triton_block_rows=bm, triton_block_cols=bn):
                        f = lambda q=precision: product(X, V, "triton", q, kernel)  # noqa: E731
                        timed(f, dev, 1)
                        res, t = timed(f, dev, args.repeats)
                    frob, _ = errors(res[sample], ref)
                    out(f"| {precision} | {bm} | {bn} | {t:.4f} | "
                        f"{2.0 * n * n * (D + args.b) / t / 1e12:.1f} | {frob:.1e} |")
                except Exception as exc:  # noqa: BLE001 - report and go on
                    failed(f"sweep {precision} {bm}x{bn}", exc)
    out(f"# total {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
