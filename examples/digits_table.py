"""Kernel PCA features + linear SVM on scikit-learn's digits: the test error by
number of components and polynomial degree, in the layout of Schölkopf, Smola &
Müller (1998), Table 1 (on USPS, 16 x 16 images, their best was 4.0 %).

Kernel k(x, y) = <x, y>^d (degree 1 is linear PCA); one kernel PCA fit per
degree gives every number of components (the first k components of a fit with
more components are the same); features standardised; ``LinearSVC(C=1)``
(docs/math.md, "The classic examples"). Writes ``digits_table.md`` (and
``digits_table.png``) and prints the table; ``--quick`` computes a smaller one.

Run::

    python examples/digits_table.py --out figures/   # 16, 32, 64, 120 components x degrees 1-7
    python examples/digits_table.py --quick
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from _shared import Section, digits, md_table, parser, pyplot, run_script, save, write_text
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from kpca import KernelPCA

logger = logging.getLogger(__name__)

#: (components, degrees, training images) of the full table and of ``--quick``
FULL = ((16, 32, 64, 120), (1, 2, 3, 4, 5, 6, 7), None)
QUICK = ((16, 32, 64), (1, 2, 3, 4), 800)


def error_table(components: tuple[int, ...] = FULL[0], degrees: tuple[int, ...] = FULL[1], *,
                n_train: int | None = None, random_state: int = 0) -> dict[str, Any]:
    """Test error (%) of a linear SVM on polynomial kernel PCA features of digits.

    Returns
    -------
    dict
        ``errors`` (ndarray of shape (len(components), len(degrees)), percent),
        ``components``, ``degrees``, ``n_train``, ``n_test``.
    """
    Xtr, Xte, ytr, yte = digits(random_state)
    Xtr, ytr = Xtr[:n_train], ytr[:n_train]
    errors = np.full((len(components), len(degrees)), np.nan)
    for j, degree in enumerate(degrees):
        est = KernelPCA(min(max(components), len(Xtr)), kernel="poly", degree=degree,
                        gamma=1.0, coef0=0, eigen_solver="dense")
        Ztr, Zte = est.fit_transform(Xtr), est.transform(Xte)
        for i, k in enumerate(components):
            if k > Ztr.shape[1]:
                continue
            scaler = StandardScaler().fit(Ztr[:, :k])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                svm = LinearSVC(C=1.0, max_iter=5000, random_state=random_state)
                svm.fit(scaler.transform(Ztr[:, :k]), ytr)
            errors[i, j] = 100.0 * (1.0 - svm.score(scaler.transform(Zte[:, :k]), yte))
        logger.info("digits: degree %d done", degree)
    return {"errors": errors, "components": list(components), "degrees": list(degrees),
            "n_train": len(Xtr), "n_test": len(Xte)}


def format_table(result: dict[str, Any]) -> str:
    """Markdown table of :func:`error_table`, the best of each row in bold."""
    E = result["errors"]
    rows = []
    for k, row in zip(result["components"], E, strict=True):
        best = np.nanmin(row)
        cells = ["—" if not np.isfinite(v) else f"**{v:.1f}**" if v == best else f"{v:.1f}"
                 for v in row]
        rows.append([k, *cells])
    return md_table(["# of components", *(f"degree {d}" for d in result["degrees"])], rows)


def section(out: Path, *, quick: bool = False, random_state: int = 0) -> Section:
    """The error table; ``quick``: 3 x 4 cells on 800 training images. ``data``: the
    result of :func:`error_table`."""
    components, degrees, n_train = QUICK if quick else FULL
    res = error_table(components, degrees, n_train=n_train, random_state=random_state)
    E = res["errors"]
    i, j = np.unravel_index(np.nanargmin(E), E.shape)
    sec = Section("Digits: kernel PCA features + linear SVM", data=res)
    sec.files["table"] = write_text(out / "digits_table.md", format_table(res))
    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5.8, 3.8))
        for r, k in enumerate(res["components"]):
            ax.plot(res["degrees"], E[r], "o-", label=f"{k} components")
        ax.set_xlabel("polynomial degree (1 = linear PCA)")
        ax.set_ylabel("test error (%)")
        ax.axhline(4.0, color="0.5", ls="--", lw=1, label="USPS best, Schölkopf et al. 1998")
        ax.set_title("digits: linear SVM on kernel PCA features")
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
        sec.files["figure"] = save(fig, out / "digits_table.png")
    degrees = list(res["degrees"])
    verdict = ""
    if 1 in degrees and len(degrees) > 1:
        lin = E[-1, degrees.index(1)]
        nonlin = np.nanmin(np.delete(E[-1], degrees.index(1)))
        verdict = (f"With {res['components'][-1]} components the best nonlinear kernel "
                   f"({nonlin:.1f} %) {'beats' if nonlin < lin else 'does not beat'} linear "
                   f"PCA ({lin:.1f} %).")
    scope = "full table" if not quick else "quick version (without `--quick`: the full table)"
    sec.text = f"""scikit-learn's digits (8 x 8), {res['n_train']} training and {res['n_test']}
test images; kernel PCA with the polynomial kernel <x, y>^d, then a linear SVM on the
standardised first k components. Test error in %, {scope}; layout of Schölkopf,
Smola & Müller (1998), Table 1 (on USPS, 16 x 16, their best was 4.0 %):

{format_table(res)}
Best: {E[i, j]:.1f} % with {res['components'][i]} components and degree
{res['degrees'][j]}. {verdict} Figure: `digits_table.png`.
"""
    return sec


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--quick", action="store_true",
                   help="16-64 components x degrees 1-4 on 800 training images")
    args = p.parse_args()
    run_script(section, args.out, quick=args.quick)


if __name__ == "__main__":
    main()
