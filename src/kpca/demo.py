"""``kpca demo``: run the gallery's example scripts and write their report.

The examples are the scripts ``plot_*.py`` of the repository's ``examples/`` folder,
written for sphinx-gallery (docs/guide.md, "The examples"): a docstring with the title
and the introduction, then cells separated by ``# %%`` lines, each a reST comment and
the code it explains. The documentation site shows each script as a page of its
gallery. ``kpca demo`` runs the same scripts here, cell by cell as the gallery does,
saves the figures each cell makes and writes ``report.md``: each script's text, code,
printed output and figures, in the script's order.

The scripts are not part of the import package: the wheel installs them as data
files under ``<prefix>/share/kpca/examples``, where :func:`examples_dir` finds them.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import logging
import os
import re
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Cell", "Example", "example_names", "examples_dir", "main", "run_example"]

logger = logging.getLogger(__name__)

#: environment variable naming the examples folder, tried before the usual places
ENV = "KPCA_EXAMPLES"

#: environment variable that ``kpca demo --quick`` sets while the scripts run: the
#: scripts that can compute a smaller version of their example read it
QUICK_ENV = "KPCA_DEMO_QUICK"

#: the order of the gallery and of the report (names without ``plot_``); the scripts
#: not listed here follow, by name
ORDER = ("circles_moons", "toy_contours", "choose_k_and_gamma", "reconstruction",
         "denoising", "digits", "stylometry", "dual_pca")

#: what the report's text and the terminal need: matplotlib draws the figures, pandas
#: shows the tables (module -> the extra that installs it)
NEEDS = {"matplotlib": "plot", "pandas": "io"}

#: a line that starts a new cell (sphinx-gallery's two spellings)
_SEPARATOR = re.compile(r"^(# ?%%.*|#{20,})\s*$")
#: sphinx-gallery's configuration comments (``# sphinx_gallery_thumbnail_number = 2``),
#: which the gallery's pages leave out
_CONFIG_COMMENT = re.compile(r"^\s*# ?sphinx_gallery_\w+.*$")


@dataclass
class Cell:
    """One cell of an example script, and what running it produced.

    Attributes
    ----------
    text : str
        The reST comment above the code, without the ``#`` (may be empty).
    code : str
        The code (may be empty).
    line : int
        1-based line number of the code's first line in the script.
    output : str
        What the code printed, then the text form of its last expression when that is
        shown (a value with an HTML view, such as a pandas DataFrame, as in the gallery).
    figures : list of Path
        The figures the code made, saved as PNG files.
    """

    text: str
    code: str
    line: int
    output: str = ""
    figures: list[Path] = field(default_factory=list)


@dataclass
class Example:
    """An example script, run.

    Attributes
    ----------
    name : str
        File name without ``plot_`` and ``.py`` (the name ``--only`` takes).
    path : Path
        The script.
    title, intro : str
        The docstring's title and the text below it (reST).
    cells : list of Cell
        The cells, in order, with their outputs and figures.
    namespace : dict
        The script's global variables once it has run (the numbers behind the text).
    seconds : float
        Wall-clock time of the run.
    """

    name: str
    path: Path
    title: str
    intro: str
    cells: list[Cell]
    namespace: dict[str, Any] = field(default_factory=dict, repr=False)
    seconds: float = 0.0

    @property
    def figures(self) -> list[Path]:
        """Every figure written, in order."""
        return [p for c in self.cells for p in c.figures]


def examples_dir() -> Path:
    """The folder of the example scripts.

    Tried in order: ``$KPCA_EXAMPLES``; ``examples/`` next to ``src/`` (a source
    checkout, or an editable install of one); ``share/kpca/examples`` under the
    data path of the running interpreter's install scheme (``pip install``, also
    into a virtual environment), then of the user scheme (``pip install --user``).

    Raises
    ------
    FileNotFoundError
        When none of them holds a script ``plot_*.py``.
    """
    here = Path(__file__).resolve().parent
    candidates = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    if here.parent.name == "src":
        candidates.append(here.parent.parent / "examples")
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        data = sysconfig.get_paths(scheme)["data"]
        candidates.append(Path(data, "share", "kpca", "examples"))
    for folder in candidates:
        if folder.is_dir() and any(folder.glob("plot_*.py")):
            return folder
    raise FileNotFoundError(
        "kpca demo: the example scripts were not found (looked in "
        f"{', '.join(map(str, dict.fromkeys(candidates)))}); reinstall kpca from its wheel, "
        f"or set {ENV} to the examples/ folder of a source checkout.")


def order_key(name: str) -> tuple[int, str]:
    """Sort key of an example (a name, a file name or a path) in :data:`ORDER`; the
    documentation's gallery sorts by it too (docs/_ext/gallery_order.py)."""
    stem = Path(name).stem
    stem = stem[len("plot_"):] if stem.startswith("plot_") else stem
    return (ORDER.index(stem) if stem in ORDER else len(ORDER), stem)


