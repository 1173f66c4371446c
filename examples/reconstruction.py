"""Reconstruction: PCA with all components reconstructs exactly; kernel PCA's
reconstruction goes through an approximate pre-image.

The mathematics is in docs/math.md ("Pre-images and denoising", "The classic
examples"). Digits (8 x 8, scaled to [0, 1]): reconstruction error of unseen images against
the number of components, for linear PCA (projection) and RBF kernel PCA (learned
ridge pre-image, and Mika et al.'s fixed-point pre-image). Writes
``reconstruction.png`` and prints the table.

Run::

    python examples/reconstruction.py --out figures/
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from kpca import KernelPCA, plotting  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    X, y = load_digits(return_X_y=True)
    Xtr, Xte = train_test_split(X / 16.0, test_size=0.3, random_state=0, stratify=y)
    Xtr = Xtr[:600]
    ks = [2, 4, 8, 16, 32, 64]
    # one fit per model: denoise(n_components=k) projects on the first k components
    lin = KernelPCA(64, kernel="linear", eigen_solver="dense").fit(Xtr)
    rbf = KernelPCA(64, kernel="rbf", gamma="median", fit_inverse_transform=True,
                    alpha=1e-2, eigen_solver="dense").fit(Xtr)
    errors = {"linear PCA": [], "RBF KPCA, ridge pre-image": [],
              "RBF KPCA, fixed-point pre-image": []}
    print("| components | " + " | ".join(errors) + " |")
    print("|---|---|---|---|")
    for k in ks:
        recon = [lin.denoise(Xte, n_components=k, method="fixed_point"),  # exact for linear
                 rbf.denoise(Xte, n_components=k, method="ridge"),
                 rbf.denoise(Xte, n_components=k, method="fixed_point")]
        for name, R in zip(errors, recon, strict=True):
            errors[name].append(float(np.mean((Xte - R) ** 2)))
        print(f"| {k} | " + " | ".join(f"{e[-1]:.2e}" for e in errors.values()) + " |")

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for name, e in errors.items():
        ax.semilogy(ks, e, "o-", label=name)
    ax.set_xlabel("number of components")
    ax.set_ylabel("held-out reconstruction MSE")
    ax.legend(fontsize="small")
    print("wrote", plotting.save_figure(fig, out / "reconstruction.png"))


if __name__ == "__main__":
    main()
