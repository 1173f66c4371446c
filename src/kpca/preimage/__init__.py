"""Pre-images: maps from feature space (scores) back to input space."""

from ._mixin import PreimageMixin
from ._ridge import fit_ridge_preimage, ridge_preimage, score_space_kernel

__all__ = ["PreimageMixin", "fit_ridge_preimage", "ridge_preimage", "score_space_kernel"]
