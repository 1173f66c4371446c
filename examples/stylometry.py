"""Stylometry: a generated corpus of two authors (``kpca.datasets.two_authors_corpus``)
is read from a folder of text files, split into chapters, described by the relative
frequencies of the 50 most used words and projected with RBF kernel PCA.

Writes ``corpus/`` and ``stylometry.png``. See ``kpca.text.stylometry`` to run it on
your own folder of books.

Run::

    python examples/stylometry.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_stylometry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_stylometry(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
