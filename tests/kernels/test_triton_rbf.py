"""The fused Triton RBF product (kernels/_triton_rbf.py) and its dispatch.

Three layers, each against independent computations:

- everywhere (CI has neither PyTorch nor Triton): the NumPy twin of the Triton program,
  ``rbf_product_reference``, which does its arithmetic block by block (exp2, norm
  terms, TF32 splitting emulated bit by bit), against the dense float64 kernel; the
  TF32 rounding against its definition; the block layout;
- where triton is installed: the Triton program itself, run by Triton's interpreter
  (``TRITON_INTERPRET=1``, in a subprocess since the variable is read when the
  program is first compiled) on CPU tensors, against the same references, and a
  matrix-free ``KernelPCA`` fit through it against the NumPy fit. The interpreter
  computes its products in float32 whatever the input precision: the TF32 arithmetic
  is checked by the twin here and on a GPU below;
- with ``KPCA_TEST_TORCH_DEVICE=cuda`` (how the suite runs on a GPU machine): the
  compiled program on the GPU, both precisions, against the dense float64 kernel and
  against the twin, and the default dispatch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kpca
from kpca.kernels import make_kernel
from kpca.kernels._triton_rbf import (
    layout,
    rbf_product_reference,
    tf32_round,
    tf32_truncate,
    tf32x3_dot,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_TRITON = importlib.util.find_spec("triton") is not None
CUDA = os.environ.get("KPCA_TEST_TORCH_DEVICE", "cpu").startswith("cuda")
#: small blocks, so that small problems span several blocks, a partial last block and
#: column groups
SMALL_BLOCKS = dict(triton_block_rows=32, triton_block_cols=16)


def problem(m, n, d, c, shift=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(m, d)) + shift, rng.normal(size=(n, d)) + shift,
            rng.normal(size=(n, c)))


def dense(gamma, X, Y, C):
    """The float64 product through the NumPy kernel (the tested host path)."""
    return make_kernel("rbf", gamma=gamma).block(X, Y) @ C


def rel_err(got, ref, C):
    """Largest error relative to the largest possible entry, sum_j |C_jk| (k <= 1)."""
    return float(np.abs(np.asarray(got, np.float64) - ref).max() / np.abs(C).sum(axis=0).max())


# --------------------------------------------------------------------------- TF32
def test_tf32_rounding_is_to_nearest_ties_away_and_truncation_drops_the_low_bits():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=10_000) * 10.0 ** rng.integers(-20, 20, 10_000)).astype(np.float32)
    r, t = tf32_round(a), tf32_truncate(a)
    for v in (r, t):
        assert np.all(v.view(np.uint32) & np.uint32(0x1FFF) == 0)  # 10 mantissa bits
    ulp = 2.0 ** (np.floor(np.log2(np.abs(a.astype(np.float64)))) - 10)  # TF32 unit
    err = np.abs(a.astype(np.float64) - r)
    assert np.all(err <= ulp / 2)  # nearest: at most half a TF32 unit
    assert np.all(np.abs(t) <= np.abs(a)) and np.all(np.abs(a - t.astype(np.float64)) < ulp)
    assert np.all(np.sign(t) == np.sign(a))
    tie = np.float32(1.0 + 2.0**-11)  # half-way between two TF32 values
    assert tf32_round(np.array([tie, -tie])).tolist() == [1.0 + 2.0**-10, -(1.0 + 2.0**-10)]
    assert tf32_round(np.array([np.float32(1.0 + 2.0**-12)]))[0] == 1.0


def test_tf32x3_keeps_float32_accuracy_where_one_tf32_product_does_not():
    """The split a = hi + lo is exact before the tensor core truncates lo; the three
    products err by at most ~2^-20 of sum |a_ik b_kj|, one TF32 product by ~2^-10."""
    rng = np.random.default_rng(1)
    a = rng.normal(size=(64, 32)).astype(np.float32)
    b = rng.normal(size=(32, 48)).astype(np.float32)
    hi = tf32_round(a)
    assert np.array_equal(hi.astype(np.float64) + (a - hi), a.astype(np.float64))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = np.abs(a).astype(np.float64) @ np.abs(b)
    err3 = np.abs(tf32x3_dot(a, b) - exact) / bound
    err1 = np.abs(tf32_round(a) @ tf32_round(b) - exact) / bound
    assert err3.max() < 2.0**-20
    assert err1.max() > 2.0**-14 and np.median(err1) > 30 * np.median(err3)


# --------------------------------------------------------------------------- layout
def test_layout_pads_to_powers_of_two_and_groups_wide_c():
    with kpca.config_context(triton_block_rows=128, triton_block_cols=64):
        lay = layout(1000, 777, 20, 24)
        assert lay.block_rows == 128 and lay.rows == 1024 and lay.cols == 832
        assert (lay.features, lay.width, lay.groups, lay.warps) == (32, 32, 1, 8)
        small = layout(5, 10, 3, 1)  # a few rows: one block of 16, one warp group
        assert (small.block_rows, small.rows, small.features, small.width, small.warps) == (
            16, 16, 16, 16, 4)
        wide = layout(300, 300, 100, 150)  # C wider than a block: column groups
        assert (wide.features, wide.width, wide.groups) == (128, 64, 3)


def test_block_settings_must_be_powers_of_two():
    with kpca.config_context(triton_block_cols=48), pytest.raises(
            ValueError, match=r"'triton_block_cols' must be a power of two.*got 48"):
        layout(100, 100, 4, 4)
    with pytest.raises(ValueError, match=r"'device_rbf_product' must be one of "
                                         r"\['auto', 'triton', 'attention', 'cupy', 'tiles'\]"):
        kpca.set_config(device_rbf_product="cuda")
    with pytest.raises(ValueError, match=r"'device_rbf_precision' must be one of"):
        kpca.set_config(device_rbf_precision="tf32")
    with pytest.raises(ValueError, match="precision must be one of"):
        rbf_product_reference(0.1, *problem(4, 4, 2, 2), precision="fp16")


# ------------------------------------------------------------------ the NumPy twin
@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
@pytest.mark.parametrize(("m", "n", "d", "c", "shift", "gamma"), [
    (70, 130, 6, 5, 0.0, 0.3),      # partial blocks in both directions
    (200, 300, 20, 24, 50.0, 0.05),  # far from the origin: the mean is removed
    (33, 40, 3, 70, 0.0, 2.0),      # C wider than a block: column groups; steep kernel
    (1, 1, 1, 1, 0.0, 1.0),
])
def test_reference_is_the_float64_product_to_float32_accuracy(precision, m, n, d, c, shift,
                                                              gamma):
    X, Y, C = problem(m, n, d, c, shift)
    with kpca.config_context(**SMALL_BLOCKS):
        got = rbf_product_reference(gamma, X, Y, C, precision)
    assert got.shape == (m, c) and got.dtype == np.float32
    assert rel_err(got, dense(gamma, X, Y, C), C) < 2e-6


def test_the_sum_over_blocks_is_compensated():
    """50,000 values near 1 in 3,125 blocks of 16: a plain float32 running sum of the
    block sums errs by ~1e-6 of the total; the compensated (Kahan) one by one rounding."""
    X, Y, _ = problem(3, 50_000, 2, 1)
    C = np.ones((50_000, 1))
    gamma = 1e-6
    with kpca.config_context(triton_block_rows=16, triton_block_cols=16):
        got = rbf_product_reference(gamma, X, Y, C, "ieee")
    ref = dense(gamma, X, Y, C)
    assert np.abs(got - ref).max() / ref.max() < 2.0**-22
    blocks = make_kernel("rbf", gamma=gamma).block(X[:1], Y).reshape(-1, 16).sum(axis=1)
    plain = np.float32(0)
    for b in blocks.astype(np.float32):  # what an uncompensated accumulator would do
        plain = np.float32(plain + b)
    assert abs(plain - ref[0, 0]) / ref[0, 0] > 4 * 2.0**-22  # the case tells them apart


def test_reference_with_x_equal_y_has_unit_diagonal():
    """Where x = y the exponent's three terms (each up to h |x|^2, here ~20) cancel: the
    result errs by a few units of float32 (2^-24, 2^-20 with TF32 splitting) of them,
    and the clamp keeps k(x, x) <= 1."""
    X = problem(50, 1, 8, 1, shift=3.0)[0]
    gamma = 0.7
    h_x2 = gamma / np.log(2) * np.sum((X - X.mean(axis=0)) ** 2, axis=1).max()
    for precision in ("ieee", "tf32x3"):
        K = rbf_product_reference(gamma, X, X, np.eye(50), precision)
        assert np.all(np.diag(K) <= 1.0) and np.all(np.diag(K) > 1.0 - 2.0**-20 * h_x2)
        np.testing.assert_allclose(K, make_kernel("rbf", gamma=gamma).block(X, X), rtol=0,
                                   atol=2.0**-20 * h_x2)


# --------------------------------------------------------- Triton, interpreted on the CPU
INTERPRETED = textwrap.dedent("""
    import json, sys
    import numpy as np, torch
    import kpca
    from kpca.kernels import device_block_product
    from kpca._array_api import device_namespace
    from kpca.kernels import make_kernel
    from kpca.kernels._triton_rbf import triton_rbf_product

    cases, out = json.loads(sys.argv[1]), {}
    with kpca.config_context(triton_block_rows=32, triton_block_cols=16):
        for i, (m, n, d, c, shift, gamma, precision) in enumerate(cases):
            rng = np.random.default_rng(i)
            X, Y = rng.normal(size=(m, d)) + shift, rng.normal(size=(n, d)) + shift
            C = rng.normal(size=(n, c))
            t = [torch.asarray(A.astype(np.float32)) for A in (X, Y, C)]
            out[f"got{i}"] = triton_rbf_product(gamma, *t, precision=precision).numpy()
            with kpca.config_context(device_rbf_product="triton"):  # the dispatch
                k = make_kernel("rbf", gamma=gamma)
                out[f"dispatch{i}"] = device_block_product(k, *t, device_namespace(t[0]),
                                                           7).numpy()
        # a matrix-free fit whose every product runs the program (counted)
        import kpca.kernels._triton_rbf as tr
        calls, program = [], tr.triton_rbf_product
        tr.triton_rbf_product = lambda *a, **k: calls.append(1) or program(*a, **k)
        X = np.random.default_rng(9).normal(size=(400, 4)).astype(np.float32)
        with kpca.config_context(device_rbf_product="triton"):
            est = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="krylov",
                                 memory_limit="300KB",
                                 tol=1e-7).fit(torch.asarray(X))
        out["fit_calls"] = len(calls)
        out["fit_eigenvalues"] = est.eigenvalues_
        out["fit_transform"] = est.transform(torch.asarray(X[:20])).numpy()
    np.savez(sys.argv[2], **out)
