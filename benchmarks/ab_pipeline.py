"""Before/after of kpca's fits on bench_fit, bench_solvers and bench_incremental's cells.

Two source trees, alternating processes, CPU and wall time.

Issue 32 (the fit as a pipeline) asks that ``bench_solvers.py``, ``bench_fit.py`` and
``bench_incremental.py`` show no regression in alternating before/after runs. This
runs --pairs pairs of fresh processes, one per tree, alternating in ABBA order
(before, after, after, before, ...: a drift in the machine's load falls on both
trees alike). Each process imports kpca from its tree's ``src`` folder (asserted),
makes one untimed warm-up of every cell (fit: one 1,000-row fit), then times every
cell --repeats times and prints the median wall time (``perf_counter``) and the
median CPU time of the process (``process_time``: all its threads; on a machine
shared with other jobs it moves less than wall time, which counts the time other
jobs hold the cores). The table
gives, per cell, the median over the processes of each tree, after / before of
those medians, and the range of the per-pair ratios.

Suites (the cells are those of the three scripts, at sizes that run in minutes on a
two-core machine):

``fit``
    bench_fit's problem: ``KernelPCA(k=10, kernel="rbf", gamma=1/d)`` on Gaussian data,
    d = 20, at each --n (stored; add --memory-limit 3GB for a matrix-free fit).
``solvers``
    bench_solvers' default fit, ``KernelPCA(k, kernel, gamma, random_state=0)``, on
    its ``digits`` data for each --data, --n and --k.
``incremental``
    bench_incremental's exact mode (gauss, gamma = 0.05; blobs, gamma = 1 / (d var)):
    ``IncrementalKernelPCA(10).fit`` of --at rows (batch_size 500), one 500-row
    ``partial_fit`` of that model (on a shallow copy each time, as
    bench_incremental --costs), and one of a model streamed in 500-row batches to
    --at rows (the stream itself is timed once per process).
``stream``
    only the stream of ``incremental`` (``partial_fit`` of 500-row batches to --at
    rows, both data sets), timed as the other cells: a warm-up and --repeats runs.

``--native off`` sets ``KPCA_NATIVE=off`` in both trees' processes: NumPy only, no
compiled kernels, which takes the speed work of the compiled kernels (issue 31: -O3
builds, one-sweep products) out of a comparison of two trees that differ in both.

    git worktree add /tmp/kpca-before <commit>
    python benchmarks/ab_pipeline.py fit --before /tmp/kpca-before/src --after src \
        --n 2000 5000 20000
    python benchmarks/ab_pipeline.py fit --before ... --after src --n 40000 \
        --memory-limit 3GB --repeats 1 --pairs 2
    python benchmarks/ab_pipeline.py solvers --before ... --after src --native off
    python benchmarks/ab_pipeline.py incremental --before ... --after src
    python benchmarks/ab_pipeline.py solvers --table runs.jsonl   # a --json file's pairs
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from _ab import run_child

HERE = Path(__file__).resolve().parent

CHILD = r"""
import copy, json, statistics, sys, time, warnings
import numpy as np
sys.path.insert(0, {bench!r})
import kpca
assert kpca.__file__.startswith({src!r}), kpca.__file__
warnings.simplefilter("ignore")
suite, args = {suite!r}, {args!r}
cells = {{}}  # name -> (function, what to record of its result)

if suite == "fit":
    d = 20
    for n in args["n"]:
        X = np.random.default_rng(0).normal(size=(n, d))
        def fit(X=X):
            return kpca.KernelPCA(10, kernel="rbf", gamma=1.0 / d, random_state=0,
                                  memory_limit=args["memory_limit"]).fit(X)
        cells[f"fit n={{n}}"] = fit
elif suite == "solvers":
    from bench_solvers import DATA, digits
    for data in args["data"]:
        standardize, kernel, gamma = DATA[data]
        for n in args["n"]:
            X = digits(n, standardize)
            for k in args["k"]:
                def fit(X=X, k=k, kernel=kernel, gamma=gamma):
                    return kpca.KernelPCA(k, kernel=kernel, gamma=gamma,
                                          random_state=0).fit(X)
                cells[f"{{data}} n={{n}} k={{k}}"] = fit
