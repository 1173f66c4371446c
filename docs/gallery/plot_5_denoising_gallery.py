"""
Denoising digits
================

Noisy test digits projected on the leading kernel PCA components and mapped back to
input space with pre-images, against linear PCA with the same number of components.

This page runs ``section`` of ``examples/denoising_gallery.py``, the script behind this section
of ``kpca demo``; its source is at the end of the page.
"""

# %%
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("denoising_gallery", keep_figures=True)
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
