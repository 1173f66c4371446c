"""
Digits: kernel PCA features and a linear SVM
============================================

The test error of a linear SVM on kernel PCA features of scikit-learn's digits, by
number of components and polynomial degree, in the layout of Schölkopf, Smola & Müller
(1998), Table 1.

This page runs ``section`` of ``examples/digits_table.py``, the script behind this section
of ``kpca demo``; its source is at the end of the page.
"""

# %%
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("digits_table", keep_figures=True)
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/digits_table.py``:
#
# .. literalinclude:: ../../examples/digits_table.py
#    :language: python
