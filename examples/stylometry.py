"""Stylometry: chapters of books by two authors, separated by kernel PCA on the
relative frequencies of the 50 most used words (docs/math.md,
"The classic examples").

Without ``--corpus`` the package generates a corpus of two synthetic authors with
different function-word habits (two books each). With ``--corpus FOLDER`` it reads
your own: one ``.txt`` file per book, chapters starting at lines that match
``--pattern`` (default: a line beginning with "CHAPTER").

Writes ``stylometry.png`` (one point per chapter, coloured by book).

Run::

    python examples/stylometry.py --out figures/
    python examples/stylometry.py --corpus books/ --pattern '(?m)^Chapter [0-9]+' --out figures/
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from kpca import plotting  # noqa: E402
from kpca.datasets import two_authors_corpus  # noqa: E402
from kpca.text import CHAPTER_PATTERN, stylometry  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--out", default="figures", help="output folder (default: figures)")
    parser.add_argument("--corpus", default=None,
                        help="folder of .txt books (default: a generated two-author corpus)")
    parser.add_argument("--pattern", default=CHAPTER_PATTERN,
                        help="regular expression of a chapter heading line")
    parser.add_argument("--words", type=int, default=50, help="most used words (default: 50)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    corpus = args.corpus
    if corpus is None:
        corpus = out / "corpus"
        two_authors_corpus(corpus)
        print("generated a two-author corpus in", corpus)
    result = stylometry(corpus, n_words=args.words, pattern=args.pattern)
    print(f"{len(result.labels)} chapters; most used words: {', '.join(result.words[:12])}, ...")
    for book in sorted(set(result.labels)):
        z = result.scores[[lab == book for lab in result.labels], 0]
        print(f"  {book}: component 1 from {z.min():+.3f} to {z.max():+.3f}")
    plotting.plot_embedding(result.scores, result.labels, s=30,
                            title=f"stylometry: RBF kernel PCA on the {args.words} most "
                            "used words", path=out / "stylometry.png")
    print("wrote", out / "stylometry.png")


if __name__ == "__main__":
    main()