def example_names(folder: str | os.PathLike | None = None) -> list[str]:
    """The examples of ``folder`` (default: :func:`examples_dir`), in the gallery's order."""
    folder = examples_dir() if folder is None else Path(folder)
    return sorted((p.stem[len("plot_"):] for p in folder.glob("plot_*.py")), key=order_key)


def parse(path: str | os.PathLike) -> tuple[str, str, list[Cell]]:
    """Split a sphinx-gallery script into its title, introduction and cells.

    The docstring holds the title (a reST heading) and the introduction; each line
    ``# %%`` starts a cell, whose leading comment lines are its text and the rest its
    code.

    Returns
    -------
    title, intro : str
    cells : list of Cell
        Without outputs yet.
    """
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    doc = ast.get_docstring(tree, clean=True)
    if doc is None:
        raise ValueError(f"{path}: an example starts with a docstring (its title and intro).")
    title, intro = _title(doc, path)
    lines = source.splitlines()
    start = tree.body[0].end_lineno  # the line after the docstring (0-based index)
    cells: list[Cell] = []
    text: list[str] = []
    code: list[str] = []
    code_line = start + 1
    in_text = False

    def close() -> None:
        body = "\n".join(ln for ln in code if not _CONFIG_COMMENT.match(ln)).strip("\n")
        lead = next((i for i, ln in enumerate(code) if ln.strip()), 0)
        if text or body:
            cells.append(Cell("\n".join(text).strip("\n"), body, code_line + lead))

    for i in range(start, len(lines)):
        line = lines[i]
        if _SEPARATOR.match(line):
            close()
            text, code, in_text, code_line = [], [], True, i + 2
            continue
        if in_text and line.startswith("#"):
            text.append(line[2:] if line.startswith("# ") else line[1:])
            code_line = i + 2
            continue
        in_text = False
        code.append(line)
    close()
    return title, intro, cells


def _title(doc: str, path: Path) -> tuple[str, str]:
    """The reST title of a docstring and the text below it."""
    lines = doc.splitlines()
    for i in range(1, len(lines)):
        if re.fullmatch(r"([=\-~^*#+])\1{2,}", lines[i].strip()) and lines[i - 1].strip():
            return lines[i - 1].strip(), "\n".join(lines[i + 1:]).strip("\n")
    raise ValueError(f"{path}: the docstring has no title (a line underlined with '=').")


def _shown(value: Any) -> bool:
    """Whether the gallery shows a cell's last expression: a value with an HTML view
    (docs/conf.py, ``capture_repr``)."""
    return value is not None and hasattr(type(value), "_repr_html_")


def _run_cell(cell: Cell, path: Path, namespace: dict[str, Any]) -> str:
    """Execute ``cell`` in ``namespace``; what it printed (and its shown last value)."""
    tree = ast.parse("\n" * (cell.line - 1) + cell.code, filename=str(path))
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(tree, str(path), "exec"), namespace)  # noqa: S102 (the user's examples)
        if last is not None:
            value = eval(compile(last, str(path), "eval"), namespace)  # noqa: S307
            if _shown(value):  # a table in full (a DataFrame's repr elides columns)
                to_string = getattr(value, "to_string", None)
                print(to_string() if callable(to_string) else repr(value))
    return buffer.getvalue()


