"""Sphinx configuration of the kpca documentation site.

Build it (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

``-D plot_gallery=0`` skips running the gallery's examples (what the test suite's build
does, ``tests/test_docs.py``); the site is then complete but for the examples' figures
and output.
"""

from __future__ import annotations

import inspect
import re
import sys
from importlib import import_module
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import kpca  # noqa: E402

project = "kpca"
author = "the kpca developers"
copyright = "the kpca developers"
release = kpca.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
    "sphinxarg.ext",
    "offline_inventories",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5"]

# -- Markdown pages (myst-parser) ----------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
# GitHub's anchors, so that links like guide.md#5-from-the-command-line work on both
myst_heading_anchors = 3

# -- API reference: autodoc + autosummary + numpydoc ----------------------------------------
autosummary_generate = True
autodoc_typehints = "none"           # numpydoc's "Parameters" give the types
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False  # autodoc documents the members on the class page
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = True
numpydoc_xref_aliases = {
    "ndarray": "numpy.ndarray",
    "array-like": ":term:`array-like <numpy:array_like>`",
    "array_like": ":term:`array_like <numpy:array_like>`",
    "sparse matrix": "scipy.sparse.spmatrix",
    "Generator": "numpy.random.Generator",
    "RandomState": "numpy.random.RandomState",
    "dask array": "dask.array.Array",
    "Client": "distributed.Client",
    "Path": "pathlib.Path",
    "path-like": ":term:`path-like <python:path-like object>`",
    "estimator": "sklearn.base.BaseEstimator",
}
numpydoc_xref_ignore = {
    "of", "or", "and", "optional", "default", "shape", "to", "the", "a", "an", "with",
    "in", "from", "by", "for", "float64", "float32", "None", "each", "one", "per", "same",
    "as", "n_samples", "n_features", "n_components", "k", "n", "m", "d", "is", "int64",
}

#: the documented modules, in the order of the API index; each public object is
#: documented once, on the page of the first module in this list that exports it
API_MODULES = [
    "kpca", "kpca.subspace", "kpca.diagnostics", "kpca.io", "kpca.demo", "kpca.kernels",
    "kpca.text", "kpca.selection", "kpca.plotting", "kpca.datasets", "kpca.preimage",
    "kpca.robust", "kpca.approx", "kpca.distributed", "kpca.operators", "kpca.solvers",
]


def public_names(modname: str) -> list[str]:
    """A module's public objects: its ``__all__`` (less submodules and dunders), or
    the classes and functions it defines."""
    module = import_module(modname)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items()
                 if (inspect.isclass(obj) or inspect.isfunction(obj))
                 and getattr(obj, "__module__", "") == modname]
    return [n for n in names if not n.startswith("_")
            and not inspect.ismodule(getattr(module, n))]


def _defined_in_kpca(obj: object) -> bool:
    return (getattr(obj, "__module__", None) or "kpca").split(".")[0] == "kpca"


def _api_index() -> dict[str, dict]:
    """For each module: its own objects by kind, and those documented on an earlier page."""
    home: dict[int, str] = {}
    index = {}
    for modname in API_MODULES:
        module = import_module(modname)
        own: dict[str, list[str]] = {"Classes": [], "Functions": [], "Constants": []}
        shared = []
        for name in public_names(modname):
            obj = getattr(module, name)
            key = id(obj) if inspect.isclass(obj) or inspect.isfunction(obj) else None
            if key is not None and key in home:
                shared.append(home[key])
                continue
            if key is not None and not _defined_in_kpca(obj):  # e.g. scikit-learn's
                shared.append(f"{obj.__module__.split('._')[0]}.{obj.__name__}")
                continue
            if key is not None:
                home[key] = f"{modname}.{name}"
            kind = ("Classes" if inspect.isclass(obj) else
                    "Functions" if callable(obj) else "Constants")
            own[kind].append(name)
        index[modname] = {"own": {k: v for k, v in own.items() if v}, "shared": shared}
    return index


API = _api_index()
autosummary_context = {"kpca_api": API}

