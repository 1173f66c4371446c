"""
Stylometry: two authors
=======================

Chapters of books by two (generated) authors, separated by kernel PCA on the relative
frequencies of the 50 most used words; the spectrum (p-gram) kernel on the raw text
does the same without choosing words.

This page runs ``section`` of ``examples/stylometry.py``, the script behind this section
of ``kpca demo``; its source is at the end of the page.
"""

# %%
# ``kpca.demo.run_section`` runs the script's ``section`` into a temporary folder, as
# ``kpca demo`` does, and keeps its figures open to show them here.
import matplotlib.pyplot as plt

from kpca.demo import run_section

section = run_section("stylometry", keep_figures=True)
print(f"# {section.title}\n\n{section.text}")
plt.show()
# sphinx_gallery_multi_image = "single"

# %%
# The script
# ----------
#
# ``examples/stylometry.py``:
#
# .. literalinclude:: ../../examples/stylometry.py
#    :language: python