elif suite == "incremental":
    from bench_incremental import make_data
    at, b = args["at"], 500
    for data in ("gauss", "blobs"):
        X = make_data(data, at + b, seed=0)
        gamma = 0.05 if data == "gauss" else 1.0 / (X.shape[1] * X[:b].var())
        def new(gamma=gamma, **kw):
            return kpca.IncrementalKernelPCA(10, kernel="rbf", gamma=gamma, **kw)
        def fit(X=X, new=new):
            return new(batch_size=b).fit(X[:at])
        fitted = fit()
        t, c = time.perf_counter(), time.process_time()
        streamed = new()
        for s in range(0, at, b):
            streamed.partial_fit(X[s:s + b])
        cells[f"{{data}}: stream {{at}} rows (once)"] = (time.perf_counter() - t,
                                                     time.process_time() - c)
        cells[f"{{data}}: fit {{at}} rows"] = fit
        for how, base in (("fitted", fitted), ("streamed", streamed)):
            def update(base=base, nxt=X[at:at + b]):
                return copy.copy(base).partial_fit(nxt)
            cells[f"{{data}}: update {{b}} at {{at}} ({{how}})"] = update
elif suite == "stream":
    from bench_incremental import make_data
    at, b = args["at"], 500
    for data in ("gauss", "blobs"):
        X = make_data(data, at, seed=0)
        gamma = 0.05 if data == "gauss" else 1.0 / (X.shape[1] * X[:b].var())
        def stream(X=X, gamma=gamma):
            model = kpca.IncrementalKernelPCA(10, kernel="rbf", gamma=gamma)
            for s in range(0, at, b):
                model.partial_fit(X[s:s + b])
            return model
        cells[f"{{data}}: stream {{at}} rows in {{b}}-row batches"] = stream

def info(model):
    out = {{"k": int(np.asarray(model.eigenvalues_).shape[0])}}
    for name in ("eigen_solver_", "n_passes_"):
        if hasattr(model, name):
            value = getattr(model, name)
            out[name] = value if isinstance(value, str) else int(value)
    return out

out = {{}}
if suite == "fit":  # one small fit warms the imports and caches; the cells are long
    kpca.KernelPCA(10, kernel="rbf", gamma=0.05, random_state=0).fit(
        np.random.default_rng(0).normal(size=(1000, 20)))
for name, fn in cells.items():
    if not callable(fn):  # timed once, above
        out[name] = {{"wall": fn[0], "cpu": fn[1]}}
        continue
    if suite != "fit":
        fn()  # untimed: first calls, caches
    walls, cpus = [], []
    for _ in range(args["repeats"]):
        t, c = time.perf_counter(), time.process_time()
        model = fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    out[name] = {{"wall": statistics.median(walls), "cpu": statistics.median(cpus),
                 **info(model)}}
