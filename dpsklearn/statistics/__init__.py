"""Private descriptive statistics from one release of sums each (no public rows).

Modules: ``_sums.py`` (:func:`mean`, :func:`var`, :func:`histogram`,
:func:`quantile`).
"""

from ._sums import histogram, mean, quantile, var

__all__ = ["histogram", "mean", "quantile", "var"]
