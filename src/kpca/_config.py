"""kpca's one configuration: every tuning value, each with the rule it comes from.

Modelled on scikit-learn's ``get_config`` / ``set_config`` / ``config_context``:

    import kpca
    with kpca.config_context(float64_max_rows=10_000):  # float64 kernel values up to 10,000 rows
        model = kpca.KernelPCA(10).fit(X)

A value is read where it is used (``get_config()["name"]``, once per call or pass),
never copied into a module global, so that a ``config_context`` reaches it. Settings
live in a :class:`contextvars.ContextVar`: a ``config_context`` in one thread does not
leak into another, and kpca's worker threads (:mod:`kpca._parallel`) run with the
settings of the call that started them (:func:`propagate`). Tasks kpca sends to other
processes (Dask workers) run with the defaults.

Every value is declared once in :data:`SETTINGS` with its meaning and, after
``Rule:``, the rule it comes from (a cache size, the core count, a cost model, a
numerical bound), never a timing of one machine. Values that follow a machine fact
(``None`` as the default) are resolved by that rule when first read; setting them
overrides the rule, and ``None`` returns them to it. docs/guide.md ("Tuning") lists
them all (:func:`_markdown_table` writes that list; a test keeps the two in step).
"""

from __future__ import annotations

import contextvars
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

from ._machine import memory_limit, process_cores

__all__ = ["SETTINGS", "Setting", "config_context", "get_config", "propagate", "set_config"]

MiB = 2**20


@dataclass(frozen=True)
class Setting:
    """One tuning value.

    Attributes
    ----------
    default : object
        The value; ``None`` where ``rule`` derives it from the machine.
    doc : str
        What it controls, then ``Rule:`` and the rule it comes from (docs/guide.md
        shows both).
    kind : type or tuple of types
        Accepted types (``int`` accepts any integral, ``float`` any real).
    low : float, optional
        Smallest valid value (inclusive), for numbers.
    rule : callable, optional
        ``rule() -> value`` for a ``None`` default: the machine fact it follows (read
        once per process).
    choices : tuple of str, optional
        The valid values of a setting that names a method.
    """

    default: Any
    doc: str
    kind: Any = int
    low: float | None = None
    rule: Callable[[], Any] | None = None
    choices: tuple[str, ...] | None = None


#: every tuning value: name -> Setting (append new ones here, in their layer's section)
SETTINGS: dict[str, Setting] = {}


def _register(name: str, setting: Setting) -> None:
    if name in SETTINGS:  # pragma: no cover - a programming error caught at import
        raise RuntimeError(f"setting {name!r} declared twice")
    SETTINGS[name] = setting


# ------------------------------------------------------------------------ machine facts
# (the rules of machine-derived settings: read once per process, with a fallback where
# the operating system does not say)

#: sysconf names of the data (or unified) cache of each level
_SYSCONF_CACHE = {1: "SC_LEVEL1_DCACHE_SIZE", 2: "SC_LEVEL2_CACHE_SIZE",
                  3: "SC_LEVEL3_CACHE_SIZE"}


def _parse_size(text: str) -> int:
    """``"512K"`` -> 524288 (sysfs cache sizes)."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


#: where Linux describes the first CPU's caches
_SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def _sysfs_cache(level: int, base: str = _SYSFS_CACHE) -> str | None:
    """The sysfs folder of the first CPU's data (or unified) cache of ``level``."""
    try:
        for entry in sorted(os.listdir(base)):
            path = os.path.join(base, entry)
            if not entry.startswith("index"):
                continue
            with open(os.path.join(path, "level")) as f:
                if int(f.read()) != level:
                    continue
            with open(os.path.join(path, "type")) as f:
                if f.read().strip() != "Instruction":
                    return path
    except (OSError, ValueError):
        pass
    return None


def cache_bytes(level: int, base: str = _SYSFS_CACHE) -> int | None:
    """Bytes of the first CPU's data (or unified) cache of ``level`` (1, 2 or 3), from
    Linux sysfs, else ``os.sysconf``; ``None`` where neither says (macOS, Windows)."""
    path = _sysfs_cache(level, base)
    if path is not None:
        try:
            with open(os.path.join(path, "size")) as f:
                size = _parse_size(f.read())
            if size > 0:
                return size
        except (OSError, ValueError):
            pass
    try:
        size = os.sysconf(_SYSCONF_CACHE[level])
    except (AttributeError, KeyError, OSError, ValueError):
        return None
    return int(size) if size > 0 else None


def _count_cpus(text: str) -> int:
    """``"0-3,8"`` -> 5 (a sysfs CPU list)."""
    count = 0
    for part in text.strip().split(","):
        if part:
            first, _, last = part.partition("-")
            count += int(last or first) - int(first) + 1
    return count


def cache_sharing(level: int, base: str = _SYSFS_CACHE) -> int | None:
    """CPUs that share the first CPU's cache of ``level`` (sysfs ``shared_cpu_list``);
    ``None`` where it cannot be read."""
    path = _sysfs_cache(level, base)
    if path is None:
        return None
    try:
        with open(os.path.join(path, "shared_cpu_list")) as f:
            return _count_cpus(f.read()) or None
    except (OSError, ValueError):
        return None


def _l2_cache_bytes() -> int:
    return cache_bytes(2) or MiB


# ------------------------------------------------------------------------- declarations
# (each layer's values, in the order of the architecture: kernels -> operators ->
# solvers -> estimators; the rule is stated in ``doc``, after "Rule:")

# -- the machine: cores, memory, BLAS threads (kpca._machine, kpca._memory, kpca._parallel)

_register("n_cores", Setting(
    None,
    "Cores this process may use; n_jobs=None or -1 means this many threads. Rule: the "
    "CPU affinity (os.process_cpu_count() on Python 3.13+, else joblib.cpu_count()), at "
    "most a cgroup CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us, the "
    "smallest over the process's group and those above it) rounded up: 1.5 CPUs gives 2, "
    "the second thread running in the half CPU the first leaves.",
    int, low=1, rule=process_cores))

_register("process_memory", Setting(
    None,
    "Bytes this process may use; the default memory budget is planned from it "
    "(memory_fraction). Rule: the physical memory (MemTotal), or a cgroup memory limit "
    "(v2 memory.max, v1 memory.limit_in_bytes) where that is smaller.",
    int, low=1, rule=memory_limit))

_register("memory_fraction", Setting(
    0.5,
    "The default memory budget of a fit (when memory_limit is not given) as a fraction of "
    "process_memory. Rule: the rest is room for the data, the caller and the OS. The budget is "
    "halved while it exceeds the memory available at the fit (MemAvailable, or the room "
    "under a cgroup limit), so a fit never plans beyond what is free; while at least this "
    "fraction of the memory is free, the budget, and so whether K is stored and which "
    "solver 'auto' picks, does not depend on how busy the machine is.",
    float, low=1e-6))

_register("memory_budget", Setting(
    None,
    "The default memory budget of a fit, in bytes or as a string such as '4GB' (binary "
    "units), instead of the memory_fraction rule; an estimator's memory_limit still takes "
    "precedence. Rule: None, the memory_fraction rule, applied at each fit (it reads the "
    "memory free then).",
    (int, str, type(None)), low=1))

