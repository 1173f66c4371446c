"""Schölkopf's toy example: three Gaussian clusters and the contour lines of the
first 8 RBF kernel principal components over the input plane.

The projection function of component l, y_l(x) = sum_i alpha_li k~(x, x_i), is
evaluated on a grid of the plane and drawn as contour lines (cf. Schölkopf,
Smola & Müller 1998, figure 2; docs/math.md, "The classic examples"): the first
components separate the clusters, the next ones split each cluster. Writes
``toy_contours.png`` and ``contours_kernels.png`` (the first 4 components for
four kernels).

Run::

    python examples/toy_contours.py --out figures/
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _shared import Section, parser, pyplot, run_script, save

from kpca import KernelPCA, plotting
from kpca.datasets import three_clusters

EXTENT = (-1, 1, -0.5, 1)  # the region of the plane that is drawn


def kernels(gamma: float) -> list[tuple[str, dict[str, Any]]]:
    """The kernels of ``contours_kernels.png``: (label, KernelPCA parameters)."""
    return [
        ("linear", dict(kernel="linear")),
        ("polynomial, degree 2", dict(kernel="poly", degree=2, gamma=1.0, coef0=1)),
        (f"RBF, gamma={gamma:g}", dict(kernel="rbf", gamma=gamma)),
        ("Laplacian, gamma=3", dict(kernel="laplacian", gamma=3.0)),
    ]


def section(out: Path, *, quick: bool = False, gamma: float = 10.0,
            random_state: int = 0) -> Section:
    """Contour lines of the first 8 RBF components (``quick`` changes nothing).

    ``data['ratios']``: explained variance ratios of the 8 components.
    """
    X, y = three_clusters(n_per_cluster=30, std=0.1, random_state=random_state)
    est = KernelPCA(n_components=8, kernel="rbf", gamma=gamma).fit(X)
    sec = Section("Schölkopf's toy example: contour lines",
                  data={"ratios": est.explained_variance_ratio_})
    plt = pyplot()
    if plt is not None:
        fig, _ = plotting.plot_contours(
            est, X, y, n_components=8, extent=EXTENT, resolution=120,
            title=f"RBF kernel PCA (gamma={gamma:g}): contour lines of the first 8 "
            "projection functions")
        sec.files["figure"] = save(fig, out / "toy_contours.png")
        rows = kernels(gamma)
        fig, axes = plt.subplots(len(rows), 4, figsize=(11.6, 2.9 * len(rows)), squeeze=False)
        for r, (label, params) in enumerate(rows):
            plotting.plot_contours(KernelPCA(4, **params).fit(X), X, y, n_components=4,
                                   extent=EXTENT, resolution=80, axes=axes[r])
            axes[r, 0].set_ylabel(label, fontsize="small")
        fig.suptitle("projection functions of the first 4 components, by kernel")
        fig.tight_layout()
        sec.files["kernels"] = save(fig, out / "contours_kernels.png")
    ratios = ", ".join(f"{100 * r:.1f} %" for r in est.explained_variance_ratio_)
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
    return sec


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--gamma", type=float, default=10.0, help="RBF gamma (default: 10)")
    args = p.parse_args()
    run_script(section, args.out, gamma=args.gamma)


if __name__ == "__main__":
    main()
