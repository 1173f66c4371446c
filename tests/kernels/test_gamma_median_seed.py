"""gamma='median' is reproducible: the same data gives the same gamma on every fit,
with or without a random_state (its subsample is seeded), and equals the median
heuristic computed directly on that subsample."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import kpca
from kpca.kernels._gamma import MEDIAN_SEED
from kpca.robust import KernelROBPCA


def _X():
    return np.random.default_rng(3).normal(size=(1500, 4))  # > 1000 rows: subsampled


@pytest.mark.parametrize("make", [
    lambda: kpca.KernelPCA(2, kernel="rbf", gamma="median"),
    lambda: KernelROBPCA(2, kernel="rbf", gamma="median"),
    # the stream's gamma comes from its first batch (here all 1,500 rows)
    lambda: kpca.IncrementalKernelPCA(2, kernel="rbf", gamma="median", batch_size=1500),
])
def test_median_gamma_is_the_same_on_every_fit_without_random_state(make):
    X = _X()
    values = {make().fit(X).gamma_ for _ in range(3)}
    assert len(values) == 1
    # the heuristic itself, on the rows its seed draws
    idx = np.random.RandomState(MEDIAN_SEED).choice(len(X), size=1000, replace=False)
    med = np.median(pdist(X[idx]))
    assert values.pop() == pytest.approx(1.0 / (2.0 * med**2), rel=1e-12)


def test_median_gamma_follows_an_explicit_random_state():
    X = _X()
    a = kpca.KernelPCA(2, kernel="rbf", gamma="median", random_state=1).fit(X).gamma_
    b = kpca.KernelPCA(2, kernel="rbf", gamma="median", random_state=1).fit(X).gamma_
    c = kpca.KernelPCA(2, kernel="rbf", gamma="median", random_state=2).fit(X).gamma_
    assert a == b and a != c
