"""fixed_point_preimage and mds_preimage against per-point NumPy loops and exact cases."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _naive_preimage import (
    NaiveKPCA,
    feature_sqdist,
    fixed_point_rbf_loop,
    kernel_matrix,
    mds_loop,
)
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.decomposition import PCA

from kpca import KernelPCA
from kpca.preimage import HostSpace, fixed_point_preimage, mds_from_distances, mds_preimage


def data(seed=0, n=60, d=3, m=9):
    rng = np.random.RandomState(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((m, d))


# ------------------------------------------------------------------ fixed point


@pytest.mark.parametrize("center", [True, False])
def test_fixed_point_vectorised_equals_per_point_loop(center):
    X, T = data()
    gamma = 0.4
    est = KernelPCA(6, kernel="rbf", gamma=gamma, center=center, eigen_solver="dense").fit(X)
    ref = NaiveKPCA(X, 6, "rbf", center=center, gamma=gamma)
    Y = est.transform(T)
    space = est.subspace_
    # tol=0: every point runs all 25 steps (unless it hits an exact fixed point)
    Z, info = fixed_point_preimage(space, Y, T, max_iter=25, tol=0.0, block_bytes=1)
    Z_ref = fixed_point_rbf_loop(X, ref.gammas(ref.scores(T)), T, gamma, 25)
    assert_allclose(Z, Z_ref, atol=1e-7)
    assert np.all(info.n_iter <= 25) and not info.restarted.any()


@pytest.mark.parametrize("block_bytes", [1, 4000, 15360, 10**9])
def test_fixed_point_blocks_chunks_and_restarts_equal_per_point_loop(block_bytes):
    """Many points per chunk, several column blocks of training rows, Gamma cached or
    recomputed (depending on block_bytes), and points restarted mid-batch: the
    active-set iteration still equals the per-point loop with the same rule."""
    rng = np.random.RandomState(11)
    X = rng.standard_normal((200, 3))
    T = rng.standard_normal((9, 3))
    gamma = 0.4
    est = KernelPCA(7, kernel="rbf", gamma=gamma, eigen_solver="dense").fit(X)
    ref = NaiveKPCA(X, 7, "rbf", gamma=gamma)
    Z0 = T.copy()
    Z0[[1, 4, 8]] = 1e4  # every k(z, x_i) underflows: these points restart
    Y = est.transform(T)
    G = ref.gammas(ref.scores(T))
    nearest = np.argmin(feature_sqdist(ref.K, G), axis=1)
    Z, info = fixed_point_preimage(est.subspace_, Y, Z0, max_iter=20, tol=0.0,
                                   block_bytes=block_bytes)
    Z_ref = fixed_point_rbf_loop(X, G, Z0, gamma, 20, restart_to=nearest)
    assert_allclose(Z, Z_ref, atol=1e-7)
    assert_array_equal(info.restarted, np.isin(np.arange(9), [1, 4, 8]))
    assert np.all(info.n_iter == 20) and not info.converged.any()


def test_fixed_point_converged_points_are_stationary():
    X, T = data(1)
    gamma = 0.5
    est = KernelPCA(5, kernel="rbf", gamma=gamma, eigen_solver="dense").fit(X)
    ref = NaiveKPCA(X, 5, "rbf", gamma=gamma)
    Z, info = fixed_point_preimage(est.subspace_, est.transform(T), T,
                                   max_iter=500, tol=1e-9)
    assert info.converged.all()
    # one more naive step moves no point: z solves z = sum g k x / sum g k
    Z1 = fixed_point_rbf_loop(X, ref.gammas(ref.scores(T)), Z, gamma, 1)
    assert_allclose(Z1, Z, atol=1e-6)
    # and the feature-space error is no larger than at the start (the noisy input)
    space = HostSpace(est.subspace_)
    Y = est.transform(T)
    assert np.all(space.residual(Z, Y) <= space.residual(T, Y) + 1e-12)


def test_fixed_point_flags_non_convergence():
    X, T = data(2)
    est = KernelPCA(5, kernel="rbf", gamma=0.5, eigen_solver="dense").fit(X)
    space = est.subspace_
    Y = est.transform(T)
    _, info = fixed_point_preimage(space, Y, T, max_iter=1, tol=1e-12)
    assert not info.converged.any() and np.all(info.n_iter == 1)
    _, info = fixed_point_preimage(space, Y, T, max_iter=300, tol=1e-6)
    assert info.converged.all() and np.all(info.n_iter > 1)


@pytest.mark.parametrize("center", [True, False])
def test_fixed_point_far_start_restarts_without_nan(center):
    X, T = data(3)
    est = KernelPCA(4, kernel="rbf", gamma=1.0, center=center, eigen_solver="dense").fit(X)
    space = est.subspace_
    Y = est.transform(T)
    far = np.full_like(T, 1e4)  # every k(z, x_i) underflows to 0: the denominator vanishes
    Z, info = fixed_point_preimage(space, Y, far)
    assert np.all(np.isfinite(Z))
    assert info.restarted.all()
    # restarted from the training point nearest in feature space, then iterated
    assert np.all(np.abs(Z).max(axis=1) < np.abs(X).max() + 1)


def test_fixed_point_far_inputs_uncentred_are_stuck_but_finite():
    """Uncentred, far inputs have y = 0: P phi(t) = 0 and no pre-image exists."""
    X, _ = data(4)
    est = KernelPCA(3, kernel="rbf", gamma=2.0, center=False, eigen_solver="dense").fit(X)
    T = np.full((3, 3), 1e3)
    Y = est.transform(T)
    assert_allclose(Y, 0)
    Z, info = fixed_point_preimage(est.subspace_, Y, T)
    assert np.all(np.isfinite(Z)) and info.restarted.all() and not info.converged.any()


@given(seed=st.integers(0, 10_000), k=st.integers(1, 3), center=st.booleans(),
       degree=st.sampled_from([1, 2, 3]))
def test_polynomial_fixed_point_stationary_or_flagged(seed, k, center, degree):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 1, (30, 3))
    T = rng.uniform(0, 1, (5, 3))
    kw = dict(gamma=0.5, degree=degree, coef0=1.0)
    est = KernelPCA(k, kernel="poly", center=center, eigen_solver="dense", **kw).fit(X)
    ref = NaiveKPCA(X, k, "poly", center=center, **kw)
    Z, info = fixed_point_preimage(est.subspace_, est.transform(T), T,
                                   max_iter=200, tol=1e-8)
    assert np.all(np.isfinite(Z))
    G = ref.gammas(ref.scores(T))
    for a in np.flatnonzero(info.converged):  # the stationarity equation, per point
        z = Z[a]
        w = G[a] * (kw["gamma"] * X @ z + 1.0) ** (degree - 1)
        z1 = w @ X / (kw["gamma"] * z @ z + 1.0) ** (degree - 1)
        assert_allclose(z1, z, atol=1e-5 * (1 + np.abs(z).max()))


# ------------------------------------------------------------------ exact cases


@pytest.mark.parametrize("center", [True, False])
@pytest.mark.parametrize("method", ["fixed_point", "mds"])
@pytest.mark.parametrize("kernel, kw", [("linear", {}), ("poly", {"degree": 1, "gamma": 0.7})])
def test_linear_all_components_is_exact(center, method, kernel, kw):
    X, T = data(5, n=40, d=4)
    T = T * 3 + 5  # away from the data: no restriction to their region
    est = KernelPCA(kernel=kernel, center=center, eigen_solver="dense", **kw).fit(X)
    # all components: 4, plus the constant feature sqrt(coef0) of uncentred poly
    assert est.eigenvalues_.size == 4 + (kernel == "poly" and not center)
    space = est.subspace_
    Y = est.transform(T)
    if method == "fixed_point":
        Z, info = fixed_point_preimage(space, Y, np.zeros_like(T))
        assert info.converged.all()
    else:
        Z, _ = mds_preimage(space, Y, n_neighbors=8)
    assert_allclose(Z, T, atol=1e-9)


@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_linear_few_components_is_pca_reconstruction(method):
    X, T = data(6, n=50, d=4)
    est = KernelPCA(2, kernel="linear", eigen_solver="dense").fit(X)
    space = est.subspace_
    Y = est.transform(T)
    Z0 = np.zeros_like(T)
    Z = (fixed_point_preimage(space, Y, Z0)[0] if method == "fixed_point"
         else mds_preimage(space, Y, n_neighbors=10)[0])
    pca = PCA(2).fit(X)
    assert_allclose(Z, pca.inverse_transform(pca.transform(T)), atol=1e-9)


@pytest.mark.parametrize("kernel, kw", [("rbf", {"gamma": 0.3}),
                                        ("poly", {"degree": 2, "gamma": 0.5}),
                                        ("poly", {"degree": 3, "gamma": 0.5})])
@pytest.mark.parametrize("method", ["fixed_point", "mds"])
def test_training_points_with_all_components_are_exact(kernel, kw, method):
    """With every component P phi(x_j) = phi(x_j): the pre-image is x_j itself."""
    rng = np.random.RandomState(7)
    X = rng.uniform(0, 1, (25, 3))
    est = KernelPCA(kernel=kernel, eigen_solver="dense", **kw).fit(X)
    space = est.subspace_
    Y = est.transform(X[:6])
    if method == "fixed_point":
        Z, info = fixed_point_preimage(space, Y, X[:6] + 0.01, max_iter=500, tol=1e-10)
    else:
        Z, info = mds_preimage(space, Y, n_neighbors=8)
    assert_allclose(Z, X[:6], atol=1e-4)


# ------------------------------------------------------------------ MDS


@given(seed=st.integers(0, 10_000), d=st.integers(1, 5), extra=st.integers(0, 4))
def test_mds_from_distances_recovers_a_point(seed, d, extra):
    rng = np.random.RandomState(seed)
    q = d + 1 + extra
    N = rng.standard_normal((3, q, d))
    z = rng.standard_normal((3, d)) * 2
    d2 = ((N - z[:, None, :]) ** 2).sum(-1)
    assert_allclose(mds_from_distances(N, d2), z, atol=1e-6)


def test_mds_degenerate_neighbourhoods_stay_finite():
    N = np.ones((2, 4, 3))  # all neighbours identical: zero singular values
    Z = mds_from_distances(N, np.full((2, 4), 5.0))
    assert_allclose(Z, 1.0)
    assert_allclose(mds_from_distances(np.zeros((1, 1, 2)), np.ones((1, 1))), 0.0)


@pytest.mark.parametrize("center", [True, False])
def test_mds_vectorised_equals_per_point_loop(center):
    X, T = data(8, n=80, d=4)
    gamma = 0.3
    est = KernelPCA(8, kernel="rbf", gamma=gamma, center=center, eigen_solver="dense").fit(X)
    ref = NaiveKPCA(X, 8, "rbf", center=center, gamma=gamma)
    G = ref.gammas(ref.scores(T))
    K = ref.K
    fd2 = np.einsum("ai,ij,aj->a", G, K, G)[:, None] - 2 * G @ K + np.diag(K)[None, :]
    nbrs = np.argsort(fd2, axis=1)[:, :10]
    d2 = -np.log(np.clip(1 - fd2 / 2, 1e-300, 1)) / gamma
    Z_ref = mds_loop(X, d2, nbrs)
    Z, info = mds_preimage(est.subspace_, est.transform(T), n_neighbors=10,
                           block_bytes=1)
    assert_allclose(Z, Z_ref, atol=1e-8)
    assert info.converged.all() and np.all(info.n_iter == 0)


@pytest.mark.parametrize("degree", [2, 3])
@pytest.mark.parametrize("center", [True, False])
def test_mds_polynomial_equals_per_point_loop(center, degree):
    """Polynomial distance map from full matrices: k(z, x_j) ~ <P phi(t), phi(x_j)> and
    k(z, z) ~ ||P phi(t)||^2, inverted through the p-th root (all positive here)."""
    rng = np.random.RandomState(12)
    X, T = rng.uniform(0, 1, (90, 3)), rng.uniform(0, 1, (6, 3))
    g, c = 0.5, 1.0
    kw = dict(gamma=g, degree=degree, coef0=c)
    est = KernelPCA(6, kernel="poly", center=center, eigen_solver="dense", **kw).fit(X)
    ref = NaiveKPCA(X, 6, "poly", center=center, **kw)
    G = ref.gammas(ref.scores(T))
    inner = G @ ref.K  # <P phi(t), phi(x_j)>
    pn = np.einsum("ai,ai->a", inner, G)  # ||P phi(t)||^2
    assert np.all(inner > 0) and np.all(pn > 0)
    zx = (inner ** (1 / degree) - c) / g
    zz = (pn ** (1 / degree) - c) / g
    d2 = np.maximum(zz[:, None] + (X**2).sum(1)[None, :] - 2 * zx, 0)
    nbrs = np.argsort(feature_sqdist(ref.K, G), axis=1)[:, :12]
    Z_ref = mds_loop(X, d2, nbrs)
    Z, _ = mds_preimage(est.subspace_, est.transform(T), n_neighbors=12,
                        block_bytes=1)
    assert_allclose(Z, Z_ref, atol=1e-7)


def test_sparse_training_data_gives_the_dense_result():
    X, T = data(9, n=50, d=5)
    X[X < 0.3] = 0
    dense = KernelPCA(6, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    sparse = KernelPCA(6, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(sp.csr_matrix(X))
    for method in ("fixed_point", "mds"):
        assert_allclose(sparse.denoise(sp.csr_matrix(T), method=method),
                        dense.denoise(T, method=method), atol=1e-8)


def test_unsupported_kernel_is_named():
    X, T = data()
    est = KernelPCA(3, kernel="laplacian", gamma=0.5).fit(X)
    space = est.subspace_
    with pytest.raises(ValueError, match=r"supports the kernels \['rbf', 'poly', 'linear'\]"):
        mds_preimage(space, est.transform(T))
    with pytest.raises(ValueError, match=r"method='fixed_point' supports the kernels"):
        fixed_point_preimage(space, est.transform(T), T)


def test_kernel_matrix_helper_is_the_library_kernel():
    """Guard for the reference: the naive kernels agree with kpca's."""
    X, T = data()
    from kpca.kernels import RBF, Polynomial

    assert_allclose(RBF(gamma=0.3).block(T, X), kernel_matrix("rbf", T, X, gamma=0.3))
    assert_allclose(Polynomial(gamma=0.5, degree=2, coef0=1.0).block(T, X),
                    kernel_matrix("poly", T, X, gamma=0.5, degree=2))
