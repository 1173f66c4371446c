"""
Concentric circles and two moons
================================

Which kernels make two classes linearly separable? Kernel PCA keeps two components
with the linear, polynomial, cosine and RBF kernels, and a logistic regression on those
components measures how separable the classes are: only the RBF kernel unfolds both the
circles and the moons.

This page runs ``section`` of ``examples/circles_moons.py``, the script behind this section
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
example = importlib.import_module("circles_moons")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-circles_moons-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/circles_moons.py``:
#
# .. literalinclude:: ../../examples/circles_moons.py
#    :language: python
