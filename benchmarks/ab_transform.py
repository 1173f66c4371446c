"""Before/after of ``transform``: two source trees, alternating fresh processes.

Each process imports kpca from its tree's ``src`` folder, fits the models below once
(RBF, gamma = 1/d, ``--train`` Gaussian rows, k components; dense solver) and times, for
each case, ``transform`` ``--repeats`` times, reporting the median wall and CPU time
(all threads). --pairs pairs of processes run alternating (before, after, before, ...);
the table gives, per case, the range of the processes' medians for each tree and the
ratio of their medians. kpca only.

Cases: ``rbf32``, a float32 RBF model on float32 rows (the compiled ``rows_rbf`` loop
where the tile product is built); ``rbf64`` (NumPy's loop over cache-sized pieces);
``spherical`` (normalised scores: one more column in the pieces); ``sparse`` (CSR rows:
row blocks of kernel rows); ``small`` (--small-calls calls on 10 rows each: the
per-call cost).

    git worktree add /tmp/kpca-before <commit>
    python benchmarks/ab_transform.py --before /tmp/kpca-before/src --after src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from _ab import run_child

CASES = ("rbf32", "rbf64", "spherical", "sparse", "small")

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import scipy.sparse as sp
import kpca
from kpca.robust import SphericalKernelPCA
assert kpca.__file__.startswith({src!r}), kpca.__file__
d, k, n_jobs = {d}, {k}, {n_jobs!r}
rng = np.random.default_rng(0)
X = rng.normal(size=({train}, d))
T = rng.normal(size=({rows}, d))
kw = dict(kernel="rbf", gamma=1.0 / d, eigen_solver="dense", n_jobs=n_jobs)
m32 = kpca.KernelPCA(k, precision="float32", **kw).fit(X.astype(np.float32))
m64 = kpca.KernelPCA(k, **kw).fit(X)
sph = SphericalKernelPCA(k, **kw).fit(X)
T32 = T.astype(np.float32)
Ts = sp.csr_matrix(np.where(np.abs(T[: {rows} // 4]) > 1.0, T[: {rows} // 4], 0.0))
small = T[:10]

def calls():
    for _ in range({small_calls}):
        m64.transform(small)

cases = dict(rbf32=lambda: m32.transform(T32), rbf64=lambda: m64.transform(T),
             spherical=lambda: sph.transform(T), sparse=lambda: m64.transform(Ts),
             small=calls)
out = {{}}
for name, fn in cases.items():
    fn()  # warm-up (packs the panels, first-touch)
    times, cpus = [], []
    for _ in range({repeats}):
        t, c = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[name] = [statistics.median(times), statistics.median(cpus)]
print(json.dumps(out))
"""


def run_tree(src: str, args: argparse.Namespace) -> dict[str, list[float]]:
    code = CHILD.format(src=src, d=args.d, k=args.k, train=args.train, rows=args.rows,
                        repeats=args.repeats, n_jobs=args.n_jobs,
                        small_calls=args.small_calls)
    return run_child(code, src)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src folder of the old tree")
    ap.add_argument("--after", required=True, help="src folder of the new tree")
    ap.add_argument("--train", type=int, default=4000, help="training rows (expansion points)")
    ap.add_argument("--rows", type=int, default=20000, help="rows to transform")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5, help="transforms per case and process")
    ap.add_argument("--pairs", type=int, default=4, help="before/after process pairs")
    ap.add_argument("--small-calls", type=int, default=300, help="calls of the 'small' case")
    ap.add_argument("--n-jobs", type=int, default=1, help="the models' n_jobs")
    args = ap.parse_args(argv)
    runs: dict[str, list[dict[str, list[float]]]] = {"before": [], "after": []}
    for _ in range(args.pairs):
        for name in ("before", "after"):
            src = os.path.abspath(getattr(args, name))
            runs[name].append(run_tree(src, args))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr)
    print(f"| case | before (s, {args.pairs} processes) | after (s) | after / before "
          "(medians) | CPU before (s) | CPU after (s) | CPU after / before |")
    print("|---|---|---|---|---|---|---|")
    for case in CASES:
        b = [r[case][0] for r in runs["before"]]
        a = [r[case][0] for r in runs["after"]]
        cb = [r[case][1] for r in runs["before"]]
        ca = [r[case][1] for r in runs["after"]]
        print(f"| {case} | {min(b):.4f}-{max(b):.4f} | {min(a):.4f}-{max(a):.4f} | "
              f"{statistics.median(a) / statistics.median(b):.3f} | "
              f"{min(cb):.4f}-{max(cb):.4f} | {min(ca):.4f}-{max(ca):.4f} | "
              f"{statistics.median(ca) / statistics.median(cb):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
