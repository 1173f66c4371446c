"""kpca: kernel principal component analysis.

A drop-in replacement for :class:`sklearn.decomposition.KernelPCA`, built as
kernel -> centred operator -> top-k eigensolver -> fitted subspace. Every
estimator produces a :class:`FittedSubspace` (``subspace_``) and follows one
contract: ``transform``, pre-images, outlier detection, :func:`save` / :func:`load`.

The names below are imported on first use (PEP 562), so ``import kpca`` does not
import scikit-learn, SciPy's solvers or any optional dependency until an estimator is
used (``kpca --version`` stays instant).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import _native  # noqa: F401 - reads KPCA_NATIVE once, at import (refuses a bad value)
from ._config import config_context, get_config, set_config
from ._version import __version__

if TYPE_CHECKING:  # what the lazy names are, for type checkers and IDEs
    from . import kernels, operators, robust, solvers
    from ._incremental import IncrementalKernelPCA
    from ._kernel_pca import KernelPCA
    from ._parallel_analysis import ParallelAnalysis
    from ._plan import FitPlan, plan_fit
    from ._rows import RowSource
    from .approx import NystromKernelPCA, RandomFeatureKernelPCA
    from .io import load, save
    from .robust import AnovaKernelPCA, KernelROBPCA, SphericalKernelPCA, WeightedKernelPCA
    from .selection import parallel_analysis
    from .subspace import FittedSubspace

#: public name -> the module that defines it
_WHERE = {
    "IncrementalKernelPCA": "._incremental",
    "KernelPCA": "._kernel_pca",
    "ParallelAnalysis": "._parallel_analysis",
    "parallel_analysis": ".selection",
    "RowSource": "._rows",
    "NystromKernelPCA": ".approx",
    "RandomFeatureKernelPCA": ".approx",
    "load": ".io",
    "save": ".io",
    "AnovaKernelPCA": ".robust",
    "KernelROBPCA": ".robust",
    "SphericalKernelPCA": ".robust",
    "WeightedKernelPCA": ".robust",
    "FittedSubspace": ".subspace",
    "FitPlan": "._plan",
    "plan_fit": "._plan",
}
_SUBMODULES = ("kernels", "operators", "robust", "solvers")

#: every estimator's command-line name -> its class name (``ESTIMATORS`` maps to classes)
_ESTIMATOR_NAMES = {
    "exact": "KernelPCA",
    "nystrom": "NystromKernelPCA",
    "random-features": "RandomFeatureKernelPCA",
    "weighted": "WeightedKernelPCA",
    "spherical": "SphericalKernelPCA",
    "anova": "AnovaKernelPCA",
    "robpca": "KernelROBPCA",
    "incremental": "IncrementalKernelPCA",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    elif name == "ESTIMATORS":  # every estimator, by its command-line name
        value = {key: __getattr__(cls) for key, cls in _ESTIMATOR_NAMES.items()}
    else:
        raise AttributeError(f"module 'kpca' has no attribute {name!r}")
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ESTIMATORS",
    "AnovaKernelPCA",
    "FitPlan",
    "FittedSubspace",
    "IncrementalKernelPCA",
    "KernelPCA",
    "KernelROBPCA",
    "NystromKernelPCA",
    "ParallelAnalysis",
    "RandomFeatureKernelPCA",
    "RowSource",
    "SphericalKernelPCA",
    "WeightedKernelPCA",
    "__version__",
    "config_context",
    "get_config",
    "parallel_analysis",
    "plan_fit",
    "set_config",
    "kernels",
    "load",
    "operators",
    "robust",
    "save",
    "solvers",
]
