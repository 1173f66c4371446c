"""NystromKernelPCA fit + transform of 1,000,000 rows (d = 20, m = 1000 landmarks).

Each configuration runs in a fresh child process that generates the data, fits,
transforms all rows, and reports wall times and its peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes the 160 MB of
data and the 80 MB of scores) and the CPU time (user + system, all threads) of
fit + transform: on a shared machine, CPU time / cores is what the wall time
would be with the machine to itself. Target: fit + transform <= 60 s and <= 4 GB.

Usage: python benchmarks/bench_nystrom_1m.py [--n 1000000] [--landmarks kmeans uniform]
       [--precision auto float64]
('auto' = the default: float32 feature blocks beyond 4096 rows; threads: all cores.)
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys

CHILD = r"""
import json, resource, time
import numpy as np
from sklearn.datasets import make_blobs
from kpca import NystromKernelPCA
n, d, m, landmarks, precision = {n}, {d}, {m}, {landmarks!r}, {precision!r}
X, _ = make_blobs(n, n_features=d, centers=20, cluster_std=3.0, random_state=0)
r0 = resource.getrusage(resource.RUSAGE_SELF)
cpu0 = r0.ru_utime + r0.ru_stime
t0 = time.perf_counter()
est = NystromKernelPCA(10, n_landmarks=m, landmarks=landmarks, gamma="scale",
                       precision=precision, random_state=0)
est.fit(X)
t1 = time.perf_counter()
Z = est.transform(X)
t2 = time.perf_counter()
assert Z.shape == (n, 10) and np.all(np.isfinite(Z))
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps(dict(fit=t1 - t0, transform=t2 - t1, cpu=ru.ru_utime + ru.ru_stime - cpu0,
                      rss=ru.ru_maxrss * 1024,
                      eig=est.eigenvalues_[:3].tolist())))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--m", type=int, default=1000)
    p.add_argument("--landmarks", nargs="+", default=["kmeans", "uniform"])
    p.add_argument("--precision", nargs="+", default=["auto", "float64"])
    a = p.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}, n={a.n}, d={a.d}, m={a.m}, k=10, RBF "
          "gamma='scale'\n")
    print("| landmarks | precision | fit (s) | transform (s) | fit+transform (s) | peak RSS (GB) | "
          "CPU time fit+transform (s) | top-3 eigenvalues | load avg (1 min) before |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|")
    for lm, prec in [(lm, prec) for prec in a.precision for lm in a.landmarks]:
        load = os.getloadavg()[0]
        code = CHILD.format(n=a.n, d=a.d, m=a.m, landmarks=lm, precision=prec)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.strip().splitlines()[-1]
        r = json.loads(out)
        eig = ", ".join(f"{v:.4g}" for v in r["eig"])
        total = r["fit"] + r["transform"]
        print(f"| {lm} | {prec} | {r['fit']:.1f} | {r['transform']:.1f} | {total:.1f}"
              f" | {r['rss'] / 2**30:.2f} | {r['cpu']:.1f} | {eig} | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