# -- Cross-links to the projects kpca builds on ---------------------------------------------
# Each inventory is fetched from its site; where that site cannot be reached (an offline
# build, CI), offline_inventories.py writes a stand-in from the installed package's public
# API and the site's URL scheme, so the links are the same either way.
intersphinx_mapping = {
    "python": ("https://docs.python.org/3/", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
    "dask": ("https://docs.dask.org/en/stable/", None),
    "distributed": ("https://distributed.dask.org/en/stable/", None),
}
intersphinx_timeout = 10

# -- The gallery: the scripts examples/plot_*.py themselves --------------------------------
# Every examples/plot_*.py is a page (and runs, unless -D plot_gallery=0), in the order of
# kpca demo's report (docs/_ext/gallery_order.py); files starting with "_" are not pages.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"(__init__|/_\w*)\.py$",
    "within_subsection_order": "gallery_order.DemoOrder",
    "minigallery_sort_order": "gallery_order.minigallery_key",
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "doc_module": ("kpca",),
    # where the minigalleries (the home page's thumbnails) look the examples up
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"kpca": None},
    # a cell that ends with a table (a pandas DataFrame) shows it as an HTML table;
    # kpca.demo shows the same values as text (kpca.demo._shown)
    "capture_repr": ("_repr_html_",),
    "abort_on_example_error": True,
    "write_computation_times": False,
}

# -- HTML -----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"kpca {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],  # none on the gallery's pages (_wide_gallery)
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "changelog": []}
html_static_path: list[str] = []
html_show_sourcelink = False


#: scikit-learn's metadata-routing methods, which every estimator (and kernel) inherits or
#: gets generated: documented by scikit-learn, not here
_SKLEARN_MEMBERS = re.compile(r"^(set_\w+_request|get_metadata_routing)$")


#: a numpydoc parameter line, ``name : type``
_TYPE_LINE = re.compile(r"^(\s*\w[\w, ]* : )(.+)$")


def _escape_types(app, what, name, obj, options, lines):
    """Escape what reST would read as markup in the types of numpydoc's parameter lines:
    ``(n_components_,)`` (a trailing underscore is a link) and ``'*.txt'`` (emphasis).
    Runs before numpydoc turns the types into cross-references."""
    for i, line in enumerate(lines):
        m = _TYPE_LINE.match(line)
        if m and "`" not in m[2]:
            kind = re.sub(r"(\w)_(?=,?\))", r"\1\\_", m[2]).replace("*", "\\*")
            lines[i] = m[1] + kind


def _skip_member(app, what, name, obj, skip, options):
    if _SKLEARN_MEMBERS.match(name):
        return True
    return None


def _viewcode_anchors(app, doctree, docname):
    """Give each documented object the id that its "[docs]" link on the source pages
    points to. viewcode names every object of a source module after the first page
    that documented one of them: the functions of ``kpca.robust._weighted`` link to
    ``#kpca.campbell_weights`` because ``kpca.WeightedKernelPCA``, defined there, was
    read first. The page of ``kpca.robust.campbell_weights`` gets that id too."""
    from sphinx import addnodes
    from sphinx.ext.viewcode import _get_full_modname

    modules = getattr(app.env, "_viewcode_modules", {})
    for signode in doctree.findall(addnodes.desc_signature):
        modname, fullname = signode.get("module"), signode.get("fullname")
        if not modname or not fullname:
            continue
        entry = modules.get(_get_full_modname(modname, fullname) or "")
        if entry and entry[3] != modname:
            alias = f"{entry[3]}.{fullname}"
            if alias not in signode["ids"]:
                signode["ids"].append(alias)


def _wide_gallery(app, pagename, templatename, context, doctree):
    """The gallery's pages without the right-hand sidebar: their code and tables get
    its width (runs after the theme has set the sidebar's items)."""
    if pagename.startswith("auto_examples/"):
        context["secondary_sidebar_items"] = []


def setup(app):
    app.connect("html-page-context", _wide_gallery, priority=900)
    app.connect("doctree-resolved", _viewcode_anchors)
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _escape_types, priority=400)
