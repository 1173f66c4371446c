"""The operator contract: every backend against the dense NumPy reference.

Each backend is built by a factory from (kernel, X, centre?) and must give the
same ``matmat``, ``diag``, ``trace``, ``row_means`` and centring of new rows as
the dense matrix ``H K H`` computed by hand. Backends: dense (centred in place or
wrapped), tiled (all tiles kept, some kept, matrix-free under a budget of one or
two tiles) and Dask (``K @ V`` computed by tasks on an in-process cluster).
"""

import numpy as np
import pytest

from kpca.kernels import RBF, Polynomial
from kpca.operators import (
    CenteredOperator,
    Centering,
    DenseOperator,
    TiledKernelOperator,
    center,
)


def _reference(K, centred):
    n = K.shape[0]
    H = np.eye(n) - np.ones((n, n)) / n
    return H @ K @ H if centred else K


def dense_inplace(kernel, X, K):
    return center(DenseOperator(K.copy(), owned=True), inplace=True)


def dense_wrapped(kernel, X, K):
    return center(DenseOperator(K.copy(), owned=False), inplace=False)


def _tiled(memory_limit, inplace, n_jobs=2, piece=None):
    def make(kernel, X, K):
        # tile=7 on 40 rows: 6 x 6 tiles with a ragged last one; a budget of a few
        # tiles keeps some and recomputes the rest on every pass; piece=(2, 3): the
        # recomputed tiles in ragged pieces (square ones on the diagonal tiles)
        op = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=memory_limit,
                                 n_jobs=n_jobs, tile=7, piece=piece)
        return center(op, inplace=inplace)

    return make


def dask_backend(kernel, X, K, client):
    from kpca.distributed import DaskKernelOperator

    # 9-row tasks on 40 rows: several blocks, the last one ragged
    return center(DaskKernelOperator(kernel, X, dtype=np.float64, client=client,
                                     block_rows=9))


BACKENDS = {
    "dense-inplace": dense_inplace,
    "dense-wrapped": dense_wrapped,
    "tiled-stored": _tiled(None, True),
    "tiled-partly-stored": _tiled(2 * 7 * 7 * 8 + 5 * 7 * 7 * 8, True),
    "tiled-matrix-free": _tiled(2 * 7 * 7 * 8, True),
    "tiled-matrix-free-1-thread": _tiled(7 * 7 * 8, True, n_jobs=1),
    "tiled-matrix-free-pieces": _tiled(2 * 7 * 7 * 8, True, piece=(2, 3)),
    "tiled-partly-stored-pieces": _tiled(2 * 7 * 7 * 8 + 5 * 7 * 7 * 8, True, piece=(3, 2)),
    "tiled-matrix-free-uncentred-pieces": _tiled(2 * 7 * 7 * 8, False, piece=(2, 3)),
    "tiled-wrapped": _tiled(None, False),
    "dask": dask_backend,
}


def build(backend, request, kernel, X, K):
    """The centred operator and its ``Centering`` for ``backend``."""
    if backend == "dask":
        return dask_backend(kernel, X, K, request.getfixturevalue("dask_client"))
    return BACKENDS[backend](kernel, X, K)


