"""Stylometry: word frequencies per chapter, then kernel PCA."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from kpca.datasets import two_authors_corpus
from kpca.text import WordFrequencies, read_corpus, split_chapters, stylometry


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    two_authors_corpus(d, n_books=2, n_chapters=8, random_state=1)
    return d


def test_read_corpus_splits_chapters(corpus_dir):
    corpus = read_corpus(corpus_dir)
    files = sorted(p.stem for p in corpus_dir.glob("*.txt"))
    assert sorted(set(corpus.labels)) == files
    assert len(corpus) == 4 * 8
    assert corpus.chapters[:8] == list(range(1, 9))
    assert not any("CHAPTER" in c for c in corpus.chunks)
    # independent split: the text between two heading lines
    text = (corpus_dir / f"{files[0]}.txt").read_text()
    second = re.split(r"CHAPTER \d+\n", text)[2].strip()
    assert corpus.chunks[1] == second


def test_split_chapters_drops_front_matter_and_short_chunks():
    text = "Title page\nChapter I.\none two three\nCHAPTER II\nfour\n"
    assert split_chapters(text) == ["one two three", "four"]
    assert split_chapters(text, min_words=2) == ["one two three"]
    assert split_chapters(text, pattern=None) == [text.strip()]


def test_word_frequencies_equal_naive_counts():
    texts = ["The cat and the hat.", "A cat, a dog; the end", "dog dog DOG"]
    wf = WordFrequencies(n_words=3).fit(texts)
    # naive: most common words over all texts, ties alphabetical
    words = [w for t in texts for w in re.findall(r"[a-z]+", t.lower())]
    ranked = sorted(Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    vocab = [w for w, _ in ranked]
    assert list(wf.get_feature_names_out()) == vocab == ["dog", "the", "a"]
    F = wf.transform(texts)
    for i, t in enumerate(texts):
        tw = re.findall(r"[a-z]+", t.lower())
        np.testing.assert_allclose(F[i], [tw.count(w) / len(tw) for w in vocab])


def test_stylometry_separates_the_two_authors(corpus_dir):
    result = stylometry(corpus_dir, n_words=50)
    author = np.array([lab.startswith("authorA") for lab in result.labels])
    assert result.scores.shape == (32, 2) and result.frequencies.shape == (32, 50)
    # a linear classifier on the two components separates the authors ...
    acc = LogisticRegression().fit(result.scores, author).score(result.scores, author)
    assert acc == 1.0
    # ... and so does the first component alone (a threshold between the two groups)
    z = result.scores[:, 0]
    assert z[author].min() > z[~author].max() or z[author].max() < z[~author].min()
    # the input of kernel PCA is what WordFrequencies computes
    np.testing.assert_allclose(
        result.frequencies, WordFrequencies(50).fit_transform(read_corpus(corpus_dir).chunks)
    )


def test_read_corpus_errors(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        read_corpus(tmp_path / "missing")
    with pytest.raises(ValueError, match="no files"):
        read_corpus(tmp_path)
    (tmp_path / "a.txt").write_text("CHAPTER 1\nshort\n")
    with pytest.raises(ValueError, match="no chunk"):
        read_corpus(tmp_path)
