"""Check the links inside a built HTML site: each local link's page exists and, where
the link has a ``#fragment``, that page has an element with that id.

Usage (after a build)::

    python docs/_ext/check_anchors.py docs/_build/html

Prints each broken link (``page: href``) and exits with status 1 if there is one.
tests/test_docs.py runs :func:`broken_links` on the site it builds.
"""

from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

#: an element's id (Sphinx writes every attribute value in double quotes)
_ID = re.compile(r'<[a-zA-Z][^>]*?\s(?:id|name)="([^"]*)"')
#: a link's target
_HREF = re.compile(r'<a\s[^>]*?href="([^"]*)"')


class _Page(NamedTuple):
    """The ids and the link targets of one HTML page."""

    ids: set[str]
    hrefs: list[str]


def _parse(path: Path) -> _Page:
    text = path.read_text(encoding="utf-8", errors="replace")
    return _Page({html.unescape(i) for i in _ID.findall(text)},
                 [html.unescape(h) for h in _HREF.findall(text)])


def broken_links(site: str | Path) -> list[tuple[str, str]]:
    """The broken local links of the HTML site in ``site``: (page, href) pairs, for a
    link to a page that is not there or to a fragment that its page does not have."""
    root = os.path.abspath(site)
    pages = {os.path.normpath(str(p)): _parse(p) for p in Path(root).rglob("*.html")}
    broken = []
    for path, page in sorted(pages.items()):
        folder = os.path.dirname(path)
        for href in page.hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue  # another site
            target = (os.path.normpath(os.path.join(folder, unquote(parts.path)))
                      if parts.path else path)
            if target not in pages and os.path.isdir(target):
                target = os.path.join(target, "index.html")
            if not target.endswith(".html"):
                ok = os.path.exists(target)
            else:
                ok = target in pages and (not parts.fragment
                                          or unquote(parts.fragment) in pages[target].ids)
            if not ok:
                broken.append((os.path.relpath(path, root), href))
    return broken


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    broken = broken_links(argv[0])
    for page, href in broken:
        print(f"{page}: {href}")
    print(f"{len(broken)} broken link(s)", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
