"""Private linear models released by sufficient statistics (no public rows).

Modules: ``_additive_least_squares.py`` (the shared plan, train and release
steps), ``_least_squares.py`` (:class:`PrivateLeastSquaresClassifier`,
:class:`PrivateLinearRegression`).
"""

from ._least_squares import PrivateLeastSquaresClassifier, PrivateLinearRegression

__all__ = ["PrivateLeastSquaresClassifier", "PrivateLinearRegression"]
