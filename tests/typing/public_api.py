"""Code as a user writes it against kpca's public API. ``tests/test_typing.py`` runs
mypy on this file with kpca's own modules followed silently: the public names,
signatures and return types must be usable by a type checker (PEP 561, ``py.typed``).
Not a test module: it is checked, not run."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

import kpca
from kpca import (
    ESTIMATORS,
    AnovaKernelPCA,
    IncrementalKernelPCA,
    KernelPCA,
    KernelROBPCA,
    NystromKernelPCA,
    RandomFeatureKernelPCA,
    SphericalKernelPCA,
    WeightedKernelPCA,
)
from kpca.demo import run_example
from kpca.selection import landmarks_for_tolerance

X: NDArray[np.float64] = np.random.default_rng(0).normal(size=(50, 3))
model: KernelPCA = KernelPCA(2, kernel="rbf", gamma=0.5).fit(X)
Z = model.transform(X)
back = model.inverse_transform(Z, method="fixed_point")
clean = model.denoise(X, n_components=2)
inliers = model.predict(X)
scores = model.score_samples(X)
kpca.save(model, "model.kpca")
loaded = kpca.load("model.kpca")
stream = IncrementalKernelPCA(2, kernel="rbf", batch_size=20).partial_fit(X[:20])
others = [NystromKernelPCA(2, n_landmarks=20), RandomFeatureKernelPCA(2, n_features=50),
          SphericalKernelPCA(2), WeightedKernelPCA(2, b1=2.0), KernelROBPCA(2, h=40),
          AnovaKernelPCA(2, c=1.0)]
names: list[str] = sorted(ESTIMATORS)
version: str = kpca.__version__
example = run_example("dual_pca", quick=True)
nystrom = NystromKernelPCA(2, n_landmarks=20).fit(X)
error = nystrom.estimate_error(X, n_rows=40, random_state=0)
worst: float = max(error.max_eigenvalue_error, error.max_subspace_sin)
recommended: int | None = landmarks_for_tolerance(X, 0.05, counts=[10, 20]).recommended
