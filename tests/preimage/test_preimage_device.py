"""Pre-images and denoising on a device (issue 35): computed in the arrays' namespace.

Every result is compared with the NumPy path on the same values (itself tested against
per-point loops, closed forms and scikit-learn in the other files here). The namespaces
are array-api-strict (the standard's reference: only the standard's operations) and
PyTorch CPU tensors where PyTorch is installed; ``KPCA_TEST_TORCH_DEVICE=cuda`` puts the
tensors on a GPU and ``KPCA_TEST_CUPY=1`` adds CuPy arrays (as tests/test_array_api.py).

Tolerances, relative to the largest value compared:

* float64: 1e-9. Host and device evaluate the same formulas in the same precision; only
  the order of the sums differs (measured: 2e-14).
* float32: 1e-4. The device computes in float32 where the host's fixed point and MDS run
  in float64, and the device fit's eigenvectors differ from the host fit's by float32
  round-off (1e-5 relative, tests/test_array_api.py); the learned pre-image's solve
  multiplies that by the condition number of ``K_Y + alpha I`` (a few hundred here).
  Measured: 7e-5 at most.
* The fixed point stops when a step is at most ``tol * scale``: two runs whose iterates
  differ by round-off may stop one step apart, so their results may differ by up to a
  step; that (``2 * tol * scale``, absolute) is added where a float32 run is compared.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import linalg

import kpca
from kpca._array_api import device_namespace, to_host
from kpca.kernels import make_kernel
from kpca.preimage import fit_ridge_preimage, fixed_point_preimage, mds_preimage

pytest.importorskip("array_api_compat")
from _device import NAMESPACES, asarray

xps = pytest.importorskip("array_api_strict")

TOL = {np.float64: 1e-9, np.float32: 1e-4}
KERNELS = [("rbf", dict(gamma=0.2)), ("poly", dict(gamma=0.3, degree=2, coef0=1.0)),
           ("linear", {})]



def on_device_of(out, like, dtype=None):
    """``out`` is an array of ``like``'s namespace, on its device (and of ``dtype``)."""
    mod = type(out).__module__.partition(".")[0]
    assert mod == type(like).__module__.partition(".")[0], mod
    assert out.device == like.device
    if dtype is not None:
        assert to_host(out).dtype == dtype


def close(a, b, dtype, extra=0.0):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype] * np.abs(b).max() + extra)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(240, 5)), rng.normal(size=(30, 5))


def step_bound(est, tol, dtype):
    """What a one-step difference in stopping may add (module docstring)."""
    if dtype == np.float64:
        return 0.0
    X = np.asarray(est.subspace_.basis, np.float64)  # the expansion points' spread
    scale = np.sqrt(np.sum((X - X.mean(axis=0)) ** 2) / X.shape[0])
    if est.kernel_.name == "rbf":
        scale = min(scale, 1.0 / np.sqrt(2.0 * float(est.kernel_.gamma)))
    return 2.0 * tol * scale


# ------------------------------------------------------------------ the learned pre-image
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "params"), KERNELS + [("laplacian", dict(gamma=0.1))])
def test_ridge_fit_is_solved_on_the_device(name, dtype, kernel, params, data, monkeypatch):
    """fit_inverse_transform on device arrays: K_Y + alpha I formed and solved there
    (the host's SciPy solve is never called), the same dual coefficients as the NumPy
    fit, which satisfy (K_Y + alpha I) C = X for the fitted scores."""
    X = data[0].astype(dtype)
    kw = dict(n_components=4, kernel=kernel, fit_inverse_transform=True, alpha=0.5, **params)
    ref = kpca.KernelPCA(**kw).fit(X)

    def host_solve(*args, **kwargs):
        raise AssertionError("the learned pre-image was solved on the host")

    monkeypatch.setattr(linalg, "solve", host_solve)
    monkeypatch.setattr(linalg, "lstsq", host_solve)
    est = kpca.KernelPCA(**kw).fit(asarray(name, X))
    monkeypatch.undo()
    assert isinstance(est.dual_coef_, np.ndarray) and est.dual_coef_.dtype == dtype
    close(est.dual_coef_, ref.dual_coef_, dtype)
    # the normal equations, in float64, for the device fit's own scores
    Y = est.X_transformed_fit_.astype(np.float64)
    K = make_kernel(kernel, **params).block(Y, Y) + 0.5 * np.eye(len(Y))
    close(K @ est.dual_coef_, X, dtype)


