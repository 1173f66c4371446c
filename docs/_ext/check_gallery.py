"""Check the gallery's pages of a full build (the examples run): each page shows the
figures its script made (files present), its tables as HTML tables, and no code or
output block wider than the page (``WIDTH`` characters).

Usage (after ``python -m sphinx -W --keep-going -b html docs docs/_build/html``)::

    python docs/_ext/check_gallery.py docs/_build/html [--screenshots DIR]

``--screenshots DIR`` also saves a screenshot of each page (and of the home page) with
a headless Chromium (``chromium`` on the PATH; Debian's package ``chromium``), to look
at. Exits with status 1 when a page fails a check.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: the characters of code or output that fit the gallery's pages at 1280 pixels
WIDTH = 88


def _widest(blocks: list[str]) -> int:
    lines = (html.unescape(re.sub(r"<[^>]+>", "", ln)) for b in blocks for ln in b.splitlines())
    return max(map(len, lines), default=0)


def check_page(path: Path) -> list[str]:
    """The problems of one gallery page."""
    text = path.read_text(encoding="utf-8")
    problems = []
    images = [i for i in re.findall(r'<img[^>]*src="([^"]+)"', text) if "sphx_glr" in i]
    if not images:
        problems.append("no figure")
    problems += [f"missing figure {i}" for i in images if not (path.parent / i).is_file()]
    if "plt.show()" in text and not images:
        problems.append("plt.show() without a figure")
    outputs = re.findall(r'<div class="sphx-glr-script-out[^"]*">.*?<pre>(.*?)</pre>', text,
                         re.S)
    code = re.findall(r'<div class="highlight-Python notranslate"><div class="highlight">'
                      r"<pre>(.*?)</pre>", text, re.S)
    for what, blocks in (("output", outputs), ("code", code)):
        if _widest(blocks) > WIDTH:
            problems.append(f"{what} {_widest(blocks)} characters wide (> {WIDTH})")
    if re.search(r"<pre>[^<]*\|---", text):
        problems.append("a Markdown table in a text box")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("site", type=Path)
    p.add_argument("--screenshots", type=Path, default=None, metavar="DIR")
    args = p.parse_args(argv)
    pages = sorted((args.site / "auto_examples").glob("plot_*.html"))
    failed = 0
    for page in pages:
        problems = check_page(page)
        failed += bool(problems)
        print(f"{page.name}: {'; '.join(problems) or 'ok'}")
    if args.screenshots is not None:
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if browser is None:
            print("no chromium on the PATH: no screenshots", file=sys.stderr)
            return 1
        args.screenshots.mkdir(parents=True, exist_ok=True)
        for page in [args.site / "index.html", *pages]:
            shot = args.screenshots / f"{page.stem}.png"
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", "--window-size=1280,4200",
                            f"--screenshot={shot}", page.resolve().as_uri()],
                           capture_output=True, timeout=120, check=False)
            print(f"screenshot {shot}")
    return 1 if failed or not pages else 0


if __name__ == "__main__":
    sys.exit(main())
