"""
Contour lines of the projection functions
=========================================

Schölkopf's toy example: three Gaussian clusters and the contour lines of the first
eight RBF kernel principal components over the input plane, then the first four
components of the linear, polynomial, RBF and Laplacian kernels.

This page runs ``section`` of ``examples/toy_contours.py``, the script behind this section
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
example = importlib.import_module("toy_contours")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-toy_contours-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/toy_contours.py``:
#
# .. literalinclude:: ../../examples/toy_contours.py
#    :language: python