@pytest.mark.parametrize("name", NAMESPACES)
def test_ridge_fit_without_a_cholesky_factor_is_the_least_squares_solution(name):
    """K_Y + alpha I with no Cholesky factor (in practice a tiny alpha and round-off;
    here made indefinite for certain: a rank-3 kernel and alpha < 0): the device falls
    back to the eigendecomposition's least-squares solution, the host's SciPy lstsq."""
    rng = np.random.default_rng(1)
    Y, X = rng.normal(size=(60, 3)), rng.normal(size=(60, 4))
    alpha = -1e-3
    C = fit_ridge_preimage(make_kernel("linear"), asarray(name, Y), asarray(name, X), alpha)
    assert device_namespace(C) is not None
    ref = linalg.lstsq(Y @ Y.T + alpha * np.eye(60), X)[0]
    close(to_host(C), ref, np.float64)


# ------------------------------------------------------------------ through the estimator
_FITS: dict = {}


def fitted(name, dtype, kernel, params, data):
    """The NumPy and the device fit (fit_inverse_transform=True), made once per module."""
    key = (name, dtype, kernel)
    if key not in _FITS:
        X = data[0].astype(dtype)
        kw = dict(n_components=4, kernel=kernel, fit_inverse_transform=True, **params)
        _FITS[key] = (kpca.KernelPCA(**kw).fit(X), kpca.KernelPCA(**kw).fit(asarray(name, X)))
    return _FITS[key]


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "params"), KERNELS)
@pytest.mark.parametrize("method", ["ridge", "fixed_point", "mds"])
def test_inverse_transform_and_denoise_equal_numpy(name, dtype, kernel, params, method,
                                                   data):
    """Each pre-image method, and denoise, of a device fit: the arrays' namespace,
    device and the model's dtype; the NumPy results; the same PreimageInfo."""
    T = data[1].astype(dtype)
    ref, est = fitted(name, dtype, kernel, params, data)
    bound = step_bound(ref, 1e-4, dtype) if method == "fixed_point" else 0.0
    Td = asarray(name, T)
    Y = est.transform(Td)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a point of the poly fixed point may not converge)
        Z, info = est.inverse_transform(Y, method=method, return_info=True)
        Z_ref, info_ref = ref.inverse_transform(ref.transform(T), method=method,
                                                return_info=True)
    on_device_of(Z, Td, dtype)
    close(to_host(Z), Z_ref, dtype, bound)
    # the residual k(z, z) - 2 sum_j G_j k(z, z_j) + ||P phi(t)||^2 cancels: its
    # round-off is relative to its terms, of the size of k(z, z)
    size = np.abs(make_kernel(kernel, **params).diag(Z_ref.astype(np.float64))).max()
    close(info.residual, info_ref.residual, dtype, extra=TOL[dtype] * size)
    assert info.method == info_ref.method == method
    if dtype == np.float64:  # the same iterations
        np.testing.assert_array_equal(info.n_iter, info_ref.n_iter)
        np.testing.assert_array_equal(info.converged, info_ref.converged)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        D = est.denoise(Td, n_components=3, method=method)
        D_ref = ref.denoise(T, n_components=3, method=method)
    on_device_of(D, Td, dtype)
    close(to_host(D), D_ref, dtype, bound)


