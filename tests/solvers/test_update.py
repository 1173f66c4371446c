"""extend_eigenpairs: top eigenpairs of a grown centred kernel matrix from the old ones.

Reference: ``numpy.linalg.eigh`` of the dense centred matrix ``H K H`` of all rows.
The start is built by hand: ``V`` = top eigenvectors of the old rows' centred
matrix, ``KV`` and ``KE`` = the new centred matrix times ``[V; 0]`` and ``[0; I_b]`` (the
latter as a :class:`kpca.operators.NewColumns`).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import laplacian_kernel, polynomial_kernel, rbf_kernel

from kpca.operators import CenteredOperator, GrowingGram, KernelOperator, NewColumns
from kpca.solvers import UpdatedPairs, extend_eigenpairs


class Counting(KernelOperator):
    """A dense symmetric matrix that counts its products (passes)."""

    def __init__(self, A):
        self.A = np.asarray(A, dtype=np.float64)
        self.shape = self.A.shape
        self.dtype = self.A.dtype
        self.calls = 0

    def matmat(self, V):
        self.calls += 1
        return self.A @ V

    def diag(self):
        return np.diag(self.A).copy()


def _H(n):
    return np.eye(n) - np.ones((n, n)) / n


def _data(n, d=4, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) * np.array([2.0, 1.0, 0.7, 0.4])[:d]


KERNELS = {
    "rbf": lambda X: rbf_kernel(X, gamma=0.2),
    "laplacian": lambda X: laplacian_kernel(X, gamma=0.2),
    "poly": lambda X: polynomial_kernel(X, degree=3, gamma=0.2, coef0=1.0),
}


def _problem(kernel, n, b, q, seed=0):
    """(op, V, KV, KE, reference eigenvalues and eigenvectors, dense centred matrix)."""
    X = _data(n + b, seed=seed)
    K = KERNELS[kernel](X)
    K = 0.5 * (K + K.T)
    N = n + b
    Kold = _H(n) @ K[:n, :n] @ _H(n)
    w_old, U_old = np.linalg.eigh(Kold)
    V = U_old[:, ::-1][:, :q].copy()
    Kc = _H(N) @ K @ _H(N)
    Kc = 0.5 * (Kc + Kc.T)
    KV, KE = _start_products(Kc, V)
    w, U = np.linalg.eigh(Kc)
    return Counting(Kc), V, KV, KE, w[::-1], U[:, ::-1], Kc


def _start_products(Kc, V):
    """``Kc @ [V; 0]``, and ``Kc @ [0; I_b]`` as the solver takes it (the new rows of
    the centred matrix itself: its row sums are 0)."""
    n = V.shape[0]
    return Kc[:, :n] @ V, NewColumns(Kc[n:, :].copy(), np.zeros(Kc.shape[0]))


def _check(res: UpdatedPairs, op, Kc, w_ref, U_ref, k, m, tol):
    N = Kc.shape[0]
    Y, KY, theta = res.vectors, res.products, res.values
    assert Y.shape[0] == N and Y.shape[1] == theta.shape[0] == KY.shape[1] <= m
    assert theta.shape[0] >= k
    # descending Ritz values, never above the true eigenvalues (interlacing)
    assert np.all(np.diff(theta) <= 1e-12 * theta[0])
    assert np.all(theta <= w_ref[: theta.shape[0]] + 1e-10 * w_ref[0])
    # the wanted values agree with the dense solver
    assert np.max(np.abs(theta[:k] - w_ref[:k])) / w_ref[0] <= 1e-8
    # orthonormal, orthogonal to the constant vector, products exact
    np.testing.assert_allclose(Y.T @ Y, np.eye(Y.shape[1]), rtol=0, atol=1e-10)
    np.testing.assert_allclose(Y.sum(axis=0) / np.sqrt(N), 0, atol=1e-10)
    np.testing.assert_allclose(KY, Kc @ Y, rtol=0, atol=1e-10 * w_ref[0])
    # the reported residuals are the true ones, and the wanted ones meet tol
    true_res = np.linalg.norm(Kc @ Y - Y * theta[None, :], axis=0) / abs(theta[0])
    np.testing.assert_allclose(res.residuals, true_res, rtol=1e-6, atol=1e-14)
    assert res.converged and np.all(res.residuals[:k] <= tol)
    assert res.n_passes == op.calls
    # the wanted subspace: the components separated from the next one by a clear gap
    gaps = (w_ref[:k] - w_ref[1 : k + 1]) / w_ref[0]
    p = int(np.flatnonzero(gaps > 1e-3)[-1]) + 1
    s = np.linalg.svd(Y[:, :p].T @ U_ref[:, :p], compute_uv=False)
    assert 1 - s.min() <= 1e-8
    # each separated vector individually, up to sign
    for j in range(p):
        if min(w_ref[j - 1] - w_ref[j] if j else np.inf, w_ref[j] - w_ref[j + 1]) > 1e-2 * w_ref[0]:
            assert abs(abs(Y[:, j] @ U_ref[:, j]) - 1) <= 1e-8


def _cases():
    for kernel in sorted(KERNELS):
        for n, b in [(60, 1), (60, 7), (40, 80), (5, 100)]:
            marks = []
            yield pytest.param(kernel, n, b, marks=marks, id=f"{kernel}-{n}-{b}")


@pytest.mark.parametrize(("kernel", "n", "b"), list(_cases()))
def test_extend_matches_dense_eigh(kernel, n, b):
    k, m, tol = 5, 15, 1e-10
    q = min(m, n - 1)
    op, V, KV, KE, w_ref, U_ref, Kc = _problem(kernel, n, b, q)
    res = extend_eigenpairs(op, V, KV, KE, k, m, tol=tol)
    _check(res, op, Kc, w_ref, U_ref, k, m, tol)


def test_thick_restart_of_the_refinement_basis_matches_dense_eigh(monkeypatch):
    # a basis of (1 + 1) * m + k columns fills after a few passes and restarts from
    # the Ritz vectors, in the buffers the first step's block was made in
    import kpca
    from kpca.solvers import _update

    k, m, tol = 5, 8, 1e-10
    op, V, KV, KE, w_ref, U_ref, Kc = _problem("rbf", 60, 40, m)
    restarts = []
    real_span = _update._HostSteps.span

    def span(Q, C):  # (called for the restart's two products and the final two)
        restarts.append(Q.shape[1])
        return real_span(Q, C)

    monkeypatch.setattr(_update._HostSteps, "span", staticmethod(span))
    with kpca.config_context(update_max_blocks=1):
        res = extend_eigenpairs(op, V, KV, KE, k, m, tol=tol)
    assert len(restarts) > 2  # at least one restart before the final products
    _check(res, op, Kc, w_ref, U_ref, k, m, tol)
    # the result owns its arrays (no view of a basis buffer kept)
    assert res.vectors.base is None and res.products.base is None


def test_no_pairs_wanted_gives_an_empty_result():
    op, V, KV, KE, w_ref, U_ref, Kc = _problem("rbf", 20, 5, 4)
    res = extend_eigenpairs(op, V, KV, KE, 0, 0, tol=1e-10)
    assert res.values.shape == (0,) and res.vectors.shape == (25, 0)
    assert res.residuals.shape == (0,) and res.converged


def test_grown_gram_operator_as_the_estimator_uses_it():
    """The operator of IncrementalKernelPCA: a GrowingGram centred by its own
    statistics; the start block computed from the kernel matrix by hand."""
    n, b, k, m, tol = 50, 9, 4, 12, 1e-10
    X = _data(n + b, seed=3)
    K = rbf_kernel(X, gamma=0.2)
    gram = GrowingGram(np.float64)
    gram.append(rbf_kernel(X[:n], X[:n], gamma=0.2))
    gram.append(rbf_kernel(X[n:], X, gamma=0.2))
    op = CenteredOperator(gram, gram.centering())
    N = n + b
    Kc = _H(N) @ K @ _H(N)
    w_old, U_old = np.linalg.eigh(_H(n) @ K[:n, :n] @ _H(n))
    V = U_old[:, ::-1][:, :m].copy()
    res = extend_eigenpairs(op, V, *_start_products(Kc, V), k, m, tol=tol)
    w, U = np.linalg.eigh(Kc)
    w, U = w[::-1], U[:, ::-1]
    assert np.max(np.abs(res.values[:k] - w[:k])) / w[0] <= 1e-8
    np.testing.assert_allclose(res.products, Kc @ res.vectors, rtol=0, atol=1e-10 * w[0])
    np.testing.assert_allclose(res.vectors.T @ res.vectors, np.eye(res.vectors.shape[1]),
                               atol=1e-10)
    s = np.linalg.svd(res.vectors[:, :k].T @ U[:, :k], compute_uv=False)
    assert 1 - s.min() <= 1e-8


def test_a_start_from_exact_pairs_needs_no_pass_when_the_new_rows_are_copies():
    # rows identical to old ones add no new direction: Rayleigh-Ritz on the start
    # basis is exact already -- zero passes
    rng = np.random.default_rng(5)
    Xo = rng.normal(size=(30, 3))
    X = np.vstack([Xo, Xo[:1]])
    K = rbf_kernel(X, gamma=0.3)
    n, N = 30, 31
    Kc = _H(N) @ K @ _H(N)
    w_old, U_old = np.linalg.eigh(_H(n) @ K[:n, :n] @ _H(n))
    V = U_old[:, ::-1][:, : n - 1].copy()  # every old direction
    op = Counting(Kc)
    res = extend_eigenpairs(op, V, *_start_products(Kc, V), 5, 20, tol=1e-10)
    assert res.n_passes == 0 and op.calls == 0 and res.converged
    w = np.linalg.eigvalsh(Kc)[::-1]
    assert np.max(np.abs(res.values[:5] - w[:5])) / w[0] <= 1e-10


def test_orthonormal_basis_of_an_ill_conditioned_block():
    """The helper behind both steps: an orthonormal basis of the well-resolved columns."""
    from kpca.solvers._update import _orthonormal

    rng = np.random.default_rng(7)
    Q, _ = np.linalg.qr(rng.normal(size=(80, 30)))
    R, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    Z = (Q * np.logspace(5, -2, 30)[None, :]) @ R  # condition number 1e7, above the floor
    U = _orthonormal(Z, 1e-10)  # relative to unit-norm columns
    assert U.shape == (80, 30)
    np.testing.assert_allclose(U.T @ U, np.eye(30), atol=1e-10)
    assert np.linalg.norm(Q - U @ (U.T @ Q)) <= 1e-8  # the same span


@pytest.mark.parametrize(("q", "m"), [(6, 6), (20, 19)])
def test_max_passes_zero_reports_the_unconverged_residual(q, m):
    # (m = 19: the residuals of all pairs are measured by blocks of 8 columns)
    op, V, KV, KE, w_ref, U_ref, Kc = _problem("rbf", 40, 30, q)
    res = extend_eigenpairs(op, V, KV, KE, 5, m, tol=1e-12, max_passes=0)
    assert res.n_passes == 0 and op.calls == 0
    assert not res.converged
    true_res = np.linalg.norm(Kc @ res.vectors - res.vectors * res.values[None, :], axis=0
                              ) / res.values[0]
    np.testing.assert_allclose(res.residuals, true_res, rtol=1e-6, atol=1e-14)
    assert res.residuals[:5].max() > 1e-12
    # the Ritz pairs of the start basis are still consistent, in arrays of their own
    np.testing.assert_allclose(res.products, Kc @ res.vectors, atol=1e-10 * w_ref[0])
    assert res.vectors.base is None and res.products.base is None
    assert np.all(res.values <= w_ref[: res.values.shape[0]] + 1e-10 * w_ref[0])


def test_ritz_solves_round_off_clusters_by_divide_and_conquer(monkeypatch):
    """The projected problem is solved by LAPACK's divide and conquer (evd), never MRRR
    (evr, which can report an internal error on clusters of round-off-sized
    eigenvalues: it did on a linear kernel's null space): the same top pairs as
    NumPy's eigh, descending, on a matrix whose nine smallest eigenvalues are
    round-off."""
    from scipy.linalg import eigh as scipy_eigh

    import kpca.solvers._update as upd

    calls = []

    def eigh(A, **kw):
        calls.append(kw.get("driver"))
        return scipy_eigh(A, **kw)

    monkeypatch.setattr(upd, "eigh", eigh)
    rng = np.random.default_rng(11)
    B = rng.normal(size=(12, 3))
    A = B @ B.T  # rank 3: nine eigenvalues at round-off
    w, C = upd._ritz(A, 5)
    assert calls == ["evd"]
    assert np.all(np.diff(w) <= 0)
    w_ref, C_ref = np.linalg.eigh(A)
    np.testing.assert_allclose(w, w_ref[::-1][:5], rtol=0, atol=1e-12 * w_ref[-1])
    # the three nonzero pairs' vectors agree up to sign; the rest span the null space
    np.testing.assert_allclose(np.abs(C[:, :3].T @ C_ref[:, ::-1][:, :3]), np.eye(3),
                               atol=1e-10)
    np.testing.assert_allclose(C.T @ C, np.eye(5), atol=1e-12)
