"""
Digits: kernel PCA features and a linear SVM
============================================

Kernel PCA as a feature extractor: polynomial kernel PCA on scikit-learn's digits,
then a linear support vector machine on the first k components. The test error by
number of components and polynomial degree is laid out as Table 1 of Schölkopf,
Smola & Müller (1998), whose best on USPS (16 x 16 images) was 4.0 % (docs/math.md,
"The classic examples").
"""

# %%
# The data and the grid
# ---------------------
#
# The digits (8 x 8 pixels, scaled to [0, 1]) split 70/30 into training and test
# images. The kernel is k(x, y) = ⟨x, y⟩ᵈ: degree 1 is linear
# PCA. ``kpca demo --quick`` sets ``KPCA_DEMO_QUICK=1`` and this example then
# computes a smaller table (3 x 4 cells on 800 training images).
import os
import warnings

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from kpca import KernelPCA

quick = os.environ.get("KPCA_DEMO_QUICK") == "1"
components = [16, 32, 64] if quick else [16, 32, 64, 120]
degrees = [1, 2, 3, 4] if quick else [1, 2, 3, 4, 5, 6, 7]

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X / 16.0, y, test_size=0.3,
                                                    random_state=0, stratify=y)
if quick:
    X_train, y_train = X_train[:800], y_train[:800]
print(f"{len(X_train)} training and {len(X_test)} test images")

# %%
# One fit per degree
# ------------------
#
# The first k components of a fit with more components are the same, so one kernel
# PCA per degree gives every k. The features are standardised before the SVM
# (``LinearSVC(C=1)``; its convergence warnings on the raw high-degree features
# are silenced).
errors = pd.DataFrame(index=pd.Index(components, name="components"),
                      columns=pd.Index(degrees, name="degree"), dtype=float)
for degree in degrees:
    model = KernelPCA(max(components), kernel="poly", degree=degree, gamma=1.0, coef0=0,
                      eigen_solver="dense")
    Z_train, Z_test = model.fit_transform(X_train), model.transform(X_test)
    for k in components:
        scaler = StandardScaler().fit(Z_train[:, :k])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            svm = LinearSVC(C=1.0, max_iter=5000, random_state=0)
            svm.fit(scaler.transform(Z_train[:, :k]), y_train)
        accuracy = svm.score(scaler.transform(Z_test[:, :k]), y_test)
        errors.loc[k, degree] = 100 * (1 - accuracy)

# %%
# The test error in %, one row per number of components, one column per degree:
errors.round(1)

# %%
# With enough components a nonlinear kernel beats linear PCA:
best_k, best_degree = errors.stack().idxmin()
linear_error = errors.loc[components[-1], 1]
nonlinear_error = errors.loc[components[-1]].drop(1).min()
verdict = "beats" if nonlinear_error < linear_error else "does not beat"
print(f"best: {errors.loc[best_k, best_degree]:.1f} % with {best_k} components and "
      f"degree {best_degree}")
print(f"with {components[-1]} components the best nonlinear kernel "
      f"({nonlinear_error:.1f} %) {verdict} linear PCA ({linear_error:.1f} %)")

# %%
# The error against the degree, one line per number of components:

fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
for k, row in errors.iterrows():
    ax.plot(degrees, row, "o-", label=f"{k} components")
ax.axhline(4.0, color="0.5", ls="--", lw=1, label="USPS best, Schölkopf et al. 1998")
ax.set_xlabel("polynomial degree (1 = linear PCA)")
ax.set_ylabel("test error (%)")
ax.set_title("digits: linear SVM on kernel PCA features")
ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
plt.show()
