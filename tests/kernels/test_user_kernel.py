"""A kernel of one's own, written against the documented base class: its ``block`` uses
the namespace it is given, and the estimators fit it on NumPy arrays and on PyTorch
tensors alike (issue 32 item 5): CPU tensors, or a GPU's with
``KPCA_TEST_TORCH_DEVICE=cuda``. The fits are compared with a dense reference: the
kernel from the differences x - y, centred and diagonalised by ``numpy.linalg.eigh``."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import kpca
from kpca import KernelPCA
from kpca.kernels import Kernel, array_namespace

torch = pytest.importorskip("torch")
pytest.importorskip("array_api_compat")
DEVICE = os.environ.get("KPCA_TEST_TORCH_DEVICE", "cpu")


def _t(A):
    return torch.asarray(A, device=DEVICE)


class RationalQuadratic(Kernel):
    """``k(x, y) = (1 + |x - y|^2 / (2 alpha l^2)) ** -alpha``, with the namespace's
    functions only; no ``diag`` of its own (the base class's row-by-row default)."""

    name = "rational_quadratic"

    def __init__(self, alpha: float = 1.5, length_scale: float = 2.0):
        self.alpha = alpha
        self.length_scale = length_scale

    def block(self, X, Y=None, xp=None):
        xp = array_namespace(X) if xp is None else xp
        Y = X if Y is None else Y
        sq = (xp.sum(X * X, axis=1)[:, None] + xp.sum(Y * Y, axis=1)[None, :]
              - 2.0 * (X @ xp.matrix_transpose(Y)))
        sq = xp.clip(sq, min=0.0)
        return (1.0 + sq / (2.0 * self.alpha * self.length_scale**2)) ** -self.alpha


def _pair(x, y, alpha=1.5, length_scale=2.0):
    return (1.0 + sum((a - b) ** 2 for a, b in zip(x, y, strict=True))
            / (2.0 * alpha * length_scale**2)) ** -alpha


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(size=(50, 3)), rng.normal(3.0, 0.5, size=(40, 3))])
    return X, rng.normal(1.0, 1.5, size=(12, 3))


