"""Roofline of an exact kernel-PCA fit on this machine (issue 17).

An exact fit of the RBF kernel is a construction pass (every kernel value of the
lower triangle evaluated once: the row sums for centring, the solver's start block)
and then the solver's passes, each a product of the centred kernel matrix with a block
of ``b`` columns. This script measures the primitives such passes are made of, on
``--threads`` worker threads with one BLAS thread each (as kpca's tile passes run),
each the median of ``--repeats`` runs:

* **kernel GEMM**: float32 ``(t x (d+2)) @ ((d+2) x t)``, the product that gives the
  squared distances of a ``t x t`` tile (``t``: ``--tile``, cache-sized), GFLOP/s;
* **product**: float32 ``(t x t) @ (t x b)`` with a cache-resident tile, GFLOP/s, at
  each block width ``b`` of ``--widths``, by BLAS and, where it is built, by kpca's
  compiled kernel (both products of a tile in one sweep; the widths kpca hands it:
  whole vectors of its variant and at most half a vector more,
  ``kpca._native.tail_is_cheap``); the faster of the two is used (OpenBLAS's rate grows with
  ``b``; a pass of ``b`` columns is costed at :func:`product_rate`);
* **exp**: float32 ``np.exp`` in place on a cache-resident tile, ns per value;
* **RBF block**: where it is built, the CPU has AVX-512 and ``d`` is small enough for
  kpca to use it, kpca's compiled RBF block (exponent and exponential register by
  register, one sweep), ns per value of a ``t x t`` tile; an evaluation is costed at
  the faster of it and GEMM + exp;
* **read**: a stored float32 matrix far larger than the caches times a vector (a
  product bound by the read alone), GB/s;
* **write**: overwriting memory touched before, GB/s; and **first touch**: writing
  fresh pages, GB/s (on this project's virtual machines the host backs memory lazily,
  which makes it ~10x slower than a rewrite).

From them, for ``V = n (n + 1) / 2`` stored values and passes of ``b_0, b_1, ...``
columns (``b_0``: the construction pass, which also computes the row sums and the
solver's start block):

* a **fused** (matrix-free) pass evaluates each tile and multiplies it while it is in
  cache: ``V (t_eval + 4 b / R_pgemm)``, ``t_eval = min(2 (d+2) / R_kgemm + t_exp,
  t_rbf)`` (each lower value is used
  twice, two flops per use); the fit costs the sum over its passes;
* a **stored** fit evaluates, multiplies and writes ``K`` once, ``V (t_eval +
  4 b_0 / R_pgemm) + 4 V / R_write``, then each later pass costs
  ``max(4 V / R_read, 4 b V / R_pgemm)``; ``R_write`` is the rewrite speed (fresh pages,
  much slower on these virtual machines, are reported but not used: a lower bound
  assumes the best case);
* under a memory limit, the stored strategy keeps only what fits and recomputes the
  rest (fused);
* the **bound** is the smaller of the two: no exact fit making these passes can be
  faster on this machine (the centring, the solver's block algebra and the final
  products are O(n b^2) and left out, which keeps it a lower bound).

With ``--measure``, kpca fits the same problem (random Gaussian data, gamma = 1/d);
its passes and their widths are read from its log events, and its time is printed as
a multiple of the bound for those passes. :class:`PassCounter` and
:func:`lower_bound` are what ``benchmarks/bench_fit.py`` uses for its bound column.

    python benchmarks/roofline.py --n 20000 --d 20 --k 10 --measure
    python benchmarks/roofline.py --n 100000 --measure --memory-limit 3GB
    python benchmarks/roofline.py --n 5000 10000 20000 50000 100000 --passes 4
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
from collections.abc import Callable

import numpy as np

from kpca import get_config
from kpca._native import tail_is_cheap
from kpca._parallel import blas_threads, run_blocks
from kpca.kernels._standard import NATIVE_RBF, _rbfexp
from kpca.operators._tiled import NATIVE, NATIVE_WIDTH, _tileprod


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def _on_threads(work: Callable[[int], None], threads: int, repeats: int) -> float:
    """Median seconds of running ``work(w)`` on every worker ``w`` at once."""
    with blas_threads(1):
        return _median_time(lambda: run_blocks(work, range(threads), threads), repeats)


def measure_primitives(d: int, b: int, tiles: list[int], threads: int, repeats: int,
                       widths: list[int] | None = None) -> dict:
    """This machine's primitive speeds (all workers together), as a dict; the GEMM
    and exp rates at each tile side in ``tiles`` and the best of them; the product
    GEMM at each block width of ``widths`` (default ``[b]``; ``b``: the stored pass's
    width, which the read is measured with)."""
    rng = np.random.default_rng(0)
    widths = sorted(set(widths or [b]))
    out: dict = {"threads": threads, "tiles": tiles, "b": b, "d": d, "widths": widths}
    for t in tiles:
        inner = max(1, (4096 // t) ** 2)  # ~16M values per timed call: no overhead
        A = [rng.standard_normal((t, d + 2)).astype(np.float32) for _ in range(threads)]
        B = [rng.standard_normal((d + 2, t)).astype(np.float32) for _ in range(threads)]
        T = [np.empty((t, t), np.float32) for _ in range(threads)]

        def kgemm(w: int, A=A, B=B, T=T, inner=inner) -> None:
            for _ in range(inner):
                np.matmul(A[w], B[w], out=T[w])

        s = _on_threads(kgemm, threads, repeats)
        out[f"kernel_gemm_gflops_{t}"] = threads * inner * 2 * t * t * (d + 2) / s / 1e9
        for w in range(threads):
            np.multiply(T[w], -1e-3, out=T[w])
        for bw in widths:
            Vb = [rng.standard_normal((t, bw)).astype(np.float32) for _ in range(threads)]
            Wb = [np.empty((t, bw), np.float32) for _ in range(threads)]

            def pgemm(w: int, T=T, Vb=Vb, Wb=Wb, inner=inner) -> None:
                for _ in range(inner):
                    np.matmul(T[w], Vb[w], out=Wb[w])

            s = _on_threads(pgemm, threads, repeats)
            blas = threads * inner * 2 * t * t * bw / s / 1e9
            out[f"product_blas_gflops_{t}_b{bw}"] = blas
            # (the widths kpca hands the compiled product: whole vectors and at most
            # half a vector more, kpca._native.tail_is_cheap)
            native = _native_rate(T, Vb, Wb, threads, repeats, inner) if (
                NATIVE and tail_is_cheap(bw, NATIVE_WIDTH[np.dtype(np.float32)])) else 0.0
            out[f"product_native_gflops_{t}_b{bw}"] = native
            # the bound takes the faster way to make the products
            out[f"product_gemm_gflops_{t}_b{bw}"] = max(blas, native)
        out[f"product_gemm_gflops_{t}"] = out[f"product_gemm_gflops_{t}_b{b}"] if (
            b in widths) else out[f"product_gemm_gflops_{t}_b{widths[0]}"]

        S = [T[w].copy() for w in range(threads)]  # negative values: exp in range

        def exp(w: int, S=S, T=T, inner=inner) -> None:
            for _ in range(inner):
                np.exp(S[w], out=T[w])

        s = _on_threads(exp, threads, repeats)
        out[f"exp_ns_{t}"] = s / (threads * inner * t * t) * 1e9
        # (kpca uses it up to native_rbf_max_features features, BLAS's product beyond)
        out[f"rbf_block_ns_{t}"] = _rbf_block_ns(A, T, threads, repeats, inner) if (
            NATIVE_RBF and d <= get_config()["native_rbf_max_features"]) else float("inf")
    out["kernel_gemm_gflops"] = max(out[f"kernel_gemm_gflops_{t}"] for t in tiles)
    out["product_gemm_gflops"] = max(out[f"product_gemm_gflops_{t}"] for t in tiles)
    for bw in widths:
        out[f"product_gemm_gflops_b{bw}"] = max(
            out[f"product_gemm_gflops_{t}_b{bw}"] for t in tiles)
    out["exp_ns"] = min(out[f"exp_ns_{t}"] for t in tiles)
    out["rbf_block_ns"] = min(out[f"rbf_block_ns_{t}"] for t in tiles)

    # memory: a float32 matrix of 512 MB (far beyond the caches), split by rows
    rows = max(threads, int(512 * 2**20 // (4 * 4096)))
    M = np.ones((rows, 4096), np.float32)  # touched once here: not timed
    vm = rng.standard_normal(4096).astype(np.float32)
    parts = np.array_split(np.arange(rows), threads)

    def read(w: int) -> None:  # a matrix-vector product: bound by the read alone
        M[parts[w][0] : parts[w][-1] + 1] @ vm

    s = _on_threads(read, threads, repeats)
    out["read_gbs"] = M.nbytes / s / 1e9

    def write(w: int) -> None:
        M[parts[w][0] : parts[w][-1] + 1].fill(0.5)

    s = _on_threads(write, threads, repeats)
    out["write_gbs"] = M.nbytes / s / 1e9

    # fresh pages, taken while M is held (so they cannot be M's): on a machine whose
    # memory the host backs lazily, this depends on what was freed recently
    size = 256 * 2**20

    def first_touch() -> None:
        fresh = [np.empty(size // 4 // threads, np.float32) for _ in range(threads)]
        with blas_threads(1):
            run_blocks(lambda w: fresh[w].fill(1.0), range(threads), threads)

    s = _median_time(first_touch, max(3, repeats // 2))
    out["first_touch_gbs"] = size / s / 1e9
    return out


def _native_rate(T: list, Vb: list, Wb: list, threads: int, repeats: int,
                 inner: int) -> float:
    """GFLOP/s of kpca's compiled tile product (both products of a cache-resident
    square tile in one sweep: ``4 t^2 b`` flops), all workers together."""
    t, bw = Vb[0].shape
    Ws = [np.zeros((t, bw), np.float32) for _ in range(threads)]

    def native(w: int) -> None:
        for _ in range(max(1, inner // 2)):  # twice the flops of a GEMM per call
            _tileprod.product(T[w], Vb[w], Vb[w], Wb[w], Ws[w], True, None, None)

    s = _on_threads(native, threads, repeats)
    return threads * max(1, inner // 2) * 4 * t * t * bw / s / 1e9


def _rbf_block_ns(A: list, T: list, threads: int, repeats: int, inner: int) -> float:
    """ns per value of kpca's compiled RBF block (exponent and exponential in one
    sweep, its columns packed once, as a prepared kernel does) of a cache-resident
    ``t x t`` tile with ``d + 2`` prepared columns, all workers together."""
    t, p = A[0].shape
    # exponents -||x - y||^2 / d-ish, well inside exp's range, as RBF data give
    cols = [(-0.1 * np.abs(a)).astype(np.float32) for a in A]
    panels = [np.empty((-(-t // 16), p, 16), np.float32) for _ in range(threads)]
    for c, q in zip(cols, panels, strict=True):
        _rbfexp.pack_panels(c, q)
    rows = [np.abs(a) for a in A]

    def block(w: int) -> None:
        for _ in range(inner):
            _rbfexp.block(rows[w], panels[w], False, T[w])

    s = _on_threads(block, threads, repeats)
    return s / (threads * inner * t * t) * 1e9


def lower_bound(n: int, d: int, widths: list[int], prim: dict,
                budget: float | None = None) -> dict:
    """Seconds of the fused and stored strategies for passes of ``widths`` columns
    (the first one the construction pass), and their minimum (the bound).

    With ``budget`` (bytes), at most that much of ``K`` can be stored: the stored
    strategy keeps that fraction and recomputes the rest (fused). Its cost is linear
    in the fraction kept, so the best fit lies at an end: all recomputed, or as much
    kept as the budget allows.
    """
    V = n * (n + 1) / 2
    # the faster of BLAS's product and NumPy's exp, and the compiled one-sweep block
    evaluate = V * min(2 * (d + 2) / (prim["kernel_gemm_gflops"] * 1e9)
                       + prim["exp_ns"] * 1e-9,
                       prim.get("rbf_block_ns", float("inf")) * 1e-9)

    def product(b: int) -> float:  # each lower value is used twice, 2 flops per use
        return V * 4 * b / (product_rate(prim, b) * 1e9)

    kept = 1.0 if budget is None else min(1.0, budget / (4 * V))
    fused = sum(evaluate + product(b) for b in widths)
    write = 4 * V / (1e9 * prim["write_gbs"])
    # a stored pass reads every value once (the second use, K_IJ^T, is from cache)
    read = 4 * V / (prim["read_gbs"] * 1e9)
    stored = evaluate + product(widths[0]) + kept * write + sum(
        kept * max(read, product(b)) + (1 - kept) * (evaluate + product(b))
        for b in widths[1:])
    return {"fused_s": fused, "stored_s": stored, "bound_s": min(fused, stored),
            "strategy": "fused" if fused <= stored else f"stored ({100 * kept:.0f} %)",
            "evaluate_s": evaluate, "write_s": write, "read_s": read, "kept": kept}


def product_rate(prim: dict, b: int) -> float:
    """GFLOP/s at which a product with ``b`` columns is costed: the best rate measured
    at any width up to ``b`` rounded up to a multiple of 8 (OpenBLAS works on panels of
    8 columns, so 17 columns cost about what 24 do; the best of several widths keeps
    the bound a lower bound), or the one rate measured."""
    widths = prim.get("widths") or []
    rates = [prim[f"product_gemm_gflops_b{w}"] for w in widths
             if f"product_gemm_gflops_b{w}" in prim and w <= 8 * -(-b // 8)]
    if len(widths) < 2 or not rates:
        return prim["product_gemm_gflops"]
    return max(rates)


class PassCounter(logging.Handler):
    """Collects kpca's kernel-pass log events: ``widths`` (columns), ``seconds`` and
    ``ends`` (the event's wall-clock time, ``time.time()``), and the solver's
    ``residuals`` after each pass (its ``residual`` events)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.widths: list[int] = []
        self.seconds: list[float] = []
        self.ends: list[float] = []
        self.residuals: list[float] = []
        self._logger = logging.getLogger("kpca")
        self._level = self._logger.level

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "kpca_event", None)
        if event == "pass":
            self.widths.append(int(record.args[1]))
            self.seconds.append(float(getattr(record, "kpca_seconds", 0.0)))
            self.ends.append(record.created)
        elif event == "residual":
            self.residuals.append(float(getattr(record, "kpca_residual", float("nan"))))

    def phases(self, start: float, end: float) -> dict:
        """Where a fit that ran from ``start`` to ``end`` (``time.time()``) spent its
        time: ``passes_s`` in the kernel passes, ``before_s`` before the first (the
        plan, the warm start, the operator's set-up), ``between_s`` between passes
        (the solver's algebra, Python) and ``after_s`` after the last (the last
        Rayleigh-Ritz, the Ritz vectors, the scores)."""
        if not self.seconds:
            return {"passes_s": 0.0, "before_s": end - start, "between_s": 0.0,
                    "after_s": 0.0}
        begins = [e - s for e, s in zip(self.ends, self.seconds, strict=True)]
        return {"passes_s": sum(self.seconds), "before_s": begins[0] - start,
                "between_s": sum(b - e for b, e in zip(begins[1:], self.ends, strict=False)),
                "after_s": end - self.ends[-1]}

    def __enter__(self) -> PassCounter:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)


