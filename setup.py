"""The compiled parts of kpca: the stored kernel tile's two products in one sweep
(``src/kpca/operators/_tileprod.c``) and the RBF kernel's block with its exponential
in one sweep (``src/kpca/kernels/_rbfexp.c``). They are optional: where they cannot be
built (no C compiler) the install goes on without them and kpca uses NumPy for the
same work (docs/benchmarks.md, issue 17). Everything else is in pyproject.toml."""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """``build_ext`` that optimises the kernels at ``-O3`` with GCC-like compilers,
    whatever the flags Python was built with.

    The kernels keep small register tiles in arrays (``a[ROWS][2]``, 4 rows x 4 vectors
    of the RBF block) and count on the compiler to unroll their fixed loops into
    registers; Debian's and Ubuntu's Pythons hand extensions ``-O2``, at which GCC 12
    leaves those loops rolled and the tiles in memory: on an AVX2 core the RBF block
    2.1x and the one-sweep tile product 1.4x slower than at ``-O3``, which Python's own
    builds use (docs/benchmarks.md, issue 31). Flags given after Python's win, so
    ``-O3`` is appended; MSVC (``/O2``, its own default) is left as it is.
    """

    def build_extensions(self) -> None:
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for ext in self.extensions:
                ext.extra_compile_args = [*(ext.extra_compile_args or []), "-O3"]
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "kpca.operators._tileprod",
            ["src/kpca/operators/_tileprod.c"],
            depends=["src/kpca/operators/_tileprod_kernel.h",
                     "src/kpca/operators/_tileprod_undef.h", "src/kpca/kernels/_rbfblock.h",
                     "src/kpca/_native.h", "src/kpca/_portable.h"],
            optional=True,
        ),
        Extension(
            "kpca.kernels._rbfexp",
            ["src/kpca/kernels/_rbfexp.c"],
            depends=["src/kpca/_native.h", "src/kpca/_portable.h",
                     "src/kpca/kernels/_rbfblock.h"],
            optional=True,
        ),
    ]
)
