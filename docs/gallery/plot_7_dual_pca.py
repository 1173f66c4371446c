"""
Dual PCA: fewer samples than dimensions
=======================================

With fewer samples than dimensions, PCA through the n × n Gram matrix (kernel PCA
with the linear kernel) is much cheaper than through the d × d covariance matrix, and
gives the same scores up to sign.

This page runs ``section`` of ``examples/dual_pca.py``, the script behind this section
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
example = importlib.import_module("dual_pca")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-dual_pca-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/dual_pca.py``:
#
# .. literalinclude:: ../../examples/dual_pca.py
#    :language: python
