"""Array API input (PyTorch, CuPy, array-api-strict): computed in the arrays' namespace.

Every result is compared with the NumPy path of the same estimator on the same values
(which is itself tested against scikit-learn and dense references): 1e-10 relative to
the largest value in float64, 1e-5 in float32. The namespaces are array-api-strict
(the standard's reference implementation, installed with the test extra) and PyTorch
CPU tensors where PyTorch is installed. ``KPCA_TEST_TORCH_DEVICE=cuda`` puts the PyTorch
tensors on a GPU instead, and ``KPCA_TEST_CUPY=1`` adds CuPy arrays (how the suite is run
on a GPU machine; CI has none).
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
from _device import NAMESPACES, TORCH_DEVICE, KpcaEvents, asarray, same_namespace

import kpca
from kpca import config_context
from kpca._array_api import device_namespace, to_host
from kpca.kernels import make_kernel
from kpca.operators import Centering
from kpca.operators._device import DeviceKernelOperator

xps = pytest.importorskip("array_api_strict")

TOL = {np.float64: 1e-10, np.float32: 1e-5}
KERNELS = [("rbf", dict(gamma=0.2)), ("laplacian", dict(gamma=0.1)),
           ("poly", dict(gamma=0.3, degree=2, coef0=1.0)), ("linear", {}),
           ("cosine", {}), ("sigmoid", dict(gamma=0.05, coef0=0.1)),
           ("anova", dict(gamma=0.3, kernel_params={"beta": [0.5, 0.0, 1.0, 0.2, 0.3]}))]




def close(a, b, dtype, scale=None):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = np.abs(b).max() if scale is None else scale
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL[dtype] * max(scale, 1e-300) * 10)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(240, 5)), rng.normal(size=(30, 5))


# ------------------------------------------------------------------ kernels, operator
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize(("kernel", "params"), KERNELS)
def test_device_kernels_equal_numpy_kernels(name, kernel, params, data):
    X, T = data
    k = make_kernel(kernel, **params)
    ref = k.block(T, X)
    xp = device_namespace(asarray(name, X))
    got = k.block(asarray(name, T), asarray(name, X), xp=xp)
    same_namespace(got, name)
    close(to_host(got), ref, np.float64)
    close(to_host(k.diag(asarray(name, T), xp=xp)), k.diag(T), np.float64)
    close(to_host(k.block(asarray(name, T), xp=xp)), k.block(T), np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("memory_limit", [10**9, 40_000])  # stored, matrix-free
def test_device_operator_is_the_centred_kernel_matrix(name, memory_limit, data):
    X = data[0]
    n = X.shape[0]
    k = make_kernel("rbf", gamma=0.2)
    Xd = asarray(name, X)
    op = DeviceKernelOperator(k, Xd, device_namespace(Xd), dtype=np.float64,
                              memory_limit=memory_limit)
    assert op.stored == (memory_limit == 10**9)
    K = k.block(X, X)
    np.testing.assert_allclose(op.row_means(), K.mean(axis=1), rtol=1e-12)
    r = K.mean(axis=1)
    op.center_inplace(Centering(r, float(r.mean())))
    H = np.eye(n) - 1.0 / n
    Kc = H @ K @ H
    V = np.random.default_rng(1).normal(size=(n, 7))
    close(to_host(op.matmat(asarray(name, V))), Kc @ V, np.float64)
    close(op.diag(), np.diag(Kc), np.float64)


# ------------------------------------------------------------------ the estimator
@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "params"), KERNELS)
def test_fit_transform_inverse_denoise_equal_numpy(name, dtype, kernel, params, data):
    X, T = (A.astype(dtype) for A in data)
    kw = dict(n_components=3, kernel=kernel, fit_inverse_transform=True, **params)
    ref = kpca.KernelPCA(**kw)
    Z_ref = ref.fit_transform(X)
    est = kpca.KernelPCA(**kw)
    Z = est.fit_transform(asarray(name, X))
    same_namespace(Z, name)
    assert to_host(Z).dtype == Z_ref.dtype
    close(est.eigenvalues_, ref.eigenvalues_, dtype)
    close(to_host(Z), Z_ref, dtype)
    Y = est.transform(asarray(name, T))
    same_namespace(Y, name)
    Y_ref = ref.transform(T)
    close(to_host(Y), Y_ref, dtype)
    R = est.inverse_transform(Y)
    same_namespace(R, name)
    close(to_host(R), ref.inverse_transform(Y_ref), dtype)
    D = est.denoise(asarray(name, T), n_components=2, method="ridge")
    same_namespace(D, name)
    close(to_host(D), ref.denoise(T, n_components=2, method="ridge"), dtype)


@pytest.mark.parametrize("name", NAMESPACES)
def test_iterative_preimages_come_back_in_the_namespace(name, data):
    """fixed_point / mds pre-images run on the host; their result is converted."""
    X, T = data
    ref = kpca.KernelPCA(3, kernel="rbf", gamma=0.2).fit(X)
    est = kpca.KernelPCA(3, kernel="rbf", gamma=0.2).fit(asarray(name, X))
    D = est.denoise(asarray(name, T))  # 'auto': fixed_point for rbf
    same_namespace(D, name)
    close(to_host(D), ref.denoise(T), np.float64, scale=np.abs(T).max() * 1e3)
    R = est.inverse_transform(est.transform(asarray(name, T)), method="mds")
    same_namespace(R, name)
    close(to_host(R), ref.inverse_transform(ref.transform(T), method="mds"), np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_matrix_free_block_lanczos_on_the_device(name, kernel):
    """More rows than the budget's stored matrix: tiles recomputed per product, block
    Lanczos on the device; the linear kernel (rank 4) makes blocks lose directions."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1500, 4)) * [3.0, 2.0, 1.0, 0.5]
    kw = dict(n_components=4, kernel=kernel, gamma=0.1, tol=1e-12)
    ref = kpca.KernelPCA(eigen_solver="dense", **kw).fit(X)
    est = kpca.KernelPCA(eigen_solver="krylov", memory_limit="4MB", **kw)
    est.fit(asarray(name, X))
    assert est.eigen_solver_ == "krylov"
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)
    Y = to_host(est.transform(asarray(name, X[:50, ...])))
    close(Y, ref.transform(X[:50]), np.float64, scale=1e-2 * np.abs(ref.transform(X[:50])).max())


