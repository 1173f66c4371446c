"""Schölkopf's toy example: three Gaussian clusters and the contour lines of the
first 8 RBF kernel principal components over the input plane.

The projection function of component l, y_l(x) = sum_i alpha_li k~(x, x_i), is
evaluated on a grid of the plane and drawn as contour lines (cf. Schölkopf,
Smola & Müller 1998, figure 2): the first components separate the clusters, the
next ones split each cluster. Writes ``toy_contours.png`` and
``contours_kernels.png`` (the first 4 components for four kernels).

Run::

    python examples/toy_contours.py --out figures/
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from kpca import KernelPCA, plotting  # noqa: E402
from kpca.datasets import three_clusters  # noqa: E402

EXTENT = (-1, 1, -0.5, 1)  # the region of the plane that is drawn


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    parser.add_argument("--gamma", type=float, default=10.0, help="RBF gamma (default: 10)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    X, y = three_clusters(n_per_cluster=30, std=0.1)
    model = KernelPCA(n_components=8, kernel="rbf", gamma=args.gamma).fit(X)
    print("explained variance ratio:", model.explained_variance_ratio_.round(3))
    plotting.plot_contours(model, X, y, n_components=8, extent=EXTENT,
                           title=f"RBF kernel PCA (gamma={args.gamma:g}): first 8 components",
                           path=out / "toy_contours.png")
    print("wrote", out / "toy_contours.png")

    kernels = {
        "linear": dict(kernel="linear"),
        "polynomial, degree 2": dict(kernel="poly", degree=2, gamma=1.0, coef0=1),
        f"RBF, gamma={args.gamma:g}": dict(kernel="rbf", gamma=args.gamma),
        "Laplacian, gamma=3": dict(kernel="laplacian", gamma=3.0),
    }
    fig, axes = plt.subplots(len(kernels), 4, figsize=(11.6, 11.6))
    for row, (label, params) in zip(axes, kernels.items(), strict=True):
        plotting.plot_contours(KernelPCA(4, **params).fit(X), X, y, n_components=4,
                               extent=EXTENT, resolution=80, axes=row)
        row[0].set_ylabel(label, fontsize="small")
    fig.tight_layout()
    print("wrote", plotting.save_figure(fig, out / "contours_kernels.png"))


if __name__ == "__main__":
    main()