_register("blas_flops_per_thread", Setting(
    2**25,
    "BLAS/LAPACK threads for one call: one per this many flops of work between two of the "
    "call's synchronisation points (at least one, at most the threads allowed), e.g. 2 n^2 "
    "per column of LAPACK's tridiagonal reduction (a matrix-vector product). Rule: about "
    "the work one core does in one scheduler time slice (~3 ms at ~10 GFLOP/s); on a busy "
    "machine each added thread may wait that long for a core at every synchronisation "
    "point, so a thread is added only where its share of the work is at least as long.",
    int, low=1))

# kernels
_register("native_rbf_max_features", Setting(
    64,
    "Most features for which float32 RBF blocks use the compiled one-sweep kernel "
    "(more: BLAS's product, then NumPy's exp). "
    "Rule: a cost model. The compiled kernel makes the d + 2 multiply-adds of a kernel "
    "value without BLAS's register blocking, and saves the second sweep over the block "
    "(the exponents written, read back and exponentiated), worth about 64 multiply-adds "
    "a value: it wins while d + 2 is below that and loses beyond.",
    low=0))
_register("native_rbf_pack_rows", Setting(
    32,
    "Rows from which a float32 RBF block packs its prepared columns into the compiled "
    "kernel's panels (once, for every later block against the same columns); blocks of "
    "fewer rows take NumPy's path until the columns are packed. "
    "Rule: a cost model. Packing copies the c columns once, c (d + 2) values; a block "
    "of r rows then makes r c (d + 2) multiply-adds, so from 32 rows on the copy is a few "
    "per cent of the first block's work, where a one-row transform would pay it all.",
    low=1))
_register("rbf_clamp_free_error", Setting(
    1e-3,
    "Largest round-off bound of an RBF exponent -g ||x - y||^2 above 0 for which rows "
    "evaluated again and again skip the clamp of the exponent at 0. "
    "Rule: a numerical bound. The product that forms the exponent errs by at most "
    "4 (d + 2) eps g (|x'|^2 + |y'|^2) (kernels._standard.RBF.prepare_rows); below 1e-3 "
    "a kernel value is at most 1 + 1e-3, where rows and columns nearly coincide.",
    kind=float, low=0.0))

# operators
_register("l2_cache_bytes", Setting(
    None,
    "Bytes of one core's L2 cache: the pieces of a matrix-free pass take about half of "
    "it (operators._tiled.fused_piece). "
    "Rule: the machine's L2 data cache, read once from Linux sysfs "
    "(/sys/devices/system/cpu/cpu0/cache) or sysconf; 1 MiB where neither says (the L2 "
    "of current x86-64 and ARM cores is 0.5-2 MiB).",
    low=1, rule=_l2_cache_bytes))
_register("gram_block_bytes", Setting(
    2 * MiB,
    "Bytes of one row block of kernel values while a stored kernel matrix (or a block "
    "of kernel rows) is built. "
    "Rule: cache. The block is written by the kernel's product and read again by the "
    "element-wise steps that follow (clip, exp, row sums): 2 MiB stays in one core's "
    "L2 (1-2 MiB on current server cores) or its share of the last-level cache "
    "(2 MiB or more a core).",
    low=1))
_register("fused_rows", Setting(
    256,
    "Rows of the pieces in which transform evaluates kernel rows and multiplies them "
    "(fused_cols columns each). "
    "Rule: cache. 256 x 512 float32 values are 512 KiB: a piece and the operands of "
    "its product stay in one core's L2 (0.5-2 MiB) between its evaluation and its "
    "product.",
    low=1))
_register("fused_cols", Setting(
    512,
    "Columns of the pieces in which transform and matrix-free passes evaluate kernel "
    "values and multiply them. "
    "Rule: cache. With fused_rows rows (transform), or the rows that fill half of "
    "l2_cache_bytes (passes: 128 to 1,024 rows), a piece stays in L2 between its "
    "evaluation and its product; 512 is a multiple of every SIMD width and BLAS panel.",
    low=1))
_register("slice_rows", Setting(
    128,
    "Rows of the slices in which a stored float32 tile is centred and multiplied, and "
    "in which the compiled product fills a tile it builds: each slice serves both of "
    "the tile's products while it is in cache. "
    "Rule: cache. 128 rows of a 2,048-column float32 tile are 1 MiB, within one core's "
    "L2 or its share of the last-level cache; a multiple of the compiled kernel's "
    "register blocks.",
    low=1))
_register("float64_max_rows", Setting(
    4096,
    "With precision='auto', float64 data keep float64 kernel values up to this many rows "
    "(beyond, float32 unless float32_max_error forbids it). "
    "Rule: memory and bandwidth. A float64 K of 4,096 rows is 128 MiB; beyond, storing "
    "K in float32 halves its memory and the time of every pass over it (passes over a "
    "stored K are bound by memory), while float32_max_error guards its accuracy.",
    low=0))
_register("float32_max_error", Setting(
    1e-7,
    "Largest estimated error of the top eigenvalues, relative to the largest, that "
    "float32 kernel values may cause (operators.float32_eigen_error) for "
    "precision='auto' to store them in float32. "
    "Rule: a numerical bound. About float32's unit round-off (2^-24 = 6e-8): float32 is "
    "used where its rounding moves the eigenvalues (Weyl's inequality) by no more than "
    "one float32 rounding of the largest.",
    kind=float, low=0.0))
_register("device_tile_bytes", Setting(
    128 * MiB,
    "Bytes of one tile of kernel rows while a stored kernel matrix is built on a device "
    "(a GPU), at most an eighth of memory_limit; of one chunk of the warm start's "
    "float64 landmark kernel rows there; and of one tile of AnovaKernelPCA's float64 "
    "per-variable kernel terms there (also at most an eighth of memory_limit). "
    "Rule: a cost model. A GPU runs near its peak only on launches of millions of "
    "values (tens of thousands of lanes); 128 MiB (32 million float32 values) keeps each "
    "launch large and is small next to the device memory that K takes.",
    low=1))

_register("growing_min_block_rows", Setting(
    256,
    "A stored block row of IncrementalKernelPCA's kernel matrix shorter than this "
    "absorbs the next batch instead of starting a new one (operators/_growing.py). "
    "Rule: a cost model. A product pays a fixed cost per block row (a Python-level "
    "call, a thread hand-off, ~10 us); a stream of single rows must not make thousands "
    "of block rows, while merging copies the short block row (at most this many rows "
    "x n values) once per batch.",
    low=1))
_register("growing_piece_bytes", Setting(
    2 * MiB,
    "Bytes of one chunk of a block row of IncrementalKernelPCA's kernel matrix while it "
    "is evaluated, summed and multiplied (T_bn V), or shifted (products with the stored "
    "matrix go by its tiles, growing_tile_cols). "
    "Rule: cache. The chunk is read more than once (its sums, then its product), the "
    "second time from cache: about a core's L2 (1-2 MiB on current server cores) or its "
    "share of the last level, and large enough that a call's overhead is below 1 % of "
    "its flops.",
    low=1))

