"""The compiled one-sweep product of stored tiles (``_tileprod.c``) against NumPy's
float64 products, and the operator's passes with and without it."""

from __future__ import annotations

import platform
import shutil
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kpca.operators._tiled as tiled
from kpca import config_context
from kpca.kernels import RBF, Polynomial
from kpca.operators import TiledKernelOperator, center

needs_native = pytest.mark.skipif(not tiled.NATIVE,
                                  reason="the compiled kernel is not built or no AVX-512")


def test_the_kernel_is_built_where_it_can_be(monkeypatch):
    """On x86-64 Linux with a C compiler the optional extension must have been built
    (a silent build failure would leave every fit on the slower NumPy products);
    without the kernel, the operator's passes never reach for it."""
    if sys.platform == "linux" and platform.machine() == "x86_64" and shutil.which("cc"):
        assert tiled._tileprod is not None
    if not tiled.NATIVE:  # no kernel here (or no AVX-512): NumPy's products only
        monkeypatch.setattr(tiled, "native_tile_product", None)
        X = np.random.default_rng(0).standard_normal((40, 2))
        op = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float32, tile=16)
        assert np.isfinite(op.matmat(np.ones((40, 16)))).all()


def _reference(T, VJ, VI, both):
    T, VJ, VI = (np.asarray(a, dtype=np.float64) for a in (T, VJ, VI))
    return T @ VJ, (T.T @ VI if both else None), T.sum(axis=1), T.sum(axis=0)


@needs_native
@settings(max_examples=80, deadline=None)
@given(dtype=st.sampled_from([np.float32, np.float64]), m=st.integers(0, 37),
       c=st.integers(0, 41), q=st.integers(0, 3), both=st.booleans(), sums=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_product_matches_float64_reference(dtype, m, c, q, both, sums, seed):
    """Every row count (the 8-row blocks and the rest), widths of 0-3 registers, with
    and without the transposed product and the sums, float32 and float64;
    accumulated onto what the outputs held."""
    rng = np.random.default_rng(seed)
    b = tiled.NATIVE_WIDTH[np.dtype(dtype)] * q

    def draw(*shape):
        return rng.standard_normal(shape).astype(dtype)

    T, VJ, VI, WI0, WJ0, rs0, cs0 = draw(m, c), draw(c, b), draw(m, b), draw(m, b), draw(
        c, b), draw(m), draw(c)
    WI, WJ, rs, cs = WI0.copy(), WJ0.copy(), rs0.copy(), cs0.copy()
    tiled._tileprod.product(T, VJ, VI, WI, WJ, both, rs if sums else None,
                            cs if sums else None)
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


@needs_native
def test_product_rejects_wrong_buffers():
    """Types, shapes, contiguity, writability and shared memory are checked before
    anything is written (a wrong shape would read or write out of bounds)."""
    T = np.zeros((4, 5), np.float32)
    V5, V4 = np.zeros((5, 16), np.float32), np.zeros((4, 16), np.float32)
    prod = tiled._tileprod.product

    def run(*args, both=True, rs=None, cs=None):
        return prod(*args, both, rs, cs)

    with pytest.raises(ValueError, match="multiple of 16 for float32"):
        run(T, V5[:, :8].copy(), V4[:, :8].copy(), V4[:, :8].copy(), V5[:, :8].copy())
    with pytest.raises(ValueError, match="multiple of 8 for float64"):
        W = np.zeros((4, 4))
        run(T.astype(np.float64), np.zeros((5, 4)), W, W.copy(), np.zeros((5, 4)))
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


@needs_native
def test_product_refuses_outputs_sharing_memory():
    """An output that is an input (or part of one), or two outputs that overlap,
    would give wrong sums: refused, untouched. WI and WJ may be one array when only
    WI is written (a diagonal tile)."""
    rng = np.random.default_rng(3)
    T = rng.standard_normal((16, 16)).astype(np.float32)
    V = rng.standard_normal((16, 16)).astype(np.float32)
    W = np.zeros((32, 16), np.float32)
    prod = tiled._tileprod.product
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


def _operator_pass(monkeypatch, native, kernel, X, V, probe=None, dtype=np.float32):
    monkeypatch.setattr(tiled, "NATIVE", native)
    op = TiledKernelOperator(kernel, X, dtype=dtype, tile=23, n_jobs=2, probe=probe)
    op, _ = center(op, inplace=True)
    return op, op.matmat(V)


@needs_native
@pytest.mark.parametrize("kernel", [RBF(gamma=0.2), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf-centred-in-products", "poly-centred-tiles"])
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float32, 32),
                                         (np.float32, 24), (np.float64, 8),
                                         (np.float64, 24), (np.float64, 12)])