@pytest.fixture(params=[RBF(gamma=0.3), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                ids=["rbf", "poly"])
def gram(request):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    T = rng.normal(size=(9, 3))
    return request.param, X, T, request.param.block(X)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_matmat_diag_trace_match_dense_reference(backend, gram, request):
    kernel, X, T, K = gram
    op, c = build(backend, request, kernel, X, K)
    ref = _reference(K, True)
    V = np.random.default_rng(1).normal(size=(K.shape[0], 5))
    np.testing.assert_allclose(op.matmat(V), ref @ V, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.matvec(V[:, 0]), ref @ V[:, 0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(op.diag(), np.diag(ref), rtol=1e-10, atol=1e-12)
    assert op.trace() == pytest.approx(np.trace(ref))
    np.testing.assert_allclose(op.to_dense(), ref, atol=1e-10)
    np.testing.assert_allclose(op.aslinearoperator() @ V, ref @ V, atol=1e-10)


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_centring_of_new_rows_uses_training_mean(backend, gram, request):
    kernel, X, T, K = gram
    _, c = build(backend, request, kernel, X, K)
    n, m = K.shape[0], T.shape[0]
    Kt = kernel.block(T, X)
    one_n = np.ones((n, n)) / n
    one_mn = np.ones((m, n)) / n
    # (docs/math.md, "Centring in feature space")
    ref = Kt - one_mn @ K - Kt @ one_n + one_mn @ K @ one_n
    # new rows go through the fitted subspace built on this backend's statistics
    A = np.random.default_rng(2).normal(size=(n, 3))
    whole = _space(kernel, X, np.eye(n), c).raw_projection(T)[0]  # A = I: K~_t itself
    np.testing.assert_allclose(whole, ref, atol=1e-10)
    Y, nrm = _space(kernel, X, A, c).raw_projection(T)
    np.testing.assert_allclose(Y, ref @ A, atol=1e-10)
    # one row alone is centred exactly as inside the batch
    np.testing.assert_allclose(_space(kernel, X, A, c).raw_projection(T[:1])[0], (ref @ A)[:1],
                               atol=1e-10)
    # ||phi~(t)||^2 from the kernel diagonal
    ref_nrm = kernel.diag(T) - 2 * Kt.mean(1) + K.mean()
    np.testing.assert_allclose(nrm, ref_nrm, atol=1e-10)


def _space(kernel, X, A, c):
    """The fitted subspace of dual coefficients ``A`` under centring ``c``."""
    from kpca import FittedSubspace

    k = A.shape[1]
    return FittedSubspace.from_dual(kernel, X, A, c, basis_scores=np.zeros((len(X), k)),
                                    score_variance=np.ones(k))


def test_centring_training_rows_reproduces_centred_matrix(gram):
    kernel, X, T, K = gram
    _, c = dense_wrapped(kernel, X, K)
    whole = _space(kernel, X, np.eye(len(X)), c).raw_projection(X)[0]
    np.testing.assert_allclose(whole, _reference(K, True), atol=1e-10)


def test_no_centring_is_identity(gram):
    kernel, X, T, K = gram
    c = Centering.none(K.shape[0])
    Kt = kernel.block(T, X)
    np.testing.assert_allclose(_space(kernel, X, np.eye(len(X)), c).raw_projection(T)[0], Kt,
                               atol=1e-12)
    A = np.ones((K.shape[0], 2))
    np.testing.assert_allclose(_space(kernel, X, A, c).raw_projection(T)[0], Kt @ A)


def test_wrapper_never_copies_the_matrix(gram):
    kernel, X, T, K = gram
    base = DenseOperator(K, owned=False)
    op, _ = center(base, inplace=True)  # not owned: must wrap, not modify
    assert isinstance(op, CenteredOperator)
    np.testing.assert_array_equal(base.A, K)
    assert op.nbytes == K.nbytes


def test_float32_operator_keeps_dtype(gram):
    kernel, X, T, K = gram
    op, _ = dense_inplace(kernel, X, K.astype(np.float32))
    assert op.matmat(np.ones((K.shape[0], 2), dtype=np.float32)).dtype == np.float32


def test_dense_operator_rejects_non_square():
    with pytest.raises(ValueError, match="square"):
        DenseOperator(np.ones((3, 4)))


def test_tiled_memory_bounded_and_tiles_recomputed(gram):
    kernel, X, T, K = gram
    tile_bytes = 7 * 7 * 8
    op = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=2 * tile_bytes + 3 *
                             tile_bytes, n_jobs=2, tile=7)
    assert op.nbytes <= 3 * tile_bytes  # kept tiles only; the rest is recomputed
    assert 0 < op.fraction_stored < 1
    free = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=2 * tile_bytes,
                               n_jobs=2, tile=7)
    assert free.nbytes == 0 and free.fraction_stored == 0
    V = np.random.default_rng(3).normal(size=(40, 4))
    np.testing.assert_allclose(free.matmat(V), K @ V, atol=1e-10)


def test_tiled_rejects_budget_below_workspace(gram):
    kernel, X, T, K = gram
    with pytest.raises(ValueError, match="memory_limit"):
        TiledKernelOperator(kernel, X, memory_limit=10, n_jobs=2, tile=7)


def test_tiled_float32_storage_is_accurate(gram):
    kernel, X, T, K = gram
    op, _ = center(TiledKernelOperator(kernel, X, dtype=np.float32, tile=7), inplace=True)
    V = np.random.default_rng(4).normal(size=(40, 3))
    ref = _reference(K, True) @ V
    np.testing.assert_allclose(op.matmat(V), ref, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("budget", [None, 2 * 7 * 7 * 8])
@pytest.mark.parametrize("centred", [True, False])
def test_tiled_probe_product_fused_into_construction_pass(gram, budget, centred):
    kernel, X, T, K = gram
    P = np.linalg.qr(np.random.default_rng(5).normal(size=(40, 6)))[0]
    op = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=budget, tile=7,
                             probe=P)
    assert op.n_passes == 1  # row sums and K @ P in the same pass
    if centred:
        op, _ = center(op, inplace=True)
    Q, KQ = op.initial_block()
    np.testing.assert_array_equal(Q, P)
    np.testing.assert_allclose(KQ, _reference(K, centred) @ P, atol=1e-10)
    assert op.n_passes == 1


def test_tiled_stores_only_the_lower_triangle():
    X = np.random.default_rng(6).normal(size=(600, 3))
    op = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float32, tile=20)
    full = 600 * 600 * 4
    # 30 x 31 / 2 tiles of 20 x 20: (n^2 + n * tile) / 2 of the entries
    assert op.nbytes == 30 * 31 // 2 * 20 * 20 * 4
    assert op.nbytes < 0.52 * full


