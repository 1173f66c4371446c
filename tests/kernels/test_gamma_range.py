"""gamma='scale' and gamma='median' on data whose variance or distances leave float64's
range (issue 33, items 3 and 6): a ValueError that names the cause -- overflow or
underflow, not "X is constant" or "two distinct rows" -- from every estimator, never a
gamma_ of 0 (random features used to fit with gamma_ = 0.0 and return all-zero
eigenvalues and scores)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import kpca
from kpca.kernels import resolve_gamma

ESTIMATORS = {
    "exact": lambda g: kpca.KernelPCA(n_components=2, kernel="rbf", gamma=g),
    "nystrom": lambda g: kpca.NystromKernelPCA(n_components=2, n_landmarks=10, gamma=g),
    "rff": lambda g: kpca.RandomFeatureKernelPCA(n_components=2, gamma=g, random_state=0),
    "incremental": lambda g: kpca.IncrementalKernelPCA(n_components=2, gamma=g),
}


def _rows():
    return np.random.default_rng(0).normal(size=(40, 2))


def _data(case):
    A = _rows()
    return A * np.array([1e-300, 1e300]) if case == "huge" else A * 1e-300


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize(("case", "what"), [("huge", "overflows"), ("tiny", "underflows")])
def test_scale_out_of_range_is_an_error_naming_the_variance(name, case, what):
    X = _data(case)
    # independently: the variance (as the float64 exponent of var(X / s) s^2) is
    # beyond float64's range, so 1 / variance is 0 or infinite
    s = np.abs(X).max()
    exponent = np.log10((X / s).var()) + 2 * np.log10(s)
    assert abs(exponent) > 308
    with pytest.raises(ValueError, match=rf"gamma='scale': the variance of X {what} float64 "
                       rf"\(it is about 1e{exponent:.0f}"):
        ESTIMATORS[name]("scale").fit(X)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize(("case", "what"), [("huge", "overflow"), ("tiny", "underflow")])
def test_median_out_of_range_is_an_error_naming_the_distances(name, case, what):
    with pytest.raises(ValueError, match=rf"gamma='median': the distances between the rows "
                       rf"of X {what} float64"):
        ESTIMATORS[name]("median").fit(_data(case))


def test_constant_data_and_single_rows_keep_their_messages():
    X = np.full((10, 3), 2.5)
    with pytest.raises(ValueError, match="X is constant"):
        resolve_gamma("scale", X)
    with pytest.raises(ValueError, match="X is constant"):
        resolve_gamma("scale", sp.csr_matrix(X))
    with pytest.raises(ValueError, match="two distinct rows"):
        resolve_gamma("median", X)
    # tiny but constant: still constant, not underflow
    with pytest.raises(ValueError, match="X is constant"):
        resolve_gamma("scale", np.full((10, 3), 1e-300))


def test_in_range_gamma_is_unchanged():
    """Data inside the range: gamma exactly as before (1 / (d var), median formula)."""
    X = _rows() * 1e-100
    assert resolve_gamma("scale", X) == 1.0 / (2 * X.var())
    assert resolve_gamma("scale", sp.csr_matrix(X)) > 0


def test_sparse_scale_out_of_range():
    X = sp.csr_matrix(_data("huge"))
    with pytest.raises(ValueError, match="variance of X overflows"):
        resolve_gamma("scale", X)
