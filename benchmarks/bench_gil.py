"""The share of a matrix-free pass that holds the GIL, and the pass's time, with the
per-piece loop in Python and in one compiled call per tile.

A pass over a kernel matrix that is not stored evaluates it tile by tile, each tile
in cache-sized pieces. In Python (``TiledKernelOperator._fused_tile``) each piece is
a sequence of calls: the RBF block (compiled, releases the GIL), two NumPy products
with their additions into the worker's accumulator (BLAS, releases the GIL), and the
Python-level work between them (slicing, the prepared rows' and columns' objects,
the diagonal), which holds the GIL, so that many workers queue on it. The compiled
loop (``fused_rbf``, ``TiledKernelOperator._compiled_tile``) makes every piece of a
tile in one call that releases the GIL throughout.

Timers (``time.perf_counter``) are put around the work that releases the GIL and
around each tile's whole work, inside each worker thread:

* Python loop: released = the compiled RBF block call plus each product statement
  (``W[a] += P @ V[e]``: BLAS and the addition, both releasing the GIL, and the
  statement's small Python part, counted as released: the share is a lower bound);
  whole = ``_fused_tile`` per tile, plus ``_tile_rows`` (the rows prepared per tile
  row, counted as held);
* compiled loop: released = the ``fused_rbf`` call (its argument parsing, a few
  microseconds, counted as released); whole = ``_compiled_tile`` plus ``_tile_rows``.

The GIL share is (whole - released) / whole, summed over the workers' tiles. The
loop between tiles in ``_pass`` (a dictionary lookup per tile) is not timed. The
modes alternate (python, compiled, python, ...) in one process, --rounds times;
BLAS is held to one thread (as ``run_blocks`` does for its workers; with one worker
too, so that the modes compare the same work). Medians are printed.

The construction pass of a stored operator (--n-build rows) is timed the same way:
the Python loop over a kept tile's slices (``native_tile_product(fill=...)``: the
compiled block and product per slice released) against ``build_rbf``.

    python benchmarks/bench_gil.py --n 40000 --n-jobs 1 2
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import types
from collections import defaultdict

import numpy as np
from threadpoolctl import threadpool_limits

import kpca.operators._tiled as tiled
from kpca._memory import parse_memory
from kpca.kernels import RBF
from kpca.operators import TiledKernelOperator, center


class Timers:
    """Sums, over the worker threads, of the time in released and whole sections
    (``reset`` between passes)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.sums: dict[str, float] = defaultdict(float)

    def add(self, key: str, seconds: float) -> None:
        with self.lock:
            self.sums[key] += seconds


def timed(fn, timers: Timers, key: str = "released"):
    """``fn`` with its time added to ``timers[key]``."""
    def call(*args, **kwargs):
        s = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            timers.add(key, time.perf_counter() - s)
    return call


def construction(X: np.ndarray, jobs: int, mode: str, timers: Timers, probe: np.ndarray):
    """The construction pass of a stored operator (every tile kept, built slice by
    slice with the probe's product), with the Python slices' loop
    (``native_tile_product(fill=...)``) or the compiled one (``build_rbf``), timed:
    released = the compiled block and product calls (Python) or ``build_rbf``;
    whole = each kept tile's work plus ``_tile_rows``."""
    cls, fns, block = TiledKernelOperator, tiled._tileprod, tiled._rbf_kernels._rbfexp
    saved = {name: getattr(cls, name) for name in ("_compiled_pieces", "_compiled_build",
                                                   "_tile_rows")}
    saved_ntp = tiled.native_tile_product
    try:
        real_pieces, real_build, real_rows = saved.values()
        cls._tile_rows = lambda self, i: timed(real_rows, timers, "whole")(self, i)
        if mode == "python":
            cls._compiled_pieces = lambda self, shift: None
            tiled.native_tile_product = timed(saved_ntp, timers, "whole")
            tiled._tileprod = types.SimpleNamespace(
                name=fns.name, widths=fns.widths, product=timed(fns.product, timers))
            tiled._rbf_kernels._rbfexp = types.SimpleNamespace(
                pack_panels=block.pack_panels, block=timed(block.block, timers))
        else:
            def build(self, fns_, *args):
                proxy = types.SimpleNamespace(build_rbf=timed(fns_.build_rbf, timers))
                return real_build(self, proxy, *args)
            cls._compiled_build = lambda self, *a: timed(build, timers, "whole")(self, *a)
        t = time.perf_counter()
        op = TiledKernelOperator(RBF(gamma=1.0 / X.shape[1]), X, dtype=np.float32,
                                 n_jobs=jobs, probe=probe, partial=False)
        wall = time.perf_counter() - t
        assert op.fraction_stored == 1
        return wall
    finally:
        for name, value in saved.items():
            setattr(cls, name, value)
        tiled.native_tile_product = saved_ntp
        tiled._tileprod, tiled._rbf_kernels._rbfexp = fns, block