# solvers
_register("orth_max_cond", Setting(
    1e5,
    "Cholesky QR makes a sweep while the block's condition number (LAPACK's estimate "
    "from its triangular factor) stays below this; above, the solvers orthogonalise "
    "otherwise. "
    "Rule: a numerical bound. A Cholesky QR sweep leaves a block orthogonal to about "
    "cond^2 eps: 1e10 x 1.1e-16 = 1e-6 after the first sweep, round-off after the "
    "second.",
    kind=float, low=1.0))
_register("orth_block_rows", Setting(
    1024,
    "Rows of the block (and of the basis) that the iterative solvers' orthogonalisation "
    "updates at a time, through a small reused temporary. "
    "Rule: cache. 1,024 rows of a block of up to 64 float64 columns (512 KiB) stay in "
    "one core's L2 or its share of the last-level cache between a step's products, "
    "while each BLAS call still has enough rows to run near its peak.",
    low=1))
_register("small_algebra_flops", Setting(
    2**28,
    "The iterative solvers' block algebra runs on one BLAS thread below this many flops "
    "a step (n m b for block Lanczos: rows x basis x block; n l^2 for subspace "
    "iteration), and on the operator's threads from it on. "
    "Rule: a cost model. Threads pay when each one's share of the products is large "
    "next to waking BLAS threads and their spinning against the pass's workers "
    "(tenths of a millisecond, more on a busy machine): 2^28 flops is milliseconds of "
    "one core at tens of GFLOP/s.",
    low=0))
_register("start_landmarks", Setting(
    128,
    "Landmarks of the Nystrom warm start of the iterative solvers by default (more "
    "where passes are costly: stored_start_landmarks, or n / 100, up to 512, when "
    "every pass recomputes the kernel matrix). "
    "Rule: a cost model. The start costs about 2 n m^2 flops (33,000 n at m = 128), "
    "less than one pass (2 n^2 b flops, b >= 16) from n = 1,000 on, and a start near "
    "the top eigenvectors saves passes.",
    low=1))
_register("start_rows_per_landmark", Setting(
    100,
    "When every pass recomputes the kernel matrix (matrix-free), the warm start takes "
    "one landmark per this many rows (between start_landmarks and max_start_landmarks). "
    "Rule: a cost model. The start's 2 n m^2 flops at m = n / 100 stay under a tenth "
    "of one matrix-free pass, n^2 (d + 4 b) flops: 2 m^2 / (n (d + 4 b)) is 9 % where m "
    "reaches max_start_landmarks (n = 51,200; d = 20, b = 24) and falls beyond, while "
    "the residual of the start's Ritz pairs falls about as 1 / m, and with it that "
    "after each pass, so more landmarks save passes.",
    low=1))
_register("max_start_landmarks", Setting(
    512,
    "Most landmarks of a matrix-free fit's warm start. "
    "Rule: a cost model. The start's costs grow as n m^2 (its products) and m^3 (the "
    "landmark matrix's eigendecomposition, about 9 m^3 flops: 1.2 GFLOP at 512), while "
    "the passes it can save do not: from 512 landmarks a matrix-free fit at "
    "n = 100,000 converges in 3 passes, so more landmarks could save at most a pass.",
    low=1))
_register("stored_start_landmarks", Setting(
    256,
    "Landmarks of the warm start of a fit whose passes read a stored K, from "
    "stored_start_rows rows on. "
    "Rule: a cost model in passes. A larger start saves at most one pass; 256 landmarks "
    "(the start's cost 4x that of 128) saved one of 6 passes where 512 saved none more.",
    low=1))
_register("stored_start_rows", Setting(
    8000,
    "Rows from which a stored fit's warm start takes stored_start_landmarks. "
    "Rule: a cost model. The larger start's extra products, 2 n (256^2 - 128^2) flops, "
    "must cost well under the one pass it may save (2 n^2 b flops, b = 16 on a "
    "stored K), since it does not save one on every problem: at most 40 % "
    "of it from n = 2.5 x 49,152 / 16 = 7,700 rows on.",
    low=0))
_register("start_chunk_rows", Setting(
    4096,
    "Rows of landmark kernel values the warm start evaluates at a time. "
    "Rule: memory. A chunk's float64 workspace (4,096 x m: 4 MiB at 128 landmarks, "
    "16 MiB at 512) is reused by a worker's chunks; smaller chunks only add calls.",
    low=1))
_register("start_min_chunk_rows", Setting(
    1024,
    "The warm start's landmark rows are split over threads only in chunks of at least "
    "this many rows. "
    "Rule: a cost model. A chunk of 1,024 rows at 128 landmarks is 131,000 kernel values "
    "and a 34-MFLOP product, far above a thread hand-off.",
    low=1))
_register("krylov_depth", Setting(
    6,
    "Blocks in a full basis of block Lanczos between restarts. "
    "Rule: a cost model in passes. A deeper basis loses less at each restart and needs "
    "fewer passes (6 blocks need 1.2-2x fewer than 4 and 2-5x fewer than 3 on digits "
    "and synthetic spectra), while its orthogonalisation, O(n m b) a step, stays small "
    "next to a pass at 6 b <= ~200 columns.",
    low=1))
_register("krylov_min_basis", Setting(
    192,
    "Fewest columns of a full block Lanczos basis. "
    "Rule: a cost model in passes. Narrow blocks on a stored K (16 columns) need a deep "
    "basis to reach the Krylov dimension of wider ones: 12 blocks of 16 converge in as "
    "few passes as 6 blocks of 32, at half the product a pass.",
    low=1))
_register("device_wide_block_rows", Setting(
    6000,
    "On a device (Array API arrays), Lanczos blocks on a stored K are up to 32 columns "
    "below this many rows and 16 from it on (on the host: 16 at every size). "
    "Rule: a cost model of a device pass: its fixed part (kernel launches, the host "
    "round trip of the Rayleigh-Ritz problem) is larger than the host's, so fewer, "
    "wider passes pay until a 16-column product (32 n^2 flops) is several times it; "
    "the host's former threshold, kept for the device, where the narrow blocks' "
    "count-based gain (fewer operator columns) has not been timed.",
    low=0))
_register("update_max_passes", Setting(
    60,
    "Refinement passes an incremental update (solvers/_update.py) makes at most before "
    "it stops and IncrementalKernelPCA warns (ConvergenceWarning). "
    "Rule: a numerical bound. A refinement pass multiplies the residual by about "
    "mu_(m+1) / mu_k (m kept pairs): 60 passes reach float64 round-off from any start "
    "for ratios up to 0.5, so only an update stalled at the round-off of the stored "
    "matrix stops here.",
    low=0))
_register("update_max_blocks", Setting(
    8,
    "An incremental update's refinement basis restarts from its Ritz vectors once it "
    "holds more than (this + 1) x m columns (m kept pairs). "
    "Rule: memory. The basis and its products are 2 N float64 columns each; the "
    "restart caps them at about 18 m columns (2.9 MB per 1,000 rows at m = 40) and "
    "keeps every direction of the last passes.",
    low=1))

