"""kernel_rows (threaded row blocks of k(X, Y)) against direct scikit-learn
evaluations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import laplacian_kernel, polynomial_kernel, rbf_kernel

from kpca import config_context
from kpca.kernels import make_kernel
from kpca.operators import kernel_rows

REFERENCE = {
    "rbf": lambda X, Y: rbf_kernel(X, Y, gamma=0.2),
    "poly": lambda X, Y: polynomial_kernel(X, Y, degree=3, gamma=0.2, coef0=1.0),
    "laplacian": lambda X, Y: laplacian_kernel(X, Y, gamma=0.2),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(REFERENCE))
@pytest.mark.parametrize("n_jobs", [None, 1, 2])
def test_kernel_rows_equals_the_dense_kernel(name, dtype, n_jobs):
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(40, 3))
    X = Y[30:]
    kernel = make_kernel(name, gamma=0.2, degree=3, coef0=1.0)
    with config_context(gram_block_bytes=256):  # many row blocks
        B = kernel_rows(kernel, X, Y, dtype=dtype, n_jobs=n_jobs,
                        diag_start=30 if kernel.constant_diag is not None else None)
    assert B.shape == (10, 40) and B.dtype == dtype and B.flags.owndata
    ref = REFERENCE[name](X, Y)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(B, ref, rtol=tol, atol=tol * np.abs(ref).max())
    if kernel.constant_diag is not None:  # the diagonal entries are exact
        assert np.all(B[np.arange(10), 30 + np.arange(10)] == kernel.constant_diag)
