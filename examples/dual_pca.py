"""Dual PCA: with fewer samples than dimensions (n < d), PCA through the n x n
Gram matrix (kernel PCA with the linear kernel) is much cheaper than through the
d x d covariance matrix, and gives the same scores up to sign.

Run::

    python examples/dual_pca.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_dual_pca  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_dual_pca(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
