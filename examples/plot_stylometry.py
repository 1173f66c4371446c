"""
Stylometry: two authors
=======================

Who wrote which chapter? Kernel PCA on the relative frequencies of the most used
words of each chapter (mostly function words: *the*, *of*, *and*, ...) separates
the chapters of two authors, a classic of stylometry (docs/math.md, "The classic
examples"). The spectrum kernel on the raw text is shown for comparison.
"""

# %%
# The corpus
# ----------
#
# A generated corpus (:func:`kpca.datasets.two_authors_corpus`): two "authors" with
# different function-word habits, two books each, one ``.txt`` file per book. Your
# own books work the same way: :func:`kpca.text.read_corpus` splits each file into
# chapters at lines that match a pattern (default: a line beginning with
# "CHAPTER").
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from kpca import KernelPCA, plotting
from kpca.datasets import two_authors_corpus
from kpca.text import read_corpus, stylometry

with tempfile.TemporaryDirectory() as folder:
    two_authors_corpus(folder, random_state=0)
    chapters = read_corpus(folder)
books = np.array(chapters.labels)
print(f"{len(books)} chapters of {len(set(books))} books")

# %%
# Word frequencies and RBF kernel PCA
# -----------------------------------
#
# :func:`kpca.text.stylometry` describes each chapter by the relative frequencies of
# the 50 most used words of the corpus, standardises them and applies RBF kernel
# PCA (median-heuristic gamma).
result = stylometry(chapters, n_words=50, random_state=0)
print("most used words:", ", ".join(result.words[:10]), "...")

# %%
# The range of component 1 over each book's chapters: the two authors' books do not
# overlap.
pd.DataFrame({"chapters": pd.Series(books).value_counts(sort=False),
              "component 1, min": pd.Series(result.scores[:, 0]).groupby(books).min(),
              "component 1, max": pd.Series(result.scores[:, 0]).groupby(books).max()}
             ).rename_axis("book").round(3)

# %%
# A linear classifier on the two components tells the authors apart:
authors = np.array([book.split("_")[0] for book in books])
classifier = LogisticRegression().fit(result.scores, authors)
accuracy = classifier.score(result.scores, authors)
print(f"accuracy of a linear classifier on the two components: {accuracy:.3f}")

# %%
# The spectrum kernel on the raw text
# -----------------------------------
#
# No word counts at all: kernel PCA with the spectrum kernel (shared substrings of
# 4 characters, normalised) on the raw text of each chapter. It groups the chapters
# by *book*: the substrings are dominated by each book's content words (its topic),
# not by the authors' function-word habits. Choosing the representation is part of
# choosing the kernel.
Z_spectrum = KernelPCA(2, kernel="spectrum", kernel_params={"p": 4}).fit_transform(
    chapters.chunks)
classifier = LogisticRegression().fit(Z_spectrum, authors)
accuracy_spectrum = classifier.score(Z_spectrum, authors)
print(f"accuracy of a linear classifier on the two spectrum components: "
      f"{accuracy_spectrum:.3f}")

# %%
# Left: the word frequencies; right: the spectrum kernel.

fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
plotting.plot_embedding(result.scores, books, ax=axes[0], s=30,
                        title="RBF kernel PCA on the 50 most used words")
plotting.plot_embedding(Z_spectrum, books, ax=axes[1], s=30,
                        title="spectrum kernel (4-grams) on the raw text")
fig.suptitle("stylometry: one point per chapter, coloured by book")
plt.show()
