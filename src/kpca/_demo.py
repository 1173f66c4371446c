"""The classic examples (docs/math.md, "The classic examples"), for ``kpca demo`` and
``examples/``.

Each ``section_*`` function computes one example, writes its files (CSV tables,
PNG figures when matplotlib is installed) into a folder and returns a
:class:`Section`: a title, a short Markdown text with the numbers, and the
files. :func:`run_demo` runs them all and writes ``report.md``.

* circles and moons with linear / polynomial / cosine / RBF kernels: which
  kernels make the classes linearly separable on the first two components;
* Schölkopf's toy example: contour lines of the first 8 RBF components over
  three Gaussian clusters;
* reconstruction: PCA with all components is exact, kernel PCA approximate;
* kernel PCA features + linear SVM on scikit-learn's digits, the error table
  by number of components x polynomial degree (layout of Schölkopf, Smola &
  Müller 1998, Table 1);
* denoising of digits with pre-images, against linear PCA;
* stylometry of a generated two-author corpus;
* dual PCA: with n < d the n x n Gram matrix gives PCA more cheaply.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from ._kernel_pca import KernelPCA
from .datasets import concentric_circles, make_moons, three_clusters, two_authors_corpus
from .io import atomic_write, write_table
from .preimage import fit_ridge_preimage, ridge_preimage, score_space_kernel

logger = logging.getLogger("kpca")


# ----------------------------------------------------------------------------- results
@dataclass
class MethodScores:
    """Linear separability of the classes in one embedding.

    Attributes
    ----------
    label : str
        Human-readable method name.
    accuracy : float
        Training accuracy of a logistic regression on components 1 and 2.
    cv_accuracy : float
        Its 5-fold cross-validated accuracy.
    accuracy_c1 : float
        Training accuracy on component 1 alone (a single threshold).
    best_single : tuple of (int, float)
        1-based index of the component that alone separates best, and that accuracy.
    """

    label: str
    accuracy: float
    cv_accuracy: float
    accuracy_c1: float
    best_single: tuple[int, float]


@dataclass
class Section:
    """One example of the demo: a title, Markdown text and the files it wrote."""

    key: str
    title: str
    text: str
    files: dict[str, Path] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class DemoResult:
    """What :func:`run_demo` computed and wrote.

    Attributes
    ----------
    scores : dict of str to MethodScores
        Concentric circles: keys ``'linear'`` and ``'rbf'`` (and ``'poly'``, ``'cosine'``).
    files : dict of str to Path
        Every file written, by name (``'report'`` is the Markdown report).
    sections : list of Section
    gamma : float
        RBF coefficient used for the circles.
    n_samples : int
    """

    scores: dict[str, MethodScores]
    files: dict[str, Path] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    gamma: float = 10.0
    n_samples: int = 400


def _separability(Z: np.ndarray, y: np.ndarray, label: str, seed: int) -> MethodScores:
    clf = LogisticRegression()
    cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    single = [float(clf.fit(Z[:, [j]], y).score(Z[:, [j]], y)) for j in range(Z.shape[1])]
    best = int(np.argmax(single))
    return MethodScores(
        label=label,
        accuracy=float(clf.fit(Z, y).score(Z, y)),
        cv_accuracy=float(cross_val_score(clf, Z, y, cv=cv).mean()),
        accuracy_c1=single[0],
        best_single=(best + 1, single[best]),
    )


def _plotting() -> Any:
    """The plotting module, or None when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    from . import plotting

    return plotting


def _close(fig: Any) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def _write_text(path: Path, text: str) -> Path:
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- sections
#: kernels compared on circles and moons: (key, label, KernelPCA parameters)
def _kernels(gamma: float) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("linear", "linear PCA", dict(kernel="linear")),
        ("poly", "polynomial (degree 3)", dict(kernel="poly", degree=3, gamma=1.0, coef0=1)),
        ("cosine", "cosine", dict(kernel="cosine")),
        ("rbf", f"RBF kernel PCA (gamma={gamma:g})", dict(kernel="rbf", gamma=gamma)),
    ]


