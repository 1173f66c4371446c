"""kpca's default on a busy machine: against ``n_jobs=1`` and scikit-learn, under load and idle.

Issue 31: with other processes keeping every core busy, kpca's default (``n_jobs=None``:
every core) must not be much slower than ``n_jobs=1`` (target: at most 1.25x). A
multi-threaded BLAS call waits at each of its synchronisation points for all its
threads; on a loaded machine one of them may wait for a core for a scheduler time
slice, so many small threaded calls (LAPACK's tridiagonal reduction makes one
matrix-vector product per column) can cost far more than their work.

For each case this runs, in ONE process, ``--repeats`` rounds of: kpca's default,
kpca with ``n_jobs=1``, and scikit-learn's ``KernelPCA`` (its default solver; run once
where its first run is over 5 s and 5x kpca's ``n_jobs=1``), in that order
(interleaved, so that slow drifts of a shared machine hit all three alike), first on
the machine as it is ("idle": other users' work included, see the load average
printed) and then under a background load: ``--load`` processes (default: one per
core kpca may use) each spinning a pure-Python loop. The load is bounded in time
(each process stops itself after ``--max-load-seconds`` and when its parent is gone)
and is always terminated when the loaded runs end, also on errors and Ctrl-C.

Cases (scikit-learn's digits, raw pixels; beyond 1,797 rows noisy copies, sd 2, as
``bench_solvers.py``): 1,000 rows with 512 components (a dense solve) and 3,594 rows
with k = 32, each with kpca's and scikit-learn's default kernel (linear, the user's
case in the issue) and with RBF, gamma = 1e-3 (an n x n dense solve whatever the
kernel's rank).

    python benchmarks/bench_contention.py                    # every case, 3 rounds
    python benchmarks/bench_contention.py --cases 1000x512 --repeats 5
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import KernelPCA as SKKernelPCA

import kpca
from kpca.operators import n_threads

#: name -> (rows, components, kernel, gamma)
CASES = {
    "1000x512": (1000, 512, "linear", None),
    "1000x512-rbf": (1000, 512, "rbf", 1e-3),
    "3594x32": (3594, 32, "linear", None),
    "3594x32-rbf": (3594, 32, "rbf", 1e-3),
}


#: scikit-learn runs once (not --repeats times) when its first run takes longer than
#: both of these (its dense solve of 3,594 rows: tens of seconds under load)
SKLEARN_ONCE_S = 5.0
SKLEARN_ONCE_RATIO = 5.0


def digits(n: int, noise: float = 2.0, seed: int = 0) -> np.ndarray:
    X = load_digits().data
    rng = np.random.default_rng(seed)
    parts = [X]
    while sum(len(p) for p in parts) < n:
        parts.append(X + rng.normal(0.0, noise, X.shape))
    return np.vstack(parts)[:n]


def _spin(stop_at: float, parent: int) -> None:
    # a busy core: pure Python (no BLAS, no syscalls), stopping by itself at stop_at
    # or when the parent is gone (killed without running its cleanup)
    i = 0
    while True:
        i += 1
        if i % 200_000 == 0 and (time.monotonic() >= stop_at or os.getppid() != parent):
            return


@contextmanager
def background_load(procs: int, max_seconds: float) -> Iterator[None]:
    """``procs`` busy processes for the duration of the block (at most ``max_seconds``)."""
    ctx = mp.get_context("spawn")  # no copy of this process's BLAS threads or data
    stop_at = time.monotonic() + max_seconds
    workers = [ctx.Process(target=_spin, args=(stop_at, os.getpid()), daemon=True)
               for _ in range(procs)]
    try:
        for w in workers:
            w.start()
        time.sleep(0.5)  # let them reach their loops
        yield
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(5)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def run_case(name: str, repeats: int, sklearn: bool) -> dict[str, list[float] | str]:
    n, k, kernel, gamma = CASES[name]
    X = digits(n)
    runs: dict[str, Callable[[], object]] = {
        "default": lambda: kpca.KernelPCA(k, kernel=kernel, gamma=gamma,
                                          random_state=0).fit(X),
        "n_jobs=1": lambda: kpca.KernelPCA(k, kernel=kernel, gamma=gamma, random_state=0,
                                           n_jobs=1).fit(X),
    }
    if sklearn:
        runs["sklearn"] = lambda: SKKernelPCA(k, kernel=kernel, gamma=gamma,
                                              random_state=0).fit(X)
    times: dict[str, list[float]] = {key: [] for key in runs}
    solver = "?"
    for r in range(repeats):
        for key, fn in runs.items():
            if key == "sklearn" and r > 0 and times[key][0] > max(
                    SKLEARN_ONCE_S, SKLEARN_ONCE_RATIO * times["n_jobs=1"][0]):
                continue  # a reference far slower than kpca: one run says enough
            dt, model = timed(fn)
            times[key].append(dt)
            if key == "default":
                solver = model.eigen_solver_  # type: ignore[attr-defined]
    return {**times, "solver": solver}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--load", type=int, default=None,
                    help="busy processes (default: one per core kpca may use)")
    ap.add_argument("--max-load-seconds", type=float, default=900.0)
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--conditions", nargs="+", default=["idle", "load"],
                    choices=["idle", "load"])
    args = ap.parse_args(argv)
    cores = n_threads(None)
    load = cores if args.load is None else args.load
    import scipy
    import sklearn as skl

    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
          f"{cores} for this process; python {platform.python_version()}, numpy "
          f"{np.__version__}, scipy {scipy.__version__}, scikit-learn {skl.__version__}; "
          f"kpca from {os.path.dirname(kpca.__file__)}")
    print(f"# medians of {args.repeats} interleaved rounds; load = {load} busy processes; "
          f"load average at start {os.getloadavg()[0]:.2f}", flush=True)
    print("| case | condition | default (s) | n_jobs=1 (s) | scikit-learn (s) | default / "
          "n_jobs=1 | default / scikit-learn | kpca solver |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for cond in args.conditions:
        for name in args.cases:
            if cond == "load":
                with background_load(load, args.max_load_seconds):
                    row = run_case(name, args.repeats, not args.no_sklearn)
            else:
                row = run_case(name, args.repeats, not args.no_sklearn)
            med = {key: statistics.median(v) for key, v in row.items() if key != "solver"}
            ratio = med["default"] / med["n_jobs=1"]
            if cond == "load":
                worst = max(worst, ratio)
            sk = med.get("sklearn")
            once = "sklearn" in row and len(row["sklearn"]) == 1 and args.repeats > 1
            sk_s = "-" if sk is None else f"{sk:.3f}" + (" (1 run)" if once else "")
            sk_ratio = "-" if sk is None else f"{med['default'] / sk:.2f}"
            print(f"| {name} | {cond} | {med['default']:.3f} | {med['n_jobs=1']:.3f} | "
                  f"{sk_s} | {ratio:.2f} | {sk_ratio} | {row['solver']} |", flush=True)
    print(f"# load average at end {os.getloadavg()[0]:.2f}")
    if "load" in args.conditions:
        print(f"# under load, worst default / n_jobs=1: {worst:.2f} (target <= 1.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
