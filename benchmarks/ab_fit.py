"""Before/after of kpca's exact fit on bench_fit.py's problem: two source trees, alternating.

``bench_fit.py`` times one fit per size, which on a shared machine varies by about 10 %
from run to run. To measure a change, this runs --pairs pairs of fresh processes, one
per tree, alternating (before, after, before, ...). Each process imports kpca from its
tree's ``src`` folder, touches --warm GB of memory, makes a 1,000-row warm-up fit, and
then, for each n of --n, fits ``kpca.KernelPCA`` (RBF, gamma = 1/d, k components,
random Gaussian data, as bench_fit.py; with --memory-limit and --n-jobs) --repeats
times and reports the median. The table gives, per n, the range of those medians for
each tree and the ratio of their medians, for wall and CPU time (all threads). kpca
only: scikit-learn is not run.

    git worktree add /tmp/kpca-before <commit>
    python benchmarks/ab_fit.py --before /tmp/kpca-before/src --after src
    python benchmarks/ab_fit.py --before ... --after src --n 40000 --memory-limit 3GB --n-jobs 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from _ab import run_child

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import kpca
assert kpca.__file__.startswith({src!r}), kpca.__file__
a = np.ones(int({warm} * 2**30) // 8); del a
d, k = {d}, {k}
rng = np.random.default_rng(0)
kw = dict(memory_limit={memory_limit!r}, n_jobs={n_jobs!r})
kpca.KernelPCA(k, kernel="rbf", gamma=1.0 / d, random_state=0, **kw).fit(
    rng.normal(size=(1000, d)))
out = {{}}
for n in {sizes!r}:
    X = np.random.default_rng(0).normal(size=(n, d))
    times, cpus = [], []
    for _ in range({repeats}):
        t, c = time.perf_counter(), time.process_time()
        kpca.KernelPCA(k, kernel="rbf", gamma=1.0 / d, random_state=0, **kw).fit(X)
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[n] = [statistics.median(times), statistics.median(cpus)]
print(json.dumps(out))
"""


def run_tree(src: str, args: argparse.Namespace) -> dict[int, list[float]]:
    code = CHILD.format(src=src, warm=args.warm, d=args.d, k=args.k, sizes=args.n,
                        repeats=args.repeats, memory_limit=args.memory_limit,
                        n_jobs=args.n_jobs)
    return {int(n): s for n, s in run_child(code, src).items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src folder of the old tree")
    ap.add_argument("--after", required=True, help="src folder of the new tree")
    ap.add_argument("--n", type=int, nargs="+", default=[5000, 10000, 20000])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5, help="fits per size and process")
    ap.add_argument("--pairs", type=int, default=4, help="before/after process pairs")
    ap.add_argument("--warm", type=float, default=3.0, help="GB touched first")
    ap.add_argument("--memory-limit", default=None, help="KernelPCA's memory_limit (e.g. 3GB: "
                    "matrix-free at 40,000 rows)")
    ap.add_argument("--n-jobs", type=int, default=None, help="KernelPCA's n_jobs")
    args = ap.parse_args(argv)
    runs: dict[str, list[dict[int, list[float]]]] = {"before": [], "after": []}
    for _ in range(args.pairs):
        for name in ("before", "after"):
            src = os.path.abspath(getattr(args, name))
            runs[name].append(run_tree(src, args))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr)
    # wall time, and the CPU time of all the process's threads (less sensitive to other
    # jobs on a shared machine, though spinning threads count in it)
    print(f"| n | before (s, {args.pairs} processes) | after (s) | after / before "
          "(medians) | CPU before (s) | CPU after (s) | CPU after / before |")
    print("|---|---|---|---|---|---|---|")
    for n in args.n:
        b = [r[n][0] for r in runs["before"]]
        a = [r[n][0] for r in runs["after"]]
        cb = [r[n][1] for r in runs["before"]]
        ca = [r[n][1] for r in runs["after"]]
        print(f"| {n} | {min(b):.3f}-{max(b):.3f} | {min(a):.3f}-{max(a):.3f} | "
              f"{statistics.median(a) / statistics.median(b):.2f} | "
              f"{min(cb):.2f}-{max(cb):.2f} | {min(ca):.2f}-{max(ca):.2f} | "
              f"{statistics.median(ca) / statistics.median(cb):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
