"""Before/after grid of kpca's default fit: two source trees, alternating cell by cell.

For every cell of ``bench_solvers.py``'s grid (data x kernel, n, k) this runs one fresh
process per tree, alternating (before, after, before, ...), each of which imports kpca
from the tree's ``src`` folder, fits ``kpca.KernelPCA`` with ``bench_solvers.fit_kpca``
on ``bench_solvers.digits`` data with the repeat rule of that script (median of at least
--repeats fits, more for fits under a second), and prints its median time, solver and
number of components. Cells whose ratio is beyond --recheck are run --extra more times
per tree and report the median of all runs. kpca only: scikit-learn is not run.

    git worktree add /tmp/kpca-before <commit>
    python benchmarks/ab_solvers.py --before /tmp/kpca-before/src --after src
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from _ab import run_child

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, statistics, sys, time
import numpy as np
sys.path.insert(0, {bench!r})
import kpca
assert kpca.__file__.startswith({src!r}), kpca.__file__
from bench_solvers import DATA, digits, fit_kpca
standardize, kernel, gamma = DATA[{data!r}]
X = digits({n}, standardize)
model, first, _, _ = fit_kpca(X, {k}, kernel, gamma)
reps = max({repeats}, min(25, int(np.ceil(1.0 / max(first, 1e-3)))))
times = [first] + [fit_kpca(X, {k}, kernel, gamma)[1] for _ in range(reps - 1)]
print(json.dumps({{"s": statistics.median(times), "solver": model.eigen_solver_,
                  "k": int(model.eigenvalues_.shape[0])}}))
"""


def run_tree(src: str, data: str, n: int, k: int, repeats: int) -> dict:
    code = CHILD.format(bench=str(HERE), src=src, data=data, n=n, k=k, repeats=repeats)
    return run_child(code, src)


def main() -> None:
    from bench_solvers import DATA

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src folder of the old tree")
    ap.add_argument("--after", required=True, help="src folder of the new tree")
    ap.add_argument("--n", type=int, nargs="+", default=[500, 1500, 3500, 10000])
    ap.add_argument("--k", type=int, nargs="+", default=[5, 32, 64, 128])
    ap.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--recheck", type=float, default=1.15,
                    help="rerun cells whose after/before is beyond this (or its inverse)")
    ap.add_argument("--extra", type=int, default=2)
    ap.add_argument("--json", help="also write the rows to this JSON-lines file")
    args = ap.parse_args()
    trees = {"before": str(Path(args.before).resolve()),
             "after": str(Path(args.after).resolve())}
    rows = []
    print("| data | n | k | solver | before (ms) | after (ms) | after / before |")
    print("|---|---|---|---|---|---|---|")
    for data in args.data:
        for n in args.n:
            for k in args.k:
                runs: dict[str, list[dict]] = {"before": [], "after": []}
                for name, src in trees.items():
                    runs[name].append(run_tree(src, data, n, k, args.repeats))
                ratio = runs["after"][0]["s"] / runs["before"][0]["s"]
                if ratio > args.recheck or ratio < 1 / args.recheck:
                    for _ in range(args.extra):
                        for name, src in trees.items():
                            runs[name].append(run_tree(src, data, n, k, args.repeats))
                med = {t: statistics.median(r["s"] for r in runs[t]) for t in runs}
                solvers = {t: runs[t][0]["solver"] for t in runs}
                row = {"data": data, "n": n, "k": k, "before_s": med["before"],
                       "after_s": med["after"], "ratio": med["after"] / med["before"],
                       "solver_before": solvers["before"], "solver_after": solvers["after"],
                       "k_before": runs["before"][0]["k"], "k_after": runs["after"][0]["k"],
                       "runs": len(runs["after"])}
                rows.append(row)
                solver = (solvers["after"] if solvers["after"] == solvers["before"]
                          else f"{solvers['before']} -> {solvers['after']}")
                print(f"| {data} | {n} | {k} | {solver} | {1e3 * med['before']:.1f} "
                      f"| {1e3 * med['after']:.1f} | {row['ratio']:.2f} |", flush=True)
                if args.json:
                    with open(args.json, "a") as f:
                        f.write(json.dumps(row) + "\n")
    ratios = sorted(r["ratio"] for r in rows)
    print(f"\nmedian after/before {statistics.median(ratios):.2f}, best {ratios[0]:.2f}, "
          f"worst {ratios[-1]:.2f}; {sum(r > args.recheck for r in ratios)} of "
          f"{len(rows)} cells over {args.recheck}; same solver in "
          f"{sum(r['solver_before'] == r['solver_after'] for r in rows)}, same number of "
          f"components in {sum(r['k_before'] == r['k_after'] for r in rows)}")


if __name__ == "__main__":
    main()
