"""BLAS threads during a fit: one per worker, and one in the main thread between the
passes of a tiled operator (``kpca._parallel``, ``KernelPCA._decompose``)."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import kpca
import kpca.operators._tiled as tiled
import kpca.solvers._krylov as krylov
from kpca._parallel import blas_threads
from kpca.kernels import RBF
from kpca.operators import float32_eigen_error, n_threads


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def _spy(monkeypatch, owner, name, seen):
    real = getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)


def _fit(n=600, **params):
    X = np.random.default_rng(0).standard_normal((n, 5))
    return kpca.KernelPCA(params.pop("k", 4), kernel="rbf", gamma=0.2, eigen_solver="krylov",
                          random_state=0, **params).fit(X)


def test_tiled_fit_keeps_blas_on_one_thread_between_passes(monkeypatch):
    """A tiled fit's passes run on worker threads; in the main thread between them
    (the operator's bookkeeping, the solver's small algebra) BLAS stays on one
    thread, so that no OpenBLAS thread is woken to spin against the next pass; and
    the setting the caller had is back after the fit."""
    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)  # 5 x 5 tiles
    seen: list[set[int]] = []
    _spy(monkeypatch, tiled.TiledKernelOperator, "_pass", seen)
    _spy(monkeypatch, krylov, "eigh", seen)
    with blas_threads(2):
        model = _fit()
        assert _blas_threads() == {2}
    assert model.eigen_solver_ == "krylov"
    assert seen and all(s == {1} for s in seen)


def test_large_block_algebra_asks_for_the_operators_threads(monkeypatch):
    """Above the size where threads pay (the setting small_algebra_flops), the solver's
    block algebra asks for the operator's threads (n_jobs) explicitly: under the fit's
    one-thread setting, 'unchanged' would mean one. (The tall products, here the
    projection of each new block on the basis; the Rayleigh-Ritz eigenproblem of the
    small projected matrix is sized by its own flops: tests/solvers/test_lanczos.py.)"""
    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    seen: list[set[int]] = []
    _spy(monkeypatch, krylov, "project_out", seen)
    with blas_threads(1), kpca.config_context(small_algebra_flops=0):
        _fit(n_jobs=2)
    assert seen and all(s == {n_threads(2)} for s in seen)


@pytest.mark.parametrize("large", [False, True])
def test_block_lanczos_shares_the_rows_of_large_algebra(monkeypatch, large):
    """Gram-Schmidt and Cholesky QR of a large basis share its rows among the
    operator's threads (n_jobs), each on one BLAS thread; a small basis stays in the
    main thread (workers = 1)."""
    import kpca.solvers._orth as orth

    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    workers: list[int] = []
    seen: list[set[int]] = []
    real_project, real_run = krylov.project_out, orth.run_blocks

    def project(Q, W, w=1):
        workers.append(w)
        return real_project(Q, W, w)

    def run(work, items, w):
        def spied(x):
            seen.append(_blas_threads())
            return work(x)
        return real_run(spied, items, w)

    monkeypatch.setattr(krylov, "project_out", project)
    monkeypatch.setattr(orth, "run_blocks", run)
    with blas_threads(2), kpca.config_context(**({"small_algebra_flops": 0} if large else {})):
        _fit(n=2600, n_jobs=2)
    assert workers and set(workers) == ({n_threads(2)} if large else {1})
    assert seen and all(s == {1} for s in seen)


def test_block_lanczos_shares_tall_sweeps_without_waking_blas(monkeypatch):
    """From split_sweep_values values read a sweep on (a setting; below the size where
    BLAS threads pay), Gram-Schmidt shares the basis's rows among the operator's
    threads while the main thread's BLAS stays on one thread (no OpenBLAS thread woken
    to spin against the next pass). The eigenpairs are those of the unshared sweeps to
    the solver's tolerance, and the same bits fit after fit."""
    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    calls: list[tuple[int, set[int]]] = []
    real_project = krylov.project_out

    def project(Q, W, w=1):
        calls.append((w, _blas_threads()))
        return real_project(Q, W, w)

    monkeypatch.setattr(krylov, "project_out", project)
    fits = {}
    for split in (1, 2**40):
        with blas_threads(2), kpca.config_context(split_sweep_values=split):
            fits[split] = [_fit(n=2600, n_jobs=2) for _ in range(2)]
        workers = {w for w, _ in calls}
        assert workers == ({n_threads(2)} if split == 1 else {1})
        assert all(blas == {1} for _, blas in calls)
        calls.clear()
    shared, alone = fits[1][0], fits[2**40][0]
    np.testing.assert_array_equal(fits[1][1].eigenvalues_, shared.eigenvalues_)
    np.testing.assert_array_equal(fits[1][1].eigenvectors_, shared.eigenvectors_)
    np.testing.assert_allclose(shared.eigenvalues_, alone.eigenvalues_,
                               rtol=1e-6 * alone.eigenvalues_[0] / alone.eigenvalues_[-1])