def section_circles_moons(
    out: Path, *, n_samples: int = 400, gamma_circles: float = 10.0,
    gamma_moons: float = 15.0, random_state: int = 0,
) -> Section:
    """Circles and moons: which kernel makes the classes linearly separable.

    Writes ``circles.csv`` (the circles, without labels), ``embedding_<kernel>.csv``
    for the circles (two components and the label) and ``circles_moons.png``
    (a grid of embeddings, one row per data set).
    """
    t0 = time.perf_counter()
    sets = {
        "circles": (concentric_circles(n_samples=n_samples, factor=0.3, noise=0.05,
                                       random_state=random_state), gamma_circles),
        "moons": (make_moons(n_samples=n_samples, noise=0.05, random_state=random_state),
                  gamma_moons),
    }
    sec = Section("circles_moons", "Concentric circles and two moons", "")
    scores: dict[str, dict[str, MethodScores]] = {}
    embeddings: dict[str, dict[str, np.ndarray]] = {}
    X_c = sets["circles"][0][0]
    sec.files["data"] = write_path = out / "circles.csv"
    write_table(write_path, X_c, ["x0", "x1"])
    for name, ((X, y), gamma) in sets.items():
        scores[name], embeddings[name] = {}, {}
        for key, label, params in _kernels(gamma):
            est = KernelPCA(n_components=2, **params)
            Z = est.fit_transform(X)
            embeddings[name][key] = Z
            scores[name][key] = _separability(Z, y, label, random_state)
            if name == "circles" and key in ("linear", "rbf"):
                path = out / f"embedding_{key}.csv"
                yf = y.astype(np.float64)[:, None]
                write_table(path, np.hstack([Z, yf]), [*est.get_feature_names_out(), "label"])
                sec.files[f"embedding_{key}"] = path
    sec.data = {"scores": scores, "gammas": {k: v[1] for k, v in sets.items()}}
    plotting = _plotting()
    if plotting is not None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, 4, figsize=(15, 7.4))
        for r, (name, ((_, y), gamma)) in enumerate(sets.items()):
            for c, (key, label, _) in enumerate(_kernels(gamma)):
                s = scores[name][key]
                plotting.plot_embedding(
                    embeddings[name][key], np.where(y == 0, "class 0", "class 1"),
                    ax=axes[r, c], title=f"{name}: {label}\nlinear classifier accuracy "
                    f"{s.accuracy:.2f}")
        fig.suptitle("Kernel PCA embeddings (components 1-2): which kernels make the classes "
                     "linearly separable")
        fig.tight_layout()
        sec.files["figure"] = plotting.save_figure(fig, out / "circles_moons.png")
        _close(fig)

    rows = []
    for name in sets:
        for key, label, _ in _kernels(sets[name][1]):
            s = scores[name][key]
            rows.append([name, label, f"{s.accuracy:.3f}", f"{s.cv_accuracy:.3f}",
                         f"{s.best_single[1]:.3f} (component {s.best_single[0]})"])
    rbf_c, lin_c = scores["circles"]["rbf"], scores["circles"]["linear"]
    verdict = (
        f"RBF kernel PCA {'separates' if rbf_c.accuracy >= 0.99 else 'does not fully separate'}"
        f" the two circles (accuracy {rbf_c.accuracy:.3f} on components 1-2); linear PCA "
        f"{'also separates them' if lin_c.accuracy >= 0.9 else 'does not'} (accuracy "
        f"{lin_c.accuracy:.3f}, chance level is 0.5): a rotation of the plane cannot make "
        "concentric circles linearly separable."
    )
    sec.text = f"""{n_samples} points per data set (`make_circles(factor=0.3, noise=0.05)`,
`make_moons(noise=0.05)`), two classes of equal size. Each kernel projects onto 2
components; a logistic regression measures how linearly separable the classes are
in the projection (accuracy on the embedding, 5-fold cross-validated accuracy, and
the best single component).

**{verdict}**

{_md_table(["data", "kernel", "accuracy, components 1-2", "5-fold CV accuracy",
            "best single component"], rows)}
Figure: `circles_moons.png` — top row circles, bottom row moons; colours are the
true classes. Only the RBF kernel unfolds both into linearly separable groups (on
the moons the RBF accuracy is {scores['moons']['rbf'].accuracy:.3f}).

Reproduce with the command line tool:

    kpca fit-transform circles.csv --kernel rbf --gamma {gamma_circles:g} -k 2 -o rbf.csv
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def section_toy_contours(out: Path, *, gamma: float = 10.0, random_state: int = 0) -> Section:
    """Schölkopf's toy example: contour lines of the first 8 components (RBF)."""
    t0 = time.perf_counter()
    X, y = three_clusters(n_per_cluster=30, std=0.1, random_state=random_state)
    est = KernelPCA(n_components=8, kernel="rbf", gamma=gamma).fit(X)
    sec = Section("toy_contours", "Schölkopf's toy example: contour lines", "")
    plotting = _plotting()
    if plotting is not None:
        fig, _ = plotting.plot_contours(
            est, X, y, n_components=8, extent=(-1, 1, -0.5, 1), resolution=120,
            title=f"RBF kernel PCA (gamma={gamma:g}): contour lines of the first 8 "
            "projection functions")
        sec.files["figure"] = plotting.save_figure(fig, out / "toy_contours.png")
        _close(fig)
        import matplotlib.pyplot as plt

        kernels = _contour_kernels(gamma)
        fig, axes = plt.subplots(len(kernels), 4, figsize=(11.6, 2.9 * len(kernels)),
                                 squeeze=False)
        for r, (label, params) in enumerate(kernels):
            model = KernelPCA(4, **params).fit(X)
            plotting.plot_contours(model, X, y, n_components=4, extent=(-1, 1, -0.5, 1),
                                   resolution=80, axes=axes[r])
            axes[r, 0].set_ylabel(label, fontsize="small")
        fig.suptitle("projection functions of the first 4 components, by kernel")
        fig.tight_layout()
        sec.files["kernels"] = plotting.save_figure(fig, out / "contours_kernels.png")
        _close(fig)
    ratios = ", ".join(f"{100 * r:.1f} %" for r in est.explained_variance_ratio_)
    sec.data = {"ratios": est.explained_variance_ratio_}
    sec.text = f"""Three Gaussian clusters (30 points each, standard deviation 0.1) as in
Schölkopf, Smola & Müller (1998), RBF kernel exp(-{gamma:g} ||x - y||²). Figure
`toy_contours.png` shows the contour lines of the projection functions
y_l(x) = Σᵢ αₗᵢ k̃(x, xᵢ) of the first 8 components over the plane: the first two
separate the three clusters from each other; the following ones split each cluster
into halves (then quarters), along orthogonal directions.

Explained variance of the 8 components: {ratios}.

Figure `contours_kernels.png` compares kernels on the same data (one row each, first 4
components): with the linear kernel the projection functions are linear (parallel
straight contour lines: plain PCA); the polynomial kernel of degree 2 gives
quadratic functions (conics); the RBF and Laplacian kernels give local functions
centred on the clusters, the Laplacian (an L1 distance) with diamond-shaped,
kinked contour lines. Linear PCA of 2-D data has only 2 components.
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def _contour_kernels(gamma: float) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("linear", dict(kernel="linear")),
        ("polynomial, degree 2", dict(kernel="poly", degree=2, gamma=1.0, coef0=1)),
        (f"RBF, gamma={gamma:g}", dict(kernel="rbf", gamma=gamma)),
        ("Laplacian, gamma=3", dict(kernel="laplacian", gamma=3.0)),
    ]


def _digits(random_state: int = 0, test_size: float = 0.3):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    return train_test_split(X, y, test_size=test_size, random_state=random_state, stratify=y)


def section_reconstruction(out: Path, *, random_state: int = 0) -> Section:
    """PCA with all components reconstructs exactly; kernel PCA approximately."""
    t0 = time.perf_counter()
    Xtr, Xte, _, _ = _digits(random_state)
    Xtr = Xtr[:600]
    ks = [2, 4, 8, 16, 32, 64]
    lin_err, rbf_err = [], []
    # one fit each: the first k components of a fit with more components are the same
    lin = KernelPCA(max(ks), kernel="linear", eigen_solver="dense").fit(Xtr)
    rbf = KernelPCA(max(ks), kernel="rbf", gamma="median", eigen_solver="dense").fit(Xtr)
    Ytr, Yte = rbf.transform(Xtr), rbf.transform(Xte)
    score_kernel = score_space_kernel(rbf.kernel_)
    recon_16 = None
    for k in ks:
        # linear PCA: the reconstruction is the projection on the first k components
        lin_err.append(float(np.mean((Xte - _linear_reconstruction(lin, Xte, k)) ** 2)))
        # kernel PCA: learned (kernel ridge) pre-image from the first k scores
        C = fit_ridge_preimage(score_kernel, Ytr[:, :k], Xtr, 1e-2)
        R = ridge_preimage(score_kernel, Yte[:, :k], Ytr[:, :k], C)
        rbf_err.append(float(np.mean((Xte - R) ** 2)))
        if k == 16:
            recon_16 = R
    train_full = float(np.mean((Xtr - _linear_reconstruction(lin, Xtr)) ** 2))
    sec = Section("reconstruction", "Reconstruction: PCA vs kernel PCA", "")
    sec.data = {"k": ks, "pca": lin_err, "kpca": rbf_err}
    plotting = _plotting()
    if plotting is not None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        ax.semilogy(ks, np.maximum(lin_err, 1e-32), "o-", label="linear PCA (projection)")
        ax.semilogy(ks, rbf_err, "s-", label="RBF kernel PCA (learned pre-image)")
        ax.set_xlabel("number of components")
        ax.set_ylabel("held-out reconstruction MSE")
        ax.set_title("digits: reconstruction error of unseen images")
        ax.legend(fontsize="small")
        sec.files["figure"] = plotting.save_figure(fig, out / "reconstruction.png")
        _close(fig)
        fig, _ = plotting.plot_gallery(
            [Xte[:10], _linear_reconstruction(lin, Xte[:10], 16), recon_16[:10]],
            (8, 8), row_titles=["original", "PCA, 16 comp.", "KPCA, 16 comp."],
            title="reconstructions of unseen digits")
        sec.files["gallery"] = plotting.save_figure(fig, out / "reconstruction_gallery.png")
        _close(fig)
    rows = [[k, f"{a:.2e}", f"{b:.2e}"] for k, a, b in zip(ks, lin_err, rbf_err, strict=True)]
    sec.text = f"""600 training digits (8 x 8 pixels, scaled to [0, 1]), error measured on
{len(Xte)} unseen ones. Linear PCA reconstructs by projecting on the components:
with all components it is exact — on the training images the MSE is {train_full:.1e}
(round-off); on unseen ones {lin_err[-1]:.1e}, only because a few border pixels never
vary in the training set.
Kernel PCA's reconstruction goes through a pre-image (here the learned ridge
pre-image, RBF kernel with the median-heuristic gamma): it is approximate and does
not become exact with more components.

