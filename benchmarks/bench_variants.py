"""The compiled kernels' variants side by side: the 20k exact fit and one matrix-free pass.

For each variant of ``KPCA_NATIVE`` (avx512, avx2, portable, and off: NumPy only) that
this CPU runs, a fresh process (the variable is read at import) is started --rounds
times, the variants in turn (avx2, portable, off, avx2, ...), so that a slow spell of a
shared machine falls on all of them. Each process touches --warm GB of memory, makes
a warm-up fit, then times

* the exact fit of bench_fit.py's problem: ``KernelPCA(k, kernel="rbf", gamma=1/d,
  precision="float32")`` on --n Gaussian rows of d columns (K stored: the construction
  pass, then block Lanczos over the stored tiles), --repeats times;
* one pass of the matrix-free operator at --n-pass rows (``memory_limit=--memory-limit``
  with ``partial=False``, as ``KernelPCA`` builds it; the script checks that no tile is
  stored): ``K~ V`` for a block of --block columns (24: the matrix-free block of
  k = 10), --repeats times;

with --n-jobs worker threads (default: all cores) and BLAS held to as many threads,
and reports the medians of the wall-clock time and of the process's CPU time (the
work done, which other processes on a loaded machine disturb less). The table gives,
per variant, the median and range of the processes' medians and the ratio to NumPy's.
A variant this CPU cannot run is listed as such. ``--pieces`` adds a table of the
pieces on one thread: the RBF block (``RBF.block_prepared``, 2,048 x 2,048 at d) and a
stored tile's two products (the compiled product, or NumPy's slices), ns a value.

A variant forced below the best this CPU runs is not what a CPU without the wider
instructions runs: BLAS and NumPy still use them, and kpca hands such a variant's
products to BLAS (``kpca._native.blas_products``, ``sweeps_in_cache``). Two options
add rows as on such a CPU, each with NumPy's row under the same emulation as its
reference (each child prints NumPy's dispatched CPU targets and OpenBLAS's kernels,
so that an emulation that did not take is seen):

``--emulate-old-cpu``
    an x86-64 CPU without AVX2 (where the portable variant is the best): NumPy's own
    AVX2 loops disabled (``NPY_DISABLE_CPU_FEATURES=X86_V3``), OpenBLAS's Nehalem
    kernels (``OPENBLAS_CORETYPE=Nehalem``), and kpca told that portable is the best
    variant; plus the portable variant as before issue 31's last step, its products
    by BLAS there too ("BLAS products");
``--emulate-avx2-cpu``
    on an AVX-512 machine, a CPU with AVX2 but not AVX-512: NumPy's AVX-512 loops
    disabled (``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"``), OpenBLAS's
    Haswell kernels, and kpca told that avx2 is the best variant. Its ratio to the
    avx512 row is the issue's "AVX2 within 1.3x of AVX-512".

``--before SRC`` adds, for each row, the same row run from another source tree (its
``src`` folder, built: ``python setup.py build_ext --inplace``), labelled "(before)"
and alternating with this tree's in every round: a before/after of a change to the
kernels in one run. ``--variants`` keeps only the named rows' variants (e.g.
``avx2 off``: the AVX2 pass and its NumPy reference).

    python benchmarks/bench_variants.py                 # 20,000-row fit, 40,000-row pass
    python benchmarks/bench_variants.py --rounds 5 --emulate-old-cpu
    python3 benchmarks/bench_variants.py --rounds 2 --warm 1 --emulate-avx2-cpu  # AVX-512
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, time
import numpy as np
from threadpoolctl import threadpool_limits
import kpca
from kpca.operators import _tiled
from kpca.kernels import _standard, RBF
from kpca.operators import TiledKernelOperator, center
from kpca._memory import parse_memory
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
from threadpoolctl import threadpool_info
if {best!r}:  # as on a CPU whose best variant is this one (the module docstring)
    _tiled._tileprod.best = _standard._rbfexp.best = {best!r}
a = np.ones(int({warm} * 2**30) // 8); del a
d, k, jobs = {d}, {k}, {n_jobs}
blas = threadpool_limits(jobs) if jobs is not None else None  # BLAS as many threads
rng = np.random.default_rng(0)
kpca.KernelPCA(k, kernel="rbf", gamma=1.0 / d, random_state=0, precision="float32",
               n_jobs=jobs).fit(rng.normal(size=(2000, d)))
out = {{"tile": _tiled.NATIVE_VARIANT.variant, "rbf": _standard.NATIVE_RBF_VARIANT.variant,
        "numpy_simd": [f for f in __cpu_dispatch__ if __cpu_features__.get(f)],
        "blas": sorted({{i.get("architecture") or "?" for i in threadpool_info()
                         if i.get("user_api") == "blas"}})}}

def timed(fn):
    walls, cpus = [], []
    for _ in range({repeats}):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)

X = np.random.default_rng(0).normal(size=({n}, d))
out["fit"], out["fit_cpu"] = timed(lambda: kpca.KernelPCA(
    k, kernel="rbf", gamma=1.0 / d, random_state=0, precision="float32", n_jobs=jobs).fit(X))
X = np.random.default_rng(1).normal(size=({n_pass}, d))
op = TiledKernelOperator(RBF(gamma=1.0 / d), X, dtype=np.float32, n_jobs=jobs,
                         memory_limit=parse_memory({memory_limit!r}), partial=False)
assert op.fraction_stored == 0, op.fraction_stored
op, _ = center(op, inplace=True)
V = np.random.default_rng(2).normal(size=({n_pass}, {block}))
out["pass"], out["pass_cpu"] = timed(lambda: op.matmat(V))
if {pieces}:  # the pieces alone, on this thread, BLAS on one thread: best of 7
    def best(fn):
        fn()
        t = []
        for _ in range(7):
            c = time.thread_time()
            fn()
            t.append(time.thread_time() - c)
        return min(t) / 2048**2 * 1e9  # ns a value of a 2,048 x 2,048 tile
    with threadpool_limits(1):
        g = np.random.default_rng(3)
        kern = RBF(gamma=1.0 / d)
        prep = kern.prepare(g.normal(size=(2048, d)), np.float32)
        rows = kern.prepare_rows(g.normal(size=(2048, d)), prep)
        K = np.empty((2048, 2048), np.float32)
        out["block_ns"] = best(lambda: kern.block_prepared(rows, prep, out=K))
        T = np.ascontiguousarray(K)
        for b in (16, 24):
            Vp = g.normal(size=(4096, b)).astype(np.float32)
            Wp = np.zeros((4096, b))
            # the compiled product serves widths of a multiple of its vector (16 for
            # avx512's float32), as in a pass; other widths take NumPy's, as kpca does
            if _tiled.NATIVE and b % _tiled.NATIVE_WIDTH[np.dtype(np.float32)] == 0:
                fn = lambda: _tiled.native_tile_product(T, False, Vp, Wp, 0, 2048)
            else:
                fn = lambda: TiledKernelOperator._tile_product(T, False, Vp, Wp, 0, 2048)
            out[f"product{{b}}_ns"] = best(fn)
print(json.dumps(out))
"""

