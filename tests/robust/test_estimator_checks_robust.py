"""scikit-learn's estimator API checks on the robust and ANOVA estimators."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from kpca import AnovaKernelPCA, SphericalKernelPCA, WeightedKernelPCA

# four configurations cover the solvers (dense, krylov under memory_limit), both
# starts of the reweighting and the learned pre-image, in a few seconds
ESTIMATORS = [
    SphericalKernelPCA(n_components=2, kernel="rbf", fit_inverse_transform=True),
    WeightedKernelPCA(n_components=2, kernel="rbf", init="uniform", fit_inverse_transform=True),
    WeightedKernelPCA(n_components=2, kernel="rbf", eigen_solver="krylov", memory_limit="64MB"),
    AnovaKernelPCA(),
]

# as for KernelPCA (tests/test_estimator_checks.py): check_array_api_input ends by
# calling inverse_transform, which raises NotFittedError without fit_inverse_transform
_NO_INVERSE = {
    "check_array_api_input": "inverse_transform raises NotFittedError without "
    "fit_inverse_transform=True, as in scikit-learn"
}


def _expected_failed_checks(estimator):
    return {} if estimator.fit_inverse_transform else _NO_INVERSE


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
