"""The float32 accuracy estimate that drives ``precision='auto'``, against the
real error of a float32 Gram matrix (independent dense eigensolves)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from kpca import KernelPCA
from kpca.kernels import RBF, Linear, make_kernel
from kpca.operators import float32_eigen_error


def _true_error(params, X):
    """Largest change of the top eigenvalues, relative to the largest, between a fit
    that stores K in float32 and one that stores it in float64 (the tiled operator
    and block Krylov: the path ``precision='auto'`` chooses float32 for)."""
    a = KernelPCA(3, eigen_solver="krylov", precision="float64", random_state=0,
                  **params).fit(X)
    # where float32 is inadequate the residual target is out of its reach: 40 passes
    # reach the floor of its accuracy
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        b = KernelPCA(3, eigen_solver="krylov", precision="float32", random_state=0,
                      tol=1e-7, max_iter=40, **params).fit(X)
    return np.abs(a.eigenvalues_ - b.eigenvalues_).max() / a.eigenvalues_[0]


@pytest.mark.parametrize("offset", [0.0, 30.0, 1000.0])
@pytest.mark.parametrize("params", [
    {"kernel": "linear"},
    {"kernel": "poly", "gamma": 0.2, "degree": 2, "coef0": 1.0},
    {"kernel": "rbf", "gamma": 0.2},
    {"kernel": "rbf", "gamma": 1e-5},  # much wider than the data: K is nearly constant
], ids=["linear", "poly", "rbf", "rbf-wide"])
def test_estimate_follows_the_real_float32_error(params, offset):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(700, 4)) * [3.0, 2.0, 1.0, 0.5] + offset
    kernel = make_kernel(params["kernel"], **{k: v for k, v in params.items() if k != "kernel"})
    est = float32_eigen_error(kernel, X, random_state=0)
    real = _true_error(params, X)
    # an order-of-magnitude estimate: a little below the real error at worst,
    # usually somewhat above (Weyl's bound is pessimistic for the top eigenvalues)
    assert real <= 5 * est, (real, est)
    assert est <= 30 * max(real, 1e-8), (real, est)


def test_cancelling_kernels_are_flagged_and_bounded_ones_are_not():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20000, 5))
    assert float32_eigen_error(RBF(gamma=0.2), X, random_state=0) < 1e-7
    assert float32_eigen_error(Linear(), X, random_state=0) < 1e-7
    assert float32_eigen_error(Linear(), X + 1000.0, random_state=0) > 1e-5
    # uncentred: no cancellation to fear, the offset makes the top eigenvalue larger
    assert float32_eigen_error(Linear(), X + 1000.0, center=False, random_state=0) < 1e-7


def test_degenerate_spectrum_is_infinitely_bad():
    X = np.ones((50, 3))
    assert float32_eigen_error(Linear(), X) == float("inf")
