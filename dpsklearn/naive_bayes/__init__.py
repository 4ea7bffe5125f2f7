"""Private naive Bayes from released per-class counts and sums (no public rows).

Modules: ``_naive_bayes.py`` (:class:`PrivateNaiveBayes`).
"""

from ._naive_bayes import PrivateNaiveBayes

__all__ = ["PrivateNaiveBayes"]
