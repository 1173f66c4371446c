"""What this process may use of the machine: its cores and its memory.

Read from the operating system, not the host's totals: the CPU affinity and a cgroup
CPU quota bound the cores, a cgroup memory limit bounds the memory (a container or a
batch job's slot is usually smaller than the host it runs on). Both cgroup versions
are read: v2 (``cpu.max``, ``memory.max``) and v1 (``cpu.cfs_quota_us`` /
``cpu.cfs_period_us``, ``memory.limit_in_bytes``), at the process's own group and
every group above it (a parent's limit binds its children too).

Nothing here imports the rest of kpca: :mod:`kpca._config` derives its machine
settings (``n_cores``) from these functions, and :mod:`kpca._memory` its budget.
Functions take the root of ``/proc`` so that tests can point them at fake files.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "affinity_cores",
    "available_memory",
    "cgroup_cpu_quota",
    "cgroup_memory_headroom",
    "cgroup_memory_limit",
    "memory_limit",
    "process_cores",
]

def affinity_cores() -> int:
    """CPUs this process may be scheduled on: ``os.process_cpu_count()`` (Python 3.13+,
    the affinity), else ``joblib.cpu_count()`` (the affinity and a cgroup quota at the
    root of the cgroup mount), else the affinity mask, else ``os.cpu_count()``."""
    count = getattr(os, "process_cpu_count", None)
    if count is not None:
        n = count()
    else:
        try:
            from joblib import cpu_count  # scikit-learn's dependency, so always present
        except ImportError:  # pragma: no cover - joblib comes with scikit-learn
            n = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                 else os.cpu_count())
        else:
            n = cpu_count()
    return max(1, int(n or 1))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _mounts(proc: Path) -> list[tuple[str, str, str, set[str]]]:
    """cgroup mounts from ``mountinfo``: (mount point, root inside the hierarchy,
    'cgroup' or 'cgroup2', v1 controllers)."""
    text = _read(proc / "self" / "mountinfo")
    out = []
    for line in (text or "").splitlines():
        # "<id> <parent> <dev> <root> <mount point> <opts> [...] - <fs> <src> <super opts>"
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 1 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        controllers = set(tail[2].split(",")) if len(tail) > 2 and tail[0] == "cgroup" else set()
        out.append((fields[4], fields[3], tail[0], controllers))
    return out


def _groups(controller: str, proc: Path) -> Iterator[tuple[Path, str]]:
    """The directories of this process's cgroup holding ``controller``'s files, from the
    process's own group up to the mount's root, with the cgroup version ('v2', 'v1')."""
    membership = _read(proc / "self" / "cgroup") or ""
    for mount, root, fs, controllers in _mounts(proc):
        if fs == "cgroup" and controller not in controllers:
            continue
        for line in membership.splitlines():
            hid, _, rest = line.partition(":")
            names, _, path = rest.partition(":")
            if fs == "cgroup2" and not (hid == "0" and names == ""):
                continue
            if fs == "cgroup" and controller not in names.split(","):
                continue
            # the process's group relative to what the mount shows (a container sees
            # its own group as the mount's root)
            rel = os.path.relpath(path, root) if path.startswith(root) else "."
            rel = "." if rel.startswith("..") else rel
            here = Path(mount) / rel if rel != "." else Path(mount)
            if not here.is_dir():
                here = Path(mount)
            version = "v2" if fs == "cgroup2" else "v1"
            while True:
                yield here, version
                if here == Path(mount) or here.parent == here:
                    break
                here = here.parent


def cgroup_cpu_quota(proc: str | os.PathLike[str] = "/proc") -> float | None:
    """CPUs' worth of time a cgroup CPU quota allows this process (e.g. 1.5), the
    smallest over its group and the groups above it; ``None`` without a quota."""
    quotas: list[float] = []
    for here, version in _groups("cpu", Path(proc)):
        if version == "v2":
            parts = (_read(here / "cpu.max") or "").split()
            if len(parts) == 2 and parts[0] != "max":
                quota, period = parts
            else:
                continue
        else:
            quota = _read(here / "cpu.cfs_quota_us") or "-1"
            period = _read(here / "cpu.cfs_period_us") or "0"
        try:
            q, p = int(quota), int(period)
        except ValueError:
            continue
        if q > 0 and p > 0:
            quotas.append(q / p)
    return min(quotas) if quotas else None


def process_cores(proc: str | os.PathLike[str] = "/proc", affinity: int | None = None) -> int:
    """The cores this process may use: its CPU affinity (:func:`affinity_cores`), at most
    a cgroup CPU quota rounded up (1.5 CPUs -> 2: the second thread runs in the half a
    CPU the first leaves, as loky and the JVM count a fractional quota), at least 1."""
    cores = affinity_cores() if affinity is None else affinity
    quota = cgroup_cpu_quota(proc)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota - 1e-9)))
    return max(1, cores)


def _meminfo(proc: Path) -> dict[str, int]:
    out = {}
    for line in (_read(proc / "meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    return out


@functools.cache
def _limits(proc: Path) -> tuple[tuple[Path, str, int], ...]:
    """(group, version, limit in bytes) for each group with a memory limit; read once
    per process (a process does not change groups, nor a group its limit, in any way a
    fit could follow)."""
    out = []
    for here, version in _groups("memory", proc):
        text = _read(here / ("memory.max" if version == "v2" else "memory.limit_in_bytes"))
        if text is None or text == "max" or not text.isdigit():
            continue
        limit = int(text)
        # cgroup v1 writes "no limit" as 2^63 rounded down to a page
        # (9223372036854771712): anything from 2^62 on is no limit
        if version == "v1" and limit >= 2**62:
            continue
        out.append((here, version, limit))
    return tuple(out)


def cgroup_memory_limit(proc: str | os.PathLike[str] = "/proc") -> int | None:
    """Bytes a cgroup memory limit allows (the smallest over this process's group and
    the groups above it); ``None`` without a limit (``memory.max`` = "max")."""
    limits = [limit for _, _, limit in _limits(Path(proc))]
    return min(limits) if limits else None


def cgroup_memory_headroom(proc: str | os.PathLike[str] = "/proc") -> int | None:
    """Bytes still free under the cgroup memory limits: limit - (usage - inactive file
    cache, which the kernel reclaims before it would kill), the smallest over the groups
    with a limit; ``None`` without a limit."""
    rooms = []
    for here, version, limit in _limits(Path(proc)):
        usage = _read(here / ("memory.current" if version == "v2" else "memory.usage_in_bytes"))
        if usage is None or not usage.isdigit():
            continue
        stat = {}
        for line in (_read(here / "memory.stat") or "").splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                stat[key] = int(value)
        cache = stat.get("inactive_file" if version == "v2" else "total_inactive_file", 0)
        rooms.append(max(0, limit - max(0, int(usage) - cache)))
    return min(rooms) if rooms else None


def _sysconf_bytes(pages: str, default: int) -> int:
    """``pages`` (a :func:`os.sysconf` name counting pages) in bytes; ``default`` where
    the system does not say."""
    try:
        return int(os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return default


def memory_limit(proc: str | os.PathLike[str] = "/proc") -> int:
    """Bytes this process may use at most: the physical memory (MemTotal), or a cgroup
    memory limit below it; 8 GiB where neither can be read."""
    info = _meminfo(Path(proc))
    total = info.get("MemTotal")
    if total is None:
        total = _sysconf_bytes("SC_PHYS_PAGES", 8 * 2**30)
    cg = cgroup_memory_limit(proc)
    return total if cg is None else min(total, cg)


def available_memory(proc: str | os.PathLike[str] = "/proc") -> int:
    """Bytes available to new allocations now: the host's MemAvailable, or the room
    under a cgroup memory limit where that is less; 4 GiB where neither can be read."""
    avail = _meminfo(Path(proc)).get("MemAvailable")
    if avail is None:
        avail = _sysconf_bytes("SC_AVPHYS_PAGES", 4 * 2**30)
    room = cgroup_memory_headroom(proc)
    return avail if room is None else min(avail, room)
