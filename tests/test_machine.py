"""The process's real budget (kpca._machine, kpca._memory): cores from the CPU affinity
and a cgroup CPU quota, memory from the physical memory and a cgroup limit, read from
fake /proc and cgroup files; the default memory budget's rule; BLAS threads by call
size (kpca._parallel.call_threads)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import kpca
from kpca import _machine, _memory
from kpca._parallel import (
    _controller,
    blas_threads,
    call_threads,
    current_blas_threads,
    job_threads,
)
from kpca.operators import n_threads

GiB = 2**30


class FakeProc:
    """A /proc with ``self/cgroup``, ``self/mountinfo`` and ``meminfo``, and cgroup
    hierarchies under ``tmp/cg``, as a container or a batch job sees them."""

    def __init__(self, tmp: Path, version: str, path: str = "/job/step",
                 mem_total: int = 64 * GiB, mem_available: int = 60 * GiB):
        self.proc = tmp / "proc"
        (self.proc / "self").mkdir(parents=True)
        self.root = tmp / "cg"
        self.version, self.path = version, path
        (self.proc / "meminfo").write_text(
            f"MemTotal:       {mem_total // 1024} kB\nMemFree:  1 kB\n"
            f"MemAvailable:   {mem_available // 1024} kB\n")
        if version == "v2":
            mounts = [f"30 23 0:26 / {self.root} rw,nosuid - cgroup2 cgroup2 rw"]
            (self.proc / "self" / "cgroup").write_text(f"0::{path}\n")
        else:
            mounts = [
                f"32 31 0:29 / {self.root / 'cpu,cpuacct'} rw - cgroup cgroup rw,cpu,cpuacct",
                f"35 31 0:32 / {self.root / 'memory'} rw - cgroup cgroup rw,memory",
            ]
            (self.proc / "self" / "cgroup").write_text(
                f"4:memory:{path}\n2:cpu,cpuacct:{path}\n1:name=systemd:/\n0::/\n")
        (self.proc / "self" / "mountinfo").write_text("\n".join(mounts) + "\n")

    def group(self, controller: str, rel: str = "") -> Path:
        """The directory of the process's group (``rel=""``) or of an ancestor."""
        base = self.root if self.version == "v2" else self.root / (
            "cpu,cpuacct" if controller == "cpu" else "memory")
        d = base / (rel or self.path).lstrip("/")
        d.mkdir(parents=True, exist_ok=True)
        return d

    def write(self, controller: str, name: str, text: str, rel: str = "") -> None:
        (self.group(controller, rel) / name).write_text(text + "\n")


# ------------------------------------------------------------------------- cores


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_fractional_cpu_quota_is_rounded_up(tmp_path, version):
    """1.5 CPUs on a 16-CPU affinity: 2 threads (the second uses the half CPU the first
    leaves)."""
    fake = FakeProc(tmp_path, version)
    if version == "v2":
        fake.write("cpu", "cpu.max", "150000 100000")
    else:
        fake.write("cpu", "cpu.cfs_quota_us", "150000")
        fake.write("cpu", "cpu.cfs_period_us", "100000")
    assert _machine.cgroup_cpu_quota(fake.proc) == pytest.approx(1.5)
    assert _machine.process_cores(fake.proc, affinity=16) == 2


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_no_quota_gives_the_affinity(tmp_path, version):
    fake = FakeProc(tmp_path, version)
    if version == "v2":
        fake.write("cpu", "cpu.max", "max 100000")
    else:
        fake.write("cpu", "cpu.cfs_quota_us", "-1")
        fake.write("cpu", "cpu.cfs_period_us", "100000")
    assert _machine.cgroup_cpu_quota(fake.proc) is None
    assert _machine.process_cores(fake.proc, affinity=16) == 16


def test_no_cgroup_files_give_the_affinity(tmp_path):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    assert _machine.cgroup_cpu_quota(proc) is None
    assert _machine.process_cores(proc, affinity=7) == 7


def test_a_parent_groups_quota_binds_and_a_quota_above_the_affinity_does_not(tmp_path):
    fake = FakeProc(tmp_path, "v2", path="/job/step")
    fake.write("cpu", "cpu.max", "400000 100000")          # the step: 4 CPUs
    fake.write("cpu", "cpu.max", "250000 100000", rel="/job")  # the job: 2.5 CPUs
    assert _machine.cgroup_cpu_quota(fake.proc) == pytest.approx(2.5)
    assert _machine.process_cores(fake.proc, affinity=16) == 3
    assert _machine.process_cores(fake.proc, affinity=2) == 2
    # a tiny quota still leaves one thread
    fake.write("cpu", "cpu.max", "10000 100000")
    assert _machine.process_cores(fake.proc, affinity=16) == 1