@pytest.mark.parametrize("name", NAMESPACES)
def test_mixing_namespaces_and_saving(name, data, tmp_path):
    """Fitted attributes are NumPy: a NumPy transform of a device fit (and the reverse)
    works, and a saved model loads without the device library."""
    X, T = data
    est = kpca.KernelPCA(3, kernel="rbf", gamma=0.2).fit(asarray(name, X))
    assert isinstance(est.eigenvalues_, np.ndarray) and isinstance(est.X_fit_, np.ndarray)
    ref = kpca.KernelPCA(3, kernel="rbf", gamma=0.2).fit(X)
    close(est.transform(T), ref.transform(T), np.float64)
    same_namespace(ref.transform(asarray(name, T)), name)
    kpca.save(est, tmp_path / "m.kpca")
    back = kpca.load(tmp_path / "m.kpca")
    np.testing.assert_array_equal(back.transform(T), est.transform(T))


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("landmarks", ["uniform", "kmeans", "leverage"])
def test_nystrom_equals_numpy(name, dtype, landmarks):
    """The same landmarks (same random draws), the kernel against them on the device."""
    rng = np.random.default_rng(3)
    X, T = rng.normal(size=(1200, 4)).astype(dtype), rng.normal(size=(25, 4)).astype(dtype)
    kw = dict(n_components=4, n_landmarks=80, gamma=0.3, landmarks=landmarks,
              random_state=0, block_size=250)  # several blocks
    ref = kpca.NystromKernelPCA(**kw).fit(X)
    est = kpca.NystromKernelPCA(**kw)
    Z = est.fit_transform(asarray(name, X))
    same_namespace(Z, name)
    # drawn on the host from the same values; k-means may round differently by a unit in
    # the last place where the host copy's memory alignment differs (seen on 16 cores)
    close(est.landmarks_, ref.landmarks_, dtype)
    close(est.eigenvalues_, ref.eigenvalues_, dtype)
    close(to_host(Z), ref.transform(X), dtype)
    Y = est.transform(asarray(name, T))
    same_namespace(Y, name)
    assert to_host(Y).dtype == dtype
    close(to_host(Y), ref.transform(T), dtype)
    D = est.denoise(asarray(name, T), n_components=2)  # an iterative pre-image: host
    same_namespace(D, name)
    close(to_host(D), ref.denoise(T, n_components=2), dtype, scale=np.abs(T).max() * 1e3)


