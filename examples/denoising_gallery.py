"""Denoising digits: Gaussian noise, then kernel PCA projection and pre-image
(``KernelPCA.denoise`` when available, else the learned ridge pre-image),
against linear PCA.

Writes ``denoising.png`` (rows: clean, noisy, kernel PCA, linear PCA).

Run::

    python examples/denoising_gallery.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_denoising  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_denoising(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
