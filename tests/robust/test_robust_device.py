"""The robust estimators on Array API arrays (PyTorch, CuPy, array-api-strict).

Each device fit is compared with the NumPy fit of the same values and parameters
(the NumPy path is itself tested against independent computations in this folder):
eigenvalues, scores up to sign, the weights / distances / h-subset / outlyingness the
estimator exposes, and its training outlier flags, to 1e-9 of the largest value in
float64 (the block Lanczos of a matrix-free fit is asked for residuals of 1e-12) and
1e-4 in float32. ``transform``, the learned pre-image and ``denoise`` answer in the
input's namespace. The namespaces are those of tests/test_array_api.py:
array-api-strict, PyTorch CPU tensors where PyTorch is installed,
``KPCA_TEST_TORCH_DEVICE=cuda`` for CUDA tensors and ``KPCA_TEST_CUPY=1`` for CuPy arrays
(how the suite runs on a GPU machine).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _device import NAMESPACES, STORAGE, KpcaEvents, asarray, same_namespace

import kpca
from kpca._array_api import device_namespace, to_host
from kpca.kernels import make_kernel
from kpca.operators import Centering, center, host_matmat
from kpca.operators._device import DeviceKernelOperator

xps = pytest.importorskip("array_api_strict")

TOL = {np.float64: 1e-9, np.float32: 1e-4}
ESTIMATORS = {
    "spherical": (kpca.SphericalKernelPCA, dict(fit_inverse_transform=True)),
    # a narrow Campbell tail: the outliers' weights fall below 1 % of the largest
    "weighted": (kpca.WeightedKernelPCA, dict(fit_inverse_transform=True, b2=0.75)),
    "robpca": (kpca.KernelROBPCA, dict(random_state=0)),
}




def close(a, b, dtype, scale=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    scale = np.abs(b).max(initial=0.0) if scale is None else scale
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype] * max(scale, 1e-300))


def close_up_to_sign(a, b, dtype):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    s = np.where(np.sum(a * b, axis=0) < 0, -1.0, 1.0)
    close(a * s, b, dtype)


@pytest.fixture(scope="module")
def data():
    """400 rows: a flat Gaussian cloud and 5 % outliers in a cluster far along its
    thinnest axis; 25 new rows."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4)) * [3.0, 2.0, 1.0, 0.3]
    X[:20] = rng.normal(size=(20, 4)) * 0.3 + [0.0, 0.0, 0.0, 12.0]
    return X, rng.normal(size=(25, 4))


class _Passes(KpcaEvents):
    """Counts kpca's 'pass' events (every pass over K), and those of a device operator."""

    def __init__(self) -> None:
        super().__init__()
        self.all = self.device = 0

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "kpca_event", None) == "pass":
            self.all += 1
            self.device += record.getMessage().startswith("device kernel pass")


# ------------------------------------------------------------------ the operator
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("memory_limit", [10**9, 40_000])  # stored, matrix-free
@pytest.mark.parametrize("enabled", [True, False])
def test_device_operator_applies_a_weighted_centre_and_row_scales(name, memory_limit,
                                                                  enabled, data):
    """``S (K - 1 m^T - m 1^T + c 1 1^T) S`` (docs/math.md, "Robust KPCA and
    diagnostics") against the dense NumPy matrix: as a view of the uncentred operator
    (which stays uncentred), its dense copy, and centred in place."""
    X = data[0][:240]
    n = X.shape[0]
    k = make_kernel("rbf", gamma=0.2)
    K = k.block(X, X)
    rng = np.random.default_rng(1)
    w = rng.uniform(0.1, 1.0, size=n)
    g = w / w.sum()
    m = K @ g
    c = Centering(m, float(g @ m), enabled=enabled, weights=g, scale=w)
    one = np.ones(n)
    Kc = K - np.outer(one, m) - np.outer(m, one) + (g @ m) if enabled else K
    Ks = Kc * np.outer(w, w)
    V = rng.normal(size=(n, 5))
    Xd = asarray(name, X)
    op = DeviceKernelOperator(k, Xd, device_namespace(Xd), dtype=np.float64,
                              memory_limit=memory_limit)
    assert op.stored == (memory_limit == 10**9)
    view = center(op, centering=c)[0]
    assert getattr(view, "device", False)
    close(host_matmat(view, V), Ks @ V, np.float64)
    close(view.diag(), np.diag(Ks), np.float64)
    close(host_matmat(op, V), K @ V, np.float64)  # the operator itself is untouched
    if op.stored:
        close(to_host(view.stored_matrix()), Ks, np.float64)
        close(to_host(op.stored_matrix()), K, np.float64)
    center(op, inplace=True, centering=c)
    close(host_matmat(op, V), Ks @ V, np.float64)
    close(op.diag(), np.diag(Ks), np.float64)
    with pytest.raises(ValueError, match="uncentred operator"):
        op.centered_view(c)