# estimators, subspace and pre-images
_register("min_block_bytes", Setting(
    64 * 2**10,
    "Smallest block budget that memory_limit can shrink a block to (transform, "
    "pre-images). "
    "Rule: a cost model. 64 KiB (8,192 float64 values) is about where a block's fixed "
    "costs (a Python and a BLAS call, ~10 microseconds) equal its work.",
    low=1))
_register("transform_block_bytes", Setting(
    32 * MiB,
    "Bytes of kernel rows (rows x expansion points) one transform thread evaluates at "
    "once where transform does not use fused pieces (sparse rows, non-vector kernels, "
    "random features); under memory_limit, at most a third of it per thread. "
    "Rule: a cost model. A block's fixed costs (a Python call, a BLAS call, a thread "
    "hand-off) stay under 1 % of its work (32 MiB: 4 million kernel values), and "
    "n_jobs blocks stay small next to memory.",
    low=1))
_register("preimage_block_bytes", Setting(
    32 * MiB,
    "Bytes of one (points x expansion points) float64 block of the pre-image methods "
    "(ridge, fixed point, MDS neighbours) and of denoise; under memory_limit, at most "
    "an eighth of it per thread. "
    "Rule: a cost model, as transform_block_bytes.",
    low=1))
_register("fixed_point_chunk_rows", Setting(
    2048,
    "Points the fixed-point pre-image iterates together (fewer where "
    "preimage_block_bytes asks). "
    "Rule: a cost model. Each iteration is one Python step over the chunk: 2,048 points "
    "make each step's products large (2,048 x the column block) while the chunk's "
    "state (a few 2,048 x d arrays) stays in cache.",
    low=1))

_register("incremental_landmarks", Setting(
    1000,
    "Landmarks of IncrementalKernelPCA's bounded mode when max_rows is not given. "
    "Rule: a cost model. The mode keeps L x L float64 statistics (8 MB at L = 1000) "
    "and re-whitens them in O(L^3) flops per batch (1e9 at L = 1000); its top "
    "eigenvalues are those of Nystrom KPCA on L landmarks (docs/scaling.md).",
    low=2))
_register("incremental_outlier_sample", Setting(
    2000,
    "Rows of the uniform sample (a reservoir of the stream) that sets the bounded "
    "mode's outlier cut-offs. "
    "Rule: a statistical bound. A quantile at contamination c estimated from R rows "
    "has a standard error of sqrt(c (1 - c) / R): 0.7 % at c = 0.1 and R = 2000.",
    low=1))
_register("incremental_swap_threshold", Setting(
    0.01,
    "In the bounded mode, a row whose squared distance to the landmarks' span exceeds "
    "this fraction of k(x, x) is a candidate landmark. "
    "Rule: a numerical bound. A Nystrom error of 1 % of a row's feature norm is what "
    "the top eigenvalues of the bounded mode can afford (a 1 % accuracy target).",
    kind=float, low=0.0))
_register("incremental_swap_margin", Setting(
    10.0,
    "A candidate replaces a landmark only where its residual is this many times the "
    "landmark's own residual against the others (the swap enlarges det K_ZZ by that "
    "factor). "
    "Rule: a margin against churn. On a stationary stream most rows are about as far "
    "from the landmarks' span as the most redundant landmark is from the others, and "
    "every swap gives the rows seen before it only their Nystrom projection on the new "
    "landmark.",
    kind=float, low=1.0))
_register("incremental_max_swap_fraction", Setting(
    0.05,
    "At most this fraction of the landmarks is swapped per batch (bounded mode). "
    "Rule: a numerical bound on the projection error that one batch can bring into the "
    "statistics of the rows seen before it.",
    kind=float, low=0.0))
_register("incremental_rebuild_rows", Setting(
    1024,
    "Rows per block row when IncrementalKernelPCA evaluates a loaded model's kernel "
    "matrix (its first update; a batch fit uses batch_size rows, as its stream would). "
    "Rule: memory and a cost model. A block row of r rows keeps its whole r x r "
    "diagonal block (r^2 / 2 values above the half that is needed) and holds r N new "
    "values in flight; r = 1024 keeps both below 1/8 of the stored half from 8,000 "
    "rows on, with block rows long enough that a product's per-call costs vanish.",
    low=1))
_register("incremental_guard_factor", Setting(
    2.0,
    "Ritz pairs IncrementalKernelPCA keeps beyond n_components k: guard_factor * k + "
    "incremental_guard_extra (30 at k = 10). "
    "Rule: a cost model. An update's pass-free first step converges at the rate "
    "mu_(m+1) / mu_k of the m kept pairs, and spectra come in clusters up to a few "
    "times k wide (the isotropic Gaussian's first level: d pairs); kept pairs cost "
    "O(N m) memory and O(N b m) flops per batch, no pass.",
    kind=float, low=0.0))
_register("incremental_guard_extra", Setting(
    10,
    "The constant term of the guard pairs (see incremental_guard_factor). "
    "Rule: a cost model, with incremental_guard_factor: a few pairs beyond any "
    "cluster's edge even at small k, for O(N) memory each.",
    low=0))

# robust
_register("anova_block_bytes", Setting(
    8 * MiB,
    "Bytes of the block of one variable's pairwise kernel terms that AnovaKernelPCA's "
    "weight update evaluates at a time. "
    "Rule: a cost model, as transform_block_bytes: 8 MiB (one million values, "
    "exponentiated in place) makes a block's fixed costs negligible.",
    low=1))
_register("robpca_block_bytes", Setting(
    32 * MiB,
    "Bytes of one block of direction projections (n x b float64) of KernelROBPCA's "
    "outlyingness, and of the rows of the check that a precomputed kernel is positive "
    "semi-definite. "
    "Rule: a cost model, as transform_block_bytes.",
    low=1))

# approximations
_register("feature_block_bytes", Setting(
    64 * MiB,
    "Bytes that all the streamed row blocks in flight may hold while the Nystrom and "
    "random-feature estimators accumulate their features (each block: its inputs, "
    "its features and one temporary). "
    "Rule: a cost model. Each block's fixed costs (a read, a Python step, a BLAS call) "
    "stay under 1 % of its work, and the blocks of all threads stay small next to "
    "memory (64 MiB in all).",
    low=1))
_register("feature_lanczos_min_size", Setting(
    500,
    "Feature covariances of at least this order, with at most a tenth of their "
    "eigenpairs wanted, are decomposed by Lanczos (ARPACK) instead of LAPACK. "
    "Rule: a flop count. LAPACK's full decomposition costs about 9 q^3 flops whatever "
    "k is, Lanczos about 2 q^2 flops per product; below q = 500, 9 q^3 is about a "
    "GFLOP and Lanczos' per-product call-backs (hundreds of them) cost as much.",
    low=1))