@pytest.mark.parametrize("params", [
    dict(n_components=None, kernel="rbf", gamma=0.3),          # every component (dense)
    dict(n_components=0.8, kernel="rbf", gamma=0.3),           # a variance fraction
    dict(n_components=3, center=False, kernel="rbf", gamma=0.3),
    dict(n_components=3, eigen_solver="arpack", kernel="poly", degree=2),  # -> krylov
    dict(n_components=3, kernel="rbf", gamma="median", random_state=0),
    dict(n_components=8, kernel="linear"),                     # more than the rank
])
def test_options_equal_numpy(params, data):
    X = data[0]
    ref = kpca.KernelPCA(**params).fit(X)
    est = kpca.KernelPCA(**params).fit(xps.asarray(X))
    assert est.n_components_ == ref.n_components_
    assert est.gamma_ == ref.gamma_ or np.isnan(ref.gamma_)
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)
    close(to_host(est.transform(xps.asarray(X))), ref.transform(X), np.float64,
          scale=1e2 * np.abs(ref.transform(X)).max())


def test_integer_input_gives_float64(data):
    X = np.round(data[0] * 3).astype(np.int64)
    est = kpca.KernelPCA(2, kernel="rbf", gamma=0.05)
    Z = est.fit_transform(xps.asarray(X))
    assert Z.dtype == xps.float64
    close(to_host(Z), kpca.KernelPCA(2, kernel="rbf", gamma=0.05).fit_transform(X),
          np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
def test_anova_kernel_fits_device_arrays(name, data):
    """The anova kernel evaluates device arrays through its block(xp=...) (it was
    refused): the NumPy fit's eigenvalues and scores."""
    X, T = data
    kw = dict(n_components=3, kernel="anova", gamma=0.3,
              kernel_params={"beta": [0.5, 0.0, 1.0, 0.2, 0.3]})
    ref = kpca.KernelPCA(**kw).fit(X)
    est = kpca.KernelPCA(**kw).fit(asarray(name, X))
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)
    Z = est.transform(asarray(name, T))
    same_namespace(Z, name)
    Z, Zr = to_host(Z), ref.transform(T)
    close(Z * np.sign(np.sum(Z * Zr, axis=0)), Zr, np.float64)


