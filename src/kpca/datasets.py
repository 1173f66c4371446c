"""Small synthetic data sets for examples and the ``kpca demo`` command.

The point clouds are scikit-learn's (:func:`sklearn.datasets.make_circles`,
:func:`sklearn.datasets.make_moons`) with the settings of the classic examples
(docs/math.md, "The classic examples") as defaults, Schölkopf's three clusters
(:func:`three_clusters`), and a synthetic text corpus of two authors for the
stylometry example (:func:`two_authors_corpus`).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import make_circles, make_moons

__all__ = [
    "concentric_circles",
    "make_circles",
    "make_moons",
    "three_clusters",
    "two_authors_corpus",
]


def concentric_circles(
    n_samples: int = 400,
    factor: float = 0.3,
    noise: float = 0.05,
    random_state: int | np.random.RandomState | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Two concentric noisy circles in the plane: not linearly separable.

    The classic kernel PCA example: linear PCA cannot separate the two
    circles, RBF kernel PCA (gamma around 10) can.

    Parameters
    ----------
    n_samples : int, default=400
        Total number of points (split evenly between the circles).
    factor : float, default=0.3
        Radius of the inner circle relative to the outer one (which has radius 1).
    noise : float, default=0.05
        Standard deviation of the Gaussian noise added to the points.
    random_state : int, RandomState or None, default=0
        Seed; the default gives the same data on every call.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
        0 for the outer circle, 1 for the inner one.

    Examples
    --------
    >>> from kpca.datasets import concentric_circles
    >>> X, y = concentric_circles()
    >>> X.shape, sorted(set(y.tolist()))
    ((400, 2), [0, 1])
    """
    return make_circles(
        n_samples=n_samples, factor=factor, noise=noise, random_state=random_state
    )


def three_clusters(
    n_per_cluster: int = 30,
    std: float = 0.1,
    random_state: int | np.random.RandomState | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Schölkopf's toy example: three Gaussian clusters in the plane.

    Centres ``(-0.5, -0.2)``, ``(0, 0.6)`` and ``(0.5, 0)``, as in Schölkopf,
    Smola & Müller (1998), figure 2: the contour lines of the first kernel
    principal components (RBF kernel) separate the clusters and then split
    each of them.

    Parameters
    ----------
    n_per_cluster : int, default=30
    std : float, default=0.1
        Standard deviation of each cluster (isotropic).
    random_state : int, RandomState or None, default=0

    Returns
    -------
    X : ndarray of shape (3 * n_per_cluster, 2)
    y : ndarray of shape (3 * n_per_cluster,)
        Cluster index 0, 1, 2.
    """
    rng = np.random.RandomState(random_state) if not isinstance(
        random_state, np.random.RandomState) else random_state
    centres = np.array([[-0.5, -0.2], [0.0, 0.6], [0.5, 0.0]])
    X = np.vstack([c + std * rng.standard_normal((n_per_cluster, 2)) for c in centres])
    y = np.repeat(np.arange(3), n_per_cluster)
    return X, y


#: function words whose rates differ between the two synthetic authors
_HABITS = {
    "A": {"the": 6.0, "of": 4.0, "which": 3.0, "upon": 2.0, "whilst": 1.2, "shall": 1.5,
          "and": 3.0, "to": 3.0, "a": 2.0, "in": 2.5, "it": 1.5, "but": 0.8, "very": 0.4,
          "that": 1.0, "was": 2.0, "so": 0.5, "just": 0.2},
    "B": {"the": 5.0, "of": 2.5, "which": 0.8, "upon": 0.3, "whilst": 0.1, "shall": 0.3,
          "and": 4.0, "to": 3.0, "a": 3.0, "in": 2.0, "it": 2.5, "but": 2.0, "very": 1.5,
          "that": 2.5, "was": 2.0, "so": 1.5, "just": 1.0},
}
_CONTENT = (
    "house garden river letter morning evening friend mother father sister brother "
    "road town window door table horse carriage dinner journey money heart mind "
    "village church field storm ship sea voice face hand eyes night day winter summer "
    "walked spoke looked said thought returned answered waited smiled wrote read knew "
    "old young quiet dark bright long small great little cold warm"
).split()


def two_authors_corpus(
    out_dir: str | None = None,
    *,
    n_books: int = 2,
    n_chapters: int = 10,
    words_per_chapter: int = 600,
    random_state: int = 0,
) -> dict[str, str]:
    """A synthetic corpus of two "authors" with different function-word habits.

    Each author writes ``n_books`` books of ``n_chapters`` chapters. Words are
    drawn from a shared content vocabulary (Zipf-like frequencies, a different
    random topic mix per book) and from a set of function words whose rates
    differ between the authors (author A prefers *of, which, upon, whilst,
    shall*; author B *but, very, that, so, just, it*). Stylometry on the
    relative frequencies of the most used words separates the authors, as in
    the classic example (docs/math.md, "The classic examples").

    Parameters
    ----------
    out_dir : str or path-like, default=None
        If given, the books are written there as ``<author>_book<i>.txt``
        (UTF-8), chapters starting with a line ``CHAPTER <n>``.
    n_books : int, default=2
        Books per author.
    n_chapters : int, default=10
    words_per_chapter : int, default=600
    random_state : int, default=0

    Returns
    -------
    dict of str to str
        File name -> text of the book.
    """
    from pathlib import Path

    rng = np.random.RandomState(random_state)
    books: dict[str, str] = {}
    ranks = np.arange(1, len(_CONTENT) + 1, dtype=float)
    for author, habits in _HABITS.items():
        fwords = list(habits)
        frates = np.array([habits[w] for w in fwords])
        for b in range(1, n_books + 1):
            # each book has its own topic: a random permutation of the Zipf ranks
            cprob = 1.0 / ranks[rng.permutation(len(_CONTENT))]
            cprob /= cprob.sum()
            chapters = []
            for c in range(1, n_chapters + 1):
                # about 45 % function words, at the author's rates
                n_f = rng.binomial(words_per_chapter, 0.45)
                fw = rng.choice(fwords, size=n_f, p=frates / frates.sum())
                cw = rng.choice(_CONTENT, size=words_per_chapter - n_f, p=cprob)
                words = np.concatenate([fw, cw])
                rng.shuffle(words)
                sentences = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
                body = ". ".join(s.capitalize() for s in sentences) + "."
                chapters.append(f"CHAPTER {c}\n\n{body}\n")
            books[f"author{author}_book{b}.txt"] = "\n".join(chapters)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in books.items():
            (out / name).write_text(text, encoding="utf-8")
    return books