@pytest.mark.parametrize("name", NAMESPACES)
def test_auto_denoise_of_a_host_fit_runs_on_the_arrays_device(name, data):
    """A NumPy fit, device rows: the pre-image is computed on their device (the model's
    arrays are uploaded), equal to the NumPy denoise of the same rows."""
    X, T = data
    est = kpca.KernelPCA(5, kernel="rbf", gamma=0.3).fit(X)
    Td = asarray(name, T)
    D, info = est.denoise(Td, return_info=True)  # 'auto': fixed_point
    D_ref, info_ref = est.denoise(T, return_info=True)
    on_device_of(D, Td, np.float64)
    close(to_host(D), D_ref, np.float64)
    np.testing.assert_array_equal(info.n_iter, info_ref.n_iter)


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nystrom_denoise_on_the_device(name, dtype):
    """Landmark pre-images (NystromKernelPCA) on the device."""
    rng = np.random.default_rng(3)
    X, T = rng.normal(size=(600, 4)).astype(dtype), rng.normal(size=(25, 4)).astype(dtype)
    kw = dict(n_components=4, n_landmarks=80, gamma=0.3, random_state=0)
    ref = kpca.NystromKernelPCA(**kw).fit(X)
    est = kpca.NystromKernelPCA(**kw).fit(asarray(name, X))
    Td = asarray(name, T)
    for method in ("fixed_point", "mds"):
        D = est.denoise(Td, n_components=2, method=method)
        on_device_of(D, Td, dtype)
        bound = step_bound(ref, 1e-4, dtype) if method == "fixed_point" else 0.0
        close(to_host(D), ref.denoise(T, n_components=2, method=method), dtype, bound)


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("make", [
    lambda: kpca.SphericalKernelPCA(4, gamma=0.2),   # normalised scores: raw ones inverted
    lambda: kpca.WeightedKernelPCA(4, gamma=0.2),    # a weighted centre, row scales
    lambda: kpca.KernelROBPCA(4, gamma=0.2, random_state=0),
], ids=["spherical", "weighted", "robpca"])
def test_robust_host_fits_denoise_device_rows_on_the_device(name, make, data):
    """A robust centre (weights, scales) is part of the uploaded geometry: device rows
    of a NumPy robust fit are denoised on their device as the NumPy rows are."""
    X, T = data
    est = make().fit(X)
    Td = asarray(name, T)
    for method in ("fixed_point", "mds"):
        D = est.denoise(Td, method=method)
        on_device_of(D, Td, np.float64)
        close(to_host(D), est.denoise(T, method=method), np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
def test_sparse_training_rows_keep_the_host_path(name, data):
    """A NumPy fit on a sparse matrix has sparse expansion points: its pre-images of
    device rows are computed on the host (as before) and come back in the namespace."""
    import scipy.sparse as sp

    X, T = data
    est = kpca.KernelPCA(4, kernel="rbf", gamma=0.2).fit(sp.csr_matrix(X))
    Td = asarray(name, T)
    D = est.denoise(Td)
    on_device_of(D, Td, np.float64)
    close(to_host(D), est.denoise(T), np.float64)
    R = est.inverse_transform(asarray(name, est.transform(T)), method="mds")
    on_device_of(R, Td, np.float64)
    close(to_host(R), est.inverse_transform(est.transform(T), method="mds"), np.float64)


# ------------------------------------------------------------------ the functions
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("block_bytes", [1, 4000, 15360, 10**9])
def test_fixed_point_blocks_chunks_and_restarts_equal_numpy(name, block_bytes):
    """Several chunks of points, column blocks of training rows, the coefficients cached
    or recomputed, and points restarted mid-batch (their start so far away that every
    kernel value underflows): on the device as on the host, point for point."""
    rng = np.random.RandomState(11)
    X, T = rng.standard_normal((200, 3)), rng.standard_normal((9, 3))
    est = kpca.KernelPCA(7, kernel="rbf", gamma=0.4, eigen_solver="dense").fit(X)
    Y = est.transform(T)
    Z0 = T.copy()
    Z0[[1, 4, 8]] = 1e4
    with kpca.config_context(fixed_point_chunk_rows=4):
        Z_ref, info_ref = fixed_point_preimage(est.subspace_, Y, Z0, max_iter=20, tol=1e-6,
                                               block_bytes=block_bytes)
        Yd = asarray(name, Y)
        Z, info = fixed_point_preimage(est.subspace_, Yd, asarray(name, Z0), max_iter=20,
                                       tol=1e-6, block_bytes=block_bytes)
    on_device_of(Z, Yd, np.float64)
    close(to_host(Z), Z_ref, np.float64)
    for field in ("restarted", "n_iter", "converged"):
        np.testing.assert_array_equal(getattr(info, field), getattr(info_ref, field))
    assert info.restarted[[1, 4, 8]].all() and info.converged.any()


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize(("kernel", "params"), KERNELS)
@pytest.mark.parametrize("block_bytes", [1, 20_000, None])
def test_mds_blocks_equal_numpy(name, kernel, params, block_bytes):
    """The running top-k over column blocks and the batched SVD, on the device."""
    rng = np.random.RandomState(5)
    X, T = rng.standard_normal((150, 4)), rng.standard_normal((23, 4))
    est = kpca.KernelPCA(6, kernel=kernel, **params).fit(X)
    Y = est.transform(T)
    Z_ref, _ = mds_preimage(est.subspace_, Y, n_neighbors=8, block_bytes=block_bytes)
    Yd = asarray(name, Y)
    Z, info = mds_preimage(est.subspace_, Yd, n_neighbors=8, block_bytes=block_bytes)
    on_device_of(Z, Yd, np.float64)
    close(to_host(Z), Z_ref, np.float64)
    assert info.converged.all()


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_inputs_are_not_modified(name, data):
    X, T = data
    est = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, fit_inverse_transform=True)
    Xd = asarray(name, X)
    est.fit(Xd)
    Td = asarray(name, T)
    for method in ("ridge", "fixed_point", "mds"):
        est.denoise(Td, method=method)
    np.testing.assert_array_equal(to_host(Xd), X)
    np.testing.assert_array_equal(to_host(Td), T)
