"""The Nyström warm start of the exact block Krylov solver."""

import numpy as np
import pytest
from scipy.linalg import eigh, subspace_angles

from kpca import KernelPCA
from kpca.kernels import RBF, Linear, Polynomial
from kpca.operators import TiledKernelOperator, center
from kpca.solvers import krylov_eigsh, krylov_start, nystrom_start


def _centred_gram(kernel, X):
    K = np.asarray(kernel.block(X), dtype=np.float64)
    H = np.eye(len(X)) - 1.0 / len(X)
    return H @ K @ H


def test_block_is_orthonormal_and_reproducible():
    X = np.random.default_rng(0).standard_normal((400, 6))
    Q = nystrom_start(RBF(gamma=0.2), X, 24, random_state=3)
    assert Q.shape == (400, 24)
    np.testing.assert_allclose(Q.T @ Q, np.eye(24), atol=1e-12)
    np.testing.assert_array_equal(Q, nystrom_start(RBF(gamma=0.2), X, 24, random_state=3))


def test_linear_kernel_block_contains_the_principal_subspace():
    # Nyström of the linear kernel with more landmarks than features is exact: the
    # block must contain the centred data's whole column space (rank 5 < b), then
    # random completion
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 5)) @ rng.standard_normal((5, 5)) + 7.0
    Q = nystrom_start(Linear(), X, 12, random_state=0)
    np.testing.assert_allclose(Q.T @ Q, np.eye(12), atol=1e-12)
    w, V = eigh(_centred_gram(Linear(), X))
    top = V[:, -5:]  # the 5 non-zero directions of the centred Gram matrix
    assert np.max(subspace_angles(top, Q)) < 1e-8


def test_rbf_block_is_near_the_top_eigenvectors():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((600, 3))
    kernel = RBF(gamma=0.3)
    w, V = eigh(_centred_gram(kernel, X))
    top = V[:, ::-1][:, :4]
    near = np.max(subspace_angles(top, nystrom_start(kernel, X, 16, random_state=0)))
    rand = np.max(subspace_angles(top, krylov_start(600, 16, 0)))
    assert near < 0.1 < rand  # radians; a random 16-d block is nearly orthogonal



def test_more_landmarks_start_nearer_the_top_pairs():
    """What the matrix-free size rule (n / start_rows_per_landmark landmarks) pays for:
    the residual of the start block's Ritz pairs, ||K~ v - theta v|| / ||K~||, falls
    as landmarks are added (about as 1 / m), against the dense centred Gram matrix
    computed here."""
    rng = np.random.default_rng(12)
    X = rng.standard_normal((2500, 8))
    kernel = RBF(gamma=1 / 8)
    K = _centred_gram(kernel, X)
    top = np.linalg.eigvalsh(K)[-1]
    res = []
    for m in (50, 200, 800):
        P = nystrom_start(kernel, X, 24, n_landmarks=m, random_state=0)
        theta, Y = np.linalg.eigh(P.T @ K @ P)
        V = P @ Y[:, ::-1][:, :10]  # the top 10 Ritz pairs of the start block
        R = K @ V - V * theta[::-1][:10]
        res.append(np.linalg.norm(R, axis=0).max() / top)
    assert res[0] > 2 * res[1] > 4 * res[2]


def test_uncentred_start_follows_the_uncentred_matrix():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 3))
    kernel = RBF(gamma=0.3)
    w, V = eigh(np.asarray(kernel.block(X), dtype=np.float64))
    top = V[:, ::-1][:, :3]  # the first one is the near-constant direction
    Q = nystrom_start(kernel, X, 16, center=False, random_state=0)
    assert np.max(subspace_angles(top, Q)) < 0.1


def test_overflowing_kernel_falls_back_to_a_random_block():
    X = np.full((200, 3), 1e3)
    Q = nystrom_start(Polynomial(gamma=1.0, degree=200, coef0=1.0), X, 8, random_state=0)
    assert np.all(np.isfinite(Q))
    np.testing.assert_allclose(Q.T @ Q, np.eye(8), atol=1e-12)


