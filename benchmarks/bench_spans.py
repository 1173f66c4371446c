"""Where a matrix-free fit's time goes on many threads: the spans of its parallel steps.

Issue 31 ("all the cores"). One exact fit (RBF, gamma = 1/d, Gaussian rows as
``bench_fit.py``, k = 10, ``memory_limit="3GB"``: matrix-free at 40,000 rows) for each
``--n-jobs``, printing

* its wall and CPU time and the main thread's CPU time (the serial work);
* kpca's log events with their times from the start of the fit (the warm start, each
  pass and its seconds, the solver's residuals);
* for each call of the block runner (``kpca._parallel.run_blocks``) from the tiled
  operator and the warm start: its wall time, its items' wall times (least, median,
  most) and their CPU times summed. A pass whose slowest item takes much longer than
  the sum over the threads says its work was not shared evenly (or a thread waited);
* with ``--profile``, a wall-clock profile of the fit (cProfile, cumulative).

Run::

    PYTHONPATH=src python benchmarks/bench_spans.py --n 40000 --n-jobs 16 1 16

Not a test: it prints figures (docs/benchmarks.md, issue 31).
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fit import data  # noqa: E402

import kpca  # noqa: E402
import kpca.operators._tiled as tiled  # noqa: E402
import kpca.solvers._start as start  # noqa: E402
from kpca import _parallel  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40000)
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--memory-limit", default="3GB")
    ap.add_argument("--n-jobs", type=int, nargs="+", default=[16, 1, 16])
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)

    X = data(a.n, a.d)
    # the first fit of a process imports what kpca imports lazily
    kpca.KernelPCA(10, kernel="rbf", gamma=1 / a.d, random_state=0).fit(data(1000, a.d))
    spans: list[tuple[float, int, int, list[tuple[float, float]]]] = []
    runner = _parallel.run_blocks

    def run_blocks(work, items, workers):
        items, rec = list(items), []

        def timed(x):
            w, c = time.perf_counter(), time.thread_time()
            out = work(x)
            rec.append((time.perf_counter() - w, time.thread_time() - c))
            return out

        t = time.perf_counter()
        out = runner(timed, items, workers)
        spans.append((time.perf_counter() - t, len(items), workers, rec))
        return out

    tiled.run_blocks = run_blocks
    start.run_blocks = run_blocks
    events: list[tuple[float, str]] = []

    class Events(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            events.append((record.created, record.getMessage()[:90]))

    logger = logging.getLogger("kpca")
    logger.addHandler(Events())
    logger.setLevel(logging.DEBUG)
    for jobs in a.n_jobs:
        spans.clear()
        events.clear()
        prof = cProfile.Profile() if a.profile else None
        w0, t0 = time.time(), time.perf_counter()
        m0, c0 = time.thread_time(), time.process_time()
        if prof is not None:
            prof.enable()
        est = kpca.KernelPCA(10, kernel="rbf", gamma=1 / a.d, random_state=0,
                             memory_limit=a.memory_limit, n_jobs=jobs).fit(X)
        if prof is not None:
            prof.disable()
        wall = time.perf_counter() - t0
        print(f"\n### n={a.n} n_jobs={jobs}: wall {wall:.3f} s, CPU "
              f"{time.process_time() - c0:.2f} s, main-thread CPU "
              f"{time.thread_time() - m0:.3f} s, solver {est.eigen_solver_}")
        for when, msg in events:
            print(f"  {when - w0:7.3f} {msg}")
        for span, count, workers, rec in spans:
            if span > 0.005:
                ws = sorted(r[0] for r in rec)
                print(f"  run_blocks {count} items on {workers} workers: wall "
                      f"{span * 1e3:.1f} ms, item wall least/median/most {ws[0] * 1e3:.1f}/"
                      f"{ws[len(ws) // 2] * 1e3:.1f}/{ws[-1] * 1e3:.1f} ms, item CPU sum "
                      f"{sum(r[1] for r in rec) * 1e3:.0f} ms")
        if prof is not None:
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
