"""Generate the API reference (docs/api/*.md) from the docstrings.

Standard library only (inspect): one Markdown page per public module, with the
signature and docstring of every public class, method and function. Run from
the repository root after changing a docstring::

    python docs/build_api.py           # write docs/api/*.md
    python docs/build_api.py --check   # exit 1 if a page is out of date

The output is committed, so the reference can be read on the web without
building anything.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

#: modules documented, in the order of the index
MODULES = [
    ("kpca", "the six estimators, save and load"),
    ("kpca.subspace", "the fitted subspace every estimator produces"),
    ("kpca.diagnostics", "outlier and influence diagnostics"),
    ("kpca.io", "tables, streamed rows and model files"),
    ("kpca.demo", "the demo runner"),
    ("kpca.kernels", "kernels"),
    ("kpca.text", "text and stylometry"),
    ("kpca.selection", "choosing the kernel and its parameters"),
    ("kpca.plotting", "plots"),
    ("kpca.datasets", "example data sets"),
    ("kpca.preimage", "pre-images"),
    ("kpca.robust", "robust kernel PCA"),
    ("kpca.approx", "approximations for large n"),
    ("kpca.distributed", "Dask: kernel PCA on a cluster"),
    ("kpca.operators", "kernel operators"),
    ("kpca.solvers", "eigensolvers"),
]

OUT = Path(__file__).resolve().parent / "api"


def _signature(obj: object) -> str:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def _doc(obj: object) -> str:
    doc = inspect.getdoc(obj) or "*(no docstring)*"
    # numpy-style section underlines render as horizontal rules in Markdown: make
    # the section names bold instead
    lines = doc.splitlines()
    out = []
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and set(nxt.strip()) == {"-"} and len(nxt.strip()) >= 3:
            out.append(f"**{line.strip()}**")
            continue
        if set(line.strip()) == {"-"} and len(line.strip()) >= 3 and i > 0:
            continue
        out.append(line)
    return "\n".join(out)


def _public_names(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:  # only what the module itself defines, not what it imports
        modname = module.__name__
        names = [
            n for n, obj in vars(module).items()
            if not n.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and (getattr(obj, "__module__", "") or "").startswith(modname)
        ]
    return [n for n in names if not n.startswith("_")]


def _stable_repr(obj: object) -> str:
    """``repr`` without memory addresses, so the pages are the same on every run:
    ``<function dense_eigsh at 0x7f...>`` becomes ``dense_eigsh``."""
    text = re.sub(r"<(?:function|class|built-in function) '?([\w.]+)'?(?: at 0x[0-9a-f]+)?>",
                  r"\1", repr(obj))
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _fence(text: str) -> str:
    return f"```python\n{text}\n```"


def document_class(name: str, cls: type) -> str:
    parts = [f"### class `{name}`", _fence(f"{name}{_signature(cls)}"), _doc(cls)]
    for attr, member in sorted(vars(cls).items()):
        if attr.startswith("_") or not (inspect.isfunction(member) or
                                        isinstance(member, (classmethod, staticmethod))):
            continue
        func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
        parts += [f"#### `{name}.{attr}`", _fence(f"{attr}{_signature(func)}"), _doc(func)]
    return "\n\n".join(parts)


def document_module(modname: str, title: str) -> str | None:
    try:
        module = importlib.import_module(modname)
    except ImportError as exc:
        print(f"skipping {modname}: {exc}", file=sys.stderr)
        return None
    parts = [f"# `{modname}` — {title}", inspect.getdoc(module) or ""]
    for name in _public_names(module):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            parts.append(document_class(name, obj))
        elif inspect.isfunction(obj):
            parts += [f"### `{name}`", _fence(f"{name}{_signature(obj)}"), _doc(obj)]
        elif not callable(obj) and name.isupper() or name in ("KERNELS", "GAMMA_HEURISTICS"):
            parts += [f"### `{name}`", _fence(f"{name} = {_stable_repr(obj):.300}")]
    return "\n\n".join(parts) + "\n"


def document_cli() -> str:
    """The ``--help`` text of ``kpca`` and of every command."""
    import argparse
    import contextlib
    import io
    import os

    from kpca.cli import build_parser

    os.environ["COLUMNS"] = "88"  # stable line wrapping of the help texts
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["# `kpca` — the command line",
             "Generated from the argument parser (`kpca COMMAND --help` prints the same). "
             "Exit status: 0 success, 2 usage or input error, 1 other failure; errors are "
             "one line on standard error starting with `kpca: error:`.",
             "```text\n" + parser.format_help().rstrip() + "\n```"]
    for name, p in sub.choices.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            p.print_help()
        parts += [f"## `kpca {name}`", "```text\n" + buf.getvalue().rstrip() + "\n```"]
    return "\n\n".join(parts) + "\n"


def generate() -> dict[str, str]:
    """Every page of the reference: file name -> Markdown text."""
    pages: dict[str, str] = {}
    index = ["# API reference", "",
             "Generated from the docstrings by `python docs/build_api.py`.", ""]
    for modname, title in MODULES:
        text = document_module(modname, title)
        if text is None:
            continue
        page = f"{modname}.md"
        pages[page] = text
        index.append(f"- [`{modname}`]({page}) — {title}")
    pages["cli.md"] = document_cli()
    index.append("- [`kpca` command line](cli.md) — every command and flag")
    pages["index.md"] = "\n".join(index) + "\n"
    return pages


def main(argv: list[str] | None = None) -> int:
    """Write docs/api/*.md; with ``--check``, only report the pages that are stale."""
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    pages = generate()
    if "--check" in argv:
        stale = [name for name, text in pages.items()
                 if not (OUT / name).exists()
                 or (OUT / name).read_text(encoding="utf-8") != text]
        for name in stale:
            print(f"stale: docs/api/{name}")
        if stale:
            print("run: python docs/build_api.py")
        return 1 if stale else 0
    OUT.mkdir(exist_ok=True)
    for name, text in pages.items():
        (OUT / name).write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
