"""
Denoising digits with pre-images
================================

Kernel PCA denoises by projecting noisy images on the first components of clean
ones and mapping the projection back to input space, through a pre-image
(docs/math.md, "Pre-images and denoising"). This example compares it with linear
PCA on digits with Gaussian noise.
"""

# %%
# The data
# --------
#
# The models are fitted on clean training digits (8 x 8 pixels in [0, 1]); 200
# unseen test digits get Gaussian noise of standard deviation 0.25.
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from kpca import KernelPCA, plotting

X, y = load_digits(return_X_y=True)
X_train, X_test = train_test_split(X / 16.0, test_size=0.3, random_state=0, stratify=y)
X_test = X_test[:200]
X_noisy = X_test + 0.25 * np.random.RandomState(0).standard_normal(X_test.shape)

# %%
# Linear PCA and kernel PCA
# -------------------------
#
# Linear PCA projects on 16 components (``denoise`` with the linear kernel is PCA's
# projection). Kernel PCA projects on 32 RBF components (median-heuristic gamma)
# and maps back with the pre-image that ``KernelPCA.denoise`` chooses (method
# ``'auto'``), and with the learned ridge pre-image for comparison.
pca = KernelPCA(16, kernel="linear", eigen_solver="dense").fit(X_train)
kpca = KernelPCA(32, kernel="rbf", gamma="median", fit_inverse_transform=True,
                 alpha=5e-2, eigen_solver="dense", random_state=0).fit(X_train)
denoised, info = kpca.denoise(X_noisy, return_info=True)
print(f"denoise(method='auto') used the pre-image method {info.method!r}")
results = {"noisy": X_noisy, "linear PCA (16 comp.)": pca.denoise(X_noisy),
           f"RBF kernel PCA (32 comp.), {info.method}": denoised}
if info.method != "ridge":
    results["RBF kernel PCA (32 comp.), ridge"] = kpca.denoise(X_noisy, method="ridge")

# %%
# The mean squared error to the clean images, lowest first:
pd.Series({name: np.mean((R - X_test) ** 2) for name, R in results.items()},
          name="MSE to the clean digits").sort_values().round(4).to_frame()

# %%
# The images
# ----------
#
# Rows: clean, noisy, kernel PCA with the chosen pre-image, the other
# reconstructions.
others = {"linear PCA": results["linear PCA (16 comp.)"]}
if info.method != "ridge":
    others = {"KPCA, ridge": results["RBF kernel PCA (32 comp.), ridge"], **others}
fig, _ = plotting.denoising_gallery(kpca, X_noisy, (8, 8), X_clean=X_test,
                                    others=others, n_images=12,
                                    label=f"KPCA, {info.method}",
                                    title="denoising (Gaussian noise, sd 0.25)")
plt.show()
