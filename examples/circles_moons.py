"""Concentric circles and two moons with the linear, polynomial, cosine and RBF kernels.

Which kernels make the two classes linearly separable? Each kernel PCA keeps two
components; a logistic regression on them measures it (docs/math.md, "The
classic examples": RBF separates both, PCA and the polynomial and cosine kernels
mostly cannot).
Writes ``circles_moons.png`` (one panel per data set and kernel) and prints the
accuracies.

Run::

    python examples/circles_moons.py --out figures/
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from kpca import KernelPCA, plotting  # noqa: E402
from kpca.datasets import concentric_circles, make_moons  # noqa: E402

KERNELS = {
    "linear PCA": dict(kernel="linear"),
    "polynomial, degree 3": dict(kernel="poly", degree=3, gamma=1.0, coef0=1),
    "cosine": dict(kernel="cosine"),
    "RBF": dict(kernel="rbf"),  # gamma per data set below
}


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    parser.add_argument("--n-samples", type=int, default=400, help="points per data set")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    data = {
        "circles": (concentric_circles(args.n_samples, factor=0.3, noise=0.05), 10.0),
        "moons": (make_moons(args.n_samples, noise=0.05, random_state=0), 15.0),
    }
    fig, axes = plt.subplots(2, 4, figsize=(15, 7.4))
    print("| data | kernel | accuracy of a linear classifier on components 1-2 |")
    print("|---|---|---|")
    for r, (name, ((X, y), gamma)) in enumerate(data.items()):
        for c, (label, params) in enumerate(KERNELS.items()):
            if params["kernel"] == "rbf":
                params = {**params, "gamma": gamma}
                label = f"RBF, gamma={gamma:g}"
            Z = KernelPCA(n_components=2, **params).fit_transform(X)
            accuracy = LogisticRegression().fit(Z, y).score(Z, y)
            print(f"| {name} | {label} | {accuracy:.3f} |")
            plotting.plot_embedding(Z, y, ax=axes[r, c],
                                    title=f"{name}: {label}\naccuracy {accuracy:.2f}")
    fig.tight_layout()
    path = plotting.save_figure(fig, out / "circles_moons.png")
    print("wrote", path)


if __name__ == "__main__":
    main()
