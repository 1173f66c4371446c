"""Which solver ``'auto'`` picks for ``bench_incremental.py``'s refits, and each solver's
time on them.

Issue 31 (item 7 compares an update with a ``KernelPCA`` refit; item 6 asks that
``'auto'`` not be slow). ``KernelPCA(10)`` (RBF, gamma = 0.05) on the first 6,500 and
10,500 rows of ``bench_incremental.py``'s Gaussian data (d = 20), three timed fits for
each of ``eigen_solver='auto'``, ``'krylov'``, ``'arpack'`` and ``'dense'`` (the dense
one up to 7,000 rows), with the solver each fit ran.

First, the cost model's cache and cores and the reason the plan gives for each size.

Run::

    PYTHONPATH=src python benchmarks/bench_refit_solvers.py

Not a test: it prints figures (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_incremental import make_data  # noqa: E402

import kpca  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[6500, 10500])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-max", type=int, default=7000)
    a = ap.parse_args(argv)
    X = make_data("gauss", max(a.n), seed=0)
    kpca.KernelPCA(10, kernel="rbf", gamma=0.05).fit(X[:1000])  # lazy imports
    cfg = kpca.get_config()
    print(f"# n_cores {cfg['n_cores']}, solver_cache_bytes {cfg['solver_cache_bytes']:,} "
          "(the cost model's cache, kpca.solvers._cost)")
    for n in a.n:
        plan = kpca.KernelPCA(10, kernel="rbf", gamma=0.05).plan(X[:n])
        print(f"# n={n}: {plan.solver_reason}")
        for solver in ("auto", "krylov", "arpack", "dense"):
            if solver == "dense" and n > a.dense_max:
                continue
            times = []
            for _ in range(a.repeats):
                t = time.perf_counter()
                model = kpca.KernelPCA(10, kernel="rbf", gamma=0.05,
                                       eigen_solver=solver).fit(X[:n])
                times.append(time.perf_counter() - t)
            print(f"n={n} {solver}: ran {model.eigen_solver_}, "
                  f"{[round(x, 3) for x in times]} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
