"""Exact KPCA fit and transform: kpca against scikit-learn, side by side.

For each n in --n, ONE process runs kpca.KernelPCA (eigen_solver='auto') and
scikit-learn's KernelPCA with its 'arpack' and 'randomized' solvers on the same data
(RBF, d=20, k=10, gamma=1/d), and prints time, peak memory and eigenvalue error
(relative to the largest, against scikit-learn's ARPACK) and the ratios. It then
times ``transform`` of --n-new new rows. For --kpca-only sizes, kpca runs alone in
a child process with --memory-limit (matrix-free when needed) and its peak RSS is
read from the operating system. With fits at three or more sizes from 5,000 rows on,
the script ends with the exponent of the cost growth (time ~ n^e, least squares on
logarithms) and that of the fits' roofline bounds.

Peak memory of each side is the peak resident set size above the baseline at the
start of the call, sampled every 5 ms by a background thread (NumPy returns large
freed arrays to the OS at once, so both libraries can be measured in one process;
tracemalloc was avoided because its bookkeeping slows the timed code). The child
process's peak RSS (VmHWM) is reported for the kpca-only runs.

The VM this project runs on backs guest memory lazily: the first touch of fresh
memory costs ~3 s/GB, a reuse 0.2 s/GB. The script first touches --warm GB so that
neither library pays that cost for the other.

Every kpca fit is shown next to its roofline bound (benchmarks/roofline.py): this
machine's primitives are measured first, the passes kpca made (and their widths) are
read from its log events, and the bound is the fastest any exact fit making those
passes could be here.

    python benchmarks/bench_fit.py --n 5000 10000 20000 --kpca-only 50000 100000 \
        --memory-limit 3GB
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import subprocess
import sys
import sysconfig
import threading
import time

import numpy as np
import psutil
from roofline import PassCounter, lower_bound, measure_primitives

import kpca
from kpca._memory import parse_memory


def n_cores() -> int:
    return kpca.get_config()["n_cores"]  # affinity and cgroup CPU quota


def smt() -> str:
    """Hardware threads sharing cpu0's core (Linux sysfs), or '?'."""
    try:
        with open("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list") as f:
            text = f.read().strip()
    except OSError:
        return "?"
    count = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return str(count)


def warm(gb: float) -> None:
    if gb > 0:
        a = np.ones(int(gb * 2**30) // 8)
        del a


def measure(fn):
    """(result, seconds, peak RSS above the starting RSS in bytes) of fn()."""
    gc.collect()
    proc = psutil.Process()
    base = proc.memory_info().rss
    peak = [base]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], proc.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    done.set()
    sampler.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    return out, dt, peak[0] - base


