"""GrowingGram: the shifted kernel matrix of a growing row set (incremental KPCA).

Every check is against the dense NumPy kernel matrix ``K`` of all rows appended so
far: the stored matrix is ``T = K - a 1^T - 1 a^T`` for the operator's own shift
``a``, its products, row sums and centring are those of ``T`` / ``K``, whatever the
sizes of the batches (including batches of one row merged into the last block row)
and the storage precision.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics.pairwise import rbf_kernel

import kpca
import kpca.operators._tiled as tiled
from kpca import _native
from kpca.operators import CenteredOperator, GrowingGram, NewColumns

GAMMA = 0.3
#: storage precision -> relative tolerance of values and products
TOL = {np.float64: 1e-12, np.float32: 1e-5}


def _rows(n, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _grow(X, sizes, dtype=np.float64):
    """A GrowingGram fed the rows of X in batches of ``sizes``; also every Tb returned."""
    gram = GrowingGram(dtype)
    returned = []
    n = 0
    for b in sizes:
        Xall = X[: n + b]
        B = rbf_kernel(X[n : n + b], Xall, gamma=GAMMA)
        returned.append(gram.append(B))
        n += b
    assert n == X.shape[0]
    return gram, returned


def _H(n):
    return np.eye(n) - np.ones((n, n)) / n


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


#: batch sizes: single rows merged into a short last block row, a block row longer than
#: growing_min_block_rows (256) followed by a new one, ragged sizes
SIZES = {
    "singles-then-big": [1, 1, 3, 1, 260, 1, 2, 7],
    "one-batch": [40],
    "ragged": [5, 1, 1, 12, 1, 9, 30, 1],
}


@pytest.fixture(params=["default-blocks", "tiny-blocks"])
def block_rows(request, monkeypatch):
    """Natural block sizes, and growing_min_block_rows=4 / tiny chunks / tiles of 3 (many
    block rows, several chunks per block row and several bands and tiles per block row,
    on few rows)."""
    if request.param == "tiny-blocks":
        with kpca.config_context(growing_min_block_rows=4, growing_piece_bytes=64,
                                 growing_tile_cols=3):
            yield request.param
    else:
        yield request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
def test_stored_matrix_is_the_shifted_kernel_matrix(sizes, dtype, block_rows):
    X = _rows(sum(sizes))
    # the kernel values as stored (float32 storage rounds them first; the
    # bookkeeping then sums the rounded values in float64)
    K = rbf_kernel(X, gamma=GAMMA).astype(dtype).astype(np.float64)
    gram, _ = _grow(X, sizes, dtype)
    n = X.shape[0]
    assert gram.shape == (n, n) and gram.n == n
    a = gram.shift
    T = K - a[:, None] - a[None, :]
    dense = gram.to_dense()
    assert dense.dtype == np.dtype(dtype)
    assert _rel(dense, T) <= TOL[dtype]
    np.testing.assert_allclose(dense, dense.T, rtol=0, atol=1e-15 if dtype is np.float64 else 0)
    # the bookkeeping: K 1, k(x, x), T 1 and the diagonal of T
    np.testing.assert_allclose(gram.row_sums, K.sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(gram.diag_k, np.diag(K), rtol=0, atol=1e-14)
    np.testing.assert_allclose(gram.shifted_row_sums(), T.sum(axis=1), rtol=0,
                               atol=1e-10 * np.abs(K).sum(axis=1).max())
    np.testing.assert_allclose(gram.row_means(), T.mean(axis=1), rtol=0, atol=1e-12 * n)
    np.testing.assert_allclose(gram.diag(), np.diag(T), rtol=TOL[dtype], atol=TOL[dtype])
    if block_rows == "tiny-blocks" and len(sizes) > 1:
        assert len(gram.blocks) > 1
    assert gram.nbytes == sum(T_.nbytes for _, T_ in gram.blocks)


def test_shift_is_each_rows_mean_at_arrival_minus_half_the_grand_mean():
    sizes = [3, 1, 6, 2]
    X = _rows(sum(sizes))
    gram, _ = _grow(X, sizes)
    n = 0
    for b in sizes:
        N = n + b
        K = rbf_kernel(X[:N], gamma=GAMMA)
        expected = K[n:N].sum(axis=1) / N - K.sum() / (N * N) / 2
        np.testing.assert_allclose(gram.shift[n:N], expected, rtol=1e-13, atol=1e-15)
        n = N


def test_append_returns_the_new_shifted_rows():
    sizes = [4, 1, 7]
    X = _rows(sum(sizes))
    gram, returned = _grow(X, sizes)
    K = rbf_kernel(X, gamma=GAMMA)
    T = K - gram.shift[:, None] - gram.shift[None, :]
    n = 0
    for b, Tb in zip(sizes, returned, strict=True):
        assert Tb.shape == (b, n + b) and Tb.dtype == np.float64
        np.testing.assert_allclose(Tb, T[n : n + b, : n + b], rtol=0, atol=1e-14)
        n += b


def test_single_rows_are_merged_into_the_last_short_block_row():
    X = _rows(10)
    gram, _ = _grow(X, [1] * 10)
    assert len(gram.blocks) == 1  # 10 < growing_min_block_rows rows: one block row
    r0, T = gram.blocks[0]
    assert r0 == 0 and T.shape == (10, 10)
    # a block row of growing_min_block_rows rows or more is closed: the next batch starts one
    rows = kpca.get_config()["growing_min_block_rows"]
    X = _rows(rows + 2)
    gram, _ = _grow(X, [rows, 1, 1])
    assert [(r0, T.shape[0]) for r0, T in gram.blocks] == [(0, rows), (rows, 2)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
def test_matmat_equals_the_dense_product(sizes, dtype, block_rows):
    X = _rows(sum(sizes))
    K = rbf_kernel(X, gamma=GAMMA)
    gram, _ = _grow(X, sizes, dtype)
    T = K - gram.shift[:, None] - gram.shift[None, :]
    n = X.shape[0]
    rng = np.random.default_rng(1)
    V = rng.normal(size=(n, 5))
    got = gram.matmat(V)
    assert got.dtype == np.float64 and got.shape == (n, 5)
    # float32 storage: the values are rounded once, the products accumulate in float64
    scale = np.abs(T).sum(axis=1).max() * np.abs(V).max()
    np.testing.assert_allclose(got, T @ V, rtol=0, atol=TOL[dtype] * scale)
    v = V[:, 0]
    gv = gram.matvec(v)
    assert gv.shape == (n,)
    np.testing.assert_allclose(gv, T @ v, rtol=0, atol=TOL[dtype] * scale)
    # a 1-D argument of matmat gives a 1-D result
    np.testing.assert_allclose(gram.matmat(v), T @ v, rtol=0, atol=TOL[dtype] * scale)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_matmat_does_not_depend_on_the_threads(n_jobs):
    sizes = [5, 1, 7, 3, 9]
    X = _rows(sum(sizes))
    with kpca.config_context(growing_min_block_rows=4, growing_piece_bytes=64,
                             growing_tile_cols=3):
        gram, _ = _grow(X, sizes)
        gram.n_jobs = n_jobs
        T = gram.to_dense()
        V = np.random.default_rng(2).normal(size=(X.shape[0], 3))
        np.testing.assert_allclose(gram.matmat(V), T @ V, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
def test_centering_of_the_shifted_matrix_is_the_centred_kernel_matrix(sizes, dtype):
    X = _rows(sum(sizes))
    n = X.shape[0]
    K = rbf_kernel(X, gamma=GAMMA)
    Kc = _H(n) @ K @ _H(n)
    gram, _ = _grow(X, sizes, dtype)
    op = CenteredOperator(gram, gram.centering())
    tol = TOL[dtype] * np.abs(K).max()
    np.testing.assert_allclose(op.to_dense(), Kc, rtol=0, atol=10 * tol)
    V = np.random.default_rng(3).normal(size=(n, 4))
    np.testing.assert_allclose(op.matmat(V), Kc @ V, rtol=0,
                               atol=10 * tol * np.abs(V).sum(axis=0).max())
    # the diagonal of the centred matrix from k(x, x) and the centring statistics
    np.testing.assert_allclose(gram.centering().train_diag(gram.diag()), np.diag(Kc),
                               rtol=0, atol=10 * tol)
    # H T H = H K H: centring removes any shift exactly (in exact arithmetic)
    T = K - gram.shift[:, None] - gram.shift[None, :]
    np.testing.assert_allclose(_H(n) @ T @ _H(n), Kc, rtol=0, atol=1e-12)


def test_kernel_centering_holds_the_statistics_of_k_itself():
    sizes = [6, 1, 13]
    X = _rows(sum(sizes))
    K = rbf_kernel(X, gamma=GAMMA)
    gram, _ = _grow(X, sizes)
    c = gram.kernel_centering()
    np.testing.assert_allclose(c.row_means, K.mean(axis=1), rtol=1e-13)
    assert c.grand_mean == pytest.approx(K.mean(), rel=1e-13)


@pytest.mark.parametrize(("src", "dst"), [(np.float64, np.float32), (np.float32, np.float64),
                                          (np.float64, np.float64)])
def test_astype_preserves_the_values(src, dst):
    sizes = [7, 1, 1, 20]
    X = _rows(sum(sizes))
    gram, _ = _grow(X, sizes, src)
    other = gram.astype(dst)
    assert other is not gram and other.dtype == np.dtype(dst)
    assert other.shape == gram.shape
    assert all(T.dtype == np.dtype(dst) for _, T in other.blocks)
    tol = TOL[np.float32] if np.float32 in (src, dst) else 0.0
    np.testing.assert_allclose(other.to_dense(), gram.to_dense().astype(dst), rtol=tol, atol=0)
    np.testing.assert_array_equal(other.shift, gram.shift)
    np.testing.assert_array_equal(other.row_sums, gram.row_sums)
    np.testing.assert_array_equal(other.diag_k, gram.diag_k)
    # the original is untouched, and the copy keeps growing correctly
    assert gram.dtype == np.dtype(src)
    Xn = np.vstack([X, _rows(3, seed=5)])
    other.append(rbf_kernel(Xn[-3:], Xn, gamma=GAMMA))
    assert gram.shape == (X.shape[0],) * 2
    K = rbf_kernel(Xn, gamma=GAMMA)
    T = K - other.shift[:, None] - other.shift[None, :]
    assert _rel(other.to_dense(), T) <= TOL[dst if dst is np.float32 else src]


@pytest.mark.parametrize("cols", [0, 2, 5, 7])  # 4 rows seen: a batch of 2 needs 6 columns
def test_append_with_the_wrong_number_of_columns_raises(cols):
    X = _rows(4)
    gram, _ = _grow(X, [4])
    before = gram.to_dense().copy()
    with pytest.raises(ValueError, match=rf"expected 6 columns, got {cols}"):
        gram.append(np.ones((2, cols)))
    # the matrix is unchanged
    assert gram.shape == (4, 4)
    np.testing.assert_array_equal(gram.to_dense(), before)


def test_empty_operator():
    gram = GrowingGram()
    assert gram.shape == (0, 0) and gram.nbytes == 0
    assert gram.to_dense().shape == (0, 0)
    assert gram.centering().row_means.shape == (0,)


def test_bytes_for_bounds_the_storage():
    # stored lower block rows take about n^2 / 2 values, never more than bytes_for says
    for sizes in SIZES.values():
        for dtype in (np.float64, np.float32):
            X = _rows(sum(sizes))
            gram, _ = _grow(X, sizes, dtype)
            n = X.shape[0]
            assert gram.nbytes <= GrowingGram.bytes_for(n, np.dtype(dtype).itemsize)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
def test_append_computes_the_new_rows_products_with_v(sizes, dtype, block_rows):
    # T_bn V, written while the new block is shifted, equals the dense shifted rows times V
    X = _rows(sum(sizes) + 9)
    gram, _ = _grow(X[:-9], sizes, dtype)
    n = gram.n
    V = np.random.default_rng(1).normal(size=(n, 4))
    out = np.full((9, 4), np.nan)
    Tb = gram.append(rbf_kernel(X[n:], X, gamma=GAMMA).astype(dtype), V, out=out)
    T = gram.to_dense().astype(np.float64)
    assert _rel(Tb.astype(np.float64), T[n:]) <= TOL[dtype]
    assert _rel(out, T[n:, :n] @ V) <= TOL[dtype]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_append_of_non_finite_values_raises_and_stores_nothing(bad):
    X = _rows(6)
    gram, _ = _grow(X[:4], [4])
    before = gram.to_dense().copy()
    B = rbf_kernel(X[4:], X, gamma=GAMMA)
    B[1, 2] = bad
    with pytest.raises(ValueError, match="not finite"):
        gram.append(B)
    assert gram.shape == (4, 4)
    np.testing.assert_array_equal(gram.to_dense(), before)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_new_columns_are_the_centred_matrix_columns_of_the_new_rows(dtype, block_rows):
    # NewColumns (its products and its new block) against the dense centred matrix
    X = _rows(50)
    gram, _ = _grow(X[:41], [20, 1, 20], dtype)
    Tb = gram.append(rbf_kernel(X[41:], X, gamma=GAMMA).astype(dtype))
    new = NewColumns(Tb, gram.shifted_row_sums())
    K = rbf_kernel(X, gamma=GAMMA)
    E = (_H(50) @ K @ _H(50))[:, 41:]
    U = np.random.default_rng(2).normal(size=(9, 3))
    assert _rel(new.matmat(U), E @ U) <= 10 * TOL[dtype]
    assert _rel(new.new_block(), E[41:]) <= 10 * TOL[dtype]
    # with out: E U added in place (no new array), the start unchanged otherwise
    start = np.asfortranarray(np.random.default_rng(3).normal(size=(50, 3)))
    out = start.copy(order="F")
    assert new.matmat(U, out=out) is out
    assert _rel(out, start + E @ U) <= 10 * TOL[dtype]
    assert new.matmat(np.zeros((9, 0))).shape == (50, 0)
    # an out the product cannot be added to in place is refused, and left as it was
    for bad in (np.zeros((50, 3)), np.zeros((50, 3), dtype=np.float32, order="F"),
                np.zeros((50, 4), order="F")):
        before = bad.copy()
        with pytest.raises(ValueError, match="Fortran-contiguous float64"):
            new.matmat(U, out=bad)
        np.testing.assert_array_equal(bad, before)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_start_products_are_the_grown_centred_matrix_times_padded_directions(dtype,
                                                                             block_rows):
    # K~ [V; 0] of the grown matrix from the old centred products, the old shifted row
    # sums and T_bn V (no pass), against the dense centred matrix of all rows
    X = _rows(50)
    gram, _ = _grow(X[:41], [20, 1, 20], dtype)
    t_old = gram.shifted_row_sums()
    K_old = rbf_kernel(X[:41], gamma=GAMMA)
    Kc_old = _H(41) @ K_old @ _H(41)
    V = np.random.default_rng(4).normal(size=(41, 5))
    V -= V.mean(axis=0)  # (orthogonal to 1, as the Ritz vectors)
    V = np.linalg.qr(V)[0]
    TbV = np.empty((9, 5))
    Tb = gram.append(rbf_kernel(X[41:], X, gamma=GAMMA).astype(dtype), V, out=TbV)
    new = NewColumns(Tb, gram.shifted_row_sums())
    KV_old = Kc_old @ V
    KV = new.start_products(KV_old.copy(), t_old, V, TbV)
    Kc = _H(50) @ rbf_kernel(X, gamma=GAMMA) @ _H(50)
    assert KV.flags.f_contiguous and KV.shape == (50, 5)
    assert _rel(KV, Kc[:, :41] @ V) <= 10 * TOL[dtype]
    np.testing.assert_array_equal(KV_old, Kc_old @ V)  # its inputs are not modified


# ----------------------------------------------------------------------------- build
@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("kernel", "center"), [("rbf", False), ("poly", True)])
@pytest.mark.parametrize("rows", [7, 40, 100])
def test_build_stores_the_shifted_kernel_matrix_with_its_sums_and_probe(
        rows, kernel, center, dtype, n_jobs):
    """GrowingGram.build (all rows at once, one sweep) against the dense kernel matrix:
    the stored matrix is K shifted by the operator's own shift (0, or the exact
    centring with ``center``), its row sums, diagonal and centring are those of K, and
    the probe's product comes with it; the matrix then grows by appends."""
    from sklearn.metrics.pairwise import polynomial_kernel

    from kpca.kernels import make_kernel

    X = _rows(61, d=4)
    params = dict(gamma=GAMMA) if kernel == "rbf" else dict(gamma=0.5, degree=3, coef0=1.0)
    kern = make_kernel(kernel, **params).resolve(X)
    dense = (lambda A, B=None: rbf_kernel(A, B, gamma=GAMMA)) if kernel == "rbf" else (
        lambda A, B=None: polynomial_kernel(A, B, **params))
    K = dense(X)
    P = np.random.default_rng(4).normal(size=(61, 3))
    with kpca.config_context(growing_piece_bytes=64 if rows == 7 else 2 * 2**20):
        gram, TP = GrowingGram.build(kern, X, dtype=dtype, rows=rows, n_jobs=n_jobs,
                                     probe=P, center=center)
    assert gram.shape == (61, 61) and gram.dtype == np.dtype(dtype)
    assert [r0 for r0, _ in gram.blocks] == list(range(0, 61, rows))
    a = gram.shift
    if not center:
        np.testing.assert_array_equal(a, 0)
    T = K - a[:, None] - a[None, :]
    tol = TOL[dtype] * np.abs(K).max()
    np.testing.assert_allclose(gram.to_dense(), T, rtol=0, atol=tol)
    if center:  # T is the centred matrix itself
        np.testing.assert_allclose(T, _H(61) @ K @ _H(61), rtol=0, atol=10 * tol)
    D = gram.to_dense()
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_allclose(gram.row_sums, K.sum(axis=1), rtol=0, atol=61 * tol)
    np.testing.assert_allclose(gram.diag_k, np.diag(K), rtol=0, atol=tol)
    scale = np.abs(T).sum(axis=1).max() * np.abs(P).max()
    np.testing.assert_allclose(TP, T @ P, rtol=0, atol=10 * TOL[dtype] * scale)
    op = CenteredOperator(gram, gram.centering())
    Kc = _H(61) @ K @ _H(61)
    np.testing.assert_allclose(op.to_dense(), Kc, rtol=0, atol=10 * tol)
    # appends continue it
    Xn = np.vstack([X, _rows(5, d=4, seed=9)])
    gram.append(np.asarray(dense(Xn[-5:], Xn), dtype=dtype))
    Kn = dense(Xn)
    op = CenteredOperator(gram, gram.centering())
    np.testing.assert_allclose(op.to_dense(), _H(66) @ Kn @ _H(66), rtol=0, atol=10 * tol)


