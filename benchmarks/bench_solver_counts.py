"""How many operator columns each iterative solver needs, against the cost model's estimates.

The ``'auto'`` policy (kpca.solvers._cost; docs/math.md, "Choosing a solver") costs
ARPACK at ``arpack_products_per_ncv * ncv + arpack_products_offset`` matrix-vector
products and block Lanczos at ``krylov_columns_per_k * k + krylov_columns_offset``
operator columns. Those counts depend on the spectrum, not on the machine, so this
script reads them from fits, not from timings: for each data set, ``n`` and ``k`` it
fits ``KernelPCA(k, eigen_solver='arpack')`` and counts ARPACK's products, and
``KernelPCA(k, eigen_solver='krylov')`` and counts the passes over the stored kernel
matrix after the construction pass (which builds it and multiplies the Nyström start
block) and their columns, then prints both next to the model's estimates and the solver
``'auto'`` picks. The data sets are bench_solvers.py's (digits, raw or standardised,
with noisy copies past 1,797 rows; isotropic Gaussian, d = 20).

    python benchmarks/bench_solver_counts.py [--data raw-rbf-1e-2 gauss-rbf]
        [--n 1500 2300 3500] [--k 5 10 32 128]
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gpu import PassCounter  # noqa: E402
from bench_solvers import DATA, digits  # noqa: E402

from kpca import KernelPCA  # noqa: E402
from kpca.operators import DenseOperator  # noqa: E402
from kpca.solvers import arpack_products, choose_solver, krylov_passes  # noqa: E402
from kpca.solvers._krylov import krylov_block_size  # noqa: E402


def arpack_count(X, k: int, kernel: str, gamma) -> int:
    """ARPACK's matrix-vector products in one fit."""
    calls = 0
    real = DenseOperator.matvec

    def counted(self, v):
        nonlocal calls
        calls += 1
        return real(self, v)

    DenseOperator.matvec = counted
    try:
        KernelPCA(k, kernel=kernel, gamma=gamma, eigen_solver="arpack",
                  random_state=0).fit(X)
    finally:
        DenseOperator.matvec = real
    return calls


def krylov_count(X, k: int, kernel: str, gamma) -> tuple[int, int]:
    """Block Lanczos's passes and operator columns in one fit, after the construction
    pass."""
    handler = PassCounter()
    log = logging.getLogger("kpca")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        KernelPCA(k, kernel=kernel, gamma=gamma, eigen_solver="krylov",
                  random_state=0).fit(X)
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
    after = handler.widths[1:]
    return len(after), sum(after)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["raw-rbf-1e-3", "raw-rbf-1e-2",
                                                  "std-rbf", "gauss-rbf"],
                    choices=[d for d in DATA if DATA[d][1] != "linear"])
    ap.add_argument("--n", type=int, nargs="+", default=[1500, 2300, 3500])
    ap.add_argument("--k", type=int, nargs="+", default=[5, 10, 32, 128])
    args = ap.parse_args(argv)
    # the last two ratios: block Lanczos's columns over ARPACK's products, counted and
    # estimated (counted, nearly the same on every spectrum at a given k: ninth session,
    # docs/benchmarks.md)
    print("| data | n | k | ARPACK products | estimate | block Lanczos passes (columns) "
          "after the construction pass "
          "| estimate: passes (columns) | `auto` picks | columns / products: counted "
          "| estimated |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for data in args.data:
        standardize, kernel, gamma = DATA[data]
        for n in args.n:
            X = digits(n, standardize)
            for k in args.k:
                products = arpack_count(X, k, kernel, gamma)
                passes, columns = krylov_count(X, k, kernel, gamma)
                b = krylov_block_size(k, True)
                est = krylov_passes(k, b)
                print(f"| {data} | {n} | {k} | {products} | {arpack_products(k)} | "
                      f"{passes} ({columns}) | {est} ({est * b}) | {choose_solver(n, k)} | "
                      f"{columns / max(1, products):.2f} | "
                      f"{est * b / arpack_products(k):.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