# ------------------------------------------------------------------ the estimators
def _fit_pair(name, which, storage, X, dtype=np.float64):
    cls, extra = ESTIMATORS[which]
    kw = dict(n_components=3, kernel="rbf", gamma=0.02, **extra, **STORAGE[storage])
    ref = cls(**kw)
    Z_ref = ref.fit_transform(X.astype(dtype))
    est = cls(**kw)
    with _Passes() as passes:
        Z = est.fit_transform(asarray(name, X.astype(dtype)))
    return ref, Z_ref, est, Z, passes


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("storage", list(STORAGE))
@pytest.mark.parametrize("which", list(ESTIMATORS))
def test_robust_fit_on_device_equals_numpy(name, storage, which, data):
    X, T = data
    ref, Z_ref, est, Z, passes = _fit_pair(name, which, storage, X)
    # every pass over K ran on the arrays' device
    assert passes.device > 0 and passes.device == passes.all
    same_namespace(Z, name)
    assert est.n_components_ == ref.n_components_
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)
    close(est.explained_variance_, ref.explained_variance_, np.float64)
    close(est.subspace_.score_variance, ref.subspace_.score_variance, np.float64)
    close_up_to_sign(to_host(Z), Z_ref, np.float64)
    for attr in ("weights_", "distances_", "center_weights_", "outlyingness_"):
        if hasattr(ref, attr):
            close(getattr(est, attr), getattr(ref, attr), np.float64)
    if which == "robpca":
        assert est.h_ == ref.h_
        np.testing.assert_array_equal(est.h_subset_, ref.h_subset_)
    if which == "weighted":  # outliers are down-weighted: some raw training scores
        # are projections of their rows (scale < 1 % of the largest), on the device
        assert np.any(est.weights_ < 0.01 * est.weights_.max())
        assert est.converged_ == ref.converged_ and est.n_iter_ == ref.n_iter_
    close(est.sd_cutoff_, ref.sd_cutoff_, np.float64)
    close(est.od_cutoff_, ref.od_cutoff_, np.float64)
    np.testing.assert_array_equal(est.outliers(), ref.outliers())
    assert ref.outliers()[:20].all()  # the planted cluster is flagged

    Y = est.transform(asarray(name, T))
    same_namespace(Y, name)
    Y_ref = ref.transform(T)
    close_up_to_sign(to_host(Y), Y_ref, np.float64)
    if which == "robpca":  # no learned pre-image: fixed-point
        D = est.denoise(asarray(name, T[:5]), n_components=2)
        same_namespace(D, name)
        close(to_host(D), ref.denoise(T[:5], n_components=2), np.float64,
              scale=1e3 * np.abs(T).max())
        return
    R = est.inverse_transform(asarray(name, Y_ref))  # the learned pre-image, on the device
    same_namespace(R, name)
    close(to_host(R), ref.inverse_transform(Y_ref), np.float64)
    D = est.denoise(asarray(name, T), n_components=2, method="ridge")
    same_namespace(D, name)
    close(to_host(D), ref.denoise(T, n_components=2, method="ridge"), np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("which", list(ESTIMATORS))
def test_robust_float32_fit_on_device_equals_numpy(name, which, data):
    X, T = data
    ref, Z_ref, est, Z, _ = _fit_pair(name, which, "stored", X, np.float32)
    same_namespace(Z, name)
    assert to_host(Z).dtype == np.float32
    close(est.eigenvalues_, ref.eigenvalues_, np.float32)
    close_up_to_sign(to_host(Z), Z_ref, np.float32)
    Y = est.transform(asarray(name, T.astype(np.float32)))
    same_namespace(Y, name)
    assert to_host(Y).dtype == np.float32
    close_up_to_sign(to_host(Y), ref.transform(T.astype(np.float32)), np.float32)
    np.testing.assert_array_equal(est.outliers(), ref.outliers())


@pytest.mark.parametrize("name", NAMESPACES)
def test_uncentred_robust_fits_on_device(name, data):
    """``center=False``: row scales without a centre (theta = 0)."""
    X, T = data
    for cls in (kpca.SphericalKernelPCA, kpca.WeightedKernelPCA):
        kw = dict(n_components=2, kernel="rbf", gamma=0.02, center=False)
        ref, est = cls(**kw).fit(X), cls(**kw).fit(asarray(name, X))
        close(est.eigenvalues_, ref.eigenvalues_, np.float64)
        close_up_to_sign(to_host(est.transform(asarray(name, T))), ref.transform(T),
                         np.float64)
