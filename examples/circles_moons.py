"""Concentric circles and two moons with the linear, polynomial, cosine and RBF kernels.

Which kernels make the classes linearly separable? A logistic regression on the
first two kernel principal components measures it (SPEC section 8). Writes
``circles_moons.png`` (one panel per data set and kernel) and prints the table.

Run::

    python examples/circles_moons.py --out figures/
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca._demo import section_circles_moons  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    section = section_circles_moons(out)
    print(f"# {section.title}\n\n{section.text}")
    for path in section.files.values():
        print("wrote", path)


if __name__ == "__main__":
    main()
