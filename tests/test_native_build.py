"""The compiled kernels as a compiler without GCC's vector extensions, on a CPU other
than x86-64, builds them: only the portable variant, in plain C (``KPCA_PLAIN_C``,
``KPCA_NO_X86``: src/kpca/_portable.h, src/kpca/_native.h). Built here with the
machine's C compiler into a temporary folder, then checked against NumPy in float64:
the path MSVC and other compilers take, which no other test reaches."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
EPS = np.finfo(np.float32).eps

pytestmark = pytest.mark.skipif(
    not (shutil.which(sysconfig.get_config_var("CC").split()[0] or "cc")
         and (ROOT / "setup.py").is_file()),
    reason="needs a C compiler and the source tree")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The two extension modules built in plain C, portable variant only."""
    out = tmp_path_factory.mktemp("plain")
    # -O2 as Debian's and Ubuntu's Pythons hand their extensions
    env = {**os.environ, "CFLAGS": "-O2 -DKPCA_PLAIN_C -DKPCA_NO_X86"}
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--build-lib", str(out),
                           "--build-temp", str(out / "tmp")], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True, timeout=600)
    mods = {"log": done.stdout + done.stderr}
    for name, sub in (("_tileprod", "operators"), ("_rbfexp", "kernels")):
        path = next((out / "kpca" / sub).glob(f"{name}.*"))
        spec = importlib.util.spec_from_file_location(name, path)
        mods[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mods[name])
    return mods


def test_kernels_are_optimised_at_O3_whatever_pythons_flags(plain):
    """setup.py's build_ext appends -O3 after the flags Python gives (here -O2, as
    Debian's and Ubuntu's Pythons give): the kernels' register tiles need GCC's -O3
    unrolling (at -O2 the RBF block ran 2x and a matrix-free fit 1.9x slower in CPU
    time; docs/benchmarks.md, issue 31)."""
    if "msvc" in plain["log"].lower() or "cl.exe" in plain["log"].lower():
        pytest.skip("MSVC keeps its own /O2")
    compiles = [line for line in plain["log"].splitlines()
                if " -c " in line and ("_tileprod.c" in line or "_rbfexp.c" in line)]
    assert len(compiles) == 2, plain["log"]
    for line in compiles:
        flags = line.split()
        levels = [f for f in flags if f.startswith("-O")]
        assert levels and levels[-1] == "-O3" and "-O2" in levels, line


def test_only_the_portable_variant(plain):
    for mod in (plain["_tileprod"], plain["_rbfexp"]):
        assert mod.variants() == ("portable",)
        with pytest.raises(ValueError, match="cannot run the avx2 variant"):
            mod.variant("avx2")


def test_plain_exp_over_the_float32_range(plain):
    """The exponential within 2^-23 of float64 exp, the same underflow, NaN, inf and
    clamp behaviour as the vector variants (tests/kernels/test_rbfexp.py)."""
    block = plain["_rbfexp"].variant("portable")["block"]

    def run(x, clamp=False):
        out = np.empty((1, len(x)), np.float32)
        block(np.ones((1, 1), np.float32), x[:, None], clamp, out)
        return out[0]

    x = np.concatenate([np.linspace(-87.3, 88.7, 300_001),
                        np.linspace(-110.0, -87.3, 20_001)]).astype(np.float32)
    out, ref = run(x), np.exp(x.astype(np.float64))
    normal = ref >= np.finfo(np.float32).tiny
    np.testing.assert_array_less(np.abs(out - ref)[normal] / ref[normal], EPS)
    assert np.all(np.abs(out - ref)[~normal] <= 1.5e-45) and np.all(out[x < -104] == 0)
    special = np.array([np.nan, -np.inf, np.inf, 89.0, 1e30, -1e30, 0.0], np.float32)
    got, clamped = run(special), run(special, clamp=True)
    assert np.isnan(got[0]) and got[1] == 0 and np.isinf(got[2:5]).all() and got[5] == 0
    assert got[6] == 1 and np.isnan(clamped[0]) and clamped[1] == 0
    assert np.all(clamped[[2, 3, 4, 6]] == 1) and clamped[5] == 0