{_md_table(["components", "linear PCA MSE", "RBF kernel PCA MSE"], rows)}
Figures: `reconstruction.png` (error against the number of components),
`reconstruction_gallery.png` (originals and reconstructions with 16 components).
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def _linear_reconstruction(model: KernelPCA, X: np.ndarray, k: int | None = None) -> np.ndarray:
    """Projection of X on the span of the first ``k`` linear components, in input space.

    The components in input space are ``W = X_c^T alpha`` (X_c: centred training
    data); the reconstruction is ``mean + Y W^T``. Components with a zero
    eigenvalue carry nothing and are skipped.
    """
    Xf = np.asarray(model.X_fit_)
    mean = Xf.mean(axis=0)
    k = len(model.eigenvalues_) if k is None else k
    mu, V = model.eigenvalues_[:k], model.eigenvectors_[:, :k]
    keep = mu > 0
    A = V[:, keep] / np.sqrt(mu[keep])
    W = (Xf - mean).T @ A  # (d, k'), orthonormal columns
    return mean + ((X - mean) @ W) @ W.T


DIGITS_COMPONENTS_FULL = (16, 32, 64, 120)
DIGITS_DEGREES_FULL = (1, 2, 3, 4, 5, 6, 7)


def digits_error_table(
    components: tuple[int, ...] = DIGITS_COMPONENTS_FULL,
    degrees: tuple[int, ...] = DIGITS_DEGREES_FULL,
    *,
    random_state: int = 0,
    n_train: int | None = None,
) -> dict[str, Any]:
    """Test error (%) of a linear SVM on polynomial kernel PCA features of digits.

    Kernel ``k(x, y) = <x, y>^d`` (homogeneous, as Schölkopf et al. 1998; degree 1
    is linear PCA); features standardised; ``LinearSVC(C=1)``. One kernel PCA fit
    per degree gives all numbers of components (the first k components of a fit
    with more components are the same).

    Returns
    -------
    dict
        ``errors`` (ndarray of shape (len(components), len(degrees)), percent),
        ``components``, ``degrees``, ``n_train``, ``n_test``.
    """
    Xtr, Xte, ytr, yte = _digits(random_state)
    if n_train is not None:
        Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    errors = np.full((len(components), len(degrees)), np.nan)
    kmax = max(components)
    for j, d in enumerate(degrees):
        est = KernelPCA(min(kmax, len(Xtr)), kernel="poly", degree=d, gamma=1.0, coef0=0,
                        eigen_solver="dense")
        Ztr = est.fit_transform(Xtr)
        Zte = est.transform(Xte)
        for i, k in enumerate(components):
            if k > Ztr.shape[1]:
                continue
            sc = StandardScaler().fit(Ztr[:, :k])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf = LinearSVC(C=1.0, max_iter=5000, random_state=random_state)
                clf.fit(sc.transform(Ztr[:, :k]), ytr)
            errors[i, j] = 100.0 * (1.0 - clf.score(sc.transform(Zte[:, :k]), yte))
        logger.info("digits: degree %d done", d)
    return {"errors": errors, "components": list(components), "degrees": list(degrees),
            "n_train": len(Xtr), "n_test": len(Xte)}


