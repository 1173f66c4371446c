"""The documentation site (docs/, Sphinx) builds with warnings as errors, and its API
reference covers every public object and every command of the command line.

The site is built once per test session, from a copy of docs/ in a temporary folder
(so that the build's generated pages stay out of the source tree), with the gallery in
its quick mode (``-D plot_gallery=0``: the pages of the examples are built, the examples
are not run; ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` runs
them, tests/test_examples.py tests them). About 20 s on an idle 2-core machine.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kpca
from kpca import cli
from kpca.demo import example_names

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
GENERATED = ("_build", "api/generated", "auto_examples", "sg_execution_times.rst")

for _name in ("sphinx", "numpydoc", "sphinx_gallery", "pydata_sphinx_theme", "myst_parser",
              "sphinxarg", "matplotlib"):
    pytest.importorskip(_name, reason=f"{_name} is needed to build the docs: "
                        "pip install -e '.[docs]'")


def _conf():
    """docs/conf.py as a module (its list of documented modules)."""
    spec = importlib.util.spec_from_file_location("kpca_docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site; the folder of its HTML pages."""
    assert (ROOT / "CHANGELOG.md").is_file(), "CHANGELOG.md (included by docs/changelog.md)"
    base = tmp_path_factory.mktemp("site")
    shutil.copytree(DOCS, base / "docs", ignore=lambda folder, names: [
        n for n in names if Path(folder, n).relative_to(DOCS).as_posix() in GENERATED])
    # what the pages include from the repository (a copy of the changelog, whose links
    # to docs/*.md must resolve inside the copied docs)
    (base / "examples").symlink_to(ROOT / "examples")
    shutil.copy(ROOT / "CHANGELOG.md", base / "CHANGELOG.md")
    out = base / "html"
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-D", "plot_gallery=0", str(base / "docs"), str(out)]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stderr[-8000:]}"
    return out


def _inventory(site: Path) -> dict[str, str]:
    """Every object the site documents: name -> role (from its objects.inv)."""
    from sphinx.util.inventory import InventoryFile

    with open(site / "objects.inv", "rb") as fh:
        inv = InventoryFile.load(fh, "", lambda base, uri: uri)
    data = inv.data if hasattr(inv, "data") else inv  # Sphinx >= 8.2: an _Inventory
    return {name: role for role, items in data.items() for name in items}


def _public_modules() -> list[str]:
    return ["kpca"] + sorted(
        m.name for m in pkgutil.walk_packages(kpca.__path__, "kpca.")
        if not any(part.startswith("_") for part in m.name.split(".")))


def test_api_reference_lists_every_public_module():
    """Every public module but the command line (documented by docs/api/cli.rst) has its
    page: a new module must be added to docs/conf.py's API_MODULES."""
    assert set(_conf().API_MODULES) == set(_public_modules()) - {"kpca.cli"}
    index = (DOCS / "api" / "index.rst").read_text(encoding="utf-8").splitlines()
    listed = [ln.strip() for ln in index if ln.startswith("   kpca")]
    assert listed == _conf().API_MODULES


def test_api_reference_documents_every_public_object(site):
    """Each name in the ``__all__`` of every public module (or, without ``__all__``,
    each class and function the module defines) is documented on the site: under that
    name, or under the name of the page that documents the same object (``kpca.io.save``
    is ``kpca.save``), or, for what kpca re-exports from scikit-learn, on its module's
    page with a link to scikit-learn's."""
    inventory = _inventory(site)
    documented = {}
    for name in inventory:
        if name.startswith("kpca.") and inventory[name].startswith("py:"):
            parent, _, attr = name.rpartition(".")
            try:
                documented[id(getattr(importlib.import_module(parent), attr))] = name
            except (ImportError, AttributeError):
                continue
    conf = _conf()
    missing = []
    for modname in conf.API_MODULES:
        assert inventory.get(modname) == "py:module", modname
        module = importlib.import_module(modname)
        page = (site / "api" / "generated" / f"{modname}.html").read_text(encoding="utf-8")
        for name in conf.public_names(modname):
            obj = getattr(module, name)
            full = f"{modname}.{name}"
            if full in inventory or id(obj) in documented:
                continue
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and \
                    not obj.__module__.startswith("kpca") and obj.__name__ in page:
                continue
            missing.append(full)
    assert not missing, f"public objects missing from the API reference: {missing}"
    # the methods of the estimators, inherited from the private base class, are there
    for method in ("fit", "transform", "inverse_transform", "denoise", "score_samples"):
        assert f"kpca.NystromKernelPCA.{method}" in inventory, method


