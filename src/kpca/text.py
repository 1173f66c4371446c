"""Text pipelines: stylometry with kernel PCA (docs/math.md, "The classic examples").

Stylometry describes each chunk of text (a chapter) by the relative
frequencies of the ``N`` most used words of the corpus (mostly function words:
*the, of, and, which, ...*, whose rates are an author's habit rather than the
book's topic), then projects these profiles with kernel PCA: chapters of the
same author cluster together.

* :func:`read_corpus` reads a folder of text files (one per book), split into
  chapters by a regular expression;
* :class:`WordFrequencies` is a scikit-learn transformer: chunk -> relative
  frequencies of the most used words (fitted on the training chunks);
* :func:`stylometry` runs the whole pipeline and returns the embedding.

For kernels on the raw strings see :class:`kpca.kernels.Spectrum`.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._kernel_pca import KernelPCA

logger = logging.getLogger("kpca")

__all__ = [
    "CHAPTER_PATTERN",
    "Corpus",
    "StylometryResult",
    "WordFrequencies",
    "read_corpus",
    "split_chapters",
    "stylometry",
    "tokenize",
]

#: default chapter separator: a line starting with CHAPTER (any case), e.g. "CHAPTER IV."
CHAPTER_PATTERN = r"(?im)^[ \t]*chapter\b[^\n]*$"
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def tokenize(text: str) -> list[str]:
    """Lower-case words of ``text`` (letters, with inner apostrophes; digits dropped)."""
    return [w.lower() for w in _WORD.findall(text)]


@dataclass
class Corpus:
    """Chunks of text and where they come from.

    Attributes
    ----------
    chunks : list of str
        The text of each chunk (chapter).
    labels : list of str
        The file (book) each chunk comes from: its name without extension.
    chapters : list of int
        1-based index of the chunk within its file.
    """

    chunks: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    chapters: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.chunks)


def split_chapters(text: str, pattern: str | None = CHAPTER_PATTERN,
                   min_words: int = 1) -> list[str]:
    """Split a text at the lines matching ``pattern`` (the headings are dropped).

    Text before the first heading (a title page) is dropped when there is a
    heading; ``pattern=None`` keeps the whole text as one chunk. Chunks with
    fewer than ``min_words`` words are dropped.
    """
    if pattern is None:
        parts = [text]
    else:
        parts = re.split(pattern, text)
        if len(parts) > 1:
            parts = parts[1:]
    return [p.strip() for p in parts if len(tokenize(p)) >= min_words]


def read_corpus(
    folder: str | os.PathLike,
    *,
    pattern: str | None = CHAPTER_PATTERN,
    glob: str = "*.txt",
    encoding: str = "utf-8",
    min_words: int = 50,
) -> Corpus:
    """Read a folder of text files (one per book) and split them into chapters.

    Parameters
    ----------
    folder : str or path-like
    pattern : str or None, default=CHAPTER_PATTERN
        Regular expression matching a chapter heading line; ``None``: one chunk
        per file.
    glob : str, default='*.txt'
        Which files to read (sorted by name).
    encoding : str, default='utf-8'
    min_words : int, default=50
        Shorter chunks (stray headings, a table of contents) are dropped.

    Returns
    -------
    Corpus

    Raises
    ------
    ValueError
        The folder does not exist, has no matching file, or no chunk has
        ``min_words`` words.
    """
    path = Path(folder)
    if not path.is_dir():
        raise ValueError(f"{path}: not a directory.")
    files = sorted(p for p in path.glob(glob) if p.is_file())
    if not files:
        raise ValueError(f"{path}: no files matching {glob!r}.")
    corpus = Corpus()
    for f in files:
        try:
            text = f.read_text(encoding=encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{f}: not a {encoding} text file ({exc.reason}).") from None
        chunks = split_chapters(text, pattern, min_words)
        logger.info("%s: %d chunks", f.name, len(chunks))
        corpus.chunks += chunks
        corpus.labels += [f.stem] * len(chunks)
        corpus.chapters += list(range(1, len(chunks) + 1))
    if not corpus.chunks:
        raise ValueError(f"{path}: no chunk with at least {min_words} words.")
    return corpus


class WordFrequencies(TransformerMixin, BaseEstimator):
    """Relative frequencies of the most used words in each text.

    ``fit`` picks the ``n_words`` most frequent words of the training texts
    (ties broken alphabetically); ``transform`` returns, for each text,
    ``count(word) / number of words in the text`` for those words.

    Parameters
    ----------
    n_words : int, default=50
    vocabulary : sequence of str, default=None
        Use these words instead of the most frequent ones.

    Attributes
    ----------
    vocabulary_ : ndarray of str, shape (n_words,)
    """

    def __init__(self, n_words: int = 50, vocabulary: Sequence[str] | None = None):
        self.n_words = n_words
        self.vocabulary = vocabulary

    def fit(self, X: Sequence[str], y: Any = None) -> WordFrequencies:
        """Choose the vocabulary from the texts ``X``."""
        if self.vocabulary is not None:
            vocab = [str(w).lower() for w in self.vocabulary]
        else:
            if not (isinstance(self.n_words, int) and self.n_words >= 1):
                raise ValueError(f"n_words must be an integer >= 1; got {self.n_words!r}.")
            total: Counter[str] = Counter()
            for text in _texts(X):
                total.update(tokenize(text))
            ranked = sorted(total.items(), key=lambda kv: (-kv[1], kv[0]))
            vocab = [w for w, _ in ranked[: self.n_words]]
        if not vocab:
            raise ValueError("WordFrequencies: the texts contain no words.")
        self.vocabulary_ = np.array(vocab, dtype=object)
        self._index = {w: j for j, w in enumerate(vocab)}
        return self

    def transform(self, X: Sequence[str]) -> np.ndarray:
        """Relative frequencies, shape (n_texts, n_words)."""
        check_is_fitted(self)
        texts = _texts(X)
        index = {w: j for j, w in enumerate(self.vocabulary_)}
        F = np.zeros((len(texts), len(index)))
        for i, text in enumerate(texts):
            words = tokenize(text)
            for w, c in Counter(words).items():
                j = index.get(w)
                if j is not None:
                    F[i, j] = c
            if words:
                F[i] /= len(words)
        return F

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The chosen words."""
        check_is_fitted(self)
        return np.asarray(self.vocabulary_, dtype=object)