@contextlib.contextmanager
def _demo_context(quick: bool) -> Iterator[Any]:
    """matplotlib's pyplot with ``show`` a no-op (the figures are saved instead), and
    :data:`QUICK_ENV` set for ``quick``; both restored afterwards."""
    import matplotlib.pyplot as plt

    saved_show, saved_env = plt.show, os.environ.get(QUICK_ENV)
    plt.show = lambda *args, **kwargs: None
    os.environ[QUICK_ENV] = "1" if quick else "0"
    try:
        yield plt
    finally:
        plt.show = saved_show
        if saved_env is None:
            os.environ.pop(QUICK_ENV, None)
        else:
            os.environ[QUICK_ENV] = saved_env


def _check_needs() -> None:
    import importlib.util

    missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        extras = ",".join(NEEDS[m] for m in missing)
        raise ImportError(f"kpca demo needs {' and '.join(missing)}: "
                          f"pip install 'kpca[{extras}]' (or 'kpca[all]').")


def run_example(name: str, out: str | os.PathLike | None = None, *,
                quick: bool = False) -> Example:
    """Run one example script of the gallery, cell by cell, as ``kpca demo`` does.

    Parameters
    ----------
    name : str
        The script's name without ``plot_`` and ``.py`` (see :func:`example_names`),
        or the path of a script.
    out : str or path-like, default=None
        Folder for its figures, ``NAME.png``, ``NAME_2.png``, ... (created; default: a
        new temporary folder).
    quick : bool, default=False
        Ask the script for a smaller version of its example, where it has one (it reads
        :data:`QUICK_ENV`).

    Returns
    -------
    Example
        Its title, text, cells with their outputs and figures, and its variables.

    Raises
    ------
    ValueError
        For a name that is not an example script.
    FileNotFoundError
        When the examples are not installed (see :func:`examples_dir`).
    ImportError
        Without matplotlib or pandas, which the examples use.
    """
    if name.endswith(".py"):
        path = Path(name)
        name = path.stem[len("plot_"):] if path.stem.startswith("plot_") else path.stem
    else:
        folder = examples_dir()
        names = example_names(folder)
        if name not in names:
            raise ValueError(f"run_example: no example {name!r}; one of {', '.join(names)}.")
        path = folder / f"plot_{name}.py"
    _check_needs()
    target = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"kpca-{name}-"))
    if target.exists() and not target.is_dir():
        raise ValueError(f"{target}: exists and is not a directory.")
    target.mkdir(parents=True, exist_ok=True)
    title, intro, cells = parse(path)
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(path),
                                 "__builtins__": builtins}
    from .plotting import save_figure

    t0 = time.perf_counter()
    n_figures = 0
    with _demo_context(quick) as plt:
        # figures the caller had open are theirs, not the example's
        theirs = set(plt.get_fignums())
        for cell in cells:
            cell.output = _run_cell(cell, path, namespace) if cell.code else ""
            for number in [f for f in plt.get_fignums() if f not in theirs]:
                fig = plt.figure(number)
                n_figures += 1
                suffix = "" if n_figures == 1 else f"_{n_figures}"
                cell.figures.append(save_figure(fig, target / f"{name}{suffix}.png"))
                plt.close(fig)
    return Example(name, path, title, intro, cells, namespace, time.perf_counter() - t0)


