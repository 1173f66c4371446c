"""Shared test configuration.

``SCIPY_ARRAY_API`` is set before SciPy is first imported, so that scikit-learn's
estimator checks run ``check_array_api_input`` (array-API dispatch with NumPy
inputs must not change results) instead of skipping it. One hypothesis profile
serves the property tests.
"""

import os

os.environ.setdefault("SCIPY_ARRAY_API", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "kpca",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("kpca")
