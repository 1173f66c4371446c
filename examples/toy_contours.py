"""Schölkopf's toy example: three Gaussian clusters and the contour lines of the
first 8 RBF kernel principal components over the input plane.

Writes ``toy_contours.png`` (cf. Schölkopf, Smola & Müller 1998, figure 2).

Run::

    python examples/toy_contours.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_toy_contours  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_toy_contours(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
