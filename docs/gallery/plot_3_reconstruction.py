"""
Reconstruction through pre-images
=================================

Linear PCA with all components reconstructs the training digits exactly; kernel PCA
maps back to input space through an approximate pre-image (learned ridge map and
fixed-point iteration), so its reconstruction error stays above PCA's.

This page runs ``section`` of ``examples/reconstruction.py``, the script behind this section
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
example = importlib.import_module("reconstruction")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-reconstruction-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/reconstruction.py``:
#
# .. literalinclude:: ../../examples/reconstruction.py
#    :language: python
