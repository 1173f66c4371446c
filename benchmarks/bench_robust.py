"""Robust KPCA under contamination: subspace recovery and outlier detection.

For each data set, 10% of the training rows are replaced by outliers; standard
KernelPCA, SphericalKernelPCA and WeightedKernelPCA are fitted on the contaminated
training set, and their top-k scores of CLEAN held-out points are compared with
those of KernelPCA fitted on the clean training rows alone (mean canonical
correlation of the two score matrices: 1 = same subspace). The outlier scores
(:func:`kpca.robust.outlier_scores`, max of score/orthogonal distance over cut-off)
of each model on the contaminated training set are scored by ROC AUC.

Data sets:

* ``circles-poly`` -- two nested circles (factor 0.3, noise 0.05), polynomial
  kernel (degree 2, gamma 1, coef0 1: the circles separate on the first
  component), k = 3; outliers: points scattered at radius 2.5-4 (an unbounded
  kernel gives them unbounded influence).
* ``circles-rbf`` -- the same with an RBF kernel (gamma 2): a bounded kernel, the
  outliers barely move standard KPCA (control case).
* ``digits-rbf`` / ``digits-poly`` -- handwritten digits 0, 1, 2 (scikit-learn,
  pixels / 16); outliers: copies of one random "scribble" image with small noise.
  RBF gamma from the median heuristic; polynomial kernel of degree 3
  (unbounded: one far point has unbounded influence).

Then the classification table of the seed material: KPCA features + logistic
regression on digits (all classes, 1000 training / 797 test images) whose
training set has 10% corrupted images (uniform noise of up to 3x the pixel
range added) with random labels; test error by number of components and
polynomial degree, standard vs weighted KPCA (at most 10 reweighting
iterations per cell).

    python benchmarks/bench_robust.py [--seeds 3] [--no-table]
"""

from __future__ import annotations

import argparse
import logging
import platform
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits, make_circles
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from kpca import KernelPCA, SphericalKernelPCA, WeightedKernelPCA
from kpca.robust import outlier_scores

METHODS = {
    "KernelPCA": KernelPCA,
    "SphericalKernelPCA": SphericalKernelPCA,
    "WeightedKernelPCA": WeightedKernelPCA,
}


def mean_canonical_correlation(A: np.ndarray, B: np.ndarray) -> float:
    """Mean canonical correlation between the column spaces of two score matrices."""
    Qa = np.linalg.qr(A - A.mean(0))[0]
    Qb = np.linalg.qr(B - B.mean(0))[0]
    return float(np.mean(np.clip(np.linalg.svd(Qa.T @ Qb, compute_uv=False), 0, 1)))


def circles(rng, kernel):
    X, _ = make_circles(700, factor=0.3, noise=0.05, random_state=int(rng.integers(1e9)))
    train, test = X[:400], X[400:]
    n_out = len(train) // 10
    angle, radius = rng.uniform(0, 2 * np.pi, n_out), rng.uniform(2.5, 4.0, n_out)
    out = np.c_[radius * np.cos(angle), radius * np.sin(angle)]
    if kernel == "poly":
        return train, test, out, dict(kernel="poly", degree=2, gamma=1.0, coef0=1), 3
    return train, test, out, dict(kernel="rbf", gamma=2.0), 3


def digits(rng, kernel):
    X, y = load_digits(return_X_y=True)
    X = X[y < 3] / 16.0
    X = X[rng.permutation(len(X))]
    train, test = X[:360], X[360:]
    n_out = len(train) // 10
    scribble = rng.uniform(0, 1, size=64) ** 3
    out = np.clip(scribble + rng.normal(size=(n_out, 64)) * 0.05, 0, 1)
    if kernel == "rbf":
        params = dict(kernel="rbf", gamma="median")
    else:
        params = dict(kernel="poly", degree=3, gamma=1 / 64, coef0=1)
    return train, test, out, params, 5