@pytest.mark.parametrize(("m", "c", "p"), [(1, 1, 1), (9, 37, 5), (64, 100, 22), (3, 16, 30)])
def test_plain_block_and_product(plain, m, c, p):
    """The RBF block (row and panel remainders) and the tile product (4-row blocks and
    the rest, both products, the sums) against float64 NumPy."""
    rng = np.random.default_rng(m * c * p)
    rbf = plain["_rbfexp"].variant("portable")
    A = rng.standard_normal((m, p)).astype(np.float32)
    B = (-0.3 * rng.random((c, p))).astype(np.float32)
    out = np.empty((m, c), np.float32)
    rbf["block"](A, B, False, out)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = np.exp(A64 @ B64.T)
    assert np.all(np.abs(out - ref) <= ref * (p * EPS * (np.abs(A64) @ np.abs(B64).T)
                                              + 3 * EPS))
    tp = plain["_tileprod"].variant("portable")
    assert tuple(tp["widths"]) == (4, 2)
    for dtype, b in ((np.float32, 8), (np.float64, 6)):
        T = rng.standard_normal((m, c)).astype(dtype)
        VJ = rng.standard_normal((c, b)).astype(dtype)
        VI = rng.standard_normal((m, b)).astype(dtype)
        WI, WJ = np.zeros((m, b), dtype), np.zeros((c, b), dtype)
        rs, cs = np.zeros(m, dtype), np.zeros(c, dtype)
        tp["product"](T, VJ, VI, WI, WJ, True, rs, cs)
        T64 = T.astype(np.float64)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(WI, T64 @ VJ, rtol=tol, atol=tol * c)
        np.testing.assert_allclose(WJ, T64.T @ VI, rtol=tol, atol=tol * m)
        np.testing.assert_allclose(rs, T64.sum(1), rtol=tol, atol=tol * c)
        np.testing.assert_allclose(cs, T64.sum(0), rtol=tol, atol=tol * m)


def test_plain_blas_path(plain):
    """The portable variant's BLAS path in plain C (its exponential's range check and
    exponent-bits scaling, the products by sgemm in slices): the exponential bit for
    bit the plain block's over the float32 range and its specials, the block and the
    products against float64 NumPy."""
    from scipy.linalg import cython_blas

    sgemm = cython_blas.__pyx_capi__["sgemm"]
    block = plain["_rbfexp"].variant("portable")["block"]
    x = np.concatenate([np.linspace(-110.0, 88.7, 100_003),
                        [np.nan, -np.inf, np.inf, 89.0, 1e30, -1e30, 0.0]]).astype(np.float32)
    one = np.ones((1, 1), np.float32)
    for clamp in (False, True):
        a, b = np.empty((1, len(x)), np.float32), np.empty((1, len(x)), np.float32)
        block(one, x[:, None], clamp, a, sgemm)
        block(one, x[:, None], clamp, b)
        np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(7)
    A = rng.standard_normal((9, 22)).astype(np.float32)
    B = (-0.3 * rng.random((37, 22))).astype(np.float32)
    out = np.empty((9, 37), np.float32)
    block(A, B, False, out, sgemm)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    ref = np.exp(A64 @ B64.T)
    assert np.all(np.abs(out - ref) <= ref * (22 * EPS * (np.abs(A64) @ np.abs(B64).T)
                                              + 3 * EPS))
    T = rng.standard_normal((13, 37)).astype(np.float32)
    VJ, VI = rng.standard_normal((37, 5)).astype(np.float32), rng.standard_normal(
        (13, 5)).astype(np.float32)
    WI, WJ = np.zeros((13, 5), np.float32), np.zeros((37, 5), np.float32)
    rs, cs = np.zeros(13, np.float32), np.zeros(37, np.float32)
    plain["_tileprod"].variant("portable")["product"](T, VJ, VI, WI, WJ, True, rs, cs,
                                                      sgemm, 4)
    T64 = T.astype(np.float64)
    np.testing.assert_allclose(WI, T64 @ VJ, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(WJ, T64.T @ VI, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(rs, T64.sum(1), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(cs, T64.sum(0), rtol=1e-5, atol=1e-4)


def test_without_a_compiler_the_build_goes_on(tmp_path):
    """With no working C compiler the optional extensions are skipped and the build
    succeeds (setup.py's optional=True); kpca then imports and fits with NumPy."""
    out = tmp_path / "nocc"
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib",
                           str(out), "--build-temp", str(out / "tmp")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert not list(out.rglob("*.so")) and not list(out.rglob("*.pyd"))
    # a copy of the package without the compiled modules, imported in a fresh process
    pkg = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "kpca", pkg / "kpca",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    code = ("import kpca, numpy as np, kpca.operators._tiled as t, kpca.kernels._standard as s\n"
            f"assert kpca.__file__.startswith({str(pkg)!r}), kpca.__file__\n"
            "assert t._tileprod_ext is None and s._rbfexp_ext is None\n"
            "assert not t.NATIVE and not s.NATIVE_RBF and t.NATIVE_VARIANT.variant is None\n"
            "X = np.random.default_rng(0).normal(size=(300, 4))\n"
            "Z = kpca.KernelPCA(3, kernel='rbf', gamma=0.5, precision='float32').fit_transform(X)\n"
            "assert np.isfinite(Z).all()\n")
    env = {**os.environ, "PYTHONPATH": str(pkg)}
    env.pop("KPCA_NATIVE", None)
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