def format_digits_table(result: dict[str, Any]) -> str:
    """Markdown table in the layout of Schölkopf et al. (1998), Table 1."""
    E = result["errors"]
    header = ["# of components", *[f"degree {d}" for d in result["degrees"]]]
    rows = []
    for i, k in enumerate(result["components"]):
        best = np.nanmin(E[i])
        cells = []
        for v in E[i]:
            s = "—" if not np.isfinite(v) else f"{v:.1f}"
            cells.append(f"**{s}**" if np.isfinite(v) and v == best else s)
        rows.append([k, *cells])
    return _md_table(header, rows)


def section_digits(out: Path, *, full: bool = True, random_state: int = 0) -> Section:
    """Kernel PCA features + linear SVM on digits: the error table."""
    t0 = time.perf_counter()
    if full:
        res = digits_error_table(random_state=random_state)
    else:
        res = digits_error_table((16, 32, 64), (1, 2, 3, 4), random_state=random_state,
                                 n_train=800)
    E = res["errors"]
    i, j = np.unravel_index(np.nanargmin(E), E.shape)
    sec = Section("digits", "Digits: kernel PCA features + linear SVM", "", data=res)
    sec.files["table"] = _write_text(out / "digits_table.md", format_digits_table(res))
    plotting = _plotting()
    if plotting is not None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.8, 3.8))
        for r, k in enumerate(res["components"]):
            ax.plot(res["degrees"], E[r], "o-", label=f"{k} components")
        ax.set_xlabel("polynomial degree (1 = linear PCA)")
        ax.set_ylabel("test error (%)")
        ax.axhline(4.0, color="0.5", ls="--", lw=1,
                   label="USPS best, Schölkopf et al. 1998")
        ax.set_title("digits: linear SVM on kernel PCA features")
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
        sec.files["figure"] = plotting.save_figure(fig, out / "digits_table.png")
        _close(fig)
    degrees = list(res["degrees"])
    verdict = ""
    if 1 in degrees and len(degrees) > 1:
        lin = E[-1, degrees.index(1)]
        nonlin = np.nanmin(np.delete(E[-1], degrees.index(1)))
        verdict = (f"With {res['components'][-1]} components the best nonlinear kernel "
                   f"({nonlin:.1f} %) {'beats' if nonlin < lin else 'does not beat'} linear "
                   f"PCA ({lin:.1f} %).")
    scope = ("full table" if full else
             "quick version (`kpca demo` without `--quick` gives the full table)")
    sec.text = f"""scikit-learn's digits (8 x 8), {res['n_train']} training and {res['n_test']}
test images; kernel PCA with the polynomial kernel <x, y>^d, then a linear SVM on the
standardised first k components. Test error in %, {scope}; layout of Schölkopf,
Smola & Müller (1998), Table 1 (on USPS, 16 x 16, their best was 4.0 %):

{format_digits_table(res)}
Best: {E[i, j]:.1f} % with {res['components'][i]} components and degree
{res['degrees'][j]}. {verdict} Figure: `digits_table.png`.
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def section_denoising(out: Path, *, noise: float = 0.25, random_state: int = 0) -> Section:
    """Denoising digits with kernel PCA pre-images, against linear PCA."""
    t0 = time.perf_counter()
    Xtr, Xte, _, _ = _digits(random_state)
    rng = np.random.RandomState(random_state)
    Xte = Xte[:200]
    Xn = Xte + noise * rng.standard_normal(Xte.shape)
    pca = KernelPCA(16, kernel="linear", eigen_solver="dense").fit(Xtr)
    R_pca = _linear_reconstruction(pca, Xn)
    kp = KernelPCA(32, kernel="rbf", gamma="median", fit_inverse_transform=True, alpha=5e-2,
                   eigen_solver="dense", random_state=random_state).fit(Xtr)
    if callable(getattr(kp, "denoise", None)):
        R_kpca, info = kp.denoise(Xn, return_info=True)  # method 'auto'
        method = {"fixed_point": "Mika et al.'s fixed-point iteration",
                  "mds": "Kwok and Tsang's distance method",
                  "ridge": "the learned ridge pre-image"}.get(info.method, info.method)
        R_ridge = kp.denoise(Xn, method="ridge")
    else:  # pragma: no cover - a kpca without denoise(): the learned pre-image only
        R_kpca = R_ridge = kp.inverse_transform(kp.transform(Xn))
        method = "the learned ridge pre-image"
    err = {
        "noisy": float(np.mean((Xn - Xte) ** 2)),
        "linear PCA (16 comp.)": float(np.mean((R_pca - Xte) ** 2)),
        f"RBF kernel PCA (32 comp.), {method}": float(np.mean((R_kpca - Xte) ** 2)),
    }
    if R_ridge is not R_kpca:
        err["RBF kernel PCA (32 comp.), learned ridge pre-image"] = float(
            np.mean((R_ridge - Xte) ** 2))
    sec = Section("denoising", "Denoising digits with pre-images", "", data=err)
    plotting = _plotting()
    if plotting is not None:
        others = {"KPCA, ridge": R_ridge} if R_ridge is not R_kpca else {}
        others["linear PCA"] = R_pca
        fig, _ = plotting.denoising_gallery(
            kp, Xn, (8, 8), X_clean=Xte, others=others, n_images=12,
            label="KPCA, " + {"fixed_point": "fixed point", "mds": "MDS"}.get(
                info.method if R_ridge is not R_kpca else "ridge", "ridge"),
            title=f"denoising (Gaussian noise, sd {noise:g})")
        sec.files["figure"] = plotting.save_figure(fig, out / "denoising.png")
        _close(fig)
    rows = [[k, f"{v:.4f}"] for k, v in err.items()]
    best = min(err, key=err.get)
    sec.text = f"""{len(Xte)} test digits with Gaussian noise (standard deviation {noise:g},
pixels in [0, 1]); models fitted on {len(Xtr)} clean training digits. Kernel PCA
denoises by projecting on 32 RBF components (median-heuristic gamma) and mapping
back with a pre-image (`KernelPCA.denoise`: {method}, and the learned ridge
pre-image for comparison); linear PCA projects on 16 components. Mean squared error
to the clean images (lowest: {best}):

