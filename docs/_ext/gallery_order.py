"""The order of the gallery: that of ``kpca demo``'s report (``kpca.demo.ORDER``, then
the other examples by name), for sphinx-gallery's ``within_subsection_order`` and
``minigallery_sort_order`` (docs/conf.py)."""

from __future__ import annotations

from kpca.demo import order_key


class DemoOrder:
    """sphinx-gallery's sort key of the examples' file names (or paths)."""

    def __init__(self, src_dir: str = "") -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        return order_key(filename)


def minigallery_key(path: str) -> tuple[int, str]:
    """Sort key of a minigallery's example paths."""
    return order_key(path)
