"""The one compiled part of kpca: the stored kernel tile's two products in one sweep
(``src/kpca/operators/_tileprod.c``). It is optional: where it cannot be built (no C
compiler) the install goes on without it and kpca uses NumPy for the same products
(docs/benchmarks.md, issue 17). Everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kpca.operators._tileprod",
            ["src/kpca/operators/_tileprod.c"],
            depends=["src/kpca/operators/_tileprod_kernel.h"],
            optional=True,
        )
    ]
)