#: NumPy and OpenBLAS as on an x86-64 CPU without AVX2 (--emulate-old-cpu)
OLD_CPU = {"NPY_DISABLE_CPU_FEATURES": "X86_V3", "OPENBLAS_CORETYPE": "Nehalem"}
#: NumPy and OpenBLAS as on an x86-64 CPU with AVX2 but not AVX-512 (--emulate-avx2-cpu)
AVX2_CPU = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
            "OPENBLAS_CORETYPE": "Haswell"}


def runnable() -> tuple[str, ...]:
    """The variants this CPU runs (asked of the built extension in a child process, so
    that this process's own KPCA_NATIVE does not matter)."""
    code = ("from kpca.operators import _tiled; e = _tiled._tileprod_ext; "
            "print(' '.join(e.variants()) if e else '')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "KPCA_NATIVE": "off"})
    return tuple(out.stdout.split())


def run(variant: str, args: argparse.Namespace, extra: dict[str, str],
        best: str | None = None, src: str | None = None) -> dict:
    code = CHILD.format(warm=args.warm, d=args.d, k=args.k, n=args.n, n_pass=args.n_pass,
                        repeats=args.repeats, memory_limit=args.memory_limit,
                        block=args.block, n_jobs=args.n_jobs, pieces=args.pieces,
                        best=best)
    env = {**os.environ, "KPCA_NATIVE": variant, **extra}
    if src is not None:  # another tree's kpca (--before)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(f"KPCA_NATIVE={variant} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000, help="rows of the exact fit")
    ap.add_argument("--n-pass", type=int, default=40000, help="rows of the matrix-free pass")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--block", type=int, default=24, help="columns of the pass's block")
    ap.add_argument("--memory-limit", default="3GB", help="the pass's operator budget")
    ap.add_argument("--repeats", type=int, default=3, help="timings per process")
    ap.add_argument("--rounds", type=int, default=3, help="processes per variant")
    ap.add_argument("--n-jobs", type=int, default=None,
                    help="worker threads, and BLAS threads (default: all cores)")
    ap.add_argument("--warm", type=float, default=2.0, help="GB touched first")
    ap.add_argument("--pieces", action="store_true",
                    help="also time the pieces on one thread: the RBF block and a stored "
                         "tile's two products (16 and 24 columns), ns a value")
    ap.add_argument("--emulate-old-cpu", action="store_true",
                    help="also NumPy and portable as on a CPU without AVX2")
    ap.add_argument("--emulate-avx2-cpu", action="store_true",
                    help="also NumPy and avx2 as on a CPU with AVX2 but not AVX-512")
    ap.add_argument("--before", default=None,
                    help="src folder of another (built) tree: each row also from it, "
                         "alternating")
    ap.add_argument("--variants", nargs="+", default=None,
                    choices=("avx512", "avx2", "portable", "off"),
                    help="only the rows of these KPCA_NATIVE values (default: all)")
    args = ap.parse_args(argv)
    can = runnable()
    # (KPCA_NATIVE value, label, environment, NumPy's row for the ratio, best variant)
    rows = [(v, v, {}, "numpy", None) for v in ("avx512", "avx2", "portable") if v in can]
    rows.append(("off", "numpy", {}, "numpy", None))
    old, avx2 = "numpy, no-AVX2 CPU (emulated)", "numpy, AVX2 CPU (emulated)"
    if args.emulate_old_cpu:
        if "portable" in can:
            rows.append(("portable", "portable, no-AVX2 CPU (emulated)", OLD_CPU, old,
                         "portable"))
            rows.append(("portable", "portable, BLAS products, no-AVX2 CPU (emulated)",
                         OLD_CPU, old, "avx2"))
        rows.append(("off", old, OLD_CPU, old, None))
    if args.emulate_avx2_cpu and "avx2" in can:
        rows.append(("avx2", "avx2, AVX2 CPU (emulated)", AVX2_CPU, avx2, "avx2"))
        rows.append(("off", avx2, AVX2_CPU, avx2, None))
    if args.variants:
        rows = [row for row in rows if row[0] in args.variants]
    # (row, source tree): this tree's rows, and with --before the same from the other
    jobs = [(row, None) for row in rows]
    if args.before:
        before = [((v, f"{label} (before)", extra, f"{ref} (before)", best), args.before)
                  for v, label, extra, ref, best in rows]
        jobs = [job for pair in zip(before, jobs, strict=True) for job in pair]
        rows = [row for row, _ in jobs]
    runs: dict[str, list[dict]] = {label: [] for _, label, *_ in rows}
    for r in range(args.rounds):
        for (variant, label, extra, _, best), src in jobs:
            res = run(variant, args, extra, best, src)
            want = None if variant == "off" else variant
            assert res["tile"] == res["rbf"] == want, res
            runs[label].append(res)
            print(f"round {r + 1}: {label}: fit {res['fit']:.3f} s (CPU {res['fit_cpu']:.3f}), "
                  f"pass {res['pass']:.3f} s (CPU {res['pass_cpu']:.3f}); NumPy SIMD "
                  f"{'+'.join(res['numpy_simd']) or 'baseline'}, OpenBLAS "
                  f"{'/'.join(res['blas'])}", file=sys.stderr)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, n_jobs "
          f"{args.n_jobs or 'all'}; variants this CPU runs: "
          f"{', '.join(can) or 'none (not built)'}; medians of {args.rounds} processes x "
          f"{args.repeats} timings; wall-clock s (CPU s)")
    print(f"\n| variant | {args.n:,}-row fit | vs NumPy, wall (CPU) | one matrix-free pass, "
          f"{args.n_pass:,} rows, {args.block} columns | vs NumPy, wall (CPU) |")
    print("|---|---|---|---|---|")

    def med(label: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[label])

    for _, label, _, ref, _ in rows:
        cells = []
        for key in ("fit", "pass"):
            vals = [r[key] for r in runs[label]]
            cells.append(f"{med(label, key):.3f} ({med(label, key + '_cpu'):.3f}); wall "
                         f"{min(vals):.3f}-{max(vals):.3f}")
            cells.append(f"{med(ref, key) / med(label, key):.2f}x "
                         f"({med(ref, key + '_cpu') / med(label, key + '_cpu'):.2f}x)")
        print(f"| {label} | " + " | ".join(cells) + " |")
    for v in ("avx512", "avx2", "portable"):
        if v not in can:
            print(f"| {v} | this CPU cannot run it | | | |")
    print("\n(each row's ratio is to the NumPy row under the same emulation; NumPy's SIMD "
          "targets and OpenBLAS's kernels, per row: " + "; ".join(
              f"{label}: {'+'.join(runs[label][0]['numpy_simd']) or 'baseline'}, "
              f"{'/'.join(runs[label][0]['blas'])}" for _, label, *_ in rows) + ")")
    if "avx512" in can:  # the target: AVX2 within 1.3x of AVX-512
        print("\nAVX2 against AVX-512 (time / avx512's time, wall (CPU)):")
        for label in [lab for _, lab, *_ in rows if lab.startswith("avx2")]:
            print(f"- {label}: " + ", ".join(
                f"{key} {med(label, key) / med('avx512', key):.2f}x "
                f"({med(label, key + '_cpu') / med('avx512', key + '_cpu'):.2f}x)"
                for key in ("fit", "pass")))
    if args.pieces:
        print("\nThe pieces on one thread (BLAS on one thread), ns a value of a 2,048 x 2,048 "
              "float32 tile, median of the processes' best of 7:\n")
        print(f"| variant | RBF block, d = {args.d} | tile's two products, 16 columns | "
              "24 columns |")
        print("|---|---|---|---|")
        for _, label, *_ in rows:
            print(f"| {label} | " + " | ".join(
                f"{med(label, key):.3f}" for key in ("block_ns", "product16_ns",
                                                     "product24_ns")) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
