"""How many passes, and how wide, one incremental update needs (issue 31, part 7).

An update of ``IncrementalKernelPCA`` (docs/math.md, "Incremental kernel PCA") is a
pass-free Rayleigh-Ritz step, then refinement passes: each multiplies the stored
matrix by the orthonormalised residual block ``Z`` of the wanted pairs, until their
residuals ``||K~ y - theta y|| / theta_1`` meet the tolerance (1e-5 in float32).
This script measures, on the real grown operator of one 500-row update (RBF, d = 20,
k = 10; ``gauss``: isotropic Gaussian, gamma = 0.05; ``blobs``: 20 clusters, gamma =
1 / (d Var X)), for a model streamed in 500-row batches and one fitted at once:

1. **residuals** of the worst wanted pair after the pass-free step and after ONE
   pass whose block is
   - ``Z1``: the update's own block (the step's residual directions);
   - ``Z1 + P K Z1 (top p)``: Z1 and the top ``p`` directions of the next Krylov
     block, computed exactly (extra passes, here only): a lower bound for any
     second block built without a pass (a one-pass update can do no better than
     this, whatever approximation of ``K Z1`` it uses);
   - ``Z1 + Nystrom (top p)``: the same from the Nystrom model of the grown matrix
     on the batch's own 500 columns, ``E E_bb^+ E^T Z1`` (no pass: a realisable
     second block);
   and after a second pass of the update's own rule (``Z1`` then ``Z2``);
2. **the residual block's singular values** after the first pass (smallest over
   largest: whether a narrower second pass could carry it);
3. **kept pairs**: the residuals with only the first ``m`` of the 40 kept Ritz
   vectors (fewer guard pairs);
4. **pass cost by width**: CPU time of one product of the grown stored matrix
   with 8, 10, 12, 16, 17 and 24 columns (the compiled one-sweep tile product takes
   whole vectors of columns, 8 float32 lanes with AVX2, 16 with AVX-512, and the
   rest in a dot-product form; the growing matrix pads a block to whole vectors
   only past half a vector), with 10 columns padded to 16 (what the product took
   before it had the dot-product form), and with 10 columns through the BLAS route
   that takes any width; medians of ``--repeats``,
   alternating, one worker and one BLAS thread.

Usage: python benchmarks/bench_update_passes.py [--rows 6000 10000] [--repeats 5]
       [--data gauss blobs]
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import time
import warnings

import numpy as np
from bench_incremental import make_data

import kpca
import kpca._incremental as incremental
from kpca._parallel import blas_threads
from kpca.operators import _tiled
from kpca.solvers import _update

B, K = 500, 10


def capture(model, batch):
    """The arguments of the update's ``extend_eigenpairs`` call and the number of
    passes the update made (the model is not changed: a shallow copy is updated)."""
    seen: dict = {}
    original = incremental.extend_eigenpairs

    def keep(op, V, KV, new, k, m, **kw):
        seen.update(op=op, V=V, KV=KV, new=new, k=k, m=m, **kw)
        return original(op, V, KV, new, k, m, **kw)

    incremental.extend_eigenpairs = keep
    try:
        grown = copy.copy(model).partial_fit(batch)
    finally:
        incremental.extend_eigenpairs = original
    return seen, grown.n_passes_


def ritz_residual(Q, KQ, m, k, floor):
    """Worst residual of the top ``k`` Ritz pairs of the basis ``Q`` (products
    ``KQ``), and their residual vectors."""
    w, C = _update._ritz(Q.T @ KQ, m)
    Y, KY = Q @ C[:, :k], KQ @ C[:, :k]
    R = KY - Y * w[None, :k]
    return float(_update._norms(R, w, floor).max()), R


def top_directions(W, Q, p):
    """The top ``p`` directions of ``W`` outside ``span Q`` (and the constant)."""
    W = W - Q @ (Q.T @ W)
    u = np.linalg.svd(W - W.mean(axis=0), full_matrices=False)[0]
    return _update.orthogonal_directions(u[:, :p], Q)


def residual_rows(label, s, passes):
    op, V, KV, new, k, m = s["op"], s["V"], s["KV"], s["new"], s["k"], s["m"]
    tol, floor = s["tol"], s["floor"]
    step = _update.extend_eigenpairs(op, V, KV, new, k, m, tol=tol, floor=floor,
                                     max_passes=0)
    w, Y, KY = step.values, step.vectors, step.products
    R0 = KY[:, :k] - Y[:, :k] * w[None, :k]
    r0 = float(_update._norms(R0, w, floor).max())
    Z1 = _update.orthogonal_directions(R0, Y)
    KZ1 = op.matmat(Z1)
    Q1, KQ1 = np.hstack([Y, Z1]), np.hstack([KY, KZ1])
    r1, R1 = ritz_residual(Q1, KQ1, m, k, floor)
    Z2 = _update.orthogonal_directions(R1, Q1)
    r2, _ = ritz_residual(np.hstack([Q1, Z2]), np.hstack([KQ1, op.matmat(Z2)]), m, k,
                          floor)
    P1 = R1 - Q1 @ (Q1.T @ R1)
    sv = np.linalg.svd(P1 - P1.mean(axis=0), compute_uv=False)
    cells = [f"{r0:.1e}", f"{r1:.1e}", f"{r2:.1e}"]
    # the batch's own Nystrom model of the grown matrix: E E_bb^+ E^T
    E = new.matmat(np.eye(new.b))
    e, U = np.linalg.eigh(new.new_block())
    keep = e > 1e-8 * e.max()
    A = E @ (U[:, keep] / np.sqrt(e[keep])[None, :])
    for source in (KZ1, A @ (A.T @ Z1)):
        for p in (6, 14):
            Zx = top_directions(source, Q1, p)
            rx, _ = ritz_residual(np.hstack([Q1, Zx]), np.hstack([KQ1, op.matmat(Zx)]),
                                  m, k, floor)
            cells.append(f"{rx:.1e}")
    kept = []
    for mm in (32, 24, 20):
        recs = _update.extend_eigenpairs(op, V[:, :mm], KV[:, :mm], new, k, mm, tol=tol,
                                         floor=floor)
        kept.append(f"{mm}: {recs.n_passes}")
    return (f"| {label} | {passes} | " + " | ".join(cells)
            + f" | {sv[-1] / sv[0]:.2f} | {', '.join(kept)} |")


def pass_widths(model, repeats: int) -> str:
    gram = model.gram_
    n = gram.n
    tiles = [(a, c0, T) for a, band in gram.bands for c0, T in band]
    sgemm = _tiled._sgemm()
    fns = _tiled._tileprod
    rng = np.random.default_rng(0)

    def blas(Z: np.ndarray, q: int) -> None:  # the compiled product's BLAS route: any width
        V = np.ascontiguousarray(Z[:, :q], dtype=np.float32)
        W = np.zeros((n, q))
        for a, c0, T in tiles:
            h, c = T.shape
            WI = np.zeros((h, q), np.float32)
            WJ = WI if c0 == a else np.zeros((c, q), np.float32)
            fns.product(T, V[c0 : c0 + c], V[a : a + h], WI, WJ, c0 != a, None, None,
                        sgemm, 128)
            W[a : a + h] += WI
            if c0 != a:
                W[c0 : c0 + c] += WJ

    cases = [(f"{q} columns", lambda Z, q=q: gram.matmat(Z[:, :q]))
             for q in (8, 10, 12, 16, 17, 24)]
    # the block the kernel took before it had its dot-product form for the last columns
    cases.append(("10 columns padded to 16",
                  lambda Z: gram.matmat(np.hstack([Z[:, :10], np.zeros((n, 6))]))))
    if fns is not None and sgemm is not None and gram.dtype == np.float32:
        cases.append(("10 columns, BLAS route", lambda Z: blas(Z, 10)))
    times: dict[str, list[float]] = {}
    # one BLAS thread: a BLAS call's idle threads spin on, and their CPU time would be
    # charged to whatever runs next
    with blas_threads(1):
        for _ in range(repeats):
            for name, fn in cases:
                Z = rng.standard_normal((n, 24))
                c = time.process_time()
                fn(Z)
                times.setdefault(name, []).append(time.process_time() - c)
    return ", ".join(f"{name} {np.median(t) * 1e3:.1f} ms" for name, t in times.items())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, nargs="+", default=[6000, 10000])
    p.add_argument("--data", nargs="+", default=["gauss", "blobs"])
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, numpy {np.__version__}, tile product "
          f"{getattr(_tiled._tileprod, 'name', None)}; load average at start "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| update | passes | pass-free step | one pass (Z1) | two passes (Z1, Z2) "
          "| one pass, Z1 + P K Z1 top 6 (exact) | top 14 (exact) "
          "| Z1 + Nystrom top 6 | top 14 | block after one pass: s_min / s_max "
          "| passes with m kept pairs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    widths = []
    for data in a.data:
        X = make_data(data, max(a.rows) + B, seed=0)
        gamma = 0.05 if data == "gauss" else 1.0 / (X.shape[1] * X[:B].var())
        for n0 in a.rows:
            fitted = kpca.IncrementalKernelPCA(K, kernel="rbf", gamma=gamma, batch_size=B,
                                               n_jobs=1).fit(X[:n0])
            streamed = kpca.IncrementalKernelPCA(K, kernel="rbf", gamma=gamma, n_jobs=1)
            for s in range(0, n0, B):
                streamed.partial_fit(X[s : s + B])
            for how, model in (("streamed", streamed), ("fitted", fitted)):
                seen, passes = capture(model, X[n0 : n0 + B])
                label = f"{data}, {n0:,}, {how}"
                if not seen:  # a small problem: KernelPCA's own solver, no update step
                    print(f"| {label} | (solved as a batch: no update step) |")
                    continue
                print(residual_rows(label, seen, passes), flush=True)
            grown = copy.copy(fitted).partial_fit(X[n0 : n0 + B])
            if data == a.data[0]:
                widths.append(f"- {n0 + B:,} rows: " + pass_widths(grown, a.repeats))
    print(f"\nOne pass of the grown stored matrix, CPU, one thread, medians of "
          f"{a.repeats} (load average now {os.getloadavg()[0]:.2f}):\n")
    print("\n".join(widths))


if __name__ == "__main__":
    main()
