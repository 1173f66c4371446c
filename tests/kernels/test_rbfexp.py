"""The compiled RBF block (``_rbfexp.c``: exponent and exponential in one sweep)
against float64 NumPy, its exponential against ``np.exp`` over the whole float32
range, its refusals, and the dispatch of ``RBF.block_prepared`` to it: each in every
variant this CPU runs (avx512, avx2, portable; ``kpca._native``)."""

import platform
import shutil
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kpca
import kpca.kernels._standard as standard
from kpca import _native
from kpca.kernels import RBF

EPS = np.finfo(np.float32).eps
#: the variants this CPU runs (none where the extension is not built)
VARIANTS = standard._rbfexp_ext.variants() if standard._rbfexp_ext is not None else ()
every_variant = pytest.mark.parametrize("variant", VARIANTS)
#: the variants whose blocks read packed columns (the portable one hands its exponents
#: to BLAS, kpca._native.blas_products, and packs nothing)
packing_variant = pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "portable"])
portable_only = pytest.mark.parametrize("variant", [v for v in VARIANTS if v == "portable"])


def test_the_kernel_is_built_where_it_can_be():
    """On x86-64 Linux with a C compiler the optional extension must have been built
    (a silent build failure would leave every RBF block on NumPy's two sweeps), with
    the variants this CPU's flags allow, and the best of them runs by default."""
    if sys.platform == "linux" and platform.machine() == "x86_64" and shutil.which("cc"):
        assert standard._rbfexp_ext is not None
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split())
        expected = [v for v, need in (("avx512", {"avx512f", "fma"}), ("avx2", {"avx2", "fma"}),
                                      ("portable", set())) if need <= flags]
        assert list(VARIANTS) == expected
        if _native.REQUEST == "auto":
            assert standard.NATIVE_RBF_VARIANT.variant == expected[0]
            assert standard._rbfexp.name == expected[0]


@pytest.fixture
def use(monkeypatch):
    """``use(variant)``: RBF blocks go through that variant (or NumPy, for None)."""
    def set_variant(variant):
        fns = None if variant is None else _native.bind(standard._rbfexp_ext, variant)
        monkeypatch.setattr(standard, "_rbfexp", fns)
        monkeypatch.setattr(standard, "NATIVE_RBF", fns is not None)
        return fns
    return set_variant


def _block(variant, A, B, clamp=False):
    out = np.empty((A.shape[0], B.shape[0]), np.float32)
    _native.bind(standard._rbfexp_ext, variant).block(A, B, clamp, out)
    return out


@every_variant
@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 70), c=st.integers(0, 100), p=st.integers(1, 30),
       clamp=st.booleans(), seed=st.integers(0, 2**16))