# ------------------------------------------------------------------ clear errors
@pytest.mark.parametrize(("make", "match"), [
    (lambda: kpca.KernelPCA(2, kernel="precomputed"), "'precomputed' kernel"),
    (lambda: kpca.KernelPCA(2, kernel=lambda a, b: float(a @ b)), "kernel has no Array API"),
    (lambda: kpca.NystromKernelPCA(2, n_landmarks=20, kernel=lambda a, b: float(a @ b)),
     "kernel has no Array API"),
    (lambda: kpca.RandomFeatureKernelPCA(2), "pass NumPy arrays"),
])
def test_unsupported_combinations_name_the_alternative(make, match, data):
    with pytest.raises(ValueError, match=match):
        make().fit(xps.asarray(data[0]))


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("mode", ["exact", "bounded"])
def test_incremental_fit_and_partial_fit_take_device_arrays_alike(name, mode):
    """Issue 35 / 33: fit refused Array API arrays where partial_fit took them. Both take
    them now (computed on the arrays' device: tests/test_incremental_device.py), and give
    the NumPy models; transform answers in the arrays' namespace."""
    rng = np.random.default_rng(4)
    X, T = rng.normal(size=(700, 4)), rng.normal(size=(20, 4))
    kw = dict(n_components=3, gamma=0.25, mode=mode, random_state=0, batch_size=300,
              max_rows=None if mode == "exact" else 60)
    ref = kpca.IncrementalKernelPCA(**kw).fit(X)
    est = kpca.IncrementalKernelPCA(**kw).fit(asarray(name, X))
    assert est.mode_ == ref.mode_ == mode and est.n_samples_seen_ == 700
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)
    Y = est.transform(asarray(name, T))
    same_namespace(Y, name)
    close(to_host(Y), ref.transform(T), np.float64)
    ref_b, est_b = (kpca.IncrementalKernelPCA(**kw) for _ in range(2))
    for lo in range(0, 700, 250):
        ref_b.partial_fit(X[lo : lo + 250])
        est_b.partial_fit(asarray(name, X[lo : lo + 250]))
    close(est_b.eigenvalues_, ref_b.eigenvalues_, np.float64)
    close(to_host(est_b.transform(asarray(name, T))), ref_b.transform(T), np.float64)
    # a device-array fit goes on with NumPy batches (and the reverse)
    est.partial_fit(T)
    ref.partial_fit(asarray(name, T))
    close(est.eigenvalues_, ref.eigenvalues_, np.float64)


def test_string_kernel_refuses_device_arrays():
    with pytest.raises(ValueError, match="'spectrum' kernel has no Array API"):
        kpca.KernelPCA(1, kernel="spectrum").fit(xps.asarray(np.ones((4, 2))))


def test_bad_device_rows_are_reported(data):
    X, T = data
    est = kpca.KernelPCA(2, kernel="rbf", gamma=0.2).fit(xps.asarray(X))
    with pytest.raises(ValueError, match="X has 4 features, but KernelPCA is expecting 5"):
        est.transform(xps.asarray(T[:, :4]))
    bad = T.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        est.transform(xps.asarray(bad))
    with pytest.raises(ValueError, match="NaN"):
        kpca.KernelPCA(2).fit(xps.asarray(bad))
    with pytest.raises(ValueError, match="does not take array_api_strict arrays"):
        est.score_samples(xps.asarray(T))
    with pytest.raises(Exception, match="fit_inverse_transform"):
        est.inverse_transform(est.transform(xps.asarray(T)))


# ------------------------------------------------------------------ fused RBF product
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shift", [0.0, 50.0])  # far from the origin: the mean is removed
def test_fused_rbf_product_equals_dense_reference(dtype, shift):
    """The attention-based product (PyTorch) is k(X, Y) @ C, for X != Y too."""
    torch = pytest.importorskip("torch")
    from kpca.kernels._device import _fused_rbf_product

    rng = np.random.default_rng(1)
    X = rng.normal(size=(70, 6)) + shift
    Y = rng.normal(size=(130, 6)) + shift
    C = rng.normal(size=(130, 5))
    gamma = 0.3
    ref = make_kernel("rbf", gamma=gamma).block(X, Y) @ C  # float64, NumPy
    got = _fused_rbf_product(gamma, *(torch.asarray(A.astype(dtype)) for A in (X, Y, C)))
    assert got is not None and got.dtype == torch.asarray(C.astype(dtype)).dtype
    close(got.numpy(), ref, dtype, scale=np.abs(C).sum(axis=0).max())


