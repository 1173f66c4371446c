"""kpca.kernels.Anova's public weights and per-variable quadratic forms.

``Anova.weights(p)`` is ``beta`` (or the equal unit-norm weights) with its validation;
``Anova.term_traces(X, V)`` is ``a_j = trace(V^T K_j V)`` for each one-variable term
``K_j = exp(-gamma (x_j - y_j)^2)`` (docs/math.md, "ANOVA KPCA"): checked against the
explicit per-variable centred Gram matrices (entries from ``math.exp`` pair by pair, tiny
n), bit for bit against the row-block loop AnovaKernelPCA ran before the method moved to
the kernel (written out below with explicit NumPy loops), and on Array API devices
against the host (both sum in float64: 1e-12), on the namespaces of tests/_device.py
(``KPCA_TEST_TORCH_DEVICE=cuda`` and ``KPCA_TEST_CUPY=1`` on a GPU machine).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from _device import NAMESPACES, asarray

import kpca
from kpca.kernels import Anova


def _rows(n=12, p=4, seed=0):
    return np.random.default_rng(seed).normal(scale=1.5, size=(n, p))


def _explicit_centred_terms(X, V, gamma):
    """``trace(V^T H K_j H V)``, every ``K_j`` entry from ``math.exp``, ``H = I - 11^T/n``."""
    n, p = X.shape
    H = np.eye(n) - 1.0 / n
    out = []
    for j in range(p):
        K = np.array([[math.exp(-gamma * (X[i, j] - X[m, j]) ** 2) for m in range(n)]
                      for i in range(n)])
        out.append(np.trace(V.T @ H @ K @ H @ V))
    return np.array(out)


def _old_loop(X, V, gamma, block_bytes):
    """The per-variable row-block loop as AnovaKernelPCA._variable_terms ran it (float64
    rows and vectors, blocks of ``block_bytes // (8 n)`` rows; the same IEEE operations,
    written as expressions instead of in place)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n, p = X.shape
    rows = max(1, block_bytes // (8 * max(1, n)))
    a = np.zeros(p)
    for j in range(p):
        col = X[:, j]
        for s in range(0, n, rows):
            E = np.exp(-float(gamma) * (col[s : s + rows, None] - col[None, :]) ** 2)
            a[j] += float(np.sum(V[s : s + rows] * (E @ V)))
    return a


# ------------------------------------------------------------------------ weights
def test_weights_are_beta_or_equal_unit_weights():
    w = Anova(gamma=1.0).weights(5)
    np.testing.assert_array_equal(w, np.full(5, 1 / np.sqrt(5)))
    assert np.linalg.norm(w) == pytest.approx(1.0)
    beta = [0.5, 0, 2]
    got = Anova(gamma=1.0, beta=beta).weights(3)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, beta)


@pytest.mark.parametrize("beta", [[1.0, 2.0], [1.0, -1.0, 0.5], [1.0, np.nan, 0.5],
                                  [[1.0, 1.0, 1.0]] * 2])
def test_bad_weights_are_named(beta):
    with pytest.raises(ValueError, match="beta must be 3 non-negative finite weights"):
        Anova(gamma=1.0, beta=beta).weights(3)
    with pytest.raises(ValueError, match="beta must be 3 non-negative finite weights"):
        kpca.KernelPCA(2, kernel=Anova(gamma=1.0, beta=beta)).fit(_rows(10, 3))


def test_weights_leave_the_given_beta_unchanged():
    beta = np.array([0.2, 0.0, 0.7])
    before = beta.copy()
    Anova(gamma=1.0, beta=beta).weights(3)[:] = 9.0
    np.testing.assert_array_equal(beta, before)