def test_block_against_float64(variant, m, c, p, clamp, seed):
    """Every row and column remainder (4 rows, 16-column panels, 4 panels at a time)
    and any inner size: exp(A B^T) of the same float32 inputs in float64, within the
    float32 round-off of the dot products (at most p eps sum |a_k b_k|) and of exp."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, p)).astype(np.float32)
    B = (-0.3 * rng.random((c, p))).astype(np.float32)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    z = A64 @ B64.T
    ref = np.exp(np.minimum(z, 0) if clamp else z)
    out = _block(variant, A, B, clamp)
    bound = p * EPS * (np.abs(A64) @ np.abs(B64).T) + 3 * EPS
    assert np.all(np.abs(out - ref) <= ref * bound + 1e-44)


@every_variant
def test_exp_over_the_float32_range(variant):
    """The exponential alone (A = [[1]]): a relative error below 2^-23 (so within 2
    ulp) of float64 ``exp`` from -87 to 88.7, gradual underflow below (to 0 under
    -104), inf above, NaN kept, and the clamp at 0 (which keeps NaN too)."""
    x = np.concatenate([np.linspace(-87.3, 88.7, 1_500_001),
                        np.linspace(-110.0, -87.3, 100_001)]).astype(np.float32)
    out = _block(variant, np.ones((1, 1), np.float32), x[:, None])[0]
    ref = np.exp(x.astype(np.float64))
    normal = ref >= np.finfo(np.float32).tiny
    np.testing.assert_array_less(np.abs(out - ref)[normal] / ref[normal], EPS)
    # subnormal results: within one subnormal step (1.4e-45) of the exact value
    assert np.all(np.abs(out - ref)[~normal] <= 1.5e-45)
    assert np.all(out[x < -104] == 0)
    special = np.array([np.nan, -np.inf, np.inf, 89.0, 1e30, -1e30, 0.0, 3.0],
                       np.float32)
    got = _block(variant, np.ones((1, 1), np.float32), special[:, None])[0]
    assert np.isnan(got[0]) and got[1] == 0 and np.isinf(got[2]) and np.isinf(got[3])
    assert np.isinf(got[4]) and got[5] == 0 and got[6] == 1
    np.testing.assert_allclose(got[7], np.exp(3.0), rtol=2 * EPS)
    clamped = _block(variant, np.ones((1, 1), np.float32), special[:, None], clamp=True)[0]
    assert np.isnan(clamped[0]) and clamped[1] == 0
    assert np.all(clamped[[2, 3, 4, 6, 7]] == 1) and clamped[5] == 0


@every_variant
@pytest.mark.parametrize("clamp", [False, True])
def test_exp_fast_and_careful_scaling_agree(variant, clamp):
    """The avx2 and portable exponentials apply 2^n by adding n to the exponent bits
    where every value of a register tile has a normal result, and as two exact powers
    of two where one does not (gradual underflow, overflow, NaN): the same values,
    bit for bit, whichever way each tile went (a value out of range in every group of
    8 sends every tile the careful way)."""
    rng = np.random.default_rng(7)
    hi = 0.0 if clamp else 88.0
    x = rng.uniform(-86.0, hi, 4096).astype(np.float32)
    x[:8] = [-86.0, hi, -85.99, 0.0, -1e-30, 1e-30, 87.9 if not clamp else -0.0, -43.0]
    one = np.ones((1, 1), np.float32)
    fast = _block(variant, one, x[:, None], clamp)[0]
    y = x.copy()
    y[::8] = -100.0  # a subnormal result: not the fast way
    careful = _block(variant, one, y[:, None], clamp)[0]
    keep = np.arange(x.size) % 8 != 0
    np.testing.assert_array_equal(fast[keep], careful[keep])
    assert np.all(careful[~keep] > 0) and np.all(careful[~keep] < np.finfo(np.float32).tiny)
    x64 = x.astype(np.float64)
    ref = np.exp(np.minimum(x64, 0) if clamp else x64)
    np.testing.assert_array_less(np.abs(fast - ref) / ref, EPS)


def _blas_block(A, B, clamp=False):
    out = np.full((A.shape[0], B.shape[0]), np.nan, np.float32)
    _native.bind(standard._rbfexp_ext, "portable").block(A, B, clamp, out, _native.sgemm())
    return out


@portable_only
@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 70), c=st.integers(0, 100), p=st.integers(0, 30),
       clamp=st.booleans(), seed=st.integers(0, 2**16))
def test_portable_block_by_blas_against_float64(variant, m, c, p, clamp, seed):
    """The portable variant's block with BLAS's exponents (any row and column count:
    the exponential's 16-value steps, 4-value steps and last c mod 4 values; no
    features at all: exp(0) = 1): exp(A B^T) in float64 within the float32 round-off
    of the dot products and of exp, as the variants' own blocks."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, p)).astype(np.float32)
    B = (-0.3 * rng.random((c, p))).astype(np.float32)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    z = A64 @ B64.T
    ref = np.exp(np.minimum(z, 0) if clamp else z)
    out = _blas_block(A, B, clamp)
    bound = p * EPS * (np.abs(A64) @ np.abs(B64).T) + 3 * EPS
    assert np.all(np.abs(out - ref) <= ref * bound + 1e-44)