def markdown(text: str) -> str:
    """The little reST the examples' text uses, in Markdown: headings, inline
    literals, roles, links and ``.. math::`` blocks."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"([=\-~^*#+])\1{2,}", nxt.strip()):
            out.append(f"### {line.strip()}")
            i += 2
            continue
        if line.strip().startswith(".. math::"):
            block = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            out += ["$$", textwrap.dedent("\n".join(block)).strip(), "$$"]
            continue
        out.append(line[:-1] if line.endswith("::") else line)  # a literal block follows
        i += 1
    md = "\n".join(out)
    md = re.sub(r":math:`([^`]+)`", r"$\1$", md)
    md = re.sub(r":\w+:(?:\w+:)?`~?([^`<]+?)(?:\s*<[^>]+>)?`", r"`\1`", md)  # :func:`x`
    md = re.sub(r"`([^`<]+?)\s*<([^>]+)>`__?", r"[\1](\2)", md)  # `text <url>`_
    md = md.replace("``", "`")
    return md.strip("\n")


def format_report(examples: Sequence[Example]) -> str:
    """``report.md``: a table of contents, then each example with its text, code,
    output and figures."""
    parts = ["# kpca demo: the examples of kernel PCA",
             "The scripts of the documentation's gallery (`examples/plot_*.py`), run by "
             "`kpca demo`: each section is one script, with its text, its code, what it "
             "printed and its figures; the numbers are computed by this run."]
    parts.append("\n".join(f"- [{e.title}](#{_anchor(e.title)}) ({e.seconds:.1f} s)"
                           for e in examples))
    for e in examples:
        parts.append(f"## {e.title}\n\n{markdown(e.intro)}\n\n"
                     f"*Script: `{e.path.name}`.*")
        for cell in e.cells:
            if cell.text:
                parts.append(markdown(cell.text))
            if cell.code:
                parts.append(f"```python\n{cell.code}\n```")
            if cell.output.strip():
                parts.append(f"```text\n{cell.output.rstrip()}\n```")
            parts += [f"![{p.stem}]({p.name})" for p in cell.figures]
    return "\n\n".join(parts) + "\n"


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return "".join(c for c in title.lower() if c.isalnum() or c in " -_").replace(" ", "-")


def main(out: str | os.PathLike, *, quick: bool = False,
         only: Sequence[str] | None = None) -> int:
    """Run the examples and write their figures and ``report.md`` into ``out``.

    Parameters
    ----------
    out : str or path-like
        Output folder, created if needed.
    quick : bool, default=False
        The smaller version of the examples that have one (the digits table: 3 x 4
        cells on 800 training images).
    only : sequence of str, default=None
        Examples to run (default: all), by the names of :func:`example_names`.

    Returns
    -------
    int
        Exit status, 0. Progress goes to standard error, the list of files written to
        standard output.

    Raises
    ------
    ValueError
        For an unknown example, or when ``out`` is an existing file.
    FileNotFoundError
        When the examples are not installed (see :func:`examples_dir`).
    ImportError
        Without matplotlib or pandas, which the examples use.
    """
    folder = examples_dir()
    names = example_names(folder)
    keys = names if only is None else list(only)
    unknown = [k for k in keys if k not in names]
    if unknown:
        raise ValueError(f"unknown section(s) {unknown}; choose from {', '.join(names)}.")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory.")
    _check_needs()
    import matplotlib

    matplotlib.use("Agg")  # files only: the command line shows no windows
    logger.info("demo: running the examples in %s", folder)
    examples = []
    for i, key in enumerate(keys, 1):
        ex = run_example(str(folder / f"plot_{key}.py"), out, quick=quick)
        examples.append(ex)
        print(f"kpca demo: {key} done ({ex.seconds:.1f} s, {i}/{len(keys)})",
              file=sys.stderr, flush=True)
    report = out / "report.md"
    from .io import atomic_write

    with atomic_write(report, "w", encoding="utf-8") as fh:
        fh.write(format_report(examples))
    total = sum(e.seconds for e in examples)
    lines = [f"Report: {report}  ({len(examples)} examples, {total:.0f} s)", "Wrote:"]
    lines += [f"  {p}" for e in examples for p in e.figures]
    lines.append(f"  {report}")
    print("\n".join(lines))
    return 0
