"""
Reconstruction: PCA against kernel PCA
======================================

Linear PCA with all components reconstructs its data exactly: it projects and maps
back. Kernel PCA cannot map back exactly: its reconstruction goes through an
approximate pre-image in input space, whatever the number of components
(docs/math.md, "Pre-images and denoising"). This example measures both on unseen
digits.
"""

# %%
# The data and the models
# -----------------------
#
# scikit-learn's digits (8 x 8 pixels, scaled to [0, 1]), 600 for training, the
# test images unseen. One fit per model gives every number of components:
# ``denoise(X, n_components=k)`` projects on the first k. With the linear kernel
# that is PCA's exact projection; RBF kernel PCA (median-heuristic gamma) maps back
# with the learned ridge pre-image (``fit_inverse_transform=True``) or with Mika et
# al.'s fixed-point iteration.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from kpca import KernelPCA, plotting

X, y = load_digits(return_X_y=True)
X_train, X_test = train_test_split(X / 16.0, test_size=0.3, random_state=0, stratify=y)
X_train = X_train[:600]

components = [2, 4, 8, 16, 32, 64]
linear = KernelPCA(64, kernel="linear", eigen_solver="dense").fit(X_train)
rbf = KernelPCA(64, kernel="rbf", gamma="median", fit_inverse_transform=True,
                alpha=1e-2, eigen_solver="dense").fit(X_train)
methods = {"linear PCA": (linear, "fixed_point"),
           "kernel PCA, ridge": (rbf, "ridge"),
           "kernel PCA, fixed point": (rbf, "fixed_point")}

# %%
# Error against the number of components
# --------------------------------------
#
# The mean squared error of the reconstructions of the unseen images, by linear PCA
# (a projection) and by RBF kernel PCA with each pre-image:
def error(model, method, k):
    """Mean squared error of the test images reconstructed from k components."""
    reconstructed = model.denoise(X_test, n_components=k, method=method)
    return np.mean((X_test - reconstructed) ** 2)


errors = pd.DataFrame(
    {label: [error(model, method, k) for k in components]
     for label, (model, method) in methods.items()},
    index=pd.Index(components, name="components"))
errors

# %%
# Linear PCA's error falls to round-off with all components. On the training images
# it is exact; on unseen ones it stays a little above zero only because a few border
# pixels never vary in the training set. Kernel PCA's pre-images are approximate and
# do not become exact with more components.
train_error = np.mean((X_train - linear.denoise(X_train, method="fixed_point")) ** 2)
print(f"linear PCA, all components, training images: MSE {train_error:.1e}")

# %%
# The errors against the number of components, on a logarithmic scale:

fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
for (label, column), marker in zip(errors.items(), "os^", strict=True):
    ax.semilogy(components, np.maximum(column, 1e-32), f"{marker}-", label=label)
ax.set_xlabel("number of components")
ax.set_ylabel("held-out reconstruction MSE")
ax.set_title("digits: reconstruction error of unseen images")
ax.legend(fontsize="small")
plt.show()

# %%
# The reconstructions
# -------------------
#
# Ten unseen digits and their reconstructions from 16 components:
fig, _ = plotting.plot_gallery(
    [X_test[:10], linear.denoise(X_test[:10], n_components=16, method="fixed_point"),
     rbf.denoise(X_test[:10], n_components=16, method="ridge")],
    (8, 8), row_titles=["original", "PCA, 16 comp.", "KPCA, 16 comp."],
    title="reconstructions of unseen digits")
plt.show()
