"""ANOVA KPCA: which input variables matter (the seed material's example).

10-dimensional data: (x1, x2) are two nested circles (factor 0.3, noise 0.05),
x3..x10 are N(0, 3.5^2) noise. AnovaKernelPCA (2 components, gamma = 1) learns
the per-variable weights beta; we report, for several L1 bounds c, the share of
beta on (x1, x2) -- of ||beta||_2^2 (= 1) and of ||beta||_1 -- the number of
non-zero weights, the objective (variance captured by the two components) at
the start and at convergence, the iterations, and whether the first component
separates the circles (ROC AUC of the score against the circle label, folded).

    python benchmarks/bench_anova.py [--seeds 3] [--n 300]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from sklearn.datasets import make_circles
from sklearn.metrics import roc_auc_score

from kpca import AnovaKernelPCA


def data(n: int, seed: int):
    X2, y = make_circles(n, factor=0.3, noise=0.05, random_state=seed)
    noise = np.random.default_rng(seed).normal(scale=3.5, size=(n, 8))
    return np.hstack([X2, noise]), y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=300)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, python {platform.python_version()}, "
          f"numpy {np.__version__}\n")
    cs = (None, 2.0, 1.5, 1.2, 1.0)
    print(f"## ANOVA KPCA, n = {args.n}, {args.seeds} seeds (mean; beta of seed 0)\n")
    print("| c | share of beta^2 on x1,x2 | share of beta (L1) on x1,x2 | non-zero beta | "
          "objective start -> end | iterations | AUC of component 1 | seconds | "
          "beta (seed 0) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cs:
        l2, l1, nnz, j0, j1, its, aucs, secs = [], [], [], [], [], [], [], []
        beta0 = None
        for seed in range(args.seeds):
            X, y = data(args.n, seed)
            t0 = time.perf_counter()
            est = AnovaKernelPCA(n_components=2, gamma=1.0, c=c).fit(X)
            secs.append(time.perf_counter() - t0)
            b = est.beta_
            l2.append(np.sum(b[:2] ** 2))
            l1.append(b[:2].sum() / b.sum())
            nnz.append(np.count_nonzero(b > 1e-12))
            j0.append(est.objective_[0])
            j1.append(est.objective_[-1])
            its.append(est.n_iter_)
            z = est.transform(X)[:, 0]
            auc = roc_auc_score(y, z)
            aucs.append(max(auc, 1 - auc))
            if seed == 0:
                beta0 = b
        print(f"| {c} | {np.mean(l2):.3f} (min {np.min(l2):.3f}) | {np.mean(l1):.3f} "
              f"(min {np.min(l1):.3f}) | {np.mean(nnz):.1f} | {np.mean(j0):.1f} -> "
              f"{np.mean(j1):.1f} | {np.mean(its):.1f} | {np.mean(aucs):.3f} | "
              f"{np.mean(secs):.2f} | {np.array2string(beta0, precision=2)} |")


if __name__ == "__main__":
    main()
