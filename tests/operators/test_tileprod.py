"""The compiled one-sweep product of stored tiles (``_tileprod.c``) against NumPy's
float64 products, and the operator's passes with and without it: each in every
variant this CPU runs (avx512, avx2, portable; ``kpca._native``)."""

from __future__ import annotations

import platform
import shutil
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kpca.operators._tiled as tiled
from kpca import _native, config_context
from kpca.kernels import RBF, Polynomial
from kpca.operators import TiledKernelOperator, center

#: the variants this CPU runs (none where the extension is not built)
VARIANTS = tiled._tileprod_ext.variants() if tiled._tileprod_ext is not None else ()
every_variant = pytest.mark.parametrize("variant", VARIANTS)
#: the vector widths (float32, float64) of each variant
WIDTHS = {"avx512": (16, 8), "avx2": (8, 4), "portable": (4, 2)}


def test_the_kernel_is_built_where_it_can_be(monkeypatch):
    """On x86-64 Linux with a C compiler the optional extension must have been built
    (a silent build failure would leave every fit on the slower NumPy products), with
    the variants this CPU's flags allow, each with its vector widths; without the
    kernel, the operator's passes never reach for it."""
    if sys.platform == "linux" and platform.machine() == "x86_64" and shutil.which("cc"):
        assert tiled._tileprod_ext is not None
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split())
        expected = [v for v, need in (("avx512", {"avx512f", "fma"}), ("avx2", {"avx2", "fma"}),
                                      ("portable", set())) if need <= flags]
        assert list(VARIANTS) == expected
        if _native.REQUEST == "auto":
            assert tiled.NATIVE_VARIANT.variant == expected[0]
    for v in VARIANTS:
        fns = _native.bind(tiled._tileprod_ext, v)
        assert fns.name == v and tuple(fns.widths) == WIDTHS[v]
    if tiled.NATIVE:
        assert tiled.NATIVE_WIDTH == dict(zip([np.dtype(np.float32), np.dtype(np.float64)],
                                              WIDTHS[tiled._tileprod.name], strict=True))
    monkeypatch.setattr(tiled, "NATIVE", False)  # NumPy's products only
    monkeypatch.setattr(tiled, "native_tile_product", None)
    X = np.random.default_rng(0).standard_normal((40, 2))
    op = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float32, tile=16)
    assert np.isfinite(op.matmat(np.ones((40, 16)))).all()


def test_variant_refuses_what_this_cpu_cannot_run():
    """``variant(name)`` binds only a variant this build and CPU run; bound functions
    carry their variant (a function taken from the module itself is refused)."""
    if tiled._tileprod_ext is None:
        pytest.skip("the extension is not built")
    ext = tiled._tileprod_ext
    with pytest.raises(ValueError, match="unknown variant 'sse'"):
        ext.variant("sse")
    for v in set(WIDTHS) - set(VARIANTS):
        with pytest.raises(ValueError, match=f"cannot run the {v} variant"):
            ext.variant(v)
    assert not hasattr(ext, "product")


@pytest.fixture
def use(monkeypatch):
    """``use(variant)``: stored tiles go through that variant (None: NumPy's)."""
    def set_variant(variant):
        fns = None if variant is None else _native.bind(tiled._tileprod_ext, variant)
        monkeypatch.setattr(tiled, "_tileprod", fns)
        monkeypatch.setattr(tiled, "NATIVE", fns is not None)
        if fns is not None:
            monkeypatch.setattr(tiled, "NATIVE_WIDTH", dict(zip(
                [np.dtype(np.float32), np.dtype(np.float64)], fns.widths, strict=True)))
        return fns
    return set_variant


def _reference(T, VJ, VI, both):
    T, VJ, VI = (np.asarray(a, dtype=np.float64) for a in (T, VJ, VI))
    return T @ VJ, (T.T @ VI if both else None), T.sum(axis=1), T.sum(axis=0)


