"""Before/after of AnovaKernelPCA's fit: two source trees, alternating fresh processes.

The data are the seed example's (docs/robust.md): x1, x2 two nested circles, the other
--p - 2 variables N(0, 3.5^2) noise; --n rows. Each process imports kpca from its tree's
``src`` folder, makes a 300-row warm-up fit, then fits ``AnovaKernelPCA(2, gamma=1,
random_state=0)`` --repeats times and reports the median wall and CPU time (all
threads) and the fitted iterations. --pairs pairs of processes run alternating
(before, after, before, ...); the table gives the range of the processes' medians for
each tree and the ratio of their medians. kpca only (no other library fits ANOVA KPCA).

    git worktree add /tmp/kpca-before <commit>
    python benchmarks/ab_anova.py --before /tmp/kpca-before/src --after src
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from _ab import run_child

CHILD = r"""
import json, statistics, sys, time
import numpy as np
from sklearn.datasets import make_circles
import kpca
assert kpca.__file__.startswith({src!r}), kpca.__file__
def data(n):
    X2, _ = make_circles(n, factor=0.3, noise=0.05, random_state=0)
    noise = np.random.default_rng(0).normal(scale=3.5, size=(n, {p} - 2))
    return np.hstack([X2, noise])
kpca.AnovaKernelPCA(2, gamma=1.0, random_state=0).fit(data(300))
X = data({n})
wall, cpu = [], []
for _ in range({repeats}):
    t, c = time.perf_counter(), time.process_time()
    est = kpca.AnovaKernelPCA(2, gamma=1.0, random_state=0).fit(X)
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
print(json.dumps([statistics.median(wall), statistics.median(cpu), est.n_iter_]))
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src folder of the old tree")
    ap.add_argument("--after", required=True, help="src folder of the new tree")
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--p", type=int, default=10, help="variables (2 informative)")
    ap.add_argument("--repeats", type=int, default=5, help="fits per process")
    ap.add_argument("--pairs", type=int, default=4, help="before/after process pairs")
    args = ap.parse_args(argv)
    medians: dict[str, list[list[float]]] = {"before": [], "after": []}
    for _ in range(args.pairs):
        for tree in ("before", "after"):
            src = os.path.abspath(getattr(args, tree))
            code = CHILD.format(src=src, n=args.n, p=args.p, repeats=args.repeats)
            medians[tree].append(run_child(code, src))
            print(tree, medians[tree][-1], file=sys.stderr)
    print(f"n = {args.n}, p = {args.p}, {args.repeats} fits per process, {args.pairs} "
          f"processes per tree; iterations: {medians['after'][-1][2]:.0f}")
    print("| time | before (s) | after (s) | after / before (medians) |")
    print("|---|---|---|---|")
    for i, what in enumerate(("wall", "CPU")):
        b = [m[i] for m in medians["before"]]
        a = [m[i] for m in medians["after"]]
        print(f"| {what} | {min(b):.3f}-{max(b):.3f} | {min(a):.3f}-{max(a):.3f} | "
              f"{statistics.median(a) / statistics.median(b):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
