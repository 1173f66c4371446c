"""
Choosing k and gamma without labels
===================================

Kernel PCA leaves two questions to its user: how many components to keep, and which
kernel width γ to use. Without labels there is no accuracy to cross-validate, and the
feature-space variance cannot compare γ values (it is measured in the geometry each γ
makes). kpca answers each with its own criterion:

* **k**: parallel analysis, ``KernelPCA(n_components="auto")``: the leading
  eigenvalues above the same eigenvalues of copies of the data whose columns were
  permuted independently (docs/math.md, "Parallel analysis");
* **γ and the kernel**: the held-out reconstruction error in input space through the
  learned pre-image, its ridge penalty chosen by generalized cross-validation,
  :func:`kpca.selection.reconstruction_error` (docs/math.md, "Choosing gamma and the
  kernel without labels"); ``kpca select`` without ``--labels`` runs the same.

This example uses data where the right answers are known: clusters whose number fixes
k, and a noisy helix whose best γ is a dense grid's.
"""

# %%
# How many components: four clusters
# -----------------------------------
#
# Four separated clusters in 6 dimensions. In the feature space of an RBF kernel the
# differences between c clusters span c − 1 directions, so k = 3 is the answer.
# ``n_components="auto"`` compares each eigenvalue with the 95 % quantile of the same
# eigenvalue over 19 column-permuted copies of the data (the copies keep every
# column's values and lose the clusters).
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import make_blobs

from kpca import KernelPCA, plotting
from kpca.selection import reconstruction_error

X_blobs, _ = make_blobs(300, n_features=6, centers=4, cluster_std=1.0,
                        center_box=(-10, 10), random_state=1)
model = KernelPCA(n_components="auto", kernel="rbf", gamma="scale", random_state=0)
model.fit(X_blobs)
print(f"chosen k = {model.n_components_}")

# %%
# The first eigenvalues against the null's 95 % quantiles:
pa = model.parallel_analysis_
pd.DataFrame({"eigenvalue": pa.eigenvalues, "null 95 %": pa.threshold,
              "kept": np.arange(len(pa.eigenvalues)) < pa.n_components},
             index=pd.RangeIndex(1, len(pa.eigenvalues) + 1, name="component")).head(8)

# %%
# The scree plot with the null band shows why: three eigenvalues stand far above
# what permuted copies reach, the fourth is inside the band. ``kpca plot scree
# --null`` draws the same from the command line.
fig, ax = plotting.plot_scree(model, null=True,
                              title="Four clusters: parallel analysis keeps k = 3")
plt.show()

# %%
# Which γ: a noisy helix and one component
# ----------------------------------------
#
# Points on three half-turns of a helix, with noise. One component can describe the
# curve only if it follows the position along it. With too small a γ the RBF kernel is
# nearly linear: its first component is the helix's axis, and the map back to input
# space (the learned pre-image, a kernel ridge regression on the scores) is too smooth
# to recover the turns. With too large a γ the component breaks the curve into pieces.
rng = np.random.default_rng(1)
t = rng.uniform(0, 3 * np.pi, 300)
X = np.c_[np.cos(t), np.sin(t), 0.3 * t] + 0.05 * rng.normal(size=(300, 3))

# %%
# :func:`~kpca.selection.reconstruction_error` fits, for each γ and each of 5 folds,
# the kernel PCA of the training rows and the pre-image map (its ridge penalty chosen by
# GCV on the training rows), and measures the mean squared error of the held-out rows
# mapped back. One kernel matrix per γ serves all folds, and one fit serves several k.
gammas = np.geomspace(0.01, 10, 25)
res = reconstruction_error(X, [{"kernel": ["linear"]},
                               {"kernel": ["rbf"], "gamma": list(gammas)}],
                           n_components=[1, 2], cv=5)
err = res.mean()                       # (candidates, k): mean over the folds
sd = res.errors.std(axis=2)
best = res.best(0)
print(f"best for k = 1: {best['kernel']} with gamma = {best['gamma']:.3g}; linear PCA "
      f"{err[0, 0]:.3f}, "
      f"RBF at the best gamma {err[1:, 0].min():.3f}")

fig, ax = plt.subplots(figsize=(6, 3.8))
for j, k in enumerate(res.n_components[0]):
    ax.errorbar(gammas, err[1:, j], yerr=sd[1:, j], marker="o", ms=3, capsize=2,
                label=f"RBF, k = {k}")
    ax.axhline(err[0, j], ls="--", color=f"C{j}", lw=1, label=f"linear PCA, k = {k}")
ax.axvline(best["gamma"], color="k", lw=0.8)
ax.set_xscale("log")
ax.set_xlabel("γ")
ax.set_ylabel("held-out reconstruction MSE")
ax.set_title(f"Helix: the criterion's minimum, γ = {best['gamma']:.3g} (k = 1)")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()

# %%
# The minimum is sharp for k = 1 and well below linear PCA's error: the RBF kernel is
# the right one here, at that γ. With two components every kernel does better, and
# the error keeps falling as k grows: reconstruction chooses γ and the kernel at a
# given k, not k itself.
#
# What the three regimes look like: held-out points (grey) and their reconstructions
# from one component (colour), for a γ ten times too small, the chosen one, and one
# ten times too large.
from sklearn.model_selection import train_test_split  # noqa: E402

from kpca.preimage import gcv_ridge_preimage, score_space_kernel  # noqa: E402

X_tr, X_te = train_test_split(X, test_size=0.3, random_state=0)
fig = plt.figure(figsize=(10, 3.6))
for i, g in enumerate((best["gamma"] / 10, best["gamma"], best["gamma"] * 10)):
    m = KernelPCA(1, kernel="rbf", gamma=g).fit(X_tr)
    Y = m.transform(X_tr)
    fit = gcv_ridge_preimage(score_space_kernel(m.kernel_), Y, X_tr)
    K_te = score_space_kernel(m.kernel_).block(m.transform(X_te), Y)
    R = fit.intercept + K_te @ fit.dual_coef
    ax = fig.add_subplot(1, 3, i + 1, projection="3d")
    ax.scatter(*X_te.T, s=4, c="0.6")
    ax.scatter(*R.T, s=6, c=m.transform(X_te)[:, 0], cmap="viridis")
    ax.set_title(f"γ = {g:.3g}: MSE {np.mean((X_te - R) ** 2):.3f}", fontsize=9)
    ax.set_xticks([]), ax.set_yticks([]), ax.set_zticks([])
fig.tight_layout()
plt.show()

# %%
# The same from the command line (``helix.csv`` one row per point)::
#
#     kpca select helix.csv --kernels linear,rbf --gammas 0.01,0.03,0.1,0.3,1,3,10 -k 1
#
# prints the table with each candidate's error, its standard deviation over the folds
# and the median GCV penalty (column ``alpha``). ``kpca select -k auto`` gives each
# candidate its own k by parallel analysis. The limits of both criteria are in
# docs/math.md: parallel analysis sees only structure *between* variables and is a
# sequence of tests; the reconstruction error judges the kernel together with its
# learned pre-image, favours kernels that keep the input geometry, and says nothing
# about how well classes separate (with labels, ``kpca select --labels``).