_register("approx_sample_rows", Setting(
    2000,
    "Rows drawn to resolve gamma heuristics, choose the accumulation shift and set "
    "the outlier cut-offs of the Nystrom and random-feature estimators. "
    "Rule: a sampling bound. Means and quantiles from 2,000 rows err by about "
    "1 / sqrt(2,000) = 2 % of the spread, at a cost that does not grow with n.",
    low=1))
_register("kmeans_rows_per_landmark", Setting(
    10,
    "Rows k-means clusters per landmark when landmarks='kmeans' (at most "
    "kmeans_max_rows). "
    "Rule: a sampling bound. About 10 rows a centre give every centre data to move to "
    "(fewer leave centres on single rows), while a Lloyd step costs rows x landmarks x "
    "d flops.",
    low=1))
_register("kmeans_max_rows", Setting(
    20000,
    "Most rows k-means clusters when landmarks='kmeans'. "
    "Rule: a cost model. A Lloyd step on s rows costs s m d flops; at 20,000 rows it "
    "stays below the fit's own n m kernel values for the data it serves (n above "
    "20,000).",
    low=1))

# distributed
_register("dask_task_block_bytes", Setting(
    64 * MiB,
    "Bytes of one block row K[rows, :] that a Dask task evaluates (and at most half a "
    "worker's share of the rows). "
    "Rule: a cost model. A task costs about a millisecond of scheduling; 64 MiB "
    "(8 million float64 kernel values) keeps that under 1 % of its work, and a "
    "worker's memory holds a few such blocks.",
    low=1))
_register("dask_inline_bytes", Setting(
    MiB,
    "A product's right-hand side V up to this size travels inside each Dask task; a "
    "larger one is scattered once to every worker. "
    "Rule: a cost model. Inlining sends V once per task, scattering costs one "
    "broadcast and a round-trip (milliseconds): up to 1 MiB, tens of tasks carrying V "
    "cost about one scatter.",
    low=0))

# io
_register("stream_block_bytes", Setting(
    8 * MiB,
    "Bytes of float64 rows read at once from a row source (a file) when it is "
    "standardised or written out block by block. "
    "Rule: a cost model. A block's fixed costs (a read, a parse, a Python step) stay "
    "under 1 % of its work, while one block (one million values) is small next to "
    "memory.",
    low=1))
_register("take_block_rows", Setting(
    8192,
    "Rows per block of the pass that reads chosen rows (landmarks, samples) from a "
    "row source. "
    "Rule: a cost model, as stream_block_bytes: 8,192 rows of 128 float64 features "
    "are 8 MiB.",
    low=1))
_register("parquet_buffer_bytes", Setting(
    MiB,
    "Bytes of one buffered read of a Parquet column chunk (a row group is never read "
    "whole, so memory does not follow the file's row groups). "
    "Rule: a cost model. A read of 1 MiB takes about a millisecond at storage speeds "
    "(~1 GB/s), well above a read call's fixed cost, while one buffer per column keeps "
    "memory at columns x 1 MiB.",
    low=1))

# -- solvers: the 'auto' policy (kpca.solvers._cost; docs/math.md, "Choosing a solver").
# Costs are counted in flops of a cache-blocked matrix product (BLAS-3); a flop of a
# memory-bound step is weighted by what it costs relative to one of those. Nothing
# here is a time: the choice depends on the data's shape, the parameters, the kernel
# and these values only.


def last_level_cache(base: str = _SYSFS_CACHE) -> tuple[int, int, int | None] | None:
    """``(level, bytes, CPUs sharing it)`` of the highest-level CPU cache whose size can
    be read, the last-level cache (:func:`cache_bytes`,
    :func:`cache_sharing`: the sharing is ``None`` where sysfs does not say); ``None``
    where no cache size can be read."""
    sizes = [(lv, size) for lv in (1, 2, 3) if (size := cache_bytes(lv, base))]
    if not sizes:
        return None
    level, size = sizes[-1]
    return level, size, cache_sharing(level, base)


#: the most last-level cache one core of a shipping CPU has to itself, rounded up: AMD's
#: stacked-cache parts give each core of an 8-core complex 96 MiB / 8 = 12 MiB of L3
#: (plus 1 MiB of L2); other server and desktop CPUs 1.5-5 MiB
_CACHE_PER_CORE_MAX = 16 * MiB


def cache_share(cores: int, base: str = _SYSFS_CACHE) -> int:
    """Bytes of the last-level cache (:func:`last_level_cache`) that ``cores`` CPUs of
    this process can count on.

    The cache is shared by the CPUs sysfs lists for it; a process on fewer of them (a
    CPU affinity, a cgroup quota) gets their share, one on more of them (several
    sockets or cache groups) counts one cache, not their sum. A virtual machine or a
    container sees the whole cache of a host whose other cores it does not see (sysfs
    lists only its own CPUs there), so the share is also at most ``cores`` times the
    most any core of a shipping CPU has (``_CACHE_PER_CORE_MAX``, 16 MiB; counted per
    logical CPU, as ``cores`` is: loose for hardware threads, on purpose). Where the
    cache cannot be read, 32 MiB, within the same bound."""
    llc = last_level_cache(base)
    if llc is None:
        return min(32 * MiB, cores * _CACHE_PER_CORE_MAX)
    _, size, sharing = llc
    if sharing is not None and sharing > cores:
        size = size * cores // sharing
    return max(1, min(size, cores * _CACHE_PER_CORE_MAX))


def _solver_cache() -> int:
    return cache_share(process_cores())


_register("blas2_flop_cost", Setting(
    5.0,
    "Cost of one flop of a matrix-vector product (BLAS-2: ARPACK's products, half of "
    "LAPACK's tridiagonal reduction) relative to one of a cache-blocked matrix product, "
    "when the matrix does not fit the last-level cache. Rule: a roofline; a matrix-vector "
    "product does 2 flops per 8-byte element read (0.25 flop/byte), so at the 10-20 "
    "GB/s one core streams it runs at 2.5-5 GFLOP/s, against 20-50 GFLOP/s for a "
    "blocked product near the FMA peak (16 float64 flops/cycle with AVX2, 32 with "
    "AVX-512): a factor 4-20 in principle, 4-6 in practice with hardware prefetch; 5. "
    "Half of it applies while the matrix fits the cache (solver_cache_bytes).",
    kind=float, low=1.0))
_register("solver_cache_bytes", Setting(
    None,
    "A matrix of at most this many bytes stays in cache between two products, and its "
    "matrix-vector products cost blas2_flop_cost / 2 per flop. Rule: this process's "
    "share of the CPU's last-level cache (sysfs; 32 MiB where it cannot be read): the "
    "cache times the process's CPUs (the n_cores rule, read once) over the CPUs that "
    "share it, at most the whole cache, and at most 16 MiB a CPU (the most any core "
    "of a shipping CPU has: AMD's stacked L3, 96 MiB for 8 cores), "
    "because a virtual machine or container sees the whole cache of a host whose "
    "other cores use it too (a 2-CPU VM on a 300 MiB Xeon streams ARPACK's products "
    "at cache speed only up to ~32 MiB; docs/benchmarks.md).",
    kind=int, low=0, rule=_solver_cache))
