"""Pre-images: maps from feature space (scores) back to input space.

* :func:`fit_ridge_preimage` / :func:`ridge_preimage` -- learned pre-image
  (Bakir et al. 2004), as scikit-learn's ``fit_inverse_transform=True``
  (:func:`learned_preimage`: from a fitted model, with the checks of its input);
  :func:`gcv_ridge_preimage` -- the same with an intercept and its penalty chosen
  by generalized cross-validation (the unsupervised selection criterion);
* :func:`fixed_point_preimage` -- fixed-point iteration (Mika et al. 1999);
* :func:`mds_preimage` -- distance-based closed form (Kwok & Tsang 2003).

The last two take a :class:`kpca.subspace.FittedSubspace` (``model.subspace_``
of any fitted estimator whose subspace is expanded over input points); the
estimators expose them as ``inverse_transform(..., method=...)`` and ``denoise``.
They read its pre-image geometry -- the neighbour search in feature space and the
residual ``||phi(z) - P phi(t)||^2`` -- through :class:`HostSpace` (NumPy) or
:class:`DeviceSpace` (the scores' device; :func:`device_space_supported`).
See docs/preimages.md.
"""

from ._base import PreimageInfo
from ._device import DeviceSpace, device_space_supported
from ._fixed_point import FIXED_POINT_KERNELS, check_fixed_point_kernel, fixed_point_preimage
from ._geometry import HostSpace
from ._mds import MDS_KERNELS, check_mds_kernel, mds_from_distances, mds_preimage
from ._ridge import (
    RidgeGCV,
    fit_ridge_preimage,
    gcv_ridge_preimage,
    learned_preimage,
    ridge_preimage,
    score_space_kernel,
)

__all__ = [
    "DeviceSpace",
    "FIXED_POINT_KERNELS",
    "HostSpace",
    "MDS_KERNELS",
    "PreimageInfo",
    "RidgeGCV",
    "check_fixed_point_kernel",
    "check_mds_kernel",
    "device_space_supported",
    "fit_ridge_preimage",
    "fixed_point_preimage",
    "gcv_ridge_preimage",
    "learned_preimage",
    "mds_from_distances",
    "mds_preimage",
    "ridge_preimage",
    "score_space_kernel",
]