def test_fused_rbf_product_serves_only_torch_and_handles_empty_blocks():
    torch = pytest.importorskip("torch")
    from kpca.kernels._device import _fused_rbf_product, device_block_product

    X = np.random.default_rng(2).normal(size=(20, 3))
    assert _fused_rbf_product(0.5, *(xps.asarray(X),) * 2, xps.asarray(X[:, :2])) is None
    k = make_kernel("rbf", gamma=0.5)
    Xt = torch.asarray(X)
    xp = device_namespace(Xt)
    no_columns = device_block_product(k, Xt, Xt, Xt[:, :0], xp, 7)
    no_rows = device_block_product(k, Xt[:0], Xt, Xt[:, :2], xp, 7)
    assert tuple(no_columns.shape) == (20, 0) and tuple(no_rows.shape) == (0, 2)


@pytest.mark.parametrize("name", NAMESPACES)
def test_matrix_free_row_means_are_the_kernel_row_means(name, data):
    X = data[0]
    k = make_kernel("rbf", gamma=0.2)
    Xd = asarray(name, X)
    op = DeviceKernelOperator(k, Xd, device_namespace(Xd), dtype=np.float64,
                              memory_limit=40_000)
    assert not op.stored
    np.testing.assert_allclose(op.row_means(), k.block(X, X).mean(axis=1), rtol=1e-12)


@pytest.mark.parametrize("shift", [0.0, 50.0])
def test_sink_attention_gives_the_rbf_product(shift):
    """The identity behind the fused product, without PyTorch: softmax attention over
    the sink-key inputs (computed densely here) is k(X, Y) @ C in its column ratio."""
    from kpca.kernels._device import sink_attention_inputs

    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(50, 4)) + shift, rng.normal(size=(80, 4)) + shift
    C = rng.normal(size=(80, 3))
    gamma = 0.4
    q, k, v = (np.asarray(A) for A in sink_attention_inputs(
        gamma, xps.asarray(X), xps.asarray(Y), xps.asarray(C), xps, 8, 8))
    assert q.shape == (50, 8) and k.shape == (81, 8) and v.shape == (81, 8)
    s = q @ k.T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    o = (p / p.sum(axis=1, keepdims=True)) @ v
    assert np.all(s[:, :80] <= s[:, 80:81] + 1e-9)  # the sink holds every row's max
    ref = make_kernel("rbf", gamma=gamma).block(X, Y) @ C
    close(o[:, :3] / o[:, 3:4], ref, np.float64, scale=np.abs(C).sum(axis=0).max())


# ------------------------------------------------------------------ start and passes
class _Passes(KpcaEvents):
    """The widths of kpca's 'pass' log events and the residuals of its 'residual' ones."""

    def __init__(self) -> None:
        super().__init__()
        self.widths: list[int] = []
        self.residuals: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "kpca_event", None)
        if event == "pass":
            self.widths.append(int(record.args[1]))
        elif event == "residual":
            self.residuals.append(float(record.kpca_residual))


def _centred_rbf(X, gamma):
    K = make_kernel("rbf", gamma=gamma).block(X, X)
    H = np.eye(len(X)) - 1.0 / len(X)
    return H @ K @ H


