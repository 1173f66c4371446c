"""Before/after of ``kpca select`` on the digits (issue 34): two source trees, alternating.

Runs the command of the issue,

    kpca select digits.csv --labels labels.txt --kernels linear,rbf,poly \
        --gammas median,0.01,0.1 -k 10

(``--unsupervised``: the same without ``--labels``, the held-out reconstruction
criterion) in --pairs pairs of fresh processes, one per tree, alternating (before, after, before,
...), each importing kpca from its tree's ``src``. digits.csv and labels.txt are written
from ``sklearn.datasets.load_digits`` (1,797 rows, 64 columns) into a temporary folder.
Per run it records the wall time, the CPU time of the process (user + system, from
``resource.getrusage(RUSAGE_CHILDREN)``; on a shared machine the CPU time moves less
than the wall time) and the number of lines the command wrote to standard error
(warnings). It prints each run, the medians per tree and the ratios of the medians.

    git worktree add /tmp/kpca-before main
    python benchmarks/ab_select.py --before /tmp/kpca-before/src --after src --pairs 2
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["select", "digits.csv", "--labels", "labels.txt", "--kernels", "linear,rbf,poly",
           "--gammas", "median,0.01,0.1", "-k", "10"]


def write_digits(folder: Path) -> None:
    import numpy as np
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    np.savetxt(folder / "digits.csv", X, delimiter=",", fmt="%g")
    np.savetxt(folder / "labels.txt", y, fmt="%d")


def run_tree(src: str, folder: Path, command: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    where = os.path.abspath(src)
    code = (f"import sys, kpca; assert kpca.__file__.startswith({where!r}), kpca.__file__; "
            "from kpca.cli import main; sys.exit(main(sys.argv[1:]))")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *command], cwd=folder, env=env,
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "stderr_lines": len(out.stderr.splitlines())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True, help="src folder of the old tree")
    p.add_argument("--after", required=True, help="src folder of the new tree")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--unsupervised", action="store_true",
                   help="the command without --labels (reconstruction criterion)")
    args = p.parse_args(argv)
    command = ([c for c in COMMAND if c not in ("--labels", "labels.txt")]
               if args.unsupervised else COMMAND)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_digits(folder)
        runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for i in range(args.pairs):
            for name in ("before", "after"):
                r = run_tree(getattr(args, name), folder, command)
                runs[name].append(r)
                print(f"pair {i + 1} {name:6s}: wall {r['wall']:7.1f} s, cpu {r['cpu']:7.1f} s, "
                      f"{r['stderr_lines']:3d} stderr lines, load {os.getloadavg()[0]:.1f}",
                      flush=True)
    med = {name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
           for name, rs in runs.items()}
    for name, m in med.items():
        print(f"median {name:6s}: wall {m['wall']:.1f} s, cpu {m['cpu']:.1f} s, "
              f"stderr lines {m['stderr_lines']:.0f}")
    print(f"ratio before/after: wall {med['before']['wall'] / med['after']['wall']:.2f}x, "
          f"cpu {med['before']['cpu'] / med['after']['cpu']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