@pytest.mark.skipif(not tiled.NATIVE, reason="needs kpca's compiled tile product")
@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize(("rows", "side"), [(7, 16), (40, 16), (61, 2048), (25, 8)])
def test_compiled_build_matches_the_dense_matrix_and_the_numpy_build(rows, side, n_jobs,
                                                                      monkeypatch):
    """The RBF kernel in float32 is built by the compiled construction sweep (bands of
    at most ``growing_tile_cols`` rows cut into tiles): its stored matrix, row sums,
    diagonal and probe product against the dense float64 kernel matrix, the tiles
    those of the NumPy build, and the diagonal tiles exactly symmetric."""
    from kpca.kernels import make_kernel

    X = _rows(61, d=4, seed=3)
    kern = make_kernel("rbf", gamma=GAMMA).resolve(X)
    K = rbf_kernel(X, gamma=GAMMA)
    P = np.random.default_rng(5).normal(size=(61, 3))
    calls = []
    real = tiled.compiled_build
    monkeypatch.setattr(tiled, "compiled_build", lambda *a: calls.append(1) or real(*a))
    with kpca.config_context(growing_tile_cols=side):
        gram, TP = GrowingGram.build(kern, X, dtype=np.float32, rows=rows, n_jobs=n_jobs,
                                     probe=P)
        monkeypatch.setattr(tiled, "compiled_rbf", lambda *a: None)
        ref, TP_ref = GrowingGram.build(kern, X, dtype=np.float32, rows=rows, n_jobs=n_jobs,
                                        probe=P)
    assert calls and len(calls) == sum(len(tiles) for _, tiles in gram.bands)
    assert [(a, [(c0, T.shape) for c0, T in tiles]) for a, tiles in gram.bands] == [
        (a, [(c0, T.shape) for c0, T in tiles]) for a, tiles in ref.bands]
    tol = TOL[np.float32]
    D = gram.to_dense()
    np.testing.assert_array_equal(D, D.T)
    np.testing.assert_allclose(D, K, rtol=0, atol=tol)
    np.testing.assert_allclose(D, ref.to_dense(), rtol=0, atol=tol)
    np.testing.assert_array_equal(gram.shift, 0)
    np.testing.assert_allclose(gram.row_sums, K.sum(axis=1), rtol=0, atol=61 * tol)
    np.testing.assert_array_equal(gram.diag_k, np.diag(K))
    scale = np.abs(K).sum(axis=1).max() * np.abs(P).max()
    np.testing.assert_allclose(TP, K @ P, rtol=0, atol=10 * tol * scale)
    np.testing.assert_allclose(TP, D.astype(np.float64) @ P, rtol=0, atol=10 * tol * scale)
    op = CenteredOperator(gram, gram.centering())
    np.testing.assert_allclose(op.to_dense(), _H(61) @ K @ _H(61), rtol=0, atol=10 * tol)


