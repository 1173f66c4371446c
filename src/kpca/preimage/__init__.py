"""Pre-images: maps from feature space (scores) back to input space."""

from ._ridge import fit_ridge_preimage, ridge_preimage, score_space_kernel

__all__ = ["fit_ridge_preimage", "ridge_preimage", "score_space_kernel"]