def contamination(seeds: int) -> list[dict]:
    rows = []
    for name in ("circles-poly", "circles-rbf", "digits-rbf", "digits-poly"):
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            data, kernel = name.split("-")
            if data == "circles":
                train, test, out, params, k = circles(rng, kernel)
            else:
                train, test, out, params, k = digits(rng, kernel)
            idx = rng.choice(len(train), size=len(out), replace=False)
            Xc = train.copy()
            Xc[idx] = out
            is_out = np.zeros(len(train), bool)
            is_out[idx] = True
            ref = KernelPCA(n_components=k, random_state=0, **params).fit(train[~is_out])
            Yref = ref.transform(test)
            for mname, Est in METHODS.items():
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est = Est(n_components=k, random_state=0, **params).fit(Xc)
                    secs = time.perf_counter() - t0
                    clean = Est(n_components=k, random_state=0, **params).fit(train[~is_out])
                scores = outlier_scores(est)
                rows.append(dict(data=name, seed=seed, method=mname,
                                 cancor=mean_canonical_correlation(est.transform(test), Yref),
                                 clean=mean_canonical_correlation(clean.transform(test), Yref),
                                 auc=roc_auc_score(is_out, scores), seconds=secs))
    return rows


def classification(seed: int = 0) -> list[dict]:
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(X))
    X, y = X[perm], y[perm]
    Xtr, ytr, Xte, yte = X[:1000], y[:1000].copy(), X[1000:], y[1000:]
    bad = rng.choice(len(Xtr), size=len(Xtr) // 10, replace=False)
    Xtr = Xtr.copy()
    Xtr[bad] = np.clip(Xtr[bad] + rng.uniform(0, 3, size=(bad.size, 64)), 0, None)
    ytr[bad] = rng.integers(0, 10, size=bad.size)
    rows = []
    for degree in (2, 3, 4, 5, 6, 7):
        for k in (16, 32, 64, 120):
            for mname in ("KernelPCA", "WeightedKernelPCA"):
                params = dict(n_components=k, kernel="poly", degree=degree, gamma=1 / 64,
                              coef0=1, random_state=0)
                if mname == "WeightedKernelPCA":
                    params["robust_max_iter"] = 10  # bounded cost per cell
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est = METHODS[mname](**params).fit(Xtr)
                Ztr, Zte = est.transform(Xtr), est.transform(Xte)
                s = Ztr.std(0) + 1e-12
                clf = LogisticRegression(max_iter=2000).fit(Ztr / s, ytr)
                err = float(np.mean(clf.predict(Zte / s) != yte))
                rows.append(dict(degree=degree, k=k, method=mname, error=err))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--no-table", action="store_true", help="skip the classification table")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"python {platform.python_version()}, numpy {np.__version__}\n")
    rows = contamination(args.seeds)
    print(f"## Contamination: 10% outliers ({args.seeds} seeds, mean)\n")
    print("| data | method | mean canonical corr. with clean KPCA (held-out) | "
          "same method fitted on clean data | outlier ROC AUC | fit seconds |")
    print("|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["data"] for r in rows):
        for mname in METHODS:
            sel = [r for r in rows if r["data"] == name and r["method"] == mname]
            cc = np.array([r["cancor"] for r in sel])
            auc = np.array([r["auc"] for r in sel])
            secs = np.mean([r["seconds"] for r in sel])
            cl = np.mean([r["clean"] for r in sel])
            print(f"| {name} | {mname} | {cc.mean():.3f} (min {cc.min():.3f}) | {cl:.3f} | "
                  f"{auc.mean():.3f} (min {auc.min():.3f}) | {secs:.2f} |")
    if args.no_table:
        return
    rows = classification()
    print("\n## Digits classification: test error, 10% corrupted and mislabelled training "
          "images\n")
    ks = (16, 32, 64, 120)
    print("| degree | method | " + " | ".join(f"k={k}" for k in ks) + " |")
    print("|---|---|" + "---|" * len(ks))
    for degree in (2, 3, 4, 5, 6, 7):
        for mname in ("KernelPCA", "WeightedKernelPCA"):
            errs = [next(r["error"] for r in rows if r["degree"] == degree and r["k"] == k
                         and r["method"] == mname) for k in ks]
            print(f"| {degree} | {mname} | " + " | ".join(f"{e:.3f}" for e in errs) + " |")


if __name__ == "__main__":
    main()
