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
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("reconstruction", keep_figures=True)
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