@pytest.mark.parametrize("name", NAMESPACES)
def test_matrix_free_device_fit_makes_the_host_passes(name):
    """Issue 35: the device's block Lanczos starts from the host's Nystrom block (its
    product made in the construction pass with the row sums) and stops by the host's
    rules, so a matrix-free fit makes the host's passes, of the host's widths (on main:
    a pass for the row means, one for a random start block, and more iterations); its
    eigenpairs match a dense SciPy reference to the solver's tolerance."""
    from scipy.linalg import eigh

    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 8)) * np.linspace(1.5, 0.5, 8)
    k, gamma = 6, 0.08
    kw = dict(n_components=k, kernel="rbf", gamma=gamma, eigen_solver="krylov",
              random_state=0, memory_limit="12MB")  # K (32 MB) fits neither budget
    with _Passes() as host:
        ref = kpca.KernelPCA(**kw).fit(X)
    with _Passes() as dev:
        est = kpca.KernelPCA(**kw).fit(asarray(name, X))
    assert len(host.widths) >= 3  # the construction pass and two solver passes at least
    assert len(dev.residuals) == len(host.residuals)  # the same Lanczos iterations
    assert dev.widths == host.widths
    # the solver's residual target, 1e-8 (float64), relative to the largest eigenvalue
    assert dev.residuals[-1] <= 1e-8 and dev.residuals[-2] > 1e-8
    # against the dense reference: eigenvalues within the target (their error is about
    # the residual squared over the gap), the subspace within Davis-Kahan's bound
    w, V = eigh(_centred_rbf(X, gamma))
    w, V = w[::-1], V[:, ::-1]
    lam = est.eigenvalues_
    assert np.max(np.abs(lam - w[:k])) <= 1e-8 * w[0]
    sin = np.linalg.norm(est.eigenvectors_ - V[:, :k] @ (V[:, :k].T @ est.eigenvectors_), 2)
    assert sin <= np.sqrt(k) * 1e-8 * w[0] / (w[k - 1] - w[k])
    close(lam, ref.eigenvalues_, np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_fit_makes_no_more_passes_than_the_host_fit(name):
    """Issue 32: the device fit runs the host's block Lanczos loop
    (``solvers._krylov.block_lanczos`` with the namespace's block algebra) from the
    host's Nystrom start, so on the issue's problem (RBF, d = 20, k = 10, float32,
    matrix-free) it makes no more passes over K than the host fit, and finds the same
    eigenvalues (within float32 products' round-off: the two compute K differently).
    100,000 rows, the issue's size, for PyTorch tensors on CUDA
    (KPCA_TEST_TORCH_DEVICE=cuda); 6,000 elsewhere, for CI time
    (benchmarks/bench_device_passes.py runs 100,000 rows on any device)."""
    n = 100_000 if name == "torch" and TORCH_DEVICE.startswith("cuda") else 6_000
    X = np.random.default_rng(0).normal(size=(n, 20)).astype(np.float32)
    # K (float32) fits neither the host's nor the device's budget: both matrix-free
    kw = dict(n_components=10, kernel="rbf", gamma=0.05, random_state=0,
              memory_limit="2GB" if n > 10_000 else "32MB")
    with _Passes() as host:
        ref = kpca.KernelPCA(**kw).fit(X)
    with _Passes() as dev:
        est = kpca.KernelPCA(**kw).fit(asarray(name, X))
    assert ref.eigen_solver_ == est.eigen_solver_ == "krylov"
    assert len(host.widths) >= 3  # the construction pass and two solver passes at least
    assert len(dev.widths) <= len(host.widths)
    assert sum(dev.widths) <= sum(host.widths)
    # both converged to float32's residual target (1e-5 of the largest eigenvalue)
    assert dev.residuals[-1] <= 1e-5 and host.residuals[-1] <= 1e-5
    lam = ref.eigenvalues_
    assert np.max(np.abs(est.eigenvalues_ - lam)) <= 1e-5 * lam[0]


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize(("kernel", "params", "center"), [
    ("rbf", dict(gamma=0.2), True), ("rbf", dict(gamma=0.2), False),
    ("linear", {}, True),  # rank 5 < b: completed by the same Gaussian columns
])
def test_device_nystrom_start_is_the_host_start(name, kernel, params, center, data):
    """The same landmarks (the same draws), the same directions: the same subspace."""
    from kpca.solvers import device_nystrom_start, nystrom_start

    X = data[0]
    k = make_kernel(kernel, **params)
    Xd = asarray(name, X)
    Q = to_host(device_nystrom_start(k, Xd, device_namespace(Xd), 8, center=center,
                                     n_landmarks=40, random_state=3))
    P = nystrom_start(k, X, 8, center=center, n_landmarks=40, random_state=3)
    assert Q.shape == (X.shape[0], 8)
    np.testing.assert_allclose(Q.T @ Q, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(Q @ Q.T, P @ P.T, atol=1e-9)


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_solver_starts_from_the_block_given(name, data):
    """A start block spanning the top eigenvectors, with its image: converged before
    any pass (on main the device solver ignored it and made passes from a random one)."""
    from kpca.solvers._device import device_eigsh

    X = data[0]
    k = 3
    Kc = _centred_rbf(X, 0.2)
    w, V = np.linalg.eigh(Kc)
    Q0 = V[:, ::-1][:, :16]
    Xd = asarray(name, X)
    xp = device_namespace(Xd)
    op = DeviceKernelOperator(make_kernel("rbf", gamma=0.2), Xd, xp, dtype=np.float64,
                              memory_limit=40_000)
    r = op.row_means()
    op.center_inplace(Centering(r, float(r.mean())))
    with config_context(krylov_min_basis=16):  # a basis of 6 x 16 columns < n / 2
        res = device_eigsh(op, k, start=(asarray(name, Q0), asarray(name, Kc @ Q0)))
    assert res.n_matvec == 0 and res.converged
    close(res.values, w[::-1][:k], np.float64)


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_solver_falls_back_to_dense_by_the_host_rule(name, data):
    """A block Lanczos solve allowed to fall back (eigen_solver='auto' where K fits)
    that has not converged within the modelled cost of a dense solve (here: almost
    nothing) runs the dense solver instead, on the device as on the host."""
    from kpca.operators import DenseOperator
    from kpca.solvers import eigsh_top

    X = data[0]
    Kc = _centred_rbf(X, 0.2)
    Xd = asarray(name, X)
    op = DeviceKernelOperator(make_kernel("rbf", gamma=0.2), Xd, device_namespace(Xd),
                              dtype=np.float64, memory_limit=10**9)
    r = op.row_means()
    op.center_inplace(Centering(r, float(r.mean())))
    with config_context(krylov_min_basis=16, krylov_depth=2):  # a basis < n / 2
        plain = eigsh_top(op, 3, solver="krylov", fallback=False)
        with config_context(auto_fallback_ratio=1e-9):
            host = eigsh_top(DenseOperator(Kc.copy()), 3, solver="krylov", fallback=True)
            dev = eigsh_top(op, 3, solver="krylov", fallback=True)
    assert plain.solver == "krylov" and plain.converged
    assert host.solver == dev.solver == "dense"
    # (raw results, before finalize: each solver's own order)
    i, j = np.argsort(dev.values), np.argsort(host.values)
    close(dev.values[i], host.values[j], np.float64)
    close(np.abs(dev.vectors[:, i].T @ host.vectors[:, j]), np.eye(3), np.float64, scale=1.0)


@pytest.mark.parametrize("name", NAMESPACES)
def test_device_auto_solver_is_the_host_rule_for_the_storage_precision(name):
    """``eigsh_top(solver='auto')`` on a float32 device operator applies the host's rule
    with float32's item size (the dense solve's and the passes' modelled costs depend on
    it): at n=500, k=64 that is ARPACK's request (block Lanczos on a device), where the
    float64 rule chooses the dense solver."""
    from kpca.solvers import choose_solver, eigsh_top

    n, k = 500, 64
    assert choose_solver(n, k, itemsize=8) == "dense"  # the case is one where it matters
    assert choose_solver(n, k, itemsize=4) == "arpack"
    X = np.random.default_rng(1).normal(size=(n, 5))
    Xd = asarray(name, X.astype(np.float32))
    op = DeviceKernelOperator(make_kernel("rbf", gamma=0.2), Xd, device_namespace(Xd),
                              dtype=np.float32, memory_limit=10**9)
    r = op.row_means()
    op.center_inplace(Centering(r, float(r.mean())))
    # (no fallback: the solver chosen is the one that runs)
    res = eigsh_top(op, k, solver="auto", fallback=False)
    assert res.solver == "krylov" and res.converged
    # the same pairs as the host's float64 dense solve, to float32 storage's accuracy
    Kc = _centred_rbf(X, 0.2)
    w = np.linalg.eigvalsh(Kc)[::-1][:k]
    np.testing.assert_allclose(np.sort(res.values)[::-1], w, rtol=0, atol=1e-4 * w[0])