_register("dense_small_rows", Setting(
    200,
    "Under eigen_solver='auto', matrices of at most this many rows are always solved by "
    "LAPACK's dense solver (exact, whatever the spectrum). Rule: its (4/3) n^3 <= 1.1e7 "
    "flops are then fewer than an iterative solver's fixed costs alone: ~40 or more "
    "products, each a round trip through Python (arpack_step_flops), plus the "
    "orthogonalisation of its basis.",
    kind=int, low=0))
_register("dense_column_flops", Setting(
    6e5,
    "Fixed cost, in flops, of each of the n columns of LAPACK's tridiagonal reduction "
    "(a Householder vector, a level-2 call and its share of a 32-column panel's "
    "bookkeeping, which do not scale with n): it makes the dense solver's cost per n^3 "
    "higher at small n. Rule: the per-column overhead of ~30 us (a few library calls "
    "of microseconds each), ~6e5 flops of a core's blocked-product rate.",
    kind=float, low=0.0))
_register("arpack_products_per_ncv", Setting(
    2.0,
    "The 'auto' policy's estimate of ARPACK's matrix-vector products: "
    "arpack_products_per_ncv * ncv + arpack_products_offset, ncv = max(2k + 1, 20) "
    "(ARPACK's basis): about two restarts after the first basis, plus a constant. "
    "Rule: a convergence bound read from ARPACK's product counts, which depend on the "
    "spectrum only (not the machine), on digits (RBF gamma 1e-3 and 1e-2, "
    "standardised RBF and linear) and Gaussian data, n = 500-2,500, k = 5-128: "
    "~1.6 ncv + 20 on smooth spectra, ~1.8 ncv + 80 on Gaussian data (both below "
    "the estimate), up to 2.5 ncv + 90 on the flat, clustered one (RBF gamma = 1e-2, "
    "up to 30 % above: the fallback budget, auto_fallback_ratio, covers it).",
    kind=float, low=1.0))
_register("arpack_products_offset", Setting(
    60, "The constant term of the 'auto' policy's estimate of ARPACK's products "
    "(arpack_products_per_ncv * ncv + this). "
    "Rule: as arpack_products_per_ncv, a convergence bound read from product counts.",
    kind=int, low=0))
_register("arpack_step_flops", Setting(
    2e5,
    "Fixed cost, in flops, of one ARPACK step. Rule: SciPy's reverse-communication loop "
    "returns to Python for every product (~10 us of interpreter work, ~2e5 flops of a "
    "core's blocked-product rate).",
    kind=float, low=0.0))
_register("krylov_columns_per_k", Setting(
    4.0,
    "The 'auto' policy's estimate of block Lanczos's operator columns on a stored K: "
    "krylov_columns_per_k * k + krylov_columns_offset (passes: that over the block "
    "width, 16). Rule: a convergence bound read from the solver's column counts after "
    "its Nystrom start (they depend on the spectrum only, not the machine: "
    "benchmarks/bench_solver_counts.py), placed in their spread where "
    "arpack_products_per_ncv places ARPACK's: above every count on smooth spectra, "
    "near those of Gaussian data, below those of the flat, clustered one. Counted at "
    "n = 1,500-5,000, k = 5-128: 64-464 columns on smooth spectra, 64-512 on Gaussian "
    "data, 208-928 on the flat one; 4 k + 150 is 170 at k = 5 and 662 at k = 128.",
    kind=float, low=0.0))
_register("krylov_columns_offset", Setting(
    150, "The constant term of the 'auto' policy's estimate of block Lanczos's operator "
    "columns (krylov_columns_per_k * k + this). "
    "Rule: as krylov_columns_per_k, a convergence bound read from column counts.",
    kind=int, low=0))
_register("auto_fallback_ratio", Setting(
    1.0,
    "Under eigen_solver='auto', an iterative solve that has not converged after "
    "spending this multiple of the dense solve's modelled flops (block Lanczos: in "
    "passes; ARPACK: in restarts) stops and the dense solver runs instead, when the "
    "matrix fits. Rule: the ski-rental bound: with 1, a wrong choice costs at most "
    "twice the dense solve.",
    kind=float, low=0.0))
_register("primal_max_features", Setting(
    4096,
    "Kernels with an explicit feature map (linear; polynomial of integer degree) are "
    "solved in the primal (the p x p feature covariance) only when its dimension p is "
    "at most this; the cost model compares the two routes below it. Rule: memory: the "
    "covariance takes 8 p^2 bytes (128 MB at 4,096) besides the n x p features.",
    kind=int, low=0))
_register("parallel_analysis_quantile", Setting(
    0.95,
    "n_components='auto' (parallel analysis) keeps the leading components whose "
    "eigenvalue exceeds this quantile of the same eigenvalue on column-permuted data. "
    "Rule: a test of level 1 - quantile per component; 0.95 is Glorfeld's (1995) "
    "correction of Horn's mean, which over-extracts (docs/math.md, \"Parallel "
    "analysis\").",
    kind=float, low=0.0))
_register("parallel_analysis_permutations", Setting(
    19,
    "Column-permuted copies of the data (null fits) of n_components='auto'. Rule: with "
    "B copies the threshold is the ceil(q (B + 1))-th smallest null eigenvalue, so "
    "'above it' is a Monte-Carlo permutation test of level 1 - q; B = 19 is the fewest "
    "for which that test can reject at q = 0.95 (the threshold is then the null's "
    "maximum).",
    kind=int, low=1))
_register("parallel_analysis_start_components", Setting(
    16,
    "n_components='auto' first computes this many eigenvalues of the data and of each "
    "null copy, and doubles it while every one of them is kept. Rule: a doubling search "
    "costs at most about twice the solve at the final size; 16 is the first size of the "
    "variance-fraction search (n_components in (0, 1)).",
    kind=int, low=1))
_register("growing_tile_cols", Setting(
    2048,
    "Side of the tiles in which IncrementalKernelPCA stores its kernel matrix: bands of "
    "at most this many rows, cut into tiles of at most this many columns "
    "(operators/_growing.py); a product multiplies each tile by the compiled one-sweep "
    "kernel. "
    "Rule: a numerical bound and cache. A float32 tile's products are summed in float32 "
    "over at most this many values (the side of KernelPCA's stored float32 tiles, "
    "tile_size's 2,048: about 45 roundings of 6e-8 in a random walk, below the float32 "
    "solvers' 1e-5 residual target), and a 2,048-column slice of the block it multiplies "
    "(16 float32 columns: 128 KiB) stays in L2 while a band's rows pass.",
    low=1))

