"""
Digits: kernel PCA features and a linear SVM
============================================

The test error of a linear SVM on kernel PCA features of scikit-learn's digits, by
number of components and polynomial degree, in the layout of Schölkopf, Smola & Müller
(1998), Table 1.

This page runs ``section`` of ``examples/digits_table.py``, the script behind this section
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
example = importlib.import_module("digits_table")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-digits_table-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/digits_table.py``:
#
# .. literalinclude:: ../../examples/digits_table.py
#    :language: python
