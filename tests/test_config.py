"""kpca's one configuration (``kpca._config``): get / set / context semantics, errors,
worker threads and thread isolation, machine-derived values, the documentation of
every setting (docs/guide.md, "Tuning"), and that no module keeps a tuning value of
its own."""

from __future__ import annotations

import ast
import contextvars
import re
import threading
from pathlib import Path

import numpy as np
import pytest

import kpca
import kpca.operators._tiled as tiled
from kpca import _config, config_context, get_config, set_config
from kpca._parallel import run_blocks, run_stream
from kpca.kernels import RBF

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "kpca"


def _in_fresh_context(fn, *args):
    """``fn(*args)`` in a copy of this context: what ``set_config`` does there stays
    there (as in another task or thread)."""
    return contextvars.copy_context().run(fn, *args)


def _expected_default(name):
    s = _config.SETTINGS[name]
    return s.rule() if s.default is None and s.rule is not None else s.default


# ------------------------------------------------------------------ get / set / context
def test_get_config_has_every_setting_at_its_default():
    cfg = get_config()
    assert list(cfg) == list(_config.SETTINGS)
    for name in cfg:
        assert cfg[name] == _expected_default(name), name


def test_get_config_returns_a_fresh_dict():
    cfg = get_config()
    cfg["fused_rows"] = -1
    del cfg["slice_rows"]
    assert get_config()["fused_rows"] == _config.SETTINGS["fused_rows"].default
    assert "slice_rows" in get_config()


def test_context_sets_and_restores_nested():
    default = get_config()["fused_rows"]
    with config_context(fused_rows=8):
        assert get_config()["fused_rows"] == 8
        with config_context(fused_rows=16, slice_rows=4):
            assert get_config()["fused_rows"] == 16 and get_config()["slice_rows"] == 4
        assert get_config()["fused_rows"] == 8
        assert get_config()["slice_rows"] == _config.SETTINGS["slice_rows"].default
    assert get_config()["fused_rows"] == default


def test_context_restores_on_exception():
    before = get_config()
    with pytest.raises(RuntimeError, match="inside"), config_context(krylov_depth=3,
                                                                      orth_max_cond=10.0):
        assert get_config()["krylov_depth"] == 3
        raise RuntimeError("inside")
    assert get_config() == before


def test_set_config_lasts_for_the_rest_of_its_context():
    def body():
        set_config(krylov_min_basis=64)
        assert get_config()["krylov_min_basis"] == 64
        with config_context(krylov_min_basis=96):
            assert get_config()["krylov_min_basis"] == 96
        assert get_config()["krylov_min_basis"] == 64  # the context restores set_config's
        set_config(start_landmarks=32)  # merged, not replaced
        return get_config()

    inside = _in_fresh_context(body)
    assert inside["krylov_min_basis"] == 64 and inside["start_landmarks"] == 32
    assert get_config()["krylov_min_basis"] == _config.SETTINGS["krylov_min_basis"].default


def test_values_of_the_declared_kind_are_accepted():
    with config_context(orth_max_cond=10, float32_max_error=np.float32(1e-6),
                        fused_rows=np.int64(64)):
        cfg = get_config()
        assert cfg["orth_max_cond"] == 10 and cfg["fused_rows"] == 64
        assert cfg["float32_max_error"] == pytest.approx(1e-6)


# ----------------------------------------------------------------------------- errors
def test_unknown_setting_is_named_with_the_valid_ones():
    for call in (lambda: set_config(fused_row=8), lambda: config_context(fused_row=8).__enter__()):
        with pytest.raises(ValueError, match=r"unknown kpca setting 'fused_row'.*fused_rows"):
            call()


