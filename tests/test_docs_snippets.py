"""Every code block of README.md and docs/*.md runs, so the documentation cannot drift
from the code.

The fenced blocks are extracted from the Markdown and run in order, one file at a time,
in a temporary folder:

* ```` ```python ```` blocks with :func:`exec`, in one namespace per file (a page is read
  top to bottom, so a block may use what an earlier block of the same page defined);
* ```` ```bash ```` blocks line by line: each line must be a ``kpca`` command, run through
  :func:`kpca.cli.main` in this process, and must exit with status 0. The files the
  commands read (``data.csv``, ``labels.txt``, ``day1.csv``, ...) are small tables made
  by :func:`_fixture_files`, which stand for the reader's own data;
* ```` ```text ```` blocks are output, not code, and are not run.

A block that cannot run here (it installs packages, needs a cluster, runs for minutes)
carries a marker on the line before its fence, with the reason::

    <!-- snippet: not run (installs kpca and runs the test suite) -->

Such blocks are not dropped silently: the scripts they name must exist, and
:data:`NOT_RUN` counts them, so marking another block
is a visible change to this file.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from markdown_it import MarkdownIt

from kpca import cli

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: code blocks marked "not run" in README.md and docs/*.md
NOT_RUN = 62

MARKER = re.compile(r"^<!--\s*snippet:\s*not run\s*\((?P<reason>.+)\)\s*-->$")
RUN = {"python", "bash"}
NOT_CODE = {"text"}


@dataclass
class Block:
    """One fenced code block of a Markdown page."""

    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    not_run: str | None  # the marker's reason

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The code blocks of ``page``, in order, as a CommonMark parser (markdown-it-py,
    MyST's) sees them. An indented code block has the language ``"indented"``: it cannot
    say what it holds, so it fails :func:`test_every_block_is_code_to_run_or_marked_output`.
    The fences of MyST directives (```` ```{toctree} ````) are not code and are left out."""
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    out = []
    for i, tok in enumerate(tokens):
        if tok.type not in ("fence", "code_block") or tok.info.startswith("{"):
            continue
        prev = tokens[i - 1] if i else None
        marker = (MARKER.match(prev.content.strip())
                  if prev is not None and prev.type == "html_block" else None)
        lang = tok.info.split()[0] if tok.type == "fence" and tok.info.strip() else (
            "indented" if tok.type == "code_block" else "")
        out.append(Block(page, tok.map[0] + 1, lang, tok.content,
                         marker["reason"] if marker else None))
    return out


ALL = [b for page in PAGES for b in blocks(page)]


def test_every_block_is_code_to_run_or_marked_output():
    """A fence without a language, or with one this test does not run, or an indented
    code block, would be a block that no test runs: each must be fenced and say
    ``python``, ``bash`` or ``text`` (output, formulas)."""
    bad = [f"{b.where} ({b.lang or 'no language'})" for b in ALL
           if b.lang not in RUN | NOT_CODE]
    assert not bad, f"code blocks of no language this test runs: {bad}"
    assert sum(b.lang in RUN for b in ALL) > 20
    stray = [b.where for b in ALL if b.not_run and b.lang not in RUN]
    assert not stray, f"'not run' markers on blocks that are not code: {stray}"


def test_blocks_marked_not_run_are_counted():
    marked = [f"{b.where}: {b.not_run}" for b in ALL if b.not_run]
    assert len(marked) == NOT_RUN, (
        "the blocks marked 'not run' changed; update NOT_RUN if that is intended:\n"
        + "\n".join(marked))


@pytest.mark.parametrize("block", [b for b in ALL if b.not_run], ids=lambda b: b.where)
def test_scripts_of_blocks_marked_not_run_exist(block):
    """A block too long to run (a benchmark) still names scripts that exist."""
    scripts = re.findall(r"(?:benchmarks|examples|docs)/[\w/.-]+\.py", block.code)
    missing = [s for s in scripts if not (ROOT / s).is_file()]
    assert not missing, f"{block.where} names scripts that do not exist: {missing}"


# ----------------------------------------------------------------------------- running
def _fixture_files(folder: Path) -> None:
    """The reader's data in the docs' commands: small tables of the right shapes."""
    rng = np.random.default_rng(0)

    def circles(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(0, 2, n)
        t = rng.uniform(0, 2 * np.pi, n)
        r = np.where(y == 0, 1.0, 0.3)
        X = np.column_stack([r * np.cos(t), r * np.sin(t)]) + rng.normal(0, 0.05, (n, 2))
        return X, y

    def csv(name: str, X: np.ndarray) -> None:
        header = ",".join(f"x{j}" for j in range(X.shape[1]))
        np.savetxt(folder / name, X, delimiter=",", header=header, comments="", fmt="%.6f")

    X, y = circles(200)
    csv("data.csv", X)
    (folder / "labels.txt").write_text("\n".join(map(str, y)) + "\n")
    csv("new.csv", circles(20)[0])
    csv("noisy.csv", X[:30] + rng.normal(0, 0.1, (30, 2)))
    csv("day1.csv", circles(300)[0])
    csv("day2.csv", circles(200)[0])
    words = "the cat sat on a mat while the dog lay by the log in the sun".split()
    (folder / "docs.txt").write_text(
        "\n".join(" ".join(rng.choice(words, 12)) for _ in range(30)) + "\n")
    pd = pytest.importorskip("pandas")
    pd.DataFrame(rng.normal(size=(1500, 4)), columns=[f"x{j}" for j in range(4)]).to_parquet(
        folder / "big.parquet")


def _commands(code: str) -> list[str]:
    """The command lines of a bash block (``\\`` continuations joined, comments dropped)."""
    text = re.sub(r"\\\n", " ", code)
    return [ln for ln in (ln.split(" #")[0].strip() for ln in text.splitlines())
            if ln and not ln.startswith("#")]


def _run_bash(block: Block) -> None:
    for line in _commands(block.code):
        argv = shlex.split(line, comments=True)
        assert argv[0] == "kpca", (
            f"{block.where}: {line!r} is not a kpca command; mark the block "
            "'<!-- snippet: not run (reason) -->' if it cannot run in a test")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(argv[1:])
            except SystemExit as exc:  # argparse: a bad flag
                status = exc.code
        assert status == 0, f"{block.where}: {line!r} exited {status}:\n{err.getvalue()}"


def _run_python(block: Block, namespace: dict) -> None:
    code = compile(block.code, f"{block.where}", "exec")
    try:
        exec(code, namespace)
    except Exception as exc:
        raise AssertionError(f"{block.where} failed: {exc!r}\n{block.code}") from exc


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in PAGES if any(
    b.lang in RUN and not b.not_run for b in blocks(p))], ids=_page_id)
def test_page_code_blocks_run(page, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    _fixture_files(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a snippet's warnings are not its failure
        for block in blocks(page):
            if block.not_run or block.lang not in RUN:
                continue
            if block.lang == "python":
                _run_python(block, namespace)
            else:
                _run_bash(block)
    import matplotlib.pyplot as plt

    plt.close("all")
