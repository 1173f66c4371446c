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
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("dual_pca", keep_figures=True)
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
