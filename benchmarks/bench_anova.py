"""ANOVA KPCA: which input variables matter (the seed material's example).

10-dimensional data: (x1, x2) are two nested circles (factor 0.3, noise 0.05),
x3..x10 are N(0, 3.5^2) noise. AnovaKernelPCA (2 components, gamma = 1) learns
the per-variable weights beta; we report, for several L1 bounds c, the share of
beta on (x1, x2) -- of ||beta||_2^2 (= 1) and of ||beta||_1 -- the number of
non-zero weights, the objective (variance captured by the two components) at
the start (uniform beta) and at convergence, the iterations, and how well the two
learned components match those of the oracle (KPCA with the ANOVA kernel on x1,
x2 alone; mean canonical correlation of the scores) -- next to the same for the
uniform beta every ANOVA kernel starts from. "min(b1, b2)" shows whether both
informative variables were kept (a run can converge to x1 alone). A last table
varies gamma, including the default (gamma=None, i.e. 1 / n_features = 0.1).

    python benchmarks/bench_anova.py [--seeds 3] [--n 300]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from sklearn.datasets import make_circles

from kpca import AnovaKernelPCA, KernelPCA
from kpca.kernels import Anova


def data(n: int, seed: int):
    X2, y = make_circles(n, factor=0.3, noise=0.05, random_state=seed)
    noise = np.random.default_rng(seed).normal(scale=3.5, size=(n, 8))
    return np.hstack([X2, noise]), y


def cancor(A: np.ndarray, B: np.ndarray) -> float:
    """Mean canonical correlation between the column spaces of two score matrices."""
    Qa = np.linalg.qr(A - A.mean(0))[0]
    Qb = np.linalg.qr(B - B.mean(0))[0]
    return float(np.mean(np.clip(np.linalg.svd(Qa.T @ Qb, compute_uv=False), 0, 1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, numpy {np.__version__}; load average at start "
          f"{os.getloadavg()[0]:.2f}\n")
    AnovaKernelPCA(n_components=2, gamma=1.0).fit(data(50, 0)[0])  # warm-up
    cs = (None, 1.5, 1.45, 1.42, 1.415, 1.3, 1.1, 1.0)
    uniform = []
    for seed in range(args.seeds):
        X, _ = data(args.n, seed)
        oracle = KernelPCA(2, kernel=Anova(gamma=1.0)).fit(X[:, :2]).transform(X[:, :2])
        flat = KernelPCA(2, kernel=Anova(gamma=1.0)).fit(X).transform(X)
        uniform.append(cancor(flat, oracle))
    print(f"uniform beta (plain ANOVA kernel on all 10 variables): mean canonical "
          f"correlation with the oracle {np.mean(uniform):.3f} (min {np.min(uniform):.3f})\n")
    print(f"## ANOVA KPCA, n = {args.n}, {args.seeds} seeds (mean; beta of seed 0)\n")
    print("| c | share of beta^2 on x1,x2 | share of beta (L1) on x1,x2 | non-zero beta | "
          "min(b1, b2) | objective start -> end | iterations | canonical corr. with oracle | "
          "seconds | beta (seed 0) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for c in cs:
        l2, l1, nnz, j0, j1, its, aucs, secs, both = [], [], [], [], [], [], [], [], []
        beta0 = None
        for seed in range(args.seeds):
            X, _ = data(args.n, seed)
            t0 = time.perf_counter()
            est = AnovaKernelPCA(n_components=2, gamma=1.0, c=c).fit(X)
            secs.append(time.perf_counter() - t0)
            b = est.beta_
            l2.append(np.sum(b[:2] ** 2))
            l1.append(b[:2].sum() / b.sum())
            nnz.append(np.count_nonzero(b > 1e-12))
            both.append(b[:2].min())
            j0.append(est.objective_[0])
            j1.append(est.objective_[-1])
            its.append(est.n_iter_)
            oracle = KernelPCA(2, kernel=Anova(gamma=1.0)).fit(X[:, :2]).transform(X[:, :2])
            aucs.append(cancor(est.transform(X), oracle))
            if seed == 0:
                beta0 = b
        print(f"| {c} | {np.mean(l2):.3f} (min {np.min(l2):.3f}) | {np.mean(l1):.3f} "
              f"(min {np.min(l1):.3f}) | {np.mean(nnz):.1f} | "
              f"{', '.join(f'{v:.2f}' for v in both)} | {np.mean(j0):.1f} -> "
              f"{np.mean(j1):.1f} | {np.mean(its):.1f} | "
              f"{np.mean(aucs):.3f} (min {np.min(aucs):.3f}) | "
              f"{np.mean(secs):.2f} | {np.array2string(beta0, precision=2, max_line_width=200)} |")

    print(f"\n## Sample size (c = None, {args.seeds} seeds): share of beta^2 on x1, x2\n")
    print("| n | per seed | mean |\n|---|---|---|")
    for n in (120, 200, 300, 500):
        share = []
        for seed in range(args.seeds):
            X, _ = data(n, seed)
            b = AnovaKernelPCA(n_components=2, gamma=1.0).fit(X).beta_
            share.append(float(np.sum(b[:2] ** 2)))
        print(f"| {n} | {', '.join(f'{v:.2f}' for v in share)} | {np.mean(share):.3f} |")

    print(f"\n## Kernel width (c = None, n = {args.n}, {args.seeds} seeds): share of beta^2 "
          "and of beta (L1) on x1, x2\n")
    print("| gamma | share of beta^2 (per seed) | share of beta, L1 (per seed) | "
          "min(b1, b2) (per seed) |\n|---|---|---|---|")
    for gamma in (None, 0.5, 1.0, 2.0, 5.0):
        l2, l1, both = [], [], []
        for seed in range(args.seeds):
            X, _ = data(args.n, seed)
            b = AnovaKernelPCA(n_components=2, gamma=gamma).fit(X).beta_
            l2.append(np.sum(b[:2] ** 2))
            l1.append(b[:2].sum() / b.sum())
            both.append(b[:2].min())
        name = "None (default, 1/10)" if gamma is None else gamma
        print(f"| {name} | {', '.join(f'{v:.3f}' for v in l2)} | "
              f"{', '.join(f'{v:.3f}' for v in l1)} | {', '.join(f'{v:.2f}' for v in both)} |")


if __name__ == "__main__":
    main()