@pytest.mark.parametrize(("name", "value", "message"), [
    ("fused_rows", "256", r"'fused_rows' must be int; got '256'"),
    ("fused_rows", 2.5, r"'fused_rows' must be int; got 2.5"),
    ("fused_rows", True, r"'fused_rows' must be int; got True"),
    ("fused_rows", None, r"'fused_rows' must be int; got None"),
    ("fused_rows", 0, r"'fused_rows' must be >= 1; got 0"),
    ("orth_max_cond", 0.5, r"'orth_max_cond' must be >= 1.0; got 0.5"),
    ("orth_max_cond", float("nan"), r"'orth_max_cond' must be >= 1.0; got nan"),
    ("float32_max_error", "tiny", r"'float32_max_error' must be float; got 'tiny'"),
    ("l2_cache_bytes", 1.5, r"'l2_cache_bytes' must be int \(or None: the machine's rule\)"),
])
def test_bad_values_name_the_setting_and_what_is_valid(name, value, message):
    before = get_config()
    with pytest.raises(ValueError, match=message):
        set_config(**{name: value})
    with pytest.raises(ValueError, match=message), config_context(**{name: value}):
        pass  # pragma: no cover - never entered
    assert get_config() == before


def test_nothing_is_set_when_one_value_is_bad():
    def body():
        with pytest.raises(ValueError, match="slice_rows"):
            set_config(fused_rows=8, slice_rows=-1)
        return get_config()["fused_rows"]

    assert _in_fresh_context(body) == _config.SETTINGS["fused_rows"].default


# ------------------------------------------------------------------------------ threads
def test_kpcas_worker_threads_run_with_the_callers_settings():
    with config_context(fused_rows=24):
        blocks = run_blocks(lambda i: (threading.get_ident(), get_config()["fused_rows"]),
                            range(6), 2)
        stream = list(run_stream(lambda i: (threading.get_ident(), get_config()["fused_rows"]),
                                 iter(range(6)), 2))
    for seen in (blocks, stream):
        assert {v for _, v in seen} == {24}
        assert {t for t, _ in seen} != {threading.get_ident()}  # workers ran them


def test_a_fit_with_two_jobs_sees_the_context_in_its_workers(monkeypatch):
    """The kernel tiles of a tiled fit (n_jobs=2) are evaluated on worker threads, which
    read the settings of the fit's context, not the defaults."""
    seen = []

    class Spy(RBF):
        def block_prepared(self, X, prep, out=None):
            seen.append((threading.get_ident(), get_config()["slice_rows"],
                         get_config()["fused_cols"]))
            return super().block_prepared(X, prep, out)

    monkeypatch.setattr(tiled, "tile_size", lambda *a, **k: 128)  # 5 x 5 tiles
    X = np.random.default_rng(0).standard_normal((600, 5))
    with config_context(slice_rows=32, fused_cols=64):
        model = kpca.KernelPCA(4, kernel=Spy(gamma=0.2), eigen_solver="krylov", n_jobs=2,
                               random_state=0).fit(X)
    workers = {t for t, _, _ in seen} - {threading.get_ident()}
    assert workers, "no tile was evaluated on a worker thread"
    assert {(s, c) for t, s, c in seen if t in workers} == {(32, 64)}
    ref = kpca.KernelPCA(4, kernel="rbf", gamma=0.2, eigen_solver="dense").fit(X)
    np.testing.assert_allclose(model.eigenvalues_, ref.eigenvalues_, rtol=1e-6)


def test_a_context_in_one_thread_does_not_leak_into_another():
    inside, entered, done = {}, threading.Event(), threading.Event()

    def other():
        with config_context(fused_rows=8):
            inside["other"] = get_config()["fused_rows"]
            entered.set()
            done.wait(10)

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(10)
    try:
        assert get_config()["fused_rows"] == _config.SETTINGS["fused_rows"].default
        with config_context(fused_rows=16):
            # a thread started here (not by kpca) starts from the defaults
            fresh = []
            t2 = threading.Thread(target=lambda: fresh.append(get_config()["fused_rows"]))
            t2.start()
            t2.join()
            assert get_config()["fused_rows"] == 16
            assert fresh == [_config.SETTINGS["fused_rows"].default]
    finally:
        done.set()
        t.join()
    assert inside["other"] == 8


# ------------------------------------------------------------------- machine-derived values
def test_the_l2_rule_reads_the_machine_and_none_returns_to_it():
    s = _config.SETTINGS["l2_cache_bytes"]
    assert s.default is None and s.rule is not None
    machine = _config.cache_bytes(2) or 2**20
    assert get_config()["l2_cache_bytes"] == machine
    with config_context(l2_cache_bytes=3 * 2**20):
        assert get_config()["l2_cache_bytes"] == 3 * 2**20
        with config_context(l2_cache_bytes=None):
            assert get_config()["l2_cache_bytes"] == machine

    def body():
        set_config(l2_cache_bytes=2**16)
        set_config(l2_cache_bytes=None)
        return get_config()["l2_cache_bytes"]

    assert _in_fresh_context(body) == machine