@every_variant
@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), m=st.integers(0, 37),
       c=st.integers(0, 41), q=st.integers(0, 5), extra=st.integers(0, 15),
       both=st.booleans(), sums=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_product_matches_float64_reference(variant, dtype, m, c, q, extra, both, sums,
                                           seed):
    """Every row count (the blocks of 4 or 8 rows and the rest), widths of 0-5
    vectors plus 0 to a vector less of columns (the last ``b mod width`` go by the
    dot-product form: pairs of columns and blocks of 4 rows, the others alone, the
    rows' last values past whole vectors), with and without the transposed product and the sums,
    float32 and float64; accumulated onto what the outputs held, the inputs
    unwritten."""
    rng = np.random.default_rng(seed)
    fns = _native.bind(tiled._tileprod_ext, variant)
    width = WIDTHS[variant][dtype == np.float64]
    b = width * q + extra % width

    def draw(*shape):
        return rng.standard_normal(shape).astype(dtype)

    T, VJ, VI, WI0, WJ0, rs0, cs0 = draw(m, c), draw(c, b), draw(m, b), draw(m, b), draw(
        c, b), draw(m), draw(c)
    T0, VJ0, VI0 = T.copy(), VJ.copy(), VI.copy()
    WI, WJ, rs, cs = WI0.copy(), WJ0.copy(), rs0.copy(), cs0.copy()
    fns.product(T, VJ, VI, WI, WJ, both, rs if sums else None, cs if sums else None)
    assert WI.dtype == dtype
    PI, PJ, RS, CS = _reference(T, VJ, VI, both)
    eps = 1e-5 if dtype == np.float32 else 1e-13
    tol = eps * (1 + np.sqrt(max(m, c, 1)))
    np.testing.assert_allclose(WI, WI0 + PI, atol=tol, rtol=eps)
    np.testing.assert_allclose(WJ, WJ0 + PJ if both else WJ0, atol=tol, rtol=eps)
    np.testing.assert_allclose(rs, rs0 + RS if sums else rs0, atol=tol, rtol=eps)
    np.testing.assert_allclose(cs, cs0 + CS if sums and both else cs0, atol=tol, rtol=eps)
    # the inputs are not written
    assert T.flags.writeable and VJ.flags.writeable
    for a, a0 in ((T, T0), (VJ, VJ0), (VI, VI0)):
        np.testing.assert_array_equal(a, a0)


@every_variant
@pytest.mark.parametrize("c", [255, 256, 257, 700])
@pytest.mark.parametrize("b_extra", [1, 2, 3])
def test_product_with_a_tail_over_wide_tiles(variant, c, b_extra):
    """Tiles of hundreds of columns with a tail (the hypothesis test's are narrow):
    whole vectors of the rows, the tail's transposed buffers, the rows past whole row
    blocks; float32 and float64, both products."""
    rng = np.random.default_rng(c + b_extra)
    fns = _native.bind(tiled._tileprod_ext, variant)
    for dtype in (np.float32, np.float64):
        width = WIDTHS[variant][dtype == np.float64]
        b, m = width + b_extra % width, 11
        T, VJ, VI = (rng.standard_normal(s).astype(dtype) for s in ((m, c), (c, b), (m, b)))
        WI, WJ = np.zeros((m, b), dtype), np.zeros((c, b), dtype)
        fns.product(T, VJ, VI, WI, WJ, True, None, None)
        PI, PJ, _, _ = _reference(T, VJ, VI, True)
        eps = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(WI, PI, atol=eps * np.sqrt(c), rtol=eps)
        np.testing.assert_allclose(WJ, PJ, atol=eps * np.sqrt(m), rtol=eps)