@pytest.mark.skipif(not tiled.NATIVE, reason="needs kpca's compiled tile product")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_compiled_build_of_a_non_finite_kernel_raises():
    from kpca.kernels import make_kernel

    X = _rows(30, d=4)
    kern = make_kernel("rbf", gamma=GAMMA).resolve(X)
    X[3, 0] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        GrowingGram.build(kern, X, dtype=np.float32, rows=8)


def test_build_of_a_non_finite_kernel_raises():
    from kpca.kernels import make_kernel

    X = _rows(10)
    X[3, 0] = np.nan
    kern = make_kernel("rbf", gamma=GAMMA)
    with pytest.raises(ValueError, match="not finite"):
        GrowingGram.build(kern, X, dtype=np.float64, rows=4)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("first", ["append", "append_kernel"])
def test_append_kernel_equals_the_dense_matrix(sizes, first, dtype, block_rows):
    """append_kernel (evaluation, sums and T_bn V in one sweep, the new rows unshifted)
    after shifted appends or not: the stored matrix is K shifted by the operator's own
    shift, the sums are K's, T_bn V is the product with the stored new rows."""
    from kpca.kernels import make_kernel

    X = _rows(sum(sizes))
    kern = make_kernel("rbf", gamma=GAMMA)
    K = rbf_kernel(X, gamma=GAMMA)
    gram = GrowingGram(dtype)
    n = 0
    for i, b in enumerate(sizes):
        V = np.random.default_rng(i).normal(size=(n, 3))
        if i == 0 and first == "append":  # a shifted first block row (a != 0)
            Tb, TbV = gram.append(np.array(K[:b, :b], dtype=dtype)), None
        else:
            Tb, TbV = gram.append_kernel(kern, X[n : n + b], X[: n + b], V)
        n += b
        T = K[:n, :n] - gram.shift[:, None] - gram.shift[None, :]
        tol = TOL[dtype]
        np.testing.assert_allclose(Tb, T[n - b :], rtol=0, atol=tol)
        if TbV is not None:
            np.testing.assert_allclose(TbV, Tb[:, : n - b].astype(np.float64) @ V, rtol=0,
                                       atol=tol * max(1.0, np.abs(V).sum(axis=0).max()))
    np.testing.assert_array_equal(gram.shift[sizes[0]:], 0)
    if first == "append_kernel":
        np.testing.assert_array_equal(gram.shift, 0)
    np.testing.assert_allclose(gram.to_dense(), T, rtol=0, atol=TOL[dtype])
    np.testing.assert_allclose(gram.row_sums, K.sum(axis=1), rtol=0, atol=n * TOL[dtype])
    np.testing.assert_allclose(gram.diag_k, 1.0, rtol=0, atol=0)
    op = CenteredOperator(gram, gram.centering())
    np.testing.assert_allclose(op.to_dense(), _H(n) @ K @ _H(n), rtol=0, atol=10 * TOL[dtype])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the inf row's arithmetic