{_md_table(["images", "MSE to the clean digits"], rows)}
Figure: `denoising.png` (rows: clean, noisy, kernel PCA with {method}, kernel PCA
with the ridge pre-image, linear PCA).
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def _separated_by(z: np.ndarray, groups: np.ndarray) -> bool:
    """True when a threshold on ``z`` separates the two groups."""
    a, b = (z[groups == g] for g in np.unique(groups))
    return bool(a.max() < b.min() or b.max() < a.min())


def section_stylometry(out: Path, *, random_state: int = 0) -> Section:
    """Stylometry of a generated corpus of two authors.

    Word frequencies + RBF kernel PCA (:func:`kpca.text.stylometry`), and the
    spectrum (p-gram) kernel on the raw chapter text for comparison.
    """
    from .text import read_corpus, stylometry

    t0 = time.perf_counter()
    corpus_dir = out / "corpus"
    two_authors_corpus(corpus_dir, random_state=random_state)
    corpus = read_corpus(corpus_dir)
    res = stylometry(corpus, n_words=50)
    author = np.array([lab.split("_")[0] for lab in res.labels])
    acc = float(LogisticRegression().fit(res.scores, author).score(res.scores, author))
    Zs = KernelPCA(2, kernel="spectrum", kernel_params={"p": 4}).fit_transform(corpus.chunks)
    acc_s = float(LogisticRegression().fit(Zs, author).score(Zs, author))
    sec = Section("stylometry", "Stylometry: two authors", "",
                  data={"accuracy": acc, "accuracy_spectrum": acc_s})
    plotting = _plotting()
    if plotting is not None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6))
        plotting.plot_embedding(res.scores, res.labels, ax=axes[0], s=30,
                                title="RBF kernel PCA on the 50 most used words")
        plotting.plot_embedding(Zs, res.labels, ax=axes[1], s=30,
                                title="spectrum kernel (4-grams) on the raw text")
        fig.suptitle("stylometry: one point per chapter, four books by two authors")
        fig.tight_layout()
        sec.files["figure"] = plotting.save_figure(fig, out / "stylometry.png")
        _close(fig)
    c1 = _separated_by(res.scores[:, 0], author)
    where = ("the chapters of authorA's books and of authorB's books form two groups "
             "separated along component 1" if c1 else
             "the chapters of the two authors form separate groups")
    spectrum_verdict = ("component 1 happens to separate the authors as well"
                        if _separated_by(Zs[:, 0], author) else
                        "neither component alone separates the authors")
    sec.text = f"""A generated corpus (folder `corpus/`): two "authors" with different
function-word habits, two books each, {len(res.labels) // 4} chapters per book.
Each chapter is described by the relative frequencies of the 50 most used words
(standardised), then RBF kernel PCA (median-heuristic gamma). A linear classifier on
the two components tells the authors apart with accuracy {acc:.3f}; in the left panel
of `stylometry.png` {where}.

Most used words: {', '.join(res.words[:15])}, ...

The right panel uses no word counts at all: kernel PCA with the spectrum kernel
(shared substrings of 4 characters, normalised) on the raw text of each chapter. It
groups the chapters by *book*: substrings are dominated by each book's content words
(its topic), not by the authors' function-word habits, so {spectrum_verdict}
(a linear classifier on both components together: accuracy {acc_s:.3f}). Choosing
the representation is part of choosing the kernel.

Reproduce in Python: `kpca.text.stylometry("corpus/")`, and
`KernelPCA(2, kernel="spectrum", kernel_params={{"p": 4}}).fit_transform(chapters)`.
"""
    sec.seconds = time.perf_counter() - t0
    return sec


