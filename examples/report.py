"""The report of ``kpca demo``: run the example scripts of this folder, one section
each, and write their figures, tables and ``report.md`` into one folder.

``kpca demo -o DIR [--quick] [--only LIST]`` runs this file (through
:func:`kpca.demo.main`, which finds this folder in a source checkout or where the
wheel installed it, ``<prefix>/share/kpca/examples``); so does::

    python examples/report.py --out kpca-demo [--quick] [--only circles_moons,dual_pca]

The sections are the functions ``section(out, *, quick)`` of the scripts listed in
:data:`SECTIONS`; ``--quick`` computes a smaller digits table.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from _shared import Section, use_agg, write_text
from sklearn.exceptions import ConvergenceWarning

#: report section -> the example script (module in this folder) that computes it
SECTIONS = {
    "circles_moons": "circles_moons",
    "toy_contours": "toy_contours",
    "reconstruction": "reconstruction",
    "digits": "digits_table",
    "denoising": "denoising_gallery",
    "stylometry": "stylometry",
    "dual_pca": "dual_pca",
}


def write_report(out: str | Path, *, quick: bool = False,
                 only: Sequence[str] | None = None) -> tuple[dict[str, Section], Path]:
    """Run the sections (default: all, in the order of :data:`SECTIONS`) into ``out``.

    Prints one line per finished section on standard error. Returns the sections
    by key and the path of ``report.md``.
    """
    out = Path(out)
    keys = list(SECTIONS) if only is None else list(only)
    unknown = [k for k in keys if k not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}.")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: exists and is not a directory.")
    out.mkdir(parents=True, exist_ok=True)
    sections: dict[str, Section] = {}
    for key in keys:
        module = importlib.import_module(SECTIONS[key])
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            sec = sections[key] = module.section(out, quick=quick)
        sec.seconds = time.perf_counter() - t0
        print(f"kpca demo: {key} done ({sec.seconds:.1f} s)", file=sys.stderr, flush=True)
    return sections, write_text(out / "report.md", format_report(list(sections.values())))


def format_report(sections: list[Section]) -> str:
    """The Markdown report: a table of contents, then each section with its figures."""
    pngs = {id(s): [p for p in s.files.values() if p.suffix == ".png"] for s in sections}
    parts = ["# kpca demo: the examples of kernel PCA\n",
             "Each section reproduces one of the classic examples; the numbers are "
             "computed by this run."]
    if not any(pngs.values()):
        parts.append("(matplotlib is not installed, so no figures were drawn: "
                     "`pip install 'kpca[plot]'`.)")
    parts.append("\n".join(f"- [{s.title}](#{_anchor(s.title)}) ({s.seconds:.1f} s)"
                           for s in sections))
    for s in sections:
        parts.append(f"## {s.title}\n\n{s.text}"
                     + "".join(f"\n![{p.stem}]({p.name})\n" for p in pngs[id(s)]))
    return "\n\n".join(parts) + "\n"


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return "".join(c for c in title.lower() if c.isalnum() or c in " -").replace(" ", "-")


def demo(out: str | Path, *, quick: bool = False, only: Sequence[str] | None = None) -> int:
    """``kpca demo``: write the report, print a summary and the files; exit status 0."""
    if not use_agg():
        print("kpca demo: matplotlib is not installed: no figures (pip install 'kpca[plot]')",
              file=sys.stderr)
    sections, report = write_report(out, quick=quick, only=only)
    lines = []
    if "circles_moons" in sections:
        scores = sections["circles_moons"].data["scores"]["circles"]
        lin, rbf = scores["linear"], scores["rbf"]
        lines.append(
            "Concentric circles, logistic-regression accuracy on the first 2 components:\n"
            f"  {rbf.label}: {rbf.accuracy:.3f}  (component 1 alone: {rbf.accuracy_c1:.3f})\n"
            f"  {lin.label}: {lin.accuracy:.3f}  (component 1 alone: {lin.accuracy_c1:.3f})\n"
            f"RBF kernel PCA {'separates' if rbf.accuracy >= 0.99 else 'does not separate'} "
            f"the circles; linear PCA {'does' if lin.accuracy >= 0.9 else 'does not'}.")
    lines.append(f"Report: {report}\nWrote:")
    lines += [f"  {p}" for s in sections.values() for p in s.files.values()]
    lines.append(f"  {report}")
    print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--out", default="kpca-demo", help="output folder (default: kpca-demo)")
    p.add_argument("--quick", action="store_true", help="a smaller digits table")
    p.add_argument("--only", default=None, metavar="LIST",
                   help=f"comma-separated sections (default: all): {', '.join(SECTIONS)}")
    args = p.parse_args(argv)
    only = None if args.only is None else [k.strip() for k in args.only.split(",") if k.strip()]
    return demo(args.out, quick=args.quick, only=only)


if __name__ == "__main__":
    sys.exit(main())
