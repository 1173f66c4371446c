"""The choice of the compiled kernels' variant (``kpca._native``): the KPCA_NATIVE
environment variable, its refusals and warnings, and what a process imports with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kpca.kernels._standard as standard
import kpca.operators._tiled as tiled
from kpca import _native

SRC = str(Path(_native.__file__).parents[1])
AVAILABLE = tiled._tileprod_ext.variants() if tiled._tileprod_ext is not None else ()


class _Ext:
    """An extension module that runs ``runs`` (best first)."""

    def __init__(self, *runs: str):
        self.runs = runs

    def variants(self):
        return self.runs

    def variant(self, name):
        assert name in self.runs
        return {"name": name}


@pytest.mark.parametrize(("value", "expected"), [
    (None, "auto"), ("", "auto"), ("  ", "auto"), ("auto", "auto"), ("AVX2", "avx2"),
    (" portable ", "portable"), ("avx512", "avx512"), ("Off", "off")])
def test_requested(value, expected):
    env = {} if value is None else {"KPCA_NATIVE": value}
    assert _native.requested(env) == expected


@pytest.mark.parametrize("value", ["sse", "avx", "numpy", "1", "avx-512"])
def test_requested_refuses_other_values(value):
    with pytest.raises(ValueError, match=r"KPCA_NATIVE='.*' is not valid; valid values are "
                                         r"auto, avx512, avx2, portable, off"):
        _native.requested({"KPCA_NATIVE": value})


def test_select_best_forced_and_off():
    ext = _Ext("avx512", "avx2", "portable")
    best = _native.select(ext, "k", "auto")
    assert best.variant == "avx512" and best.functions.name == "avx512"
    assert best.available == ("avx512", "avx2", "portable") and "best" in best.reason
    forced = _native.select(ext, "k", "portable")
    assert forced.variant == "portable" and forced.functions.name == "portable"
    assert forced.reason == "forced by KPCA_NATIVE=portable"
    off = _native.select(ext, "k", "off")
    assert off.variant is None and off.functions is None and off.reason == "KPCA_NATIVE=off"
    assert off.available == ext.runs


@pytest.mark.parametrize(("runs", "request_", "instead"), [
    (("avx2", "portable"), "avx512", "avx2"),
    (("portable",), "avx512", "portable"),
    (("portable",), "avx2", "portable"),
])
def test_select_warns_and_falls_back(runs, request_, instead):
    """A variant this CPU cannot run: a warning that names the variable, the valid
    values and what runs instead, which is the best variant below the one asked for."""
    with pytest.warns(RuntimeWarning, match=rf"KPCA_NATIVE={request_}: this CPU cannot run "
                                            rf"it .*; using {instead}\. Valid values of "
                                            r"KPCA_NATIVE: auto, avx512, avx2, portable, off"):
        got = _native.select(_Ext(*runs), "k", request_)
    assert got.variant == instead and got.functions.name == instead


def test_select_without_the_extension():
    """Not built: NumPy, and a warning only when a variant was asked for."""
    got = _native.select(None, "tile product", "auto")
    assert got.variant is None and got.functions is None and "not built" in got.reason
    assert _native.select(None, "tile product", "off").variant is None
    with pytest.warns(RuntimeWarning, match="the compiled tile product is not built; "
                                            "using NumPy"):
        assert _native.select(None, "tile product", "avx2").variant is None


def test_optional_is_the_extension_or_none():
    """An extension that was not built (or does not exist) is None, not an error; a
    built one is the module itself (the one the operators and kernels bind)."""
    import kpca.operators._tiled as tiled

    assert _native.optional("kpca.operators._no_such_extension") is None
    if tiled._tileprod_ext is not None:
        assert _native.optional("kpca.operators._tileprod") is tiled._tileprod_ext


def _run(value: str | None, code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KPCA_NATIVE"}
    if value is not None:
        env["KPCA_NATIVE"] = value
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


_REPORT = ("import json, kpca.operators._tiled as t, kpca.kernels._standard as s; "
           "print(json.dumps([t.NATIVE_VARIANT.variant, s.NATIVE_RBF_VARIANT.variant, "
           "t.NATIVE, s.NATIVE_RBF, {str(k): v for k, v in t.NATIVE_WIDTH.items()}]))")


@pytest.mark.parametrize("value", [None, "auto", "off", *AVAILABLE])
def test_the_variable_at_import(value):
    """In a fresh process, KPCA_NATIVE decides the variant of both kernels, and the
    operator's block-width rule follows the variant's vectors."""
    if tiled._tileprod_ext is None or standard._rbfexp_ext is None:
        pytest.skip("the extensions are not built")
    out = _run(value, _REPORT)
    assert out.returncode == 0, out.stderr
    tile, rbf, native, native_rbf, widths = json.loads(out.stdout)
    want = {None: AVAILABLE[0], "auto": AVAILABLE[0], "off": None}.get(value, value)
    assert tile == rbf == want and native == native_rbf == (want is not None)
    expected = {"avx512": [16, 8], "avx2": [8, 4], "portable": [4, 2], None: []}[want]
    assert list(widths.values()) == expected


def test_the_variable_refuses_a_bad_value_at_import():
    out = _run("sse9", "import kpca")
    assert out.returncode != 0
    assert "KPCA_NATIVE='sse9' is not valid; valid values are auto, avx512, avx2, " \
           "portable, off" in out.stderr


@pytest.mark.parametrize("value", sorted(set(_native.VARIANTS) - set(AVAILABLE)))
def test_the_variable_warns_for_a_variant_this_cpu_cannot_run(value):
    """(Runs only on CPUs that lack a variant: AVX-512 on most machines.)"""
    out = _run(value, _REPORT)
    assert out.returncode == 0, out.stderr
    assert out.stderr.count(f"KPCA_NATIVE={value}: this CPU cannot run it") == 1
    below = [v for v in _native.VARIANTS[_native.VARIANTS.index(value) + 1:] if v in AVAILABLE]
    tile, rbf, *_ = json.loads(out.stdout)
    assert tile == rbf == below[0]


def test_blas_products_and_sweeps_in_cache():
    """Which variant hands its products to BLAS: the portable one where a wider
    variant runs on this CPU (forced narrower: BLAS's kernels are wider), never where
    it is the best (then, as avx2 and avx512, its one-sweep product on a matrix-free
    piece whose block is whole vectors and at most half a vector more); avx2 and
    avx512 on a matrix-free piece only where more columns are left over or a wider
    variant runs on this CPU."""
    import types

    def ns(name, best, widths):
        return types.SimpleNamespace(name=name, best=best, widths=widths)

    for wider in ("avx512", "avx2"):
        portable = ns("portable", wider, (4, 2))
        assert _native.blas_products(portable) and not _native.sweeps_in_cache(portable, 16)
    alone = ns("portable", "portable", (4, 2))  # x86-64 without AVX2, ARM
    assert not _native.blas_products(alone)
    assert _native.sweeps_in_cache(alone, 24) and _native.sweeps_in_cache(alone, 6)
    assert not _native.sweeps_in_cache(alone, 7)
    for name, width in (("avx2", 8), ("avx512", 16)):
        best = ns(name, name, (width, width // 2))
        assert not _native.blas_products(best)
        assert _native.sweeps_in_cache(best, 3 * width)
        # up to half a vector past whole ones goes in the dot-product form, more to BLAS
        assert _native.sweeps_in_cache(best, width + width // 2)
        assert _native.sweeps_in_cache(best, width // 2) and _native.sweeps_in_cache(best, 1)
        assert not _native.sweeps_in_cache(best, width + width // 2 + 1)
        assert not _native.sweeps_in_cache(best, width - 1)
    forced = ns("avx2", "avx512", (8, 4))
    assert not _native.sweeps_in_cache(forced, 16) and not _native.blas_products(forced)
    assert not _native.blas_products(None) and not _native.sweeps_in_cache(None, 16)
    if tiled._tileprod_ext is not None:  # bind records the best variant this CPU runs
        for v in AVAILABLE:
            assert _native.bind(tiled._tileprod_ext, v).best == AVAILABLE[0]
