"""kpca's thread scaling against the machine's own ceiling, in one run.

Issue 31 ("all the cores"): for n_jobs = 1, 2, 4, ... up to the cores this process may
use (kpca's ``n_cores``: affinity and cgroup quota), the median time of --repeats runs
of

- the matrix-free exact fit: --n-free rows (default 40,000), RBF, d = 20, k = 10,
  gamma = 1/d, Gaussian data (as ``bench_fit.py``), ``memory_limit="3GB"``; the script
  checks from kpca's pass log that no tile was kept (matrix-free);
- the stored exact fit: --n-stored rows (default 20,000), the default memory budget
  (every tile kept: checked the same way);
- ``transform`` of --n-new rows (default 10,000) against the stored fit;

and, in the same run, the machine's ceiling at the same thread counts:

- BLAS ``sgemm``: a --gemm-side square float32 product (default 2,048) on t BLAS
  threads, in GFLOP/s;
- a threaded element-wise sweep: ``np.exp`` in place over 1 MiB chunks of a 256 MiB
  float32 array on a pool of t Python threads (NumPy releases the GIL in the loop),
  in GB/s.

The thread counts run interleaved, one round after another (each round: every count
once), so that the slow drifts of a shared machine hit all counts alike. The table
gives times, speed-ups over one thread, and kpca's speed-up as a fraction of sgemm's
(issue 31's target on 16 cores: at least 0.85 for the matrix-free fit).

``--gil``: instead of the table, the share of a matrix-free pass (n_jobs=1, --gil-n
rows) spent holding the GIL, sampled by py-spy (``--gil`` samples against ``--idle``
samples of the same passes, frames under ``TiledKernelOperator._pass``); py-spy from
PATH or --py-spy (``pip install py-spy``; it needs permission to trace a child
process, which root has).

    python benchmarks/bench_threads.py                   # the table
    python benchmarks/bench_threads.py --n-free 20000 --repeats 1
    python benchmarks/bench_threads.py --gil --py-spy /path/to/py-spy
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import kpca
from kpca._parallel import blas_threads

D, K = 20, 10


class PassLog(logging.Handler):
    """Kernel passes and the share of tiles kept, from kpca's log records."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.passes = 0
        self.kept: set[float] = set()

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "kpca_event", None) == "pass":
            self.passes += 1
            self.kept.add(float(record.args[3]))  # "(%.0f%% kept)"


def thread_counts(cores: int) -> list[int]:
    counts, t = [], 1
    while t < cores:
        counts.append(t)
        t *= 2
    return counts + [cores]


def seconds(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def logged(fn: Callable[[], object]) -> tuple[float, PassLog]:
    log, handler = logging.getLogger("kpca"), PassLog()
    old = log.level
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    try:
        return seconds(fn), handler
    finally:
        log.removeHandler(handler)
        log.setLevel(old)


def gaussian(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, D))


