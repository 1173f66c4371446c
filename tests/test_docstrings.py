"""KernelPCA's Parameters section documents exactly its signature, in its order, and the
estimators derived from KernelPCA document every parameter of theirs (their own
entries, or the list "As in :class:`kpca.KernelPCA`"); their Examples print what they
say."""

import doctest
import inspect

import pytest

import kpca
from kpca import KernelPCA


def documented(cls: type, title: str = "Parameters") -> list[str]:
    """The names of ``cls``'s numpydoc ``title`` section, read from ``inspect.getdoc``
    (entries start at column 0; "a, b : type" documents two names)."""
    lines = inspect.getdoc(cls).splitlines()
    start = lines.index(title) + 2
    assert set(lines[start - 1]) == {"-"}, lines[start - 1]
    names = []
    for i in range(start, len(lines)):
        line, below = lines[i], lines[i + 1] if i + 1 < len(lines) else ""
        if below and set(below) == {"-"}:
            break  # the next section's title
        if line and not line.startswith(" "):
            names += [n.strip() for n in line.split(" : ")[0].split(",") if n.strip()]
    return names


def signature(cls: type) -> list[str]:
    return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]


def test_kernel_pca_documents_its_signature_in_order():
    assert documented(KernelPCA) == signature(KernelPCA)
    doc = inspect.getdoc(KernelPCA)
    assert doc.startswith("Kernel principal component analysis.\n")
    heads = [h for h in ("Parameters", "Attributes", "Examples") if f"\n{h}\n" in doc]
    assert heads == ["Parameters", "Attributes", "Examples"]
    assert sorted(heads, key=doc.index) == heads


DERIVED = [kpca.SphericalKernelPCA, kpca.WeightedKernelPCA, kpca.KernelROBPCA,
           kpca.AnovaKernelPCA, kpca.IncrementalKernelPCA]


@pytest.mark.parametrize("cls", DERIVED, ids=lambda c: c.__name__)
def test_derived_estimators_document_every_parameter(cls):
    assert set(documented(cls)) == set(signature(cls))


#: the estimators whose docstring has an Examples section (AnovaKernelPCA's has none)
WITH_EXAMPLES = [KernelPCA, kpca.SphericalKernelPCA, kpca.WeightedKernelPCA, kpca.KernelROBPCA,
                 kpca.IncrementalKernelPCA]


@pytest.mark.parametrize("cls", WITH_EXAMPLES, ids=lambda c: c.__name__)
def test_examples_print_what_they_say(cls):
    (test,) = doctest.DocTestFinder(recurse=False).find(cls, cls.__name__, globs={})
    assert len(test.examples) >= 3
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)
