"""Helpers shared by the example scripts and the report writer (``report.py``).

Not part of the ``kpca`` package. Each example module has one function,
``section(out, *, quick=False, ...) -> Section``, that computes its example, writes
its files (CSV and Markdown tables, PNG figures when matplotlib is installed) into
the folder ``out`` and returns a :class:`Section`. ``python examples/NAME.py`` runs
that function and prints the section's text (:func:`run_script`); ``kpca demo``
(``examples/report.py``) runs them all and writes ``report.md``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from kpca.io import atomic_write


@dataclass
class Section:
    """One example: a title, Markdown text with its numbers and the files it wrote.

    Attributes
    ----------
    title : str
        Heading of the section in the report.
    text : str
        Markdown body.
    files : dict of str to Path
        Every file written, by a short name (``'figure'``, ``'table'``, ...).
    data : dict
        The numbers behind the text, for tests and for the report's summary.
    seconds : float
        Wall-clock time of the computation (set by the report writer).
    """

    title: str
    text: str = ""
    files: dict[str, Path] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def pyplot() -> Any:
    """``matplotlib.pyplot``, or None when matplotlib is not installed (no figures)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def use_agg() -> bool:
    """Draw into files only (matplotlib's Agg backend); False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    return True


#: close each figure once it is saved (``kpca demo``, the scripts); the documentation's
#: gallery (docs/gallery) sets it to False to show the figures on its pages
CLOSE_FIGURES = True


def save(fig: Any, path: Path) -> Path:
    """Save ``fig`` atomically (:func:`kpca.plotting.save_figure`) and close it
    (unless :data:`CLOSE_FIGURES` is False)."""
    from kpca.plotting import save_figure

    save_figure(fig, path)
    if CLOSE_FIGURES:
        pyplot().close(fig)
    return path


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def md_table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def digits(random_state: int = 0) -> list[np.ndarray]:
    """scikit-learn's digits scaled to [0, 1], split 70/30 (stratified):
    ``Xtr, Xte, ytr, yte``."""
    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16.0, y, test_size=0.3, random_state=random_state,
                            stratify=y)


def parser(doc: str) -> argparse.ArgumentParser:
    """Command line of an example script: the docstring's first paragraph, ``--out``."""
    p = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))
    p.add_argument("--out", default="figures", help="output folder (default: figures)")
    return p


def run_script(section: Callable[..., Section], out: str | Path, **options: Any) -> Section:
    """Run one example as a script: compute it into ``out``, print its text and files."""
    if not use_agg():
        print("matplotlib is not installed: no figures (pip install 'kpca[plot]')")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sec = section(out, **options)
    print(f"# {sec.title}\n\n{sec.text}")
    for path in sec.files.values():
        print("wrote", path)
    return sec