def test_affinity_prefers_process_cpu_count_then_joblib(monkeypatch):
    import joblib

    monkeypatch.setattr(os, "process_cpu_count", lambda: 5, raising=False)
    assert _machine.affinity_cores() == 5
    monkeypatch.delattr(os, "process_cpu_count")
    monkeypatch.setattr(joblib, "cpu_count", lambda: 3)
    assert _machine.affinity_cores() == 3


def test_the_core_count_is_the_configured_one():
    """n_jobs=None or -1 means the ``n_cores`` setting (the rule above by default)."""
    assert kpca.get_config()["n_cores"] == _machine.process_cores()
    with kpca.config_context(n_cores=3):
        assert n_threads(None) == 3
        assert n_threads(-1) == 3
        assert n_threads(-2) == 2
        assert n_threads(8) == 3
        assert n_threads(1) == 1
    with pytest.raises(ValueError, match="n_cores"):
        kpca.set_config(n_cores=0)


# ------------------------------------------------------------------------ memory


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_no_memory_limit_means_the_physical_memory(tmp_path, version):
    fake = FakeProc(tmp_path, version, mem_total=64 * GiB, mem_available=60 * GiB)
    if version == "v2":
        fake.write("memory", "memory.max", "max")
        fake.write("memory", "memory.current", str(5 * GiB))
    else:  # the kernel's "unlimited": 2^63 rounded down to a page
        fake.write("memory", "memory.limit_in_bytes", "9223372036854771712")
        fake.write("memory", "memory.usage_in_bytes", str(5 * GiB))
    assert _machine.cgroup_memory_limit(fake.proc) is None
    assert _machine.memory_limit(fake.proc) == 64 * GiB
    assert _machine.available_memory(fake.proc) == 60 * GiB


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_memory_limit_below_memavailable_wins(tmp_path, version):
    """A container's 8 GiB on a 64 GiB host with 60 GiB free: the process may use 8 GiB,
    and of those what its group has not used (inactive file cache counts as free)."""
    fake = FakeProc(tmp_path, version, mem_total=64 * GiB, mem_available=60 * GiB)
    if version == "v2":
        fake.write("memory", "memory.max", str(8 * GiB))
        fake.write("memory", "memory.current", str(3 * GiB))
        fake.write("memory", "memory.stat", f"anon {2 * GiB}\ninactive_file {GiB}")
    else:
        fake.write("memory", "memory.limit_in_bytes", str(8 * GiB))
        fake.write("memory", "memory.usage_in_bytes", str(3 * GiB))
        fake.write("memory", "memory.stat", f"cache {GiB}\ntotal_inactive_file {GiB}")
    assert _machine.cgroup_memory_limit(fake.proc) == 8 * GiB
    assert _machine.memory_limit(fake.proc) == 8 * GiB
    assert _machine.available_memory(fake.proc) == 8 * GiB - 2 * GiB
    # and the budget planned from them: half the limit, which fits in what is free
    assert _memory.stable_budget(8 * GiB, 0.5, _machine.available_memory(fake.proc)) == 4 * GiB


def test_a_limit_above_the_physical_memory_does_not_raise_it(tmp_path):
    fake = FakeProc(tmp_path, "v2", mem_total=16 * GiB, mem_available=10 * GiB)
    fake.write("memory", "memory.max", str(32 * GiB))
    fake.write("memory", "memory.current", str(GiB))
    assert _machine.memory_limit(fake.proc) == 16 * GiB
    assert _machine.available_memory(fake.proc) == 10 * GiB


def test_the_default_budget_does_not_follow_the_load():
    """While at least half of the process's memory is free, the budget is half of it,
    however much more is free; below, it steps down by halves and never exceeds what is
    free."""
    limit = 24 * GiB
    busy = [_memory.stable_budget(limit, 0.5, a) for a in (23 * GiB, 20 * GiB, 12 * GiB)]
    assert busy == [12 * GiB] * 3
    for avail in (11 * GiB, 6 * GiB, 5 * GiB, 100 * 2**20, 1):
        budget = _memory.stable_budget(limit, 0.5, avail)
        assert 1 <= budget <= avail
        assert budget > avail // 2 or budget == 1  # the largest halving that fits
        assert (12 * GiB) % budget == 0 or budget == 1  # 12 GiB / 2^j
    assert _memory.stable_budget(limit, 0.5, 0) == 1


