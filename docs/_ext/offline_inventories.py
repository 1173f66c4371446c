"""Stand-in intersphinx inventories for builds that cannot reach the projects' sites.

Sphinx's intersphinx fetches ``objects.inv`` from each site in ``intersphinx_mapping``;
an offline build (CI here has no network but the package registries) would get no
inventory, hence no links and a warning, which ``-W`` turns into a failed build. This
extension gives each mapping a second location, tried only when the site cannot be
reached: an inventory written from the *installed* package's public API (``__all__`` of
its public modules, and the methods of their classes) and the site's URL scheme for
generated API pages. With network access the real inventory is used; offline, the links
point to the same pages.
"""

from __future__ import annotations

import inspect
import logging
import zlib
from collections.abc import Callable, Iterator
from importlib import import_module
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

Entry = tuple[str, str, str]  # (name, domain:role, uri)


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "py:class"
    if inspect.ismodule(obj):
        return "py:module"
    return "py:function" if callable(obj) else "py:data"


def _members(modname: str, names: list[str] | None = None) -> Iterator[tuple[str, Any]]:
    try:
        module = import_module(modname)
    except ImportError:
        return
    if names is None:
        names = getattr(module, "__all__", None) or [
            n for n in dir(module) if not n.startswith("_")]
    for name in names:
        try:
            obj = getattr(module, name, None)
        except ImportError:  # scikit-learn's experimental estimators, say
            continue
        if obj is not None and not inspect.ismodule(obj):
            yield name, obj


def _methods(cls: type) -> Iterator[str]:
    for name, member in vars(cls).items():
        if not name.startswith("_") and (inspect.isfunction(member) or isinstance(
                member, (classmethod, staticmethod, property))):
            yield name


def _generated(modules: list[str], page: Callable[[str], str], methods: bool = True,
               module_page: Callable[[str], str] | None = None) -> Iterator[Entry]:
    """Objects of ``modules`` documented on one generated page each (numpydoc sites)."""
    for modname in modules:
        if module_page is not None:
            yield modname, "py:module", f"{module_page(modname)}#module-{modname}"
        for name, obj in _members(modname):
            full = f"{modname}.{name}"
            yield full, _kind(obj), f"{page(full)}#{full}"
            if methods and inspect.isclass(obj):
                for meth in _methods(obj):
                    yield f"{full}.{meth}", "py:method", f"{page(full)}#{full}.{meth}"


def sklearn_entries() -> Iterator[Entry]:
    import sklearn

    modules = [f"sklearn.{m}" for m in sklearn.__all__ if not m.startswith("_")
               and m[0].islower() and "." not in m]
    yield "sklearn", "py:module", "api/index.html#module-sklearn"
    yield from _generated(modules, lambda full: f"modules/generated/{full}.html",
                          module_page=lambda mod: f"api/{mod}.html")
    for term, anchor in [("estimator", "term-estimator"), ("transformer", "term-transformer"),
                         ("array-like", "term-array-like"), ("pipeline", "term-Pipeline")]:
        yield term, "std:term", f"glossary.html#{anchor}"


def numpy_entries() -> Iterator[Entry]:
    import numpy as np

    yield "numpy", "py:module", "reference/index.html#module-numpy"
    scalars = {"float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
               "bool_", "complex64", "complex128", "generic", "number", "floating", "integer"}
    for name in dir(np):
        obj = getattr(np, name, None)
        if name.startswith("_") or inspect.ismodule(obj) or obj is None:
            continue
        if name in scalars:
            yield f"numpy.{name}", "py:class", f"reference/arrays.scalars.html#numpy.{name}"
        elif inspect.isclass(obj) or callable(obj):
            yield (f"numpy.{name}", _kind(obj),
                   f"reference/generated/numpy.{name}.html#numpy.{name}")
    for meth in (m for m in dir(np.ndarray) if not m.startswith("_")):
        full = f"numpy.ndarray.{meth}"
        yield full, "py:method", f"reference/generated/{full}.html#{full}"
    for sub in ("linalg", "fft"):
        for name, obj in _members(f"numpy.{sub}"):
            full = f"numpy.{sub}.{name}"
            yield full, _kind(obj), f"reference/generated/{full}.html#{full}"
    yield ("numpy.random.Generator", "py:class",
           "reference/random/generator.html#numpy.random.Generator")
    yield ("numpy.random.default_rng", "py:function",
           "reference/random/generator.html#numpy.random.default_rng")
    yield ("numpy.random.RandomState", "py:class",
           "reference/random/legacy.html#numpy.random.RandomState")
    yield "array_like", "std:term", "glossary.html#term-array_like"


def scipy_entries() -> Iterator[Entry]:
    modules = ["scipy.linalg", "scipy.sparse", "scipy.sparse.linalg", "scipy.spatial.distance",
               "scipy.special", "scipy.stats", "scipy.optimize", "scipy.cluster.vq"]
    yield "scipy", "py:module", "reference/index.html#module-scipy"
    yield from _generated(
        modules, lambda full: f"reference/generated/{full}.html", methods=False,
        module_page=lambda mod: f"reference/{mod.removeprefix('scipy.')}.html")