# -- kernels on a device: the fused RBF product k(X, Y) @ C on PyTorch tensors
# (kernels._device, kernels._triton_rbf; docs/scaling.md, "GPU and the Array API")
_register("device_rbf_product", Setting(
    "auto",
    "Which pass computes the RBF product k(X, Y) @ C on device arrays: 'triton' "
    "(kpca's Triton kernel: float32 PyTorch tensors on a CUDA device, or on any device "
    "under TRITON_INTERPRET=1), 'attention' (PyTorch's scaled-dot-product attention "
    "with a sink key), 'cupy' (kpca's CUDA kernel on CuPy arrays, float32 or float64), "
    "'tiles' (tiles of kernel values written, exponentiated and multiplied), or "
    "'auto': on PyTorch tensors Triton on NVIDIA CUDA float32 tensors where the triton "
    "package imports, else attention where PyTorch has a fused kernel for the arrays, "
    "else tiles; on CuPy arrays the CUDA kernel. Where the chosen pass does not serve "
    "the arrays (another namespace, float64 for Triton) the tiles serve them. "
    "Rule: a cost model. The fused passes never write the n^2 kernel values that tiles "
    "write and re-read about five times (memory-bound); of the two, the Triton kernel "
    "does the least arithmetic per kernel value (d + c multiply-adds on tensor cores "
    "with device_rbf_precision='tf32x3'; attention adds a softmax's running maximum "
    "and rescaling and two padded columns).",
    kind=str, choices=("auto", "triton", "attention", "cupy", "tiles")))
_register("device_rbf_precision", Setting(
    "tf32x3",
    "Input precision of the Triton kernel's two matrix products (exponents x . y, then "
    "kernel values times C): 'tf32x3' (tensor cores; each float32 operand split into a "
    "TF32 high part and the remainder, three TF32 products summed in float32) or "
    "'ieee' (float32 multiply-adds, no tensor cores). Devices without TF32 (compute "
    "capability below 8.0) use 'ieee'. "
    "Rule: a numerical bound. tf32x3 drops the remainder x remainder product and the "
    "remainder's bits beyond TF32's 11: at most about 2^-20 of each term (float32 "
    "rounds to 2^-24), with signs that vary from term to term, so that they cancel "
    "across the n terms of a product; it runs at a third of the tensor cores' TF32 "
    "rate, several times float32's rate on the CUDA cores.",
    kind=str, choices=("tf32x3", "ieee")))
_register("triton_block_rows", Setting(
    128,
    "Rows of X that one program of the Triton RBF kernel keeps on chip while it loops "
    "over Y (a power of two, at least 16); it runs one warp per 16 rows, at least 4. "
    "Rule: registers. Hopper's tensor-core instruction serves 64 rows per warp group "
    "(4 warps): 128 rows are two groups, whose float32 score tile (128 x "
    "triton_block_cols), accumulator and its compensation (128 x 32 each) and split "
    "operands take about 190 of the 255 registers a thread may hold (ptxas, sm_90), "
    "with 1M / 128 = 7,800 programs for ~130 multiprocessors.",
    low=16))
_register("triton_block_cols", Setting(
    64,
    "Rows of Y (columns of the score tile) per step of the Triton RBF kernel's loop, and "
    "the most columns of C one program multiplies (wider C runs in column groups, each "
    "recomputing the kernel values); a power of two, at least 16. "
    "Rule: registers, as triton_block_rows: a 128 x 64 float32 tile is 32 registers a "
    "thread over 256 threads (64 with its TF32 split), and each step's operands (64 "
    "rows of Y and of C, 16 KiB) stay in shared memory across the pipeline's stages.",
    low=16))
_register("triton_max_features", Setting(
    128,
    "The Triton RBF kernel serves data of at most this many features (d, padded to a "
    "power of two); wider data use the attention pass or tiles. "
    "Rule: registers. A program holds its triton_block_rows x d block of X in "
    "registers: 128 x 128 float32 values are 64 registers a thread over 256 threads; "
    "wider would spill.",
    low=16))

_register("cupy_rbf_threads", Setting(
    128,
    "Threads (rows of X) per block of the fused CuPy RBF kernel, which share each tile "
    "of Y. "
    "Rule: a cost model. A tile copied to shared memory serves every thread of the "
    "block: 128 threads (4 warps) read each value of Y once per 128 rows of X, and "
    "1M / 128 = 7,800 blocks keep ~130 multiprocessors busy.",
    low=1))
_register("cupy_rbf_tile_rows", Setting(
    64,
    "Rows of Y (with their rows of C) per shared-memory tile of the fused CuPy RBF "
    "kernel; each tile's sum joins a row's total with Kahan's compensation. "
    "Rule: shared memory. 64 rows of d + c + 1 float32 values (12 KiB at d = 20, "
    "c = 25) leave room for several blocks per multiprocessor, and a compensated "
    "addition per 64 terms costs little next to their 64 (d + c) multiply-adds.",
    low=1))
_register("cupy_rbf_max_values", Setting(
    128,
    "Most 4-byte values a thread of the fused CuPy RBF kernel keeps in registers: its "
    "row of X (d) and three per column of C (total, compensation, tile sum), half as "
    "many in float64; a wider C runs in column groups, data with more features use "
    "the tiles. "
    "Rule: registers. 128 values and the loop's own take ~165 of the 255 registers a "
    "thread may hold (ptxas, sm_90, d = 20 and the 33 columns of a fit's first pass: "
    "one group), so that 3 blocks of 128 threads fit a multiprocessor's 64K.",
    low=4))
_register("approx_error_rows", Setting(
    1000,
    "Rows s of the exact sub-problem on which NystromKernelPCA.estimate_error and "
    "RandomFeatureKernelPCA.estimate_error (and kpca select --landmarks-for-tol) "
    "compare the approximation with exact kernel PCA. "
    "Rule: a cost model. The dense s x s kernel matrix and its leading eigenpairs "
    "cost at most about s^2 d + 4 s^3 / 3 flops (LAPACK; Lanczos, for a few pairs, "
    "O(s^2) a product) and 8 s^2 bytes (1.4 GFLOP and 8 MB at 1,000), whatever n: a "
    "bounded add-on to a fit of n m (d + m) flops, "
    "with enough rows that the sampled spectrum resolves relative eigenvalue gaps "
    "down to about 1 / sqrt(s) = 3 % (docs/math.md, \"How far from exact KPCA: the "
    "error estimate\").",
    low=2))

# -- the unsupervised selection criterion: held-out reconstruction through a ridge
# pre-image whose penalty is chosen by GCV (kpca.selection, kpca.preimage._ridge;
# docs/math.md, "Choosing gamma and the kernel without labels")
_register("preimage_gcv_points_per_decade", Setting(
    8,
    "Penalties per decade on the grid on which generalized cross-validation chooses "
    "the ridge pre-image's alpha (from sqrt(eps) times the score kernel's largest "
    "eigenvalue to 10 times their mean). Rule: GCV is smooth in log alpha; 8 points a "
    "decade put the chosen alpha within a factor 10^(1/16) = 1.15 of the grid's "
    "minimiser, and the whole grid costs O(points x rows) after one eigendecomposition.",
    low=1))
_register("selection_preimage_rows", Setting(
    512,
    "Most training rows from which the unsupervised selection criterion learns a "
    "fold's pre-image map (a random subsample of the training fold, the same for every "
    "candidate; the kernel PCA itself uses all of them). Rule: cost. The map's penalty "
    "needs the eigendecomposition of the m x m score kernel, about 9 m^3 flops per "
    "candidate, fold and k (LAPACK's dsyevd); m = 512 is 1.2 Gflop, a fraction of a "
    "second on one core, below the fold's own kernel matrix for n of a few thousand.",
    low=2))
