"""``kpca fit-transform --estimator nystrom|random-features`` on large files: peak memory.

For each number of rows, a table of ``d`` float64 columns (20 Gaussian blobs) is
written in chunks to a file (.parquet, .npy or .csv), then a fresh child process
runs the command line on it::

    kpca fit-transform big.FMT --estimator nystrom --n-landmarks 200 -k 10 \
         --seed 0 -o scores.parquet

and reports its wall time and peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``). The rows are streamed
(:func:`kpca.io.open_rows`) and the scores written block by block, so the peak
should not grow with the number of rows: the 1M-row file alone (160 MB for
d = 20) would otherwise show in it twice (data and float64 copy). The last
column is what the whole table would take in memory.

Usage: python benchmarks/bench_cli_stream.py [--rows 100000 1000000] [--d 20]
       [--format parquet] [--estimator nystrom] [--landmarks 200] [--dir DIR]
Prints a markdown table. Needs pyarrow for Parquet.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHILD = r"""
import json, resource, sys, time
from kpca.cli import main
t0 = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps(dict(code=code, wall=wall, rss=ru.ru_maxrss * 1024,
                      cpu=ru.ru_utime + ru.ru_stime)))
"""

CHUNK = 100_000


def _chunks(n: int, d: int, seed: int = 0):
    """Blob data in chunks of CHUNK rows (never the whole table in memory)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=10.0, size=(20, d))
    for start in range(0, n, CHUNK):
        b = min(CHUNK, n - start)
        yield centres[rng.integers(0, 20, b)] + rng.normal(scale=3.0, size=(b, d))


def write_data(path: Path, n: int, d: int) -> None:
    """Write the table chunk by chunk with kpca's own streaming writer."""
    from kpca.io import open_table_writer

    with open_table_writer(path, [f"x{j}" for j in range(d)], n_rows=n) as out:
        for block in _chunks(n, d):
            out.write(block)


def run(path: Path, out: Path, estimator: str, landmarks: int) -> dict:
    size = ["--n-landmarks", str(landmarks)] if estimator == "nystrom" else [
        "--n-features", str(landmarks)]
    argv = [str(path), "--estimator", estimator, *size, "-k", "10", "--seed", "0",
            "-o", str(out)]
    src = Path(__file__).resolve().parents[1] / "src"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), os.environ.get(
        "PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CHILD, "fit-transform", *argv],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"the child failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["code"] != 0:
        raise RuntimeError(f"kpca exited with {result['code']}:\n{proc.stderr}")
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--format", choices=["parquet", "npy", "csv"], default="parquet")
    p.add_argument("--estimator", choices=["nystrom", "random-features"], default="nystrom")
    p.add_argument("--landmarks", type=int, default=200,
                   help="landmarks (nystrom) or random features")
    p.add_argument("--dir", default=None, help="where the files go (default: a temp dir)")
    a = p.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}; kpca fit-transform --estimator {a.estimator} "
          f"({a.landmarks}), k = 10, d = {a.d}, {a.format} in, parquet out\n")
    print("| rows | file MB | write s | fit-transform s | CPU s | peak RSS MB | table MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for n in a.rows:
            path, out = Path(tmp) / f"big.{a.format}", Path(tmp) / "scores.parquet"
            t0 = time.perf_counter()
            write_data(path, n, a.d)
            written = time.perf_counter() - t0
            r = run(path, out, a.estimator, a.landmarks)
            print(f"| {n:,} | {path.stat().st_size / 1e6:.0f} | {written:.1f} | "
                  f"{r['wall']:.1f} | {r['cpu']:.1f} | {r['rss'] / 1e6:.0f} | "
                  f"{n * a.d * 8 / 1e6:.0f} |", flush=True)
            path.unlink()
            out.unlink()


if __name__ == "__main__":
    main()