def section_dual_pca(
    out: Path, *, n: int = 50, dims: tuple[int, ...] = (100, 200, 400, 800, 1200),
    random_state: int = 0,
) -> Section:
    """Dual PCA: with n < d, PCA through the n x n Gram matrix is cheaper.

    For each dimension d in ``dims``: n samples near a 5-dimensional subspace of
    R^d; primal PCA eigendecomposes the d x d covariance matrix, dual PCA (kernel
    PCA with the linear kernel) the n x n Gram matrix. Both are timed and their
    first 5 scores compared (equal up to sign). Writes ``dual_pca.png`` (time
    against d) when matplotlib is installed.
    """
    from threadpoolctl import threadpool_limits

    t0 = time.perf_counter()
    rng = np.random.RandomState(random_state)
    rows, t_primal, t_dual, diffs = [], [], [], []
    # both timed on one thread: comparable, and not distorted by a busy machine
    with threadpool_limits(1):  # warm-up: the first call pays for imports and set-up
        KernelPCA(2, kernel="linear", eigen_solver="dense", n_jobs=1).fit(np.eye(4))
    for d in dims:
        X = rng.standard_normal((n, 5)) @ rng.standard_normal((5, d)) + 0.1 * (
            rng.standard_normal((n, d)))
        tp, td = [], []
        with threadpool_limits(1):
            for _ in range(3):  # best of 3
                t = time.perf_counter()
                Xc = X - X.mean(axis=0)
                C = Xc.T @ Xc / n  # primal: d x d covariance
                _, V = np.linalg.eigh(C)
                primal_scores = Xc @ V[:, ::-1][:, :5]
                tp.append(time.perf_counter() - t)
                t = time.perf_counter()
                dual_scores = KernelPCA(5, kernel="linear", eigen_solver="dense",
                                        n_jobs=1).fit_transform(X)
                td.append(time.perf_counter() - t)
        t_primal.append(min(tp))
        t_dual.append(min(td))
        signs = np.sign(np.sum(primal_scores * dual_scores, axis=0))
        diffs.append(float(np.max(np.abs(primal_scores * signs - dual_scores))))
        rows.append([d, f"{t_primal[-1]:.4f}", f"{t_dual[-1]:.4f}", f"{diffs[-1]:.1e}"])
    diff = max(diffs)
    sec = Section("dual_pca", "Dual PCA (n < d)", "",
                  data={"dims": list(dims), "primal_s": t_primal, "dual_s": t_dual,
                        "max_diff": diff})
    plotting = _plotting()
    if plotting is not None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        ax.loglog(dims, t_primal, "o-", label="primal: eigh of the d x d covariance")
        ax.loglog(dims, t_dual, "s-", label=f"dual: kernel PCA, {n} x {n} Gram matrix")
        ax.set_xlabel("number of features d")
        ax.set_ylabel("time (s)")
        ax.set_title(f"PCA of n = {n} samples: primal vs dual")
        ax.legend(fontsize="small")
        sec.files["figure"] = plotting.save_figure(fig, out / "dual_pca.png")
        _close(fig)
    faster = [d for d, a, b in zip(dims, t_primal, t_dual, strict=True) if b < a]
    if faster:
        crossover = (f"Here the dual route is faster from d = {faster[0]} on ({n} samples), and "
                     f"{t_primal[-1] / t_dual[-1]:.0f}x faster at d = {dims[-1]}; for small d "
                     "its time is mostly the estimator's fixed overhead.\n")
    else:
        crossover = "At these sizes the primal route was not slower on this machine.\n"
    sec.text = f"""{n} samples in d dimensions (near a 5-dimensional subspace). Primal PCA
eigendecomposes the d x d covariance matrix, whose cost grows like d³; dual PCA —
kernel PCA with the linear kernel — eigendecomposes the {n} x {n} Gram matrix, whose
cost grows only like n²d (forming the Gram matrix). The first 5 scores agree
up to sign (largest difference {diff:.1e}). Seconds on this machine (one thread, best of 3):

{_md_table(["d", "primal (d x d)", "dual (n x n)", "max score difference"], rows)}
{crossover}
Figure: `dual_pca.png` (time against d, log-log).
"""
    sec.seconds = time.perf_counter() - t0
    return sec