def test_wrapped_operators_pass_their_threads_on(monkeypatch):
    """The robust estimators solve on a centred wrapper of the tiled operator (inside
    the fit's one-thread setting): the wrapper reports the tiled operator's threads,
    so large block algebra (its tall products) still gets them."""
    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    seen: list[set[int]] = []
    _spy(monkeypatch, krylov, "project_out", seen)
    X = np.random.default_rng(3).standard_normal((500, 4))
    with blas_threads(1), kpca.config_context(small_algebra_flops=0):
        kpca.WeightedKernelPCA(3, kernel="rbf", gamma=0.3, eigen_solver="krylov",
                               random_state=0, n_jobs=2).fit(X)
    assert seen and all(s == {n_threads(2)} for s in seen)


@pytest.mark.parametrize("large", [False, True])
def test_dense_fallback_of_a_tiled_fit_gets_the_operators_threads(monkeypatch, large):
    """Block Lanczos hands a problem whose basis would cover half the space to the
    dense solver; its eigendecomposition then gets threads by its size (one per
    blas_flops_per_thread of each of its 2 n^2-flop steps), up to the operator's
    threads, not the one BLAS thread the tiled fit holds between passes."""
    import kpca.solvers._dense as dense

    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 32)
    seen: list[set[int]] = []
    _spy(monkeypatch, dense, "eigh", seen)
    with blas_threads(1), kpca.config_context(blas_flops_per_thread=1 if large else 2**25):
        model = _fit(n=100, k=30, n_jobs=2)
    assert model.eigen_solver_ == "dense"
    assert seen and all(s == ({n_threads(2)} if large else {1}) for s in seen)


@pytest.mark.parametrize("caller", [1, 2])
@pytest.mark.parametrize("large", [False, True])
def test_dense_fit_sizes_blas_threads_below_the_callers(monkeypatch, caller, large):
    """A dense fit's eigendecomposition: one thread while each of its steps (2 n^2
    flops) is below blas_flops_per_thread (on a busy machine, two threads on 1,000 rows
    made it several times slower), more above it, never more than the caller allows."""
    import kpca.solvers._dense as dense

    seen: list[set[int]] = []
    _spy(monkeypatch, dense, "eigh", seen)
    with blas_threads(caller), kpca.config_context(blas_flops_per_thread=1 if large
                                                    else 2**25):
        X = np.random.default_rng(0).standard_normal((200, 4))
        kpca.KernelPCA(3, kernel="rbf", eigen_solver="dense").fit(X)
        assert _blas_threads() == {caller}  # restored after the fit
    expected = min(caller, kpca.get_config()["n_cores"]) if large else 1
    assert seen and all(s == {expected} for s in seen)


def test_float32_error_estimate_runs_on_one_blas_thread(monkeypatch):
    seen: list[set[int]] = []
    _spy(monkeypatch, np.linalg, "eigvalsh", seen)
    X = np.random.default_rng(1).standard_normal((500, 3))
    with blas_threads(2):
        err = float32_eigen_error(RBF(gamma=0.5), X, random_state=0)
    assert np.isfinite(err) and err > 0
    assert seen == [{1}]


@pytest.mark.parametrize("large", [False, True])
def test_randomized_solver_threads(monkeypatch, large):
    """Subspace iteration on a tiled operator: its QR and Rayleigh-Ritz on one BLAS
    thread while small, on the operator's threads (n_jobs) from small_algebra_flops."""
    import kpca.solvers._randomized as randomized

    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    seen: list[set[int]] = []
    _spy(monkeypatch, randomized, "qr", seen)
    X = np.random.default_rng(2).standard_normal((600, 5))
    with blas_threads(2), kpca.config_context(**({"small_algebra_flops": 0} if large else {})):
        model = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="randomized",
                               random_state=0, n_jobs=2).fit(X)
    assert model.eigen_solver_ == "randomized"
    assert seen and all(s == ({n_threads(2)} if large else {1}) for s in seen)