@pytest.mark.parametrize("kernel", [RBF(gamma=0.3), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf-centred-in-products", "poly-centred-in-tiles"])
@pytest.mark.parametrize("budget", [None, 3 * 300 * 300 * 8], ids=["stored", "partly-stored"])
def test_tiled_slices_of_large_tiles_match_dense_reference(kernel, budget):
    """Tiles of 300 rows are built, centred and multiplied in slices (of 128 rows):
    every pass, the first and the later ones, is the centred product."""
    X = np.random.default_rng(7).normal(size=(700, 3))
    op, _ = center(TiledKernelOperator(kernel, X, dtype=np.float64, tile=300,
                                       memory_limit=budget, n_jobs=2), inplace=True)
    ref = _reference(kernel.block(X), True)
    V = np.random.default_rng(8).normal(size=(700, 4))
    for _ in range(2):
        np.testing.assert_allclose(op.matmat(V), ref @ V, atol=1e-10 * np.abs(ref @ V).max())
    np.testing.assert_allclose(op.to_dense(), ref, atol=1e-12)


def test_float32_fit_of_a_nearly_constant_rbf_matrix_is_accurate():
    """Centred in the products, not the tiles: a float32 fit of an RBF matrix whose
    entries are all close to 1 (data far from the origin, small gamma) still gives
    the float64 eigenvalues to 2e-6 of the largest."""
    import kpca

    X = np.random.default_rng(9).normal(size=(2500, 10)) + 5.0
    K = RBF(gamma=1e-4).block(X)
    ref = np.linalg.eigvalsh(_reference(K, True))[::-1][:5]
    model = kpca.KernelPCA(5, kernel="rbf", gamma=1e-4, eigen_solver="krylov",
                           precision="float32").fit(X.astype(np.float32))
    assert K.min() > 0.98
    np.testing.assert_allclose(model.eigenvalues_, ref, rtol=0, atol=2e-6 * ref[0])


@pytest.mark.parametrize(("l2", "itemsize", "rows"), [
    (2 * 2**20, 4, 512), (2**20, 4, 256), (2**20, 8, 128), (256 * 2**10, 4, 128),
    (64 * 2**20, 4, 1024)])
def test_fused_pieces_take_half_of_the_l2_cache(l2, itemsize, rows):
    from kpca import config_context
    from kpca.operators import _tiled

    with config_context(l2_cache_bytes=l2):
        assert _tiled.fused_piece(itemsize) == (rows, 512)
        X = np.random.default_rng(0).normal(size=(30, 2))
        assert TiledKernelOperator(RBF(gamma=1.0), X, dtype=np.dtype(f"f{itemsize}"),
                                   tile=7).piece == (rows, 512)


def test_fused_pieces_follow_their_width():
    """Narrower pieces, more rows for the same half of the cache."""
    from kpca import config_context
    from kpca.operators import _tiled

    with config_context(l2_cache_bytes=2**20, fused_cols=256):
        assert _tiled.fused_piece(4) == (512, 256)
        assert _tiled.fused_piece(8) == (256, 256)


def test_l2_size_is_read_or_assumed():
    from kpca import get_config

    assert 2**14 <= get_config()["l2_cache_bytes"] <= 2**30


@pytest.mark.parametrize("tiles_fit", [3, 21])  # of the 21 tiles of 40 rows in 7s
def test_tiled_all_or_nothing_storage(gram, tiles_fit):
    """``partial=False`` (the estimators' choice) keeps every tile or none, and the
    products are the centred matrix's either way."""
    kernel, X, T, K = gram
    budget = 2 * 7 * 7 * 8 * (1 + kernel.n_temporaries) + tiles_fit * 7 * 7 * 8
    op = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=budget, tile=7,
                             n_jobs=2, partial=False)
    assert op.fraction_stored == (1.0 if tiles_fit >= 21 else 0.0)
    partly = TiledKernelOperator(kernel, X, dtype=np.float64, memory_limit=budget, tile=7,
                                 n_jobs=2)
    assert 0 < partly.fraction_stored <= 1
    op, _ = center(op, inplace=True)
    V = np.random.default_rng(9).normal(size=(40, 3))
    np.testing.assert_allclose(op.matmat(V), _reference(K, True) @ V, atol=1e-10)


@pytest.mark.parametrize("budget", [None, 4 * 7 * 7 * 8], ids=["stored", "matrix-free"])
def test_tiled_groups_sums_are_added_in_order(gram, budget):
    """A pass's tile groups' accumulators are summed in the groups' order, on one thread
    or with the rows shared among the workers (the setting split_sweep_values): the
    same bits either way, the dense reference's product; the accumulators are the
    operator's from pass to pass (no fresh memory each pass), grown for a wider
    block, and every pass's result is its own array."""
    from kpca import config_context

    kernel, X, T, K = gram
    rng = np.random.default_rng(9)
    blocks = [rng.normal(size=(40, b)) for b in (3, 5, 2, 5)]
    ref = _reference(K, True)
    results = {}
    for split in (1, 2**40):  # every sum shared among the workers; none
        with config_context(n_cores=4, split_sweep_values=split):
            op, _ = center(TiledKernelOperator(kernel, X, dtype=np.float64, tile=7,
                                               memory_limit=budget, n_jobs=4), inplace=True)
            assert op.workers == 4
            outs, buffers = [], []
            for V in blocks:
                outs.append(op.matmat(V))
                buffers.append([id(a) for a in op._acc])
        for V, out in zip(blocks, outs, strict=True):
            np.testing.assert_allclose(out, ref @ V, atol=1e-10 * np.abs(ref @ V).max())
        # kept from pass to pass: grown for 5 columns, then kept for 2 and 5
        assert buffers[0] != buffers[1] == buffers[2] == buffers[3]
        assert len({id(o) for o in outs}) == len(outs)
        results[split] = outs
    for a, b in zip(results[1], results[2**40], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["C", "F", "strided"])
def test_dense_matvec_reads_one_triangle_of_a_symmetric_matrix(dtype, layout):
    """DenseOperator.matvec (ARPACK's product) uses BLAS's symmetric product, which
    reads one triangle: the same product as ``A @ v`` for a symmetric ``A`` in C or
    Fortran order (no copy), and ``A @ v`` itself for other layouts; the storage dtype
    is kept and the matrix is not modified."""
    rng = np.random.default_rng(3)
    B = rng.normal(size=(70, 70))
    S = (B + B.T).astype(dtype)
    A = {"C": S.copy(), "F": np.asfortranarray(S),
         "strided": np.repeat(np.repeat(S, 2, 0), 2, 1)[::2, ::2]}[layout]
    before = A.copy()
    v = rng.normal(size=70)
    out = DenseOperator(A).matvec(v)
    ref = S.astype(np.float64) @ v.astype(dtype).astype(np.float64)
    assert out.dtype == dtype and out.shape == (70,)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol * np.abs(ref).max())
    np.testing.assert_array_equal(A, before)
    if layout != "strided":
        # one triangle is read: the other does not enter the product
        T = np.array(A, order="K")
        T[np.triu_indices(70, 1)] = np.nan if layout == "F" else T[np.triu_indices(70, 1)]
        T[np.tril_indices(70, -1)] = np.nan if layout == "C" else T[np.tril_indices(70, -1)]
        np.testing.assert_allclose(DenseOperator(T).matvec(v), out)