""")
CASES = [(70, 130, 6, 5, 0.0, 0.3, "ieee"), (70, 130, 6, 5, 0.0, 0.3, "tf32x3"),
         (33, 40, 3, 70, 50.0, 0.5, "tf32x3"), (1, 1, 1, 1, 0.0, 1.0, "ieee"),
         (3, 20_000, 2, 1, 0.0, 1e-6, "ieee")]  # 1,250 blocks: the compensated sum


def _old_interpreter_with_numpy_2_5() -> bool:
    """triton 3.6's interpreter turns a runtime loop bound into an int with ``int()`` of
    a one-value array, which NumPy 2.5 refuses ("only 0-dimensional arrays can be
    converted to Python scalars"; seen on the GPU machine with triton 3.6.0 and NumPy
    2.5.2, where the compiled program's tests passed). triton 3.9 with NumPy 2.4
    interprets the program."""
    if not HAS_TRITON:
        return False
    from importlib.metadata import version

    def major_minor(v: str) -> tuple[int, int]:
        return tuple(int(p) for p in v.split(".")[:2])  # type: ignore[return-value]

    return major_minor(version("triton")) < (3, 9) and major_minor(np.__version__) >= (2, 5)


@pytest.mark.skipif(not (HAS_TORCH and HAS_TRITON), reason="needs torch and triton")
@pytest.mark.xfail(_old_interpreter_with_numpy_2_5(), strict=False, raises=AssertionError,
                   reason="triton < 3.9's interpreter with NumPy >= 2.5: int() of a "
                   "one-value array (the compiled program is tested on CUDA)")
def test_triton_program_interpreted_on_the_cpu(tmp_path):
    path = tmp_path / "out.npz"
    env = dict(os.environ, TRITON_INTERPRET="1")
    run = subprocess.run([sys.executable, "-c", INTERPRETED, json.dumps(CASES), str(path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = np.load(path)
    print("interpreted fit: products through the program:", int(out["fit_calls"]))
    with kpca.config_context(**SMALL_BLOCKS):
        for i, (m, n, d, c, shift, gamma, _) in enumerate(CASES):
            rng = np.random.default_rng(i)
            X, Y = rng.normal(size=(m, d)) + shift, rng.normal(size=(n, d)) + shift
            C = rng.normal(size=(n, c))
            got = out[f"got{i}"]
            assert got.shape == (m, c)
            assert rel_err(got, dense(gamma, X, Y, C), C) < 2e-6
            # the interpreter multiplies in float32: the twin's 'ieee' arithmetic
            ref = rbf_product_reference(gamma, X, Y, C, "ieee")
            assert rel_err(got, ref.astype(np.float64), C) < 1e-6
            np.testing.assert_array_equal(out[f"dispatch{i}"], got)
    assert out["fit_calls"] >= 2  # the fit's passes (and row means) ran the program
    X = np.random.default_rng(9).normal(size=(400, 4)).astype(np.float32)
    ref = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(
        X.astype(np.float64))
    np.testing.assert_allclose(out["fit_eigenvalues"], ref.eigenvalues_,
                               rtol=0, atol=1e-5 * ref.eigenvalues_[0])
    T = ref.transform(X[:20].astype(np.float64))
    np.testing.assert_allclose(np.abs(out["fit_transform"]), np.abs(T), rtol=0,
                               atol=1e-3 * np.abs(T).max())


# ----------------------------------------------------------------------- dispatch
@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_each_path_gives_the_product_and_tiles_are_the_tiles():
    import torch

    from kpca._array_api import device_namespace
    from kpca.kernels import device_block_product

    X, Y, C = problem(60, 90, 5, 4)
    dev = os.environ.get("KPCA_TEST_TORCH_DEVICE", "cpu")
    t = [torch.asarray(A.astype(np.float32), device=dev) for A in (X, Y, C)]
    xp = device_namespace(t[0])
    k = make_kernel("rbf", gamma=0.4)
    ref = dense(0.4, X, Y, C)
    paths = ["auto", "attention", "tiles"] + (["triton"] if HAS_TRITON and CUDA else [])
    got = {}
    for path in paths:
        with kpca.config_context(device_rbf_product=path):
            got[path] = device_block_product(k, *t, xp, 16).cpu().numpy()
        assert rel_err(got[path], ref, C) < 2e-6, path
    tiles = torch.cat([k.block(t[0][s:s + 16], t[1], xp=xp) @ t[2]
                       for s in range(0, 60, 16)])
    np.testing.assert_array_equal(got["tiles"], tiles.cpu().numpy())
    if HAS_TRITON and CUDA:
        np.testing.assert_array_equal(got["auto"], got["triton"])


@pytest.mark.skipif(not HAS_TORCH or HAS_TRITON, reason="needs torch without triton")
def test_asking_for_triton_without_it_names_the_package():
    import torch

    from kpca._array_api import device_namespace
    from kpca.kernels import device_block_product

    t = [torch.asarray(A.astype(np.float32)) for A in problem(5, 5, 2, 2)]
    with kpca.config_context(device_rbf_product="triton"), pytest.raises(
            ImportError, match="needs the triton package"):
        device_block_product(make_kernel("rbf", gamma=1.0), *t, device_namespace(t[0]), 4)


# --------------------------------------------------------------------- on a CUDA GPU
@pytest.mark.skipif(not (CUDA and HAS_TORCH and HAS_TRITON),
                    reason="needs KPCA_TEST_TORCH_DEVICE=cuda and triton")
@pytest.mark.parametrize("precision", ["ieee", "tf32x3"])
@pytest.mark.parametrize(("m", "n", "d", "c", "shift", "gamma"), [
    (3000, 5000, 20, 24, 0.0, 0.05), (1000, 777, 7, 100, 50.0, 0.5), (3, 5, 1, 1, 0.0, 1.0)])
def test_triton_program_on_the_gpu(precision, m, n, d, c, shift, gamma):
    import torch

    from kpca.kernels._triton_rbf import triton_rbf_product

    X, Y, C = problem(m, n, d, c, shift)
    dev = os.environ["KPCA_TEST_TORCH_DEVICE"]
    t = [torch.asarray(A.astype(np.float32), device=dev) for A in (X, Y, C)]
    got = triton_rbf_product(gamma, *t, precision=precision).cpu().numpy()
    assert got.shape == (m, c)
    assert rel_err(got, dense(gamma, X, Y, C), C) < 2e-6
    # the twin with the same blocks: the same arithmetic up to the order of additions
    # inside a block product and ex2.approx's ~2 ulp
    ref = rbf_product_reference(gamma, X, Y, C, precision)
    assert rel_err(got, ref.astype(np.float64), C) < 1e-6


@pytest.mark.skipif(not (CUDA and HAS_TORCH and HAS_TRITON),
                    reason="needs KPCA_TEST_TORCH_DEVICE=cuda and triton")
def test_matrix_free_fit_on_the_gpu_through_triton_equals_numpy():
    import torch

    X = np.random.default_rng(4).normal(size=(6000, 20)).astype(np.float32)
    kw = dict(n_components=8, kernel="rbf", gamma=0.05, eigen_solver="krylov")
    ref = kpca.KernelPCA(**kw, tol=1e-10, precision="float64").fit(X.astype(np.float64))
    Xd = torch.asarray(X, device=os.environ["KPCA_TEST_TORCH_DEVICE"])
    for precision in ("ieee", "tf32x3"):
        with kpca.config_context(device_rbf_product="triton", device_rbf_precision=precision):
            est = kpca.KernelPCA(**kw, memory_limit="20MB", tol=1e-7).fit(Xd)  # matrix-free
        assert est.eigen_solver_ == "krylov"
        np.testing.assert_allclose(est.eigenvalues_, ref.eigenvalues_, rtol=0,
                                   atol=1e-5 * ref.eigenvalues_[0])
