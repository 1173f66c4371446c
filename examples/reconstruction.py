"""Reconstruction: linear PCA with all components is exact, kernel PCA (learned
pre-image) is approximate.

Writes ``reconstruction.png`` (held-out error against the number of components)
and ``reconstruction_gallery.png``.

Run::

    python examples/reconstruction.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_reconstruction  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_reconstruction(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
