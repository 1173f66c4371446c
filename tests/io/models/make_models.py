"""Write the model-file fixtures of tests/io/test_model_files.py (run from the repository root).

    PYTHONPATH=src python tests/io/models/make_models.py

For every estimator kpca can save, and every format version it writes, one small
fitted model: ``v2/<name>.kpca`` (the estimator) and ``v3/<name>.kpca`` (the same
estimator after a ``StandardScaler``, what ``kpca fit --standardize`` saves), plus
``expected.npz``: the rows ``T`` and, per file, the scores ``transform(T)`` and
``score_samples(T)`` of the model that was saved.

The files of format versions 2 and 3 were written by kpca at commit 5ccf035, before
model files had a schema (``PYTHONPATH=<that checkout>/src``), so the test also shows
that files saved before the schema still load. Run it only to add the fixtures of a
NEW format version or estimator: the files of
an existing version must keep loading and giving their stored scores, that is the
point of the test. Existing files are never overwritten (pass --force to do so).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import kpca
from kpca.io import FORMAT_VERSION, save_model

HERE = Path(__file__).resolve().parent
logger = logging.getLogger("make_models")


def estimators() -> dict[str, object]:
    """One small configuration per estimator (and mode) that a model file can hold."""
    rbf = dict(kernel="rbf", gamma=0.5)
    return {
        "KernelPCA": kpca.KernelPCA(n_components=2, fit_inverse_transform=True, alpha=0.1,
                                    **rbf),
        "NystromKernelPCA": kpca.NystromKernelPCA(n_components=2, n_landmarks=8,
                                                  random_state=0, **rbf),
        "RandomFeatureKernelPCA": kpca.RandomFeatureKernelPCA(n_components=2, n_features=16,
                                                              random_state=0, **rbf),
        "WeightedKernelPCA": kpca.WeightedKernelPCA(n_components=2, **rbf),
        "SphericalKernelPCA": kpca.SphericalKernelPCA(n_components=2, **rbf),
        "AnovaKernelPCA": kpca.AnovaKernelPCA(n_components=2),
        "KernelROBPCA": kpca.KernelROBPCA(n_components=2, random_state=0, **rbf),
        "IncrementalKernelPCA": kpca.IncrementalKernelPCA(n_components=2, **rbf),
        "IncrementalKernelPCA-bounded": kpca.IncrementalKernelPCA(
            n_components=2, mode="bounded", max_rows=8, random_state=0, **rbf),
    }


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261126)
    X = rng.normal(size=(24, 3)) * np.array([1.0, 2.0, 0.5])
    T = rng.normal(size=(5, 3))
    return X, T


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    args = parser.parse_args()
    X, T = data()
    expected_path = HERE / "expected.npz"
    expected = dict(np.load(expected_path)) if expected_path.exists() else {}
    expected["T"] = T
    for version in (2, FORMAT_VERSION):
        folder = HERE / f"v{version}"
        folder.mkdir(exist_ok=True)
        for name, est in estimators().items():
            path = folder / f"{name}.kpca"
            if path.exists() and not args.force:
                logger.warning("kept %s", path)
                continue
            model = est if version == 2 else make_pipeline(StandardScaler(), est)
            model.fit(X)
            save_model(model, path)
            stem = f"v{version}/{name}"
            expected[f"{stem}:transform"] = model.transform(T)
            expected[f"{stem}:score_samples"] = model.score_samples(T)
            logger.warning("wrote %s (%d bytes)", path, path.stat().st_size)
    np.savez(expected_path, **expected)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    main()
