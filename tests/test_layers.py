"""The layers of src/kpca talk through each other's public names (issue 32).

A layer is a subpackage of kpca (``kpca.kernels``, ``kpca.robust``, ...) or a module
directly under ``kpca/`` (``kpca._kernel_pca``, ``kpca.subspace``, ...). Reading the
source's syntax trees (no import), this test fails when a module

* imports a private name (a leading underscore, not a dunder) from another layer: a
  private function or class, or a private submodule of a subpackage
  (``from ..kernels._device import device_block`` reaches into ``kernels``), or reads a
  private attribute of another layer's module it imported (``_tiled._sgemm``); or
* defines a class that overrides a private, non-abstract method of a class in another
  layer (a method decorated ``@abstractmethod``, or whose body only raises
  ``NotImplementedError``, is abstract: it is there to be overridden).

Today's violations are listed below, each with what it is: the list is a ratchet. It
must only shrink: a new violation fails, and so does a listed one that is gone (delete
its line, so the list stays exact).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "kpca"

#: private names imported (or read) across layers: (importing module, the name's path)
ALLOWED_IMPORTS: set = set()

#: private methods overridden across layers: (overriding class, overridden method)
ALLOWED_OVERRIDES: set = set()


# ----------------------------------------------------------------------- the source
def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(name: str) -> str:
    """``kpca.robust._robpca`` -> ``kpca.robust``; ``kpca._kernel_pca`` stays."""
    return ".".join(name.split(".")[:2])


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


class _Module:
    def __init__(self, path: Path, root: Path):
        self.name = _module_name(path, root)
        self.is_package = path.name == "__init__.py"
        self.tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.imports: dict[str, str] = {}  # local name -> full dotted name (any depth)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom):
                source = self.resolve(node)
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[alias.asname] = alias.name

    def resolve(self, node: ast.ImportFrom) -> str:
        """The absolute module of a ``from ... import``."""
        if not node.level:
            return node.module or ""
        base = self.name.split(".")
        if not self.is_package:
            base.pop()
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))


def _modules(root: Path = SRC) -> dict[str, _Module]:
    mods = [_Module(p, root) for p in sorted(root.rglob("*.py"))]
    return {m.name: m for m in mods}


def _private_part(full: str) -> bool:
    """Whether a dotted path below its layer has a private component."""
    return any(_private(part) for part in full.split(".")[2:])


def _cross_layer_imports(modules: dict[str, _Module]) -> set[tuple[str, str]]:
    found = set()
    for mod in modules.values():
        here = _layer(mod.name)
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.ImportFrom):
                source = mod.resolve(node)
                if not source.startswith("kpca"):
                    continue
                for alias in node.names:
                    # `from kpca import _native` names a layer: nothing below it
                    full = f"{source}.{alias.name}"
                    if _layer(full) != here and _private_part(full):
                        found.add((mod.name, full))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.name.startswith("kpca.") and _layer(alias.name) != here
                            and _private_part(alias.name)):
                        found.add((mod.name, alias.name))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                # a private attribute of another layer's module (`_tiled._sgemm`)
                target = mod.imports.get(node.value.id)
                if (target in modules and _layer(target) != here and _private(node.attr)):
                    found.add((mod.name, f"{target}.{node.attr}"))
    return found


# ----------------------------------------------------------------------- the classes
def _find_class(modules: dict[str, _Module], full: str, depth: int = 0) -> str | None:
    """The ``module.Class`` that the dotted name ``full`` denotes, following imports
    and re-exports (and the lazy names of kpca/__init__); None outside kpca."""
    module, _, name = full.rpartition(".")
    mod = modules.get(module)
    if mod is None or depth > 10:
        return None
    if name in mod.classes:
        return full
    if name in mod.imports:
        return _find_class(modules, mod.imports[name], depth + 1)
    lazy = _lazy_names(mod)
    if name in lazy:
        return _find_class(modules, f"{lazy[name]}.{name}", depth + 1)
    return None


def _lazy_names(mod: _Module) -> dict[str, str]:
    """PEP 562 names of a package: a module-level ``_WHERE = {"Name": ".module"}``."""
    for node in mod.tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(isinstance(t, ast.Name) and t.id == "_WHERE" for t in node.targets)):
            return {k.value: mod.name + v.value for k, v in zip(node.value.keys, node.value.values,
                                                                strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)}
    return {}


def _bases(modules: dict[str, _Module], full: str) -> list[str]:
    module, _, name = full.rpartition(".")
    mod = modules[module]
    out = []
    for base in mod.classes[name].bases:
        if isinstance(base, ast.Name):
            dotted = (f"{module}.{base.id}" if base.id in mod.classes
                      else mod.imports.get(base.id, ""))
        elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            dotted = f"{mod.imports.get(base.value.id, '')}.{base.attr}"
        else:
            continue
        found = _find_class(modules, dotted) if dotted else None
        if found:
            out.append(found)
    return out


def _methods(modules: dict[str, _Module], full: str) -> dict[str, ast.FunctionDef]:
    module, _, name = full.rpartition(".")
    return {n.name: n for n in modules[module].classes[name].body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _abstract(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        if (isinstance(dec, ast.Name) and dec.id == "abstractmethod") or (
                isinstance(dec, ast.Attribute) and dec.attr == "abstractmethod"):
            return True
    body = [s for s in fn.body if not (isinstance(s, ast.Expr)
                                        and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.Raise):
        exc = body[0].exc
        exc = exc.func if isinstance(exc, ast.Call) else exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def _cross_layer_overrides(modules: dict[str, _Module]) -> set[tuple[str, str]]:
    found = set()
    for mod in modules.values():
        for cls in mod.classes:
            full = f"{mod.name}.{cls}"
            for method in _methods(modules, full):
                if not _private(method):
                    continue
                owner = _first_definer(modules, _bases(modules, full), method)
                if owner is None or _layer(owner) == _layer(full):
                    continue
                if not _abstract(_methods(modules, owner)[method]):
                    found.add((full, f"{owner}.{method}"))
    return found


def _first_definer(modules: dict[str, _Module], bases: list[str], method: str) -> str | None:
    """The first kpca class up the bases (depth first, left to right, as the MRO of
    kpca's single-inheritance chains) that defines ``method``."""
    for base in bases:
        if method in _methods(modules, base):
            return base
        up = _first_definer(modules, _bases(modules, base), method)
        if up is not None:
            return up
    return None


# ----------------------------------------------------------------------- the tests
def _report(found: set, allowed: set, what: str) -> str:
    new, gone = sorted(found - allowed), sorted(allowed - found)
    lines = [f"{what}:"]
    lines += [f"  new (use a public name, or a public method or strategy): {v}" for v in new]
    lines += [f"  no longer there (delete it from the allow-list): {v}" for v in gone]
    return "\n".join(lines)


def test_no_module_imports_a_private_name_of_another_layer():
    found = _cross_layer_imports(_modules())
    assert found == ALLOWED_IMPORTS, _report(found, ALLOWED_IMPORTS,
                                             "private names across layers")


def test_no_class_overrides_a_private_method_of_another_layer():
    found = _cross_layer_overrides(_modules())
    assert found == ALLOWED_OVERRIDES, _report(found, ALLOWED_OVERRIDES,
                                               "private methods overridden across layers")


def test_the_walk_sees_what_it_must(tmp_path):
    """The checks themselves catch each kind of violation: a private import, a private
    submodule, a private module attribute, and an override across layers; and let an
    abstract method, a same-layer import and the layer modules' own names through."""
    pkg = tmp_path / "kpca"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_util.py").write_text("def _helper():\n    pass\n\ndef public():\n    pass\n")
    (pkg / "low" / "__init__.py").write_text("from ._impl import Base\n")
    (pkg / "low" / "_impl.py").write_text(
        "from abc import abstractmethod\n"
        "from .._util import public\n"
        "class Base:\n"
        "    def _hook(self):\n        return 1\n"
        "    @abstractmethod\n    def _must(self):\n        ...\n"
        "    def _todo(self):\n        raise NotImplementedError\n"
        "class Same(Base):\n    def _hook(self):\n        return 2\n")
    (pkg / "high.py").write_text(
        "from . import _util\n"
        "from ._util import _helper\n"
        "from .low._impl import Base as B\n"
        "from .low import Base\n"
        "x = _util._helper\n"
        "class Mine(Base):\n"
        "    def _hook(self):\n        return 3\n"
        "    def _must(self):\n        return 4\n"
        "    def _todo(self):\n        return 5\n"
        "    def __repr__(self):\n        return ''\n")
    mods = _modules(pkg)
    imports, overrides = _cross_layer_imports(mods), _cross_layer_overrides(mods)
    assert imports == {("kpca.high", "kpca._util._helper"),
                       ("kpca.high", "kpca.low._impl.Base")}
    assert overrides == {("kpca.high.Mine", "kpca.low._impl.Base._hook")}


# ----------------------------------------------------------------------- class sizes
def _class_lines(path: Path, name: str) -> int:
    """Lines of ``class name`` in ``path``, its docstring included (the AST's
    ``ClassDef.lineno`` to ``end_lineno``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return node.end_lineno - node.lineno + 1


def test_the_kernel_pca_class_is_at_most_300_lines(tmp_path):
    """Issue 32: KernelPCA is a short composition of the fit pipeline (kpca._fit): its
    steps (planning, input checks, the learned pre-image, the influence) live in their
    layers. The count is checked on a class of known size first."""
    probe = tmp_path / "probe.py"
    probe.write_text('import os\n\n\nclass A:\n    """Doc.\n\n    More."""\n\n'
                     '    def f(self):\n        return os\n\n\nx = 1\n')
    assert _class_lines(probe, "A") == 7
    lines = _class_lines(SRC / "_kernel_pca.py", "KernelPCA")
    assert lines <= 300, f"class KernelPCA spans {lines} lines; at most 300 (issue 32)"
