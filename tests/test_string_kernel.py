"""The spectrum (p-gram) string kernel and kernel PCA on strings."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kpca import KernelPCA
from kpca.io import load_model, save_model
from kpca.kernels import KERNELS, Spectrum, pgram_counts


def naive_spectrum(s: str, t: str, p: int) -> int:
    """sum_u c_u(s) c_u(t) with Python counters (the definition)."""
    cs = Counter(s[i : i + p] for i in range(len(s) - p + 1))
    ct = Counter(t[i : i + p] for i in range(len(t) - p + 1))
    return sum(c * ct[u] for u, c in cs.items())


def naive_matrix(A, B, p, normalize):
    K = np.array([[naive_spectrum(a, b, p) for b in B] for a in A], dtype=float)
    if normalize:
        da = np.array([naive_spectrum(a, a, p) for a in A], float)
        db = np.array([naive_spectrum(b, b, p) for b in B], float)
        with np.errstate(divide="ignore", invalid="ignore"):
            K = np.where(np.outer(da, db) > 0, K / np.sqrt(np.outer(da, db)), 0.0)
    return K


DOCS = ["the cat sat on the mat", "the dog sat on the log", "abcabcabc", "a", "",
        "aaaa", "ééé€€𝄞𝄞𝄞 mixed ünïcödé", "  two  spaces  ", "cats and dogs and mats"]


@pytest.mark.parametrize("p", [1, 2, 3, 5])
@pytest.mark.parametrize("normalize", [False, True])
def test_equals_naive_counts(p, normalize):
    k = Spectrum(p=p, normalize=normalize)
    other = DOCS[::-1][:6]
    np.testing.assert_allclose(k(DOCS, other), naive_matrix(DOCS, other, p, normalize),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k(DOCS), naive_matrix(DOCS, DOCS, p, normalize),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(k.diag(DOCS), np.diag(naive_matrix(DOCS, DOCS, p, normalize)),
                               rtol=1e-12, atol=1e-12)


@given(st.lists(st.text(alphabet="abc é", max_size=12), min_size=1, max_size=6),
       st.lists(st.text(alphabet="abcd", max_size=12), min_size=1, max_size=6),
       st.integers(1, 4))
def test_cross_kernel_property(A, B, p):
    # test strings may contain p-grams the training strings lack (the 'd's)
    k = Spectrum(p=p, normalize=False)
    np.testing.assert_array_equal(k(B, A), naive_matrix(B, A, p, False))
    prep = k.prepare(np.array(A, dtype=object))
    np.testing.assert_array_equal(k.block_prepared(np.array(B, dtype=object), prep),
                                  naive_matrix(B, A, p, False))


def test_counts_matrix_and_registry():
    C, vocab = pgram_counts(["abab", "ba"], 2)
    assert len(vocab) == 2 and C.shape == (2, 2)
    assert sorted(C.toarray()[0].tolist()) == [1.0, 2.0]  # ab twice, ba once
    assert KERNELS["spectrum"] is Spectrum
    with pytest.raises(ValueError, match="p must be an integer"):
        Spectrum(p=0)(["abc"])


def test_tiles_of_the_prepared_strings_reuse_counts():
    X = np.array(DOCS, dtype=object)
    k = Spectrum(p=2)
    prep = k.prepare(X)
    full = naive_matrix(DOCS, DOCS, 2, True)
    np.testing.assert_allclose(k.block_prepared(X[2:5], prep[1:7]), full[2:5, 1:7], atol=1e-12)
    # a copy (not a view) goes through the counting path and gives the same values
    np.testing.assert_allclose(k.block_prepared(X[2:5].copy(), prep), full[2:5], atol=1e-12)


def _corpus(n=120, seed=0):
    rng = np.random.default_rng(seed)
    a = ["".join(rng.choice(list("aab c"), size=rng.integers(20, 60))) for _ in range(n // 2)]
    b = ["".join(rng.choice(list("xyyz c"), size=rng.integers(20, 60))) for _ in range(n // 2)]
    return a + b, np.repeat([0, 1], n // 2)


@pytest.mark.parametrize("solver", ["dense", "krylov", "arpack"])
def test_kernel_pca_on_strings_matches_precomputed(solver):
    docs, y = _corpus()
    est = KernelPCA(3, kernel="spectrum", eigen_solver=solver, random_state=0)
    Z = est.fit_transform(docs)
    K = naive_matrix(docs, docs, 3, True)
    ref = KernelPCA(3, kernel="precomputed", eigen_solver="dense").fit(K)
    Zref = ref.transform(K)
    signs = np.sign((Z * Zref).sum(axis=0))
    np.testing.assert_allclose(Z * signs, Zref, atol=1e-7)
    # new strings: centred with the training mean (cross kernel against the training set)
    new = ["aab cab", "xyz zyx", "q"]
    Kt = naive_matrix(new, docs, 3, True)
    np.testing.assert_allclose(est.transform(new) * signs, ref.transform(Kt), atol=1e-7)
    # the first component separates the two alphabets
    assert abs(np.corrcoef(Z[:, 0], y)[0, 1]) > 0.95


def test_strings_input_forms_and_errors():
    docs, _ = _corpus(20)
    est = KernelPCA(2, kernel=Spectrum(p=2))
    Z = est.fit_transform(np.array(docs, dtype=object))
    np.testing.assert_allclose(est.transform(tuple(docs)), Z, atol=1e-10)
    np.testing.assert_allclose(est.transform(np.array(docs)[:, None]), Z, atol=1e-10)
    assert not hasattr(est, "n_features_in_")
    assert list(est.get_feature_names_out()) == ["kernelpca0", "kernelpca1"]
    with pytest.raises(ValueError, match="strings"):
        KernelPCA(2, kernel="spectrum").fit(["abc", 3])
    with pytest.raises(ValueError, match="single string"):
        KernelPCA(2, kernel="spectrum").fit("abcdef")
    with pytest.raises(ValueError, match="fit_inverse_transform"):
        KernelPCA(2, kernel="spectrum", fit_inverse_transform=True).fit(docs)


def test_spectrum_model_saves_and_loads(tmp_path):
    docs, _ = _corpus(40)
    est = KernelPCA(2, kernel="spectrum", kernel_params={"p": 4})
    Z = est.fit_transform(docs)
    save_model(est, tmp_path / "m.kpca")
    back = load_model(tmp_path / "m.kpca")
    assert isinstance(back.kernel_, Spectrum) and back.kernel_.p == 4
    assert back.X_fit_.dtype == object and list(back.X_fit_) == docs
    np.testing.assert_allclose(back.transform(docs), Z, atol=1e-10)
