"""Pre-images: maps from feature space (scores) back to input space.

* :func:`fit_ridge_preimage` / :func:`ridge_preimage` -- learned pre-image
  (Bakir et al. 2004), as scikit-learn's ``fit_inverse_transform=True``;
* :func:`fixed_point_preimage` -- fixed-point iteration (Mika et al. 1999);
* :func:`mds_preimage` -- distance-based closed form (Kwok & Tsang 2003).

The last two take a :class:`Subspace` (kernel, training inputs, dual
coefficients, centring) so any fitted KPCA model can use them;
:class:`PreimageMixin` puts them on the estimators as ``inverse_transform(...,
method=...)`` and ``denoise``. See docs/preimages.md.
"""

from ._base import PreimageInfo, Subspace
from ._fixed_point import FIXED_POINT_KERNELS, fixed_point_preimage
from ._mds import MDS_KERNELS, mds_from_distances, mds_preimage
from ._mixin import DENOISE_METHODS, INVERSE_METHODS, PreimageMixin
from ._ridge import fit_ridge_preimage, ridge_preimage, score_space_kernel

__all__ = [
    "DENOISE_METHODS",
    "FIXED_POINT_KERNELS",
    "INVERSE_METHODS",
    "MDS_KERNELS",
    "PreimageInfo",
    "PreimageMixin",
    "Subspace",
    "fit_ridge_preimage",
    "fixed_point_preimage",
    "mds_from_distances",
    "mds_preimage",
    "ridge_preimage",
    "score_space_kernel",
]
