"""Incremental kernel PCA against refitting, in one run (issue 16).

A stream of 20,000 rows (RBF, d = 20, k = 10) arrives in batches of 500. The only
alternative a user has without ``partial_fit`` is to refit ``kpca.KernelPCA`` on all
rows seen after every batch; this script times both, side by side:

1. **exact mode** -- ``IncrementalKernelPCA.partial_fit`` per batch against a refit of
   ``KernelPCA`` (defaults, same gamma) on the same rows after every batch: total
   times, and at ``--at`` rows seen (10,000) the median of ``--repeats`` updates of
   the next 500 rows (each on a shallow copy of the same model: an update never
   writes into the model it starts from) against the median of as many refits on
   those rows, alternating. The eigenvalues of the two are compared at every
   checkpoint (max relative error against the refit, relative to the largest).
2. **bounded mode** (``max_rows`` landmarks, streaming Nyström): per-batch time and
   the top-10 eigenvalue error (max relative) and held-out score alignment (mean
   canonical correlation) against batch ``KernelPCA`` on all 20,000 rows.
3. **memory**: 1,000,000 rows streamed through the bounded mode (generated batch by
   batch, never held); peak traced memory (tracemalloc) after 10 %, 50 % and 100 %
   of the stream, which must stay flat.

Data: ``--data blobs`` (default; 20 Gaussian clusters, as benchmarks/bench_approx.py)
or ``--data gauss`` (isotropic Gaussian: a flat spectrum, the hardest case for an
eigensolver). gamma = 1 / (d Var X) of the first batch.

4. **costs** (issue 31, ``--costs``: only this part runs): what a batch fit and one
   update cost against ``KernelPCA``, on both data sets in one run (gauss with
   gamma = 0.05, the issue's; blobs with 1 / (d Var X)):
   ``IncrementalKernelPCA(k).fit`` against ``KernelPCA(k).fit`` on ``--fit-rows``
   (6,500) rows, then at each of ``--update-at`` (6,000 and 10,000) rows one update of
   ``--batch`` (500) rows against a ``KernelPCA`` refit on the grown rows: on shallow
   copies of a model streamed in batches of ``--batch`` rows (an update in a stream),
   and of one fitted at once (the first update after ``fit``). The two sides
   alternate, ``--repeats`` times; medians of wall-clock and of process CPU time
   (less sensitive to other processes on a shared machine), their ratios, and the
   load average before and after each block. With ``--trace``, each update's
   residuals step by step, and the ceiling of the ratio: the refit's CPU time over
   the update's passes plus the work it cannot avoid besides them (the new rows'
   block row with ``T_bn V``, and ``E U``).
5. **profile** (``--profile``: only this part runs): one update's process CPU time by
   part (passes, the new rows' kernel values, the products with the new columns, small
   eigenproblems, the update's own algebra, the rest), from cProfile with one worker
   thread.

Usage: python benchmarks/bench_incremental.py [--data blobs|gauss] [--n 20000]
       [--batch 500] [--at 10000] [--repeats 5] [--landmarks 1000 2000]
       [--stream-rows 1000000] [--skip-refit-all] [--tol TOL] [--sklearn]
       [--warm-memory GIB] [--skip-exact] [--skip-bounded] [--skip-memory]
       python benchmarks/bench_incremental.py --costs [--repeats 7] [--fit-rows 6500]
       [--update-at 6000 10000] [--trace]
       python benchmarks/bench_incremental.py --profile [--repeats 5] [--update-at 6000 10000]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import time
import tracemalloc
import warnings

import numpy as np
from sklearn.datasets import make_blobs

from kpca import IncrementalKernelPCA, KernelPCA

D = 20


def make_data(kind: str, n: int, seed: int) -> np.ndarray:
    if kind == "digits":  # real data: 1797 images of 8 x 8 pixels, in a random order
        from sklearn.datasets import load_digits

        X = load_digits().data / 16.0
        return X[np.random.default_rng(seed).permutation(len(X))][:n]
    if kind == "gauss":
        return np.random.default_rng(seed).standard_normal((n, D))
    X, _ = make_blobs(n, n_features=D, centers=20, cluster_std=3.0, random_state=seed)
    return X


def warm_memory(gib: float) -> float:
    """Touch ``gib`` GiB once and free it; returns the seconds it took.

    The machines here are virtual machines whose memory the host backs lazily: the
    first write to each page since the machine started costs about 2 ms per MB (3 GB
    took 6.8 s the first time and 0.55 s the second, measured here), once per machine.
    A growing model always writes fresh pages, a refit reuses the pages the previous
    refit freed, so without this the first side to touch memory pays the machine's
    warm-up; with it, neither does.
    """
    t = time.perf_counter()
    if gib > 0:
        block = np.ones(int(gib * 2**30) // 8)
        del block
    return time.perf_counter() - t


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


def alignment(A: np.ndarray, B: np.ndarray) -> float:
    """Mean canonical correlation between the column spaces of two score matrices."""
    Qa, _ = np.linalg.qr(A - A.mean(0))
    Qb, _ = np.linalg.qr(B - B.mean(0))
    return float(np.linalg.svd(Qa.T @ Qb, compute_uv=False).mean())


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def exact_part(X: np.ndarray, gamma: float, a) -> None:
    n, b = X.shape[0], a.batch
    print(f"\n## Exact mode: {n} rows in batches of {b}\n")
    model = IncrementalKernelPCA(a.k, kernel="rbf", gamma=gamma, tol=a.tol)
    checkpoints = {2500, 5000, a.at, 15000, n} & set(range(b, n + 1, b))
    rows = []
    t_inc = t_ref = 0.0
    at_model = None
    for s in range(0, n, b):
        _, dt = timed(model.partial_fit, X[s : s + b])
        t_inc += dt
        N = s + b
        if N == a.at:
            at_model = copy.copy(model)
        if a.skip_refit_all and N not in checkpoints:
            continue
        ref, dr = timed(KernelPCA(a.k, kernel="rbf", gamma=gamma).fit, X[:N])
        t_ref += dr
        if N in checkpoints:
            rows.append((N, dt, model.n_passes_, str(model.gram_.dtype), dr,
                         rel_err(model.eigenvalues_, ref.eigenvalues_)))
    print("| rows seen | update (s) | passes | storage | refit KernelPCA (s) | "
          "eigenvalue diff vs refit |")
    print("|---|---|---|---|---|---|")
    for N, dt, p, dtype, dr, e in rows:
        print(f"| {N} | {dt:.3f} | {p} | {dtype} | {dr:.3f} | {e:.1e} |")
    what = "at the checkpoints only" if a.skip_refit_all else "after every batch"
    print(f"\ntotal: incremental {t_inc:.1f} s for the whole stream; refitting {what}: "
          f"{t_ref:.1f} s")
    if at_model is None or a.at + b > n:
        return
    # one update at `at` rows, repeated on shallow copies, against refits, alternating
    nxt = X[a.at : a.at + b]
    ups, refs, passes = [], [], []
    for _ in range(a.repeats):
        m = copy.copy(at_model)
        _, dt = timed(m.partial_fit, nxt)
        ups.append(dt)
        passes.append(m.n_passes_)
        _, dr = timed(KernelPCA(a.k, kernel="rbf", gamma=gamma).fit, X[: a.at + b])
        refs.append(dr)
    u, r = float(np.median(ups)), float(np.median(refs))
    if a.sklearn:  # scikit-learn's refit, once (its fastest solver for k = 10: arpack)
        from sklearn.decomposition import KernelPCA as SkKernelPCA

        _, ds = timed(SkKernelPCA(a.k, kernel="rbf", gamma=gamma, eigen_solver="arpack",
                                  random_state=0).fit, X[: a.at + b])
        print(f"\nscikit-learn KernelPCA(eigen_solver='arpack') refit on {a.at + b} rows: "
              f"{ds:.2f} s ({ds / u:.0f}x the update)")
    print(f"\none update of {b} rows at {a.at} rows seen (median of {a.repeats}): "
          f"{u * 1e3:.0f} ms (passes {passes}); refit of KernelPCA on {a.at + b} rows: "
          f"{r * 1e3:.0f} ms; **speed-up {r / u:.1f}x** (runs: updates "
          f"{[round(x * 1e3) for x in ups]} ms, refits {[round(x * 1e3) for x in refs]} ms)")


def bounded_part(X: np.ndarray, T: np.ndarray, gamma: float, a) -> None:
    n, b = X.shape[0], a.batch
    print(f"\n## Bounded mode: {n} rows in batches of {b}, against batch KernelPCA\n")
    ref, dr = timed(KernelPCA(a.k, kernel="rbf", gamma=gamma).fit, X)
    Tr = ref.transform(T)
    print(f"batch KernelPCA on {n} rows: {dr:.2f} s\n")
    print("| landmarks | per-batch time, median (s) | max (s) | top-10 eigenvalue error "
          "(max rel.) | held-out alignment | landmark swaps |")
    print("|---|---|---|---|---|---|")
    for L in a.landmarks:
        model = IncrementalKernelPCA(a.k, kernel="rbf", gamma=gamma, mode="bounded", max_rows=L)
        times = []
        for s in range(0, n, b):
            _, dt = timed(model.partial_fit, X[s : s + b])
            times.append(dt)
        err = float(np.max(np.abs(model.eigenvalues_ - ref.eigenvalues_) / ref.eigenvalues_))
        print(f"| {L} | {np.median(times):.3f} | {np.max(times):.3f} | {err:.2%} | "
              f"{alignment(model.transform(T), Tr):.4f} | {model.n_swaps_} |")


def memory_part(gamma: float, a) -> None:
    rows, b = a.stream_rows, a.stream_batch
    L = a.landmarks[0]
    print(f"\n## Memory: {rows:,} rows streamed in batches of {b} (bounded, {L} landmarks)\n")
    model = IncrementalKernelPCA(a.k, kernel="rbf", gamma=gamma, mode="bounded", max_rows=L)
    marks = {int(rows * f) // b * b: f for f in (0.1, 0.5, 1.0)}
    tracemalloc.start()
    t0 = time.perf_counter()
    print("| rows streamed | peak traced memory since the previous mark (MB) | elapsed (s) |")
    print("|---|---|---|")
    for s in range(0, rows, b):
        Xb = make_data(a.data, b, seed=1000 + s // b)
        model.partial_fit(Xb)
        done = s + b
        if done in marks:
            _, peak = tracemalloc.get_traced_memory()
            print(f"| {done:,} | {peak / 2**20:.1f} | {time.perf_counter() - t0:.0f} |")
            tracemalloc.reset_peak()
    tracemalloc.stop()
    print(f"\nrows seen {model.n_samples_seen_:,}; landmark swaps {model.n_swaps_}")


def timed_both(fn, *args):
    """``(result, wall seconds, process CPU seconds)``."""
    c, t = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t, time.process_time() - c


def alternate(a_fn, b_fn, repeats: int) -> tuple[np.ndarray, np.ndarray, object]:
    """Run ``a_fn`` and ``b_fn`` alternately ``repeats`` times (the first of each
    untimed: imports, caches); returns (wall, cpu) arrays of shape (repeats, 2) and
    the last result of ``a_fn``."""
    a_fn(), b_fn()
    wall, cpu, last = [], [], None
    for _ in range(repeats):
        last, wa, ca = timed_both(a_fn)
        _, wb, cb = timed_both(b_fn)
        wall.append((wa, wb))
        cpu.append((ca, cb))
    return np.array(wall), np.array(cpu), last


def costs_row(label: str, wall: np.ndarray, cpu: np.ndarray, extra: str, load: tuple) -> str:
    w, c = np.median(wall, axis=0), np.median(cpu, axis=0)
    runs = ", ".join(f"{a * 1e3:.0f}/{b * 1e3:.0f}" for a, b in wall)
    return (f"| {label} | {w[0] * 1e3:.0f} | {w[1] * 1e3:.0f} | **{w[1] / w[0]:.1f}x** | "
            f"{c[0] * 1e3:.0f} | {c[1] * 1e3:.0f} | {c[1] / c[0]:.1f}x | {extra} | "
            f"{load[0]:.1f} -> {load[1]:.1f} | {runs} |")


def costs_part(a) -> None:
    """Issue 31: a batch fit and one update against KernelPCA (see the module text)."""
    k, b = a.k, a.batch
    print(f"\n## Costs: IncrementalKernelPCA({k}) against KernelPCA({k}), RBF, d = {D}; "
          f"{a.repeats} alternating runs each, medians\n")
    print("| case | incremental (ms) | KernelPCA (ms) | **KernelPCA / incremental** "
          "(wall) | incremental CPU (ms) | KernelPCA CPU (ms) | ratio (CPU) | passes "
          "| load average before -> after | runs, wall (inc/KernelPCA, ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    traces: list[str] = []
    for data in ("gauss", "blobs"):
        n_max = max([a.fit_rows, *a.update_at]) + b
        X = make_data(data, n_max, seed=0)
        gamma = 0.05 if data == "gauss" else 1.0 / (X.shape[1] * X[:b].var())

        def refit(rows, gamma=gamma, X=X):
            return KernelPCA(k, kernel="rbf", gamma=gamma).fit(X[:rows])

        # the batch fit
        Xf = X[: a.fit_rows]
        load0 = os.getloadavg()[0]
        wall, cpu, model = alternate(
            lambda Xf=Xf, gamma=gamma: IncrementalKernelPCA(k, kernel="rbf",
                                                           gamma=gamma).fit(Xf),
            lambda: refit(a.fit_rows), a.repeats)
        ref = refit(a.fit_rows)
        err = rel_err(model.eigenvalues_, ref.eigenvalues_)
        print(costs_row(f"{data}: fit, {a.fit_rows:,} rows", wall, cpu,
                        f"{model.n_passes_} (eigenvalues vs KernelPCA {err:.0e})",
                        (load0, os.getloadavg()[0])), flush=True)
        # one update at each size, on shallow copies of the same model: one streamed
        # in batches of b rows (an update in a stream), one fitted at once (the first
        # update after fit)
        for n0 in a.update_at:
            streamed = IncrementalKernelPCA(k, kernel="rbf", gamma=gamma)
            for s in range(0, n0, b):
                streamed.partial_fit(X[s : min(n0, s + b)])
            fitted = IncrementalKernelPCA(k, kernel="rbf", gamma=gamma,
                                          batch_size=b).fit(X[:n0])
            nxt = X[n0 : n0 + b]
            for how, base in (("streamed", streamed), ("fitted", fitted)):
                passes = []

                def update(base=base, nxt=nxt, passes=passes):
                    m = copy.copy(base).partial_fit(nxt)
                    passes.append(m.n_passes_)
                    return m

                load0 = os.getloadavg()[0]
                wall, cpu, model = alternate(update, lambda n0=n0: refit(n0 + b),
                                             a.repeats)
                ref = refit(n0 + b)
                err = rel_err(model.eigenvalues_, ref.eigenvalues_)
                print(costs_row(f"{data}: update of {b} rows at {n0:,} ({how} model)", wall,
                                cpu, f"{sorted(set(passes))} (eigenvalues vs refit {err:.0e})",
                                (load0, os.getloadavg()[0])), flush=True)
                if a.trace:
                    traces.append(update_trace(f"{data}, {n0:,}, {how}", base, nxt, k,
                                               float(np.median(cpu[:, 1])), a.repeats))
    if a.trace:
        print("\n| update | worst wanted residual: pass-free step, after each pass "
              "| one pass of the grown matrix, k columns, CPU (ms) | passes x pass / "
              "update (CPU) | **refit / (passes x pass)**: the ratio with no other work "
              "| the new rows' block row with T_bn V, and E U, CPU (ms) "
              "| **ceiling**: refit / (block row + E U + passes x pass) |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(traces))


def update_trace(label: str, base, nxt, k: int, refit_cpu: float, repeats: int) -> str:
    """Where one update's time goes: the residual of its worst wanted pair after the
    pass-free step and after each pass (the solver's debug log), the CPU time of one
    pass over the grown stored matrix with ``k`` columns (the update's pass width),
    and the ratio to a refit that an update made only of its passes would reach.

    Then the work no update of this kind avoids besides its passes: the new rows'
    block row (their kernel values against all rows, stored, with their product
    ``T_bn V`` with the kept Ritz vectors, :meth:`GrowingGram.append_kernel` on a
    copy of the model's matrix) and ``E U``, the new columns' product with as many
    columns as Ritz vectors are kept (:meth:`NewColumns.matmat`). The refit's CPU
    time over the sum of those and the passes is the ceiling of the ratio: what an
    update whose own small algebra cost nothing would reach."""
    import logging

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    log = logging.getLogger("kpca")
    handler, level = Keep(level=logging.DEBUG), log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        c = time.process_time()
        m = copy.copy(base).partial_fit(nxt)
        total = time.process_time() - c
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    steps = [r.rsplit(" ", 1)[1] for r in records
             if r.startswith("incremental update: first residual")
             or r.startswith("incremental update: pass ")]
    Z = np.random.default_rng(0).standard_normal((m.gram_.n, k))
    m.gram_.matmat(Z)
    times = []
    for _ in range(repeats):
        c = time.process_time()
        m.gram_.matmat(Z)
        times.append(time.process_time() - c)
    p = float(np.median(times))
    passes = m.n_passes_
    share = passes * p / total if total > 0 else float("nan")
    bound = f"**{refit_cpu / (passes * p):.1f}x**" if passes else "-"
    what = " -> ".join(steps) if steps else "(solved as a batch: no update step)"
    fixed = _unavoidable_cpu(base, nxt, repeats)
    ceiling = f"**{refit_cpu / (fixed + passes * p):.1f}x**"
    return (f"| {label} | {what} | {p * 1e3:.0f} | {share:.0%} | {bound} | "
            f"{fixed * 1e3:.0f} | {ceiling} |")


def _unavoidable_cpu(base, nxt, repeats: int) -> float:
    """CPU seconds (median of ``repeats``) of an update's new block row with ``T_bn V``
    and of its ``E U`` (see :func:`update_trace`), on the model ``base`` and the
    batch ``nxt``."""
    from kpca._parallel import blas_threads
    from kpca.operators import NewColumns

    V = base.ritz_vectors_
    X = np.concatenate([base.X_fit_, nxt.astype(base.X_fit_.dtype)])
    U = np.random.default_rng(0).standard_normal((nxt.shape[0], V.shape[1]))
    times = []
    for _ in range(repeats):
        gram = base.gram_.copy()
        # on one BLAS thread, as in an update (threads left spinning count as CPU time)
        with blas_threads(1):
            c = time.process_time()
            Tb, _ = gram.append_kernel(base.kernel_, nxt, X, V)
            NewColumns(Tb, gram.shifted_row_sums()).matmat(U)
            times.append(time.process_time() - c)
    return float(np.median(times))


#: cProfile's functions grouped into the parts of an update (by function name)
PROFILE_PARTS = {
    "product": "passes: tiled products with the stored matrix",
    "native_tile_product": "passes: per-tile Python (accumulators, adds into W)",
    "block": "new rows' kernel values (compiled RBF block)",
    "work": "new rows' kernel values: per-chunk products with [V, 1], row sums",
    "matmul_rows": "products with the new columns (E U)",
    "eigh": "small eigenproblems (Ritz, Gram matrices)",
    "extend_eigenpairs": "step 1's own algebra (sketch, projected matrix, Y, KY)",
    "_refine": "refinement's own algebra (projections, residuals, final Q C)",
    "orthogonal_directions": "refinement's own algebra (projections, residuals, final Q C)",
    "_orthonormal": "step 1's own algebra (sketch, projected matrix, Y, KY)",
}


def profile_part(a) -> None:
    """Where one update's CPU time goes, by function (cProfile on process CPU time,
    one worker thread so that each function's own time is its CPU time; BLAS calls
    are attributed to the Python function that makes them). ``--repeats`` updates of
    ``--batch`` rows at each of ``--update-at`` rows, on shallow copies of a model
    fitted at once, both data sets."""
    import cProfile
    import pstats

    from kpca.operators import _growing

    # the worker functions nested in the stored matrix's product and in the new rows'
    # block row share a name: told apart by their first line
    nested = {}
    for outer, as_name in ((_growing.GrowingGram.matmat, "product"),
                           (_growing._block_row, "work")):
        for const in outer.__code__.co_consts:
            if hasattr(const, "co_firstlineno"):
                nested[(const.co_name, const.co_firstlineno)] = as_name
    k, b = a.k, a.batch
    print(f"\n## One update by function: cProfile, process CPU time, n_jobs=1, "
          f"{a.repeats} updates, ms per update\n")
    rows = []
    for data in ("gauss", "blobs"):
        n_max = max(a.update_at) + b
        X = make_data(data, n_max, seed=0)
        gamma = 0.05 if data == "gauss" else 1.0 / (X.shape[1] * X[:b].var())
        for n0 in a.update_at:
            model = IncrementalKernelPCA(k, kernel="rbf", gamma=gamma, batch_size=b,
                                         n_jobs=1).fit(X[:n0])
            nxt = X[n0 : n0 + b]
            copy.copy(model).partial_fit(nxt)  # warm: pages, imports
            prof = cProfile.Profile(time.process_time)
            c = time.process_time()
            for _ in range(a.repeats):
                prof.enable()
                copy.copy(model).partial_fit(nxt)
                prof.disable()
            total = (time.process_time() - c) / a.repeats
            parts: dict[str, float] = {}
            rest: dict[str, float] = {}
            for (_, line, name), (_, _, tottime, _, _) in pstats.Stats(prof).stats.items():
                if name.startswith("<built-in method "):  # compiled: "<... module.name>"
                    name = name[:-1].rsplit(".", 1)[-1]
                part = PROFILE_PARTS.get(nested.get((name, line), name),
                                         "everything else (attributes, checks, ...)")
                parts[part] = parts.get(part, 0.0) + tottime / a.repeats
                if part.startswith("everything else"):
                    rest[name] = rest.get(name, 0.0) + tottime / a.repeats
            cells = " / ".join(f"{v * 1e3:.1f}" for v in parts.values())
            rows.append((f"{data}, {n0:,}", total, parts))
            print(f"{data} {n0:,}: {total * 1e3:.0f} ms CPU per update (profiled): {cells}",
                  flush=True)
            top = sorted(rest.items(), key=lambda kv: -kv[1])[:8]
            print("  everything else, largest: "
                  + ", ".join(f"{name} {v * 1e3:.1f}" for name, v in top))
    names = list(dict.fromkeys([
                                *PROFILE_PARTS.values(),
                                "everything else (attributes, checks, ...)"]))
    print("\n| part | " + " | ".join(r[0] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for name in names:
        print(f"| {name} | " + " | ".join(f"{r[2].get(name, 0.0) * 1e3:.1f}" for r in rows)
              + " |")
    print("| **total (profiled)** | " + " | ".join(f"**{r[1] * 1e3:.0f}**" for r in rows)
          + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", choices=["blobs", "gauss", "digits"], default="blobs",
                   help="digits: the 1797 real images (d = 64; use --n 1500 --at 1000 "
                        "--batch 100 and the bounded/memory parts skipped)")
    p.add_argument("--k", type=int, default=10, help="components")
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--at", type=int, default=10000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--landmarks", type=int, nargs="+", default=[1000, 2000])
    p.add_argument("--stream-rows", type=int, default=1_000_000)
    p.add_argument("--stream-batch", type=int, default=5000)
    p.add_argument("--skip-refit-all", action="store_true",
                   help="refit only at the checkpoints (not after every batch)")
    p.add_argument("--tol", type=float, default=0.0,
                   help="residual target of the exact mode's updates (0: the solvers')")
    p.add_argument("--sklearn", action="store_true",
                   help="also time one scikit-learn KernelPCA refit at --at rows")
    p.add_argument("--warm-memory", type=float, default=0.0, metavar="GIB",
                   help="touch this much memory before timing (see warm_memory; 0: off)")
    p.add_argument("--skip-exact", action="store_true")
    p.add_argument("--skip-bounded", action="store_true")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--costs", action="store_true",
                   help="only the costs of a batch fit and of one update against KernelPCA "
                        "(issue 31), on both data sets")
    p.add_argument("--fit-rows", type=int, default=6500)
    p.add_argument("--update-at", type=int, nargs="+", default=[6000, 10000])
    p.add_argument("--trace", action="store_true",
                   help="with --costs: each update's residual after every step, the CPU "
                        "time of one pass, the ratio an update of passes alone reaches, "
                        "and the ceiling with the new rows' block row and E U added")
    p.add_argument("--profile", action="store_true",
                   help="only one update's CPU time by part (cProfile, n_jobs=1; see "
                        "profile_part), on both data sets at each --update-at")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    if a.profile:
        print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
              f"{platform.python_version()}, numpy {np.__version__}; load average at start "
              f"{os.getloadavg()[0]:.2f}")
        profile_part(a)
        return
    if a.costs:
        print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
              f"{platform.python_version()}, numpy {np.__version__}; load average at start "
              f"{os.getloadavg()[0]:.2f}")
        print(f"memory warm-up: {a.warm_memory:g} GiB touched in "
              f"{warm_memory(a.warm_memory):.1f} s")
        costs_part(a)
        return
    X = make_data(a.data, a.n + 2000, seed=0)
    X, T = X[: a.n], X[a.n :]
    gamma = 1.0 / (X.shape[1] * X[: a.batch].var())
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, numpy {np.__version__}; load average at start "
          f"{os.getloadavg()[0]:.2f}")
    print(f"memory warm-up: {a.warm_memory:g} GiB touched in {warm_memory(a.warm_memory):.1f} s")
    print(f"data: {a.data}, n={X.shape[0]}, d={X.shape[1]}, k={a.k}, RBF gamma={gamma:.4g}")
    if not a.skip_exact:
        exact_part(X, gamma, a)
    if not a.skip_bounded:
        bounded_part(X, T, gamma, a)
    if not a.skip_memory:
        memory_part(gamma, a)


if __name__ == "__main__":
    main()
