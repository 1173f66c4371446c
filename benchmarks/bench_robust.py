"""Robust KPCA under contamination: subspace recovery and outlier detection.

For each data set, 10% of the training rows are replaced by outliers; standard
KernelPCA, SphericalKernelPCA and WeightedKernelPCA are fitted on the contaminated
training set, and their top-k scores of CLEAN held-out points are compared with
those of KernelPCA fitted on the clean training rows alone (mean canonical
correlation of the two score matrices: 1 = same subspace). Also reported: the same
method fitted on the clean rows (how close the method is to KPCA without any
outlier) and the agreement of each method with ITSELF fitted on the clean rows (how
much the contamination moved it). The outlier scores
(:func:`kpca.robust.outlier_scores`, max of score/orthogonal distance over cut-off)
of each model on the contaminated training set are scored by ROC AUC.

Data sets:

* ``digits-poly`` / ``digits-rbf`` -- handwritten digits 0, 1, 2 (scikit-learn,
  pixels / 16), k = 5; outliers: training images corrupted by adding uniform noise
  of up to 3x the pixel range (far from the data, in scattered directions).
  Polynomial kernel of degree 3 (gamma 1/64, coef0 1: unbounded, the corrupted
  images dominate standard KPCA) and RBF (gamma from the median heuristic).
* ``circles-poly`` -- two nested circles (factor 0.3, noise 0.05), polynomial
  kernel (degree 2, gamma 1, coef0 1), k = 3; outliers: points scattered at radius
  2.5-4 (an unbounded kernel gives them unbounded influence).
* ``circles-rbf`` -- the same with an RBF kernel (gamma 2): a bounded kernel, the
  outliers barely move standard KPCA (control case).
* ``digits-cluster-rbf`` -- a hard case: the outliers are near-copies of one
  random "scribble" image, i.e. a tight cluster holding 10% of the rows. Such a
  cluster is a legitimate direction of variance for every method here.

Then the classification table of the seed material: KPCA features + logistic
regression on digits (all classes, 1000 training / 797 test images) whose
training set has 10% corrupted images (uniform noise of up to 3x the pixel
range added) with random labels; test error by number of components and
polynomial degree, standard vs spherical vs weighted KPCA (dense solver; at most
10 reweighting iterations per cell), and weighted KPCA with the training rows
flagged by :func:`kpca.robust.outliers` left out of the classifier's training.

Real-data contamination benchmark (issue 15, part 3; ``--part real``): three data
sets shipped with scikit-learn (digits, breast cancer, wine; standardised; at most
600 training rows and 300 held-out rows drawn per seed), RBF (gamma from the
median heuristic on the clean training rows, then fixed for every fit so that
all models live in one feature space) and polynomial kernels (degree 2, gamma
1/d, coef0 1), k = 4. 10 % of the training rows are replaced by planted rows of
one of four kinds (R = median norm of the clean standardised rows, u a random
unit vector):

* ``scattered`` -- gross errors: ``x_i + 3 R u_i``, a new direction per row;
* ``cluster`` -- a tight cluster far from the rest: ``3 R u + N(0, (0.05 R)^2 I / d)``,
  one direction for all planted rows;
* ``cellwise`` -- ``max(1, round(0.1 d))`` cells of each planted row shifted by
  +-6 (standard deviations of the variable);
* ``orthogonal`` -- ``x_i + 2 R v_i``, ``v_i`` a random unit vector orthogonal to the
  first k linear principal axes of the clean rows.

The same rows are planted for every kind of a seed, so the fits on the clean
rows are shared. For KernelPCA, SphericalKernelPCA, WeightedKernelPCA and
KernelROBPCA: the subspace similarity of the fit on the contaminated rows to the
same method fitted on the clean rows (:func:`subspace_similarity`: mean cos^2 of
the principal angles between the two k-dimensional spans of directions
``f_l = sum_j C_jl phi(z_j)`` in feature space, from kernel values), and the
ROC AUC of ``-score_samples`` on the contaminated training rows (planted rows
positive). scikit-learn's IsolationForest, LocalOutlierFactor (novelty=True;
training rows scored by ``negative_outlier_factor_``) and OneClassSVM (rbf, the
same gamma, nu = 0.1) give AUCs on the same rows. On the clean rows, each robust
method is compared with standard KPCA: subspace similarity, and the held-out
reconstruction error (mean squared orthogonal distance of held-out rows)
relative to standard KPCA's. Medians over seeds.

    python benchmarks/bench_robust.py [--part all|real|synthetic] [--seeds 3]
        [--real-seeds 5] [--no-table]
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_circles
from sklearn.ensemble import IsolationForest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import LocalOutlierFactor
from sklearn.preprocessing import StandardScaler
from sklearn.svm import OneClassSVM

from kpca import KernelPCA, KernelROBPCA, SphericalKernelPCA, WeightedKernelPCA
from kpca.robust import outlier_scores, outliers

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


def _digits(rng):
    X, y = load_digits(return_X_y=True)
    X = X[y < 3] / 16.0
    X = X[rng.permutation(len(X))]
    return X[:360], X[360:]


def _kernel(kernel):
    if kernel == "rbf":
        return dict(kernel="rbf", gamma="median")
    return dict(kernel="poly", degree=3, gamma=1 / 64, coef0=1)


def digits(rng, kernel):
    """Digits 0-2; outliers: images plus uniform noise of up to 3x the pixel range."""
    train, test = _digits(rng)
    n_out = len(train) // 10
    rows = train[rng.choice(len(train), size=n_out, replace=False)]
    out = np.clip(rows + rng.uniform(0, 3, size=rows.shape), 0, None)
    return train, test, out, _kernel(kernel), 5


def digits_cluster(rng, kernel):
    """Digits 0-2; outliers: near-copies of one random scribble (a tight cluster)."""
    train, test = _digits(rng)
    n_out = len(train) // 10
    scribble = rng.uniform(0, 1, size=64) ** 3
    out = np.clip(scribble + rng.normal(size=(n_out, 64)) * 0.05, 0, 1)
    return train, test, out, _kernel(kernel), 5


DATA = {
    "digits-poly": (digits, "poly"),
    "digits-rbf": (digits, "rbf"),
    "circles-poly": (circles, "poly"),
    "circles-rbf": (circles, "rbf"),
    "digits-cluster-rbf": (digits_cluster, "rbf"),
}


def contamination(seeds: int) -> list[dict]:
    rows = []
    for name, (make, kernel) in DATA.items():
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            train, test, out, params, k = make(rng, kernel)
            idx = rng.choice(len(train), size=len(out), replace=False)
            Xc = train.copy()
            Xc[idx] = out
            is_out = np.zeros(len(train), bool)
            is_out[idx] = True
            ref = KernelPCA(n_components=k, random_state=0, **params).fit(train[~is_out])
            Yref = ref.transform(test)
            for mname, Est in METHODS.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    t0 = time.perf_counter()
                    est = Est(n_components=k, random_state=0, **params).fit(Xc)
                    secs = time.perf_counter() - t0
                    clean = Est(n_components=k, random_state=0, **params).fit(train[~is_out])
                Yt, Yc = est.transform(test), clean.transform(test)
                scores = outlier_scores(est)
                rows.append(dict(data=name, seed=seed, method=mname,
                                 cancor=mean_canonical_correlation(Yt, Yref),
                                 clean=mean_canonical_correlation(Yc, Yref),
                                 itself=mean_canonical_correlation(Yt, Yc),
                                 auc=roc_auc_score(is_out, scores), seconds=secs))
    return rows


# ---------------------------------------------------------------------- real data sets
REAL_METHODS = {
    "KernelPCA": KernelPCA,
    "SphericalKernelPCA": SphericalKernelPCA,
    "WeightedKernelPCA": WeightedKernelPCA,
    "KernelROBPCA": KernelROBPCA,
}
ROBUST = ("SphericalKernelPCA", "WeightedKernelPCA", "KernelROBPCA")
SHORT = {"KernelPCA": "std", "SphericalKernelPCA": "sph", "WeightedKernelPCA": "wtd",
         "KernelROBPCA": "robpca", "IsolationForest": "iforest",
         "LocalOutlierFactor": "lof", "OneClassSVM": "ocsvm"}
DETECTORS = ("IsolationForest", "LocalOutlierFactor", "OneClassSVM")
REAL_DATA = {"digits": load_digits, "breast_cancer": load_breast_cancer, "wine": load_wine}
KINDS = ("scattered", "cluster", "cellwise", "orthogonal")
REAL_KERNELS = ("rbf", "poly")
REAL_K = 4
N_TRAIN, N_TEST = 600, 300
FRACTION = 0.10


def subspace_similarity(a, b) -> float:
    """Mean squared canonical correlation of two fitted k-dim subspaces in feature space.

    ``a.subspace_`` spans ``f_l = sum_j A_jl phi(z_j)``, ``b.subspace_`` spans
    ``g_m = sum_j B_jm phi(w_j)``; with the kernel Grams ``G_a = A^T K_zz A``,
    ``G_b = B^T K_ww B`` and ``M = A^T K_zw B``, the squared cosines of the principal
    angles between the spans are the squared singular values of
    ``G_a^(-1/2) M G_b^(-1/2)``; this returns their mean (1: the same subspace,
    0: orthogonal). Both models must use the same kernel (the same gamma).
    """
    Sa, Sb = a.subspace_, b.subspace_
    if Sa.kernel.get_params() != Sb.kernel.get_params():
        raise ValueError("subspace_similarity needs the same kernel for both models")
    Za, Zb = Sa.take(np.arange(Sa.n)), Sb.take(np.arange(Sb.n))
    A, B = Sa.coef, Sb.coef

    def inv_sqrt(G):
        w, V = np.linalg.eigh((G + G.T) / 2)
        w = np.maximum(w, w.max() * 1e-12)
        return (V / np.sqrt(w)) @ V.T

    Ga = A.T @ np.asarray(Sa.kernel.block(Za, Za), dtype=np.float64) @ A
    Gb = B.T @ np.asarray(Sa.kernel.block(Zb, Zb), dtype=np.float64) @ B
    M = A.T @ np.asarray(Sa.kernel.block(Za, Zb), dtype=np.float64) @ B
    cos = np.linalg.svd(inv_sqrt(Ga) @ M @ inv_sqrt(Gb), compute_uv=False)
    return float(np.mean(np.clip(cos, 0.0, 1.0) ** 2))


def _real_split(name: str, rng) -> tuple[np.ndarray, np.ndarray]:
    X = REAL_DATA[name]().data.astype(np.float64)
    X = X[rng.permutation(len(X))]
    n_train = min(N_TRAIN, int(round(0.72 * len(X))))
    train, test = X[:n_train], X[n_train : n_train + N_TEST]
    scaler = StandardScaler().fit(train)
    return scaler.transform(train), scaler.transform(test)


def _seeded_split(data: str, seed: int):
    """(rng, standardised training rows, held-out rows, indices of the rows to
    replace, their mask) of one seed; the rng is left where planting continues."""
    rng = np.random.default_rng(1000 + seed)
    train, test = _real_split(data, rng)
    n = train.shape[0]
    idx = rng.choice(n, size=int(round(FRACTION * n)), replace=False)
    is_out = np.zeros(n, bool)
    is_out[idx] = True
    return rng, train, test, idx, is_out


def _unit(rng, shape) -> np.ndarray:
    U = rng.normal(size=shape)
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def plant(kind: str, clean: np.ndarray, rows: np.ndarray, rng) -> np.ndarray:
    """Planted rows of one contamination kind, replacing ``rows`` (standardised data)."""
    n_out, d = rows.shape
    R = float(np.median(np.linalg.norm(clean - clean.mean(0), axis=1)))
    if kind == "scattered":
        return rows + 3 * R * _unit(rng, (n_out, d))
    if kind == "cluster":
        return 3 * R * _unit(rng, d) + rng.normal(size=(n_out, d)) * (0.05 * R / np.sqrt(d))
    if kind == "cellwise":
        m = max(1, int(round(0.1 * d)))
        out = rows.copy()
        for i in range(n_out):
            cells = rng.choice(d, size=m, replace=False)
            out[i, cells] += 6.0 * rng.choice([-1.0, 1.0], size=m)
        return out
    if kind == "orthogonal":
        Vt = np.linalg.svd(clean - clean.mean(0), full_matrices=False)[2][:REAL_K]
        V = rng.normal(size=(n_out, d))
        V -= (V @ Vt.T) @ Vt
        return rows + 2 * R * V / np.linalg.norm(V, axis=1, keepdims=True)
    raise ValueError(kind)


def _fit(name: str, X: np.ndarray, params: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return REAL_METHODS[name](n_components=REAL_K, random_state=0, **params).fit(X)


def _detector_aucs(Xc: np.ndarray, is_out: np.ndarray, gamma: float, seed: int) -> dict:
    iso = IsolationForest(random_state=seed).fit(Xc)
    lof = LocalOutlierFactor(novelty=True).fit(Xc)
    svm = OneClassSVM(kernel="rbf", gamma=gamma, nu=FRACTION).fit(Xc)
    return {"IsolationForest": roc_auc_score(is_out, -iso.score_samples(Xc)),
            "LocalOutlierFactor": roc_auc_score(is_out, -lof.negative_outlier_factor_),
            "OneClassSVM": roc_auc_score(is_out, -svm.score_samples(Xc))}


def real_data(seeds: int) -> tuple[list[dict], list[dict]]:
    """Rows of (data, kernel, kind, seed, method) results and of clean-data results."""
    cells, clean_rows = [], []
    for data in REAL_DATA:
        for seed in range(seeds):
            rng, train, test, idx, is_out = _seeded_split(data, seed)
            n, d = train.shape
            clean = train[~is_out]
            gamma = float(KernelPCA(n_components=REAL_K, kernel="rbf", gamma="median",
                                    random_state=0).fit(clean).gamma_)
            planted = {kind: plant(kind, clean, train[idx], rng) for kind in KINDS}
            detectors = {}
            for kind in KINDS:
                Xc = train.copy()
                Xc[idx] = planted[kind]
                detectors[kind] = (Xc, _detector_aucs(Xc, is_out, gamma, seed))
            for kernel in REAL_KERNELS:
                params = (dict(kernel="rbf", gamma=gamma) if kernel == "rbf"
                          else dict(kernel="poly", degree=2, gamma=1.0 / d, coef0=1))
                ref = {m: _fit(m, clean, params) for m in REAL_METHODS}
                # held-out variance about standard KPCA's centre, and the share of it
                # each model's (affine) subspace leaves out (squared orthogonal distances)
                total = ref["KernelPCA"].subspace_.raw_projection(test)[1].sum()
                ev_std = 1.0 - np.sum(ref["KernelPCA"].distances(test)[1] ** 2) / total
                for m in ROBUST:
                    ev = 1.0 - np.sum(ref[m].distances(test)[1] ** 2) / total
                    clean_rows.append(dict(
                        data=data, kernel=kernel, seed=seed, method=m,
                        sim=subspace_similarity(ref[m], ref["KernelPCA"]),
                        ev_std=float(ev_std), ev=float(ev), ev_loss=float(ev_std - ev)))
                for kind in KINDS:
                    Xc, det = detectors[kind]
                    base = dict(data=data, kernel=kernel, kind=kind, seed=seed)
                    for m in REAL_METHODS:
                        t0 = time.perf_counter()
                        est = _fit(m, Xc, params)
                        secs = time.perf_counter() - t0
                        cells.append(dict(base, method=m, seconds=secs,
                                          sim=subspace_similarity(est, ref[m]),
                                          auc=roc_auc_score(is_out, -est.score_samples(Xc))))
                    for m, auc in det.items():
                        cells.append(dict(base, method=m, auc=auc))
    return cells, clean_rows


def _median(rows: list[dict], key: str, **match) -> float:
    vals = [r[key] for r in rows if all(r[k] == v for k, v in match.items())]
    return float(np.median(vals))


def report_real(cells: list[dict], clean_rows: list[dict], seeds: int) -> None:
    keys = [(data, kernel, kind) for data in REAL_DATA for kernel in REAL_KERNELS
            for kind in KINDS]
    print(f"## Real data sets, 10% planted rows: medians over {seeds} seeds, k = {REAL_K}\n")
    print("Subspace similarity to the same method fitted on the clean rows (mean cos^2 of "
          "the principal angles) | outlier ROC AUC of score_samples / of the detectors\n")
    meth = list(REAL_METHODS)
    print("| data | kernel | contamination | " + " | ".join(f"sim {SHORT[m]}" for m in meth)
          + " | " + " | ".join(f"AUC {SHORT[m]}" for m in meth + list(DETECTORS)) + " |")
    print("|---|---|---|" + "---|" * (2 * len(meth) + len(DETECTORS)))
    summary = []
    for data, kernel, kind in keys:
        sel = dict(data=data, kernel=kernel, kind=kind)
        sim = {m: _median(cells, "sim", method=m, **sel) for m in meth}
        auc = {m: _median(cells, "auc", method=m, **sel) for m in meth + list(DETECTORS)}
        summary.append((sel, sim, auc))
        print(f"| {data} | {kernel} | {kind} | "
              + " | ".join(f"{sim[m]:.3f}" for m in meth) + " | "
              + " | ".join(f"{auc[m]:.3f}" for m in meth + list(DETECTORS)) + " |")

    print("\n## Uncontaminated (the clean rows): robust method vs standard KernelPCA, "
          f"medians over {seeds} seeds\n")
    print("| data | kernel | " + " | ".join(f"sim {SHORT[m]}" for m in ROBUST)
          + " | held-out EV std | " + " | ".join(f"EV loss {SHORT[m]}" for m in ROBUST) + " |")
    print("|---|---|" + "---|" * (2 * len(ROBUST) + 1))
    clean_sim, clean_loss = {}, {}
    for data in REAL_DATA:
        for kernel in REAL_KERNELS:
            sel = dict(data=data, kernel=kernel)
            sims = {m: _median(clean_rows, "sim", method=m, **sel) for m in ROBUST}
            loss = {m: _median(clean_rows, "ev_loss", method=m, **sel) for m in ROBUST}
            ev_std = _median(clean_rows, "ev_std", method=ROBUST[0], **sel)
            clean_sim[data, kernel], clean_loss[data, kernel] = sims, loss
            print(f"| {data} | {kernel} | " + " | ".join(f"{sims[m]:.3f}" for m in ROBUST)
                  + f" | {ev_std:.3f} | " + " | ".join(f"{loss[m]:+.3f}" for m in ROBUST)
                  + " |")
    print("\n(sim: subspace similarity to standard KPCA fitted on the same clean rows; "
          "held-out EV: share of the held-out rows' feature-space variance (about standard "
          "KPCA's centre) within the k-dim affine subspace; EV loss: standard's EV minus the "
          "robust method's)\n")

    print("## Done-when criteria (medians over seeds)\n")
    ok_a, ok_b, ok_ev, fails = 0, 0, 0, []
    for sel, sim, auc in summary:
        both = [m for m in ROBUST if sim[m] >= 0.90 and auc[m] >= 0.95]
        cs_all = clean_sim[sel["data"], sel["kernel"]]
        cl_all = clean_loss[sel["data"], sel["kernel"]]
        # the cell's best robust estimator: one meeting (a) and (b) if there is one, else
        # one meeting (a) and (b') , else (a), else the largest min(sim - 0.90, auc - 0.95)
        best = max(ROBUST, key=lambda m: (m in both and cs_all[m] >= 0.95,
                                          m in both and cl_all[m] <= 0.05, m in both,
                                          min(sim[m] - 0.90, auc[m] - 0.95)))
        cs, cl = cs_all[best], cl_all[best]
        ok_a += bool(both)
        ok_b += any(cs_all[m] >= 0.95 for m in both)
        ok_ev += any(cl_all[m] <= 0.05 for m in both)
        if not (both and cs >= 0.95 and cl <= 0.05):
            fails.append(f"  {sel['data']}/{sel['kernel']}/{sel['kind']}: best {SHORT[best]} "
                         f"sim {sim[best]:.3f}, AUC {auc[best]:.3f}; clean: sim vs std {cs:.3f}"
                         f", EV loss {cl:+.3f}"
                         f" (best sim {max(sim[m] for m in ROBUST):.3f} by "
                         f"{SHORT[max(ROBUST, key=sim.get)]}, best AUC "
                         f"{max(auc[m] for m in ROBUST):.3f} by "
                         f"{SHORT[max(ROBUST, key=auc.get)]})")
    n = len(summary)
    rob_a = sum(s["KernelROBPCA"] >= 0.90 and a["KernelROBPCA"] >= 0.95 for _, s, a in summary)
    beats = sum(a["KernelROBPCA"] > a["IsolationForest"] for _, _, a in summary)
    ties = sum(a["KernelROBPCA"] == a["IsolationForest"] for _, _, a in summary)
    rob_b = sum(v["KernelROBPCA"] >= 0.95 for v in clean_sim.values())
    rob_ev = sum(v["KernelROBPCA"] <= 0.05 for v in clean_loss.values())
    print(f"(a) cells where a robust estimator reaches sim >= 0.90 and AUC >= 0.95: "
          f"{ok_a}/{n} (KernelROBPCA alone: {rob_a}/{n})")
    print(f"(b) cells where a robust estimator meeting (a) is within 0.05 of standard KPCA on "
          f"clean data (sim >= 0.95): {ok_b}/{n}; KernelROBPCA: {rob_b}/{len(clean_sim)} "
          f"data set x kernel pairs")
    print(f"(b') the same, measured as held-out explained variance (EV loss <= 0.05): "
          f"{ok_ev}/{n}; KernelROBPCA: {rob_ev}/{len(clean_loss)} data set x kernel pairs")
    print(f"(c) KernelROBPCA's AUC > IsolationForest's: {beats}/{n} cells ({ties} ties) "
          f"-> {'holds' if beats >= n / 2 else 'fails'} (need >= {n / 2:.0f})")
    print("failing cells (a, b or b'):" if fails else "failing cells: none")
    for line in fails:
        print(line)
    secs = {m: np.mean([r["seconds"] for r in cells if r["method"] == m]) for m in meth}
    print("\nmean fit seconds: " + ", ".join(f"{SHORT[m]} {v:.2f}" for m, v in secs.items()))


DEGREES = (2, 3, 4, 5, 6)
KS = (8, 16, 32, 64)
TABLE_METHODS = ("KernelPCA", "SphericalKernelPCA", "WeightedKernelPCA",
                 "WeightedKernelPCA, flagged rows dropped")


def _error(Ztr, ytr, Zte, yte) -> float:
    s = Ztr.std(0) + 1e-12
    clf = LogisticRegression(max_iter=2000).fit(Ztr / s, ytr)
    return float(np.mean(clf.predict(Zte / s) != yte))


def classification(seed: int = 0) -> tuple[list[dict], float]:
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
    is_bad = np.zeros(len(Xtr), bool)
    is_bad[bad] = True
    rows, found = [], []
    for degree in DEGREES:
        for k in KS:
            params = dict(n_components=k, kernel="poly", degree=degree, gamma=1 / 64,
                          coef0=1, eigen_solver="dense", random_state=0)
            for mname in METHODS:
                extra = dict(robust_max_iter=10) if mname == "WeightedKernelPCA" else {}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    est = METHODS[mname](**params, **extra).fit(Xtr)
                Ztr, Zte = est.transform(Xtr), est.transform(Xte)
                rows.append(dict(degree=degree, k=k, method=mname,
                                 error=_error(Ztr, ytr, Zte, yte)))
                if mname == "WeightedKernelPCA":
                    keep = ~outliers(est)
                    found.append(roc_auc_score(is_bad, outlier_scores(est)))
                    rows.append(dict(degree=degree, k=k, method=TABLE_METHODS[-1],
                                     error=_error(Ztr[keep], ytr[keep], Zte, yte),
                                     dropped=int((~keep).sum()),
                                     dropped_bad=int((~keep & is_bad).sum())))
    return rows, float(np.mean(found))


def natural_outliers(seeds: int) -> None:
    """How far out the *clean* rows of each data set lie under the polynomial kernel,
    next to the planted ones: why criterion (b) cannot hold there (docs/robust.md)."""
    print("## Natural outliers of the clean rows (polynomial kernel, degree 2)\n")
    print("| data | seed | clean rows at least as far from the clean mean as the median "
          "planted (scattered) row | farthest clean row / median planted (squared "
          "distances) | share of standard KPCA's top-4 variance from the 1 % farthest "
          "clean rows |")
    print("|---|---|---|---|---|")
    for data in REAL_DATA:
        for seed in range(seeds):
            rng, train, _, idx, is_out = _seeded_split(data, seed)  # as real_data()
            d = train.shape[1]
            clean = train[~is_out]
            planted = plant("scattered", clean, train[idx], rng)
            std = KernelPCA(n_components=REAL_K, kernel="poly", degree=2, gamma=1.0 / d,
                            coef0=1).fit(clean)
            dc = std.subspace_.raw_projection(clean)[1]
            med = float(np.median(std.subspace_.raw_projection(planted)[1]))
            Z = std.transform(clean)
            top = np.argsort(-dc)[: max(1, len(dc) // 100)]
            share = float((Z[top] ** 2).sum() / (Z**2).sum())
            far = int(np.sum(dc >= med))
            print(f"| {data} | {seed} | {far} of {len(dc)} ({far / len(dc):.1%}) | "
                  f"{dc.max() / med:.1f} | {share:.0%} |")
    print()


def _warm_up() -> None:
    """One small fit of each estimator (imports, thread pools) before timing."""
    X = np.random.default_rng(0).normal(size=(50, 3))
    for Est in METHODS.values():
        Est(n_components=2, kernel="poly", degree=2).fit(X)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("all", "real", "synthetic", "natural"), default="all",
                    help="real: the real-data contamination benchmark only; synthetic: the "
                         "original data sets and the classification table only; natural: "
                         "how far out the clean rows lie under the polynomial kernel")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--real-seeds", type=int, default=5, help="seeds of the real-data part")
    ap.add_argument("--no-table", action="store_true", help="skip the classification table")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, python "
          f"{platform.python_version()}, numpy {np.__version__}; load average at start "
          f"{os.getloadavg()[0]:.2f}\n")
    _warm_up()
    if args.part in ("all", "natural"):
        natural_outliers(min(args.real_seeds, 3))
        if args.part == "natural":
            return
    if args.part in ("all", "real"):
        t0 = time.perf_counter()
        cells, clean_rows = real_data(args.real_seeds)
        report_real(cells, clean_rows, args.real_seeds)
        print(f"real-data part: {time.perf_counter() - t0:.0f} s; load average now "
              f"{os.getloadavg()[0]:.2f}\n")
        if args.part == "real":
            return
    rows = contamination(args.seeds)
    print(f"## Contamination: 10% outliers ({args.seeds} seeds, mean (min))\n")
    print("| data | method | mean canonical corr. with clean KPCA (held-out) | "
          "same method fitted on clean data | contaminated vs same method on clean | "
          "outlier ROC AUC | fit seconds |")
    print("|---|---|---|---|---|---|---|")
    for name in DATA:
        for mname in METHODS:
            sel = [r for r in rows if r["data"] == name and r["method"] == mname]
            cc = np.array([r["cancor"] for r in sel])
            it = np.array([r["itself"] for r in sel])
            auc = np.array([r["auc"] for r in sel])
            secs = np.mean([r["seconds"] for r in sel])
            cl = np.mean([r["clean"] for r in sel])
            print(f"| {name} | {mname} | {cc.mean():.3f} ({cc.min():.3f}) | {cl:.3f} | "
                  f"{it.mean():.3f} ({it.min():.3f}) | {auc.mean():.3f} ({auc.min():.3f}) | "
                  f"{secs:.2f} |")
    if args.no_table:
        return
    t0 = time.perf_counter()
    rows, auc = classification()
    print("\n## Digits classification: test error, 10% corrupted and mislabelled training "
          "images\n")
    print(f"(polynomial kernel, gamma 1/64, coef0 1; {time.perf_counter() - t0:.0f} s in all; "
          f"mean outlier ROC AUC of WeightedKernelPCA over the cells: {auc:.3f})\n")
    print("| degree | method | " + " | ".join(f"k={k}" for k in KS) + " |")
    print("|---|---|" + "---|" * len(KS))
    for degree in DEGREES:
        for mname in TABLE_METHODS:
            errs = [next(r["error"] for r in rows if r["degree"] == degree and r["k"] == k
                         and r["method"] == mname) for k in KS]
            print(f"| {degree} | {mname} | " + " | ".join(f"{e:.3f}" for e in errs) + " |")
    drops = [r for r in rows if "dropped" in r]
    print(f"\nflagged training rows (mean over cells): {np.mean([r['dropped'] for r in drops]):.1f}"
          f", of which corrupted: {np.mean([r['dropped_bad'] for r in drops]):.1f} (of 100)")


if __name__ == "__main__":
    main()