def test_native_columns_pads_only_past_half_a_vector(monkeypatch):
    """The growing matrix's pass hands the kernel its block as it is up to half a
    vector past whole ones, and pads it to whole vectors beyond (the dot-product form
    costs about half a vector per two columns); None without the kernel."""
    monkeypatch.setattr(tiled, "NATIVE", True)
    monkeypatch.setattr(tiled, "NATIVE_WIDTH", {np.dtype(np.float32): 8,
                                                np.dtype(np.float64): 4})
    got = [tiled.native_columns(q, np.float32) for q in (1, 4, 5, 8, 10, 12, 13, 16, 20, 21)]
    assert got == [1, 4, 8, 8, 10, 12, 16, 16, 20, 24]
    assert tiled.native_columns(3, np.float64) == 4 and tiled.native_columns(6, "float64") == 6
    monkeypatch.setattr(tiled, "NATIVE", False)
    assert tiled.native_columns(10, np.float32) is None


@every_variant
@settings(max_examples=80, deadline=None)
@given(m=st.integers(0, 37), c=st.integers(0, 41), b=st.integers(0, 19),
       slice_rows=st.integers(1, 40), both=st.booleans(), sums=st.booleans(),
       view=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_product_by_blas_matches_float64_reference(variant, m, c, b, slice_rows, both, sums,
                                                   view, seed):
    """With BLAS's sgemm handed over (the portable variant's float32 products,
    kpca._native.blas_products; any variant accepts it): any block width (not only
    multiples of the vector), slices of any size (the last one short, one slice, more
    slices than rows), empty tiles and blocks, and a tile that is a slice of a wider
    one's rows; accumulated onto what the outputs held, the sums as without BLAS."""
    rng = np.random.default_rng(seed)
    fns = _native.bind(tiled._tileprod_ext, variant)

    def draw(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    # (the stored tile's row slices are contiguous views, as the fill path passes)
    T = draw(m + 3, c)[2 : m + 2] if view else draw(m, c)
    VJ, VI, WI0, WJ0, rs0, cs0 = draw(c, b), draw(m, b), draw(m, b), draw(c, b), draw(m), draw(c)
    WI, WJ, rs, cs = WI0.copy(), WJ0.copy(), rs0.copy(), cs0.copy()
    fns.product(T, VJ, VI, WI, WJ, both, rs if sums else None, cs if sums else None,
                _native.sgemm(), slice_rows)
    PI, PJ, RS, CS = _reference(T, VJ, VI, both)
    eps = 1e-5
    tol = eps * (1 + np.sqrt(max(m, c, 1)))
    np.testing.assert_allclose(WI, WI0 + PI, atol=tol, rtol=eps)
    np.testing.assert_allclose(WJ, WJ0 + PJ if both else WJ0, atol=tol, rtol=eps)
    np.testing.assert_allclose(rs, rs0 + RS if sums else rs0, atol=tol, rtol=eps)
    np.testing.assert_allclose(cs, cs0 + CS if sums and both else cs0, atol=tol, rtol=eps)


@every_variant
def test_product_by_blas_refusals(variant):
    """A BLAS argument that is not the sgemm capsule, or slices of no rows, are
    refused before anything is written; float64 tiles ignore it (no float64 BLAS
    here: the variant's own product, of any width)."""
    prod = _native.bind(tiled._tileprod_ext, variant).product
    T, V = np.ones((4, 4), np.float32), np.ones((4, 3), np.float32)
    WI, WJ = np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32)
    with pytest.raises(TypeError, match="PyCapsule of BLAS's sgemm"):
        prod(T, V, V, WI, WJ, True, None, None, "sgemm", 8)
    with pytest.raises(ValueError, match="slice_rows below 1"):
        prod(T, V, V, WI, WJ, True, None, None, _native.sgemm(), 0)
    assert not WI.any() and not WJ.any()
    for width in (3, WIDTHS[variant][1]):
        D, W = np.ones((4, width)), np.zeros((4, width))
        prod(T.astype(np.float64), D, D, W, W.copy(), False, None, None, _native.sgemm(), 8)
        np.testing.assert_array_equal(W, np.full((4, width), 4.0))


@every_variant
def test_product_rejects_wrong_buffers(variant):
    """Types, shapes, contiguity, writability and shared memory are checked before
    anything is written (a wrong shape would read or write out of bounds)."""
    T = np.zeros((4, 5), np.float32)
    V5, V4 = np.zeros((5, 16), np.float32), np.zeros((4, 16), np.float32)
    prod = _native.bind(tiled._tileprod_ext, variant).product

    def run(*args, both=True, rs=None, cs=None):
        return prod(*args, both, rs, cs)

    with pytest.raises(ValueError, match="VJ must be a 2-D array of T's type"):  # mixed types
        run(T, V5.astype(np.float64), V4, V4.copy(), V5.copy())
    with pytest.raises(TypeError, match="T must be a 2-D float32 or float64 array"):
        run(T.astype(np.float16), V5, V4, V4.copy(), V5.copy())
    with pytest.raises(TypeError, match="T must be a 2-D"):
        run(T.ravel(), V5, V4, V4.copy(), V5.copy())
    with pytest.raises(ValueError, match="VJ must be a 2-D array of T's type with 5 rows"):
        run(T, V4, V4, V4.copy(), V5.copy())
    with pytest.raises(ValueError, match=r"VI must have shape \(4, 16\)"):
        run(T, V5, V5, V4.copy(), V5.copy())
    with pytest.raises(ValueError, match=r"WJ must have shape \(5, 16\)"):
        run(T, V5, V4, V4.copy(), V4.copy())
    with pytest.raises(ValueError, match=r"rs must have shape \(4,\)"):
        run(T, V5, V4, V4.copy(), V5.copy(), rs=np.zeros(5, np.float32))
    with pytest.raises(ValueError, match=r"cs must have shape \(5,\)"):
        run(T, V5, V4, V4.copy(), V5.copy(), cs=np.zeros((5, 1), np.float32))
    with pytest.raises(ValueError, match="not C-contiguous"):
        run(np.zeros((4, 10), np.float32)[:, ::2], V5, V4, V4.copy(), V5.copy())
    ro = V4.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):  # outputs must be writable
        run(T, V5, V4, ro, V5.copy())


