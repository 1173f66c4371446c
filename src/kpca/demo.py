"""``kpca demo``: run the example scripts that come with kpca and write their report.

The examples are not part of the import package. They live in the repository's
``examples/`` folder (one script per classic example, and ``report.py``, the report
writer; docs/guide.md, "The examples"), and the wheel installs that folder as data
files under ``<prefix>/share/kpca/examples``. :func:`main` finds it and runs
``report.py`` there, which writes ``report.md``, tables and figures.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["examples_dir", "main", "run_section"]

logger = logging.getLogger(__name__)

#: environment variable naming the examples folder, tried before the usual places
ENV = "KPCA_EXAMPLES"


def examples_dir() -> Path:
    """The folder of the example scripts.

    Tried in order: ``$KPCA_EXAMPLES``; ``examples/`` next to ``src/`` (a source
    checkout, or an editable install of one); ``share/kpca/examples`` under the
    data path of the running interpreter's install scheme (``pip install``, also
    into a virtual environment), then of the user scheme (``pip install --user``).

    Raises
    ------
    FileNotFoundError
        When none of them holds ``report.py``.
    """
    here = Path(__file__).resolve().parent
    candidates = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    if here.parent.name == "src":
        candidates.append(here.parent.parent / "examples")
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        data = sysconfig.get_paths(scheme)["data"]
        candidates.append(Path(data, "share", "kpca", "examples"))
    for folder in candidates:
        if (folder / "report.py").is_file():
            return folder
    raise FileNotFoundError(
        "kpca demo: the example scripts were not found (looked in "
        f"{', '.join(map(str, dict.fromkeys(candidates)))}); reinstall kpca from its wheel, "
        f"or set {ENV} to the examples/ folder of a source checkout.")


@contextmanager
def _importable(folder: Path) -> Iterator[None]:
    """Modules of ``folder`` importable by name, as for a script run from there.

    Modules of the same names imported before are set aside and put back after.
    """
    names = {p.stem for p in folder.glob("*.py")}
    saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def run_section(script: str, out: str | os.PathLike | None = None, *,
                keep_figures: bool = False, **options: Any) -> Any:
    """Run one example script's ``section``: the code behind one part of ``kpca demo``.

    Parameters
    ----------
    script : str
        The example's file name without ``.py`` (``circles_moons``, ``toy_contours``,
        ``reconstruction``, ``digits_table``, ``denoising_gallery``, ``stylometry``,
        ``dual_pca``).
    out : str or path-like, default=None
        Folder for its tables and figures (created; default: a new temporary folder).
    keep_figures : bool, default=False
        Leave its matplotlib figures open once saved (to show them: the documentation's
        gallery does), instead of closing them as ``kpca demo`` does.
    **options
        Passed to the section (e.g. ``quick=True``).

    Returns
    -------
    Section
        Its ``title``, ``text`` (Markdown) and the files it wrote.

    Raises
    ------
    ValueError
        For a name that is not an example script.
    FileNotFoundError
        When the examples are not installed (see :func:`examples_dir`).
    """
    folder = examples_dir()
    names = sorted(p.stem for p in folder.glob("*.py")
                   if not p.stem.startswith("_") and p.stem != "report")  # (the report writer)
    if script not in names:
        raise ValueError(f"run_section: no example script {script!r}; one of {names}.")
    target = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"kpca-{script}-"))
    target.mkdir(parents=True, exist_ok=True)
    with _importable(folder):
        importlib.import_module("_shared").CLOSE_FIGURES = not keep_figures
        return importlib.import_module(script).section(target, **options)


def main(out: str | os.PathLike, *, quick: bool = False,
         only: Sequence[str] | None = None) -> int:
    """Run the examples and write ``report.md``, CSV tables and PNG figures into ``out``.

    Parameters
    ----------
    out : str or path-like
        Output folder, created if needed.
    quick : bool, default=False
        A smaller digits table (3 x 4 cells on 800 training images).
    only : sequence of str, default=None
        Sections to run (default: all): circles_moons, toy_contours, reconstruction,
        digits, denoising, stylometry, dual_pca.

    Returns
    -------
    int
        Exit status, 0. Progress goes to standard error, the summary and the list of
        files written to standard output.

    Raises
    ------
    ValueError
        For an unknown section, or when ``out`` is an existing file.
    FileNotFoundError
        When the examples are not installed (see :func:`examples_dir`).
    """
    folder = examples_dir()
    logger.info("demo: running the examples in %s", folder)
    with _importable(folder):
        report = importlib.import_module("report")
        return int(report.demo(out, quick=quick, only=only))
