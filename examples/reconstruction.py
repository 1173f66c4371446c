"""Reconstruction: PCA with all components reconstructs exactly; kernel PCA's
reconstruction goes through an approximate pre-image.

The mathematics is in docs/math.md ("Pre-images and denoising", "The classic
examples"). Digits (8 x 8, scaled to [0, 1]): reconstruction error of unseen images
against the number of components, for linear PCA (projection) and RBF kernel PCA
(learned ridge pre-image, and Mika et al.'s fixed-point pre-image). Writes
``reconstruction.png`` and ``reconstruction_gallery.png`` and prints the table.

Run::

    python examples/reconstruction.py --out figures/
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _shared import Section, digits, md_table, parser, pyplot, run_script, save

from kpca import KernelPCA, plotting

#: numbers of components compared
COMPONENTS = (2, 4, 8, 16, 32, 64)


def section(out: Path, *, quick: bool = False, n_train: int = 600,
            random_state: int = 0) -> Section:
    """Held-out reconstruction error against the number of components.

    One fit per model: ``denoise(X, n_components=k)`` projects on the first k
    components (with the linear kernel that is PCA's exact projection). ``quick``
    changes nothing. ``data``: ``'k'``, the errors ``'pca'``, ``'ridge'``,
    ``'fixed_point'`` (one per k), and ``'pca_train_full'``, PCA's training error
    with all components.
    """
    Xtr, Xte, _, _ = digits(random_state)
    Xtr = Xtr[:n_train]
    ks = list(COMPONENTS)
    lin = KernelPCA(max(ks), kernel="linear", eigen_solver="dense").fit(Xtr)
    rbf = KernelPCA(max(ks), kernel="rbf", gamma="median", fit_inverse_transform=True,
                    alpha=1e-2, eigen_solver="dense").fit(Xtr)
    methods = {"pca": (lin, "fixed_point"), "ridge": (rbf, "ridge"),
               "fixed_point": (rbf, "fixed_point")}
    errors: dict[str, list[float]] = {name: [] for name in methods}
    for k in ks:
        for name, (model, method) in methods.items():
            R = model.denoise(Xte, n_components=k, method=method)
            errors[name].append(float(np.mean((Xte - R) ** 2)))
    train_full = float(np.mean((Xtr - lin.denoise(Xtr, method="fixed_point")) ** 2))
    sec = Section("Reconstruction: PCA vs kernel PCA",
                  data={"k": ks, **errors, "pca_train_full": train_full})

    plt = pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        labels = {"pca": "linear PCA (projection)", "ridge": "RBF kernel PCA, ridge pre-image",
                  "fixed_point": "RBF kernel PCA, fixed-point pre-image"}
        for name, marker in zip(errors, "os^", strict=True):
            ax.semilogy(ks, np.maximum(errors[name], 1e-32), f"{marker}-", label=labels[name])
        ax.set_xlabel("number of components")
        ax.set_ylabel("held-out reconstruction MSE")
        ax.set_title("digits: reconstruction error of unseen images")
        ax.legend(fontsize="small")
        sec.files["figure"] = save(fig, out / "reconstruction.png")
        fig, _ = plotting.plot_gallery(
            [Xte[:10], lin.denoise(Xte[:10], n_components=16, method="fixed_point"),
             rbf.denoise(Xte[:10], n_components=16, method="ridge")],
            (8, 8), row_titles=["original", "PCA, 16 comp.", "KPCA, 16 comp."],
            title="reconstructions of unseen digits")
        sec.files["gallery"] = save(fig, out / "reconstruction_gallery.png")

    rows = [[k, *(f"{errors[name][i]:.2e}" for name in errors)] for i, k in enumerate(ks)]
    sec.text = f"""{len(Xtr)} training digits (8 x 8 pixels, scaled to [0, 1]), error measured
on {len(Xte)} unseen ones. Linear PCA reconstructs by projecting on the components:
with all components it is exact — on the training images the MSE is {train_full:.1e}
(round-off); on unseen ones {errors['pca'][-1]:.1e}, only because a few border pixels
never vary in the training set.
Kernel PCA's reconstruction goes through a pre-image (RBF kernel with the
median-heuristic gamma; `KernelPCA.denoise(X, n_components=k, method=...)`): the
learned ridge pre-image (`fit_inverse_transform=True`) or Mika et al.'s fixed-point
iteration. Both are approximate and do not become exact with more components.

{md_table(["components", "linear PCA MSE", "RBF KPCA, ridge pre-image",
           "RBF KPCA, fixed-point pre-image"], rows)}
Figures: `reconstruction.png` (error against the number of components),
`reconstruction_gallery.png` (originals and reconstructions with 16 components).
"""
    return sec


def main() -> None:
    args = parser(__doc__).parse_args()
    run_script(section, args.out)


if __name__ == "__main__":
    main()
