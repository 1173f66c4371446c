"""The generalised Centering (weighted centre, row scaling) against explicit feature vectors.

With the linear kernel phi(x) = x, so every centred quantity can be computed in
input space and compared.
"""

from __future__ import annotations

import numpy as np
import pytest

from kpca import FittedSubspace
from kpca.kernels import Linear
from kpca.operators import (
    CenteredOperator,
    Centering,
    DenseOperator,
    TiledKernelOperator,
    center,
)


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(23, 4)) + 3.0
    T = rng.normal(size=(5, 4))
    g = rng.uniform(0.1, 1.0, size=23)
    g /= g.sum()
    s = rng.uniform(0.2, 2.0, size=23)
    K = X @ X.T
    m = K @ g
    c = Centering(m, float(g @ m), weights=g, scale=s)
    theta = g @ X
    Phi = (X - theta) * s[:, None]  # the rows the operator is the Gram matrix of
    return X, T, K, c, theta, Phi, s


def test_center_block_project_diag_match_explicit(setup):
    X, T, K, c, theta, Phi, s = setup
    whole = _space(X, np.eye(23), c).raw_projection(T)[0]  # A = I: K~_t S itself
    np.testing.assert_allclose(whole, (T - theta) @ Phi.T, atol=1e-10)
    A = np.random.default_rng(1).normal(size=(23, 3))
    Y, sq = _space(X, A, c).raw_projection(T)
    np.testing.assert_allclose(Y, (T - theta) @ Phi.T @ A, atol=1e-9)
    np.testing.assert_allclose(sq, np.sum((T - theta) ** 2, axis=1), atol=1e-10)


def _space(X, A, c):
    """The fitted subspace of dual coefficients ``A`` under centring ``c``."""
    k = A.shape[1]
    return FittedSubspace.from_dual(Linear(), X, A, c, basis_scores=np.zeros((len(X), k)),
                                    score_variance=np.ones(k))


def test_expansion_reproduces_the_feature_vector(setup):
    X, T, K, c, theta, Phi, s = setup
    A = np.random.default_rng(2).normal(size=(23, 2))
    Y = np.random.default_rng(3).normal(size=(4, 2))
    F = Phi.T @ A  # directions f_l as columns (d, k)
    C = _space(X, A, c).coefficients(Y, 0, len(X))
    np.testing.assert_allclose(C @ X, theta + Y @ F.T, atol=1e-9)


@pytest.mark.parametrize("backend", ["wrapper", "dense-inplace", "tiled-stored", "tiled-free",
                                     "tiled-free-pieces"])
def test_operators_apply_weights_and_scale(setup, backend):
    X, T, K, c, theta, Phi, s = setup
    ref = Phi @ Phi.T
    if backend == "wrapper":
        op, _ = center(DenseOperator(K.copy()), centering=c)
        assert isinstance(op, CenteredOperator)
    elif backend == "dense-inplace":
        op, _ = center(DenseOperator(K.copy(), owned=True), inplace=True, centering=c)
        assert isinstance(op, DenseOperator)
    else:
        limit = None if backend == "tiled-stored" else 0 + 10**6
        base = TiledKernelOperator(Linear(), X, dtype=np.float64, tile=6, memory_limit=limit,
                                   n_jobs=1, piece=(4, 5) if backend.endswith("pieces") else None)
        if backend.startswith("tiled-free"):
            base._keep = set()  # recompute every tile on every pass
            base._store.clear()
        op, _ = center(base, inplace=True, centering=c)
        assert op is base
        assert base.initial_block() is None
    V = np.random.default_rng(4).normal(size=(23, 3))
    np.testing.assert_allclose(op.matmat(V), ref @ V, atol=1e-9)
    np.testing.assert_allclose(op.diag(), np.diag(ref), atol=1e-9)
    np.testing.assert_allclose(op.to_dense(), ref, atol=1e-9)


def test_uniform_weights_equal_default(setup):
    X, T, K, *_ = setup
    n = K.shape[0]
    default = center(DenseOperator(K.copy()))[1]
    explicit = Centering(default.row_means, default.grand_mean, weights=np.full(n, 1.0 / n))
    A = np.random.default_rng(5).normal(size=(n, 2))
    for B in (A, np.eye(n)):  # projections, and K~_t itself
        np.testing.assert_allclose(_space(X, B, default).raw_projection(T)[0],
                                   _space(X, B, explicit).raw_projection(T)[0], atol=1e-10)


def test_scale_without_centring(setup):
    X, T, K, c, theta, Phi, s = setup
    c0 = Centering(np.zeros(len(s)), 0.0, enabled=False, scale=s)
    op, _ = center(DenseOperator(K.copy(), owned=True), inplace=True, centering=c0)
    np.testing.assert_allclose(op.to_dense(), (X * s[:, None]) @ (X * s[:, None]).T, atol=1e-9)
    np.testing.assert_allclose(_space(X, np.eye(len(s)), c0).raw_projection(T)[0],
                               T @ (X * s[:, None]).T, atol=1e-10)