def test_append_kernel_of_a_non_finite_batch_raises_and_stores_nothing():
    from kpca.kernels import make_kernel

    X = _rows(12)
    kern = make_kernel("rbf", gamma=GAMMA)
    gram = GrowingGram()
    gram.append_kernel(kern, X[:8], X[:8])
    before = gram.to_dense().copy()
    Y = X.copy()
    Y[9, 1] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        gram.append_kernel(kern, Y[8:], Y)
    assert gram.shape == (8, 8)
    np.testing.assert_array_equal(gram.to_dense(), before)


@pytest.fixture(params=["numpy", *(tiled._tileprod_ext.variants()
                                   if tiled._tileprod_ext is not None else ())])
def product_path(request, monkeypatch):
    """Every compiled tile product this CPU runs, and NumPy's products."""
    if request.param == "numpy":
        monkeypatch.setattr(tiled, "NATIVE", False)
        return request.param
    fns = _native.bind(tiled._tileprod_ext, request.param)
    monkeypatch.setattr(tiled, "_tileprod", fns)
    monkeypatch.setattr(tiled, "NATIVE", True)
    monkeypatch.setattr(tiled, "NATIVE_WIDTH", dict(zip(
        [np.dtype(np.float32), np.dtype(np.float64)], fns.widths, strict=True)))
    return request.param


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cols", [1, 5, 16, 19])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_tiled_products_equal_the_dense_product(product_path, dtype, cols, n_jobs):
    """Bands and tiles that do not divide the block rows (tiles of 7: a band of 20 rows
    is 3 bands, the last of 6), any number of columns (padded to the compiled kernel's
    vector), against the dense product of the matrix as stored."""
    sizes = [20, 1, 3, 9, 40]
    X = _rows(sum(sizes))
    with kpca.config_context(growing_min_block_rows=4, growing_tile_cols=7):
        gram, _ = _grow(X, sizes, dtype)
    assert all(T.shape[0] <= 7 and T.shape[1] <= 7 and T.flags.c_contiguous
               for _, band in gram.bands for _, T in band)
    assert all(band[-1][0] == a and band[-1][1].shape[0] == band[-1][1].shape[1]
               for a, band in gram.bands)
    gram.n_jobs = n_jobs
    T = gram.to_dense().astype(np.float64)
    np.testing.assert_array_equal(T, T.T)
    V = np.random.default_rng(3).normal(size=(X.shape[0], cols))
    got = gram.matmat(V)
    assert got.shape == (X.shape[0], cols) and got.dtype == np.float64
    # float32: V rounded to float32 and each tile's sums in float32 (<= 7 terms)
    scale = np.abs(T).sum(axis=1).max() * np.abs(V).max()
    np.testing.assert_allclose(got, T @ V, rtol=0, atol=TOL[dtype] * scale)