SECTIONS: dict[str, Callable[..., Section]] = {
    "circles_moons": section_circles_moons,
    "toy_contours": section_toy_contours,
    "reconstruction": section_reconstruction,
    "digits": section_digits,
    "denoising": section_denoising,
    "stylometry": section_stylometry,
    "dual_pca": section_dual_pca,
}


def run_demo(
    out_dir: str | os.PathLike,
    *,
    n_samples: int = 400,
    gamma: float = 10.0,
    random_state: int = 0,
    full: bool = True,
    sections: list[str] | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> DemoResult:
    """Run the examples and write their files and ``report.md`` into ``out_dir``.

    Parameters
    ----------
    out_dir : str or path-like
        Created if needed. Every file is written atomically.
    n_samples : int, default=400
        Points of the circles and moons.
    gamma : float, default=10.0
        RBF kernel coefficient for the circles.
    random_state : int, default=0
    full : bool, default=True
        The full digits table (16, 32, 64, 120 components x degrees 1-7, on all
        1257 training images; about 4 s on an idle machine); False: 3 x 4 cells on
        800 training images.
    sections : list of str, default=None
        Which examples (keys of :data:`SECTIONS`); default all.
    progress : callable, default=None
        Called as ``progress(key, seconds)`` after each example.

    Returns
    -------
    DemoResult
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys = list(SECTIONS) if sections is None else sections
    unknown = [k for k in keys if k not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown demo section(s) {unknown}; choose from {list(SECTIONS)}.")
    result = DemoResult(scores={}, gamma=gamma, n_samples=n_samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for key in keys:
            if key == "circles_moons":
                sec = section_circles_moons(out, n_samples=n_samples, gamma_circles=gamma,
                                            random_state=random_state)
                result.scores = dict(sec.data["scores"]["circles"])
            elif key == "digits":
                sec = section_digits(out, full=full, random_state=random_state)
            else:
                sec = SECTIONS[key](out, random_state=random_state)
            logger.info("demo: %s done in %.1f s", key, sec.seconds)
            if progress is not None:
                progress(key, sec.seconds)
            result.sections.append(sec)
            for name, path in sec.files.items():
                # the circles' files keep their short names ('data', 'embedding_rbf', ...)
                short = key == "circles_moons" and name != "figure"
                result.files[name if short else f"{key}:{name}"] = path
    result.files["report"] = _write_text(out / "report.md", format_report(result))
    return result


def format_report(result: DemoResult) -> str:
    """The Markdown report of a :class:`DemoResult`."""
    have_png = any(str(p).endswith(".png") for s in result.sections for p in s.files.values())
    parts = ["# kpca demo: the examples of kernel PCA\n",
             "Each section reproduces one of the classic examples; the numbers are "
             "computed by this run."]
    if not have_png:
        parts.append("(matplotlib is not installed, so no figures were drawn: "
                     "`pip install 'kpca[plot]'`.)")
    parts.append("\n".join(f"- [{s.title}](#{_anchor(s.title)}) ({s.seconds:.1f} s)"
                           for s in result.sections))
    for s in result.sections:
        block = f"## {s.title}\n\n{s.text}"
        pngs = [p for p in s.files.values() if str(p).endswith(".png")]
        block += "".join(f"\n![{p.stem}]({p.name})\n" for p in pngs)
        parts.append(block)
    return "\n\n".join(parts) + "\n"


def _anchor(title: str) -> str:
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -")
    return keep.replace(" ", "-")