def subspace_sin(A: np.ndarray, B: np.ndarray) -> float:
    """Sine of the largest principal angle between the column spans of A and B.

    The top eigenvalues of an RBF kernel on Gaussian data are clustered, so single
    components may rotate within the span; the span itself is what must agree.
    """
    qa, _ = np.linalg.qr(A)
    qb, _ = np.linalg.qr(B)
    s = np.linalg.svd(qa.T @ qb, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def side_by_side(n: int, d: int, k: int, n_new: int, sk_solvers: list[str]) -> dict:
    from sklearn.decomposition import KernelPCA as SkKernelPCA

    import kpca

    X = data(n, d)
    X_new = data(n_new, d, seed=1)
    gamma = 1.0 / d
    row = {"n": n}
    # each library's first fit in a process imports what it imports lazily and wakes
    # its thread pools (~0.05 s for kpca here): a 1,000-row fit of each first, as
    # kpca_alone does, so that neither side's timed fit pays for it
    warm_X = data(1000, d, seed=2)
    kpca.KernelPCA(k, kernel="rbf", gamma=gamma, random_state=0).fit(warm_X)
    for solver in sk_solvers:
        SkKernelPCA(k, kernel="rbf", gamma=gamma, eigen_solver=solver,
                    random_state=0).fit(warm_X)
    with PassCounter() as passes:
        ours, t, peak = measure(
            lambda: kpca.KernelPCA(k, kernel="rbf", gamma=gamma, random_state=0).fit(X)
        )
    row.update(kpca_s=t, kpca_peak=peak, kpca_solver=ours.eigen_solver_,
               kpca_widths=passes.widths)
    Z_ours, t, peak = measure(lambda: ours.transform(X_new))
    row.update(kpca_transform_s=t, kpca_transform_peak=peak)
    ref_vals = None
    for solver in sk_solvers:
        est, t, peak = measure(
            lambda s=solver: SkKernelPCA(
                k, kernel="rbf", gamma=gamma, eigen_solver=s, random_state=0
            ).fit(X)
        )
        row[f"sk_{solver}_s"], row[f"sk_{solver}_peak"] = t, peak
        row[f"sk_{solver}_eigs"] = est.eigenvalues_.tolist()
        if solver == "arpack":
            ref_vals = est.eigenvalues_
        if solver == "arpack" or (solver == sk_solvers[-1] and "sk_transform_s" not in row):
            Z_sk, t, peak = measure(lambda e=est: e.transform(X_new))
            row.update(sk_transform_s=t, sk_transform_peak=peak, sk_transform_solver=solver)
            row["transform_subspace_sin"] = subspace_sin(Z_ours, Z_sk)
        del est
        gc.collect()
    if ref_vals is not None:
        row["kpca_eig_err"] = float(np.max(np.abs(ours.eigenvalues_ - ref_vals)) / ref_vals[0])
        for solver in sk_solvers:
            vals = np.asarray(row[f"sk_{solver}_eigs"])
            row[f"sk_{solver}_eig_err"] = float(np.max(np.abs(vals - ref_vals)) / ref_vals[0])
    best = min(sk_solvers, key=lambda s: row[f"sk_{s}_s"])
    row.update(
        sk_best=best,
        time_ratio=row[f"sk_{best}_s"] / row["kpca_s"],
        memory_ratio=row["kpca_peak"] / row[f"sk_{best}_peak"],
        transform_ratio=row["sk_transform_s"] / row["kpca_transform_s"],
    )
    return row


def peak_rss() -> int:
    """High-water RSS of this process image in bytes (VmHWM; unlike ru_maxrss it is
    reset by exec, so a parent's memory never counts)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def kpca_alone(n: int, d: int, k: int, memory_limit: str | None) -> dict:
    import kpca

    X = data(n, d)
    # a process's first fit imports what kpca imports lazily (scikit-learn's
    # validation, SciPy's linear algebra: ~1 s here); side_by_side times its fits
    # after those imports, and so does this, after a 1,000-row fit
    kpca.KernelPCA(k, kernel="rbf", gamma=1.0 / d, random_state=0).fit(data(1000, d))
    with PassCounter() as passes:
        t, c, w = time.perf_counter(), time.process_time(), time.time()
        main = time.thread_time()  # this thread's CPU: the fit's serial work
        est = kpca.KernelPCA(
            k, kernel="rbf", gamma=1.0 / d, random_state=0, memory_limit=memory_limit
        ).fit(X)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        serial = time.thread_time() - main
        phases = passes.phases(w, time.time())
    rss = peak_rss()
    return {
        "n": n,
        "kpca_s": dt,
        "cpu_s": cpu,
        "serial_cpu_s": serial,
        "pass_s": passes.seconds,
        "residuals": passes.residuals,
        **phases,
        "peak_rss": rss,
        "solver": est.eigen_solver_,
        "eigenvalues": est.eigenvalues_[:3].tolist(),
        "memory_limit": memory_limit,
        "kpca_widths": passes.widths,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="*", default=[5000, 10000, 20000])
    p.add_argument("--kpca-only", type=int, nargs="*", default=[])
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--n-new", type=int, default=10000)
    p.add_argument("--sk-solvers", nargs="+", default=["randomized", "arpack"])
    p.add_argument("--memory-limit", default=None)
    p.add_argument("--warm", type=float, default=10.0, help="GB of memory to touch first")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        spec = json.loads(args.child)
        if spec["mode"] == "side":
            warm(args.warm)
            out = side_by_side(spec["n"], args.d, args.k, args.n_new, args.sk_solvers)
        else:
            out = kpca_alone(spec["n"], args.d, args.k, args.memory_limit)
        print("RESULT " + json.dumps(out))
        return 0

    print(f"# machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"python {platform.python_version()}, numpy {np.__version__}; "
          f"{n_cores()} cores, {smt()} hardware thread(s) a core; extensions built with "
          f"CFLAGS {sysconfig.get_config_var('CFLAGS')!r} (setup.py appends -O3)")
    # this machine's primitives, for the roofline bound of every fit (roofline.py)
    prim = measure_primitives(args.d, 16, [128, 256, 512, 1024], n_cores(), 5,
                              widths=[16, 24, 32])
    rates = ", ".join(f"{prim[f'product_gemm_gflops_b{w}']:.0f} ({w} columns)"
                      for w in prim["widths"])
    print(f"# roofline primitives: kernel GEMM {prim['kernel_gemm_gflops']:.0f} GFLOP/s, "
          f"product GEMM {rates} GFLOP/s, exp "
          f"{prim['exp_ns']:.2f} ns/value, kpca's RBF block {prim['rbf_block_ns']:.2f} "
          f"ns/value, read {prim['read_gbs']:.1f} GB/s, rewrite "
          f"{prim['write_gbs']:.1f} GB/s")

    def bound(r: dict) -> str:
        widths = r.get("kpca_widths") or []
        if not widths:  # a dense (LAPACK) fit makes no kernel passes
            r["bound_s"] = float("nan")
            return "– | –"
        limit = r.get("memory_limit")
        budget = None if limit is None else parse_memory(limit)
        b = lower_bound(r["n"], args.d, widths, prim, budget)["bound_s"]
        r["bound_s"] = b
        return f"{b:.2f} ({len(widths)} passes) | {r['kpca_s'] / b:.1f}x"

    rows = []
    # A kpca-only child must not touch memory it does not need (its peak RSS is the
    # figure reported), so a throw-away process warms the VM for it once.
    if args.kpca_only and args.warm > 0:
        subprocess.run([sys.executable, "-c", "import numpy as np; "
                        f"a = np.ones(int({args.warm} * 2**30) // 8)"], check=True)
    for mode, sizes in (("side", args.n), ("alone", args.kpca_only)):
        for n in sizes:
            spec = json.dumps({"mode": mode, "n": n})
            cmd = [sys.executable, __file__, "--child", spec, "--d", str(args.d),
                   "--k", str(args.k), "--n-new", str(args.n_new), "--warm", str(args.warm),
                   "--sk-solvers", *args.sk_solvers]
            if args.memory_limit:
                cmd += ["--memory-limit", args.memory_limit]
            res = subprocess.run(cmd, capture_output=True, text=True)
            line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
            if res.returncode or not line:
                print(res.stdout, res.stderr, file=sys.stderr)
                return 1
            row = json.loads(line[0][7:])
            row["mode"] = mode
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)

    gb = 2**30
    print(f"\n## fit: kpca (auto) vs scikit-learn, RBF, d={args.d}, k={args.k}\n")
    head = ("| n | kpca s | roofline bound s | kpca / bound | "
            + " | ".join(f"sk {s} s" for s in args.sk_solvers)
            + " | speed-up vs best sk | kpca peak GB | sk best peak GB | memory ratio "
            "| kpca eig err | " + " | ".join(f"sk {s} eig err" for s in args.sk_solvers) + " |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for r in rows:
        if r["mode"] != "side":
            continue
        sk_t = " | ".join(f"{r[f'sk_{s}_s']:.2f}" for s in args.sk_solvers)
        sk_e = " | ".join(f"{r.get(f'sk_{s}_eig_err', float('nan')):.1e}" for s in args.sk_solvers)
        sk_peak = r["sk_" + r["sk_best"] + "_peak"]
        print(f"| {r['n']} | {r['kpca_s']:.2f} | {bound(r)} | {sk_t} | {r['time_ratio']:.1f}x "
              f"({r['sk_best']}) | {r['kpca_peak'] / gb:.2f} | "
              f"{sk_peak / gb:.2f} | {r['memory_ratio']:.2f} | "
              f"{r.get('kpca_eig_err', float('nan')):.1e} | {sk_e} |")
    print(f"\n## transform of {args.n_new} new rows\n")
    print("| n fit | kpca s | sk s | speed-up | kpca peak GB | sk peak GB | subspace sin |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if r["mode"] == "side":
            print(f"| {r['n']} | {r['kpca_transform_s']:.2f} | {r['sk_transform_s']:.2f} | "
                  f"{r['transform_ratio']:.1f}x | {r['kpca_transform_peak'] / gb:.2f} | "
                  f"{r['sk_transform_peak'] / gb:.2f} | {r['transform_subspace_sin']:.1e} |")
    alone = [r for r in rows if r["mode"] == "alone"]
    if alone:
        print(f"\n## kpca alone (memory_limit={args.memory_limit})\n")
        print("| n | fit s | roofline bound s | fit / bound | peak RSS GB | solver | "
              "top eigenvalues |")
        print("|---|---|---|---|---|---|---|")
        for r in alone:
            print(f"| {r['n']} | {r['kpca_s']:.1f} | {bound(r)} | {r['peak_rss'] / gb:.2f} | "
                  f"{r['solver']} | "
                  f"{', '.join(f'{v:.4f}' for v in r['eigenvalues'])} |")
        # where each fit's time went (from kpca's log events): the passes, and what is
        # not a pass (before the first: plan, warm start, set-up; between: the
        # solver's algebra; after the last: Ritz vectors, scores); CPU time of all
        # threads, the main thread's CPU time (the serial work: what runs outside the
        # worker threads), and the solver's residual after each pass
        print("\n| n | fit s | CPU s | serial CPU s | passes s (each) | before s | between s "
              "| after s | residual after each pass |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in alone:
            each = ", ".join(f"{s:.2f}" for s in r["pass_s"])
            res = ", ".join(f"{v:.1e}" for v in r["residuals"])
            print(f"| {r['n']} | {r['kpca_s']:.2f} | {r['cpu_s']:.1f} | "
                  f"{r['serial_cpu_s']:.2f} | {r['passes_s']:.2f} "
                  f"({each}) | {r['before_s']:.2f} | {r['between_s']:.2f} | "
                  f"{r['after_s']:.2f} | {res} |")
    growth = cost_growth(rows)
    if growth is not None:
        print(f"\n## cost growth\n\nkpca's fit time against n over n = {growth['n_min']:,}-"
              f"{growth['n_max']:,} ({growth['points']} fits): time ~ n^{growth['exponent']:.2f} "
              f"(least squares on log time against log n); the roofline bounds of the same "
              f"fits grow as n^{growth['bound_exponent']:.2f}.")
    return 0


def cost_growth(rows: list[dict], prim: dict | None = None) -> dict | None:
    """The exponent ``e`` of ``time ~ n^e`` from every kpca fit of at least 5,000 rows
    (least squares on logarithms), and that of their roofline bounds (the passes they
    made, priced with this machine's primitives: what the passes alone predict)."""
    pts = [(r["n"], r["kpca_s"], r.get("bound_s")) for r in rows if r["n"] >= 5000]
    if len({n for n, _, _ in pts}) < 3:
        return None
    n, t, b = (np.array(v, dtype=float) for v in zip(*pts, strict=True))
    e = float(np.polyfit(np.log(n), np.log(t), 1)[0])
    ok = np.isfinite(b)
    eb = float(np.polyfit(np.log(n[ok]), np.log(b[ok]), 1)[0]) if ok.sum() >= 3 else np.nan
    return {"exponent": e, "bound_exponent": eb, "n_min": int(n.min()), "n_max": int(n.max()),
            "points": len(pts)}


if __name__ == "__main__":
    raise SystemExit(main())
