"""memory_limit: the fit stays within the budget it is given, and results do not change.

Peak memory is measured with tracemalloc, which sees NumPy's array buffers: the
sum of everything the fit allocates at its peak, besides the input.
"""

import tracemalloc

import numpy as np
import pytest

from kpca import KernelPCA
from kpca._memory import parse_memory


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3000, 5)), rng.normal(size=(50, 5))


def _fit_peak(est, X):
    tracemalloc.start()
    try:
        est.fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("limit", ["18MB", "30MB"])
def test_fit_stays_within_memory_limit_and_matches_unlimited(data, limit):
    X, T = data
    n = X.shape[0]
    ref = KernelPCA(5, kernel="rbf", gamma=0.2, precision="float64", random_state=0).fit(X)
    est = KernelPCA(5, kernel="rbf", gamma=0.2, precision="float64", random_state=0,
                    memory_limit=limit)
    peak = _fit_peak(est, X)
    budget = parse_memory(limit)
    assert n * n * 8 > 2 * budget  # the Gram matrix (72 MB) could never fit
    # X_fit_ is a copy of the input (copy_X=True): allowed on top of the budget
    assert peak <= budget + X.nbytes, (peak, budget)
    np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(np.abs(est.transform(T)), np.abs(ref.transform(T)), atol=1e-7)


def test_limit_below_solver_workspace_is_a_clear_error(data):
    X, _ = data
    with pytest.raises(ValueError, match="memory_limit=.* too small"):
        KernelPCA(5, kernel="rbf", eigen_solver="krylov", memory_limit="2MB").fit(X)


def test_dense_solver_refuses_a_matrix_beyond_the_limit(data):
    X, _ = data
    with pytest.raises(ValueError, match="memory_limit"):
        KernelPCA(5, kernel="rbf", eigen_solver="dense", memory_limit="1MB").fit(X)


@pytest.mark.parametrize("bad", ["lots", -5, 0, "2 parsecs", True])
def test_bad_memory_limit_is_a_clear_error(data, bad):
    X, _ = data
    with pytest.raises(ValueError, match="memory_limit"):
        KernelPCA(2, memory_limit=bad).fit(X[:20])


def test_memory_limit_strings():
    assert parse_memory("2GB") == 2 * 2**30
    assert parse_memory("512 MiB") == 512 * 2**20
    assert parse_memory("1.5g") == int(1.5 * 2**30)
    assert parse_memory(1000) == 1000
    assert parse_memory(None) is None


def test_transform_is_blocked_over_rows():
    # 20000 new rows against 2000 training rows: one cross-kernel matrix would be
    # 320 MB in float64; row blocks keep the peak to a few 32 MB blocks per thread
    rng = np.random.default_rng(1)
    X, T = rng.normal(size=(2000, 4)), rng.normal(size=(20000, 4))
    est = KernelPCA(3, kernel="rbf", gamma=0.3, random_state=0).fit(X)
    tracemalloc.start()
    try:
        Z = est.transform(T)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    full = T.shape[0] * X.shape[0] * 8
    assert peak < full / 2.5, (peak, full)
    # and blocking changes nothing: compare with one row at a time on a sample
    idx = [0, 1234, 19999]
    np.testing.assert_allclose(Z[idx], np.vstack([est.transform(T[i : i + 1]) for i in idx]),
                               rtol=1e-12, atol=1e-12)


def test_transform_blocks_follow_a_small_memory_limit():
    # with memory_limit="16MB" the transform's blocks shrink below the default 32 MB
    rng = np.random.default_rng(2)
    X, T = rng.normal(size=(2000, 4)), rng.normal(size=(6000, 4))
    est = KernelPCA(3, kernel="rbf", gamma=0.3, random_state=0, memory_limit="16MB").fit(X)
    ref = KernelPCA(3, kernel="rbf", gamma=0.3, random_state=0).fit(X)
    tracemalloc.start()
    try:
        Z = est.transform(T)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the output itself (6000 x 3) is allowed on top of the limit
    assert peak <= parse_memory("16MB") / 2 + Z.nbytes, peak
    np.testing.assert_allclose(Z, ref.transform(T), rtol=1e-10, atol=1e-10)


def test_byte_sizes_in_messages_use_readable_units():
    from kpca._memory import format_bytes

    assert format_bytes(900) == "900 B"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(5 * 2**20) == "5.00 MiB"
    assert format_bytes(3 * 2**30) == "3.00 GiB"
    X = np.random.default_rng(0).random((300, 3))
    with pytest.raises(ValueError, match=r"\(703.12 KiB\) but memory_limit allows 100.00 KiB"):
        KernelPCA(2, kernel="rbf", eigen_solver="dense", memory_limit="100KB").fit(X)
