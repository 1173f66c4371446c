"""Stylometry: chapters of books by two authors, separated by kernel PCA on the
relative frequencies of the 50 most used words (docs/math.md,
"The classic examples").

Without ``--corpus`` a corpus of two synthetic authors with different
function-word habits (two books each) is generated in ``OUT/corpus``
(:func:`kpca.datasets.two_authors_corpus`). With ``--corpus FOLDER`` it reads your
own: one ``.txt`` file per book, chapters starting at lines that match
``--pattern`` (default: a line beginning with "CHAPTER"). The spectrum kernel on
the raw text of each chapter is shown for comparison.

Writes ``stylometry.png`` (one point per chapter, coloured by book).

Run::

    python examples/stylometry.py --out figures/
    python examples/stylometry.py --corpus books/ --pattern '(?m)^Chapter [0-9]+' --out figures/
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _shared import Section, md_table, parser, pyplot, run_script, save
from sklearn.linear_model import LogisticRegression

from kpca import KernelPCA, plotting
from kpca.datasets import two_authors_corpus
from kpca.text import CHAPTER_PATTERN, read_corpus, stylometry


def separated_by(z: np.ndarray, groups: np.ndarray) -> bool:
    """True when a threshold on ``z`` separates the two groups."""
    a, b = (z[groups == g] for g in np.unique(groups))
    return bool(a.max() < b.min() or b.max() < a.min())


def section(out: Path, *, quick: bool = False, corpus: str | Path | None = None,
            pattern: str = CHAPTER_PATTERN, n_words: int = 50,
            random_state: int = 0) -> Section:
    """Word frequencies + RBF kernel PCA (:func:`kpca.text.stylometry`), and the
    spectrum (p-gram) kernel on the raw chapter text (``quick`` changes nothing).

    ``data``: ``'labels'`` (book of each chapter), ``'scores'`` and
    ``'spectrum_scores'`` (two components each); for the generated corpus also
    ``'accuracy'`` and ``'accuracy_spectrum'``, a linear classifier's accuracy at
    telling the two authors apart.
    """
    generated = corpus is None
    if generated:
        corpus = out / "corpus"
        two_authors_corpus(corpus, random_state=random_state)
    chapters = read_corpus(corpus, pattern=pattern)
    res = stylometry(chapters, n_words=n_words, random_state=random_state)
    Zs = KernelPCA(2, kernel="spectrum", kernel_params={"p": 4}).fit_transform(chapters.chunks)
    labels = np.array(res.labels)
    sec = Section("Stylometry: two authors" if generated else "Stylometry",
                  data={"labels": res.labels, "scores": res.scores, "spectrum_scores": Zs})
    plt = pyplot()
    if plt is not None:
        fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6))
        plotting.plot_embedding(res.scores, res.labels, ax=axes[0], s=30,
                                title=f"RBF kernel PCA on the {n_words} most used words")
        plotting.plot_embedding(Zs, res.labels, ax=axes[1], s=30,
                                title="spectrum kernel (4-grams) on the raw text")
        fig.suptitle("stylometry: one point per chapter, coloured by book")
        fig.tight_layout()
        sec.files["figure"] = save(fig, out / "stylometry.png")

    books = list(dict.fromkeys(res.labels))
    rows = [[b, int(np.sum(labels == b)),
             f"{res.scores[labels == b, 0].min():+.3f} to {res.scores[labels == b, 0].max():+.3f}"]
            for b in books]
    source = ('A generated corpus (folder `corpus/`): two "authors" with different\n'
              f"function-word habits, two books each, {len(labels) // len(books)} chapters "
              "per book." if generated else
              f"{len(books)} books from `{corpus}`, {len(labels)} chapters.")
    sec.text = f"""{source}
Each chapter is described by the relative frequencies of the {n_words} most used words
(standardised), then RBF kernel PCA (median-heuristic gamma).
Most used words: {', '.join(res.words[:15])}, ...

{md_table(["book", "chapters", "component 1"], rows)}"""
    if generated:
        author = np.array([lab.split("_")[0] for lab in res.labels])
        acc = float(LogisticRegression().fit(res.scores, author).score(res.scores, author))
        acc_s = float(LogisticRegression().fit(Zs, author).score(Zs, author))
        sec.data.update(accuracy=acc, accuracy_spectrum=acc_s)
        where = ("the chapters of authorA's books and of authorB's books form two groups "
                 "separated along component 1" if separated_by(res.scores[:, 0], author) else
                 "the chapters of the two authors form separate groups")
        spectrum_verdict = ("component 1 happens to separate the authors as well"
                            if separated_by(Zs[:, 0], author) else
                            "neither component alone separates the authors")
        sec.text += f"""
A linear classifier on the two components tells the authors apart with accuracy {acc:.3f};
in the left panel of `stylometry.png` {where}.

The right panel uses no word counts at all: kernel PCA with the spectrum kernel
(shared substrings of 4 characters, normalised) on the raw text of each chapter. It
groups the chapters by *book*: substrings are dominated by each book's content words
(its topic), not by the authors' function-word habits, so {spectrum_verdict}
(a linear classifier on both components together: accuracy {acc_s:.3f}). Choosing
the representation is part of choosing the kernel.
"""
    else:
        sec.text += """
The right panel of `stylometry.png` uses kernel PCA with the spectrum kernel (shared
substrings of 4 characters, normalised) on the raw text of each chapter instead.
"""
    sec.text += """
Reproduce in Python: `kpca.text.stylometry("corpus/")`, and
`KernelPCA(2, kernel="spectrum", kernel_params={"p": 4}).fit_transform(chapters)`.
"""
    return sec


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--corpus", default=None,
                   help="folder of .txt books (default: a generated two-author corpus)")
    p.add_argument("--pattern", default=CHAPTER_PATTERN,
                   help="regular expression of a chapter heading line")
    p.add_argument("--words", type=int, default=50, help="most used words (default: 50)")
    args = p.parse_args()
    run_script(section, args.out, corpus=args.corpus, pattern=args.pattern,
               n_words=args.words)


if __name__ == "__main__":
    main()
