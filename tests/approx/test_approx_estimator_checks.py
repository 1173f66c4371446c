"""scikit-learn's estimator API checks on the approximate estimators."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from kpca import NystromKernelPCA, RandomFeatureKernelPCA

ESTIMATORS = [
    NystromKernelPCA(),
    NystromKernelPCA(n_components=2, n_landmarks=10, landmarks="kmeans", kernel="poly",
                     degree=2),
    NystromKernelPCA(n_components=0.9, landmarks="leverage", kernel="laplacian"),
    RandomFeatureKernelPCA(),
    RandomFeatureKernelPCA(n_components=2, n_features=30, kernel="laplacian",
                           precision="float32"),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
