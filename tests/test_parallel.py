"""BLAS threads during a fit: one per worker, and one in the main thread between the
passes of a tiled operator (``kpca._parallel``, ``KernelPCA._decompose``)."""

from __future__ import annotations

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
    return kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="krylov",
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


def test_large_block_algebra_asks_for_the_workers_threads(monkeypatch):
    """Above the size where threads pay (SMALL_ALGEBRA_FLOPS), the solver's block
    algebra asks for the operator's worker count of BLAS threads explicitly (under
    the fit's one-thread setting, 'unchanged' would mean one)."""
    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)
    monkeypatch.setattr(krylov, "SMALL_ALGEBRA_FLOPS", 0)
    seen: list[set[int]] = []
    _spy(monkeypatch, krylov, "eigh", seen)
    _fit(n_jobs=2)
    assert seen and all(s == {min(2, n_threads(None))} for s in seen)


def test_dense_fit_leaves_blas_threads_alone(monkeypatch):
    """The dense solver's one large eigendecomposition keeps the caller's threads."""
    seen: list[set[int]] = []
    import kpca.solvers._dense as dense

    _spy(monkeypatch, dense, "eigh", seen)
    with blas_threads(2):
        X = np.random.default_rng(0).standard_normal((200, 4))
        kpca.KernelPCA(3, kernel="rbf", eigen_solver="dense").fit(X)
    assert seen and all(s == {2} for s in seen)


def test_float32_error_estimate_runs_on_one_blas_thread(monkeypatch):
    seen: list[set[int]] = []
    _spy(monkeypatch, np.linalg, "eigvalsh", seen)
    X = np.random.default_rng(1).standard_normal((500, 3))
    with blas_threads(2):
        err = float32_eigen_error(RBF(gamma=0.5), X, random_state=0)
    assert np.isfinite(err) and err > 0
    assert seen == [{1}]


@pytest.mark.parametrize("workers", [1, 2])
def test_blas_threads_restores_the_setting(workers):
    with blas_threads(workers):
        before = _blas_threads()
        with blas_threads(1):
            assert _blas_threads() == {1}
        assert _blas_threads() == before