def dask_entries() -> Iterator[Entry]:
    yield "dask.array", "py:module", "array-api.html#module-dask.array"
    for name, obj in _members("dask.array", [n for n in dir(import_module("dask.array"))
                                             if not n.startswith("_")]):
        full = f"dask.array.{name}"
        yield full, _kind(obj), f"generated/{full}.html#{full}"
        if name == "Array":
            for meth in (m for m in dir(obj) if not m.startswith("_")):
                yield f"{full}.{meth}", "py:method", f"generated/{full}.{meth}.html#{full}.{meth}"
    for name in ("compute", "persist", "delayed", "config.set"):
        yield f"dask.{name}", "py:function", f"api.html#dask.{name}"


def distributed_entries() -> Iterator[Entry]:
    import distributed

    yield "distributed", "py:module", "api.html#module-distributed"
    for name in ("Client", "LocalCluster", "Future", "wait", "as_completed", "get_client",
                 "default_client"):
        obj = getattr(distributed, name, None)
        if obj is None:
            continue
        yield f"distributed.{name}", _kind(obj), f"api.html#distributed.{name}"
        if inspect.isclass(obj):
            for meth in _methods(obj):
                full = f"distributed.{name}.{meth}"
                yield full, "py:method", f"api.html#{full}"


def python_entries() -> Iterator[Entry]:
    for name in ("int", "float", "bool", "object", "type", "slice"):
        yield name, "py:class", f"library/functions.html#{name}"
    for name in ("None", "True", "False", "NotImplemented", "Ellipsis"):
        yield name, "py:data", f"library/constants.html#{name}"
    for name in ("callable", "len", "isinstance", "open", "print", "repr"):
        yield name, "py:function", f"library/functions.html#{name}"
    for name in ("str", "dict", "list", "tuple", "bytes", "set", "frozenset"):
        yield name, "py:class", f"library/stdtypes.html#{name}"
    for full, page in [("pathlib.Path", "pathlib"), ("os.PathLike", "os"),
                       ("logging.Logger", "logging"), ("collections.abc.Sequence",
                       "collections.abc"), ("collections.abc.Iterator", "collections.abc"),
                       ("collections.abc.Iterable", "collections.abc"),
                       ("collections.abc.Mapping", "collections.abc"),
                       ("collections.abc.Callable", "collections.abc"),
                       ("typing.Any", "typing"), ("io.TextIOBase", "io"),
                       ("argparse.ArgumentParser", "argparse"),
                       ("dataclasses.dataclass", "dataclasses")]:
        yield full, "py:class", f"library/{page}.html#{full}"
    for term in ("path-like object", "file object", "iterable", "iterator", "callable",
                 "context manager", "generator", "sequence", "mapping"):
        yield term, "std:term", f"glossary.html#term-{term.replace(' ', '-')}"
    # numpydoc's default type aliases refer to these
    yield "bltin-boolean-values", "std:label", "library/stdtypes.html#boolean-values"


ENTRIES: dict[str, Callable[[], Iterator[Entry]]] = {
    "python": python_entries,
    "numpy": numpy_entries,
    "scipy": scipy_entries,
    "sklearn": sklearn_entries,
    "dask": dask_entries,
    "distributed": distributed_entries,
}


def write_inventory(path: Path, project: str, entries: Iterator[Entry]) -> Path:
    """An ``objects.inv`` (format version 2) holding ``entries``."""
    seen = set()
    lines = []
    for name, role, uri in entries:
        if (name, role) in seen:
            continue
        seen.add((name, role))
        uri = uri.replace(f"#{name}", "#$") if uri.endswith(f"#{name}") else uri
        shown = name.replace("-", " ").title() if role == "std:label" else "-"
        lines.append(f"{name} {role} 1 {uri} {shown}\n")
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: \n"
              "# The remainder of this file is compressed using zlib.\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header.encode() + zlib.compress("".join(lines).encode()))
    return path


def _add_fallbacks(app: Any, config: Any) -> None:
    folder = Path(app.doctreedir) / "offline-inventories"
    mapping = {}
    for key, value in config.intersphinx_mapping.items():
        uri, locations = value
        if key not in ENTRIES:
            mapping[key] = value
            continue
        path = folder / f"{key}.inv"
        if not path.exists():
            try:
                write_inventory(path, key, ENTRIES[key]())
            except ImportError as exc:  # the package is not installed: no stand-in
                logger.info("no offline inventory for %s: %s", key, exc)
                mapping[key] = value
                continue
        first = locations if isinstance(locations, tuple) else (locations,)
        mapping[key] = (uri, (*first, str(path)))
    config.intersphinx_mapping = mapping


def setup(app: Any) -> dict[str, Any]:
    # before intersphinx normalises the mapping (priority 800)
    app.connect("config-inited", _add_fallbacks, priority=400)
    return {"parallel_read_safe": True, "version": "1"}