def test_operator_passes_agree_with_and_without_the_kernel(monkeypatch, kernel, dtype, b):
    """Stored tiles of 23 rows (8-row blocks and rests): the centred product, the row
    sums and the construction's probe product are those of a float64 dense reference,
    with the kernel as without it (float32 24 and float64 12 columns: not a multiple
    of a register, NumPy's products)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    V = rng.standard_normal((100, b))
    probe = rng.standard_normal((100, 16))
    K = np.asarray(kernel.block(X), dtype=np.float64)
    H = np.eye(100) - 1.0 / 100
    ref = H @ K @ H @ V
    results = {}
    tol = (2e-5 if dtype == np.float32 else 1e-12) * np.abs(ref).max()
    for native in (True, False):
        op, KV = _operator_pass(monkeypatch, native, kernel, X, V, probe, dtype)
        np.testing.assert_allclose(KV, ref, atol=tol)
        P, KP = op.initial_block()
        np.testing.assert_allclose(KP, H @ K @ H @ P, atol=tol)
        results[native] = KV
    np.testing.assert_allclose(results[True], results[False], atol=tol)


@needs_native
def test_the_pass_uses_the_kernel_only_where_it_applies(monkeypatch):
    """The compiled kernel serves float32 tiles with blocks of a multiple of 16 columns
    and float64 tiles with a multiple of 8 (after the construction's column of ones);
    other widths keep NumPy's products."""
    calls = []
    real = tiled._tileprod.product

    class Spy:
        @staticmethod
        def product(*args):
            calls.append(args[1].shape[1])  # the block's width (VJ's columns)
            return real(*args)

        supported = staticmethod(tiled._tileprod.supported)

    monkeypatch.setattr(tiled, "_tileprod", Spy)
    X = np.random.default_rng(1).standard_normal((60, 3))
    op = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float32, tile=20,
                             probe=np.ones((60, 16)))
    assert calls and set(calls) == {16}  # construction: 1 + 16 columns
    calls.clear()
    op.matmat(np.ones((60, 24)))
    assert calls == []
    op.matmat(np.ones((60, 32)))
    assert calls and set(calls) == {32}
    calls.clear()
    op64 = TiledKernelOperator(RBF(gamma=0.5), X, dtype=np.float64, tile=20)
    assert calls and set(calls) == {0}  # construction: the row sums alone
    calls.clear()
    op64.matmat(np.ones((60, 12)))
    assert calls == []
    op64.matmat(np.ones((60, 16)))
    assert calls and set(calls) == {16}


@needs_native
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float64, 8)])
def test_pass_over_partly_stored_tiles(monkeypatch, dtype, b):
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
    for native in (True, False):
        monkeypatch.setattr(tiled, "NATIVE", native)
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


@needs_native
@pytest.mark.parametrize("kernel", [RBF(gamma=0.2), Polynomial(gamma=0.5, degree=2, coef0=1.0)],
                         ids=["rbf-constant-diagonal", "poly"])
@pytest.mark.parametrize(("dtype", "b"), [(np.float32, 16), (np.float64, 8)])
@pytest.mark.parametrize("slice_rows", [8, 13])
def test_tiles_built_slice_by_slice(monkeypatch, kernel, dtype, b, slice_rows):
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
    for native in (True, False):
        monkeypatch.setattr(tiled, "NATIVE", native)
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
        built[native] = op._probe_product
    np.testing.assert_allclose(built[True], built[False], atol=90 * tol * np.abs(probe).max())
