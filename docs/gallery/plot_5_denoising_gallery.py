"""
Denoising digits
================

Noisy test digits projected on the leading kernel PCA components and mapped back to
input space with pre-images, against linear PCA with the same number of components.

This page runs ``section`` of ``examples/denoising_gallery.py``, the script behind this section
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
example = importlib.import_module("denoising_gallery")

section = example.section(Path(tempfile.mkdtemp(prefix="kpca-denoising_gallery-")))
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/denoising_gallery.py``:
#
# .. literalinclude:: ../../examples/denoising_gallery.py
#    :language: python
