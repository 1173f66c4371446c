"""The compiled parts of kpca: the stored kernel tile's two products in one sweep
(``src/kpca/operators/_tileprod.c``) and the RBF kernel's block with its exponential
in one sweep (``src/kpca/kernels/_rbfexp.c``). They are optional: where they cannot be
built (no C compiler) the install goes on without them and kpca uses NumPy for the
same work (docs/benchmarks.md, issue 17). Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
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
