"""scikit-learn's estimator API checks on kpca.KernelPCA in several configurations."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

import kpca
from kpca import KernelPCA

ESTIMATORS = [
    KernelPCA(),
    KernelPCA(n_components=2, kernel="rbf"),
    KernelPCA(n_components=2, kernel="poly", degree=2, fit_inverse_transform=True),
    KernelPCA(n_components=2, center=False),
    KernelPCA(n_components=2, kernel=kpca.kernels.RBF(gamma=0.5)),
    KernelPCA(n_components=2, kernel="rbf", eigen_solver="krylov", memory_limit="64MB"),
]

# check_array_api_input ends by calling inverse_transform whenever the method
# exists; without fit_inverse_transform=True that raises NotFittedError, exactly
# as scikit-learn's KernelPCA does (its own test suite requires it). The
# configuration with fit_inverse_transform=True runs the whole check.
_NO_INVERSE = {
    "check_array_api_input": "inverse_transform raises NotFittedError without "
    "fit_inverse_transform=True, as in scikit-learn"
}


def _expected_failed_checks(estimator):
    return {} if estimator.fit_inverse_transform else _NO_INVERSE


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


# IncrementalKernelPCA: exact mode fed in several batches, the bounded mode, and auto
# switching to bounded within the checks' data (a few dozen rows)
INCREMENTAL = [
    kpca.IncrementalKernelPCA(n_components=2, batch_size=7, mode="exact"),
    kpca.IncrementalKernelPCA(n_components=2, kernel="poly", degree=2, batch_size=10),
    kpca.IncrementalKernelPCA(n_components=2, batch_size=5, mode="bounded", max_rows=8,
                              random_state=0),
    kpca.IncrementalKernelPCA(n_components=2, batch_size=6, max_rows=10, random_state=0),
]


@parametrize_with_checks(INCREMENTAL, xfail_strict=True)
def test_sklearn_compatible_incremental(estimator, check):
    check(estimator)