@pytest.mark.parametrize("large", [False, True])
def test_stored_arpack_fit_sizes_blas_threads(monkeypatch, large):
    """ARPACK on a stored K: each product (2 n^2 flops) is one synchronisation of BLAS's
    threads, so the fit's threads follow that size, up to n_jobs."""
    from kpca.operators import DenseOperator

    seen: list[set[int]] = []
    _spy(monkeypatch, DenseOperator, "matvec", seen)
    _spy(monkeypatch, DenseOperator, "matmat", seen)
    X = np.random.default_rng(0).standard_normal((300, 4))
    with blas_threads(1), kpca.config_context(blas_flops_per_thread=1 if large else 2**25):
        model = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="arpack",
                               random_state=0, n_jobs=2).fit(X)
    assert model.eigen_solver_ == "arpack"
    assert seen and all(s == ({n_threads(2)} if large else {1}) for s in seen)


def test_one_worker_runs_its_pieces_on_one_blas_thread():
    """workers=1 (n_jobs=1, or one core): the pieces run in this thread with BLAS held
    to one thread (left at its default, BLAS woke its threads for every piece's small
    product: an n_jobs=1 transform took 6-10 s instead of 1 s on a busy machine); a
    single piece with more workers keeps the caller's threads."""
    from kpca._parallel import run_blocks, run_stream

    with blas_threads(2):
        assert run_blocks(lambda _: _blas_threads(), range(3), 1) == [{1}] * 3
        assert list(run_stream(lambda _: _blas_threads(), iter(range(3)), 1)) == [{1}] * 3
        assert run_blocks(lambda _: _blas_threads(), [0], 2) == [{2}]
        assert _blas_threads() == {2}


def test_n_jobs_1_transform_runs_on_one_blas_thread(monkeypatch):
    from kpca.kernels import _standard

    seen: list[set[int]] = []
    _spy(monkeypatch, _standard.RBF, "block_prepared", seen)
    X = np.random.default_rng(0).standard_normal((300, 4))
    model = kpca.KernelPCA(3, kernel="rbf", gamma=0.2, random_state=0, n_jobs=1).fit(X)
    seen.clear()
    with blas_threads(2):
        model.transform(X[:50])
    assert seen and all(s == {1} for s in seen)


def test_a_tiled_fit_keeps_its_worker_threads_for_all_its_steps(monkeypatch):
    """A tiled fit's passes, sums, solver sweeps and warm start run on one set of
    n_jobs threads kept for the fit (kpca._parallel.worker_pool), not on threads
    started for each step, with the same bits as when each step starts its own; the
    threads end with the fit."""
    import threading

    import kpca._fit as fit_module

    started = []
    real_start = threading.Thread.start

    def start(self, *args, **kwargs):
        started.append(self.name)
        return real_start(self, *args, **kwargs)

    monkeypatch.setattr(threading.Thread, "start", start)
    X = np.random.default_rng(1).standard_normal((3000, 5))

    def fit():
        # matrix-free: every pass evaluates its tiles on the workers; float64 sums
        # large enough to be shared (split_sweep_values)
        with kpca.config_context(n_cores=3, split_sweep_values=2**10):
            return kpca.KernelPCA(6, kernel="rbf", gamma=0.2, eigen_solver="krylov",
                                  memory_limit="16MB", n_jobs=3, random_state=0).fit(X)

    before = threading.active_count()
    kept = fit()
    assert len(started) == 3 and all(name.startswith("kpca") for name in started)
    assert threading.active_count() == before
    started.clear()
    monkeypatch.setattr(fit_module, "worker_pool", lambda workers: nullcontext())
    each = fit()
    assert len(started) > 10  # each step its own threads
    np.testing.assert_array_equal(kept.eigenvalues_, each.eigenvalues_)
    np.testing.assert_array_equal(kept.eigenvectors_, each.eigenvectors_)


def test_kept_threads_serve_only_calls_for_their_count_and_not_their_own():
    """Inside worker_pool(3): a call for 3 workers runs on the kept threads, and so
    does a call for 2 with 2 items; a call for 2 with more items would run more at once
    on them than it asks, and starts its own; a call made from a kept thread (nested)
    starts its own rather than waiting for the threads that are busy running it."""
    import threading

    from kpca._parallel import run_blocks, worker_pool

    def names(_):
        return threading.current_thread().name

    def nested(_):
        return run_blocks(names, range(3), 3)

    with worker_pool(3):
        assert all(n.startswith("kpca") for n in run_blocks(names, range(9), 3))
        assert all(n.startswith("kpca") for n in run_blocks(names, range(2), 2))
        assert not any(n.startswith("kpca") for n in run_blocks(names, range(4), 2))
        inner = run_blocks(nested, range(3), 3)
    assert len(inner) == 3
    assert not any(n.startswith("kpca") for names_ in inner for n in names_)