@every_variant
def test_product_refuses_outputs_sharing_memory(variant):
    """An output that is an input (or part of one), or two outputs that overlap,
    would give wrong sums: refused, untouched. WI and WJ may be one array when only
    WI is written (a diagonal tile)."""
    rng = np.random.default_rng(3)
    T = rng.standard_normal((16, 16)).astype(np.float32)
    V = rng.standard_normal((16, 16)).astype(np.float32)
    W = np.zeros((32, 16), np.float32)
    prod = _native.bind(tiled._tileprod_ext, variant).product
    for args in [(T, V, V, V, W[16:], True),          # WI is VI
                 (T, V, V, W[:16], V, True),          # WJ is VJ
                 (T, V, V, T, W[16:], True),          # WI is T
                 (T, V, V, W[:16], W[8:24], True),    # WI and WJ overlap
                 (T, V, V, W[:16], W[:16], True)]:    # WI is WJ, both products
        before = [a.copy() for a in args[:5]]
        with pytest.raises(ValueError, match="shares memory"):
            prod(*args, None, None)
        for a, b in zip(args[:5], before, strict=True):
            np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="shares memory"):  # the sums too
        prod(T, V, V, W[:16], W[16:], True, W[0], None)
    out = np.zeros((16, 16), np.float32)
    prod(T, V, V, out, out, False, None, None)  # one product: WI and WJ may be one array
    np.testing.assert_allclose(out, T @ V, rtol=1e-5, atol=1e-5)


def _operator_pass(use, variant, kernel, X, V, probe=None, dtype=np.float32):
    use(variant)
    op = TiledKernelOperator(kernel, X, dtype=dtype, tile=23, n_jobs=2, probe=probe)
    op, _ = center(op, inplace=True)
    return op, op.matmat(V)