def _texts(X: Any) -> list[str]:
    if isinstance(X, str):
        raise ValueError("expected a collection of texts; got a single string.")
    texts = list(X)
    if not all(isinstance(t, str) for t in texts):
        raise ValueError("expected a collection of strings.")
    return texts


@dataclass
class StylometryResult:
    """Output of :func:`stylometry`.

    Attributes
    ----------
    scores : ndarray of shape (n_chunks, n_components)
        Kernel PCA scores of each chunk.
    labels : list of str
        The book of each chunk.
    frequencies : ndarray of shape (n_chunks, n_words)
        Relative word frequencies (the input of kernel PCA).
    words : list of str
        The words, most used first.
    model : KernelPCA
        The fitted kernel PCA.
    """

    scores: np.ndarray
    labels: list[str]
    frequencies: np.ndarray
    words: list[str]
    model: KernelPCA


def stylometry(
    corpus: Corpus | str | os.PathLike,
    *,
    n_words: int = 50,
    kernel: Any = "rbf",
    gamma: Any = "median",
    n_components: int = 2,
    standardize: bool = True,
    random_state: int | None = 0,
    **read_options: Any,
) -> StylometryResult:
    """Stylometry: relative frequencies of the ``n_words`` most used words per
    chapter, then kernel PCA.

    Parameters
    ----------
    corpus : Corpus, or a folder of text files (see :func:`read_corpus`)
    n_words : int, default=50
    kernel, gamma : kernel and its coefficient, as in :class:`kpca.KernelPCA`
    n_components : int, default=2
    standardize : bool, default=True
        Scale every word's frequency to zero mean and unit variance first (common
        words would otherwise dominate the distances).
    random_state : int or None, default=0
    **read_options
        Passed to :func:`read_corpus` when ``corpus`` is a folder.

    Returns
    -------
    StylometryResult
    """
    if not isinstance(corpus, Corpus):
        corpus = read_corpus(corpus, **read_options)
    wf = WordFrequencies(n_words=n_words).fit(corpus.chunks)
    F = wf.transform(corpus.chunks)
    Xs = F
    if standardize:
        sd = F.std(axis=0)
        Xs = (F - F.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    model = KernelPCA(n_components=n_components, kernel=kernel, gamma=gamma,
                      random_state=random_state)
    Z = model.fit_transform(Xs)
    logger.info("stylometry: %d chunks, %d words, kernel %s", len(corpus), F.shape[1], kernel)
    return StylometryResult(Z, list(corpus.labels), F, [str(w) for w in wf.vocabulary_], model)
