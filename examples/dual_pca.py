"""Dual PCA: with fewer samples than dimensions (n < d), PCA through the n x n
Gram matrix (kernel PCA with the linear kernel) is much cheaper than through the
d x d covariance matrix, and gives the same scores up to sign.

Run::

    python examples/dual_pca.py --n 50 --d 2000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kpca import KernelPCA


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--n", type=int, default=50, help="samples (default: 50)")
    parser.add_argument("--d", type=int, default=2000, help="dimensions (default: 2000)")
    parser.add_argument("-k", type=int, default=5, help="components (default: 5)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((args.n, 5)) @ rng.standard_normal((5, args.d))
    X += 0.1 * rng.standard_normal(X.shape)

    t = time.perf_counter()
    Xc = X - X.mean(axis=0)
    _, V = np.linalg.eigh(Xc.T @ Xc / args.n)  # primal: the d x d covariance matrix
    primal = Xc @ V[:, ::-1][:, : args.k]
    t_primal = time.perf_counter() - t

    t = time.perf_counter()
    dual = KernelPCA(args.k, kernel="linear").fit_transform(X)  # the n x n Gram matrix
    t_dual = time.perf_counter() - t

    signs = np.sign(np.sum(primal * dual, axis=0))
    print(f"n = {args.n}, d = {args.d}, k = {args.k}")
    print(f"primal PCA ({args.d} x {args.d} covariance): {t_primal:.3f} s")
    print(f"dual PCA   ({args.n} x {args.n} Gram matrix): {t_dual:.3f} s")
    print(f"largest score difference (up to sign): {np.abs(primal * signs - dual).max():.1e}")


if __name__ == "__main__":
    main()