@portable_only
def test_portable_exp_by_blas_is_the_portable_exp(variant):
    """With A = [[1]] BLAS's exponents are the values themselves, so the block by BLAS
    is the portable exponential alone: bit for bit the block without BLAS over the
    float32 range and its specials (NaN, +-inf, overflow, underflow), clamped or not,
    at every length (the 16- and 4-value steps and the rest)."""
    x = np.concatenate([np.linspace(-110.0, 88.7, 400_003),
                        [np.nan, -np.inf, np.inf, 89.0, 1e30, -1e30, 0.0, 3.0]]
                       ).astype(np.float32)
    one = np.ones((1, 1), np.float32)
    for clamp in (False, True):
        np.testing.assert_array_equal(_blas_block(one, x[:, None], clamp),
                                      _block("portable", one, x[:, None], clamp))
        for c in (1, 3, 4, 5, 15, 16, 17, 33):
            np.testing.assert_array_equal(_blas_block(one, x[:c, None], clamp),
                                          _block("portable", one, x[:c, None], clamp))


@portable_only
@pytest.mark.parametrize("best", ["avx2", "portable"])
def test_portable_block_prepared_goes_to_blas(monkeypatch, use, variant, best):
    """RBF.block_prepared with the portable variant forced below a wider variant this
    CPU runs (``best``) hands the block to BLAS's sgemm (the capsule passed), for few
    rows as for many, and packs no panels; where the portable variant is the best the
    CPU runs (x86-64 without AVX2, ARM) it makes the block itself from the columns'
    panels, as avx2 and avx512 do (kpca._native.blas_products). Either agrees with
    NumPy's two sweeps; a non-contiguous ``out`` stays with NumPy."""
    calls = []
    fns = use(variant)
    wider = best != "portable"

    class Spy:
        name = fns.name
        pack_panels = staticmethod(fns.pack_panels)

        @staticmethod
        def block(*args):
            calls.append(args[4:])
            return fns.block(*args)

    Spy.best = best
    monkeypatch.setattr(standard, "_rbfexp", Spy)
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((37, 6)) + 50, rng.standard_normal((45, 6)) + 50
    k = RBF(gamma=0.1)
    prep = k.prepare(Y, np.float32)
    # 37 rows (at least native_rbf_pack_rows: the columns are packed where the block
    # is the variant's own), then 2 (the packed panels serve them too)
    for rows in (k.prepare_rows(X, prep), k.prepare_rows(X[:2], prep)):
        n = len(calls)
        got = k.block_prepared(rows, prep)
        assert len(calls) == n + 1
        if wider:
            assert calls[-1] == (_native.sgemm(),) and prep.panels() is None
        else:
            assert calls[-1] == () and prep.panels() is not None
        monkeypatch.setattr(standard, "NATIVE_RBF", False)
        np.testing.assert_allclose(k.block_prepared(rows, prep), got, rtol=4e-6, atol=1e-7)
        monkeypatch.setattr(standard, "NATIVE_RBF", True)
    n = len(calls)
    k.block_prepared(rows, prep, out=np.empty((45, 2), np.float32).T)
    assert len(calls) == n


@portable_only
def test_portable_block_by_blas_refusals(variant):
    """The BLAS argument must be the sgemm capsule (or None); the other checks hold
    with it (contiguity, shapes, aliasing); the packed columns ignore it."""
    block = _native.bind(standard._rbfexp_ext, variant).block
    A, B = np.ones((4, 3), np.float32), np.ones((5, 3), np.float32)
    out = np.empty((4, 5), np.float32)
    with pytest.raises(TypeError, match="PyCapsule of BLAS's sgemm"):
        block(A, B, False, out, "sgemm")
    with pytest.raises(ValueError, match="contiguous"):
        block(np.ones((3, 4), np.float32).T, B, False, out, _native.sgemm())
    with pytest.raises(ValueError, match=r"shape \(4, 5\)"):
        block(A, B, False, np.empty((5, 4), np.float32), _native.sgemm())
    M = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="shares memory"):
        block(M, M, False, M, _native.sgemm())
    P = np.zeros((1, 3, 16), np.float32)
    _native.bind(standard._rbfexp_ext, variant).pack_panels(B, P)
    block(A, P, False, out, _native.sgemm())
    np.testing.assert_array_equal(out, _block(variant, A, B))