# ------------------------------------------------------------------------ term traces
@pytest.mark.parametrize("block_bytes", [1, 8 * 12 * 5, 8 * 1024 * 1024])
def test_term_traces_are_the_explicit_centred_quadratic_forms(block_bytes):
    """One-row blocks, 5-row blocks (the last shorter), every row at once."""
    X = _rows()
    V = np.random.default_rng(1).normal(size=(12, 3))
    HV = V - V.mean(axis=0)
    with kpca.config_context(anova_block_bytes=block_bytes):
        a = Anova(gamma=0.8).term_traces(X, HV)
    assert a.dtype == np.float64 and a.shape == (4,)
    np.testing.assert_allclose(a, _explicit_centred_terms(X, V, 0.8), rtol=1e-12)


def test_term_traces_do_not_depend_on_the_weights():
    X, V = _rows(), np.random.default_rng(2).normal(size=(12, 2))
    a = Anova(gamma=0.5).term_traces(X, V)
    np.testing.assert_array_equal(Anova(gamma=0.5, beta=[0, 1, 2, 3]).term_traces(X, V), a)
    # and they are the quadratic forms of the kernel's own blocks: sum_j beta_j a_j is
    # trace(V^T K_beta V)
    beta = np.array([0.3, 0.0, 1.2, 0.4])
    K = Anova(gamma=0.5, beta=beta)(X)
    assert beta @ a == pytest.approx(np.trace(V.T @ K @ V), rel=1e-12)


@pytest.mark.parametrize("block_bytes", [8 * 200 * 7, 8 * 200 * 64, 8 * 1024 * 1024])
@pytest.mark.parametrize("kind", ["float64", "float32", "sparse"])
def test_host_term_traces_are_bit_identical_to_the_estimator_loop(block_bytes, kind):
    X = np.random.default_rng(3).normal(size=(200, 5))
    X = {"float64": X, "float32": X.astype(np.float32),
         "sparse": sp.csr_matrix(np.where(np.abs(X) > 1, X, 0.0))}[kind]
    V = np.random.default_rng(4).normal(size=(200, 3))
    V -= V.mean(axis=0)
    with kpca.config_context(anova_block_bytes=block_bytes):
        a = Anova(gamma=0.7).term_traces(X, V)
    np.testing.assert_array_equal(a, _old_loop(X, V, 0.7, block_bytes))


def test_budget_bytes_bounds_the_host_blocks():
    """A budget below the setting makes the blocks smaller: the loop of that size."""
    X = np.random.default_rng(5).normal(size=(150, 3))
    V = np.random.default_rng(6).normal(size=(150, 2))
    a = Anova(gamma=1.1).term_traces(X, V, budget_bytes=8 * 150 * 9)
    np.testing.assert_array_equal(a, _old_loop(X, V, 1.1, 8 * 150 * 9))
    with kpca.config_context(anova_block_bytes=8 * 150 * 4):  # the smaller of the two
        a = Anova(gamma=1.1).term_traces(X, V, budget_bytes=10**9)
    np.testing.assert_array_equal(a, _old_loop(X, V, 1.1, 8 * 150 * 4))


def test_term_traces_need_a_resolved_gamma():
    with pytest.raises(ValueError, match="data-dependent; call resolve"):
        Anova(gamma="median").term_traces(_rows(), np.ones((12, 1)))


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_device_term_traces_equal_the_host(name, dtype):
    """The array's namespace is found from it or given; small budgets tile the
    variables and rows (one-row tiles of one variable: budget 8 * 8 * 40)."""
    X = np.random.default_rng(7).normal(size=(40, 6)).astype(dtype)
    V = np.random.default_rng(8).normal(size=(40, 3))
    V -= V.mean(axis=0)
    host = Anova(gamma=0.6).term_traces(X, V)
    Xd = asarray(name, X)
    xp = kpca.kernels.array_namespace(Xd)
    for budget in (None, 8 * 8 * 40 * 40 * 2, 8 * 8 * 40):
        a = Anova(gamma=0.6).term_traces(Xd, V, budget_bytes=budget)
        assert isinstance(a, np.ndarray) and a.dtype == np.float64
        np.testing.assert_allclose(a, host, rtol=1e-12)
    np.testing.assert_allclose(Anova(gamma=0.6).term_traces(Xd, V, xp=xp), host, rtol=1e-12)