def scaling(args: argparse.Namespace) -> int:
    cores = kpca.get_config()["n_cores"]
    counts = thread_counts(cores if args.max_threads is None else args.max_threads)
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
          f"{cores} for this process (kpca n_cores); numpy {np.__version__}; load average "
          f"{os.getloadavg()[0]:.2f} at start; median of {args.repeats} interleaved rounds")
    X_free, X_stored, X_new = gaussian(args.n_free), gaussian(args.n_stored), gaussian(
        args.n_new, seed=1)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((args.gemm_side, args.gemm_side)).astype(np.float32)
    B = rng.standard_normal((args.gemm_side, args.gemm_side)).astype(np.float32)
    C = np.empty_like(A)
    big = rng.standard_normal(64 * 2**20).astype(np.float32) * 1e-3  # 256 MiB
    chunks = np.split(big, big.size // 2**18)  # 1 MiB each
    outs = np.split(np.empty_like(big), len(chunks))
    np.matmul(A, B, out=C)  # warm-up: BLAS threads started, pages touched
    times: dict[tuple[str, int], list[float]] = {}
    checks: dict[str, set[float]] = {"free": set(), "stored": set()}

    def fit(X, j, limit):
        return kpca.KernelPCA(K, kernel="rbf", gamma=1.0 / D, random_state=0, n_jobs=j,
                              memory_limit=limit).fit(X)

    def gemm(t):
        with blas_threads(t):
            for _ in range(args.gemm_repeats):
                np.matmul(A, B, out=C)

    def sweep(t):
        with blas_threads(1), ThreadPoolExecutor(t) as pool:
            list(pool.map(lambda c, o: np.exp(c, out=o), chunks, outs))

    for r in range(args.repeats):
        for t in counts:
            s, log = logged(lambda t=t: fit(X_free, t, args.memory_limit))
            times.setdefault(("free", t), []).append(s)
            checks["free"] |= log.kept
            held: list = []
            s, log = logged(lambda t=t, held=held: held.append(fit(X_stored, t, None)))
            times.setdefault(("stored", t), []).append(s)
            checks["stored"] |= log.kept
            model = held.pop()
            model.set_params(n_jobs=t)
            times.setdefault(("transform", t), []).append(
                seconds(lambda m=model: m.transform(X_new)))
            times.setdefault(("sgemm", t), []).append(seconds(lambda t=t: gemm(t)))
            times.setdefault(("exp", t), []).append(seconds(lambda t=t: sweep(t)))
        print(f"# round {r + 1} of {args.repeats} done", flush=True)
    med = {key: statistics.median(v) for key, v in times.items()}
    gflops = {t: args.gemm_repeats * 2 * args.gemm_side**3 / med["sgemm", t] / 1e9
              for t in counts}
    gbs = {t: 2 * big.nbytes / med["exp", t] / 1e9 for t in counts}  # read + write
    free = "matrix-free" if checks["free"] == {0.0} else "NOT matrix-free"
    print(f"# {args.n_free:,}-row fit, memory_limit={args.memory_limit}: tiles kept "
          f"{sorted(checks['free'])} % ({free}); {args.n_stored:,}-row fit: kept "
          f"{sorted(checks['stored'])} %")
    print("| threads | matrix-free fit (s) | speed-up | stored fit (s) | speed-up | transform "
          "(s) | speed-up | sgemm (GFLOP/s) | speed-up | exp sweep (GB/s) | speed-up | "
          "matrix-free / sgemm speed-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for t in counts:
        up = {name: med[name, 1] / med[name, t] for name in ("free", "stored", "transform")}
        g_up, e_up = gflops[t] / gflops[1], gbs[t] / gbs[1]
        print(f"| {t} | {med['free', t]:.2f} | {up['free']:.2f} | {med['stored', t]:.3f} | "
              f"{up['stored']:.2f} | {med['transform', t]:.3f} | {up['transform']:.2f} | "
              f"{gflops[t]:.0f} | {g_up:.2f} | {gbs[t]:.1f} | {e_up:.2f} | "
              f"{up['free'] / g_up:.2f} |")
    print(f"# load average {os.getloadavg()[0]:.2f} at end")
    return 0


# ------------------------------------------------------------------------ --gil

GIL_CHILD = r"""
import sys, time
import numpy as np
from kpca.kernels import RBF
from kpca.operators._tiled import TiledKernelOperator
n, passes, b = {n}, {passes}, {b}
X = np.random.default_rng(0).normal(size=(n, {d}))
# too little memory for K (float32): every tile is recomputed (matrix-free)
op = TiledKernelOperator(RBF(gamma=1.0 / {d}), X, dtype=np.float32, n_jobs=1,
                         memory_limit=n * n, partial=False)
assert op.fraction_stored == 0.0
V = np.random.default_rng(1).standard_normal((n, b))
t = time.perf_counter()
for _ in range(passes):
    op.matmat(V)
print("pass_seconds", (time.perf_counter() - t) / passes, flush=True)
"""


def _spy(py_spy: str, code: str, flags: list[str], rate: int) -> tuple[int, int]:
    """(samples under ``_pass``, all samples) of ``code`` run under py-spy."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "raw.txt")
        script = os.path.join(tmp, "child.py")
        with open(script, "w") as f:
            f.write(code)
        subprocess.run([py_spy, "record", "-r", str(rate), "-f", "raw", "-o", out, *flags,
                        "--", sys.executable, script], check=True, capture_output=True)
        in_pass = total = 0
        with open(out) as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                total += int(count)
                if "_pass (" in stack:
                    in_pass += int(count)
    return in_pass, total


def gil(args: argparse.Namespace) -> int:
    py_spy = args.py_spy or shutil.which("py-spy")
    print(f"# share of a matrix-free pass holding the GIL: n = {args.gil_n:,}, d = {D}, "
          f"{args.gil_b} columns, n_jobs=1, {args.gil_passes} passes; load average "
          f"{os.getloadavg()[0]:.2f}")
    if py_spy:
        code = GIL_CHILD.format(n=args.gil_n, passes=args.gil_passes, b=args.gil_b, d=D)
        held, _ = _spy(py_spy, code, ["--gil"], args.rate)
        active, _ = _spy(py_spy, code, ["--idle"], args.rate)
        print(f"py-spy ({args.rate} Hz): {held} samples holding the GIL under _pass, "
              f"{active} in all (idle included) -> GIL held {100 * held / max(1, active):.1f} % "
              "of the pass")
    else:
        print("py-spy not found: install it (pip install py-spy) or pass --py-spy PATH. (A "
              "profiler hook cannot tell: NumPy's operators, e.g. '@' and '+=', make no C-call "
              "events, and some C calls keep the GIL.)")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-free", type=int, default=40_000)
    ap.add_argument("--memory-limit", default="3GB")
    ap.add_argument("--n-stored", type=int, default=20_000)
    ap.add_argument("--n-new", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-threads", type=int, default=None,
                    help="largest thread count (default: kpca's n_cores)")
    ap.add_argument("--gemm-side", type=int, default=2048)
    ap.add_argument("--gemm-repeats", type=int, default=3)
    ap.add_argument("--gil", action="store_true", help="the GIL share of a pass instead")
    ap.add_argument("--gil-n", type=int, default=20_000)
    ap.add_argument("--gil-b", type=int, default=16)
    ap.add_argument("--gil-passes", type=int, default=3)
    ap.add_argument("--py-spy", default=None, help="py-spy executable (default: PATH)")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    args = ap.parse_args(argv)
    return gil(args) if args.gil else scaling(args)


if __name__ == "__main__":
    sys.exit(main())
