"""AnovaKernelPCA on Array API arrays (PyTorch, CuPy, array-api-strict).

The weight update's per-variable terms ``a_j = trace(V~^T K_j V~)`` on the device are
checked against dense NumPy sums of the explicit one-variable kernel matrices; the
device fit against the NumPy fit of the same values and parameters (that path is
itself tested against independent computations in tests/robust/test_anova.py): the
kernel weights ``beta_`` and their path, the objective, the iterations, eigenvalues,
scores up to sign, ``transform`` of new rows, the learned pre-image and ``denoise``.

Tolerances, relative to the largest value: 1e-9 in float64 -- the device and host
eigensolvers (LAPACK or PyTorch ``eigh``; block Lanczos asked for residuals of 1e-12)
give eigenvectors that differ by round-off over the eigengaps, and ``beta`` is a
continuous function of the terms (a normalised soft-threshold); 1e-4 in float32 (the
robust device tests' float32 tolerance: float32 eigenvectors, from another ``eigh``
on a GPU, move the terms by about 1e-6 relative). The terms themselves are float64 on
either path: 1e-12. The namespaces are those of tests/_device.py: array-api-strict,
PyTorch CPU tensors where PyTorch is installed, ``KPCA_TEST_TORCH_DEVICE=cuda`` for
CUDA tensors and ``KPCA_TEST_CUPY=1`` for CuPy arrays (how the suite runs on a GPU
machine).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest
from _device import NAMESPACES, STORAGE, KpcaEvents, asarray, same_namespace
from sklearn.datasets import make_circles

import kpca
from kpca._array_api import device_namespace, to_host
from kpca.robust._anova import device_variable_terms

xps = pytest.importorskip("array_api_strict")

TOL = {np.float64: 1e-9, np.float32: 1e-4}



def close(a, b, tol, scale=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    scale = np.abs(b).max(initial=0.0) if scale is None else scale
    np.testing.assert_allclose(a, b, rtol=0, atol=tol * max(scale, 1e-300))


def close_up_to_sign(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    s = np.where(np.sum(a * b, axis=0) < 0, -1.0, 1.0)
    close(a * s, b, tol)


@pytest.fixture(scope="module")
def data():
    """The seed example (docs/robust.md): x1, x2 two nested circles, x3..x6 N(0, 3.5^2)
    noise; 400 rows, and 20 new ones."""
    X2, _ = make_circles(420, factor=0.3, noise=0.05, random_state=0)
    X = np.hstack([X2, np.random.default_rng(0).normal(scale=3.5, size=(420, 4))])
    return X[:400], X[400:]


class _Events(KpcaEvents):
    """Counts kpca's 'pass' events (every pass over K), those of a device operator, the
    device operators made, and the weight updates' terms evaluated on a device."""

    def __init__(self) -> None:
        super().__init__()
        self.all = self.device = self.operators = self.terms = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if getattr(record, "kpca_event", None) == "pass":
            self.all += 1
            self.device += message.startswith("device kernel pass")
        self.operators += message.startswith("device operator:")
        self.terms += message.startswith("anova kpca variable terms on device")


def _dense_terms(X, V, gamma):
    """``trace(V^T K_j V)`` from the explicit n x n matrix of each variable."""
    X = np.asarray(X, np.float64)
    return np.array([np.trace(V.T @ np.exp(-gamma * np.subtract.outer(X[:, j], X[:, j]) ** 2)
                              @ V) for j in range(X.shape[1])])