def test_cache_sizes_are_read_or_unknown():
    for level in (1, 2, 3):
        size = _config.cache_bytes(level)
        assert size is None or 2**12 <= size <= 2**31
    sysfs = Path("/sys/devices/system/cpu/cpu0/cache/index2/size")
    if sysfs.is_file() and (sysfs.parent / "level").read_text().strip() == "2":
        assert _config.cache_bytes(2) == _config._parse_size(sysfs.read_text())
    assert _config._parse_size("512K\n") == 2**19
    assert _config._parse_size("32768K") == 2**25
    assert _config._parse_size("2M") == 2**21
    assert _config._parse_size("4096") == 4096


def _fake_caches(root: Path, caches: list[tuple[int, str, str, str]]) -> str:
    """A sysfs cache folder of (level, type, size, shared_cpu_list) entries."""
    for i, (level, kind, size, shared) in enumerate(caches):
        d = root / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
        (d / "shared_cpu_list").write_text(f"{shared}\n")
    return str(root)


@pytest.fixture
def no_sysconf(monkeypatch):
    """``os.sysconf`` says nothing about caches (as on Linux without the glibc names):
    the fake sysfs folders alone decide."""
    def refuse(name):
        raise ValueError(name)
    monkeypatch.setattr(_config.os, "sysconf", refuse)


@pytest.mark.parametrize("caches, cores, expected", [
    # a 2-CPU virtual machine on a 300 MiB Xeon: sysfs lists only its own two CPUs
    ([(1, "Data", "48K", "0"), (1, "Instruction", "32K", "0"), (2, "Unified", "2048K", "0"),
      (3, "Unified", "307200K", "0-1")], 2, 32 * 2**20),
    # a laptop: 8 CPUs share 16 MiB, the process uses them all: the whole cache
    ([(2, "Unified", "1024K", "0-1"), (3, "Unified", "16384K", "0-7")], 8, 16 * 2**20),
    # a 64-CPU socket with 256 MiB, a process pinned to 4 of them: its share, 16 MiB
    ([(2, "Unified", "2048K", "0"), (3, "Unified", "262144K", "0-31,64-95")], 4,
     16 * 2**20),
    # the same socket, 2 CPUs of it: 8 MiB, under the per-core bound
    ([(3, "Unified", "262144K", "0-31,64-95")], 2, 8 * 2**20),
    # no L3: the L2, shared by two hardware threads, one of them ours
    ([(1, "Data", "32K", "0,4"), (2, "Unified", "1024K", "0,4")], 1, 512 * 2**10),
    # no shared_cpu_list readable: the size, at most 16 MiB a core
    ([(3, "Unified", "98304K", "")], 4, 64 * 2**20),
    # a share that does not divide evenly: 32 MiB over 3 CPUs, two of them ours
    ([(3, "Unified", "32768K", "0-2")], 2, 2**25 * 2 // 3),
    # more CPUs than share one cache (two sockets): one cache, not the sum of both
    ([(3, "Unified", "32768K", "0-7")], 16, 32 * 2**20),
])
def test_the_solver_cache_is_this_process_share_of_the_last_level(tmp_path, no_sysconf,
                                                                   caches, cores, expected):
    base = _fake_caches(tmp_path, caches)
    assert _config.cache_share(cores, base) == expected


def test_the_solver_cache_rule_without_sysfs(tmp_path, no_sysconf):
    # nothing readable: 32 MiB, within 16 MiB a CPU
    assert _config.last_level_cache(str(tmp_path / "absent")) is None
    assert _config.cache_share(4, str(tmp_path / "absent")) == 32 * 2**20
    assert _config.cache_share(1, str(tmp_path / "absent")) == 16 * 2**20
    assert _config._count_cpus("0-3,8,10-11\n") == 7
    assert _config._count_cpus("") == 0


def test_none_is_refused_where_there_is_no_rule():
    with pytest.raises(ValueError, match="'stream_block_bytes' must be int; got None"):
        set_config(stream_block_bytes=None)


# ------------------------------------------------------------------------ documentation
def test_every_setting_is_declared_with_a_rule():
    """lower_snake names; a doc that says what the value does, then ``Rule:`` and the
    rule it comes from, never a timing of one machine; a default of its declared kind
    and range (or None with a rule)."""
    assert len(_config.SETTINGS) >= 30
    for name, s in _config.SETTINGS.items():
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name), name
        what, sep, rule = s.doc.partition("Rule:")
        assert sep and len(what.split()) >= 5 and len(rule.split()) >= 5, name
        assert not re.search(r"this (project's )?machine|measured", s.doc, re.I), name
        if s.default is None:  # a machine's rule, or None is a valid value of its own
            kinds = s.kind if isinstance(s.kind, tuple) else (s.kind,)
            assert callable(s.rule) or type(None) in kinds, name
        else:
            _config._check(name, s.default)  # raises if the default is not valid