_register("pass_groups_per_worker", Setting(
    4,
    "A tiled operator's pass cuts its tiles into groups (pairs of runs of tile rows, "
    "each with its own accumulator) that the worker threads take as they come free, "
    "largest first: this many groups a worker, while the runs are at most one a worker "
    "and a tile row a run. "
    "Rule: a cost model of the pass's tail. A thread that ends its last group early "
    "waits for the others, at most about one group, which is 1/g of a worker's share "
    "with g groups a worker, less with the largest first; a slower core (one shared "
    "with another process or hardware thread) takes fewer groups rather than holding "
    "up the pass. The s (s + 1) / 2 groups of s runs (s ~ sqrt(2 g workers)) need s n "
    "rows of accumulators: with 4, and s at most the workers, that is at most the n "
    "rows a worker of a fixed split, and 11 n at 16 workers.",
    low=1))
_register("split_sweep_values", Setting(
    2**21,
    "A sweep over tall float64 arrays between the passes of a tiled operator (the sum "
    "of its tile groups' accumulators, block Lanczos's orthogonalisation, the warm start's "
    "Cholesky QR) shares its rows among the operator's worker threads (one BLAS thread "
    "each) from this many values read on; below, it runs on the calling thread. "
    "Rule: a cost model. Handing work to a new pool of threads costs tenths of a "
    "millisecond (thread starts and hand-overs); 2^21 values (16 MiB) take one core "
    "~1-2 ms to read at ~10 GB/s, so sharing pays from about there, and the sweeps of "
    "a fit of up to ~20,000 rows stay on one thread.",
    low=1))


# ---------------------------------------------------------------------------- machinery


class _State:
    """One context's overrides and, once read, every value in force under them (the
    state is immutable: ``set_config`` makes a new one), so that ``get_config`` costs a
    dict copy, not a resolution of every setting."""

    __slots__ = ("overrides", "values")

    def __init__(self, overrides: Mapping[str, Any]):
        self.overrides = overrides
        self.values: dict[str, Any] | None = None


#: the state of a context that set nothing (every thread starts with it)
_DEFAULT = _State(MappingProxyType({}))
_STATE: contextvars.ContextVar[_State] = contextvars.ContextVar("kpca_config")


def _current() -> _State:
    return _STATE.get(_DEFAULT)


@functools.cache
def _derived(name: str) -> Any:
    # a machine fact, read once per process (cores, caches and memory limits do not
    # change under a running process in any way kpca could follow mid-fit)
    return SETTINGS[name].rule()  # type: ignore[misc]


def _resolve(name: str, overrides: Mapping[str, Any]) -> Any:
    if name in overrides:
        return overrides[name]
    s = SETTINGS[name]
    if s.default is None and s.rule is not None:
        return _derived(name)
    return s.default


def _values(state: _State) -> dict[str, Any]:
    values = state.values
    if values is None or len(values) != len(SETTINGS):
        # two threads may both resolve a shared state at first; they agree
        values = {name: _resolve(name, state.overrides) for name in SETTINGS}
        state.values = values
    return values


def get_config() -> dict[str, Any]:
    """Every tuning value in force here.

    Returns
    -------
    dict
        ``{name: value}``, a fresh dict (changing it changes nothing). See
        docs/guide.md ("Tuning") for what each value means and the rule it comes from.
    """
    return dict(_values(_current()))


def _check(name: str, value: Any) -> None:
    if name not in SETTINGS:
        raise ValueError(
            f"unknown kpca setting {name!r}; valid settings are {sorted(SETTINGS)}."
        )
    s = SETTINGS[name]
    if value is None and s.rule is not None:
        return  # back to the rule
    kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
    abstract = tuple({int: Integral, float: Real}.get(k, k) for k in kinds)
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, abstract):
        names = " or ".join(k.__name__ for k in kinds)
        if s.rule is not None:
            names += " (or None: the machine's rule)"
        raise ValueError(f"kpca setting {name!r} must be {names}; got {value!r}.")
    if s.low is not None and isinstance(value, Real) and not value >= s.low:
        raise ValueError(f"kpca setting {name!r} must be >= {s.low}; got {value!r}.")
    if s.choices is not None and value not in s.choices:
        raise ValueError(f"kpca setting {name!r} must be one of {list(s.choices)}; "
                         f"got {value!r}.")


def _with(overrides: Mapping[str, Any], settings: Mapping[str, Any]) -> _State:
    merged = dict(overrides)
    for name, value in settings.items():
        if value is None and SETTINGS[name].rule is not None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return _State(MappingProxyType(merged))


def set_config(**settings: Any) -> None:
    """Set tuning values for the rest of this context (thread or task).

    Parameters
    ----------
    **settings
        ``name=value`` for names of :data:`SETTINGS` (docs/guide.md, "Tuning");
        ``None`` returns a machine-derived value to its rule.

    Raises
    ------
    ValueError
        For an unknown name, or a value of the wrong type or range (nothing is set).
    """
    for name, value in settings.items():
        _check(name, value)
    _STATE.set(_with(_current().overrides, settings))


@contextmanager
def config_context(**settings: Any) -> Iterator[None]:
    """Tuning values set inside a ``with`` block and restored after it, also when it
    raises.

    Parameters
    ----------
    **settings
        As :func:`set_config`. kpca's worker threads started inside the block see
        them; other threads do not.

    Raises
    ------
    ValueError
        As :func:`set_config`, on entering the block.
    """
    for name, value in settings.items():
        _check(name, value)
    token = _STATE.set(_with(_current().overrides, settings))
    try:
        yield
    finally:
        _STATE.reset(token)


def propagate(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped to run with the settings in force where it was wrapped: for work
    handed to another thread (a new thread starts with the defaults)."""
    state = _current()

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = _STATE.set(state)
        try:
            return fn(*args, **kwargs)
        finally:
            _STATE.reset(token)

    return run


# ---------------------------------------------------------------------- documentation


def _shown(name: str, value: Any) -> str:
    """A default as docs/guide.md shows it (sizes in KiB / MiB, flop counts as 2^k)."""
    if value is None:
        return "machine (rule)" if SETTINGS[name].rule is not None else "None"
    if isinstance(value, bool) or not isinstance(value, Integral):
        return f"{value!r}"
    value = int(value)
    if name.endswith("_bytes") and value >= 2**10 and value % 2**10 == 0:
        return f"{value // MiB} MiB" if value % MiB == 0 else f"{value // 2**10} KiB"
    if name.endswith("_flops") and value > 0 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return f"{value:,}"


def _markdown_table() -> str:
    """The list of every setting that docs/guide.md ("Tuning") holds, generated: one row
    a setting, in declaration order: name, default, what it does, its rule."""
    rows = ["| Setting | Default | What it does | Rule |", "|---|---|---|---|"]
    for name, s in SETTINGS.items():
        what, _, rule = s.doc.partition("Rule:")
        cells = [f"`{name}`", _shown(name, s.default), what.strip(), rule.strip()]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"