def test_default_memory_limit_follows_the_settings(monkeypatch):
    monkeypatch.setattr(_memory, "available_memory", lambda: 30 * GiB)
    with kpca.config_context(process_memory=16 * GiB):
        assert _memory.default_memory_limit() == 8 * GiB
        with kpca.config_context(memory_fraction=0.25):
            assert _memory.default_memory_limit() == 4 * GiB
        with kpca.config_context(memory_budget="3GB"):
            assert _memory.default_memory_limit() == 3 * GiB
        with kpca.config_context(memory_budget=12345):
            assert _memory.default_memory_limit() == 12345
        with kpca.config_context(memory_budget="lots"), pytest.raises(
                ValueError, match="memory_budget"):
            _memory.default_memory_limit()
    monkeypatch.setattr(_memory, "available_memory", lambda: 3 * GiB)
    with kpca.config_context(process_memory=16 * GiB):
        assert _memory.default_memory_limit() == 2 * GiB  # 8 GiB halved twice


def test_the_plan_does_not_follow_the_memory_free_at_the_fit(monkeypatch):
    """Whether K is stored, and so the solver 'auto' picks, is the same with 99 % or
    55 % of the memory free (half of what is free, the old rule, stored K in the first
    case only): the same solver and the same eigenvalues, bit for bit."""
    n = 400
    X = np.random.default_rng(0).standard_normal((n, 5))
    total = int(n * n * 8 / 0.4)  # K (float64) is 40 % of the process's memory
    fits = []
    for free in (0.99, 0.55):
        monkeypatch.setattr(_memory, "available_memory", lambda f=free: int(f * total))
        with kpca.config_context(process_memory=total):
            fits.append(kpca.KernelPCA(5, kernel="rbf", gamma=0.2, precision="float64",
                                       random_state=0).fit(X))
    assert fits[0].eigen_solver_ == fits[1].eigen_solver_ != "krylov"
    np.testing.assert_array_equal(fits[0].eigenvalues_, fits[1].eigenvalues_)
    np.testing.assert_array_equal(fits[0].eigenvectors_, fits[1].eigenvectors_)


# ------------------------------------------------------------------- BLAS threads


def test_call_threads_one_per_flops_per_thread():
    with kpca.config_context(blas_flops_per_thread=100):
        assert call_threads(50, limit=8) == 1
        assert call_threads(100, limit=8) == 1
        assert call_threads(250, limit=8) == 2
        assert call_threads(10**9, limit=4) == 4
        assert call_threads(10**9, limit=0) == 1
    # the default rule: LAPACK's tridiagonal reduction (2 n^2 flops a column) stays on
    # one thread up to n = 5,792 rows, two from there to 8,192
    with blas_threads(16), kpca.config_context(n_cores=16):
        assert call_threads(2.0 * 1000**2) == 1
        assert call_threads(2.0 * 5792**2) == 1
        assert call_threads(2.0 * 5793**2) == 2
        assert call_threads(2.0 * 8192**2) == 4
        assert call_threads(2.0 * 8192**2, limit=3) == 3
    # without a limit: at most the threads BLAS has here now and the process's cores
    with blas_threads(1), kpca.config_context(blas_flops_per_thread=1):
        assert call_threads(10**9) == 1
    with blas_threads(2), kpca.config_context(blas_flops_per_thread=1, n_cores=1):
        assert call_threads(10**9) == 1


def _blas() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def test_n_jobs_none_caps_blas_at_the_process_cores():
    """BLAS's own default counts the affinity, not a CPU quota: n_jobs=None lowers it to
    ``n_cores`` and never raises a caller's lower setting."""
    with blas_threads(2):
        with kpca.config_context(n_cores=1), job_threads(None):
            assert _blas() == {1}
        with job_threads(None):
            assert _blas() == {min(2, kpca.get_config()["n_cores"])}
    with blas_threads(1), job_threads(None):
        assert _blas() == {1}
    with blas_threads(1), kpca.config_context(n_cores=2), job_threads(-1):
        assert _blas() == {2}


def test_the_controller_sees_every_blas_loaded():
    """SciPy's wheels bundle their own OpenBLAS: limits must reach it as well as
    NumPy's."""
    import scipy.linalg  # noqa: F401

    seen = {lib.filepath for lib in _controller().lib_controllers}
    loaded = {lib["filepath"] for lib in threadpool_info()}
    assert seen == loaded
    with blas_threads(1):
        assert current_blas_threads() == 1 and _blas() == {1}
