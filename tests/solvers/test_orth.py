"""Cholesky QR in place (``kpca.solvers._orth``) and the block Lanczos solver's
orthonormalization built on it, against NumPy's Householder QR."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kpca import get_config
from kpca.solvers._krylov import _orthonormalize
from kpca.solvers._orth import cholesky_qr, cholesky_sweep, project_out, row_sum

MAX_COND = get_config()["orth_max_cond"]


def _with_condition(n, b, cond, seed=0):
    """An n x b block of condition number ``cond`` (singular values log-spaced)."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, b)))[0]
    V = np.linalg.qr(rng.standard_normal((b, b)))[0]
    return np.ascontiguousarray((U * np.logspace(0, -np.log10(cond), b)) @ V.T)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(40, 3000), b=st.integers(1, 24), log_cond=st.floats(0, 4),
       scale=st.sampled_from([1e-6, 1.0, 1e6]), seed=st.integers(0, 2**16))
def test_two_sweeps_give_the_qr_factorization(n, b, log_cond, scale, seed):
    W = scale * _with_condition(n, b, 10**log_cond, seed)
    W0 = W.copy()
    first = cholesky_sweep(W)
    assert first is not None
    R1, G = first
    # the Gram matrix of the swept block, summed in the same sweep
    np.testing.assert_allclose(G, W.T @ W, atol=1e-13)
    second = cholesky_sweep(W, gram=G, gram_after=False)
    assert second is not None and second[1] is None
    R = second[0] @ R1
    np.testing.assert_allclose(W.T @ W, np.eye(b), atol=1e-13)
    np.testing.assert_allclose(W @ R, W0, atol=1e-12 * np.abs(W0).max())
    # the same factor as Householder QR, up to the signs of its rows
    Rq = np.linalg.qr(W0, mode="r")
    np.testing.assert_allclose(np.abs(R), np.abs(Rq), atol=1e-9 * np.abs(Rq).max())
    assert np.all(np.diag(R) > 0)


def _kahan(n, b, c=0.75):
    """A block whose R factor is Kahan's matrix: diagonal entries within ~1e4 of each
    other, condition number ~1e10 (a diagonal ratio would take it as well conditioned)."""
    s = np.sqrt(1 - c * c)
    R = np.triu(-c * np.ones((b, b)), 1) + np.eye(b)
    R = np.diag(s ** np.arange(b)) @ R
    Q = np.linalg.qr(np.random.default_rng(4).standard_normal((n, b)))[0]
    return np.ascontiguousarray(Q @ R)


@pytest.mark.parametrize("case", ["rank deficient", "ill conditioned", "kahan",
                                  "below floor", "not finite"])
def test_refused_sweep_leaves_the_block_untouched(case):
    W = _with_condition(500, 8, 10.0)
    floor = 0.0
    if case == "rank deficient":
        W[:, 3] = 2 * W[:, 1]
    elif case == "ill conditioned":
        W = _with_condition(500, 8, 100 * MAX_COND)
    elif case == "kahan":
        W = _kahan(500, 24)
        d = np.abs(np.diag(np.linalg.qr(W, mode="r")))
        assert d.max() / d.min() < MAX_COND < np.linalg.cond(W)
    elif case == "below floor":
        floor = 10.0
    else:
        W[7, 2] = np.nan
    W0 = W.copy()
    assert cholesky_sweep(W, floor=floor) is None
    np.testing.assert_array_equal(W, W0)


@pytest.mark.parametrize("cond, scale, lost_expected, cholesky", [
    (10.0, 1.0, 0, True),        # Cholesky QR
    (1e9, 1.0, 0, False),        # ill conditioned: pivoted Householder QR
    (10.0, 1e-10, 0, False),     # small against the projected matrix: pivoted QR
    (10.0, 1e-14, 8, False),     # round-off of the projected matrix: every direction lost
])
def test_orthonormalize_either_path(cond, scale, lost_expected, cholesky, monkeypatch):
    import kpca.solvers._orth as orth

    accepted = []

    def spy(W, floor=0.0, **kw):
        out = cholesky_sweep(W, floor, **kw)
        accepted.append(out is not None)
        return out

    monkeypatch.setattr(orth, "cholesky_sweep", spy)
    W = scale * _with_condition(2000, 8, cond, seed=1)
    W0 = W.copy()
    Qn, R, lost = _orthonormalize(W, 1.0)
    assert accepted == ([True, True] if cholesky else [False])
    assert int(lost.sum()) == lost_expected
    np.testing.assert_allclose(Qn.T @ Qn, np.eye(8), atol=1e-12)
    if lost_expected == 0:
        np.testing.assert_allclose(Qn @ R, W0, atol=1e-12 * np.abs(W0).max())
    else:
        assert not np.any(R[lost])  # lost rows zeroed, for the caller's residuals