def test_start_saves_passes_and_keeps_the_answer():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((1500, 8))
    kernel = RBF(gamma=1 / 8)
    op, _ = center(TiledKernelOperator(kernel, X, dtype=np.float64), inplace=True)
    Q0 = krylov_start(1500, 24, 0)
    P0 = nystrom_start(kernel, X, 24, random_state=0)
    cold = krylov_eigsh(op, 4, start=(Q0, op.matmat(Q0)))
    warm = krylov_eigsh(op, 4, start=(P0, op.matmat(P0)))
    assert cold.converged and warm.converged
    assert warm.n_matvec < cold.n_matvec
    np.testing.assert_allclose(warm.values, cold.values, rtol=1e-10)


@pytest.mark.parametrize("center_", [True, False])
def test_estimator_with_warm_start_matches_dense(center_):
    X = np.random.default_rng(5).standard_normal((1200, 6))
    kw = dict(n_components=5, kernel="rbf", gamma=0.1, center=center_, random_state=0)
    dense = KernelPCA(eigen_solver="dense", **kw).fit(X)
    krylov = KernelPCA(eigen_solver="krylov", **kw).fit(X)
    np.testing.assert_allclose(krylov.eigenvalues_, dense.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(np.abs(krylov.transform(X[:50])),
                               np.abs(dense.transform(X[:50])), atol=1e-6)


@pytest.mark.parametrize(("n_jobs", "split"), [(1, None), (2, None), (2, 1)])
@pytest.mark.parametrize("center_", [True, False])
def test_chunked_sums_give_the_direct_nystrom_directions(center_, n_jobs, split):
    """Past one chunk of rows (4,096), the start equals the top principal directions
    of the Nyström features F = k(X, Z) K_mm^(-1/2) computed in one piece, whether
    the chunks run on one thread or on several (their sums merged by their means),
    and with the final Cholesky QR's rows shared among the threads (the setting
    split_sweep_values) or not; its columns are orthonormal."""
    from sklearn.utils import check_random_state

    from kpca import config_context

    rng = np.random.default_rng(6)
    X = rng.standard_normal((9000, 4))
    kernel, m, b = RBF(gamma=0.4), 60, 8
    with config_context(**({} if split is None else {"split_sweep_values": split})):
        Q = nystrom_start(kernel, X, b, center=center_, n_landmarks=m, random_state=7,
                          n_jobs=n_jobs)
    np.testing.assert_allclose(Q.T @ Q, np.eye(b), atol=1e-12)
    Z = X[np.sort(check_random_state(7).choice(9000, size=m, replace=False))]
    s, V = eigh(kernel.block(Z))
    keep = s > 1e-10 * s.max()
    F = kernel.block(X, Z) @ (V[:, keep] / np.sqrt(s[keep]))
    if center_:
        F -= F.mean(axis=0)
    U = np.linalg.svd(F, full_matrices=False)[0][:, :b]
    assert np.max(subspace_angles(U, Q)) < 1e-6


def test_start_landmarks_follow_the_cost_of_a_pass():
    from kpca import config_context, get_config
    from kpca.solvers import start_landmarks

    cfg = get_config()
    least, stored = cfg["start_landmarks"], cfg["stored_start_landmarks"]
    assert start_landmarks(100_000, cheap_pass=True) == stored
    assert start_landmarks(cfg["stored_start_rows"], cheap_pass=True) == stored
    assert start_landmarks(cfg["stored_start_rows"] - 1, cheap_pass=True) == least
    assert start_landmarks(3_500, cheap_pass=True) == least
    assert start_landmarks(100_000, cheap_pass=True, rank=64) == least
    assert start_landmarks(100_000, cheap_pass=False, rank=200) == 201
    assert start_landmarks(10_000, cheap_pass=False) == least
    # matrix-free: n / start_rows_per_landmark, from start_landmarks to the cap
    per = cfg["start_rows_per_landmark"]
    assert start_landmarks(40_000, cheap_pass=False) == max(least, 40_000 // per)
    assert start_landmarks(60_000, cheap_pass=False) == min(cfg["max_start_landmarks"],
                                                            60_000 // per)
    assert start_landmarks(10**7, cheap_pass=False) == 512
    # the settings move the rule: more landmarks at least, stored ones from fewer rows
    with config_context(start_landmarks=64, stored_start_rows=1000,
                        stored_start_landmarks=96):
        assert start_landmarks(3_500, cheap_pass=True) == 96
        assert start_landmarks(999, cheap_pass=True) == 64
        assert start_landmarks(6_000, cheap_pass=False) == 64  # n / 100 = 60
        assert start_landmarks(100_000, cheap_pass=True, rank=20) == 64
    with config_context(start_rows_per_landmark=100, max_start_landmarks=256):
        assert start_landmarks(20_000, cheap_pass=False) == 200
        assert start_landmarks(10**7, cheap_pass=False) == 256


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_start_is_accurate_for_data_far_from_the_origin(n_jobs):
    """Sums over chunks, each around its own mean: the linear kernel of data offset by
    1e4 (its C^T C dwarfs the centred covariance) still gives the principal subspace
    of the centred data."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((9000, 10)) * np.linspace(1, 3, 10) + 1e4
    Q = nystrom_start(Linear(), X, 5, random_state=0, n_jobs=n_jobs)
    U = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)[0][:, :5]
    assert np.max(subspace_angles(U, Q)) < 1e-6


def test_landmark_chunks_are_balanced_between_threads():
    from kpca import config_context, get_config
    from kpca.solvers._start import _chunks

    chunk_rows, min_rows = get_config()["start_chunk_rows"], get_config()["start_min_chunk_rows"]
    for n, workers in [(20_000, 2), (9_000, 2), (100_000, 3), (5_000, 4), (30_012_345, 3)]:
        starts = _chunks(n, workers)
        sizes = np.diff(starts + [n])
        assert starts[0] == 0 and sizes.max() <= chunk_rows + 1
        assert len(starts) % workers == 0 and sizes.max() - sizes.min() <= 1
    assert _chunks(1_000, 2) == [0]  # too few rows to split
    assert _chunks(2 * min_rows - 1, 2) == [0]
    assert _chunks(10_000, 1) == [0, 3333, 6666]
    with config_context(start_chunk_rows=1000, start_min_chunk_rows=100):
        assert _chunks(10_000, 1) == list(range(0, 10_000, 1000))
        assert _chunks(1_000, 2) == [0, 500]


def test_chunk_sums_merge_to_the_whole_scatter():
    """Chan et al.'s pairwise update: the merged (rows, mean, scatter) of two chunks
    is that of their union, also for data far from the origin."""
    from kpca.solvers._start import _merge

    rng = np.random.default_rng(9)
    A = rng.standard_normal((37, 4)) + 1e6
    B = rng.standard_normal((50, 4)) * 3 + 1e6

    def stats(M):
        mu = M.mean(axis=0)
        return len(M), mu, (M - mu).T @ (M - mu)

    k, mu, S = _merge(stats(A), stats(B))
    k0, mu0, S0 = stats(np.vstack([A, B]))
    assert k == k0
    np.testing.assert_allclose(mu, mu0, rtol=1e-14)
    np.testing.assert_allclose(S, S0, rtol=1e-9, atol=1e-9 * np.abs(S0).max())


def test_estimator_gives_the_start_its_threads(monkeypatch):
    """KernelPCA's n_jobs reaches the start's landmark rows."""
    import kpca._fit as kp

    seen = []
    real = kp.nystrom_start

    def spy(*args, **kwargs):
        seen.append(kwargs.get("n_jobs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(kp, "nystrom_start", spy)
    X = np.random.default_rng(10).standard_normal((5000, 3))
    KernelPCA(5, kernel="rbf", gamma=0.5, eigen_solver="krylov", n_jobs=1).fit(X)
    assert seen == [1]


def test_sparse_rows_give_the_start_of_their_dense_copy():
    """Sparse rows (no prepared landmarks: the kernel's own block) split over
    threads give the start of the same rows dense."""
    import scipy.sparse as sp

    Xs = sp.random(5000, 30, density=0.1, format="csr", random_state=11)
    Qs = nystrom_start(RBF(gamma=0.5), Xs, 6, n_landmarks=64, random_state=1, n_jobs=2)
    Qd = nystrom_start(RBF(gamma=0.5), Xs.toarray(), 6, n_landmarks=64, random_state=1,
                       n_jobs=1)
    assert np.max(subspace_angles(Qs, Qd)) < 1e-8


def test_the_starts_small_eigenproblems_run_on_threads_sized_by_a_column():
    """LAPACK's reductions of the m x m landmark matrix and of the features' covariance
    synchronise BLAS's threads once a column (2 m^2 flops): they run on the threads
    kpca._parallel.call_threads gives for that (one per blas_flops_per_thread), not
    on the threads of the start's n m^2 products. On a busy 2-core machine, two
    threads made the m = 500 reduction 15-35x slower in wall time than one."""
    import kpca.solvers._start as st
    from kpca import config_context
    from kpca._parallel import current_blas_threads

    seen = []

    def spy(fn):
        def call(*args, **kwargs):
            seen.append(current_blas_threads())
            return fn(*args, **kwargs)
        return call

    X = np.random.default_rng(11).standard_normal((3000, 4))
    real_eigh, real_top = st.eigh, st.top_eigh
    st.eigh, st.top_eigh = spy(real_eigh), spy(real_top)
    try:
        # two workers: the eigenproblems may take up to two BLAS threads
        with config_context(n_cores=2):
            ref = nystrom_start(RBF(gamma=0.4), X, 8, n_landmarks=200, random_state=0,
                                n_jobs=2)
            assert seen == [1, 1]  # 2 * 200^2 flops a column: below one thread's share
            # one thread per flop: both threads, as the rule says
            with config_context(blas_flops_per_thread=1):
                Q = nystrom_start(RBF(gamma=0.4), X, 8, n_landmarks=200, random_state=0,
                                  n_jobs=2)
            assert seen[2:] == [2, 2]
    finally:
        st.eigh, st.top_eigh = real_eigh, real_top
    assert np.max(subspace_angles(Q, ref)) < 1e-8


def test_the_starts_landmark_sized_algebra_runs_on_one_blas_thread(monkeypatch):
    """What the warm start computes outside its worker threads is landmark-sized (the
    m x m landmark matrix, the features' covariance in the whitened basis, the
    directions): it runs on one BLAS thread, whatever the caller's BLAS threads, so
    that no BLAS thread is left spinning against the workers of the next step (on 16
    cores the start's steps took 4-11 times their share of the work before)."""
    import kpca.solvers._start as st
    from kpca import config_context
    from kpca._parallel import blas_threads, current_blas_threads

    seen = {}
    real_directions, real_block = st._directions, RBF.block

    def directions(*args, **kwargs):
        seen["directions"] = current_blas_threads()
        return real_directions(*args, **kwargs)

    def block(self, *args, **kwargs):
        seen.setdefault("landmarks", current_blas_threads())  # K_mm, the first block
        return real_block(self, *args, **kwargs)

    monkeypatch.setattr(st, "_directions", directions)
    monkeypatch.setattr(RBF, "block", block)
    # n m^2 = 2.25e9: many landmarks on many rows (before, from 2^31 on, the start put
    # its landmark-sized algebra on the workers' count of BLAS threads)
    X = np.random.default_rng(12).standard_normal((25000, 4))
    with config_context(n_cores=2), blas_threads(2):
        assert current_blas_threads() == 2
        Q = nystrom_start(RBF(gamma=0.4), X, 8, n_landmarks=300, random_state=0, n_jobs=2)
        assert current_blas_threads() == 2  # the caller's setting is back
    assert seen == {"directions": 1, "landmarks": 1}
    np.testing.assert_allclose(Q.T @ Q, np.eye(8), atol=1e-10)