@every_variant
@pytest.mark.parametrize("kernel", [RBF(gamma=0.2), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf-centred-in-products", "poly-centred-tiles"])
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float32, 32),
                                         (np.float32, 24), (np.float32, 6), (np.float64, 8),
                                         (np.float64, 24), (np.float64, 12), (np.float64, 3)])
def test_operator_passes_agree_with_and_without_the_kernel(use, variant, kernel, dtype, b):
    """Stored tiles of 23 rows (blocks of 4 or 8 rows and rests): the centred product,
    the row sums and the construction's probe product are those of a float64 dense
    reference, with the kernel as without it (widths that are not a multiple of the
    variant's vector take NumPy's products)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    V = rng.standard_normal((100, b))
    probe = rng.standard_normal((100, 16))
    K = np.asarray(kernel.block(X), dtype=np.float64)
    H = np.eye(100) - 1.0 / 100
    ref = H @ K @ H @ V
    results = {}
    tol = (2e-5 if dtype == np.float32 else 1e-12) * np.abs(ref).max()
    for v in (variant, None):
        op, KV = _operator_pass(use, v, kernel, X, V, probe, dtype)
        np.testing.assert_allclose(KV, ref, atol=tol)
        P, KP = op.initial_block()
        np.testing.assert_allclose(KP, H @ K @ H @ P, atol=tol)
        results[v] = KV
    np.testing.assert_allclose(results[variant], results[None], atol=tol)


@every_variant
def test_the_pass_uses_the_kernel_only_where_it_applies(monkeypatch, use, variant):
    """The compiled kernel serves float32 tiles with blocks of whole float32 vectors
    and at most half a vector more, float64 tiles likewise with its float64 vector
    (after the construction's column of ones: native_columns); other widths keep
    NumPy's products."""
    calls = []
    fns = use(variant)
    w32, w64 = fns.widths

    class Spy:
        @staticmethod
        def product(*args):
            calls.append(args[1].shape[1])  # the block's width (VJ's columns)
            return fns.product(*args)

    monkeypatch.setattr(tiled, "_tileprod", Spy)
    X = np.random.default_rng(1).standard_normal((60, 3))
    op = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float32, tile=20,
                             probe=np.ones((60, 16)))
    assert calls and set(calls) == {16}  # construction: 1 + 16 columns
    calls.clear()
    op.matmat(np.ones((60, w32 + w32 // 2 + 1)))
    assert calls == []
    op.matmat(np.ones((60, w32 + w32 // 2)))
    assert calls and set(calls) == {w32 + w32 // 2}
    calls.clear()
    op.matmat(np.ones((60, 2 * w32)))
    assert calls and set(calls) == {2 * w32}
    calls.clear()
    op64 = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float64, tile=20)
    assert calls and set(calls) == {0}  # construction: the row sums alone
    calls.clear()
    op64.matmat(np.ones((60, w64 + w64 // 2 + 1)))
    # (the portable variant's float64 vector holds 2 values: every tail is cheap)
    assert calls == [] if w64 > 2 else set(calls) == {w64 + w64 // 2 + 1}
    calls.clear()
    op64.matmat(np.ones((60, w64 + w64 // 2)))
    assert calls and set(calls) == {w64 + w64 // 2}
    calls.clear()
    op64.matmat(np.ones((60, 2 * w64)))
    assert calls and set(calls) == {2 * w64}


@every_variant
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float64, 8)])
def test_pass_over_partly_stored_tiles(use, variant, dtype, b):
    """Kept tiles through the kernel and recomputed ones through NumPy in the same
    pass (the robust estimators keep what fits): the dense reference either way."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((101, 3))
    V = rng.standard_normal((101, b))
    kernel = RBF(gamma=0.3)
    K = np.asarray(kernel.block(X), dtype=np.float64)
    H = np.eye(101) - 1.0 / 101
    ref = H @ K @ H @ V
    tol = (2e-5 if dtype == np.float32 else 1e-12) * np.abs(ref).max()
    itemsize = np.dtype(dtype).itemsize
    budget = 2 * 13 * 13 * itemsize * 2 + 20 * 13 * 13 * itemsize  # ~half of 36 tiles
    for v in (variant, None):
        use(v)
        op = TiledKernelOperator(kernel, X, dtype=dtype, tile=13, n_jobs=2,
                                 memory_limit=budget, partial=True)
        assert 0 < op.fraction_stored < 1
        op, _ = center(op, inplace=True)
        np.testing.assert_allclose(op.matmat(V), ref, atol=tol)


def test_construction_checks_its_column_of_ones():
    X = np.random.default_rng(5).standard_normal((30, 2))
    op = TiledKernelOperator(RBF(gamma=0.3), X, dtype=np.float32, tile=10)
    with pytest.raises(ValueError, match="first column must be all ones"):
        op._pass(np.zeros((30, 17)), ones_first=True)


def test_numpy_products_without_the_kernel(monkeypatch):
    """Where the extension is absent (NATIVE false) a float32 pass is NumPy's, and
    still that of the dense reference."""
    monkeypatch.setattr(tiled, "NATIVE", False)
    monkeypatch.setattr(tiled, "_tileprod", None)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((70, 3))
    V = rng.standard_normal((70, 16))
    op, _ = center(TiledKernelOperator(RBF(gamma=0.3), X, dtype=np.float32, tile=16),
                   inplace=True)
    K = np.asarray(RBF(gamma=0.3).block(X), dtype=np.float64)
    H = np.eye(70) - 1.0 / 70
    ref = H @ K @ H @ V
    np.testing.assert_allclose(op.matmat(V), ref, atol=2e-5 * np.abs(ref).max())


@every_variant
@pytest.mark.parametrize("kernel", [RBF(gamma=0.2), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf-constant-diagonal", "poly"])
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float64, 8)])
@pytest.mark.parametrize("slice_rows", [8, 13])
def test_tiles_built_slice_by_slice(monkeypatch, use, variant, kernel, dtype, b, slice_rows):
    """The construction pass evaluates each kept tile a slice of rows at a time and
    multiplies the slice while it is in cache: the stored tiles are the kernel matrix
    (their diagonal too), and the row sums and probe product are those of a float64
    dense reference, as when tiles are built whole (NumPy's products). Tiles of 37
    rows in slices of 8 or 13 rows: full slices and a shorter last one."""
    rng = np.random.default_rng(6)
    X = rng.standard_normal((90, 3))
    probe = rng.standard_normal((90, b))
    K = np.asarray(kernel.block(X), dtype=np.float64)
    scale = np.abs(K).max()
    tol = (1e-6 if dtype == np.float32 else 1e-13) * scale
    built = {}
    for v in (variant, None):
        use(v)
        with config_context(slice_rows=slice_rows):
            op = TiledKernelOperator(kernel, X, dtype=dtype, tile=37, n_jobs=2, probe=probe)
        assert len(op._store) == len(op.tiles) == 6
        for t, T in op._store.items():
            i, j = op.tiles[t]
            rows = slice(op.bounds[i], op.bounds[i + 1])
            cols = slice(op.bounds[j], op.bounds[j + 1])
            np.testing.assert_allclose(T, K[rows, cols], atol=tol)
            if i == j and kernel.constant_diag is not None:  # set in every slice
                assert np.all(np.diagonal(T) == kernel.constant_diag)
        np.testing.assert_allclose(op._row_sums, K.sum(axis=1), atol=90 * tol)
        np.testing.assert_allclose(op._probe_product, K @ probe,
                                   atol=90 * tol * np.abs(probe).max())
        built[v] = op._probe_product
    np.testing.assert_allclose(built[variant], built[None], atol=90 * tol * np.abs(probe).max())
