"""
Stylometry: two authors
=======================

Chapters of books by two (generated) authors, separated by kernel PCA on the relative
frequencies of the 50 most used words; the spectrum (p-gram) kernel on the raw text
does the same without choosing words.

This page runs ``section`` of ``examples/stylometry.py``, the script behind this section
of ``kpca demo``; its source is at the end of the page.
"""

# %%
# Run the example's ``section`` into a temporary folder: it computes the example, writes
# its tables and figures there and returns its text; the figures stay open to show them
# here (``kpca demo`` closes them once saved).
import importlib
import sys
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from kpca.demo import examples_dir

sys.path.insert(0, str(examples_dir()))  # the scripts that kpca demo runs
importlib.import_module("_shared").CLOSE_FIGURES = False
example = importlib.import_module("stylometry")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-stylometry-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/stylometry.py``:
#
# .. literalinclude:: ../../examples/stylometry.py
#    :language: python