def measure_kpca(n: int, d: int, k: int, memory_limit: str | None) -> dict:
    """kpca's fit time and the passes it made (from its log events)."""
    import kpca

    X = np.random.default_rng(0).standard_normal((n, d))
    with PassCounter() as passes:
        t = time.perf_counter()
        model = kpca.KernelPCA(k, kernel="rbf", gamma=1.0 / d, random_state=0,
                               memory_limit=memory_limit).fit(X)
        seconds = time.perf_counter() - t
    return {"seconds": seconds, "widths": passes.widths, "pass_seconds": passes.seconds,
            "solver": model.eigen_solver_}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[20000])
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--b", type=int, default=None,
                   help="block columns of a pass (default: kpca's block for k, stored K)")
    p.add_argument("--passes", type=float, default=None,
                   help="solver passes after construction (default 4, or measured)")
    p.add_argument("--tiles", type=int, nargs="+", default=[128, 256, 512, 1024],
                   help="tile sides at which the GEMMs and exp are measured (best used)")
    p.add_argument("--widths", type=int, nargs="+", default=[16, 24, 32],
                   help="block widths at which the product GEMM is measured")
    p.add_argument("--threads", type=int, default=get_config()["n_cores"])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--memory-limit", default=None)
    p.add_argument("--measure", action="store_true", help="fit kpca and compare")
    a = p.parse_args(argv)
    from kpca._memory import parse_memory
    from kpca.solvers._krylov import krylov_block_size

    b = a.b or krylov_block_size(a.k, cheap_pass=True)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, numpy {np.__version__}; load average "
          f"{os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    prim = measure_primitives(a.d, b, a.tiles, a.threads, a.repeats, a.widths)
    print(f"\nprimitives ({a.threads} threads together, one BLAS thread each; d = {a.d}, "
          f"b = {b}; medians of {a.repeats}):\n")
    ws = prim["widths"]
    print("| tile side | kernel GEMM (GFLOP/s) | "
          + " | ".join(f"product, {w} columns (GFLOP/s: BLAS / kpca's kernel)" for w in ws)
          + " | exp (ns/value) | kpca's RBF block (ns/value) |")
    print("|---|---|" + "---|" * len(ws) + "---|---|")
    for t in a.tiles:
        print(f"| {t} | {prim[f'kernel_gemm_gflops_{t}']:.0f} | "
              + " | ".join(f"{prim[f'product_blas_gflops_{t}_b{w}']:.0f} / "
                           + (f"{prim[f'product_native_gflops_{t}_b{w}']:.0f}"
                              if prim[f'product_native_gflops_{t}_b{w}'] else "-")
                           for w in ws)
              + f" | {prim[f'exp_ns_{t}']:.2f} | {prim[f'rbf_block_ns_{t}']:.2f} |")
    print()
    print(f"memory: read (a matrix-vector product) {prim['read_gbs']:.1f} GB/s, rewrite "
          f"{prim['write_gbs']:.1f} GB/s, fresh pages {prim['first_touch_gbs']:.2f} GB/s "
          "(the bound uses the rewrite speed)")
    print("\n| n | passes after construction (columns) | fused (s) | stored (s) | bound (s) "
          "| strategy | kpca (s) | kpca / bound |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.n:
        meas = measure_kpca(n, a.d, a.k, a.memory_limit) if a.measure else None
        bb = a.b or krylov_block_size(a.k, cheap_pass=True)
        if meas and a.passes is None:
            widths = meas["widths"]
        else:
            widths = [bb + 1] + [bb] * int(4 if a.passes is None else a.passes)
        budget = None if a.memory_limit is None else parse_memory(a.memory_limit)
        bnd = lower_bound(n, a.d, widths, prim, budget)
        row = (f"| {n} | {len(widths) - 1} ({sum(widths[1:])}) | {bnd['fused_s']:.2f} | "
               f"{bnd['stored_s']:.2f} | {bnd['bound_s']:.2f} | {bnd['strategy']} |")
        if meas:
            row += f" {meas['seconds']:.2f} | {meas['seconds'] / bnd['bound_s']:.1f}x |"
        else:
            row += " | |"
        print(row)
    if not a.measure:
        print(f"\n(passes of kpca's block for k = {a.k} with K stored: 16 columns; the "
              "construction pass one more)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