def test_the_guide_lists_every_setting():
    """docs/guide.md ("Tuning") holds the table that ``kpca._config._markdown_table()``
    writes from SETTINGS: every setting, its default and its rule (regenerate it with
    ``python -c "import kpca._config as c; print(c._markdown_table())"``)."""
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    begin, end = "<!-- settings: begin -->\n", "<!-- settings: end -->"
    assert "## 9. Tuning" in guide and begin in guide and end in guide
    listed = guide.split(begin, 1)[1].split(end, 1)[0]
    assert listed == _config._markdown_table()
    names = re.findall(r"^\| `([a-z0-9_]+)` \|", listed, re.M)
    assert names == list(_config.SETTINGS)


def test_the_table_shows_sizes_and_rules():
    table = _config._markdown_table()
    assert "| `gram_block_bytes` | 2 MiB |" in table
    assert "| `min_block_bytes` | 64 KiB |" in table
    assert "| `small_algebra_flops` | 2^28 |" in table
    assert "| `l2_cache_bytes` | machine (rule) |" in table
    assert "| `orth_max_cond` | 100000.0 |" in table


# ------------------------------------------------------------- no tuning value elsewhere
#: module-level numbers that are not tuning values, and why
NOT_TUNING = {
    "MAD_SCALE": "a statistical constant (MAD -> standard deviation at the normal)",
    "QUANTILE": "the default of the user's quantile argument (a statistical convention)",
    "MEDIAN_SEED": "a seed: the same data get the same median heuristic",
    "KMAX": "part of ROBPCA's definition (rrcov's kmax): it decides the result",
    "FORMAT_VERSION": "a file format version",
    "NPY_VERSIONS": "the .npy file format versions read",
    "_PLAIN_VERSION": "a file format version",
    "_VANISH": "a test for a vanishing denominator (round-off), not a trade-off",
    "_MULTIPLIERS": "the constants of a hash function",
    "EXIT_INTERRUPTED": "an exit status (128 + SIGINT), a convention of shells",
    "MAX_SEED": "the largest seed NumPy's and scikit-learn's random states take",
}


def _numeric(node) -> bool:
    """A literal number, or arithmetic / a tuple of them (``32 * 2**20``, ``(2.0, 10)``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand)
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, ast.Tuple):
        return bool(node.elts) and all(_numeric(e) for e in node.elts)
    return False


def test_no_module_keeps_a_tuning_number_of_its_own():
    """Every number a module (or a class) assigns to an UPPER_CASE name is either not a
    tuning value (``NOT_TUNING``) or a setting of kpca._config; reading a setting into
    a global would hide it from ``config_context``."""
    found = {}
    for path in SRC.rglob("*.py"):
        if path.name == "_config.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
        for body in bodies:
            for node in body:
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, ast.AnnAssign) else [])
                value = getattr(node, "value", None)
                for target in targets:
                    if (isinstance(target, ast.Name) and target.id.isupper() and value
                            is not None and _numeric(value)):
                        found[target.id] = f"{path.relative_to(SRC)}:{node.lineno}"
    unexplained = {name: where for name, where in found.items()
                   if name not in NOT_TUNING}
    assert not unexplained, f"tuning values outside kpca._config: {unexplained}"