@every_variant
def test_refusals(variant):
    block = _native.bind(standard._rbfexp_ext, variant).block
    A = np.ones((4, 3), np.float32)
    B = np.ones((5, 3), np.float32)
    out = np.empty((4, 5), np.float32)
    with pytest.raises(TypeError, match="float32"):
        block(A.astype(np.float64), B, False, out)
    with pytest.raises(TypeError, match="float32"):
        block(A, B, False, out.astype(np.float64))
    with pytest.raises(ValueError, match="3 columns"):
        block(A, np.ones((5, 2), np.float32), False, out)
    with pytest.raises(ValueError, match=r"shape \(4, 5\)"):
        block(A, B, False, np.empty((5, 4), np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        block(A, B, False, np.empty((5, 4), np.float32).T)
    with pytest.raises(ValueError, match="shares memory"):
        M = np.ones((4, 4), np.float32)
        block(M[:, :3].copy(), M[:4, :3].copy(), False, M)  # fine
        block(M, M, False, M)
    with pytest.raises(ValueError, match="not writable|read-only|readonly"):
        ro = np.empty((4, 5), np.float32)
        ro.flags.writeable = False
        block(A, B, False, ro)


@every_variant
@pytest.mark.parametrize("clamp_rows", [False, True])
def test_block_prepared_uses_it_for_float32(monkeypatch, use, variant, clamp_rows):
    """RBF blocks of float32 rows and columns (prepared or not, with ``out`` given or
    not) go to the compiled kernel; they agree with the per-pair formula, as NumPy's
    two sweeps do; float64 blocks and a non-contiguous ``out`` stay with NumPy."""
    calls = []
    fns = use(variant)

    class Spy:
        pack_panels = staticmethod(fns.pack_panels)

        @staticmethod
        def block(*args):
            calls.append(args[0].dtype)
            return fns.block(*args)

    monkeypatch.setattr(standard, "_rbfexp", Spy)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((37, 6)) * 2 + 100  # far from the origin: the centre shift
    Y = rng.standard_normal((45, 6)) * 2 + 100
    k = RBF(gamma=0.1)
    exact = np.exp(-0.1 * ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    prep = k.prepare(Y, np.float32)
    rows = X.astype(np.float32) if clamp_rows else k.prepare_rows(X, prep)
    got = k.block_prepared(rows, prep)
    assert got.dtype == np.float32 and calls == [np.float32]
    np.testing.assert_allclose(got, exact, atol=2e-5)
    out = np.empty((37, 45), np.float32)
    assert k.block_prepared(rows, prep, out=out) is out and len(calls) == 2
    np.testing.assert_array_equal(out, got)
    # the one-sweep result against NumPy's two sweeps
    monkeypatch.setattr(standard, "NATIVE_RBF", False)
    np.testing.assert_allclose(k.block_prepared(rows, prep), got, rtol=4e-6, atol=1e-7)
    monkeypatch.setattr(standard, "NATIVE_RBF", True)
    k.block(X, Y)  # float64
    k.block_prepared(rows, prep, out=np.empty((45, 37), np.float32).T)
    assert len(calls) == 2
    # many features: BLAS's product wins (MNIST's 784: the compiled block 4x slower)
    most = kpca.get_config()["native_rbf_max_features"]
    wide = rng.standard_normal((45, most + 1))
    wide_prep = k.prepare(wide, np.float32)
    got = k.block_prepared(k.prepare_rows(wide[:40], wide_prep), wide_prep)
    assert len(calls) == 2 and wide_prep.panels() is None
    # (the diagonal may round above 1: prepared rows skip the clamp, _standard.py)
    np.testing.assert_allclose(got[:, :40], k.block(wide[:40], wide[:40]), atol=1e-5)
    edge = rng.standard_normal((45, most))
    edge_prep = k.prepare(edge, np.float32)
    k.block_prepared(k.prepare_rows(edge[:40], edge_prep), edge_prep)
    assert len(calls) == 3 and edge_prep.panels() is not None
    # the limit is a setting, read when the columns are prepared: 5 features are
    # "many" under a limit of 4, for every block against those columns
    with kpca.config_context(native_rbf_max_features=4):
        narrow_prep = k.prepare(edge[:, :5], np.float32)
    got = k.block_prepared(k.prepare_rows(edge[:40, :5], narrow_prep), narrow_prep)
    assert len(calls) == 3 and narrow_prep.panels() is None
    np.testing.assert_allclose(got[:, :40], k.block(edge[:40, :5], edge[:40, :5]), atol=1e-5)


@every_variant
@settings(max_examples=30, deadline=None)
@given(c=st.integers(1, 90), p=st.integers(1, 25), seed=st.integers(0, 2**16))
def test_packed_columns(variant, c, p, seed):
    """pack_panels's layout (panels of 16 columns, zero past the last), and the block
    from the panels, whole or a slice of them (as a prepared slice that starts on a
    panel reads them), the same bit for bit as from the columns."""
    fns = _native.bind(standard._rbfexp_ext, variant)
    rng = np.random.default_rng(seed)
    B = (-0.2 * rng.random((c, p))).astype(np.float32)
    P = np.full((-(-c // 16), p, 16), np.nan, np.float32)
    fns.pack_panels(B, P)
    padded = np.zeros((16 * P.shape[0], p), np.float32)
    padded[:c] = B
    np.testing.assert_array_equal(P, padded.reshape(-1, 16, p).transpose(0, 2, 1))
    A = rng.standard_normal((9, p)).astype(np.float32)
    whole = np.empty((9, c), np.float32)
    fns.block(A, P, False, whole)
    np.testing.assert_array_equal(whole, _block(variant, A, B))
    q0 = 16 * (P.shape[0] // 2)
    out = np.empty((9, c - q0), np.float32) if c > q0 else None
    if out is not None:
        fns.block(A, P[q0 // 16 :], False, out)
        np.testing.assert_array_equal(out, _block(variant, A, B[q0:]))


@packing_variant
def test_prepared_slices_share_the_panels(use, variant):
    """The prepared columns pack themselves once, on the first block of enough rows
    (a slice's block packs the columns it comes from); a slice that starts on a panel
    reads them (a view); any other slice packs its own columns; fewer rows than
    the setting ``native_rbf_pack_rows`` take NumPy's path until the columns are packed.
    Every way gives the block of the columns."""
    use(variant)
    k = RBF(gamma=0.3)
    rng = np.random.default_rng(2)
    Y = rng.standard_normal((100, 4))
    X = rng.standard_normal((kpca.get_config()["native_rbf_pack_rows"], 4))
    prep = k.prepare(Y, np.float32)
    rows = k.prepare_rows(X, prep)
    few = rows[:3]
    assert prep.panels() is None
    small = k.block_prepared(few, prep[16:50])  # NumPy's: nothing packed
    assert prep.panels() is None
    full = k.block_prepared(rows, prep[32:100])  # packs the root
    assert prep.panels() is not None and prep.panels().shape == (7, 6, 16)
    full = k.block_prepared(rows, prep)
    np.testing.assert_allclose(small, full[:3, 16:50], rtol=2e-6)
    for sl in (slice(16, 50), slice(32, 100), slice(0, 7), slice(5, 40), slice(10, 11)):
        part = prep[sl]
        shares = sl.start % 16 == 0
        assert (part.panels() is not None) == shares
        if shares:
            assert np.shares_memory(part.panels(), prep.panels())
        np.testing.assert_array_equal(k.block_prepared(rows, part), full[:, sl])
        # few rows: the compiled block from the panels, NumPy's without
        np.testing.assert_allclose(k.block_prepared(few, part), full[:3, sl], rtol=2e-6)
    assert prep[np.arange(3)].panels() is None
    wide = k.prepare(Y, np.float64)
    wide.pack()
    assert wide.panels() is None
    # slices past the end, negative, empty, with a step, and slices of slices
    for part, cols in ((prep[96:200], slice(96, 100)), (prep[-4:], slice(96, 100)),
                       (prep[-36:-20], slice(64, 80)), (prep[50:50], slice(50, 50)),
                       (prep[0:64:2], slice(0, 64, 2)), (prep[16:80][16:40], slice(32, 56)),
                       (prep[16:80][3:40], slice(19, 56))):
        np.testing.assert_array_equal(part.aug, prep.aug[cols])
        if part.panels() is not None:
            first = np.arange(100)[cols][0]
            assert first % 16 == 0 and len(part.panels()) == -(-len(part.aug) // 16)
        # (a slice with a step is not contiguous: NumPy's block, to round-off)
        np.testing.assert_allclose(k.block_prepared(rows, part), full[:, cols], rtol=2e-6)
    # the panels are a cache: a pickled kernel (to a Dask worker) leaves them behind,
    # and a pickled slice its root
    import pickle

    copy = pickle.loads(pickle.dumps(prep))
    assert copy.panels() is None
    np.testing.assert_array_equal(k.block_prepared(rows, copy), full)
    part = pickle.loads(pickle.dumps(prep[32:64]))
    assert part.panels() is None and part._root is part
    np.testing.assert_array_equal(k.block_prepared(rows, part), full[:, 32:64])
    assert part.panels() is not None and len(part.panels()) == 2


@packing_variant
def test_pack_rows_is_a_setting(use, variant):
    """Columns prepared under ``native_rbf_pack_rows=2`` are packed by a block of 3
    rows; under the default (more rows) the same block leaves them unpacked. Both give
    the columns' block."""
    use(variant)
    k = RBF(gamma=0.3)
    rng = np.random.default_rng(3)
    Y, X = rng.standard_normal((100, 4)), rng.standard_normal((3, 4))
    assert kpca.get_config()["native_rbf_pack_rows"] > 3
    with kpca.config_context(native_rbf_pack_rows=2):
        eager = k.prepare(Y, np.float32)
    lazy = k.prepare(Y, np.float32)
    a = k.block_prepared(k.prepare_rows(X, eager), eager)
    b = k.block_prepared(k.prepare_rows(X, lazy), lazy)
    assert eager.panels() is not None and lazy.panels() is None
    np.testing.assert_allclose(a, b, rtol=2e-6)


def test_clamp_free_rows_follow_the_setting():
    """Rows near the data's centre skip the clamp of the exponent at 0 (their
    round-off bound is below ``rbf_clamp_free_error``); with the setting at 0 they are
    clamped, and the kernel values stay at most 1 either way up to round-off."""
    k = RBF(gamma=0.5)
    X = np.random.default_rng(4).standard_normal((50, 3))
    prep = k.prepare(X, np.float32)
    assert not k.prepare_rows(X, prep).clamp
    with kpca.config_context(rbf_clamp_free_error=0.0):
        rows = k.prepare_rows(X, prep)
    assert rows.clamp
    assert k.block_prepared(rows, prep).max() <= 1.0


@every_variant
def test_packed_refusals(use, variant):
    fns = use(variant)
    A = np.ones((4, 3), np.float32)
    out = np.empty((4, 40), np.float32)
    with pytest.raises(ValueError, match=r"shape \(>= 3, 3, 16\)"):
        fns.block(A, np.ones((2, 3, 16), np.float32), False, out)
    with pytest.raises(ValueError, match=r"shape \(>= 3, 3, 16\)"):
        fns.block(A, np.ones((3, 3, 8), np.float32), False, out)
    with pytest.raises(ValueError, match=r"P must have shape \(3, 3, 16\)"):
        fns.pack_panels(np.ones((40, 3), np.float32),
                                     np.empty((2, 3, 16), np.float32))
    with pytest.raises(TypeError, match="3-D float32"):
        fns.pack_panels(np.ones((40, 3), np.float32),
                                     np.empty((3, 3, 16), np.float64))
    buf = np.zeros(3 * 3 * 16, np.float32)
    with pytest.raises(ValueError, match="shares memory"):
        fns.pack_panels(buf[:120].reshape(40, 3), buf.reshape(3, 3, 16))
    # an out of other columns than the panels' prepared ones: refused before the
    # kernel (the panels alone cannot tell how many columns they hold)
    k = RBF(gamma=0.3)
    prep = k.prepare(np.ones((40, 3)), np.float32)
    rows = k.prepare_rows(np.ones((4, 3)), prep)
    with pytest.raises(ValueError):
        k.block_prepared(rows, prep, out=np.empty((4, 39), np.float32))
    with pytest.raises(ValueError):
        k.block_prepared(rows, prep, out=np.empty((4, 41), np.float32))


@pytest.mark.parametrize("variant", [*VARIANTS, None])
@pytest.mark.parametrize("memory_limit", ["256MB", "12MB"])
def test_fits_without_the_kernel_agree(monkeypatch, use, variant, memory_limit):
    """A float32 fit (K stored, or recomputed in pieces on every pass) makes its RBF
    blocks with the compiled variant where it is chosen (the kernels' block and the
    operator's compiled loops over tiles, which use the same block), and with NumPy
    where it is not (None): the same eigenvalues, and the same scores of new rows, as
    NumPy's."""
    import kpca.operators._tiled as tiled

    rng = np.random.default_rng(3)
    X, X_new = rng.standard_normal((1500, 5)), rng.standard_normal((300, 5))
    calls = []
    fns = use(variant)
    tile_fns = None if variant is None else _native.bind(tiled._tileprod_ext, variant)
    monkeypatch.setattr(tiled, "NATIVE", tile_fns is not None)
    if fns is not None:
        def counted(fn):
            def call(*args):
                calls.append(1)
                return fn(*args)
            return staticmethod(call)

        monkeypatch.setattr(standard, "_rbfexp", type("Spy", (), {
            "pack_panels": staticmethod(fns.pack_panels), "block": counted(fns.block)}))
        monkeypatch.setattr(tiled, "_tileprod", type("Spy", (), {
            "name": tile_fns.name, "widths": tile_fns.widths,
            **{f: counted(getattr(tile_fns, f))
               for f in ("product", "fused_rbf", "build_rbf", "rows_rbf")}}))
    else:
        monkeypatch.setattr(tiled, "_tileprod", None)

    def fit():
        return kpca.KernelPCA(6, kernel="rbf", gamma=0.2, eigen_solver="krylov",
                              precision="float32", random_state=0,
                              memory_limit=memory_limit).fit(X)

    with_kernel = fit()
    Z = with_kernel.transform(X_new)
    assert bool(calls) == (variant is not None)
    use(None)
    monkeypatch.setattr(tiled, "NATIVE", False)
    monkeypatch.setattr(tiled, "_tileprod", None)
    without = fit()
    n_calls = len(calls)
    Z0 = without.transform(X_new)
    assert len(calls) == n_calls  # NumPy's blocks only
    np.testing.assert_allclose(with_kernel.eigenvalues_, without.eigenvalues_, rtol=1e-5)
    np.testing.assert_allclose(np.abs(Z), np.abs(Z0), atol=1e-4 * np.abs(Z0).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fortran_ordered_data(dtype):
    """Data in Fortran order (as scikit-learn's checks pass it) are prepared in C order
    on both sides (which the compiled kernel needs for float32 blocks), with the
    values of C-ordered data."""
    rng = np.random.default_rng(6)
    X, Y = rng.standard_normal((9, 5)), rng.standard_normal((40, 5))
    k = RBF(gamma=0.2)
    prep = k.prepare(np.asfortranarray(Y), dtype)
    rows = k.prepare_rows(np.asfortranarray(X), prep)
    assert prep.aug.flags.c_contiguous and rows.aug.flags.c_contiguous
    # (the centres differ in round-off: the means are summed in another order)
    np.testing.assert_allclose(k.block_prepared(rows, prep),
                               k.block_prepared(k.prepare_rows(X, k.prepare(Y, dtype)),
                                                k.prepare(Y, dtype)),
                               rtol=2e-6 if dtype == np.float32 else 1e-13)
    np.testing.assert_allclose(k.block(np.asfortranarray(X.astype(dtype)), Y.astype(dtype)),
                               np.exp(-0.2 * ((X[:, None] - Y[None]) ** 2).sum(-1)),
                               rtol=2e-5 if dtype == np.float32 else 1e-12)
