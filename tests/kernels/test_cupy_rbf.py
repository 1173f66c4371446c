"""The fused CuPy RBF kernel (kernels/_cupy_rbf.py).

Its CUDA source is tested without a GPU: compiled as C++ by the host compiler, with
every CUDA thread of a block a host thread (``__syncthreads`` a barrier,
``__shared__`` arrays shared by the block's threads), it must compute the product of
the dense float64 kernel and agree with the NumPy twin of the Triton program's
'ieee' arithmetic. Where nvcc is installed, the source must also build for sm_80 and
sm_90 without spilling registers. With ``KPCA_TEST_CUPY=1`` (a GPU machine) the kernel
runs through CuPy against the same references, and through the dispatch.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import kpca
from kpca.kernels import make_kernel
from kpca.kernels._cupy_rbf import cupy_layout, cupy_source
from kpca.kernels._triton_rbf import rbf_product_reference

CXX = shutil.which("g++") or shutil.which("c++")
NVCC = shutil.which("nvcc")
CUPY = bool(os.environ.get("KPCA_TEST_CUPY"))

#: the CUDA names the kernel uses, for a host build: each CUDA thread a host thread
HOST_PRELUDE = r"""
#include <math.h>
#include <pthread.h>
#include <thread>
#include <vector>
struct Dim { unsigned x, y; };
static thread_local Dim threadIdx;
static Dim blockIdx;
static pthread_barrier_t block_barrier;
#define __global__
#define __syncthreads() pthread_barrier_wait(&block_barrier)
#define __shared__ static
#define __restrict__ __restrict
"""
HOST_LAUNCH = r"""
extern "C" void launch(unsigned gx, unsigned gy, const real* xs, const real* nx,
                       const real* y, const real* ny, const real* c, real* out,
                       long long m, long long n, long long width) {
    pthread_barrier_init(&block_barrier, 0, THREADS);
    for (unsigned by = 0; by < gy; ++by)
        for (unsigned bx = 0; bx < gx; ++bx) {
            blockIdx = Dim{bx, by};
            std::vector<std::thread> block;
            for (unsigned t = 0; t < THREADS; ++t)
                block.emplace_back([=] {
                    threadIdx = Dim{t, 0};
                    kpca_rbf_product(xs, nx, y, ny, c, out, m, n, width);
                });
            for (auto& th : block) th.join();
        }
    pthread_barrier_destroy(&block_barrier);
}
"""
#: small blocks and tiles: partial tiles, several blocks, several column groups
SMALL = dict(cupy_rbf_threads=4, cupy_rbf_tile_rows=8, cupy_rbf_max_values=32)


def host_inputs(gamma, X, Y, C, dtype, width):
    """The kernel's inputs as kernels._cupy_rbf.cupy_rbf_product makes them."""
    h = gamma / np.log(2.0)
    X, Y, C = (np.asarray(A, dtype=dtype) for A in (X, Y, C))
    mu = Y.mean(axis=0, dtype=dtype)
    Xc, Yc = X - mu, Y - mu
    cp = np.zeros((len(Y), width), dtype=dtype)
    cp[:, :C.shape[1]] = C
    return (np.ascontiguousarray(Xc * dtype(2 * h)), dtype(h) * np.sum(Xc * Xc, axis=1),
            np.ascontiguousarray(Yc), dtype(h) * np.sum(Yc * Yc, axis=1), cp)


