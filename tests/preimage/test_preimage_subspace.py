"""FittedSubspace's expansion coefficients and the pre-image geometry (HostSpace: neighbour
search, residuals) against full-matrix NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from _naive_preimage import NaiveKPCA, kernel_matrix
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from kpca import KernelPCA
from kpca.preimage import HostSpace


def fitted(name, center, k, seed=0, n=40, d=3, **kw):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    T = rng.standard_normal((7, d)) * 1.5
    est = KernelPCA(n_components=k, kernel=name, center=center, eigen_solver="dense", **kw)
    est.fit(X)
    ref = NaiveKPCA(X, k, name, center=center, **kw)
    return est, ref, X, T


@given(
    seed=st.integers(0, 10_000),
    center=st.booleans(),
    k=st.integers(1, 6),
    gamma=st.floats(0.05, 2.0),
)
def test_geometry_matches_full_matrices(seed, center, k, gamma):
    est, ref, X, T = fitted("rbf", center, k, seed=seed, gamma=gamma)
    space = est.subspace_
    Y = est.transform(T)
    G_ref = ref.gammas(ref.scores(T))  # independent eigh, so only sign-invariant quantities
    # columns blocks of Gamma, and their concatenation
    G = np.hstack([space.coefficients(Y, j0, j1) for j0, j1 in [(0, 13), (13, 40)]])
    assert_allclose(G, G_ref, atol=1e-8)
    if center:
        assert_allclose(G.sum(axis=1), 1.0, atol=1e-10)
    K = ref.K
    pn_ref = np.einsum("ai,ij,aj->a", G_ref, K, G_ref)  # ||sum_i gamma_i phi(x_i)||^2
    assert_allclose(space.proj_sqnorm(Y), pn_ref, atol=1e-8)
    d2_ref = pn_ref[:, None] - 2 * G_ref @ K + np.diag(K)[None, :]
    d2 = space.feature_sqdist(Y, 0, 40, space.basis_sqnorms())
    assert_allclose(d2, np.maximum(d2_ref, 0), atol=1e-8)


def test_linear_expansion_is_pca_reconstruction():
    """For the linear kernel sum_i gamma_i x_i is PCA's reconstruction (sklearn)."""
    from sklearn.decomposition import PCA

    est, _, X, T = fitted("linear", True, 2)
    space = est.subspace_
    Y = est.transform(T)
    G = space.coefficients(Y, 0, X.shape[0])
    pca = PCA(2).fit(X)
    assert_allclose(G @ X, pca.inverse_transform(pca.transform(T)), atol=1e-10)


@pytest.mark.parametrize("center", [True, False])
def test_nearest_blocked_equals_brute_force(center):
    est, ref, X, T = fitted("rbf", center, 5, gamma=0.4)
    space = est.subspace_
    Y = est.transform(T)
    D = space.feature_sqdist(Y, 0, X.shape[0], space.basis_sqnorms())
    space = HostSpace(space)
    for block_bytes in (1, 10**9):  # 64-column blocks (running top-k) and one block
        idx, d2 = space.nearest(Y, 6, block_bytes=block_bytes)
        assert_allclose(d2, np.sort(D, axis=1)[:, :6], atol=1e-12)
        assert_allclose(np.take_along_axis(D, idx, axis=1), d2, atol=1e-12)
    idx, _ = space.nearest(Y, 500)
    assert idx.shape == (7, X.shape[0])


@pytest.mark.parametrize("name, kw", [("rbf", {"gamma": 0.3}),
                                      ("poly", {"degree": 2, "gamma": 0.5}),
                                      ("linear", {})])
def test_residual_matches_full_matrices(name, kw):
    est, ref, X, T = fitted(name, True, 3, **kw)
    space = est.subspace_
    Y = est.transform(T)
    G = ref.gammas(ref.scores(T))
    Z = T + 0.1
    kzz = np.diag(kernel_matrix(name, Z, Z, **kw))
    kzx = kernel_matrix(name, Z, X, **kw)
    ref_res = kzz - 2 * np.einsum("ai,ai->a", G, kzx) + np.einsum("ai,ij,aj->a", G, ref.K, G)
    assert_allclose(HostSpace(space).residual(Z, Y, block_bytes=1), np.maximum(ref_res, 0),
                    atol=1e-8, rtol=1e-8)


def test_truncate_keeps_first_components():
    est, _, X, T = fitted("rbf", True, 5, gamma=0.5)
    s3 = est.subspace_.truncate(3)
    assert s3.k == 3 and s3.n == X.shape[0]
    assert_allclose(s3.coef, est.subspace_.coef[:, :3])
    assert_allclose(s3.basis_scores, est.subspace_.basis_scores[:, :3])


def test_learned_preimage_matches_full_matrices():
    """kpca.preimage.learned_preimage: ``K(Y, Y_fit) (K(Y_fit) + alpha I)^-1 X``, solved
    here densely, its residual that of the projection on the first q components (an
    independent eigh), and bad scores refused."""
    from kpca.preimage import learned_preimage

    rng = np.random.RandomState(5)
    X, T = rng.standard_normal((40, 3)), rng.standard_normal((6, 3))
    est = KernelPCA(3, kernel="rbf", gamma=0.3, eigen_solver="dense", alpha=0.1,
                    fit_inverse_transform=True).fit(X)
    Y, Y_fit = est.transform(T), est.X_transformed_fit_
    C = np.linalg.solve(kernel_matrix("rbf", Y_fit, Y_fit, gamma=0.3) + 0.1 * np.eye(40), X)
    Z_ref = kernel_matrix("rbf", Y, Y_fit, gamma=0.3) @ C
    args = (est.subspace_, est.kernel_, Y, Y_fit, est.dual_coef_)
    assert_allclose(learned_preimage(*args), Z_ref, atol=1e-8)
    Z, info = learned_preimage(*args, q=2, return_info=True)
    ref = NaiveKPCA(X, 2, "rbf", gamma=0.3)
    G = ref.gammas(ref.scores(T))
    res = (1.0 - 2 * np.einsum("ai,ai->a", G, kernel_matrix("rbf", Z, X, gamma=0.3))
           + np.einsum("ai,ij,aj->a", G, ref.K, G))
    assert info.method == "ridge" and info.converged.all()
    assert_allclose(info.residual, np.maximum(res, 0), atol=1e-8)
    with pytest.raises(ValueError, match=r"scores of shape \(n_samples, 3\)"):
        learned_preimage(est.subspace_, est.kernel_, Y[:, :2], Y_fit, est.dual_coef_)
    Y[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        learned_preimage(*args)
