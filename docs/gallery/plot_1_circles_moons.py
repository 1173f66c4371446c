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
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("circles_moons", keep_figures=True)
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
