"""The package as users get it: the wheel and the sdist are built from this checkout,
the wheel is installed into a fresh virtual environment (not the editable tree), and
that installation is smoke-tested: import, a fit, the command line, ``py.typed`` and the
example scripts that ``kpca demo`` runs (data files a wheel can silently lack)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd, cwd=None, env=None, timeout=300) -> str:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The wheel and sdist of this checkout (no build isolation: no download)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--no-build-isolation",
         "-q", "-w", out)
    _run(sys.executable, "-c",
         "import sys; from setuptools import build_meta as b; b.build_sdist(sys.argv[1])",
         out, cwd=ROOT)
    wheel, = out.glob("kpca-*.whl")
    sdist, = out.glob("kpca-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    """A fresh virtual environment with the wheel installed; its dependencies come from
    this interpreter's site-packages (a .pth line: no download, and no editable kpca,
    whose own .pth is not read from there)."""
    wheel, _ = built
    env_dir = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", env_dir)
    python = env_dir / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
                .strip())
    (site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    ours = Path(_run(sys.executable, "-c", "import kpca; print(kpca.__file__)").strip())
    # --ignore-installed: without it pip would uninstall this environment's own kpca
    _run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed",
         "--prefix", env_dir, wheel)
    # ... which is still there
    assert Path(_run(sys.executable, "-c", "import kpca; print(kpca.__file__)").strip()) == ours
    return env_dir, python


def test_the_wheel_holds_the_package_its_type_marker_and_the_examples(built):
    wheel, _ = built
    names = zipfile.ZipFile(wheel).namelist()
    assert "kpca/__init__.py" in names and "kpca/py.typed" in names
    assert {"kpca/cli/__init__.py", "kpca/cli/__main__.py", "kpca/_entry.py"} <= set(names)
    examples = {Path(n).name for n in names if "/data/share/kpca/examples/" in n}
    assert {"plot_circles_moons.py", "plot_dual_pca.py"} <= examples
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/", "docs/"))]
    # the optional compiled kernels, built where this interpreter's platform can
    import kpca.kernels._standard as standard
    import kpca.operators._tiled as tiled
    for module, name in ((tiled._tileprod_ext, "kpca/operators/_tileprod."),
                         (standard._rbfexp_ext, "kpca/kernels/_rbfexp.")):
        if module is not None:
            assert [n for n in names if n.startswith(name) and n.endswith((".so", ".pyd"))]


def test_the_sdist_holds_what_a_build_needs(built):
    _, sdist = built
    names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
    for needed in ("pyproject.toml", "setup.py", "README.md", "src/kpca/__init__.py",
                   "src/kpca/py.typed", "src/kpca/operators/_tileprod.c",
                   "src/kpca/operators/_tileprod_kernel.h", "src/kpca/kernels/_rbfexp.c",
                   "src/kpca/_native.h", "src/kpca/_portable.h", "src/kpca/kernels/_rbfblock.h",
                   "src/kpca/operators/_tileprod_undef.h", "examples/plot_dual_pca.py"):
        assert needed in names, needed


def test_the_installed_wheel_runs(installed, tmp_path):
    env_dir, python = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KPCA_EXAMPLES")}
    code = (
        "import kpca, numpy as np\n"
        "print(kpca.__file__)\n"
        "X = np.random.default_rng(0).normal(size=(60, 3))\n"
        "Z = kpca.KernelPCA(2, kernel='rbf', gamma=0.5).fit_transform(X)\n"
        "assert Z.shape == (60, 2) and np.all(np.isfinite(Z))\n"
        "from kpca.demo import examples_dir\n"
        "print(examples_dir())\n"
    )
    where, examples = _run(python, "-c", code, cwd=tmp_path, env=env).split()
    # the wheel's copy, not this checkout's (editable) one
    assert Path(where).is_relative_to(env_dir) and not Path(where).is_relative_to(ROOT)
    assert Path(examples) == env_dir / "share" / "kpca" / "examples"
    out = _run(python, "-c", "import sys; sys.argv = ['kpca', '--version'];"
               "from kpca._entry import main; main()", cwd=tmp_path, env=env)
    assert out.strip().startswith("kpca ")
    assert (env_dir / "bin" / "kpca").is_file()  # the console script
    # one example of the demo, from the installed example scripts
    _run(python, "-m", "kpca.cli", "demo", "--out", tmp_path / "demo", "--only", "dual_pca",
         cwd=tmp_path, env=env)
    assert "## Dual PCA" in (tmp_path / "demo" / "report.md").read_text(encoding="utf-8")
    assert (tmp_path / "demo" / "dual_pca.png").is_file()
