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
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("toy_contours", keep_figures=True)
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
