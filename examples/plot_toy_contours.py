"""
Schölkopf's toy example: contour lines
======================================

Three Gaussian clusters in the plane, and the contour lines of the first kernel
principal components over the whole plane (Schölkopf, Smola & Müller 1998,
figure 2; docs/math.md, "The classic examples"). The first components separate the
clusters from each other; the next ones split each cluster.
"""

# %%
# The data and the model
# ----------------------
#
# Three clusters of 30 points each (standard deviation 0.1), and RBF kernel PCA,
# k(x, y) = exp(−10 ‖x − y‖²), with 8 components.
import matplotlib.pyplot as plt
import pandas as pd

from kpca import KernelPCA, plotting
from kpca.datasets import three_clusters

X, y = three_clusters(n_per_cluster=30, std=0.1, random_state=0)
model = KernelPCA(n_components=8, kernel="rbf", gamma=10.0).fit(X)
pd.DataFrame({"explained variance (%)": 100 * model.explained_variance_ratio_},
             index=pd.RangeIndex(1, 9, name="component")).round(1).T

# %%
# The projection functions
# ------------------------
#
# Each panel is the projection function of one component,
# yₗ(x) = Σᵢ αₗᵢ k̃(x, xᵢ), evaluated on a grid of the
# plane and drawn as contour lines (:func:`kpca.plotting.plot_contours`). The first
# two separate the three clusters; the following ones split each cluster into
# halves, then quarters, along orthogonal directions.
extent = (-1, 1, -0.5, 1)  # the region of the plane that is drawn
fig, _ = plotting.plot_contours(
    model, X, y, n_components=8, extent=extent, resolution=120,
    title="RBF kernel PCA (gamma=10): the first 8 components")
plt.show()

# %%
# Other kernels
# -------------
#
# The first 4 components of four kernels on the same data. With the linear kernel
# the projection functions are linear (parallel straight contour lines: plain PCA,
# which has only 2 components on 2-D data); the polynomial kernel of degree 2 gives
# quadratic functions (conics); the RBF and Laplacian kernels give local functions
# centred on the clusters, the Laplacian (an L1 distance) with diamond-shaped,
# kinked contour lines.
kernels = {
    "linear": dict(kernel="linear"),
    "polynomial, degree 2": dict(kernel="poly", degree=2, gamma=1.0, coef0=1),
    "RBF, gamma=10": dict(kernel="rbf", gamma=10.0),
    "Laplacian, gamma=3": dict(kernel="laplacian", gamma=3.0),
}
fig, axes = plt.subplots(len(kernels), 4, figsize=(11.6, 2.9 * len(kernels)))
for row, (label, params) in zip(axes, kernels.items(), strict=True):
    plotting.plot_contours(KernelPCA(4, **params).fit(X), X, y, n_components=4,
                           extent=extent, resolution=80, axes=row)
    row[0].set_ylabel(label)
fig.suptitle("projection functions of the first 4 components, by kernel")
fig.tight_layout()
plt.show()
