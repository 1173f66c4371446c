"""The groups of tiles a tiled operator's pass hands to its threads
(kpca.operators._tiled.tile_groups): a partition of the tiles whose result does not
depend on which thread runs which group, or in what order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kpca import config_context
from kpca.kernels import RBF, Linear
from kpca.operators import TiledKernelOperator
from kpca.operators._centering import center
from kpca.operators._tiled import tile_groups, tile_layout


@settings(max_examples=60, deadline=None)
@given(nb=st.integers(1, 30), workers=st.integers(1, 40), per=st.integers(1, 6),
       data=st.data())
def test_groups_partition_the_tiles_into_rows_they_hold(nb, workers, per, data):
    """Every lower-triangular tile is in exactly one group; a group's tiles lie in the
    rows its segments hold (disjoint, gathered one after the other); there are at
    least ``pass_groups_per_worker`` groups a worker unless the runs are as many as
    the workers or the tile rows (their accumulators: at most n rows a worker), and
    one group for one worker."""
    sides = data.draw(st.lists(st.integers(1, 9), min_size=nb, max_size=nb))
    bounds = [0, *np.cumsum(sides).tolist()]
    with config_context(pass_groups_per_worker=per):
        groups = tile_groups(nb, bounds, workers)
    tiles = [(i, j) for i in range(nb) for j in range(i + 1)]
    seen = sorted(t for g in groups for t, _ in g.tiles_at)
    assert seen == list(range(len(tiles)))
    if workers == 1 or nb == 1:
        assert len(groups) == 1 and groups[0].segments == ((0, bounds[-1], 0),)
    else:
        runs = sum(len(g.segments) == 1 for g in groups)  # one diagonal group a run
        assert len(groups) == runs * (runs + 1) // 2
        assert len(groups) >= per * workers or runs == min(nb, workers)
        assert runs <= min(nb, workers)
        assert sum(g.n_rows for g in groups) <= workers * bounds[-1]
    for g in groups:
        at = 0
        for a0, a1, start in g.segments:
            assert start == at and a0 < a1
            at += a1 - a0
        assert g.n_rows == at
        if len(g.segments) == 2:
            assert g.segments[0][0] >= g.segments[1][1]  # disjoint: rows p below q
        for t, (i, j) in g.tiles_at:
            assert tiles[t] == (i, j)
            for r0, r1 in ((bounds[i], bounds[i + 1]), (bounds[j], bounds[j + 1])):
                # a tile's rows (and columns) are rows of one segment, in order
                assert g.local(r1 - 1) - g.local(r0) == r1 - 1 - r0


@pytest.mark.parametrize("kernel", [RBF(gamma=0.3), Linear()], ids=["rbf", "linear"])
@pytest.mark.parametrize("kept", [None, 3, 0], ids=["stored", "partly-stored", "matrix-free"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pass_does_not_depend_on_which_thread_runs_which_group(monkeypatch, kernel, kept,
                                                               dtype):
    """The groups run in any order (as threads come free) give the same bits as in
    the groups' order, and the dense reference's centred product: each group adds into
    its own rows, and the pass sums the groups in their order. The linear kernel is
    centred inside the tiles (pieces), the RBF kernel in the products."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(43, 4))
    K = kernel.block(X, X)
    H = np.eye(43) - 1.0 / 43
    ref = H @ K @ H
    V = rng.normal(size=(43, 6))
    outs = {}
    for how in ("in order", "reversed", "shuffled"):
        def run(self, fn, items, how=how):
            items = list(items)
            idx = list(range(len(items)))
            if how == "reversed":
                idx.reverse()
            elif how == "shuffled":
                np.random.default_rng(len(items)).shuffle(idx)
            done = {i: fn(items[i]) for i in idx}
            return [done[i] for i in range(len(items))]

        monkeypatch.setattr(TiledKernelOperator, "_parallel", run)
        with config_context(n_cores=3, pass_groups_per_worker=2):
            # kept tiles beyond the threads' workspace (None: all of them)
            lay = tile_layout(43, np.dtype(dtype).itemsize, None, 3,
                              n_temporaries=kernel.n_temporaries, tile=5)
            limit = None if kept is None else lay.workspace + kept * lay.tile_bytes
            op = TiledKernelOperator(kernel, X, dtype=dtype, tile=5, n_jobs=3,
                                     memory_limit=limit, piece=(2, 3))
            assert len(op._groups) >= 6
            assert op.fraction_stored == (1.0 if kept is None else kept / len(op.tiles))
            op, _ = center(op, inplace=True)
            outs[how] = [op.matmat(V), op.matmat(V[:, :2])]
    tol = 1e-10 if dtype == np.float64 else 1e-4
    for got, want in zip(outs["in order"], (ref @ V, ref @ V[:, :2]), strict=True):
        np.testing.assert_allclose(got, want, atol=tol * np.abs(want).max())
    for how in ("reversed", "shuffled"):
        for a, b in zip(outs["in order"], outs[how], strict=True):
            np.testing.assert_array_equal(a, b)
