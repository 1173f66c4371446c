"""What kpca runs with on this machine (``kpca info`` without a model): versions, the
compiled kernels' variants, the CPU features they depend on, the BLAS library, the
cores and memory a fit uses by default, and the caches its cost model counts."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from . import _native
from ._config import cache_bytes, get_config, last_level_cache
from ._memory import available_memory, default_memory_limit, format_bytes

#: CPU features the compiled variants depend on (NumPy's names), and the variant each
#: serves
_FEATURES = {"AVX512F": "avx512", "AVX2": "avx2", "FMA3": "avx2/avx512", "SSE2": "portable",
             "NEON": "portable", "ASIMD": "portable"}


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def cpu_features() -> dict[str, bool]:
    """The CPU features of :data:`_FEATURES` that NumPy's run-time detection reports
    (only those it knows on this architecture)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as seen
    except ImportError:  # pragma: no cover - NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as seen
    return {name: bool(seen[name]) for name in _FEATURES if name in seen}


def system_info() -> dict[str, Any]:
    """A description of what kpca runs with here (plain data: JSON-serialisable).

    Returns
    -------
    dict
        ``versions`` (kpca, Python, NumPy, SciPy, scikit-learn, threadpoolctl);
        ``native`` (``KPCA_NATIVE`` as read, and per compiled kernel the variant that
        runs, why, and the variants this CPU runs); ``cpu`` (machine, the features
        the variants depend on); ``blas`` (threadpoolctl's description of each BLAS
        and OpenMP library loaded); ``resources`` (the worker threads a fit uses by
        default, the CPUs the OS reports, the default memory budget and the memory
        available); ``caches`` (the L2 cache, the last-level cache with the CPUs that
        share it, and ``solver_cache_bytes``: the share of it the solver cost model
        counts, kpca._config.cache_share).
    """
    from threadpoolctl import threadpool_info

    from ._version import __version__
    from .kernels import NATIVE_RBF_VARIANT
    from .operators import NATIVE_VARIANT, n_threads

    versions = {"kpca": __version__, "python": platform.python_version()}
    for dist in ("numpy", "scipy", "scikit-learn", "threadpoolctl"):
        versions[dist] = _version(dist)
    native = {"KPCA_NATIVE": os.environ.get(_native.ENV), "request": _native.REQUEST}
    for key, choice in (("tile_product", NATIVE_VARIANT), ("rbf_block", NATIVE_RBF_VARIANT)):
        native[key] = {"variant": choice.variant or "numpy", "reason": choice.reason,
                       "available": list(choice.available)}
    blas = [{k: lib.get(k) for k in ("user_api", "internal_api", "version", "architecture",
                                      "threading_layer", "num_threads", "filepath")}
            for lib in threadpool_info()]
    memory = default_memory_limit()
    llc = last_level_cache()
    caches = {"l2": cache_bytes(2),
              "last_level": None if llc is None else {"level": llc[0], "bytes": llc[1],
                                                      "shared_by": llc[2]},
              "solver_cache_bytes": get_config()["solver_cache_bytes"]}
    return {
        "versions": versions,
        "native": native,
        "cpu": {"machine": platform.machine(), "platform": sys.platform,
                "features": cpu_features()},
        "blas": blas,
        "resources": {"threads": n_threads(None), "cpus": os.cpu_count(),
                      "memory_limit": memory, "memory_available": available_memory(),
                      "memory_limit_text": format_bytes(memory)},
        "caches": caches,
    }


def format_info(info: dict[str, Any]) -> str:
    """:func:`system_info` as the text ``kpca info`` prints."""
    v = info["versions"]
    lines = ["versions: " + ", ".join(f"{k} {v[k] or '-'}" for k in v)]
    n = info["native"]
    lines.append(f"compiled kernels (KPCA_NATIVE={n['KPCA_NATIVE'] or 'unset'}):")
    for key, what in (("tile_product", "stored-tile product"), ("rbf_block", "RBF block")):
        k = n[key]
        runs = ", ".join(k["available"]) or "none"
        lines.append(f"  {what}: {k['variant']} ({k['reason']}; this CPU runs: {runs})")
    c = info["cpu"]
    feats = " ".join(f"{name}{'+' if ok else '-'}" for name, ok in c["features"].items())
    lines.append(f"cpu: {c['machine']} ({c['platform']}), features: {feats or 'unknown'}")
    if not info["blas"]:
        lines.append("blas: none found by threadpoolctl")
    for lib in info["blas"]:
        name = " ".join(str(x) for x in (lib["internal_api"], lib["version"]) if x)
        detail = ", ".join(str(x) for x in (lib["architecture"], lib["threading_layer"]) if x)
        lines.append(f"{lib['user_api']}: {name} ({detail + ', ' if detail else ''}"
                     f"{lib['num_threads']} threads) {lib['filepath']}")
    r = info["resources"]
    lines.append(f"resources: {r['threads']} worker threads by default "
                 f"({r['cpus']} CPUs reported), memory_limit by default "
                 f"{r['memory_limit_text']} (of {format_bytes(r['memory_available'])} "
                 "available)")
    c = info["caches"]
    parts = [f"L2 {format_bytes(c['l2'])}" if c["l2"] else "L2 unknown"]
    last = c["last_level"]
    if last is not None:
        shared = (f" shared by {last['shared_by']} CPUs" if last["shared_by"] else "")
        parts.append(f"L{last['level']} {format_bytes(last['bytes'])}{shared}")
    lines.append(f"caches: {', '.join(parts)}; the solver cost model counts "
                 f"{format_bytes(c['solver_cache_bytes'])} (solver_cache_bytes: this "
                 "process's share)")
    return "\n".join(lines)