print(json.dumps(out))
"""


def run_tree(src: str, a: argparse.Namespace) -> dict[str, dict]:
    args = {"n": a.n, "k": a.k, "data": a.data, "at": a.at, "repeats": a.repeats,
            "memory_limit": a.memory_limit}
    code = CHILD.format(bench=str(HERE), src=src, suite=a.suite, args=args)
    return run_child(code, src, **({"KPCA_NATIVE": a.native} if a.native else {}))


def table(runs: dict[str, list[dict]]) -> None:
    """Print the markdown table of ``runs`` (tree -> one result per process, in pair
    order) and a summary line."""
    print("| cell | CPU before (ms) | CPU after (ms) | **CPU after / before** | pairs' CPU "
          "ratios | wall before (ms) | wall after (ms) | wall after / before | same work |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for cell in runs["before"][0]:
        rows = {t: [r[cell] for r in runs[t]] for t in runs}
        med = {(t, m): statistics.median(x[m] for x in rows[t]) for t in rows
               for m in ("cpu", "wall")}
        pair_ratios = sorted(ra["cpu"] / rb["cpu"] for ra, rb in zip(rows["after"],
                                                                      rows["before"],
                                                                      strict=True))
        keys = [key for key in ("eigen_solver_", "n_passes_", "k") if key in rows["after"][0]]
        same = "; ".join(
            f"{key} {rows['before'][0].get(key)}" if rows["before"][0].get(key)
            == rows["after"][0].get(key)
            else f"{key} {rows['before'][0].get(key)} -> {rows['after'][0].get(key)}"
            for key in keys)
        cb, ca = med["before", "cpu"], med["after", "cpu"]
        wb, wa = med["before", "wall"], med["after", "wall"]
        ratios.append((ca / cb, wa / wb, cell))
        print(f"| {cell} | {cb * 1e3:.0f} | {ca * 1e3:.0f} | **{ca / cb:.2f}** | "
              f"{pair_ratios[0]:.2f}-{pair_ratios[-1]:.2f} | {wb * 1e3:.0f} | "
              f"{wa * 1e3:.0f} | {wa / wb:.2f} | {same} |")
    cpu = sorted(r[0] for r in ratios)
    wall = sorted(r[1] for r in ratios)
    print(f"\n{len(ratios)} cells, {len(runs['after'])} pairs: CPU after/before median "
          f"{statistics.median(cpu):.2f} ({cpu[0]:.2f}-{cpu[-1]:.2f}), wall median "
          f"{statistics.median(wall):.2f} ({wall[0]:.2f}-{wall[-1]:.2f}); over 1.10 (CPU): "
          + (", ".join(f"{c} {r:.2f}" for r, _, c in ratios if r > 1.10) or "none"))


def from_json(path: str, suite: str, native: str | None) -> dict[str, list[dict]]:
    """The complete pairs of ``path``'s records (written by --json) of one suite and
    KPCA_NATIVE: a run stopped early still gives its finished pairs."""
    pairs: dict[int, dict[str, dict]] = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["suite"] == suite and rec["native"] == native:
                pairs.setdefault(rec["pair"], {})[rec["tree"]] = rec["cells"]
    done = [pairs[p] for p in sorted(pairs) if len(pairs[p]) == 2]
    if not done:
        sys.exit(f"{path}: no complete before/after pair of {suite} (KPCA_NATIVE={native})")
    return {t: [p[t] for p in done] for t in ("before", "after")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", choices=["fit", "solvers", "incremental", "stream"])
    ap.add_argument("--before", help="src folder of the old tree")
    ap.add_argument("--after", help="src folder of the new tree")
    ap.add_argument("--table", metavar="JSON", help="only print the table of the complete "
                    "pairs a --json file holds for this suite and --native (no runs)")
    ap.add_argument("--pairs", type=int, default=5, help="before/after process pairs")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per cell and process")
    ap.add_argument("--n", type=int, nargs="+", default=None,
                    help="rows (fit: 2000 5000 20000; solvers: 500 1500 3500)")
    ap.add_argument("--k", type=int, nargs="+", default=[5, 32, 128], help="solvers' k")
    ap.add_argument("--data", nargs="+", default=["raw-rbf-1e-3", "raw-rbf-1e-2", "std-rbf",
                                                  "std-linear"], help="solvers' data kinds")
    ap.add_argument("--at", type=int, default=6000, help="incremental: rows of the model")
    ap.add_argument("--memory-limit", default=None, help="fit: KernelPCA's memory_limit")
    ap.add_argument("--native", default=None, help="KPCA_NATIVE in both trees (e.g. off)")
    ap.add_argument("--json", help="also append the per-process results to this file")
    a = ap.parse_args(argv)
    if a.table:
        table(from_json(a.table, a.suite, a.native))
        return 0
    if not (a.before and a.after):
        ap.error("--before and --after are required (the src folders of the two trees)")
    if a.n is None:
        a.n = [2000, 5000, 20000] if a.suite == "fit" else [500, 1500, 3500]
    trees = {"before": str(Path(a.before).resolve()), "after": str(Path(a.after).resolve())}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    load0 = os.getloadavg()
    for p in range(a.pairs):
        order = ("before", "after") if p % 2 == 0 else ("after", "before")
        for name in order:
            runs[name].append(run_tree(trees[name], a))
            print(name, json.dumps(runs[name][-1]), file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps({"suite": a.suite, "native": a.native, "tree": name,
                                        "pair": p, "cells": runs[name][-1]}) + "\n")
    load1 = os.getloadavg()
    print(f"\n{a.suite}, KPCA_NATIVE={a.native or 'unset'}, {a.pairs} pairs (ABBA), "
          f"{a.repeats} timed runs per cell and process; load average "
          f"{load0[0]:.1f}/{load0[1]:.1f} -> {load1[0]:.1f}/{load1[1]:.1f} (1/5 min)\n")
    table(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
