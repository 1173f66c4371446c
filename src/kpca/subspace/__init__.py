"""The fitted subspace: the one object every estimator's fit produces.

Every kpca model -- exact, robust, ANOVA, Nyström, random features -- is the
same thing in the end (docs/math.md, "The fitted subspace"): a centre ``theta``
and ``k`` orthonormal directions ``f_l`` in the feature space of a kernel, both
expanded over ``m`` points ``z_j`` (the training rows, or the landmarks)::

    theta = sum_j g_j phi(z_j),        f_l = sum_j C_jl phi(z_j).

An object ``t`` then has raw scores and a squared distance to the centre

    y_l(t) = <phi(t) - theta, f_l> = k(t, Z) C_l - b_l,     b = C^T (K_ZZ g),
    ||phi(t) - theta||^2 = k(t, t) - 2 k(t, Z) g + g^T K_ZZ g,

so ``transform``, the pre-images, the outlier diagnostics and the model files
read nothing else. Random Fourier features are the case of an explicit map:
``phi(t) = z(t)`` in ``R^p``, the ``z_j`` are the unit vectors (``k(t, z_j) =
z(t)_j``), ``g`` is the training mean of ``z`` and ``C`` the principal axes.

Exact KPCA with dual coefficients ``A`` (``alpha_l = v_l / sqrt(mu_l)``), centre
weights ``g`` (``1/n`` for the mean) and row scales ``s`` (robust KPCA) has
``C = S A - g (1^T S A)``: :meth:`FittedSubspace.from_dual` builds it.

:class:`FittedSubspace` is the value and its closed forms; the engines that evaluate
it on new rows (NumPy rows in cache-sized pieces on threads, Array API arrays on their
device) are the private module ``_engines``, and the pre-images' neighbour search and
residuals are :class:`kpca.preimage.HostSpace`.
"""

from ._fitted import FittedSubspace

__all__ = ["FittedSubspace"]