def run_on_host(tmp_path, gamma, X, Y, C, dtype):
    lay = cupy_layout(X.shape[1], C.shape[1], np.dtype(dtype).itemsize)
    src = tmp_path / "kernel.cpp"
    src.write_text(HOST_PRELUDE + cupy_source(lay, np.dtype(dtype).itemsize) + HOST_LAUNCH)
    lib = tmp_path / "kernel.so"
    subprocess.run([CXX, "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", str(src),
                    "-o", str(lib)], check=True, capture_output=True)
    width = lay.groups * lay.width
    xs, nx, yc, ny, cp = host_inputs(gamma, X, Y, C, dtype, width)
    m, n = len(X), len(Y)
    out = np.full((m, width), np.nan, dtype=dtype)
    ptr = [a.ctypes.data_as(ctypes.c_void_p) for a in (xs, nx, yc, ny, cp, out)]
    ctypes.CDLL(str(lib)).launch(ctypes.c_uint(-(-m // lay.threads)), ctypes.c_uint(lay.groups),
                                 *ptr, ctypes.c_longlong(m), ctypes.c_longlong(n),
                                 ctypes.c_longlong(width))
    return out[:, :C.shape[1]], lay


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "d", "c", "shift", "gamma"), [
    (13, 37, 3, 2, 0.0, 0.5),     # partial blocks of threads and tiles of Y
    (9, 20, 4, 11, 20.0, 0.2),    # three column groups; far from the origin
    (1, 1, 1, 1, 0.0, 1.0)])
def test_cuda_source_run_on_host_threads_is_the_product(tmp_path, dtype, m, n, d, c, shift,
                                                        gamma):
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(m, d)) + shift, rng.normal(size=(n, d)) + shift
    C = rng.normal(size=(n, c))
    with kpca.config_context(**SMALL):
        got, lay = run_on_host(tmp_path, gamma, X, Y, C, dtype)
    assert lay.threads == 4 and lay.tile == 8
    assert (lay.groups > 1) == (c == 11)
    ref = make_kernel("rbf", gamma=gamma).block(X, Y) @ C
    scale = np.abs(C).sum(axis=0).max()
    tol = 2e-6 if dtype == np.float32 else 1e-13
    assert np.abs(got - ref).max() / scale < tol
    if dtype == np.float32:  # the twin's float32 arithmetic, up to the order of sums
        twin = rbf_product_reference(gamma, X, Y, C, "ieee")
        assert np.abs(got - twin).max() / scale < 1e-6


def test_layout_groups_columns_by_the_register_budget():
    with kpca.config_context(cupy_rbf_max_values=96):
        assert cupy_layout(20, 24, 4).groups == 1  # (96 - 20) // 3 = 25 columns
        wide = cupy_layout(20, 60, 4)
        assert wide.groups == 3 and wide.width == 20  # equal groups
        assert cupy_layout(20, 24, 8).groups == 3  # 48 float64 values: 9 columns
        assert cupy_layout(95, 1, 4) is None  # the row alone fills the budget


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_source_builds_without_spilling(tmp_path, arch):
    for d, c, itemsize in [(20, 25, 4), (20, 1, 4), (20, 24, 8)]:
        src = tmp_path / f"k{d}_{c}_{itemsize}.cu"
        src.write_text(cupy_source(cupy_layout(d, c, itemsize), itemsize))
        run = subprocess.run([NVCC, f"-arch={arch}", "-cubin", "--resource-usage", "-o",
                              os.devnull, str(src)], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "0 bytes spill stores" in run.stdout + run.stderr


# --------------------------------------------------------------------- on a CUDA GPU
@pytest.mark.skipif(not CUPY, reason="needs KPCA_TEST_CUPY=1 (a GPU machine)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cupy_kernel_on_the_gpu(dtype):
    cupy = pytest.importorskip("cupy")
    from kpca._array_api import device_namespace
    from kpca.kernels import device_block_product
    from kpca.kernels._cupy_rbf import cupy_rbf_product

    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(3000, 20)), rng.normal(size=(5000, 20))
    C = rng.normal(size=(5000, 25))
    gamma = 0.05
    ref = make_kernel("rbf", gamma=gamma).block(X, Y) @ C
    scale = np.abs(C).sum(axis=0).max()
    a = [cupy.asarray(A.astype(dtype)) for A in (X, Y, C)]
    got = cupy.asnumpy(cupy_rbf_product(gamma, *a))
    tol = 2e-6 if dtype == np.float32 else 1e-12
    assert got.dtype == dtype and np.abs(got - ref).max() / scale < tol
    k = make_kernel("rbf", gamma=gamma)
    for path in ("auto", "cupy"):
        with kpca.config_context(device_rbf_product=path):
            via = cupy.asnumpy(device_block_product(k, *a, device_namespace(a[0]), 64))
        np.testing.assert_array_equal(via, got)