def test_orthonormalize_marks_a_repeated_direction_lost():
    W = _with_condition(2000, 8, 10.0, seed=2)
    W[:, 5] = W[:, 2] - W[:, 0]
    W0 = W.copy()
    Qn, R, lost = _orthonormalize(W, 1.0)
    assert int(lost.sum()) == 1
    np.testing.assert_allclose(Qn @ R, W0, atol=1e-12)


def test_orthonormalize_when_the_second_sweep_is_refused(monkeypatch):
    """A second Cholesky sweep refused (it should not happen after a good first
    one): Householder QR of the once-swept block, its factor composed with the
    first."""
    import kpca.solvers._orth as orth

    calls = []

    def second_refused(W, floor=0.0, **kw):
        calls.append(1)
        return cholesky_sweep(W, floor, **kw) if len(calls) == 1 else None

    monkeypatch.setattr(orth, "cholesky_sweep", second_refused)
    W = _with_condition(1500, 6, 100.0, seed=5)
    W0 = W.copy()
    Qn, R, lost = _orthonormalize(W, 1.0)
    assert len(calls) == 2 and not lost.any()
    np.testing.assert_allclose(Qn.T @ Qn, np.eye(6), atol=1e-13)
    np.testing.assert_allclose(Qn @ R, W0, atol=1e-12 * np.abs(W0).max())


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5000), workers=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_row_sum_covers_every_row_once(n, workers, seed):
    """The steps cover 0:n in disjoint ranges, on any number of threads; their
    results are summed (and None from every step is None)."""
    x = np.random.default_rng(seed).standard_normal((n, 3))
    seen = np.zeros(n, dtype=int)

    def step(a, e):
        seen[a:e] += 1
        return x[a:e].sum(axis=0)

    total = row_sum(step, n, workers)
    assert np.all(seen == 1)
    np.testing.assert_allclose(total, x.sum(axis=0), atol=1e-10)
    assert row_sum(lambda a, e: None, n, workers) is None


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("n, m, b", [(50, 7, 3), (4000, 40, 16), (2500, 1, 1)])
def test_project_out_against_a_dense_projection(n, m, b, workers):
    """Gram-Schmidt twice against an orthonormal basis: the coefficients and the
    projected block of the projector (I - Q Q^T) in float64 (twice: the second
    sweep's coefficients are round-off), and the Gram matrix of the result."""
    rng = np.random.default_rng(n + m)
    Q = np.asfortranarray(np.linalg.qr(rng.standard_normal((n, m + 5)))[0])[:, :m]
    # a block mostly inside the basis: the first sweep leaves a small remainder
    W = np.ascontiguousarray(Q @ rng.standard_normal((m, b)) * 1e3
                             + rng.standard_normal((n, b)))
    W0 = W.copy()
    C, G = project_out(Q, W, workers)
    np.testing.assert_allclose(C, Q.T @ W0, rtol=1e-12, atol=1e-9)
    expected = W0 - Q @ (Q.T @ W0)
    np.testing.assert_allclose(W, expected, atol=1e-9)
    np.testing.assert_allclose(Q.T @ W, 0, atol=1e-11)
    np.testing.assert_allclose(G, W.T @ W, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("workers", [1, 2])
def test_cholesky_qr_with_a_given_gram_on_threads(workers):
    """The factorization with the Gram matrix given (as block Lanczos passes it) and
    the rows shared by threads: the same as Householder QR up to signs."""
    W = 3.0 * _with_condition(5000, 12, 50.0, seed=7)
    W0 = W.copy()
    R = cholesky_qr(W, gram=W0.T @ W0, workers=workers)
    assert R is not None
    np.testing.assert_allclose(W.T @ W, np.eye(12), atol=1e-13)
    np.testing.assert_allclose(W @ R, W0, atol=1e-12 * np.abs(W0).max())
    Rq = np.linalg.qr(W0, mode="r")
    np.testing.assert_allclose(np.abs(R), np.abs(Rq), atol=1e-9 * np.abs(Rq).max())