def test_cli_reference_documents_every_command(site):
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    page = (site / "api" / "cli.html").read_text(encoding="utf-8")
    missing = [cmd for cmd in sub.choices if f'id="kpca-{cmd}"' not in page]
    assert not missing, f"commands missing from docs/api/cli.rst's page: {missing}"
    for flag in ("--estimator", "--n-landmarks", "--batch-size", "--fit-inverse"):
        assert flag in page, flag


def test_pages_link_to_the_projects_kpca_builds_on(site):
    """intersphinx: scikit-learn, NumPy, SciPy and Dask are links (offline too, through
    docs/_ext/offline_inventories.py)."""
    page = (site / "api" / "generated" / "kpca.KernelPCA.html").read_text(encoding="utf-8")
    for link in ("https://scikit-learn.org/stable/modules/generated/"
                 "sklearn.decomposition.KernelPCA.html",
                 "https://numpy.org/doc/stable/reference/generated/numpy.ndarray.html",
                 "https://docs.scipy.org/doc/scipy/reference/",
                 "https://docs.dask.org/en/stable/"):
        assert f'href="{link}' in page, link


def test_site_has_the_guide_gallery_math_benchmarks_and_changelog(site):
    for page in ("guide", "preimages", "robust", "scaling", "behaviour", "math", "benchmarks",
                 "changelog", "api/index", "api/cli", "auto_examples/index"):
        assert (site / f"{page}.html").is_file(), page


def test_the_gallery_is_the_examples_folder(site):
    """Every script examples/plot_*.py is a page of the gallery (a new one too: no list
    to add it to), with a thumbnail on the gallery's index and on the home page, in the
    order of kpca demo's report."""
    conf = _conf().sphinx_gallery_conf
    assert (DOCS / conf["examples_dirs"]).resolve() == ROOT / "examples"
    names = example_names(ROOT / "examples")
    assert len(names) >= 7
    for name in names:
        script = f"/plot_{name}.py"
        assert re.search(conf["filename_pattern"], script), name  # run, not only shown
        assert not re.search(conf["ignore_pattern"], script), name
        assert (site / "auto_examples" / f"plot_{name}.html").is_file(), name
    assert re.search(conf["ignore_pattern"], "/_helpers.py")
    for page in ("auto_examples/index.html", "index.html"):
        html = (site / page).read_text(encoding="utf-8")
        links = re.findall(r'<div class="sphx-glr-thumbcontainer".*?href="([^"#]+)', html,
                           re.S)
        assert [Path(link).stem for link in links] == [f"plot_{n}" for n in names], page
    assert not list(site.rglob("*run_section*"))


def test_no_link_of_the_site_is_broken(site):
    """Every local link's page exists and has the link's anchor (the "[docs]" links of
    the source pages included, docs/conf.py's _viewcode_anchors)."""
    spec = importlib.util.spec_from_file_location("check_anchors",
                                                  DOCS / "_ext" / "check_anchors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.broken_links(site) == []


def test_home_page_lists_every_extra():
    """docs/index.md names each optional extra of pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = re.findall(r"^([a-z][\w-]*) = \[", block, re.M)
    assert {"io", "plot", "dask", "progress", "array", "all"} <= set(extras)
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    missing = [e for e in extras if f"`{e}`" not in index]
    assert not missing, f"docs/index.md does not list the extras {missing}"
