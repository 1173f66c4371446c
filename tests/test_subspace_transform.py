"""``transform`` evaluated in cache-sized pieces of kernel rows (FittedSubspace), against
the dense formula ``K~_t V / sqrt(mu)`` and against the unpieced path."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

import kpca
from kpca.robust import SphericalKernelPCA
from kpca.subspace import _engines

GAMMA = 0.3


@pytest.fixture
def tiny_pieces():
    # 8 x 7 pieces on 60 expansion points and 37 new rows: ragged in both directions
    with kpca.config_context(fused_rows=8, fused_cols=7):
        yield


def _data(dtype):
    rng = np.random.default_rng(0)
    return rng.normal(size=(60, 4)).astype(dtype), rng.normal(size=(37, 4)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_transform_in_pieces_equals_the_centred_kernel_formula(dtype, precision, tiny_pieces):
    X, T = _data(dtype)
    model = kpca.KernelPCA(5, kernel="rbf", gamma=GAMMA, precision=precision).fit(X)
    K = rbf_kernel(X.astype(np.float64), gamma=GAMMA)
    Kt = rbf_kernel(T.astype(np.float64), X.astype(np.float64), gamma=GAMMA)
    Kt_c = Kt - Kt.mean(axis=1, keepdims=True) - K.mean(axis=0)[None, :] + K.mean()
    ref = Kt_c @ (model.eigenvectors_ / np.sqrt(model.eigenvalues_))
    Z = model.transform(T)
    assert Z.dtype == dtype and Z.shape == (37, 5)
    tol = 1e-10 if (dtype, precision) == (np.float64, "float64") else 2e-5
    np.testing.assert_allclose(Z, ref, atol=tol * np.abs(ref).max())


@pytest.mark.parametrize("estimator", [
    lambda: kpca.KernelPCA(4, kernel="rbf", gamma=GAMMA),
    lambda: SphericalKernelPCA(4, kernel="rbf", gamma=GAMMA),  # normalised scores
    lambda: kpca.NystromKernelPCA(4, kernel="rbf", gamma=GAMMA, n_landmarks=20,
                                  random_state=0),
])
def test_pieces_and_whole_rows_give_the_same_scores(estimator, tiny_pieces, monkeypatch):
    X, T = _data(np.float64)
    model = estimator().fit(X)
    calls = []
    fused = _engines.transform_fused
    monkeypatch.setattr(_engines, "transform_fused",
                        lambda space, *a: calls.append(1) or fused(space, *a))
    pieces = model.transform(T)
    assert calls, "the pieced path was not taken"
    monkeypatch.setattr(_engines, "fusable", lambda space, X: False)
    whole = model.transform(T)
    np.testing.assert_allclose(pieces, whole, rtol=1e-10, atol=1e-12)


def _subspace(normalize, rng):
    """A FittedSubspace built from arrays (no fit): RBF kernel, 50 expansion points,
    3 orthonormal directions (``C^T K_ZZ C = I``: random combinations of K_ZZ's top
    eigenvectors), centre weights ``g`` summing to 1."""
    from kpca.kernels import RBF
    from kpca.subspace import FittedSubspace

    Z = rng.normal(size=(50, 4))
    Kzz = rbf_kernel(Z, gamma=GAMMA)
    s, U = np.linalg.eigh(Kzz)
    Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    C = (U[:, -3:] / np.sqrt(s[-3:])) @ Q
    g = rng.random(50)
    g /= g.sum()
    return FittedSubspace(RBF(gamma=GAMMA), Z, C, g, Kzz @ g, float(g @ Kzz @ g),
                          np.ones(3), normalize=normalize, norm_floor=1e-3)


@pytest.mark.parametrize("normalize", [False, True])
def test_every_engine_evaluates_the_closed_forms_of_the_value(normalize, tiny_pieces):
    """A FittedSubspace made from arrays is evaluated by the same closed forms
    ``y = k(t, Z) C - C^T K_ZZ g`` and ``||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g +
    g^T K_ZZ g`` (sklearn's kernel) by each engine: the fused pieces, row blocks of
    sparse rows, the float64 raw projection, and a device (torch CPU tensors)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    space = _subspace(normalize, rng)
    T = rng.normal(size=(37, 4))
    Kt = rbf_kernel(T, space.basis, gamma=GAMMA)
    raw = Kt @ space.coef - space.coef.T @ space.center_products
    sq = 1.0 - 2.0 * Kt @ space.center + space.center_sqnorm
    ref = raw / np.maximum(np.sqrt(sq), 1e-3)[:, None] if normalize else raw
    np.testing.assert_allclose(space.transform(T), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(space.transform(sp.csr_matrix(T), block_bytes=800), ref,
                               rtol=1e-10, atol=1e-12)
    Y, sqn = space.raw_projection(T, block_bytes=800)
    np.testing.assert_allclose(Y, raw, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sqn, sq, rtol=1e-10, atol=1e-12)
    torch = pytest.importorskip("torch")
    from kpca._array_api import device_namespace

    Tt = torch.from_numpy(T)
    Yd = space.transform_device(Tt, device_namespace(Tt), dtype=np.float64, block_bytes=800)
    np.testing.assert_allclose(Yd.numpy(), ref, rtol=1e-10, atol=1e-12)
    Yr = space.transform_device(Tt, device_namespace(Tt), dtype=np.float64, raw=True)
    np.testing.assert_allclose(Yr.numpy(), raw, rtol=1e-10, atol=1e-12)


def test_the_value_algebra():
    """``truncate`` keeps the first directions (and their scores of the expansion
    points), ``offset`` is ``C^T K_ZZ g``, ``distances`` gives the score and orthogonal
    distances of raw scores, and the expansion of a projection sums ``g + C y``."""
    rng = np.random.default_rng(2)
    space = _subspace(False, rng)
    Kzz = rbf_kernel(space.basis, gamma=GAMMA)
    np.testing.assert_allclose(space.coef.T @ Kzz @ space.coef, np.eye(3), atol=1e-8)
    np.testing.assert_allclose(space.offset, space.coef.T @ Kzz @ space.center, rtol=1e-12)
    two = space.truncate(2)
    assert (two.n, two.k) == (50, 2) and two.basis is space.basis
    np.testing.assert_array_equal(two.coef, space.coef[:, :2])
    Y = rng.normal(size=(6, 3))
    G = space.coefficients(Y, 0, 50)
    np.testing.assert_allclose(G, space.center + Y @ space.coef.T, rtol=1e-12)
    np.testing.assert_allclose(space.proj_sqnorm(Y), np.einsum("ai,ij,aj->a", G, Kzz, G),
                               rtol=1e-9)
    sqnorm = np.sum(Y**2, axis=1) + np.array([0.0, 1.0, 4.0, 0.0, 9.0, 0.25])
    sd, od = space.distances(Y, sqnorm)
    np.testing.assert_allclose(sd, np.sqrt(np.sum(Y**2, axis=1)))  # lambda = 1
    np.testing.assert_allclose(od, [0.0, 1.0, 2.0, 0.0, 3.0, 0.5], atol=1e-12)
    # at or below the round-off level od_noise an orthogonal distance is 0
    _, od = dataclasses.replace(space, od_noise=0.3).distances(Y, sqnorm)
    np.testing.assert_allclose(od, [0.0, 1.0, 2.0, 0.0, 3.0, 0.0], atol=1e-12)