def _reference(X, T):
    """Eigenvalues and scores of the centred kernel matrix (docs/math.md, "Centring in
    feature space"), the kernel from the differences x - y (not the block's expansion):
    training scores V sqrt(lambda), test scores K~_t V / sqrt(lambda)."""
    def gram(A, B):
        sq = ((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2)
        return (1.0 + sq / (2.0 * 1.5 * 2.0**2)) ** -1.5

    K, Kt = gram(X, X), gram(T, X)
    n = len(X)
    H = np.eye(n) - 1.0 / n
    w, V = np.linalg.eigh(H @ K @ H)
    w, V = w[::-1][:4], V[:, ::-1][:, :4]
    Ktc = Kt - Kt.mean(axis=1, keepdims=True) - K.mean(axis=0)[None, :] + K.mean()
    return w, V * np.sqrt(w), Ktc @ V / np.sqrt(w)


def _same_up_to_sign(A, B, atol):
    signs = np.sign(np.sum(A * B, axis=0))
    np.testing.assert_allclose(A * signs, B, rtol=0, atol=atol)


def test_block_and_diag_on_numpy_and_torch_equal_the_pairwise_kernel(data):
    X, T = data
    k = RationalQuadratic()
    ref = np.array([[_pair(t, x) for x in X] for t in T])
    np.testing.assert_allclose(k.block(T, X), ref, rtol=1e-12)
    got = k.block(_t(T), _t(X))  # xp=None: found from the arrays
    assert isinstance(got, torch.Tensor)
    np.testing.assert_allclose(got.cpu().numpy(), ref, rtol=1e-12)
    xp = array_namespace(_t(T))
    np.testing.assert_allclose(k.diag(_t(T), xp=xp).cpu().numpy(), np.ones(len(T)),
                               rtol=1e-12)
    np.testing.assert_allclose(k.diag(T), np.ones(len(T)), rtol=1e-12)
    assert k.supports_array_api()


# a stored kernel matrix (90 rows); matrix-free block Lanczos, tiles of block() recomputed
# at every product (600 rows: K is 2.9 MB, more than the budget of 4 MB leaves it beside
# the workspace of two threads; with 16 threads the tiles are smaller and K would be kept,
# so the thread count is fixed)
@pytest.mark.parametrize(("n", "kw"), [(90, {}),
                                       (600, dict(eigen_solver="krylov", memory_limit="4MB",
                                                  tol=1e-12, n_jobs=2))])
def test_user_kernel_fits_torch_tensors_as_numpy_arrays_and_the_reference(n, kw, caplog):
    rng = np.random.default_rng(n)
    X = np.concatenate([rng.normal(size=(n - n // 3, 3)), rng.normal(3.0, 0.5, (n // 3, 3))])
    T = rng.normal(1.0, 1.5, size=(12, 3))
    w, scores, test_scores = _reference(X, T)
    host = KernelPCA(4, kernel=RationalQuadratic(), **kw)
    dev = KernelPCA(4, kernel=RationalQuadratic(), **kw)
    with caplog.at_level(logging.INFO, logger="kpca"):
        Z_host = host.fit_transform(X)
        Z_dev = dev.fit_transform(_t(X))
    passes = [r.getMessage() for r in caplog.records
              if getattr(r, "kpca_event", None) == "pass"]
    assert isinstance(Z_dev, torch.Tensor) and Z_dev.dtype == torch.float64
    # the fourth eigenvalue's gap sets the accuracy of the subspace; 1e-8 of the largest
    # eigenvalue (and its square root for scores) is far above float64 round-off
    atol = 1e-7 * np.sqrt(w[0])
    for model, Z in ((host, Z_host), (dev, Z_dev.cpu().numpy())):
        np.testing.assert_allclose(model.eigenvalues_, w, rtol=0, atol=1e-8 * w[0])
        _same_up_to_sign(Z, scores, atol)
    Zt = dev.transform(_t(T))
    assert isinstance(Zt, torch.Tensor)
    _same_up_to_sign(Zt.cpu().numpy(), test_scores, atol)
    _same_up_to_sign(host.transform(T), test_scores, atol)
    if kw:  # both matrix-free: no pass over a wholly kept matrix
        assert dev.eigen_solver_ == host.eigen_solver_ == "krylov"
        assert any(m.startswith("device kernel pass") for m in passes)
        assert any(m.startswith("kernel pass") for m in passes)
        assert all("stored" not in m and "100% kept" not in m for m in passes), passes


def test_a_numpy_only_kernel_is_refused_on_torch_naming_the_way_out(data):
    """A kernel written the older way, ``_block`` for NumPy only, still fits NumPy
    arrays; on tensors it is refused before any work, with what to do."""

    class Legacy(Kernel):
        def _block(self, X, Y, symmetric):
            return X @ Y.T

    X, _ = data
    assert not Legacy.supports_array_api()
    Z = KernelPCA(2, kernel=Legacy()).fit_transform(X)
    ref = KernelPCA(2, kernel="linear").fit_transform(X)
    _same_up_to_sign(Z, ref, atol=1e-8 * np.abs(ref).max())
    with pytest.raises(ValueError, match=r"no Array API \(device\) implementation.*block\(\)"):
        KernelPCA(2, kernel=Legacy()).fit(_t(X))
    with pytest.raises(ValueError, match="no Array API"):
        Legacy().block(_t(X), xp=array_namespace(_t(X)))


def test_user_kernel_clones_and_grid_searches_as_the_built_in_ones(data):
    """The documented base class keeps the scikit-learn parameter protocol."""
    from sklearn.base import clone

    k = RationalQuadratic(alpha=0.5)
    model = KernelPCA(2, kernel=k)
    assert clone(model).get_params()["kernel__alpha"] == 0.5
    model.set_params(kernel__length_scale=3.0)
    assert model.kernel.length_scale == 3.0
    assert kpca.kernels.make_kernel(k) is k


def test_user_kernel_fits_nystrom_on_torch_as_on_numpy():
    """The Nystrom estimator's device path (features of the landmarks, accumulated on
    the device) evaluates the same kernel through block(): the same landmarks (same
    seed) give the host fit's eigenvalues and scores."""
    from kpca import NystromKernelPCA

    X = np.random.default_rng(3).normal(size=(300, 3))
    kw = dict(n_components=3, kernel=RationalQuadratic(), n_landmarks=40, random_state=0)
    host = NystromKernelPCA(**kw).fit(X)
    dev = NystromKernelPCA(**kw).fit(_t(X))
    np.testing.assert_allclose(dev.eigenvalues_, host.eigenvalues_,
                               rtol=0, atol=1e-9 * host.eigenvalues_[0])
    Z_host = host.transform(X[:20])
    Z_dev = dev.transform(_t(X[:20]))
    assert isinstance(Z_dev, torch.Tensor)
    _same_up_to_sign(Z_dev.cpu().numpy(), Z_host, atol=1e-8 * np.abs(Z_host).max())