# ------------------------------------------------------------------ the terms
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("budget", [10**9, 8 * 8 * 400 * 150, 8 * 8 * 400 * 30, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_device_terms_equal_the_dense_sums(name, budget, dtype, data):
    """Whole variables in one tile, two variables of all rows, 30-row tiles of one
    variable (the last one shorter), one-row tiles (of 50 rows: a budget below one
    row): the same float64 sums (also from float32 rows, whose values are taken
    exactly, as the host loop does)."""
    X = data[0][: 50 if budget == 1 else None].astype(dtype)
    V = np.random.default_rng(1).normal(size=(X.shape[0], 3))
    V -= V.mean(axis=0)
    Xd = asarray(name, X)
    with kpca.config_context(device_tile_bytes=10**9):
        a = device_variable_terms(Xd, V, 0.7, device_namespace(Xd), budget)
    assert a.dtype == np.float64 and a.shape == (X.shape[1],)
    np.testing.assert_allclose(a, _dense_terms(X, V, 0.7), rtol=1e-12)


def test_device_tile_bytes_bounds_the_terms_tiles(data):
    X = data[0]
    V = np.random.default_rng(2).normal(size=(X.shape[0], 2))
    Xd = xps.asarray(X)
    with kpca.config_context(device_tile_bytes=8 * 400 * 7), _Events() as events:
        a = device_variable_terms(Xd, V, 1.3, device_namespace(Xd), 10**12)
    np.testing.assert_allclose(a, _dense_terms(X, V, 1.3), rtol=1e-12)
    assert events.terms == 1


# ------------------------------------------------------------------ the estimator
def _fit_pair(name, X, dtype=np.float64, **kw):
    kw = dict(n_components=3, gamma=1.0, **kw)
    ref = kpca.AnovaKernelPCA(**kw)
    Z_ref = ref.fit_transform(X.astype(dtype))
    est = kpca.AnovaKernelPCA(**kw)
    with _Events() as events:
        Z = est.fit_transform(asarray(name, X.astype(dtype)))
    return ref, Z_ref, est, Z, events


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("storage", list(STORAGE))
def test_anova_fit_on_device_equals_numpy(name, storage, data):
    X, T = data
    ref, Z_ref, est, Z, events = _fit_pair(name, X, fit_inverse_transform=True,
                                           **STORAGE[storage])
    # each iteration's K and its passes (none for a dense solve of a stored K), and
    # every weight update's terms, were on the arrays' device
    assert events.device == events.all and (events.device > 0 or storage != "matrix-free")
    assert events.operators == events.terms == est.n_iter_
    assert ref.converged_ and est.converged_ and est.n_iter_ == ref.n_iter_ > 3
    tol = TOL[np.float64]
    close(est.beta_, ref.beta_, tol)
    close(est.beta_path_, ref.beta_path_, tol)
    close(est.objective_, ref.objective_, tol)
    close(est.kernel_.beta, ref.beta_, tol)  # the model's kernel has the learned weights
    assert set(np.argsort(est.beta_)[-2:]) == {0, 1}  # the circles' variables lead
    close(est.eigenvalues_, ref.eigenvalues_, tol)
    close(est.explained_variance_, ref.explained_variance_, tol)
    same_namespace(Z, name)
    close_up_to_sign(to_host(Z), Z_ref, tol)
    Y = est.transform(asarray(name, T))
    same_namespace(Y, name)
    Y_ref = ref.transform(T)
    close_up_to_sign(to_host(Y), Y_ref, tol)
    np.testing.assert_array_equal(est.outliers(), ref.outliers())
    R = est.inverse_transform(asarray(name, Y_ref))  # the learned pre-image, on the device
    same_namespace(R, name)
    close(to_host(R), ref.inverse_transform(Y_ref), tol)
    D = est.denoise(asarray(name, T), n_components=2, method="ridge")
    same_namespace(D, name)
    close(to_host(D), ref.denoise(T, n_components=2, method="ridge"), tol)


@pytest.mark.parametrize("name", NAMESPACES)
def test_sparse_weights_on_device(name, data):
    """``c = 1.3``: the noise variables' weights are exactly 0 on both paths (the
    device kernel then skips them)."""
    X, T = data
    ref, Z_ref, est, Z, events = _fit_pair(name, X, c=1.3)
    assert events.device == events.all
    assert events.operators == events.terms == est.n_iter_
    np.testing.assert_array_equal(est.beta_ == 0, ref.beta_ == 0)
    assert np.all(ref.beta_[2:] == 0) and est.beta_.sum() <= 1.3 + 1e-12
    close(est.beta_, ref.beta_, TOL[np.float64])
    close(est.eigenvalues_, ref.eigenvalues_, TOL[np.float64])
    close_up_to_sign(to_host(est.transform(asarray(name, T))), ref.transform(T),
                     TOL[np.float64])


@pytest.mark.parametrize("name", NAMESPACES)
def test_anova_float32_fit_on_device_equals_numpy(name, data):
    """float32 rows: the kernel passes and eigensolves in float32, the terms in
    float64 (as on the host); beta_tol 1e-4 stops far from float32's noise in beta."""
    X, T = data
    ref, Z_ref, est, Z, _ = _fit_pair(name, X, np.float32, eigen_solver="dense",
                                      beta_tol=1e-4)
    same_namespace(Z, name)
    assert to_host(Z).dtype == np.float32 and est.fit_plan_.dtype == np.float32
    assert est.converged_ and est.n_iter_ == ref.n_iter_
    tol = TOL[np.float32]
    close(est.beta_, ref.beta_, tol)
    close(est.objective_, ref.objective_, tol)
    close(est.eigenvalues_, ref.eigenvalues_, tol)
    close_up_to_sign(to_host(Z), Z_ref, tol)
    Y = est.transform(asarray(name, T.astype(np.float32)))
    same_namespace(Y, name)
    assert to_host(Y).dtype == np.float32
    close_up_to_sign(to_host(Y), ref.transform(T.astype(np.float32)), tol)


def test_anova_fit_stays_on_a_non_default_device(data):
    """array-api-strict refuses to combine arrays of two devices: a fit and transform
    of arrays on its 'device1' make every array there (none on the default device)."""
    X, T = data
    device = xps.Device("device1")
    kw = dict(n_components=2, gamma=1.0, beta_max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # three iterations do not converge
        ref = kpca.AnovaKernelPCA(**kw).fit(X)
        est = kpca.AnovaKernelPCA(**kw).fit(xps.asarray(X, device=device))
    close(est.beta_, ref.beta_, TOL[np.float64])
    Y = est.transform(xps.asarray(T, device=device))
    assert Y.device == device
    close_up_to_sign(to_host(Y), ref.transform(T), TOL[np.float64])
