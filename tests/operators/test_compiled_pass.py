"""The compiled loops over a tile's pieces (``fused_rbf``: a matrix-free pass) and
slices (``build_rbf``: the construction pass's kept tiles), in every variant this CPU
runs: against a float64 dense reference and the Python loops they replace, on diagonal
and off-diagonal tiles, pieces and tiles that do not divide the rows or start on a
panel, one and several workers."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import kpca.operators._tiled as tiled
from kpca import _native, config_context, get_config
from kpca.kernels import RBF, Polynomial
from kpca.operators import TiledKernelOperator, center

VARIANTS = tiled._tileprod_ext.variants() if tiled._tileprod_ext is not None else ()
every_variant = pytest.mark.parametrize("variant", VARIANTS)
#: every variant as the best this CPU runs makes it (``best`` None), and the portable
#: variant as the best variant of a CPU without a wider one (x86-64 without AVX2, ARM):
#: its own block and one-sweep products rather than BLAS's (kpca._native.blas_products)
every_case = pytest.mark.parametrize(
    ("variant", "best"), [(v, None) for v in VARIANTS]
    + ([("portable", "portable")] if "portable" in VARIANTS[1:] else []))


@pytest.fixture
def spy(monkeypatch):
    """``spy(variant, best=None)``: the operator's compiled functions of that variant
    (None: NumPy's path), counting the calls of each, as on a CPU whose best variant
    is ``best`` (None: this CPU's); returns the counts."""
    def use(variant, best=None):
        calls = {"fused_rbf": 0, "build_rbf": 0, "product": 0}
        if variant is None:
            monkeypatch.setattr(tiled, "_tileprod", None)
            monkeypatch.setattr(tiled, "NATIVE", False)
            return calls
        fns = _native.bind(tiled._tileprod_ext, variant)

        def counted(name):
            def call(*args):
                calls[name] += 1
                if name == "fused_rbf":  # the product's columns (V)
                    calls.setdefault("fused_widths", set()).add(args[4].shape[1])
                return getattr(fns, name)(*args)
            return call

        ns = type("Spy", (), {name: staticmethod(counted(name)) for name in calls})
        ns.name, ns.widths, ns.best = fns.name, fns.widths, best or fns.best
        monkeypatch.setattr(tiled, "_tileprod", ns)
        monkeypatch.setattr(tiled, "NATIVE", True)
        monkeypatch.setattr(tiled, "NATIVE_WIDTH", dict(zip(
            [np.dtype(np.float32), np.dtype(np.float64)], fns.widths, strict=True)))
        return calls
    return use


def _dense(kernel, X, V):
    K = np.asarray(kernel.block(X), dtype=np.float64)
    H = np.eye(len(X)) - 1.0 / len(X)
    return H @ K @ H @ V


def _recomputed(kernel, X, **kw):
    """A centred operator that stores no tile (every pass recomputes them)."""
    op = TiledKernelOperator(kernel, X, dtype=np.float32, **kw)
    op._store, op._keep = {}, set()
    return center(op, inplace=True)[0]


@every_case
@pytest.mark.parametrize(("piece", "tile"), [((128, 512), None), ((7, 5), 45), ((16, 32), 64),
                                             ((16, 16), 333), ((9, 40), 100)])
@pytest.mark.parametrize("b", [24, 12, 1])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_matrix_free_pass(spy, variant, best, piece, tile, b, n_jobs):
    """Every recomputed tile goes through one compiled call (no Python piece), with
    the products by the one-sweep kernel (whole vectors and at most half a vector in
    its dot-product form: b = 24 on avx512, 12 on avx2, 1) or BLAS (b = 12 on
    avx512); the result is the dense reference's, and the Python loop's to
    float32 round-off."""
    rng = np.random.default_rng(b)
    X = rng.standard_normal((401, 6)) + 50  # far from the origin: the centre shift
    V = rng.standard_normal((401, b))
    kernel = RBF(gamma=0.1)
    ref = _dense(kernel, X, V)
    tol = 2e-5 * np.abs(ref).max()
    results = {}
    for v in (variant, None):
        calls = spy(v, best)
        op = _recomputed(kernel, X, tile=tile, piece=piece, n_jobs=n_jobs)
        pieces = []
        real = op._piece
        op._piece = lambda *a, pieces=pieces, real=real: pieces.append(1) or real(*a)
        results[v] = op.matmat(V)
        np.testing.assert_allclose(results[v], ref, atol=tol)
        if v is not None:
            assert calls["fused_rbf"] == len(op.tiles) and not pieces
        else:
            assert pieces
    np.testing.assert_allclose(results[variant], results[None], atol=5e-6 * np.abs(ref).max())



@every_case
@pytest.mark.parametrize(("piece", "tile"), [((128, 512), None), ((7, 5), 45), ((16, 32), 64),
                                             ((9, 40), 100)])
@pytest.mark.parametrize("b", [24, 12, 0])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_matrix_free_construction_pass(spy, variant, best, piece, tile, b, n_jobs):
    """The construction pass of an operator that keeps no tile: every tile in one
    compiled call that also sums its rows (``lead``), so the products see the probe's
    own columns (24: the avx2 variant's one-sweep product, not BLAS's on 25); the row
    sums and the probe's product are the dense reference's, and NumPy's loops' to
    float32 round-off."""
    rng = np.random.default_rng(b + 1)
    X = rng.standard_normal((401, 6))
    P = rng.standard_normal((401, b)) if b else None
    kernel = RBF(gamma=0.1)
    K = np.asarray(kernel.block(X), dtype=np.float64)
    results = {}
    for v in (variant, None):
        calls = spy(v, best)
        # a budget for the workspace and some tiles, not all: partial=False keeps none
        op = TiledKernelOperator(kernel, X, dtype=np.float32, memory_limit=3 * 10**5,
                                 tile=tile, piece=piece, n_jobs=n_jobs, probe=P,
                                 partial=False)
        assert op.fraction_stored == 0
        np.testing.assert_allclose(op._row_sums, K.sum(axis=1), rtol=2e-6)
        if b:
            ref = K @ P
            np.testing.assert_allclose(op._probe_product, ref, atol=2e-5 * np.abs(ref).max())
        results[v] = (op._row_sums, op._probe_product)
        if v is not None:
            assert calls["fused_rbf"] == len(op.tiles) and calls["build_rbf"] == 0
            assert calls["fused_widths"] == {b}  # the ones are sums, not a product column
    np.testing.assert_allclose(results[variant][0], results[None][0], rtol=2e-6)
    if b:
        np.testing.assert_allclose(results[variant][1], results[None][1],
                                   atol=5e-6 * np.abs(results[None][1]).max())


@every_case
def test_matrix_free_fit_is_the_python_loops(spy, variant, best):
    """A matrix-free float32 fit (KernelPCA's memory_limit) with the compiled loops and
    with NumPy's: the same eigenvalues and scores to float32 round-off."""
    import kpca

    rng = np.random.default_rng(4)
    X = rng.standard_normal((1200, 5))
    fits = {}
    for v in (variant, None):
        calls = spy(v, best)
        fits[v] = kpca.KernelPCA(5, kernel="rbf", gamma=0.3, eigen_solver="krylov",
                                 precision="float32", memory_limit="6MB",
                                 random_state=0).fit(X)
        assert (calls["fused_rbf"] > 0) == (v is not None)
    np.testing.assert_allclose(fits[variant].eigenvalues_, fits[None].eigenvalues_, rtol=1e-5)
    Z, Z0 = fits[variant].transform(X[:50]), fits[None].transform(X[:50])
    np.testing.assert_allclose(np.abs(Z), np.abs(Z0), atol=1e-4 * np.abs(Z0).max())


@every_case
@pytest.mark.parametrize("slice_rows", [8, 13, 128])
@pytest.mark.parametrize(("tile", "b"), [(37, 16), (100, 32), (64, 0), (37, 24), (50, 4)])
def test_construction_pass(spy, variant, best, slice_rows, tile, b):
    """The construction pass builds every kept tile in one compiled call (probes of
    whole vectors, and of 24 and 4 columns: on avx512 a vector and 8 columns, or 4
    alone, in the product's dot-product form): the stored tiles are the kernel matrix
    (the diagonal exactly 1), the row sums and the probe's product those of a float64
    dense reference, and of the Python loop."""
    rng = np.random.default_rng(slice_rows)
    X = rng.standard_normal((230, 4))
    probe = rng.standard_normal((230, b)) if b else None
    kernel = RBF(gamma=0.4)
    K = np.asarray(kernel.block(X), dtype=np.float64)
    built = {}
    for v in (variant, None):
        calls = spy(v, best)
        with config_context(slice_rows=slice_rows):
            op = TiledKernelOperator(kernel, X, dtype=np.float32, tile=tile, n_jobs=2,
                                     probe=probe)
        assert len(op._store) == len(op.tiles)
        if v is not None:
            assert calls["build_rbf"] == len(op.tiles) and calls["product"] == 0
        for t, T in op._store.items():
            i, j = op.tiles[t]
            rows = slice(op.bounds[i], op.bounds[i + 1])
            cols = slice(op.bounds[j], op.bounds[j + 1])
            np.testing.assert_allclose(T, K[rows, cols], atol=2e-6)
            if i == j:
                assert np.all(np.diagonal(T) == 1.0)
        np.testing.assert_allclose(op._row_sums, K.sum(axis=1), rtol=2e-5)
        if b:
            np.testing.assert_allclose(op._probe_product, K @ probe,
                                       atol=2e-5 * np.abs(K @ probe).max())
        built[v] = (op._row_sums, op._probe_product)
    np.testing.assert_allclose(built[variant][0], built[None][0], rtol=1e-5)


@every_variant
def test_where_the_compiled_loops_do_not_apply(spy, variant):
    """float64 tiles, another kernel, and a robust scale (centring inside the pieces)
    keep the Python loops (the float32 RBF operator's construction is compiled)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((150, 3))
    V = rng.standard_normal((150, 16))
    calls = spy(variant)
    op = TiledKernelOperator(RBF(gamma=0.3), X, dtype=np.float64, tile=40)
    op._store, op._keep = {}, set()
    op.matmat(V)
    poly = Polynomial(gamma=0.5, degree=2, coef0=1.0)
    _recomputed(poly, X, tile=40).matmat(V.astype(np.float32))
    assert calls["fused_rbf"] == calls["build_rbf"] == 0
    op = TiledKernelOperator(RBF(gamma=0.3), X, dtype=np.float32, tile=40)
    assert calls["build_rbf"] == len(op.tiles)
    op._store, op._keep = {}, set()
    from kpca.operators._centering import Centering

    c = Centering(row_means=op.row_means(), grand_mean=float(op.row_means().mean()),
                  scale=np.linspace(0.5, 1.5, 150))
    op.center_inplace(c)
    assert op._compiled_pieces(op._centering_rows()) is None
    op.matmat(V)
    assert calls["fused_rbf"] == 0


@every_variant
def test_refusals(variant):
    fns = _native.bind(tiled._tileprod_ext, variant)
    w = fns.widths[0]  # whole float32 vectors of this variant (avx512: 16, avx2: 8)
    A = np.ones((10, 4), np.float32)
    V = np.ones((30, w), np.float32)
    W = np.zeros((30, w))
    ok = (A, A, None, True, V, W, 0, 10, False, 4, 4, 1.0, None)
    fns.fused_rbf(*ok)  # fine
    with pytest.raises(TypeError, match="float32"):
        fns.fused_rbf(A.astype(np.float64), *ok[1:])
    with pytest.raises(ValueError, match=rf"W must have shape \(30, {w}\)"):
        fns.fused_rbf(*ok[:5], np.zeros((30, w - 1)), *ok[6:])
    with pytest.raises(ValueError, match="must lie in V's rows"):
        fns.fused_rbf(*ok[:6], 25, *ok[7:])
    with pytest.raises(ValueError, match="diagonal tile square"):
        fns.fused_rbf(*ok[:8], True, *ok[9:])
    # a block that is not whole vectors: its last columns in the dot-product form, the
    # same sums as BLAS's products (no refusal)
    V3 = np.random.default_rng(0).standard_normal((30, 3)).astype(np.float32)
    W3 = [np.zeros((30, 3)) for _ in range(2)]
    fns.fused_rbf(*ok[:4], V3, W3[0], *ok[6:])
    fns.fused_rbf(*ok[:4], V3, W3[1], *ok[6:-1], _native.sgemm())
    np.testing.assert_allclose(W3[0], W3[1], rtol=1e-6)
    assert np.abs(W3[0]).max() > 0
    with pytest.raises(ValueError, match=r"panels must have shape \(>= 1, 4, 16\)"):
        fns.fused_rbf(A, A, np.ones((1, 3, 16), np.float32), *ok[3:])
    with pytest.raises(ValueError, match="read-only"):
        ro = W.copy()
        ro.flags.writeable = False
        fns.fused_rbf(*ok[:5], ro, *ok[6:])
    T = np.empty((10, 10), np.float32)
    W1 = np.zeros((30, w + 1))
    good = (A, A, None, True, T, V, W1, 0, 10, False, 4, 1.0, True)
    fns.build_rbf(*good)
    with pytest.raises(ValueError, match=r"T must have shape \(10, 10\)"):
        fns.build_rbf(*good[:4], np.empty((10, 9), np.float32), *good[5:])
    with pytest.raises(ValueError, match=rf"W must have shape \(30, {w + 1}\)"):
        fns.build_rbf(*good[:6], W, *good[7:])
    sgemm = tiled._sgemm()
    C, acc = np.ones((10, 3), np.float32), np.zeros((10, 3))
    fns.rows_rbf(A, A, None, False, C, acc, 4, sgemm)
    np.testing.assert_allclose(acc, np.exp(A @ A.T) @ C, rtol=1e-5)
    with pytest.raises(ValueError, match=r"C must have shape \(10, k\) and acc \(10, k\)"):
        fns.rows_rbf(A, A, None, False, C, np.zeros((10, 2)), 4, sgemm)
    with pytest.raises(TypeError, match="float32"):
        fns.rows_rbf(A, A, None, False, C.astype(np.float64), acc, 4, sgemm)
    with pytest.raises(ValueError, match="shares memory"):
        fns.rows_rbf(A, A, None, False, C, C, 4, sgemm)
    with pytest.raises(ValueError, match="shares memory"):
        fns.build_rbf(*good[:4], np.ones((10, 10), np.float32), *good[5:])  # fine
        shared = np.zeros(30 * w + 100, np.float32)
        fns.build_rbf(A, A, None, True, shared[:100].reshape(10, 10),
                      shared[100:].reshape(30, w).copy(), W1, 0, 10, False, 4, 1.0,
                      True)
        fns.build_rbf(A, A, None, True, shared[:100].reshape(10, 10),
                      shared[: 30 * w].reshape(30, w), W1, 0, 10, False, 4, 1.0, True)


@every_variant
def test_the_gil_is_released_for_the_tile(variant):
    """While one thread is inside a compiled tile (about 0.1 s), another runs Python
    code: it records times inside the call, which a GIL held for the call would
    forbid."""
    fns = _native.bind(tiled._tileprod_ext, variant)
    rng = np.random.default_rng(0)
    A = rng.standard_normal((5000, 22)).astype(np.float32) * 0.1
    w = fns.widths[0]  # whole float32 vectors of this variant
    V = rng.standard_normal((10000, w)).astype(np.float32)
    W = np.zeros((10000, w))
    stamps, done = [], threading.Event()

    def other():
        while not done.is_set():
            stamps.append(time.perf_counter())

    t = threading.Thread(target=other)
    t.start()
    try:  # (the thread stops whatever happens: it would fill memory with stamps)
        time.sleep(0.01)
        t0 = time.perf_counter()
        fns.fused_rbf(A, A, None, False, V, W, 0, 5000, False, 128, 512, None, None)
        t1 = time.perf_counter()
    finally:
        done.set()
        t.join()
    inside = [s for s in stamps if t0 + 0.2 * (t1 - t0) < s < t0 + 0.8 * (t1 - t0)]
    assert inside, (t1 - t0, len(stamps))


@every_case
@pytest.mark.parametrize("estimator", ["KernelPCA", "SphericalKernelPCA"])
def test_transform(spy, variant, best, estimator):
    """``transform`` of a float32 RBF model makes each block of rows in one compiled
    call (``rows_rbf``; a spherical model's extra column too): the scores of NumPy's
    loop to float32 round-off, and those of a float64 model to float32's accuracy;
    fewer rows than the setting native_rbf_pack_rows keep NumPy's loop."""
    import kpca

    rng = np.random.default_rng(7)
    X, X_new = rng.standard_normal((1100, 6)), rng.standard_normal((600, 6))
    cls = getattr(kpca, estimator)
    model = cls(4, kernel="rbf", gamma=0.2, precision="float32").fit(X)
    exact = cls(4, kernel="rbf", gamma=0.2, precision="float64").fit(X)
    calls = spy(None)
    Z0, few0 = model.transform(X_new), model.transform(X_new[:5])
    calls = {**spy(variant, best), "rows_rbf": 0}
    fns = tiled._tileprod

    def rows_rbf(*args):
        calls["rows_rbf"] += 1
        # the portable block by BLAS only where a wider variant runs (blas_products)
        assert args[-1] == (variant == "portable" and fns.best != "portable")
        return _native.bind(tiled._tileprod_ext, variant).rows_rbf(*args)

    fns.rows_rbf = staticmethod(rows_rbf)
    Z = model.transform(X_new)
    assert calls["rows_rbf"] == -(-600 // get_config()["fused_rows"])
    np.testing.assert_allclose(Z, Z0, atol=2e-6 * np.abs(Z0).max())
    Ze = exact.transform(X_new)
    signs = np.sign((Z * Ze).sum(axis=0))
    np.testing.assert_allclose(Z * signs, Ze, atol=2e-4 * np.abs(Ze).max())
    assert 5 < get_config()["native_rbf_pack_rows"]
    np.testing.assert_allclose(model.transform(X_new[:5]), few0, atol=2e-6 * np.abs(Z0).max())
    assert calls["rows_rbf"] == -(-600 // get_config()["fused_rows"])


@every_variant
@pytest.mark.parametrize("cols", [1, 7, 16, 100, 1000])
@pytest.mark.parametrize("with_panels", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("blas_block", [True, False])
def test_rows_rbf_against_numpy(variant, cols, with_panels, dtype, blas_block):
    """``rows_rbf`` directly: pieces of any width, starting on a panel or not, from the
    panels or the columns, into a float32 or float64 accumulator (added to what it
    held), the portable variant's block by BLAS or its own (``blas_block``; the other
    variants ignore it): exp(A B^T) C of float64 NumPy, to float32 round-off."""
    fns = _native.bind(tiled._tileprod_ext, variant)
    rng = np.random.default_rng(cols)
    A = rng.standard_normal((19, 5)).astype(np.float32)
    B = (-0.2 * rng.random((83, 5))).astype(np.float32)
    C = rng.standard_normal((83, 3)).astype(np.float32)
    panels = None
    if with_panels:
        panels = np.empty((6, 5, 16), np.float32)
        _native.bind(standard_ext(), variant).pack_panels(B, panels)
    acc0 = rng.standard_normal((19, 3)).astype(dtype)
    acc = acc0.copy()
    fns.rows_rbf(A, B, panels, False, C, acc, cols, tiled._sgemm(), blas_block)
    ref = acc0 + np.exp(A.astype(np.float64) @ B.T.astype(np.float64)) @ C
    np.testing.assert_allclose(acc, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def standard_ext():
    from kpca.kernels import _standard

    return _standard._rbfexp_ext


@every_case
def test_which_products_go_to_blas(monkeypatch, variant, best):
    """The portable variant hands its float32 products (construction, stored tiles,
    matrix-free pieces) to BLAS's sgemm where the CPU runs a wider variant
    (kpca._native.blas_products), and keeps its own where it is the best (``best``);
    avx2 and avx512 keep their one-sweep product except on matrix-free pieces where a
    wider variant runs on this CPU or the block's columns past whole vectors are more
    than half a vector (kpca._native.sweeps_in_cache). Every way gives the dense
    reference's product."""
    fns = _native.bind(tiled._tileprod_ext, variant)
    seen = {}

    def record(name):
        def call(*args):
            seen.setdefault(name, []).append(args)
            return getattr(fns, name)(*args)
        return call

    ns = type("Spy", (), {name: staticmethod(record(name))
                          for name in ("fused_rbf", "build_rbf", "product")})
    ns.name, ns.widths, ns.best = fns.name, fns.widths, best or fns.best
    monkeypatch.setattr(tiled, "_tileprod", ns)
    monkeypatch.setattr(tiled, "NATIVE", True)
    monkeypatch.setattr(tiled, "NATIVE_WIDTH", dict(zip(
        [np.dtype(np.float32), np.dtype(np.float64)], fns.widths, strict=True)))
    rng = np.random.default_rng(8)
    X = rng.standard_normal((150, 4))
    kernel = RBF(gamma=0.4)
    capsule = _native.sgemm()
    portable = variant == "portable" and ns.best != "portable"  # (BLAS's products)
    for b in (16, 24):
        seen.clear()
        V = rng.standard_normal((150, b))
        op, _ = center(TiledKernelOperator(kernel, X, dtype=np.float32, tile=40, n_jobs=1),
                       inplace=True)
        np.testing.assert_allclose(op.matmat(V), _dense(kernel, X, V), rtol=2e-4, atol=2e-4)
        assert all((args[-1] is capsule) == portable for args in seen["build_rbf"])
        # every stored tile is multiplied again by `product`: 24 columns are whole
        # vectors, or (avx512) one and 8 columns in the dot-product form
        assert "product" in seen
        assert all(any(a is capsule for a in args) == portable
                   for args in seen.get("product", []))
        free = _recomputed(kernel, X, tile=40, n_jobs=1)
        np.testing.assert_allclose(free.matmat(V), _dense(kernel, X, V), rtol=2e-4, atol=2e-4)
        # the one-sweep product where the columns past whole vectors are at most half
        # a vector (avx512 at 24: 16 + 8); BLAS's on a narrower variant than the CPU's
        sweep = (not portable and b % fns.widths[0] <= fns.widths[0] // 2
                 and variant == ns.best)
        assert seen["fused_rbf"] and all((args[-1] is None) == sweep
                                         for args in seen["fused_rbf"])


@every_variant
def test_compiled_rows_is_the_kernel_rows_product(monkeypatch, variant):
    """``kpca.operators.compiled_rows``, the product ``acc += k(rows, Z) @ C`` that the
    fused ``transform`` runs for the float32 RBF kernel: sklearn's float64 kernel times
    ``C``, to float32 round-off, in pieces that do not divide the columns; and None
    where the compiled loop does not apply (float64 coefficients or columns, another
    kernel, too many features, too few rows to pack the columns for)."""
    from sklearn.metrics.pairwise import rbf_kernel

    from kpca.kernels import RBFRows
    from kpca.operators import compiled_rows

    monkeypatch.setattr(tiled, "_tileprod", _native.bind(tiled._tileprod_ext, variant))
    monkeypatch.setattr(tiled, "NATIVE", True)
    rng = np.random.default_rng(3)
    X, Z = rng.standard_normal((45, 5)), rng.standard_normal((70, 5))
    C = rng.standard_normal((70, 3)).astype(np.float32)
    kernel = RBF(gamma=0.3)
    prep = kernel.prepare(Z, np.float32)
    assert prep.compiled() and not kernel.prepare(Z, np.float64).compiled()
    product = compiled_rows(kernel, prep, C, len(X), piece_cols=16)
    assert product is not None
    rows = kernel.prepare_rows(X.astype(np.float32), prep)
    assert isinstance(rows, RBFRows)
    acc = np.ones((45, 3))
    product(rows, acc)
    ref = 1.0 + rbf_kernel(X, Z, gamma=0.3) @ C.astype(np.float64)
    np.testing.assert_allclose(acc, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    # where it does not apply
    assert compiled_rows(kernel, prep, C.astype(np.float64), len(X), 16) is None
    assert compiled_rows(kernel, kernel.prepare(Z, np.float64), C, len(X), 16) is None
    poly = Polynomial(gamma=0.3, degree=2)
    assert compiled_rows(poly, poly.prepare(Z, np.float32), C, len(X), 16) is None
    with config_context(native_rbf_max_features=4):
        narrow = kernel.prepare(Z, np.float32)  # 5 features: too many for the block
    assert not narrow.compiled()
    assert compiled_rows(kernel, narrow, C, len(X), 16) is None
    fresh = kernel.prepare(Z, np.float32)  # not packed, and too few rows to pack it
    assert compiled_rows(kernel, fresh, C, fresh.limits[1] - 1, 16) is None
