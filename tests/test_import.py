"""``import kpca`` is cheap: its public names are imported on first use (PEP 562), and
``kpca --version`` answers without importing scikit-learn."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kpca

HEAVY = ("sklearn", "scipy", "matplotlib", "dask", "distributed", "pandas", "pyarrow", "tqdm")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(*sys.modules)"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return set(out.split())


def test_import_kpca_imports_no_heavy_or_optional_dependency():
    loaded = {m.split(".")[0] for m in _modules_after("import kpca")}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_version_command_imports_no_heavy_dependency():
    code = ("import sys\nsys.argv = ['kpca', '--version']\nfrom kpca._entry import main\n"
            "assert main() == 0")
    proc = subprocess.run([sys.executable, "-c", code + "\nprint(*sys.modules)"],
                          capture_output=True, text=True, timeout=120, check=True)
    first, modules = proc.stdout.split("\n", 1)
    assert first == f"kpca {kpca.__version__}"
    loaded = {m.split(".")[0] for m in modules.split()}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_every_public_name_resolves_and_is_listed():
    for name in kpca.__all__:
        assert getattr(kpca, name) is not None, name
        assert name in dir(kpca)
    assert set(kpca.ESTIMATORS) == {"exact", "nystrom", "random-features", "weighted",
                                    "spherical", "anova", "robpca", "incremental"}
    assert kpca.ESTIMATORS["exact"] is kpca.KernelPCA
    from kpca import KernelROBPCA, robust
    assert KernelROBPCA is robust.KernelROBPCA


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'KernalPCA'"):
        kpca.KernalPCA  # noqa: B018
    with pytest.raises(ImportError):
        from kpca import KernalPCA  # noqa: F401