def instrument(op: TiledKernelOperator, timers: Timers) -> None:
    """Timers around the operator's per-tile work and the GIL-free calls inside it."""
    real_rows, real_compiled = op._tile_rows, op._compiled_tile
    ext = tiled._tileprod

    def tile_rows(i):
        t = time.perf_counter()
        out = real_rows(i)
        timers.add("whole", time.perf_counter() - t)
        return out

    def compiled_tile(fns, t, V, W, X_rows):
        proxy = types.SimpleNamespace(name=fns.name, widths=fns.widths,
                                      fused_rbf=timed(fns.fused_rbf, timers))
        s = time.perf_counter()
        real_compiled(proxy, t, V, W, X_rows)
        timers.add("whole", time.perf_counter() - s)

    def fused_tile(t, V, W, buf, shift, X_rows):
        # TiledKernelOperator._fused_tile, with timers around its GIL-free statements
        s0 = time.perf_counter()
        i, j = op.tiles[t]
        r0, r1 = op.bounds[i], op.bounds[i + 1]
        c0, c1 = op.bounds[j], op.bounds[j + 1]
        rows, cols = op.piece
        released = 0.0
        for a0 in range(r0, r1, rows):
            a1 = min(r1, a0 + rows)
            spans = ([(e0, min(c1, e0 + cols)) for e0 in range(c0, c1, cols)] if i != j
                     else [(e0, min(r1, e0 + rows)) for e0 in range(r0, a0 + 1, rows)])
            for e0, e1 in spans:
                P = op._piece(X_rows[a0 - r0 : a1 - r0], a0, a1, e0, e1, buf, shift)
                s = time.perf_counter()
                W[a0:a1] += P @ V[e0:e1]
                if i != j or e0 != a0:
                    W[e0:e1] += P.T @ V[a0:a1]
                released += time.perf_counter() - s
        timers.add("released", released)
        timers.add("whole", time.perf_counter() - s0)

    op._tile_rows = tile_rows
    op._compiled_tile = compiled_tile
    op._fused_tile = fused_tile
    if ext is not None:  # the compiled RBF block of each piece (Python loop)
        fns = tiled._rbf_kernels._rbfexp

        class Timed:
            pack_panels = staticmethod(fns.pack_panels)

            @staticmethod
            def block(*args):
                s = time.perf_counter()
                fns.block(*args)
                timers.add("released", time.perf_counter() - s)

        tiled._rbf_kernels._rbfexp = Timed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--block", type=int, default=24, help="columns of V (k = 10: 24)")
    ap.add_argument("--n-jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--memory-limit", default="3GB")
    ap.add_argument("--n-build", type=int, default=20000,
                    help="rows of the stored operator whose construction pass is timed")
    args = ap.parse_args(argv)
    assert tiled.NATIVE and getattr(tiled._tileprod, "fused_rbf", None) is not None, \
        "the compiled kernels are not in use (KPCA_NATIVE=off, or not built)"
    X = np.random.default_rng(1).normal(size=(args.n, args.d))
    V = np.random.default_rng(2).normal(size=(args.n, args.block))
    print(f"n = {args.n:,}, d = {args.d}, {args.block} columns, variant "
          f"{tiled.NATIVE_VARIANT.variant}; medians of {args.rounds} passes per mode")
    print("\n| n_jobs | loop over pieces | pass (s) | GIL held (share of the workers' "
          "tile work) |")
    print("|---|---|---|---|")
    block = tiled._rbf_kernels._rbfexp
    with threadpool_limits(1):
        for jobs in args.n_jobs:
            tiled._rbf_kernels._rbfexp = block
            op = TiledKernelOperator(RBF(gamma=1.0 / args.d), X, dtype=np.float32,
                                     memory_limit=parse_memory(args.memory_limit),
                                     partial=False, n_jobs=jobs)
            assert op.fraction_stored == 0, "K is stored: raise --n or lower --memory-limit"
            op, _ = center(op, inplace=True)
            real = op._compiled_pieces
            results = defaultdict(list)
            timers = Timers()
            instrument(op, timers)
            for _ in range(args.rounds):
                for mode in ("python", "compiled"):
                    timers.reset()
                    op._compiled_pieces = (lambda shift: None) if mode == "python" else real
                    t = time.perf_counter()
                    op.matmat(V)
                    wall = time.perf_counter() - t
                    share = 1 - timers.sums["released"] / timers.sums["whole"]
                    results[mode].append((wall, share))
            for mode in ("python", "compiled"):
                wall = statistics.median(r[0] for r in results[mode])
                share = statistics.median(r[1] for r in results[mode])
                print(f"| {jobs} | {mode} | {wall:.3f} | {100 * share:.1f} % |")
        Xb = X[: args.n_build]
        probe = np.random.default_rng(3).normal(size=(args.n_build, 16))
        print(f"\nConstruction pass of the stored operator, {args.n_build:,} rows (every tile "
              "kept), with a 16-column probe:\n")
        print("| n_jobs | loop over slices | construction (s) | GIL held |")
        print("|---|---|---|---|")
        for jobs in args.n_jobs:
            results = defaultdict(list)
            for _ in range(args.rounds):
                for mode in ("python", "compiled"):
                    timers = Timers()
                    wall = construction(Xb, jobs, mode, timers, probe)
                    share = 1 - timers.sums["released"] / timers.sums["whole"]
                    results[mode].append((wall, share))
            for mode in ("python", "compiled"):
                wall = statistics.median(r[0] for r in results[mode])
                share = statistics.median(r[1] for r in results[mode])
                print(f"| {jobs} | {mode} | {wall:.3f} | {100 * share:.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
